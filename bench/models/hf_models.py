#!/usr/bin/env python3
"""GPT-2 and BERT from small random `transformers` configs, exported by torch.onnx.export with
both exporters, for the dynamic-shape benchmarks (issue 14). Nothing is downloaded.

    PYTHONPATH=build/python .venv/bin/python bench/models/hf_models.py [--out DIR]
        [--models gpt2_past_ts,gpt2_past_dynamo,bert_ts,bert_dynamo] [--force] [--no-check]

Needs the extra packages of scripts/requirements-bench.txt (torch, transformers, onnxscript).
Writes into bench/models/out/ by default:

  gpt2_past_ts.onnx, gpt2_past_dynamo.onnx
      GPT-2 (2 layers, hidden 256, 4 heads, vocabulary 50257, n_positions 1024), a decoder with
      its key/value cache. Inputs: input_ids int64 [batch, seq], attention_mask int64
      [batch, past_seq + seq], past_key_values.{i}.key / .value float32
      [batch, 4, past_seq, 64]; outputs: logits [batch, seq, 50257], present.{i}.key / .value
      [batch, 4, past_seq + seq, 64]. All of batch, seq, past_seq are symbolic. The first step
      (prefill) is the same model fed a past of length 0, so no separate no-past model is made.
  bert_ts.onnx, bert_dynamo.onnx
      BERT encoder (4 layers, hidden 256, 4 heads, FFN 1024, vocabulary 30522). Inputs:
      input_ids, attention_mask, token_type_ids int64 [batch, seq]; outputs last_hidden_state
      [batch, seq, 256] and pooler_output [batch, 256].

"ts" files come from the TorchScript exporter (dynamo=False, dynamic_axes, opset 17), "dynamo"
files from torch.export (dynamo=True, dynamic_shapes, opset 18, onnxscript's optimizer). Weights
are random (torch.manual_seed per model), so the files are the same on every run of the same
package versions.

How the cache is exported: transformers 5 takes the cache as a `DynamicCache` object (argument
`cache`; tuples of tensors are no longer accepted) and returns one. Neither exporter takes such an
object as a graph input with named, flat tensors, so a thin wrapper module (`_GPT2WithPast`)
takes the flat past tensors, builds the DynamicCache inside forward(), and returns the logits and
the flat present tensors (cache.layers[i].keys / .values). The model uses its default attention
(sdpa); both exporters handle it.

Each file is then checked: ONNX Runtime against torch on inputs of a shape other than the
export sample (max abs diff printed), and loaded (and run) by onyx (`onyx.InferenceSession`).
A failure is printed with its message, and the other models go on; the exit status is 1 if any
export or check failed.
"""
import argparse
import os
import sys
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_OUT = os.path.join(HERE, "out")

GPT2 = dict(n_layer=2, n_embd=256, n_head=4, vocab_size=50257, n_positions=1024)
BERT = dict(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, intermediate_size=1024,
            vocab_size=30522)
MODELS = ["gpt2_past_ts", "gpt2_past_dynamo", "bert_ts", "bert_dynamo"]


def gpt2_io_names(n_layer=GPT2["n_layer"]):
    past = [f"past_key_values.{i}.{kv}" for i in range(n_layer) for kv in ("key", "value")]
    present = [f"present.{i}.{kv}" for i in range(n_layer) for kv in ("key", "value")]
    return ["input_ids", "attention_mask"] + past, ["logits"] + present


def gpt2_head_dims():
    return GPT2["n_head"], GPT2["n_embd"] // GPT2["n_head"]


# ---------------------------------------------------------------------------------------------
# torch models


