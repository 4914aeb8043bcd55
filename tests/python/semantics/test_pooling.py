"""docs/semantics/pooling.md: MaxPool, AveragePool and the global pools on every x86-64 kernel
against float64 pooling, window geometry, indices, the stated corners and messages."""
import numpy as np
import pytest
from onnx import TensorProto

import oracles
from semantics_util import (U, bits_equal, cancelling, error_of, expect_kernel, has_avx512, one_node, ratio,
                            rules, run)

RNG = np.random.default_rng(71)

# (x shape, attrs, opset, default kernel (MaxPool, AveragePool) on x86-64)
WINDOWS = [
    ([1, 5, 9, 9], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, 17,
     ("MaxPool_f32_onednn", "AveragePool_f32_onednn")),
    ([2, 3, 17], {"kernel_shape": [5], "strides": [3]}, 17,
     ("MaxPool_f32_onednn", "AveragePool_f32_onednn")),
    ([1, 4, 10, 11], {"kernel_shape": [3, 2], "strides": [3, 2], "ceil_mode": 1}, 17,
     ("MaxPool_f32_onednn", "AveragePool_f32_onednn")),
    ([1, 4, 9, 9], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                    "count_include_pad": 1, "ceil_mode": 1}, 17,
     ("MaxPool_f32_onednn", "AveragePool_ref")),
    ([1, 3, 8, 7], {"kernel_shape": [2, 3], "strides": [2, 2], "pads": [0, 1, 1, 2],
                    "count_include_pad": 1}, 17,
     ("MaxPool_f32_onednn", "AveragePool_f32_onednn")),
    ([1, 2, 11, 12], {"kernel_shape": [2, 3], "dilations": [2, 3], "pads": [1, 1, 0, 2]}, 19,
     ("MaxPool_f32_onednn", "AveragePool_f32_onednn")),
    ([1, 3, 7, 8], {"kernel_shape": [3, 3], "strides": [2, 3], "auto_pad": "SAME_UPPER"}, 17,
     ("MaxPool_f32_onednn", "AveragePool_f32_onednn")),
    ([1, 3, 7, 8], {"kernel_shape": [2, 4], "strides": [2, 3], "auto_pad": "SAME_LOWER"}, 17,
     ("MaxPool_f32_onednn", "AveragePool_f32_onednn")),
]


def oracle_args(attrs):
    return dict(kernel=attrs["kernel_shape"], strides=attrs.get("strides"), pads=attrs.get("pads"),
                dilations=attrs.get("dilations"), auto_pad=attrs.get("auto_pad", "NOTSET"),
                ceil_mode=bool(attrs.get("ceil_mode", 0)),
                count_include_pad=bool(attrs.get("count_include_pad", 0)))


@rules("POOL-1", "POOL-2", "POOL-4", "POOL-10")
@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("xs,attrs,opset,kernels", WINDOWS)
def test_maxpool_exact(onyx_cli, reference, xs, attrs, opset, kernels):
    attrs = {k: v for k, v in attrs.items() if k != "count_include_pad"}
    model = one_node("MaxPool", [("x", xs)], attrs, opset=opset)
    expect_kernel(onyx_cli, model, "MaxPool_ref" if reference else kernels[0], reference)
    for x in (cancelling(RNG, xs), -np.abs(RNG.standard_normal(xs)).astype(np.float32)):
        y = run(model, {"x": x}, reference)[0]
        want = oracles.pool(x, "max", **oracle_args(attrs)).astype(np.float32)
        assert bits_equal(y, want)  # negative inputs: padding (zeros elsewhere) never wins


@rules("POOL-1", "POOL-2", "POOL-3", "POOL-4", "POOL-11")
@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("xs,attrs,opset,kernels", WINDOWS)
def test_averagepool_bound(onyx_cli, reference, xs, attrs, opset, kernels):
    model = one_node("AveragePool", [("x", xs)], attrs, opset=opset)
    expect_kernel(onyx_cli, model, "AveragePool_ref" if reference else kernels[1], reference)
    n = int(np.prod(attrs["kernel_shape"]))
    for x in (cancelling(RNG, xs), RNG.standard_normal(xs).astype(np.float32)):
        y = run(model, {"x": x}, reference)[0]
        exact = oracles.pool(x, "avg", **oracle_args(attrs))
        scale = oracles.pool(np.abs(x), "avg", **oracle_args(attrs))
        assert y.shape == exact.shape
        assert ratio(y, exact, (n + 1) * U * scale) <= 1.0


