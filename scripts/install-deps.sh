#!/usr/bin/env bash
# Installs the Debian packages kiln needs to build and test. Idempotent: does nothing
# (and needs no root) when everything is already present.
set -euo pipefail
PKGS=(cmake ninja-build g++ make pkg-config python3
      libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata
      libdnnl-dev ocl-icd-opencl-dev
      libgtest-dev libgmock-dev libbenchmark-dev
      libcli11-dev libfmt-dev nlohmann-json3-dev zlib1g-dev graphviz
      libre2-dev libjpeg-dev libpng-dev libtiff-dev libwebp-dev libopenjp2-7-dev
      pybind11-dev python3-dev python3-numpy python3-venv python3-setuptools python3-wheel
      python3-pytest python3-onnx)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
