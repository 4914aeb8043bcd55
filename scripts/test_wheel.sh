#!/usr/bin/env bash
# Builds the onyx wheel with pip (scikit-build-core driving the project's CMake build: engine, CLI
# and module only), installs it into a fresh venv together with the pinned test dependencies of
# scripts/requirements.txt, and runs the Python tests against that installed copy, not the build
# tree. Run scripts/setup.sh first (it installs scikit-build-core into .venv and builds build/).
#
#   ONYX_WHEEL_DIR   where the CMake build, dist/ and venv/ go (default build/wheel)
#   ONYX_BUILD_DIR   the main build whose CLI the CLI tests use (default build)
#   extra arguments  go to pytest (default: tests/python)
# tests/generated is not run here: its opcheck.py puts the build tree first on sys.path.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=$(realpath -m "${ONYX_WHEEL_DIR:-build/wheel}")
BUILD=$(realpath -m "${ONYX_BUILD_DIR:-build}")
export PIP_DISABLE_PIP_VERSION_CHECK=1

# scikit-build-core takes CC/CXX from Python's sysconfig (gcc/g++ here) when they are unset; use
# the compilers of the main build instead, so ccache serves the objects it already compiled.
if [ -f "$BUILD/CMakeCache.txt" ]; then
  CC=${CC:-$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")}
  CXX=${CXX:-$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")}
  export CC CXX
fi

echo "== wheel: pip wheel . (build dir $OUT/cmake)"
start=$(date +%s)
rm -rf "$OUT/dist"
# No build isolation: scikit-build-core and onnx (whose .proto files the build compiles) come
# pinned from .venv, so the build needs no network.
.venv/bin/python -m pip wheel . -q --no-build-isolation --no-deps -w "$OUT/dist" \
  -C build-dir="$OUT/cmake"
WHEEL=$(ls "$OUT"/dist/onyx-*.whl)
echo "wheel: $(basename "$WHEEL") ($(du -k "$WHEEL" | cut -f1) KiB) built in $(($(date +%s) - start)) s"

echo "== wheel: fresh venv $OUT/venv with the wheel and the pinned test dependencies"
start=$(date +%s)
rm -rf "$OUT/venv"
.venv/bin/python -m venv "$OUT/venv"
# --no-compile: byte-compiling every installed module (sympy's thousands) took 4/5 of the time.
"$OUT/venv/bin/python" -m pip install -q --no-compile "$WHEEL" -r scripts/requirements.txt
echo "venv ready in $(($(date +%s) - start)) s"

echo "== python tests against the installed wheel"
if [ $# -eq 0 ]; then set -- tests/python; fi
# The pytest script, not `python -m pytest`, which would put the source tree on sys.path.
ONYX_TEST_INSTALLED=1 ONYX_BUILD_DIR="$BUILD" "$OUT/venv/bin/pytest" -q -p no:cacheprovider "$@"
