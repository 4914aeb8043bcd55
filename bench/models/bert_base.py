"""BERT-base encoder (12 layers, hidden 768, 12 heads, FFN 3072; batch 1, sequence 128) with
random weights, written the way older PyTorch exporters write it (opset 13, no fused ops):

- embeddings: Gather of word, position and token-type tables, summed, then LayerNorm;
- LayerNorm decomposed: ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul, Add;
- attention: MatMul + Add bias for Q, K and V, Reshape/Transpose to heads, MatMul, Div by
  sqrt(64), Add of the extended mask ((1 - mask) * -10000 unsqueezed to [B, 1, 1, S]), Softmax,
  MatMul, Transpose/Reshape back, output MatMul + Add, residual Add, LayerNorm;
- GELU as erf: Div by sqrt(2), Erf, Add 1, Mul by x, Mul by 0.5;
- pooler: the first token, MatMul + Add, Tanh.

Inputs: input_ids and attention_mask, int64 [1, 128]. Outputs: last_hidden_state [1, 128, 768]
and pooler_output [1, 768]. About 110M parameters (440 MB of float32), stored in the .onnx file.
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

VOCAB, MAX_POS, TYPES = 30522, 512, 2
HIDDEN, HEADS, FFN, LAYERS = 768, 12, 3072, 12
BATCH, SEQ = 1, 128
HEAD = HIDDEN // HEADS


class _Builder:
    def __init__(self, rng):
        self.rng = rng
        self.nodes, self.inits = [], []

    def init(self, name, array):
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, name, shape):
        # BERT's initializer_range.
        return self.init(name, self.rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02))

    def node(self, op, inputs, name, **attrs):
        self.nodes.append(helper.make_node(op, inputs, [name], name=f"{name}/{op}", **attrs))
        return name

    def linear(self, x, cin, cout, name):
        w = self.weight(f"{name}.weight", (cin, cout))
        b = self.weight(f"{name}.bias", (cout,))
        return self.node("Add", [self.node("MatMul", [x, w], f"{name}.matmul"), b], f"{name}.out")

    def layer_norm(self, x, name):
        # Trained LayerNorms are near the identity; not exactly it, so a wrong gamma/beta shows.
        g = self.init(f"{name}.weight", self.rng.uniform(0.8, 1.2, HIDDEN).astype(np.float32))
        b = self.weight(f"{name}.bias", (HIDDEN,))
        mean = self.node("ReduceMean", [x], f"{name}.mean", axes=[-1])
        d = self.node("Sub", [x, mean], f"{name}.sub")
        sq = self.node("Pow", [d, "const.two"], f"{name}.pow")
        var = self.node("ReduceMean", [sq], f"{name}.var", axes=[-1])
        std = self.node("Sqrt", [self.node("Add", [var, "const.ln_eps"], f"{name}.add_eps")],
                        f"{name}.std")
        n = self.node("Div", [d, std], f"{name}.norm")
        return self.node("Add", [self.node("Mul", [n, g], f"{name}.scale"), b], f"{name}.out")

    def gelu(self, x, name):
        e = self.node("Erf", [self.node("Div", [x, "const.sqrt2"], f"{name}.div")], f"{name}.erf")
        y = self.node("Mul", [x, self.node("Add", [e, "const.one"], f"{name}.add")], f"{name}.mul")
        return self.node("Mul", [y, "const.half"], f"{name}.out")

    def attention(self, x, mask, name):
        def heads(t, perm, nm):
            r = self.node("Reshape", [t, "const.heads_shape"], f"{nm}.reshape")
            return self.node("Transpose", [r], f"{nm}.transpose", perm=perm)

        q = heads(self.linear(x, HIDDEN, HIDDEN, f"{name}.query"), [0, 2, 1, 3], f"{name}.q")
        k = heads(self.linear(x, HIDDEN, HIDDEN, f"{name}.key"), [0, 2, 3, 1], f"{name}.k")
        v = heads(self.linear(x, HIDDEN, HIDDEN, f"{name}.value"), [0, 2, 1, 3], f"{name}.v")
        s = self.node("MatMul", [q, k], f"{name}.scores")
        s = self.node("Div", [s, "const.sqrt_head"], f"{name}.scaled")
        s = self.node("Add", [s, mask], f"{name}.masked")
        p = self.node("Softmax", [s], f"{name}.probs", axis=-1)
        c = self.node("MatMul", [p, v], f"{name}.context")
        c = self.node("Transpose", [c], f"{name}.context_t", perm=[0, 2, 1, 3])
        c = self.node("Reshape", [c, "const.hidden_shape"], f"{name}.context_r")
        return self.linear(c, HIDDEN, HIDDEN, f"{name}.output.dense")


def build(rng):
    b = _Builder(rng)
    for name, value in (("two", 2.0), ("ln_eps", 1e-12), ("sqrt2", 1.4142135381698608),
                        ("one", 1.0), ("half", 0.5), ("sqrt_head", float(np.sqrt(HEAD))),
                        ("mask_neg", -10000.0)):
        b.init(f"const.{name}", np.array(value, np.float32))
    b.init("const.heads_shape", np.array([0, 0, HEADS, HEAD], np.int64))
    b.init("const.hidden_shape", np.array([0, 0, HIDDEN], np.int64))
    b.init("const.axis1", np.array([1], np.int64))
    b.init("const.axis2", np.array([2], np.int64))
    b.init("const.first", np.array(0, np.int64))
    b.init("position_ids", np.arange(SEQ, dtype=np.int64).reshape(1, SEQ))
    b.init("token_type_ids", np.zeros((1, SEQ), np.int64))

    # Embeddings.
    word = b.node("Gather", [b.weight("embeddings.word", (VOCAB, HIDDEN)), "input_ids"],
                  "embeddings.word_out", axis=0)
    pos = b.node("Gather", [b.weight("embeddings.position", (MAX_POS, HIDDEN)), "position_ids"],
                 "embeddings.position_out", axis=0)
    typ = b.node("Gather", [b.weight("embeddings.token_type", (TYPES, HIDDEN)), "token_type_ids"],
                 "embeddings.token_type_out", axis=0)
    x = b.node("Add", [b.node("Add", [word, pos], "embeddings.sum1"), typ], "embeddings.sum")
    x = b.layer_norm(x, "embeddings.LayerNorm")

    # Extended attention mask: [B, S] int64 → [B, 1, 1, S] float, 0 kept, -10000 masked.
    m = b.node("Unsqueeze", ["attention_mask", "const.axis1"], "mask.unsqueeze1")
    m = b.node("Unsqueeze", [m, "const.axis2"], "mask.unsqueeze2")
    m = b.node("Cast", [m], "mask.float", to=TensorProto.FLOAT)
    m = b.node("Sub", ["const.one", m], "mask.inverted")
    mask = b.node("Mul", [m, "const.mask_neg"], "mask.extended")

    for i in range(LAYERS):
        name = f"encoder.layer.{i}"
        a = b.attention(x, mask, f"{name}.attention")
        x = b.layer_norm(b.node("Add", [a, x], f"{name}.attention.residual"),
                         f"{name}.attention.LayerNorm")
        h = b.gelu(b.linear(x, HIDDEN, FFN, f"{name}.intermediate.dense"), f"{name}.gelu")
        h = b.linear(h, FFN, HIDDEN, f"{name}.output.dense")
        x = b.layer_norm(b.node("Add", [h, x], f"{name}.output.residual"), f"{name}.output.LayerNorm")
    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output/Identity"))

    first = b.node("Gather", [x, "const.first"], "pooler.first_token", axis=1)
    pooled = b.linear(first, HIDDEN, HIDDEN, "pooler.dense")
    b.nodes.append(helper.make_node("Tanh", [pooled], ["pooler_output"], name="pooler/Tanh"))

    graph = helper.make_graph(
        b.nodes, "bert_base",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [BATCH, SEQ]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [BATCH, SEQ])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [BATCH, SEQ, HIDDEN]),
         helper.make_tensor_value_info("pooler_output", TensorProto.FLOAT, [BATCH, HIDDEN])],
        b.inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=7,
                             producer_name="onyx-bench")
