"""Randomised generated operator tests: one-node models run through onyx and an independent oracle.

Every test module builds a list of `Case`s at import time (deterministically: no randomness is used
to choose cases) and parametrises one test over them with `ids=case.id`. The input *data* of a case
is drawn inside the test from an RNG seeded with SEED and a CRC of the case id, so a failing case
is reproduced from its test id alone:

    .venv/bin/python -m pytest -q 'tests/generated/test_elementwise.py::test_case[Add-f32-3x1_1x4-o14]'

Oracles: onnx.reference.ReferenceEvaluator by default; ONNX Runtime (`oracle="ort"`) where the
reference evaluator is known to be wrong or too slow; for the few cases neither handles, a helper
below (reference on float32 copies, reference with inputs reordered, or a float64 closed form).
Every deviation from the default oracle says why at the case. onyx's own output is never an
expected value.

Tolerances are declared once per case: EXACT (equal values), BITS (EXACT plus the sign of zero) or
CLOSE(atol, rtol); under every level NaN must match NaN, infinities must match exactly, and dtype and
shape must match.

Inputs are fed at run time, except bfloat16 and rank-0 inputs and those marked const, which become
initializers (the Python module cannot feed bfloat16, and turns 0-d arrays into shape [1]; see
test_python_scalar_feed). bfloat16 outputs come back as raw uint16 bits and are viewed as bfloat16.
"""
import dataclasses
import os
import warnings
import sys
import zlib
from typing import Any, Callable, Optional, Sequence

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("ONYX_BUILD_DIR", os.path.join(ROOT, "build"))
if not os.path.isabs(BUILD):
    BUILD = os.path.join(ROOT, BUILD)
sys.path[:0] = [os.path.join(BUILD, "python"), os.path.join(ROOT, "python")]

SEED = 20240611  # fixed: the suite is reproducible run to run

BF16 = np.dtype(ml_dtypes.bfloat16)

# ---------------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------------

# Short names used in test ids.
DTYPES = {
    "f32": np.dtype(np.float32), "f64": np.dtype(np.float64), "f16": np.dtype(np.float16),
    "bf16": BF16,
    "i8": np.dtype(np.int8), "i16": np.dtype(np.int16), "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64), "u8": np.dtype(np.uint8), "u16": np.dtype(np.uint16),
    "u32": np.dtype(np.uint32), "u64": np.dtype(np.uint64), "bool": np.dtype(np.bool_),
    "str": np.dtype(object),
}
SHORT = {v: k for k, v in DTYPES.items()}
ONNX_OF = {
    "f32": TensorProto.FLOAT, "f64": TensorProto.DOUBLE, "f16": TensorProto.FLOAT16,
    "bf16": TensorProto.BFLOAT16, "i8": TensorProto.INT8, "i16": TensorProto.INT16,
    "i32": TensorProto.INT32, "i64": TensorProto.INT64, "u8": TensorProto.UINT8,
    "u16": TensorProto.UINT16, "u32": TensorProto.UINT32, "u64": TensorProto.UINT64,
    "bool": TensorProto.BOOL, "str": TensorProto.STRING,
}
SHORT_OF_ONNX = {v: k for k, v in ONNX_OF.items()}
FLOATS = ["f32", "f64", "f16", "bf16"]
SINTS = ["i8", "i16", "i32", "i64"]
UINTS = ["u8", "u16", "u32", "u64"]
INTS = SINTS + UINTS
NUMERIC = FLOATS + INTS


def schema_types(op, opset, type_param="T", domain=""):
    """Short names of the types the op's schema allows for `type_param` at `opset` (and which
    this suite can express)."""
    s = onnx.defs.get_schema(op, opset, domain)
    for c in s.type_constraints:
        if c.type_param_str == type_param:
            out = []
            for t in c.allowed_type_strs:
                name = {"tensor(float)": "f32", "tensor(double)": "f64", "tensor(float16)": "f16",
                        "tensor(bfloat16)": "bf16", "tensor(int8)": "i8", "tensor(int16)": "i16",
                        "tensor(int32)": "i32", "tensor(int64)": "i64", "tensor(uint8)": "u8",
                        "tensor(uint16)": "u16", "tensor(uint32)": "u32", "tensor(uint64)": "u64",
                        "tensor(bool)": "bool", "tensor(string)": "str"}.get(t)
                if name:
                    out.append(name)
            return [t for t in DTYPES if t in out]  # stable order
    raise KeyError(f"{op}-{opset} has no type parameter {type_param}")


