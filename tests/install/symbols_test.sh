#!/usr/bin/env bash
# libtensorcut.so exports what is in namespace tc but the hidden namespaces
# (tc::kernels, tc::ops_internal, tc::vjp_internal, tc::nn::internal), and
# nothing outside tc: compared symbol by symbol with the same objects linked
# with every symbol visible.
#   symbols_test.sh LIBTENSORCUT_SO ALL_SYMBOLS_SO
set -euo pipefail
library=$(realpath "$1") all=$(realpath "$2")
cd "${TEST_TMPDIR:-$(mktemp -d)}"
hidden='tc::(kernels|ops_internal|vjp_internal|nn::internal)::'
# Functions, data, typeinfo (and its name), vtables and VTTs of namespace tc,
# by mangled name; the template functions among them demangle to names that
# begin with their return type, not with tc::.
in_tc='^_Z(NK?|T[ISVT]N)2tc'

defined() { nm -D --defined-only --format=posix "$1" | cut -d' ' -f1 | sort -u; }
without_hidden() {  # mangled names on stdin, those not in a hidden namespace out
  local names
  names=$(cat)
  paste <(echo "$names") <(echo "$names" | c++filt) | { grep -vE $'\t'".*${hidden}" || true; } | cut -f1
}

defined "$library" > exported.txt
status=0
count=$(wc -l < exported.txt)
echo "$count symbols exported"
[ "$count" -gt 500 ] || { echo "too few"; status=1; }

# ... and their thunks, guard variables, function-local statics and
# thread-locals' wrappers.
exportable='^_Z(NK?|T[ISVT]N|Th[^N]*N|Tv[^N]*N|GVZ?NK?|ZNK?|T[HW]N)2tc'
outside=$(grep -vE "$exportable" exported.txt || true)
[ -z "$outside" ] || { echo "exported outside namespace tc:"; echo "$outside" | c++filt; status=1; }
internal=$(c++filt < exported.txt | grep -E "$hidden" || true)
[ -z "$internal" ] || { echo "exported from a hidden namespace:"; echo "$internal"; status=1; }

# Every public symbol of the objects is exported, templates included.
defined "$all" | grep -E "$in_tc" | without_hidden | sort > public.txt
missing=$(comm -23 public.txt exported.txt)
[ -z "$missing" ] || { echo "public but not exported:"; echo "$missing" | c++filt; status=1; }
echo "$(wc -l < public.txt) public symbols of namespace tc, all exported"
exit "$status"
