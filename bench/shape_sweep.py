#!/usr/bin/env python3
"""A new input shape on every call, onyx against ONNX Runtime (issue 14).

    PYTHONPATH=build/python .venv/bin/python bench/shape_sweep.py [MODEL] [--lengths 8:256:8]
        [--batch 1] [--passes 4] [--threads 1,2] [--distinct N] [--no-sweep]
        [--max-rss-mb 6144] [--gap-ms 50] [--json FILE]

MODEL: bert_ts (default) or bert_dynamo (BERT with symbolic [batch, seq], made by
bench/models/hf_models.py), mobilenet_v2_dynamic (MobileNetV2 with input [1, 3, height, width],
made by bench/models/mobilenet_v2.py --dynamic), or the path of a model like one of them (a
model with an input_ids input is fed like BERT, any other its one 4-D image input).

(a) The sweep (skipped with --no-sweep). For each thread count, fresh sessions of both engines;
    then --passes passes over the lengths of --lengths (BERT: seq at --batch; MobileNetV2: a
    square image of that side; "A:B:S" is range(A, B + 1, S), or a list "8,64,256"), one call
    per length. The first pass meets every shape for the first time; the later ones have seen
    them all. The engines alternate pass by pass (the order flips each pass, a --gap-ms pause
    after each, so one engine's spinning workers are idle when the other runs). Reported: the
    time of the first pass, the median time of the later passes, and per length the first-call
    cost = first call minus the median of the later calls at that length (median and max over
    the lengths).
(b) --distinct N: N distinct shapes, each fed once, each engine in its own subprocess at the first
    --threads count (so the resident set is that engine's alone): BERT batch x seq (batch 1..10,
    seq 4, 5, ...; seeded shuffle), MobileNetV2 height x width (both from 96 up in steps of 4,
    as many as N needs: 32 x 32 = 1,024 sizes 96..220 for N = 1,000; seeded shuffle). VmRSS
    (/proc/self/status) after the session, after 1 shape, after 10, 100 and N shapes; the
    ratio all / one is what issue 14 bounds (< 2). A process whose resident set passes
    --max-rss-mb (default 6144) stops there and says after how many shapes.

Issue 14's figures:
    bench/shape_sweep.py bert_ts                       # lengths 8..256 step 8, 1 and 2 threads
    bench/shape_sweep.py bert_ts --no-sweep --distinct 1000
    bench/shape_sweep.py mobilenet_v2_dynamic --no-sweep --distinct 1000
(and the same with bert_dynamo). The default sweep takes about a minute at ORT's speed; a slow
onyx on new shapes adds its first-call time (32 lengths x 2 thread counts). onyx is taken from
$ONYX_BUILD_DIR/python (default build/python) when that exists, copied to a temporary folder at
the start (--no-snapshot: used in place) so a rebuild during the run does not touch it.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "models"))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (make_session, machine_info: the settings of the fixed-shape benchmark)
from decode import f, onyx_build, rss_mb, snapshot_onyx, write_report  # noqa: E402
import hf_models  # noqa: E402  (bert_inputs; torch only loaded when a model must be exported)
import mobilenet_v2  # noqa: E402

ENGINES = ("onyx", "ort")
BERT_NAMED = ("bert_ts", "bert_dynamo")
IMAGE_NAMED = (mobilenet_v2.DYNAMIC_NAME,)


def resolve_model(model):
    if os.path.exists(model):
        return os.path.abspath(model)
    out = hf_models.DEFAULT_OUT
    path = os.path.join(out, model + ".onnx")
    if model in BERT_NAMED and not os.path.exists(path):
        _, failures = hf_models.ensure([model], out, log=lambda s: print(s, file=sys.stderr))
        if not os.path.exists(path):
            raise SystemExit(f"could not export {model}: {failures}")
    elif model in IMAGE_NAMED and not os.path.exists(path):
        mobilenet_v2.write_dynamic(out)
    elif model not in BERT_NAMED + IMAGE_NAMED:
        raise SystemExit(f"no model '{model}' (a path, or one of {', '.join(BERT_NAMED + IMAGE_NAMED)})")
    return path


class Feeder:
    """Makes the feeds of one shape: (batch, seq) for BERT-like models, (height, width) for an
    image model."""

    def __init__(self, path):
        import onnx

        m = onnx.load(path, load_external_data=False)
        inits = {t.name for t in m.graph.initializer}
        self.inputs = [vi.name for vi in m.graph.input if vi.name not in inits]
        self.text = "input_ids" in self.inputs
        if not self.text:
            if len(self.inputs) != 1:
                raise SystemExit(f"{path}: expected input_ids or one image input, found {self.inputs}")
            dims = m.graph.input[[vi.name for vi in m.graph.input].index(self.inputs[0])].type.tensor_type.shape.dim
            self.channels = dims[1].dim_value or 3

    def __call__(self, a, b):
        """The feeds of shape (a, b): (batch, seq) for BERT, (height, width) for an image."""
        if self.text:
            feeds = hf_models.bert_inputs(a, b, seed=a * 1000 + b)
            return {k: v for k, v in feeds.items() if k in self.inputs}
        rng = np.random.default_rng(a * 1000 + b)
        return {self.inputs[0]: rng.random((1, self.channels, a, b), dtype=np.float32)}


def parse_lengths(spec):
    if ":" in spec:
        a, b, s = (int(x) for x in spec.split(":"))
        return list(range(a, b + 1, s))
    return [int(x) for x in spec.split(",") if x]


# ---------------------------------------------------------------------------------------------
# (a) the sweep, both engines in this process


def sweep(path, feeder, lengths, threads, args):
    gap = args.gap_ms / 1e3
    sessions = {e: compare.make_session(e, path, threads) for e in ENGINES}
    calls = {e: {n: [] for n in lengths} for e in ENGINES}   # per length: ms of each pass
    pass_ms = {e: [] for e in ENGINES}
    stopped = {e: None for e in ENGINES}
    feeds = {n: feeder(args.batch, n) if feeder.text else feeder(n, n) for n in lengths}
    for p in range(args.passes):
        order = ENGINES if p % 2 == 0 else ENGINES[::-1]
        for e in order:
            if stopped[e] is not None:
                continue
            total = 0.0
            for i, n in enumerate(lengths):
                t0 = time.perf_counter()
                sessions[e].run(None, feeds[n])
                ms = (time.perf_counter() - t0) * 1e3
                total += ms
                calls[e][n].append(ms)
                if args.max_rss_mb and rss_mb() > args.max_rss_mb:
                    stopped[e] = (p, i + 1)
                    print(f"  {e} t={threads}: stopped in pass {p + 1} after {i + 1} lengths: "
                          f"resident set {rss_mb():.0f} MB passed --max-rss-mb", flush=True)
                    break
            if stopped[e] is None:
                pass_ms[e].append(total)
            time.sleep(gap)
    # The first call's output at the first length, compared between the engines.
    n0 = lengths[0]
    outs = {e: sessions[e].run(None, feeds[n0]) for e in ENGINES if stopped[e] is None}
    diff = compare.max_rel_diff(outs["onyx"], outs["ort"]) if len(outs) == 2 else None
    del sessions
    row = {"threads": threads, "max_rel_diff": diff}
    for e in ENGINES:
        costs = {n: c[0] - statistics.median(c[1:]) for n, c in calls[e].items() if len(c) > 1}
        row[e] = {
            "first_pass_ms": pass_ms[e][0] if pass_ms[e] else None,
            "later_pass_ms": statistics.median(pass_ms[e][1:]) if len(pass_ms[e]) > 1 else None,
            "first_call_cost_median_ms": statistics.median(costs.values()) if costs else None,
            "first_call_cost_max_ms": max(costs.values()) if costs else None,
            "first_call_cost_max_at": max(costs, key=costs.get) if costs else None,
            "per_length": {str(n): {"first_ms": c[0] if c else None,
                                    "steady_ms": statistics.median(c[1:]) if len(c) > 1 else None}
                           for n, c in calls[e].items()},
            "stopped": stopped[e],
        }
    return row


# ---------------------------------------------------------------------------------------------
# (b) N distinct shapes, one engine per subprocess


def distinct_shapes(text, n, seed=0):
    if text:
        batches = list(range(1, 11))
        seqs = list(range(4, 4 + (n + len(batches) - 1) // len(batches)))
        shapes = [(b, s) for b in batches for s in seqs]
    else:
        side = 1
        while side * side < n:
            side += 1
        sizes = [96 + 4 * i for i in range(side)]
        shapes = [(h, w) for h in sizes for w in sizes]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(shapes))
    return [shapes[i] for i in order[:n]]


def distinct_main(engine, path, threads, n, cap):
    compare._use_build_module()
    feeder = Feeder(path)
    shapes = distinct_shapes(feeder.text, n)
    out = {"engine": engine, "threads": threads, "shapes": n, "rss_start_mb": rss_mb()}
    sess = compare.make_session(engine, path, threads)
    out["rss_session_mb"] = rss_mb()
    marks = {}
    t0 = time.perf_counter()
    done = 0
    for i, (a, b) in enumerate(shapes):
        feeds = feeder(a, b)
        sess.run(None, feeds)
        done = i + 1
        if done in (1, 10, 100):
            marks[done] = rss_mb()
        if cap and rss_mb() > cap:
            break
    out["elapsed_s"] = time.perf_counter() - t0
    out["shapes_done"] = done
    out["stopped"] = done < n
    out["rss_1_mb"] = marks.get(1)
    out["rss_10_mb"] = marks.get(10)
    out["rss_100_mb"] = marks.get(100)
    out["rss_all_mb"] = rss_mb()
    out["peak_rss_mb"] = rss_mb("VmHWM")
    out["ratio_all_to_1"] = out["rss_all_mb"] / out["rss_1_mb"] if out["rss_1_mb"] else None
    print(json.dumps(out))


def distinct_probe(engine, path, threads, n, cap):
    cmd = [sys.executable, os.path.abspath(__file__), "--distinct-probe", engine, path,
           str(threads), str(n), str(cap)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        return {"engine": engine, "threads": threads, "error": f"exit status {p.returncode}: {tail}"}
    return json.loads(p.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------


def print_sweep(rows, lengths, args, text):
    what = f"seq at batch {args.batch}" if text else "square image side"
    print(f"\n(a) {len(lengths)} lengths {lengths[0]}..{lengths[-1]} ({what}), {args.passes} passes, "
          f"fresh sessions; times in ms")
    head = (f"{'thr':>3} | {'1st pass onyx':>13} {'1st pass ORT':>12} {'ORT/onyx':>8} | "
            f"{'later onyx':>10} {'later ORT':>9} {'ORT/onyx':>8} | {'1st-call cost onyx':>18} "
            f"{'1st-call cost ORT':>17} (median / max) | max rel diff")
    print(head)
    print("-" * len(head))
    for r in rows:
        x, o = r["onyx"], r["ort"]
        r1 = o["first_pass_ms"] / x["first_pass_ms"] if x["first_pass_ms"] and o["first_pass_ms"] else None
        r2 = o["later_pass_ms"] / x["later_pass_ms"] if x["later_pass_ms"] and o["later_pass_ms"] else None
        cx = f"{f(x['first_call_cost_median_ms'], '.1f')} / {f(x['first_call_cost_max_ms'], '.1f')}"
        co = f"{f(o['first_call_cost_median_ms'], '.1f')} / {f(o['first_call_cost_max_ms'], '.1f')}"
        note = f"  onyx stopped (RSS cap) {x['stopped']}" if x["stopped"] else ""
        print(f"{r['threads']:3d} | {f(x['first_pass_ms'], '13.1f')} {f(o['first_pass_ms'], '12.1f')} "
              f"{f(r1, '8.2f')} | {f(x['later_pass_ms'], '10.1f')} {f(o['later_pass_ms'], '9.1f')} "
              f"{f(r2, '8.2f')} | {cx:>18} {co:>17}                | {f(r['max_rel_diff'], '.1e')}{note}")
    if args.per_length:
        for r in rows:
            print(f"\nper length, t={r['threads']}: first call / steady median, ms")
            for n in lengths:
                x, o = r["onyx"]["per_length"][str(n)], r["ort"]["per_length"][str(n)]
                print(f"  {n:4d}  onyx {f(x['first_ms'], '8.2f')} / {f(x['steady_ms'], '7.2f')}   "
                      f"ORT {f(o['first_ms'], '8.2f')} / {f(o['steady_ms'], '7.2f')}")


def print_distinct(mem, n, text):
    what = "batch x seq" if text else "height x width"
    print(f"\n(b) {n} distinct shapes ({what}), each engine in its own process; resident set in MB "
          f"(2^20 bytes)")
    head = (f"{'engine':6} {'thr':>3} | {'session':>7} {'1 shape':>7} {'10':>7} {'100':>7} "
            f"{'all':>7} {'peak':>7} | {'all/1':>5} | {'time s':>7} | note")
    print(head)
    print("-" * len(head))
    for m in mem:
        if "error" in m:
            print(f"{m['engine']:6} {m['threads']:3d} | error: {m['error']}")
            continue
        note = f"stopped after {m['shapes_done']} shapes (--max-rss-mb)" if m["stopped"] else ""
        print(f"{m['engine']:6} {m['threads']:3d} | {m['rss_session_mb']:7.0f} {f(m['rss_1_mb'], '7.0f')} "
              f"{f(m['rss_10_mb'], '7.0f')} {f(m['rss_100_mb'], '7.0f')} {m['rss_all_mb']:7.0f} "
              f"{m['peak_rss_mb']:7.0f} | {f(m['ratio_all_to_1'], '5.2f')} | {m['elapsed_s']:7.1f} | {note}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--distinct-probe":
        engine, path, threads, n, cap = sys.argv[2:7]
        distinct_main(engine, path, int(threads), int(n), float(cap))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default="bert_ts",
                    help="bert_ts (default), bert_dynamo, mobilenet_v2_dynamic, or a path")
    ap.add_argument("--lengths", default=None,
                    help="A:B:S (inclusive) or a list; default 8:256:8 (BERT), 96:224:16 (image)")
    ap.add_argument("--batch", type=int, default=1, help="BERT batch in the sweep (default 1)")
    ap.add_argument("--passes", type=int, default=4, help="passes over the lengths (default 4: 1 first + 3 later)")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--per-length", action="store_true", help="also print each length's times")
    ap.add_argument("--no-sweep", action="store_true", help="skip (a)")
    ap.add_argument("--distinct", type=int, default=0, help="(b): this many distinct shapes (e.g. 1000)")
    ap.add_argument("--max-rss-mb", type=float, default=6144,
                    help="stop an engine once its process's resident set passes this (default 6144; 0: no cap)")
    ap.add_argument("--gap-ms", type=float, default=50.0, help="pause after each pass (default 50)")
    ap.add_argument("--json", default="", help="write the results to this file")
    ap.add_argument("--no-snapshot", action="store_true",
                    help="load onyx from the build tree itself, not from a copy made at the start")
    args = ap.parse_args()
    threads_list = [int(t) for t in args.threads.split(",") if t]
    if args.passes < 2 or not threads_list or min(threads_list) < 1 or args.distinct < 0:
        ap.error("--passes >= 2, --threads positive, --distinct >= 0")
    path = resolve_model(args.model)
    feeder = Feeder(path)
    lengths = parse_lengths(args.lengths or ("8:256:8" if feeder.text else "96:224:16"))
    if not args.no_snapshot:
        snapshot_onyx()
    compare._use_build_module()
    load_start = os.getloadavg()
    t_start = time.perf_counter()
    rows, mem = [], []
    if not args.no_sweep:
        for t in threads_list:
            print(f"sweep t={t} ...", file=sys.stderr, flush=True)
            rows.append(sweep(path, feeder, lengths, t, args))
    if args.distinct:
        for e in ENGINES:
            print(f"{args.distinct} distinct shapes, {e} t={threads_list[0]} ...", file=sys.stderr, flush=True)
            mem.append(distinct_probe(e, path, threads_list[0], args.distinct, args.max_rss_mb))
    print(f"model: {os.path.relpath(path, ROOT) if path.startswith(ROOT) else path}; onyx: {onyx_build()}")
    if rows:
        print_sweep(rows, lengths, args, feeder.text)
    if mem:
        print_distinct(mem, args.distinct, feeder.text)
        x = next((m for m in mem if m["engine"] == "onyx" and "error" not in m), None)
        o = next((m for m in mem if m["engine"] == "ort" and "error" not in m), None)
        if x and o:
            print(f"onyx / ORT resident set after all shapes: {x['rss_all_mb'] / o['rss_all_mb']:.2f}"
                  + (f" (onyx after {x['shapes_done']} shapes only)" if x["stopped"] else ""))
    load_end = os.getloadavg()
    print(f"load average {load_start[0]:.1f} at start, {load_end[0]:.1f} at end; "
          f"{time.perf_counter() - t_start:.0f} s")
    if args.json:
        write_report(args.json, path, args, load_start, load_end, lengths=lengths, sweep=rows,
                     distinct=mem)
    return 0


if __name__ == "__main__":
    sys.exit(main())
