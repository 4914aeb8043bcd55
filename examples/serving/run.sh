#!/usr/bin/env bash
# One command for the serving example: a venv with Ray Serve (build/serving-venv, pinned in
# examples/serving/requirements.txt, made once), the onyx build (scripts/setup.sh, unless
# ONYX_SKIP_SETUP=1), then Ray and Serve started on loopback, the content-type service deployed
# with onyx and then with ONNX Runtime, the load client at 1, 8 and 32 concurrent clients, and
# everything shut down. Options go to examples/serving/bench.py, e.g.
#   examples/serving/run.sh                      # both engines, ~2 minutes in all
#   examples/serving/run.sh --smoke              # deploy, one request per file, stop
#   examples/serving/run.sh --engines onyx --duration 30 --replicas 1 --threads 2
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${ONYX_SKIP_SETUP:-0}" != 1 ]; then
  ./scripts/setup.sh
fi
VENV=build/serving-venv
if ! cmp -s examples/serving/requirements.txt "$VENV/.requirements.installed" 2>/dev/null; then
  echo "serving: installing Ray Serve into $VENV"
  # The same interpreter as .venv: onyx's module in build/python is built for it.
  .venv/bin/python -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
    -r examples/serving/requirements.txt
  cp examples/serving/requirements.txt "$VENV/.requirements.installed"
fi
export RAY_USAGE_STATS_ENABLED=0  # no usage report sent from a benchmark run
PYTHONPATH=build/python${PYTHONPATH:+:$PYTHONPATH} exec "$VENV/bin/python" \
  examples/serving/bench.py "$@"
