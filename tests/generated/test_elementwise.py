"""Elementwise and broadcasting operators: every schema type, ranks 0-5, broadcasting both ways,
sizes 0/1/odd/prime, and ±0/±inf/NaN for the float types."""
import numpy as np
import pytest

from opcheck import (BITS, BROADCAST_PAIRS, EXACT, FLOATS, INTS, SINTS, Case, I, V,
                     OMIT, case_params, float_close, ref_with_inputs_permuted, schema_types)

CASES = []


def pairs_for(k, n=4):
    """n broadcast pairs, rotated by k so every type meets every shape somewhere."""
    return [BROADCAST_PAIRS[(k * 3 + j * 5) % len(BROADCAST_PAIRS)] for j in range(n)]


def add(*a, **k):
    CASES.append(Case(*a, **k))


# ---- binary arithmetic --------------------------------------------------------------------
for op, opset in [("Add", 14), ("Sub", 14), ("Mul", 14), ("Div", 14), ("Add", 7), ("Mul", 13)]:
    types = schema_types(op, opset)
    for k, dt in enumerate(types):
        shapes = BROADCAST_PAIRS if (dt == "f32" and opset == 14) else pairs_for(k + len(op), 3 if opset == 14 else 1)
        for a, b in shapes:
            kind_b = "nonzero" if (op == "Div" and dt in INTS) else "normal"
            add(op, [I(dt, a), I(dt, b, kind_b)], opset=opset)
        if dt in FLOATS:  # ±0, ±inf, NaN through every float type
            add(op, [I(dt, (4, 7), "special"), I(dt, (4, 7), "special")], opset=opset, tag="special")
            add(op, [I(dt, (3, 5), "special"), I(dt, (1,), "special")], opset=opset, tag="special")
        elif op != "Div":  # wrap-around at the type's limits (two's complement, as ORT and numpy)
            add(op, [I(dt, (6, 5), "special"), I(dt, (6, 5), "special")], opset=opset, tag="limits")
        else:
            add(op, [I(dt, (6, 5), "special"), I(dt, (6, 5), "nonzero")], opset=opset, tag="limits")

# Mod: fmod=0 (integers; sign of the divisor) and fmod=1 (C fmod; required for floats).
for dt in schema_types("Mod", 13):
    for a, b in pairs_for(len(dt), 3):
        if dt in INTS:
            add("Mod", [I(dt, a, "special" if dt in SINTS else "any"), I(dt, b, "nonzero")], attrs={"fmod": 0}, opset=13, tag="fmod0")
        add("Mod", [I(dt, a, "normal"), I(dt, b, "nonzero")], attrs={"fmod": 1}, opset=13, tag="fmod1",
            tol=float_close(dt) if dt in FLOATS else EXACT)
    if dt in FLOATS:
        add("Mod", [I(dt, (5, 4), "special"), I(dt, (5, 4), "special")], attrs={"fmod": 1}, opset=13,
            tag="special", tol=float_close(dt))

# Pow: base T x exponent T1.
for dt in schema_types("Pow", 15):
    for et in ["f32", "i64", "i32", "f64", "f16", "u8", "i8"] if dt in FLOATS else ["i64", "i32", "u8", "f32"]:
        if dt in FLOATS:
            base, expo = I(dt, (3, 4), "pos"), I(et, (4,), "small")
            tol = float_close(dt, 4)
        else:
            base = I(dt, (3, 4), "normal")
            expo = I(et, (4,), lambda r, s, t: r.integers(0, 4, s))
            tol = EXACT
        add("Pow", [base, expo], opset=15, tol=tol)
    if dt in FLOATS:
        add("Pow", [I(dt, (5, 6), "special"), I(dt, (5, 6), "special")], opset=15, tag="special", tol=float_close(dt, 4))
        add("Pow", [I(dt, (2, 3, 4), "normal"), V([2.0, 0.5, 3.0, -1.0], dt)], opset=15, tag="fixedexp", tol=float_close(dt, 4))
        add("Pow", [I(dt, (2, 3), "normal"), I(dt, (), "small")], opset=7, tol=float_close(dt, 4))

# Variadic Max/Min/Sum/Mean: 1-3 inputs with multidirectional broadcasting.
VARIADIC_SHAPES = [[(5,)], [(2, 3), (3,)], [(2, 1, 4), (3, 1), (2, 3, 4)], [(), (2, 2)], [(0, 3), (1, 3)],
                   [(1, 1, 1, 1, 1), (2, 1, 3, 1, 2), (3, 1, 2)]]


def variadic_oracle(shapes):
    """onnx.reference's Max/Min/Sum/Mean accumulate in place into the first input, so they fail
    when the first input is smaller than the broadcast result: the oracle then runs the reference
    with the full-shape input moved first (the ops are commutative)."""
    full = tuple(np.broadcast_shapes(*shapes))
    if tuple(shapes[0]) == full:
        return "ref"
    k = [tuple(s) for s in shapes].index(full)
    return ref_with_inputs_permuted([k] + [i for i in range(len(shapes)) if i != k])
