"""docs/semantics/conv.md: Conv on every x86-64 kernel against a float64 convolution, the bounds
on random and cancelling inputs, and the stated messages."""
import numpy as np
import pytest
from onnx import TensorProto

import oracles
from semantics_util import (U, cancelling, error_of, expect_kernel, kernel_of, one_node, ratio,
                            rules, run)

RNG = np.random.default_rng(31)

# (x shape, w shape, attrs, kernel the default plan gives on x86-64); the reference kernel runs
# each as well.
DIRECT = [
    ([2, 8, 9, 9], [6, 8, 3, 3], {"pads": [1, 1, 1, 1]}, "NhwcConv_f32_onednn"),
    ([1, 16, 14, 14], [16, 16, 3, 3], {"pads": [1, 1, 1, 1]}, "NhwcConv_f32_onednn"),
    ([1, 37, 6, 5], [5, 37, 1, 1], {}, "NhwcConv_f32_onednn"),
    ([1, 5, 11, 12], [7, 5, 3, 2], {"dilations": [2, 3], "strides": [2, 1], "pads": [1, 0, 2, 1]},
     "NhwcConv_f32_onednn"),
    ([1, 8, 10, 10], [8, 1, 3, 3], {"group": 8, "pads": [1, 1, 1, 1]}, "NhwcConv_f32_onednn"),
    ([2, 6, 9, 9], [4, 3, 3, 3], {"group": 2, "strides": [2, 2]}, "NhwcConv_f32_onednn"),
    ([1, 19, 3, 3], [4, 19, 3, 3], {}, "NhwcConv_f32_small_hwy"),
    ([1, 19, 10], [4, 19, 3], {"strides": [2]}, "Conv_f32_small_hwy"),
]
WINOGRAD = [
    ([1, 16, 12, 12], [64, 16, 3, 3], "NhwcConv_f32_hwy/winograd"),
    ([2, 16, 13, 11], [64, 16, 3, 3], "NhwcConv_f32_hwy/winograd"),
    ([1, 32, 14, 14], [48, 32, 3, 3], "NhwcConv_f32_onednn/winograd"),
]


def conv_case(xs, ws, attrs, bias=True, w=None):
    w = RNG.standard_normal(ws).astype(np.float32) if w is None else w
    b = RNG.standard_normal(ws[0]).astype(np.float32) if bias else None
    inits = [("w", w)] + ([("b", b)] if bias else [])
    return one_node("Conv", [("x", list(xs))], attrs, inits), w, b


def oracle_args(attrs):
    return dict(strides=attrs.get("strides"), pads=attrs.get("pads"),
                dilations=attrs.get("dilations"), group=attrs.get("group", 1),
                auto_pad=attrs.get("auto_pad", "NOTSET"))


def window_ratio(m, x, w, b, attrs, reference=False, algo="auto"):
    """The c of |Y - exact| <= c * K * u * S_win on input x."""
    y = run(m, {"x": x}, reference, algo)[0]
    exact = oracles.conv(x, w, b, **oracle_args(attrs))
    s = oracles.conv(np.abs(x), np.abs(w), None if b is None else np.abs(b), **oracle_args(attrs))
    k = w.shape[1] * int(np.prod(w.shape[2:])) + (b is not None)
    assert y.shape == exact.shape
    return ratio(y, exact, k * U * s)


@rules("CONV-1", "CONV-11")
@pytest.mark.parametrize("xs,ws,attrs,kernel", DIRECT)
@pytest.mark.parametrize("reference", [False, True])
def test_direct_kernels_meet_the_window_bound(onyx_cli, xs, ws, attrs, kernel, reference):
    for bias in (True, False):
        m, w, b = conv_case(xs, ws, attrs, bias, w=cancelling(RNG, ws, 1e2))
        expect_kernel(onyx_cli, m, "conv_im2col_gemm" if reference else kernel, reference)
        for x in (cancelling(RNG, xs), RNG.standard_normal(xs).astype(np.float32)):
            assert window_ratio(m, x, w, b, attrs, reference) <= 1.0


