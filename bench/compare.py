#!/usr/bin/env python3
"""onyx against ONNX Runtime (and OpenVINO) on the benchmark models, same inputs and threads.

    .venv/bin/python bench/compare.py [--models resnet50,bert_base] [--threads 1,2,4,8,16]
        [--peers ort,openvino] [--load N] [--runs 20] [--min-seconds 2] [--warmup 3] [--block 5]
        [--gap-ms 50]
        [--json bench/results/compare.json] [--png bench/results/compare.png]
    .venv/bin/python bench/compare.py --int8 [--top1 20]   (or --models resnet50_qdq,bert_base_dynamic)
    .venv/bin/python bench/compare.py --models resnet50,bert_base --bf16   (onyx bf16 beside fp32)

For each model and thread count every engine runs in this process, alternating in blocks of
`--block` back-to-back runs (the order rotates every block; one untimed run starts each block
and a pause ends it, so one engine's spinning worker threads do not slow the other), after
warm-up runs; the medians and their ratios peer / onyx are reported (above 1: onyx is faster),
with the geometric mean per thread count. ONNX Runtime runs with all graph optimizations,
sequential execution, intra_op_num_threads = T and inter_op_num_threads = 1. OpenVINO (with
`--peers ort,openvino`; `pip install -r scripts/requirements-bench.txt`) runs on its CPU plugin
with INFERENCE_PRECISION_HINT f32 (no bf16 on AMX), the latency hint, one stream and
INFERENCE_NUM_THREADS = T.

--load N keeps N cores busy while the engines are timed: N processes spinning in a loop (each
ends by itself after --load-seconds, default 3600, and all are killed when the script ends), the
busy host of a shared machine. onyx adapts its thread count to it (docs/threading.md); the
engines are timed exactly as without load.

Session-creation time and peak resident memory are measured separately, each engine in its own
subprocess (its peak RSS, VmHWM, after creating the session and running it once), so neither
pollutes the other. Outputs are compared: "max rel diff" is max |onyx - ORT| / max |ORT| over every output.

Int8 models (--int8 for all six, or by name in --models: resnet50_qdq, resnet50_qop,
resnet50_qop_default, mobilenet_v2_qdq, bert_base_qdq, bert_base_dynamic) are the fp32 models
quantized by onnxruntime.quantization (bench/models/quantized.py) and timed the same way. For each
an accuracy table follows the timings, at the first thread count: the max abs diff of onyx's
outputs against ORT's on the same int8 model, next to ORT's own int8-versus-fp32 max abs diff
(ORT on the fp32 source model, same inputs); with --top1 N, the CNNs also run N other random
inputs and report how often onyx's argmax equals ORT's (and ORT int8's equals ORT fp32's). An
engine that cannot load a model is reported as "refused: <first line of its error>" and the
other engines are still timed.

The models come from bench/models/make_bench_models.py (built on first use, without downloads).
The onyx module is taken from $ONYX_BUILD_DIR/python (default build/python) when it exists.
"""
import argparse
import datetime
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "models"))
import make_bench_models as models  # noqa: E402
import quantized  # noqa: E402  (int8 variants: quantized.INT8)
import real_models  # noqa: E402  (ort_session)

RESULTS = os.path.join(HERE, "results")


def _use_build_module():
    build = os.environ.get("ONYX_BUILD_DIR", os.path.join(ROOT, "build"))
    if os.path.isdir(os.path.join(build, "python", "onyx")):
        sys.path[:0] = [os.path.join(build, "python")]


# ---------------------------------------------------------------------------------------------
# Sessions


