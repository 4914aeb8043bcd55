"""QdqLookup: a QuantizeLinear whose float input is an elementwise function of one 8-bit tensor
runs as a 256-entry table (com.onyx QLinearLookup, planner/fusion/quantization_rules.cc).

Oracles: ONNX Runtime and the onnx package's reference evaluator, which may round a float op
(Erf) differently: the outputs are within one quantization step of both, on under 2% of the
elements. And the same model on onyx's reference kernels with optimization off, which computes
every Q/DQ and float op of the region one by one: the table, built from those kernels, must equal
it bit for bit. Every test feeds all 256 values of the 8-bit input."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from qdq_models import plan_json

SQRT2 = 1.4142135


class Builder:
    """A graph of Q/DQ and float nodes with scalar constants made on the fly."""

    def __init__(self):
        self.nodes, self.inits, self.count = [], [], 0

    def const(self, value, dtype=np.float32, shape=()):
        self.count += 1
        name = f"c{self.count}"
        self.inits.append(numpy_helper.from_array(np.full(shape, value, dtype), name))
        return name

    def node(self, op, inputs, **attrs):
        self.count += 1
        out = f"t{self.count}"
        self.nodes.append(helper.make_node(op, inputs, [out], name=f"n{self.count}", **attrs))
        return out

    def dq(self, x, scale, zero, zero_type=np.uint8):
        return self.node("DequantizeLinear", [x, self.const(scale), self.const(zero, zero_type)])

    def q(self, x, scale, zero, zero_type=np.uint8):
        return self.node("QuantizeLinear", [x, self.const(scale), self.const(zero, zero_type)])

    def model(self, inputs, outputs):
        g = helper.make_graph(self.nodes, "lookup", inputs, outputs, self.inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def gelu_model(extra_output=False):
    """BERT QDQ's GELU: x * 0.5 * (1 + erf(x / sqrt 2)) with Q/DQ after Erf, Add and each Mul."""
    b = Builder()
    x = b.dq("xq", 0.05, 128)
    erf = b.node("Erf", [b.node("Div", [x, b.const(SQRT2)])])
    one = b.dq(b.q(b.node("Add", [b.dq(b.q(erf, 2 / 255, 128), 2 / 255, 128), b.const(1.0)]),
                   2 / 255, 0), 2 / 255, 0)
    x2 = b.dq("xq", 0.05, 128)  # a second DQ of the same tensor, as the exporter writes it
    prod = b.dq(b.q(b.node("Mul", [x2, one]), 0.1, 64), 0.1, 64)
    y = b.q(b.node("Mul", [prod, b.const(0.5)]), 0.04, 10)
    b.nodes[-1].output[0] = "y"
    outputs = [helper.make_tensor_value_info("y", TensorProto.UINT8, ["batch", 256])]
    if extra_output:  # the Erf's float output is read outside the region too
        b.nodes.append(helper.make_node("Identity", [erf], ["erf"], name="erf_out"))
        outputs.append(helper.make_tensor_value_info("erf", TensorProto.FLOAT, ["batch", 256]))
    return b.model([helper.make_tensor_value_info("xq", TensorProto.UINT8, ["batch", 256])], outputs)


def int8_model():
    """int8 in, uint8 out: LeakyRelu, Sigmoid and a Pow by a rank-2 scalar, then a Clip with
    constant bounds, one Q/DQ pair between."""
    b = Builder()
    x = b.dq("xq", 0.03, -5, np.int8)
    h = b.node("Pow", [b.node("Sigmoid", [b.node("LeakyRelu", [x], alpha=0.2)]), b.const(2.0, shape=(1, 1))])
    h = b.dq(b.q(h, 1 / 200, -100, np.int8), 1 / 200, -100, np.int8)
    y = b.q(b.node("Clip", [b.node("Sub", [h, b.const(0.3)]), b.const(-0.25), b.const(0.5)]), 0.004, 70)
    b.nodes[-1].output[0] = "y"
    return b.model([helper.make_tensor_value_info("xq", TensorProto.INT8, [3, 256])],
                   [helper.make_tensor_value_info("y", TensorProto.UINT8, [3, 256])])


def two_roots_model():
    """Add of two different 8-bit tensors: a function of two inputs, no table."""
    b = Builder()
    y = b.q(b.node("Add", [b.dq("aq", 0.02, 120), b.dq("bq", 0.03, 100)]), 0.05, 128)
    b.nodes[-1].output[0] = "y"
    ins = [helper.make_tensor_value_info(n, TensorProto.UINT8, [2, 256]) for n in ("aq", "bq")]
    return b.model(ins, [helper.make_tensor_value_info("y", TensorProto.UINT8, [2, 256])])


def feeds_for(model):
    rng = np.random.default_rng(3)
    feeds = {}
    for i in model.graph.input:
        elem = i.type.tensor_type.elem_type
        dims = [d.dim_value if d.dim_value else 4 for d in i.type.tensor_type.shape.dim]
        if elem == TensorProto.UINT8:
            base = np.arange(256, dtype=np.uint8)
        else:
            base = np.arange(-128, 128, dtype=np.int8)
        rows = [rng.permutation(base) for _ in range(dims[0])]
        feeds[i.name] = np.stack(rows).reshape(dims)
    return feeds


def run_onyx(path, feeds, reference=False):
    import onyx

    so = onyx.SessionOptions()
    if reference:
        so.reference_kernels = True
        so.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_DISABLE_ALL
    return onyx.InferenceSession(path, so).run(None, feeds)


def ops_in_plan(cli, path):
    return [s["op"] for s in plan_json(cli, path)["schedule"]]


