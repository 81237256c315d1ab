#!/usr/bin/env bash
# Runs an example program; fails if it fails or prints nothing.
set -euo pipefail
output="$("$1")"
[ -n "$output" ]
echo "$output"
