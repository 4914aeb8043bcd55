"""docs/semantics/softmax.md: Softmax on both kernels: the axis by opset, large and infinite
inputs, the bound against float64, the stated messages."""
import numpy as np
import pytest
from onnx import TensorProto

import oracles
from semantics_util import U, error_of, expect_kernel, one_node, ratio, rules, run

RNG = np.random.default_rng(81)


def softmax_coerced(x, axis):
    """Opsets 1 to 12: rows of the [prod(dims[:axis]), prod(dims[axis:])] matrix."""
    rows = int(np.prod(x.shape[:axis]))
    return oracles.softmax(x.reshape(rows, -1), 1).reshape(x.shape)


@rules("SOFTMAX-1", "SOFTMAX-7")
@pytest.mark.parametrize("reference,kernel", [(False, "Softmax_f32_hwy"), (True, "softmax_ref")])
@pytest.mark.parametrize("shape,axis", [((5, 37), -1), ((3, 1000), 1), ((4, 6, 7), 1),
                                        ((2, 3, 33), 0), ((2, 17, 3, 5), -2), ((8, 1), 1),
                                        ((3, 16), None)])
def test_axis_and_bound(onyx_cli, reference, kernel, shape, axis):
    attrs = {} if axis is None else {"axis": axis}
    model = one_node("Softmax", [("x", list(shape))], attrs, opset=13)
    expect_kernel(onyx_cli, model, kernel, reference)
    ax = -1 if axis is None else axis
    k = shape[ax]
    for spread in (1, 10, 40):
        x = (RNG.standard_normal(shape) * spread).astype(np.float32)
        y = run(model, {"x": x}, reference)[0]
        exact = oracles.softmax(x, ax)
        d = np.abs(x.astype(np.float64) - np.max(x, axis=ax, keepdims=True))
        assert ratio(y, exact, (k + 2 * d + 8) * U * exact + 2.0 ** -126) <= 1.0


@rules("SOFTMAX-2")
@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axis", [None, 0, 1, 2, -1])
def test_opset_decides_the_axis_reading(reference, opset, axis):
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    attrs = {} if axis is None else {"axis": axis}
    y = run(one_node("Softmax", [("x", [2, 3, 4])], attrs, opset=opset), {"x": x}, reference)[0]
    if opset < 13:
        want = softmax_coerced(x, (1 if axis is None else axis) % 3)
    else:
        want = oracles.softmax(x, -1 if axis is None else axis)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-7)


@rules("SOFTMAX-3")
@pytest.mark.parametrize("reference", [False, True])
def test_negative_axis_and_scalar(reference):
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    m = one_node("Softmax", [("x", [3, 4, 5])], {"axis": -3})
    np.testing.assert_allclose(run(m, {"x": x}, reference)[0], oracles.softmax(x, 0), rtol=1e-5)
    for attrs in ({}, {"axis": 0}):
        y = run(one_node("Softmax", [("x", [])], attrs), {"x": np.float32(-7)}, reference)[0]
        assert y.shape == () and y == 1


@rules("SOFTMAX-4")
@pytest.mark.parametrize("reference", [False, True])
def test_large_and_infinite_inputs(reference):
    x = np.array([[1e30, 1e30, 0, 0], [3.4e38, -3.4e38, 0, 3.4e38], [0, -np.inf, 1, -np.inf],
                  [-np.inf] * 4, [0, -np.inf, np.inf, 1], [0, np.nan, 1, 2]], np.float32)
    y = run(one_node("Softmax", [("x", [6, 4])], {}, opset=13), {"x": x}, reference)[0]
    np.testing.assert_array_equal(y[0], [0.5, 0.5, 0, 0])
    np.testing.assert_array_equal(y[1], [0.5, 0, 0, 0.5])
    np.testing.assert_allclose(y[2], [1 / (1 + np.e), 0, np.e / (1 + np.e), 0], rtol=1e-6)
    assert np.all(np.isnan(y[3:]))


@rules("SOFTMAX-5")
@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("axis", [2, -3])
def test_axis_out_of_range(reference, axis):
    m = one_node("Softmax", [("x", [2, 6])], {"axis": axis})
    assert f"Softmax node 'n0' (#0): axis {axis} is out of range for input 0 of rank 2" in error_of(
        m, {"x": np.zeros((2, 6), np.float32)}, reference)


@rules("SOFTMAX-6")
@pytest.mark.parametrize("reference", [False, True])
def test_element_types(reference):
    x = RNG.standard_normal((3, 5))
    for elem, dt, tol in ((TensorProto.DOUBLE, np.float64, 1e-14),
                          (TensorProto.FLOAT16, np.float16, 2e-3)):
        y = run(one_node("Softmax", [("x", [3, 5])], {}, elem=elem), {"x": x.astype(dt)}, reference)[0]
        assert y.dtype == dt
        np.testing.assert_allclose(y, oracles.softmax(x.astype(dt), -1), rtol=tol)
    m = one_node("Softmax", [("x", [3, 5])], {}, elem=TensorProto.INT32)
    assert "input 0 'x' has type int32, which this operator does not support" in error_of(
        m, {"x": np.zeros((3, 5), np.int32)}, reference)
