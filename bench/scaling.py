#!/usr/bin/env python3
"""Thread scaling of onyx beside ONNX Runtime (and OpenVINO): the benchmark models at 1, 2, 4, 8
and 16 threads, onyx through its CLI, so that only the bundled CLI has to travel to a bigger
machine (bench/scaling.sh).

    python3 bench/scaling.py [--onyx build/onyx] [--threads 1,2,4,8,16] [--models resnet50,...]
        [--peers ort,openvino] [--runs 15] [--rounds 3] [--json FILE]

Per model and thread count, in --rounds rounds: `onyx bench MODEL --threads T --runs R --json`
(a fresh process: session creation and R timed runs after 2 warm-up runs; the round's median),
then each peer's R runs in this process on a session made once for (model, T), after 2 warm-up
runs. onyx's figure is the median of its round medians, a peer's the median of all its runs;
ratios are peer / onyx (above 1: onyx is faster). The CLI gets GOMP_SPINCOUNT=1000000 as the
Python package sets it (docs/threading.md). The table ends with the geometric means per thread
count and the models onyx runs slower at the largest count than at the one before.

Models come from bench/models/make_bench_models.py (made on first use; onnx and numpy suffice,
the check against ONNX Runtime is skipped with --no-check). OpenVINO is used when it is
installed and listed in --peers.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "models"))
import make_bench_models as models  # noqa: E402

sys.path.insert(0, HERE)
import compare  # noqa: E402  (make_session: the peers' settings of the other benchmarks)

PEER_NAMES = compare.PEER_NAMES


def peer_session(peer, path, threads):
    """A peer's session (compare.py's settings) as a function of the feeds."""
    sess = compare.make_session(peer, path, threads)
    return lambda feeds: sess.run(None, feeds)


def onyx_round(cli, path, threads, runs):
    env = dict(os.environ)
    env.setdefault("GOMP_SPINCOUNT", "1000000")
    p = subprocess.run([cli, "bench", path, "--threads", str(threads), "--runs", str(runs),
                        "--warmup", "2", "--json"], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError((p.stderr.strip().splitlines() or ["onyx bench failed"])[-1])
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--onyx", default=os.path.join(ROOT, "build", "onyx"), help="the onyx CLI")
    ap.add_argument("--threads", default="1,2,4,8,16")
    ap.add_argument("--models", default=",".join(models.MODELS))
    ap.add_argument("--peers", default="ort,openvino",
                    help="ort and/or openvino (openvino skipped when not installed)")
    ap.add_argument("--runs", type=int, default=15, help="timed runs per round and engine")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models-dir", default=models.DEFAULT_OUT)
    ap.add_argument("--no-check", action="store_true",
                    help="make the models without running them on ONNX Runtime first")
    ap.add_argument("--json", default="", help="write the results here too")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",") if t]
    names = [m for m in args.models.split(",") if m]
    peers = []
    for p in (p for p in args.peers.split(",") if p):
        if p not in PEER_NAMES:
            ap.error(f"unknown peer '{p}'")
        if p == "openvino":
            try:
                import openvino  # noqa: F401
            except ImportError:
                print("openvino is not installed: left out", file=sys.stderr)
                continue
        peers.append(p)
    if not os.access(args.onyx, os.X_OK):
        ap.error(f"no onyx CLI at {args.onyx}")

    t0 = time.perf_counter()
    paths = models.ensure_models(args.models_dir, names, validate=not args.no_check,
                                 log=lambda s: print(s, file=sys.stderr, flush=True))
    print(f"models ready after {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    rows = []
    for name, path in zip(names, paths):
        feeds = models.make_feeds(name)
        for t in threads:
            row = {"model": name, "threads": t}
            try:
                sessions = {p: peer_session(p, path, t) for p in peers}
                for run in sessions.values():
                    for _ in range(2):
                        run(feeds)
                onyx_medians, peer_times = [], {p: [] for p in peers}
                for _ in range(args.rounds):
                    r = onyx_round(args.onyx, path, t, args.runs)
                    onyx_medians.append(r["median_ms"])
                    row["onyx_runs_by_threads"] = r.get("runs_by_threads", {})
                    for p, run in sessions.items():
                        for _ in range(args.runs):
                            s = time.perf_counter()
                            run(feeds)
                            peer_times[p].append((time.perf_counter() - s) * 1e3)
                row["onyx_ms"] = statistics.median(onyx_medians)
                for p in peers:
                    row[f"{p}_ms"] = statistics.median(peer_times[p])
                    row[f"{p}_ratio"] = row[f"{p}_ms"] / row["onyx_ms"]
                del sessions
            except Exception as e:  # report and go on
                row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            rows.append(row)
            print(f"{name} t={t}: " + (row["error"] if "error" in row else
                  f"onyx {row['onyx_ms']:.2f} ms, " + ", ".join(
                      f"{PEER_NAMES[p]} {row[p + '_ms']:.2f} ms ({row[p + '_ratio']:.2f})"
                      for p in peers)), file=sys.stderr, flush=True)

    head = f"{'model':14} {'thr':>3} {'onyx ms':>9}" + "".join(
        f" {PEER_NAMES[p] + ' ms':>12} {PEER_NAMES[p] + '/onyx':>14}" for p in peers)
    print(head)
    print("-" * len(head))
    for r in rows:
        if "error" in r:
            print(f"{r['model']:14} {r['threads']:3d}  error: {r['error']}")
            continue
        print(f"{r['model']:14} {r['threads']:3d} {r['onyx_ms']:9.2f}" + "".join(
            f" {r[p + '_ms']:12.2f} {r[p + '_ratio']:14.2f}" for p in peers))
    print("-" * len(head))
    for p in peers:
        for t in threads:
            g = compare.geomean([r.get(f"{p}_ratio") for r in rows if r["threads"] == t])
            lo = min((r[f"{p}_ratio"] for r in rows if r["threads"] == t and f"{p}_ratio" in r),
                     default=None)
            print(f"geomean {PEER_NAMES[p]}/onyx at {t:2d} threads: "
                  f"{'-' if g is None else f'{g:.2f}'} (lowest model: "
                  f"{'-' if lo is None else f'{lo:.2f}'})")
    if len(threads) > 1:
        hi, below = threads[-1], threads[-2]
        slower = []
        for name in names:
            a = next((r for r in rows if r["model"] == name and r["threads"] == hi), {})
            b = next((r for r in rows if r["model"] == name and r["threads"] == below), {})
            if "onyx_ms" in a and "onyx_ms" in b and a["onyx_ms"] > b["onyx_ms"]:
                slower.append(f"{name} ({b['onyx_ms']:.2f} -> {a['onyx_ms']:.2f} ms)")
        print(f"onyx slower at {hi} threads than at {below}: {', '.join(slower) or 'none'}")
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), "?")
    print(f"{cpu}, {os.cpu_count()} cores; {time.perf_counter() - t0:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                       "cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
                       "settings": vars(args), "results": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
