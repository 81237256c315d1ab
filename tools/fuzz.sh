#!/usr/bin/env bash
# Builds the fuzz targets of fuzz/ with clang (--config=fuzz) and runs each for
# SECONDS (default 30), from a copy of its seed corpus with its dictionary.
#   tools/fuzz.sh            # 30 s each, as the test command does
#   tools/fuzz.sh 300        # a longer run
#   tools/fuzz.sh 60 idx     # one target
#   FUZZ_SEED=1 tools/fuzz.sh  # the same inputs each run, as the test command does
# Prints one line per target with the executions it reached; exits non-zero
# when a target crashed, keeping the input that did it in the work folder.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
shift || true
if ! [[ $seconds =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: tools/fuzz.sh [SECONDS] [TARGET...]: SECONDS is a positive number, got '$seconds'" >&2
  exit 2
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(graph_parser graph_compile safetensors idx data_files onnx_import plan)

declare -A corpus=([graph_parser]=graph_parser [graph_compile]=graph_parser [safetensors]=safetensors [idx]=idx
  [data_files]=data_files [onnx_import]=onnx_import [plan]=plan)
declare -A dict=([graph_parser]=graph [graph_compile]=graph [safetensors]=safetensors [idx]=idx
  [data_files]=data_files [onnx_import]=onnx_import [plan]=plan)

for t in "${targets[@]}"; do
  [ -n "${corpus[$t]:-}" ] || { echo "tools/fuzz.sh: no fuzz target $t (targets: ${!corpus[*]})" >&2; exit 1; }
done
bazel build --config=fuzz $(printf '//fuzz:%s_fuzzer ' "${targets[@]}")
work="$(mktemp -d /tmp/tensorcut-fuzz.XXXXXX)"
status=0
for t in "${targets[@]}"; do
  mkdir -p "$work/$t"
  cp "fuzz/corpus/${corpus[$t]}"/* "$work/$t/"
  log="$work/$t.log"
  # One OpenMP thread: each input runs as fast, and fails the same way, every time.
  if OMP_NUM_THREADS=1 "bazel-bin/fuzz/${t}_fuzzer" -max_total_time="$seconds" -timeout=20 \
      -seed="${FUZZ_SEED:-0}" \
      -rss_limit_mb=4096 -dict="fuzz/${dict[$t]}.dict" -artifact_prefix="$work/$t-" \
      -print_final_stats=1 "$work/$t" >"$log" 2>&1; then
    runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
    echo "fuzz $t: $runs executions in ${seconds} s, no crash"
  else
    status=1
    echo "fuzz $t: FAILED, see $log and $work/$t-*"
    grep -E "^==[0-9]+== ?ERROR|^fuzz target:|SUMMARY" "$log" | head -5 || true
  fi
done
[ "$status" -ne 0 ] || rm -rf "$work"
exit "$status"
