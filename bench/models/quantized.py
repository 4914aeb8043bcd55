#!/usr/bin/env python3
"""Int8 variants of the benchmark models, made by onnxruntime.quantization (issue 16).

    .venv/bin/python bench/models/quantized.py [OUT_DIR] [--models resnet50_qdq,bert_base_dynamic]
                                               [--force] [--list]

Each variant is made from its fp32 source in OUT_DIR (bench/models/out by default; the source is
built there by make_bench_models.py when missing) and written next to it:

  resnet50_qdq          quantize_static, QDQ, per channel (QuantizeLinear/DequantizeLinear pairs)
  resnet50_qop          quantize_static, QOperator, Conv only: QLinearConv and standard ops only
  resnet50_qop_default  quantize_static, QOperator, every op ORT quantizes: com.microsoft
                        QLinearAveragePool and QGemm as well
  mobilenet_v2_qdq      quantize_static, QDQ, per channel
  bert_base_qdq         quantize_static, QDQ, per channel
  bert_base_dynamic     quantize_dynamic (weights int8 per tensor): DynamicQuantizeLinear and
                        MatMulInteger

Static variants use uint8 activations and int8 weights (U8S8, what ORT's CPU kernels are built
for) and MinMax calibration on CALIBRATION_SAMPLES inputs drawn like the benchmark's own (seeded
numpy, seeds 1..N; the benchmark feeds use seed 0). A classifier's final Softmax stays float (ORT
would quantize its output with scale 1/256, and a random-weight model's probabilities, about
0.001 each, would all become 0). A source below opset 13 (resnet50: 9) is converted to 13 first,
since per-channel DequantizeLinear needs it; then it goes through quant_pre_process (symbolic
shape inference and ORT's basic graph optimizations, as ORT recommends before quantizing; when
that raises, the model is quantized without it). A variant is rebuilt only when it is missing,
older than its source, or made by an older recipe (QUANT_VERSION, recorded in
OUT_DIR/quantized.json); the build is deterministic (same bytes every time). Each new variant is
run once by ONNX Runtime (outputs must be finite).

To compare onyx with ONNX Runtime on them (bench/compare.py builds missing variants itself):

    PYTHONPATH=build/python .venv/bin/python bench/compare.py --int8 --threads 1 --top1 20
    PYTHONPATH=build/python .venv/bin/python bench/compare.py --models resnet50_qop,mobilenet_v2_qdq
"""
import collections
import json
import os
import sys
import tempfile
import time

import numpy as np
import onnx
import onnx.version_converter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_bench_models as models  # noqa: E402

DEFAULT_OUT = models.DEFAULT_OUT
# Bump when a recipe below changes, so stale variants are rebuilt.
QUANT_VERSION = 1
# Per-channel QDQ needs DequantizeLinear with `axis` (opset 13).
MIN_OPSET = 13
# Calibration inputs per static variant. MinMax over 8 random inputs: enough for a benchmark
# (the ranges stop moving after a few), and BERT-base calibrates in well under a minute on 2 cores.
CALIBRATION_SAMPLES = {"resnet50": 8, "mobilenet_v2": 8, "bert_base": 8}

Variant = collections.namedtuple("Variant", "source method quant_format op_types label")
VARIANTS = {
    "resnet50_qdq": Variant("resnet50", "static", "QDQ", None, "QDQ"),
    "resnet50_qop": Variant("resnet50", "static", "QOperator", ["Conv"], "QOperator, Conv only"),
    "resnet50_qop_default": Variant("resnet50", "static", "QOperator", None, "QOperator, ORT defaults"),
    "mobilenet_v2_qdq": Variant("mobilenet_v2", "static", "QDQ", None, "QDQ"),
    "bert_base_qdq": Variant("bert_base", "static", "QDQ", None, "QDQ"),
    "bert_base_dynamic": Variant("bert_base", "dynamic", None, None, "dynamic"),
}
INT8 = list(VARIANTS)


def source(name):
    """The fp32 benchmark model a variant is made from; `name` itself for an fp32 model."""
    return VARIANTS[name].source if name in VARIANTS else name


def make_feeds(name, seed=0):
    """The benchmark inputs of `name` (an int8 variant takes its source's: the quantized models
    keep the float / int64 graph inputs)."""
    return models.make_feeds(source(name), seed)


def model_path(out_dir, name):
    return os.path.join(out_dir, f"{name}.onnx")


class _SeededReader:
    """CalibrationDataReader over `count` benchmark-like inputs, seeds 1..count."""

    def __init__(self, name, count):
        self.name, self.seeds = name, iter(range(1, count + 1))

    def get_next(self):
        seed = next(self.seeds, None)
        return None if seed is None else models.make_feeds(self.name, seed)

    def rewind(self):
        raise NotImplementedError("single pass")