class OpenVinoSession:
    """OpenVINO's CPU plugin behind the run(None, feeds) -> [outputs] call of the other engines."""

    def __init__(self, path, threads):
        import openvino as ov

        self.model = ov.Core().compile_model(path, "CPU", {
            "INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1})
        self.request = self.model.create_infer_request()

    def run(self, _names, feeds):
        result = self.request.infer(feeds)
        return [result[o] for o in self.model.outputs]


def make_session(engine, path, threads):
    if engine == "openvino":
        return OpenVinoSession(path, threads)
    if engine == "ort":  # the settings every benchmark here gives ONNX Runtime
        return real_models.ort_session(path, threads)
    _use_build_module()
    import onyx

    if hasattr(onyx, "SessionOptions"):
        so = onyx.SessionOptions()
        so.intra_op_num_threads = threads
        if engine == "onyx-bf16":  # onyx with SessionOptions.precision = "bf16" (--bf16)
            so.precision = "bf16"
        return onyx.InferenceSession(path, so)
    return onyx.InferenceSession(path, intra_op_threads=threads)


def _status_mb(field):
    """VmRSS (now) or VmHWM (peak) of this process, in MB. VmHWM rather than ru_maxrss: Linux
    carries ru_maxrss across exec, so a subprocess would report its parent's peak."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def probe_main(engine, path, name, threads):
    """Subprocess: session-creation time and peak RSS of one engine, printed as JSON."""
    feeds = quantized.make_feeds(name)
    before = _status_mb("VmRSS")
    t0 = time.perf_counter()
    sess = make_session(engine, path, threads)
    create_ms = (time.perf_counter() - t0) * 1e3
    sess.run(None, feeds)
    peak = _status_mb("VmHWM")
    print(json.dumps({"create_ms": create_ms, "rss_before_mb": before, "peak_rss_mb": peak}))


def probe(engine, path, name, threads):
    cmd = [sys.executable, os.path.abspath(__file__), "--probe", engine, path, name, str(threads)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------
# Progress bar (stderr, only on a terminal)


class Progress:
    def __init__(self, total):
        self.total, self.done = total, 0
        self.tty = sys.stderr.isatty()
        self.t0 = time.perf_counter()

    def show(self, what):
        if not self.tty:
            return
        width = 30
        filled = int(width * self.done / max(1, self.total))
        elapsed = time.perf_counter() - self.t0
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {100 * self.done // max(1, self.total):3d}% "
                         f"{elapsed:5.0f}s  {what[:60]:<60}")
        sys.stderr.flush()

    def step(self, what, n=1):
        self.done += n
        self.show(what)

    def log(self, line):
        if self.tty:
            sys.stderr.write("\r" + " " * 110 + "\r")
        print(line, flush=True)

    def close(self):
        if self.tty:
            sys.stderr.write("\r" + " " * 110 + "\r")
            sys.stderr.flush()


# ---------------------------------------------------------------------------------------------
# One model at one thread count


def max_diff(a_list, b_list, relative=False):
    """The largest |a - b| over paired outputs (inf when shapes differ); with `relative`, each
    output's divided by the largest |b| of that output."""
    import numpy as np

    worst = 0.0
    for a, b in zip(a_list, b_list):
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            return float("inf")
        if b.size == 0:
            continue
        d = float(np.max(np.abs(a - b)))
        worst = max(worst, d / max(float(np.max(np.abs(b))), 1e-30) if relative else d)
    return worst


def max_rel_diff(a_list, b_list):
    return max_diff(a_list, b_list, relative=True)


def first_line(e):
    """The first line of an error, with the next one when it ends in ':' (onyx's "3 nodes cannot
    run:" heads a list of the nodes, one a line)."""
    lines = [x.strip() for x in str(e).strip().splitlines()] or [type(e).__name__]
    line = lines[0] + (" " + lines[1] if lines[0].endswith(":") and len(lines) > 1 else "")
    return line[:300]


def timed_runs(runs, min_seconds, first_ms, cap=2000):
    """Timed runs per engine: at least `runs`, and enough that the slowest engine's runs (by the
    median of its first timed block, `first_ms`) take `min_seconds`, up to `cap`. Twenty runs of
    a 4 ms model are four blocks within a second, and the host's other work then decides the
    ratio: SqueezeNet at 2 threads measured 0.84-1.11 against ORT in repeated 20-run cells, 1.23
    and 1.24 in two 200-run cells."""
    medians = [statistics.median(t) for t in first_ms.values() if t]
    if min_seconds <= 0 or not medians:
        return runs
    slowest = max(medians) / 1e3
    return max(runs, min(cap, math.ceil(min_seconds / max(slowest, 1e-6))))


def bench_pair(path, name, threads, runs, warmup, gap_s, progress, block=5, peers=("ort",),
               outputs=None, min_seconds=0.0):
    """Medians of onyx and each peer on one model at one thread count (timed_runs decides how
    many runs; row["runs"] says it). Row keys: onyx_ms and, per peer P, P_ms, P_ratio
    (P / onyx) and P_max_rel_diff; for ORT also the plain ratio and max_rel_diff. An engine
    whose session cannot be created is left out and named in row["refused"] (engine -> first
    line of its error); the others are still timed. `outputs`, a dict, receives each engine's
    outputs on the benchmark feeds."""
    feeds = quantized.make_feeds(name)
    label = f"{name} t={threads}"
    progress.show(f"{label}: creating sessions")
    sessions, refused = {}, {}
    for e in ("onyx",) + tuple(peers):
        try:
            sessions[e] = make_session(e, path, threads)
        except Exception as ex:  # noqa: BLE001 (an unsupported model: report it, time the rest)
            refused[e] = first_line(ex)
    engines = tuple(sessions)
    if not engines:
        progress.step(f"{label}: refused", warmup + runs)
        return {"refused": refused}
    outs = {}
    for i in range(warmup):
        for e in engines:
            outs[e] = sessions[e].run(None, feeds)
            time.sleep(gap_s)
        progress.step(f"{label}: warm-up {i + 1}/{warmup}")
    if not outs:
        outs = {e: sessions[e].run(None, feeds) for e in engines}
    times = {e: [] for e in engines}
    # Blocks of back-to-back runs, engines alternating block by block (the order rotates every
    # block): within a block an engine runs with its worker threads awake, as in a serving loop;
    # one untimed run first re-wakes them after the other engine's block, and the gap lets the
    # other engine's spinning workers go idle. Single runs alternating with a short gap measured
    # each engine against the other's still-spinning threads (onyx ResNet-50 at 2 threads: 55 ms
    # after a 5 ms gap, 25 ms after 50 ms).
    # The first block's times set how many runs the cell takes (timed_runs).
    i, done = 0, 0
    while done < runs:
        k = i % len(engines)
        order = engines[k:] + engines[:k]
        if len(engines) == 2 and i % 2:
            order = engines[::-1]
        n = min(block, runs - done)
        for e in order:
            sessions[e].run(None, feeds)
            for _ in range(n):
                t0 = time.perf_counter()
                sessions[e].run(None, feeds)
                times[e].append((time.perf_counter() - t0) * 1e3)
            time.sleep(gap_s)
        i, done = i + 1, done + n
        if i == 1:
            planned, runs = runs, timed_runs(runs, min_seconds, times)
            progress.total += runs - planned
        progress.step(f"{label}: block {i}/{(runs + block - 1) // block}", n)
    del sessions
    if outputs is not None:
        outputs.update(outs)
    row = {"refused": refused} if refused else {}
    row["runs"] = runs
    if "onyx" in times:
        row.update({"onyx_ms": statistics.median(times["onyx"]), "onyx_min_ms": min(times["onyx"])})
    for p in peers:
        if p not in times:
            continue
        ms = statistics.median(times[p])
        row.update({f"{p}_ms": ms, f"{p}_min_ms": min(times[p])})
        if "onyx" in times:
            row.update({f"{p}_ratio": ms / row["onyx_ms"],
                        f"{p}_max_rel_diff": max_rel_diff(outs["onyx"], outs[p])})
    if "ort_ratio" in row:
        row["ratio"], row["max_rel_diff"] = row["ort_ratio"], row["ort_max_rel_diff"]
    return row


def max_abs_diff(a_list, b_list):
    return max_diff(a_list, b_list)


def output_steps(path):
    """The quantization step of each graph output that a per-tensor DequantizeLinear with a constant
    scale produces (its scale), else None (a float output such as a Softmax): the unit in which
    int8 errors are counted."""
    import onnx
    from onnx import numpy_helper

    g = onnx.load(path, load_external_data=False).graph
    inits = {i.name: i for i in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    steps = []
    for out in g.output:
        n = producer.get(out.name)
        step = None
        if n is not None and n.op_type == "DequantizeLinear" and len(n.input) > 1 and n.input[1] in inits:
            s = numpy_helper.to_array(inits[n.input[1]])
            if s.size == 1:
                step = float(s.reshape(()))
        steps.append(step)
    return steps


def int8_accuracy(name, path, src_path, threads, outs, top1, progress):
    """Accuracy of an int8 model: onyx against ORT on it (max abs diff over every output, from the
    benchmark run's `outs`), beside ORT int8 against ORT on the fp32 source model (the error the
    quantization itself makes), on the benchmark feeds; with top1 > 0 and a CNN, the fraction of
    top1 further random inputs (seeds 100..) whose argmax agrees, onyx vs ORT and ORT int8 vs
    fp32."""
    import numpy as np

    label = f"{name} t={threads}"
    progress.show(f"{label}: int8 accuracy (ORT fp32 reference)")
    feeds = quantized.make_feeds(name)
    acc = {"model": name, "threads": threads}
    ref = make_session("ort", src_path, threads)
    fp32 = ref.run(None, feeds)
    acc["fp32_max_abs"] = max(float(np.max(np.abs(o))) for o in fp32)
    if "ort" in outs:
        acc["ort_int8_vs_fp32_max_abs_diff"] = max_abs_diff(outs["ort"], fp32)
    if "onyx" in outs and "ort" in outs:
        acc["onyx_vs_ort_max_abs_diff"] = max_abs_diff(outs["onyx"], outs["ort"])
    # The same in quantization steps, over the outputs a DequantizeLinear produces (the largest).
    steps = output_steps(path)
    for key, a, b in (("onyx_vs_ort_steps", "onyx", "ort"), ("ort_int8_vs_fp32_steps", "ort", None)):
        if a not in outs or (b and b not in outs):
            continue
        other = outs[b] if b else fp32
        worst = [max_abs_diff([x], [y]) / st for x, y, st in zip(outs[a], other, steps) if st]
        if worst:
            acc[key] = max(worst)
    if top1 <= 0 or quantized.source(name) not in models.LIGHT + ["mobilenet_v2"]:
        return acc
    sessions = {"fp32": ref}
    for e in ("onyx", "ort"):
        if e in outs:  # not refused in the benchmark run
            sessions[e] = make_session(e, path, threads)
    top = {e: [] for e in sessions}
    for i in range(top1):
        progress.show(f"{label}: top-1 agreement {i + 1}/{top1}")
        x = quantized.make_feeds(name, seed=100 + i)
        for e, sess in sessions.items():
            top[e].append(int(np.argmax(sess.run(None, x)[0])))
    agree = lambda a, b: sum(x == y for x, y in zip(top[a], top[b])) / top1  # noqa: E731
    acc["top1_inputs"] = top1
    if "onyx" in top and "ort" in top:
        acc["top1_onyx_vs_ort"] = agree("onyx", "ort")
    if "ort" in top:
        acc["top1_ort_int8_vs_fp32"] = agree("ort", "fp32")
    return acc


PEER_NAMES = {"ort": "ORT", "openvino": "OpenVINO", "onyx-bf16": "bf16"}


class BackgroundLoad:
    """`n` processes that each keep a core busy (a Python loop), for at most `seconds`; stopped
    when the `with` block ends, also on an error or Ctrl-C."""

    def __init__(self, n, seconds):
        self.n, self.seconds, self.procs = n, seconds, []

    def __enter__(self):
        code = f"import time\nend = time.time() + {self.seconds}\nwhile time.time() < end:\n    pass\n"
        self.procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(self.n)]
        if self.procs:
            time.sleep(0.5)  # let them reach their loops
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()
        return False


# ---------------------------------------------------------------------------------------------
# Reporting


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def machine_info(peers=("ort",)):
    info = {"python": platform.python_version(), "platform": platform.platform(),
            "cpus": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
        for line in text.splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "model name":
                info.setdefault("cpu", value.strip())
            elif key == "cpu family":
                info.setdefault("cpu_family", int(value))
            elif key == "model":
                info.setdefault("cpu_model", int(value))
            elif key == "cpu MHz":
                info.setdefault("mhz", float(value))
            elif key == "flags":
                flags = value.split()
                info.setdefault("avx512f", "avx512f" in flags)
                info.setdefault("amx", "amx_tile" in flags)
    except OSError:
        pass
    try:
        import onnxruntime

        info["onnxruntime"] = onnxruntime.__version__
    except ImportError:
        pass
    if "openvino" in peers:  # importing it loads its own TBB: only when it runs
        try:
            import openvino

            info["openvino"] = openvino.__version__.split("-")[0]
        except ImportError:
            pass
    try:
        git = ["git", "-C", ROOT]
        commit = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        dirty = subprocess.run(git + ["status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        info["onyx_commit"] = commit + ("+uncommitted changes" if dirty else "")
    except OSError:
        pass
    return info


def fmt(v, spec, missing="-"):
    return missing if v is None else format(v, spec)


def print_table(rows, threads_list, peers=("ort",)):
    w = max([14] + [len(r["model"]) for r in rows])
    head = f"{'model':{w}} {'thr':>3} {'onyx ms':>9}"
    for p in peers:
        n = PEER_NAMES.get(p, p)
        head += f" {n + ' ms':>11} {n + '/onyx':>13}"
    head += (f" {'create onyx':>11} {'create ' + PEER_NAMES.get(peers[0], peers[0]):>15} "
             f"{'RSS onyx':>9} {'RSS ' + PEER_NAMES.get(peers[0], peers[0]):>12} {'max rel diff':>12}")
    print(head)
    print("-" * len(head))
    for r in rows:
        if "error" in r:
            print(f"{r['model']:{w}} {r['threads']:3d}  error: {r['error']}")
            continue
        if "onyx_ms" not in r and not any(p + "_ms" in r for p in peers):
            print(f"{r['model']:{w}} {r['threads']:3d}  refused by every engine (below)")
            continue
        cx, co = r.get("create_onyx", {}), r.get(f"create_{peers[0]}", {})
        line = f"{r['model']:{w}} {r['threads']:3d} {fmt(r.get('onyx_ms'), '9.2f', 'refused'):>9}"
        for p in peers:
            line += (f" {fmt(r.get(p + '_ms'), '11.2f', 'refused'):>11}"
                     f" {fmt(r.get(p + '_ratio'), '13.2f'):>13}")
        line += (f" {fmt(cx.get('create_ms'), '9.0f'):>9}ms {fmt(co.get('create_ms'), '13.0f'):>13}ms "
                 f"{fmt(cx.get('peak_rss_mb'), '7.0f'):>7}MB {fmt(co.get('peak_rss_mb'), '10.0f'):>10}MB "
                 f"{fmt(r.get(peers[0] + '_max_rel_diff'), '12.1e'):>12}")
        print(line)
    print("-" * len(head))
    for r in rows:
        for e, msg in r.get("refused", {}).items():
            print(f"{r['model']} t={r['threads']}: {PEER_NAMES.get(e, e)} refused: {msg}")
    for p in peers:
        n = PEER_NAMES.get(p, p)
        for t in threads_list:
            g = geomean([r.get(f"{p}_ratio") for r in rows if r["threads"] == t])
            lo = min((r[f"{p}_ratio"] for r in rows if r["threads"] == t and f"{p}_ratio" in r),
                     default=None)
            print(f"geomean {n}/onyx at {t} thread{'s' if t > 1 else ''}: {fmt(g, '.2f')} "
                  f"(lowest model: {fmt(lo, '.2f')})")


def print_accuracy(acc_rows):
    """The int8 accuracy table: onyx vs ORT on the int8 model beside ORT int8 vs ORT fp32."""
    if not acc_rows:
        return
    w = max([14] + [len(a["model"]) for a in acc_rows])
    top = any("top1_inputs" in a for a in acc_rows)
    head = (f"{'int8 model':{w}} {'thr':>3} {'onyx-ORT int8':>13} {'ORT int8-fp32':>13} "
            f"{'ratio':>6} {'max |fp32|':>10} {'in steps':>15}")
    if top:
        head += f" {'top1 onyx=ORT':>13} {'top1 ORT8=fp32':>14}"
    print()
    print("int8 accuracy: max abs diff over every output on the benchmark inputs; ratio = "
          "onyx-ORT int8 / ORT int8-fp32 (below 1: onyx is within ORT's own int8-versus-fp32 error);\n"
          "in steps: the same two differences in quantization steps of the outputs a "
          "DequantizeLinear gives (\"float out\": none does, e.g. a final Softmax)")
    print(head)
    print("-" * len(head))
    for a in acc_rows:
        d, q = a.get("onyx_vs_ort_max_abs_diff"), a.get("ort_int8_vs_fp32_max_abs_diff")
        if "error" in a:
            print(f"{a['model']:{w}} {a['threads']:3d}  error: {a['error']}")
            continue
        so, sq = a.get("onyx_vs_ort_steps"), a.get("ort_int8_vs_fp32_steps")
        steps = f"{so:.1f} / {sq:.1f}" if so is not None and sq is not None else "float out"
        line = (f"{a['model']:{w}} {a['threads']:3d} {fmt(d, '13.3g', 'refused'):>13} "
                f"{fmt(q, '13.3g'):>13} {fmt(d / q if d is not None and q else None, '6.2f'):>6} "
                f"{fmt(a.get('fp32_max_abs'), '10.3g'):>10} {steps:>15}")
        if top:
            n = a.get("top1_inputs")
            of = lambda v: "-" if v is None else f"{v:.0%} of {n}"  # noqa: E731
            line += f" {of(a.get('top1_onyx_vs_ort')):>13} {of(a.get('top1_ort_int8_vs_fp32')):>14}"
        print(line)


def write_png(rows, threads_list, path, title, peer="ort"):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = []
    for r in rows:
        if r["model"] not in names:
            names.append(r["model"])
    labels = names + ["geomean"]
    fig, ax = plt.subplots(figsize=(max(7.0, 1.1 * len(labels) + 2), 4.5), dpi=110)
    width = 0.8 / len(threads_list)
    for k, t in enumerate(threads_list):
        vals = []
        for n in names:
            r = next((r for r in rows if r["model"] == n and r["threads"] == t), {})
            vals.append(r.get(f"{peer}_ratio") or 0)
        vals.append(geomean([r.get(f"{peer}_ratio") for r in rows if r["threads"] == t]) or 0)
        xs = [i + (k - (len(threads_list) - 1) / 2) * width for i in range(len(labels))]
        ax.bar(xs, vals, width, label=f"{t} thread{'s' if t > 1 else ''}")
        for x, v in zip(xs, vals):
            ax.text(x, v, f"{v:.2f}", ha="center", va="bottom", fontsize=7)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(1.2, color="green", linewidth=0.8, linestyle="--", label="target 1.2")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=20, ha="right")
    ax.set_ylabel(f"{PEER_NAMES.get(peer, peer)} median / onyx median  (> 1: onyx faster)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--probe":
        engine, path, name, threads = sys.argv[2:6]
        probe_main(engine, path, name, int(threads))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=None,
                    help="comma-separated (default: all fp32 models): " + ",".join(models.MODELS)
                    + "; int8: " + ",".join(quantized.INT8))
    ap.add_argument("--int8", action="store_true",
                    help="add the int8 models (all six; alone: only them), built by "
                         "bench/models/quantized.py")
    ap.add_argument("--top1", type=int, default=0, metavar="N",
                    help="int8 CNNs: top-1 agreement onyx vs ORT on N random inputs (default 0: off)")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--runs", type=int, default=20,
                    help="timed runs per engine, at least (default 20; see --min-seconds)")
    ap.add_argument("--min-seconds", type=float, default=2.0,
                    help="more timed runs where fewer than this many seconds of them per engine "
                         "(at the first block's speed, up to 2000 runs): short models' medians do not "
                         "hang on a second of the host's other work (default 2; 0: --runs only)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs per engine first (default 3)")
    ap.add_argument("--gap-ms", type=float, default=50.0,
                    help="pause after each block so spinning worker threads go idle (default 50)")
    ap.add_argument("--block", type=int, default=5,
                    help="timed runs per engine back to back before switching (default 5)")
    ap.add_argument("--models-dir", default=models.DEFAULT_OUT,
                    help="where the generated models are (built there when missing)")
    ap.add_argument("--json", default=os.path.join(RESULTS, "compare.json"),
                    help="report file (default bench/results/compare.json; '' for none)")
    ap.add_argument("--png", default=os.path.join(RESULTS, "compare.png"),
                    help="bar chart of the ratios (default bench/results/compare.png; '' for none)")
    ap.add_argument("--no-probe", action="store_true",
                    help="skip the session-creation and memory subprocesses")
    ap.add_argument("--peers", default="ort",
                    help="engines to compare with: ort, openvino or both (default ort)")
    ap.add_argument("--bf16", action="store_true",
                    help="also time onyx with precision bf16 (the 'bf16' columns: its ms and "
                         "bf16/onyx = bf16 ms / fp32 ms; its max rel diff to fp32 in the JSON)")
    ap.add_argument("--load", type=int, default=0,
                    help="keep N cores busy with spinning processes while timing (default 0)")
    ap.add_argument("--load-seconds", type=float, default=3600,
                    help="each load process ends by itself after this long (default 3600)")
    args = ap.parse_args()
    peers = tuple(p for p in args.peers.split(",") if p)
    bad = [p for p in peers if p not in PEER_NAMES or p == "onyx-bf16"]
    if bad or not peers:
        ap.error(f"--peers takes ort and/or openvino, got '{args.peers}'")
    if args.bf16:
        peers += ("onyx-bf16",)
    if "openvino" in peers:
        try:
            import openvino  # noqa: F401
        except ImportError:
            ap.error("--peers openvino needs the openvino package: "
                     ".venv/bin/pip install -r scripts/requirements-bench.txt")
    if args.load < 0:
        ap.error("--load must be >= 0")
    if args.models is None:
        names = [] if args.int8 else list(models.MODELS)
    else:
        names = [m for m in args.models.split(",") if m]
    if args.int8:
        names += [m for m in quantized.INT8 if m not in names]
    known = list(models.MODELS) + quantized.INT8
    unknown = [m for m in names if m not in known]
    if unknown:
        ap.error(f"unknown model '{unknown[0]}'; known: {', '.join(known)}")
    threads_list = [int(t) for t in args.threads.split(",") if t]
    if args.runs < 1 or args.warmup < 0 or not threads_list or min(threads_list) < 1:
        ap.error("--runs must be >= 1, --warmup >= 0, --threads positive")
    if args.min_seconds < 0:
        ap.error("--min-seconds must be >= 0")
    if args.top1 < 0:
        ap.error("--top1 must be >= 0")

    log = lambda s: print(s, file=sys.stderr)  # noqa: E731
    fp32 = [m for m in names if m in models.MODELS]
    int8 = [m for m in names if m in quantized.VARIANTS]
    built = dict(zip(fp32, models.ensure_models(args.models_dir, fp32, log=log) if fp32 else []))
    built.update(zip(int8, quantized.ensure(args.models_dir, int8, log=log) if int8 else []))
    paths = [built[m] for m in names]
    machine = machine_info(peers)
    load_start = os.getloadavg()
    per_task = args.warmup + args.runs + (0 if args.no_probe else 1 + len(peers))
    progress = Progress(len(names) * len(threads_list) * per_task)
    rows, acc_rows = [], []
    t_start = time.perf_counter()
    for name, path in zip(names, paths):
        for t in threads_list:
            row = {"model": name, "threads": t}
            outs = {}
            try:
                with BackgroundLoad(args.load, args.load_seconds):
                    row.update(bench_pair(path, name, t, args.runs, args.warmup, args.gap_ms / 1e3,
                                          progress, block=args.block, peers=peers, outputs=outs,
                                          min_seconds=args.min_seconds))
            except Exception as e:  # an engine that cannot run the model: report, go on
                row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
                progress.step(f"{name} t={t}: failed", args.warmup + args.runs)
            if name in quantized.VARIANTS and t == threads_list[0]:
                src = models.model_path(args.models_dir, quantized.source(name))
                try:
                    acc_rows.append(int8_accuracy(name, path, src, t, outs, args.top1, progress))
                except Exception as e:  # noqa: BLE001 (e.g. onyx fails on another input)
                    acc_rows.append({"model": name, "threads": t,
                                     "error": f"{type(e).__name__}: {first_line(e)}"})
            if not args.no_probe:
                for engine in ("onyx",) + peers:
                    progress.show(f"{name} t={t}: session creation / memory ({engine})")
                    row[f"create_{engine}"] = probe(engine, path, name, t)
                    progress.step(f"{name} t={t}: probed {engine}")
            rows.append(row)
            if "error" in row:
                progress.log(f"{name} t={t}: error: {row['error']}")
            elif "refused" not in row:
                progress.log(f"{name} t={t}: onyx {row['onyx_ms']:.2f} ms, " + ", ".join(
                    f"{PEER_NAMES[p]} {row[p + '_ms']:.2f} ms ({PEER_NAMES[p]}/onyx "
                    f"{row[p + '_ratio']:.2f})" for p in peers))
            else:
                progress.log(f"{name} t={t}: " + ", ".join(
                    f"{PEER_NAMES.get(e, e)} refused: {row['refused'][e]}" if e in row["refused"]
                    else f"{PEER_NAMES.get(e, e)} {row[e + '_ms']:.2f} ms" for e in ("onyx",) + peers))
    progress.close()
    load_end = os.getloadavg()

    print()
    if args.load:
        print(f"(with {args.load} core{'s' if args.load > 1 else ''} kept busy by a spinning "
              f"process while timing: --load {args.load})")
    print_table(rows, threads_list, peers)
    base = [r[f"create_{e}"].get("rss_before_mb") for r in rows for e in ("onyx", "ort")
            if isinstance(r.get(f"create_{e}"), dict) and "rss_before_mb" in r[f"create_{e}"]]
    if base:
        print(f"(RSS: peak resident memory of a process that created the session and ran it once; "
              f"the process held {min(base):.0f}-{max(base):.0f} MB before creating the session)")
    print(f"load average {load_start[0]:.1f} at start, {load_end[0]:.1f} at end "
          f"(other processes on this machine add noise)")
    print_accuracy(acc_rows)

    summary = {str(t): geomean([r.get(f"{peers[0]}_ratio") for r in rows if r["threads"] == t])
               for t in threads_list}
    by_peer = {p: {str(t): geomean([r.get(f"{p}_ratio") for r in rows if r["threads"] == t])
                   for t in threads_list} for p in peers}
    report = {
        "command": " ".join(
            ([f"ONYX_BUILD_DIR={os.environ['ONYX_BUILD_DIR']}"] if "ONYX_BUILD_DIR" in os.environ else [])
            + [os.path.relpath(sys.executable, ROOT) if sys.executable.startswith(ROOT) else sys.executable,
               os.path.relpath(os.path.abspath(__file__), ROOT)] + sys.argv[1:]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "settings": {"runs": args.runs, "min_seconds": args.min_seconds, "warmup": args.warmup,
                     "gap_ms": args.gap_ms,
                     "threads": threads_list, "models": names, "peers": list(peers),
                     "load": args.load},
        "machine": machine,
        "load_average": {"start": load_start, "end": load_end},
        "elapsed_s": time.perf_counter() - t_start,
        "geomean_ratio": summary,
        "geomean_ratio_by_peer": by_peer,
        "results": rows,
    }
    if acc_rows:
        report["settings"]["top1"] = args.top1
        report["int8_accuracy"] = acc_rows
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
        print(f"wrote {args.json}")
    if args.png:
        try:
            os.makedirs(os.path.dirname(os.path.abspath(args.png)), exist_ok=True)
            peer = "ONNX Runtime " + machine.get("onnxruntime", "") if peers[0] == "ort" else \
                PEER_NAMES[peers[0]] + " " + machine.get("openvino", "")
            counts = sorted({r["runs"] for r in rows if "runs" in r}) or [args.runs]
            n = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
            title = (f"onyx vs {peer}: median of {n} runs, alternating"
                     f"{f', {args.load} cores busy' if args.load else ''}\n"
                     f"{machine.get('cpu', '?')}, {os.cpu_count()} cores; {report['date'][:10]}")
            write_png(rows, threads_list, args.png, title, peers[0])
            print(f"wrote {args.png}")
        except ImportError:
            print("matplotlib is not installed: no PNG (scripts/setup.sh installs it)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
