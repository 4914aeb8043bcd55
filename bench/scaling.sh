#!/usr/bin/env bash
# Thread scaling on a bigger machine in one command (issue 15): the onyx CLI travels as a bundle
# with its shared libraries; the models are made there; bench/scaling.py prints the table.
#
#   bench/scaling.sh bundle            here: build/onyx and its libraries -> bench/out/onyx-cli.tar.xz
#   bench/scaling.sh run [ARGS...]     there (or here): unpack the bundle when there is one, then
#                                      python3 bench/scaling.py --onyx <the CLI> ARGS...
#
# The target needs Python 3 with numpy, onnx and onnxruntime (openvino optional); nothing is
# compiled there. Libraries every Linux has (libc, libm, libstdc++, libgcc_s, the loader) are
# left out of the bundle.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/bench/out
BUNDLE=$OUT/onyx-cli.tar.xz

case "${1:-}" in
  bundle)
    [ -x "$ROOT/build/onyx" ] || { echo "no build/onyx: run scripts/setup.sh first" >&2; exit 1; }
    stage=$(mktemp -d)
    trap 'rm -rf "$stage"' EXIT
    mkdir -p "$stage/onyx-cli/lib"
    cp "$ROOT/build/onyx" "$stage/onyx-cli/onyx"
    strip "$stage/onyx-cli/onyx"
    ldd "$ROOT/build/onyx" | awk '$3 ~ /^\// {print $3}' |
      grep -Ev '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
      while read -r lib; do cp -L "$lib" "$stage/onyx-cli/lib/"; done
    # The light models the CNN benchmarks are made from: onnx releases after 1.22 ship none.
    mkdir -p "$stage/onyx-cli/light"
    light=$(PYTHONPATH="$ROOT/bench/models" "$ROOT/.venv/bin/python" -c \
      'import light_random; print(light_random.LIGHT_DIR)')
    cp "$light"/light_*.onnx "$stage/onyx-cli/light/"
    mkdir -p "$OUT"
    tar -C "$stage" -cJf "$BUNDLE" onyx-cli
    echo "wrote $BUNDLE ($(du -h "$BUNDLE" | cut -f1)); on the other machine: bench/scaling.sh run"
    ;;
  run)
    shift
    if [ -f "$BUNDLE" ]; then
      dir=$(mktemp -d)
      tar -C "$dir" -xJf "$BUNDLE"
      export LD_LIBRARY_PATH="$dir/onyx-cli/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      cli=$dir/onyx-cli/onyx
      export ONYX_LIGHT_MODELS_DIR=${ONYX_LIGHT_MODELS_DIR:-$dir/onyx-cli/light}
    else
      cli=$ROOT/build/onyx
    fi
    PY=${PYTHON:-python3}
    [ -x "$ROOT/.venv/bin/python" ] && [ -z "${PYTHON:-}" ] && PY=$ROOT/.venv/bin/python
    exec "$PY" "$ROOT/bench/scaling.py" --onyx "$cli" "$@"
    ;;
  *)
    sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
