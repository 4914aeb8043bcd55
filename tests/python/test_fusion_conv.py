"""Conv fusion rules: each must fire on a minimal graph (fused and unfused outputs agree within
1e-5, both match ONNX Runtime) and must not fire when the rewrite would be wrong: a shared
intermediate, a weight that is not constant, a wrong attribute or a broadcasting residual."""
import numpy as np
import pytest
from onnx import TensorProto

from fusion_check import check, model, node

RNG = np.random.default_rng(5)
N, C, M, H, W = 2, 4, 6, 7, 5


def conv_inits(bias=True, group=1):
    inits = [("W", RNG.standard_normal((M, C // group, 3, 3)).astype(np.float32))]
    if bias:
        inits.append(("B", RNG.standard_normal(M).astype(np.float32)))
    return inits


def bn_inits(channels=M):
    return [("gamma", RNG.uniform(0.5, 2, channels).astype(np.float32)),
            ("beta", RNG.standard_normal(channels).astype(np.float32)),
            ("mean", RNG.standard_normal(channels).astype(np.float32)),
            ("var", RNG.uniform(0.1, 3, channels).astype(np.float32))]


def conv(out="c", bias=True, group=1, x="x"):
    return node("Conv", [x, "W", "B"] if bias else [x, "W"], [out], pads=[1, 1, 1, 1], group=group)


def bn(x, out, **attrs):
    return node("BatchNormalization", [x, "gamma", "beta", "mean", "var"], [out], **attrs)


def feeds():
    return {"x": RNG.standard_normal((N, C, H, W)).astype(np.float32)}


Y = ("y", [N, M, H, W])


@pytest.mark.parametrize("bias,group", [(True, 1), (False, 1), (True, 2)])
def test_conv_batchnorm_relu(onyx_cli, tmp_path, bias, group):
    m = model([conv(bias=bias, group=group), bn("c", "b", epsilon=1e-3), node("Relu", ["b"], ["y"])],
              [("x", [N, C, H, W])], [Y], conv_inits(bias, group) + bn_inits(), opset=15)
    p = check(onyx_cli, tmp_path, m, feeds(), fires=["ConvBatchNorm", "ConvActivation"])
    assert p["nodes"] == 1 and p["fused_nodes"] == 2
    assert any(f["kind"] == "ConvBatchNorm" and f["nodes"] == ["c", "b"] for f in p["fusions"])


ACTIVATIONS = [
    ("Relu", {}, [], 17), ("LeakyRelu", {"alpha": 0.2}, [], 17), ("Sigmoid", {}, [], 17),
    ("Tanh", {}, [], 17), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, [], 17),
    ("HardSwish", {}, [], 17), ("Elu", {"alpha": 0.7}, [], 17), ("Softplus", {}, [], 17),
    ("Mish", {}, [], 18), ("Gelu", {}, [], 20), ("Gelu", {"approximate": "tanh"}, [], 20),
    ("Clip", {"min": 0.0, "max": 6.0}, [], 6),           # ReLU6, Clip-6 attributes
    ("Clip", {}, ["lo", "hi"], 13),                      # Clip-13 constant inputs
    ("Clip", {}, ["lo"], 13),                            # no upper bound
]


@pytest.mark.parametrize("op,attrs,extra,opset", ACTIVATIONS,
                         ids=[f"{a[0]}{i}" for i, a in enumerate(ACTIVATIONS)])
def test_conv_activation(onyx_cli, tmp_path, op, attrs, extra, opset):
    inits = conv_inits() + [("lo", np.array(-0.5, np.float32)), ("hi", np.array(1.5, np.float32))]
    m = model([conv(), node(op, ["c"] + extra, ["y"], **attrs)], [("x", [N, C, H, W])], [Y],
              inits, opset=opset)
    p = check(onyx_cli, tmp_path, m, feeds(), fires=["ConvActivation"])
    assert p["nodes"] == 1


def test_conv_activation_not_when_clip_bound_is_an_input(onyx_cli, tmp_path):
    m = model([conv(), node("Clip", ["c", "lo"], ["y"])], [("x", [N, C, H, W]), ("lo", [])], [Y],
              conv_inits(), opset=13)
    f = feeds()
    f["lo"] = np.array(0.1, np.float32)
    p = check(onyx_cli, tmp_path, m, f, absent=["ConvActivation"])
    assert p["nodes"] == 2


def test_conv_activation_not_when_conv_output_is_shared(onyx_cli, tmp_path):
    # c feeds the Relu and is a graph output: the Relu cannot absorb it.
    m = model([conv(), node("Relu", ["c"], ["y"])], [("x", [N, C, H, W])], [Y, ("c", [N, M, H, W])],
              conv_inits())
    check(onyx_cli, tmp_path, m, feeds(), absent=["ConvActivation"])
    m = model([conv(), node("Relu", ["c"], ["r"]), node("Add", ["r", "c"], ["y"])],
              [("x", [N, C, H, W])], [Y], conv_inits())
    check(onyx_cli, tmp_path, m, feeds(), absent=["ConvActivation"])


def test_conv_activation_not_for_double(onyx_cli, tmp_path):
    inits = [(n, v.astype(np.float64)) for n, v in conv_inits()]
    m = model([conv(), node("Relu", ["c"], ["y"])], [("x", [N, C, H, W], TensorProto.DOUBLE)],
              [("y", [N, M, H, W], TensorProto.DOUBLE)], inits)
    # ONNX Runtime has no double Conv: fused vs unfused onyx only.
    check(onyx_cli, tmp_path, m, {"x": feeds()["x"].astype(np.float64)}, absent=["ConvActivation"],
          compare_ort=False)


def test_conv_batchnorm_not_with_variable_weights(onyx_cli, tmp_path):
    m = model([conv(), bn("c", "y")], [("x", [N, C, H, W]), ("W", [M, C, 3, 3])], [Y],
              [("B", RNG.standard_normal(M).astype(np.float32))] + bn_inits(), opset=15)
    f = feeds()
    f["W"] = RNG.standard_normal((M, C, 3, 3)).astype(np.float32)
    check(onyx_cli, tmp_path, m, f, absent=["ConvBatchNorm"])


def test_conv_batchnorm_not_in_training_mode(onyx_cli, tmp_path):
    # training_mode = 1 normalizes with the batch statistics: folding the running ones is wrong.
    m = model([conv(), bn("c", "y", training_mode=1)], [("x", [N, C, H, W])], [Y],
              conv_inits() + bn_inits(), opset=15)
    check(onyx_cli, tmp_path, m, feeds(), absent=["ConvBatchNorm", "BatchNormToAffine"],
          compare_ort=False)


def test_conv_batchnorm_not_when_shared(onyx_cli, tmp_path):
    m = model([conv(), bn("c", "b"), node("Add", ["b", "c"], ["y"])], [("x", [N, C, H, W])], [Y],
              conv_inits() + bn_inits(), opset=15)
    check(onyx_cli, tmp_path, m, feeds(), absent=["ConvBatchNorm"])


@pytest.mark.parametrize("op", ["Add", "Sum"])
def test_conv_residual_relu(onyx_cli, tmp_path, op):
    m = model([conv(), node("Relu", ["x2"], ["r"]), node(op, ["r", "c"], ["s"]),
               node("Relu", ["s"], ["y"])],
              [("x", [N, C, H, W]), ("x2", [N, M, H, W])], [Y], conv_inits())
    f = feeds()
    f["x2"] = RNG.standard_normal((N, M, H, W)).astype(np.float32)
    p = check(onyx_cli, tmp_path, m, f, fires=["ConvResidual", "ConvActivation"])
    assert p["nodes"] == 2  # the Relu of x2 and one FusedConv


def test_conv_residual_not_when_broadcasting(onyx_cli, tmp_path):
    m = model([conv(), node("Add", ["c", "z"], ["y"])],
              [("x", [N, C, H, W]), ("z", [1, M, 1, 1])], [Y], conv_inits())
    f = feeds()
    f["z"] = RNG.standard_normal((1, M, 1, 1)).astype(np.float32)
    check(onyx_cli, tmp_path, m, f, absent=["ConvResidual"])


def test_conv_residual_not_after_activation(onyx_cli, tmp_path):
    # act(conv) + z is not FusedConv's act(conv + z).
    m = model([conv(), node("Relu", ["c"], ["r"]), node("Add", ["r", "z"], ["y"])],
              [("x", [N, C, H, W]), ("z", [N, M, H, W])], [Y], conv_inits())
    f = feeds()
    f["z"] = RNG.standard_normal((N, M, H, W)).astype(np.float32)
    p = check(onyx_cli, tmp_path, m, f, fires=["ConvActivation"], absent=["ConvResidual"])
    assert p["nodes"] == 2


def test_conv_per_channel_mul_add_fold(onyx_cli, tmp_path):
    inits = conv_inits() + [("s", RNG.uniform(0.5, 2, (M, 1, 1)).astype(np.float32)),
                            ("t", RNG.standard_normal((1, M, 1, 1)).astype(np.float32)),
                            ("u", np.array([0.25], np.float32))]
    m = model([conv(), node("Mul", ["s", "c"], ["m"]), node("Add", ["m", "t"], ["a"]),
               node("Sub", ["a", "u"], ["y"])], [("x", [N, C, H, W])], [Y], inits)
    p = check(onyx_cli, tmp_path, m, feeds(), fires=["ConvMul", "ConvBias"])
    assert p["nodes"] == 1


def test_conv_mul_not_when_spatially_varying(onyx_cli, tmp_path):
    inits = conv_inits() + [("s", RNG.uniform(0.5, 2, (1, 1, H, W)).astype(np.float32))]
    m = model([conv(), node("Mul", ["c", "s"], ["y"])], [("x", [N, C, H, W])], [Y], inits)
    check(onyx_cli, tmp_path, m, feeds(), absent=["ConvMul"])


@pytest.mark.parametrize("group", [1, 2])
def test_batchnorm_folds_into_the_following_unpadded_conv(onyx_cli, tmp_path, group):
    inits = conv_inits(True, group) + [
        ("gamma", RNG.uniform(0.5, 2, C).astype(np.float32)), ("beta", RNG.standard_normal(C).astype(np.float32)),
        ("mean", RNG.standard_normal(C).astype(np.float32)), ("var", RNG.uniform(0.1, 3, C).astype(np.float32))]
    m = model([bn("x", "b"), node("Conv", ["b", "W", "B"], ["y"], group=group)],
              [("x", [N, C, H, W])], [("y", [N, M, H - 2, W - 2])], inits, opset=15)
    p = check(onyx_cli, tmp_path, m, feeds(), fires=["ChannelAffineConv"])
    assert p["nodes"] == 1


def test_batchnorm_not_folded_into_a_padded_conv(onyx_cli, tmp_path):
    inits = conv_inits() + [
        ("gamma", RNG.uniform(0.5, 2, C).astype(np.float32)), ("beta", RNG.standard_normal(C).astype(np.float32)),
        ("mean", RNG.standard_normal(C).astype(np.float32)), ("var", RNG.uniform(0.1, 3, C).astype(np.float32))]
    m = model([bn("x", "b"), conv(x="b", out="y")], [("x", [N, C, H, W])], [Y], inits, opset=15)
    p = check(onyx_cli, tmp_path, m, feeds(), absent=["ChannelAffineConv"])
    assert p["nodes"] == 2
