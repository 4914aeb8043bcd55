"""Starts Ray Serve on loopback, deploys the content-type service (app.py) with one engine after
the other, drives it with a bounded load client and prints throughput and latency per engine and
number of concurrent clients. examples/serving/run.sh sets up and runs it.

    python examples/serving/bench.py [--engines onyx,ort] [--clients 1,8,32] [--duration 15]
        [--warmup 3] [--replicas 2] [--threads 1] [--max-batch-size 16] [--batch-wait-ms 5]
        [--port 8123] [--via http|handle] [--address ADDR] [--json FILE] [--smoke]

The load: each client is a loop that POSTs one of eight small files (demo.py's: Python, JSON,
HTML, shell, CSV, PNG, gzip, zip; round-robin, each client starting at its own file) and waits
for the answer before sending the next (closed loop). For each number of clients: --warmup
seconds not counted, then --duration seconds counted; throughput is answers per second, p50/p99
the latency of one request as the client sees it (HTTP through Serve's proxy, queueing, batching,
the run); "mean batch" is the size of the batch a request was served in and "run ms" the time
of that batch's session run, both averaged over the requests. Every answer's label is checked
against the file's true type; a wrong label or a failed request is counted and makes the exit
status 1.

--via handle: the clients call the deployment through a DeploymentHandle from this process (as
another deployment would), without HTTP and Serve's proxy; latency then excludes both.
--smoke: deploy, send one request of each file, check the labels, shut down (no timing).
--address: use a running Ray cluster (`ray start --head` ...) instead of starting one here.
"""
import argparse
import asyncio
import datetime
import io
import json
import logging
import os
import platform
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import app  # noqa: E402  (puts scripts/ and bench/ on sys.path)
import demo  # noqa: E402

TRUE_TYPES = {"mean.py": "python", "readings.json": "json", "index.html": "html",
              "count.sh": "shell", "weather.csv": "csv", "word.png": "png",
              "readings.json.gz": "gzip", "code.zip": "zip"}
APP_NAME = "contenttype"
ROUTE = "/classify"


def files() -> list:
    """[(name, bytes, true label)]: the demo's sample files."""
    buf = io.BytesIO()
    demo.render("onyx").save(buf, "PNG")
    return [(n, c, TRUE_TYPES[n]) for n, c in demo.sample_files(buf.getvalue()).items()]


def percentile(sorted_ms: list, q: float) -> float:
    """Nearest-rank percentile of sorted samples."""
    k = max(0, min(len(sorted_ms) - 1, int(round(q / 100 * len(sorted_ms) + 0.5)) - 1))
    return sorted_ms[k]


async def load(url: str, clients: int, warmup_s: float, duration_s: float, samples: list,
               handle=None) -> dict:
    """`clients` closed-loop clients for warmup_s + duration_s; the statistics of the counted
    part. Through HTTP to `url`, or through `handle` (a DeploymentHandle) when given."""
    import aiohttp

    lat_ms, wrong, failed, batches, run_ms = [], 0, 0, [], []
    t_start = time.perf_counter()
    t_count = t_start + warmup_s
    t_end = t_count + duration_s

    async def client(i: int, session):
        nonlocal wrong, failed
        k = i
        while True:
            name, body, want = samples[k % len(samples)]
            k += 1
            t0 = time.perf_counter()
            if t0 >= t_end:
                return
            try:
                if handle is not None:
                    answer = await handle.classify_bytes.remote(body)
                else:
                    async with session.post(url, data=body) as r:
                        answer = await r.json() if r.status == 200 else None
            except (aiohttp.ClientError, asyncio.TimeoutError, ValueError):
                answer = None
            except Exception as e:  # noqa: BLE001  (a failed Serve call: counted, not fatal)
                if type(e).__module__.split(".")[0] != "ray":
                    raise
                answer = None
            t1 = time.perf_counter()
            if t0 < t_count:
                continue
            if answer is None:
                failed += 1
                continue
            lat_ms.append((t1 - t0) * 1e3)
            batches.append(answer.get("batch", 0))
            run_ms.append(answer.get("run_ms", 0.0))
            wrong += answer.get("label") != want

    timeout = aiohttp.ClientTimeout(total=60)
    conn = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(timeout=timeout, connector=conn) as session:
        await asyncio.gather(*(client(i, session) for i in range(clients)))
    elapsed = max(1e-9, min(time.perf_counter(), t_end) - t_count)
    lat_ms.sort()
    n = len(lat_ms)
    return {"clients": clients, "requests": n, "seconds": round(elapsed, 2),
            "throughput_rps": round(n / elapsed, 1),
            "p50_ms": round(percentile(lat_ms, 50), 2) if n else None,
            "p99_ms": round(percentile(lat_ms, 99), 2) if n else None,
            "mean_batch": round(statistics.fmean(batches), 2) if batches else None,
            "mean_run_ms": round(statistics.fmean(run_ms), 2) if run_ms else None,
            "wrong": wrong, "failed": failed}


