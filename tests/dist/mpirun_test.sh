#!/usr/bin/env bash
# The MPI tests: data_parallel_test under `mpirun -np 2`; two jobs in
# which a rank fails, which must end non-zero, with a message, well before
# the other rank's sleep would (20 s); and `tensorcut train` on two ranks,
# which must train as one process does on the same global batches (cnn with
# its BatchNorm synchronised), resume
# its own checkpoint bit for bit, and leave one that one process resumes;
# and a rank stopped mid-training, which rank 0 must name.
#   tests/dist/mpirun_test.sh DATA_PARALLEL_TEST FAILING_RANK TENSORCUT COMPARE_CHECKPOINTS
set -uo pipefail
# Absolute: the training runs work in the temporary folder.
data_parallel_test="$(realpath "$1")" failing_rank="$(realpath "$2")"
tensorcut="$(realpath "$3")" compare="$(realpath "$4")"

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
    stall) pattern="tensorcut: all-reduce: rank 0 of 2 waited 1s for the other ranks: rank 1 did not answer" ;;
  esac
  grep -Eq "$pattern" "$TMPDIR/$mode.log" || fail "failing_rank $mode: no message matching: $pattern"
done

# SGD, so that the runs differ only in how the gradients are summed; one
# gemm for every process, so that none times its own choice (where oneDNN's
# and OpenBLAS's products run about as fast, as on AVX2-only CPUs, processes
# choose differently, and runs compared bit for bit differ in the last bit).
cd "$TMPDIR"
train=(train --steps 12 --optimizer sgd --lr 0.05 --gemm onednn)
# cnn's BatchNorm over both ranks' batches: then two ranks train as one (at
# a rate where cnn's loss does not diverge, which would magnify rounding).
for model in "mlp --batch 64" "transformer" "cnn --sync_batchnorm --lr 0.005"; do
  read -r -a flags <<<"$model"
  name="${flags[0]}"
  "$tensorcut" "${train[@]}" --model "${flags[@]}" --checkpoint "one_$name.safetensors" >/dev/null ||
    fail "$name: one process"
  "${mpirun[@]}" "$tensorcut" "${train[@]}" --model "${flags[@]}" --checkpoint "two_$name.safetensors" \
    >"two_$name.log" 2>&1 || { cat "two_$name.log"; fail "$name: two ranks"; }
  grep -q "data parallel: 2 ranks" "two_$name.log" || fail "$name: no data-parallel line"
  ! grep -q $'\r' "two_$name.log" || fail "$name: progress redrawn with \\r in a log"
  [ "$(grep -c "^tensorcut train: $name" "two_$name.log")" -eq 1 ] ||
    fail "$name: other ranks than 0 printed progress"
  "$compare" "two_$name.safetensors" "one_$name.safetensors" 1e-5 ||
    fail "$name: two ranks against one process"
done
# Synchronised BatchNorm on shares that differ: refused before training.
mpirun -np 3 --oversubscribe --bind-to none "$tensorcut" "${train[@]}" --model cnn --sync_batchnorm \
  >sync3.log 2>&1 && fail "cnn --sync_batchnorm on 3 ranks: the job exited 0"
grep -q "sync_batchnorm needs equal shares: a batch of 32 does not split into 3 ranks" sync3.log ||
  { cat sync3.log; fail "cnn --sync_batchnorm on 3 ranks: no message"; }
# Interrupted at step 6 and resumed, on two ranks and on one.
"${mpirun[@]}" "$tensorcut" "${train[@]}" --model mlp --batch 64 --steps 6 \
  --checkpoint half.safetensors >/dev/null 2>&1 || fail "mlp: two ranks, 6 steps"
"${mpirun[@]}" "$tensorcut" "${train[@]}" --model mlp --batch 64 --resume half.safetensors \
  --checkpoint resumed_two.safetensors >/dev/null 2>&1 || fail "mlp: two ranks resumed"
"$compare" resumed_two.safetensors two_mlp.safetensors 0 || fail "mlp: resumed on two ranks"
"$tensorcut" "${train[@]}" --model mlp --batch 64 --resume half.safetensors \
  --checkpoint resumed_one.safetensors >/dev/null || fail "mlp: one process resumed"
"$compare" resumed_one.safetensors two_mlp.safetensors 1e-5 || fail "mlp: resumed on one process"

# Rank 1 stopped (SIGSTOP) mid-training: rank 0 waits --collective_timeout,
# names rank 1, saves the last step both finished, and the job ends.
"${mpirun[@]}" "$tensorcut" "${train[@]}" --model mlp --batch 64 --steps 1000000 \
  --collective_timeout 2 --checkpoint stalled.safetensors >stalled.log 2>&1 &
job=$!
for _ in $(seq 600); do
  grep -q "^step 100/" stalled.log && break
  sleep 0.1
done
stopped=""
for pid in $(pgrep -f -- "$tensorcut train"); do
  tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 && stopped=$pid
done
if [ -z "$stopped" ]; then
  kill "$job"
  fail "stalled rank: rank 1 not found"
else
  kill -STOP "$stopped"
  wait "$job" && fail "stalled rank: the job exited 0"
  kill -KILL "$stopped" 2>/dev/null
  grep -q "waited 2s for the other ranks: rank 1 did not answer" stalled.log &&
    grep -q "checkpoint stalled.safetensors saved at step" stalled.log &&
    [ -f stalled.safetensors ] || { cat stalled.log; fail "stalled rank: no message or checkpoint"; }
fi

[ "$failures" -eq 0 ] && echo "mpirun_test: passed"
exit "$failures"
