"""Transformer patterns as exporters write them: the decomposed LayerNormalization, Add +
LayerNorm (SkipLayerNormalization), both GELU forms and scaled dot-product attention with its
head Reshape/Transpose. Each fires on a minimal graph (fused and unfused outputs agree within
1e-5, both match ONNX Runtime) and not on a near miss that would change the result."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from fusion_check import check, model, node

RNG = np.random.default_rng(17)
B, S, E = 2, 5, 8  # batch, sequence, hidden


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def consts():
    return [("two", np.array(2.0, np.float32)), ("eps", np.array(1e-5, np.float32)),
            ("gamma", RNG.uniform(0.5, 1.5, E).astype(np.float32)), ("beta", rand(E)),
            ("axes", np.array([-1], np.int64))]


def layer_norm_nodes(x, out, opset, square="pow", norm="div", affine="both", axes=(-1,)):
    def mean(inp, o):
        if opset >= 18:
            return node("ReduceMean", [inp, "axes"], [o])
        return node("ReduceMean", [inp], [o], axes=list(axes))
    nodes = [mean(x, "mu"), node("Sub", [x, "mu"], ["d"])]
    nodes.append(node("Pow", ["d", "two"], ["sq"]) if square == "pow" else node("Mul", ["d", "d"], ["sq"]))
    nodes += [mean("sq", "var"), node("Add", ["var", "eps"], ["ve"]), node("Sqrt", ["ve"], ["sd"])]
    last = "n" if affine == "none" else "n_"
    if norm == "div":
        nodes.append(node("Div", ["d", "sd"], [last]))
    else:
        nodes += [node("Reciprocal", ["sd"], ["rs"]), node("Mul", ["rs", "d"], [last])]
    if affine in ("scale", "both"):
        nodes.append(node("Mul", ["gamma", last], ["g" if affine == "both" else out]))
    if affine == "both":
        nodes.append(node("Add", ["g", "beta"], [out]))
    if affine == "none":
        nodes.append(node("Identity", ["n"], [out]))
    return nodes


@pytest.mark.parametrize("opset,square,norm,affine", [
    (13, "pow", "div", "both"), (18, "pow", "div", "both"), (13, "mul", "recip", "both"),
    (13, "pow", "div", "scale"), (13, "pow", "recip", "none")])
def test_decomposed_layer_norm(onyx_cli, tmp_path, opset, square, norm, affine):
    m = model(layer_norm_nodes("x", "y", opset, square, norm, affine), [("x", [B, S, E])],
              [("y", [B, S, E])], consts(), opset=opset)
    p = check(onyx_cli, tmp_path, m, {"x": rand(B, S, E) * 3 + 1}, fires=["LayerNormalization"])
    assert p["nodes"] == 1 and p["schedule"][0]["op"] == "LayerNormalization"


def test_layer_norm_over_two_trailing_axes(onyx_cli, tmp_path):
    inits = consts()[:2] + [("gamma", rand(S, E)), ("beta", rand(E))]
    m = model(layer_norm_nodes("x", "y", 13, axes=(-2, -1)), [("x", [B, S, E])], [("y", [B, S, E])],
              inits, opset=13)
    check(onyx_cli, tmp_path, m, {"x": rand(B, S, E)}, fires=["LayerNormalization"])


def test_layer_norm_not_over_a_leading_axis(onyx_cli, tmp_path):
    m = model(layer_norm_nodes("x", "y", 13, axes=(1,), affine="none"), [("x", [B, S, E])],
              [("y", [B, S, E])], consts(), opset=13)
    check(onyx_cli, tmp_path, m, {"x": rand(B, S, E)}, absent=["LayerNormalization"])


def test_layer_norm_not_when_variance_is_not_of_the_difference(onyx_cli, tmp_path):
    # Pow(x, 2) instead of Pow(x - mean, 2): a different formula.
    nodes = layer_norm_nodes("x", "y", 13)
    nodes[2] = node("Pow", ["x", "two"], ["sq"])
    m = model(nodes, [("x", [B, S, E])], [("y", [B, S, E])], consts(), opset=13)
    check(onyx_cli, tmp_path, m, {"x": rand(B, S, E)}, absent=["LayerNormalization"])


def test_skip_layer_norm_with_bias(onyx_cli, tmp_path):
    inits = [("gamma", rand(E)), ("beta", rand(E)), ("bias", rand(E))]
    m = model([node("Add", ["x", "bias"], ["xb"]), node("Add", ["skip", "xb"], ["s"]),
               node("LayerNormalization", ["s", "gamma", "beta"], ["y"], epsilon=1e-6)],
              [("x", [B, S, E]), ("skip", [B, S, E])], [("y", [B, S, E])], inits, opset=17)
    p = check(onyx_cli, tmp_path, m, {"x": rand(B, S, E), "skip": rand(B, S, E)},
              fires=["SkipLayerNormalization"])
    assert p["nodes"] == 1 and p["schedule"][0]["op"] == "SkipLayerNormalization"


def test_skip_layer_norm_not_when_skip_broadcasts(onyx_cli, tmp_path):
    m = model([node("Add", ["x", "skip"], ["s"]),
               node("LayerNormalization", ["s", "gamma"], ["y"])],
              [("x", [B, S, E]), ("skip", [1, S, E])], [("y", [B, S, E])], [("gamma", rand(E))],
              opset=17)
    check(onyx_cli, tmp_path, m, {"x": rand(B, S, E), "skip": rand(1, S, E)},
          absent=["SkipLayerNormalization"])


def test_skip_layer_norm_not_over_two_axes(onyx_cli, tmp_path):
    m = model([node("Add", ["x", "skip"], ["s"]),
               node("LayerNormalization", ["s", "gamma"], ["y"], axis=1)],
              [("x", [B, S, E]), ("skip", [B, S, E])], [("y", [B, S, E])], [("gamma", rand(S, E))],
              opset=17)
    # ONNX Runtime's own SkipLayerNorm fusion rejects this model, so onyx is compared to itself.
    check(onyx_cli, tmp_path, m, {"x": rand(B, S, E), "skip": rand(B, S, E)},
          absent=["SkipLayerNormalization"], compare_ort=False)


GELU_CONSTS = [("sqrt2", np.array(1.4142135, np.float32)), ("isqrt2", np.array(0.70710677, np.float32)),
               ("one", np.array(1.0, np.float32)), ("half", np.array(0.5, np.float32)),
               ("k", np.array(0.7978846, np.float32)), ("k3", np.array(0.044715, np.float32)),
               ("three", np.array(3.0, np.float32)), ("W", None)]


def gelu_erf(x, out, form, scale_in="div"):
    nodes = [node("Div", [x, "sqrt2"], ["e_in"]) if scale_in == "div"
             else node("Mul", ["isqrt2", x], ["e_in"]),
             node("Erf", ["e_in"], ["e"]), node("Add", ["one", "e"], ["e1"])]
    return nodes + half_times_x(x, "e1", out, form)


def gelu_tanh(x, out, form, cube="pow"):
    if cube == "jax2tf":  # x * (x * (k3 * x)), as jax2tf writes 0.044715 x^3 (Magika)
        nodes = [node("Mul", ["k3", x], ["kx"]), node("Mul", [x, "kx"], ["kx2"]),
                 node("Mul", [x, "kx2"], ["kx3"])]
    else:
        nodes = [node("Pow", [x, "three"], ["x3"]) if cube == "pow"
                 else node("Mul", [x, "xx"], ["x3"])]
        if cube != "pow":
            nodes.insert(0, node("Mul", [x, x], ["xx"]))
        nodes.append(node("Mul", ["x3", "k3"], ["kx3"]))
    nodes += [node("Add", [x, "kx3"], ["p"]),
              node("Mul", ["k", "p"], ["kp"]), node("Tanh", ["kp"], ["t"]),
              node("Add", ["t", "one"], ["e1"])]
    return nodes + half_times_x(x, "e1", out, form)


def half_times_x(x, inner, out, form):
    if form == 0:  # (x * inner) * 0.5
        return [node("Mul", [x, inner], ["xi"]), node("Mul", ["xi", "half"], [out])]
    if form == 1:  # (0.5 * x) * inner
        return [node("Mul", ["half", x], ["hx"]), node("Mul", [inner, "hx"], [out])]
    return [node("Mul", [inner, "half"], ["ih"]), node("Mul", [x, "ih"], [out])]  # x * (inner * 0.5)


def gelu_model(nodes):
    inits = [(n, v) for n, v in GELU_CONSTS if v is not None] + [("W", rand(E, E))]
    return model([node("MatMul", ["a", "W"], ["x"])] + nodes, [("a", [B, S, E])],
                 [("y", [B, S, E])], inits, opset=13)


@pytest.mark.parametrize("form", [0, 1, 2])
@pytest.mark.parametrize("scale_in", ["div", "mul"])
def test_gelu_erf(onyx_cli, tmp_path, form, scale_in):
    m = gelu_model(gelu_erf("x", "y", form, scale_in))
    p = check(onyx_cli, tmp_path, m, {"a": rand(B, S, E) * 2}, fires=["Gelu", "MatMulActivation"])
    assert p["nodes"] == 1


@pytest.mark.parametrize("form", [0, 1, 2])
@pytest.mark.parametrize("cube", ["pow", "mul", "jax2tf"])
def test_gelu_tanh(onyx_cli, tmp_path, form, cube):
    m = gelu_model(gelu_tanh("x", "y", form, cube))
    p = check(onyx_cli, tmp_path, m, {"a": rand(B, S, E) * 2}, fires=["Gelu", "MatMulActivation"])
    assert p["nodes"] == 1


def test_gelu_not_with_a_wrong_constant(onyx_cli, tmp_path):
    nodes = gelu_erf("x", "y", 0)
    nodes[-1] = node("Mul", ["xi", "one"], ["y"])  # x * (1 + erf) without the 0.5
    check(onyx_cli, tmp_path, gelu_model(nodes), {"a": rand(B, S, E)}, absent=["Gelu"])


# ---- attention ----
H, D = 2, 4


def attention_model(mask_shape=(B, 1, 1, S), scale_op="Div", k_form="perm", pv_extra=False):
    inits = [("Wq", rand(H * D, H * D)), ("Wk", rand(H * D, H * D)), ("Wv", rand(H * D, H * D)),
             ("heads", np.array([0, 0, H, D], np.int64)), ("hidden", np.array([0, 0, H * D], np.int64)),
             ("scale", np.array(np.sqrt(D) if scale_op == "Div" else 1 / np.sqrt(D), np.float32))]
    nodes = []
    for name, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1] if k_form == "perm" else [0, 2, 1, 3]),
                       ("v", [0, 2, 1, 3])):
        nodes += [node("MatMul", ["x", "W" + name], [name]),
                  node("Reshape", [name, "heads"], [name + "4"]),
                  node("Transpose", [name + "4"], [name + "h"], perm=perm)]
    k = "kh"
    if k_form == "two_transposes":
        nodes.append(node("Transpose", ["kh"], ["kt"], perm=[0, 1, 3, 2]))
        k = "kt"
    nodes.append(node("MatMul", ["qh", k], ["scores"]))
    s = "scores"
    if scale_op:
        nodes.append(node(scale_op, ["scores", "scale"], ["scaled"]))
        s = "scaled"
    inputs = [("x", [B, S, H * D])]
    if mask_shape is not None:
        nodes.append(node("Add", ["mask", s], ["masked"]))
        s = "masked"
        inputs.append(("mask", list(mask_shape)))
    nodes += [node("Softmax", [s], ["p"], axis=-1), node("MatMul", ["p", "vh"], ["ctx"]),
              node("Transpose", ["ctx"], ["ct"], perm=[0, 2, 1, 3]),
              node("Reshape", ["ct", "hidden"], ["y"])]
    return model(nodes, inputs, [("y", [B, S, H * D])], inits, opset=13)


def attention_feeds(mask_shape=(B, 1, 1, S)):
    f = {"x": rand(B, S, H * D)}
    if mask_shape is not None:
        mask = np.zeros(mask_shape, np.float32)
        mask[..., -2:] = -10000.0  # padding keys
        f["mask"] = mask
    return f


@pytest.mark.parametrize("mask_shape,scale_op,k_form", [
    ((B, 1, 1, S), "Div", "perm"), ((B, 1, 1, S), "Mul", "perm"), (None, "Div", "perm"),
    ((1, H, S, S), None, "perm"), ((B, 1, 1, S), "Div", "two_transposes")])
def test_attention(onyx_cli, tmp_path, mask_shape, scale_op, k_form):
    m = attention_model(mask_shape, scale_op, k_form)
    p = check(onyx_cli, tmp_path, m, attention_feeds(mask_shape), fires=["Attention"])
    ops = [s["op"] for s in p["schedule"]]
    assert ops.count("Attention") == 1 and "Softmax" not in ops, ops


def test_attention_not_when_mask_broadcasts_over_keys(onyx_cli, tmp_path):
    # A mask with one key column would mean something else to the Attention op.
    m = attention_model(mask_shape=(B, 1, S, 1))
    check(onyx_cli, tmp_path, m, attention_feeds((B, 1, S, 1)), absent=["Attention"])


def test_attention_not_when_probabilities_are_shared(onyx_cli, tmp_path):
    m = attention_model()
    m.graph.output.append(helper.make_tensor_value_info("p", TensorProto.FLOAT, [B, H, S, S]))
    check(onyx_cli, tmp_path, m, attention_feeds(), absent=["Attention"])


# ---- NaN rows of a masked softmax ----
def masked_softmax_model(fill, other=None):
    """Softmax over scores with row 1 masked entirely (-inf: NaN after the softmax), then
    Where(IsNaN(p), fill, p) as transformers' SDPA exports write it; `other` replaces p as the
    Where's third input."""
    mask = np.zeros((S, S), np.float32)
    mask[1, :] = -np.inf
    nodes = [node("Add", ["a", "mask"], ["scores"]), node("Softmax", ["scores"], ["p"], axis=-1),
             node("IsNaN", ["p"], ["nan"]), node("Where", ["nan", "fill", other or "p"], ["y"])]
    inits = [("mask", mask), ("fill", np.asarray(fill, np.float32))]
    return model(nodes, [("a", [B, S, S])], [("y", [B, S, S])], inits)


@pytest.mark.parametrize("fill", [0.0, -1.5])
def test_replace_nan_after_a_masked_softmax(onyx_cli, tmp_path, fill):
    p = check(onyx_cli, tmp_path, masked_softmax_model(fill), {"a": rand(B, S, S)},
              fires=["ReplaceNaN"])
    assert p["nodes"] == 3  # Add, Softmax, ReplaceNaN


def test_replace_nan_not_when_the_values_differ(onyx_cli, tmp_path):
    # Where(IsNaN(p), 0, scores): the kept values are not the tested ones.
    check(onyx_cli, tmp_path, masked_softmax_model(0.0, other="scores"), {"a": rand(B, S, S)},
          absent=["ReplaceNaN"])


def test_replace_nan_not_with_a_tensor_fill(onyx_cli, tmp_path):
    check(onyx_cli, tmp_path, masked_softmax_model(np.full((S,), 2.0)), {"a": rand(B, S, S)},
          absent=["ReplaceNaN"])
