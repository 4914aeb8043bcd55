"""The shape-generic plan against ONNX Runtime at many shapes (docs/dynamic_shapes.md).

Models with symbolic [batch, seq] inputs, built here the way exporters write them (shape
arithmetic from Shape/Gather/Concat feeding Reshape, weight products with bias and activation,
attention scores and context as products of two computed tensors), run at shapes from one row to
a few hundred on:

- the shape-generic plan (new shapes; the oneDNN products make a primitive per row count or per
  shape at their first run, and small products take the generic kernel),
- plans made for each shape (specialize_after_runs=1),

and every output must match ONNX Runtime's within float32 rounding. The node tests cover each
operator at one shape only; this covers one plan at many.
"""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx

HIDDEN, HEADS, FFN = 64, 4, 128
SHAPES = [(1, 1), (1, 7), (2, 33), (1, 64), (3, 100), (1, 257), (2, 1), (1, 7)]


def _weights(rng, name, shape, scale=0.1):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def encoder_block():
    """x [batch, seq, HIDDEN] -> self-attention (heads split by a Reshape whose target shape is
    computed from Shape(x)), residual, LayerNorm, GELU feed-forward, residual."""
    rng = np.random.default_rng(7)
    head = HIDDEN // HEADS
    inits = [
        _weights(rng, "wq", (HIDDEN, HIDDEN)), _weights(rng, "wk", (HIDDEN, HIDDEN)),
        _weights(rng, "wv", (HIDDEN, HIDDEN)), _weights(rng, "wo", (HIDDEN, HIDDEN)),
        _weights(rng, "bq", (HIDDEN,)), _weights(rng, "w1", (HIDDEN, FFN)),
        _weights(rng, "b1", (FFN,)), _weights(rng, "w2", (FFN, HIDDEN)),
        numpy_helper.from_array(np.ones(HIDDEN, np.float32), "gamma"),
        numpy_helper.from_array(np.zeros(HIDDEN, np.float32), "beta"),
        numpy_helper.from_array(np.array(0, np.int64), "i0"),
        numpy_helper.from_array(np.array(1, np.int64), "i1"),
        numpy_helper.from_array(np.array([0], np.int64), "ax0"),
        numpy_helper.from_array(np.array([HEADS, head], np.int64), "heads_dims"),
        numpy_helper.from_array(np.array([HIDDEN], np.int64), "hidden_dim"),
        numpy_helper.from_array(np.array(1.0 / np.sqrt(head), np.float32), "scale"),
        numpy_helper.from_array(np.array(np.sqrt(0.5), np.float32), "rsqrt2"),
        numpy_helper.from_array(np.array(1.0, np.float32), "one"),
        numpy_helper.from_array(np.array(0.5, np.float32), "half"),
    ]
    n = helper.make_node
    nodes = [
        # [batch, seq] from the input's shape, twice (as exporters repeat x.shape).
        n("Shape", ["x"], ["sh1"]), n("Gather", ["sh1", "i0"], ["b"], axis=0),
        n("Shape", ["x"], ["sh2"]), n("Gather", ["sh2", "i1"], ["s"], axis=0),
        n("Unsqueeze", ["b", "ax0"], ["bu"]), n("Unsqueeze", ["s", "ax0"], ["su"]),
        n("Concat", ["bu", "su", "heads_dims"], ["split_shape"], axis=0),
        n("Concat", ["bu", "su", "hidden_dim"], ["merge_shape"], axis=0),
        n("MatMul", ["x", "wq"], ["q0"]), n("Add", ["q0", "bq"], ["q"]),
        n("MatMul", ["x", "wk"], ["k"]), n("MatMul", ["x", "wv"], ["v"]),
        n("Reshape", ["q", "split_shape"], ["qh"]), n("Transpose", ["qh"], ["qt"], perm=[0, 2, 1, 3]),
        n("Reshape", ["k", "split_shape"], ["kh"]), n("Transpose", ["kh"], ["kt"], perm=[0, 2, 3, 1]),
        n("Reshape", ["v", "split_shape"], ["vh"]), n("Transpose", ["vh"], ["vt"], perm=[0, 2, 1, 3]),
        n("MatMul", ["qt", "kt"], ["scores0"]), n("Mul", ["scores0", "scale"], ["scores"]),
        n("Softmax", ["scores"], ["probs"], axis=-1),
        n("MatMul", ["probs", "vt"], ["ctx"]), n("Transpose", ["ctx"], ["ctxt"], perm=[0, 2, 1, 3]),
        n("Reshape", ["ctxt", "merge_shape"], ["ctxm"]),
        n("MatMul", ["ctxm", "wo"], ["attn"]), n("Add", ["attn", "x"], ["res1"]),
        n("LayerNormalization", ["res1", "gamma", "beta"], ["ln"], axis=-1, epsilon=1e-5),
        n("MatMul", ["ln", "w1"], ["h0"]), n("Add", ["h0", "b1"], ["h"]),
        n("Mul", ["h", "rsqrt2"], ["hs"]), n("Erf", ["hs"], ["he"]), n("Add", ["he", "one"], ["h1"]),
        n("Mul", ["h", "h1"], ["h2"]), n("Mul", ["h2", "half"], ["gelu"]),
        n("MatMul", ["gelu", "w2"], ["f"]), n("Add", ["f", "ln"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "encoder_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", HIDDEN])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", HIDDEN]),
         helper.make_tensor_value_info("probs", TensorProto.FLOAT, None)],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             ir_version=8).SerializeToString()


@pytest.fixture(scope="module")
def model():
    return encoder_block()


@pytest.fixture(scope="module")
def ort_session(model):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("specialize_after_runs", [1000, 1])
def test_every_shape_matches_onnxruntime(model, ort_session, threads, specialize_after_runs):
    so = onyx.SessionOptions()
    so.intra_op_num_threads = threads
    so.specialize_after_runs = specialize_after_runs
    sess = onyx.InferenceSession(model, so)
    rng = np.random.default_rng(threads)
    for batch, seq in SHAPES:
        x = rng.standard_normal((batch, seq, HIDDEN)).astype(np.float32)
        want = ort_session.run(None, {"x": x})
        got = sess.run(None, {"x": x})
        for name, g, w in zip(("y", "probs"), got, want):
            assert g.shape == w.shape, (batch, seq, name)
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5,
                                       err_msg=f"{name} at batch {batch}, seq {seq}")
    stats = sess.get_shape_plan_stats()
    distinct = len(set(SHAPES))
    if specialize_after_runs == 1:
        assert stats["builds"] == distinct and stats["generic_runs"] == 0
    else:
        # Every run took the shape-generic plan: its products had fast kernels to run on.
        assert stats["builds"] == 0 and stats["generic_runs"] == len(SHAPES)
