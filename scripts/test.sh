#!/usr/bin/env bash
# Sets up (idempotent) and runs every test: GoogleTest suites (loader, planner, kernels, executor
# on the light models), the ONNX conformance regression check, the Python tests against ONNX
# Runtime (the benchmark models' fusion checks included); then the loader/executor/limits tests,
# the kernel tests and a bounded run of each libFuzzer harness under AddressSanitizer + UBSan
# (clang), and the concurrent-run and cancellation tests under ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
export CCACHE_BASEDIR="$ROOT"  # ccache hits across clones (see scripts/setup.sh)
./scripts/setup.sh
# Uninitialized buffers (arenas, graph outputs) are filled with a byte pattern rather than left as
# the zeros fresh pages read as, so a kernel that reads its output before writing it fails here.
export ONYX_POISON_UNINITIALIZED=1

echo "== benchmark models (random weights, no download): the fusion tests that load them skip without"
# VGG-19 (575 MB) is left out: no test needs it. Up-to-date models are not rebuilt.
.venv/bin/python bench/models/make_bench_models.py \
  --models resnet50,densenet121,inception_v1,squeezenet,shufflenet,mobilenet_v2,bert_base

echo "== unit, model and conformance tests (ctest)"
ctest --test-dir build --output-on-failure -j2

echo "== python tests against the installed wheel (Python API, ONNX backend suite, CLI, light models"
echo "   against ONNX Runtime): pip wheel, fresh venv, pytest"
./scripts/test_wheel.sh
echo "== generated operator cases (build tree)"
.venv/bin/python -m pytest -q tests/generated

echo "== sanitizers: loader, executor and SIMD kernel tests under ASan + UBSan (clang-14)"
# One clang tree serves the test suites and the libFuzzer harnesses of tests/fuzz: every library
# is compiled with -fsanitize=address,undefined,fuzzer-no-link (ONYX_FUZZ, cmake/OnyxFuzz.cmake).
# A tree configured with gcc by an older checkout is rebuilt from scratch.
if [ -f build-asan/CMakeCache.txt ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang' build-asan/CMakeCache.txt; then
  rm -rf build-asan
fi
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release -DONYX_SANITIZE=ON -DONYX_FUZZ=ON \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DONYX_BUILD_BENCH=OFF -DONYX_BUILD_PYTHON=OFF \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache \
  -DPython3_EXECUTABLE="$ROOT/.venv/bin/python" >/dev/null
cmake --build build-asan -j"$(nproc)" --target onyx_engine_test onyx_planner_test onyx_kernels_test \
  onyx_kernel_grid_test onyx_fuzzers
# The kernel tests run every fast kernel (tails, borders, in-place outputs) on every Highway target;
# the kernel grid runs every registered one under each ISA level (kernel_grid.isa_*).
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j2 \
  -R '^(loader|session|arena_plan|shape_inference|Limits|kernel_grid)\.'
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 build-asan/tests/onyx_kernels_test \
  --gtest_brief=1
echo "== fuzzers: saved crash inputs, then 60 s per harness from the node-test seeds (ASan + UBSan)"
ONYX_FUZZ_SEED=1 tests/fuzz/run_campaign.sh 60
echo "== ThreadSanitizer: concurrent runs of every fast kernel family on one session, cancellation"
# Every onyx target instrumented (ONYX_SANITIZE_THREAD), only the engine tests built. Sessions of 8
# intra-op threads admit all 8 runs at once (no hand-off of runs between threads inside TBB), and
# OMP_THREAD_LIMIT=1 keeps every OpenMP region on one thread: TSan sees through neither TBB's nor
# libgomp's uninstrumented synchronisation.
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Release -DONYX_SANITIZE_THREAD=ON \
  -DONYX_BUILD_BENCH=OFF -DONYX_BUILD_PYTHON=OFF \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache \
  -DPython3_EXECUTABLE="$ROOT/.venv/bin/python" >/dev/null
cmake --build build-tsan -j"$(nproc)" --target onyx_engine_test
TSAN_OPTIONS="halt_on_error=1:suppressions=$ROOT/tests/tsan.supp" OMP_THREAD_LIMIT=1 \
  ONYX_TEST_INTRA_OP_THREADS=8 \
  build-tsan/tests/onyx_engine_test --gtest_brief=1 \
  --gtest_filter='Families/ConcurrentRun.*:Bodies/CancelLoop.*:cancel.*:ShapePlans.*'
echo "== AArch64 under qemu: cross build, then C++ tests, light models, node tests (subset) and a"
echo "   plan, with a NEON-only CPU model (neoverse-n1) and with SVE2 (max); docs/platforms.md"
./scripts/test_arm64.sh
echo "== all tests passed"
