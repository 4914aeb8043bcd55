"""MatMul / Gemm fusion rules into com.onyx FusedMatMul: activation, bias, residual, scale,
BatchNormalization and Transpose folding; each fires on a minimal graph (fused and unfused
outputs agree within 1e-5, both match ONNX Runtime) and stays away where it would be wrong."""
import numpy as np
import pytest

from fusion_check import check, model, node

RNG = np.random.default_rng(9)
M, K, N = 5, 7, 6


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("c_shape", [None, [N], [1, N], []])
def test_gemm_relu(onyx_cli, tmp_path, c_shape):
    inits = [("B", rand(N, K))]
    inputs = ["a", "B"]
    if c_shape is not None:
        inits.append(("C", rand(*c_shape)))
        inputs.append("C")
    m = model([node("Gemm", inputs, ["g"], transB=1, alpha=0.5, beta=2.0),
               node("Relu", ["g"], ["y"])], [("a", [M, K])], [("y", [M, N])], inits)
    p = check(onyx_cli, tmp_path, m, {"a": rand(M, K)}, fires=["MatMulActivation"])
    assert p["nodes"] == 1


def test_gemm_with_full_c_is_a_residual(onyx_cli, tmp_path):
    m = model([node("Gemm", ["a", "b", "c"], ["g"]), node("Sigmoid", ["g"], ["y"])],
              [("a", [M, K]), ("b", [K, N]), ("c", [M, N])], [("y", [M, N])])
    p = check(onyx_cli, tmp_path, m, {"a": rand(M, K), "b": rand(K, N), "c": rand(M, N)},
              fires=["MatMulActivation"])
    assert p["nodes"] == 1


def test_gemm_not_with_column_bias(onyx_cli, tmp_path):
    # C of shape [M, 1] varies along the rows: not a FusedMatMul bias, so Gemm stays Gemm.
    m = model([node("Gemm", ["a", "B", "C"], ["g"]), node("Relu", ["g"], ["y"])],
              [("a", [M, K])], [("y", [M, N])], [("B", rand(K, N)), ("C", rand(M, 1))])
    check(onyx_cli, tmp_path, m, {"a": rand(M, K)}, absent=["MatMulActivation"])


def test_matmul_bias_gelu_3d(onyx_cli, tmp_path):
    m = model([node("MatMul", ["a", "W"], ["mm"]), node("Add", ["bias", "mm"], ["ab"]),
               node("Gelu", ["ab"], ["y"])],
              [("a", [2, M, K])], [("y", [2, M, N])], [("W", rand(K, N)), ("bias", rand(N))],
              opset=20)
    p = check(onyx_cli, tmp_path, m, {"a": rand(2, M, K)}, fires=["MatMulBias", "MatMulActivation"])
    assert p["nodes"] == 1


def test_matmul_bias_not_when_it_varies_along_rows(onyx_cli, tmp_path):
    m = model([node("MatMul", ["a", "W"], ["mm"]), node("Add", ["mm", "bias"], ["y"])],
              [("a", [M, K])], [("y", [M, N])], [("W", rand(K, N)), ("bias", rand(M, 1))])
    check(onyx_cli, tmp_path, m, {"a": rand(M, K)}, absent=["MatMulBias"])


def test_matmul_residual_then_tanh(onyx_cli, tmp_path):
    m = model([node("MatMul", ["a", "W"], ["mm"]), node("Add", ["mm", "z"], ["s"]),
               node("Tanh", ["s"], ["y"])],
              [("a", [3, M, K]), ("z", [3, M, N])], [("y", [3, M, N])], [("W", rand(K, N))])
    p = check(onyx_cli, tmp_path, m, {"a": rand(3, M, K), "z": rand(3, M, N)},
              fires=["MatMulResidual", "MatMulActivation"])
    assert p["nodes"] == 1


def test_matmul_residual_not_when_broadcasting(onyx_cli, tmp_path):
    m = model([node("MatMul", ["a", "b"], ["mm"]), node("Add", ["mm", "z"], ["y"])],
              [("a", [M, K]), ("b", [K, N]), ("z", [1, N])], [("y", [M, N])])
    check(onyx_cli, tmp_path, m, {"a": rand(M, K), "b": rand(K, N), "z": rand(1, N)},
          absent=["MatMulResidual", "MatMulBias"])


@pytest.mark.parametrize("op", ["Mul", "Div"])
def test_matmul_scale(onyx_cli, tmp_path, op):
    m = model([node("MatMul", ["a", "b"], ["mm"]), node(op, ["mm", "s"], ["y"])],
              [("a", [2, 3, M, K]), ("b", [2, 3, K, N])], [("y", [2, 3, M, N])],
              [("s", np.array(8.0, np.float32))])
    p = check(onyx_cli, tmp_path, m, {"a": rand(2, 3, M, K), "b": rand(2, 3, K, N)},
              fires=["MatMulScale"])
    assert p["nodes"] == 1


