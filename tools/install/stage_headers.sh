#!/usr/bin/env bash
# stage_headers.sh OUT ROOT UMBRELLA HEADER...: copies UMBRELLA (a path under
# ROOT, the source tree) and every project header it includes, directly or
# not, to OUT/tensorcut/<its path>, rewriting each project include from
# "nn/module.h" to "tensorcut/nn/module.h" so that the installed headers
# resolve among themselves under PREFIX/include. Fails when an included
# project header is not among the HEADERs, the headers of the library's
# targets. Called by dist.bzl's public_headers.
set -euo pipefail
out=$1 root=$2 umbrella=$3
shift 3
declare -A known=()
for header in "$@"; do known[$header]=1; done
# The top-level folders of the library: an include of one of them is ours.
project='(base|graph|autodiff|partition|codegen|runtime|nn|pipeline)/'

todo=("$umbrella")
declare -A seen=()
while [ ${#todo[@]} -gt 0 ]; do
  header=${todo[0]}
  todo=("${todo[@]:1}")
  [ -z "${seen[$header]:-}" ] || continue
  seen[$header]=1
  if [ -z "${known[$header]:-}" ]; then
    echo "stage_headers: $header, included by an installed header, is not a header of the library's targets" >&2
    exit 1
  fi
  mkdir -p "$out/tensorcut/$(dirname "$header")"
  sed -E "s@^#include \"(${project})@#include \"tensorcut/\\1@" "$root/$header" \
    > "$out/tensorcut/$header"
  while read -r included; do
    todo+=("$included")
  done < <(sed -nE "s@^#include \"(${project}[^\"]+)\".*@\\1@p" "$root/$header")
done
