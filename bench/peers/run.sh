#!/usr/bin/env bash
# tensorcut against libtorch on the four benchmark models, in one table.
#
#   bench/peers/install_libtorch.sh                 # once: Debian's libtorch
#   bench/peers/run.sh [--threads 1,2] [--runs R] [--seed S]   # defaults 1,2, 30, 0
#
# Builds bench/peers/libtorch_bench.cc with g++ (cached in bench/peers/.build/),
# and for each thread count runs `tensorcut bench --model all --json` and the
# libtorch runner twice: with glibc's stock malloc and with malloc tuned to
# keep large blocks (no mmap or trim under 32 MiB / 16 GiB). Ratios are
# libtorch's better f32 time over tensorcut's compiled time, in f32 and, on a
# CPU with bf16 instructions, in bf16 mixed precision: above 1, tensorcut is
# faster.
set -euo pipefail
cd "$(dirname "$0")/../.."

threads=1,2 runs=30 seed=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --threads=*) threads="${1#*=}"; shift ;;
    --runs=*) runs="${1#*=}"; shift ;;
    --seed=*) seed="${1#*=}"; shift ;;
    *) echo "usage: $0 [--threads N[,N...]] [--runs R] [--seed S]" >&2; exit 2 ;;
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
# Its output is shown only when the build fails.
if ! bazel build -c opt --config=opt //tools:tensorcut >"$out/build.log" 2>&1; then
  cat "$out/build.log" >&2
  exit 1
fi

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

IFS=, read -r -a thread_counts <<<"$threads"
for n in "${thread_counts[@]}"; do
  flags=(--model all --threads "$n" --runs "$runs" --seed "$seed")
  echo "tensorcut bench ${flags[*]}" >&2
  # The tensorcut binary may be rebuilt while it runs: one retry.
  "$tensorcut" bench --json "${flags[@]}" >"$out/tensorcut_$n.jsonl" ||
    "$tensorcut" bench --json "${flags[@]}" >"$out/tensorcut_$n.jsonl"
  echo "libtorch_bench ${flags[*]} (OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-auto})" >&2
  "$peer" "${flags[@]}" >"$out/libtorch_stock_$n.jsonl"
  echo "libtorch_bench ${flags[*]} with GLIBC_TUNABLES=$TUNED_MALLOC" >&2
  GLIBC_TUNABLES="$TUNED_MALLOC" "$peer" "${flags[@]}" >"$out/libtorch_tuned_$n.jsonl"
done

python3 - "$out" "$runs" "${thread_counts[@]}" <<'EOF'
import json, sys

out, runs, thread_counts = sys.argv[1], sys.argv[2], sys.argv[3:]
def load(name):
    with open(f"{out}/{name}.jsonl") as f:
        return {r["model"]: r for r in map(json.loads, f)}

print(f"median ms of {runs} runs; lt: libtorch f32, the better of stock and tuned malloc; "
      "x: lt over tensorcut f32, xb: lt over tensorcut bf16 mixed precision "
      "(>1: tensorcut is faster; -: no bf16 instructions)")
header = f"{'f32':>9} {'bf16':>9} {'lt':>9} {'x':>7} {'xb':>7}"
print(f"{'':3} {'':12} {'training step':^45} | {'inference':^45}")
print(f"{'thr':3} {'model':12} {header} | {header}")
for n in thread_counts:
    tc = load(f"tensorcut_{n}")
    stock, tuned = load(f"libtorch_stock_{n}"), load(f"libtorch_tuned_{n}")
    for model, t in tc.items():
        cells = []
        for kind, lt_key in (("step", "step_ms"), ("inference", "inference_ms")):
            f32 = t[f"compiled_{kind}_ms"]
            lt = min(stock[model][lt_key], tuned[model][lt_key])
            if t.get("bf16"):
                bf16 = t[f"bf16_{kind}_ms"]
                b, xb = f"{bf16:9.3f}", f"{lt / bf16:6.2f}x"
            else:
                b, xb = f"{'-':>9}", f"{'-':>7}"
            cells.append(f"{f32:9.3f} {b} {lt:9.3f} {lt / f32:6.2f}x {xb}")
        print(f"{n:>3} {model:12} {cells[0]} | {cells[1]}")
EOF
