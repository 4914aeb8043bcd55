"""Fusion pass: Conv+BatchNormalization folding gives ONNX Runtime's results on random weights
(per-channel parameters all different, so a channel mix-up cannot hide), and really fuses;
`onyx plan` lists the fusions; on the benchmark models level all runs at most 60% of the steps
of level none and both match ONNX Runtime. The per-rule tests are in test_fusion_*.py."""
import json
import os
import subprocess
import sys

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
    # Reference kernels: no layout pass adds steps. The Relu becomes the FusedConv's post-op.
    plan = json.loads(subprocess.run([onyx_cli, "plan", str(path), "--json", "--kernels", "reference"],
                                     check=True, capture_output=True, text=True).stdout)
    assert plan["fused_nodes"] == 2 and plan["nodes"] == 1
    plan_none = json.loads(subprocess.run([onyx_cli, "plan", str(path), "--json", "--optimization", "none"],
                                          check=True, capture_output=True, text=True).stdout)
    assert plan_none["fused_nodes"] == 0 and plan_none["nodes"] == 3


def test_plan_lists_the_fusions(onyx_cli, tmp_path):
    rng = np.random.default_rng(3)
    path = tmp_path / "m.onnx"
    path.write_bytes(conv_bn_model(rng, True, 1).SerializeToString())
    text = subprocess.run([onyx_cli, "plan", str(path), "--kernels", "reference"], check=True,
                          capture_output=True, text=True).stdout
    assert "fusions (2 rewrites): ConvActivation 1; ConvBatchNorm 1;" in text
    assert "  ConvBatchNorm: conv, bn -> step 0" in text
    assert "  ConvActivation: conv, bn, relu -> step 0 (FusedConv node 'conv'" in text
    plan = json.loads(subprocess.run([onyx_cli, "plan", str(path), "--json", "--kernels", "reference"],
                                     check=True, capture_output=True, text=True).stdout)
    assert plan["nodes"] == 1 and plan["fused_nodes"] == 2
    assert plan["fusions"] == [
        {"kind": "ConvBatchNorm", "nodes": ["conv", "bn"], "into": 0, "into_node": "conv"},
        {"kind": "ConvActivation", "nodes": ["conv", "bn", "relu"], "into": 0, "into_node": "conv"}]
    assert plan["fusion_counts"] == {"ConvActivation": 1, "ConvBatchNorm": 1}
    assert plan["schedule"][0]["op"] == "FusedConv"


BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "models")


@pytest.mark.parametrize("name", ["mobilenet_v2", "resnet50", "densenet121", "bert_base"])
def test_benchmark_model_fused_nodes_and_outputs(onyx_cli, name):
    """The issue's bar: `all` executes at most 60% of the steps of `none`, and both match ONNX
    Runtime. Needs bench/models/make_bench_models.py to have been run."""
    path = os.path.join(BENCH, "out", f"{name}.onnx")
    if not os.path.exists(path):
        pytest.skip(f"{path} not built (bench/models/make_bench_models.py)")
    sys.path.insert(0, BENCH)
    from make_bench_models import make_feeds
    from fusion_check import plan, rel_err, run_onyx, run_ort

    none = plan(onyx_cli, path, "none", kernels="auto")
    fused = plan(onyx_cli, path, "all", kernels="auto")
    assert fused["nodes"] <= 0.6 * none["nodes"], (fused["nodes"], none["nodes"])
    feeds = make_feeds(name)
    want = run_ort(path, feeds)
    for level in ("none", "all"):
        got = run_onyx(onyx_cli, path, feeds, level, kernels="auto", threads=2)
        for out, w in want.items():
            assert rel_err(got[out], w) <= 1e-4, (level, out)
