#!/usr/bin/env bash
# The README's test command: installs what is missing, then runs every test and
# ends with one summary line that CI reads:
#   tests: N passed, M failed
# (passed as Bazel counts it, flaky included, the ThreadSanitizer run of the
# concurrency test among them; failed is every other test: failed, timed out,
# failed to build, no status). The exit code is Bazel's.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
set +e
# --keep_going: a test that fails to build is reported as such, the rest still run.
bazel test --keep_going //... "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
# A compiled program called from several threads at once, under ThreadSanitizer.
bazel test --config=tsan //tests/pipeline:concurrency_test 2>&1 | tee -a "$log"
tsan_status=${PIPESTATUS[0]}
[ "$status" -ne 0 ] || status=$tsan_status
set -e

# Bazel's summary has one line per test: "//pkg:name   (cached) PASSED in 0.4s".
summary='^//[^ ]+ +(\(cached\) )?'
passed=$(grep -cE "${summary}(PASSED|FLAKY)" "$log" || true)
failed=$(grep -cE "${summary}(FAILED|TIMEOUT|NO STATUS|INCOMPLETE)" "$log" || true)
echo "tests: ${passed} passed, ${failed} failed"
exit "$status"