@rules("POOL-3")
@pytest.mark.parametrize("reference", [False, True])
def test_count_include_pad_by_hand(reference):
    # 1-D, x = [1, 2, 3], kernel 2, stride 2, pads (1, 0): windows [pad, 1] and [2, 3].
    x = np.array([[[1, 2, 3]]], np.float32)
    for cip, want in ((0, [1, 2.5]), (1, [0.5, 2.5])):
        m = one_node("AveragePool", [("x", [1, 1, 3])],
                     {"kernel_shape": [2], "strides": [2], "pads": [1, 0], "count_include_pad": cip})
        np.testing.assert_array_equal(run(m, {"x": x}, reference)[0].ravel(), want)
    # ceil_mode overhang: x of 4, kernel 3, stride 2: windows [0..2], [2..4): the second has 2 taps
    # in the input and one in the overhang, which is not counted even with count_include_pad.
    x = np.array([[[1, 2, 3, 4]]], np.float32)
    m = one_node("AveragePool", [("x", [1, 1, 4])],
                 {"kernel_shape": [3], "strides": [2], "ceil_mode": 1, "count_include_pad": 1})
    np.testing.assert_array_equal(run(m, {"x": x}, reference)[0].ravel(), [2, 3.5])


@rules("POOL-2")
@pytest.mark.parametrize("reference", [False, True])
def test_ceil_mode_drops_a_window_starting_in_padding(reference):
    # D = 5, kernel 2, stride 2, pads (0, 1): floor gives 3; ceil gives ceil(4/2)+1 = 3 too;
    # D = 4, pads (0, 1), kernel 1, stride 2: ceil gives ceil(4/2)+1 = 3, but the third window
    # starts at 4, in the end padding: dropped, 2 outputs.
    m = one_node("MaxPool", [("x", [1, 1, 4])],
                 {"kernel_shape": [1], "strides": [2], "pads": [0, 1], "ceil_mode": 1})
    x = np.array([[[5, 6, 7, 8]]], np.float32)
    np.testing.assert_array_equal(run(m, {"x": x}, reference)[0].ravel(), [5, 7])


@rules("POOL-5")
@pytest.mark.parametrize("reference", [False, True])
def test_indices(reference):
    x = np.array([[[[1, 9, 3], [4, 5, 6], [7, 8, 2]]], [[[0, 0, 0], [0, 1, 0], [0, 0, 0]]]],
                 np.float32)  # [N=2, C=1, 3, 3]; the second image ties (zeros)
    for order, want in ((0, [[[[1, 1], [7, 7]]], [[[13, 13], [13, 13]]]]),
                        (1, [[[[3, 3], [5, 5]]], [[[13, 13], [13, 13]]]])):
        m = one_node("MaxPool", [("x", [2, 1, 3, 3])], {"kernel_shape": [2, 2],
                                                        "storage_order": order},
                     outputs=("y", "i"))
        y, i = run(m, {"x": x}, reference)
        np.testing.assert_array_equal(y, [[[[9, 9], [8, 8]]], [[[1, 1], [1, 1]]]])
        np.testing.assert_array_equal(i, want)
    # Ties: the first tap in window order.
    x = np.zeros((1, 1, 2, 3), np.float32)
    m = one_node("MaxPool", [("x", [1, 1, 2, 3])], {"kernel_shape": [2, 2]}, outputs=("y", "i"))
    np.testing.assert_array_equal(run(m, {"x": x}, reference)[1].ravel(), [0, 1])


@rules("POOL-6")
@pytest.mark.parametrize("reference", [False, True])
def test_windows_entirely_in_padding(reference):
    x = RNG.standard_normal((1, 1, 4, 4)).astype(np.float32)
    attrs = {"kernel_shape": [2, 2], "pads": [2, 2, 2, 2]}
    y = run(one_node("MaxPool", [("x", [1, 1, 4, 4])], attrs), {"x": x}, reference)[0]
    assert y.shape == (1, 1, 7, 7)
    assert np.all(y[0, 0, 0] == np.finfo(np.float32).min)
    y = run(one_node("AveragePool", [("x", [1, 1, 4, 4])], attrs), {"x": x}, reference)[0]
    assert np.all(y[0, 0, 0] == 0)


