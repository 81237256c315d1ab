#!/usr/bin/env bash
# The README's test command: installs what is missing, then runs every test,
# the sanitizer runs and the fuzz targets, and ends with one summary line that
# CI reads:
#   tests: N passed, M failed
# (passed as Bazel counts it, flaky included, plus each fuzz target that ran
# without a crash; failed is every other test: failed, timed out, failed to
# build, no status, and each fuzz target that crashed). The exit code is
# non-zero when anything failed.
#   tools/test.sh                      # everything
#   FUZZ_SECONDS=300 tools/test.sh     # longer fuzz runs (default 20 s each)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
run() {
  "$@" 2>&1 | tee -a "$log"
  local s=${PIPESTATUS[0]}
  [ "$s" -eq 0 ] || status=$s
}
set +e
# --keep_going: a test that fails to build is reported as such, the rest still run.
run bazel test --keep_going //... "$@"
# A compiled program called from several threads at once, and the DataLoader's
# prefetch thread, under ThreadSanitizer, three times: a race shows in some
# runs only.
run bazel test --config=tsan --runs_per_test=3 //tests/pipeline:concurrency_test \
  //tests/nn:data_loader_test
# Address and undefined-behaviour sanitizers over every test but the few
# that compile whole models many times (tagged slow_under_asan, .bazelrc);
# only what the tests need is built (not the benchmarks or the installed
# library).
run bazel test --config=asan --build_tests_only --keep_going //...
# tools/install.sh into a temporary prefix, and the README's program built
# against it with CMake, with pkg-config, and from an external Bazel
# workspace; installed from the build of the first line (-c fastbuild), so
# that it compiles nothing again.
run tests/install/consumers_test.sh -c fastbuild "$@"
# Each fuzz target for a short time from its seed corpus, with a fixed seed:
# the same inputs every run.
FUZZ_SEED=1 run tools/fuzz.sh "${FUZZ_SECONDS:-20}"
set -e

# Bazel's summary has one line per test: "//pkg:name   (cached) PASSED in 0.4s";
# tools/fuzz.sh one per target: "fuzz NAME: ... no crash" or "fuzz NAME: FAILED ...";
# the installation tests one per check: "consumer NAME: passed" or "... FAILED ...".
summary='^//[^ ]+ +(\(cached\) )?'
passed=$(grep -cE "${summary}(PASSED|FLAKY)|^fuzz [a-z_]+: .*no crash|^consumer [a-z-]+: passed" "$log" || true)
failed=$(grep -cE "${summary}(FAILED|TIMEOUT|NO STATUS|INCOMPLETE)|^fuzz [a-z_]+: FAILED|^consumer [a-z-]+: FAILED" "$log" || true)
echo "tests: ${passed} passed, ${failed} failed"
exit "$status"
