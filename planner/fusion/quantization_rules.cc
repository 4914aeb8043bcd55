// Quantized islands (optimization level all), as ONNX Runtime's QDQ transformer reads them: a
// float Conv between DequantizeLinear and QuantizeLinear nodes
//
//   Q(Conv(DQ(xq, xs, xz), DQ(wq, ws, 0), DQ(bq, xs * ws, 0)), ys, yz)      [a Relu before Q too]
//
// becomes QLinearConv(xq, xs, xz, wq, ws, 0, ys, yz, bq), which runs on int8 kernels with the
// activations kept 8-bit. The float graph computes round((conv(xs (xq - xz), ws wq) + bs bq) / ys)
// + yz; QLinearConv computes round((sum (xq - xz) wq + bq) xs ws / ys) + yz: the same value in
// exact arithmetic, and within one quantization step in floating point (ONNX Runtime's int8
// kernels make the same substitution). A Relu before the Q is dropped when the Q's zero point
// is its type's minimum: every negative value saturates to it anyway.
//
// The planner leaves the weight and bias DequantizeLinear nodes of Conv, Gemm and MatMul
// unfolded for these rules (planner.cc); where no rule applies, ConstantFold folds them.
//
// Gemm / MatMul of a dequantized activation and dequantized constant int8 weights becomes
// com.microsoft MatMulIntegerToFloat (the Q after it, if any, stays). Reshape, Transpose and the
// like, and MaxPool, between a DQ and a Q of the same scale and zero point run on the 8-bit
// values (QdqMovingOp).
//
// onnxruntime.quantization's dynamic MatMul (DynamicQuantizeLinear -> MatMulInteger -> Cast ->
// Mul by a_scale * b_scale -> Add bias) becomes com.microsoft MatMulIntegerToFloat.
//
// A QuantizeLinear whose float input is an elementwise function of one 8-bit tensor (GELU's
// Div/Erf/Add/Mul between the quantization points of a QDQ BERT) becomes a 256-entry table,
// com.onyx QLinearLookup (QdqLookup).
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "kernels/op_helpers.h"
#include "planner/constant_folding.h"
#include "planner/fusion/rule_helpers.h"
#include "planner/fusion/rules.h"