@rules("POOL-7")
def test_nan_differs_between_kernels():
    x = np.array([[[[np.nan, 1, 2, np.nan]]]], np.float32)
    m = one_node("MaxPool", [("x", [1, 1, 1, 4])], {"kernel_shape": [1, 2]})
    ref = run(m, {"x": x}, True)[0].ravel()
    assert np.isnan(ref[0]) and list(ref[1:]) == [2, 2]   # NaN as first tap only
    fast = run(m, {"x": x})[0].ravel()
    if not np.isnan(fast[0]):                                # oneDNN (x86-64) ignores NaN
        assert list(fast) == [1, 2, 2]


@rules("POOL-8")
@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("xs,attrs,message", [
    ([1, 2, 5, 5], {}, "MaxPool node 'n0' (#0): attribute 'kernel_shape' is required"),
    ([1, 2, 6, 6], {"kernel_shape": [3]},
     "kernel_shape [3] has 1 dims; expected 2 to match the input's spatial dims [6,6]"),
    ([2, 6], {"kernel_shape": [3]},
     "input 0 'x' has type float[2,6]; expected [N, C, spatial...] (rank >= 3)"),
])
def test_errors(reference, xs, attrs, message):
    m = one_node("MaxPool", [("x", xs)], attrs)
    assert message in error_of(m, {"x": np.zeros(xs, np.float32)}, reference)


@rules("POOL-9")
@pytest.mark.parametrize("reference", [False, True])
def test_element_types(reference):
    x64 = RNG.standard_normal((1, 2, 5, 5))
    attrs = {"kernel_shape": [2, 2]}
    for elem, dt in ((TensorProto.DOUBLE, np.float64), (TensorProto.FLOAT16, np.float16)):
        for op, mode in (("MaxPool", "max"), ("AveragePool", "avg")):
            x = x64.astype(dt)
            y = run(one_node(op, [("x", [1, 2, 5, 5])], attrs, elem=elem), {"x": x}, reference)[0]
            assert y.dtype == dt
            np.testing.assert_allclose(y, oracles.pool(x, mode, [2, 2]),
                                       rtol=1e-3 if dt == np.float16 else 1e-15)
    for elem, dt in ((TensorProto.INT8, np.int8), (TensorProto.UINT8, np.uint8)):
        x = RNG.integers(0, 100, (1, 2, 5, 5)).astype(dt)
        y = run(one_node("MaxPool", [("x", [1, 2, 5, 5])], attrs, elem=elem), {"x": x}, reference)[0]
        np.testing.assert_array_equal(y, oracles.pool(x, "max", [2, 2]).astype(dt))
    m = one_node("MaxPool", [("x", [1, 2, 5, 5])], attrs, elem=TensorProto.INT32)
    assert "input 0 'x' has type int32, which this operator does not support" in error_of(
        m, {"x": np.zeros((1, 2, 5, 5), np.int32)}, reference)


GLOBAL = [([1, 37, 5, 5], "f32_onednn"), ([2, 37, 5], "f32_hwy"), ([1, 3, 40, 40], "f32_hwy"),
          ([2, 5, 3, 4, 3], "f32_onednn")]


@rules("POOL-1", "POOL-10", "POOL-11")
@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("xs,fast", GLOBAL)
@pytest.mark.parametrize("op", ["GlobalMaxPool", "GlobalAveragePool"])
def test_global_pools(onyx_cli, reference, xs, fast, op):
    model = one_node(op, [("x", xs)], {})
    if fast == "f32_onednn" and not has_avx512():
        fast = "f32_hwy"  # below AVX-512 oneDNN has only its reference global pooling here
    expect_kernel(onyx_cli, model, f"{op}_ref" if reference else f"{op}_{fast}", reference)
    axes = tuple(range(2, len(xs)))
    n = int(np.prod(xs[2:]))
    for x in (cancelling(RNG, xs), RNG.standard_normal(xs).astype(np.float32) + 3):
        y = run(model, {"x": x}, reference)[0]
        assert y.shape == tuple(xs[:2]) + (1,) * len(axes)
        if op == "GlobalMaxPool":
            assert bits_equal(y, np.max(x, axis=axes, keepdims=True))
        else:
            exact = np.mean(x.astype(np.float64), axis=axes, keepdims=True)
            scale = np.mean(np.abs(x.astype(np.float64)), axis=axes, keepdims=True)
            assert ratio(y, exact, (n + 1) * U * scale) <= 1.0
