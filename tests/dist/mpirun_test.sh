#!/usr/bin/env bash
# The MPI tests: data_parallel_test under `mpirun -np 2`, and two jobs in
# which a rank fails, which must end non-zero, with a message, well before
# the other rank's sleep would (20 s).
#   tests/dist/mpirun_test.sh DATA_PARALLEL_TEST FAILING_RANK
set -uo pipefail
data_parallel_test="$1" failing_rank="$2"

# mpirun as root needs both (CI runs as root); its session files go to the
# test's own temporary folder; one intra-op thread per rank.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export TMPDIR="${TEST_TMPDIR:-${TMPDIR:-/tmp}}" OMP_NUM_THREADS=1
mpirun=(mpirun -np 2 --oversubscribe --bind-to none)

failures=0
fail() {
  echo "FAILED: $*" >&2
  failures=$((failures + 1))
}

"${mpirun[@]}" "$data_parallel_test" || fail "data_parallel_test under mpirun -np 2"

for mode in exit stall; do
  start=$(date +%s)
  "${mpirun[@]}" "$failing_rank" "$mode" >"$TMPDIR/$mode.log" 2>&1
  status=$?
  elapsed=$(($(date +%s) - start))
  cat "$TMPDIR/$mode.log"
  [ "$status" -ne 0 ] || fail "failing_rank $mode: the job exited 0"
  [ "$elapsed" -lt 15 ] || fail "failing_rank $mode: the job took ${elapsed}s to end"
  case "$mode" in
    exit) pattern="exited on signal|exit code|non-zero status" ;;
    stall) pattern="tensorcut: all-reduce: rank 0 of 2 waited 1s for the other ranks" ;;
  esac
  grep -Eq "$pattern" "$TMPDIR/$mode.log" || fail "failing_rank $mode: no message matching: $pattern"
done

[ "$failures" -eq 0 ] && echo "mpirun_test: passed"
exit "$failures"
