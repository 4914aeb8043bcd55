#!/usr/bin/env python3
"""Stress test of concurrent runs on one session (issue 19): N threads x R runs on one
onyx.InferenceSession, each thread with its own random inputs, every output compared bit for bit
with a single-threaded run of the same input. Not part of CI; the figures go into reports.

    PYTHONPATH=build/python .venv/bin/python bench/concurrent_runs.py MODEL [MODEL ...]
        [--threads 8] [--runs 50] [--inputs-per-thread 4] [--intra-op-threads 1] [--seconds S]

MODEL is a path to an .onnx file, a benchmark model name (bench/models/out/NAME.onnx, made by
bench/models/make_bench_models.py), or bert_small: the BERT encoder of bench/models/bert_base.py
with 2 layers, batch 2 and sequence 32, which the planner fuses into the same Attention kernel,
at a fraction of BERT-base's cost. Prints, per model: runs, mismatching runs (any output bit
differs), errors and the time taken. Exits non-zero when any run mismatched or failed.
"""
import argparse
import os
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "models"))


def bert_small(out_dir):
    import bert_base  # noqa: PLC0415

    bert_base.LAYERS, bert_base.BATCH, bert_base.SEQ, bert_base.VOCAB = 2, 2, 32, 1000
    path = os.path.join(out_dir, "bert_small.onnx")
    import onnx  # noqa: PLC0415

    onnx.save(bert_base.build(np.random.default_rng(7)), path)
    return path


def random_feeds(sess, rng):
    """Random values for every input: token ids below 1000 and 0/1 masks with a random amount of
    padding per row for int64 inputs (BERT), uniform [0, 1) floats otherwise."""
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        if i.type == "tensor(int64)":
            if "mask" in i.name:
                v = np.ones(shape, np.int64)
                for row in v.reshape(-1, shape[-1]):
                    row[shape[-1] - rng.integers(0, shape[-1] // 2 + 1):] = 0
            else:
                v = rng.integers(0, 1000, shape, dtype=np.int64)
        else:
            v = rng.random(shape, dtype=np.float32)
        feeds[i.name] = v
    return feeds


def same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def stress(path, threads, runs, inputs_per_thread, intra, seconds):
    import onyx  # noqa: PLC0415

    sess = onyx.InferenceSession(path, threads=intra)
    # Each thread's inputs, and their outputs from one run at a time (the oracle).
    inputs = [[random_feeds(sess, np.random.default_rng(1000 * t + k)) for k in range(inputs_per_thread)]
              for t in range(threads)]
    t0 = time.perf_counter()
    expected = [[sess.run(None, f) for f in row] for row in inputs]
    single_s = (time.perf_counter() - t0) / (threads * inputs_per_thread)
    counts = {"runs": 0, "mismatches": 0, "errors": 0}
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds if seconds else None
    start = threading.Barrier(threads)

    def worker(t):
        start.wait()
        done = bad = err = 0
        for r in range(runs):
            if deadline and time.perf_counter() > deadline:
                break
            k = r % inputs_per_thread
            try:
                out = sess.run(None, inputs[t][k])
            except onyx.Error as e:  # counted, and the first one shown
                if err == 0:
                    print(f"  thread {t}: {e}", file=sys.stderr)
                err += 1
                continue
            done += 1
            if not all(same_bits(a, b) for a, b in zip(out, expected[t][k])):
                bad += 1
        with lock:
            counts["runs"] += done
            counts["mismatches"] += bad
            counts["errors"] += err

    pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    t0 = time.perf_counter()
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    wall = time.perf_counter() - t0
    return counts, wall, single_s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--runs", type=int, default=50, help="runs per thread (default 50)")
    ap.add_argument("--inputs-per-thread", type=int, default=4)
    ap.add_argument("--intra-op-threads", type=int, default=1,
                    help="the session's intra-op threads (default 1)")
    ap.add_argument("--seconds", type=float, default=0,
                    help="stop each model's threads after this long (0: run all --runs)")
    args = ap.parse_args()
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for m in args.models:
            if m == "bert_small":
                path = bert_small(tmp)
            elif os.path.exists(m):
                path = m
            else:
                path = os.path.join(HERE, "models", "out", f"{m}.onnx")
            counts, wall, single_s = stress(path, args.threads, args.runs, args.inputs_per_thread,
                                            args.intra_op_threads, args.seconds)
            print(f"{m}: {counts['runs']} runs ({args.threads} threads, "
                  f"{args.inputs_per_thread} inputs each, intra-op threads {args.intra_op_threads}), "
                  f"{counts['mismatches']} mismatches, {counts['errors']} errors, {wall:.1f} s "
                  f"({counts['runs'] / wall:.1f} runs/s; one run alone {single_s * 1e3:.1f} ms)",
                  flush=True)
            failed |= counts["mismatches"] > 0 or counts["errors"] > 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