for op, opset in [("Max", 13), ("Min", 13), ("Sum", 13), ("Mean", 13), ("Max", 8), ("Sum", 6)]:
    for k, dt in enumerate(schema_types(op, opset)):
        if opset < 8:  # no broadcasting before opset 8
            add(op, [I(dt, (3, 4)), I(dt, (3, 4)), I(dt, (3, 4))], opset=opset, tol=float_close(dt, 2))
            continue
        shapes = VARIADIC_SHAPES if dt in ("f32", "i32") else [VARIADIC_SHAPES[(k + j) % 6] for j in range(2)]
        tol = EXACT if op in ("Max", "Min") else float_close(dt, 2)
        for shs in shapes:
            add(op, [I(dt, s) for s in shs], opset=opset, tol=tol, oracle=variadic_oracle(shs))
        if dt in FLOATS and op in ("Max", "Min"):
            add(op, [I(dt, (4, 6), "special"), I(dt, (4, 6), "special")], opset=opset, tag="special", tol=tol)
        if dt in INTS and op in ("Max", "Min"):
            add(op, [I(dt, (4, 6), "special"), I(dt, (6,), "any")], opset=opset, tag="limits")

# ---- comparison and logic ----------------------------------------------------------------
for op in ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"]:
    opset = {"Equal": 19}.get(op, 16 if "Or" in op else 13)
    for k, dt in enumerate(schema_types(op, opset)):
        for a, b in pairs_for(k, 2):
            kind = "small" if dt in FLOATS else "normal"
            add(op, [I(dt, a, kind), I(dt, b, kind)], opset=opset)
        if dt in FLOATS:
            add(op, [I(dt, (6, 6), "special"), I(dt, (6, 6), "special")], opset=opset, tag="special")
        elif dt in INTS:
            add(op, [I(dt, (6, 6), "special"), I(dt, (6, 6), "special")], opset=opset, tag="limits")

for op in ["And", "Or", "Xor"]:
    for a, b in BROADCAST_PAIRS[::2]:
        add(op, [I("bool", a), I("bool", b)], opset=7)
for shape in [(), (0,), (7,), (2, 3, 4, 1, 2)]:
    add("Not", [I("bool", shape)], opset=1)

for op in ["BitwiseAnd", "BitwiseOr", "BitwiseXor"]:
    for k, dt in enumerate(schema_types(op, 18)):
        for a, b in pairs_for(k, 2):
            add(op, [I(dt, a, "any"), I(dt, b, "any")], opset=18)
for dt in schema_types("BitwiseNot", 18):
    add("BitwiseNot", [I(dt, (3, 5), "any")], opset=18)
    add("BitwiseNot", [I(dt, (), "any")], opset=18)
for dt in schema_types("BitShift", 11):
    bits = {"u8": 8, "u16": 16, "u32": 32, "u64": 64}[dt]
    for direction in ["LEFT", "RIGHT"]:
        for a, b in [((4, 5), (5,)), ((), (3,)), ((2, 3), (2, 3))]:
            add("BitShift", [I(dt, a, "any"), I(dt, b, lambda r, s, t, n=bits: r.integers(0, n, s))],
                attrs={"direction": direction}, opset=11, tag=direction)

# ---- unary math --------------------------------------------------------------------------
UNARY = {  # op: (opset, data kind, tolerance scale or None for BITS)
    "Abs": (13, "special", None), "Neg": (13, "special", None), "Sign": (13, "special", 0),
    "Floor": (13, "special", None), "Ceil": (13, "special", None), "Round": (22, "small", None),
    "Sqrt": (13, "pos", 1), "Reciprocal": (13, "nonzero", 1), "Exp": (13, "normal", 2),
    "Log": (13, "pos", 2), "Sin": (22, "normal", 2), "Cos": (22, "normal", 2),
    "Tan": (22, "unit", 4), "Asin": (22, "unit", 2), "Acos": (22, "unit", 2),
    "Atan": (22, "normal", 2), "Sinh": (22, "unit", 2), "Cosh": (22, "unit", 2),
    "Asinh": (22, "normal", 2), "Acosh": (22, lambda r, s, t: r.uniform(1.0, 5.0, s), 2),
    "Atanh": (22, "unit", 2), "Erf": (13, "normal", 2),
}


def erf_f64(case, model, arrays):
    """Oracle for Erf on double: math.erf in double precision (onnx.reference's Erf evaluates
    into float32 (otypes="f"), and ONNX Runtime has no double Erf)."""
    import math
    return [np.vectorize(math.erf, otypes=[np.float64])(arrays[0]).reshape(arrays[0].shape)]


def unary_oracle(op, dt):
    return erf_f64 if (op == "Erf" and dt == "f64") else "ref"


