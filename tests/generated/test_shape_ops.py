"""Shape and data-movement operators: every schema type (incl. bool and string), ranks 0-5, empty
tensors, negative axes / indices / steps, out-of-range clamping, shape inputs both constant and fed."""
import numpy as np
import pytest

from opcheck import (DTYPES, OMIT, ONNX_OF, Case, I, V, case_params, schema_types)

CASES = []


def add(*a, **k):
    CASES.append(Case(*a, **k))


def i64(v, const=True):
    x = V(np.array(v, np.int64))
    x.const = const
    return x


def kind_for(dt):
    return "special" if dt in ("f32", "f64", "f16", "bf16") else "normal"


def each_type(op, opset, param="T"):
    return list(enumerate(schema_types(op, opset, param)))


# ---- Reshape ---------------------------------------------------------------------------------
RESHAPES = [((2, 3, 4), [4, -1]), ((2, 3, 4), [0, 0, 2, 2]), ((6,), [1, 2, 1, 3, 1]), ((), [1]), ((1,), []),
            ((0, 4), [2, 0, -1]), ((2, 3, 4), [-1]), ((3, 4), [0, 4]), ((2, 0, 3), [3, 0, 2])]
for k, dt in each_type("Reshape", 21):
    cases = RESHAPES if dt == "f32" else [RESHAPES[k % len(RESHAPES)], RESHAPES[(k + 4) % len(RESHAPES)]]
    for shape, target in cases:
        if 0 in shape and 0 in target and target.count(-1):
            continue
        add("Reshape", [I(dt, shape, kind_for(dt)), i64(target)], opset=21)
add("Reshape", [I("f32", (2, 3, 4)), i64([4, 3, 2], const=False)], opset=21, tag="fedshape")
add("Reshape", [I("i64", (2, 3, 4)), i64([0, -1], const=False)], opset=14, tag="fedshape")
add("Reshape", [I("f32", (0, 3)), i64([3, 0])], attrs={"allowzero": 1}, opset=14, tag="allowzero")
add("Reshape", [I("f32", (2, 3)), i64([3, 2])], attrs={"allowzero": 1}, opset=14, tag="allowzero")
add("Reshape", [I("f32", (2, 3, 4)), i64([0, 12])], opset=5)

# ---- Transpose -------------------------------------------------------------------------------
PERMS = [((), None), ((5,), [0]), ((2, 3), [1, 0]), ((2, 3, 4), [2, 0, 1]), ((2, 3, 4), None),
         ((2, 1, 3, 2), [3, 1, 0, 2]), ((2, 3, 1, 2, 3), [4, 2, 0, 3, 1]), ((0, 3, 2), [1, 2, 0])]
for k, dt in each_type("Transpose", 21):
    cases = PERMS if dt in ("f32", "u8") else [PERMS[(k + j * 3) % len(PERMS)] for j in range(2)]
    for shape, perm in cases:
        attrs = {} if perm is None else {"perm": perm}
        add("Transpose", [I(dt, shape, kind_for(dt))], attrs=attrs, opset=21, tag="perm" + ("def" if perm is None else "".join(map(str, perm))))
add("Transpose", [I("f32", (2, 3, 4))], attrs={"perm": [1, 2, 0]}, opset=1)

# ---- Slice -----------------------------------------------------------------------------------
SLICES = [  # shape, starts, ends, axes, steps
    ((10,), [2], [8], None, None), ((10,), [-3], [100], None, None), ((10,), [8], [1], None, [-2]),
    ((10,), [-1], [-100], None, [-1]), ((4, 5, 6), [1, 0], [3, 5], [0, 2], None),
    ((4, 5, 6), [0, 1, 2], [4, 5, 6], [-3, -2, -1], [2, 2, 3]), ((4, 5), [3], [3], [1], None),
    ((4, 5), [5], [10], [0], None), ((2, 3, 4, 5, 2), [1, -1], [2, 0], [1, 3], [1, -1]),
    ((0, 4), [0], [2], [1], None), ((6, 4), [-100], [100], [0], [3]),
    ((5,), [np.iinfo(np.int64).max], [np.iinfo(np.int64).min], [0], [-1]),
]
for k, dt in each_type("Slice", 13):
    cases = SLICES if dt == "f32" else [SLICES[(k + j * 5) % len(SLICES)] for j in range(2)]
    for shape, starts, ends, axes, steps in cases:
        idx_dt = "i32" if (k % 2 and max(map(abs, starts + ends)) < 2**31) else "i64"
        ins = [I(dt, shape, kind_for(dt)), V(np.array(starts), idx_dt, const=True), V(np.array(ends), idx_dt, const=True)]
        if axes is not None or steps is not None:
            ins.append(V(np.array(axes if axes is not None else list(range(len(starts)))), idx_dt, const=True))
        if steps is not None:
            ins.append(V(np.array(steps), idx_dt, const=True))
        add("Slice", ins, opset=13, tag=f"s{starts}e{ends}a{axes}st{steps}".replace(" ", ""))
