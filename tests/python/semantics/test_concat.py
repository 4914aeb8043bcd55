"""docs/semantics/concat.md: Concat on both kernels against numpy and the stated messages."""
import numpy as np
import pytest
from onnx import TensorProto

from semantics_util import bits_equal, error_of, expect_kernel, one_node, rules, run

KERNELS = [(False, "Concat_any_memcpy"), (True, "Concat_ref")]
RNG = np.random.default_rng(21)


def special_floats(*shape):
    """Random floats with NaNs of distinct payloads, signed zeros and infinities among them."""
    x = RNG.standard_normal(shape).astype(np.float32).ravel()
    bits = x.view(np.uint32)
    bits[::7] = 0x7FC00000 + np.arange(len(bits[::7]), dtype=np.uint32)  # NaN payloads
    x[1::11] = -0.0
    x[2::13] = np.inf
    return x.reshape(shape)


@rules("CONCAT-1", "CONCAT-10")
@pytest.mark.parametrize("reference,kernel", KERNELS)
@pytest.mark.parametrize("elem,make", [
    (TensorProto.FLOAT, special_floats),
    (TensorProto.INT64, lambda *s: RNG.integers(-2**62, 2**62, s)),
    (TensorProto.BOOL, lambda *s: RNG.random(s) < 0.5),
    (TensorProto.STRING, lambda *s: np.array([f"s{i}" for i in range(int(np.prod(s)))],
                                             object).reshape(s)),
    (TensorProto.UINT8, lambda *s: RNG.integers(0, 256, s).astype(np.uint8)),
])
def test_layout_and_exact_copy(onyx_cli, reference, kernel, elem, make):
    shapes = [(2, 3, 5), (2, 1, 5), (2, 7, 5)]
    xs = [make(*s) for s in shapes]
    m = one_node("Concat", [(f"x{i}", list(s)) for i, s in enumerate(shapes)], {"axis": 1},
                 elem=elem)
    if elem == TensorProto.FLOAT:
        expect_kernel(onyx_cli, m, kernel, reference)
    y = run(m, {f"x{i}": x for i, x in enumerate(xs)}, reference)[0]
    want = np.concatenate(xs, axis=1)
    if elem == TensorProto.STRING:
        assert y.shape == want.shape and y.tolist() == want.tolist()
    else:
        assert bits_equal(y, want.astype(y.dtype))


@rules("CONCAT-1", "CONCAT-10")
@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("axis", [0, 1, 2, 3])
def test_every_axis_with_odd_sizes(reference, axis):
    shapes = [[3, 5, 7, 9] for _ in range(3)]
    for i, s in enumerate(shapes):
        s[axis] = (2, 5, 1)[i]
    xs = [special_floats(*s) for s in shapes]
    m = one_node("Concat", [(f"x{i}", s) for i, s in enumerate(shapes)], {"axis": axis})
    y = run(m, {f"x{i}": x for i, x in enumerate(xs)}, reference)[0]
    assert bits_equal(y, np.concatenate(xs, axis=axis))


@rules("CONCAT-2")
@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("axis", [-1, -2, -3])
def test_negative_axis(reference, axis):
    a, b = special_floats(2, 3, 4), special_floats(2, 3, 4)
    m = one_node("Concat", [("a", [2, 3, 4]), ("b", [2, 3, 4])], {"axis": axis})
    assert bits_equal(run(m, {"a": a, "b": b}, reference)[0], np.concatenate([a, b], axis=axis + 3))


@rules("CONCAT-3")
@pytest.mark.parametrize("reference", [False, True])
def test_empty_and_single_inputs(reference):
    a, b = special_floats(2, 0, 3), special_floats(2, 4, 3)
    m = one_node("Concat", [("a", [2, 0, 3]), ("b", [2, 4, 3]), ("c", [2, 0, 3])], {"axis": 1})
    assert bits_equal(run(m, {"a": a, "b": b, "c": a}, reference)[0], b)
    m = one_node("Concat", [("a", [2, 0, 3]), ("c", [2, 0, 3])], {"axis": 1})
    assert run(m, {"a": a, "c": a}, reference)[0].shape == (2, 0, 3)
    m = one_node("Concat", [("b", [2, 4, 3])], {"axis": 2})
    assert bits_equal(run(m, {"b": b}, reference)[0], b)


def two(shape_a, shape_b, attrs, elem_b=TensorProto.FLOAT):
    m = one_node("Concat", [("a", shape_a), ("b", shape_b)], attrs)
    m.graph.input[1].type.tensor_type.elem_type = elem_b
    return m


FEED = {"a": np.zeros((2, 3), np.float32), "b": np.zeros((2, 3), np.float32)}


@rules("CONCAT-4")
@pytest.mark.parametrize("reference", [False, True])
def test_axis_required(reference):
    assert "Concat node 'n0' (#0): required attribute 'axis' is missing" in error_of(
        two([2, 3], [2, 3], {}), FEED, reference)


@rules("CONCAT-5")
@pytest.mark.parametrize("reference", [False, True])
def test_axis_out_of_range(reference):
    msg = error_of(two([2, 3], [2, 3], {"axis": 3}), FEED, reference)
    assert "attribute 'axis' 3 is out of range for rank 2 (expected [-2, 2))" in msg
    msg = error_of(two([2, 3], [2, 3], {"axis": -3}), FEED, reference)
    assert "attribute 'axis' -3 is out of range for rank 2 (expected [-2, 2))" in msg


@rules("CONCAT-6")
@pytest.mark.parametrize("reference", [False, True])
def test_ranks_differ(reference):
    msg = error_of(two([2, 3], [2, 3, 1], {"axis": 1}),
                   {"a": FEED["a"], "b": np.zeros((2, 3, 1), np.float32)}, reference)
    assert "input 1 'b' has rank 3, expected 2 like the inputs before it" in msg


@rules("CONCAT-7")
@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("declared", [True, False])
def test_other_dims_differ(reference, declared):
    shape_a, shape_b = ([2, 3], [3, 4]) if declared else (None, None)
    msg = error_of(two(shape_a, shape_b, {"axis": 1}),
                   {"a": FEED["a"], "b": np.zeros((3, 4), np.float32)}, reference)
    assert "input 1 'b' has shape float[3,4] whose dim 0 differs from the other inputs (2)" in msg


@rules("CONCAT-8")
@pytest.mark.parametrize("reference", [False, True])
def test_scalars(reference):
    msg = error_of(two([], [], {"axis": 0}),
                   {"a": np.float32(1), "b": np.float32(2)}, reference)
    assert "Concat node 'n0' (#0): cannot concatenate scalars" in msg


@rules("CONCAT-9")
@pytest.mark.parametrize("reference", [False, True])
def test_types_differ(reference):
    msg = error_of(two([2], [2], {"axis": 0}, TensorProto.INT32),
                   {"a": np.zeros(2, np.float32), "b": np.zeros(2, np.int32)}, reference)
    assert "input 1 'b' has type int32, expected float like input 0" in msg
