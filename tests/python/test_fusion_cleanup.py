"""Exact removals (level basic) and per-channel affine chains (level all): Identity, inference
Dropout and no-op Cast vanish, Transpose and Reshape chains collapse, BatchNormalization and
Mul/Add chains (+ activation) become one ChannelAffine. Each fires on a minimal graph (fused and
unfused outputs agree within 1e-5, both match ONNX Runtime) and not where it would be wrong."""
import numpy as np
import pytest
from onnx import TensorProto

from fusion_check import check, model, node, plan

RNG = np.random.default_rng(13)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def test_identity_dropout_cast_removed(onyx_cli, tmp_path):
    inits = [("ratio", np.array(0.3, np.float32)), ("train", np.array(False))]
    m = model([node("Relu", ["x"], ["r"]), node("Identity", ["r"], ["i"]),
               node("Dropout", ["i", "ratio", "train"], ["d"]),
               node("Cast", ["d"], ["c"], to=TensorProto.FLOAT), node("Sigmoid", ["c"], ["y"])],
              [("x", [3, 4])], [("y", [3, 4])], inits, opset=13)
    p = check(onyx_cli, tmp_path, m, {"x": rand(3, 4)},
              fires=["RemoveIdentity", "RemoveDropout", "RemoveCast"])
    assert p["nodes"] == 2
    assert all(f["into"] is None for f in p["fusions"])  # removals, not merges
    # Removals are exact: level basic already does them.
    assert plan(onyx_cli, str(tmp_path / "model.onnx"), "basic")["nodes"] == 2


def test_identity_at_graph_output_moves_into_producer(onyx_cli, tmp_path):
    m = model([node("Relu", ["x"], ["r"]), node("Identity", ["r"], ["y"])], [("x", [3, 4])],
              [("y", [3, 4])])
    p = check(onyx_cli, tmp_path, m, {"x": rand(3, 4)}, fires=["RemoveIdentity"])
    assert p["nodes"] == 1 and p["schedule"][0]["outputs"][0]["name"] == "y"


def test_identity_kept_when_both_names_are_outputs(onyx_cli, tmp_path):
    m = model([node("Relu", ["x"], ["r"]), node("Identity", ["r"], ["y"])], [("x", [3, 4])],
              [("y", [3, 4]), ("r", [3, 4])])
    p = check(onyx_cli, tmp_path, m, {"x": rand(3, 4)}, absent=["RemoveIdentity"])
    assert p["nodes"] == 2


def test_cast_to_another_type_kept(onyx_cli, tmp_path):
    m = model([node("Cast", ["x"], ["c"], to=TensorProto.DOUBLE), node("Cast", ["c"], ["y"], to=1)],
              [("x", [3, 4])], [("y", [3, 4])])
    check(onyx_cli, tmp_path, m, {"x": rand(3, 4)}, absent=["RemoveCast"])


def test_training_dropout_kept(onyx_cli, tmp_path):
    m = model([node("Dropout", ["x", "ratio", "train"], ["y"], seed=3)], [("x", [3, 4])],
              [("y", [3, 4])], [("ratio", np.array(0.0, np.float32)), ("train", np.array(True))],
              opset=13)
    p = check(onyx_cli, tmp_path, m, {"x": rand(3, 4)}, absent=["RemoveDropout"])
    assert p["nodes"] == 1


@pytest.mark.parametrize("perm2,identity", [([1, 0, 2], True), ([2, 0, 1], False)])
def test_transposes_collapse(onyx_cli, tmp_path, perm2, identity):
    m = model([node("Transpose", ["x"], ["t1"], perm=[1, 0, 2]),
               node("Transpose", ["t1"], ["t2"], perm=perm2), node("Relu", ["t2"], ["y"])],
              [("x", [2, 3, 4])], [("y", list(np.transpose(np.zeros((3, 2, 4)), perm2).shape))])
    p = check(onyx_cli, tmp_path, m, {"x": rand(2, 3, 4)}, fires=["CollapseTranspose"])
    assert p["nodes"] == (1 if identity else 2)


def test_transpose_chain_kept_when_shared(onyx_cli, tmp_path):
    m = model([node("Transpose", ["x"], ["t1"], perm=[1, 0]), node("Transpose", ["t1"], ["y"]),
               node("Relu", ["t1"], ["r"])], [("x", [2, 3])], [("y", [2, 3]), ("r", [3, 2])])
    check(onyx_cli, tmp_path, m, {"x": rand(2, 3)}, absent=["CollapseTranspose"])


