"""Activation functions and Softmax-family ops: every schema type and opset with different
semantics, attribute values including defaults, ranks 0-5, empty tensors and ±0/±inf/NaN."""
import numpy as np
import pytest

from opcheck import (EXACT, FLOATS, Case, I, V, case_params, float_close, formula, ref_as_1d,
                     ref_on_2d, schema_types)



def gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    import math
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return 0.5 * x * (1 + erf(x / np.sqrt(2)))


# onnx.reference has no Gelu kernel and evaluates HardSwish's 1/6 and Erf in float32, so these
# use closed forms in float64 as the oracle.
ORACLES = {
    "Gelu": formula(gelu, "gelu_f64"),
    "HardSwish": formula(lambda x: x * np.clip(x / 6 + 0.5, 0, 1), "hardswish_f64"),
}


def oracle_for(op, shape):
    if op in ORACLES:
        return ORACLES[op]
    if op == "Softsign" and len(shape) == 0:
        return ref_as_1d  # onnx.reference's Softsign rejects 0-d input
    return "ref"


CASES = []
SHAPES = [(), (1,), (0, 3), (7,), (3, 5), (2, 3, 4), (1, 2, 3, 1, 5)]

ACTS = {  # op: [(opset, attrs), ...]; the first entry gets every shape
    "Relu": [(14, {}), (6, {})],
    "LeakyRelu": [(16, {}), (16, {"alpha": 0.3}), (6, {"alpha": -0.7})],
    "Elu": [(6, {}), (22, {"alpha": 0.5})],
    "Selu": [(6, {}), (22, {"alpha": 1.5, "gamma": 0.8})],
    "Celu": [(12, {}), (12, {"alpha": 2.0})],
    "Sigmoid": [(13, {}), (6, {})],
    "HardSigmoid": [(6, {}), (22, {"alpha": 0.5, "beta": 0.25})],
    "HardSwish": [(14, {}), (22, {})],
    "Softplus": [(1, {}), (22, {})],
    "Softsign": [(1, {}), (22, {})],
    "Tanh": [(13, {}), (6, {})],
    "ThresholdedRelu": [(10, {}), (22, {"alpha": 0.25})],
    "Gelu": [(20, {}), (20, {"approximate": "tanh"})],
    "Mish": [(18, {}), (22, {})],
    "Shrink": [(9, {}), (9, {"bias": 0.5, "lambd": 1.0})],
    "PRelu": [(16, {}), (9, {})],
}

for op, variants in ACTS.items():
    for vi, (opset, attrs) in enumerate(variants):
        for k, dt in enumerate(schema_types(op, opset)):
            exactish = op in ("Relu", "LeakyRelu", "ThresholdedRelu", "PRelu", "Shrink") or dt not in FLOATS
            tol = EXACT if exactish and op != "LeakyRelu" else float_close(dt, 4)
            if op == "Celu" and dt == "f32":
                tol = float_close(dt, 10)  # reference evaluates in float64 and rounds once
            tag = "_".join(f"{a}{v}" for a, v in attrs.items())
            shapes = SHAPES if (vi == 0 and dt == "f32") else [SHAPES[(k + vi) % len(SHAPES)], SHAPES[(k + vi + 3) % len(SHAPES)]]
            for s in shapes:
                ins = [I(dt, s)]
                if op == "PRelu":  # slope broadcast to X (unidirectional)
                    ins.append(I(dt, s[-1:] if s else ()))
                if op == "Shrink" and dt not in FLOATS:
                    ins = [I(dt, s, "any" if dt.startswith("u") else "normal")]
                add_tag = tag
                CASES.append(Case(op, ins, attrs=attrs, opset=opset, tol=tol, tag=add_tag, oracle=oracle_for(op, s)))
            if dt in FLOATS:
                ins = [I(dt, (5, 6), "special")]
                if op == "PRelu":
                    ins.append(I(dt, (6,)))
                CASES.append(Case(op, ins, attrs=attrs, opset=opset, tol=tol, tag=(tag + "_special").strip("_"),
                                  oracle=oracle_for(op, (5, 6))))
    # extreme magnitudes: saturation without overflow to NaN
