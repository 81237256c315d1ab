#!/usr/bin/env bash
# The installation, tried as a user of the README would: installs tensorcut
# into a temporary prefix with tools/install.sh, checks that the shared
# library exports the public API only, and builds and runs the README's
# training program (examples/compiled_step.cc, which fails unless its loss
# falls) by each route of README.md's "Embedding tensorcut": CMake,
# pkg-config and an external Bazel workspace. The build files and commands
# are the README's own blocks, each after a marker line
#   <!-- consumer ROUTE: FILE -->
# (FILE "commands" is run), with /opt/tensorcut replaced by the prefix and
# /path/to/tensorcut by this tree. Prints one line per check,
# "consumer NAME: passed" or "consumer NAME: FAILED ...", which tools/test.sh
# counts, and exits non-zero when one failed.
#   tests/install/consumers_test.sh [BAZEL_FLAGS...]   # flags for the install build
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
report() {  # NAME STATUS LOG
  if [ "$2" -eq 0 ]; then
    echo "consumer $1: passed"
  else
    echo "consumer $1: FAILED; its output:"
    sed 's/^/  /' "$3" | tail -40
    failed=1
  fi
}

# Without a prefix, or with a flag where the prefix goes: the usage, exit 2.
{
  "$root/tools/install.sh"
  [ $? -eq 2 ] || exit 1
  "$root/tools/install.sh" -c opt
  [ $? -eq 2 ] || exit 1
} > "$work/usage.log" 2>&1
[ $? -eq 0 ] && [ "$(grep -c '^usage: tools/install.sh PREFIX' "$work/usage.log")" -eq 2 ]
report usage $? "$work/usage.log"

prefix="$work/prefix"
"$root/tools/install.sh" "$prefix" "$@" > "$work/install.log" 2>&1
report install $? "$work/install.log"
[ "$failed" -eq 0 ] || exit 1

# find_package(tensorcut X.Y) takes this version's major and minor version,
# at this patch or below, and refuses every other.
version=$(sed -n 's/^TENSORCUT_VERSION = "\(.*\)"$/\1/p' "$root/version.bzl")
major=${version%%.*} minor=${version#*.}
minor=${minor%%.*}
check_version() {  # REQUESTED EXPECTED_CODE
  local dir="$work/version-$1"
  mkdir -p "$dir"
  printf 'cmake_minimum_required(VERSION 3.16)\nproject(v CXX)\nfind_package(tensorcut %s CONFIG REQUIRED)\n' \
    "$1" > "$dir/CMakeLists.txt"
  cmake -S "$dir" -B "$dir/build" -DCMAKE_PREFIX_PATH="$prefix" > "$dir/log" 2>&1
  local code=$?
  echo "find_package(tensorcut $1): exit $code, expected $2"
  [ "$code" -eq "$2" ] || { cat "$dir/log"; return 1; }
}
{
  check_version "$version" 0 && check_version "$major.$minor" 0 &&
    check_version "$major.$((minor + 1))" 1 && check_version "$((major + 1)).0" 1
} > "$work/version.log" 2>&1
report cmake-version $? "$work/version.log"

# Exported: namespace tc and its classes' typeinfo and vtables, nothing of the
# hidden namespaces, nothing of Abseil or the standard library.
nm -D --defined-only -C "$prefix/lib/libtensorcut.so" | cut -d' ' -f3- |
  grep -vE '^((typeinfo|typeinfo name|vtable|VTT|guard variable) for |(non-)?virtual thunk to )?tc::' \
    > "$work/foreign.txt"
nm -D --defined-only -C "$prefix/lib/libtensorcut.so" |
  grep -E 'tc::(kernels|ops_internal|vjp_internal|nn::internal)::' > "$work/internal.txt"
exported=$(nm -D --defined-only "$prefix/lib/libtensorcut.so" | wc -l)
{
  echo "$exported symbols exported"
  echo "outside namespace tc:"; cat "$work/foreign.txt"
  echo "of internal namespaces:"; cat "$work/internal.txt"
} > "$work/symbols.log"
[ "$exported" -gt 500 ] && [ ! -s "$work/foreign.txt" ] && [ ! -s "$work/internal.txt" ]
report symbols $? "$work/symbols.log"

# Writes the README's blocks for ROUTE into DIR.
extract() {  # ROUTE DIR
  awk -v route="$1" -v dir="$2" '
    $0 ~ "^<!-- consumer " route ": [^ ]+ -->$" { file = dir "/" $4; next }
    file != "" && /^```/ { if (inside) { close(file); file = ""; inside = 0 } else inside = 1; next }
    file != "" && inside { print > file }
  ' "$root/README.md"
  find "$2" -maxdepth 1 -type f -exec \
    sed -i -e "s|/opt/tensorcut|$prefix|g" -e "s|/path/to/tensorcut|$root|g" {} +
}

for route in cmake pkg-config bazel; do
  dir="$work/$route"
  mkdir -p "$dir"
  extract "$route" "$dir"
  cp "$root/examples/compiled_step.cc" "$dir/main.cc"
  if [ ! -s "$dir/commands" ]; then
    echo "README.md has no commands for $route" > "$dir/log"
    report "$route" 1 "$dir/log"
    continue
  fi
  # The Bazel route shares the project's disk cache, as a second checkout would.
  [ "$route" != bazel ] || echo "build --disk_cache=~/.cache/tensorcut-bazel-disk" >> "$dir/.bazelrc"
  (cd "$dir" && bash -euo pipefail commands) > "$dir/log" 2>&1
  report "$route" $? "$dir/log"
  if [ "$route" = bazel ]; then
    (cd "$dir" && bazel clean --expunge && bazel shutdown) > /dev/null 2>&1
  fi
done
exit "$failed"
