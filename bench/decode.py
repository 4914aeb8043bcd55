#!/usr/bin/env python3
"""Greedy decode with a key/value cache, onyx against ONNX Runtime (issue 14).

    PYTHONPATH=build/python .venv/bin/python bench/decode.py [MODEL] [--steps 64]
        [--threads 1,2] [--loops 3] [--cold 1] [--prompt 8] [--mem-steps N] [--no-memory]
        [--max-rss-mb 6144] [--gap-ms 50] [--json FILE]

MODEL: gpt2_past_ts (default) or gpt2_past_dynamo (made by bench/models/hf_models.py in
bench/models/out/ when missing), or the path of a decoder with the same inputs and outputs:
input_ids [batch, seq], attention_mask [batch, past + seq], past_key_values.{i}.key/.value
[batch, heads, past, head_dim] -> logits [batch, seq, vocab], present.{i}.key/.value.

The loop: a fixed prompt of --prompt token ids (seeded RNG) with an empty past (length 0), then
--steps - 1 one-token steps, each feeding the argmax of the last logits and the previous step's
present tensors as past; --steps runs in all, every one at a new past length.

Timing, both engines in this process, per thread count:
  cold  a fresh session per engine runs the loop once, so every shape is new to it (--cold N: N
        fresh sessions each); per-step latency = median over the one-token steps, with the
        first (prompt) step shown apart.
  warm  the same loop --loops more times on those sessions (every shape now seen); median per
        step over all of them.
Engines alternate loop by loop (the order flips each loop), with a --gap-ms pause after each so
one engine's spinning worker threads are idle when the other runs. The generated tokens of every
loop are compared with ORT's first loop; a mismatch is printed with the step and ORT's margin
between its best two logits there.

Memory, each engine in its own subprocess (so the resident set is that engine's alone): VmRSS
(/proc/self/status) after creating the session, after the first step, after one cold loop of
--mem-steps steps (default --steps) and after one more (warm) loop; "growth" is the resident set
after the cold loop minus after the first step. A process stops its loop once its resident set
passes --max-rss-mb (default 6144), and says so, so a leaking engine cannot take the machine down;
the in-process timing loops obey the same cap.

Issue 14's figures: `--steps 64` (default) for latency and tokens at 1 and 2 threads, and
`--steps 400` (or `--mem-steps 400 --steps 64`) for the memory growth. With the defaults the run
takes about a minute with ORT-speed engines (a slow onyx on new shapes adds its cold time).
onyx is taken from $ONYX_BUILD_DIR/python (default build/python) when that exists, copied to a
temporary folder at the start (--no-snapshot: used in place) so a rebuild during the run does
not touch it.
"""
import argparse
import datetime
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

ENGINES = ("onyx", "ort")
NAMED = ("gpt2_past_ts", "gpt2_past_dynamo")


def onyx_build():
    """Where the onyx module comes from and when it was built (the build tree changes under a
    benchmark while someone works on it)."""
    import glob

    import onyx

    sos = glob.glob(os.path.join(os.path.dirname(onyx.__file__), "_onyx*.so"))
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(os.path.getmtime(sos[0]))) if sos else "?"
    where = os.path.dirname(onyx.__file__)
    return f"{os.path.relpath(where, ROOT) if where.startswith(ROOT) else where} (built {when})"