for dt in FLOATS:
    big = [-1e4, -100.0, -30.0, -5.0, 0.0, 5.0, 30.0, 100.0, 1e4] if dt != "f16" else [-6e4, -100.0, -30.0, -5.0, 0.0, 5.0, 30.0, 100.0, 6e4]
    for op in ["Sigmoid", "Tanh", "Softplus", "Softsign", "Elu", "Selu", "Gelu", "Mish", "HardSwish"]:
        opset = {"Gelu": 20, "HardSwish": 14, "Sigmoid": 13, "Tanh": 13, "Mish": 22}.get(op, 22)
        if dt not in schema_types(op, opset):
            continue
        # onnx.reference's Softplus is log(exp(x) + 1), which overflows: logaddexp is the oracle.
        oracle = formula(lambda x: np.logaddexp(0, x), "softplus_f64") if op == "Softplus" else oracle_for(op, (9,))
        CASES.append(Case(op, [V(big, dt)], opset=opset, tol=float_close(dt, 4), tag="extreme", oracle=oracle))
# PRelu slope shapes: per-channel (C,1,1) on NCHW, scalar, full shape.
for slope in [(3, 1, 1), (1,), (2, 3, 4, 5), (5,), (4, 1)]:
    CASES.append(Case("PRelu", [I("f32", (2, 3, 4, 5), "special"), I("f32", slope)], opset=16))
for dt in ["i32", "i64", "u32", "u64"]:
    CASES.append(Case("PRelu", [I(dt, (3, 4)), I(dt, (4,))], opset=16))

# Softmax / LogSoftmax / Hardmax: opset 13 (one axis) vs <13 (flatten from axis to the end).
for op in ["Softmax", "LogSoftmax", "Hardmax"]:
    for opset in [13, 11, 1]:
        for dt in schema_types(op, opset):
            shapes_axes = [((3, 5), -1), ((2, 3, 4), 1), ((2, 3, 4), 0), ((1, 2, 3, 1, 5), -2), ((7,), 0), ((0, 4), 1), ((2, 3, 4), -3)]
            if dt != "f32" or opset != 13:
                shapes_axes = shapes_axes[:3] if opset == 13 else shapes_axes[1:3]
            for shape, axis in shapes_axes:
                tol = EXACT if op == "Hardmax" else float_close(dt, 4)
                kind = "small" if op == "Hardmax" else "normal"  # ties: the first max wins
                # onnx.reference implements only the opset-13 semantics (single axis); before 13 the
                # input is coerced to 2-D at `axis`.
                oracle = "ref" if opset >= 13 else ref_on_2d(axis)
                CASES.append(Case(op, [I(dt, shape, kind)], attrs={"axis": axis}, opset=opset, tol=tol,
                                  tag=f"axis{axis}", oracle=oracle))
            if opset == 13:
                CASES.append(Case(op, [I(dt, (3, 4))], opset=opset, tol=EXACT if op == "Hardmax" else float_close(dt, 4), tag="default"))
                if op != "Hardmax":  # large logits must not overflow; -inf logits give 0 / -inf
                    # onnx.reference's LogSoftmax is log(softmax) and gives -inf for -1000: a stable
                    # float64 closed form is the oracle.
                    oracle = "ref" if op == "Softmax" else formula(
                        lambda x: x - x.max(-1, keepdims=True) - np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)),
                        "logsoftmax_f64")
                    CASES.append(Case(op, [V([[1000.0, 0.0, -1000.0], [-np.inf, 0.0, 1.0], [88.0, 89.0, 90.0]], dt)],
                                      opset=opset, tol=float_close(dt, 4), tag="extreme", oracle=oracle))


@pytest.mark.parametrize("case", case_params(CASES))
def test_case(case, check):
    check(case)
