"""docs/semantics/matmul_gemm.md: MatMul and Gemm on both kernels against float64 products, the
bounds on cancelling inputs, and the stated messages."""
import numpy as np
import pytest

from semantics_util import U, cancelling, error_of, expect_kernel, one_node, ratio, rules, run

RNG = np.random.default_rng(41)
BOTH = [(False, "MatMul_f32_onednn"), (True, "matmul_blocked_gemm")]


def f64(a):
    return np.asarray(a, np.float64)


@rules("MATMUL-1")
@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("sa,sb", [
    ((3,), (3,)), ((3,), (3, 4)), ((2, 3), (3,)), ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)),
    ((2, 1, 2, 3), (3, 3, 4)), ((1, 2, 3), (4, 3, 5)),
])
def test_numpy_matmul_shapes(reference, sa, sb):
    a = RNG.standard_normal(sa).astype(np.float32)
    b = RNG.standard_normal(sb).astype(np.float32)
    y = run(one_node("MatMul", [("a", list(sa)), ("b", list(sb))], {}), {"a": a, "b": b},
            reference)[0]
    exact = f64(a) @ f64(b)
    assert y.shape == exact.shape
    k = sa[-1]
    assert ratio(y, exact, k * U * (np.abs(f64(a)) @ np.abs(f64(b)))) <= 1.0


@rules("MATMUL-2")
@pytest.mark.parametrize("reference", [False, True])
def test_empty_k(reference):
    m = one_node("MatMul", [("a", [2, 0]), ("b", [0, 3])], {})
    y = run(m, {"a": np.zeros((2, 0), np.float32), "b": np.zeros((0, 3), np.float32)}, reference)[0]
    np.testing.assert_array_equal(y, np.zeros((2, 3), np.float32))


@rules("MATMUL-3")
@pytest.mark.parametrize("reference", [False, True])
def test_rank_zero(reference):
    m = one_node("MatMul", [("a", []), ("b", [3])], {})
    assert "inputs 0 'a' float[] and 1 'b' float[3] must have rank >= 1" in error_of(
        m, {"a": np.float32(1), "b": np.zeros(3, np.float32)}, reference)


@rules("MATMUL-4")
@pytest.mark.parametrize("reference", [False, True])
def test_k_differs(reference):
    m = one_node("MatMul", [("a", [2, 3]), ("b", [4, 5])], {})
    assert ("MatMul node 'n0' (#0): input 1 'b' has type float[4,5]; expected K = 3 to match "
            "input 0 'a' float[2,3]") in error_of(
        m, {"a": np.zeros((2, 3), np.float32), "b": np.zeros((4, 5), np.float32)}, reference)


@rules("MATMUL-5")
@pytest.mark.parametrize("reference", [False, True])
def test_batch_dims(reference):
    m = one_node("MatMul", [("a", [2, 2, 3]), ("b", [3, 3, 5])], {})
    assert ("batch dims of float[2,2,3] and float[3,3,5] do not broadcast: cannot broadcast dim 2 "
            "with dim 3 at axis 0") in error_of(
        m, {"a": np.zeros((2, 2, 3), np.float32), "b": np.zeros((3, 3, 5), np.float32)}, reference)


@rules("MATMUL-6")
@pytest.mark.parametrize("reference,kernel", BOTH)
@pytest.mark.parametrize("m_,k,n,const_b", [
    (7, 33, 5, False), (64, 256, 17, True), (1, 1000, 3, True), (5, 1, 4, False),
    (3, 4, 2, True), (17, 129, 31, False),
])
def test_bound(onyx_cli, reference, kernel, m_, k, n, const_b):
    for trial in range(4):
        a = cancelling(RNG, (m_, k)) if trial % 2 else RNG.standard_normal((m_, k)).astype(np.float32)
        b = cancelling(RNG, (k, n))
        if const_b:
            model = one_node("MatMul", [("a", [m_, k])], {}, [("b", b)])
            feeds = {"a": a}
        else:
            model = one_node("MatMul", [("a", [m_, k]), ("b", [k, n])], {})
            feeds = {"a": a, "b": b}
        if trial == 0:
            expect_kernel(onyx_cli, model, kernel, reference)
        y = run(model, feeds, reference)[0]
        assert ratio(y, f64(a) @ f64(b), k * U * (np.abs(f64(a)) @ np.abs(f64(b)))) <= 1.0


