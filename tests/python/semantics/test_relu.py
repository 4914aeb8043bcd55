"""docs/semantics/relu.md: Relu on both kernels, bit for bit, every stated type and message."""
import numpy as np
import pytest
from onnx import TensorProto

from semantics_util import bits_equal, error_of, expect_kernel, one_node, rules, run

RNG = np.random.default_rng(61)


def relu_bits(x):
    """+0 where x < 0, x itself elsewhere (-0, NaN and +inf included)."""
    return np.where(x < 0, np.zeros_like(x), x)


@rules("RELU-1", "RELU-4")
@pytest.mark.parametrize("reference,kernel", [(False, "Relu_f32_hwy"), (True, "Relu_ref")])
@pytest.mark.parametrize("n", [1, 7, 16, 67, 1000])
def test_float32_bit_for_bit(onyx_cli, reference, kernel, n):
    x = (RNG.standard_normal(n) * np.exp2(RNG.uniform(-140, 120, n))).astype(np.float32)
    specials = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-45, -1e-45, -np.nan], np.float32)
    specials.view(np.uint32)[0] = 0x7FC01234  # a NaN with a payload
    x[:min(n, len(specials))] = specials[:n]
    model = one_node("Relu", [("x", [n])], {})
    expect_kernel(onyx_cli, model, kernel, reference)
    y = run(model, {"x": x}, reference)[0]
    assert bits_equal(y, relu_bits(x))
    if n >= 8:  # the stated corners, read directly
        assert np.isnan(y[0]) and np.signbit(y[1]) and not np.signbit(y[2]) and y[3] == np.inf
        assert y[4] == 0 and not np.signbit(y[4]) and y[5] == np.float32(1e-45)
        assert y[6] == 0 and not np.signbit(y[6])


@rules("RELU-2", "RELU-4")
@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("elem,dt", [
    (TensorProto.FLOAT16, np.float16), (TensorProto.DOUBLE, np.float64), (TensorProto.INT8, np.int8),
    (TensorProto.UINT8, np.uint8), (TensorProto.INT32, np.int32), (TensorProto.INT64, np.int64),
])
def test_other_types(reference, elem, dt):
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        x = RNG.integers(info.min, info.max, 37, endpoint=True).astype(dt)
    else:
        x = RNG.standard_normal(37).astype(dt)
        x[:3] = [np.nan, -0.0, -np.inf]
    y = run(one_node("Relu", [("x", [37])], {}, elem=elem), {"x": x}, reference)[0]
    assert bits_equal(y, relu_bits(x))


@rules("RELU-3")
@pytest.mark.parametrize("reference", [False, True])
def test_unsupported_type(reference):
    m = one_node("Relu", [("a", [2])], {}, elem=TensorProto.STRING)
    msg = error_of(m, {"a": np.array(["x", "y"], object)}, reference)
    assert "Relu node 'n0' (#0): input 0 'a' has type string, which Relu does not support" in msg