def since(op, opset, domain=""):
    return onnx.defs.get_schema(op, opset, domain).since_version


# ---------------------------------------------------------------------------------------------
# Tolerances
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Tol:
    atol: float
    rtol: float
    name: str

    def __repr__(self):
        return self.name


EXACT = Tol(0.0, 0.0, "EXACT")  # equal values (+0 == -0), NaN where NaN
BITS = Tol(0.0, 0.0, "BITS")    # EXACT and the sign of zero matches too (Neg, Abs, Floor, ...)


def CLOSE(atol, rtol):  # noqa: N802 - reads like a level name
    return Tol(atol, rtol, f"CLOSE({atol:g},{rtol:g})")


# Default float tolerances per dtype for "computed" (non bit-exact) results.
def float_close(dt, scale=1.0):
    return {"f64": CLOSE(1e-12 * scale, 1e-10 * scale), "f32": CLOSE(1e-5 * scale, 1e-5 * scale),
            "f16": CLOSE(2e-3 * scale, 2e-3 * scale), "bf16": CLOSE(1.6e-2 * scale, 1.6e-2 * scale)}.get(
                dt, EXACT)


# ---------------------------------------------------------------------------------------------
# Input specs and data generation
# ---------------------------------------------------------------------------------------------

SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -2.5, 3.5]


def gen_values(rng, dt, shape, kind="normal"):
    """Random data of short dtype `dt` and `shape`. kinds: normal, special (mixes ±0/±inf/NaN),
    pos (>0), unit (-1..1), nonzero, small (ints in a small range, floats rounded to halves),
    any (full integer range), or a callable(rng, shape, npdtype)."""
    npdt = DTYPES[dt]
    shape = tuple(shape)
    if callable(kind):
        return np.asarray(kind(rng, shape, npdt)).astype(npdt).reshape(shape)
    if dt == "str":
        words = np.array(["", "a", "b", "ab", "ba", "onyx", "Z", "zz", "héllo"], dtype=object)
        return np.asarray(words[rng.integers(0, len(words), shape)], dtype=object).reshape(shape)
    if dt == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dt in FLOATS:
        if kind == "normal":
            v = rng.standard_normal(shape) * 2
        elif kind == "pos":
            v = rng.uniform(0.1, 4.0, shape)
        elif kind == "unit":
            v = rng.uniform(-0.99, 0.99, shape)
        elif kind == "nonzero":
            v = rng.uniform(0.5, 3.0, shape) * rng.choice([-1.0, 1.0], shape)
        elif kind == "small":
            v = rng.integers(-8, 9, shape) / 2.0
        elif kind in ("special", "inf"):  # "inf": the specials without NaN
            v = rng.standard_normal(shape) * 2
            mask = rng.random(shape) < 0.5
            pool = np.array(SPECIALS if kind == "special" else [x for x in SPECIALS if x == x])
            v = np.where(mask, rng.choice(pool, shape), v)
        else:
            raise ValueError(kind)
        return np.asarray(v, dtype=np.float64).astype(npdt)
    info = np.iinfo(npdt)
    if kind == "any":
        return rng.integers(info.min, info.max, shape, dtype=npdt, endpoint=True)
    if kind == "pos":
        return rng.integers(1, min(info.max, 9) + 1, shape).astype(npdt)
    if kind == "nonzero":
        lo = -8 if info.min < 0 else 1
        v = rng.integers(lo, 9, shape)
        v = np.where(v == 0, 3, v)
        return v.astype(npdt)
    if kind == "special":  # extremes of the type mixed with small values
        v = rng.integers(max(info.min, -20), min(info.max, 20) + 1, shape).astype(npdt)
        mask = rng.random(shape) < 0.3
        ext = rng.choice(np.array([info.min, info.max, 0, 1], dtype=npdt), shape)
        return np.where(mask, ext, v).astype(npdt)
    # normal / small / unit: small range so that products and sums stay representable.
    lo = max(int(info.min), -9)
    return rng.integers(lo, 10, shape).astype(npdt)