# starts/ends fed at run time (output shape unknown at plan time)
add("Slice", [I("f32", (6, 7)), i64([1, -2], False), i64([5, 100], False), i64([0, 1], False), i64([2, -1], False)], opset=13, tag="fed")
add("Slice", [I("f32", (4, 5, 6))], attrs={"starts": [1, 0], "ends": [3, 100], "axes": [0, 2]}, opset=1)

# ---- Concat ----------------------------------------------------------------------------------
CONCATS = [([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 0)], 1), ([(2, 3, 4), (2, 3, 4)], -1),
           ([(5,)], 0), ([(0, 3), (2, 3), (0, 3)], 0), ([(1, 2, 1, 2, 3), (1, 2, 2, 2, 3)], 2),
           ([(3,), (0,)], -1)]
for k, dt in each_type("Concat", 13):
    cases = CONCATS if dt == "f32" else [CONCATS[(k + j * 3) % len(CONCATS)] for j in range(2)]
    for shapes, axis in cases:
        add("Concat", [I(dt, s, kind_for(dt)) for s in shapes], attrs={"axis": axis}, opset=13, tag=f"ax{axis}")
add("Concat", [I("f32", (2, 3)), I("f32", (2, 3))], attrs={"axis": 1}, opset=4)

# ---- Split -----------------------------------------------------------------------------------
for k, dt in each_type("Split", 18):
    variants = [((6, 4), 0, None, 3), ((7, 2), 0, None, 3), ((5,), 0, [2, 0, 3], None), ((2, 9), -1, [4, 5], None),
                ((2, 3, 4), 1, None, 3), ((0, 4), 1, None, 2), ((2, 1, 3, 1, 4), 4, [1, 1, 2], None)]
    if dt != "f32":
        variants = [variants[(k + j * 3) % len(variants)] for j in range(2)]
    for shape, axis, split, num in variants:
        if num is not None:
            add("Split", [I(dt, shape, kind_for(dt))], attrs={"axis": axis, "num_outputs": num}, opset=18,
                n_out=num, tag=f"ax{axis}_n{num}")
        else:
            add("Split", [I(dt, shape, kind_for(dt)), i64(split)], attrs={"axis": axis}, opset=18,
                n_out=len(split), tag=f"ax{axis}_s{''.join(map(str, split))}")
add("Split", [I("f32", (6, 2)), i64([1, 5])], attrs={"axis": 0}, opset=13, n_out=2)
add("Split", [I("f32", (6, 2))], attrs={"axis": 0}, opset=13, n_out=3, tag="equal")
add("Split", [I("f32", (6, 2))], attrs={"axis": 0, "split": [4, 2]}, opset=11, n_out=2)

# ---- Pad -------------------------------------------------------------------------------------
PADS = [((3, 4), [1, 2, 0, 1], None), ((3, 4), [0, -1, 2, 0], None), ((2, 3, 4), [1, 1, 0, 2], [0, 2]),
        ((5,), [3, 2], None), ((2, 3, 4), [0, 0, 1, 0, 0, 1], None), ((1, 2, 3, 2, 2), [1, 1, 2, 2], [-1, 2]),
        ((0, 3), [1, 0, 2, 1], None)]
