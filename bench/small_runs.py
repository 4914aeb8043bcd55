#!/usr/bin/env python3
"""Small runs: per-call latency of a Silero-VAD-sized detector streamed chunk by chunk, and the
fixed cost of a run, onyx against ONNX Runtime in one process (issue 15).

    PYTHONPATH=build/python .venv/bin/python bench/small_runs.py [--threads 1,2] [--calls 200]
        [--rounds 15] [--json FILE]

vad_small (bench/models/vad_small.py: a learned STFT, four 3-tap convolutions, two 128-wide
LSTMs, a sigmoid head; about 0.1 ms a call) runs as a streaming detector does: each call feeds
the next 576-sample chunk and the state the previous call returned. "fixed cost" is a model of
one Add per output on [1, 64] tensors, three inputs and three outputs like the detector, so a
call is almost nothing but the engine's per-run work: checking feeds, finding the plan,
allocating outputs, handing them to numpy.

For each model and thread count the engines alternate round by round (the order flips each
round, a 20 ms pause after each), a round being --calls calls timed together; the figure is the
median over rounds of the time per call, and the ratio ORT / onyx (above 1: onyx is faster). The
detector's speech probabilities of one round are compared with ORT's.
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "models"))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (make_session: the settings of the other benchmarks)
import vad_small  # noqa: E402

OUT = os.path.join(HERE, "models", "out")


def fixed_cost_model():
    from onnx import TensorProto, helper, numpy_helper

    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 64]) for n in "abc"]
    outputs = [helper.make_tensor_value_info(f"{n}2", TensorProto.FLOAT, [1, 64]) for n in "abc"]
    nodes = [helper.make_node("Add", [n, "one"], [f"{n}2"]) for n in "abc"]
    graph = helper.make_graph(nodes, "fixed_cost", inputs, outputs,
                              [numpy_helper.from_array(np.ones(64, np.float32), "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def ensure(name):
    import onnx

    path = os.path.join(OUT, f"{name}.onnx")
    if not os.path.exists(path):
        os.makedirs(OUT, exist_ok=True)
        model = vad_small.build(np.random.default_rng(1)) if name == "vad_small" else fixed_cost_model()
        onnx.checker.check_model(model)
        onnx.save(model, path)
    return path


def stream(sess, chunks, h, c):
    """Calls the detector once per chunk, feeding the state back; returns the probabilities."""
    probs = []
    for x in chunks:
        p, h, c = sess.run(None, {"x": x, "h": h, "c": c})
        probs.append(float(p[0, 0]))
    return probs


def bench(name, threads, calls, rounds):
    path = ensure(name)
    sessions = {e: compare.make_session(e, path, threads) for e in ("onyx", "ort")}
    rng = np.random.default_rng(0)
    if name == "vad_small":
        chunks = [rng.uniform(-0.5, 0.5, (1, vad_small.CHUNK)).astype(np.float32) for _ in range(calls)]
        zero = np.zeros((vad_small.LAYERS, 1, vad_small.HIDDEN), np.float32)
        run = lambda s: stream(s, chunks, zero, zero)  # noqa: E731
    else:
        feeds = {n: rng.random((1, 64), dtype=np.float32) for n in "abc"}

        def run(s):
            for _ in range(calls):
                s.run(None, feeds)
    results = {e: run(s) for e, s in sessions.items()}  # warm-up, and the outputs to compare
    diff = None
    if name == "vad_small":
        diff = max(abs(a - b) for a, b in zip(results["onyx"], results["ort"]))
    per_call = {e: [] for e in sessions}
    for r in range(rounds):
        for e in (("onyx", "ort") if r % 2 == 0 else ("ort", "onyx")):
            t0 = time.perf_counter()
            run(sessions[e])
            per_call[e].append((time.perf_counter() - t0) / calls * 1e6)
            time.sleep(0.02)
    onyx_us, ort_us = statistics.median(per_call["onyx"]), statistics.median(per_call["ort"])
    return {"model": name, "threads": threads, "onyx_us": onyx_us, "ort_us": ort_us,
            "ratio": ort_us / onyx_us, "max_prob_diff": diff}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--calls", type=int, default=200, help="calls per round (default 200)")
    ap.add_argument("--rounds", type=int, default=15, help="rounds per engine (default 15)")
    ap.add_argument("--json", default="", help="write the results here too")
    args = ap.parse_args()
    rows = []
    for name in ("vad_small", "fixed_cost"):
        for t in [int(x) for x in args.threads.split(",") if x]:
            rows.append(bench(name, t, args.calls, args.rounds))
    print(f"{'model':12} {'thr':>3} {'onyx us/call':>13} {'ORT us/call':>12} {'ORT/onyx':>9} "
          f"{'max prob diff':>14}")
    for r in rows:
        diff = "-" if r["max_prob_diff"] is None else f"{r['max_prob_diff']:.1e}"
        print(f"{r['model']:12} {r['threads']:3d} {r['onyx_us']:13.1f} {r['ort_us']:12.1f} "
              f"{r['ratio']:9.2f} {diff:>14}")
    load = os.getloadavg()[0]
    print(f"medians over {args.rounds} rounds of {args.calls} calls; load average {load:.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                       "machine": compare.machine_info(), "settings": vars(args), "results": rows},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
