#!/usr/bin/env bash
# version_script.sh LIBRARY: prints the linker version script of
# libtensorcut.so, made from the symbols LIBRARY (the same objects linked with
# every symbol visible) defines. Exported: namespace tc and its classes'
# typeinfo, vtables, thunks and guard variables. Hidden: the namespaces no
# installed header declares (tc::kernels, tc::ops_internal, tc::vjp_internal,
# tc::nn::internal), listed by exact name because an exact name outranks a
# wildcard in a version script, and everything outside tc (Abseil's and the
# standard library's template instances, OpenMP's outlined loops). Called by
# tools/install/BUILD.bazel.
set -euo pipefail
hidden='tc::(kernels|ops_internal|vjp_internal|nn::internal)::'
cat <<'HEAD'
{
  global:
    extern "C++" {
      tc::*;
      *?for?tc::*;
      *thunk?to?tc::*;
    };
  local:
    extern "C++" {
HEAD
nm -D --defined-only -C "$1" | cut -d" " -f3- | { grep -E "$hidden" || true; } | sed 's/\\/\\\\/g; s/"/\\"/g; s/.*/      "&";/'
cat <<'TAIL'
    };
    *;
};
TAIL