@dataclasses.dataclass
class In:
    """A node input. dt/shape/kind describe random data; `value` fixes the data (then dt/shape are
    taken from it). const=True turns it into an initializer instead of a graph input (bfloat16
    inputs always are: the Python module cannot feed bfloat16). name="" is an omitted optional."""
    dt: Optional[str] = None
    shape: Sequence[int] = ()
    kind: Any = "normal"
    value: Optional[np.ndarray] = None
    const: bool = False
    omitted: bool = False


def I(dt, shape, kind="normal", const=False):  # noqa: E743
    return In(dt=dt, shape=tuple(shape), kind=kind, const=const)


def is_fed(spec):
    """Whether an input is fed at run time (else it is an initializer). Rank-0 inputs are
    initializers because onyx's Python module turns a fed 0-d array into shape [1]
    (np.ascontiguousarray promotes 0-d to 1-d); test_python_scalar_feed covers that path."""
    return not (spec.omitted or spec.const or spec.dt == "bf16" or len(spec.shape) == 0)


def V(value, dt=None, const=False):
    a = np.asarray(value) if dt is None else np.asarray(value).astype(DTYPES[dt])
    return In(dt=SHORT[a.dtype], shape=a.shape, value=a, const=const)


OMIT = In(omitted=True)


def shape_str(s):
    return "x".join(str(d) for d in s) if len(s) else "s"


@dataclasses.dataclass
class Case:
    op: str
    inputs: Sequence[In]
    attrs: dict = dataclasses.field(default_factory=dict)
    opset: int = 21
    n_out: int = 1
    tol: Tol = EXACT
    oracle: Any = "ref"  # "ref" (onnx.reference), "ort" (ONNX Runtime) or fn(case, model, arrays)
    domain: str = ""
    tag: str = ""                # extra id text
    xfail: Optional[str] = None  # reason when the oracle is known wrong and no other exists
    expect_error: bool = False   # onyx must reject the model/inputs with an error
    check: Optional[Callable] = None  # custom comparison(expected, actual) for nondeterminism
    out_dtypes: Optional[Sequence[str]] = None  # declared output types when inference can't tell

    @property
    def id(self):
        ins = []
        for x in self.inputs:
            if x.omitted:
                ins.append("_")
            else:
                ins.append(("c" if x.const else "") + shape_str(x.shape))
        dts = sorted({x.dt for x in self.inputs if not x.omitted}, key=list(DTYPES).index)
        parts = [self.op, "-".join(dts), "_".join(ins), f"o{self.opset}"]
        if self.tag:
            parts.append(self.tag)
        return "-".join(p for p in parts if p)


def case_params(cases):
    """pytest.param list with ids; duplicate ids get a numeric suffix (still deterministic)."""
    seen = {}
    out = []
    for c in cases:
        cid = c.id
        if cid in seen:
            seen[cid] += 1
            cid = f"{cid}#{seen[cid]}"
        else:
            seen[cid] = 0
        marks = [pytest.mark.xfail(reason=c.xfail, strict=True)] if c.xfail else []
        out.append(pytest.param(c, id=cid, marks=marks))
    return out


# ---------------------------------------------------------------------------------------------
# Model building and running
# ---------------------------------------------------------------------------------------------

def make_feeds(case, rng):
    arrays = []
    for x in case.inputs:
        if x.omitted:
            arrays.append(None)
        elif x.value is not None:
            arrays.append(np.array(x.value, copy=True))
        else:
            arrays.append(gen_values(rng, x.dt, x.shape, x.kind))
    return arrays


def _tensor_proto(a, name):
    if a.dtype == object:
        return helper.make_tensor(name, TensorProto.STRING, a.shape,
                                  [s.encode() if isinstance(s, str) else s for s in a.ravel()])
    return numpy_helper.from_array(a, name)


