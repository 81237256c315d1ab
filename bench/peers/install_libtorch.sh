#!/usr/bin/env bash
# Installs Debian's libtorch (the peer the model benchmarks compare against)
# and the OpenMP build of OpenBLAS it links. Idempotent: does nothing when
# both packages are already installed. Needs root and Debian's apt archive.
set -euo pipefail

readonly PACKAGES=(libtorch-dev libopenblas0-openmp)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install_libtorch: ${PACKAGES[*]} already installed"
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends "${missing[@]}"
echo "install_libtorch: installed ${missing[*]}"