@rules("CONV-1")
def test_hand_computed_value():
    # 1-D, two groups, stride 2, dilation 2, pads (1, 0), bias.
    x = np.arange(2 * 6, dtype=np.float32).reshape(1, 2, 6)   # channel 0: 0..5, channel 1: 6..11
    w = np.array([[[1, 10]], [[100, 1000]]], np.float32)       # [M=2, C/group=1, k=2]
    b = np.array([0.5, -0.5], np.float32)
    m = one_node("Conv", [("x", [1, 2, 6])], {"group": 2, "strides": [2], "dilations": [2],
                                               "pads": [1, 0]}, [("w", w), ("b", b)])
    # Taps at o*2 - 1 + {0, 2}: o = 0: (-1 -> 0, 1), o = 1: (1, 3), o = 2: (3, 5).
    want = np.array([[[0 + 10 * 1 + 0.5, 1 + 10 * 3 + 0.5, 3 + 10 * 5 + 0.5],
                      [0 + 1000 * 7 - 0.5, 100 * 7 + 1000 * 9 - 0.5, 100 * 9 + 1000 * 11 - 0.5]]],
                    np.float32)
    for reference in (False, True):
        np.testing.assert_array_equal(run(m, {"x": x}, reference)[0], want)


@rules("CONV-2")
@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER", "VALID"])
@pytest.mark.parametrize("reference", [False, True])
def test_auto_pad(auto_pad, reference):
    xs, ws = [1, 3, 8, 7], [4, 3, 4, 3]
    attrs = {"auto_pad": auto_pad, "strides": [3, 2]}
    m, w, b = conv_case(xs, ws, attrs)
    x = RNG.standard_normal(xs).astype(np.float32)
    y = run(m, {"x": x}, reference)[0]
    exact = oracles.conv(x, w, b, **oracle_args(attrs))
    want_hw = (3, 4) if auto_pad != "VALID" else (2, 3)
    assert y.shape[2:] == want_hw == exact.shape[2:]
    np.testing.assert_allclose(y, exact, rtol=0, atol=1e-4)
    # The pads attribute is ignored beside auto_pad.
    m2 = one_node("Conv", [("x", xs)], dict(attrs, pads=[2, 2, 2, 2]), [("w", w), ("b", b)])
    np.testing.assert_array_equal(run(m2, {"x": x}, reference)[0], y)


@rules("CONV-3")
@pytest.mark.parametrize("reference", [False, True])
def test_kernel_shape(reference):
    m, w, b = conv_case([1, 3, 5, 5], [4, 3, 3, 3], {"kernel_shape": [3, 3]})
    x = RNG.standard_normal((1, 3, 5, 5)).astype(np.float32)
    np.testing.assert_allclose(run(m, {"x": x}, reference)[0], oracles.conv(x, w, b), atol=1e-4)
    bad = one_node("Conv", [("x", [1, 3, 5, 5])], {"kernel_shape": [2, 2]}, [("w", w)])
    msg = error_of(bad, {"x": x}, reference)
    assert "Conv node 'n0' (#0): attribute 'kernel_shape' does not match input 1 'w' of" in msg


@rules("CONV-4")
@pytest.mark.parametrize("reference", [False, True])
def test_empty_batch(reference):
    m, _, _ = conv_case([0, 3, 5, 5], [4, 3, 3, 3], {})
    assert run(m, {"x": np.zeros((0, 3, 5, 5), np.float32)}, reference)[0].shape == (0, 4, 3, 3)


@rules("CONV-5")
@pytest.mark.parametrize("reference", [False, True])
def test_element_types(reference):
    x = RNG.standard_normal((1, 2, 4, 4))
    w = RNG.standard_normal((3, 2, 3, 3))
    for elem, dt, tol in ((TensorProto.DOUBLE, np.float64, 1e-12),
                          (TensorProto.FLOAT16, np.float16, 2e-2)):
        m = one_node("Conv", [("x", [1, 2, 4, 4])], {}, [("w", w.astype(dt))], elem=elem)
        y = run(m, {"x": x.astype(dt)}, reference)[0]
        assert y.dtype == dt
        exact = oracles.conv(x.astype(dt), w.astype(dt))
        np.testing.assert_allclose(y, exact, rtol=0, atol=tol * np.abs(exact).max())
    m = one_node("Conv", [("x", [1, 2, 4, 4])], {}, [("w", w.astype(np.int32))], elem=TensorProto.INT32)
    msg = error_of(m, {"x": x.astype(np.int32)}, reference)
    assert "input 0 'x' has type int32, which this operator does not support" in msg


BAD_X = {"x": np.zeros((1, 2, 5, 5), np.float32)}


@rules("CONV-6")
@pytest.mark.parametrize("reference", [False, True])
def test_weight_channels(reference):
    m, _, _ = conv_case([1, 2, 5, 5], [4, 3, 3, 3], {}, bias=False)
    assert ("input 1 'w' has type float[4,3,3,3]; expected dim 1 = 2 (input 0 has 2 channels, "
            "group 1)") in error_of(m, BAD_X, reference)