async def smoke(url: str, samples: list) -> list:
    """One request per file: [(name, want, got)]."""
    import aiohttp

    out = []
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        for name, body, want in samples:
            async with session.post(url, data=body) as r:
                got = (await r.json()).get("label") if r.status == 200 else f"HTTP {r.status}"
            out.append((name, want, got))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engines", default="onyx,ort")
    ap.add_argument("--clients", default="1,8,32", help="numbers of concurrent clients")
    ap.add_argument("--duration", type=float, default=15.0, help="counted seconds per level")
    ap.add_argument("--warmup", type=float, default=3.0, help="uncounted seconds per level")
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads per replica")
    ap.add_argument("--max-batch-size", type=int, default=16)
    ap.add_argument("--batch-wait-ms", type=float, default=5.0)
    ap.add_argument("--port", type=int, default=8123)
    ap.add_argument("--via", choices=("http", "handle"), default="http",
                    help="requests through Serve's HTTP proxy or a DeploymentHandle")
    ap.add_argument("--address", help="a running Ray cluster's address (default: start one)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--smoke", action="store_true", help="one request per file, no timing")
    args = ap.parse_args(argv)
    engines = [e for e in args.engines.split(",") if e]
    levels = [int(c) for c in args.clients.split(",") if c]
    if not set(engines) <= {"onyx", "ort"} or not engines:
        ap.error("--engines: a list of onyx, ort")
    if any(c < 1 for c in levels) or args.duration <= 0 or args.warmup < 0:
        ap.error("--clients must be positive, --duration above 0, --warmup not negative")

    import ray
    from ray import serve

    samples = files()
    url = f"http://127.0.0.1:{args.port}{ROUTE}"
    t_all = time.perf_counter()
    # The replicas import app.py (Serve pickles the deployment class by module) and, through it,
    # demo.py, real_models.py and onyx: workers of a cluster started here inherit this path.
    paths = [HERE, app.ROOT + "/scripts", app.ROOT + "/bench"]
    os.environ["PYTHONPATH"] = os.pathsep.join(
        paths + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    logging.getLogger("ray.serve").setLevel(logging.WARNING)
    if args.address:
        ray.init(address=args.address, logging_level="ERROR", log_to_driver=False)
    else:
        ray.init(include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    serve.start(http_options={"host": "127.0.0.1", "port": args.port})
    results, ok = [], True
    try:
        for engine in engines:
            t0 = time.perf_counter()
            serve.run(app.build_app({
                "engine": engine, "replicas": args.replicas, "threads": args.threads,
                "max_batch_size": args.max_batch_size,
                "batch_wait_timeout_s": args.batch_wait_ms / 1e3,
                "max_ongoing_requests": max(64, args.max_batch_size)}),
                name=APP_NAME, route_prefix=ROUTE,
                # no per-request access log line: it would cost the replicas time in the bench
                logging_config={"enable_access_log": False, "log_level": "WARNING"})
            print(f"== {engine} (via {args.via}): {args.replicas} replicas x {args.threads} "
                  f"threads, batches up to {args.max_batch_size} within "
                  f"{args.batch_wait_ms:g} ms; deployed in "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
            checks = asyncio.run(smoke(url, samples))
            bad = [c for c in checks if c[1] != c[2]]
            print(f"   one request per file: {len(checks) - len(bad)}/{len(checks)} labels right"
                  + "".join(f"; {n}: want {w}, got {g}" for n, w, g in bad), flush=True)
            ok = ok and not bad
            if not args.smoke:
                for c in levels:
                    handle = serve.get_app_handle(APP_NAME) if args.via == "handle" else None
                    row = asyncio.run(load(url, c, args.warmup, args.duration, samples, handle))
                    row["engine"] = engine
                    row["via"] = args.via
                    results.append(row)
                    ok = ok and row["wrong"] == 0 and row["failed"] == 0 and row["requests"] > 0
                    print(f"   {c:>3} clients: {row['throughput_rps']:>7.1f} req/s  p50 "
                          f"{row['p50_ms']} ms  p99 {row['p99_ms']} ms  mean batch "
                          f"{row['mean_batch']}, run {row['mean_run_ms']} ms  "
                          f"({row['requests']} requests, {row['wrong']} wrong, "
                          f"{row['failed']} failed)", flush=True)
            serve.delete(APP_NAME)
    finally:
        serve.shutdown()
        ray.shutdown()
    if results:
        print("\n| engine | clients | req/s | p50 ms | p99 ms | mean batch | run ms |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for r in sorted(results, key=lambda r: (r["clients"], r["engine"])):
            print(f"| {r['engine']} | {r['clients']} | {r['throughput_rps']} | {r['p50_ms']} | "
                  f"{r['p99_ms']} | {r['mean_batch']} | {r['mean_run_ms']} |")
    print(f"\n(serving bench: {time.perf_counter() - t_all:.0f} s)")
    if args.json:
        meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "host": platform.node(), "cpus": os.cpu_count(), "args": vars(args),
                "ray": ray.__version__}
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": results}, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
