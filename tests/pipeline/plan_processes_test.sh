#!/usr/bin/env bash
# A plan saved by one process and trained on by another that links no model
# code or compiling stages: the second reaches the first's losses, parameters and optimizer
# state bit for bit (plan_save_main.cc, plan_load_main.cc).
#   plan_processes_test.sh SAVE_MAIN LOAD_MAIN
set -euo pipefail
dir="${TEST_TMPDIR:-$(mktemp -d)}/plans"
mkdir -p "$dir"
"$1" "$dir"
"$2" "$dir" mlp_sgd cnn_adam transformer_adam mlp_dropout_adam transformer_sgd_bf16