def _gpt2_module():
    import torch
    from transformers import DynamicCache, GPT2Config, GPT2LMHeadModel

    class _GPT2WithPast(torch.nn.Module):
        """GPT2LMHeadModel with flat past/present tensors in place of a DynamicCache."""

        def __init__(self, model):
            super().__init__()
            self.model = model
            self.config = model.config

        def forward(self, input_ids, attention_mask, *past):
            pairs = [(past[2 * i], past[2 * i + 1]) for i in range(len(past) // 2)]
            cache = DynamicCache(ddp_cache_data=pairs, config=self.config)
            out = self.model(input_ids=input_ids, attention_mask=attention_mask, cache=cache,
                             use_cache=True)
            present = []
            for layer in out.past_key_values.layers:
                present += [layer.keys, layer.values]
            return (out.logits, *present)

    torch.manual_seed(1234)
    cfg = GPT2Config(**GPT2)
    return _GPT2WithPast(GPT2LMHeadModel(cfg).eval()).eval()


def _bert_module():
    import torch
    from transformers import BertConfig, BertModel

    class _Bert(torch.nn.Module):
        """BertModel returning a plain tuple (last_hidden_state, pooler_output)."""

        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids)
            return out.last_hidden_state, out.pooler_output

    torch.manual_seed(4321)
    return _Bert(BertModel(BertConfig(**BERT), add_pooling_layer=True).eval()).eval()


def gpt2_inputs(batch, seq, past_len, seed=0):
    """numpy feeds for the GPT-2 decoder: random ids, an all-ones mask, random past."""
    rng = np.random.default_rng(seed)
    heads, hd = gpt2_head_dims()
    feeds = {"input_ids": rng.integers(0, GPT2["vocab_size"], (batch, seq), dtype=np.int64),
             "attention_mask": np.ones((batch, past_len + seq), np.int64)}
    for name in gpt2_io_names()[0][2:]:
        feeds[name] = rng.standard_normal((batch, heads, past_len, hd), dtype=np.float32)
    return feeds


def bert_inputs(batch, seq, seed=0):
    """numpy feeds for BERT: random ids, a mask with the last quarter padded, token types 0/1."""
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), np.int64)
    mask[:, seq - seq // 4:] = 0
    types = np.zeros((batch, seq), np.int64)
    types[:, seq // 2:] = 1
    return {"input_ids": rng.integers(0, BERT["vocab_size"], (batch, seq), dtype=np.int64),
            "attention_mask": mask, "token_type_ids": types}


# ---------------------------------------------------------------------------------------------
# Export


def _export(name, path):
    import torch

    dynamo = name.endswith("_dynamo")
    if name.startswith("gpt2"):
        module = _gpt2_module()
        in_names, out_names = gpt2_io_names()
        feeds = gpt2_inputs(2, 3, 5, seed=1)
        kv_axes = {0: "batch", 2: "past_seq"}
        dyn_axes = {"input_ids": {0: "batch", 1: "seq"},
                    "attention_mask": {0: "batch", 1: "total_seq"},
                    "logits": {0: "batch", 1: "seq"}}
        for n in in_names[2:]:
            dyn_axes[n] = kv_axes
        for n in out_names[1:]:
            dyn_axes[n] = {0: "batch", 2: "total_seq"}
        if dynamo:
            B, S, P = (torch.export.Dim(n) for n in ("batch", "seq", "past_seq"))
            kv = {0: B, 2: P}
            # attention_mask's length is past_seq + seq, which Dim cannot say (only Dim + int);
            # Dim.DYNAMIC lets torch.export work the relation out.
            D = torch.export.Dim.DYNAMIC
            # forward(input_ids, attention_mask, *past): the varargs are one tuple here.
            dyn_shapes = ({0: B, 1: S}, {0: B, 1: D}, tuple(kv for _ in in_names[2:]))
    else:
        module = _bert_module()
        in_names, out_names = ["input_ids", "attention_mask", "token_type_ids"], \
            ["last_hidden_state", "pooler_output"]
        feeds = bert_inputs(2, 16, seed=1)
        dyn_axes = {n: {0: "batch", 1: "seq"} for n in in_names}
        dyn_axes["last_hidden_state"] = {0: "batch", 1: "seq"}
        dyn_axes["pooler_output"] = {0: "batch"}
        if dynamo:
            B, S = torch.export.Dim("batch"), torch.export.Dim("seq")
            dyn_shapes = tuple({0: B, 1: S} for _ in in_names)
    args = tuple(torch.from_numpy(feeds[n]) for n in in_names)
    with torch.no_grad():
        if dynamo:
            prog = torch.onnx.export(module, args, None, dynamo=True, input_names=in_names,
                                     output_names=out_names, dynamic_shapes=dyn_shapes,
                                     opset_version=18, optimize=True, verbose=False)
            prog.save(path, external_data=False)
        else:
            torch.onnx.export(module, args, path, dynamo=False, input_names=in_names,
                              output_names=out_names, dynamic_axes=dyn_axes, opset_version=17,
                              do_constant_folding=True)
    return module, in_names


def _torch_reference(module, in_names, feeds):
    import torch

    with torch.no_grad():
        outs = module(*(torch.from_numpy(feeds[n]) for n in in_names))
    return [o.numpy() for o in outs]


def _check_feeds(name):
    # Shapes other than the export sample, so a dim the exporter froze shows up here; for GPT-2
    # also the prefill (past of length 0) and a one-token step, the two shapes decode.py feeds.
    if name.startswith("gpt2"):
        return [gpt2_inputs(b, s, p, seed=2) for b, s, p in ((1, 4, 7), (1, 8, 0), (1, 1, 9))]
    return [bert_inputs(3, 24, seed=2), bert_inputs(1, 8, seed=3)]


def _max_abs(a_list, b_list):
    worst = 0.0
    for a, b in zip(a_list, b_list):
        if np.shape(a) != np.shape(b):
            raise ValueError(f"shape {np.shape(a)} against {np.shape(b)}")
        worst = max(worst, float(np.max(np.abs(np.asarray(a, np.float64) - b))))
    return worst


def _use_build_module():
    build = os.environ.get("ONYX_BUILD_DIR", os.path.join(ROOT, "build"))
    if os.path.isdir(os.path.join(build, "python", "onyx")):
        sys.path[:0] = [os.path.join(build, "python")]


def _first_line(e):
    """The message of e in one line (for torch's export errors: the exception summary)."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    if "## Exception summary" in lines and lines.index("## Exception summary") + 1 < len(lines):
        lines = lines[lines.index("## Exception summary") + 1:]
    return f"{type(e).__name__}: {lines[0][:400]}" if lines else type(e).__name__


def check(name, path, module, in_names):
    """ORT against torch, then onyx load + run; returns a list of failure strings."""
    import onnxruntime as ort

    failures = []
    cases = _check_feeds(name)
    refs = [_torch_reference(module, in_names, f) for f in cases]
    shapes = ", ".join("x".join(map(str, f["input_ids"].shape)) + (
        f"+past{f[in_names[2]].shape[2]}" if name.startswith("gpt2") else "") for f in cases)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    try:
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        diff = max(_max_abs(sess.run(None, {n: f[n] for n in in_names}), r)
                   for f, r in zip(cases, refs))
        print(f"  {name}: ORT vs torch max abs diff {diff:.2e} (input_ids {shapes})")
    except Exception as e:  # report and go on with the other checks
        failures.append(f"{name}: ORT: {_first_line(e)}")
        print(f"  {name}: ORT FAILED: {_first_line(e)}")
    _use_build_module()
    try:
        import onyx

        sess = onyx.InferenceSession(path)
        print(f"  {name}: onyx loads it (inputs {[i.name for i in sess.get_inputs()]})")
        diff = max(_max_abs(sess.run(None, {n: f[n] for n in in_names}), r)
                   for f, r in zip(cases, refs))
        print(f"  {name}: onyx vs torch max abs diff {diff:.2e} (input_ids {shapes})")
    except Exception as e:
        failures.append(f"{name}: onyx: {_first_line(e)}")
        print(f"  {name}: onyx FAILED: {_first_line(e)}")
    return failures


def ensure(names, out_dir, force=False, do_check=True, log=print):
    """Exports the models missing from out_dir (or all with force); returns their paths and the
    failures (strings)."""
    os.makedirs(out_dir, exist_ok=True)
    paths, failures = [], []
    for name in names:
        if name not in MODELS:
            raise ValueError(f"unknown model '{name}'; known: {', '.join(MODELS)}")
        path = os.path.join(out_dir, f"{name}.onnx")
        paths.append(path)
        if os.path.exists(path) and not force:
            continue
        log(f"exporting {name} -> {path}")
        try:
            module, in_names = _export(name, path)
        except Exception as e:
            traceback.print_exc()
            failures.append(f"{name}: export: {_first_line(e)}")
            log(f"  {name}: export FAILED: {_first_line(e)}")
            continue
        log(f"  {name}: {os.path.getsize(path) / 2**20:.1f} MiB")
        if do_check:
            failures += check(name, path, module, in_names)
    return paths, failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT, help="output folder (default bench/models/out)")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated: " + ",".join(MODELS))
    ap.add_argument("--force", action="store_true", help="re-export files that exist")
    ap.add_argument("--no-check", action="store_true", help="skip the ORT / onyx checks")
    args = ap.parse_args()
    names = [m for m in args.models.split(",") if m]
    try:
        _, failures = ensure(names, args.out, force=args.force, do_check=not args.no_check)
    except ValueError as e:
        ap.error(str(e))
    if failures:
        print("\nFAILURES:")
        for f in failures:
            print("  " + f)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