def gemm_exact(a, b, c, alpha, beta, ta, tb, absolute=False):
    a, b = f64(a), f64(b)
    a, b = (a.T if ta else a), (b.T if tb else b)
    c = np.zeros(1) if c is None else f64(c)
    if absolute:
        return abs(alpha) * (np.abs(a) @ np.abs(b)) + abs(beta) * np.abs(c)
    return alpha * (a @ b) + beta * c


O, G = "Gemm_f32_onednn", "gemm_blocked_gemm"
GEMM_CASES = [  # (M, K, N, transA, transB, alpha, beta, C shape or None, default kernel with B
    # an input, with B a constant) on x86-64
    (9, 40, 13, 0, 1, 0.7, -1.3, (13,), (G, O)),
    (9, 40, 13, 1, 0, 1.0, 1.0, (9, 1), (G, G)),
    (4, 7, 3, 1, 1, -2.5, 0.5, (), (G, O)),
    (6, 17, 5, 0, 0, 1.0, 1.0, (6, 5), (O, O)),
    (6, 17, 5, 0, 0, 1.0, 1.0, None, (O, O)),
    (33, 64, 19, 0, 1, 1.0, 2.0, (1, 19), (G, O)),
]


@rules("GEMM-1", "GEMM-6")
@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("const_b", [False, True])
@pytest.mark.parametrize("m_,k,n,ta,tb,alpha,beta,cs,kernels", GEMM_CASES)
def test_gemm(onyx_cli, reference, const_b, m_, k, n, ta, tb, alpha, beta, cs, kernels):
    sa = (k, m_) if ta else (m_, k)
    sb = (n, k) if tb else (k, n)
    a, b = cancelling(RNG, sa), cancelling(RNG, sb)
    c = None if cs is None else cancelling(RNG, cs)
    inputs, inits, feeds = [("a", list(sa))], [], {"a": a}
    if const_b:
        inits.append(("b", b))
    else:
        inputs.append(("b", list(sb)))
        feeds["b"] = b
    if c is not None:
        if const_b:
            inits.append(("c", c))
        else:
            inputs.append(("c", list(cs)))
            feeds["c"] = c
    model = one_node("Gemm", inputs, {"transA": ta, "transB": tb, "alpha": alpha, "beta": beta},
                     inits)
    expect_kernel(onyx_cli, model, G if reference else kernels[const_b], reference)
    y = run(model, feeds, reference)[0]
    exact = gemm_exact(a, b, c, alpha, beta, ta, tb)
    assert y.shape == (m_, n)
    assert ratio(y, exact, (k + 2) * U * gemm_exact(a, b, c, alpha, beta, ta, tb, True)) <= 1.0


@rules("GEMM-2")
@pytest.mark.parametrize("reference", [False, True])
def test_gemm_empty_k(reference):
    c = RNG.standard_normal(5).astype(np.float32)
    m = one_node("Gemm", [("a", [2, 0]), ("b", [0, 5]), ("c", [5])], {"beta": 2.0})
    y = run(m, {"a": np.zeros((2, 0), np.float32), "b": np.zeros((0, 5), np.float32), "c": c},
            reference)[0]
    np.testing.assert_array_equal(y, np.broadcast_to(2 * c, (2, 5)))


def gemm_error(sa, sb, sc, reference, **attrs):
    ins = [("a", list(sa)), ("b", list(sb))] + ([("c", list(sc))] if sc else [])
    feeds = {n: np.zeros(s, np.float32) for n, s in zip("abc", (sa, sb, sc)) if s is not None}
    return error_of(one_node("Gemm", ins, attrs), feeds, reference)


@rules("GEMM-3")
@pytest.mark.parametrize("reference", [False, True])
def test_gemm_rank(reference):
    assert "input 0 'a' has type float[2,2,3]; expected a matrix (rank 2)" in gemm_error(
        (2, 2, 3), (3, 5), None, reference)


@rules("GEMM-4")
@pytest.mark.parametrize("reference", [False, True])
def test_gemm_k(reference):
    assert ("input 1 'b' has type float[4,5]; expected K = 3 to match input 0 'a' float[2,3] "
            "(transA=0, transB=0)") in gemm_error((2, 3), (4, 5), None, reference)


@rules("GEMM-5")
@pytest.mark.parametrize("reference", [False, True])
def test_gemm_c(reference):
    assert ("input 2 'c' has type float[3]; expected it to broadcast to the output [2,5]"
            in gemm_error((2, 3), (3, 5), (3,), reference))
