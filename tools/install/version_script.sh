#!/usr/bin/env bash
# version_script.sh LIBRARY: prints the linker version script of
# libtensorcut.so, made from the symbols LIBRARY (the same objects linked with
# every symbol visible) defines.
#
# Exported: what is in namespace tc, by mangled prefix (a demangled pattern
# would miss template functions, whose demangled names begin with their
# return type): functions and data (_ZN2tc, const members _ZNK2tc), typeinfo
# and its name, vtables, VTTs, thunks, guard variables, function-local
# statics and thread-locals' wrappers.
# Hidden: the namespaces no installed header declares (tc::kernels,
# tc::ops_internal, tc::vjp_internal, tc::nn::internal), listed by exact name,
# which outranks a wildcard in a version script; and everything outside tc
# (Abseil's and the standard library's template instances, OpenMP's outlined
# loops). Called by tools/install/BUILD.bazel.
set -euo pipefail
hidden='tc::(kernels|ops_internal|vjp_internal|nn::internal)::'
cat <<'HEAD'
{
  global:
    _ZN2tc*; _ZNK2tc*;
    _ZTIN2tc*; _ZTSN2tc*; _ZTVN2tc*; _ZTTN2tc*;
    _ZTh*N2tc*; _ZTv*N2tc*;
    _ZGVN2tc*; _ZGVZN2tc*; _ZGVZNK2tc*; _ZZN2tc*; _ZZNK2tc*;
    _ZTHN2tc*; _ZTWN2tc*;
  local:
HEAD
names=$(nm -D --defined-only --format=posix "$1" | cut -d' ' -f1)
paste <(echo "$names") <(echo "$names" | c++filt) | { grep -E $'\t'".*${hidden}" || true; } |
  cut -f1 | sed 's/.*/    &;/'
cat <<'TAIL'
    *;
};
TAIL
