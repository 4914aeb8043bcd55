"""The fast recurrent kernels against ONNX Runtime (the oracle): GRUs and RNNs with initializer
weights (GRU_f32_hwy with linear_before_reset 0 and 1, RNN_f32_hwy: forward, reverse,
bidirectional, with and without bias and initial state, a sequence of several steps, a batch, a
streaming step of one), chained as a stacked recurrent model is, and one of each that the fast
kernels leave to the reference (clip, Relu); LSTM_f32_hwy with sequence_lens (a row of length 0,
a short one, a full one) and layout 1. The plan shows which kernel each node took; outputs must match ORT at 1 and 2 threads."""
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


def lstm_model(oracle=False):
    """LSTMs on what the fast LSTM gathers row by row: sequence_lens (forward with bias and
    state, reverse, bidirectional) on x [5, 3, 10], and layout 1 on xb [3, 5, 10] (forward with
    state, bidirectional with sequence_lens). ORT has no layout 1: the oracle (oracle=True) runs
    those two as layout 0 between Transposes, with the same weights."""
    inits, nodes = [], []
    rng = np.random.default_rng(31)  # the same weights in both forms

    def w(*shape):
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    def init(name, a):
        inits.append(numpy_helper.from_array(np.asarray(a), name))
        return name

    def batch_first_lstm(inputs, outputs, **attrs):
        if not oracle:
            nodes.append(helper.make_node("LSTM", inputs, outputs, layout=1, **attrs))
            return
        name = attrs["name"]
        x, states = inputs[0], inputs[5:]
        nodes.append(helper.make_node("Transpose", [x], [name + "_x"], perm=[1, 0, 2]))
        for st in states:
            nodes.append(helper.make_node("Transpose", [st], [name + st], perm=[1, 0, 2]))
        nodes.append(helper.make_node(
            "LSTM", [name + "_x"] + inputs[1:5] + [name + st for st in states],
            [name + o for o in outputs], **attrs))
        nodes.append(helper.make_node("Transpose", [name + outputs[0]], [outputs[0]],
                                      perm=[2, 0, 1, 3]))
        for o in outputs[1:]:
            nodes.append(helper.make_node("Transpose", [name + o], [o], perm=[1, 0, 2]))

    nodes.append(helper.make_node(
        "LSTM", ["x", init("W1", w(1, 4 * H, I)), init("R1", w(1, 4 * H, H)),
                 init("B1", w(1, 8 * H)), "lens", "h0", "c0"],
        ["y1", "y1_h", "y1_c"], hidden_size=H, name="lstm_lens"))
    nodes.append(helper.make_node(
        "LSTM", ["x", init("W2", w(1, 4 * H, I)), init("R2", w(1, 4 * H, H)), "", "lens"],
        ["y2", "y2_h"], hidden_size=H, direction="reverse", name="lstm_lens_rev"))
    nodes.append(helper.make_node(
        "LSTM", ["x", init("W3", w(2, 4 * H, I)), init("R3", w(2, 4 * H, H)),
                 init("B3", w(2, 8 * H)), "lens"],
        ["y3", "y3_h", "y3_c"], hidden_size=H, direction="bidirectional", name="lstm_lens_bi"))
    batch_first_lstm(["xb", "W1", "R1", "B1", "", "hb0", "cb0"], ["y4", "y4_h", "y4_c"],
                     hidden_size=H, name="lstm_bf")
    batch_first_lstm(["xb", "W3", "R3", "B3", "lens"], ["y5", "y5_h", "y5_c"], hidden_size=H,
                     direction="bidirectional", name="lstm_bf_lens_bi")
    g = helper.make_graph(
        nodes, "lstms",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [SEQ, BATCH, I]),
         helper.make_tensor_value_info("lens", TensorProto.INT32, [BATCH]),
         helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, BATCH, H]),
         helper.make_tensor_value_info("c0", TensorProto.FLOAT, [1, BATCH, H]),
         helper.make_tensor_value_info("xb", TensorProto.FLOAT, [BATCH, SEQ, I]),
         helper.make_tensor_value_info("hb0", TensorProto.FLOAT, [BATCH, 1, H]),
         helper.make_tensor_value_info("cb0", TensorProto.FLOAT, [BATCH, 1, H])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
         for n in ("y1", "y1_h", "y1_c", "y2", "y2_h", "y3", "y3_h", "y3_c", "y4", "y4_h", "y4_c",
                   "y5", "y5_h", "y5_c")],
        inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def lstm_feeds():
    return {"x": rand(SEQ, BATCH, I, scale=1.0), "lens": np.array([SEQ, 0, 2], np.int32),
            "h0": rand(1, BATCH, H, scale=0.5), "c0": rand(1, BATCH, H, scale=0.5),
            "xb": rand(BATCH, SEQ, I, scale=1.0), "hb0": rand(BATCH, 1, H, scale=0.5),
            "cb0": rand(BATCH, 1, H, scale=0.5)}


MODELS = {
    "gru": (gru_model, feeds, {"gru_fwd": "GRU_f32_hwy", "gru_rev": "GRU_f32_hwy",
                                   "gru_bi": "GRU_f32_hwy", "gru_step": "GRU_f32_hwy"},
            ["gru_clip"]),
    "rnn": (rnn_model, feeds, {"rnn_fwd": "RNN_f32_hwy", "rnn_bi": "RNN_f32_hwy",
                                   "rnn_step": "RNN_f32_hwy"},
            ["rnn_relu"]),
    "lstm": (lstm_model, lstm_feeds, {n: "LSTM_f32_hwy" for n in (
        "lstm_lens", "lstm_lens_rev", "lstm_lens_bi", "lstm_bf", "lstm_bf_lens_bi")}, []),
}
# Models ORT cannot run as they are, and the equivalent it runs instead.
ORACLES = {"lstm": lambda: lstm_model(oracle=True)}


@pytest.fixture(scope="module", params=sorted(MODELS))
def model(request, tmp_path_factory):
    make, feeds, fast, slow = MODELS[request.param]
    folder = tmp_path_factory.mktemp("recurrent")
    path = str(folder / f"{request.param}.onnx")
    onnx.save(make(), path)
    oracle = path
    if request.param in ORACLES:
        oracle = str(folder / f"{request.param}_oracle.onnx")
        onnx.save(ORACLES[request.param](), oracle)
    return path, oracle, feeds, fast, slow


def test_plan_uses_the_fast_kernels(onyx_cli, model):
    path, _, _, fast, slow = model
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

    path, oracle, feeds_fn, _, _ = model
    feeds = feeds_fn()
    want = ort.InferenceSession(oracle, providers=["CPUExecutionProvider"]).run(None, feeds)
    names = [o.name for o in onnx.load(path).graph.output]
    so = onyx.SessionOptions()
    so.intra_op_num_threads = threads
    sess = onyx.InferenceSession(path, so)
    for _ in range(3):  # a 2-thread session may probe one thread: every run must agree
        got = sess.run(None, feeds)
        for g, w, name in zip(got, want, names):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-6, err_msg=name)
