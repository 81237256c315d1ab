"""Offline stand-in for @rules_java, loaded by @bazel_tools even for C++ builds."""

java_binary = native.java_binary
java_import = native.java_import
java_library = native.java_library
java_runtime = native.java_runtime
java_toolchain = native.java_toolchain
java_test = native.java_test
