"""The ISA cap through the CLI: `onyx info --cpu` reports the probe and the cap, ONYX_ISA set to
each level this CPU has plans kernels at or below it (the reference kernels under scalar) whose
outputs match the onnx reference evaluator, and a bad ONYX_ISA is an error (docs/isa.md)."""
import json
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator


def run_cli(cli: str, args: list, isa: str | None) -> subprocess.CompletedProcess:
    """Runs the CLI with ONYX_ISA set to `isa` (None: unset)."""
    env = dict(os.environ)
    env.pop("ONYX_ISA", None)
    if isa is not None:
        env["ONYX_ISA"] = isa
    return subprocess.run([cli, *args], capture_output=True, text=True, timeout=120, env=env)


def machine_levels(cli: str) -> list:
    """The levels `onyx info --cpu` says this CPU has, lowest first."""
    p = run_cli(cli, ["info", "--cpu"], None)
    assert p.returncode == 0, p.stderr
    line = next(l for l in p.stdout.splitlines() if l.startswith("levels:"))
    return [w for w in line.split()[1:] if not w.endswith("(no)")]


def conv_matmul_model(path: str) -> dict:
    """Conv (8 -> 16 channels, 3x3) then Relu, and a MatMul: oneDNN and Highway kernels where
    allowed. Returns the feeds."""
    rng = np.random.default_rng(5)
    w = rng.uniform(-1, 1, (16, 8, 3, 3)).astype(np.float32)
    m = rng.uniform(-1, 1, (64, 33)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["y"], name="relu"),
         helper.make_node("MatMul", ["a", "m"], ["z"], name="matmul")],
        "isa",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 12, 12]),
         helper.make_tensor_value_info("a", TensorProto.FLOAT, [5, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 12, 12]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [5, 33])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(m, "m")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return {"x": rng.uniform(-2, 2, (1, 8, 12, 12)).astype(np.float32),
            "a": rng.uniform(-2, 2, (5, 64)).astype(np.float32)}


def test_info_cpu_reports_the_probe_and_the_cap(onyx_cli):
    levels = machine_levels(onyx_cli)
    assert levels[0] == "scalar"
    p = run_cli(onyx_cli, ["info", "--cpu"], None)
    assert f"machine: {levels[-1]}\n" in p.stdout
    p = run_cli(onyx_cli, ["info", "--cpu"], "scalar")
    assert "cap: scalar (ONYX_ISA=scalar" in p.stdout
    assert "highway: scalar" in p.stdout  # no SIMD target left to Highway


def test_bad_onyx_isa_is_an_error(onyx_cli, tmp_path):
    path = str(tmp_path / "m.onnx")
    conv_matmul_model(path)
    p = run_cli(onyx_cli, ["plan", path], "avx3")
    assert p.returncode != 0
    assert "ONYX_ISA=avx3: unknown ISA level" in p.stderr
    p = run_cli(onyx_cli, ["plan", path, "--max-isa", "fastest"], None)
    assert p.returncode != 0
    assert "max_isa=fastest" in p.stderr


def test_each_level_plans_kernels_under_it_and_matches_the_reference(onyx_cli, tmp_path):
    path = str(tmp_path / "m.onnx")
    feeds = conv_matmul_model(path)
    want = ReferenceEvaluator(path).run(None, feeds)
    inputs = []
    for name, value in feeds.items():
        f = tmp_path / f"{name}.pb"
        f.write_bytes(numpy_helper.from_array(value, name).SerializeToString())
        inputs += ["--input", f"{name}={f}"]
    levels = machine_levels(onyx_cli)
    for rank, level in enumerate(levels):
        p = run_cli(onyx_cli, ["plan", path, "--json"], level)
        assert p.returncode == 0, p.stderr
        steps = json.loads(p.stdout)["schedule"]
        for s in steps:
            assert levels.index(s["isa"]) <= rank, (level, s)
        impls = {s["op"]: s["impl"] for s in steps}
        if level == "scalar":
            assert all(s["isa"] == "scalar" for s in steps), steps
            assert impls["MatMul"] != "MatMul_f32_onednn", steps
        else:
            # oneDNN runs at the cap itself: its product is chosen, at exactly this level.
            mm = next(s for s in steps if s["op"] == "MatMul")
            assert mm["impl"].startswith("MatMul_f32_onednn") and mm["isa"] == level, steps
        out = tmp_path / level
        p = run_cli(onyx_cli, ["run", path, *inputs, "--output-dir", str(out)], level)
        assert p.returncode == 0, p.stderr
        for name, expected in zip(["y", "z"], want):
            got = numpy_helper.to_array(onnx.load_tensor(str(out / f"{name}.pb")))
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4, err_msg=f"{level} {name}")


def test_session_option_max_isa_caps_the_kernels_and_checks_the_level(onyx_cli, tmp_path):
    """SessionOptions.max_isa: under "scalar" every profiled step runs a scalar (reference)
    kernel, with outputs that match the onnx reference evaluator; an unknown level fails."""
    import onyx

    path = str(tmp_path / "m.onnx")
    feeds = conv_matmul_model(path)
    want = ReferenceEvaluator(path).run(None, feeds)
    o = onyx.SessionOptions()
    o.max_isa = "scalar"
    o.enable_profiling = True
    o.profile_file_prefix = str(tmp_path / "prof")
    sess = onyx.InferenceSession(path, o)
    got = sess.run(["y", "z"], feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    with open(sess.end_profiling()) as f:
        impls = {e["args"]["op_name"]: e["args"]["impl"] for e in json.load(f)
                 if e.get("cat") == "Node"}
    assert "MatMul" in impls and not impls["MatMul"].startswith("MatMul_f32_onednn"), impls
    assert not any(i.endswith("_hwy") or "onednn" in i for i in impls.values()), impls
    # Uncapped, the same product runs on a SIMD kernel.
    plain = onyx.SessionOptions()
    plain.enable_profiling = True
    plain.profile_file_prefix = str(tmp_path / "plain")
    fast = onyx.InferenceSession(path, plain)
    fast.run(["z"], feeds)
    with open(fast.end_profiling()) as f:
        fast_impls = {e["args"]["op_name"]: e["args"]["impl"] for e in json.load(f)
                      if e.get("cat") == "Node"}
    assert fast_impls["MatMul"] != impls["MatMul"], (fast_impls, impls)
    bad = onyx.SessionOptions()
    bad.max_isa = "fastest"
    with pytest.raises(Exception, match="max_isa=fastest"):
        onyx.InferenceSession(path, bad)
