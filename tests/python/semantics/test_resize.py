"""docs/semantics/resize.md: Resize against a float64 resize written from the ONNX formulas (the
coordinate modes, nearest rounding, linear and cubic taps, tf_crop_and_resize), ONNX Runtime for
antialias, and the stated messages. Resize has one kernel, Resize_ref, also the default."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto

import oracles
from semantics_util import U, cancelling, error_of, expect_kernel, one_node, ratio, rules, run

RNG = np.random.default_rng(91)
MODES = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric"]
SCALES = [[1, 1, 2.5, 1.5], [1, 1, 0.6, 0.75], [1, 1, 3, 3], [1, 1, 1, 0.2]]


def resize_model(xs, attrs, scales=None, sizes=None, roi=None, opset=19, elem=TensorProto.FLOAT):
    inits = [("roi", np.asarray([] if roi is None else roi, np.float32)),
             ("scales", np.asarray([] if scales is None else scales, np.float32))]
    if sizes is not None:
        inits.append(("sizes", np.asarray(sizes, np.int64)))
    return one_node("Resize", [("x", list(xs))], attrs, inits, opset=opset, elem=elem)


def f32(scales):
    return [float(v) for v in np.float32(scales)[2:]]


@rules("RESIZE-1", "RESIZE-2", "RESIZE-3", "RESIZE-10")
@pytest.mark.parametrize("ctm", MODES)
@pytest.mark.parametrize("scales", SCALES)
@pytest.mark.parametrize("nearest_mode", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
def test_nearest_is_an_exact_selection(onyx_cli, ctm, scales, nearest_mode):
    xs = [2, 3, 5, 7]
    attrs = {"mode": "nearest", "coordinate_transformation_mode": ctm, "nearest_mode": nearest_mode}
    model = resize_model(xs, attrs, scales)
    expect_kernel(onyx_cli, model, "Resize_ref")
    x = cancelling(RNG, xs)
    y = run(model, {"x": x})[0]
    assert y.shape[2:] == tuple(int(np.floor(d * s)) for d, s in zip(xs[2:], np.float32(scales)[2:]))
    want = oracles.resize_2d(x, y.shape[2:], f32(scales), "nearest", ctm, nearest_mode=nearest_mode)
    np.testing.assert_array_equal(y, want.astype(np.float32))


@rules("RESIZE-3")
@pytest.mark.parametrize("nearest_mode,want", [("round_prefer_floor", [0, 0, 1, 1, 2, 2, 3, 3]),
                                               ("round_prefer_ceil", [0, 1, 1, 2, 2, 3, 3, 3]),
                                               ("floor", [0, 0, 1, 1, 2, 2, 3, 3]),
                                               ("ceil", [0, 1, 1, 2, 2, 3, 3, 3])])
def test_nearest_rounding_by_hand(nearest_mode, want):
    # asymmetric, scale 2: coordinates 0, 0.5, 1, 1.5, ...: every other one a tie; 3.5 -> 4 clamps.
    x = np.array([[[[10, 11, 12, 13]]]], np.float32)
    m = resize_model([1, 1, 1, 4], {"mode": "nearest", "nearest_mode": nearest_mode,
                                    "coordinate_transformation_mode": "asymmetric"}, [1, 1, 1, 2])
    np.testing.assert_array_equal(run(m, {"x": x})[0].ravel(), np.array(want) + 10)


@rules("RESIZE-2", "RESIZE-4", "RESIZE-5", "RESIZE-11")
@pytest.mark.parametrize("mode,exclude", [("linear", 0), ("cubic", 0), ("cubic", 1)])
@pytest.mark.parametrize("ctm", MODES)
@pytest.mark.parametrize("scales", SCALES)
def test_linear_and_cubic_bound(mode, exclude, ctm, scales):
    xs = [2, 3, 5, 7]
    attrs = {"mode": mode, "coordinate_transformation_mode": ctm}
    if mode == "cubic":
        attrs.update(exclude_outside=exclude, cubic_coeff_a=-0.5 if exclude else -0.75)
    model = resize_model(xs, attrs, scales)
    taps = 2 if mode == "linear" else 4
    for x in (cancelling(RNG, xs, 1e3), RNG.standard_normal(xs).astype(np.float32)):
        y = run(model, {"x": x})[0]
        kw = dict(exclude_outside=bool(exclude), a=attrs.get("cubic_coeff_a", -0.75))
        exact = oracles.resize_2d(x, y.shape[2:], f32(scales), mode, ctm, **kw)
        scale = oracles.resize_2d(x, y.shape[2:], f32(scales), mode, ctm, absolute=True, **kw)
        assert y.shape == exact.shape
        assert ratio(y, exact, 2 * (taps + 2) * U * scale) <= 1.0


@rules("RESIZE-4")
def test_linear_by_hand():
    # half_pixel, scale 2 on [0, 4]: coordinates -0.25 (clamped to 0), 0.25, 0.75, 1.25 (clamped).
    x = np.array([[[[0, 4]]]], np.float32)
    m = resize_model([1, 1, 1, 2], {"mode": "linear"}, [1, 1, 1, 2])
    np.testing.assert_array_equal(run(m, {"x": x})[0].ravel(), [0, 1, 3, 4])


@rules("RESIZE-6")
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_tf_crop_and_resize(mode):
    xs = [1, 2, 6, 5]
    roi = [0, 0, -0.2, 0.1, 1, 1, 1.3, 0.8]
    attrs = {"mode": mode, "coordinate_transformation_mode": "tf_crop_and_resize",
             "extrapolation_value": 7.5}
    model = resize_model(xs, attrs, [1, 1, 1.5, 2], roi=roi)
    x = RNG.standard_normal(xs).astype(np.float32)
    y = run(model, {"x": x})[0]
    want = oracles.resize_2d(x, y.shape[2:], f32([1, 1, 1.5, 2]), mode, "tf_crop_and_resize",
                             extrapolation=7.5, rois=[(-0.2, 1.3), (0.1, 0.8)])
    assert np.any(want == 7.5) and np.any(want != 7.5)
    np.testing.assert_allclose(y, want, rtol=0, atol=8 * U * np.abs(x).max())


@rules("RESIZE-1")
def test_sizes_axes_and_aspect_ratio():
    x = RNG.standard_normal((1, 2, 4, 4)).astype(np.float32)
    cases = [({}, dict(sizes=[1, 2, 3, 5]), (1, 2, 3, 5)),
             ({"axes": [2, 3]}, dict(scales=[2, 3]), (1, 2, 8, 12)),
             ({"axes": [3]}, dict(sizes=[6]), (1, 2, 4, 6)),
             ({"keep_aspect_ratio_policy": "not_larger", "axes": [2, 3]}, dict(sizes=[3, 2]),
              (1, 2, 2, 2)),
             ({"keep_aspect_ratio_policy": "not_smaller", "axes": [2, 3]}, dict(sizes=[3, 2]),
              (1, 2, 3, 3)),
             # Without axes the policy spans every axis: s = 1/2, round(0.5) = 1, round(1) = 1.
             ({"keep_aspect_ratio_policy": "not_larger"}, dict(sizes=[1, 2, 3, 2]), (1, 1, 2, 2))]
    for attrs, inputs, shape in cases:
        m = resize_model([1, 2, 4, 4], dict(attrs, mode="nearest"), opset=19, **inputs)
        y = run(m, {"x": x})[0]
        assert y.shape == shape
        # Every output is an input of its channel (a nearest selection).
        for c in range(shape[1]):
            assert np.isin(y[0, c], x[0, c]).all()


@rules("RESIZE-7")
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_antialias_matches_onnxruntime(mode):
    xs = [1, 2, 12, 10]
    x = RNG.standard_normal(xs).astype(np.float32)
    m = resize_model(xs, {"mode": mode, "antialias": 1}, [1, 1, 0.5, 0.3], opset=18)
    y = run(m, {"x": x})[0]
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x})[0]
    plain = run(resize_model(xs, {"mode": mode}, [1, 1, 0.5, 0.3], opset=18), {"x": x})[0]
    assert np.abs(plain - want).max() > 1e-2  # antialias changes the result
    np.testing.assert_allclose(y, want, rtol=0, atol=32 * U * np.abs(x).max())


XS = {"x": np.zeros((1, 1, 2, 2), np.float32)}


@rules("RESIZE-8")
@pytest.mark.parametrize("inputs,message", [
    (dict(scales=[1, 1, 2, 2], sizes=[1, 1, 4, 4]),
     "inputs 2 'scales' and 3 'sizes' are both given; exactly one may be"),
    ({}, "one of inputs 'scales' and 'sizes' must be given"),
    (dict(scales=[2, 2]), "input 2 'scales' has 2 values; expected 4"),
    (dict(scales=[1, 1, 0, 2]), "scale 0 for axis 2 must be positive"),
    (dict(scales=[1, 1, -2, 2]), "scale -2 for axis 2 must be positive"),
])
def test_scales_and_sizes_errors(inputs, message):
    m = resize_model([1, 1, 2, 2], {}, **inputs)
    assert f"Resize node 'n0' (#0): {message}" in error_of(m, XS)


@rules("RESIZE-9")
@pytest.mark.parametrize("attr,message", [
    ("mode", "attribute 'mode' is 'bogus'; expected nearest, linear or cubic"),
    ("coordinate_transformation_mode", "attribute 'coordinate_transformation_mode' is 'bogus', "
                                       "which is not an ONNX coordinate transformation mode"),
    ("nearest_mode", "attribute 'nearest_mode' is 'bogus'; expected round_prefer_floor, "
                     "round_prefer_ceil, floor or ceil"),
])
def test_attribute_errors(attr, message):
    assert message in error_of(resize_model([1, 1, 2, 2], {attr: "bogus"}, [1, 1, 2, 2]), XS)


@rules("RESIZE-10")
@pytest.mark.parametrize("elem,dt", [(TensorProto.INT32, np.int32), (TensorProto.UINT8, np.uint8),
                                     (TensorProto.DOUBLE, np.float64)])
def test_nearest_other_types(elem, dt):
    x = RNG.integers(0, 200, (1, 2, 3, 4)).astype(dt)
    m = resize_model([1, 2, 3, 4], {"mode": "nearest"}, [1, 1, 2, 1.5], elem=elem)
    y = run(m, {"x": x})[0]
    want = oracles.resize_2d(x, y.shape[2:], f32([1, 1, 2, 1.5]), "nearest", "half_pixel")
    np.testing.assert_array_equal(y, want.astype(dt))
