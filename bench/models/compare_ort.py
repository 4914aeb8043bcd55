#!/usr/bin/env python3
"""Side-by-side latency of onyx and ONNX Runtime on the same model, inputs and thread count.

Runs alternate between the two engines (so machine noise hits both alike) and the medians and
their ratio are reported, at 1 and 2 threads by default.

    .venv/bin/python bench/models/compare_ort.py [MODEL.onnx ...] [--threads 1 2] [--runs 20]
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path[:0] = [os.path.join(ROOT, "build", "python"), os.path.join(ROOT, "python")]
import onyx  # noqa: E402

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def feeds_for(path):
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    rng = np.random.default_rng(0)
    out = {}
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        shape = [d.dim_value if d.HasField("dim_value") else 1 for d in vi.type.tensor_type.shape.dim]
        out[vi.name] = rng.random(shape, dtype=np.float32)
    return out


def bench(path, threads, runs, warmup):
    feeds = feeds_for(path)
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    o_sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    x_sess = onyx.InferenceSession(path, intra_op_threads=threads)
    for _ in range(warmup):
        o_sess.run(None, feeds)
        x_sess.run(None, feeds)
    t_ort, t_onyx = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        o_sess.run(None, feeds)
        t1 = time.perf_counter()
        x_sess.run(None, feeds)
        t2 = time.perf_counter()
        t_ort.append((t1 - t0) * 1e3)
        t_onyx.append((t2 - t1) * 1e3)
    return statistics.median(t_onyx), statistics.median(t_ort)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="*")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()
    models = args.models or [os.path.join(LIGHT, f"light_{n}.onnx") for n in ("squeezenet", "resnet50")]
    print(f"{'model':28} {'threads':>7} {'onyx ms':>9} {'ORT ms':>9} {'onyx/ORT':>9}")
    for path in models:
        for t in args.threads:
            a, b = bench(path, t, args.runs, args.warmup)
            print(f"{os.path.basename(path):28} {t:7d} {a:9.2f} {b:9.2f} {a / b:9.2f}")


if __name__ == "__main__":
    main()