def snapshot_onyx():
    """Copies the onyx module of $ONYX_BUILD_DIR (default build) to a temporary folder and points
    $ONYX_BUILD_DIR there, for this process and its subprocesses: a rebuild of the shared build
    tree during a run then neither mixes two builds in one report nor pulls the extension
    module from under a running process."""
    import shutil
    import tempfile

    build = os.environ.get("ONYX_BUILD_DIR", os.path.join(ROOT, "build"))
    src = os.path.join(build, "python", "onyx")
    if not os.path.isdir(src):
        return
    dst = tempfile.mkdtemp(prefix="onyx-bench-")
    shutil.copytree(src, os.path.join(dst, "python", "onyx"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    os.environ["ONYX_BUILD_DIR"] = dst
    import atexit

    atexit.register(shutil.rmtree, dst, ignore_errors=True)


def rss_mb(field="VmRSS"):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def write_report(path, model, args, load_start, load_end, **results):
    """Writes the run's JSON report: the command, date, machine, onyx build, load and `results`."""
    exe = sys.executable
    command = [os.path.relpath(exe, ROOT) if exe.startswith(ROOT) else exe,
               os.path.relpath(os.path.abspath(sys.argv[0]), ROOT)] + sys.argv[1:]
    report = {
        "command": " ".join(command),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "model": model, "settings": vars(args), "machine": compare.machine_info(),
        "onyx_build": onyx_build(), "load_average": {"start": load_start, "end": load_end},
        **results,
    }
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as fh:
        json.dump(report, fh, indent=1)
    print(f"wrote {path}")


def resolve_model(model):
    if os.path.exists(model):
        return os.path.abspath(model)
    if model in NAMED:
        import hf_models  # noqa: PLC0415 (needs torch; only when a model must be exported)

        path = os.path.join(hf_models.DEFAULT_OUT, model + ".onnx")
        if not os.path.exists(path):
            _, failures = hf_models.ensure([model], hf_models.DEFAULT_OUT,
                                           log=lambda s: print(s, file=sys.stderr))
            if not os.path.exists(path):
                raise SystemExit(f"could not export {model}: {failures}")
        return path
    raise SystemExit(f"no model '{model}' (a path, or one of {', '.join(NAMED)})")


class Decoder:
    """The decoder's input/output names and cache dims, read from the session."""

    def __init__(self, sess):
        ins = sess.get_inputs()
        self.past_names = [i.name for i in ins if i.name.startswith("past_key_values.")]
        self.has_mask = any(i.name == "attention_mask" for i in ins)
        shape = next(i.shape for i in ins if i.name in self.past_names)
        self.heads, self.head_dim = int(shape[1]), int(shape[3])
        outs = [o.name for o in sess.get_outputs()]
        # present.{i}.key answers past_key_values.{i}.key
        self.present_index = [outs.index(n.replace("past_key_values.", "present.")) for n in self.past_names]
        self.logits_index = outs.index("logits")


def prompt_ids(n, seed=0, vocab=50257):
    return np.random.default_rng(seed).integers(0, vocab, (1, n), dtype=np.int64)


def decode_loop(sess, dec, prompt, steps, max_rss_mb, on_step=None):
    """One greedy decode of `steps` runs; returns (tokens, per-step ms, margins, stopped_at)."""
    ids = prompt
    past = {n: np.zeros((1, dec.heads, 0, dec.head_dim), np.float32) for n in dec.past_names}
    past_len = 0
    tokens, times, margins = [], [], []
    for step in range(steps):
        feeds = {"input_ids": ids, **past}
        if dec.has_mask:
            feeds["attention_mask"] = np.ones((1, past_len + ids.shape[1]), np.int64)
        t0 = time.perf_counter()
        outs = sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
        last = outs[dec.logits_index][0, -1]
        tok = int(np.argmax(last))
        top2 = np.partition(last, -2)[-2:]
        margins.append(float(abs(top2[1] - top2[0])))
        tokens.append(tok)
        past_len += ids.shape[1]
        past = {n: outs[k] for n, k in zip(dec.past_names, dec.present_index)}
        ids = np.array([[tok]], np.int64)
        if on_step:
            on_step(step)
        if max_rss_mb and rss_mb() > max_rss_mb:
            return tokens, times, margins, step + 1
    return tokens, times, margins, None


def per_step(times):
    """(prompt-step ms, median ms over the one-token steps)."""
    rest = times[1:]
    return times[0], (statistics.median(rest) if rest else float("nan"))


def compare_tokens(label, tokens, ref, margins):
    n = min(len(tokens), len(ref))
    for i in range(n):
        if tokens[i] != ref[i]:
            print(f"  TOKEN MISMATCH {label}: step {i}: {tokens[i]} vs ORT {ref[i]} "
                  f"(ORT's top-2 logit margin there {margins[i]:.2e})", flush=True)
            return i
    return None


# ---------------------------------------------------------------------------------------------
# Timing (both engines, this process)


def bench_threads(path, threads, args, prompt):
    gap = args.gap_ms / 1e3
    row = {"threads": threads}
    ref_tokens = ref_margins = None
    cold = {e: [] for e in ENGINES}     # per cold session: the times list
    warm = {e: [] for e in ENGINES}
    prompt_ms = {e: [] for e in ENGINES}
    stopped = {e: None for e in ENGINES}
    mismatch = {e: None for e in ENGINES}
    sessions = {}

    def record(engine, label, tokens, margins):
        nonlocal ref_tokens, ref_margins
        if engine == "ort" and ref_tokens is None:
            ref_tokens, ref_margins = tokens, margins
            return
        if ref_tokens is not None:
            at = compare_tokens(f"{engine} {label} t={threads}", tokens, ref_tokens, ref_margins)
            if at is not None and mismatch[engine] is None:
                mismatch[engine] = at

    pending = []  # onyx loops recorded before ORT's reference exists
    for c in range(args.cold):
        order = ENGINES if c % 2 == 0 else ENGINES[::-1]
        for e in order:
            sessions[e] = None
            sess = compare.make_session(e, path, threads)
            dec = Decoder(sess)
            tokens, times, margins, stop = decode_loop(sess, dec, prompt, args.steps, args.max_rss_mb)
            if stop is not None:
                stopped[e] = stop
                print(f"  {e} t={threads}: cold loop stopped at step {stop}: resident set "
                      f"{rss_mb():.0f} MB passed --max-rss-mb {args.max_rss_mb}", flush=True)
            p, _ = per_step(times)
            prompt_ms[e].append(p)
            cold[e].append(times[1:])
            sessions[e] = (sess, dec)
            pending.append((e, f"cold{c}", tokens, margins))
            time.sleep(gap)
        for item in sorted(pending, key=lambda x: x[0] != "ort"):
            record(*item)
        pending = []
    row["tokens"] = ref_tokens
    for w in range(args.loops):
        order = ENGINES if w % 2 == 1 else ENGINES[::-1]
        for e in order:
            if stopped[e] is not None:
                continue
            sess, dec = sessions[e]
            tokens, times, margins, stop = decode_loop(sess, dec, prompt, args.steps, args.max_rss_mb)
            if stop is not None:
                stopped[e] = stop
            warm[e].extend(times[1:])
            record(e, f"warm{w}", tokens, margins)
            time.sleep(gap)
    del sessions
    for e in ENGINES:
        flat = [t for loop in cold[e] for t in loop]
        row[e] = {
            "cold_prompt_ms": statistics.median(prompt_ms[e]),
            "cold_step_ms": statistics.median(flat) if flat else None,
            "cold_step_max_ms": max(flat) if flat else None,
            "cold_loop_ms": statistics.median(sum(loop) for loop in cold[e]) + statistics.median(prompt_ms[e]),
            "warm_step_ms": statistics.median(warm[e]) if warm[e] else None,
            "stopped_at_step": stopped[e],
            "token_mismatch_at": mismatch[e],
        }
    return row


# ---------------------------------------------------------------------------------------------
# Memory (one engine per subprocess)


def memory_main(engine, path, threads, steps, max_rss_mb, prompt_len):
    compare._use_build_module()
    out = {"engine": engine, "threads": threads, "steps": steps, "rss_start_mb": rss_mb()}
    sess = compare.make_session(engine, path, threads)
    dec = Decoder(sess)
    out["rss_session_mb"] = rss_mb()
    marks = {}

    def on_step(step):
        if step == 0:
            marks["first"] = rss_mb()

    prompt = prompt_ids(prompt_len)
    tokens, _, _, stop = decode_loop(sess, dec, prompt, steps, max_rss_mb, on_step)
    out["rss_first_step_mb"] = marks.get("first")
    out["rss_cold_loop_mb"] = rss_mb()
    out["steps_done"] = len(tokens)
    out["stopped_at_step"] = stop
    if stop is None:
        _, _, _, stop2 = decode_loop(sess, dec, prompt, steps, max_rss_mb)
        out["rss_warm_loop_mb"] = rss_mb()
        out["stopped_in_warm_loop_at_step"] = stop2
    out["peak_rss_mb"] = rss_mb("VmHWM")
    out["growth_mb"] = out["rss_cold_loop_mb"] - out["rss_first_step_mb"]
    out["tokens"] = tokens
    print(json.dumps(out))


def memory_probe(engine, path, threads, steps, max_rss_mb, prompt_len):
    cmd = [sys.executable, os.path.abspath(__file__), "--memory-probe", engine, path, str(threads),
           str(steps), str(max_rss_mb), str(prompt_len)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        return {"error": f"exit status {p.returncode}: {tail}"}
    return json.loads(p.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------


def f(v, spec):
    """v formatted by spec, or a "-" as wide."""
    width = int(spec.split(".")[0] or 0)
    return "-".rjust(width) if v is None else format(v, spec)


def print_tables(rows, mem, args):
    print(f"\nPer-step latency, ms (median over the one-token steps; {args.steps} steps, prompt "
          f"{args.prompt} tokens; cold: {args.cold} fresh session(s), warm: {args.loops} loop(s))")
    head = (f"{'thr':>3} | {'cold onyx':>9} {'cold ORT':>9} {'ORT/onyx':>8} | {'warm onyx':>9} "
            f"{'warm ORT':>9} {'ORT/onyx':>8} | {'prompt onyx':>11} {'prompt ORT':>10} | "
            f"{'cold max onyx':>13} {'cold max ORT':>12} | tokens")
    print(head)
    print("-" * len(head))
    for r in rows:
        x, o = r["onyx"], r["ort"]
        rc = o["cold_step_ms"] / x["cold_step_ms"] if x["cold_step_ms"] else None
        rw = o["warm_step_ms"] / x["warm_step_ms"] if x["warm_step_ms"] and o["warm_step_ms"] else None
        tok = "identical" if x["token_mismatch_at"] is None else f"DIFFER at step {x['token_mismatch_at']}"
        if x["stopped_at_step"] is not None:
            tok += f" (onyx stopped at step {x['stopped_at_step']}: RSS cap)"
        print(f"{r['threads']:3d} | {f(x['cold_step_ms'], '9.2f')} {f(o['cold_step_ms'], '9.2f')} "
              f"{f(rc, '8.2f')} | {f(x['warm_step_ms'], '9.2f')} {f(o['warm_step_ms'], '9.2f')} "
              f"{f(rw, '8.2f')} | {f(x['cold_prompt_ms'], '11.2f')} {f(o['cold_prompt_ms'], '10.2f')} | "
              f"{f(x['cold_step_max_ms'], '13.2f')} {f(o['cold_step_max_ms'], '12.2f')} | {tok}")
    if not mem:
        return
    print(f"\nResident memory, MB (each engine in its own process; {args.mem_steps}-step loop)")
    head = (f"{'engine':6} {'thr':>3} | {'session':>8} {'1st step':>8} {'cold loop':>9} "
            f"{'warm loop':>9} {'peak':>7} | {'growth':>7} | note")
    print(head)
    print("-" * len(head))
    for m in mem:
        if "error" in m:
            print(f"{m['engine']:6} {m['threads']:3d} | error: {m['error']}")
            continue
        note = ""
        if m["stopped_at_step"] is not None:
            note = f"stopped at step {m['stopped_at_step']} of {m['steps']} (--max-rss-mb)"
        print(f"{m['engine']:6} {m['threads']:3d} | {m['rss_session_mb']:8.0f} "
              f"{m['rss_first_step_mb']:8.0f} {m['rss_cold_loop_mb']:9.0f} "
              f"{f(m.get('rss_warm_loop_mb'), '9.0f')} {m['peak_rss_mb']:7.0f} | "
              f"{m['growth_mb']:+7.0f} | {note}")
    print("(growth: after the cold loop minus after the first step; MB = 2^20 bytes)")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--memory-probe":
        engine, path, threads, steps, cap, plen = sys.argv[2:8]
        memory_main(engine, path, int(threads), int(steps), float(cap), int(plen))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default="gpt2_past_ts",
                    help="gpt2_past_ts (default), gpt2_past_dynamo, or a path")
    ap.add_argument("--steps", type=int, default=64, help="runs per decode loop (default 64)")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--loops", type=int, default=3, help="warm loops per engine (default 3)")
    ap.add_argument("--cold", type=int, default=1, help="fresh sessions (cold loops) per engine (default 1)")
    ap.add_argument("--prompt", type=int, default=8, help="prompt length in tokens (default 8)")
    ap.add_argument("--mem-steps", type=int, default=None, help="steps of the memory loop (default --steps)")
    ap.add_argument("--no-memory", action="store_true", help="skip the memory subprocesses")
    ap.add_argument("--max-rss-mb", type=float, default=6144,
                    help="stop a loop once the process's resident set passes this (default 6144; 0: no cap)")
    ap.add_argument("--gap-ms", type=float, default=50.0, help="pause after each loop (default 50)")
    ap.add_argument("--json", default="", help="write the results to this file")
    ap.add_argument("--no-snapshot", action="store_true",
                    help="load onyx from the build tree itself, not from a copy made at the start")
    args = ap.parse_args()
    threads_list = [int(t) for t in args.threads.split(",") if t]
    if args.steps < 2 or args.loops < 0 or args.cold < 1 or not threads_list or min(threads_list) < 1:
        ap.error("--steps >= 2, --loops >= 0, --cold >= 1, --threads positive")
    args.mem_steps = args.mem_steps or args.steps
    path = resolve_model(args.model)
    if not args.no_snapshot:
        snapshot_onyx()
    compare._use_build_module()
    prompt = prompt_ids(args.prompt)
    load_start = os.getloadavg()
    t_start = time.perf_counter()
    rows, mem = [], []
    for t in threads_list:
        print(f"timing t={t} ...", file=sys.stderr, flush=True)
        rows.append(bench_threads(path, t, args, prompt))
    if not args.no_memory:
        for t in threads_list:
            for e in ENGINES:
                print(f"memory {e} t={t} ...", file=sys.stderr, flush=True)
                m = memory_probe(e, path, t, args.mem_steps, args.max_rss_mb, args.prompt)
                m.setdefault("engine", e)
                m.setdefault("threads", t)
                mem.append(m)
        ref = next((m.get("tokens") for m in mem if m["engine"] == "ort" and "tokens" in m), None)
        for m in mem:
            if m["engine"] == "onyx" and ref and "tokens" in m:
                n = min(len(ref), len(m["tokens"]))
                if m["tokens"][:n] != ref[:n]:
                    print(f"  TOKEN MISMATCH in the memory loop, onyx t={m['threads']}")
    print(f"model: {os.path.relpath(path, ROOT) if path.startswith(ROOT) else path}; onyx: {onyx_build()}")
    print_tables(rows, mem, args)
    load_end = os.getloadavg()
    print(f"load average {load_start[0]:.1f} at start, {load_end[0]:.1f} at end; "
          f"{time.perf_counter() - t_start:.0f} s")
    if args.json:
        write_report(args.json, path, args, load_start, load_end, timing=rows, memory=mem)
    bad = any(r[e]["token_mismatch_at"] is not None for r in rows for e in ENGINES)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
