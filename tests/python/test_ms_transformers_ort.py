"""The com.microsoft transformer operators (what onnxruntime.transformers' optimizer and LLM
exporters write) against ONNX Runtime, which defines them: SkipLayerNormalization,
SkipSimplifiedLayerNormalization, SimplifiedLayerNormalization (default domain, as ORT registers
it), EmbedLayerNormalization, Gelu, BiasGelu, FastGelu, QuickGelu, BiasSplitGelu (no CPU kernel
in ORT: checked against its documented formula), Attention, MultiHeadAttention,
GroupQueryAttention, RotaryEmbedding and MatMulNBits. Each case is a one-node model (opsets ""
17 and com.microsoft 1) on random float32 inputs, run by ORT with graph optimisation off;
attribute values and inputs onyx does not implement must be refused when the session is created.
Every case runs onyx's fast kernels and, separately, its reference kernels. Then whole models:
a small BERT and a small GPT-2-like decoder written in torch, exported and optimised by
onnxruntime.transformers.optimizer; 4-bit MatMulNBits models (onnxruntime.quantization's
MatMulNBitsQuantizer and hand-packed); and an LLM-style decoder layer over a prompt and two
decoding steps."""
import math
import os
import subprocess
import sys
import zlib

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx

MS = "com.microsoft"
SEED = 2417
F32 = TensorProto.FLOAT
TOL = dict(rtol=1e-4, atol=1e-4)


def rng(*key):
    """A generator per case, so a failing case reproduces alone."""
    return np.random.default_rng([SEED, zlib.crc32(repr(key).encode())])


def randn(r, *shape, scale=1.0):
    return (r.standard_normal(shape) * scale).astype(np.float32)


def one_node_model(node, feeds, consts=None, outputs=None):
    """outputs: [(name, elem type)] of the node's outputs to declare (default: output 0 float)."""
    consts = consts or {}
    inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
              for n, a in feeds.items()]
    inits = [numpy_helper.from_array(np.asarray(a), n) for n, a in consts.items()]
    outputs = outputs or [(node.output[0], F32)]
    outs = [helper.make_tensor_value_info(n, t, None) for n, t in outputs]
    graph = helper.make_graph([node], "ms_t", inputs, outs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid(MS, 1)], ir_version=8)


def ort_run(model, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"]).run(None, feeds)


def onyx_run(model, feeds, reference=False):
    """reference: only each op's reference kernel (else its fast kernel, the first that takes it)."""
    return onyx.InferenceSession(model.SerializeToString(),
                                 reference_kernels=reference).run(None, feeds)


def compare(node, feeds, consts=None, outputs=None, tol=TOL):
    """onyx's fast kernel and its reference kernel, each against ORT."""
    model = one_node_model(node, feeds, consts, outputs)
    want = ort_run(model, feeds)
    for reference in (False, True):
        got = onyx_run(model, feeds, reference)
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            assert g.shape == w.shape, (i, g.shape, w.shape)
            assert g.dtype == w.dtype, (i, g.dtype, w.dtype)
            np.testing.assert_allclose(g, w, err_msg=f"output {i} (reference={reference})", **tol)


def refused(node, feeds, consts=None, outputs=None, match=None):
    """onyx refuses the model when the session is created, naming what it does not implement."""
    model = one_node_model(node, feeds, consts, outputs)
    with pytest.raises(Exception) as err:
        onyx.InferenceSession(model.SerializeToString())
    if match:
        assert match in str(err.value), str(err.value)


def ms_node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, domain=MS, name=f"{op}_0", **attrs)


# ---- SkipLayerNormalization, SkipSimplifiedLayerNormalization ----

SKIP_SHAPES = [((2, 5, 16), (2, 5, 16)), ((3, 7, 24), (1, 7, 24)), ((2, 4, 8), (4, 8)),
               ((6, 33), (6, 33))]


@pytest.mark.parametrize("shapes", SKIP_SHAPES, ids=str)
@pytest.mark.parametrize("beta", [False, True])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("extra_outputs", [0, 3])
def test_skip_layer_norm(shapes, beta, bias, extra_outputs):
    r = rng("sln", shapes, beta, bias, extra_outputs)
    xs, ss = shapes
    h = xs[-1]
    feeds = {"x": randn(r, *xs), "skip": randn(r, *ss)}
    consts = {"gamma": randn(r, h), "beta": randn(r, h), "bias": randn(r, h)}
    names = ["x", "skip", "gamma", "beta" if beta else "", "bias" if bias else ""]
    outs = ["y", "mean", "inv_std", "sum"][:1 + extra_outputs]
    attrs = {"epsilon": 1e-5} if beta else {}
    compare(ms_node("SkipLayerNormalization", names, outs, **attrs), feeds, consts,
            [(o, F32) for o in outs])


