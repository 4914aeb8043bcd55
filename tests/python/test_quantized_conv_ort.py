"""Int8 convolution against ONNX Runtime (the oracle).

QLinearConv with constant weights runs on oneDNN's int8 convolution (QLinearConv_8bit_onednn):
uint8 and int8 activations, zero points 0 and not, per-tensor and per-channel weight scales,
bias or none, padding, stride, depthwise groups, a 1-D convolution. A float model quantized by
onnxruntime.quantization in the QDQ format (DequantizeLinear -> Conv -> QuantizeLinear, Relu
between them, a residual Add) has its Conv islands planned as QLinearConv on that kernel; the
outputs match ORT's int8 outputs exactly here (ORT makes the same substitution), well inside
ORT's own int8-versus-fp32 difference."""
import json
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(5)


def qlinearconv_model(c, m, spatial, k, group=1, stride=1, pad=0, xtype=np.uint8, per_channel=True,
                      bias=True, x_zero=128, y_zero=100):
    rank = len(spatial)
    w_scale = (RNG.uniform(0.001, 0.01, m) if per_channel else np.array(0.005)).astype(np.float32)
    w = RNG.integers(-127, 128, (m, c // group) + (k,) * rank).astype(np.int8)
    inits = [numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
             numpy_helper.from_array(np.array(x_zero, xtype), "xz"),
             numpy_helper.from_array(w, "w"), numpy_helper.from_array(w_scale, "ws"),
             numpy_helper.from_array(np.zeros(w_scale.shape, np.int8), "wz"),
             numpy_helper.from_array(np.array(0.05, np.float32), "ys"),
             numpy_helper.from_array(np.array(y_zero, xtype), "yz")]
    names = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"]
    if bias:
        inits.append(numpy_helper.from_array(RNG.integers(-2000, 2000, m).astype(np.int32), "b"))
        names.append("b")
    node = helper.make_node("QLinearConv", names, ["y"], name="qconv", group=group,
                            strides=[stride] * rank, pads=[pad] * (2 * rank), kernel_shape=[k] * rank)
    et = TensorProto.UINT8 if xtype == np.uint8 else TensorProto.INT8
    g = helper.make_graph([node], "qconv", [helper.make_tensor_value_info("x", et, [1, c] + spatial)],
                          [helper.make_tensor_value_info("y", et, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


CASES = {
    "3x3_pad_per_channel": dict(c=16, m=32, spatial=[14, 14], k=3, pad=1),
    "1x1": dict(c=64, m=64, spatial=[28, 28], k=1),
    "depthwise_stride2": dict(c=32, m=32, spatial=[15, 15], k=3, group=32, pad=1, stride=2),
    "per_tensor_no_bias": dict(c=3, m=8, spatial=[9, 11], k=3, per_channel=False, bias=False),
    "int8_activations": dict(c=16, m=16, spatial=[8, 8], k=3, xtype=np.int8, x_zero=-3, y_zero=5, pad=1),
    "zero_points_0": dict(c=16, m=16, spatial=[8, 8], k=3, x_zero=0, y_zero=0),
    "conv_1d": dict(c=8, m=12, spatial=[30], k=5, pad=2),
}


def plan_impls(cli, path):
    p = subprocess.run([cli, "plan", path, "--json"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return [s["impl"] for s in json.loads(p.stdout)["schedule"]]


@pytest.mark.parametrize("case", sorted(CASES))
def test_qlinearconv_on_onednn_matches_onnxruntime(case, tmp_path, onyx_cli):
    import onyx

    spec = CASES[case]
    path = str(tmp_path / "qconv.onnx")
    onnx.save(qlinearconv_model(**spec), path)
    assert plan_impls(onyx_cli, path) == ["QLinearConv_8bit_onednn"]
    info = np.iinfo(spec.get("xtype", np.uint8))
    x = RNG.integers(info.min, info.max + 1, [1, spec["c"]] + spec["spatial"]).astype(info.dtype)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for threads in (1, 2):
        so = onyx.SessionOptions()
        so.intra_op_num_threads = threads
        got = onyx.InferenceSession(path, so).run(None, {"x": x})[0]
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def float_block():
    """x [1, 16, 20, 20] -> Conv 3x3 (pad 1) -> Relu -> Conv 1x1 -> + the Relu's output -> Relu
    -> MaxPool 2x2: a ResNet block in small."""
    c, m = 16, 32
    inits = [numpy_helper.from_array(RNG.normal(0, 0.2, (m, c, 3, 3)).astype(np.float32), "w1"),
             numpy_helper.from_array(RNG.normal(0, 0.1, m).astype(np.float32), "b1"),
             numpy_helper.from_array(RNG.normal(0, 0.2, (m, m, 1, 1)).astype(np.float32), "w2"),
             numpy_helper.from_array(RNG.normal(0, 0.1, m).astype(np.float32), "b2")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2"),
             helper.make_node("Add", ["c2", "r1"], ["a"], name="residual"),
             helper.make_node("Relu", ["a"], ["r2"], name="relu2"),
             helper.make_node("MaxPool", ["r2"], ["y"], name="pool", kernel_shape=[2, 2], strides=[2, 2])]
    g = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 20, 20])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.fixture(scope="module")
def qdq_block(tmp_path_factory):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    d = tmp_path_factory.mktemp("qdq")
    fp32, qdq = str(d / "block.onnx"), str(d / "block_qdq.onnx")
    onnx.save(float_block(), fp32)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter([{"x": RNG.normal(0, 1, (1, 16, 20, 20)).astype(np.float32)} for _ in range(8)])

        def get_next(self):
            return next(self.feeds, None)

    quantize_static(fp32, qdq, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    return fp32, qdq


def test_qdq_conv_islands_become_qlinearconv(qdq_block, onyx_cli):
    p = subprocess.run([onyx_cli, "plan", qdq_block[1], "--json"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    plan = json.loads(p.stdout)
    impls = [s["impl"] for s in plan["schedule"]]
    assert impls.count("QLinearConv_8bit_onednn") == 2, impls
    assert not any(i.startswith("Conv") or i.startswith("FusedConv") for i in impls), impls
    # The weight and bias DequantizeLinear nodes went with their Conv (none left to run).
    kinds = [f["kind"] for f in plan["fusions"]]
    assert kinds.count("QdqConv") == 2, kinds


@pytest.mark.parametrize("threads", [1, 2])
def test_qdq_block_matches_onnxruntime_int8(qdq_block, threads):
    import onyx

    fp32, qdq = qdq_block
    x = RNG.normal(0, 1, (1, 16, 20, 20)).astype(np.float32)
    want = ort.InferenceSession(qdq, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    ref32 = ort.InferenceSession(fp32, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    so = onyx.SessionOptions()
    so.intra_op_num_threads = threads
    got = onyx.InferenceSession(qdq, so).run(None, {"x": x})[0]
    # The int8 path differs from fp32 by several quantization steps; onyx and ORT agree exactly.
    assert np.abs(want - ref32).max() > 0.01
    np.testing.assert_array_equal(got, want)
