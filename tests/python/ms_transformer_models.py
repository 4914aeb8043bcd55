"""Small random transformer models written in torch, in the shapes the Hugging Face modules take
(so that onnxruntime.transformers.optimizer fuses them into com.microsoft operators), exported
with the TorchScript ONNX exporter. Used by test_ms_transformers_ort.py, which runs this file
as a script under a Python that has torch when the test's own Python has none:

    python ms_transformer_models.py OUT_DIR    # writes bert.onnx and gpt2.onnx
"""
import math
import sys

import torch
from torch import nn

BERT_CFG = dict(vocab=97, hidden=64, heads=4, layers=2, intermediate=128, max_pos=32, type_vocab=2)
GPT2_CFG = dict(vocab=101, hidden=64, heads=4, layers=2, max_pos=32)


# ---- BERT (the layout of transformers' BertModel) ----

class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab"], c["hidden"])
        self.position_embeddings = nn.Embedding(c["max_pos"], c["hidden"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab"], c["hidden"])
        self.LayerNorm = nn.LayerNorm(c["hidden"], eps=1e-12)
        self.register_buffer("position_ids", torch.arange(c["max_pos"]).expand((1, -1)))

    def forward(self, input_ids, token_type_ids):
        seq = input_ids.size(1)
        position_ids = self.position_ids[:, :seq]
        x = (self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids) +
             self.position_embeddings(position_ids))
        return self.LayerNorm(x)


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads = c["heads"]
        self.head_size = c["hidden"] // c["heads"]
        self.query = nn.Linear(c["hidden"], c["hidden"])
        self.key = nn.Linear(c["hidden"], c["hidden"])
        self.value = nn.Linear(c["hidden"], c["hidden"])

    def split(self, x):
        return x.view(x.size()[:-1] + (self.heads, self.head_size)).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size) + mask
        ctx = torch.matmul(nn.functional.softmax(scores, dim=-1), v)
        ctx = ctx.permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.size()[:-2] + (self.heads * self.head_size,))


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertSelfAttention(c)
        self.attention_dense = nn.Linear(c["hidden"], c["hidden"])
        self.attention_norm = nn.LayerNorm(c["hidden"], eps=1e-12)
        self.intermediate = nn.Linear(c["hidden"], c["intermediate"])
        self.output = nn.Linear(c["intermediate"], c["hidden"])
        self.output_norm = nn.LayerNorm(c["hidden"], eps=1e-12)

    def forward(self, x, mask):
        a = self.attention_norm(self.attention_dense(self.attention(x, mask)) + x)
        h = nn.functional.gelu(self.intermediate(a))
        return self.output_norm(self.output(h) + a)


class Bert(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.layers = nn.ModuleList(BertLayer(c) for _ in range(c["layers"]))
        self.pooler = nn.Linear(c["hidden"], c["hidden"])

    def forward(self, input_ids, attention_mask, token_type_ids):
        mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        x = self.embeddings(input_ids, token_type_ids)
        for layer in self.layers:
            x = layer(x, mask)
        return x, torch.tanh(self.pooler(x[:, 0]))


# ---- GPT-2 (the layout of transformers' GPT2Model: Conv1D projections, a causal Where) ----

class Conv1D(nn.Module):
    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.05)
        self.bias = nn.Parameter(torch.randn(nf) * 0.05)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(size_out)


class GPT2Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        n = c["max_pos"]
        self.register_buffer("bias", torch.tril(torch.ones((n, n), dtype=torch.bool)).view(1, 1, n, n))
        self.register_buffer("masked_bias", torch.tensor(-1e4))
        self.heads = c["heads"]
        self.split_size = c["hidden"]
        self.c_attn = Conv1D(3 * c["hidden"], c["hidden"])
        self.c_proj = Conv1D(c["hidden"], c["hidden"])

    def split_heads(self, x, k=False):
        x = x.view(x.size()[:-1] + (self.heads, x.size(-1) // self.heads))
        return x.permute(0, 2, 3, 1) if k else x.permute(0, 2, 1, 3)

    def forward(self, x):
        q, k, v = self.c_attn(x).split(self.split_size, dim=2)
        q, k, v = self.split_heads(q), self.split_heads(k, k=True), self.split_heads(v)
        w = torch.matmul(q, k)
        w = w / (float(v.size(-1)) ** 0.5)
        nd, ns = w.size(-2), w.size(-1)
        w = torch.where(self.bias[:, :, ns - nd:ns, :ns], w, self.masked_bias.to(w.dtype))
        a = torch.matmul(nn.functional.softmax(w, dim=-1), v)
        a = a.permute(0, 2, 1, 3).contiguous()
        return self.c_proj(a.view(a.size()[:-2] + (a.size(-2) * a.size(-1),)))


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c["hidden"], eps=1e-5)
        self.attn = GPT2Attention(c)
        self.ln_2 = nn.LayerNorm(c["hidden"], eps=1e-5)
        self.c_fc = Conv1D(4 * c["hidden"], c["hidden"])
        self.c_proj = Conv1D(c["hidden"], 4 * c["hidden"])

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(gelu_new(self.c_fc(self.ln_2(x))))


class GPT2(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte = nn.Embedding(c["vocab"], c["hidden"])
        self.wpe = nn.Embedding(c["max_pos"], c["hidden"])
        self.h = nn.ModuleList(GPT2Block(c) for _ in range(c["layers"]))
        self.ln_f = nn.LayerNorm(c["hidden"], eps=1e-5)

    def forward(self, input_ids):
        pos = torch.arange(0, input_ids.size(-1), dtype=torch.long).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return torch.matmul(self.ln_f(x), self.wte.weight.t())


def export(out_dir):
    torch.manual_seed(0)
    batch_seq = {0: "batch", 1: "seq"}
    bert = Bert(BERT_CFG).eval()
    ids = torch.randint(0, BERT_CFG["vocab"], (2, 7))
    with torch.no_grad():
        torch.onnx.export(bert, (ids, torch.ones_like(ids), torch.zeros_like(ids)), f"{out_dir}/bert.onnx",
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["last_hidden_state", "pooler_output"], opset_version=17,
                          dynamic_axes={"input_ids": batch_seq, "attention_mask": batch_seq,
                                        "token_type_ids": batch_seq,
                                        "last_hidden_state": batch_seq, "pooler_output": {0: "batch"}},
                          do_constant_folding=True, dynamo=False)
    gpt2 = GPT2(GPT2_CFG).eval()
    with torch.no_grad():
        torch.onnx.export(gpt2, (torch.randint(0, GPT2_CFG["vocab"], (2, 6)),), f"{out_dir}/gpt2.onnx",
                          input_names=["input_ids"], output_names=["logits"], opset_version=17,
                          dynamic_axes={"input_ids": batch_seq, "logits": batch_seq},
                          do_constant_folding=True, dynamo=False)


if __name__ == "__main__":
    export(sys.argv[1])
