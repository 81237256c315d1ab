#!/usr/bin/env bash
# The README's test command: installs what is missing, then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
bazel test //... "$@"
