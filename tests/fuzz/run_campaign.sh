#!/usr/bin/env bash
# Runs every fuzz harness for SECONDS each under ASan + UBSan, after replaying the saved crash
# inputs of tests/fuzz/regressions/<harness>/. Exits non-zero if any regression input or any
# fuzzed input crashes, leaks, hangs (-timeout) or exceeds the memory limit.
#
#   tests/fuzz/run_campaign.sh 60            # CI (scripts/test.sh)
#   tests/fuzz/run_campaign.sh 1200          # a 20-minute campaign per harness
#   tests/fuzz/run_campaign.sh 600 fuzz_run  # one harness
#
# Configures build-asan (clang-14, ONYX_SANITIZE + ONYX_FUZZ) when it does not exist yet, and
# always brings the fuzzers up to date. Seeds come from the ONNX node tests
# (make_seed_corpus.py); the corpus, crash artifacts and logs stay under build-asan/fuzz/.
# Environment: ONYX_FUZZ_BUILD (build tree, default build-asan), ONYX_FUZZ_JOBS (parallel fuzzing
# processes per harness, default 1), ONYX_FUZZ_RSS_MB (default 2048), ONYX_FUZZ_SEED (libFuzzer's
# -seed; CI fixes it so that a run explores the same inputs each time, default random).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
SECONDS_EACH=${1:?usage: tests/fuzz/run_campaign.sh SECONDS [harness...]}
shift
HARNESSES=("$@")
[ ${#HARNESSES[@]} -eq 0 ] && HARNESSES=(fuzz_load_plan fuzz_tensor_proto fuzz_run)
BUILD=${ONYX_FUZZ_BUILD:-build-asan}
JOBS=${ONYX_FUZZ_JOBS:-1}
RSS_MB=${ONYX_FUZZ_RSS_MB:-2048}
export CCACHE_BASEDIR="$ROOT"

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DONYX_SANITIZE=ON -DONYX_FUZZ=ON \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DONYX_BUILD_BENCH=OFF -DONYX_BUILD_PYTHON=OFF \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache \
    -DPython3_EXECUTABLE="$ROOT/.venv/bin/python" >/dev/null
fi
cmake --build "$BUILD" -j"$(nproc)" --target onyx_fuzzers
.venv/bin/python tests/fuzz/make_seed_corpus.py --out "$BUILD/fuzz/corpus"

# Leaks are bugs too; print UBSan's stack so a report names the line.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
FLAGS=(-rss_limit_mb="$RSS_MB" -timeout=10 -print_final_stats=1)
[ -n "${ONYX_FUZZ_SEED:-}" ] && FLAGS+=(-seed="$ONYX_FUZZ_SEED")
failed=()
for h in "${HARNESSES[@]}"; do
  name=${h#fuzz_}
  bin="$BUILD/fuzz/$h"
  logs="$BUILD/fuzz/logs"
  artifacts="$BUILD/fuzz/artifacts/$name"
  mkdir -p "$logs" "$artifacts"
  regressions=(tests/fuzz/regressions/"$name"/*)
  if [ -e "${regressions[0]}" ]; then
    echo "== fuzz $name: ${#regressions[@]} regression inputs"
    # One process per input: a crash ends the process, and every failing input should be named.
    for r in "${regressions[@]}"; do
      if ! "$bin" "${FLAGS[@]}" "$r" >"$logs/$name.regression.log" 2>&1; then
        grep -E 'ERROR|SUMMARY|runtime error' "$logs/$name.regression.log" | head -n 3
        failed+=("$r")
      fi
    done
  fi
  echo "== fuzz $name: ${SECONDS_EACH}s from the seed corpus ($BUILD/fuzz/corpus/$name)"
  start=$(date +%s)
  parallel=()
  [ "$JOBS" -gt 1 ] && parallel=(-jobs="$JOBS" -workers="$JOBS")
  if ! "$bin" "${FLAGS[@]}" -max_total_time="$SECONDS_EACH" "${parallel[@]}" \
      -artifact_prefix="$artifacts/" "$BUILD/fuzz/corpus/$name" >"$logs/$name.log" 2>&1; then
    tail -n 60 "$logs/$name.log"
    failed+=("$name (artifacts in $artifacts)")
  fi
  # -jobs > 1 writes one fuzz-N.log per worker instead of the main log.
  grep -h -E '^(stat::number_of_executed_units|stat::peak_rss_mb)|^#[0-9]+ +DONE' \
    "$logs/$name.log" fuzz-*.log 2>/dev/null | tr '\n' ' ' || true
  echo "($(($(date +%s) - start)) s)"
done
rm -f fuzz-*.log
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]} (logs in $BUILD/fuzz/logs; tests/fuzz/README.md says how to" \
    "minimise a crash and keep it as a regression input)"
  exit 1
fi
echo "fuzz: no crash"
