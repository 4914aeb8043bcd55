"""Winograd convolutions (onyx's own F(2x2, 3x3) kernel and oneDNN's, on x86): which convolutions
take them, as the plan shows, and that outputs match ONNX Runtime (the oracle, which computes
directly) with the default conv_algorithm "auto" and with "direct", through the CLI and the Python
API."""
import json
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from isa_caps import has_avx512
from onnx import TensorProto, helper, numpy_helper


def vgg_like():
    """Convolutions on either side of the Winograd rules: w2 (64 output channels) takes onyx's
    F(2x2, 3x3); w1 and w5 (3x3 stride 1, channels in 16s, maps of 14x14 and up, fewer than 64
    outputs) take oneDNN's; 24 channels (w3), stride 2 (w4), a residual with 32 outputs (w6), 1x1
    (w7) and 32 outputs on a 7x7 map (w8) take neither."""
    rng = np.random.default_rng(11)
    inits, nodes = [], []

    def conv(x, y, cin, cout, k=3, stride=1, bias=True, z=None):
        w = "w" + y[1:]
        inits.append(numpy_helper.from_array(
            (rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))).astype(np.float32), w))
        ins = [x, w]
        if bias:
            inits.append(numpy_helper.from_array(rng.standard_normal(cout).astype(np.float32), w + "_b"))
            ins.append(w + "_b")
        nodes.append(helper.make_node("Conv", ins, [y + "_c" if z else y], name=w, kernel_shape=[k, k],
                                      strides=[stride, stride], pads=[k // 2] * 4))
        if z:
            nodes.append(helper.make_node("Add", [y + "_c", z], [y], name=w + "_add"))

    conv("x", "c1", 32, 48)
    nodes.append(helper.make_node("Relu", ["c1"], ["r1"], name="r1"))
    conv("r1", "c2", 48, 64, bias=False)
    conv("c2", "c3", 64, 24)
    conv("c3", "c4", 24, 32, stride=2)
    conv("c4", "c5", 32, 32)
    conv("c5", "c6", 32, 32, z="c4")
    conv("c6", "c7", 32, 64, k=1)
    nodes.append(helper.make_node("MaxPool", ["c7"], ["p7"], name="p7", kernel_shape=[2, 2],
                                  strides=[2, 2]))
    conv("p7", "y", 64, 32)
    g = helper.make_graph(nodes, "vgg_like",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 32, 28, 28])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 32, 7, 7])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("wino") / "vgg_like.onnx")
    onnx.save(vgg_like(), path)
    return path


def impls(cli, path, *extra):
    p = subprocess.run([cli, "plan", path, "--json", *extra], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return {s["node"]: s["impl"] for s in json.loads(p.stdout)["schedule"]}


@pytest.mark.skipif(not has_avx512(), reason="oneDNN's Winograd kernels need AVX-512")
def test_plan_shows_which_convolutions_use_winograd(onyx_cli, model_path):
    auto = impls(onyx_cli, model_path)
    wino = {n: impl for n, impl in auto.items() if impl.endswith("/winograd")}
    assert wino == {"w1": "NhwcConv_f32_onednn/winograd", "w2": "NhwcConv_f32_hwy/winograd",
                    "w5": "NhwcConv_f32_onednn/winograd"}, auto
    direct = impls(onyx_cli, model_path, "--conv-algorithm", "direct")
    assert not [n for n, impl in direct.items() if "winograd" in impl], direct


def test_bad_conv_algorithm_is_rejected(onyx_cli, model_path):
    p = subprocess.run([onyx_cli, "plan", model_path, "--conv-algorithm", "fast"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert "--conv-algorithm must be auto or direct" in p.stderr


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("algorithm", ["auto", "direct"])
def test_outputs_match_onnxruntime(model_path, algorithm, threads):
    import onyx

    x = np.random.default_rng(5).standard_normal((2, 32, 28, 28)).astype(np.float32)
    want = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    so = onyx.SessionOptions()
    so.conv_algorithm = algorithm
    so.intra_op_num_threads = threads
    got = onyx.InferenceSession(model_path, so).run(None, {"x": x})[0]
    # Error relative to the output's scale: both measured about 1e-6 against ORT here (its own
    # summation order differs too); a broken transform or layout would be off by far more.
    scale = float(np.max(np.abs(want)))
    err = float(np.max(np.abs(got - want))) / scale
    assert err < 1e-5, err


def test_python_rejects_unknown_conv_algorithm(model_path):
    import onyx

    with pytest.raises(onyx.InvalidArgument, match="conv_algorithm"):
        onyx.InferenceSession(model_path, conv_algorithm="fast")


@pytest.mark.parametrize("pads,auto_pad", [([0, 0, 0, 0], None), ([1, 0, 0, 1], None),
                                           ([2, 2, 2, 2], None), (None, "SAME_UPPER")])
def test_padding_variants_match_onnxruntime(onyx_cli, tmp_path, pads, auto_pad):
    """3x3 convolutions with no, asymmetric, wide and automatic padding: oneDNN's Winograd takes
    pads up to 1 (the planner then shows it); wider pads fall back to direct convolution."""
    import onyx

    rng = np.random.default_rng(3)
    attrs = {"kernel_shape": [3, 3]}
    if pads is not None:
        attrs["pads"] = pads
    if auto_pad is not None:
        attrs["auto_pad"] = auto_pad
    w = numpy_helper.from_array((rng.standard_normal((48, 32, 3, 3)) * 0.1).astype(np.float32), "w")
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", **attrs)
    g = helper.make_graph([node], "pads", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 20, 20])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    path = str(tmp_path / "pads.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    if has_avx512():
        wide = pads == [2, 2, 2, 2]
        assert impls(onyx_cli, path)["conv"].endswith("/winograd") != wide
    x = rng.standard_normal((1, 32, 20, 20)).astype(np.float32)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = onyx.InferenceSession(path).run(None, {"x": x})[0]
    assert got.shape == want.shape
    assert float(np.max(np.abs(got - want))) / float(np.max(np.abs(want))) < 1e-5


def test_non_finite_inputs_reach_the_outputs_onnxruntime_gives(tmp_path):
    """A NaN and an Inf through onyx's F(2x2, 3x3) kernel in a session, where the plan holds the
    weights as a constant: NaN, +-Inf and finite outputs sit where ONNX Runtime's direct
    convolution puts them (the kernel recomputes non-finite outputs from the original weights)."""
    import onyx

    rng = np.random.default_rng(2)
    w = numpy_helper.from_array(rng.standard_normal((64, 24, 3, 3)).astype(np.float32), "w")
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])
    g = helper.make_graph([node], "nonfinite",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 24, 12, 12])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    path = str(tmp_path / "nonfinite.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    x = rng.standard_normal((1, 24, 12, 12)).astype(np.float32)
    x[0, 3, 5, 5] = np.nan
    x[0, 7, 0, 6] = np.inf
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = onyx.InferenceSession(path).run(None, {"x": x})[0]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
    finite = np.isfinite(want)
    assert np.isnan(want).sum() > 0 and np.isinf(want).sum() > 0
    assert float(np.max(np.abs(got[finite] - want[finite]))) / float(np.max(np.abs(want[finite]))) < 1e-5