@rules("CONV-7")
@pytest.mark.parametrize("reference", [False, True])
def test_bias_shape(reference):
    w = np.zeros((4, 2, 3, 3), np.float32)
    m = one_node("Conv", [("x", [1, 2, 5, 5])], {}, [("w", w), ("b", np.zeros(3, np.float32))])
    assert "input 2 'b' has shape [3]; expected [4]" in error_of(m, BAD_X, reference)


@rules("CONV-8")
@pytest.mark.parametrize("reference", [False, True])
def test_ranks(reference):
    m, _, _ = conv_case([3, 5, 5], [4, 3, 3, 3], {}, bias=False)
    assert ("input 1 'w' has type float[4,3,3,3]; expected rank 3 like input 0 float[3,5,5]"
            in error_of(m, {"x": np.zeros((3, 5, 5), np.float32)}, reference))


@rules("CONV-9")
@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("attrs,message", [
    ({"strides": [0, 1]}, "attribute 'strides' is [0,1]; expected every value >= 1"),
    ({"pads": [-1, 0, 0, 0]}, "attribute 'pads' is [-1,0,0,0]; expected every value >= 0"),
    ({"auto_pad": "FOO"},
     "attribute 'auto_pad' is 'FOO'; expected NOTSET, SAME_UPPER, SAME_LOWER or VALID"),
])
def test_attribute_values(reference, attrs, message):
    m, _, _ = conv_case([1, 2, 5, 5], [4, 2, 3, 3], attrs, bias=False)
    assert message in error_of(m, BAD_X, reference)


@rules("CONV-10")
@pytest.mark.parametrize("reference", [False, True])
def test_window_larger_than_input(reference):
    m, _, _ = conv_case([1, 2, 2, 2], [4, 2, 3, 3], {}, bias=False)
    assert ("window of 3 taps with dilation 1 spans 3 but spatial dim 0 of the input is only 2 "
            "(padded 2)") in error_of(m, {"x": np.zeros((1, 2, 2, 2), np.float32)}, reference)


def winograd_inputs(xs, ws):
    """Inputs and weights: random, cancelling, and an adversarial pair: large inputs at even
    (row, col) among small ones, 3x3 kernels with large corners and a small cross through the
    centre. An output at an even position then has small products (large centre input times small
    centre weight, small inputs times large corners) that Winograd's transforms mix with the large
    ones: its error exceeds the window bound many times over."""
    x = (RNG.uniform(0.5, 1, xs) * 1e-4 * RNG.choice([-1, 1], xs)).astype(np.float32)
    x[..., ::2, ::2] *= 1e4
    w = (RNG.uniform(0.5, 1, ws) * 1e-4).astype(np.float32)
    w[:, :, ::2, ::2] *= 1e4
    return [(RNG.standard_normal(xs).astype(np.float32), cancelling(RNG, ws, 1e2)),
            (cancelling(RNG, xs), cancelling(RNG, ws, 1e2)), (x, w)]


@rules("CONV-12")
@pytest.mark.parametrize("xs,ws,kernel", WINOGRAD)
def test_winograd_meets_the_patch_bound(onyx_cli, xs, ws, kernel):
    k = ws[1] * 9 + 1
    for x, w in winograd_inputs(xs, ws):
        m, w, b = conv_case(xs, ws, {"pads": [1, 1, 1, 1]}, w=w)
        expect_kernel(onyx_cli, m, kernel, needs_avx512=True)
        y = run(m, {"x": x})[0]
        exact = oracles.conv(x, w, b, pads=[1, 1, 1, 1])
        assert ratio(y, exact, k * U * oracles.winograd_scale(x, w, b, [1, 1, 1, 1])) <= 1.0


@rules("CONV-13")
@pytest.mark.parametrize("xs,ws,kernel", WINOGRAD)
def test_winograd_misses_the_window_bound_and_direct_meets_it(onyx_cli, xs, ws, kernel):
    attrs = {"pads": [1, 1, 1, 1]}
    for i, (x, w) in enumerate(winograd_inputs(xs, ws)):
        m, w, b = conv_case(xs, ws, attrs, w=w)
        expect_kernel(onyx_cli, m, kernel, needs_avx512=True)
        if i == 2:
            assert window_ratio(m, x, w, b, attrs) > 3.0
        assert "winograd" not in kernel_of(onyx_cli, m, conv_algorithm="direct")
        assert window_ratio(m, x, w, b, attrs, algo="direct") <= 1.0
