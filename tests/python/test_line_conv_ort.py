"""2-D convolutions along a line -- a [k, 1] kernel on a width-1 map or [1, k] on a height-1 map,
as tf2onnx and jax2tf export 1-D convolutions (Magika) -- run on oneDNN as the 1-D convolutions
they are. Against ONNX Runtime: strides and pads along the line, groups, bias, a fused Relu, the
channels-last form the layout pass gives a chain of them, and 1 and 2 threads."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx

RNG = np.random.default_rng(11)


def line_conv_model(vertical, c, length, m, k, stride, pads, group):
    """x [1, c, length, 1] (vertical) or [1, c, 1, length] -> Conv(k along the line) + bias -> Relu
    -> a second line conv (channels-last between the two after the layout pass)."""
    def kshape(kk):
        return [kk, 1] if vertical else [1, kk]

    def along(a, b):
        return [a, 0, b, 0] if vertical else [0, a, 0, b]

    w1 = (RNG.standard_normal((m, c // group) + tuple(kshape(k))) * 0.2).astype(np.float32)
    w2 = (RNG.standard_normal((m, m) + tuple(kshape(3))) * 0.2).astype(np.float32)
    b1 = RNG.standard_normal(m).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=kshape(k),
                         strides=[stride, 1] if vertical else [1, stride], pads=along(*pads),
                         group=group),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["y"], kernel_shape=kshape(3), pads=along(1, 1)),
    ]
    xshape = [1, c, length, 1] if vertical else [1, c, 1, length]
    g = helper.make_graph(nodes, "line", [helper.make_tensor_value_info("x", TensorProto.FLOAT, xshape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
                           numpy_helper.from_array(w2, "w2")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString(), xshape


@pytest.mark.parametrize("vertical", [True, False])
@pytest.mark.parametrize("k,stride,pads,group", [(5, 1, (0, 0), 1), (5, 2, (2, 1), 1), (3, 1, (1, 1), 4)])
@pytest.mark.parametrize("threads", [1, 2])
def test_line_convolutions_match_onnxruntime(vertical, k, stride, pads, group, threads):
    model, xshape = line_conv_model(vertical, 32, 67, 48, k, stride, pads, group)
    x = RNG.standard_normal(xshape).astype(np.float32)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = onyx.InferenceSession(model, threads=threads).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
