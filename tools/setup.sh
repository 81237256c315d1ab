#!/usr/bin/env bash
# Installs the Debian packages tensorcut needs to build, test and run its demo.
# Idempotent: quiet when everything is present; runs `apt-get update` only when
# something is missing.
set -euo pipefail

packages=(
  bazel-bootstrap      # Bazel 4.2.3 (WORKSPACE mode)
  g++
  pkg-config
  cmake                # the installation tests (tests/install/)
  zlib1g-dev           # reads the gzip-compressed datasets
  libeigen3-dev        # Eigen 3.4
  libdnnl-dev          # oneDNN 2.6
  libopenblas0-openmp  # OpenBLAS 0.3.21 on OpenMP, a gemm candidate loaded at run time
  libabsl-dev          # Abseil 20220623
  catch2               # Catch2 2.13 (single header)
  nlohmann-json3-dev   # JSON 3.11 (header-only): checkpoint headers, reports
  libbenchmark-dev     # Google Benchmark, for bench/
  coinor-libcbc-dev    # CBC 2.10, the mixed-integer solver of the milp partitioner
  libopenmpi-dev       # OpenMPI 4.1, data-parallel training across processes (dist/),
  openmpi-bin          # and its mpirun
  clang                # the fuzz targets (tools/fuzz.sh): clang 14,
  libclang-rt-14-dev   # its libFuzzer and sanitizer runtimes,
  libomp-14-dev        # and its OpenMP runtime
  libonnx-dev          # ONNX 1.12's protobuf messages, read and written by nn/onnx/
  libprotobuf-dev      # and protobuf 3.21 under them
  python3-torch        # tests only: models exported by PyTorch 1.13 and eager references
  python3-onnx         # (tests/nn/onnx/torch_reference.py), never the engine
  python3-torchvision  # and its resnet18 and mobilenet_v2
  dataset-fashion-mnist  # the demo's data
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "tensorcut setup: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
