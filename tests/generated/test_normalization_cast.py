"""Normalization ops (BatchNormalization, LayerNormalization, InstanceNormalization,
GroupNormalization, LpNormalization, MeanVarianceNormalization, LRN) and Cast / CastLike over every
pair of the numeric, bool and string types, with ±0/±inf/NaN and the integer limits."""
import numpy as np
import pytest

from opcheck import (BITS, DTYPES, ONNX_OF, CLOSE, FLOATS, INTS, Case, I, V, case_params,
                     formula, ref_in_f32, ref_via_f32, schema_types)

CASES = []


def add(*a, **k):
    CASES.append(Case(*a, **k))


def norm_tol(dt):
    return {"f64": CLOSE(1e-10, 1e-9), "f32": CLOSE(2e-5, 2e-4), "f16": CLOSE(1e-2, 1e-2),
            "bf16": CLOSE(8e-2, 5e-2)}[dt]


# ---- BatchNormalization (inference) ------------------------------------------------------------
for opset in [15, 14, 9]:
    for k, dt in enumerate(schema_types("BatchNormalization", opset)):
        shapes = [(2, 3, 4, 5), (3, 3), (1, 3, 7), (2, 3, 2, 2, 2), (0, 3, 2)] if dt == "f32" else [(2, 3, 4, 5)]
        for shape in shapes:
            c = shape[1]
            pdt = dt
            ins = [I(dt, shape), I(pdt, (c,)), I(pdt, (c,)), I(pdt, (c,)), I(pdt, (c,), "pos")]
            # onnx.reference's BatchNormalization-9 is wrong (differs from ORT and opset 14/15 by
            # 0.1 on plain inference): ORT is the oracle for opset 9.
            oracle = "ort" if opset == 9 else "ref"
            if oracle == "ort" and dt not in ("f32", "f64"):
                continue
            add("BatchNormalization", ins, attrs={"epsilon": 1e-3 if k % 2 else 1e-5}, opset=opset, tol=norm_tol(dt),
                oracle=oracle)

# ---- LayerNormalization -----------------------------------------------------------------------
for k, dt in enumerate(schema_types("LayerNormalization", 17)):
    variants = [((2, 3, 4), -1, True, 3), ((2, 3, 4), 1, True, 1), ((5, 7), 0, False, 1), ((2, 1, 3, 2, 4), -2, True, 3),
                ((3, 1), -1, True, 1), ((0, 4), -1, True, 1)]
    if dt != "f32":
        # Mean / InvStdDev are of type U (float32 under the default stash_type) whatever T is;
        # onnx.reference returns them in T, so only Y is compared for the other types.
        variants = [(s_, a_, b_, 1) for s_, a_, b_, _ in variants[:2]]
    for shape, axis, bias, n_out in variants:
        norm_shape = shape[axis % len(shape):]
        ins = [I(dt, shape), I(dt, norm_shape)] + ([I(dt, norm_shape)] if bias else [])
        oracle = ref_in_f32 if dt == "bf16" else "ref"
        add("LayerNormalization", ins, attrs={"axis": axis, "epsilon": 1e-5}, opset=17, n_out=n_out,
            tol=norm_tol(dt), tag=f"ax{axis}", oracle=oracle,
            out_dtypes=[dt] + ["f32"] * (n_out - 1) if dt == "bf16" else None)

# ---- InstanceNormalization / GroupNormalization ------------------------------------------------
for k, dt in enumerate(schema_types("InstanceNormalization", 22)):
    for shape in ([(2, 3, 4, 5), (1, 2, 7), (2, 2, 2, 3, 2)] if dt == "f32" else [(2, 3, 4, 5)]):
        c = shape[1]
        oracle = ref_in_f32 if dt == "bf16" else "ref"
        add("InstanceNormalization", [I(dt, shape), I(dt, (c,)), I(dt, (c,))], attrs={"epsilon": 1e-5}, opset=22,
            tol=norm_tol(dt), oracle=oracle)
for opset in [21]:
    for dt in schema_types("GroupNormalization", opset):
        for shape, groups in ([((2, 6, 4, 5), 3), ((1, 4, 7), 4), ((2, 6, 3), 1), ((1, 6, 2, 2, 2), 2)] if dt == "f32" else [((2, 6, 4, 5), 3)]):
            c = shape[1]
            oracle = ref_in_f32 if dt == "bf16" else "ref"
            # stash_type (default float32) lets mean/variance be computed in float32: f32-level tolerance
            add("GroupNormalization", [I(dt, shape), I(dt, (c,)), I(dt, (c,))],
                attrs={"num_groups": groups, "epsilon": 1e-5}, opset=opset,
                tol=norm_tol("f32" if dt == "f64" else dt), tag=f"g{groups}",
                oracle=oracle)

# ---- LpNormalization / MeanVarianceNormalization / LRN -----------------------------------------
for dt in schema_types("LpNormalization", 22):
    for shape, axis, p in [((3, 4), -1, 2), ((3, 4), 0, 1), ((2, 3, 4), 1, 2), ((5,), 0, 1)]:
        if dt != "f32" and shape != (3, 4):
            continue
        oracle = ref_in_f32 if dt == "bf16" else "ref"
        if p == 1:  # onnx.reference divides by sum(x) instead of sum(|x|)
            oracle = formula(lambda x, axis, p: x / np.abs(x).sum(axis=axis, keepdims=True), "l1_normalize_f64")
        add("LpNormalization", [I(dt, shape, "nonzero")], attrs={"axis": axis, "p": p}, opset=22, tol=norm_tol(dt),
            tag=f"ax{axis}_p{p}", oracle=oracle)
