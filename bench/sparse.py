#!/usr/bin/env python3
"""Pruned models on onyx's sparse kernels, against the dense model and ONNX Runtime.

    PYTHONPATH=build/python .venv/bin/python bench/sparse.py \
        --pairs resnet50:resnet50_1x1_50_b32.onnx,mobilenet_v2:mobilenet_v2_1x1_70_b32.onnx \
        [--dir bench/models/out/pruned] [--threads 1,2] [--runs 20] [--block 5] [--no-adapt]
        [--json FILE]

A pruned model missing from --dir is made there first with `onyx prune` when its name says how
(DENSE_1x1_PCT[_bBLOCK].onnx: `--layers 1x1 --sparsity PCT/100 [--block BLOCK]`, method relative).

For each pair (dense benchmark model from bench/models/out, pruned model from --dir) and thread
count, four sessions run in this process, alternating in blocks of `--block` back-to-back runs
(the order rotates every block, one untimed run starts each block), after warm-up runs:

- onyx dense: onyx on the dense model;
- onyx sparse: onyx on the pruned model (sparse kernels on, the default);
- onyx sparse off: onyx on the pruned model with ONYX_SPARSE_KERNELS=0 (dense kernels);
- ORT pruned: ONNX Runtime on the pruned model (its kernels are dense, so its time is that of
  the dense model; the pruned one is what the comparison asks for).

The medians are reported with the speed-ups of onyx sparse over each of the others, the largest
difference between onyx sparse's and ORT's outputs, and the load averages before and after.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "models"))
import real_models  # noqa: E402  (ort_session: the peer as compare.py runs it)

ENGINES = ("onyx dense", "onyx sparse", "onyx sparse off", "ORT pruned")


def _session(engine: str, dense: str, pruned: str, threads: int, adapt: bool):
    """The engine's session; the sparse switch is read when a session is created."""
    if engine == "ORT pruned":
        return real_models.ort_session(pruned, threads)
    import onyx

    so = onyx.SessionOptions()
    so.intra_op_num_threads = threads
    so.adapt_threads = adapt
    os.environ["ONYX_SPARSE_KERNELS"] = "0" if engine == "onyx sparse off" else "1"
    try:
        return onyx.InferenceSession(dense if engine == "onyx dense" else pruned, so)
    finally:
        del os.environ["ONYX_SPARSE_KERNELS"]


def _feeds(sess) -> dict:
    rng = np.random.default_rng(0)
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def time_pair(dense: str, pruned: str, threads: int, runs: int, warmup: int, block: int,
              adapt: bool) -> dict:
    sessions = {e: _session(e, dense, pruned, threads, adapt) for e in ENGINES}
    feeds = _feeds(sessions["ORT pruned"])
    outs = {e: s.run(None, feeds) for e, s in sessions.items()}
    for _ in range(warmup):
        for s in sessions.values():
            s.run(None, feeds)
    times = {e: [] for e in ENGINES}
    order = list(ENGINES)
    while min(len(t) for t in times.values()) < runs:
        for e in order:
            s = sessions[e]
            s.run(None, feeds)  # untimed: wakes the engine's threads
            for _ in range(block):
                t0 = time.perf_counter()
                s.run(None, feeds)
                times[e].append((time.perf_counter() - t0) * 1e3)
            time.sleep(0.02)
        order = order[1:] + order[:1]
    med = {e: statistics.median(t) for e, t in times.items()}
    ref = np.asarray(outs["ORT pruned"][0])
    diff = float(np.max(np.abs(np.asarray(outs["onyx sparse"][0]) - ref)))
    return {"median_ms": med, "max_abs_diff_vs_ort": diff, "max_abs_ort": float(np.max(np.abs(ref)))}


def make_pruned(onyx_cli: str, dense: str, pruned: str) -> None:
    """Prunes `dense` into `pruned` as the name says: DENSE_1x1_PCT[_bBLOCK].onnx."""
    m = re.fullmatch(r".+_1x1_(\d+)(?:_b(\d+))?\.onnx", os.path.basename(pruned))
    if not m:
        sys.exit(f"{pruned} does not exist and its name does not say how to prune "
                 "(DENSE_1x1_PCT[_bBLOCK].onnx)")
    cmd = [onyx_cli, "prune", dense, "-o", pruned, "--layers", "1x1", "--method", "relative",
           "--sparsity", str(int(m.group(1)) / 100)]
    if m.group(2):
        cmd += ["--block", m.group(2)]
    os.makedirs(os.path.dirname(pruned), exist_ok=True)
    print("making", pruned, ":", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--pairs", default="resnet50:resnet50_1x1_50_b32.onnx,"
                    "resnet50:resnet50_1x1_50_b16.onnx,resnet50:resnet50_1x1_50.onnx,"
                    "mobilenet_v2:mobilenet_v2_1x1_70_b32.onnx,"
                    "mobilenet_v2:mobilenet_v2_1x1_70_b16.onnx,mobilenet_v2:mobilenet_v2_1x1_70.onnx")
    ap.add_argument("--dir", default=os.path.join(HERE, "models", "out", "pruned"))
    ap.add_argument("--onyx", default=os.path.join(HERE, "..", "build", "onyx"),
                    help="the CLI that prunes missing models")
    ap.add_argument("--dense-dir", default=os.path.join(HERE, "models", "out"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--block", type=int, default=5)
    ap.add_argument("--json", default="")
    ap.add_argument("--no-adapt", action="store_true",
                    help="onyx runs at exactly --threads (adapt_threads off); by default it may\n"
                    "run on fewer when that is faster on a loaded host (docs/threading.md)")
    args = ap.parse_args()

    load_before = os.getloadavg()
    rows = []
    for pair in args.pairs.split(","):
        dense_name, pruned_name = pair.split(":")
        dense = os.path.join(args.dense_dir, dense_name + ".onnx")
        pruned = os.path.join(args.dir, pruned_name)
        if not os.path.exists(pruned):
            make_pruned(args.onyx, dense, pruned)
        for t in [int(x) for x in args.threads.split(",")]:
            r = time_pair(dense, pruned, t, args.runs, args.warmup, args.block, not args.no_adapt)
            r.update(model=pruned_name, threads=t)
            rows.append(r)
            m = r["median_ms"]
            print(f"{pruned_name} T={t}: " + ", ".join(f"{e} {m[e]:.2f} ms" for e in ENGINES)
                  + f" | max |onyx sparse - ORT| {r['max_abs_diff_vs_ort']:.2e}"
                  f" (outputs up to {r['max_abs_ort']:.3g})", flush=True)
    load_after = os.getloadavg()

    print()
    print("| pruned model | threads | onyx dense ms | onyx sparse ms | onyx sparse off ms "
          "| ORT pruned ms | sparse vs dense | sparse vs ORT |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        m = r["median_ms"]
        print(f"| {r['model']} | {r['threads']} | {m['onyx dense']:.2f} | {m['onyx sparse']:.2f} "
              f"| {m['onyx sparse off']:.2f} | {m['ORT pruned']:.2f} "
              f"| {m['onyx dense'] / m['onyx sparse']:.2f}x "
              f"| {m['ORT pruned'] / m['onyx sparse']:.2f}x |")
    print(f"\nload average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "load_before": load_before, "load_after": load_after}, f,
                      indent=1)


if __name__ == "__main__":
    main()
