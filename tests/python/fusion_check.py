"""Shared helpers of the fusion tests: run a model through the onyx CLI at optimization levels none
and all (reference kernels, so only the fusion differs) and through ONNX Runtime, and read which
fusions `onyx plan --json` applied."""
import json
import os
import subprocess
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

# Fused and unfused onyx must agree this closely (max |a - b| / max |b|), the bound.
FUSED_RTOL = 1e-5
# Against ONNX Runtime (a different implementation of every op).
ORT_RTOL = 1e-4


def rel_err(got, want):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.size == 0:
        return 0.0
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))


def plan(cli, path, level="all", kernels="reference"):
    """`onyx plan --json`; reference kernels by default, so no layout pass adds steps."""
    out = subprocess.run([cli, "plan", path, "--json", "--optimization", level, "--kernels", kernels],
                         check=True,
                         capture_output=True, text=True, timeout=300).stdout
    return json.loads(out)


def run_onyx(cli, path, feeds, level, kernels="reference", threads=1):
    with tempfile.TemporaryDirectory() as d:
        args = [cli, "run", path, "--output-dir", d, "--optimization", level, "--kernels", kernels,
                "--threads", str(threads)]
        for i, (name, value) in enumerate(feeds.items()):
            f = os.path.join(d, f"input_{i}.pb")
            with open(f, "wb") as fh:
                fh.write(numpy_helper.from_array(np.asarray(value), name).SerializeToString())
            args += ["--input", f"{name}={f}"]
        subprocess.run(args, check=True, capture_output=True, text=True, timeout=300)
        outs = {}
        for f in os.listdir(d):
            if f.startswith("input_"):
                continue
            t = onnx.TensorProto()
            with open(os.path.join(d, f), "rb") as fh:
                t.ParseFromString(fh.read())
            outs[t.name or f[:-3]] = numpy_helper.to_array(t)
        return outs


def run_ort(path, feeds):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


def check(cli, tmp_path, model, feeds, fires=(), absent=(), compare_ort=True):
    """Plans `model` at `all`; every kind in `fires` must appear in its fusions and none of
    `absent`. Outputs at all and none must agree within FUSED_RTOL (same reference kernels) and
    with ONNX Runtime within ORT_RTOL. Returns the plan at `all`."""
    onnx.checker.check_model(model)
    path = str(tmp_path / "model.onnx")
    onnx.save(model, path)
    p = plan(cli, path, "all")
    counts = p["fusion_counts"]
    for kind in fires:
        assert counts.get(kind, 0) > 0, f"{kind} did not fire: {counts}"
    for kind in absent:
        assert kind not in counts, f"{kind} fired: {counts}"
    fused = run_onyx(cli, path, feeds, "all")
    unfused = run_onyx(cli, path, feeds, "none")
    # The fast kernels (oneDNN, SIMD) of the fused ops, against the same oracle.
    fast = run_onyx(cli, path, feeds, "all", kernels="auto", threads=2)
    want = run_ort(path, feeds) if compare_ort else unfused
    for name, w in want.items():
        key = name if name in fused else name.replace("/", "_")
        assert rel_err(fused[key], unfused[key]) <= FUSED_RTOL, name
        assert rel_err(fused[key], w) <= ORT_RTOL, name
        assert rel_err(fast[key], w) <= ORT_RTOL, f"{name} (auto kernels)"
    return p


def model(nodes, inputs, outputs, inits=(), opset=17):
    """A model from helper nodes; inputs/outputs are (name, shape) or (name, shape, elem)."""
    def vi(spec):
        name, shape = spec[0], spec[1]
        elem = spec[2] if len(spec) > 2 else TensorProto.FLOAT
        return helper.make_tensor_value_info(name, elem, shape)
    g = helper.make_graph(nodes, "g", [vi(i) for i in inputs], [vi(o) for o in outputs],
                          initializer=[numpy_helper.from_array(np.asarray(v), n)
                                       for n, v in inits])
    ir = 10 if opset >= 21 else 8
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir)


def node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, name=outputs[0], **attrs)