UNARY_SHAPES = [(), (1,), (0,), (7,), (3, 5), (2, 3, 4), (2, 1, 3, 1, 2)]
for op, (opset, kind, scale) in UNARY.items():
    for k, dt in enumerate(schema_types(op, opset)):
        tol = BITS if scale is None else EXACT if scale == 0 else float_close(dt, scale)
        if dt in FLOATS and scale is not None and dt in ("f16", "bf16"):
            tol = float_close(dt, 1.5)
        shapes = UNARY_SHAPES if dt == "f32" else [UNARY_SHAPES[(k + j * 2) % len(UNARY_SHAPES)] for j in range(2)]
        for s in shapes:
            kk = kind if dt in FLOATS else ("special" if kind == "special" else "normal")
            add(op, [I(dt, s, kk)], opset=opset, tol=tol, oracle=unary_oracle(op, dt))
        if dt in FLOATS and kind != "special":  # edge values: NaN in, NaN out; ±inf; ±0
            add(op, [I(dt, (4, 5), "special")], opset=opset, tol=tol, tag="special", oracle=unary_oracle(op, dt))
# Round: halves round to even.
for dt in FLOATS:
    add("Round", [V([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49, -0.51, 3.5000001, np.nan, np.inf, -0.0], dt)],
        opset=22, tag="halves")
for dt in ["f32", "f64", "f16", "bf16"]:
    for attrs in [{}, {"detect_negative": 0}, {"detect_positive": 0}]:
        add("IsInf", [I(dt, (5, 6), "special")], attrs=attrs, opset=20, tag="".join(attrs) or "both")
    add("IsNaN", [I(dt, (5, 6), "special")], opset=20)
add("IsInf", [I("f32", (4,), "special")], opset=10)
add("IsNaN", [I("f64", (0, 3), "special")], opset=13)

# ---- Where / Clip -----------------------------------------------------------------------
for k, dt in enumerate(schema_types("Where", 16)):
    for c, a, b in [((2, 3), (2, 3), (2, 3)), ((3, 1), (1, 4), ()), ((1, 2, 1, 3), (2, 1, 1), (3,)),
                    ((0, 2), (1, 2), (2,)), ((), (5,), (1,))][: 5 if dt in ("f32", "str") else 2 + k % 2]:
        add("Where", [I("bool", c), I(dt, a, "special" if dt in FLOATS else "normal"), I(dt, b)], opset=16)
for dt in schema_types("Where", 9):
    if dt in ("f32", "i64", "bool"):
        add("Where", [I("bool", (2, 3)), I(dt, (2, 3)), I(dt, (3,))], opset=9)

for k, dt in enumerate(schema_types("Clip", 13)):
    kind = "special" if dt in FLOATS else "any"
    lo, hi = (-1.0, 2.0) if dt in FLOATS else ((-3, 4) if dt in SINTS else (2, 7))
    add("Clip", [I(dt, (4, 5), kind), V(lo, dt), V(hi, dt)], opset=13, tag="both")
    # An omitted bound defaults to numeric_limits lowest()/max() (the spec's words; ONNX Runtime
    # clamps inf to FLT_MAX), while onnx.reference leaves ±inf alone: ORT is the oracle for f32/f64;
    # the 16-bit float types (no ORT kernel) get finite data there.
    one_sided_oracle, one_sided_kind = ("ort", kind) if dt in ("f32", "f64") else ("ref", "normal" if dt in FLOATS else kind)
    add("Clip", [I(dt, (3, 4), one_sided_kind), V(lo, dt)], opset=13, tag="min", oracle=one_sided_oracle)
    add("Clip", [I(dt, (3, 4), one_sided_kind), OMIT, V(hi, dt)], opset=13, tag="max", oracle=one_sided_oracle)
    add("Clip", [I(dt, (2, 3), one_sided_kind)], opset=13, tag="none", oracle=one_sided_oracle)
    add("Clip", [I(dt, (0, 3), kind), V(lo, dt), V(hi, dt)], opset=13, tag="empty")
    add("Clip", [I(dt, (5,), kind), V(hi, dt), V(lo, dt)], opset=13, tag="min_gt_max")
for attrs in [{"min": -0.5, "max": 0.5}, {"min": 0.0}, {}]:
    add("Clip", [I("f32", (3, 4), "special")], attrs=attrs, opset=6, tag="attrs" + "".join(attrs))


@pytest.mark.parametrize("case", case_params(CASES))
def test_case(case, check):
    check(case)


@pytest.mark.parametrize("dt", ["f32", "i64", "bool"])
def test_python_scalar_feed(dt):
    """A 0-d numpy array fed through the Python module keeps rank 0 (the generated cases above
    pass rank-0 inputs as initializers, so this is the one place the feed path is checked)."""
    import onyx
    from onnx import helper
    from opcheck import DTYPES, ONNX_OF
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", ONNX_OF[dt], [])],
                          [helper.make_tensor_value_info("y", ONNX_OF[dt], [])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    x = np.array(3, dtype=DTYPES[dt])
    (y,) = onyx.InferenceSession(m.SerializeToString()).run(None, {"x": x})
    assert y.shape == () and y == x
