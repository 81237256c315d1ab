#!/usr/bin/env bash
# tensorcut against libtorch on the four benchmark models, in one table.
#
#   bench/peers/install_libtorch.sh                 # once: Debian's libtorch
#   bench/peers/run.sh [--threads 1,2] [--runs R] [--seed S] [--repeat N]
#                                      # defaults 1,2, 30, 0, 3
#
# Builds bench/peers/libtorch_bench.cc with g++ (cached in bench/peers/.build/),
# picks the OpenBLAS kernels libtorch runs fastest and correct on this CPU
# (below), and for each thread count, N times over, runs `tensorcut bench
# --model all --json` and the libtorch runner twice: with glibc's stock malloc
# and with malloc tuned to keep large blocks (no mmap or trim under 32 MiB /
# 16 GiB). Ratios are libtorch's better f32 time over tensorcut's compiled
# time, in f32 and, on a CPU with bf16 instructions, in bf16 mixed precision:
# above 1, tensorcut is faster. Times are medians of the N runs' medians,
# ratios the range of the N runs' ratios.
set -euo pipefail
cd "$(dirname "$0")/../.."

threads=1,2 runs=30 seed=0 repeat=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --threads=*) threads="${1#*=}"; shift ;;
    --runs=*) runs="${1#*=}"; shift ;;
    --seed=*) seed="${1#*=}"; shift ;;
    --repeat=*) repeat="${1#*=}"; shift ;;
    *) echo "usage: $0 [--threads N[,N...]] [--runs R] [--seed S] [--repeat N]" >&2; exit 2 ;;
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

# libtorch's products run on OpenBLAS, whose kernels OPENBLAS_CORETYPE names.
# Debian's 0.3.21 does not recognise recent CPUs (it falls back to slow
# kernels), and an environment may set a core type that is not this CPU's
# fastest: each core type this CPU can run is tried on one thread, its f32
# products checked against f64, and the fastest correct one kept for every
# run, libtorch's and tensorcut's (whose gemm may pick OpenBLAS too).
# The environment as it is, then each core type alone (OPENBLAS_L2_SIZE,
# which some environments set beside the core type, unset with it).
check() {
  if [[ "$1" == env ]]; then
    timeout 120 "$peer" --blas_check 2>/dev/null
  else
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ${1:+OPENBLAS_CORETYPE=$1} \
      timeout 120 "$peer" --blas_check 2>/dev/null
  fi
}
candidates=(env "" Haswell Zen)
grep -qw avx512f /proc/cpuinfo && candidates+=(SkylakeX)
grep -qw avx512_bf16 /proc/cpuinfo && candidates+=(Cooperlake)
grep -qw amx_tile /proc/cpuinfo && candidates+=(SapphireRapids)
best=env best_gflops=0 tried=()
for core in "${candidates[@]}"; do
  name=${core:-auto}
  [[ "$core" == env ]] && name="the environment's (${OPENBLAS_CORETYPE:-unset})"
  # A core type the CPU cannot run dies (SIGILL): skipped.
  line=$(check "$core") || { tried+=("$name: fails"); continue; }
  read -r error gflops < <(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print(r["max_rel_error"], r["gflops"])' "$line")
  # f32 products of up to 1024 terms: a correct kernel stays within 1e-5.
  if python3 -c "import sys; sys.exit(0 if $error < 1e-5 else 1)"; then
    tried+=("$name: $gflops GFLOP/s, error $error")
    if python3 -c "import sys; sys.exit(0 if $gflops > $best_gflops else 1)"; then
      best=$core best_gflops=$gflops
    fi
  else
    tried+=("$name: wrong, relative error $error")
  fi
done
printf 'OpenBLAS kernels, one thread, 512^3 f32 product:\n' >&2
printf '  %s\n' "${tried[@]}" >&2
if [[ "$best" != env ]]; then
  unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
  if [[ -n "$best" ]]; then export OPENBLAS_CORETYPE="$best"; fi
fi
blas="OpenBLAS ${OPENBLAS_CORETYPE:-auto}"
echo "libtorch and tensorcut run on $blas ($best_gflops GFLOP/s)" >&2

IFS=, read -r -a thread_counts <<<"$threads"
for ((r = 1; r <= repeat; ++r)); do
  for n in "${thread_counts[@]}"; do
    flags=(--model all --threads "$n" --runs "$runs" --seed "$seed")
    echo "run $r of $repeat: tensorcut bench ${flags[*]}" >&2
    # The tensorcut binary may be rebuilt while it runs: one retry.
    "$tensorcut" bench --json "${flags[@]}" >"$out/tensorcut_${n}_$r.jsonl" ||
      "$tensorcut" bench --json "${flags[@]}" >"$out/tensorcut_${n}_$r.jsonl"
    echo "run $r of $repeat: libtorch_bench ${flags[*]}, stock and tuned malloc" >&2
    "$peer" "${flags[@]}" >"$out/libtorch_stock_${n}_$r.jsonl"
    GLIBC_TUNABLES="$TUNED_MALLOC" "$peer" "${flags[@]}" >"$out/libtorch_tuned_${n}_$r.jsonl"
  done
done

python3 - "$out" "$runs" "$repeat" "$blas" "${thread_counts[@]}" <<'EOF'
import json, statistics, sys

out, runs, repeat, blas, thread_counts = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:]
def load(name):
    with open(f"{out}/{name}.jsonl") as f:
        return {r["model"]: r for r in map(json.loads, f)}

def span(values):
    lo, hi = min(values), max(values)
    return f"{lo:.2f}x" if repeat == 1 else f"{lo:.2f}-{hi:.2f}x"

print(f"median ms of {runs} runs, median of {repeat} repeats; libtorch on {blas}; lt: libtorch f32, "
      "the better of stock and tuned malloc; x: lt over tensorcut f32, xb: lt over tensorcut "
      "bf16 mixed precision, each the range over the repeats (>1: tensorcut is faster; -: no "
      "bf16 instructions)")
header = f"{'f32':>8} {'bf16':>8} {'lt':>8} {'x':>11} {'xb':>11}"
print(f"{'':3} {'':12} {'training step':^50} | {'inference':^50}")
print(f"{'thr':3} {'model':12} {header} | {header}")
for n in thread_counts:
    tc = [load(f"tensorcut_{n}_{r}") for r in range(1, repeat + 1)]
    stock = [load(f"libtorch_stock_{n}_{r}") for r in range(1, repeat + 1)]
    tuned = [load(f"libtorch_tuned_{n}_{r}") for r in range(1, repeat + 1)]
    for model in tc[0]:
        cells = []
        for kind, lt_key in (("step", "step_ms"), ("inference", "inference_ms")):
            f32 = [t[model][f"compiled_{kind}_ms"] for t in tc]
            lt = [min(s[model][lt_key], u[model][lt_key]) for s, u in zip(stock, tuned)]
            x = span([l / f for l, f in zip(lt, f32)])
            if tc[0][model].get("bf16"):
                bf16 = [t[model][f"bf16_{kind}_ms"] for t in tc]
                b, xb = f"{statistics.median(bf16):8.3f}", span([l / f for l, f in zip(lt, bf16)])
            else:
                b, xb = f"{'-':>8}", "-"
            cells.append(f"{statistics.median(f32):8.3f} {b} {statistics.median(lt):8.3f} "
                         f"{x:>11} {xb:>11}")
        print(f"{n:>3} {model:12} {cells[0]} | {cells[1]}")
EOF
