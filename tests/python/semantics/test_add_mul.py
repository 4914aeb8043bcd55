"""docs/semantics/add_mul.md: Add and Mul on both kernels: broadcasting, correct rounding of
float32 results (subnormals, overflow, IEEE special cases), integer types, the stated messages."""
import numpy as np
import pytest
from onnx import TensorProto

from semantics_util import bits_equal, error_of, expect_kernel, one_node, rules, run

RNG = np.random.default_rng(51)
OPS = {"Add": np.add, "Mul": np.multiply}


def wide_floats(shape):
    """float32 values over the whole range: normal, subnormal, huge (products and sums overflow),
    zeros of both signs, infinities and NaN."""
    exp = RNG.uniform(-149, 128, shape)
    x = (RNG.choice([-1.0, 1.0], shape) * np.exp2(exp) * RNG.uniform(1, 2, shape))
    x = np.clip(x, -3.4e38, 3.4e38).astype(np.float32).ravel()
    x[::17] = 0.0
    x[1::19] = -0.0
    x[2::23] = np.inf
    x[3::29] = -np.inf
    x[4::31] = np.nan
    return x.reshape(shape)


def exact_rounded(op, a, b):
    """The correctly rounded float32 result: float64 holds every float32 sum and product exactly or
    rounds it innocuously (53 >= 2 * 24 + 2 bits), then one rounding to float32."""
    with np.errstate(all="ignore"):
        return OPS[op](a.astype(np.float64), b.astype(np.float64)).astype(np.float32)


def same_bits_or_nan(y, want):
    """Equal bits, a NaN matching any NaN (its payload is not stated)."""
    nan = np.isnan(want)
    return (np.array_equal(np.isnan(y), nan) and
            bits_equal(np.where(nan, 0, y).astype(np.float32),
                       np.where(nan, 0, want).astype(np.float32)))


SHAPES = [((3, 17), (17,)), ((4, 1, 33), (5, 1)), ((65,), (65,)), ((2, 3, 1), (1, 3, 7)),
          ((1,), (9, 31)), ((), (5,)), ((6, 0), (1,))]


@rules("ADDMUL-1", "ADDMUL-5")
@pytest.mark.parametrize("op", ["Add", "Mul"])
@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("sa,sb", SHAPES)
def test_broadcast_and_correct_rounding(onyx_cli, op, reference, sa, sb):
    a, b = wide_floats(sa), wide_floats(sb)
    # Also operands of close magnitude, where sums cancel and products stay in range.
    near = (RNG.standard_normal(sb) * 1.5).astype(np.float32)
    model = one_node(op, [("a", list(sa)), ("b", list(sb))], {})
    if sa == (65,):
        expect_kernel(onyx_cli, model, f"{op}_ref" if reference else f"{op}_f32_hwy", reference)
    for bb in (b, near):
        y = run(model, {"a": a, "b": bb}, reference)[0]
        want = exact_rounded(op, a, bb)
        assert y.shape == np.broadcast_shapes(sa, sb)
        assert same_bits_or_nan(y, want)


@rules("ADDMUL-5")
@pytest.mark.parametrize("op", ["Add", "Mul"])
@pytest.mark.parametrize("reference", [False, True])
def test_hand_computed_corners(op, reference):
    tiny = np.float32(1e-45)  # the smallest subnormal
    cases = {  # a, b, Add, Mul
        "Add": [(tiny, tiny, 2 * tiny), (np.float32(1), np.float32(2**-24), np.float32(1)),
                (np.float32(1), np.float32(3 * 2**-25), np.float32(1 + 2**-23)),
                (np.float32(3e38), np.float32(3e38), np.inf), (np.inf, -np.inf, np.nan),
                (np.float32(-0.0), np.float32(-0.0), np.float32(-0.0))],
        "Mul": [(tiny, np.float32(0.5), np.float32(0)), 
                # Halfway between subnormals: ties go to the even one (0, then 2 * 2^-149).
                (np.float32(2**-75), np.float32(2**-75), np.float32(0)),
                (np.float32(1.5 * 2**-74), np.float32(2**-75), np.float32(2**-148)),
                (np.float32(0), np.inf, np.nan), (np.float32(-0.0), np.float32(5), np.float32(-0.0)),
                (np.float32(3e38), np.float32(2), np.inf)],
    }[op]
    a = np.array([c[0] for c in cases], np.float32)
    b = np.array([c[1] for c in cases], np.float32)
    want = np.array([c[2] for c in cases], np.float32)
    y = run(one_node(op, [("a", [len(cases)]), ("b", [len(cases)])], {}), {"a": a, "b": b},
            reference)[0]
    assert same_bits_or_nan(y, want)


@rules("ADDMUL-2")
@pytest.mark.parametrize("op", ["Add", "Mul"])
@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("elem,dt", [
    (TensorProto.INT8, np.int8), (TensorProto.UINT8, np.uint8), (TensorProto.INT32, np.int32),
    (TensorProto.INT64, np.int64), (TensorProto.DOUBLE, np.float64), (TensorProto.FLOAT16, np.float16),
])
def test_element_types(op, reference, elem, dt):
    if np.issubdtype(dt, np.integer):
        lim = 11 if np.dtype(dt).itemsize == 1 else 40000
        lo = 0 if dt == np.uint8 else -lim
        a = RNG.integers(lo, lim, (4, 7)).astype(dt)
        b = RNG.integers(lo, lim, (7,)).astype(dt)
        want = OPS[op](a.astype(np.int64), b.astype(np.int64)).astype(dt)
    else:
        a = RNG.standard_normal((4, 7)).astype(dt)
        b = RNG.standard_normal((7,)).astype(dt)
        want = OPS[op](a.astype(np.float64), b.astype(np.float64)).astype(dt)
    y = run(one_node(op, [("a", [4, 7]), ("b", [7])], {}, elem=elem), {"a": a, "b": b}, reference)[0]
    assert y.dtype == dt
    np.testing.assert_array_equal(y, want)


@rules("ADDMUL-3")
@pytest.mark.parametrize("op", ["Add", "Mul"])
@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("declared", [True, False])
def test_shapes_that_do_not_broadcast(op, reference, declared):
    m = one_node(op, [("a", [2, 3] if declared else None), ("b", [4] if declared else None)], {})
    msg = error_of(m, {"a": np.zeros((2, 3), np.float32), "b": np.zeros(4, np.float32)}, reference)
    assert (f"{op} node 'n0' (#0): input 1 'b' has shape float[4] which cannot broadcast dim 3 "
            "with dim 4 at axis 1") in msg


@rules("ADDMUL-4")
@pytest.mark.parametrize("op", ["Add", "Mul"])
@pytest.mark.parametrize("reference", [False, True])
def test_types_differ(op, reference):
    m = one_node(op, [("a", [2]), ("b", [2])], {})
    m.graph.input[1].type.tensor_type.elem_type = TensorProto.INT32
    msg = error_of(m, {"a": np.zeros(2, np.float32), "b": np.zeros(2, np.int32)}, reference)
    assert "input 1 'b' has type int32; expected float to match input 0 'a'" in msg
