#!/usr/bin/env bash
# The installation, tried as a user of the README would: installs tensorcut
# into a temporary prefix with tools/install.sh, moves the prefix (the files
# are relocatable), and builds and runs the README's training program
# (examples/compiled_step.cc, which fails unless its loss falls) by each route
# of README.md's "Embedding tensorcut": CMake, pkg-config and an external
# Bazel workspace. The build files and commands are the README's own blocks,
# each after a marker line
#   <!-- consumer ROUTE: FILE -->
# (FILE "commands" is run), with $HOME/opt/tensorcut replaced by the prefix
# and /path/to/tensorcut by this tree. Also checks the usage errors of
# tools/install.sh and the versions the package files declare and accept.
# Prints one line per check, "consumer NAME: passed" or
# "consumer NAME: FAILED ...", which tools/test.sh counts, and exits non-zero
# when one failed.
#   tests/install/consumers_test.sh [BAZEL_FLAGS...]   # flags for the install build
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
cleanup() {
  # The Bazel route's output base and server, also when interrupted.
  if [ -f "$work/bazel/WORKSPACE" ]; then
    (cd "$work/bazel" && bazel clean --expunge && bazel shutdown) > /dev/null 2>&1
  fi
  rm -rf "$work"
}
trap cleanup EXIT
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
(
  "$root/tools/install.sh"
  [ $? -eq 2 ] || exit 1
  "$root/tools/install.sh" -c opt
  [ $? -eq 2 ] || exit 1
) > "$work/usage.log" 2>&1
[ $? -eq 0 ] && [ "$(grep -c '^usage: tools/install.sh PREFIX' "$work/usage.log")" -eq 2 ]
report usage $? "$work/usage.log"

"$root/tools/install.sh" "$work/installed" "$@" > "$work/install.log" 2>&1
report install $? "$work/install.log"
[ "$failed" -eq 0 ] || exit 1
prefix="$work/moved"
mv "$work/installed" "$prefix"

# The package files carry version.bzl's version; find_package(tensorcut X.Y)
# takes this major and minor version at this patch or below, and refuses
# every other.
version=$(sed -n 's/^TENSORCUT_VERSION = "\(.*\)"$/\1/p' "$root/version.bzl")
IFS=. read -r major minor patch <<< "$version"
find_package() {  # REQUESTED ACCEPTED(0|1)
  local dir="$work/version-$1"
  mkdir -p "$dir"
  printf 'cmake_minimum_required(VERSION 3.19)\nproject(v CXX)\nfind_package(tensorcut %s CONFIG REQUIRED)\n' \
    "$1" > "$dir/CMakeLists.txt"
  local code=0
  cmake -S "$dir" -B "$dir/build" -DCMAKE_PREFIX_PATH="$prefix" > "$dir/log" 2>&1 || code=$?
  echo "find_package(tensorcut $1): exit $code"
  if [ "$2" -eq 0 ]; then
    [ "$code" -eq 0 ] || { cat "$dir/log"; return 1; }
  else
    [ "$code" -ne 0 ] && grep -q 'compatible with requested version' "$dir/log" ||
      { cat "$dir/log"; return 1; }
  fi
}
(
  set -e
  modversion=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --modversion tensorcut)
  echo "pkg-config --modversion tensorcut: $modversion, version.bzl: $version"
  [ "$modversion" = "$version" ]
  find_package "$version" 0
  find_package "$major.$minor" 0
  find_package "$major.$minor...$((major + 1)).0" 0
  find_package "$major.$minor.$((patch + 1))" 1
  find_package "$major.$((minor + 1))" 1
  find_package "$((major + 1)).0" 1
  [ "$minor" -eq 0 ] || find_package "$major.$((minor - 1))" 1
) > "$work/versions.log" 2>&1
report versions $? "$work/versions.log"

# Writes the README's blocks for ROUTE into DIR.
extract() {  # ROUTE DIR
  awk -v route="$1" -v dir="$2" '
    $0 ~ "^<!-- consumer " route ": [^ ]+ -->$" { file = dir "/" $4; next }
    file != "" && /^```/ { if (inside) { close(file); file = ""; inside = 0 } else inside = 1; next }
    file != "" && inside { print > file }
  ' "$root/README.md"
  find "$2" -maxdepth 1 -type f -exec \
    sed -i -e "s|\$HOME/opt/tensorcut|$prefix|g" -e "s|/path/to/tensorcut|$root|g" {} +
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
done
exit "$failed"
