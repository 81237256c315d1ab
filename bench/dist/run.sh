#!/usr/bin/env bash
# Data-parallel training on this machine: for mlp, cnn and transformer, the
# step with 2 ranks x 1 thread (mpirun -np 2, each rank bound to a core)
# against 1 rank x 2 threads and 1 rank x 1 thread, on the same global batch,
# with the bytes the buckets sum per step and the fraction of their
# all-reduce the backward hides (bench/data_parallel_bench.cc); and "2 x 1
# after", the same two ranks averaging after the backward instead of in it.
# "wait ms" is the all-reduce time a step did not hide (for "after", all of
# it), "a-r ms" the same buckets' all-reduce alone.
#
#   bench/dist/run.sh [--reps R] [--runs N] [--models mlp,cnn,transformer]
#
# The configurations run interleaved, R times each (default 3); the table
# shows the median over reps of each run's median step.
set -euo pipefail
cd "$(dirname "$0")/../.."

reps=3 runs=30 models=mlp,cnn,transformer
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) reps="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --models) models="$2"; shift 2 ;;
    *) echo "usage: $0 [--reps R] [--runs N] [--models M[,M...]]" >&2; exit 2 ;;
  esac
done

readonly out=bench/dist/.build
readonly bench=bazel-bin/bench/data_parallel_bench
mkdir -p "$out"
if ! bazel build -c opt --config=opt //bench:data_parallel_bench >"$out/build.log" 2>&1; then
  cat "$out/build.log" >&2
  exit 1
fi
# mpirun as root needs both; session files stay in our folder.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TMPDIR="${TMPDIR:-/tmp}"

results="$out/results.jsonl"
: >"$results"
IFS=, read -r -a model_list <<<"$models"
for ((rep = 1; rep <= reps; rep++)); do
  for model in "${model_list[@]}"; do
    flags=(--model "$model" --runs "$runs")
    echo "rep $rep: $model" >&2
    OMP_NUM_THREADS=1 "$bench" "${flags[@]}" --threads 1 >>"$results"
    OMP_NUM_THREADS=2 "$bench" "${flags[@]}" --threads 2 >>"$results"
    OMP_NUM_THREADS=1 mpirun -np 2 --bind-to core "$bench" "${flags[@]}" --threads 1 >>"$results"
    OMP_NUM_THREADS=1 mpirun -np 2 --bind-to core "$bench" "${flags[@]}" --threads 1 \
      --after_backward >>"$results"
  done
done

python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
print(f"{'model':12} {'config':12} {'batch':>5} {'step ms':>9} {'examples/s':>11} {'vs 1x1':>7}"
      f" {'buckets':>7} {'MB/step':>8} {'wait ms':>8} {'a-r ms':>8} {'hidden':>7}")
for model in dict.fromkeys(r["model"] for r in rows):
    base = None
    for ranks, threads, after in ((1, 1, False), (1, 2, False), (2, 1, False), (2, 1, True)):
        runs = [r for r in rows if r["model"] == model and r["ranks"] == ranks
                and r["threads"] == threads and r["after_backward"] == after]
        if not runs:
            continue
        med = lambda k: statistics.median(r[k] for r in runs)
        step = med("step_ms")
        base = base or step
        config = f"{ranks} x {threads}" + (" after" if after else "")
        print(f"{model:12} {config:12} {runs[0]['batch']:>5} {step:>9.3f}"
              f" {med('examples_per_s'):>11.0f} {base / step:>6.2f}x {runs[0]['buckets']:>7}"
              f" {med('bytes_per_step') / 1e6:>8.2f} {med('wait_ms'):>8.3f}"
              f" {med('all_reduce_ms'):>8.3f} {med('hidden'):>7.2f}")
PY
