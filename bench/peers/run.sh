#!/usr/bin/env bash
# tensorcut against libtorch on the four benchmark models, in one table.
#
#   bench/peers/install_libtorch.sh                 # once: Debian's libtorch
#   bench/peers/run.sh [--threads N] [--runs R] [--seed S]   # defaults 1, 30, 0
#
# Builds bench/peers/libtorch_bench.cc with g++ (cached in bench/peers/.build/),
# runs `tensorcut bench --model all --json` and the libtorch runner twice: with
# glibc's stock malloc and with malloc tuned to keep large blocks (no mmap or
# trim under 32 MiB / 16 GiB). Ratios are libtorch's better time over
# tensorcut's compiled time: above 1, tensorcut is faster.
set -euo pipefail
cd "$(dirname "$0")/../.."

threads=1 runs=30 seed=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --threads=*) threads="${1#*=}"; shift ;;
    --runs=*) runs="${1#*=}"; shift ;;
    --seed=*) seed="${1#*=}"; shift ;;
    *) echo "usage: $0 [--threads N] [--runs R] [--seed S]" >&2; exit 2 ;;
  esac
done

readonly TORCH_API_INCLUDE=/usr/include/torch/csrc/api/include
readonly TUNED_MALLOC="glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=17179869184"
readonly out=bench/peers/.build
readonly peer="$out/libtorch_bench"
readonly tensorcut=bazel-bin/tools/tensorcut
mkdir -p "$out"

if [[ ! -d "$TORCH_API_INCLUDE" ]]; then
  echo "libtorch is not installed: run bench/peers/install_libtorch.sh" >&2
  exit 1
fi
if [[ ! -x "$peer" || bench/peers/libtorch_bench.cc -nt "$peer" ]]; then
  echo "building $peer (g++, about 15 s)" >&2
  g++ -O2 -std=c++17 -I"$TORCH_API_INCLUDE" bench/peers/libtorch_bench.cc -o "$peer" \
    -ltorch -ltorch_cpu -lc10
fi
# Always: a no-op when up to date, and a stale binary would measure old code.
bazel build -c opt --config=opt //tools:tensorcut

# Debian's OpenBLAS 0.3.21 does not recognise recent CPUs and falls back to
# its SSE3 ("Prescott") kernels, 2-3x slower than the AVX-512 ones; name the
# kernels the CPU can run unless the caller already chose.
if [[ -z "${OPENBLAS_CORETYPE:-}" ]]; then
  if grep -qw avx512f /proc/cpuinfo; then
    export OPENBLAS_CORETYPE=SkylakeX
  elif grep -qw avx2 /proc/cpuinfo; then
    export OPENBLAS_CORETYPE=Haswell
  fi
fi

flags=(--model all --threads "$threads" --runs "$runs" --seed "$seed")
echo "tensorcut bench ${flags[*]}" >&2
# The tensorcut binary may be rebuilt while it runs: one retry.
"$tensorcut" bench --json "${flags[@]}" >"$out/tensorcut.jsonl" ||
  "$tensorcut" bench --json "${flags[@]}" >"$out/tensorcut.jsonl"
echo "libtorch_bench ${flags[*]} (OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-auto})" >&2
"$peer" "${flags[@]}" >"$out/libtorch_stock.jsonl"
echo "libtorch_bench ${flags[*]} with GLIBC_TUNABLES=$TUNED_MALLOC" >&2
GLIBC_TUNABLES="$TUNED_MALLOC" "$peer" "${flags[@]}" >"$out/libtorch_tuned.jsonl"

python3 - "$out" "$threads" "$runs" <<'EOF'
import json, sys

out, threads, runs = sys.argv[1:]
def load(name):
    with open(f"{out}/{name}.jsonl") as f:
        return {r["model"]: r for r in map(json.loads, f)}
tc, stock, tuned = load("tensorcut"), load("libtorch_stock"), load("libtorch_tuned")

print(f"median ms of {runs} runs on {threads} thread(s); x: libtorch's better time over "
      "tensorcut's compiled time (>1: tensorcut is faster)")
print(f"{'':12} {'training step':^42} | {'inference':^42}")
header = f"{'tensorcut':>10} {'lt stock':>10} {'lt tuned':>10} {'x':>9}"
print(f"{'model':12} {header} | {header}")
for model, t in tc.items():
    cells = []
    for tc_key, lt_key in (("compiled_step_ms", "step_ms"), ("compiled_inference_ms", "inference_ms")):
        a, b, c = t[tc_key], stock[model][lt_key], tuned[model][lt_key]
        cells.append(f"{a:10.3f} {b:10.3f} {c:10.3f} {min(b, c) / a:8.2f}x")
    print(f"{model:12} {cells[0]} | {cells[1]}")
EOF
