"""tensorcut's version: the one place it is set.

The library reports it (tc::version(), base/version.cc), the shared library's
soname carries its major and minor parts (the ABI may change at every minor
version, as it does while the version is 0.x), and the installed pkg-config
and CMake package files declare it (tools/install/).
"""

TENSORCUT_VERSION = "0.3.0"

# The part of the version that names an ABI: libtensorcut.so.0.3.
TENSORCUT_SOVERSION = ".".join(TENSORCUT_VERSION.split(".")[:2])