@pytest.mark.parametrize("shapes", SKIP_SHAPES, ids=str)
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("extra_outputs", [0, 3])
def test_skip_simplified_layer_norm(shapes, bias, extra_outputs):
    r = rng("ssln", shapes, bias, extra_outputs)
    xs, ss = shapes
    h = xs[-1]
    feeds = {"x": randn(r, *xs), "skip": randn(r, *ss)}
    consts = {"gamma": randn(r, h), "bias": randn(r, h)}
    names = ["x", "skip", "gamma", "bias" if bias else ""]
    outs = ["y", "mean", "inv_std", "sum"][:1 + extra_outputs]
    compare(ms_node("SkipSimplifiedLayerNormalization", names, outs, epsilon=1e-6), feeds, consts,
            [(o, F32) for o in outs])


@pytest.mark.parametrize("shape,axis", [((2, 5, 16), -1), ((3, 4, 6), 1), ((7, 9), -1), ((2, 3, 5), 0)],
                         ids=str)
@pytest.mark.parametrize("inv_std", [False, True])
def test_simplified_layer_norm(shape, axis, inv_std):
    r = rng("simpln", shape, axis, inv_std)
    x = randn(r, *shape)
    scale = randn(r, *shape[axis:])
    outs = ["y", "inv_std"] if inv_std else ["y"]
    node = helper.make_node("SimplifiedLayerNormalization", ["x", "scale"], outs, axis=axis,
                            epsilon=1e-5)
    compare(node, {"x": x}, {"scale": scale}, [(o, F32) for o in outs])


# ---- EmbedLayerNormalization ----

@pytest.mark.parametrize("segment", [False, True])
@pytest.mark.parametrize("mask", [False, True])
@pytest.mark.parametrize("position_ids", [None, "batch", "shared"])
def test_embed_layer_norm(segment, mask, position_ids):
    r = rng("eln", segment, mask, position_ids)
    b, s, h, vocab, max_pos = 3, 5, 16, 30, 9
    feeds = {"ids": r.integers(0, vocab, (b, s)).astype(np.int32)}
    consts = {"word": randn(r, vocab, h), "pos": randn(r, max_pos, h), "gamma": randn(r, h),
              "beta": randn(r, h), "seg": randn(r, 2, h)}
    names = ["ids", "", "word", "pos", "", "gamma", "beta", "", ""]
    if segment:
        feeds["segs"] = r.integers(0, 2, (b, s)).astype(np.int32)
        names[1], names[4] = "segs", "seg"
    if mask:
        feeds["mask"] = (r.random((b, s)) > 0.3).astype(np.int32)
        names[7] = "mask"
    if position_ids:
        feeds["pids"] = r.integers(0, max_pos, (b if position_ids == "batch" else 1, s)).astype(np.int32)
        names[8] = "pids"
    while names[-1] == "":
        names.pop()
    outs = [("y", F32), ("mask_index", TensorProto.INT32), ("emb_sum", F32)]
    compare(ms_node("EmbedLayerNormalization", names, [o for o, _ in outs], epsilon=1e-5), feeds,
            consts, outs)


# ---- Gelu family ----

@pytest.mark.parametrize("op", ["Gelu", "BiasGelu", "FastGelu", "FastGelu+bias", "QuickGelu",
                                "QuickGelu+alpha"])
@pytest.mark.parametrize("shape", [(2, 3, 16), (5, 37), (1, 130000)], ids=str)
def test_gelu_family(op, shape):
    r = rng("gelu", op, shape)
    x = randn(r, *shape, scale=3.0)
    feeds, consts, attrs = {"x": x}, {}, {}
    names = ["x"]
    base = op.split("+")[0]
    if base == "BiasGelu" or op == "FastGelu+bias":
        consts["b"] = randn(r, shape[-1])
        names.append("b")
    if op == "QuickGelu+alpha":
        attrs["alpha"] = 1.3
    compare(ms_node(base, names, ["y"], **attrs), feeds, consts)


@pytest.mark.parametrize("shape", [(2, 3, 16), (1, 4, 2560)], ids=str)
def test_bias_split_gelu(shape):
    """ORT has no CPU kernel for BiasSplitGelu: its documented formula is the oracle."""
    r = rng("bsg", shape)
    x, bias = randn(r, *shape), randn(r, shape[-1])
    model = one_node_model(ms_node("BiasSplitGelu", ["x", "b"], ["y"]), {"x": x}, {"b": bias})
    got = onyx_run(model, {"x": x}, reference=True)[0]
    v = (x + bias).astype(np.float64)
    left, right = np.split(v, 2, axis=-1)
    erf = np.vectorize(math.erf)
    want = left * 0.5 * right * (1 + erf(right / math.sqrt(2)))
    np.testing.assert_allclose(got, want.astype(np.float32), **TOL)


# ---- Attention (com.microsoft) ----