for mode in ["constant", "reflect", "edge", "wrap"]:
    opset = 19 if mode == "wrap" else 21
    for k, dt in each_type("Pad", opset):
        cases = PADS if (dt == "f32") else [PADS[(k + len(mode)) % len(PADS)]]
        for shape, pads, axes in cases:
            if mode != "constant" and 0 in shape:
                continue
            if mode == "reflect":  # reflect needs pad < dim
                dims = [shape[a] for a in (axes or range(len(shape)))]
                n = len(dims)
                if any(p >= d for p, d in zip(pads[:n] + pads[n:], dims + dims)):
                    continue
            ins = [I(dt, shape, kind_for(dt)), i64(pads)]
            if mode == "constant":
                cval = {"bool": True, "str": "pad"}.get(dt, 7)
                ins.append(V(np.array(cval, dtype=DTYPES[dt]), const=True))
            if axes is not None:
                if len(ins) == 2:
                    ins.append(OMIT)
                ins.append(i64(axes))
            # onnx.reference cannot do negative (cropping) pads: ONNX Runtime can (f32/f64/i32/i64/u8...)
            oracle = "ort" if min(pads) < 0 else "ref"
            if oracle == "ort" and dt not in ("f32", "f64", "i32", "i64", "u8", "i8", "bool"):
                continue
            add("Pad", ins, attrs={"mode": mode}, opset=opset, tag=f"{mode}_p{''.join(map(str, pads))}", oracle=oracle)
add("Pad", [I("f32", (3, 4)), i64([1, 2, 0, 1], False)], attrs={"mode": "constant"}, opset=13, tag="fedpads")
add("Pad", [I("f32", (3, 4))], attrs={"mode": "reflect", "pads": [1, 2, 1, 1]}, opset=2)
add("Pad", [I("f32", (3, 4))], attrs={"pads": [0, 1, 0, 1], "value": 2.5}, opset=2, tag="value")

# ---- Gather / GatherElements / GatherND / Scatter ---------------------------------------------
def idx(shape, n, neg=True, dt="i64"):
    return I(dt, shape, lambda r, s, t: r.integers(-n if neg else 0, n, s))


for k, dt in each_type("Gather", 13):
    variants = [((5, 4), 0, (3,)), ((5, 4), 1, (2, 2)), ((5, 4), -1, ()), ((2, 3, 4), 1, (0,)),
                ((7,), 0, (2, 1, 3)), ((2, 1, 3, 1, 2), 2, (4,))]
    if dt != "f32":
        variants = [variants[(k + j * 3) % len(variants)] for j in range(2)]
    for shape, axis, ishape in variants:
        # onnx.reference returns shape [0] for empty indices instead of data[:, []]; ORT is right.
        oracle = "ort" if 0 in ishape else "ref"
        if oracle == "ort" and dt in ("bf16",):
            continue
        add("Gather", [I(dt, shape, kind_for(dt)), idx(ishape, shape[axis], dt="i32" if k % 2 else "i64")],
            attrs={"axis": axis}, opset=13, tag=f"ax{axis}", oracle=oracle)
for k, dt in each_type("GatherElements", 13):
    variants = [((4, 5), 0, (3, 5)), ((4, 5), 1, (4, 2)), ((2, 3, 4), 2, (2, 3, 7)), ((3,), 0, (0,))]
    if dt != "f32":
        variants = [variants[k % len(variants)]]
    for shape, axis, ishape in variants:
        add("GatherElements", [I(dt, shape, kind_for(dt)), idx(ishape, shape[axis])], attrs={"axis": axis}, opset=13, tag=f"ax{axis}")
for k, dt in each_type("GatherND", 13):
    variants = [((4, 5), (3, 2), 0), ((4, 5, 3), (2, 1), 0), ((2, 4, 3), (2, 2), 1), ((2, 3, 4, 5), (2, 3, 1), 2)]
    if dt != "f32":
        variants = [variants[k % len(variants)]]
    for shape, ishape, bd in variants:
        last = ishape[-1]
        bounds = shape[bd:bd + last]
        gen = (lambda b: (lambda r, s, t: np.stack([r.integers(-n, n, s[:-1]) for n in b], -1)))(bounds)
        add("GatherND", [I(dt, shape, kind_for(dt)), I("i64", ishape, gen)], attrs={"batch_dims": bd}, opset=13, tag=f"bd{bd}")

for k, dt in each_type("ScatterElements", 18):
    for reduction in (["none", "add", "mul", "max", "min"] if dt == "f32" else ["none"]):
        if dt in ("bool", "str") and reduction != "none":
            continue
        # unique indices for "none" so the result is order independent
        def uniq(r, s, t, n=4):
            return np.stack([r.permutation(n)[: s[0]] for _ in range(s[1])], 1)
        # NaN under min/max reductions is unspecified (ORT itself is order dependent): finite data there
        kind = kind_for(dt) if reduction == "none" else "normal"
        add("ScatterElements", [I(dt, (4, 3), kind), I("i64", (2, 3), uniq), I(dt, (2, 3), kind)],
            attrs={"axis": 0, "reduction": reduction}, opset=18, tag=reduction)