def build_model(case, arrays, out_types=None):
    in_names = []
    graph_inputs, inits = [], []
    for i, (spec, a) in enumerate(zip(case.inputs, arrays)):
        if spec.omitted:
            in_names.append("")
            continue
        name = f"x{i}"
        in_names.append(name)
        if not is_fed(spec):
            inits.append(_tensor_proto(a, name))
        else:
            graph_inputs.append(helper.make_tensor_value_info(name, ONNX_OF[spec.dt], a.shape))
    while in_names and in_names[-1] == "":
        in_names.pop()
    out_names = [f"y{i}" for i in range(case.n_out)]
    node = helper.make_node(case.op, in_names, out_names, domain=case.domain or None, **case.attrs)
    outs = []
    for i, n in enumerate(out_names):
        et = out_types[i] if out_types else TensorProto.UNDEFINED
        outs.append(helper.make_tensor_value_info(n, et, None))
    graph = helper.make_graph([node], "g", graph_inputs, outs, initializer=inits)
    opsets = [helper.make_opsetid("", case.opset if not case.domain else 21)]
    if case.domain:
        opsets.append(helper.make_opsetid(case.domain, case.opset))
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8 if case.opset <= 18 else 10
    return model


def infer_out_types(case, model):
    if case.out_dtypes:
        return [ONNX_OF[d] for d in case.out_dtypes]
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    types = []
    for o in inferred.graph.output:
        types.append(o.type.tensor_type.elem_type)
    return types


def feeds_of(case, arrays):
    return {f"x{i}": a for i, (spec, a) in enumerate(zip(case.inputs, arrays))
            if is_fed(spec)}


def run_oracle(case, model, feeds, arrays):
    if callable(case.oracle):
        return [np.asarray(r) for r in case.oracle(case, model, arrays)]
    if case.oracle == "ort":
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        so.intra_op_num_threads = 1
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        return [np.asarray(r) for r in sess.run(None, feeds)]
    from onnx.reference import ReferenceEvaluator
    return [np.asarray(r) for r in ReferenceEvaluator(model).run(None, feeds)]


def ref_with_inputs_permuted(order):
    """Oracle: onnx.reference on the same node with its inputs reordered (for commutative variadic
    ops whose reference implementation needs the largest input first)."""
    def oracle(case, model, arrays):
        from onnx.reference import ReferenceEvaluator
        m = onnx.ModelProto()
        m.CopyFrom(model)
        node = m.graph.node[0]
        names = list(node.input)
        del node.input[:]
        node.input.extend([names[i] for i in order])
        feeds = {f"x{i}": a for i, (spec, a) in enumerate(zip(case.inputs, arrays)) if is_fed(spec)}
        return ReferenceEvaluator(m).run(None, feeds)
    oracle.__name__ = f"ref_permuted{tuple(order)}"
    return oracle


def formula(fn, name):
    """Oracle: a closed-form numpy formula evaluated in float64 on the inputs, rounded once to the
    type of input 0. Used where onnx.reference computes in too low a precision or overflows."""
    def oracle(case, model, arrays):
        xs = [None if a is None else np.asarray(a).astype(np.float64) for a in arrays]
        with np.errstate(all="ignore"):
            outs = fn(*xs, **case.attrs)
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        return [np.asarray(o).astype(arrays[0].dtype) for o in outs]
    oracle.__name__ = name
    return oracle


def ref_on_2d(axis):
    """Oracle for the opset < 13 Softmax family, which coerce the input to 2-D at `axis`: the
    reference evaluator's (opset 13) op on the flattened input, reshaped back."""
    def oracle(case, model, arrays):
        from onnx.reference import ReferenceEvaluator
        x = arrays[0]
        ax = axis % x.ndim if x.ndim else 0
        rows = int(np.prod(x.shape[:ax], dtype=np.int64))
        x2 = x.reshape(rows, -1)
        g = helper.make_graph([helper.make_node(case.op, ["x"], ["y"], axis=1)], "g",
                              [helper.make_tensor_value_info("x", ONNX_OF[SHORT[x.dtype]], x2.shape)],
                              [helper.make_tensor_value_info("y", ONNX_OF[SHORT[x.dtype]], None)])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        (y,) = ReferenceEvaluator(m).run(None, {"x": x2})
        return [np.asarray(y).reshape(x.shape)]
    oracle.__name__ = f"ref13_on_2d(axis={axis})"
    return oracle