def attention_case(r, b, s, hin, heads, hidden, v_hidden, past, mask_kind):
    feeds = {"x": randn(r, b, s, hin)}
    cols = 2 * hidden + v_hidden
    consts = {"w": randn(r, hin, cols, scale=0.3), "bias": randn(r, cols, scale=0.3)}
    names = ["x", "w", "bias", "", "", ""]
    d = hidden // heads
    p = 3 if past else 0
    t = p + s
    if past:
        feeds["past"] = randn(r, 2, b, heads, p, d)
        names[4] = "past"
    if mask_kind == "lengths":
        feeds["mask"] = r.integers(1, t + 1, (b,)).astype(np.int32)
    elif mask_kind == "end_start":
        end = r.integers(t // 2 + 1, t + 1, (b,))
        start = r.integers(0, t // 2, (b,))
        feeds["mask"] = np.concatenate([end, start]).astype(np.int32)
    elif mask_kind == "raw2d":
        feeds["mask"] = (r.random((b, t)) > 0.3).astype(np.int32)
        feeds["mask"][:, 0] = 1
    elif mask_kind == "raw3d":
        feeds["mask"] = (r.random((b, s, t)) > 0.3).astype(np.int32)
    elif mask_kind == "attn_bias":
        feeds["ab"] = randn(r, b, heads, s, t)
        names[5] = "ab"
    elif mask_kind == "attn_bias_bcast":
        feeds["ab"] = randn(r, 1, 1, s, t)
        names[5] = "ab"
    if "mask" in feeds:
        names[3] = "mask"
    while names[-1] == "":
        names.pop()
    return feeds, consts, names


@pytest.mark.parametrize("mask_kind", [None, "lengths", "end_start", "raw2d", "raw3d", "attn_bias",
                                       "attn_bias_bcast"])
@pytest.mark.parametrize("unidirectional", [0, 1])
@pytest.mark.parametrize("past", [False, True])
def test_attention(mask_kind, unidirectional, past):
    if past and mask_kind and mask_kind.startswith("attn_bias"):
        pytest.skip("ORT refuses past together with attention_bias")
    r = rng("attn", mask_kind, unidirectional, past)
    b, s, hin, heads, hidden = 2, 5, 12, 4, 16
    feeds, consts, names = attention_case(r, b, s, hin, heads, hidden, hidden, past, mask_kind)
    outs = [("y", F32)] + ([("present", F32)] if past else [])
    compare(ms_node("Attention", names, [o for o, _ in outs], num_heads=heads,
                    unidirectional=unidirectional), feeds, consts, outs)


@pytest.mark.parametrize("variant", ["qkv_sizes", "scale", "mask_filter"])
def test_attention_attributes(variant):
    r = rng("attn_attr", variant)
    b, s, hin, heads = 2, 4, 8, 2
    attrs = {"num_heads": heads}
    hidden = v_hidden = 8
    mask_kind = None
    if variant == "qkv_sizes":
        v_hidden = 12
        attrs["qkv_hidden_sizes"] = [hidden, hidden, v_hidden]
    elif variant == "scale":
        attrs["scale"] = 0.21
    else:
        attrs["mask_filter_value"] = -50.0
        mask_kind = "raw2d"
    feeds, consts, names = attention_case(r, b, s, hin, heads, hidden, v_hidden, False, mask_kind)
    compare(ms_node("Attention", names, ["y"], **attrs), feeds, consts)


@pytest.mark.parametrize("attr,value", [("do_rotary", 1), ("past_present_share_buffer", 1)])
def test_attention_refuses(attr, value):
    r = rng("attn_refuse", attr)
    feeds, consts, names = attention_case(r, 1, 3, 8, 2, 8, 8, False, None)
    refused(ms_node("Attention", names, ["y"], num_heads=2, **{attr: value}), feeds, consts,
            match=attr)


def test_attention_refuses_4d_mask():
    """Megatron's 4-D mask [B, 1, max, max] is not implemented: refused at load."""
    r = rng("attn_refuse_mask")
    feeds, consts, names = attention_case(r, 1, 3, 8, 2, 8, 8, False, None)
    feeds["mask"] = np.ones((1, 1, 4, 4), np.int32)
    refused(ms_node("Attention", names + ["mask"], ["y"], num_heads=2), feeds, consts,
            match="mask")


# ---- MultiHeadAttention ----

@pytest.mark.parametrize("layout", ["separate", "packed_qkv", "packed_kv", "bnsh_kv"])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("mask_kind", [None, "lengths", "raw2d", "attn_bias"])
def test_multihead_attention(layout, bias, mask_kind):
    """ORT's CPU kernel has no packed QKV / KV layouts: onyx runs those on the packed data and
    is compared with ORT on the same values given separately."""
    if layout == "bnsh_kv" and bias:
        pytest.skip("bias with a 4-D key is refused (see test_multihead_attention_refuses)")
    r = rng("mha", layout, bias, mask_kind)
    b, s, kv, heads, d = 2, 4, 6, 3, 8
    h = heads * d
    if layout == "packed_qkv":
        kv = s
    q, k, v = randn(r, b, s, h), randn(r, b, kv, h), randn(r, b, kv, h)
    theirs = {"q": q, "k": k, "v": v}
    names = ["q", "k", "v", "", "", ""]
    if layout == "separate":
        ours, our_names = dict(theirs), list(names)
    elif layout == "packed_qkv":
        heads_of = lambda t: t.reshape(b, kv, heads, 1, d)  # noqa: E731
        ours = {"q": np.concatenate([heads_of(q), heads_of(k), heads_of(v)], axis=3)}
        our_names = ["q", "", "", "", "", ""]
    elif layout == "packed_kv":
        heads_of = lambda t: t.reshape(b, kv, heads, 1, d)  # noqa: E731
        ours = {"q": q, "k": np.concatenate([heads_of(k), heads_of(v)], axis=3)}
        our_names = ["q", "k", "", "", "", ""]
    else:
        bnsh = lambda t: np.ascontiguousarray(t.reshape(b, kv, heads, d).transpose(0, 2, 1, 3))  # noqa: E731
        theirs = {"q": q, "k": bnsh(k), "v": bnsh(v)}
        ours, our_names = dict(theirs), list(names)
    consts = {}
    extra = {}
    if bias:
        consts["bias"] = randn(r, 3 * h)
        names[3] = our_names[3] = "bias"
    if mask_kind == "lengths":
        extra["mask"] = r.integers(1, kv + 1, (b,)).astype(np.int32)
        names[4] = our_names[4] = "mask"
    elif mask_kind == "raw2d":
        extra["mask"] = (r.random((b, kv)) > 0.3).astype(np.int32)
        names[4] = our_names[4] = "mask"
    elif mask_kind == "attn_bias":
        extra["ab"] = randn(r, 1, heads, s, kv)
        names[5] = our_names[5] = "ab"
    theirs.update(extra)
    ours.update(extra)
    for n in (names, our_names):
        while n[-1] == "":
            n.pop()
    want = ort_run(one_node_model(ms_node("MultiHeadAttention", names, ["y"], num_heads=heads),
                                  theirs, consts), theirs)[0]
    ours_model = one_node_model(ms_node("MultiHeadAttention", our_names, ["y"], num_heads=heads),
                                ours, consts)
    for reference in (False, True):
        got = onyx_run(ours_model, ours, reference)[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, **TOL)


@pytest.mark.parametrize("unidirectional", [0, 1])
def test_multihead_attention_past(unidirectional):
    r = rng("mha_past", unidirectional)
    b, s, p, heads, d = 2, 3, 4, 2, 8
    h = heads * d
    feeds = {"q": randn(r, b, s, h), "k": randn(r, b, s, h), "v": randn(r, b, s, h),
             "pk": randn(r, b, heads, p, d), "pv": randn(r, b, heads, p, d)}
    names = ["q", "k", "v", "bias", "", "", "pk", "pv"]
    outs = [("y", F32), ("present_key", F32), ("present_value", F32)]
    compare(ms_node("MultiHeadAttention", names, [o for o, _ in outs], num_heads=heads,
                    unidirectional=unidirectional, scale=0.3),
            feeds, {"bias": randn(r, 3 * h)}, outs)


def test_multihead_attention_refuses():
    r = rng("mha_refuse")
    feeds = {"q": randn(r, 1, 2, 8), "k": randn(r, 1, 2, 2, 4), "v": randn(r, 1, 2, 2, 4)}
    refused(ms_node("MultiHeadAttention", ["q", "k", "v", "bias"], ["y"], num_heads=2), feeds,
            {"bias": randn(r, 24)}, match="bias")
    feeds = {"q": randn(r, 1, 2, 8), "k": randn(r, 1, 2, 8), "v": randn(r, 1, 2, 8),
             "ci": np.zeros((1, 1, 2), np.int32)}
    refused(ms_node("MultiHeadAttention", ["q", "k", "v", "", "", "", "", "", "", "ci"], ["y"],
                    num_heads=2), feeds, match="cache_indirection")


# ---- GroupQueryAttention ----

def gqa_case(r, b, s, past, heads, kv_heads, d, packed, rotary, interleaved=0, max_pos=32):
    feeds, consts = {}, {}
    names = [""] * 11
    if packed:
        feeds["q"] = randn(r, b, s, (heads + 2 * kv_heads) * d)
    else:
        feeds.update(q=randn(r, b, s, heads * d), k=randn(r, b, s, kv_heads * d),
                     v=randn(r, b, s, kv_heads * d))
        names[1:3] = ["k", "v"]
    names[0] = "q"
    if past:
        feeds.update(pk=randn(r, b, kv_heads, past, d), pv=randn(r, b, kv_heads, past, d))
        names[3:5] = ["pk", "pv"]
    total = past + s
    feeds["seqlens_k"] = np.full((b,), total - 1, np.int32)
    feeds["total"] = np.array(total, np.int32)
    names[5:7] = ["seqlens_k", "total"]
    if rotary:
        rot_half = d // 2 if rotary == "full" else d // 4
        angles = np.arange(max_pos)[:, None] * (1.0 / 10000 ** (np.arange(rot_half) / rot_half))
        consts.update(cos=np.cos(angles).astype(np.float32), sin=np.sin(angles).astype(np.float32))
        names[7:9] = ["cos", "sin"]
    while names[-1] == "":
        names.pop()
    return feeds, consts, names


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("past", [0, 5])
@pytest.mark.parametrize("s", [1, 4])
@pytest.mark.parametrize("rotary", [None, "full", "partial"])
@pytest.mark.parametrize("heads", [(4, 2), (4, 4), (6, 1)], ids=str)
def test_group_query_attention(packed, past, s, rotary, heads):
    if s == 1 and past == 0:
        past = 0  # a one-token prompt
    r = rng("gqa", packed, past, s, rotary, heads)
    # ORT's CPU kernel wants head sizes that are multiples of 16, and batch 1 for a multi-token
    # query with a past.
    # The partial rotation needs cos_cache columns that are a multiple of 8.
    b, d = (1 if past and s > 1 else 2), (32 if rotary == "partial" else 16)
    n, nkv = heads
    feeds, consts, names = gqa_case(r, b, s, past, n, nkv, d, packed, rotary)
    attrs = dict(num_heads=n, kv_num_heads=nkv)
    if rotary:
        attrs.update(do_rotary=1, rotary_interleaved=int(past > 0))
    outs = [("y", F32), ("present_key", F32), ("present_value", F32)]
    compare(ms_node("GroupQueryAttention", names, [o for o, _ in outs], **attrs), feeds, consts,
            outs)


@pytest.mark.parametrize("variant", ["window", "softcap", "scale", "attn_bias", "varlen"])
def test_group_query_attention_attributes(variant):
    r = rng("gqa_attr", variant)
    b, s, past, n, nkv, d = 2, 1, 6, 4, 2, 16
    feeds, consts, names = gqa_case(r, b, s, past, n, nkv, d, False, None)
    attrs = dict(num_heads=n, kv_num_heads=nkv)
    if variant == "window":
        attrs["local_window_size"] = 4
    elif variant == "softcap":
        attrs["softcap"] = 2.0
    elif variant == "scale":
        attrs["scale"] = 0.5
    elif variant == "attn_bias":
        feeds["ab"] = randn(r, b, 1, s, past + s)
        names += [""] * (11 - len(names))
        names[10] = "ab"
    else:
        # Batch 1 has two fewer tokens in its cache: its new token goes two rows earlier.
        feeds["seqlens_k"] = np.array([past + s - 1, past + s - 3], np.int32)
    outs = [("y", F32), ("present_key", F32), ("present_value", F32)]
    model = one_node_model(ms_node("GroupQueryAttention", names, [o for o, _ in outs], **attrs),
                           feeds, consts, outs)
    want = ort_run(model, feeds)
    got = onyx_run(model, feeds)
    np.testing.assert_allclose(got[0], want[0], **TOL)
    np.testing.assert_allclose(onyx_run(model, feeds, reference=True)[0], want[0], **TOL)
    if variant == "varlen":
        # Rows past each batch's sequence are unspecified in ORT's present (onyx writes zeros).
        for bi, total in enumerate(feeds["seqlens_k"] + 1):
            for i in (1, 2):
                np.testing.assert_allclose(got[i][bi, :, :total], want[i][bi, :, :total], **TOL)
    else:
        for i in (1, 2):
            np.testing.assert_allclose(got[i], want[i], **TOL)


@pytest.mark.parametrize("variant", ["padded_prompt", "position_ids"])
def test_group_query_attention_rotary_positions(variant):
    """A right-padded first prompt (the second sequence three tokens long) and explicit rotary
    position_ids in a decoding step."""
    r = rng("gqa_pos", variant)
    n, nkv, d = 4, 2, 16
    if variant == "padded_prompt":
        feeds, consts, names = gqa_case(r, 2, 5, 0, n, nkv, d, False, "full")
        feeds["seqlens_k"] = np.array([4, 2], np.int32)
    else:
        feeds, consts, names = gqa_case(r, 2, 1, 6, n, nkv, d, False, "full")
        feeds["pos"] = np.array([[6], [3]], np.int64)
        names = names + [""] * (10 - len(names))
        names[9] = "pos"
    outs = [("y", F32), ("present_key", F32), ("present_value", F32)]
    compare(ms_node("GroupQueryAttention", names, [o for o, _ in outs], num_heads=n,
                    kv_num_heads=nkv, do_rotary=1), feeds, consts, outs)


@pytest.mark.parametrize("attr,value", [("smooth_softmax", 1), ("qk_output", 1),
                                        ("k_quant_type", "PER_TENSOR"), ("kv_cache_bit_width", 8)])
def test_group_query_attention_refuses(attr, value):
    r = rng("gqa_refuse", attr)
    feeds, consts, names = gqa_case(r, 1, 2, 0, 2, 1, 16, False, None)
    refused(ms_node("GroupQueryAttention", names, ["y"], num_heads=2, kv_num_heads=1,
                    **{attr: value}), feeds, consts, match=attr)


# ---- RotaryEmbedding (com.microsoft) ----

@pytest.mark.parametrize("layout", ["bsh", "bnsd"])
@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("pos", ["offset", "full"])
@pytest.mark.parametrize("partial", [False, True])
def test_rotary_embedding(layout, interleaved, pos, partial):
    r = rng("rope", layout, interleaved, pos, partial)
    b, s, n, d, max_pos = 2, 5, 3, 16, 20
    rot = d // 2 if partial else d
    x = randn(r, b, s, n * d) if layout == "bsh" else randn(r, b, n, s, d)
    angles = r.uniform(-3, 3, (max_pos, rot // 2))
    consts = {"cos": np.cos(angles).astype(np.float32), "sin": np.sin(angles).astype(np.float32)}
    if pos == "offset":
        feeds = {"x": x, "pos": np.array([3], np.int64)}
    else:
        feeds = {"x": x, "pos": r.integers(0, max_pos, (b, s)).astype(np.int64)}
    attrs = {"interleaved": interleaved}
    if partial:
        attrs.update(rotary_embedding_dim=rot, num_heads=n)
    elif layout == "bsh" and r.random() < 0.5:
        attrs["num_heads"] = n
    compare(ms_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], **attrs), feeds, consts)


def test_rotary_embedding_refuses():
    r = rng("rope_refuse")
    feeds = {"x": randn(r, 1, 2, 8), "pos": np.array([0], np.int64)}
    consts = {"cos": randn(r, 4, 4), "sin": randn(r, 4, 4)}
    refused(ms_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], is_packed_batching=1),
            feeds, consts, match="is_packed_batching")