def test_matmul_scale_not_for_a_vector(onyx_cli, tmp_path):
    m = model([node("MatMul", ["a", "b"], ["mm"]), node("Mul", ["mm", "s"], ["y"])],
              [("a", [M, K]), ("b", [K, N])], [("y", [M, N])], [("s", rand(N))])
    check(onyx_cli, tmp_path, m, {"a": rand(M, K), "b": rand(K, N)}, absent=["MatMulScale"])


@pytest.mark.parametrize("op,trans_b", [("MatMul", 0), ("Gemm", 1)])
def test_batchnorm_after_matmul(onyx_cli, tmp_path, op, trans_b):
    w = rand(N, K) if trans_b else rand(K, N)
    attrs = {"transB": trans_b} if op == "Gemm" else {}
    inits = [("W", w), ("gamma", RNG.uniform(0.5, 2, N).astype(np.float32)), ("beta", rand(N)),
             ("mean", rand(N)), ("var", RNG.uniform(0.1, 2, N).astype(np.float32))]
    m = model([node(op, ["a", "W"], ["mm"], **attrs),
               node("BatchNormalization", ["mm", "gamma", "beta", "mean", "var"], ["y"])],
              [("a", [M, K])], [("y", [M, N])], inits, opset=15)
    p = check(onyx_cli, tmp_path, m, {"a": rand(M, K)}, fires=["MatMulBatchNorm"])
    assert p["nodes"] == 1


def test_batchnorm_not_after_3d_matmul(onyx_cli, tmp_path):
    # BatchNormalization's channel axis is 1, not the product's columns.
    inits = [("W", rand(K, N)), ("gamma", rand(3)), ("beta", rand(3)), ("mean", rand(3)),
             ("var", RNG.uniform(0.1, 2, 3).astype(np.float32))]
    m = model([node("MatMul", ["a", "W"], ["mm"]),
               node("BatchNormalization", ["mm", "gamma", "beta", "mean", "var"], ["y"])],
              [("a", [2, 3, M, K])], [("y", [2, 3, M, N])], inits, opset=15)
    check(onyx_cli, tmp_path, m, {"a": rand(2, 3, M, K)}, absent=["MatMulBatchNorm"])


@pytest.mark.parametrize("which", ["A", "B", "both"])
def test_transpose_folds_into_matmul(onyx_cli, tmp_path, which):
    nodes, a, b = [], "a", "b"
    a_shape, b_shape = [2, M, K], [2, K, N]
    if which in ("A", "both"):
        a_shape = [2, K, M]
        nodes.append(node("Transpose", ["a"], ["at"], perm=[0, 2, 1]))
        a = "at"
    if which in ("B", "both"):
        b_shape = [2, N, K]
        nodes.append(node("Transpose", ["b"], ["bt"], perm=[0, 2, 1]))
        b = "bt"
    nodes.append(node("MatMul", [a, b], ["y"]))
    m = model(nodes, [("a", a_shape), ("b", b_shape)], [("y", [2, M, N])])
    p = check(onyx_cli, tmp_path, m, {"a": rand(*a_shape), "b": rand(*b_shape)},
              fires=["TransposeMatMul"])
    assert p["nodes"] == 1


def test_transpose_folds_into_gemm(onyx_cli, tmp_path):
    m = model([node("Transpose", ["a"], ["at"]), node("Gemm", ["at", "B", "C"], ["y"], transA=1)],
              [("a", [M, K])], [("y", [M, N])], [("B", rand(K, N)), ("C", rand(N))])
    p = check(onyx_cli, tmp_path, m, {"a": rand(M, K)}, fires=["TransposeMatMul"])
    assert p["nodes"] == 1


def test_transpose_not_folded_when_it_moves_batch_axes(onyx_cli, tmp_path):
    m = model([node("Transpose", ["a"], ["at"], perm=[1, 0, 2]), node("MatMul", ["at", "b"], ["y"])],
              [("a", [M, 2, K]), ("b", [2, K, N])], [("y", [2, M, N])])
    check(onyx_cli, tmp_path, m, {"a": rand(M, 2, K), "b": rand(2, K, N)},
          absent=["TransposeMatMul"])


def test_transpose_not_folded_when_shared(onyx_cli, tmp_path):
    m = model([node("Transpose", ["a"], ["at"], perm=[1, 0]), node("MatMul", ["at", "b"], ["y"]),
               node("Relu", ["at"], ["r"])],
              [("a", [K, M]), ("b", [K, N])], [("y", [M, N]), ("r", [M, K])])
    check(onyx_cli, tmp_path, m, {"a": rand(K, M), "b": rand(K, N)}, absent=["TransposeMatMul"])
