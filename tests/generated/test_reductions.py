"""Reductions: every Reduce* op over its schema types, axes as attribute (opset < 18, ReduceSum
< 13) and as input, keepdims, noop_with_empty_axes, negative axes, all axes, empty tensors; ArgMax /
ArgMin with ties and select_last_index; CumSum."""
import numpy as np
import pytest

from opcheck import (EXACT, FLOATS, INTS, Case, I, V, case_params, float_close, ref_as_1d,
                     ref_cast_to_input_type, schema_types)


def oracle_for(op, dt, shape):
    if op == "ReduceSumSquare" and dt in ("i32", "u32"):
        return ref_cast_to_input_type  # onnx.reference promotes to 64 bits
    if op == "ReduceLogSumExp" and len(shape) == 0:
        return ref_as_1d  # onnx.reference's ReduceLogSumExp rejects 0-d input
    return "ref"

CASES = []

REDUCE = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
          "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]
# (shape, axes or None); None = default (all axes)
AXES = [((3, 4, 5), None), ((3, 4, 5), [1]), ((3, 4, 5), [-1]), ((3, 4, 5), [0, 2]),
        ((2, 3, 1, 2, 3), [1, 3, -1]), ((7,), [0]), ((), None), ((4, 1), [1]), ((2, 3, 4), [0, 1, 2])]
EMPTY = [((0, 3), [0]), ((0, 3), [1]), ((2, 0, 3), None)]


def data_kind(op, dt):
    if op in ("ReduceLogSum",):
        return "pos"
    if op == "ReduceProd":
        return "small" if dt in FLOATS else (lambda r, s, t: r.integers(1, 3, s) * r.choice([-1, 1], s)
                                             if np.issubdtype(t, np.signedinteger) else r.integers(1, 3, s))
    if op in ("ReduceSumSquare", "ReduceL2", "ReduceL1") and dt in INTS:
        return lambda r, s, t: r.integers(0, 4, s)
    return "normal"


def tol_for(op, dt):
    if op in ("ReduceMax", "ReduceMin"):
        return EXACT
    if dt not in FLOATS:
        return EXACT
    return float_close(dt, 20 if dt in ("f16", "bf16") else 4)


