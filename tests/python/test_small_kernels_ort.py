"""The small-graph kernels against ONNX Runtime (the oracle): LSTMs with initializer weights
(LSTM_f32_hwy: forward, reverse, bidirectional, with and without bias and initial state, a
sequence of several steps, a batch) and convolutions with at most 8 output positions
(Conv_f32_small_hwy and its FusedConv form: a learned-STFT-like 1-D conv, 3-tap convs with
stride and padding, a 3x2 2-D conv on a 1x2 map), fed in a chain as a streaming detector does. The plan
shows which kernel each node took; outputs must match ORT at 1 and 2 threads."""
import json
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(23)
H = 24  # hidden size: a vector tail on every SIMD target


def rand(*shape, scale=0.3):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def detector():
    """x [2, 1, 80] -> STFT-like conv (1 -> 20, kernel 32, stride 16: 4 positions an image, 8 in
    all) -> Relu -> conv 20 -> 16, 3 taps, stride 2, pad 1 (2 positions) -> 2-D view
    [2, 16, 1, 2] -> conv 3x2, pads 1 (16 -> 12, 1x2 out) -> Sigmoid -> [seq 2, batch 2, 12] -> forward
    LSTM (bias, initial state) -> reverse LSTM (no bias, no state) -> bidirectional LSTM."""
    inits, nodes = [], []

    def init(name, a):
        inits.append(numpy_helper.from_array(np.asarray(a), name))
        return name

    nodes.append(helper.make_node("Conv", ["x", init("w_stft", rand(20, 1, 32))], ["s"],
                                  name="stft", kernel_shape=[32], strides=[16]))
    nodes.append(helper.make_node("Relu", ["s"], ["sr"], name="stft_relu"))
    nodes.append(helper.make_node("Conv", ["sr", init("w_enc", rand(16, 20, 3)), init("b_enc", rand(16))],
                                  ["e"], name="enc", kernel_shape=[3], strides=[2], pads=[1, 1]))
    nodes.append(helper.make_node("Unsqueeze", ["e", init("ax2", np.array([2], np.int64))], ["e4"],
                                  name="to_2d"))
    nodes.append(helper.make_node("Conv", ["e4", init("w_2d", rand(12, 16, 3, 2)), init("b_2d", rand(12))],
                                  ["f"], name="conv2d", kernel_shape=[3, 2], pads=[1, 1, 1, 0]))
    nodes.append(helper.make_node("Sigmoid", ["f"], ["fs"], name="conv2d_sigmoid"))
    nodes.append(helper.make_node("Squeeze", ["fs", "ax2"], ["f3"], name="to_1d"))
    nodes.append(helper.make_node("Transpose", ["f3"], ["seq"], perm=[2, 0, 1], name="to_seq"))
    # Forward, with bias and initial state.
    nodes.append(helper.make_node(
        "LSTM", ["seq", init("W1", rand(1, 4 * H, 12)), init("R1", rand(1, 4 * H, H)),
                 init("B1", rand(1, 8 * H)), "", "h0", "c0"],
        ["y1", "h1", "c1"], hidden_size=H, name="lstm_fwd"))
    nodes.append(helper.make_node("Squeeze", ["y1", init("ax1", np.array([1], np.int64))], ["y1s"],
                                  name="sq1"))
    # Reverse, no bias, no state.
    nodes.append(helper.make_node(
        "LSTM", ["y1s", init("W2", rand(1, 4 * H, H)), init("R2", rand(1, 4 * H, H))],
        ["y2"], hidden_size=H, direction="reverse", name="lstm_rev"))
    nodes.append(helper.make_node("Squeeze", ["y2", "ax1"], ["y2s"], name="sq2"))
    # Bidirectional.
    nodes.append(helper.make_node(
        "LSTM", ["y2s", init("W3", rand(2, 4 * H, H)), init("R3", rand(2, 4 * H, H)),
                 init("B3", rand(2, 8 * H))],
        ["y", "y_h", "y_c"], hidden_size=H, direction="bidirectional", name="lstm_bi"))
    g = helper.make_graph(
        nodes, "detector",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 1, 80]),
         helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, 2, H]),
         helper.make_tensor_value_info("c0", TensorProto.FLOAT, [1, 2, H])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "y_h", "y_c", "h1", "c1")],
        inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("small") / "detector.onnx")
    onnx.save(detector(), path)
    return path


def test_plan_uses_the_small_graph_kernels(onyx_cli, model_path):
    p = subprocess.run([onyx_cli, "plan", model_path, "--json"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    impls = {s["node"]: s["impl"] for s in json.loads(p.stdout)["schedule"]}
    for n in ("lstm_fwd", "lstm_rev", "lstm_bi"):
        assert impls[n] == "LSTM_f32_hwy", impls
    # Whichever form the fusion and layout passes give them (Conv, FusedConv, NhwcConv).
    for n in ("stft", "enc", "conv2d"):
        assert impls[n].endswith("_f32_small_hwy"), impls


@pytest.mark.parametrize("threads", [1, 2])
def test_outputs_match_onnxruntime(model_path, threads):
    import onyx

    feeds = {"x": rand(2, 1, 80, scale=1.0), "h0": rand(1, 2, H, scale=0.5), "c0": rand(1, 2, H, scale=0.5)}
    want = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"]).run(None, feeds)
    so = onyx.SessionOptions()
    so.intra_op_num_threads = threads
    sess = onyx.InferenceSession(model_path, so)
    for _ in range(3):  # a 2-thread session may probe one thread: every run must agree
        got = sess.run(None, feeds)
        for g, w, name in zip(got, want, ("y", "y_h", "y_c", "h1", "c1")):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-6, err_msg=name)