def _preprocess(src_path, tmp_dir, log):
    """`src_path` at opset >= MIN_OPSET, then quant_pre_process of it, into tmp_dir; the model
    before quant_pre_process when that raises."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    model = onnx.load(src_path)
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    if opset < MIN_OPSET:
        # The quantizer only relabels opset < 11 as 11; per-channel DequantizeLinear (its `axis`)
        # needs 13, so convert for real (resnet50 comes at opset 9).
        log(f"  converting opset {opset} to {MIN_OPSET}")
        src_path = os.path.join(tmp_dir, f"opset{MIN_OPSET}_" + os.path.basename(src_path))
        onnx.save(onnx.version_converter.convert_version(model, MIN_OPSET), src_path)
    del model
    out = os.path.join(tmp_dir, "pre_" + os.path.basename(src_path))
    try:
        quant_pre_process(src_path, out)
        return out
    except Exception as e:  # noqa: BLE001 (any failure: quantize the model as it is)
        log(f"  quant_pre_process failed ({type(e).__name__}: {str(e).splitlines()[0][:120]}); "
            "quantizing the raw model")
        return src_path


def final_softmax_nodes(path):
    """Names of the Softmax nodes that write a graph output (a classifier's probabilities)."""
    graph = onnx.load(path, load_external_data=False).graph
    outputs = {o.name for o in graph.output}
    return [n.name for n in graph.node if n.op_type == "Softmax" and set(n.output) & outputs]


def _quantize(variant, src_path, dst_path):
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static

    if variant.method == "dynamic":
        quantize_dynamic(src_path, dst_path, weight_type=QuantType.QInt8)
        return
    reader = _SeededReader(variant.source, CALIBRATION_SAMPLES[variant.source])
    # ORT quantizes a Softmax output with the fixed scale 1/256: the near-uniform probabilities
    # of a random-weight 1000-class model (all about 0.001) would all round to 0, leaving no
    # output to compare and no argmax. So a classifier's final Softmax stays float.
    quantize_static(src_path, dst_path, reader, quant_format=getattr(QuantFormat, variant.quant_format),
                    op_types_to_quantize=variant.op_types, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    nodes_to_exclude=final_softmax_nodes(src_path))


def op_summary(model):
    """'QLinearConv 53, QuantizeLinear 2, ...' for the quantized ops, and the com.microsoft ops."""
    counts = collections.Counter(n.op_type for n in model.graph.node)
    ms = sorted({n.op_type for n in model.graph.node if n.domain == "com.microsoft"})
    int8_ops = ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger",
                "ConvInteger", "QLinearConv", "QLinearMatMul")
    shown = ", ".join(f"{op} {counts[op]}" for op in int8_ops if counts[op])
    return shown, ms


def _validate(path, name):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    for o, v in zip(sess.get_outputs(), sess.run(None, make_feeds(name))):
        if not np.all(np.isfinite(v)):
            raise RuntimeError(f"{name}: ONNX Runtime output '{o.name}' is not finite")


def _load_manifest(out_dir):
    return models.load_manifest(out_dir, "quantized.json")


def up_to_date(out_dir, name, manifest=None):
    path, src = model_path(out_dir, name), model_path(out_dir, source(name))
    manifest = _load_manifest(out_dir) if manifest is None else manifest
    return (os.path.exists(path) and os.path.exists(src)
            and os.path.getmtime(path) >= os.path.getmtime(src)
            and manifest.get(name, {}).get("version") == QUANT_VERSION)


def ensure(out_dir=DEFAULT_OUT, names=None, force=False, validate=True, log=print):
    """Builds the variants in `names` (default: all) that are missing or stale, and their fp32
    sources first when those are missing; returns the variants' paths."""
    names = list(names or INT8)
    for n in names:
        if n not in VARIANTS:
            raise ValueError(f"unknown int8 model '{n}'; known: {', '.join(INT8)}")
    sources = list(dict.fromkeys(source(n) for n in names))
    models.ensure_models(out_dir, sources, log=log)
    manifest = _load_manifest(out_dir)
    with tempfile.TemporaryDirectory(prefix="onyx_quant_") as tmp:
        preprocessed = {}  # source name -> path, made once per call
        for i, name in enumerate(names, 1):
            v, path = VARIANTS[name], model_path(out_dir, name)
            tag = f"[{i}/{len(names)}] {name}"
            if not force and up_to_date(out_dir, name, manifest):
                log(f"{tag}: up to date ({path})")
                continue
            t0 = time.perf_counter()
            pre = ""
            if v.source not in preprocessed:
                log(f"{tag}: pre-processing {v.source} (shape inference, graph optimizations) ...")
                preprocessed[v.source] = _preprocess(model_path(out_dir, v.source), tmp, log)
                pre = f" (pre-processing {time.perf_counter() - t0:.1f} s)"
            samples = "" if v.method == "dynamic" else f", {CALIBRATION_SAMPLES[v.source]} calibration inputs"
            log(f"{tag}: quantizing {v.source} ({v.label}{samples}) ...")
            tmp_out = path + ".tmp"  # beside it, so the rename is atomic: never half written
            try:
                _quantize(v, preprocessed[v.source], tmp_out)
                os.replace(tmp_out, path)
            finally:
                if os.path.exists(tmp_out):
                    os.remove(tmp_out)
            t2 = time.perf_counter()
            if validate:
                _validate(path, name)
            shown, ms = op_summary(onnx.load(path, load_external_data=False))
            log(f"{tag}: built {os.path.getsize(path) / 1e6:.0f} MB in {t2 - t0:.1f} s{pre}; "
                f"{shown}; com.microsoft: {', '.join(ms) or 'none'}"
                f"{'; ORT ok' if validate else ''} ({time.perf_counter() - t2:.1f} s)")
            manifest[name] = {"version": QUANT_VERSION, "source": v.source,
                              "bytes": os.path.getsize(path)}
            with open(os.path.join(out_dir, "quantized.json"), "w") as f:
                json.dump(manifest, f, indent=1, sort_keys=True)
    return [model_path(out_dir, n) for n in names]


def main():
    return models.generator_main(__doc__.split("\n\n")[0], INT8, ensure, "int8 model")


if __name__ == "__main__":
    sys.exit(main())