def ref_as_1d(case, model, arrays):
    """Oracle for unary ops whose onnx.reference implementation rejects 0-d arrays: run it on
    the value reshaped to [1] and reshape back."""
    from onnx.reference import ReferenceEvaluator
    m = onnx.ModelProto()
    m.CopyFrom(model)
    x = arrays[0]
    m.graph.ClearField("initializer")
    del m.graph.input[:]
    m.graph.input.extend([helper.make_tensor_value_info("x0", ONNX_OF[SHORT[x.dtype]], [1])])
    (y,) = ReferenceEvaluator(m).run(None, {"x0": x.reshape(1)})
    return [np.asarray(y).reshape(x.shape)]


def ref_cast_to_input_type(case, model, arrays):
    """Oracle: onnx.reference, its output cast back to the input type (for ops where it promotes
    the type, e.g. ReduceSumSquare int32 -> int64, although the schema keeps T)."""
    from onnx.reference import ReferenceEvaluator
    feeds = {f"x{i}": a for i, (spec, a) in enumerate(zip(case.inputs, arrays)) if is_fed(spec)}
    return [np.asarray(y).astype(arrays[0].dtype) for y in ReferenceEvaluator(model).run(None, feeds)]


def ref_in_f32(case, model, arrays):
    """Oracle for bfloat16 where onnx.reference rejects it: the reference on float32 copies of the
    inputs, rounded once to bfloat16."""
    from onnx.reference import ReferenceEvaluator
    up = dataclasses.replace(case, inputs=[
        x if (x.omitted or x.dt != "bf16") else dataclasses.replace(x, dt="f32") for x in case.inputs])
    arrs = [a if (a is None or a.dtype != BF16) else a.astype(np.float32) for a in arrays]
    m = build_model(up, arrs)
    feeds = {f"x{i}": a for i, (spec, a) in enumerate(zip(up.inputs, arrs)) if is_fed(spec)}
    return [np.asarray(y).astype(BF16) for y in ReferenceEvaluator(m).run(None, feeds)]


def ref_via_f32(case, model, arrays):
    """Oracle for ops whose onnx.reference implementation (a function body with float32 constants)
    rejects other float types: the reference on float32 copies, cast back to the input type."""
    from onnx.reference import ReferenceEvaluator
    fl = ("f64", "f16", "bf16")
    up = dataclasses.replace(case, inputs=[
        x if (x.omitted or x.dt not in fl) else dataclasses.replace(x, dt="f32") for x in case.inputs])
    arrs = [a if (a is None or SHORT.get(a.dtype) not in fl) else a.astype(np.float32) for a in arrays]
    m = build_model(up, arrs)
    feeds = {f"x{i}": a for i, (spec, a) in enumerate(zip(up.inputs, arrs)) if is_fed(spec)}
    return [np.asarray(y).astype(arrays[0].dtype) for y in ReferenceEvaluator(m).run(None, feeds)]


def run_onyx(model, feeds):
    import onyx
    sess = onyx.InferenceSession(model.SerializeToString())
    return [np.asarray(r) for r in sess.run(None, feeds)]


# ---------------------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------------------

def _summ(a, limit=64):
    a = np.asarray(a)
    flat = a.ravel()
    body = np.array2string(flat[:limit], precision=9, threshold=limit + 1, max_line_width=160)
    return f"{SHORT.get(a.dtype, a.dtype)}{list(a.shape)} {body}{' ...' if flat.size > limit else ''}"


