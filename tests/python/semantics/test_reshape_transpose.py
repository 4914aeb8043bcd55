"""docs/semantics/reshape.md and transpose.md: both kernels of each, bit for bit against numpy,
the 0 / -1 / allowzero rules, perm, and the stated messages."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from semantics_util import bits_equal, error_of, expect_kernel, one_node, rules, run

RNG = np.random.default_rng(101)


def special_floats(*shape):
    x = RNG.standard_normal(shape).astype(np.float32).ravel()
    x.view(np.uint32)[::5] = 0x7FC00000 + np.arange(len(x[::5]), dtype=np.uint32)
    x[1::7] = -0.0
    return x.reshape(shape)


def reshape_model(xs, shape, attrs=None, opset=14, elem=TensorProto.FLOAT):
    return one_node("Reshape", [("x", list(xs) if xs is not None else None)], attrs or {},
                    [("s", np.asarray(shape, np.int64))], opset=opset, elem=elem)


@rules("RESHAPE-1", "RESHAPE-10")
@pytest.mark.parametrize("reference,kernel", [(False, "Reshape_any_view"), (True, "Reshape_ref")])
@pytest.mark.parametrize("elem,make", [
    (TensorProto.FLOAT, special_floats),
    (TensorProto.INT64, lambda *s: RNG.integers(-2**62, 2**62, s)),
    (TensorProto.STRING, lambda *s: np.array([f"v{i}" for i in range(int(np.prod(s)))],
                                             object).reshape(s)),
])
def test_row_major_and_exact(onyx_cli, reference, kernel, elem, make):
    x = make(2, 3, 4)
    model = reshape_model([2, 3, 4], [4, 6], elem=elem)
    if elem == TensorProto.FLOAT:
        expect_kernel(onyx_cli, model, kernel, reference)
    y = run(model, {"x": x}, reference)[0]
    if elem == TensorProto.STRING:
        assert y.tolist() == x.reshape(4, 6).tolist()
    else:
        assert bits_equal(y, x.reshape(4, 6))


@rules("RESHAPE-2")
@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("shape,want", [([0, -1], (2, 12)), ([0, 0, -1], (2, 3, 4)),
                                        ([-1, 0], (8, 3)), ([0, 4, -1], (2, 4, 3)),
                                        ([-1], (24,)), ([0, 3, 2, 2], (2, 3, 2, 2))])
def test_zero_copies_and_minus_one_infers(reference, shape, want):
    x = special_floats(2, 3, 4)
    y = run(reshape_model([2, 3, 4], shape), {"x": x}, reference)[0]
    assert bits_equal(y, x.reshape(want))


@rules("RESHAPE-3")
@pytest.mark.parametrize("reference", [False, True])
def test_allowzero(reference):
    x = np.zeros((2, 0), np.float32)
    assert run(reshape_model([2, 0], [0, 5], {"allowzero": 1}), {"x": x}, reference)[0].shape == (0, 5)
    # Without allowzero the 0 copies dim 0 (2): [2, 5] has 10 elements, an error.
    assert "cannot reshape input float[2,0] (0 elements) to [0,5] (10 elements)" in error_of(
        reshape_model([2, 0], [0, 5]), {"x": x}, reference)


@rules("RESHAPE-4")
@pytest.mark.parametrize("reference", [False, True])
def test_runtime_shape(reference):
    n = helper.make_node("Reshape", ["x", "s"], ["y"], name="n0")
    g = helper.make_graph([n], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                                     helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)
    x = special_floats(2, 3)
    assert bits_equal(run(m, {"x": x, "s": np.array([3, -1], np.int64)}, reference)[0],
                      x.reshape(3, 2))
    assert "cannot reshape input float[2,3] (6 elements) to [4,-1]" in error_of(
        m, {"x": x, "s": np.array([4, -1], np.int64)}, reference)


RESHAPE_ERRORS = [
    ("RESHAPE-5", [2, 3, 4], [-1, -1], {}, "input 1 's' [-1,-1] contains -1 more than once"),
    ("RESHAPE-6", [2, 3, 4], [5, 5], {},
     "cannot reshape input float[2,3,4] (24 elements) to [5,5] (25 elements)"),
    ("RESHAPE-7", [2, 3], [2, 3, 0], {},
     "input 1 's' has 0 at position 2 (copy the input dim) but the input has rank 2"),
    ("RESHAPE-8", [2, 0], [0, -1], {"allowzero": 1},
     "input 1 's' has both 0 and -1 while allowzero=1"),
    ("RESHAPE-8", [2, 0], [-1, 0], {},
     "cannot infer the -1 dim of [-1,0]: the other dims have 0 elements"),
    ("RESHAPE-9", [2, 3], [-2, 3], {}, "input 1 's' has invalid dim -2 at 0"),
]


@rules("RESHAPE-5", "RESHAPE-6", "RESHAPE-7", "RESHAPE-8", "RESHAPE-9")
@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("rule,xs,shape,attrs,message", RESHAPE_ERRORS)
def test_reshape_errors(reference, rule, xs, shape, attrs, message):
    msg = error_of(reshape_model(xs, shape, attrs), {"x": np.zeros(xs, np.float32)}, reference)
    assert f"Reshape node 'n0' (#0): {message}" in msg, rule


@rules("RESHAPE-9")
@pytest.mark.parametrize("reference", [False, True])
def test_shape_must_be_int64(reference):
    m = one_node("Reshape", [("x", [2, 3]), ("s", [2])], {})
    assert "input 1 's' has type float, which this operator does not support" in error_of(
        m, {"x": np.zeros((2, 3), np.float32), "s": np.array([3, 2], np.float32)}, reference)


@rules("TRANSPOSE-1", "TRANSPOSE-5")
@pytest.mark.parametrize("reference,kernel", [(False, "Transpose_any_tiled"), (True, "Transpose_ref")])
@pytest.mark.parametrize("shape,perm", [
    ((2, 3, 4), [2, 0, 1]), ((17, 33), [1, 0]), ((3, 5, 7, 9), [0, 2, 3, 1]),
    ((2, 3, 2, 3, 2, 3), [5, 3, 1, 0, 2, 4]), ((1, 65, 1, 19), [3, 1, 2, 0])])
@pytest.mark.parametrize("elem,make", [
    (TensorProto.FLOAT, special_floats),
    (TensorProto.UINT8, lambda *s: RNG.integers(0, 256, s).astype(np.uint8)),
    (TensorProto.INT64, lambda *s: RNG.integers(-2**62, 2**62, s)),
    (TensorProto.FLOAT16, lambda *s: RNG.standard_normal(s).astype(np.float16)),
])
def test_transpose_exact(onyx_cli, reference, kernel, shape, perm, elem, make):
    x = make(*shape)
    model = one_node("Transpose", [("x", list(shape))], {"perm": perm}, elem=elem)
    if elem == TensorProto.FLOAT and shape == (17, 33):
        expect_kernel(onyx_cli, model, kernel, reference)
    assert bits_equal(run(model, {"x": x}, reference)[0], np.transpose(x, perm))


@rules("TRANSPOSE-2")
@pytest.mark.parametrize("reference", [False, True])
def test_default_reverses(reference):
    x = special_floats(2, 3, 4)
    assert bits_equal(run(one_node("Transpose", [("x", [2, 3, 4])], {}), {"x": x}, reference)[0],
                      x.transpose(2, 1, 0))


@rules("TRANSPOSE-3")
@pytest.mark.parametrize("reference", [False, True])
def test_negative_perm_entries(reference):
    x = special_floats(2, 3, 4)
    m = one_node("Transpose", [("x", [2, 3, 4])], {"perm": [-1, 0, -2]})
    assert bits_equal(run(m, {"x": x}, reference)[0], x.transpose(2, 0, 1))


@rules("TRANSPOSE-4")
@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("perm,message", [
    ([0, 0, 1], "attribute 'perm' is not a permutation of [0, 3)"),
    ([1, 0], "attribute 'perm' has 2 entries for an input of rank 3"),
    ([0, 1, 3], "attribute 'perm' is not a permutation of [0, 3)"),
])
def test_transpose_errors(reference, perm, message):
    m = one_node("Transpose", [("x", [2, 3, 4])], {"perm": perm})
    assert f"Transpose node 'n0' (#0): {message}" in error_of(
        m, {"x": np.zeros((2, 3, 4), np.float32)}, reference)
