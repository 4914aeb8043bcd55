"""The CLI on real and broken inputs: every bad model gives a clear error and a non-zero exit,
never a crash or a hang; run/plan/info/bench/conformance do what their --help says."""
import json
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import DATA


def run(cli, *args, timeout=120):
    return subprocess.run([cli, *args], capture_output=True, text=True, timeout=timeout)


def save(model, path):
    onnx.save(model, str(path))
    return str(path)


def relu_model(extra_nodes=(), inputs=None):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")] + list(extra_nodes)
    g = helper.make_graph(nodes, "g",
                          inputs or [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def assert_clean_failure(proc, *needles):
    assert proc.returncode not in (0,), proc.stdout
    assert proc.returncode > 0, f"killed by signal {-proc.returncode}"
    assert "error" in proc.stderr
    for n in needles:
        assert n in proc.stderr, proc.stderr


@pytest.mark.parametrize("cmd", ["run", "plan", "info", "bench", "conformance"])
def test_help(onyx_cli, cmd):
    p = run(onyx_cli, cmd, "--help")
    assert p.returncode == 0
    assert p.stdout.startswith(f"usage: onyx {cmd}")


def test_truncated_empty_and_random_files(onyx_cli, tmp_path):
    good = (tmp_path / "good.onnx")
    save(relu_model(), good)
    data = good.read_bytes()
    (tmp_path / "trunc.onnx").write_bytes(data[: len(data) // 2])
    (tmp_path / "empty.onnx").write_bytes(b"")
    (tmp_path / "random.onnx").write_bytes(np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    assert_clean_failure(run(onyx_cli, "run", str(tmp_path / "trunc.onnx")), "trunc.onnx")
    assert_clean_failure(run(onyx_cli, "run", str(tmp_path / "empty.onnx")), "empty")
    assert_clean_failure(run(onyx_cli, "info", str(tmp_path / "random.onnx")), "random.onnx")
    assert_clean_failure(run(onyx_cli, "plan", str(tmp_path / "missing.onnx")), "missing.onnx")


def test_undefined_value_and_cycle(onyx_cli, tmp_path):
    m = relu_model([helper.make_node("Add", ["y", "ghost"], ["z"], name="adder")])
    assert_clean_failure(run(onyx_cli, "plan", save(m, tmp_path / "undef.onnx")), "Add node 'adder'", "'ghost'")
    g = helper.make_graph(
        [helper.make_node("Add", ["x", "b"], ["a"], name="n1"), helper.make_node("Relu", ["a"], ["b"], name="n2"),
         helper.make_node("Identity", ["b"], ["y"], name="n3")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    cyc = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    assert_clean_failure(run(onyx_cli, "run", save(cyc, tmp_path / "cycle.onnx")), "cycle")


def test_external_data_escaping_model_dir(onyx_cli, tmp_path):
    (tmp_path / "secret.bin").write_bytes(np.ones(2, np.float32).tobytes())
    sub = tmp_path / "model"
    sub.mkdir()
    w = helper.make_tensor("w", TensorProto.FLOAT, [2], [0.0, 0.0])
    w.ClearField("float_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "../secret.bin"), ("offset", "0"), ("length", "8")):
        e = w.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    path = sub / "m.onnx"
    path.write_bytes(m.SerializeToString())
    assert_clean_failure(run(onyx_cli, "run", str(path), "--generate", "ramp"), "'w'", "leaves the model's directory")


def test_wrong_input_shape_is_reported(onyx_cli, tmp_path):
    path = save(relu_model(), tmp_path / "m.onnx")
    x = tmp_path / "x.pb"
    x.write_bytes(numpy_helper.from_array(np.ones([3], np.float32)).SerializeToString())
    assert_clean_failure(run(onyx_cli, "run", path, str(x)), "input 'x'", "expects dim 0 = 2")


def test_run_writes_outputs_and_dumps(onyx_cli, tmp_path):
    m = relu_model([helper.make_node("Neg", ["y"], ["gpu_0/neg"], name="neg")])
    m.graph.output.append(helper.make_tensor_value_info("gpu_0/neg", TensorProto.FLOAT, [2]))
    path = save(m, tmp_path / "m.onnx")
    x = tmp_path / "x.pb"
    x.write_bytes(numpy_helper.from_array(np.array([-1.0, 2.0], np.float32)).SerializeToString())
    p = run(onyx_cli, "run", path, str(x), "--output-dir", str(tmp_path / "out"), "--dump-dir", str(tmp_path / "dump"))
    assert p.returncode == 0, p.stderr
    t = onnx.TensorProto()
    t.ParseFromString((tmp_path / "out" / "gpu_0_neg.pb").read_bytes())
    np.testing.assert_array_equal(numpy_helper.to_array(t), [-0.0, -2.0])
    assert sorted(os.listdir(tmp_path / "dump")) == ["gpu_0_neg.pb", "y.pb"]


def test_plan_json_and_bench_json(onyx_cli, light_dir):
    p = run(onyx_cli, "plan", os.path.join(light_dir, "light_resnet50.onnx"), "--json")
    assert p.returncode == 0, p.stderr
    plan = json.loads(p.stdout)
    assert plan["nodes"] == len(plan["schedule"]) > 0
    assert plan["max_live_bytes"] <= plan["arena_bytes"] <= 1.1 * plan["max_live_bytes"]
    assert plan["arena_bytes"] <= plan["no_reuse_bytes"]
    b = run(onyx_cli, "bench", os.path.join(light_dir, "light_squeezenet.onnx"), "--runs", "3", "--warmup", "1", "--json")
    assert b.returncode == 0, b.stderr
    r = json.loads(b.stdout)
    assert r["median_ms"] > 0 and r["p90_ms"] >= r["median_ms"] * 0.5 and r["session_create_ms"] > 0


def test_info_lists_operators(onyx_cli, light_dir):
    p = run(onyx_cli, "info", os.path.join(light_dir, "light_squeezenet.onnx"))
    assert p.returncode == 0, p.stderr
    assert "Conv:" in p.stdout and "unsupported: none" in p.stdout


def test_conformance_counts_each_test(onyx_cli, tmp_path):
    out = tmp_path / "c.json"
    p = run(onyx_cli, "conformance", "--data", os.path.join(DATA, "node"), "--filter", "^test_relu$|^test_abs$",
            "--json", str(out))
    assert p.returncode == 0, p.stdout
    res = json.loads(out.read_text())
    assert res["total"] == 2 and res["counts"]["pass"] == 2
