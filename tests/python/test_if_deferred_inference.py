"""An If branch whose shape inference fails for the model's shapes may never run (Silero VAD's
8 kHz branch fed 16 kHz chunks): the session loads, the other branch runs, and the broken branch
fails with its inference error only when a run takes it. A branch that must run (a constant
condition, or both branches broken) is still a load-time error."""
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