add("ScatterElements", [I("f32", (3, 5)), V(np.array([[1, -1], [0, 2]], np.int64)), I("f32", (2, 2))], attrs={"axis": 1}, opset=13)
for k, dt in each_type("ScatterND", 18):
    for reduction in (["none", "add", "mul", "max", "min"] if dt == "f32" else ["none"]):
        if dt in ("bool", "str") and reduction != "none":
            continue
        kind = kind_for(dt) if reduction == "none" else "normal"
        add("ScatterND", [I(dt, (4, 3, 2), kind), V(np.array([[2], [0]], np.int64)), I(dt, (2, 3, 2), kind)],
            attrs={"reduction": reduction}, opset=18, tag=reduction)
add("ScatterND", [I("f32", (4, 3)), V(np.array([[1, 2], [3, -1]], np.int64)), I("f32", (2,))], opset=13, tag="elem")

# ---- Squeeze / Unsqueeze / Flatten / Expand / Tile / Shape / Size / Identity ---------------------
for k, dt in each_type("Squeeze", 21):
    variants = [((1, 3, 1, 2), [0, 2]), ((1, 3, 1, 2), None), ((1,), [0]), ((2, 1, 1, 1, 3), [-2, 1]), ((0, 1), [1])]
    if dt != "f32":
        variants = [variants[k % len(variants)]]
    for shape, axes in variants:
        add("Squeeze", [I(dt, shape, kind_for(dt))] + ([i64(axes)] if axes else []), opset=21, tag=f"ax{axes}")
add("Squeeze", [I("f32", (1, 3, 1))], attrs={"axes": [0]}, opset=11)
for k, dt in each_type("Unsqueeze", 21):
    variants = [((3, 2), [0]), ((3, 2), [-1, 0]), ((), [0]), ((2, 3), [1, 3, 4]), ((0,), [1])]
    if dt != "f32":
        variants = [variants[k % len(variants)]]
    for shape, axes in variants:
        add("Unsqueeze", [I(dt, shape, kind_for(dt)), i64(axes)], opset=21, tag=f"ax{axes}")
add("Unsqueeze", [I("f32", (3,))], attrs={"axes": [0, 2]}, opset=11)
for k, dt in each_type("Flatten", 21):
    variants = [((2, 3, 4), 1), ((2, 3, 4), 0), ((2, 3, 4), 3), ((2, 3, 4), -1), ((5,), 1), ((0, 2, 3), 2)]
    if dt != "f32":
        variants = [variants[k % len(variants)]]
    for shape, axis in variants:
        # onnx.reference cannot reshape an empty tensor to (0, -1): ORT is the oracle there
        oracle = "ort" if 0 in shape else "ref"
        if oracle == "ort" and dt in ("bf16", "str"):
            continue
        add("Flatten", [I(dt, shape, kind_for(dt))], attrs={"axis": axis}, opset=21, tag=f"ax{axis}", oracle=oracle)
for k, dt in each_type("Expand", 13):
    variants = [((3, 1), [2, 3, 4]), ((1,), [5]), ((), [2, 2]), ((2, 1, 3), [1, 1]), ((4, 1), [4, 0]), ((1, 2, 1, 1, 3), [2, 1, 2, 1, 1])]
    if dt != "f32":
        variants = [variants[k % len(variants)]]
    for shape, target in variants:
        add("Expand", [I(dt, shape, kind_for(dt)), i64(target)], opset=13)
add("Expand", [I("f32", (3, 1)), i64([2, 3, 5], False)], opset=13, tag="fed")
for k, dt in each_type("Tile", 13):
    variants = [((2, 3), [2, 1]), ((3,), [3]), ((2, 1, 2), [1, 3, 0]), ((1, 2, 1, 1, 2), [2, 1, 2, 1, 2])]
    if dt != "f32":
        variants = [variants[k % len(variants)]]
    for shape, reps in variants:
        add("Tile", [I(dt, shape, kind_for(dt)), i64(reps)], opset=13)
for start, end in [(None, None), (1, None), (-2, None), (None, -1), (1, 2), (5, 10), (-10, 1), (2, 1)]:
    attrs = {k: v for k, v in (("start", start), ("end", end)) if v is not None}
    add("Shape", [I("f32", (2, 3, 4))], attrs=attrs, opset=21, tag=f"s{start}e{end}")
