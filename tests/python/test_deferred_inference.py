"""An If branch or a Loop body whose shape inference fails for the model's shapes may never run
(Silero VAD's 8 kHz branch fed 16 kHz chunks; a loop whose trip count is 0): the session loads,
what can run runs, and the broken branch or body fails with its inference error only when a run
reaches it. One that must run (a constant condition, both branches broken, a constant trip count
of at least one) is still a load-time error."""
import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper

import onyx


def if_model(cond_const=None, break_then=False):
    """y = If(c): then Relu(x), else Unsqueeze(Squeeze(x, [2]), [2]) -- the else branch cannot
    squeeze axis 2 of x [1, 2, 3]. `cond_const` makes c a constant; `break_then` gives the then
    branch the same broken Squeeze."""
    x = helper.make_tensor_value_info("x", TP.FLOAT, [1, 2, 3])
    y = helper.make_tensor_value_info("y", TP.FLOAT, None)
    axes = helper.make_tensor("axes", TP.INT64, [1], [2])

    def broken(name):
        return helper.make_graph(
            [helper.make_node("Squeeze", ["x", "axes"], [name + "0"]),
             helper.make_node("Unsqueeze", [name + "0", "axes"], [name])],
            name, [], [helper.make_tensor_value_info(name, TP.FLOAT, None)], initializer=[axes])

    then_g = broken("t") if break_then else helper.make_graph(
        [helper.make_node("Relu", ["x"], ["t"])], "then", [],
        [helper.make_tensor_value_info("t", TP.FLOAT, None)])
    nodes, inputs = [], [x]
    if cond_const is None:
        inputs.append(helper.make_tensor_value_info("c", TP.BOOL, []))
    else:
        nodes.append(helper.make_node("Constant", [], ["c"], value=helper.make_tensor(
            "cv", TP.BOOL, [], [cond_const])))
    nodes.append(helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=broken("e")))
    g = helper.make_graph(nodes, "g", inputs, [y])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]).SerializeToString()


def test_untaken_broken_branch_loads_and_fails_only_when_taken():
    x = np.random.default_rng(0).standard_normal((1, 2, 3)).astype(np.float32)
    s = onyx.InferenceSession(if_model())
    np.testing.assert_array_equal(s.run(None, {"x": x, "c": np.array(True)})[0], np.maximum(x, 0))
    with pytest.raises(onyx.InvalidModel, match=r"else_branch.*cannot squeeze axis 2 of size 3"):
        s.run(None, {"x": x, "c": np.array(False)})
    # The session stays usable.
    np.testing.assert_array_equal(s.run(None, {"x": x, "c": np.array(True)})[0], np.maximum(x, 0))


def test_constant_condition_ignores_the_other_branch_and_refuses_a_broken_taken_one():
    x = np.random.default_rng(1).standard_normal((1, 2, 3)).astype(np.float32)
    s = onyx.InferenceSession(if_model(cond_const=True))
    np.testing.assert_array_equal(s.run(None, {"x": x})[0], np.maximum(x, 0))
    with pytest.raises(onyx.InvalidModel, match=r"cannot squeeze axis 2 of size 3"):
        onyx.InferenceSession(if_model(cond_const=False))


def test_both_branches_broken_is_a_load_error():
    with pytest.raises(onyx.InvalidModel, match=r"cannot squeeze axis 2 of size 3"):
        onyx.InferenceSession(if_model(break_then=True))


def loop_model(trip_count=None):
    """v_final = Loop(M, cond=true, v=x) with a body that squeezes axis 2 of v [1, 2, 3] (broken
    at these shapes) and unsqueezes it back; M is a graph input, or the constant `trip_count`."""
    x = helper.make_tensor_value_info("x", TP.FLOAT, [1, 2, 3])
    axes = helper.make_tensor("axes", TP.INT64, [1], [2])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond"], ["cond_out"]),
         helper.make_node("Squeeze", ["v", "axes"], ["v0"]),
         helper.make_node("Unsqueeze", ["v0", "axes"], ["v_out"])],
        "body",
        [helper.make_tensor_value_info("i", TP.INT64, []),
         helper.make_tensor_value_info("cond", TP.BOOL, []),
         helper.make_tensor_value_info("v", TP.FLOAT, [1, 2, 3])],
        [helper.make_tensor_value_info("cond_out", TP.BOOL, []),
         helper.make_tensor_value_info("v_out", TP.FLOAT, None)], initializer=[axes])
    nodes = [helper.make_node("Constant", [], ["t"], value=helper.make_tensor("tv", TP.BOOL, [], [True]))]
    inputs = [x]
    if trip_count is None:
        inputs.append(helper.make_tensor_value_info("M", TP.INT64, []))
    else:
        nodes.append(helper.make_node("Constant", [], ["M"], value=helper.make_tensor(
            "mv", TP.INT64, [], [trip_count])))
    nodes.append(helper.make_node("Loop", ["M", "t", "x"], ["y"], body=body))
    g = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TP.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]).SerializeToString()


def test_loop_body_that_may_not_run_fails_only_when_it_runs():
    x = np.random.default_rng(2).standard_normal((1, 2, 3)).astype(np.float32)
    s = onyx.InferenceSession(loop_model())
    # No iteration: the loop-carried value comes out as it went in (ONNX Loop semantics).
    np.testing.assert_array_equal(s.run(None, {"x": x, "M": np.array(0, np.int64)})[0], x)
    with pytest.raises(onyx.InvalidModel, match=r"cannot squeeze axis 2 of size 3"):
        s.run(None, {"x": x, "M": np.array(1, np.int64)})
    np.testing.assert_array_equal(s.run(None, {"x": x, "M": np.array(0, np.int64)})[0], x)


def test_loop_body_that_must_run_is_a_load_error():
    with pytest.raises(onyx.InvalidModel, match=r"cannot squeeze axis 2 of size 3"):
        onyx.InferenceSession(loop_model(trip_count=2))