def test_reshape_chain_collapses(onyx_cli, tmp_path):
    inits = [("s1", np.array([6, 4], np.int64)), ("axes", np.array([0], np.int64))]
    m = model([node("Reshape", ["x", "s1"], ["r1"]), node("Flatten", ["r1"], ["f"], axis=0),
               node("Unsqueeze", ["f", "axes"], ["u"]), node("Relu", ["u"], ["y"])],
              [("x", [2, 3, 4])], [("y", [1, 1, 24])], inits, opset=13)
    p = check(onyx_cli, tmp_path, m, {"x": rand(2, 3, 4)}, fires=["CollapseReshape"])
    assert p["nodes"] == 2


def test_noop_reshape_removed(onyx_cli, tmp_path):
    m = model([node("Reshape", ["x", "s"], ["r"]), node("Relu", ["r"], ["y"])], [("x", [2, 3])],
              [("y", [2, 3])], [("s", np.array([2, -1], np.int64))])
    p = check(onyx_cli, tmp_path, m, {"x": rand(2, 3)}, fires=["RemoveReshape"])
    assert p["nodes"] == 1


# ---- per-channel affine chains ----
C = 5


def bn_inits():
    return [("gamma", RNG.uniform(0.5, 2, C).astype(np.float32)), ("beta", rand(C)),
            ("mean", rand(C)), ("var", RNG.uniform(0.1, 2, C).astype(np.float32))]


def test_densenet_preactivation_chain(onyx_cli, tmp_path):
    # BatchNormalization, Mul and Add by unsqueezed per-channel constants, Relu (DenseNet-121).
    inits = bn_inits() + [("s", rand(C)), ("t", rand(C)), ("axes", np.array([1, 2], np.int64))]
    m = model([node("BatchNormalization", ["x", "gamma", "beta", "mean", "var"], ["b"]),
               node("Unsqueeze", ["s", "axes"], ["su"]), node("Unsqueeze", ["t", "axes"], ["tu"]),
               node("Mul", ["b", "su"], ["m"]), node("Add", ["m", "tu"], ["a"]),
               node("Relu", ["a"], ["y"])],
              [("x", [2, C, 4, 3])], [("y", [2, C, 4, 3])], inits, opset=13)
    p = check(onyx_cli, tmp_path, m, {"x": rand(2, C, 4, 3)},
              fires=["BatchNormToAffine", "MulAddToAffine", "ChannelAffineActivation"])
    assert p["nodes"] == 1 and p["schedule"][0]["op"] == "ChannelAffine"


def test_mul_add_by_per_channel_constants(onyx_cli, tmp_path):
    m = model([node("Mul", ["x", "s"], ["m"]), node("Sub", ["m", "t"], ["a"]),
               node("LeakyRelu", ["a"], ["y"], alpha=0.1)],
              [("x", [2, C, 3])], [("y", [2, C, 3])], [("s", rand(C, 1)), ("t", rand(1, C, 1))])
    p = check(onyx_cli, tmp_path, m, {"x": rand(2, C, 3)},
              fires=["MulAddToAffine", "ChannelAffineActivation"])
    assert p["nodes"] == 1


def test_mul_add_not_when_not_per_channel(onyx_cli, tmp_path):
    m = model([node("Mul", ["x", "s"], ["m"]), node("Add", ["m", "t"], ["y"])],
              [("x", [2, C, 3])], [("y", [2, C, 3])], [("s", rand(3)), ("t", rand(C, 1))])
    check(onyx_cli, tmp_path, m, {"x": rand(2, C, 3)}, absent=["MulAddToAffine"])


def test_batchnorm_with_training_outputs_kept(onyx_cli, tmp_path):
    m = model([node("BatchNormalization", ["x", "gamma", "beta", "mean", "var"],
                    ["y", "rm", "rv"], training_mode=1)],
              [("x", [2, C, 3])], [("y", [2, C, 3]), ("rm", [C]), ("rv", [C])], bn_inits(),
              opset=15)
    check(onyx_cli, tmp_path, m, {"x": rand(2, C, 3)}, absent=["BatchNormToAffine"],
          compare_ort=False)