for k, dt in each_type("Shape", 21):
    add("Shape", [I(dt, (2, 0, 3) if k % 2 else (), kind_for(dt))], opset=21)
    add("Size", [I(dt, (2, 0, 3) if k % 3 else (4, 5), kind_for(dt))], opset=21)
    add("Identity", [I(dt, (3, 2), kind_for(dt))], opset=21)

# ---- DepthToSpace / SpaceToDepth / Trilu / Range / OneHot / Compress / NonZero / EyeLike ----------
for k, dt in each_type("DepthToSpace", 13):
    for mode in (["DCR", "CRD"] if dt == "f32" else ["DCR" if k % 2 else "CRD"]):
        add("DepthToSpace", [I(dt, (2, 8, 2, 3), kind_for(dt))], attrs={"blocksize": 2, "mode": mode}, opset=13, tag=mode)
for k, dt in each_type("SpaceToDepth", 13):
    add("SpaceToDepth", [I(dt, (1, 3, 4, 6), kind_for(dt))], attrs={"blocksize": 2}, opset=13)
for k, dt in each_type("Trilu", 14):
    if dt == "str":  # onnx.reference fills with integer 0 instead of "" for strings
        continue
    variants = [((4, 5), 0, 1), ((4, 5), 1, 0), ((2, 3, 3), -1, 1), ((3, 4), 10, 0), ((5, 3), -10, 1), ((0, 3), 0, 1)]
    if dt != "f32":
        variants = [variants[k % len(variants)]]
    for shape, kk, upper in variants:
        add("Trilu", [I(dt, shape, kind_for(dt)), V(np.array(kk, np.int64), const=True)], attrs={"upper": upper},
            opset=14, tag=f"k{kk}_u{upper}")
    add("Trilu", [I(dt, (3, 4), kind_for(dt))], opset=14, tag="nok")
for dt, (s, l, d) in [("f32", (0.5, 3.2, 0.7)), ("f64", (5.0, -1.0, -1.5)), ("i32", (1, 10, 3)), ("i64", (10, 1, -4)),
                      ("i16", (0, 5, 1)), ("f32", (1.0, 1.0, 1.0)), ("i64", (5, 1, 2))]:
    add("Range", [V(s, dt), V(l, dt), V(d, dt)], opset=11, tag=f"{s}_{l}_{d}")
for k, (dt, idt) in enumerate([("f32", "i64"), ("i64", "i32"), ("i32", "f32"), ("f64", "u8"), ("f32", "f32")]):
    for axis in [-1, 0]:
        lo, hi = (0, 5) if idt.startswith("u") else (-5, 5)
        add("OneHot", [I(idt, (2, 3), lambda r, s, t, lo=lo, hi=hi: r.integers(lo, hi, s)), V(np.array(5, np.int64), const=True),
                       V(np.array([0, 1]), dt, const=True)], attrs={"axis": axis}, opset=11, tag=f"ax{axis}")
# Out-of-range indices give an all-off row (onnx.reference wraps them modulo depth; ORT is right).
for axis in [-1, 1]:
    add("OneHot", [V(np.array([[0, 5, -6, 7], [-1, 4, 100, -5]], np.int64)), V(np.array(5, np.int64), const=True),
                   V(np.array([0, 1], np.float32), const=True)], attrs={"axis": axis}, opset=11,
        tag=f"outofrange_ax{axis}", oracle="ort")
for k, dt in each_type("Compress", 11):
    variants = [((3, 4), 0, 3), ((3, 4), 1, 2), ((3, 4), None, 12), ((2, 3, 2), -1, 1)]
    if dt != "f32":
        variants = [variants[k % len(variants)]]
    for shape, axis, n in variants:
        add("Compress", [I(dt, shape, kind_for(dt)), I("bool", (n,))], attrs={} if axis is None else {"axis": axis},
            opset=11, tag=f"ax{axis}")
for k, dt in each_type("NonZero", 13):
    add("NonZero", [I(dt, (3, 4) if k % 2 else (2, 1, 3), "small" if dt not in ("bool",) else "normal")], opset=13)
for k, dt in each_type("EyeLike", 22, "T2"):
    add("EyeLike", [I("f32", (3, 4))], attrs={"dtype": ONNX_OF[dt], "k": (k % 3) - 1}, opset=22, tag=dt)


@pytest.mark.parametrize("case", case_params(CASES))
def test_case(case, check):
    check(case)