def compare(expected, actual, tol, what):
    """Raises AssertionError with a precise description when actual != expected under tol."""
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    if expected.dtype.kind == "U":  # onnx.reference's string outputs are numpy unicode arrays
        expected = expected.astype(object)
    if expected.dtype == BF16 and actual.dtype == np.uint16:
        actual = actual.view(BF16)  # the Python module returns bfloat16 as raw bits
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != expected {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != expected {expected.shape}"
    if expected.size == 0:
        return
    if expected.dtype == object:
        bad = np.array([str(a) != str(e) for a, e in zip(actual.ravel(), expected.ravel())])
    elif expected.dtype.kind in "fV" or expected.dtype in (BF16,):
        e = expected.astype(np.float64)
        a = actual.astype(np.float64)
        both_nan = np.isnan(e) & np.isnan(a)
        inf = np.isinf(e) | np.isinf(a)
        with np.errstate(invalid="ignore"):
            close = np.abs(a - e) <= tol.atol + tol.rtol * np.abs(e)
        exact = a == e
        if tol is BITS:
            exact = exact & (np.signbit(a) == np.signbit(e))
        if tol in (EXACT, BITS):
            close = exact
        ok = both_nan | np.where(inf, exact, close | exact)
        bad = ~ok
    else:
        bad = actual != expected
    if bad.any():
        idx = np.argwhere(bad.reshape(expected.shape) if expected.ndim else bad.reshape(()))
        first = [tuple(int(v) for v in i) for i in idx[:5]]
        details = "; ".join(
            f"at {i}: expected {expected[i]!r} got {actual[i]!r}" for i in first)
        raise AssertionError(f"{what}: {int(bad.sum())}/{expected.size} elements differ (tol {tol}); "
                             f"{details}\n  expected: {_summ(expected)}\n  actual:   {_summ(actual)}")


def case_seed(test_id):
    return (SEED ^ zlib.crc32(test_id.encode())) & 0xFFFFFFFF


def run_case(case, request):
    """The single entry point a generated test calls."""
    test_id = request.node.callspec.id
    seed = case_seed(test_id)
    rng = np.random.default_rng(seed)
    with np.errstate(all="ignore"):
        arrays = make_feeds(case, rng)
    feeds = feeds_of(case, arrays)
    header = (f"case {test_id} (seed {seed}): {case.op} opset {case.opset} attrs {case.attrs} "
              f"oracle {getattr(case.oracle, '__name__', case.oracle)}\n" + "\n".join(
                  f"  input x{i}: " + ("<omitted>" if a is None else _summ(a))
                  for i, a in enumerate(arrays)))
    model0 = build_model(case, arrays)
    if case.expect_error:
        import onyx
        with pytest.raises(Exception) as ei:
            onyx.InferenceSession(model0.SerializeToString()).run(None, feeds)
        assert "onyx" in type(ei.value).__module__ or isinstance(ei.value, RuntimeError), header
        return
    try:
        out_types = infer_out_types(case, model0)
    except Exception:
        out_types = None
    if out_types and all(out_types):
        model = build_model(case, arrays, out_types)
    else:
        model = model0
    problem = None
    try:
        # ±inf / NaN inputs make numpy warn inside the oracles: expected, not interesting
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = run_oracle(case, model, feeds, arrays)
    except Exception as e:  # an oracle failure is a broken case, not an onyx failure
        problem = f"oracle {getattr(case.oracle, '__name__', case.oracle)} failed: {type(e).__name__}: {e}"
    if problem is None:
        try:
            actual = run_onyx(model, feeds)
        except Exception as e:
            problem = f"onyx raised {type(e).__name__}: {e}"
    if problem is None:
        try:
            assert len(actual) == len(expected), f"{len(actual)} outputs, expected {len(expected)}"
            for k, (e, a) in enumerate(zip(expected, actual)):
                if case.check:
                    case.check(e, a, k)
                else:
                    compare(e, a, case.tol, f"output y{k}")
        except AssertionError as err:
            problem = str(err)
    if problem is not None:
        pytest.fail(f"{problem}\n{header}", pytrace=False)


# ---------------------------------------------------------------------------------------------
# Shape helpers shared by the families
# ---------------------------------------------------------------------------------------------

# (a, b) pairs: equal shapes of ranks 0..5, scalars, broadcasting both ways, size 0 / 1 / odd / prime.
BROADCAST_PAIRS = [
    ((), ()), ((1,), ()), ((), (7,)), ((5,), (5,)), ((13,), (1,)), ((3, 1), (1, 4)),
    ((2, 3, 5), (5,)), ((2, 1, 5), (3, 1)), ((4, 3, 2, 2), (4, 1, 1, 2)), ((1, 2, 1, 3, 2), (2, 2, 1, 1, 2)),
    ((0,), (1,)), ((3, 0), (3, 1)), ((2, 0, 3), ()), ((1, 1, 1, 1, 1), (1,)),
    ((17,), (17,)), ((2, 3, 1, 1, 2), (3, 4, 1, 2)),
]