# ---- MatMulNBits ----

def quantize_nbits(r, k, n, bits, block, zp_kind):
    """Random packed weights in ORT's layout: B [N, k_blocks, blob] (low bits first), scales
    [N * k_blocks], zero points packed like B (uint8) or float [N * k_blocks]."""
    kb = (k + block - 1) // block
    levels = 1 << bits
    q = r.integers(0, levels, (n, kb * block)).astype(np.uint8)
    per_byte = 8 // bits
    packed = np.zeros((n, kb * block // per_byte), np.uint8)
    for i in range(per_byte):
        packed |= (q[:, i::per_byte] << (i * bits)).astype(np.uint8)
    consts = {"B": packed.reshape(n, kb, block * bits // 8),
              "scales": r.uniform(0.01, 0.1, n * kb).astype(np.float32)}
    if zp_kind == "u8":
        zq = r.integers(0, levels, (n, kb)).astype(np.uint8)
        row = (kb * bits + 7) // 8
        zp = np.zeros((n, row * per_byte), np.uint8)
        zp[:, :kb] = zq
        zpk = np.zeros((n, row), np.uint8)
        for i in range(per_byte):
            zpk |= (zp[:, i::per_byte] << (i * bits)).astype(np.uint8)
        consts["zp"] = zpk.reshape(-1)
    elif zp_kind == "float":
        consts["zp"] = r.uniform(0, levels - 1, n * kb).astype(np.float32)
    return consts


@pytest.mark.parametrize("bits", [4, 8, 2])
@pytest.mark.parametrize("block", [16, 32, 128])
@pytest.mark.parametrize("zp_kind", [None, "u8", "float"])
@pytest.mark.parametrize("kn,m", [((64, 48), (1,)), ((96, 20), (6,)), ((100, 33), (2, 7)),
                                  ((256, 96), (3, 5))], ids=str)
@pytest.mark.parametrize("bias", [False, True])
def test_matmul_nbits(bits, block, zp_kind, kn, m, bias):
    if zp_kind == "float" and bits == 8:
        pytest.skip("ORT's CPU kernel refuses float zero points with 8 bits")
    k, n = kn
    r = rng("nbits", bits, block, zp_kind, kn, m, bias)
    consts = quantize_nbits(r, k, n, bits, block, zp_kind)
    names = ["A", "B", "scales", "zp" if zp_kind else "", "", "bias" if bias else ""]
    if bias:
        consts["bias"] = randn(r, n)
    while names[-1] == "":
        names.pop()
    feeds = {"A": randn(r, *m, k)}
    node = ms_node("MatMulNBits", names, ["y"], K=k, N=n, bits=bits, block_size=block,
                   accuracy_level=r.choice([0, 1]))
    compare(node, feeds, consts, tol=dict(rtol=1e-4, atol=2e-4))


def test_matmul_nbits_runtime_weights():
    """B, scales and zero points fed at run time take the per-run dequantisation."""
    r = rng("nbits_rt")
    k, n = 64, 40
    consts = quantize_nbits(r, k, n, 4, 32, "u8")
    feeds = {"A": randn(r, 3, k), **consts}
    node = ms_node("MatMulNBits", ["A", "B", "scales", "zp"], ["y"], K=k, N=n, block_size=32)
    compare(node, feeds, tol=dict(rtol=1e-4, atol=2e-4))


@pytest.mark.parametrize("attr,value", [("weight_prepacked", 1), ("bits", 3)])
def test_matmul_nbits_refuses(attr, value):
    r = rng("nbits_refuse", attr)
    consts = quantize_nbits(r, 32, 8, 4, 16, None)
    attrs = dict(K=32, N=8, block_size=16, bits=4)
    attrs[attr] = value
    refused(ms_node("MatMulNBits", ["A", "B", "scales"], ["y"], **attrs), {"A": randn(r, 2, 32)},
            consts, match=attr)


def test_matmul_nbits_refuses_g_idx():
    r = rng("nbits_gidx")
    consts = quantize_nbits(r, 32, 8, 4, 16, None)
    consts["g_idx"] = np.zeros(32, np.int32)
    refused(ms_node("MatMulNBits", ["A", "B", "scales", "", "g_idx"], ["y"], K=32, N=8,
                    block_size=16), {"A": randn(r, 2, 32)}, consts, match="g_idx")


# ---- whole models ----

HERE = os.path.dirname(os.path.abspath(__file__))


def torch_python():
    """A Python that can import torch: this one, $ONYX_TORCH_PYTHON, the checkout's .venv, or the
    main checkout's .venv when this is a git worktree. None when there is none."""
    try:
        import torch  # noqa: F401
        return sys.executable
    except ImportError:
        pass
    root = os.path.dirname(os.path.dirname(HERE))
    candidates = [os.environ.get("ONYX_TORCH_PYTHON"), os.path.join(root, ".venv", "bin", "python")]
    try:
        common = subprocess.run(["git", "-C", root, "rev-parse", "--git-common-dir"], check=True,
                                capture_output=True, text=True).stdout.strip()
        main = os.path.dirname(os.path.abspath(os.path.join(root, common)))
        candidates.append(os.path.join(main, ".venv", "bin", "python"))
    except (OSError, subprocess.CalledProcessError):
        pass
    for python in filter(None, candidates):
        if os.path.exists(python) and subprocess.run(
                [python, "-c", "import torch"], capture_output=True).returncode == 0:
            return python
    return None


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """bert.onnx and gpt2.onnx exported from ms_transformer_models.py, then optimised by
    onnxruntime.transformers.optimizer into bert_opt.onnx and gpt2_opt.onnx."""
    try:
        from onnxruntime.transformers.optimizer import optimize_model
        import sympy  # noqa: F401  (the optimizer's symbolic shape inference needs it)
    except ImportError as e:
        pytest.skip(f"onnxruntime.transformers is unusable here: {e}")
    python = torch_python()
    if python is None:
        pytest.skip("no Python with torch (set ONYX_TORCH_PYTHON)")
    out = str(tmp_path_factory.mktemp("ms_models"))
    subprocess.run([python, "-W", "ignore", os.path.join(HERE, "ms_transformer_models.py"), out],
                   check=True, capture_output=True)
    for name in ("bert", "gpt2"):
        m = optimize_model(os.path.join(out, f"{name}.onnx"), model_type=name, num_heads=4,
                           hidden_size=64, opt_level=0)
        m.save_model_to_file(os.path.join(out, f"{name}_opt.onnx"))
    return out


def ms_ops(path):
    import onnx
    return {n.op_type for n in onnx.load(path).graph.node if n.domain == MS}


def compare_model(path, feeds, tol=TOL):
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = onyx.InferenceSession(path).run(None, feeds)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, err_msg=f"output {i}", **tol)


@pytest.mark.parametrize("batch,seq", [(1, 5), (3, 11)])
def test_bert_optimized(exported, batch, seq):
    path = os.path.join(exported, "bert_opt.onnx")
    assert {"EmbedLayerNormalization", "Attention", "SkipLayerNormalization",
            "BiasGelu"} <= ms_ops(path)
    r = rng("bert", batch, seq)
    mask = np.ones((batch, seq), np.int64)
    mask[batch - 1, seq // 2:] = 0  # right padding in the last sequence
    feeds = {"input_ids": r.integers(0, 97, (batch, seq)).astype(np.int64), "attention_mask": mask,
             "token_type_ids": r.integers(0, 2, (batch, seq)).astype(np.int64)}
    compare_model(path, feeds)


@pytest.mark.parametrize("batch,seq", [(1, 1), (2, 9)])
def test_gpt2_optimized(exported, batch, seq):
    path = os.path.join(exported, "gpt2_opt.onnx")
    assert {"Attention", "SkipLayerNormalization", "FastGelu"} <= ms_ops(path)
    r = rng("gpt2", batch, seq)
    compare_model(path, {"input_ids": r.integers(0, 101, (batch, seq)).astype(np.int64)})


def mlp_model(r, k, h, n):
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["hr"]),
             helper.make_node("MatMul", ["hr", "w2"], ["y"])]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", F32, ["batch", k])],
        [helper.make_tensor_value_info("y", F32, None)],
        [numpy_helper.from_array(randn(r, k, h, scale=0.2), "w1"),
         numpy_helper.from_array(randn(r, h, n, scale=0.2), "w2")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("symmetric", [True, False])
def test_matmul_nbits_quantizer_model(symmetric):
    """An MLP quantised by onnxruntime.quantization's MatMulNBitsQuantizer (4 bits, blocks of 32)."""
    try:
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    except ImportError as e:
        pytest.skip(f"MatMulNBitsQuantizer is unusable here: {e}")
    r = rng("nbits_model", symmetric)
    quantizer = MatMulNBitsQuantizer(mlp_model(r, 96, 128, 40), block_size=32,
                                     is_symmetric=symmetric)
    quantizer.process()
    model = quantizer.model.model
    assert sum(n.op_type == "MatMulNBits" for n in model.graph.node) == 2
    for batch in (1, 6):
        feeds = {"x": randn(r, batch, 96)}
        want = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        got = onyx_run(model, feeds)[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-4)


def test_matmul_nbits_hand_packed_model():
    """Two hand-packed 4-bit MatMulNBits layers (zero points, bias) around a Relu."""
    r = rng("nbits_hand")
    k, h, n = 128, 64, 24
    c1 = {f"l1_{key}": v for key, v in quantize_nbits(r, k, h, 4, 32, "u8").items()}
    c2 = {f"l2_{key}": v for key, v in quantize_nbits(r, h, n, 4, 16, None).items()}
    c2["l2_bias"] = randn(r, n)
    nodes = [ms_node("MatMulNBits", ["x", "l1_B", "l1_scales", "l1_zp"], ["h"], K=k, N=h,
                     block_size=32),
             helper.make_node("Relu", ["h"], ["hr"]),
             helper.make_node("MatMulNBits", ["hr", "l2_B", "l2_scales", "", "", "l2_bias"], ["y"],
                              domain=MS, K=h, N=n, block_size=16, accuracy_level=4)]
    graph = helper.make_graph(
        nodes, "nbits", [helper.make_tensor_value_info("x", F32, ["batch", "seq", k])],
        [helper.make_tensor_value_info("y", F32, None)],
        [numpy_helper.from_array(v, name) for name, v in {**c1, **c2}.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid(MS, 1)], ir_version=8)
    for shape in [(1, 1, k), (2, 7, k)]:
        feeds = {"x": randn(r, *shape)}
        # accuracy_level 4 lets ORT quantise A to int8; onyx stays in float32 (at least as
        # accurate), so the two agree to the quantisation of A.
        want = ort_run(model, feeds)[0]
        got = onyx_run(model, feeds)[0]
        np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2 * np.abs(want).max())


def llm_layer_model(r, hidden=64, heads=4, kv_heads=2, head=16, inter=128, max_pos=64):
    """One decoder layer as LLM exporters write it for CPU: RMS norms, 4-bit projections,
    GroupQueryAttention with rotary embedding and a KV cache, symbolic batch and lengths."""
    consts = {"ln1": randn(r, hidden), "ln2": randn(r, hidden)}
    nodes = [helper.make_node("SimplifiedLayerNormalization", ["x", "ln1"], ["h"], epsilon=1e-6)]

    def nbits(name, a, k, n, block):
        for key, v in quantize_nbits(r, k, n, 4, block, "u8").items():
            consts[f"{name}_{key}"] = v
        nodes.append(ms_node("MatMulNBits", [a, f"{name}_B", f"{name}_scales", f"{name}_zp"],
                             [name], K=k, N=n, block_size=block))
        nodes[-1].name = name

    nbits("qkv", "h", hidden, (heads + 2 * kv_heads) * head, 32)
    angles = np.arange(max_pos)[:, None] * (1.0 / 10000 ** (np.arange(head // 2) / (head // 2)))
    consts.update(cos=np.cos(angles).astype(np.float32), sin=np.sin(angles).astype(np.float32))
    nodes.append(ms_node("GroupQueryAttention",
                         ["qkv", "", "", "past_key", "past_value", "seqlens_k", "total", "cos", "sin"],
                         ["attn", "present_key", "present_value"], num_heads=heads,
                         kv_num_heads=kv_heads, do_rotary=1))
    nbits("o", "attn", heads * head, hidden, 16)
    nodes.append(ms_node("SkipSimplifiedLayerNormalization", ["o", "x", "ln2"],
                         ["h2", "", "", "residual"], epsilon=1e-6))
    nodes[-1].name = "skip_norm"
    nbits("up", "h2", hidden, inter, 32)
    nodes.append(ms_node("QuickGelu", ["up"], ["act"], alpha=1.702))
    nbits("down", "act", inter, hidden, 32)
    nodes.append(helper.make_node("Add", ["down", "residual"], ["y"]))
    f = helper.make_tensor_value_info
    graph = helper.make_graph(
        nodes, "llm_layer",
        [f("x", F32, ["batch", "seq", hidden]),
         f("past_key", F32, ["batch", kv_heads, "past", head]),
         f("past_value", F32, ["batch", kv_heads, "past", head]),
         f("seqlens_k", TensorProto.INT32, ["batch"]), f("total", TensorProto.INT32, [])],
        [f("y", F32, None), f("present_key", F32, None), f("present_value", F32, None)],
        [numpy_helper.from_array(v, k) for k, v in consts.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid(MS, 1)], ir_version=8)


def test_llm_decoder_layer():
    """A prompt, then two decoding steps fed with the presents, through one onyx session (its
    plans for each shape) and one ORT session."""
    r = rng("llm")
    model = llm_layer_model(r)
    so = ort.SessionOptions()
    theirs = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    ours = onyx.InferenceSession(model.SerializeToString())
    batch, kv_heads, head = 2, 2, 16
    past_k = past_v = np.zeros((batch, kv_heads, 0, head), np.float32)
    ours_k = ours_v = past_k
    length = 0
    for step, seq in enumerate([6, 1, 1]):
        length += seq
        feeds = {"x": randn(r, batch, seq, 64), "seqlens_k": np.full((batch,), length - 1, np.int32),
                 "total": np.array(length, np.int32)}
        want = theirs.run(None, {**feeds, "past_key": past_k, "past_value": past_v})
        got = ours.run(None, {**feeds, "past_key": ours_k, "past_value": ours_v})
        for i, (g, w) in enumerate(zip(got, want)):
            np.testing.assert_allclose(g, w, err_msg=f"step {step} output {i}", rtol=1e-4, atol=2e-4)
        past_k, past_v = want[1], want[2]
        ours_k, ours_v = got[1], got[2]
