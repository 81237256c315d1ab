#!/usr/bin/env bash
# The README's test command: installs what is missing, then runs every test,
# the sanitizer runs and the fuzz targets. It prints one line per stage (what
# passed and failed, and how long it took), the lines of whatever failed, and
# ends with one summary line that CI reads:
#   tests: N passed, M failed
# (passed as Bazel counts it, flaky included, plus each fuzz target that ran
# without a crash and each installation route that built; failed is every
# other test: failed, timed out, failed to build, no status, and each fuzz
# target that crashed). Each stage's whole output is kept in a log whose
# folder the first line names. The exit code is non-zero when anything failed.
#   tools/test.sh                      # everything
#   FUZZ_SECONDS=300 tools/test.sh     # longer fuzz runs (default 20 s each)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh

logs="$(mktemp -d /tmp/tensorcut-test.XXXXXX)"
echo "tools/test.sh: each stage's output is in $logs"
# Bazel's summary has one line per test: "//pkg:name   (cached) PASSED in 0.4s";
# tools/fuzz.sh one per target: "fuzz NAME: ... no crash" or "fuzz NAME: FAILED ...";
# the installation tests one per check: "consumer NAME: passed" or "... FAILED ...".
summary='^//[^ ]+ +(\(cached\) )?'
passed_lines="${summary}(PASSED|FLAKY)|^fuzz [a-z_]+: .*no crash|^consumer [a-z-]+: passed"
failed_lines="${summary}(FAILED|TIMEOUT|NO STATUS|INCOMPLETE)|^fuzz [a-z_]+: FAILED|^consumer [a-z-]+: FAILED"
status=0
passed=0
failed=0

# stage NAME COMMAND...: runs COMMAND with its output in $logs/NAME.log and
# prints "NAME: P passed, F failed in S s", then each failing line and, for a
# command that failed with no failing test to show (a build error), the log's
# errors.
stage() {
  local name=$1 log="$logs/$1.log" start=$SECONDS
  shift
  set +e
  "$@" >"$log" 2>&1
  local s=$?
  set -e
  local p f
  p=$(grep -cE "$passed_lines" "$log" || true)
  f=$(grep -cE "$failed_lines" "$log" || true)
  echo "$name: $p passed, $f failed in $((SECONDS - start)) s"
  # Bazel names each failing test's log on a line of its own ("FAIL: //pkg:name (see PATH)").
  grep -E "$failed_lines|^(FAIL|TIMEOUT): " "$log" | sed 's/^/  /' || true
  if [ "$s" -ne 0 ]; then
    status=$s
    if [ "$f" -eq 0 ]; then
      grep -E '^ERROR|error:|FAILED' "$log" | head -20 | sed 's/^/  /' || true
      echo "  (exit $s; see $log)"
    fi
  fi
  passed=$((passed + p))
  failed=$((failed + f))
}

# --keep_going: a test that fails to build is reported as such, the rest still run.
stage main bazel test --keep_going //... "$@"
# tools/install.sh into a temporary prefix, and the README's program built
# against it with CMake, with pkg-config, and from an external Bazel
# workspace; installed from the build of the first line (-c fastbuild), so
# that it compiles nothing again.
stage install tests/install/consumers_test.sh -c fastbuild "$@"
# A compiled program called from several threads at once, and the DataLoader's
# prefetch thread, under ThreadSanitizer, three times: a race shows in some
# runs only.
stage tsan bazel test --config=tsan --runs_per_test=3 //tests/pipeline:concurrency_test \
  //tests/nn:data_loader_test
# Address and undefined-behaviour sanitizers over every test but the few
# that compile whole models many times (tagged slow_under_asan, .bazelrc);
# only what the tests need is built (not the benchmarks or the installed
# library).
stage asan bazel test --config=asan --build_tests_only --keep_going //...
# Each fuzz target for a short time from its seed corpus, with a fixed seed:
# the same inputs every run.
FUZZ_SEED=1 stage fuzz tools/fuzz.sh "${FUZZ_SECONDS:-20}"

echo "tests: ${passed} passed, ${failed} failed"
exit "$status"
