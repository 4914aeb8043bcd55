"""Gemm in every form converters emit, against ONNX Runtime: any alpha and beta, transposed
operands, and C as a scalar, a row [N], a column [M, 1] (KMeans from skl2onnx: alpha -2, C the
rows' squared norms computed at run time) or a full [M, N]; with a symbolic row count, so the
first runs go through the shape-generic plan and later ones through the plan made for the shape.
oneDNN offers only its slow reference matmul for some of these forms (an output scale with a
column C): onyx's own GEMM takes them instead; the values must agree either way."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx

RNG = np.random.default_rng(5)
K, N = 8, 5


def gemm_model(alpha, beta, trans_b, c_form):
    """y = Gemm(x [M, K], B, C) with C a constant of `c_form` or, for "column_runtime",
    ReduceSumSquare(x) [M, 1] as skl2onnx's KMeans computes it."""
    b = RNG.standard_normal((N, K) if trans_b else (K, N)).astype(np.float32)
    inits = [numpy_helper.from_array(b, "B")]
    nodes = []
    if c_form == "column_runtime":
        nodes.append(helper.make_node("ReduceSumSquare", ["x"], ["C"], axes=[1], keepdims=1))
    elif c_form is not None:
        shape = {"scalar": [], "row": [N], "row2d": [1, N]}[c_form]
        inits.append(numpy_helper.from_array(RNG.standard_normal(shape).astype(np.float32), "C"))
    inputs = ["x", "B"] + (["C"] if c_form is not None else [])
    nodes.append(helper.make_node("Gemm", inputs, ["y"], alpha=alpha, beta=beta, transB=trans_b))
    g = helper.make_graph(nodes, "gemm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["M", K])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["M", N])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


@pytest.mark.parametrize("c_form", [None, "scalar", "row", "row2d", "column_runtime"])
@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (-2.0, 1.0), (0.5, -3.0)])
@pytest.mark.parametrize("trans_b", [0, 1])
def test_gemm_forms_match_onnxruntime(c_form, alpha, beta, trans_b):
    if c_form is None and beta != 1.0:
        pytest.skip("beta needs C")
    model = gemm_model(alpha, beta, trans_b, c_form)
    want_sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    sess = onyx.InferenceSession(model, threads=1)
    for rows in (1, 100, 3):
        x = RNG.standard_normal((rows, K)).astype(np.float32)
        want = want_sess.run(None, {"x": x})[0]
        for _ in range(10):  # past specialize_after_runs: the shape's own plan runs too
            np.testing.assert_allclose(sess.run(None, {"x": x})[0], want, rtol=1e-5, atol=1e-5)
