#!/usr/bin/env python3
"""Tree ensembles converted from scikit-learn: a 300-tree RandomForestClassifier and a
GradientBoostingClassifier (100 rounds of depth-3 trees, 3 classes:
300 trees) on 10,000 rows, onyx beside ONNX Runtime in one process.

    PYTHONPATH=build/python /work/venv-next/bin/python bench/ml_forest.py [--threads 1,2]
        [--rows 10000] [--trees 300] [--rounds 11] [--features 20] [--max-depth D] [--json FILE]

Both models are trained on make_classification data (fixed seed) and converted with skl2onnx
(zipmap off, so the outputs are a label tensor and a probability tensor). For each model and
thread count the engines alternate round by round (the order flips each round), one round being
one run over all rows; the figure is the median over rounds, and the ratio ORT / onyx (above 1:
onyx is faster). Labels of one run are checked equal and probabilities within 1e-5.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (make_session: the settings of the other benchmarks)


def build_models(rows, trees, features, max_depth):
    from sklearn.datasets import make_classification
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
    from skl2onnx import to_onnx

    x, y = make_classification(n_samples=rows, n_features=features, n_informative=features // 2,
                               n_classes=3, random_state=0)
    x = x.astype(np.float32)
    rf = RandomForestClassifier(n_estimators=trees, max_depth=max_depth, n_jobs=-1, random_state=0)
    rf.fit(x, y)
    gb = GradientBoostingClassifier(n_estimators=100, max_depth=3, random_state=0)
    gb.fit(x, y)
    opts = {"zipmap": False}
    out = {}
    for name, m in ((f"random_forest_{trees}", rf), ("gradient_boosting_100x3", gb)):
        out[name] = to_onnx(m, x[:1], options={id(m): opts},
                            target_opset={"": 17, "ai.onnx.ml": 3}).SerializeToString()
    return out, x


def time_run(sess, feed):
    t0 = time.perf_counter()
    res = sess.run(None, feed)
    return time.perf_counter() - t0, res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rows", type=int, default=10000)
    ap.add_argument("--trees", type=int, default=300)
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--max-depth", type=int, default=None, help="of the forest's trees (default: none)")
    ap.add_argument("--json")
    args = ap.parse_args()
    models, x = build_models(args.rows, args.trees, args.features, args.max_depth)
    out_dir = os.path.join(HERE, "models", "out")
    os.makedirs(out_dir, exist_ok=True)
    results = []
    print(f"{'model':28} {'thr':>3} {'onyx ms':>9} {'ort ms':>9} {'ort/onyx':>8}")
    for name, blob in models.items():
        path = os.path.join(out_dir, f"{name}.onnx")
        with open(path, "wb") as f:
            f.write(blob)
        feed = {"X": x}
        for threads in [int(t) for t in args.threads.split(",")]:
            sessions = {e: compare.make_session(e, path, threads) for e in ("onyx", "ort")}
            outs = {}
            for e, s in sessions.items():  # warm-up, and the outputs to compare
                s.run(None, feed)
                outs[e] = s.run(None, feed)
            assert np.array_equal(outs["onyx"][0], outs["ort"][0]), "labels differ from ORT"
            diff = float(np.abs(outs["onyx"][1] - outs["ort"][1]).max())
            assert diff <= 1e-5, f"probabilities differ from ORT by {diff}"
            times = {"onyx": [], "ort": []}
            order = ["onyx", "ort"]
            for _ in range(args.rounds):
                for e in order:
                    times[e].append(time_run(sessions[e], feed)[0])
                order.reverse()
            onyx_ms = statistics.median(times["onyx"]) * 1e3
            ort_ms = statistics.median(times["ort"]) * 1e3
            ratio = ort_ms / onyx_ms
            print(f"{name:28} {threads:3d} {onyx_ms:9.2f} {ort_ms:9.2f} {ratio:8.2f}")
            results.append({"model": name, "threads": threads, "rows": args.rows,
                            "onyx_ms": onyx_ms, "ort_ms": ort_ms, "ratio_ort_over_onyx": ratio,
                            "max_abs_diff": diff})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
