"""`onyx conformance --symbolic-inputs`: the ONNX node tests with every input dim made symbolic, so
they run on the shape-generic plan, must keep passing (tests/conformance/expected_pass_symbolic.txt)
and the generic plan must never need its fallback to a specialised plan."""
import json
import os
import subprocess

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from conftest import NODE_TESTS, ROOT

EXPECTED = os.path.join(ROOT, "tests", "conformance", "expected_pass_symbolic.txt")


def run(cli, *args, timeout=1800):
    env = dict(os.environ)
    env.pop("ONYX_SPECIALIZE_AFTER_RUNS", None)  # the default: tests run the generic plan first
    return subprocess.run([cli, *args], capture_output=True, text=True, timeout=timeout, env=env)


def plan_kinds(message):
    # --verbose appends "[plan: KIND ...; impls: ...]", one kind per data set.
    return message.split("[plan:", 1)[1].split(";", 1)[0].split()


def test_node_tests_pass_on_the_generic_plan(onyx_cli, tmp_path):
    out = tmp_path / "symbolic.json"
    p = run(onyx_cli, "conformance", "--data", os.path.join(NODE_TESTS, "onnx-1.22.0"), "--symbolic-inputs",
            "--verbose", "--quiet", "--expected", EXPECTED, "--json", str(out))
    assert p.returncode == 0, p.stdout[-5000:]
    assert "expected-pass check: 0 regressions" in p.stdout
    tests = json.loads(out.read_text())["tests"]
    ran = [(t["name"], plan_kinds(t["message"])) for t in tests if "[plan:" in t["message"]]
    # A fallback means a kernel chosen for symbolic types refused the concrete shapes: the session
    # hides it by running a specialised plan, so only this count reveals it.
    fallbacks = [n for n, kinds in ran if "fallback" in kinds]
    assert fallbacks == []
    # Otherwise this check could silently test specialised plans only: 1732 of 1765 tests run the
    # generic plan (the rest have only scalar inputs, or no inputs, and are planned once).
    generic = [n for n, kinds in ran if kinds and all(k == "generic" for k in kinds)]
    assert len(generic) >= 1700, len(generic)


def write_test_dir(root, model, inputs, outputs):
    root.mkdir(parents=True)
    onnx.save(model, str(root / "model.onnx"))
    data = root / "test_data_set_0"
    data.mkdir()
    for k, a in enumerate(inputs):
        (data / f"input_{k}.pb").write_bytes(numpy_helper.from_array(a).SerializeToString())
    for k, a in enumerate(outputs):
        (data / f"output_{k}.pb").write_bytes(numpy_helper.from_array(a).SerializeToString())


def test_symbolic_inputs_makes_static_inputs_symbolic(onyx_cli, tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.array([10, 20, 30], dtype=np.float32)
    z = np.array([[10, 21, 32], [13, 24, 35]], dtype=np.float32)  # x + y by hand
    # Static input shapes; the output and an intermediate declare static shapes too, which stay
    # and must not conflict with the symbolic inputs.
    static = helper.make_model(helper.make_graph(
        [helper.make_node("Add", ["x", "y"], ["s"]), helper.make_node("Identity", ["s"], ["z"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])],
        value_info=[helper.make_tensor_value_info("s", TensorProto.FLOAT, [2, 3])]),
        opset_imports=[helper.make_opsetid("", 17)])
    write_test_dir(tmp_path / "data" / "test_static", static, [x, y], [z])
    # An input without a shape is left as it is.
    unshaped = onnx.ModelProto()
    unshaped.CopyFrom(static)
    unshaped.graph.input[1].type.tensor_type.ClearField("shape")
    write_test_dir(tmp_path / "data" / "test_unshaped_y", unshaped, [x, y], [z])
    data = str(tmp_path / "data")

    normal = run(onyx_cli, "conformance", "--data", data, "--verbose")
    assert normal.returncode == 0, normal.stdout
    assert "pass test_static: [plan: specialised;" in normal.stdout  # static: planned once
    sym = run(onyx_cli, "conformance", "--data", data, "--verbose", "--symbolic-inputs")
    assert sym.returncode == 0, sym.stdout
    assert "pass test_static: [plan: generic; impls: Add=" in sym.stdout
    assert "pass test_unshaped_y: [plan: generic;" in sym.stdout
    assert "2 tests, 2 pass" in sym.stdout

    # A wrong expected output is still caught on the generic plan.
    write_test_dir(tmp_path / "bad" / "test_static", static, [x, y], [z + 1])
    bad = run(onyx_cli, "conformance", "--data", str(tmp_path / "bad"), "--symbolic-inputs")
    assert "fail test_static" in bad.stdout and "1 wrong result" in bad.stdout
