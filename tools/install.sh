#!/usr/bin/env bash
# Builds tensorcut as a library with Bazel and installs it under PREFIX:
#
#   PREFIX/lib/libtensorcut.so.X.Y.Z   the public API (namespaces tc, tc::nn,
#                                      tc::codegen, tc::partition), soname
#                                      libtensorcut.so.X.Y, and its links
#   PREFIX/lib/libtensorcut.a          the same objects, for static links
#   PREFIX/include/tensorcut/          tensorcut.h and the headers it includes
#   PREFIX/lib/pkgconfig/tensorcut.pc
#   PREFIX/lib/cmake/tensorcut/        tensorcutConfig.cmake and its version file
#
# Usage: tools/install.sh PREFIX [BAZEL_FLAGS...]
#   tools/install.sh ~/opt/tensorcut            # optimised (-c opt: -O2, NDEBUG)
#   tools/install.sh ~/opt/tensorcut -c opt --config=opt  # -O3 -march=native: this CPU only
# The files are relocatable: PREFIX may be moved as a whole, so a system
# prefix is best filled by copying a user's installation with sudo, rather
# than by running Bazel as root.
set -euo pipefail
if [ $# -lt 1 ] || [ "${1#-}" != "$1" ]; then
  echo "usage: tools/install.sh PREFIX [BAZEL_FLAGS...]  (default flags: -c opt)" >&2
  exit 2
fi
prefix=$1
shift
flags=("$@")
[ ${#flags[@]} -gt 0 ] || flags=(-c opt)
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
cd "$(dirname "$0")/.."
tools/setup.sh

bazel build "${flags[@]}" //tools/install
bin="$(bazel info "${flags[@]}" bazel-bin)/tools/install"
# The version as the build wrote it into the package files (from version.bzl).
version=$(sed -n 's/^Version: //p' "$bin/tensorcut.pc")
soname=$(readelf -d "$bin/libtensorcut.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
if [ -z "$version" ] || [ -z "$soname" ]; then
  echo "tools/install.sh: the build gave no version ('$version') or soname ('$soname')" >&2
  exit 1
fi

lib="$prefix/lib"
mkdir -p "$lib/pkgconfig" "$lib/cmake/tensorcut" "$prefix/include"
install -m 755 "$bin/libtensorcut.so" "$lib/libtensorcut.so.$version"
ln -sfn "libtensorcut.so.$version" "$lib/$soname"
ln -sfn "$soname" "$lib/libtensorcut.so"
install -m 644 "$bin/libtensorcut.a" "$lib/libtensorcut.a"
install -m 644 "$bin/tensorcut.pc" "$lib/pkgconfig/tensorcut.pc"
install -m 644 "$bin/tensorcutConfig.cmake" "$bin/tensorcutConfigVersion.cmake" \
  "$lib/cmake/tensorcut/"
# The headers replace an earlier installation's as a whole (a header since
# removed does not linger), and only once the new ones are all copied.
staged="$prefix/include/.tensorcut.installing"
rm -rf "$staged"
cp -R "$bin/include/tensorcut" "$staged"
chmod -R u+w,a+rX "$staged"
rm -rf "$prefix/include/tensorcut"
mv "$staged" "$prefix/include/tensorcut"

echo "tensorcut $version installed in $prefix ($(du -sh "$lib/libtensorcut.so.$version" | cut -f1) shared library)"
case "$lib" in
  /usr/lib | /usr/local/lib) echo "run ldconfig so that programs find $soname" ;;
  *) echo "programs linked against it find $soname through an rpath or LD_LIBRARY_PATH=$lib" ;;
esac
