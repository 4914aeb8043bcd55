#!/usr/bin/env python3
"""Deterministic mode on the benchmark models: bitwise equality across thread counts and runs,
and what the mode costs.

    PYTHONPATH=build/python .venv/bin/python bench/determinism.py [--models resnet50,bert_base]
        [--threads 1,2,3,4] [--runs 3] [--seeds 2] [--models-dir bench/models/out]
        [--time 1,2] [--timed-runs 20] [--block 5] [--json bench/results/determinism.json]

For each model and input seed, one session per thread count is made with
``SessionOptions.deterministic = True`` (and ``adapt_threads = False``, so that each session runs
at its count), and runs `--runs` times; every output's raw bytes must equal those of the first
run at the first thread count. The script prints per model the result and, on a difference, how
many elements differ and where; it exits 1 when any model differs (docs/determinism.md).

With --time T1,T2,...: the default session and the deterministic one of each model at each of
those thread counts, timed in alternating blocks of --block runs after warm-up, their medians and
the ratio deterministic / default (docs/determinism.md has the table).
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "models"))
import make_bench_models as models  # noqa: E402

BENCHMARK_MODELS = ["resnet50", "mobilenet_v2", "squeezenet", "densenet121", "inception_v1",
                    "shufflenet", "bert_base"]


def session(path: str, threads: int, deterministic: bool, adapt: bool = False):
    """An onyx session at `threads` threads, in deterministic mode or not."""
    import onyx

    so = onyx.SessionOptions()
    so.intra_op_num_threads = threads
    so.adapt_threads = adapt
    so.deterministic = deterministic
    return onyx.InferenceSession(path, so)


def differences(want: list, got: list) -> str:
    """'' when every output has the same bytes; else a short description of the first that
    differs."""
    for i, (w, g) in enumerate(zip(want, got)):
        if w.shape != g.shape or w.dtype != g.dtype:
            return f"output {i}: {g.dtype}{list(g.shape)} instead of {w.dtype}{list(w.shape)}"
        if w.tobytes() != g.tobytes():
            wb = w.reshape(-1).view(np.uint8).reshape(w.size, -1)
            gb = g.reshape(-1).view(np.uint8).reshape(g.size, -1)
            bad = np.nonzero((wb != gb).any(axis=1))[0]
            return (f"output {i}: {bad.size} of {w.size} elements differ (first at {bad[0]}: "
                    f"{w.reshape(-1)[bad[0]]!r} vs {g.reshape(-1)[bad[0]]!r})")
    return "" if len(want) == len(got) else f"{len(got)} outputs instead of {len(want)}"


def check_model(name: str, path: str, threads_list: list, runs: int, seeds: int) -> dict:
    """Bitwise comparison of every run at every thread count against the first."""
    result = {"model": name, "identical": True, "runs": 0, "detail": ""}
    for seed in range(seeds):
        feeds = models.make_feeds(name, seed)
        first = None
        for threads in threads_list:
            sess = session(path, threads, True)
            for run in range(runs):
                outs = sess.run(None, feeds)
                result["runs"] += 1
                if first is None:
                    first = outs
                    continue
                diff = differences(first, outs)
                if diff and result["identical"]:
                    result["identical"] = False
                    result["detail"] = f"seed {seed}, {threads} threads, run {run}: {diff}"
    return result


def time_model(name: str, path: str, threads: int, timed_runs: int, block: int) -> dict:
    """Medians (ms) of the default and the deterministic session, alternating in blocks."""
    feeds = models.make_feeds(name)
    sessions = {"default": session(path, threads, False, adapt=True),
                "deterministic": session(path, threads, True, adapt=True)}
    for s in sessions.values():
        for _ in range(3):
            s.run(None, feeds)
    times = {k: [] for k in sessions}
    order = list(sessions)
    while len(times["default"]) < timed_runs:
        for k in order:
            sessions[k].run(None, feeds)  # untimed: wakes this engine's threads
            for _ in range(block):
                t0 = time.perf_counter()
                sessions[k].run(None, feeds)
                times[k].append((time.perf_counter() - t0) * 1e3)
        order.reverse()
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"model": name, "threads": threads, "default_ms": med["default"],
            "deterministic_ms": med["deterministic"],
            "ratio": med["deterministic"] / med["default"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(BENCHMARK_MODELS))
    ap.add_argument("--threads", default="1,2,3,4")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--models-dir", default=models.DEFAULT_OUT)
    ap.add_argument("--time", default="", help="thread counts to time the mode's cost at")
    ap.add_argument("--timed-runs", type=int, default=20)
    ap.add_argument("--block", type=int, default=5)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    names = [n for n in args.models.split(",") if n]
    threads_list = [int(t) for t in args.threads.split(",")]
    missing = [n for n in names if not os.path.exists(models.model_path(args.models_dir, n))]
    if missing:
        models.ensure_models(args.models_dir, missing)

    checks = []
    print(f"deterministic mode, threads {threads_list}, {args.runs} runs each, {args.seeds} "
          "input seeds")
    for name in names:
        r = check_model(name, models.model_path(args.models_dir, name), threads_list, args.runs,
                        args.seeds)
        checks.append(r)
        verdict = "bit-identical" if r["identical"] else "DIFFERS: " + r["detail"]
        print(f"  {name:14s} {r['runs']:3d} runs  {verdict}", flush=True)
    timings = []
    if args.time:
        print(f"\ncost (medians of {args.timed_runs} runs, alternating blocks of {args.block}; "
              f"load average {os.getloadavg()[0]:.2f})")
        print(f"  {'model':14s} {'threads':>7s} {'default ms':>11s} {'determ. ms':>11s} "
              f"{'ratio':>6s}")
        for threads in [int(t) for t in args.time.split(",")]:
            for name in names:
                t = time_model(name, models.model_path(args.models_dir, name), threads,
                               args.timed_runs, args.block)
                timings.append(t)
                print(f"  {name:14s} {threads:7d} {t['default_ms']:11.2f} "
                      f"{t['deterministic_ms']:11.2f} {t['ratio']:6.3f}", flush=True)
        print(f"  load average after: {os.getloadavg()[0]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"checks": checks, "timings": timings}, f, indent=1)
    return 0 if all(r["identical"] for r in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
