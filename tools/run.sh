#!/usr/bin/env bash
# The README's main-job command: installs what is missing, then builds (optimised)
# and runs the `tensorcut` program; arguments go to the program
# (`tools/run.sh --help`, `tools/run.sh demo --runs=50`).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
# Bazel's progress and info lines are hidden; build errors and warnings still show.
exec bazel run -c opt --config=opt --noshow_progress --ui_event_filters=-info,-stdout,-stderr \
  //tools:tensorcut -- "$@"
