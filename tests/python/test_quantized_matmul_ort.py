"""Int8 matrix products against ONNX Runtime (the oracle).

MatMulInteger and com.microsoft MatMulIntegerToFloat and QGemm with constant int8 B run on oneDNN's int8
matmul (MatMulInteger_8bit_onednn, MatMulIntegerToFloat_8bit_onednn): A's zero point and scale
fed at run time, A of rank 2 and 3, rows fixed and symbolic, per-tensor and per-column B scales,
with and without bias. A model quantized by onnxruntime.quantization.quantize_dynamic
(DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul -> Add) has each chain planned as one
MatMulIntegerToFloat, and matches ORT's outputs."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from qdq_models import assert_int8_impls, plan_json, quantize_qdq, skip_without_int8_onednn

RNG = np.random.default_rng(11)
K, N = 96, 40


def model(op, a_dims, per_column=True, bias=True, b_type="int8", b_zero=None):
    """`b_type` uint8 and/or `b_zero` ("tensor" or "column"): B with a zero point, as ONNX
    Runtime's older dynamic quantization writes its weights (uint8, zero point 119 in ddddocr)."""
    if b_type == "uint8":
        b = RNG.integers(0, 256, (K, N)).astype(np.uint8)
    else:
        b = RNG.integers(-127, 128, (K, N)).astype(np.int8)
    inits = [numpy_helper.from_array(b, "b")]
    bz_name = ""
    if b_zero is not None:
        lo, hi = (100, 140) if b_type == "uint8" else (-20, 20)
        bz = RNG.integers(lo, hi, N if b_zero == "column" else 1).astype(b.dtype)
        inits.append(numpy_helper.from_array(bz if b_zero == "column" else bz.reshape([]), "bz"))
        bz_name = "bz"
    inputs = [helper.make_tensor_value_info("a", TensorProto.UINT8, a_dims),
              helper.make_tensor_value_info("az", TensorProto.UINT8, [])]
    if op == "MatMulInteger":
        node = helper.make_node("MatMulInteger", ["a", "b", "az"] + ([bz_name] if bz_name else []),
                                ["y"], name="mm")
        out = TensorProto.INT32
        opsets = [helper.make_opsetid("", 17)]
    else:
        bs = RNG.uniform(0.001, 0.01, N if per_column else 1).astype(np.float32)
        inits.append(numpy_helper.from_array(bs if per_column else bs.reshape([]), "bs"))
        names = ["a", "b", "as", "bs", "az", bz_name]
        if bias:
            inits.append(numpy_helper.from_array(RNG.normal(0, 1, N).astype(np.float32), "bias"))
            names.append("bias")
        inputs.append(helper.make_tensor_value_info("as", TensorProto.FLOAT, []))
        node = helper.make_node("MatMulIntegerToFloat", names, ["y"], name="mm", domain="com.microsoft")
        out = TensorProto.FLOAT
        opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    g = helper.make_graph([node], "mm", inputs, [helper.make_tensor_value_info("y", out, None)], inits)
    return helper.make_model(g, opset_imports=opsets, ir_version=8)


CASES = {
    "integer_static": ("MatMulInteger", [5, K], {}),
    "integer_symbolic": ("MatMulInteger", ["batch", "seq", K], {}),
    "to_float_per_column_bias": ("MatMulIntegerToFloat", [3, 17, K], {}),
    "to_float_per_tensor_no_bias": ("MatMulIntegerToFloat", ["rows", K], dict(per_column=False, bias=False)),
    "integer_uint8_b": ("MatMulInteger", [5, K], dict(b_type="uint8")),
    "integer_uint8_b_zero": ("MatMulInteger", ["rows", K], dict(b_type="uint8", b_zero="tensor")),
    "integer_int8_b_zero_column": ("MatMulInteger", [2, 7, K], dict(b_zero="column")),
    "to_float_uint8_b_zero": ("MatMulIntegerToFloat", [3, 17, K], dict(b_type="uint8", b_zero="tensor")),
    "to_float_uint8_b_zero_column": ("MatMulIntegerToFloat", ["rows", K],
                                     dict(b_type="uint8", b_zero="column", bias=False)),
}


def impls(cli, path):
    return [s["impl"] for s in plan_json(cli, path)["schedule"]]


