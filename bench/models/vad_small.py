"""A voice-activity detector of Silero VAD v5's size and shape, with random weights: the small-run
benchmark of bench/small_runs.py (issue 15). One call takes a 576-sample chunk (512 new samples
at 16 kHz and 64 of context) and the recurrent state, and returns a speech probability and the
next state, in about a tenth of a millisecond: the fixed cost of a run matters as much as the
kernels.

    x [1, 576] -> Reshape [1, 1, 576] -> Conv1d 1->258, kernel 256, stride 128 (a learned STFT)
      -> magnitude of 129 bins (Slice, Mul, Add, Sqrt) -> 4 x (Conv1d kernel 3 + ReLU):
         129->128, 128->64 stride 2, 64->64 stride 2, 64->128  -> [1, 128, 1]
      -> Transpose [1, 1, 128] -> LSTM 128 -> LSTM 128 (state h, c [2, 1, 128] in and out)
      -> ReLU -> Conv1d 128->1 kernel 1 -> Sigmoid -> prob [1, 1]

Opset 17. build(rng) returns the ModelProto; feeds(rng) one call's inputs.
"""
import math

import numpy as np
from onnx import TensorProto, helper, numpy_helper

CHUNK = 576
HIDDEN = 128
LAYERS = 2


def _he(rng, shape, fan_in):
    return (rng.standard_normal(shape, dtype=np.float32) * np.float32(math.sqrt(2.0 / fan_in)))


def build(rng):
    nodes, inits = [], []

    def init(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def conv(x, cin, cout, k, stride, name, relu=True, bias=True):
        ins = [x, init(f"{name}.weight", _he(rng, (cout, cin, k), cin * k))]
        if bias:
            ins.append(init(f"{name}.bias", rng.uniform(-0.1, 0.1, cout).astype(np.float32)))
        pads = [k // 2, k // 2] if k > 1 and name != "stft" else [0, 0]
        nodes.append(helper.make_node("Conv", ins, [f"{name}.out"], kernel_shape=[k],
                                      strides=[stride], pads=pads, name=name))
        if not relu:
            return f"{name}.out"
        nodes.append(helper.make_node("Relu", [f"{name}.out"], [f"{name}.relu"], name=f"{name}.relu"))
        return f"{name}.relu"

    init("shape3", np.array([1, 1, CHUNK], np.int64))
    nodes.append(helper.make_node("Reshape", ["x", "shape3"], ["x3"], name="reshape"))
    spec = conv("x3", 1, 258, 256, 128, "stft", relu=False, bias=False)  # [1, 258, 4]
    for name, lo, hi in (("re", 0, 129), ("im", 129, 258)):
        init(f"{name}.starts", np.array([lo], np.int64))
        init(f"{name}.ends", np.array([hi], np.int64))
        init(f"{name}.axes", np.array([1], np.int64))
        nodes.append(helper.make_node("Slice", [spec, f"{name}.starts", f"{name}.ends", f"{name}.axes"],
                                      [name], name=f"slice_{name}"))
        nodes.append(helper.make_node("Mul", [name, name], [f"{name}2"], name=f"square_{name}"))
    nodes.append(helper.make_node("Add", ["re2", "im2"], ["power"], name="power"))
    nodes.append(helper.make_node("Sqrt", ["power"], ["mag"], name="magnitude"))
    h = conv("mag", 129, 128, 3, 1, "enc0")
    h = conv(h, 128, 64, 3, 2, "enc1")
    h = conv(h, 64, 64, 3, 2, "enc2")
    h = conv(h, 64, 128, 3, 1, "enc3")  # [1, 128, 1]
    nodes.append(helper.make_node("Transpose", [h], ["seq"], perm=[2, 0, 1], name="to_seq"))
    # Two single-layer LSTMs (as exporters write a 2-layer nn.LSTM), state [2, 1, 128] split by layer.
    init("split2", np.array([1, 1], np.int64))
    nodes.append(helper.make_node("Split", ["h", "split2"], ["h0", "h1"], axis=0, name="split_h"))
    nodes.append(helper.make_node("Split", ["c", "split2"], ["c0", "c1"], axis=0, name="split_c"))
    x = "seq"
    hn, cn = [], []
    for layer in range(LAYERS):
        scale = 1.0 / math.sqrt(HIDDEN)
        w = rng.uniform(-scale, scale, (1, 4 * HIDDEN, HIDDEN)).astype(np.float32)
        r = rng.uniform(-scale, scale, (1, 4 * HIDDEN, HIDDEN)).astype(np.float32)
        b = rng.uniform(-scale, scale, (1, 8 * HIDDEN)).astype(np.float32)
        nodes.append(helper.make_node(
            "LSTM", [x, init(f"lstm{layer}.W", w), init(f"lstm{layer}.R", r),
                     init(f"lstm{layer}.B", b), "", f"h{layer}", f"c{layer}"],
            [f"y{layer}", f"hn{layer}", f"cn{layer}"], hidden_size=HIDDEN, name=f"lstm{layer}"))
        init(f"squeeze_axis{layer}", np.array([1], np.int64))
        nodes.append(helper.make_node("Squeeze", [f"y{layer}", f"squeeze_axis{layer}"],
                                      [f"ys{layer}"], name=f"squeeze{layer}"))
        x = f"ys{layer}"
        hn.append(f"hn{layer}")
        cn.append(f"cn{layer}")
    nodes.append(helper.make_node("Concat", hn, ["hn"], axis=0, name="concat_h"))
    nodes.append(helper.make_node("Concat", cn, ["cn"], axis=0, name="concat_c"))
    nodes.append(helper.make_node("Transpose", [x], ["dec_in"], perm=[1, 2, 0], name="to_channels"))
    nodes.append(helper.make_node("Relu", ["dec_in"], ["dec_relu"], name="dec_relu"))
    d = conv("dec_relu", HIDDEN, 1, 1, 1, "decoder", relu=False)
    nodes.append(helper.make_node("Sigmoid", [d], ["prob3"], name="sigmoid"))
    init("shape2", np.array([1, 1], np.int64))
    nodes.append(helper.make_node("Reshape", ["prob3", "shape2"], ["prob"], name="prob"))
    graph = helper.make_graph(
        nodes, "vad_small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, CHUNK]),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, [LAYERS, 1, HIDDEN]),
         helper.make_tensor_value_info("c", TensorProto.FLOAT, [LAYERS, 1, HIDDEN])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 1]),
         helper.make_tensor_value_info("hn", TensorProto.FLOAT, [LAYERS, 1, HIDDEN]),
         helper.make_tensor_value_info("cn", TensorProto.FLOAT, [LAYERS, 1, HIDDEN])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="onyx-bench")
    model.ir_version = 8
    return model


def feeds(rng):
    """One call's inputs: a chunk of noise and a zero state."""
    return {"x": rng.uniform(-0.5, 0.5, (1, CHUNK)).astype(np.float32),
            "h": np.zeros((LAYERS, 1, HIDDEN), np.float32),
            "c": np.zeros((LAYERS, 1, HIDDEN), np.float32)}