for dt in schema_types("MeanVarianceNormalization", 13):
    for shape, axes in [((2, 3, 4, 5), None), ((2, 3, 4, 5), [0, 1]), ((3, 4, 5), [2]), ((2, 3, 4, 5), [1, 2, 3])]:
        if dt != "f32" and axes is not None:
            continue
        add("MeanVarianceNormalization", [I(dt, shape)], attrs={} if axes is None else {"axes": axes}, opset=13,
            tol=norm_tol("f32" if dt == "f64" else dt), tag=f"ax{axes}", oracle="ref" if dt == "f32" else ref_via_f32)
# onnx.reference's LRN is off by ~1e-3 (and 4-D only); ORT agrees with the spec formula but has
# float32 only and odd sizes only.
for dt in ["f32"]:
    for shape, size, attrs in [((2, 5, 3, 3), 3, {}), ((1, 4, 2, 2), 3, {"alpha": 0.01, "beta": 0.5, "bias": 2.0}),
                               ((1, 7, 3, 2), 5, {}), ((1, 6, 2, 2), 1, {})]:
        oracle = "ort"
        add("LRN", [I(dt, shape)], attrs=dict(attrs, size=size), opset=13, tol=norm_tol(dt), tag=f"size{size}",
            oracle=oracle)

# ---- Cast --------------------------------------------------------------------------------------
CAST_TYPES = ["f32", "f64", "f16", "bf16", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool", "str"]


def cast_kind(src, dst):
    """Data for which the conversion is defined (float -> int out of range / NaN is undefined)."""
    if src == "str":
        if dst == "bool":
            return lambda r, s, t: np.array([["0", "1"][int(v)] for v in np.ravel(r.integers(0, 2, s))], dtype=object).reshape(s)
        if dst in FLOATS:
            pool = ["1.5", "-0.25", "3", "1e3", "-7.125", "inf", "-inf", "NaN", "0", "-0"]
        else:
            pool = ["0", "1", "7", "42", "100"] + (["-3", "-100"] if dst.startswith("i") else [])
        return lambda r, s, t: np.asarray(np.array(pool, dtype=object)[r.integers(0, len(pool), s)], dtype=object).reshape(s)
    if src in FLOATS:
        if dst in FLOATS or dst == "bool":
            return "special"
        if dst == "str":
            return "small"
        lo = 0 if dst.startswith("u") else -100
        return lambda r, s, t: r.integers(lo, 101, s) + r.choice([0.0, 0.25, 0.5, 0.75], s)
    if src in INTS:
        return "any" if dst != "str" else "special"
    return "normal"


for k, src in enumerate(CAST_TYPES):
    for j, dst in enumerate(CAST_TYPES):
        if src == dst == "str":
            continue
        if "str" in (src, dst) and ("bf16" in (src, dst) or "f16" in (src, dst)):
            continue  # float formatting/parsing of 16-bit floats: onnx.reference round trips via float32 text
        shape = [(3, 5), (2, 3, 4), (7,), (0, 2), (1, 2, 1, 3, 2), ()][(k + j) % 6]
        tol = BITS
        oracle = "ref"
        if src in FLOATS and dst == "str":
            # onnx.reference prints numpy's shortest repr; the spec leaves the format open: compare
            # the parsed values instead.
            def check(e, a, _k):
                ev = np.array([float(x) for x in e.ravel()])
                av = np.array([float(x) for x in a.ravel()])
                assert e.shape == a.shape, f"shape {a.shape} != {e.shape}"
                assert np.array_equal(ev, av, equal_nan=True), f"{list(a.ravel())} != {list(e.ravel())}"
            add("Cast", [I(src, shape, cast_kind(src, dst))], attrs={"to": ONNX_OF[dst]},
                opset=21, tag=f"to_{dst}", check=check)
            continue
        add("Cast", [I(src, shape, cast_kind(src, dst))], attrs={"to": ONNX_OF[dst]},
            opset=21, tol=tol, tag=f"to_{dst}", oracle=oracle)
        if src in FLOATS and dst in FLOATS and src != dst:  # rounding: ties, subnormals, overflow to inf
            vals = [1e-8, -1e-8, 6.1e-5, 3e-39, 65519.0, 65520.0, 7e4, -7e4, 3.4e38, 1.00048828125, 1.0009765625,
                    1.00390625, 1.005859375, 1.0 + 2**-24, np.nan, -np.inf]
            with np.errstate(over="ignore"):
                rounding_input = np.array(vals, dtype=np.float64).astype(DTYPES[src])
            add("Cast", [V(rounding_input)],
                attrs={"to": ONNX_OF[dst]}, opset=21, tol=BITS, tag=f"to_{dst}_rounding")
# older opsets of Cast
for opset in [13, 9, 6]:
    add("Cast", [I("f32", (3, 4), "special")], attrs={"to": ONNX_OF["f64"]}, opset=opset, tol=BITS)
    add("Cast", [I("i64", (3, 4), "any")], attrs={"to": ONNX_OF["i8"]}, opset=opset)
# CastLike
for src, dst in [("f32", "f16"), ("i64", "f32"), ("f64", "i32"), ("bool", "f32"), ("f32", "bool"), ("u8", "i8")]:
    add("CastLike", [I(src, (3, 4), cast_kind(src, dst)), I(dst, (1,))], opset=21, tol=BITS, tag=f"to_{dst}")


@pytest.mark.parametrize("case", case_params(CASES))
def test_case(case, check):
    check(case)
