"""ConvInteger on oneDNN (ConvInteger_8bit_onednn: raw int8 sums plus exact int32 corrections
for the zero points and the image's borders) against the ONNX reference evaluator, exactly:
uint8 and int8 X and W, scalar and per-channel weight zero points, X's zero point fed at run time
(as DynamicQuantizeLinear gives it), padding, strides, dilations, groups, auto_pad. The plan must
pick the oneDNN kernel where the CPU has VNNI; elsewhere the reference kernel runs the same cases."""

import zlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from qdq_models import plan_json

ONNX_TYPE = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8}


def model(x_shape, w, wz, x_type, attrs):
    inits = [numpy_helper.from_array(w, "w")]
    inputs = [helper.make_tensor_value_info("x", ONNX_TYPE[x_type], x_shape),
              helper.make_tensor_value_info("xz", ONNX_TYPE[x_type], [])]
    names = ["x", "w", "xz"]
    if wz is not None:
        inits.append(numpy_helper.from_array(wz, "wz"))
        names.append("wz")
    node = helper.make_node("ConvInteger", names, ["y"], name="conv", **attrs)
    g = helper.make_graph([node], "ci", inputs, [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 10)], ir_version=8)


def rand(rng, dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, shape).astype(dtype)


# (X shape, M, kernel, attrs, X type, W type, weight zero point: None | "scalar" | "channel")
CASES = {
    "ddddocr_first": ([1, 1, 64, 100], 24, 3, dict(pads=[1, 1, 1, 1], strides=[2, 2]), np.uint8, np.uint8, "scalar"),
    "pointwise_u8": ([2, 24, 9, 13], 48, 1, {}, np.uint8, np.uint8, "scalar"),
    "pads_u8_no_wz": ([1, 16, 10, 11], 32, 3, dict(pads=[1, 2, 0, 1]), np.uint8, np.uint8, None),
    "int8_x_int8_w_channel": ([1, 8, 12, 12], 16, 3, dict(pads=[1, 1, 1, 1]), np.int8, np.int8, "channel"),
    "uint8_x_int8_w": ([1, 8, 12, 12], 16, 3, dict(pads=[1, 1, 1, 1], dilations=[2, 2]), np.uint8, np.int8, "scalar"),
    "groups_channel_zero": ([1, 12, 11, 9], 24, 3, dict(group=3, pads=[1, 1, 1, 1], strides=[1, 2]), np.uint8,
                            np.uint8, "channel"),
    "depthwise": ([1, 16, 8, 8], 16, 3, dict(group=16, pads=[1, 1, 1, 1]), np.uint8, np.uint8, "scalar"),
    "same_upper": ([1, 4, 7, 10], 8, 4, dict(auto_pad="SAME_UPPER", strides=[2, 2]), np.uint8, np.uint8, "scalar"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_conv_integer_matches_the_onnx_reference_exactly(case, tmp_path, onyx_cli):
    import onyx

    x_shape, m, k, attrs, x_type, w_type, zero = CASES[case]
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    group = attrs.get("group", 1)
    w = rand(rng, w_type, (m, x_shape[1] // group, k, k))
    wz = None
    if zero == "scalar":
        wz = rand(rng, w_type, ())
    elif zero == "channel":
        wz = rand(rng, w_type, (m,))
    path = str(tmp_path / f"{case}.onnx")
    onnx.save(model(x_shape, w, wz, x_type, attrs), path)
    impls = [s["impl"] for s in plan_json(onyx_cli, path)["schedule"]]
    sess = onyx.InferenceSession(path)
    ref = ReferenceEvaluator(path)
    for xz in (rand(rng, x_type, ()), np.array(0, x_type)):
        feeds = {"x": rand(rng, x_type, x_shape), "xz": xz}
        got = sess.run(None, feeds)[0]
        want = ref.run(None, feeds)[0]
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, want)
    assert len(impls) == 1
    if impls[0] != "ConvInteger_8bit_onednn":  # no VNNI here: the reference ran the same cases
        assert impls[0] == "ConvInteger_ref" or "ref" in impls[0].lower(), impls
