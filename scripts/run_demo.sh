#!/usr/bin/env bash
# The main job: set up (idempotent), then run a real model from the onnx package's test data
# (light_squeezenet.onnx on the ONNX test runner's ramp input), printing the top outputs and the
# latency, and checking the result against the output shipped beside the model.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
DATA=$(.venv/bin/python -c "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), 'backend/test/data/light'))")
MODEL=${1:-$DATA/light_squeezenet.onnx}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
echo "== onyx run $(basename "$MODEL") on the ONNX test runner's input (arange(n)/n)"
build/onyx run "$MODEL" --generate ramp --top 5 --repeat 10 --output-dir "$OUT"
EXPECTED="${MODEL%.onnx}_output_0.pb"
if [ -f "$EXPECTED" ]; then
  .venv/bin/python scripts/compare_pb.py "$EXPECTED" "$OUT"/*.pb
fi
# The light models carry placeholder weights, so their class scores come out uniform; what the
# demo shows is that onyx reproduces the reference output exactly, and how fast.
