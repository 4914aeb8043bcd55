#!/usr/bin/env python3
"""Runs every ONNX node test the way a new user would: one `onyx run MODEL input_*.pb
--output-dir DIR` process per test data set, then compares each written output with its
output_*.pb (rtol 1e-3, atol 1e-7, NaN equal NaN; exact for integers, bools and strings).

Tests whose model uses a random operator are checked for dtype and shape only, as in
`onyx conformance`. Prints one line per non-passing test and a summary line.

    .venv/bin/python scripts/conformance_via_cli.py [--filter REGEX] [--jobs N]
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
# The pinned onnx's node tests as files (scripts/setup.sh writes them with scripts/node_tests.py).
NODE_DIR = os.path.join(ROOT, "build", "node-tests", "newest")
RANDOM_OPS = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli",
              "Multinomial"}


def load_value(path, proto_kind):
    data = open(path, "rb").read()
    if proto_kind == "sequence":
        p = onnx.SequenceProto()
        p.ParseFromString(data)
        return ("seq", [numpy_helper.to_array(t) for t in p.tensor_values])
    if proto_kind == "optional":
        p = onnx.OptionalProto()
        p.ParseFromString(data)
        if p.HasField("tensor_value"):
            return numpy_helper.to_array(p.tensor_value)
        if p.HasField("sequence_value"):
            return ("seq", [numpy_helper.to_array(t) for t in p.sequence_value.tensor_values])
        return None
    t = onnx.TensorProto()
    t.ParseFromString(data)
    return numpy_helper.to_array(t)


def kind_of(type_proto):
    if type_proto.HasField("sequence_type"):
        return "sequence"
    if type_proto.HasField("optional_type"):
        return "optional"
    return "tensor"


def close(e, a, exact):
    if isinstance(e, tuple) or isinstance(a, tuple):
        if not (isinstance(e, tuple) and isinstance(a, tuple)) or len(e[1]) != len(a[1]):
            return False
        return all(close(x, y, exact) for x, y in zip(e[1], a[1]))
    if e is None or a is None:
        return e is None and a is None
    if e.dtype != a.dtype or e.shape != a.shape:
        return False
    if not exact:
        return True
    # ml_dtypes' float8/bfloat16 arrays report kind 'V': compare them as floats too (NaN == NaN).
    if e.dtype.kind in "fcV":
        return np.allclose(a.astype(np.complex128 if e.dtype.kind == "c" else np.float64),
                           e.astype(np.complex128 if e.dtype.kind == "c" else np.float64),
                           rtol=1e-3, atol=1e-7, equal_nan=True)
    return np.array_equal(a, e)


def uses_random(graph):
    for n in graph.node:
        if n.op_type in RANDOM_OPS:
            return True
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH and uses_random(a.g):
                return True
    return False


def run_test(onyx, name):
    d = os.path.join(NODE_DIR, name)
    model = onnx.load(os.path.join(d, "model.onnx"), load_external_data=False)
    exact = not uses_random(model.graph)
    sets = sorted(s for s in os.listdir(d) if s.startswith("test_data_set_"))
    for s in sets:
        sd = os.path.join(d, s)
        inputs = sorted((f for f in os.listdir(sd) if f.startswith("input_")), key=lambda f: int(f[6:-3]))
        outputs = sorted((f for f in os.listdir(sd) if f.startswith("output_")), key=lambda f: int(f[7:-3]))
        with tempfile.TemporaryDirectory() as out:
            p = subprocess.run([onyx, "run", os.path.join(d, "model.onnx"), *[os.path.join(sd, f) for f in inputs],
                                "--output-dir", out, "--threads", "1"], capture_output=True, text=True, timeout=120)
            if p.returncode != 0:
                return name, f"exit {p.returncode}: {p.stderr.strip()[:200]}"
            for k, f in enumerate(outputs):
                vi = model.graph.output[k]
                safe = re.sub(r"[^A-Za-z0-9._-]", "_", vi.name)
                kind = kind_of(vi.type)
                if not close(load_value(os.path.join(sd, f), kind), load_value(os.path.join(out, safe + ".pb"), kind), exact):
                    return name, f"{s}: output {k} '{vi.name}' differs"
    return name, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--filter", default="")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    onyx = os.path.join(ROOT, "build", "onyx")
    names = sorted(n for n in os.listdir(NODE_DIR) if re.search(args.filter, n)
                   and os.path.exists(os.path.join(NODE_DIR, n, "model.onnx")))
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        for name, err in ex.map(lambda n: run_test(onyx, n), names):
            if err:
                failed += 1
                print(f"FAIL {name}: {err}")
    print(f"conformance via onyx run: {len(names)} tests, {len(names) - failed} match, {failed} do not")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
