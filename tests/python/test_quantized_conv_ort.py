"""Int8 convolution against ONNX Runtime (the oracle).

QLinearConv with constant weights runs on oneDNN's int8 convolution (QLinearConv_8bit_onednn):
uint8 and int8 activations, zero points 0 and not, per-tensor and per-channel weight scales,
bias or none, padding, stride, depthwise groups, a 1-D convolution. A float model quantized by
onnxruntime.quantization in the QDQ format (DequantizeLinear -> Conv -> QuantizeLinear, Relu
between them, a residual Add) has its Conv islands planned as QLinearConv on that kernel; the
outputs match ORT's int8 outputs exactly here (ORT makes the same substitution), well inside
ORT's own int8-versus-fp32 difference."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from qdq_models import assert_int8_impls, int8_on_onednn, plan_json, quantize_qdq, skip_without_int8_onednn

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
    # Wide and big enough for oneDNN's AMX kernel where the CPU has AMX (the others take VNNI).
    "wide_128_channels": dict(c=128, m=128, spatial=[28, 28], k=3, pad=1),
}


def assert_within_one_step_at_ties(got, want, y_zero):
    """oneDNN adds Y's zero point in float before rounding (ORT rounds, then adds it): a product
    within a few 1e-6 of a .5 tie can then round the other way. With zero point 0, or away from
    ties, the outputs are equal."""
    diff = np.abs(got.astype(np.int32) - want.astype(np.int32))
    if y_zero == 0:
        np.testing.assert_array_equal(got, want)
    assert diff.max() <= 1 and (diff > 0).mean() <= 0.005, (diff.max(), (diff > 0).sum())


def plan_impls(cli, path, level="all"):
    return [s["impl"] for s in plan_json(cli, path, "--optimization", level)["schedule"]]


# "basic" plans QLinearConv as it is (X and Y reordered to channels-last inside the kernel);
# "all" lets the layout pass make 2-D ones com.onyx NhwcQLinearConv between two Transposes.
@pytest.mark.parametrize("level", ["basic", "all"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_qlinearconv_on_onednn_matches_onnxruntime(case, level, tmp_path, onyx_cli):
    import onyx

    spec = CASES[case]
    path = str(tmp_path / "qconv.onnx")
    onnx.save(qlinearconv_model(**spec), path)
    impls = plan_impls(onyx_cli, path, level)
    if level == "all" and len(spec["spatial"]) == 2 and int8_on_onednn(onyx_cli):
        assert impls == ["Transpose_any_tiled", "NhwcQLinearConv_8bit_onednn", "Transpose_any_tiled"]
    else:
        assert_int8_impls(onyx_cli, impls, ["QLinearConv_8bit_onednn"])
    info = np.iinfo(spec.get("xtype", np.uint8))
    x = RNG.integers(info.min, info.max + 1, [1, spec["c"]] + spec["spatial"]).astype(info.dtype)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for threads in (1, 2):
        so = onyx.SessionOptions()
        so.intra_op_num_threads = threads
        so.graph_optimization_level = {"basic": onyx.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                                       "all": onyx.GraphOptimizationLevel.ORT_ENABLE_ALL}[level]
        got = onyx.InferenceSession(path, so).run(None, {"x": x})[0]
        assert got.dtype == want.dtype
        assert_within_one_step_at_ties(got, want, spec.get("y_zero", 100))


@pytest.mark.parametrize("reference", [True, False])
def test_nhwc_qlinearconv_matches_onnxruntime(reference, tmp_path):
    """com.onyx NhwcQLinearConv read from a model: its reference kernel (the oracle of the oneDNN
    one) and the oneDNN kernel, against ORT's QLinearConv on the same values channels-first."""
    import onyx

    spec = CASES["3x3_pad_per_channel"]
    model = qlinearconv_model(**spec)
    path = str(tmp_path / "qconv.onnx")
    onnx.save(model, path)
    nhwc = onnx.ModelProto()
    nhwc.CopyFrom(model)
    node = nhwc.graph.node[0]
    node.domain, node.op_type = "com.onyx", "NhwcQLinearConv"
    nhwc.opset_import.append(helper.make_opsetid("com.onyx", 1))
    h, w = spec["spatial"]
    del nhwc.graph.input[:]
    nhwc.graph.input.append(helper.make_tensor_value_info("x", TensorProto.UINT8, [1, h, w, spec["c"]]))
    nhwc_path = str(tmp_path / "qconv_nhwc.onnx")
    onnx.save(nhwc, nhwc_path)
    x = RNG.integers(0, 256, [1, spec["c"], h, w]).astype(np.uint8)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    sess = onyx.InferenceSession(nhwc_path, reference_kernels=reference)
    got = sess.run(None, {"x": np.ascontiguousarray(x.transpose(0, 2, 3, 1))})[0]
    np.testing.assert_array_equal(got, want.transpose(0, 2, 3, 1))


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
    d = tmp_path_factory.mktemp("qdq")
    return quantize_qdq(float_block(), str(d / "block.onnx"), str(d / "block_qdq.onnx"), (1, 16, 20, 20))


