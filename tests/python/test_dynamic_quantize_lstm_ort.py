"""com.microsoft DynamicQuantizeLSTM (what onnxruntime's dynamic quantization makes of an LSTM,
ddddocr's older OCR model) against ONNX Runtime at one thread: forward, reverse, bidirectional,
batches, int8 and uint8 weights with per-direction and per-column scales, initial states, every
output. onyx quantizes the activations as ONNX Runtime does (X once, the hidden state every step),
so the outputs agree to float rounding (a float LSTM on the dequantized weights differs by about
1e-2). Attributes and inputs it does not implement are refused at load."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

import onyx

RNG = np.random.default_rng(71)


def dq_lstm_model(s, b, i, h, direction, wtype, per_column, initial, bias):
    d = 2 if direction == "bidirectional" else 1
    lo, hi, npt = (-127, 128, np.int8) if wtype == "int8" else (0, 256, np.uint8)
    shape = (d, 4 * h) if per_column else (d,)
    inits = {
        "W": RNG.integers(lo, hi, (d, i, 4 * h)).astype(npt),
        "R": RNG.integers(lo, hi, (d, h, 4 * h)).astype(npt),
        "ws": (RNG.random(shape) * 0.01 + 0.002).astype(np.float32),
        "wz": RNG.integers(lo // 8, hi // 8 if lo else 40, shape).astype(npt),
        "rs": (RNG.random(shape) * 0.01 + 0.002).astype(np.float32),
        "rz": RNG.integers(lo // 8, hi // 8 if lo else 40, shape).astype(npt),
    }
    if per_column:  # ONNX Runtime takes per-column zero points only when they are all zero
        inits["wz"][:] = 0
        inits["rz"][:] = 0
    if bias:
        inits["B"] = (RNG.standard_normal((d, 8 * h)) * 0.1).astype(np.float32)
    ins = ["X", "W", "R", "B" if bias else "", "", "h0" if initial else "", "c0" if initial else "",
           "", "ws", "wz", "rs", "rz"]
    node = helper.make_node("DynamicQuantizeLSTM", ins, ["Y", "Yh", "Yc"], domain="com.microsoft",
                            hidden_size=h, direction=direction)
    inputs = [helper.make_tensor_value_info("X", TP.FLOAT, [s, b, i])]
    if initial:
        inputs += [helper.make_tensor_value_info(n, TP.FLOAT, [d, b, h]) for n in ("h0", "c0")]
    g = helper.make_graph([node], "dq_lstm", inputs,
                          [helper.make_tensor_value_info(n, TP.FLOAT, None) for n in ("Y", "Yh", "Yc")],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                               helper.make_opsetid("com.microsoft", 1)]).SerializeToString()


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("wtype,per_column", [("int8", False), ("int8", True), ("uint8", False)])
@pytest.mark.parametrize("b,initial,bias", [(1, False, True), (3, True, True), (2, True, False)])
def test_matches_onnxruntime(direction, wtype, per_column, b, initial, bias):
    check(6, b, 10, 7, direction, wtype, per_column, initial, bias)


# Wide enough for the vector loops' blocks of columns (4H = 132: two blocks of 64 and a tail).
@pytest.mark.parametrize("wtype,per_column", [("int8", False), ("int8", True), ("uint8", False)])
def test_wide_gates_match_onnxruntime(wtype, per_column):
    check(5, 2, 70, 33, "bidirectional", wtype, per_column, True, True)


def check(s, b, i, h, direction, wtype, per_column, initial, bias):
    model = dq_lstm_model(s, b, i, h, direction, wtype, per_column, initial, bias)
    d = 2 if direction == "bidirectional" else 1
    feeds = {"X": RNG.standard_normal((s, b, i)).astype(np.float32)}
    if initial:
        feeds["h0"] = (RNG.standard_normal((d, b, h)) * 0.5).astype(np.float32)
        feeds["c0"] = (RNG.standard_normal((d, b, h)) * 0.5).astype(np.float32)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    want = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = onyx.InferenceSession(model, threads=1).run(None, feeds)
    for g, w, name in zip(got, want, ("Y", "Y_h", "Y_c")):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=name)
    # Two threads run a bidirectional LSTM's directions at once: the same bits.
    got2 = onyx.InferenceSession(model, threads=2).run(None, feeds)
    for g, g2, name in zip(got, got2, ("Y", "Y_h", "Y_c")):
        np.testing.assert_array_equal(g2, g, err_msg=name)


def test_unimplemented_attribute_is_refused_at_load():
    model = dq_lstm_model(2, 1, 3, 2, "forward", "int8", False, False, True)
    from onnx import load_from_string
    m = load_from_string(model)
    m.graph.node[0].attribute.append(helper.make_attribute("clip", 3.0))
    with pytest.raises(onyx.Unsupported, match=r"DynamicQuantizeLSTM.*'clip'"):
        onyx.InferenceSession(m.SerializeToString())
