#!/usr/bin/env python3
"""Latency of requests that arrive with pauses between them, onyx against ONNX Runtime.

    .venv/bin/python bench/paced.py [--models squeezenet] [--threads 2] [--pauses 5,20,50,100]
        [--requests 60] [--rounds 2] [--onyx-env GOMP_SPINCOUNT=300000] [--models-dir DIR]
        [--json FILE]

compare.py times runs back to back, as a batch job or a busy server sees them. A server that gets
one request every few tens of milliseconds sees something else: between requests the engines'
worker threads go to sleep, and waking them costs time (docs/threading.md). Here each engine
runs in its own process (so neither meets the other's spinning threads): warm-up runs, then
`--requests` runs each after a `time.sleep` of the pause. Reported per engine: median and p90
latency and the process CPU time per request (run plus whatever its threads spin during the
pause). Engines and rounds alternate. `--onyx-env K=V` adds an environment variable to onyx's
process, e.g. `GOMP_SPINCOUNT=300000` for libgomp's own default instead of the package's.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (sessions, models, machine info)


def child(engine, path, name, threads, pause_s, requests):
    feeds = compare.models.make_feeds(name)
    session = compare.make_session(engine, path, threads)
    for _ in range(10):
        session.run(None, feeds)
    time.sleep(0.2)
    cpu0 = time.process_time()
    lat = []
    for _ in range(requests):
        time.sleep(pause_s)
        t0 = time.perf_counter()
        session.run(None, feeds)
        lat.append((time.perf_counter() - t0) * 1e3)
    cpu = (time.process_time() - cpu0) * 1e3 / requests
    lat.sort()
    return {"median_ms": statistics.median(lat), "p90_ms": lat[int(0.9 * (len(lat) - 1))],
            "cpu_ms_per_request": cpu, "gomp_spincount": os.environ.get("GOMP_SPINCOUNT")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="squeezenet")
    ap.add_argument("--threads", default="2")
    ap.add_argument("--pauses", default="5,20,50,100", help="milliseconds before each request")
    ap.add_argument("--requests", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--onyx-env", action="append", default=[], metavar="K=V")
    ap.add_argument("--models-dir", default=compare.models.DEFAULT_OUT)
    ap.add_argument("--json", default=os.path.join(compare.RESULTS, "paced.json"))
    ap.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        engine, path, name, threads, pause, requests = args.child
        print(json.dumps(child(engine, path, name, int(threads), float(pause) / 1e3,
                               int(requests))))
        return

    names = [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in compare.models.MODELS]
    if unknown:
        ap.error(f"unknown model '{unknown[0]}'; known: {', '.join(compare.models.MODELS)}")
    # built on first use, before any timing
    paths = dict(zip(names, compare.models.ensure_models(
        args.models_dir, names, log=lambda s: print(s, file=sys.stderr))))
    onyx_env = dict(kv.split("=", 1) for kv in args.onyx_env)
    rows = []
    print(f"{'model':12} {'thr':>3} {'pause':>6} {'round':>5}  {'engine':6} {'median ms':>9} "
          f"{'p90 ms':>7} {'CPU ms/request':>14}")
    for name in names:
        for threads in [int(t) for t in args.threads.split(",")]:
            for pause in [float(p) for p in args.pauses.split(",")]:
                for rnd in range(args.rounds):
                    engines = ("ort", "onyx") if rnd % 2 == 0 else ("onyx", "ort")
                    for engine in engines:
                        env = dict(os.environ)
                        if engine == "onyx":
                            env.update(onyx_env)
                        p = subprocess.run(
                            [sys.executable, __file__, "--child", engine, paths[name], name,
                             str(threads), str(pause), str(args.requests)],
                            capture_output=True, text=True, env=env, timeout=600)
                        if p.returncode != 0:
                            print(f"{name} {engine} failed:\n{p.stderr}", file=sys.stderr)
                            sys.exit(1)
                        r = json.loads(p.stdout.strip().splitlines()[-1])
                        r.update(model=name, threads=threads, pause_ms=pause, round=rnd,
                                 engine=engine)
                        rows.append(r)
                        print(f"{name:12} {threads:3d} {pause:6.0f} {rnd:5d}  {engine:6} "
                              f"{r['median_ms']:9.2f} {r['p90_ms']:7.2f} "
                              f"{r['cpu_ms_per_request']:14.1f}", flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"settings": vars(args), "machine": compare.machine_info(), "rows": rows}, f,
                  indent=1)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
