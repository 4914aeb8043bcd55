#!/usr/bin/env python3
"""Builds the benchmark models with random weights, without any download.

    .venv/bin/python bench/models/make_bench_models.py [OUT_DIR] [--models resnet50,bert_base]
                                                       [--force] [--no-validate] [--list]

Models: the onnx package's light models (ResNet-50, DenseNet-121, Inception-v1, SqueezeNet,
ShuffleNet, VGG-19) with their ConstantOfShape weights replaced by random initializers, a
MobileNetV2 and a BERT-base encoder. Every model is seeded by its name, so a subset build gives
the same weights as a full one. Each new model is checked with onnx.checker and run once by
ONNX Runtime (outputs must be finite). Models already built by this generator version are
skipped; OUT_DIR/manifest.json records what was built. OUT_DIR defaults to bench/models/out.
"""
import argparse
import json
import os
import sys
import time
import zlib

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bert_base  # noqa: E402
import light_random  # noqa: E402
import mobilenet_v2  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, "out")
# Bump when a builder changes, so stale files are rebuilt.
GENERATOR_VERSION = 4

LIGHT = ["resnet50", "densenet121", "inception_v1", "squeezenet", "shufflenet", "vgg19"]
MODELS = LIGHT + ["mobilenet_v2", "bert_base"]


def _image_input_name(name):
    if name == "mobilenet_v2":
        return "input"
    m = onnx.load(os.path.join(light_random.LIGHT_DIR, f"light_{name}.onnx"))
    inits = {t.name for t in m.graph.initializer}
    return next(vi.name for vi in m.graph.input if vi.name not in inits)


def make_feeds(name, seed=0):
    """The inputs every benchmark feeds `name`: an image in [0, 1), or token ids with a mask
    whose last 16 positions are padding."""
    rng = np.random.default_rng(seed)
    if name == "bert_base":
        mask = np.ones((bert_base.BATCH, bert_base.SEQ), np.int64)
        mask[:, -16:] = 0
        ids = rng.integers(0, bert_base.VOCAB, (bert_base.BATCH, bert_base.SEQ), dtype=np.int64)
        return {"input_ids": ids, "attention_mask": mask}
    return {_image_input_name(name): rng.random((1, 3, 224, 224), dtype=np.float32)}


def model_path(out_dir, name):
    return os.path.join(out_dir, f"{name}.onnx")


def _build(name):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    if name in LIGHT:
        return light_random.build(name, rng)
    if name == "mobilenet_v2":
        return mobilenet_v2.build(rng)
    if name == "bert_base":
        return bert_base.build(rng)
    raise ValueError(f"unknown model '{name}'; known: {', '.join(MODELS)}")


def _validate(path, name):
    """One ONNX Runtime run on the benchmark feeds; returns a summary, raises if not finite."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    outs = sess.run(None, make_feeds(name))
    for o, v in zip(sess.get_outputs(), outs):
        if not np.all(np.isfinite(v)):
            raise RuntimeError(f"{name}: ONNX Runtime output '{o.name}' is not finite")
    v = outs[0]
    return f"ORT ok, {sess.get_outputs()[0].name} in [{v.min():.3g}, {v.max():.3g}] std {v.std():.3g}"


def load_manifest(out_dir, file_name="manifest.json"):
    """What a generator recorded of the models it built in out_dir ({} when nothing yet)."""
    try:
        with open(os.path.join(out_dir, file_name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def ensure_models(out_dir=DEFAULT_OUT, names=None, force=False, validate=True, log=print):
    """Builds the models in `names` (default: all) that are missing or stale; returns their paths."""
    names = list(names or MODELS)
    for n in names:
        if n not in MODELS:
            raise ValueError(f"unknown model '{n}'; known: {', '.join(MODELS)}")
    os.makedirs(out_dir, exist_ok=True)
    manifest = load_manifest(out_dir)
    for i, name in enumerate(names, 1):
        path = model_path(out_dir, name)
        tag = f"[{i}/{len(names)}] {name}"
        entry = manifest.get(name, {})
        if not force and os.path.exists(path) and entry.get("version") == GENERATOR_VERSION:
            log(f"{tag}: up to date ({path})")
            continue
        t0 = time.perf_counter()
        model = _build(name)
        onnx.checker.check_model(model)
        tmp = path + ".tmp"
        onnx.save(model, tmp)
        os.replace(tmp, path)
        del model
        t1 = time.perf_counter()
        size_mb = os.path.getsize(path) / 1e6
        note = _validate(path, name) if validate else "not validated"
        t2 = time.perf_counter()
        log(f"{tag}: built {size_mb:.0f} MB in {t1 - t0:.1f} s; {note} ({t2 - t1:.1f} s)")
        manifest[name] = {"version": GENERATOR_VERSION, "bytes": os.path.getsize(path)}
        with open(os.path.join(out_dir, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
    return [model_path(out_dir, n) for n in names]


def generator_main(description, names_known, ensure, what="model"):
    """The command line of a model generator (this one, quantized.py): OUT_DIR [--models a,b]
    [--force] [--no-validate] [--list]; `ensure(out_dir, names, force, validate)` builds."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("out_dir", nargs="?", default=DEFAULT_OUT)
    ap.add_argument("--models", default=",".join(names_known),
                    help="comma-separated subset (default: all): " + ",".join(names_known))
    ap.add_argument("--force", action="store_true", help="rebuild even when up to date")
    ap.add_argument("--no-validate", action="store_true", help="skip the ONNX Runtime run")
    ap.add_argument("--list", action="store_true", help=f"print the {what} names and exit")
    args = ap.parse_args()
    if args.list:
        print("\n".join(names_known))
        return 0
    names = [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in names_known]
    if unknown:
        ap.error(f"unknown {what} '{unknown[0]}'; known: {', '.join(names_known)}")
    t0 = time.perf_counter()
    ensure(args.out_dir, names, args.force, not args.no_validate)
    print(f"done in {time.perf_counter() - t0:.1f} s: {os.path.abspath(args.out_dir)}")
    return 0


def main():
    return generator_main(__doc__.split("\n\n")[0], MODELS, ensure_models)


if __name__ == "__main__":
    sys.exit(main())
