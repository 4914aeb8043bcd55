"""The fast recurrent kernels against ONNX Runtime (the oracle): GRUs and RNNs with initializer
weights (GRU_f32_hwy with linear_before_reset 0 and 1, RNN_f32_hwy: forward, reverse,
bidirectional, with and without bias and initial state, a sequence of several steps, a batch, a
streaming step of one), chained as a stacked recurrent model is, and one of each that the fast
kernels leave to the reference (clip, Relu). The
plan shows which kernel each node took; outputs must match ORT at 1 and 2 threads."""
import json
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(29)
H = 20  # hidden size: a vector tail on every SIMD target
I = 10
SEQ, BATCH = 5, 3


def rand(*shape, scale=0.3):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def gru_model():
    """x [5, 3, 10] -> forward GRU (linear_before_reset 0, bias, initial state) -> reverse GRU
    (linear_before_reset 1, no bias, no state) -> bidirectional GRU (1, bias); beside them a
    one-step GRU (1, bias, state) on xs [1, 1, 10], and a GRU with clip on x (reference)."""
    inits, nodes = [], []

    def init(name, a):
        inits.append(numpy_helper.from_array(np.asarray(a), name))
        return name

    nodes.append(helper.make_node(
        "GRU", ["x", init("W1", rand(1, 3 * H, I)), init("R1", rand(1, 3 * H, H)),
                init("B1", rand(1, 6 * H)), "", "h0"],
        ["y1", "h1"], hidden_size=H, name="gru_fwd"))
    nodes.append(helper.make_node("Squeeze", ["y1", init("ax1", np.array([1], np.int64))], ["y1s"],
                                  name="sq1"))
    nodes.append(helper.make_node(
        "GRU", ["y1s", init("W2", rand(1, 3 * H, H)), init("R2", rand(1, 3 * H, H))],
        ["y2"], hidden_size=H, direction="reverse", linear_before_reset=1, name="gru_rev"))
    nodes.append(helper.make_node("Squeeze", ["y2", "ax1"], ["y2s"], name="sq2"))
    nodes.append(helper.make_node(
        "GRU", ["y2s", init("W3", rand(2, 3 * H, H)), init("R3", rand(2, 3 * H, H)),
                init("B3", rand(2, 6 * H))],
        ["y", "y_h"], hidden_size=H, direction="bidirectional", linear_before_reset=1,
        name="gru_bi"))
    nodes.append(helper.make_node(
        "GRU", ["xs", init("W4", rand(1, 3 * H, I)), init("R4", rand(1, 3 * H, H)),
                init("B4", rand(1, 6 * H)), "", "hs0"],
        ["ys", "ys_h"], hidden_size=H, linear_before_reset=1, name="gru_step"))
    nodes.append(helper.make_node(
        "GRU", ["x", "W1", "R1", "B1"], ["yc"], hidden_size=H, clip=0.5, name="gru_clip"))
    g = helper.make_graph(
        nodes, "grus",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [SEQ, BATCH, I]),
         helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, BATCH, H]),
         helper.make_tensor_value_info("xs", TensorProto.FLOAT, [1, 1, I]),
         helper.make_tensor_value_info("hs0", TensorProto.FLOAT, [1, 1, H])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
         for n in ("y", "y_h", "h1", "ys", "ys_h", "yc")],
        inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def feeds():
    return {"x": rand(SEQ, BATCH, I, scale=1.0), "h0": rand(1, BATCH, H, scale=0.5),
            "xs": rand(1, 1, I, scale=1.0), "hs0": rand(1, 1, H, scale=0.5)}


def rnn_model():
    """x [5, 3, 10] -> forward RNN (bias, initial state) -> bidirectional RNN (no bias, explicit
    Tanh); beside them a one-step reverse RNN on xs, and a Relu RNN on x (reference)."""
    inits, nodes = [], []

    def init(name, a):
        inits.append(numpy_helper.from_array(np.asarray(a), name))
        return name

    nodes.append(helper.make_node(
        "RNN", ["x", init("W1", rand(1, H, I)), init("R1", rand(1, H, H)),
                init("B1", rand(1, 2 * H)), "", "h0"],
        ["y1", "h1"], hidden_size=H, name="rnn_fwd"))
    nodes.append(helper.make_node("Squeeze", ["y1", init("ax1", np.array([1], np.int64))], ["y1s"],
                                  name="sq1"))
    nodes.append(helper.make_node(
        "RNN", ["y1s", init("W2", rand(2, H, H)), init("R2", rand(2, H, H))],
        ["y", "y_h"], hidden_size=H, direction="bidirectional", activations=["Tanh", "Tanh"],
        name="rnn_bi"))
    nodes.append(helper.make_node(
        "RNN", ["xs", init("W4", rand(1, H, I)), init("R4", rand(1, H, H)),
                init("B4", rand(1, 2 * H)), "", "hs0"],
        ["ys", "ys_h"], hidden_size=H, direction="reverse", name="rnn_step"))
    nodes.append(helper.make_node(
        "RNN", ["x", "W1", "R1", "B1"], ["yr"], hidden_size=H, activations=["Relu"],
        name="rnn_relu"))
    g = helper.make_graph(
        nodes, "rnns",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [SEQ, BATCH, I]),
         helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, BATCH, H]),
         helper.make_tensor_value_info("xs", TensorProto.FLOAT, [1, 1, I]),
         helper.make_tensor_value_info("hs0", TensorProto.FLOAT, [1, 1, H])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
         for n in ("y", "y_h", "h1", "ys", "ys_h", "yr")],
        inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


MODELS = {
    "gru": (gru_model, feeds, {"gru_fwd": "GRU_f32_hwy", "gru_rev": "GRU_f32_hwy",
                                   "gru_bi": "GRU_f32_hwy", "gru_step": "GRU_f32_hwy"},
            ["gru_clip"]),
    "rnn": (rnn_model, feeds, {"rnn_fwd": "RNN_f32_hwy", "rnn_bi": "RNN_f32_hwy",
                                   "rnn_step": "RNN_f32_hwy"},
            ["rnn_relu"]),
}


@pytest.fixture(scope="module", params=sorted(MODELS))
def model(request, tmp_path_factory):
    make, feeds, fast, slow = MODELS[request.param]
    path = str(tmp_path_factory.mktemp("recurrent") / f"{request.param}.onnx")
    onnx.save(make(), path)
    return path, feeds, fast, slow


def test_plan_uses_the_fast_kernels(onyx_cli, model):
    path, _, fast, slow = model
    p = subprocess.run([onyx_cli, "plan", path, "--json"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    impls = {s["node"]: s["impl"] for s in json.loads(p.stdout)["schedule"]}
    for n, impl in fast.items():
        assert impls[n] == impl, impls
    for n in slow:
        assert not impls[n].endswith("_hwy"), impls


@pytest.mark.parametrize("threads", [1, 2])
def test_outputs_match_onnxruntime(model, threads):
    import onyx

    path, feeds_fn, _, _ = model
    feeds = feeds_fn()
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    names = [o.name for o in onnx.load(path).graph.output]
    so = onyx.SessionOptions()
    so.intra_op_num_threads = threads
    sess = onyx.InferenceSession(path, so)
    for _ in range(3):  # a 2-thread session may probe one thread: every run must agree
        got = sess.run(None, feeds)
        for g, w, name in zip(got, want, names):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-6, err_msg=name)
