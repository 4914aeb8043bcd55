"""Channels-last layout propagation and the oneDNN kernels behind it: small CNN graphs whose plans
must place NhwcConv/NhwcMaxPool and layout Transposes where expected, and whose outputs must match
ONNX Runtime (the oracle) with the fast kernels and with `--kernels reference`."""
import json
import os
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper


def he(rng, *shape):
    fan_in = int(np.prod(shape[1:]))
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def conv(name, x, w, y, inits, rng, cin, cout, k=3, group=1, stride=1, bias=True, **attrs):
    inits.append(numpy_helper.from_array(he(rng, cout, cin // group, k, k), w))
    ins = [x, w]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(cout).astype(np.float32), w + "_b"))
        ins.append(w + "_b")
    return helper.make_node("Conv", ins, [y], name=name, kernel_shape=[k, k], group=group,
                            strides=[stride, stride], pads=[k // 2] * 4, **attrs)


def cnn(conv_output_is_graph_output=False):
    """Conv-Relu-MaxPool, two branches (3x3 and depthwise), channel Concat, BatchNorm+Relu,
    per-channel Add, residual Add, Clip, GlobalAveragePool, Flatten, Gemm."""
    rng = np.random.default_rng(7)
    inits, nodes = [], []
    nodes.append(conv("c0", "x", "w0", "c0", inits, rng, 3, 16, stride=2))
    nodes.append(helper.make_node("Relu", ["c0"], ["r0"], name="r0"))
    nodes.append(helper.make_node("MaxPool", ["r0"], ["p0"], name="p0", kernel_shape=[3, 3],
                                  strides=[2, 2], pads=[1, 1, 1, 1]))
    nodes.append(conv("c1", "p0", "w1", "c1", inits, rng, 16, 16))
    nodes.append(conv("c2", "p0", "w2", "c2", inits, rng, 16, 16, group=16, bias=False))
    nodes.append(helper.make_node("Concat", ["c1", "c2"], ["cat"], name="cat", axis=1))
    # A pre-activation BatchNorm + Relu (not after a conv): fused to a ChannelAffine, which the
    # layout pass keeps channels-last.
    for name, v in (("bn_s", rng.uniform(0.5, 1.5, 32)), ("bn_b", rng.standard_normal(32)),
                    ("bn_m", rng.standard_normal(32)), ("bn_v", rng.uniform(0.5, 2.0, 32))):
        inits.append(numpy_helper.from_array(v.astype(np.float32), name))
    nodes.append(helper.make_node("BatchNormalization", ["cat", "bn_s", "bn_b", "bn_m", "bn_v"],
                                  ["bn"], name="bn"))
    nodes.append(helper.make_node("Relu", ["bn"], ["bnr"], name="bn_relu"))
    inits.append(numpy_helper.from_array(rng.standard_normal((1, 32, 1, 1)).astype(np.float32), "shift"))
    nodes.append(helper.make_node("Add", ["bnr", "shift"], ["sh"], name="add_shift"))
    nodes.append(conv("c3", "sh", "w3", "c3", inits, rng, 32, 16, k=1))
    nodes.append(helper.make_node("Add", ["c3", "p0"], ["res"], name="residual"))
    nodes.append(helper.make_node("Clip", ["res", "lo", "hi"], ["clip"], name="clip"))
    inits += [numpy_helper.from_array(np.array(0, np.float32), "lo"),
              numpy_helper.from_array(np.array(6, np.float32), "hi")]
    nodes.append(helper.make_node("GlobalAveragePool", ["clip"], ["gap"], name="gap"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flat"))
    inits.append(numpy_helper.from_array(rng.standard_normal((10, 16)).astype(np.float32), "fc_w"))
    nodes.append(helper.make_node("Gemm", ["flat", "fc_w"], ["y"], name="fc", transB=1))
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])]
    if conv_output_is_graph_output:
        outputs.append(helper.make_tensor_value_info("c1", TensorProto.FLOAT, [1, 16, 8, 8]))
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                       [1, 3, 32, 32])],
                          outputs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def run_onyx(cli, path, x, tmp, *extra):
    os.makedirs(tmp, exist_ok=True)
    xin = os.path.join(tmp, "x.pb")
    with open(xin, "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    out = os.path.join(tmp, "out")
    p = subprocess.run([cli, "run", path, "--input", f"x={xin}", "--output-dir", out, *extra],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    res = {}
    for name in os.listdir(out):
        t = onnx.TensorProto()
        with open(os.path.join(out, name), "rb") as f:
            t.ParseFromString(f.read())
        res[t.name or name[:-3]] = numpy_helper.to_array(t)
    return res


def plan(cli, path, *extra):
    p = subprocess.run([cli, "plan", path, "--json", *extra], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("graph_output", [False, True])
def test_cnn_matches_ort_in_channels_last(onyx_cli, tmp_path, graph_output):
    path = str(tmp_path / "cnn.onnx")
    onnx.save(cnn(graph_output), path)
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)
    expected = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    names = ["y", "c1"] if graph_output else ["y"]
    for kernels in ("auto", "reference"):
        got = run_onyx(onyx_cli, path, x, str(tmp_path / kernels), "--kernels", kernels)
        for name, want in zip(names, expected):
            np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-4, err_msg=kernels)


def test_plan_places_transposes_only_at_layout_boundaries(onyx_cli, tmp_path):
    path = str(tmp_path / "cnn.onnx")
    onnx.save(cnn(), path)
    steps = plan(onyx_cli, path)["schedule"]
    ops = [s["op"] for s in steps]
    if "NhwcConv" not in ops:
        pytest.skip("no channels-last convolution kernel on this machine")
    layout = [s["node"] for s in steps if s["node"].startswith("layout/")]
    # The image enters channels-last once; the pooled features leave once (before Flatten).
    assert layout == ["layout/to_nhwc/x", "layout/to_nchw/gap"], layout
    assert ops.count("NhwcConv") == 4
    assert "NhwcMaxPool" in ops and "NhwcAveragePool" in ops
    assert "Concat" in ops and "NhwcChannelAffine" in ops
    # Reference kernels plan no layout change.
    ref_ops = [s["op"] for s in plan(onyx_cli, path, "--kernels", "reference")["schedule"]]
    assert "NhwcConv" not in ref_ops and "Transpose" not in ref_ops


def test_graph_output_from_channels_last_conv_keeps_onnx_layout(onyx_cli, tmp_path):
    path = str(tmp_path / "cnn.onnx")
    onnx.save(cnn(True), path)
    steps = plan(onyx_cli, path)["schedule"]
    if "NhwcConv" not in [s["op"] for s in steps]:
        pytest.skip("no channels-last convolution kernel on this machine")
    assert any(s["node"] == "layout/to_nchw/c1" for s in steps)
    outs = [o for s in steps for o in s["outputs"] if o["name"] == "c1"]
    assert outs and outs[0]["type"] == "float[1,16,8,8]"


@pytest.mark.parametrize("op,size,kernel,stride,extra", [
    ("MaxPool", 112, 3, 2, {}),                       # GoogLeNet: the last input row is never read
    ("MaxPool", 7, 2, 2, {}),
    ("AveragePool", 9, 3, 2, {"count_include_pad": 1, "pads": [1, 1, 0, 0]}),
    ("AveragePool", 10, 3, 3, {}),
])
def test_pool_windows_that_stop_short_of_the_end(onyx_cli, tmp_path, op, size, kernel, stride, extra):
    """Pooling whose last window ends before the input does (floor mode leaves a remainder
    smaller than the stride), plain and after a channels-last conv, against ONNX Runtime."""
    rng = np.random.default_rng(size)
    inits = []
    nodes = [conv("c", "x", "w", "c", inits, rng, 3, 16, k=1),
             helper.make_node(op, ["c"], ["p"], name="pool", kernel_shape=[kernel, kernel],
                              strides=[stride, stride], **extra),
             helper.make_node(op, ["x"], ["q"], name="pool_plain", kernel_shape=[kernel, kernel],
                              strides=[stride, stride], **extra)]
    g = helper.make_graph(nodes, "pool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
                          [helper.make_tensor_value_info("p", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("q", TensorProto.FLOAT, None)], inits)
    path = str(tmp_path / "pool.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    x = rng.standard_normal((1, 3, size, size)).astype(np.float32)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = run_onyx(onyx_cli, path, x, str(tmp_path / "out"))
    for name, w in zip(["p", "q"], want):
        np.testing.assert_allclose(got[name], w, rtol=1e-5, atol=1e-5, err_msg=name)
    if "MaxPool_f32_onednn" not in subprocess.run([onyx_cli, "ops"], capture_output=True, text=True).stdout:
        return  # no oneDNN here: the reference pools are all there is
    impls = {s["node"]: s["impl"] for s in plan(onyx_cli, path)["schedule"]}
    assert impls["pool"].endswith("_onednn") and impls["pool_plain"].endswith("_onednn"), impls


def lrn_spec(x, size, alpha, beta, bias):
    """ONNX LRN: the window over channels is [c - floor((size-1)/2), c + ceil((size-1)/2)]."""
    c = x.shape[1]
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    sq = np.zeros_like(x, dtype=np.float64)
    for ch in range(c):
        sq[:, ch] = np.sum(x[:, max(0, ch - lo):min(c, ch + hi + 1)].astype(np.float64) ** 2, axis=1)
    return (x / (bias + alpha / size * sq) ** beta).astype(np.float32)


def run_lrn_only(cli, tmp_path, x, lrn):
    g = helper.make_graph([helper.make_node("LRN", ["x"], ["y"], name="lrn", **lrn)], "lrn_only",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    path = str(tmp_path / "lrn_only.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), path)
    return run_onyx(cli, path, x, str(tmp_path / "lrn_only"))["y"]


@pytest.mark.parametrize("size", [5, 3, 4])
def test_lrn_stays_channels_last(onyx_cli, tmp_path, size):
    """GoogLeNet's conv -> LRN -> conv: odd sizes run oneDNN's LRN on the channels-last value
    (no layout transposes in between), even ones the reference on NCHW; an LRN on the graph
    input runs on NCHW. Against ONNX Runtime (odd) or the spec's formula in numpy (even)."""
    rng = np.random.default_rng(size)
    inits = []
    lrn = dict(size=size, alpha=1e-3, beta=0.75, bias=2.0)
    nodes = [helper.make_node("LRN", ["x"], ["l0"], name="lrn_plain", **lrn),
             conv("c1", "l0", "w1", "c1", inits, rng, 16, 32),
             helper.make_node("LRN", ["c1"], ["l1"], name="lrn", **lrn),
             conv("c2", "l1", "w2", "y", inits, rng, 32, 16)]
    g = helper.make_graph(nodes, "lrn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 20, 20])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    path = str(tmp_path / "lrn.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), path)
    x = (rng.standard_normal((1, 16, 20, 20)) * 3).astype(np.float32)
    if size % 2:
        want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        got = run_onyx(onyx_cli, path, x, str(tmp_path / "out"))["y"]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    else:
        # ORT refuses even sizes and onnx.reference's LRN loops over the batch instead of the
        # channels, so the oracle is the spec's formula in numpy, for an LRN alone.
        np.testing.assert_allclose(run_lrn_only(onyx_cli, tmp_path, x, lrn), lrn_spec(x, **lrn),
                                   rtol=1e-5, atol=1e-6)
    steps = plan(onyx_cli, path)["schedule"]
    impls = {s["node"]: s["impl"] for s in steps}
    if "LRN_f32_onednn" not in subprocess.run([onyx_cli, "ops"], capture_output=True, text=True).stdout:
        return  # no oneDNN here: nothing more to check
    if size % 2:
        assert impls["lrn"] == "NhwcLRN_f32_onednn" and impls["lrn_plain"] == "LRN_f32_onednn", impls
        assert sum(s["op"] == "Transpose" for s in steps) == 2, impls  # in and out of the network
    else:
        assert impls["lrn"] == "lrn_ref", impls
