#!/usr/bin/env bash
# Installs everything onyx needs on Debian 12 and builds a Release tree into build/.
# Idempotent: a second run only re-checks packages and rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git python3 python3-venv python3-dev
  clang-14 libclang-rt-14-dev
  libprotobuf-dev protobuf-compiler
  libtbb-dev libdnnl-dev ocl-icd-opencl-dev libhwy-dev
  libgtest-dev libgmock-dev libbenchmark-dev pybind11-dev
  libxnnpack-dev libpthreadpool-dev libcpuinfo-dev
  libjpeg62-turbo-dev libpng-dev libtiff-dev libwebp-dev libopenjp2-7-dev
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing apt packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Python: a venv with pinned packages (onnx is the newest release; its node tests are generated
# into build/node-tests below, since onnx 1.23 no longer ships them as files).
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PY" -m venv .venv
fi
if ! cmp -s scripts/requirements.txt .venv/.requirements.installed 2>/dev/null; then
  echo "setup: installing Python packages"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r scripts/requirements.txt
  cp scripts/requirements.txt .venv/.requirements.installed
fi

# The ONNX node tests as files for `onyx conformance`, the fuzz seeds and the Python tests:
# build/node-tests/newest from the pinned onnx's own generators, build/node-tests/onnx-1.22.0 the
# files the last release that shipped them carried (older releases' models keep passing).
.venv/bin/python -W ignore scripts/node_tests.py generate build/node-tests/newest
.venv/bin/python scripts/node_tests.py extract 1.22.0 build/node-tests/onnx-1.22.0

# Build: Release with ccache, Ninja. Paths relative to the checkout let ccache reuse objects
# compiled in another clone of the repository (CI builds a fresh clone each time).
export CCACHE_BASEDIR="$ROOT"
BUILD_TYPE=${ONYX_BUILD_TYPE:-Release}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache \
  -DPython3_EXECUTABLE="$ROOT/.venv/bin/python" >/dev/null
cmake --build build -j"$(nproc)"
echo "setup: done; CLI at build/onyx"