for op in REDUCE:
    axes_input_since = 13 if op == "ReduceSum" else 18
    newest = 20 if op in ("ReduceMax", "ReduceMin") else 18
    for opset in sorted({newest, axes_input_since, 13, 11}, reverse=True):
        if op == "ReduceSum" and opset == 18:
            continue
        types = schema_types(op, opset)
        if op in ("ReduceLogSum", "ReduceLogSumExp"):  # onnx.reference breaks on integer input
            types = [t for t in types if t in FLOATS]
        for k, dt in enumerate(types):
            full = dt == "f32" and opset == newest
            combos = AXES if full else [AXES[(k + j * 3) % len(AXES)] for j in range(2)]
            for shape, axes in combos:
                for keepdims in ([1, 0] if full else [(k + opset) % 2]):
                    attrs = {"keepdims": keepdims}
                    if opset >= axes_input_since:
                        ins = [I(dt, shape, data_kind(op, dt))]
                        if axes is not None:
                            ins.append(V(np.array(axes, np.int64)))
                    else:
                        ins = [I(dt, shape, data_kind(op, dt))]
                        if axes is not None:
                            attrs["axes"] = axes
                    CASES.append(Case(op, ins, attrs=attrs, opset=opset, tol=tol_for(op, dt),
                                      tag=f"ax{'all' if axes is None else '_'.join(map(str, axes))}_k{keepdims}",
                                      oracle=oracle_for(op, dt, shape)))
        if opset >= axes_input_since:
            dt = "f32"
            # Empty axes input: reduce all, or nothing with noop_with_empty_axes=1.
            for noop in [0, 1]:
                CASES.append(Case(op, [I(dt, (2, 3), data_kind(op, dt)), V(np.array([], np.int64))],
                                  attrs={"noop_with_empty_axes": noop}, opset=opset, tol=tol_for(op, dt),
                                  tag=f"emptyaxes_noop{noop}",
                                  # spec: with noop the output *is* the input; onnx.reference still
                                  # applies |x|, x², log(x)...; ONNX Runtime follows the spec.
                                  oracle="ort" if noop else "ref"))
            CASES.append(Case(op, [I(dt, (2, 3), data_kind(op, dt)), V(np.array([1], np.int64))],
                              attrs={"keepdims": 1}, opset=opset, tol=tol_for(op, dt), tag="axes_fed"))
            CASES[-1].inputs[1].const = False  # axes fed at run time, not a constant
            # Reductions over zero elements: the op's identity (0, 1, -inf, ...).
            for shape, axes in EMPTY:
                if op in ("ReduceMax", "ReduceMin") and opset < 18:
                    continue
                ins = [I(dt, shape, data_kind(op, dt))] + ([V(np.array(axes, np.int64))] if axes else [])
                CASES.append(Case(op, ins, attrs={"keepdims": 1}, opset=opset, tol=tol_for(op, dt),
                                  tag="empty_ax" + ("_".join(map(str, axes)) if axes else "all")))
        if dt in FLOATS:
            for dt in FLOATS:
                if dt in types and op in ("ReduceMax", "ReduceMin", "ReduceSum", "ReduceMean"):
                    attrs = {"keepdims": 0}
                    ins = [I(dt, (4, 6), "special")]
                    if opset >= axes_input_since:
                        ins.append(V(np.array([1], np.int64)))
                    else:
                        attrs["axes"] = [1]
                    CASES.append(Case(op, ins, attrs=attrs, opset=opset, tol=tol_for(op, dt), tag="special"))

# ArgMax / ArgMin
for op in ["ArgMax", "ArgMin"]:
    for opset in [13, 12, 11]:
        for k, dt in enumerate(schema_types(op, opset)):
            shapes = [((3, 4, 5), 1), ((3, 4, 5), -1), ((7,), 0), ((2, 3, 1, 2, 3), 0), ((0, 3), 1), ((4, 1), 1)]
            if not (dt == "f32" and opset == 13):
                shapes = [shapes[(k + opset) % len(shapes)]]
            for shape, axis in shapes:
                for keepdims in [1, 0]:
                    for last in ([0, 1] if opset >= 12 else [None]):
                        attrs = {"axis": axis, "keepdims": keepdims}
                        if last is not None:
                            attrs["select_last_index"] = last
                        kind = "small" if dt in FLOATS else (lambda r, s, t: r.integers(0, 3, s))  # ties
                        CASES.append(Case(op, [I(dt, shape, kind)], attrs=attrs, opset=opset,
                                          tag=f"ax{axis}_k{keepdims}_l{last}"))

# CumSum: axis input (int32 / int64), exclusive, reverse.
for k, dt in enumerate(schema_types("CumSum", 14)):
    variants = [((3, 4), 0), ((3, 4), -1), ((2, 3, 4), 1), ((7,), 0), ((0, 2), 1), ((1, 2, 1, 3, 2), 3)]
    if dt != "f32":
        variants = [variants[k % len(variants)], variants[(k + 3) % len(variants)]]
    for shape, axis in variants:
        for excl, rev in [(0, 0), (1, 0), (0, 1), (1, 1)]:
            ax_dt = "i32" if (k + excl) % 2 else "i64"
            CASES.append(Case("CumSum", [I(dt, shape), V(axis, ax_dt)], attrs={"exclusive": excl, "reverse": rev},
                              opset=14, tol=float_close(dt, 8) if dt in FLOATS else EXACT,
                              tag=f"ax{axis}_e{excl}_r{rev}"))


@pytest.mark.parametrize("case", case_params(CASES))
def test_case(case, check):
    check(case)