namespace onyx::planner::fusion {
namespace {

using P = Pattern;
using kernels::Is8BitInt;

int Input(const FusionNode& n, size_t i) {
  return i < n.inputs.size() ? n.inputs[i] : -1;
}

// The alive DequantizeLinear producing `slot`, or null.
const FusionNode* DequantizeOf(const FusionGraph& g, int slot) {
  const int p = slot >= 0 ? g.Producer(slot) : -1;
  if (p < 0) return nullptr;
  const FusionNode& n = g.node(p);
  return n.node->domain.empty() && n.node->op_type == "DequantizeLinear" ? &n : nullptr;
}

// A constant float scale of `count` positive finite values (1: per tensor).
const Tensor* Scales(const FusionGraph& g, int slot, int64_t count) {
  const Tensor* s = g.Constant(slot);
  if (!s || s->dtype() != DType::kFloat || s->numel() != count || (count > 1 && s->rank() != 1))
    return nullptr;
  for (int64_t i = 0; i < count; ++i)
    if (!(s->data<float>()[i] > 0) || !std::isfinite(s->data<float>()[i])) return nullptr;
  return s;
}

// The zero point input of a Q/DQ is absent, or a constant of `type` with `count` elements.
bool ZeroPointIs(const FusionGraph& g, const FusionNode& n, DType type, int64_t count) {
  if (Input(n, 2) < 0) return true;
  const Tensor* z = g.Constant(Input(n, 2));
  return z && z->dtype() == type && z->numel() == count;
}

// Every element of constant `slot` (absent: -1) is 0.
bool AllZero(const FusionGraph& g, int slot) {
  if (slot < 0) return true;
  const Tensor* z = g.Constant(slot);
  if (!z) return false;
  const auto* bytes = static_cast<const uint8_t*>(z->raw_data());
  for (size_t i = 0; i < z->nbytes(); ++i)
    if (bytes[i] != 0) return false;
  return true;
}

// Every element of a Q/DQ's zero point (absent: 0) is 0.
bool ZeroPointIsZero(const FusionGraph& g, const FusionNode& n) {
  return AllZero(g, Input(n, 2));
}

// The per-axis attribute of a Q/DQ: `axis` (default 1) taken modulo the rank.
int64_t Axis(const ir::Node& n, int64_t rank) {
  int64_t axis = 1;
  if (const ir::Attribute* a = n.attr("axis")) axis = a->i;
  return axis < 0 ? axis + rank : axis;
}

// A per-tensor Q or DQ of 8-bit values of type `type`: scalar scale and zero point.
bool PerTensor8Bit(const FusionGraph& g, const FusionNode& n, DType type) {
  return Is8BitInt(type) && Scales(g, Input(n, 1), 1) && ZeroPointIs(g, n, type, 1) &&
         IntAttrIs(*n.node, "block_size", 0);
}

int64_t ZeroPointValue(const FusionGraph& g, const FusionNode& n) {
  if (Input(n, 2) < 0) return 0;
  const Tensor& z = *g.Constant(Input(n, 2));
  return z.dtype() == DType::kUInt8 ? z.data<uint8_t>()[0] : z.data<int8_t>()[0];
}

struct ConvIsland {
  const FusionNode* conv = nullptr;
  const FusionNode* relu = nullptr;  // between the Conv and the Q, or null
  const FusionNode* q = nullptr;
  const FusionNode* x = nullptr;  // DQ of the activations
  const FusionNode* w = nullptr;  // DQ of the int8 weights
  const FusionNode* b = nullptr;  // DQ of the int32 bias, or null
};

// Reads the island around the match; false when it is not one that QLinearConv computes.
bool ReadConvIsland(const Match& m, const FusionGraph& g, ConvIsland* is) {
  is->conv = &Captured(g, m, "conv");
  is->q = &Captured(g, m, "q");
  is->relu = m.node("relu") >= 0 ? &Captured(g, m, "relu") : nullptr;
  const FusionNode& conv = *is->conv;
  const FusionNode& q = *is->q;
  if (!conv.node->domain.empty() || conv.outputs.size() != 1 || conv.inputs.size() < 2)
    return false;
  is->x = DequantizeOf(g, conv.inputs[0]);
  is->w = DequantizeOf(g, conv.inputs[1]);
  if (!is->x || !is->w) return false;
  // Activations in and out: 8-bit, one scale and zero point each.
  const TypeInfo& xq = g.Type(Input(*is->x, 0));
  if (!xq.is_tensor() || !PerTensor8Bit(g, *is->x, xq.elem)) return false;
  if (Input(q, 2) < 0 || !g.Constant(Input(q, 2))) return false;  // the output type must be given
  const DType yt = g.Constant(Input(q, 2))->dtype();
  if (!PerTensor8Bit(g, q, yt) || !IntAttrIs(*q.node, "saturate", 1)) return false;
  if (is->relu) {
    const int64_t lowest = yt == DType::kUInt8 ? 0 : -128;
    if (ZeroPointValue(g, q) != lowest) return false;
  }
  // Weights: constant int8 [M, C/group, k...], zero point 0, one scale or one per output channel.
  const Tensor* wq = g.Constant(Input(*is->w, 0));
  if (!wq || wq->dtype() != DType::kInt8 || wq->rank() < 3) return false;
  const int64_t channels = wq->dim(0);
  const bool per_channel =
      g.Constant(Input(*is->w, 1)) && g.Constant(Input(*is->w, 1))->numel() > 1;
  if (per_channel && Axis(*is->w->node, wq->rank()) != 0) return false;
  const Tensor* ws = Scales(g, Input(*is->w, 1), per_channel ? channels : 1);
  if (!ws || !ZeroPointIsZero(g, *is->w) || !IntAttrIs(*is->w->node, "block_size", 0)) return false;
  // Bias: absent, or int32 [M] dequantized with scale xs * ws and zero point 0.
  if (Input(conv, 2) < 0) return true;
  is->b = DequantizeOf(g, Input(conv, 2));
  if (!is->b) return false;
  const Tensor* bq = g.Constant(Input(*is->b, 0));
  if (!bq || bq->dtype() != DType::kInt32 || bq->numel() != channels || bq->rank() != 1)
    return false;
  const bool bias_per_channel =
      g.Constant(Input(*is->b, 1)) && g.Constant(Input(*is->b, 1))->numel() > 1;
  if (bias_per_channel && Axis(*is->b->node, 1) != 0) return false;
  const Tensor* bs = Scales(g, Input(*is->b, 1), bias_per_channel ? channels : 1);
  if (!bs || !ZeroPointIsZero(g, *is->b)) return false;
  const double xs = g.Constant(Input(*is->x, 1))->data<float>()[0];
  for (int64_t c = 0; c < channels; ++c) {
    const double want = xs * ws->data<float>()[per_channel ? c : 0];
    if (!Near(bs->data<float>()[bias_per_channel ? c : 0], want, 1e-5)) return false;
  }
  return true;
}

// A scalar zero of an 8-bit type.
Tensor ZeroScalar(DType type) {
  Tensor t = Tensor::Allocate(type, {});
  *static_cast<uint8_t*>(t.raw_data()) = 0;
  return t;
}

Rule QdqConvRule(bool with_relu) {
  Rule r;
  r.name = with_relu ? "QdqConv/relu" : "QdqConv";
  r.kind = "QdqConv";
  P conv = P::Op("Conv").As("conv");
  P body = with_relu ? P::Op("Relu", {conv}).As("relu") : conv;
  r.pattern = P::Op("QuantizeLinear", {body}).As("q");
  r.valid = [](const Match& m, const FusionGraph& g) {
    ConvIsland is;
    return ReadConvIsland(m, g, &is);
  };
  r.rewrite = [](const Match& m, FusionGraph& g) {
    ConvIsland is;
    ReadConvIsland(m, g, &is);
    const FusionNode& conv = *is.conv;
    ir::Node def = MakeNode("", "QLinearConv", std::max<int64_t>(conv.node->opset, 10), *conv.node);
    def.attributes = conv.node->attributes;
    const std::string base = g.Name(m.root_value);
    int xz = Input(*is.x, 2);
    if (xz < 0)
      xz = g.AddConstant(base + "/x_zero_point", ZeroScalar(g.Type(Input(*is.x, 0)).elem));
    const int wz = g.AddConstant(base + "/w_zero_point", ZeroScalar(DType::kInt8));
    std::vector<int> inputs = {Input(*is.x, 0), Input(*is.x, 1), xz,
                               Input(*is.w, 0), Input(*is.w, 1), wz,
                               Input(*is.q, 1), Input(*is.q, 2)};
    if (is.b) inputs.push_back(Input(*is.b, 0));
    return Single(std::move(def), inputs, {m.root_value});
  };
  return r;
}

// onnxruntime.quantization's dynamic MatMul: A quantized per run by DynamicQuantizeLinear, then
//   Add(Mul(Cast<float>(MatMulInteger(A, B, a_zp, b_zp)), Mul(a_scale, b_scale)), bias)
// which is com.microsoft MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zp, b_zp, bias), the
// multiplier a_scale * b_scale[j] computed in float the same way. Without the Add: no bias.
bool ReadDynamicMatMul(const Match& m, const FusionGraph& g, int* bias) {
  const FusionNode& mmi = Captured(g, m, "mmi");
  const FusionNode& cast = Captured(g, m, "cast");
  if (!mmi.node->domain.empty() || mmi.outputs.size() != 1 || mmi.inputs.size() < 2) return false;
  if (kernels::NodeView(*cast.node).attr_int("to", 0) != 1) return false;  // FLOAT
  const Tensor* b = g.Constant(mmi.inputs[1]);
  if (!b || b->dtype() != DType::kInt8 || b->rank() != 2) return false;
  const int64_t n = b->dim(1);
  if (!AllZero(g, Input(mmi, 3))) return false;  // b_zero_point
  const TypeInfo& as = g.Type(m.value("a_scale"));
  if (!as.is_tensor() || as.elem != DType::kFloat || !as.shape_is_static() ||
      as.static_shape().size() > 1 || (as.rank() == 1 && as.static_shape()[0] != 1))
    return false;
  const Tensor* bs = g.Constant(m.value("b_scale"));
  if (!bs || bs->dtype() != DType::kFloat || (bs->numel() != 1 && bs->numel() != n) ||
      (bs->numel() == n && n > 1 && bs->rank() != 1))
    return false;
  *bias = m.value("bias");
  if (*bias >= 0) {
    const Tensor* t = g.Constant(*bias);
    if (!t || t->dtype() != DType::kFloat || t->numel() != n || t->rank() != 1) return false;
  }
  return true;
}

Rule DynamicMatMulRule(bool with_bias) {
  Rule r;
  r.name = with_bias ? "DynamicMatMul/bias" : "DynamicMatMul";
  r.kind = "DynamicMatMul";
  const P scale = P::Op("Mul", {P::Any("a_scale"), P::Const("b_scale")}).Commutative().As("smul");
  const P product =
      P::Op("Mul", {P::Op("Cast", {P::Op("MatMulInteger").As("mmi")}).As("cast"), scale})
          .Commutative()
          .As("mul");
  r.pattern =
      with_bias ? P::Op("Add", {product, P::Const("bias")}).Commutative().As("add") : product;
  r.valid = [](const Match& m, const FusionGraph& g) {
    int bias = -1;
    return ReadDynamicMatMul(m, g, &bias);
  };
  r.rewrite = [](const Match& m, FusionGraph& g) {
    int bias = -1;
    ReadDynamicMatMul(m, g, &bias);
    const FusionNode& mmi = Captured(g, m, "mmi");
    ir::Node def = MakeNode("com.microsoft", "MatMulIntegerToFloat", 1, *mmi.node);
    std::vector<int> inputs = {mmi.inputs[0],      mmi.inputs[1], m.value("a_scale"),
                               m.value("b_scale"), Input(mmi, 2), Input(mmi, 3)};
    if (bias >= 0) inputs.push_back(bias);
    return Single(std::move(def), inputs, {m.root_value});
  };
  return r;
}

// A float matrix product of dequantized operands with constant int8 weights,
//   Gemm|MatMul(DQ(xq, xs, xz), DQ(wq, ws, 0)[, DQ(bq, xs * ws, 0) or a float bias])
// (QDQ models: BERT's Gemms after quant_pre_process), which is
// com.microsoft MatMulIntegerToFloat(xq, wq, xs, ws, xz, -, bias): float(acc) * xs * ws[n] +
// bias[n], the float product of the dequantized operands up to rounding. The bias is
// dequantized at plan time. The Q after it, if any, stays (a fast elementwise step).
struct MatMulIsland {
  const FusionNode* mm = nullptr;
  const FusionNode* x = nullptr;  // DQ of the activations
  const FusionNode* w = nullptr;  // DQ of the int8 weights [K, N]
  std::vector<float> bias;        // [N] or empty
};

bool ReadMatMulIsland(const Match& m, const FusionGraph& g, MatMulIsland* is) {
  const FusionNode& mm = Captured(g, m, "mm");
  is->mm = &mm;
  if (!mm.node->domain.empty() || mm.outputs.size() != 1 || mm.inputs.size() < 2) return false;
  const bool gemm = mm.node->op_type == "Gemm";
  if (gemm) {
    const kernels::NodeView v(*mm.node);
    if (v.attr_int("transA", 0) != 0 || v.attr_int("transB", 0) != 0 ||
        v.attr_float("alpha", 1.f) != 1.f || v.attr_float("beta", 1.f) != 1.f)
      return false;
  }
  is->x = DequantizeOf(g, mm.inputs[0]);
  is->w = DequantizeOf(g, mm.inputs[1]);
  if (!is->x || !is->w) return false;
  const TypeInfo& xq = g.Type(Input(*is->x, 0));
  if (!xq.is_tensor() || !PerTensor8Bit(g, *is->x, xq.elem) || !IsFloat32(g, mm.outputs[0]))
    return false;
  const Tensor* wq = g.Constant(Input(*is->w, 0));
  if (!wq || wq->dtype() != DType::kInt8 || wq->rank() != 2) return false;
  const int64_t n = wq->dim(1);
  const Tensor* ws0 = g.Constant(Input(*is->w, 1));
  const bool per_column = ws0 && ws0->numel() > 1;
  if (per_column && Axis(*is->w->node, 2) != 1) return false;
  const Tensor* ws = Scales(g, Input(*is->w, 1), per_column ? n : 1);
  if (!ws || !ZeroPointIsZero(g, *is->w) || !IntAttrIs(*is->w->node, "block_size", 0)) return false;
  is->bias.clear();
  const int b = gemm ? Input(mm, 2) : -1;
  if (b < 0) return true;
  if (const Tensor* f = g.Constant(b)) {  // a float bias [N]
    if (f->dtype() != DType::kFloat || f->numel() != n || f->rank() != 1) return false;
    is->bias.assign(f->data<float>(), f->data<float>() + n);
    return true;
  }
  const FusionNode* bdq = DequantizeOf(g, b);
  if (!bdq) return false;
  const Tensor* bq = g.Constant(Input(*bdq, 0));
  if (!bq || bq->dtype() != DType::kInt32 || bq->numel() != n || bq->rank() != 1) return false;
  const Tensor* bs0 = g.Constant(Input(*bdq, 1));
  const bool bias_per_column = bs0 && bs0->numel() > 1;
  if (bias_per_column && Axis(*bdq->node, 1) != 0) return false;
  const Tensor* bs = Scales(g, Input(*bdq, 1), bias_per_column ? n : 1);
  if (!bs || !ZeroPointIsZero(g, *bdq)) return false;
  for (int64_t j = 0; j < n; ++j)  // as DequantizeLinear computes it
    is->bias.push_back(static_cast<float>(bq->data<int32_t>()[j]) *
                       bs->data<float>()[bias_per_column ? j : 0]);
  return true;
}

Rule QdqMatMulRule() {
  Rule r;
  r.name = "QdqMatMul";
  r.kind = "QdqMatMul";
  // A match of one node, like ConstantFold's of the weights' DequantizeLinear next to it, which
  // must not go first (the int8 weights would be gone).
  r.priority = 1;
  r.pattern = P::Op("Gemm|MatMul").As("mm");
  r.valid = [](const Match& m, const FusionGraph& g) {
    MatMulIsland is;
    return ReadMatMulIsland(m, g, &is);
  };
  r.rewrite = [](const Match& m, FusionGraph& g) {
    MatMulIsland is;
    ReadMatMulIsland(m, g, &is);
    ir::Node def = MakeNode("com.microsoft", "MatMulIntegerToFloat", 1, *is.mm->node);
    std::vector<int> inputs = {Input(*is.x, 0), Input(*is.w, 0), Input(*is.x, 1),
                               Input(*is.w, 1), Input(*is.x, 2), -1};
    if (!is.bias.empty()) {
      const int64_t n = static_cast<int64_t>(is.bias.size());
      inputs.push_back(g.AddConstant(g.Name(m.root_value) + "/bias", FloatTensor({n}, is.bias)));
    }
    return Single(std::move(def), inputs, {m.root_value});
  };
  return r;
}

// Ops that only move or select values (MaxPool selects: a maximum commutes with the monotone
// dequantization), between a DequantizeLinear and a QuantizeLinear of the same scale and zero
// point:  Q(op(DQ(xq, s, z), ...), s, z) = op(xq, ...) exactly, since Q(DQ(q)) = q for every q
// (the float quotient (q - z) s / s is within an ulp of q - z). The op then runs on the 8-bit
// values and two passes over the float tensor go (BERT QDQ: 168 of its 504 pairs).
constexpr const char* kMovingOps = "Reshape|Transpose|Squeeze|Unsqueeze|Flatten|MaxPool";

// The value of a per-tensor Q/DQ's scale and zero point, when constant: (scale bits, zero point
// as int, its type).
struct QuantPoint {
  float scale = 0;
  int64_t zero = 0;
  DType type = DType::kUndefined;
};

bool ReadQuantPoint(const FusionGraph& g, const FusionNode& n, DType type, QuantPoint* p) {
  if (!PerTensor8Bit(g, n, type)) return false;
  p->scale = g.Constant(Input(n, 1))->data<float>()[0];
  p->zero = ZeroPointValue(g, n);
  p->type = type;
  return true;
}

bool ReadMovingIsland(const Match& m, const FusionGraph& g, const FusionNode** dq) {
  const FusionNode& op = Captured(g, m, "op");
  const FusionNode& q = Captured(g, m, "q");
  if (!op.node->domain.empty() || op.inputs.empty()) return false;
  for (size_t k = 1; k < op.outputs.size(); ++k)
    if (op.outputs[k] >= 0) return false;  // MaxPool's Indices
  *dq = DequantizeOf(g, op.inputs[0]);
  if (!*dq) return false;
  const TypeInfo& xq = g.Type(Input(**dq, 0));
  if (!xq.is_tensor() || Input(q, 2) < 0 || !g.Constant(Input(q, 2))) return false;
  QuantPoint in, out;
  if (!ReadQuantPoint(g, **dq, xq.elem, &in) ||
      !ReadQuantPoint(g, q, g.Constant(Input(q, 2))->dtype(), &out) ||
      !IntAttrIs(*q.node, "saturate", 1))
    return false;
  return in.type == out.type && in.zero == out.zero &&
         std::memcmp(&in.scale, &out.scale, sizeof(float)) == 0;
}

Rule QdqMovingRule() {
  Rule r;
  r.name = "QdqMovingOp";
  r.kind = "QdqMovingOp";
  r.pattern = P::Op("QuantizeLinear", {P::Op(kMovingOps).As("op")}).As("q");
  r.valid = [](const Match& m, const FusionGraph& g) {
    const FusionNode* dq = nullptr;
    return ReadMovingIsland(m, g, &dq);
  };
  r.rewrite = [](const Match& m, FusionGraph& g) {
    const FusionNode* dq = nullptr;
    ReadMovingIsland(m, g, &dq);
    const FusionNode& op = Captured(g, m, "op");
    std::vector<int> inputs = op.inputs;
    inputs[0] = Input(*dq, 0);
    return Single(*op.node, inputs, {m.root_value});
  };
  return r;
}

// ---- QdqLookup: elementwise functions of one 8-bit tensor as a table ----
//
//   Q(f(DQ(x), DQ(x), c...), ys, yz)   with f a tree of elementwise float ops, c scalar constants
//
// has one output value per value of x, element by element: the 256 values are computed at plan
// time by running the region's own nodes (their reference kernels, as constant folding does) on
// the 256 possible bytes, and the node becomes QLinearLookup(x, table). A leaf may also read a
// QLinearLookup of x (an earlier region: Q -> DQ inside a chain). The result is the reference
// kernels' value for every element; where a fast float kernel rounds differently from its
// reference (Erf's polynomial), the unfused graph may differ by one quantization step.
// BERT QDQ's GELU is 5 Q, 4 DQ and 5 float passes over [128, 3072] per layer, one table here.
constexpr int kMaxLookupNodes = 24;

bool IsLookupOp(const ir::Node& n) {
  static const std::set<std::string> kOps = {
      "Abs",         "Add",       "Ceil",     "Celu",    "Clip",      "Cos",
      "Div",         "Elu",       "Erf",      "Exp",     "Floor",     "Gelu",
      "HardSigmoid", "HardSwish", "Identity", "Log",     "LeakyRelu", "Max",
      "Min",         "Mish",      "Mul",      "Neg",     "Pow",       "Reciprocal",
      "Relu",        "Round",     "Selu",     "Sigmoid", "Sign",      "Sin",
      "Softplus",    "Softsign",  "Sqrt",     "Sub",     "Tanh",      "ThresholdedRelu"};
  return n.domain.empty() && kOps.count(n.op_type) > 0;
}

bool IsLookupNode(const FusionNode& n) {
  return n.node->domain == kernels::kOnyxDomain && n.node->op_type == "QLinearLookup";
}

// An 8-bit slot as a function of the 8-bit tensor it is looked up from: bytes[b] is its value
// where `root` holds byte b (the identity when no QLinearLookup produces it).
struct ByteFunction {
  int root = -1;
  std::array<uint8_t, 256> bytes{};
};

ByteFunction ResolveBytes(const FusionGraph& g, int slot) {
  ByteFunction f;
  for (int b = 0; b < 256; ++b) f.bytes[b] = static_cast<uint8_t>(b);
  f.root = slot;
  for (int depth = 0; depth < kMaxLookupNodes; ++depth) {
    const int p = g.Producer(f.root);
    if (p < 0 || !IsLookupNode(g.node(p))) break;
    const FusionNode& n = g.node(p);
    const Tensor* table = n.inputs.size() == 2 ? g.Constant(n.inputs[1]) : nullptr;
    if (!table || table->numel() != 256) break;
    // Walking inwards: the slot's value at byte b of the new root is bytes[t[b]].
    const auto* t = static_cast<const uint8_t*>(table->raw_data());
    std::array<uint8_t, 256> outer = f.bytes;
    for (int b = 0; b < 256; ++b) f.bytes[b] = outer[t[b]];
    f.root = n.inputs[0];
  }
  return f;
}

// The region under a QuantizeLinear: its float nodes and DQ leaves (ids, producers first).
struct LookupRegion {
  int root = -1;                       // the 8-bit tensor every leaf reads
  std::vector<int> order;              // region node ids, producers before consumers
  std::map<int, ByteFunction> leaves;  // DQ node id -> its input as a function of root
};

bool WalkLookup(const FusionGraph& g, int slot, int rank, LookupRegion* r) {
  if (const Tensor* c = g.Constant(slot))  // a scalar operand
    return c->dtype() == DType::kFloat && c->numel() == 1 && c->rank() <= rank;
  const int p = g.Producer(slot);
  if (p < 0 || !IsFloat32(g, slot)) return false;
  if (std::find(r->order.begin(), r->order.end(), p) != r->order.end()) return true;
  if (static_cast<int>(r->order.size()) >= kMaxLookupNodes) return false;
  const FusionNode& n = g.node(p);
  if (!n.op || !n.implicit.empty() || n.outputs.empty() || n.outputs[0] != slot) return false;
  for (size_t k = 1; k < n.outputs.size(); ++k)
    if (n.outputs[k] >= 0) return false;
  if (n.node->domain.empty() && n.node->op_type == "DequantizeLinear") {
    const TypeInfo& xq = g.Type(Input(n, 0));
    if (!xq.is_tensor() || !PerTensor8Bit(g, n, xq.elem)) return false;
    ByteFunction f = ResolveBytes(g, Input(n, 0));
    if (r->root >= 0 && f.root != r->root) return false;
    r->root = f.root;
    r->leaves[p] = f;
    r->order.push_back(p);
    return true;
  }
  if (!IsLookupOp(*n.node)) return false;
  for (const auto& a : n.node->attributes)
    if (a.g || !a.graphs.empty()) return false;
  bool any = false;
  for (int in : n.inputs) {
    if (in < 0) continue;
    if (!WalkLookup(g, in, rank, r)) return false;
    any = any || !g.Constant(in);
  }
  if (!any) return false;  // constant folding's business
  r->order.push_back(p);
  return true;
}

// The QuantizeLinear of the match and its region, when the output is a function of one 8-bit
// tensor of the output's own shape.
bool ReadLookupRegion(const Match& m, const FusionGraph& g, LookupRegion* r) {
  const FusionNode& q = Captured(g, m, "q");
  if (!q.node->domain.empty() || q.inputs.empty() || Input(q, 2) < 0 || !g.Constant(Input(q, 2)))
    return false;
  QuantPoint out;
  if (!ReadQuantPoint(g, q, g.Constant(Input(q, 2))->dtype(), &out)) return false;
  const TypeInfo& y = g.Type(q.outputs[0]);
  if (!y.is_tensor() || !y.has_shape) return false;
  if (!WalkLookup(g, q.inputs[0], static_cast<int>(y.rank()), r) || r->root < 0) return false;
  const TypeInfo& x = g.Type(r->root);
  if (!x.is_tensor() || !x.has_shape || x.dims.size() != y.dims.size()) return false;
  for (size_t d = 0; d < x.dims.size(); ++d)
    if (x.dims[d].value != y.dims[d].value || x.dims[d].symbol != y.dims[d].symbol ||
        (!x.dims[d].known() && x.dims[d].symbol.empty()))
      return false;
  return true;
}

// Runs `n` on `inputs` (slots; region values by node id in `values`) through its reference kernel.
std::optional<Tensor> FoldOnTable(const FusionGraph& g, const FusionNode& n,
                                  const std::map<int, Value>& values,
                                  const std::map<int, Value>& leaf_inputs, int node_id) {
  std::vector<const Value*> inputs;
  std::vector<TypeInfo> types;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const int s = n.inputs[k];
    const Value* v = nullptr;
    if (s < 0) {
    } else if (k == 0 && leaf_inputs.count(node_id)) {
      v = &leaf_inputs.at(node_id);
    } else if (g.Constant(s)) {
      v = &g.plan().constants.at(s);
    } else {
      auto it = values.find(g.Producer(s));
      if (it == values.end()) return std::nullopt;
      v = &it->second;
    }
    inputs.push_back(v);
    types.push_back(v ? TypeOfValue(*v) : TypeInfo());
  }
  auto outs = FoldNode(*n.node, *n.op, inputs, types);
  if (!outs.ok() || outs->empty() || !(*outs)[0].is_tensor() || (*outs)[0].tensor().numel() != 256)
    return std::nullopt;
  return (*outs)[0].tensor();
}

// The table: Q(region) evaluated for each byte of the root.
std::optional<Tensor> LookupTable(const FusionGraph& g, const FusionNode& q,
                                  const LookupRegion& r) {
  std::map<int, Value> leaf_inputs, values;
  for (const auto& [id, f] : r.leaves) {
    Tensor t = Tensor::Allocate(g.Type(Input(g.node(id), 0)).elem, {256});
    std::memcpy(t.raw_data(), f.bytes.data(), 256);
    leaf_inputs.emplace(id, Value(std::move(t)));
  }
  for (int id : r.order) {
    auto t = FoldOnTable(g, g.node(id), values, leaf_inputs, id);
    if (!t || t->dtype() != DType::kFloat) return std::nullopt;
    values.emplace(id, Value(t->Reshaped({256})));
  }
  auto table = FoldOnTable(g, q, values, {}, -1);
  if (!table || !Is8BitInt(table->dtype())) return std::nullopt;
  return table->Reshaped({256});
}

Rule QdqLookupRule() {
  Rule r;
  r.name = "QdqLookup";
  r.kind = "QdqLookup";
  r.pattern = P::Op("QuantizeLinear").As("q");
  r.valid = [](const Match& m, const FusionGraph& g) {
    LookupRegion region;
    return ReadLookupRegion(m, g, &region);
  };
  r.rewrite = [](const Match& m, FusionGraph& g) {
    LookupRegion region;
    ReadLookupRegion(m, g, &region);
    const FusionNode& q = Captured(g, m, "q");
    auto table = LookupTable(g, q, region);
    if (!table) return Rewrite();  // a kernel refused the table's inputs: leave the graph as is
    const int t = g.AddConstant(g.Name(m.root_value) + "/table", std::move(*table));
    return Single(MakeOnyxNode("QLinearLookup", *q.node), {region.root, t}, {m.root_value});
  };
  return r;
}

// QLinearLookup(QLinearLookup(x, t1), t2) = QLinearLookup(x, t2[t1]) when the inner one has no
// other reader (regions rewritten before the region they feed).
Rule LookupChainRule() {
  Rule r;
  r.name = "QdqLookup/chain";
  r.kind = "QdqLookup";
  r.pattern =
      P::Op("com.onyx:QLinearLookup", {P::Op("com.onyx:QLinearLookup").As("inner")}).As("outer");
  r.valid = [](const Match& m, const FusionGraph& g) {
    const FusionNode& outer = Captured(g, m, "outer");
    const FusionNode& inner = Captured(g, m, "inner");
    return outer.inputs.size() == 2 && inner.inputs.size() == 2 && g.Constant(outer.inputs[1]) &&
           g.Constant(inner.inputs[1]) && g.Constant(outer.inputs[1])->numel() == 256 &&
           g.Constant(inner.inputs[1])->numel() == 256;
  };
  r.rewrite = [](const Match& m, FusionGraph& g) {
    const FusionNode& outer = Captured(g, m, "outer");
    const ByteFunction f = ResolveBytes(g, outer.outputs[0]);
    const Tensor& t2 = *g.Constant(outer.inputs[1]);
    Tensor table = Tensor::Allocate(t2.dtype(), {256});
    std::memcpy(table.raw_data(), f.bytes.data(), 256);
    const int t = g.AddConstant(g.Name(m.root_value) + "/table", std::move(table));
    return Single(MakeOnyxNode("QLinearLookup", *outer.node), {f.root, t}, {m.root_value});
  };
  return r;
}

}  // namespace

void AddQuantizationRules(std::vector<Rule>& rules) {
  rules.push_back(QdqMovingRule());
  rules.push_back(QdqMatMulRule());
  rules.push_back(QdqConvRule(false));
  rules.push_back(QdqConvRule(true));
  rules.push_back(DynamicMatMulRule(false));
  rules.push_back(DynamicMatMulRule(true));
  rules.push_back(QdqLookupRule());
  rules.push_back(LookupChainRule());
}

}  // namespace onyx::planner::fusion
