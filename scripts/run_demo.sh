#!/usr/bin/env bash
# The main job: set up (idempotent), then run real pretrained models fetched from PyPI packages
# (scripts/demo.py): ddddocr's OCR model reads words rendered on the fly and Magika names the
# content type of a few generated files, each by onyx and by ONNX Runtime, with the latency of
# both. The first run downloads the ddddocr (76 MB) and magika (16 MB) wheels with pip into
# ~/.cache/onyx/real-models; later runs read the models from there.
#   ./scripts/run_demo.sh [demo.py options: --words N, --word TEXT, --seed S, --threads T, ...]
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
PYTHONPATH=build/python .venv/bin/python scripts/demo.py "$@"
