"""Fusion pass: Conv+BatchNormalization folding gives ONNX Runtime's results on random weights
(per-channel parameters all different, so a channel mix-up cannot hide), and really fuses."""
import json
import subprocess

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx


def conv_bn_model(rng, with_bias, group):
    c_in, c_out = 4, 6
    w = rng.standard_normal((c_out, c_in // group, 3, 3)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "W")]
    conv_inputs = ["x", "W"]
    if with_bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(c_out).astype(np.float32), "B"))
        conv_inputs.append("B")
    for name, values in (("gamma", rng.uniform(0.5, 2, c_out)), ("beta", rng.standard_normal(c_out)),
                         ("mean", rng.standard_normal(c_out)), ("var", rng.uniform(0.1, 3, c_out))):
        inits.append(numpy_helper.from_array(values.astype(np.float32), name))
    nodes = [helper.make_node("Conv", conv_inputs, ["c"], pads=[1, 1, 1, 1], group=group, name="conv"),
             helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["bn"],
                              epsilon=1e-3, name="bn"),
             helper.make_node("Relu", ["bn"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, c_in, 7, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, c_out, 7, 5])], initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)], ir_version=8)


@pytest.mark.parametrize("with_bias,group", [(True, 1), (False, 1), (True, 2)])
def test_conv_batchnorm_folding_matches_onnxruntime(with_bias, group, onyx_cli, tmp_path):
    rng = np.random.default_rng(11)
    model = conv_bn_model(rng, with_bias, group)
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    x = rng.standard_normal((2, 4, 7, 5)).astype(np.float32)
    (want,) = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for level in ("none", "all"):
        (got,) = onyx.InferenceSession(str(path), optimization=level).run(None, {"x": x})
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    plan = json.loads(subprocess.run([onyx_cli, "plan", str(path), "--json"], check=True,
                                     capture_output=True, text=True).stdout)
    assert plan["fused_nodes"] == 1 and plan["nodes"] == 2
    plan_none = json.loads(subprocess.run([onyx_cli, "plan", str(path), "--json", "--optimization", "none"],
                                          check=True, capture_output=True, text=True).stdout)
    assert plan_none["fused_nodes"] == 0 and plan_none["nodes"] == 3
