#!/usr/bin/env bash
# A plan saved by one process and trained on by another that links no model
# code or compiling stages: the second reaches the first's losses, parameters and optimizer
# state bit for bit (plan_save_main.cc, plan_load_main.cc). Then a plan saved
# with oneDNN held to AVX2 loads and trains with all of this CPU's ISA (AVX-512,
# AMX where it has them), to the saving process's losses within rounding.
#   plan_processes_test.sh SAVE_MAIN LOAD_MAIN
set -euo pipefail
dir="${TEST_TMPDIR:-$(mktemp -d)}/plans"
mkdir -p "$dir"
"$1" "$dir"
"$2" "$dir" mlp_sgd cnn_adam transformer_adam mlp_dropout_adam transformer_sgd_bf16 \
  inference
mkdir -p "$dir/avx2"
ONEDNN_MAX_CPU_ISA=AVX2 "$1" "$dir/avx2"
"$2" --close "$dir/avx2" mlp_sgd cnn_adam transformer_adam mlp_dropout_adam transformer_sgd_bf16 \
  inference