@pytest.mark.parametrize("case", sorted(CASES))
def test_int8_matmul_on_onednn_matches_onnxruntime(case, tmp_path, onyx_cli):
    import onyx

    op, dims, kw = CASES[case]
    path = str(tmp_path / "mm.onnx")
    onnx.save(model(op, dims, **kw), path)
    assert_int8_impls(onyx_cli, impls(onyx_cli, path), [op + "_8bit_onednn"])
    want_sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for threads in (1, 2):
        so = onyx.SessionOptions()
        so.intra_op_num_threads = threads
        sess = onyx.InferenceSession(path, so)
        if all(isinstance(d, int) for d in dims):
            shapes = [dims]
        else:  # symbolic rows: several row counts through one session
            shapes = [[5, K], [1, K], [33, K]] if len(dims) == 2 else [[1, 1, K], [2, 33, K], [3, 17, K]]
        for shape in shapes:
            feeds = {"a": RNG.integers(0, 256, shape).astype(np.uint8),
                     "az": np.array(RNG.integers(0, 256), np.uint8)}
            if op != "MatMulInteger":
                feeds["as"] = np.array(RNG.uniform(0.01, 0.05), np.float32)
            want = want_sess.run(None, feeds)[0]
            got = sess.run(None, feeds)[0]
            assert got.dtype == want.dtype
            if op == "MatMulInteger":
                np.testing.assert_array_equal(got, want)
            else:
                np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def float_mlp():
    """x [batch, seq, 64] -> MatMul 64x96 + bias -> Relu -> MatMul 96x32 + bias."""
    inits = [numpy_helper.from_array(RNG.normal(0, 0.2, (64, 96)).astype(np.float32), "w1"),
             numpy_helper.from_array(RNG.normal(0, 0.1, 96).astype(np.float32), "b1"),
             numpy_helper.from_array(RNG.normal(0, 0.2, (96, 32)).astype(np.float32), "w2"),
             numpy_helper.from_array(RNG.normal(0, 0.1, 32).astype(np.float32), "b2")]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"], name="mm1"),
             helper.make_node("Add", ["m1", "b1"], ["a1"], name="add1"),
             helper.make_node("Relu", ["a1"], ["r1"], name="relu"),
             helper.make_node("MatMul", ["r1", "w2"], ["m2"], name="mm2"),
             helper.make_node("Add", ["m2", "b2"], ["y"], name="add2")]
    g = helper.make_graph(nodes, "mlp",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.fixture(scope="module")
def dynamic_mlp(tmp_path_factory):
    from onnxruntime.quantization import QuantType, quantize_dynamic

    d = tmp_path_factory.mktemp("dyn")
    fp32, q = str(d / "mlp.onnx"), str(d / "mlp_dynamic.onnx")
    onnx.save(float_mlp(), fp32)
    quantize_dynamic(fp32, q, weight_type=QuantType.QInt8)
    return q


def test_dynamic_chains_become_matmul_integer_to_float(dynamic_mlp, onyx_cli):
    skip_without_int8_onednn(onyx_cli)
    plan = plan_json(onyx_cli, dynamic_mlp, "--shape", "x=2x9x64")
    got = [s["impl"] for s in plan["schedule"]]
    assert got.count("MatMulIntegerToFloat_8bit_onednn") == 2, got
    assert not any(i.startswith(("MatMulInteger_", "Cast")) for i in got), got
    assert [f["kind"] for f in plan["fusions"]].count("DynamicMatMul") == 2


@pytest.mark.parametrize("threads", [1, 2])
def test_dynamic_mlp_matches_onnxruntime(dynamic_mlp, threads):
    import onyx

    want_sess = ort.InferenceSession(dynamic_mlp, providers=["CPUExecutionProvider"])
    so = onyx.SessionOptions()
    so.intra_op_num_threads = threads
    sess = onyx.InferenceSession(dynamic_mlp, so)
    for shape in ((1, 5, 64), (2, 9, 64), (2, 9, 64), (1, 1, 64)):
        x = RNG.normal(0, 1, shape).astype(np.float32)
        want = want_sess.run(None, {"x": x})[0]
        got = sess.run(None, {"x": x})[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def float_gemm_mlp():
    """x [rows, 64] -> Gemm 64x96 + bias -> Relu -> Gemm 96x32 + bias: the bias inside the Gemm
    is quantized to int32 by quantize_static (a DequantizeLinear of int32 in the QDQ model)."""
    inits = [numpy_helper.from_array(RNG.normal(0, 0.2, (64, 96)).astype(np.float32), "w1"),
             numpy_helper.from_array(RNG.normal(0, 0.1, 96).astype(np.float32), "b1"),
             numpy_helper.from_array(RNG.normal(0, 0.2, (96, 32)).astype(np.float32), "w2"),
             numpy_helper.from_array(RNG.normal(0, 0.1, 32).astype(np.float32), "b2")]
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["g1"], name="gemm1"),
             helper.make_node("Relu", ["g1"], ["r1"], name="relu"),
             helper.make_node("Gemm", ["r1", "w2", "b2"], ["y"], name="gemm2")]
    g = helper.make_graph(nodes, "gemm_mlp",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["rows", 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.fixture(scope="module", params=["matmul", "gemm"])
def qdq_mlp(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("qdq")
    matmul = request.param == "matmul"
    return quantize_qdq(float_mlp() if matmul else float_gemm_mlp(), str(d / "mlp.onnx"),
                        str(d / "mlp_qdq.onnx"), (1, 9, 64) if matmul else (9, 64), samples=4)


def test_qdq_matmuls_become_matmul_integer_to_float(qdq_mlp, onyx_cli):
    skip_without_int8_onednn(onyx_cli)
    rank = len(onnx.load(qdq_mlp[0]).graph.input[0].type.tensor_type.shape.dim)
    shape = "x=1x9x64" if rank == 3 else "x=9x64"
    plan = plan_json(onyx_cli, qdq_mlp[1], "--shape", shape)
    got = [s["impl"] for s in plan["schedule"]]
    assert got.count("MatMulIntegerToFloat_8bit_onednn") == 2, got
    assert not any(i.startswith(("MatMul_f32", "Gemm_f32")) for i in got), got
    assert [f["kind"] for f in plan["fusions"]].count("QdqMatMul") == 2


@pytest.mark.parametrize("threads", [1, 2])
def test_qdq_mlp_matches_onnxruntime(qdq_mlp, threads):
    """Within one quantization step of ORT's int8 outputs (the int8 product and the float one
    round differently), far inside ORT's own int8-versus-fp32 difference."""
    import onyx

    fp32, q = qdq_mlp
    want_sess = ort.InferenceSession(q, providers=["CPUExecutionProvider"])
    ref_sess = ort.InferenceSession(fp32, providers=["CPUExecutionProvider"])
    so = onyx.SessionOptions()
    so.intra_op_num_threads = threads
    sess = onyx.InferenceSession(q, so)
    step = onnx.numpy_helper.to_array(
        [i for i in onnx.load(q).graph.initializer if i.name == "y_scale"][0])
    rank = len(onnx.load(fp32).graph.input[0].type.tensor_type.shape.dim)
    for shape in ((1, 9, 64), (2, 5, 64)) if rank == 3 else ((9, 64), (3, 64)):
        x = RNG.normal(0, 1, shape).astype(np.float32)
        want = want_sess.run(None, {"x": x})[0]
        got = sess.run(None, {"x": x})[0]
        diff = np.abs(got - want)
        assert diff.max() <= step * 1.001, (diff.max(), step)
        assert diff.max() < np.abs(want - ref_sess.run(None, {"x": x})[0]).max()


@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("output", ["float", "uint8"])
@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_qgemm_on_onednn_matches_onnxruntime(trans_b, output, alpha, tmp_path, onyx_cli):
    """com.microsoft QGemm with constant int8 B (zero point 0), an int32 C row, transB, alpha, a
    float or a requantized uint8 output: QGemm_8bit_onednn, equal to ORT."""
    import onyx

    m, k, n = 6, 80, 24
    b = RNG.integers(-64, 64, (n, k) if trans_b else (k, n)).astype(np.int8)
    inits = [numpy_helper.from_array(np.array(0.03, np.float32), "as"),
             numpy_helper.from_array(np.array(121, np.uint8), "az"),
             numpy_helper.from_array(b, "b"),
             numpy_helper.from_array(RNG.uniform(0.002, 0.02, n).astype(np.float32), "bs"),
             numpy_helper.from_array(np.zeros(n, np.int8), "bz"),
             numpy_helper.from_array(RNG.integers(-3000, 3000, n).astype(np.int32), "c")]
    names = ["a", "as", "az", "b", "bs", "bz", "c"]
    out = TensorProto.FLOAT
    if output == "uint8":
        inits += [numpy_helper.from_array(np.array(0.2, np.float32), "ys"),
                  numpy_helper.from_array(np.array(37, np.uint8), "yz")]
        names += ["ys", "yz"]
        out = TensorProto.UINT8
    node = helper.make_node("QGemm", names, ["y"], domain="com.microsoft", transB=trans_b, alpha=alpha)
    g = helper.make_graph([node], "qgemm", [helper.make_tensor_value_info("a", TensorProto.UINT8, [m, k])],
                          [helper.make_tensor_value_info("y", out, None)], inits)
    path = str(tmp_path / "qgemm.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                                  helper.make_opsetid("com.microsoft", 1)],
                                ir_version=8), path)
    assert_int8_impls(onyx_cli, impls(onyx_cli, path), ["QGemm_8bit_onednn"])
    a = RNG.integers(0, 256, (m, k)).astype(np.uint8)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"a": a})[0]
    got = onyx.InferenceSession(path).run(None, {"a": a})[0]
    assert got.dtype == want.dtype
    if output == "uint8":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
