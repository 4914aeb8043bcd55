"""Inputs whose shapes change (issue 14) through the Python API: the bounded cache of per-shape
plans (SessionOptions.max_shape_plans / max_shape_plan_bytes, get_shape_plan_stats), weights packed
once for every shape, and symbolic dims as ONNX means them. Expected values come from numpy."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx

STAT_KEYS = {
    "plans", "plan_bytes", "builds", "hits", "evictions", "packed_weight_bytes",
    "shared_constant_bytes", "free_arena_bytes", "max_shape_plans", "max_shape_plan_bytes",
    "generic_runs", "specialize_after_runs",
}


def make_model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def matmul_relu_model(w):
    """y = Relu(x @ W), x [N, 16] with N symbolic, W a [16, 24] initializer."""
    return make_model(
        [helper.make_node("MatMul", ["x", "W"], ["xw"]), helper.make_node("Relu", ["xw"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 24])],
        [numpy_helper.from_array(w, "W")],
    ).SerializeToString()


@pytest.fixture(scope="module")
def weights():
    return np.random.default_rng(14).standard_normal((16, 24)).astype(np.float32)


def session_with(model, **attrs):
    so = onyx.SessionOptions()
    for name, value in attrs.items():
        setattr(so, name, value)
    return onyx.InferenceSession(model, so, threads=1)


def run_and_check(sess, w, n, rng):
    x = rng.standard_normal((n, 16)).astype(np.float32)
    (y,) = sess.run(None, {"x": x})
    want = np.maximum(x.astype(np.float64) @ w.astype(np.float64), 0.0)
    assert y.shape == (n, 24)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)


def test_options_default_to_zero_and_show_in_repr():
    so = onyx.SessionOptions()
    assert so.max_shape_plans == 0 and so.max_shape_plan_bytes == 0
    so.max_shape_plans = 5
    assert "max_shape_plans=5" in repr(so)


def test_lru_cache_of_three_plans(weights):
    # specialize_after_runs=1: every new shape gets its own plan at once (no shape-generic runs).
    sess = session_with(matmul_relu_model(weights), max_shape_plans=3, specialize_after_runs=1)
    rng = np.random.default_rng(1)
    for n in range(1, 9):
        run_and_check(sess, weights, n, rng)
    stats = sess.get_shape_plan_stats()
    assert set(stats) == STAT_KEYS
    assert all(isinstance(v, int) for v in stats.values())
    assert stats["max_shape_plans"] == 3
    assert stats["max_shape_plan_bytes"] > 0  # 0 in the options resolves to a real bound
    # Eight new shapes, each planned once; a cache of three drops the five oldest; the plan for
    # the declared shape [N, 16] is kept besides the three.
    assert stats["builds"] == 8
    assert stats["evictions"] == 5
    assert stats["plans"] == 4
    assert stats["hits"] == 0
    # The three most recent shapes (6, 7, 8) are cached: running them again builds nothing.
    for n in (8, 7, 6):
        run_and_check(sess, weights, n, rng)
    again = sess.get_shape_plan_stats()
    assert (again["builds"], again["hits"], again["evictions"]) == (8, 3, 5)
    # N=1 was dropped: it is planned again, and the least recently used one (8) goes.
    run_and_check(sess, weights, 1, rng)
    again = sess.get_shape_plan_stats()
    assert (again["builds"], again["evictions"], again["plans"]) == (9, 6, 4)


def test_limits_from_environment(weights, monkeypatch):
    monkeypatch.setenv("ONYX_MAX_SHAPE_PLANS", "2")
    monkeypatch.setenv("ONYX_MAX_SHAPE_PLAN_BYTES", "3M")
    stats = session_with(matmul_relu_model(weights)).get_shape_plan_stats()
    assert (stats["max_shape_plans"], stats["max_shape_plan_bytes"]) == (2, 3 * 1024 * 1024)
    # The options win over the environment.
    stats = session_with(matmul_relu_model(weights), max_shape_plans=7,
                         max_shape_plan_bytes=5000).get_shape_plan_stats()
    assert (stats["max_shape_plans"], stats["max_shape_plan_bytes"]) == (7, 5000)


def test_weights_packed_once_for_all_shapes(weights):
    sess = session_with(matmul_relu_model(weights), specialize_after_runs=1)
    rng = np.random.default_rng(2)
    run_and_check(sess, weights, 1, rng)
    one = sess.get_shape_plan_stats()["packed_weight_bytes"]
    for n in range(2, 9):
        run_and_check(sess, weights, n, rng)
    eight = sess.get_shape_plan_stats()["packed_weight_bytes"]
    assert one > 0
    assert eight <= 2 * one


def test_each_question_mark_is_its_own_dim():
    # paddle2onnx's spelling: two '?' dims that are not the same unknown.
    shape = [-1, 3, "?", "?"]
    model = make_model([helper.make_node("Relu", ["x"], ["y"])],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    sess = onyx.InferenceSession(model.SerializeToString(), threads=1)
    x = np.random.default_rng(3).standard_normal((1, 3, 48, 192)).astype(np.float32)
    (y,) = sess.run(None, {"x": x})
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_shared_named_dim_must_agree():
    model = make_model(
        [helper.make_node("Add", ["ids", "mask"], ["y"])],
        [helper.make_tensor_value_info("ids", TensorProto.FLOAT, [1, "seq"]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, "seq"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seq"])])
    sess = onyx.InferenceSession(model.SerializeToString(), threads=1)
    ones = np.ones((1, 3), np.float32)
    (y,) = sess.run(None, {"ids": ones, "mask": ones})  # agreeing feeds run
    np.testing.assert_array_equal(y, np.full((1, 3), 2, np.float32))
    with pytest.raises(onyx.InvalidArgument) as e:
        sess.run(None, {"ids": ones, "mask": np.ones((1, 4), np.float32)})
    message = str(e.value)
    assert "ids" in message and "mask" in message and "seq" in message


def test_new_shapes_run_on_the_shape_generic_plan_first(weights):
    sess = session_with(matmul_relu_model(weights), specialize_after_runs=2)
    rng = np.random.default_rng(3)
    for n in (1, 5, 9, 33):
        run_and_check(sess, weights, n, rng)
    stats = sess.get_shape_plan_stats()
    assert (stats["builds"], stats["generic_runs"], stats["specialize_after_runs"]) == (0, 4, 2)
    run_and_check(sess, weights, 5, rng)  # the second run of [5, 16] plans it
    stats = sess.get_shape_plan_stats()
    assert (stats["builds"], stats["generic_runs"]) == (1, 4)


@pytest.mark.parametrize("name", ["max_shape_plans", "max_shape_plan_bytes",
                                  "specialize_after_runs"])
def test_bad_option_values(weights, name):
    model = matmul_relu_model(weights)
    with pytest.raises(ValueError, match=name) as e:
        session_with(model, **{name: -1})
    assert isinstance(e.value, onyx.InvalidArgument)
    for bad in ("x", 2.5, None, True):
        with pytest.raises(TypeError, match=name):
            session_with(model, **{name: bad})
    # The native module checks too, for callers that bypass InferenceSession.
    with pytest.raises(onyx.InvalidArgument, match=name):
        onyx._onyx.Session(model, **{name: -1})