def test_qdq_conv_islands_become_qlinearconv(qdq_block, onyx_cli):
    skip_without_int8_onednn(onyx_cli)
    plan = plan_json(onyx_cli, qdq_block[1])
    impls = [s["impl"] for s in plan["schedule"]]
    assert impls.count("NhwcQLinearConv_8bit_onednn") == 2, impls
    assert not any("Conv_f32" in i for i in impls), impls
    # Channels-last from the first QuantizeLinear to the pooling: one Transpose in, one out.
    assert impls.count("Transpose_any_tiled") == 2, impls
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
    # The int8 path differs from fp32 by several quantization steps; onyx and ORT agree but for a
    # near-tie rounded the other way now and then (oneDNN adds the zero point before rounding),
    # one step of the output's scale on a few elements.
    model = onnx.load(qdq)
    out_dq = [n for n in model.graph.node if n.output[0] == model.graph.output[0].name][0]
    step = [numpy_helper.to_array(i) for i in model.graph.initializer if i.name == out_dq.input[1]][0]
    assert np.abs(want - ref32).max() > 2 * step
    diff = np.abs(got - want)
    assert diff.max() <= step * 1.001 and (diff > 0).mean() <= 0.005, (diff.max(), (diff > 0).sum())


@pytest.mark.parametrize("reference", [False, True])
def test_uint8_max_pool_after_qlinearconv_matches_onnxruntime(reference, tmp_path, onyx_cli):
    """QLinearConv -> MaxPool on uint8 (a QOperator model's stem): with the fast kernels the pool
    stays channels-last on oneDNN's 8-bit pooling; with the reference kernels MaxPool's reference
    runs; and com.onyx NhwcMaxPool's reference on uint8 is checked on its own below."""
    import onyx

    model = qlinearconv_model(c=8, m=16, spatial=[17, 17], k=3, pad=1, y_zero=0)
    model.graph.node.append(helper.make_node("MaxPool", ["y"], ["p"], name="pool", kernel_shape=[3, 3],
                                             strides=[2, 2], pads=[1, 1, 1, 1]))
    model.graph.output[0].name = "p"
    path = str(tmp_path / "conv_pool.onnx")
    onnx.save(model, path)
    if not reference and int8_on_onednn(onyx_cli):  # channels-last after oneDNN's int8 conv
        assert "NhwcMaxPool_f32_onednn" in plan_impls(onyx_cli, path)
    x = RNG.integers(0, 256, (1, 8, 17, 17)).astype(np.uint8)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = onyx.InferenceSession(path, reference_kernels=reference).run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_nhwc_max_pool_reference_on_8bit(dtype, tmp_path):
    """com.onyx NhwcMaxPool's reference kernel on 8-bit values (padding never wins) against ORT's
    MaxPool on the same values channels-first."""
    import onyx

    et = TensorProto.UINT8 if dtype == np.uint8 else TensorProto.INT8
    attrs = dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    plain = helper.make_graph([helper.make_node("MaxPool", ["x"], ["y"], **attrs)], "p",
                              [helper.make_tensor_value_info("x", et, [1, 5, 9, 9])],
                              [helper.make_tensor_value_info("y", et, None)])
    nhwc = helper.make_graph([helper.make_node("NhwcMaxPool", ["x"], ["y"], domain="com.onyx", **attrs)], "p",
                             [helper.make_tensor_value_info("x", et, [1, 9, 9, 5])],
                             [helper.make_tensor_value_info("y", et, None)])
    paths = []
    for name, g, extra in (("plain", plain, []), ("nhwc", nhwc, [helper.make_opsetid("com.onyx", 1)])):
        paths.append(str(tmp_path / f"{name}.onnx"))
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)] + extra, ir_version=8),
                  paths[-1])
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max + 1, (1, 5, 9, 9)).astype(dtype)
    x[0, :, 0, 0] = info.min  # a corner window whose only real value is the type's lowest
    want = ort.InferenceSession(paths[0], providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = onyx.InferenceSession(paths[1], reference_kernels=True).run(
        None, {"x": np.ascontiguousarray(x.transpose(0, 2, 3, 1))})[0]
    np.testing.assert_array_equal(got, want.transpose(0, 2, 3, 1))


def float_moving_ops():
    """x [1, 8, 12, 12] -> Conv 3x3 (16) -> Relu -> MaxPool 2x2 -> Transpose to NHWC -> Reshape
    [1, 576] -> MatMul [576, 10]: values only moved or selected between the Conv and the MatMul."""
    inits = [numpy_helper.from_array(RNG.normal(0, 0.2, (16, 8, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(RNG.normal(0, 0.1, 16).astype(np.float32), "b"),
             numpy_helper.from_array(np.array([1, 576], np.int64), "shape"),
             numpy_helper.from_array(RNG.normal(0, 0.1, (576, 10)).astype(np.float32), "m")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Transpose", ["p"], ["t"], name="to_nhwc", perm=[0, 2, 3, 1]),
             helper.make_node("Reshape", ["t", "shape"], ["f"], name="flatten"),
             helper.make_node("MatMul", ["f", "m"], ["y"], name="fc")]
    g = helper.make_graph(nodes, "moving", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 12, 12])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_qdq_moving_ops_run_on_8bit_values(tmp_path, onyx_cli):
    """DQ -> MaxPool / Transpose / Reshape -> Q with the same scale and zero point: the op runs on
    the uint8 values (Q(DQ(q)) = q), the pair around it goes, and the outputs stay ORT's."""
    import onyx

    fp32, qdq = quantize_qdq(float_moving_ops(), str(tmp_path / "m.onnx"), str(tmp_path / "m_qdq.onnx"),
                             (1, 8, 12, 12))
    plan = plan_json(onyx_cli, qdq)
    kinds = [f["kind"] for f in plan["fusions"]]
    assert kinds.count("QdqMovingOp") == 3, kinds
    # Left: the input's QuantizeLinear and the output's QuantizeLinear -> DequantizeLinear.
    impls = [s["impl"] for s in plan["schedule"]]
    assert impls.count("QuantizeLinear_f32_hwy") == 2 and impls.count("DequantizeLinear_f32_hwy") == 1, impls
    x = RNG.normal(0, 1, (1, 8, 12, 12)).astype(np.float32)
    want = ort.InferenceSession(qdq, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = onyx.InferenceSession(qdq).run(None, {"x": x})[0]
    model = onnx.load(qdq)
    out_dq = [n for n in model.graph.node if n.output[0] == model.graph.output[0].name][0]
    step = [numpy_helper.to_array(i) for i in model.graph.initializer if i.name == out_dq.input[1]][0]
    assert np.abs(got - want).max() <= step * 1.001


@pytest.mark.parametrize("same", [True, False])
def test_qdq_moving_op_only_with_the_same_scale_and_zero_point(same, tmp_path, onyx_cli):
    """DQ(xq, 0.05, 10) -> Reshape -> Q(s, z): fused only when (s, z) is (0.05, 10); otherwise the
    values are requantized as the model says. Both equal ORT's outputs exactly."""
    import onyx

    s, z = (0.05, 10) if same else (0.07, 3)
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s1"),
             numpy_helper.from_array(np.array(10, np.uint8), "z1"),
             numpy_helper.from_array(np.array(s, np.float32), "s2"),
             numpy_helper.from_array(np.array(z, np.uint8), "z2"),
             numpy_helper.from_array(np.array([6, 4], np.int64), "shape")]
    nodes = [helper.make_node("DequantizeLinear", ["xq", "s1", "z1"], ["x"], name="dq"),
             helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
             helper.make_node("QuantizeLinear", ["r", "s2", "z2"], ["y"], name="q")]
    g = helper.make_graph(nodes, "mv", [helper.make_tensor_value_info("xq", TensorProto.UINT8, [2, 3, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], inits)
    path = str(tmp_path / "mv.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    kinds = [f["kind"] for f in plan_json(onyx_cli, path)["fusions"]]
    assert kinds.count("QdqMovingOp") == (1 if same else 0), kinds
    xq = RNG.integers(0, 256, (2, 3, 4)).astype(np.uint8)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"xq": xq})[0]
    got = onyx.InferenceSession(path).run(None, {"xq": xq})[0]
    np.testing.assert_array_equal(got, want)
