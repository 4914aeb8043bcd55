"""If branches and Loop bodies on the fast kernels. A subgraph reads the enclosing graph's weights
as constants of its own (so its convolutions and LSTMs pack them and it folds over them), and each
plan made for concrete input shapes also plans its subgraphs for those shapes (kernels that need
static shapes then run inside branches, as in Silero VAD, whose whole network sits in If
branches). Outputs against ONNX Runtime before and after the shape plan takes over; the profile
shows which kernels the branch steps ran."""
import json
import subprocess

import numpy as np
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

import onyx

RNG = np.random.default_rng(31)
C, M, H = 8, 16, 12


def branchy_model():
    """x [1, C, L] (L symbolic), c bool -> If(c): then Relu(Conv(x, W1, B1)) -> LSTM over L,
    else Conv(x, W2) -> LSTM; every weight is an initializer of the main graph."""
    inits = {
        "W1": (RNG.standard_normal((M, C, 3)) * 0.3).astype(np.float32),
        "B1": RNG.standard_normal(M).astype(np.float32),
        "W2": (RNG.standard_normal((M, C, 3)) * 0.3).astype(np.float32),
        "LW": (RNG.standard_normal((1, 4 * H, M)) * 0.3).astype(np.float32),
        "LR": (RNG.standard_normal((1, 4 * H, H)) * 0.3).astype(np.float32),
        "perm_axes": np.array([2, 0, 1], np.int64),
    }

    def branch(name, conv_inputs, relu):
        nodes = [helper.make_node("Conv", conv_inputs, [name + "_c"], kernel_shape=[3], pads=[1, 1])]
        last = name + "_c"
        if relu:
            nodes.append(helper.make_node("Relu", [last], [name + "_r"]))
            last = name + "_r"
        nodes += [helper.make_node("Transpose", [last], [name + "_s"], perm=[2, 0, 1]),
                  helper.make_node("LSTM", [name + "_s", "LW", "LR"], [name + "_y"], hidden_size=H)]
        return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(name + "_y", TP.FLOAT, None)])

    g = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=branch("t", ["x", "W1", "B1"], True),
                          else_branch=branch("e", ["x", "W2"], False))],
        "branchy",
        [helper.make_tensor_value_info("x", TP.FLOAT, [1, C, "L"]),
         helper.make_tensor_value_info("c", TP.BOOL, [])],
        [helper.make_tensor_value_info("y", TP.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_branches_match_onnxruntime_on_generic_and_shape_plans():
    model = branchy_model().SerializeToString()
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    sess = onyx.InferenceSession(model, threads=1)
    for length in (40, 17):
        x = RNG.standard_normal((1, C, length)).astype(np.float32)
        for cond in (True, False):
            feeds = {"x": x, "c": np.array(cond)}
            expected = want.run(None, feeds)[0]
            for _ in range(12):  # past specialize_after_runs: the shape plan and its subgraphs
                np.testing.assert_allclose(sess.run(None, feeds)[0], expected, rtol=1e-5, atol=1e-5)


def test_branch_steps_run_fast_kernels_once_the_shape_has_a_plan(onyx_cli, tmp_path):
    path = tmp_path / "branchy.onnx"
    path.write_bytes(branchy_model().SerializeToString())
    trace = tmp_path / "trace.json"
    # bench feeds bool inputs as false: the else branch runs.
    p = subprocess.run([onyx_cli, "bench", str(path), "--threads", "1", "--shape", "x=1x8x40",
                        "--warmup", "10", "--runs", "5", "--profile", str(trace)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    impls = {e["name"]: e.get("args", {}).get("impl") for e in events if e.get("ph") == "X"}
    branch = {name: impl for name, impl in impls.items() if impl and ("Conv" in impl or "LSTM" in impl or "conv" in impl)}
    assert branch, impls
    # The weights are constants of the branch and its shapes are known: no reference kernels.
    assert all(not impl.endswith("_ref") and "im2col" not in impl for impl in branch.values()), branch