MODELS = {
    "gelu": (gelu_model, 1),
    "gelu_erf_read_outside": (lambda: gelu_model(extra_output=True), None),
    "int8_in_uint8_out": (int8_model, 1),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_region_runs_as_one_table_equal_to_the_reference_ops(name, tmp_path, onyx_cli):
    make, steps = MODELS[name]
    model = make()
    onnx.checker.check_model(model, full_check=True)
    path = str(tmp_path / f"{name}.onnx")
    onnx.save(model, path)
    ops = ops_in_plan(onyx_cli, path)
    assert "QLinearLookup" in ops, ops
    assert "QuantizeLinear" not in ops and "DequantizeLinear" not in ops or name.endswith("outside")
    if steps is not None:
        assert len(ops) == steps, ops
    feeds = feeds_for(model)
    got = run_onyx(path, feeds)
    want = run_onyx(path, feeds, reference=True)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if g.dtype == np.float32:  # a float op outside the table: its fast kernel's rounding
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)
        else:
            np.testing.assert_array_equal(g, w)
    # Independent oracles: ONNX Runtime and the onnx package's reference evaluator, which may
    # round a float op (Erf, Sigmoid) differently by an ulp and so land one step away.
    oracles = {"onnxruntime": ort.InferenceSession(path, providers=["CPUExecutionProvider"]),
               "onnx.reference": ReferenceEvaluator(path)}
    for name, sess in oracles.items():
        steps_off = np.abs(got[0].astype(np.int32) - sess.run(None, feeds)[0].astype(np.int32))
        assert steps_off.max() <= 1, (name, steps_off.max())
        assert (steps_off > 0).mean() < 0.02, (name, (steps_off > 0).mean())


def expect_no_table(model, kept_op, tmp_path, cli):
    """The plan keeps `kept_op` and has no table; the outputs are the reference ops'."""
    path = str(tmp_path / "model.onnx")
    onnx.save(model, path)
    ops = ops_in_plan(cli, path)
    assert "QLinearLookup" not in ops and kept_op in ops, ops
    feeds = feeds_for(model)
    np.testing.assert_array_equal(run_onyx(path, feeds)[0], run_onyx(path, feeds, reference=True)[0])


def test_function_of_two_tensors_keeps_its_ops(tmp_path, onyx_cli):
    expect_no_table(two_roots_model(), "Add", tmp_path, onyx_cli)


def test_per_axis_dequantize_is_no_leaf(tmp_path, onyx_cli):
    b = Builder()
    scales = numpy_helper.from_array(np.linspace(0.01, 0.05, 4).astype(np.float32), "axis_s")
    zeros = numpy_helper.from_array(np.full(4, 128, np.uint8), "axis_z")
    b.inits += [scales, zeros]
    b.nodes.append(helper.make_node("DequantizeLinear", ["xq", "axis_s", "axis_z"], ["x"], axis=0))
    b.q(b.node("Tanh", ["x"]), 1 / 128, 128)
    b.nodes[-1].output[0] = "y"
    model = b.model([helper.make_tensor_value_info("xq", TensorProto.UINT8, [4, 256])],
                    [helper.make_tensor_value_info("y", TensorProto.UINT8, [4, 256])])
    expect_no_table(model, "Tanh", tmp_path, onyx_cli)


def test_bad_table_is_a_clear_error(tmp_path):
    """The op is planner-made, but a model naming it is checked like any other."""
    import onyx

    x = helper.make_tensor_value_info("x", TensorProto.UINT8, [8])
    node = helper.make_node("QLinearLookup", ["x", "t"], ["y"], name="lut", domain="com.onyx")
    table = numpy_helper.from_array(np.zeros(100, np.uint8), "t")
    g = helper.make_graph([node], "bad", [x], [helper.make_tensor_value_info("y", TensorProto.UINT8, [8])],
                          [table])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.onyx", 1)],
                          ir_version=10)
    path = str(tmp_path / "bad.onnx")
    onnx.save(m, path)
    with pytest.raises(Exception, match="lut.*256|256.*lut"):
        onyx.InferenceSession(path).run(None, {"x": np.zeros(8, np.uint8)})


def test_table_between_channels_last_convolutions_keeps_the_layout(tmp_path, onyx_cli):
    """QLinearConv -> DQ -> Relu -> Q -> QLinearConv (ResNet-50 QOperator's pattern): the table
    runs on the channels-last 8-bit values, so no Transpose comes between the convolutions."""
    rng = np.random.default_rng(5)
    b = Builder()
    c = 16

    def qconv(x, name):
        w = numpy_helper.from_array(rng.integers(-60, 60, (c, c, 3, 3)).astype(np.int8), f"{name}_w")
        b.inits.append(w)
        b.count += 1
        out = f"t{b.count}"
        b.nodes.append(helper.make_node(
            "QLinearConv", [x, b.const(0.05), b.const(120, np.uint8), w.name, b.const(0.002),
                            b.const(0, np.int8), b.const(0.08), b.const(110, np.uint8)],
            [out], name=name, pads=[1, 1, 1, 1]))
        return out

    h = qconv("xq", "conv1")
    h = b.q(b.node("Relu", [b.dq(h, 0.08, 110)]), 0.05, 120)
    y = qconv(h, "conv2")
    b.nodes[-1].output[0] = "y"
    model = b.model([helper.make_tensor_value_info("xq", TensorProto.UINT8, [1, c, 12, 12])],
                    [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, c, 12, 12])])
    path = str(tmp_path / "convs.onnx")
    onnx.save(model, path)
    ops = ops_in_plan(onyx_cli, path)
    assert "QLinearLookup" in ops and ops.count("Transpose") <= 2, ops
    feeds = {"xq": rng.integers(0, 256, (1, c, 12, 12)).astype(np.uint8)}
    got = run_onyx(path, feeds)[0]
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    assert np.abs(got.astype(np.int32) - want.astype(np.int32)).max() <= 1
