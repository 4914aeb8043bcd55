// ONNX Runtime's com.microsoft transformer operators, as onnxruntime.transformers' optimizer and
// LLM exporters write them: SkipLayerNormalization, SkipSimplifiedLayerNormalization,
// SimplifiedLayerNormalization (which ORT registers in the default ONNX domain),
// EmbedLayerNormalization, Gelu, BiasGelu, FastGelu, QuickGelu, BiasSplitGelu, Attention,
// MultiHeadAttention, GroupQueryAttention, RotaryEmbedding and MatMulNBits. Semantics follow ORT's
// contrib operator documentation. Here: shape and type inference, the checks that refuse (at
// session creation) attribute values and optional inputs the kernels do not implement, and each
// op's kernels: a reference (math in kernels/reference/transformer_ms.cc) and, for float32, a
// fast one in front of it: onyx's SIMD LayerNorm rows and activations, the attention core of
// kernels/common/ms_attention_kernel.cc with constant QKV weights packed once, and MatMulNBits'
// 4-bit kernel that dequantises blocks as it streams them (kernels/common/nbits_hwy.cc).
#include "kernels/reference/transformer_ms.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/fast_kernel.h"
#include "kernels/common/simd_kernels.h"
#include "kernels/common/transformer_ms_kernels.h"
#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"
#include "kernels/reference/attention.h"
#include "kernels/reference/gemm_core.h"
#include "kernels/weight_cache.h"

namespace onyx::kernels {
namespace {

constexpr const char* kMsDomain = "com.microsoft";
const std::vector<DType> kF32 = {DType::kFloat};
const std::vector<DType> kI32 = {DType::kInt32};
const std::vector<DType> kI64 = {DType::kInt64};

// ---- plan-time helpers ----

bool Has(InferContext& ctx, int i) {
  return i < ctx.num_inputs() && ctx.has_input(i);
}
bool HasOut(InferContext& ctx, int i) {
  return i < ctx.num_outputs() && ctx.has_output(i);
}

Status Require(InferContext& ctx, int i, const char* what) {
  if (Has(ctx, i)) return Status::Ok();
  return ctx.node().Invalid("input ", i, " (", what, ") is required");
}

// Input i, when given, has one of the element types.
Status Expect(InferContext& ctx, int i, const std::vector<DType>& types) {
  return Has(ctx, i) ? ExpectInputType(ctx, i, types) : Status::Ok();
}

// An optional input the kernels do not implement: refused by name when given.
Status RefuseInput(InferContext& ctx, int i, const char* what) {
  if (!Has(ctx, i)) return Status::Ok();
  return ctx.node().NotSupported("input ", i, " '", InputName(ctx.node(), i), "' (", what,
                                 ") is not implemented");
}
Status RefuseOutput(InferContext& ctx, int i, const char* what) {
  if (!HasOut(ctx, i)) return Status::Ok();
  return ctx.node().NotSupported("output ", i, " (", what, ") is not implemented");
}

// An int attribute whose only implemented values are `allowed`.
Status IntAttrIn(const NodeView& node, const char* name, int64_t def,
                 const std::vector<int64_t>& allowed) {
  const int64_t v = node.attr_int(name, def);
  if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return Status::Ok();
  std::string list;
  for (int64_t a : allowed) list += (list.empty() ? "" : ", ") + std::to_string(a);
  return node.NotSupported("attribute '", name, "' = ", v, " is not implemented (only ", list, ")");
}

const TypeInfo& TypeOf(InferContext& ctx, int i) {
  static const TypeInfo kUnknown;
  return Has(ctx, i) ? ctx.input_type(i) : kUnknown;
}
int64_t Rank(InferContext& ctx, int i) {
  const TypeInfo& t = TypeOf(ctx, i);
  return t.is_tensor() ? t.rank() : -1;
}
// Dim d of input i (negative d counts from the back) when known, else -1.
int64_t DimOf(InferContext& ctx, int i, int64_t d) {
  const TypeInfo& t = TypeOf(ctx, i);
  if (!t.is_tensor() || !t.has_shape) return -1;
  const int64_t r = static_cast<int64_t>(t.dims.size());
  if (d < 0) d += r;
  if (d < 0 || d >= r) return -1;
  return t.dims[d].known() ? t.dims[d].value : -1;
}
// Input i's element count when its shape is static, else -1.
int64_t CountOf(InferContext& ctx, int i) {
  const TypeInfo& t = TypeOf(ctx, i);
  if (!t.is_tensor() || !t.shape_is_static()) return -1;
  return ShapeElementCount(t.static_shape());
}

Status ExpectRank(InferContext& ctx, int i, std::initializer_list<int64_t> ranks) {
  const int64_t r = Rank(ctx, i);
  if (r < 0 || std::find(ranks.begin(), ranks.end(), r) != ranks.end()) return Status::Ok();
  std::string list;
  for (int64_t a : ranks) list += (list.empty() ? "" : " or ") + std::to_string(a);
  return ctx.node().Invalid("input ", i, " '", InputName(ctx.node(), i), "' has type ",
                            TypeOf(ctx, i).ToString(), "; expected rank ", list);
}

// Input i holds `n` values when both are known.
Status ExpectCountOf(InferContext& ctx, int i, int64_t n, const char* what) {
  const int64_t c = CountOf(ctx, i);
  if (c < 0 || n < 0 || c == n) return Status::Ok();
  return ctx.node().Invalid("input ", i, " '", InputName(ctx.node(), i), "' has type ",
                            TypeOf(ctx, i).ToString(), "; expected ", n, " values (", what, ")");
}

// ---- run-time helpers ----

const Tensor* Opt(KernelContext& ctx, int i) {
  return i < ctx.num_inputs() && ctx.has_input(i) ? &ctx.input(i) : nullptr;
}
bool WantOut(KernelContext& ctx, int i) {
  return i < ctx.num_outputs() && ctx.has_output(i);
}

Status RunType(KernelContext& ctx, int i, DType want) {
  const Tensor& t = ctx.input(i);
  if (t.dtype() == want) return Status::Ok();
  return ctx.node().NotSupported(DescribeInput(ctx.node(), i), " has type ", DTypeName(t.dtype()),
                                 "; expected ", DTypeName(want));
}

// A float vector input of n values (rank 1, or any rank holding n values).
StatusOr<const float*> FloatVector(KernelContext& ctx, int i, int64_t n) {
  const Tensor* t = Opt(ctx, i);
  if (!t) return static_cast<const float*>(nullptr);
  if (t->dtype() != DType::kFloat || t->numel() != n) {
    return ctx.node().Invalid(DescribeInput(ctx.node(), i), " is ", DTypeName(t->dtype()),
                              ShapeToString(t->shape()), "; expected float with ", n, " values");
  }
  return t->data<float>();
}

// ======================= Skip / simplified layer normalization =======================

// Inputs of SkipLayerNormalization: input, skip, gamma, beta?, bias?; of
// SkipSimplifiedLayerNormalization: input, skip, gamma, bias?. Outputs: output, mean,
// inv_std_var, input_skip_bias_sum.
struct SkipNormLayout {
  bool simplified;
  int beta;  // input index, -1 when the op has none
  int bias;
};
constexpr SkipNormLayout kSkipLayerNorm{false, 3, 4};
constexpr SkipNormLayout kSkipSimplified{true, -1, 3};

// skip's shape must be x's, or x's trailing dims with leading 1s ([1, S, H] or [S, H] against
// [B, S, H]); then skip row r % skip_rows goes with row r of x.
bool SkipBroadcasts(const Shape& x, const Shape& skip) {
  if (skip.empty() || skip.size() > x.size()) return false;
  bool leading = true;
  for (size_t i = 0; i < skip.size(); ++i) {
    const int64_t want = x[x.size() - skip.size() + i];
    if (leading && skip[i] == 1 && want != 1 && i + 1 < skip.size()) continue;
    leading = false;
    if (skip[i] != want) return false;
  }
  return true;
}

Status InferSkipNorm(InferContext& ctx, const SkipNormLayout& l) {
  ONYX_RETURN_IF_ERROR(Require(ctx, 0, "input"));
  ONYX_RETURN_IF_ERROR(Require(ctx, 1, "skip"));
  ONYX_RETURN_IF_ERROR(Require(ctx, 2, "gamma"));
  for (int i = 0; i <= 4; ++i) ONYX_RETURN_IF_ERROR(Expect(ctx, i, kF32));
  ONYX_RETURN_IF_ERROR(ExpectRank(ctx, 0, {2, 3}));
  const TypeInfo& x = TypeOf(ctx, 0);
  const TypeInfo& skip = TypeOf(ctx, 1);
  if (x.shape_is_static() && skip.is_tensor() && skip.shape_is_static() &&
      !SkipBroadcasts(x.static_shape(), skip.static_shape())) {
    return ctx.node().Invalid("input 1 '", InputName(ctx.node(), 1), "' has type ", skip.ToString(),
                              "; expected the shape of input 0 ", x.ToString(),
                              " or its trailing dims");
  }
  const int64_t hidden = DimOf(ctx, 0, -1);
  ONYX_RETURN_IF_ERROR(ExpectCountOf(ctx, 2, hidden, "one per hidden unit"));
  if (l.beta >= 0) ONYX_RETURN_IF_ERROR(ExpectCountOf(ctx, l.beta, hidden, "one per hidden unit"));
  ONYX_RETURN_IF_ERROR(ExpectCountOf(ctx, l.bias, hidden, "one per hidden unit"));
  ctx.SetOutputType(0, x);
  TypeInfo stat = TypeInfo::Tensor(DType::kFloat);
  if (x.has_shape) {
    stat = x;
    stat.dims.back() = Dim::Known(1);
  }
  if (HasOut(ctx, 1)) ctx.SetOutputType(1, stat);
  if (HasOut(ctx, 2)) ctx.SetOutputType(2, stat);
  if (HasOut(ctx, 3)) ctx.SetOutputType(3, x);
  return Status::Ok();
}
Status InferSkipLayerNorm(InferContext& ctx) {
  return InferSkipNorm(ctx, kSkipLayerNorm);
}
Status InferSkipSimplified(InferContext& ctx) {
  return InferSkipNorm(ctx, kSkipSimplified);
}

// Reads and checks the operands; allocates the outputs.
StatusOr<reference::SkipNormArgs> PrepareSkipNorm(KernelContext& ctx, const SkipNormLayout& l) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 3));
  for (int i : {0, 1}) ONYX_RETURN_IF_ERROR(RunType(ctx, i, DType::kFloat));
  const Tensor& x = ctx.input(0);
  const Tensor& skip = ctx.input(1);
  if (x.rank() < 1 || !SkipBroadcasts(x.shape(), skip.shape())) {
    return node.Invalid(DescribeInput(node, 1), " has shape ", ShapeToString(skip.shape()),
                        "; expected the shape of input 0 ", ShapeToString(x.shape()),
                        " or its trailing dims");
  }
  reference::SkipNormArgs a;
  a.cols = x.dim(x.rank() - 1);
  a.rows = a.cols == 0 ? 0 : x.numel() / a.cols;
  a.simplified = l.simplified;
  a.epsilon = node.attr_float("epsilon", 1e-12f);
  a.x = x.data<float>();
  a.skip = skip.data<float>();
  a.skip_rows = a.cols == 0 ? 1 : std::max<int64_t>(1, skip.numel() / a.cols);
  ONYX_ASSIGN_OR_RETURN(a.gamma, FloatVector(ctx, 2, a.cols));
  if (l.beta >= 0) {
    ONYX_ASSIGN_OR_RETURN(a.beta, FloatVector(ctx, l.beta, a.cols));
  }
  ONYX_ASSIGN_OR_RETURN(a.bias, FloatVector(ctx, l.bias, a.cols));
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, DType::kFloat, x.shape()));
  a.y = y.data<float>();
  Shape stat = x.shape();
  stat.back() = 1;
  if (WantOut(ctx, 1)) {
    ONYX_ASSIGN_OR_RETURN(Tensor m, NewOutput(ctx, 1, DType::kFloat, stat));
    a.mean_out = m.data<float>();
  }
  if (WantOut(ctx, 2)) {
    ONYX_ASSIGN_OR_RETURN(Tensor s, NewOutput(ctx, 2, DType::kFloat, stat));
    a.inv_std_out = s.data<float>();
  }
  if (WantOut(ctx, 3)) {
    ONYX_ASSIGN_OR_RETURN(Tensor s, NewOutput(ctx, 3, DType::kFloat, x.shape()));
    a.sum_out = s.data<float>();
  }
  return a;
}

Status RunSkipNormRef(KernelContext& ctx, const SkipNormLayout& l) {
  ONYX_ASSIGN_OR_RETURN(reference::SkipNormArgs a, PrepareSkipNorm(ctx, l));
  reference::SkipNormRows(a, 0, a.rows);
  return Status::Ok();
}
Status SkipLayerNormRef(KernelContext& ctx) {
  return RunSkipNormRef(ctx, kSkipLayerNorm);
}
Status SkipSimplifiedRef(KernelContext& ctx) {
  return RunSkipNormRef(ctx, kSkipSimplified);
}

// Rows split between the threads: the sum, then onyx's SIMD LayerNorm rows (LayerNorm), or a
// float RMS pass (simplified). The statistics outputs are written as the reference writes them.
class SkipNormFast : public Kernel {
 public:
  explicit SkipNormFast(SkipNormLayout l) : l_(l) {}
  Status Run(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(reference::SkipNormArgs a, PrepareSkipNorm(ctx, l_));
    const int64_t cols = a.cols;
    const int threads = common::ThreadsFor(a.rows * cols * 4, ctx.intra_op_threads());
    ParallelFor(a.rows, cols * 4, threads, [&](int64_t r0, int64_t r1) {
      // The sum goes to the sum output when wanted, else straight into y (x is read first).
      float* sum = a.sum_out ? a.sum_out : a.y;
      for (int64_t r = r0; r < r1; ++r) {
        const float* x = a.x + r * cols;
        const float* s = a.skip + (r % a.skip_rows) * cols;
        float* out = sum + r * cols;
        if (a.bias) {
          for (int64_t j = 0; j < cols; ++j) out[j] = x[j] + s[j] + a.bias[j];
        } else {
          for (int64_t j = 0; j < cols; ++j) out[j] = x[j] + s[j];
        }
      }
      if (!a.simplified) {
        common::LayerNormRowsF32(sum + r0 * cols, a.y + r0 * cols, r1 - r0, cols, a.gamma, a.beta,
                                 a.epsilon, a.mean_out ? a.mean_out + r0 : nullptr,
                                 a.inv_std_out ? a.inv_std_out + r0 : nullptr);
        return;
      }
      for (int64_t r = r0; r < r1; ++r) {
        const float* v = sum + r * cols;
        float* y = a.y + r * cols;
        float sq = 0;
        for (int64_t j = 0; j < cols; ++j) sq += v[j] * v[j];
        const float inv =
            1.f / std::sqrt(sq / static_cast<float>(cols) + static_cast<float>(a.epsilon));
        for (int64_t j = 0; j < cols; ++j) y[j] = v[j] * inv * a.gamma[j];
        if (a.mean_out) a.mean_out[r] = 0.f;
        if (a.inv_std_out) a.inv_std_out[r] = inv;
      }
    });
    return Status::Ok();
  }

 private:
  SkipNormLayout l_;
};

// ======================= SimplifiedLayerNormalization (default domain) =======================
// X, scale -> Y, inv_std_var?; attributes axis (-1), epsilon (1e-5), stash_type (1).

Status CheckSimplifiedAttrs(const NodeView& node) {
  return IntAttrIn(node, "stash_type", 1, {1});
}

Status InferSimplifiedLayerNorm(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(CheckSimplifiedAttrs(node));
  ONYX_RETURN_IF_ERROR(Require(ctx, 0, "X"));
  ONYX_RETURN_IF_ERROR(Require(ctx, 1, "scale"));
  for (int i : {0, 1}) ONYX_RETURN_IF_ERROR(Expect(ctx, i, kF32));
  const TypeInfo& x = TypeOf(ctx, 0);
  ctx.SetOutputType(0, x);
  TypeInfo stat = TypeInfo::Tensor(DType::kFloat);
  if (x.has_shape) {
    ONYX_ASSIGN_OR_RETURN(const int64_t axis,
                          NormalizeAxis(node, node.attr_int("axis", -1), x.rank(), "axis"));
    stat = x;
    for (size_t d = axis; d < stat.dims.size(); ++d) stat.dims[d] = Dim::Known(1);
  }
  if (HasOut(ctx, 1)) ctx.SetOutputType(1, stat);
  return Status::Ok();
}

Status SimplifiedLayerNormKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(CheckSimplifiedAttrs(node));
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  for (int i : {0, 1}) ONYX_RETURN_IF_ERROR(RunType(ctx, i, DType::kFloat));
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  ONYX_ASSIGN_OR_RETURN(const int64_t axis,
                        NormalizeAxis(node, node.attr_int("axis", -1), x.rank(), "axis"));
  int64_t cols = 1;
  for (int64_t d = axis; d < x.rank(); ++d) cols *= x.dim(d);
  // scale broadcasts against the normalised dims [axis, rank): its trailing dims.
  Shape norm(x.shape().begin() + axis, x.shape().end());
  if (scale.numel() != cols || !SkipBroadcasts(norm, scale.shape())) {
    return node.NotSupported(DescribeInput(node, 1), " has shape ", ShapeToString(scale.shape()),
                             "; expected the normalised dims ", ShapeToString(norm));
  }
  reference::SkipNormArgs a;
  a.simplified = true;
  a.cols = cols;
  a.rows = cols == 0 ? 0 : x.numel() / cols;
  a.epsilon = node.attr_float("epsilon", 1e-5f);
  a.x = x.data<float>();
  a.gamma = scale.data<float>();
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, DType::kFloat, x.shape()));
  a.y = y.data<float>();
  if (WantOut(ctx, 1)) {
    Shape stat = x.shape();
    for (int64_t d = axis; d < x.rank(); ++d) stat[d] = 1;
    ONYX_ASSIGN_OR_RETURN(Tensor s, NewOutput(ctx, 1, DType::kFloat, stat));
    a.inv_std_out = s.data<float>();
  }
  const int threads = common::ThreadsFor(x.numel() * 4, ctx.intra_op_threads());
  ParallelFor(a.rows, cols * 4, threads,
              [&](int64_t r0, int64_t r1) { reference::SkipNormRows(a, r0, r1); });
  return Status::Ok();
}

// ======================= EmbedLayerNormalization =======================
// input_ids, segment_ids?, word_embedding, position_embedding, segment_embedding?, gamma, beta,
// mask?, position_ids? -> output, mask_index?, embedding_sum?

Status InferEmbedLayerNorm(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(IntAttrIn(node, "mask_index_type", 1, {0, 1}));
  const char* required[] = {"input_ids", nullptr, "word_embedding", "position_embedding", nullptr,
                            "gamma",     "beta"};
  for (int i = 0; i < 7; ++i)
    if (required[i]) ONYX_RETURN_IF_ERROR(Require(ctx, i, required[i]));
  if (Has(ctx, 1) != Has(ctx, 4)) {
    return node.Invalid("inputs 1 (segment_ids) and 4 (segment_embedding) must be given together");
  }
  for (int i : {0, 1, 7, 8}) ONYX_RETURN_IF_ERROR(Expect(ctx, i, kI32));
  for (int i : {2, 3, 4, 5, 6}) ONYX_RETURN_IF_ERROR(Expect(ctx, i, kF32));
  ONYX_RETURN_IF_ERROR(ExpectRank(ctx, 0, {2}));
  for (int i : {2, 3, 4}) ONYX_RETURN_IF_ERROR(ExpectRank(ctx, i, {2}));
  const int64_t hidden = DimOf(ctx, 2, 1);
  for (int i : {3, 4}) {
    const int64_t h = DimOf(ctx, i, 1);
    if (hidden >= 0 && h >= 0 && h != hidden) {
      return node.Invalid("input ", i, " '", InputName(node, i), "' has type ",
                          TypeOf(ctx, i).ToString(), "; expected ", hidden,
                          " columns like word_embedding");
    }
  }
  for (int i : {5, 6}) ONYX_RETURN_IF_ERROR(ExpectCountOf(ctx, i, hidden, "one per hidden unit"));
  const TypeInfo& ids = TypeOf(ctx, 0);
  std::vector<Dim> bs = ids.has_shape ? ids.dims : std::vector<Dim>{Dim(), Dim()};
  std::vector<Dim> out = bs;
  out.push_back(hidden >= 0 ? Dim::Known(hidden) : Dim());
  ctx.SetOutputType(0, RankedType(DType::kFloat, out));
  if (HasOut(ctx, 1)) ctx.SetOutputType(1, RankedType(DType::kInt32, {bs[0]}));
  if (HasOut(ctx, 2)) ctx.SetOutputType(2, RankedType(DType::kFloat, out));
  return Status::Ok();
}

// Checks the operands, writes mask_index, allocates the outputs; `fast`: the embedding sums and
// onyx's SIMD LayerNorm rows split between the threads, else the reference loops.
Status RunEmbedLayerNorm(KernelContext& ctx, bool fast) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  for (int i : {0, 2, 3, 5, 6})
    if (!Opt(ctx, i)) return node.Invalid("input ", i, " is required");
  for (int i : {0, 1, 7, 8})
    if (Opt(ctx, i)) ONYX_RETURN_IF_ERROR(RunType(ctx, i, DType::kInt32));
  for (int i : {2, 3, 4})
    if (Opt(ctx, i)) ONYX_RETURN_IF_ERROR(RunType(ctx, i, DType::kFloat));
  const Tensor& ids = ctx.input(0);
  const Tensor& word = ctx.input(2);
  const Tensor& pos = ctx.input(3);
  const Tensor* seg_ids = Opt(ctx, 1);
  const Tensor* seg = Opt(ctx, 4);
  const Tensor* mask = Opt(ctx, 7);
  const Tensor* pos_ids = Opt(ctx, 8);
  if (ids.rank() != 2 || word.rank() != 2 || pos.rank() != 2 || (seg && seg->rank() != 2)) {
    return node.Invalid("input_ids ", ShapeToString(ids.shape()), " must be [B, S] and the ",
                        "embeddings [rows, hidden]");
  }
  if (!seg_ids != !seg)
    return node.Invalid("inputs 1 (segment_ids) and 4 (segment_embedding) must be given together");
  reference::EmbedLayerNormArgs a;
  a.batch = ids.dim(0);
  a.seq = ids.dim(1);
  a.hidden = word.dim(1);
  if (pos.dim(1) != a.hidden || (seg && seg->dim(1) != a.hidden)) {
    return node.Invalid("position_embedding ", ShapeToString(pos.shape()),
                        " and segment_embedding must have word_embedding's ", a.hidden, " columns");
  }
  const Shape bs = {a.batch, a.seq};
  if ((seg_ids && seg_ids->shape() != bs) || (mask && mask->shape() != bs)) {
    return node.Invalid("segment_ids and mask must have input_ids' shape ", ShapeToString(bs));
  }
  // Every index is checked before anything is read.
  const auto check = [&](const Tensor& t, int input, int64_t rows, const char* table) -> Status {
    const int32_t* v = t.data<int32_t>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (v[i] < 0 || v[i] >= rows)
        return node.Fail(DescribeInput(node, input), " holds ", v[i], ", outside [0, ", rows,
                         ") (the rows of ", table, ")");
    }
    return Status::Ok();
  };
  ONYX_RETURN_IF_ERROR(check(ids, 0, word.dim(0), "word_embedding"));
  if (seg_ids) ONYX_RETURN_IF_ERROR(check(*seg_ids, 1, seg->dim(0), "segment_embedding"));
  if (pos_ids) {
    if (pos_ids->rank() != 2 || (pos_ids->dim(0) != a.batch && pos_ids->dim(0) != 1) ||
        pos_ids->dim(1) != a.seq) {
      return node.Invalid(DescribeInput(node, 8), " has shape ", ShapeToString(pos_ids->shape()),
                          "; expected [", a.batch, ",", a.seq, "] or [1,", a.seq, "]");
    }
    ONYX_RETURN_IF_ERROR(check(*pos_ids, 8, pos.dim(0), "position_embedding"));
    a.position_ids = pos_ids->data<int32_t>();
    a.pos_batch_stride = pos_ids->dim(0) == 1 ? 0 : a.seq;
  } else if (a.seq > pos.dim(0)) {
    return node.Fail("sequence length ", a.seq, " exceeds the ", pos.dim(0),
                     " rows of position_embedding");
  }
  a.input_ids = ids.data<int32_t>();
  a.segment_ids = seg_ids ? seg_ids->data<int32_t>() : nullptr;
  a.word = word.data<float>();
  a.position = pos.data<float>();
  a.segment = seg ? seg->data<float>() : nullptr;
  ONYX_ASSIGN_OR_RETURN(a.gamma, FloatVector(ctx, 5, a.hidden));
  ONYX_ASSIGN_OR_RETURN(a.beta, FloatVector(ctx, 6, a.hidden));
  a.epsilon = node.attr_float("epsilon", 1e-12f);
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, DType::kFloat, {a.batch, a.seq, a.hidden}));
  a.y = y.data<float>();
  if (WantOut(ctx, 2)) {
    ONYX_ASSIGN_OR_RETURN(Tensor s, NewOutput(ctx, 2, DType::kFloat, {a.batch, a.seq, a.hidden}));
    a.embedding_sum = s.data<float>();
  }
  if (fast) {
    const int64_t h = a.hidden, rows = a.batch * a.seq;
    float* sums = a.embedding_sum ? a.embedding_sum : a.y;
    const int threads = common::ThreadsFor(rows * h * 4, ctx.intra_op_threads());
    ParallelFor(rows, h * 4, threads, [&](int64_t r0, int64_t r1) {
      for (int64_t t = r0; t < r1; ++t) {
        const int64_t b = t / a.seq, s = t % a.seq;
        const float* word = a.word + static_cast<int64_t>(a.input_ids[t]) * h;
        const int64_t p = a.position_ids ? a.position_ids[b * a.pos_batch_stride + s] : s;
        const float* position = a.position + p * h;
        float* out = sums + t * h;
        for (int64_t j = 0; j < h; ++j) out[j] = word[j] + position[j];
        if (a.segment_ids) {
          const float* seg = a.segment + static_cast<int64_t>(a.segment_ids[t]) * h;
          for (int64_t j = 0; j < h; ++j) out[j] += seg[j];
        }
      }
      common::LayerNormRowsF32(sums + r0 * h, a.y + r0 * h, r1 - r0, h, a.gamma, a.beta, a.epsilon,
                               nullptr, nullptr);
    });
  } else {
    reference::EmbedLayerNorm(a);
  }
  if (WantOut(ctx, 1)) {
    // ORT's mask_index: the number of nonzero mask values per sequence (0 without a mask).
    ONYX_ASSIGN_OR_RETURN(Tensor mi, NewOutput(ctx, 1, DType::kInt32, {a.batch}));
    int32_t* dst = mi.data<int32_t>();
    for (int64_t b = 0; b < a.batch; ++b) {
      int32_t n = 0;
      for (int64_t s = 0; mask && s < a.seq; ++s) n += mask->data<int32_t>()[b * a.seq + s] != 0;
      dst[b] = n;
    }
  }
  return Status::Ok();
}

Status EmbedLayerNormKernel(KernelContext& ctx) {
  return RunEmbedLayerNorm(ctx, false);
}

// ======================= Gelu family =======================

enum class GeluOp { kGelu, kBiasGelu, kFastGelu, kQuickGelu };

Status InferGeluOp(InferContext& ctx, GeluOp op) {
  ONYX_RETURN_IF_ERROR(Require(ctx, 0, "X"));
  if (op == GeluOp::kBiasGelu) ONYX_RETURN_IF_ERROR(Require(ctx, 1, "bias"));
  for (int i = 0; i < ctx.num_inputs(); ++i) ONYX_RETURN_IF_ERROR(Expect(ctx, i, kF32));
  if (op == GeluOp::kBiasGelu || op == GeluOp::kFastGelu) {
    ONYX_RETURN_IF_ERROR(ExpectRank(ctx, 1, {1}));
    ONYX_RETURN_IF_ERROR(
        ExpectCountOf(ctx, 1, DimOf(ctx, 0, -1), "one per element of X's last dim"));
  }
  ctx.SetOutputType(0, TypeOf(ctx, 0));
  return Status::Ok();
}
Status InferGelu(InferContext& ctx) {
  return InferGeluOp(ctx, GeluOp::kGelu);
}
Status InferBiasGelu(InferContext& ctx) {
  return InferGeluOp(ctx, GeluOp::kBiasGelu);
}
Status InferFastGelu(InferContext& ctx) {
  return InferGeluOp(ctx, GeluOp::kFastGelu);
}
Status InferQuickGelu(InferContext& ctx) {
  return InferGeluOp(ctx, GeluOp::kQuickGelu);
}

struct GeluRun {
  const float* x = nullptr;
  const float* bias = nullptr;
  int64_t bias_n = 1, n = 0;
  float* y = nullptr;
};

StatusOr<GeluRun> PrepareGelu(KernelContext& ctx, GeluOp op) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  ONYX_RETURN_IF_ERROR(RunType(ctx, 0, DType::kFloat));
  const Tensor& x = ctx.input(0);
  GeluRun g;
  g.x = x.data<float>();
  g.n = x.numel();
  if (op == GeluOp::kBiasGelu || op == GeluOp::kFastGelu) {
    const Tensor* bias = Opt(ctx, 1);
    if (op == GeluOp::kBiasGelu && !bias) return node.Invalid("input 1 (bias) is required");
    if (bias) {
      const int64_t last = x.rank() > 0 ? x.dim(x.rank() - 1) : 1;
      if (bias->dtype() != DType::kFloat || bias->rank() != 1 || bias->dim(0) != last) {
        return node.Invalid(DescribeInput(node, 1), " is ", DTypeName(bias->dtype()),
                            ShapeToString(bias->shape()), "; expected float [", last, "]");
      }
      g.bias = bias->data<float>();
      g.bias_n = std::max<int64_t>(last, 1);
    }
  }
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, DType::kFloat, x.shape()));
  g.y = y.data<float>();
  return g;
}

reference::MsGeluKind KindOf(GeluOp op) {
  switch (op) {
    case GeluOp::kFastGelu:
      return reference::MsGeluKind::kTanh;
    case GeluOp::kQuickGelu:
      return reference::MsGeluKind::kQuick;
    default:
      return reference::MsGeluKind::kErf;
  }
}

Status RunGeluRef(KernelContext& ctx, GeluOp op) {
  ONYX_ASSIGN_OR_RETURN(GeluRun g, PrepareGelu(ctx, op));
  reference::MsGelu(KindOf(op), ctx.node().attr_float("alpha", 1.702f), g.x, g.bias, g.bias_n, g.y,
                    g.n);
  return Status::Ok();
}
Status GeluRef(KernelContext& ctx) {
  return RunGeluRef(ctx, GeluOp::kGelu);
}
Status BiasGeluRef(KernelContext& ctx) {
  return RunGeluRef(ctx, GeluOp::kBiasGelu);
}
Status FastGeluRef(KernelContext& ctx) {
  return RunGeluRef(ctx, GeluOp::kFastGelu);
}
Status QuickGeluRef(KernelContext& ctx) {
  return RunGeluRef(ctx, GeluOp::kQuickGelu);
}

// The bias add, then onyx's SIMD activation (UnaryF32: erf / tanh Gelu, sigmoid), in chunks of
// whole rows split between the threads.
class GeluFast : public Kernel {
 public:
  GeluFast(GeluOp op, float alpha) : op_(op), alpha_(alpha) {}
  Status Run(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(GeluRun g, PrepareGelu(ctx, op_));
    const int64_t rows = g.bias_n > 0 ? g.n / g.bias_n : 0;
    const int threads = common::ThreadsFor(g.n * 8, ctx.intra_op_threads());
    ParallelFor(rows, g.bias_n * 8, threads, [&](int64_t r0, int64_t r1) {
      const int64_t i0 = r0 * g.bias_n, count = (r1 - r0) * g.bias_n;
      const float* src = g.x + i0;
      float* dst = g.y + i0;
      if (g.bias) {
        for (int64_t r = r0; r < r1; ++r) {
          const float* xr = g.x + r * g.bias_n;
          float* yr = g.y + r * g.bias_n;
          for (int64_t j = 0; j < g.bias_n; ++j) yr[j] = xr[j] + g.bias[j];
        }
        src = dst;
      }
      common::UnaryParams p;
      if (op_ == GeluOp::kQuickGelu) {
        // v * sigmoid(alpha v): the sigmoid into y, then the product (element i read first).
        std::vector<float> v(src, src + count);
        for (int64_t i = 0; i < count; ++i) dst[i] = alpha_ * v[i];
        common::UnaryF32(common::UnaryOp::kSigmoid, p, dst, dst, count);
        for (int64_t i = 0; i < count; ++i) dst[i] *= v[i];
        return;
      }
      common::UnaryF32(
          op_ == GeluOp::kFastGelu ? common::UnaryOp::kGeluTanh : common::UnaryOp::kGelu, p, src,
          dst, count);
    });
    return Status::Ok();
  }

 private:
  GeluOp op_;
  float alpha_;
};

// ---- BiasSplitGelu: X [N, S, D], bias [D] -> Y [N, S, D/2] ----

Status InferBiasSplitGelu(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(Require(ctx, 0, "X"));
  ONYX_RETURN_IF_ERROR(Require(ctx, 1, "bias"));
  for (int i : {0, 1}) ONYX_RETURN_IF_ERROR(Expect(ctx, i, kF32));
  ONYX_RETURN_IF_ERROR(ExpectRank(ctx, 0, {3}));
  ONYX_RETURN_IF_ERROR(ExpectRank(ctx, 1, {1}));
  const int64_t d = DimOf(ctx, 0, -1);
  if (d >= 0 && d % 2 != 0) {
    return ctx.node().Invalid("input 0 '", InputName(ctx.node(), 0), "' has type ",
                              TypeOf(ctx, 0).ToString(), "; expected an even last dim");
  }
  ONYX_RETURN_IF_ERROR(ExpectCountOf(ctx, 1, d, "one per element of X's last dim"));
  TypeInfo y = TypeOf(ctx, 0);
  if (y.has_shape) y.dims.back() = d >= 0 ? Dim::Known(d / 2) : Dim();
  ctx.SetOutputType(0, y);
  return Status::Ok();
}

Status BiasSplitGeluKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  ONYX_RETURN_IF_ERROR(RunType(ctx, 0, DType::kFloat));
  const Tensor& x = ctx.input(0);
  if (x.rank() != 3 || x.dim(2) % 2 != 0)
    return node.Invalid(DescribeInput(node, 0), " has shape ", ShapeToString(x.shape()),
                        "; expected [N, S, D] with D even");
  const int64_t d = x.dim(2);
  ONYX_ASSIGN_OR_RETURN(const float* bias, FloatVector(ctx, 1, d));
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, DType::kFloat, {x.dim(0), x.dim(1), d / 2}));
  reference::BiasSplitGelu(x.data<float>(), bias, x.dim(0) * x.dim(1), d, y.data<float>());
  return Status::Ok();
}

// ======================= attention =======================

constexpr float kDefaultMaskFilter = -10000.0f;

// [B, L, N*D] (rows `row` floats apart, starting at column `col`) + bias[col...] -> [B, N, L, D].
void ToHeads(const float* src, int64_t batch, int64_t len, int64_t heads, int64_t d, int64_t row,
             int64_t col, const float* bias, float* dst) {
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t s = 0; s < len; ++s) {
        const float* in = src + (b * len + s) * row + col + h * d;
        float* out = dst + ((b * heads + h) * len + s) * d;
        for (int64_t j = 0; j < d; ++j) out[j] = in[j] + (bias ? bias[col + h * d + j] : 0.f);
      }
}

// Packed [B, L, N, P, D] (P parts) -> P tensors [B, N, L, D], part p plus bias[p * hq + h * D...].
void UnpackHeads(const float* src, int64_t batch, int64_t len, int64_t heads, int64_t d, int parts,
                 const float* bias, int64_t hq, float* const* dst) {
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < len; ++s)
      for (int64_t h = 0; h < heads; ++h)
        for (int part = 0; part < parts; ++part) {
          const float* in = src + (((b * len + s) * heads + h) * parts + part) * d;
          float* out = dst[part] + ((b * heads + h) * len + s) * d;
          const float* bp = bias ? bias + part * hq + h * d : nullptr;
          for (int64_t j = 0; j < d; ++j) out[j] = in[j] + (bp ? bp[j] : 0.f);
        }
}

// present[b, h] = concat(past[b, h] (p rows), cur[b, h] (l rows)) along the sequence.
void ConcatHeads(const float* past, const float* cur, int64_t bh, int64_t p, int64_t l, int64_t d,
                 float* present) {
  for (int64_t i = 0; i < bh; ++i) {
    float* dst = present + i * (p + l) * d;
    if (p > 0) std::memcpy(dst, past + i * p * d, sizeof(float) * p * d);
    std::memcpy(dst + p * d, cur + i * l * d, sizeof(float) * l * d);
  }
}

// The additive bias of Attention and MultiHeadAttention: key padding masks (mask_filter_value
// where a key is masked, as ORT's CPU kernels add it) and attention_bias, [Bb, Nb, S, T].
struct AdditiveBias {
  std::vector<float> data;
  int64_t batch = 1, heads = 1;
};

// mask: int32 [B] (key lengths: right padding), [2B] (end then start positions), [B, T] or
// [B, S, T] (0 masks a key). attention_bias: [B|1, N|1, S, T]. Either may be null.
StatusOr<AdditiveBias> BuildAdditiveBias(const NodeView& node, int mask_input, const Tensor* mask,
                                         int bias_input, const Tensor* attn_bias, int64_t batch,
                                         int64_t heads, int64_t s_len, int64_t t_len,
                                         float filter) {
  AdditiveBias out;
  if (!mask && !attn_bias) return out;
  if (attn_bias) {
    const Shape& bs = attn_bias->shape();
    if (attn_bias->dtype() != DType::kFloat || bs.size() != 4 || (bs[0] != 1 && bs[0] != batch) ||
        (bs[1] != 1 && bs[1] != heads) || bs[2] != s_len || bs[3] != t_len) {
      return node.Invalid(DescribeInput(node, bias_input), " is ", DTypeName(attn_bias->dtype()),
                          ShapeToString(bs), "; expected float [", batch, " or 1, ", heads,
                          " or 1, ", s_len, ", ", t_len, "]");
    }
    out.batch = bs[0];
    out.heads = bs[1];
  }
  if (mask) out.batch = batch;
  const int64_t plane = s_len * t_len;
  out.data.assign(static_cast<size_t>(out.batch * out.heads * plane), 0.f);
  if (mask) {
    if (mask->dtype() != DType::kInt32)
      return node.NotSupported(DescribeInput(node, mask_input), " has type ",
                               DTypeName(mask->dtype()), "; expected int32");
    const Shape& ms = mask->shape();
    const int32_t* m = mask->data<int32_t>();
    std::vector<float> plane_mask(static_cast<size_t>(plane));
    for (int64_t b = 0; b < batch; ++b) {
      if (ms.size() == 1 && (ms[0] == batch || ms[0] == 2 * batch)) {
        const int64_t end = m[b];
        const int64_t begin = ms[0] == 2 * batch ? m[batch + b] : 0;
        for (int64_t i = 0; i < s_len; ++i)
          for (int64_t j = 0; j < t_len; ++j)
            plane_mask[i * t_len + j] = j >= end || j < begin ? filter : 0.f;
      } else if (ms.size() == 2 && ms[0] == batch && ms[1] == t_len) {
        for (int64_t i = 0; i < s_len; ++i)
          for (int64_t j = 0; j < t_len; ++j)
            plane_mask[i * t_len + j] = m[b * t_len + j] == 0 ? filter : 0.f;
      } else if (ms.size() == 3 && ms[0] == batch && ms[1] == s_len && ms[2] == t_len) {
        for (int64_t i = 0; i < plane; ++i) plane_mask[i] = m[b * plane + i] == 0 ? filter : 0.f;
      } else {
        return node.NotSupported(DescribeInput(node, mask_input), " has shape ", ShapeToString(ms),
                                 "; implemented: [", batch, "], [", 2 * batch, "], [", batch, ",",
                                 t_len, "] and [", batch, ",", s_len, ",", t_len, "]");
      }
      for (int64_t h = 0; h < out.heads; ++h) {
        float* dst = out.data.data() + (b * out.heads + h) * plane;
        for (int64_t i = 0; i < plane; ++i) dst[i] += plane_mask[i];
      }
    }
  }
  if (attn_bias) {
    const float* src = attn_bias->data<float>();
    const int64_t sb = attn_bias->dim(0), sh = attn_bias->dim(1);
    for (int64_t b = 0; b < out.batch; ++b)
      for (int64_t h = 0; h < out.heads; ++h) {
        const float* in = src + ((sb == 1 ? 0 : b) * sh + (sh == 1 ? 0 : h)) * plane;
        float* dst = out.data.data() + (b * out.heads + h) * plane;
        for (int64_t i = 0; i < plane; ++i) dst[i] += in[i];
      }
  }
  return out;
}

// A plan-time refusal of key padding mask shapes the kernels do not implement ([3B + 2], 4-D).
Status CheckMaskRank(InferContext& ctx, int i) {
  const int64_t r = Rank(ctx, i);
  if (r < 0 || (r >= 1 && r <= 3)) return Status::Ok();
  return ctx.node().NotSupported("input ", i, " '", InputName(ctx.node(), i), "' has type ",
                                 TypeOf(ctx, i).ToString(),
                                 "; implemented mask shapes: [B], [2B], [B, T], [B, S, T]");
}

void RunAttentionCore(const reference::MsAttentionArgs& a, int threads, bool fast) {
  if (fast) {
    common::MsAttentionF32(a, threads);
  } else {
    reference::MsAttention(a, threads);
  }
}

// The shared tail of Attention and MultiHeadAttention: q [B, N, S, D], k [B, N, T, D] and
// v [B, N, T, Dv], the key padding mask (input `mask_input`) and attention_bias (input 5) ->
// output 0 [B, S, N*Dv]. A causal query row i sees the keys up to T - S + i.
Status RunHeadsAttention(KernelContext& ctx, int mask_input, int64_t batch, int64_t n,
                         int64_t s_len, int64_t t_len, int64_t d, int64_t dv, const float* q,
                         const float* k, const float* v, bool fast) {
  const NodeView& node = ctx.node();
  const float filter = node.attr_float("mask_filter_value", kDefaultMaskFilter);
  ONYX_ASSIGN_OR_RETURN(AdditiveBias add,
                        BuildAdditiveBias(node, mask_input, Opt(ctx, mask_input), 5, Opt(ctx, 5),
                                          batch, n, s_len, t_len, filter));
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, DType::kFloat, {batch, s_len, n * dv}));
  reference::MsAttentionArgs a;
  a.batch = batch;
  a.q_heads = a.kv_heads = n;
  a.q_len = s_len;
  a.kv_len = a.kv_cap = t_len;
  a.head_size = d;
  a.v_head_size = dv;
  a.q = q;
  a.k = k;
  a.v = v;
  a.scale = node.has_attr("scale") ? node.attr_float("scale", 1.f)
                                   : static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  if (!add.data.empty()) {
    a.bias = add.data.data();
    a.bias_batch = add.batch;
    a.bias_heads = add.heads;
  }
  a.causal = node.attr_int("unidirectional", 0) != 0;
  a.causal_offset.assign(static_cast<size_t>(batch), t_len - s_len);
  a.y = y.data<float>();
  RunAttentionCore(a, ctx.intra_op_threads(), fast);
  return Status::Ok();
}

// ---- com.microsoft Attention ----
// input [B, S, Hin], weights [Hin, H + H + Hv], bias?, mask_index?, past? [2, B, N, P, D],
// attention_bias?, past_sequence_length? -> output [B, S, Hv], present? [2, B, N, P + S, D].

struct MsAttentionSizes {
  int64_t heads = 0, hidden = 0, v_hidden = 0;
};

StatusOr<MsAttentionSizes> AttentionSizes(const NodeView& node, int64_t weight_cols) {
  MsAttentionSizes s;
  ONYX_ASSIGN_OR_RETURN(s.heads, node.RequiredInt("num_heads"));
  if (s.heads <= 0) return node.Invalid("attribute 'num_heads' is ", s.heads, "; expected > 0");
  const std::vector<int64_t> qkv = node.attr_ints("qkv_hidden_sizes");
  if (!qkv.empty()) {
    if (qkv.size() != 3 || qkv[0] != qkv[1] || qkv[0] <= 0 || qkv[2] <= 0)
      return node.Invalid("attribute 'qkv_hidden_sizes' must hold 3 positive values with Q's ",
                          "equal to K's");
    s.hidden = qkv[0];
    s.v_hidden = qkv[2];
  } else if (weight_cols >= 0) {
    if (weight_cols % 3 != 0)
      return node.Invalid("input 1 (weights) has ", weight_cols,
                          " columns; expected 3 * hidden_size");
    s.hidden = s.v_hidden = weight_cols / 3;
  } else {
    return s;
  }
  if (weight_cols >= 0 && 2 * s.hidden + s.v_hidden != weight_cols)
    return node.Invalid("input 1 (weights) has ", weight_cols, " columns; expected ",
                        2 * s.hidden + s.v_hidden, " (qkv_hidden_sizes)");
  if (s.hidden % s.heads != 0 || s.v_hidden % s.heads != 0)
    return node.Invalid("hidden sizes ", s.hidden, " and ", s.v_hidden,
                        " must be multiples of num_heads ", s.heads);
  return s;
}

Status CheckAttentionAttrs(const NodeView& node) {
  ONYX_RETURN_IF_ERROR(IntAttrIn(node, "do_rotary", 0, {0}));
  ONYX_RETURN_IF_ERROR(IntAttrIn(node, "past_present_share_buffer", 0, {0}));
  return IntAttrIn(node, "unidirectional", 0, {0, 1});
}

Status InferMsAttention(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(CheckAttentionAttrs(node));
  ONYX_RETURN_IF_ERROR(Require(ctx, 0, "input"));
  ONYX_RETURN_IF_ERROR(Require(ctx, 1, "weights"));
  for (int i : {0, 1, 2, 4, 5}) ONYX_RETURN_IF_ERROR(Expect(ctx, i, kF32));
  ONYX_RETURN_IF_ERROR(Expect(ctx, 3, kI32));
  ONYX_RETURN_IF_ERROR(
      RefuseInput(ctx, 6, "past_sequence_length, for shared past/present buffers"));
  ONYX_RETURN_IF_ERROR(CheckMaskRank(ctx, 3));
  ONYX_RETURN_IF_ERROR(ExpectRank(ctx, 0, {3}));
  ONYX_RETURN_IF_ERROR(ExpectRank(ctx, 1, {2}));
  ONYX_RETURN_IF_ERROR(ExpectRank(ctx, 4, {5}));
  ONYX_ASSIGN_OR_RETURN(MsAttentionSizes s, AttentionSizes(node, DimOf(ctx, 1, 1)));
  if (Has(ctx, 4) && s.hidden != s.v_hidden && s.hidden > 0)
    return node.NotSupported("input 4 (past) needs equal Q, K and V hidden sizes");
  const TypeInfo& x = TypeOf(ctx, 0);
  std::vector<Dim> bs =
      x.has_shape ? std::vector<Dim>{x.dims[0], x.dims[1]} : std::vector<Dim>{Dim(), Dim()};
  std::vector<Dim> out = bs;
  out.push_back(s.v_hidden > 0 ? Dim::Known(s.v_hidden) : Dim());
  ctx.SetOutputType(0, RankedType(DType::kFloat, out));
  if (HasOut(ctx, 1)) {
    const int64_t d = s.hidden > 0 ? s.hidden / s.heads : -1;
    const int64_t p = DimOf(ctx, 4, 3);
    const int64_t sl = x.has_shape && x.dims[1].known() ? x.dims[1].value : -1;
    const int64_t total = !Has(ctx, 4) ? sl : (p >= 0 && sl >= 0 ? p + sl : -1);
    ctx.SetOutputType(1, RankedType(DType::kFloat, {Dim::Known(2), bs[0], Dim::Known(s.heads),
                                                    total >= 0 ? Dim::Known(total) : Dim(),
                                                    d >= 0 ? Dim::Known(d) : Dim()}));
  }
  return Status::Ok();
}

// `packed`: the weights W^T in column panels (constant weights, fast kernel), else null; `fast`:
// the SIMD attention core instead of the reference loops.
Status RunMsAttention(KernelContext& ctx, const common::PanelWeights* packed, bool fast) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(CheckAttentionAttrs(node));
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  for (int i : {0, 1, 2, 4, 5})
    if (Opt(ctx, i)) ONYX_RETURN_IF_ERROR(RunType(ctx, i, DType::kFloat));
  if (Opt(ctx, 6)) return node.NotSupported("input 6 (past_sequence_length) is not implemented");
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  if (x.rank() != 3 || w.rank() != 2 || w.dim(0) != x.dim(2)) {
    return node.Invalid("input ", ShapeToString(x.shape()), " and weights ",
                        ShapeToString(w.shape()), " must be [B, S, Hin] and [Hin, 3H]");
  }
  ONYX_ASSIGN_OR_RETURN(MsAttentionSizes sz, AttentionSizes(node, w.dim(1)));
  const int64_t batch = x.dim(0), s_len = x.dim(1), n = sz.heads;
  const int64_t d = sz.hidden / n, dv = sz.v_hidden / n, cols = w.dim(1);
  ONYX_ASSIGN_OR_RETURN(const float* bias, FloatVector(ctx, 2, cols));
  const Tensor* past = Opt(ctx, 4);
  int64_t p_len = 0;
  if (past) {
    if (past->rank() != 5 || past->dim(0) != 2 || past->dim(1) != batch || past->dim(2) != n ||
        past->dim(4) != d || d != dv) {
      return node.Invalid(DescribeInput(node, 4), " has shape ", ShapeToString(past->shape()),
                          "; expected [2, ", batch, ", ", n, ", P, ", d, "]");
    }
    p_len = past->dim(3);
  }
  const int64_t t_len = p_len + s_len;
  // The projection [B*S, Hin] x [Hin, cols]: the panel GEMM on packed constant weights, else the
  // shared GEMM.
  std::vector<float> proj(static_cast<size_t>(batch * s_len * cols));
  const int64_t rows = batch * s_len, k = x.dim(2);
  if (packed && packed->n == cols && packed->k == k) {
    common::PanelWeightsProduct(*packed, x.data<float>(), rows, k, nullptr, nullptr, proj.data(),
                                cols, ctx.intra_op_threads());
  } else {
    Gemm<float>(false, false, rows, cols, k, 1.f, x.data<float>(), k, w.data<float>(), cols, 0.f,
                proj.data(), cols, ctx.intra_op_threads() > 1);
  }
  std::vector<float> q(static_cast<size_t>(batch * n * s_len * d));
  std::vector<float> k_new(static_cast<size_t>(batch * n * s_len * d));
  std::vector<float> v_new(static_cast<size_t>(batch * n * s_len * dv));
  ToHeads(proj.data(), batch, s_len, n, d, cols, 0, bias, q.data());
  ToHeads(proj.data(), batch, s_len, n, d, cols, sz.hidden, bias, k_new.data());
  ToHeads(proj.data(), batch, s_len, n, dv, cols, 2 * sz.hidden, bias, v_new.data());
  std::vector<float> k_all, v_all;
  const float* k_ptr = k_new.data();
  const float* v_ptr = v_new.data();
  if (past) {
    k_all.resize(static_cast<size_t>(batch * n * t_len * d));
    v_all.resize(k_all.size());
    const float* pk = past->data<float>();
    ConcatHeads(pk, k_new.data(), batch * n, p_len, s_len, d, k_all.data());
    ConcatHeads(pk + batch * n * p_len * d, v_new.data(), batch * n, p_len, s_len, d, v_all.data());
    k_ptr = k_all.data();
    v_ptr = v_all.data();
  }
  if (WantOut(ctx, 1)) {
    ONYX_ASSIGN_OR_RETURN(Tensor present,
                          NewOutput(ctx, 1, DType::kFloat, {2, batch, n, t_len, d}));
    float* dst = present.data<float>();
    const int64_t half = batch * n * t_len * d;
    std::memcpy(dst, k_ptr, sizeof(float) * half);
    std::memcpy(dst + half, v_ptr, sizeof(float) * half);
  }
  return RunHeadsAttention(ctx, 3, batch, n, s_len, t_len, d, dv, q.data(), k_ptr, v_ptr, fast);
}

Status MsAttentionKernel(KernelContext& ctx) {
  return RunMsAttention(ctx, nullptr, false);
}

// The fast Attention: constant weights packed once (W^T in column panels, shared by the session's
// shape specialisations) and the SIMD attention core.
class MsAttentionFast : public Kernel {
 public:
  explicit MsAttentionFast(std::shared_ptr<const common::PanelWeights> packed)
      : packed_(std::move(packed)) {}
  Status Run(KernelContext& ctx) const override { return RunMsAttention(ctx, packed_.get(), true); }

 private:
  std::shared_ptr<const common::PanelWeights> packed_;
};

StatusOr<std::unique_ptr<Kernel>> MakeMsAttentionFast(const NodeView& node,
                                                      const std::vector<TypeInfo>&,
                                                      const KernelCreateInfo& info) {
  std::shared_ptr<const common::PanelWeights> packed;
  const Tensor* w = info.constants.size() > 1 ? info.constants[1] : nullptr;
  if (w && w->dtype() == DType::kFloat && w->rank() == 2 && w->numel() > 0) {
    const int64_t k = w->dim(0), cols = w->dim(1);
    const auto pack = [w, k, cols] {
      std::vector<float> wt(static_cast<size_t>(k * cols));  // [cols, k]: y = x W = x (W^T)^T
      const float* src = w->data<float>();
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < cols; ++j) wt[j * k + i] = src[i * cols + j];
      return std::make_shared<const common::PanelWeights>(
          common::PackPanelWeights(wt.data(), cols, k));
    };
    packed = info.weights ? info.weights->GetOrPack<common::PanelWeights>(
                                *w, "ms_attention_panels", pack, sizeof(float) * k * cols)
                          : pack();
  }
  (void)node;
  return std::unique_ptr<Kernel>(new MsAttentionFast(std::move(packed)));
}

// ---- MultiHeadAttention ----
// query, key?, value?, bias?, key_padding_mask?, attention_bias?, past_key?, past_value?,
// past_sequence_length?, cache_indirection? -> output, present_key?, present_value?, qk?

Status CheckMhaAttrs(const NodeView& node) {
  ONYX_RETURN_IF_ERROR(IntAttrIn(node, "unidirectional", 0, {0, 1}));
  ONYX_ASSIGN_OR_RETURN(const int64_t heads, node.RequiredInt("num_heads"));
  if (heads <= 0) return node.Invalid("attribute 'num_heads' is ", heads, "; expected > 0");
  return Status::Ok();
}

Status InferMha(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(CheckMhaAttrs(node));
  ONYX_RETURN_IF_ERROR(Require(ctx, 0, "query"));
  for (int i : {0, 1, 2, 3, 5, 6, 7}) ONYX_RETURN_IF_ERROR(Expect(ctx, i, kF32));
  ONYX_RETURN_IF_ERROR(Expect(ctx, 4, kI32));
  ONYX_RETURN_IF_ERROR(CheckMaskRank(ctx, 4));
  ONYX_RETURN_IF_ERROR(
      RefuseInput(ctx, 8, "past_sequence_length, for shared past/present buffers"));
  ONYX_RETURN_IF_ERROR(RefuseInput(ctx, 9, "cache_indirection, for beam search"));
  ONYX_RETURN_IF_ERROR(RefuseOutput(ctx, 3, "qk"));
  ONYX_RETURN_IF_ERROR(ExpectRank(ctx, 0, {3, 5}));
  ONYX_RETURN_IF_ERROR(ExpectRank(ctx, 1, {3, 4, 5}));
  if (Rank(ctx, 1) == 4 && Has(ctx, 3))
    return node.NotSupported("input 3 (bias) with a 4-D key [B, N, L, D] is not implemented");
  if (Rank(ctx, 1) == 4 && (Has(ctx, 6) || Has(ctx, 7)))
    return node.Invalid("inputs past_key/past_value cannot be used with a 4-D key");
  if (Has(ctx, 6) != Has(ctx, 7))
    return node.Invalid("inputs 6 (past_key) and 7 (past_value) must be given together");
  const int64_t heads = node.attr_int("num_heads", 1);
  const TypeInfo& q = TypeOf(ctx, 0);
  std::vector<Dim> bs =
      q.has_shape ? std::vector<Dim>{q.dims[0], q.dims[1]} : std::vector<Dim>{Dim(), Dim()};
  // The output's hidden size is V's: known from a 3-D value, a 4-D value or a packed query.
  int64_t v_hidden = -1;
  if (Rank(ctx, 0) == 5) {
    const int64_t d = DimOf(ctx, 0, 4);
    if (d >= 0) v_hidden = heads * d;
  } else if (Rank(ctx, 2) == 3) {
    v_hidden = DimOf(ctx, 2, 2);
  } else if (Rank(ctx, 2) == 4) {
    const int64_t d = DimOf(ctx, 2, 3);
    if (d >= 0) v_hidden = heads * d;
  } else if (Rank(ctx, 1) == 5) {
    const int64_t d = DimOf(ctx, 1, 4);
    if (d >= 0) v_hidden = heads * d;
  }
  std::vector<Dim> out = bs;
  out.push_back(v_hidden >= 0 ? Dim::Known(v_hidden) : Dim());
  ctx.SetOutputType(0, RankedType(DType::kFloat, out));
  for (int o : {1, 2})
    if (HasOut(ctx, o))
      ctx.SetOutputType(o, RankedType(DType::kFloat, {bs[0], Dim::Known(heads), Dim(), Dim()}));
  return Status::Ok();
}

Status RunMha(KernelContext& ctx, bool fast) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(CheckMhaAttrs(node));
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  for (int i : {0, 1, 2, 3, 5, 6, 7})
    if (Opt(ctx, i)) ONYX_RETURN_IF_ERROR(RunType(ctx, i, DType::kFloat));
  if (Opt(ctx, 8) || Opt(ctx, 9))
    return node.NotSupported("inputs 8 and 9 (past_sequence_length, cache_indirection) are not ",
                             "implemented");
  const int64_t n = node.attr_int("num_heads", 1);
  const Tensor& query = ctx.input(0);
  const Tensor* key = Opt(ctx, 1);
  const Tensor* value = Opt(ctx, 2);
  const Tensor* past_key = Opt(ctx, 6);
  const Tensor* past_value = Opt(ctx, 7);
  const auto bad = [&](const char* what) {
    return node.Invalid("query ", ShapeToString(query.shape()), ", key ",
                        key ? ShapeToString(key->shape()) : "(none)", ", value ",
                        value ? ShapeToString(value->shape()) : "(none)", ": ", what);
  };
  if (query.rank() != 3 && query.rank() != 5) return bad("query must be 3-D or packed 5-D");
  const int64_t batch = query.dim(0), s_len = query.dim(1);
  int64_t d = 0, dv = 0, l_len = 0, hq = 0;
  std::vector<float> q, k_new, v_new;
  const Tensor* bias_t = Opt(ctx, 3);
  const float* bias = nullptr;
  bool kv_bnsh = false;  // key/value given as [B, N, L, D]: used as they are
  if (query.rank() == 5) {
    // Packed QKV [B, S, N, 3, D].
    if (key || value || query.dim(2) != n || query.dim(3) != 3)
      return bad("a 5-D query must be [B, S, num_heads, 3, D] with no key and value");
    d = dv = query.dim(4);
    hq = n * d;
    l_len = s_len;
    if (bias_t) {
      ONYX_ASSIGN_OR_RETURN(bias, FloatVector(ctx, 3, 3 * hq));
    }
    q.resize(static_cast<size_t>(batch * n * s_len * d));
    k_new.resize(q.size());
    v_new.resize(q.size());
    float* const parts[] = {q.data(), k_new.data(), v_new.data()};
    UnpackHeads(query.data<float>(), batch, s_len, n, d, 3, bias, hq, parts);
  } else {
    hq = query.dim(2);
    if (hq % n != 0) return bad("query's hidden size must be a multiple of num_heads");
    d = hq / n;
    if (!key) return bad("key is required with a 3-D query");
    if (key->rank() == 5) {
      if (value || key->dim(0) != batch || key->dim(2) != n || key->dim(3) != 2 || key->dim(4) != d)
        return bad("a 5-D key must be packed KV [B, L, num_heads, 2, D] with no value");
      l_len = key->dim(1);
      dv = d;
      if (bias_t) {
        ONYX_ASSIGN_OR_RETURN(bias, FloatVector(ctx, 3, 3 * hq));
      }
      k_new.resize(static_cast<size_t>(batch * n * l_len * d));
      v_new.resize(k_new.size());
      float* const parts[] = {k_new.data(), v_new.data()};
      UnpackHeads(key->data<float>(), batch, l_len, n, d, 2, bias ? bias + hq : nullptr, hq, parts);
    } else if (key->rank() == 3) {
      if (!value || value->rank() != 3 || key->dim(0) != batch || value->dim(0) != batch ||
          key->dim(2) != hq || value->dim(1) != key->dim(1) || value->dim(2) % n != 0)
        return bad("a 3-D key needs a 3-D value: [B, L, H] and [B, L, Hv]");
      l_len = key->dim(1);
      dv = value->dim(2) / n;
      if (bias_t) {
        ONYX_ASSIGN_OR_RETURN(bias, FloatVector(ctx, 3, 2 * hq + n * dv));
      }
      k_new.resize(static_cast<size_t>(batch * n * l_len * d));
      v_new.resize(static_cast<size_t>(batch * n * l_len * dv));
      ToHeads(key->data<float>(), batch, l_len, n, d, hq, 0, bias ? bias + hq : nullptr,
              k_new.data());
      ToHeads(value->data<float>(), batch, l_len, n, dv, n * dv, 0, bias ? bias + 2 * hq : nullptr,
              v_new.data());
    } else if (key->rank() == 4) {
      if (!value || value->rank() != 4 || bias_t || past_key || key->dim(0) != batch ||
          key->dim(1) != n || key->dim(3) != d || value->dim(0) != batch || value->dim(1) != n ||
          value->dim(2) != key->dim(2))
        return bad("a 4-D key needs a 4-D value, [B, num_heads, L, D], without bias or past");
      kv_bnsh = true;
      l_len = key->dim(2);
      dv = value->dim(3);
    } else {
      return bad("key must be 3-D, 4-D or packed 5-D");
    }
    q.resize(static_cast<size_t>(batch * n * s_len * d));
    ToHeads(query.data<float>(), batch, s_len, n, d, hq, 0, bias, q.data());
  }
  int64_t p_len = 0;
  if (!past_key != !past_value)
    return node.Invalid("inputs 6 (past_key) and 7 (past_value) must be given together");
  if (past_key) {
    if (past_key->rank() != 4 || past_key->dim(0) != batch || past_key->dim(1) != n ||
        past_key->dim(3) != d || past_value->rank() != 4 ||
        past_value->shape() != Shape{batch, n, past_key->dim(2), dv})
      return node.Invalid("past_key ", ShapeToString(past_key->shape()), " and past_value ",
                          ShapeToString(past_value->shape()), " must be [", batch, ", ", n,
                          ", P, head_size]");
    p_len = past_key->dim(2);
  }
  const int64_t t_len = p_len + l_len;
  std::vector<float> k_all, v_all;
  const float* k_ptr = kv_bnsh ? key->data<float>() : k_new.data();
  const float* v_ptr = kv_bnsh ? value->data<float>() : v_new.data();
  if (past_key) {
    k_all.resize(static_cast<size_t>(batch * n * t_len * d));
    v_all.resize(static_cast<size_t>(batch * n * t_len * dv));
    ConcatHeads(past_key->data<float>(), k_new.data(), batch * n, p_len, l_len, d, k_all.data());
    ConcatHeads(past_value->data<float>(), v_new.data(), batch * n, p_len, l_len, dv, v_all.data());
    k_ptr = k_all.data();
    v_ptr = v_all.data();
  }
  for (int o : {1, 2}) {
    if (!WantOut(ctx, o)) continue;
    const int64_t width = o == 1 ? d : dv;
    ONYX_ASSIGN_OR_RETURN(Tensor present,
                          NewOutput(ctx, o, DType::kFloat, {batch, n, t_len, width}));
    std::memcpy(present.data<float>(), o == 1 ? k_ptr : v_ptr,
                sizeof(float) * batch * n * t_len * width);
  }
  return RunHeadsAttention(ctx, 4, batch, n, s_len, t_len, d, dv, q.data(), k_ptr, v_ptr, fast);
}

Status MhaKernel(KernelContext& ctx) {
  return RunMha(ctx, false);
}

// ---- rotary embedding on float rows ----

// x[0..rotary_dim) of one head rotated by the angles whose cos/sin are cos[0..rotary_dim/2):
// halves (i, i + rotary_dim/2), or pairs (2i, 2i+1) when interleaved.
void RotateRow(float* x, int64_t rotary_dim, const float* cos, const float* sin, bool interleaved) {
  const int64_t half = rotary_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const int64_t i0 = interleaved ? 2 * i : i;
    const int64_t i1 = interleaved ? 2 * i + 1 : i + half;
    const float a = x[i0], b = x[i1];
    x[i0] = a * cos[i] - b * sin[i];
    x[i1] = b * cos[i] + a * sin[i];
  }
}

// ---- GroupQueryAttention ----
// query, key?, value?, past_key?, past_value?, seqlens_k, total_sequence_length, cos_cache?,
// sin_cache?, position_ids?, attention_bias?, head_sink?, k_scale?, v_scale?, q_norm_weight?,
// k_norm_weight?, query_seqlens? -> output, present_key, present_value, output_qk?

Status CheckGqaAttrs(const NodeView& node) {
  ONYX_ASSIGN_OR_RETURN(const int64_t heads, node.RequiredInt("num_heads"));
  ONYX_ASSIGN_OR_RETURN(const int64_t kv_heads, node.RequiredInt("kv_num_heads"));
  if (heads <= 0 || kv_heads <= 0 || heads % kv_heads != 0)
    return node.Invalid("attributes 'num_heads' (", heads, ") and 'kv_num_heads' (", kv_heads,
                        ") must be positive, num_heads a multiple of kv_num_heads");
  ONYX_RETURN_IF_ERROR(IntAttrIn(node, "do_rotary", 0, {0, 1}));
  ONYX_RETURN_IF_ERROR(IntAttrIn(node, "rotary_interleaved", 0, {0, 1}));
  ONYX_RETURN_IF_ERROR(IntAttrIn(node, "causal", 1, {0, 1}));
  ONYX_RETURN_IF_ERROR(IntAttrIn(node, "smooth_softmax", 0, {0}));
  ONYX_RETURN_IF_ERROR(IntAttrIn(node, "qk_output", 0, {0}));
  ONYX_RETURN_IF_ERROR(IntAttrIn(node, "sliding_window_cache", 0, {0}));
  if (node.has_attr("kv_cache_bit_width"))
    return node.NotSupported(
        "attribute 'kv_cache_bit_width' = ", node.attr_int("kv_cache_bit_width", 0),
        " is not implemented (quantized KV caches)");
  for (const char* q : {"k_quant_type", "v_quant_type"}) {
    const std::string v = node.attr_string(q, "NONE");
    if (v != "NONE")
      return node.NotSupported("attribute '", q, "' = '", v, "' is not implemented (only NONE)");
  }
  const int64_t window = node.attr_int("local_window_size", -1);
  if (window == 0 || window < -1)
    return node.Invalid("attribute 'local_window_size' = ", window, "; expected -1 or > 0");
  if (window > 0 && node.attr_int("causal", 1) == 0)
    return node.Invalid("attribute 'local_window_size' = ", window, " needs causal = 1");
  const float softcap = node.attr_float("softcap", 0.f);
  if (!(softcap >= 0.f)) return node.Invalid("attribute 'softcap' = ", softcap, "; expected >= 0");
  return Status::Ok();
}

Status InferGqa(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(CheckGqaAttrs(node));
  ONYX_RETURN_IF_ERROR(Require(ctx, 0, "query"));
  ONYX_RETURN_IF_ERROR(Require(ctx, 5, "seqlens_k"));
  ONYX_RETURN_IF_ERROR(Require(ctx, 6, "total_sequence_length"));
  for (int i : {0, 1, 2, 3, 4, 7, 8, 10}) ONYX_RETURN_IF_ERROR(Expect(ctx, i, kF32));
  for (int i : {5, 6}) ONYX_RETURN_IF_ERROR(Expect(ctx, i, kI32));
  ONYX_RETURN_IF_ERROR(Expect(ctx, 9, kI64));
  ONYX_RETURN_IF_ERROR(RefuseInput(ctx, 11, "head_sink"));
  ONYX_RETURN_IF_ERROR(RefuseInput(ctx, 12, "k_scale, for quantized KV caches"));
  ONYX_RETURN_IF_ERROR(RefuseInput(ctx, 13, "v_scale, for quantized KV caches"));
  ONYX_RETURN_IF_ERROR(RefuseInput(ctx, 14, "q_norm_weight"));
  ONYX_RETURN_IF_ERROR(RefuseInput(ctx, 15, "k_norm_weight"));
  ONYX_RETURN_IF_ERROR(RefuseInput(ctx, 16, "query_seqlens"));
  ONYX_RETURN_IF_ERROR(RefuseOutput(ctx, 3, "output_qk"));
  if (Has(ctx, 1) != Has(ctx, 2))
    return node.Invalid("inputs 1 (key) and 2 (value) must be given together");
  if (Has(ctx, 3) != Has(ctx, 4))
    return node.Invalid("inputs 3 (past_key) and 4 (past_value) must be given together");
  const bool rotary = node.attr_int("do_rotary", 0) != 0;
  if (rotary && (!Has(ctx, 7) || !Has(ctx, 8)))
    return node.Invalid("do_rotary = 1 needs inputs 7 (cos_cache) and 8 (sin_cache)");
  if (!rotary && (Has(ctx, 7) || Has(ctx, 8) || Has(ctx, 9)))
    return node.NotSupported("inputs cos_cache, sin_cache and position_ids need do_rotary = 1");
  ONYX_RETURN_IF_ERROR(ExpectRank(ctx, 0, {3}));
  const int64_t heads = node.attr_int("num_heads", 1), kv_heads = node.attr_int("kv_num_heads", 1);
  const TypeInfo& q = TypeOf(ctx, 0);
  std::vector<Dim> bs =
      q.has_shape ? std::vector<Dim>{q.dims[0], q.dims[1]} : std::vector<Dim>{Dim(), Dim()};
  int64_t head = -1;
  const int64_t hidden = DimOf(ctx, 0, 2);
  if (hidden >= 0) head = Has(ctx, 1) ? hidden / heads : hidden / (heads + 2 * kv_heads);
  std::vector<Dim> out = bs;
  out.push_back(head >= 0 ? Dim::Known(head * heads) : Dim());
  ctx.SetOutputType(0, RankedType(DType::kFloat, out));
  for (int o : {1, 2})
    if (HasOut(ctx, o))
      ctx.SetOutputType(o, RankedType(DType::kFloat, {bs[0], Dim::Known(kv_heads), Dim(),
                                                      head >= 0 ? Dim::Known(head) : Dim()}));
  return Status::Ok();
}

Status RunGqa(KernelContext& ctx, bool fast) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(CheckGqaAttrs(node));
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  for (int i = 11; i <= 16; ++i)
    if (Opt(ctx, i)) return node.NotSupported("input ", i, " is not implemented");
  for (int i : {0, 1, 2, 3, 4, 7, 8, 10})
    if (Opt(ctx, i)) ONYX_RETURN_IF_ERROR(RunType(ctx, i, DType::kFloat));
  for (int i : {5, 6}) {
    if (!Opt(ctx, i)) return node.Invalid("input ", i, " is required");
    ONYX_RETURN_IF_ERROR(RunType(ctx, i, DType::kInt32));
  }
  const int64_t n = node.attr_int("num_heads", 1), nkv = node.attr_int("kv_num_heads", 1);
  const Tensor& query = ctx.input(0);
  const Tensor* key = Opt(ctx, 1);
  const Tensor* value = Opt(ctx, 2);
  const Tensor* past_key = Opt(ctx, 3);
  const Tensor* past_value = Opt(ctx, 4);
  if (query.rank() != 3) return node.Invalid("query must be [B, S, hidden]");
  const int64_t batch = query.dim(0), s_len = query.dim(1);
  int64_t d = 0, q_row = query.dim(2);
  if (key) {
    if (q_row % n != 0) return node.Invalid("query's hidden size must be a multiple of num_heads");
    d = q_row / n;
    const Shape kv = {batch, s_len, nkv * d};
    if (!value || key->shape() != kv || value->shape() != kv)
      return node.Invalid("key ", ShapeToString(key->shape()), " and value must be ",
                          ShapeToString(kv));
  } else {
    if (value) return node.Invalid("value needs key");
    if (q_row % (n + 2 * nkv) != 0)
      return node.Invalid("packed query's hidden size must be (num_heads + 2 kv_num_heads) * D");
    d = q_row / (n + 2 * nkv);
  }
  int64_t p_len = 0;
  if (!past_key != !past_value)
    return node.Invalid("inputs 3 (past_key) and 4 (past_value) must be given together");
  if (past_key) {
    if (past_key->rank() != 4 || past_key->dim(0) != batch || past_key->dim(1) != nkv ||
        past_key->dim(3) != d || past_value->shape() != past_key->shape())
      return node.Invalid("past_key ", ShapeToString(past_key->shape()), " and past_value must ",
                          "be [", batch, ", ", nkv, ", P, ", d, "]");
    p_len = past_key->dim(2);
  }
  const Tensor& seqlens = ctx.input(5);
  const Tensor& total_t = ctx.input(6);
  if (seqlens.numel() != batch || total_t.numel() != 1)
    return node.Invalid("seqlens_k must hold ", batch, " values and total_sequence_length one");
  const int64_t total = total_t.data<int32_t>()[0];
  const int64_t present_len = std::max(p_len, total);
  const bool first_prompt = s_len > 1 && s_len == total;
  if (total < s_len)
    return node.Fail("total_sequence_length ", total, " is less than the query's length ", s_len);
  std::vector<int64_t> past_b(static_cast<size_t>(batch)), total_b(past_b.size());
  for (int64_t b = 0; b < batch; ++b) {
    total_b[b] = static_cast<int64_t>(seqlens.data<int32_t>()[b]) + 1;
    past_b[b] = first_prompt ? 0 : total_b[b] - s_len;
    if (total_b[b] < 1 || total_b[b] > total || past_b[b] < 0 || past_b[b] > p_len)
      return node.Fail("seqlens_k[", b, "] = ", total_b[b] - 1, " is outside the valid range for ",
                       "a query of ", s_len, " tokens, ", p_len, " past tokens and a total of ",
                       total);
  }
  // Q [B, N, S, D]; new K and V [B, Nkv, S, D].
  const float* qsrc = query.data<float>();
  std::vector<float> q(static_cast<size_t>(batch * n * s_len * d));
  std::vector<float> k_new(static_cast<size_t>(batch * nkv * s_len * d)), v_new(k_new.size());
  ToHeads(qsrc, batch, s_len, n, d, q_row, 0, nullptr, q.data());
  if (key) {
    ToHeads(key->data<float>(), batch, s_len, nkv, d, nkv * d, 0, nullptr, k_new.data());
    ToHeads(value->data<float>(), batch, s_len, nkv, d, nkv * d, 0, nullptr, v_new.data());
  } else {
    ToHeads(qsrc, batch, s_len, nkv, d, q_row, n * d, nullptr, k_new.data());
    ToHeads(qsrc, batch, s_len, nkv, d, q_row, (n + nkv) * d, nullptr, v_new.data());
  }
  if (node.attr_int("do_rotary", 0) != 0) {
    const Tensor* cos = Opt(ctx, 7);
    const Tensor* sin = Opt(ctx, 8);
    const Tensor* pos = Opt(ctx, 9);
    if (!cos || !sin || cos->rank() != 2 || sin->shape() != cos->shape() || 2 * cos->dim(1) > d)
      return node.Invalid("cos_cache and sin_cache must be [max_position, rotary_dim / 2] with ",
                          "rotary_dim <= head size ", d);
    const int64_t rot = 2 * cos->dim(1), max_pos = cos->dim(0);
    if (pos && (pos->dtype() != DType::kInt64 || pos->shape() != Shape{batch, s_len}))
      return node.Invalid(DescribeInput(node, 9), " must be int64 [", batch, ", ", s_len, "]");
    const bool interleaved = node.attr_int("rotary_interleaved", 0) != 0;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t s = 0; s < s_len; ++s) {
        const int64_t p = pos ? pos->data<int64_t>()[b * s_len + s] : past_b[b] + s;
        if (p < 0 || p >= max_pos)
          return node.Fail("rotary position ", p, " is outside the ", max_pos,
                           " rows of cos_cache");
        const float* c = cos->data<float>() + p * (rot / 2);
        const float* sn = sin->data<float>() + p * (rot / 2);
        for (int64_t h = 0; h < n; ++h)
          RotateRow(q.data() + ((b * n + h) * s_len + s) * d, rot, c, sn, interleaved);
        for (int64_t h = 0; h < nkv; ++h)
          RotateRow(k_new.data() + ((b * nkv + h) * s_len + s) * d, rot, c, sn, interleaved);
      }
  }
  // present [B, Nkv, present_len, D]: the past's first past_b rows, then the new tokens; rows past
  // the sequence are zero (ORT leaves them unspecified).
  Tensor present[2];
  for (int o : {0, 1}) {
    if (WantOut(ctx, o + 1)) {
      ONYX_ASSIGN_OR_RETURN(present[o],
                            NewOutput(ctx, o + 1, DType::kFloat, {batch, nkv, present_len, d}));
    } else {
      present[o] = Tensor::AllocateUninitialized(DType::kFloat, {batch, nkv, present_len, d});
    }
    float* dst = present[o].data<float>();
    const float* past = o == 0 ? (past_key ? past_key->data<float>() : nullptr)
                               : (past_value ? past_value->data<float>() : nullptr);
    const float* cur = (o == 0 ? k_new : v_new).data();
    std::fill(dst, dst + batch * nkv * present_len * d, 0.f);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < nkv; ++h) {
        float* rows = dst + (b * nkv + h) * present_len * d;
        if (past && past_b[b] > 0)
          std::memcpy(rows, past + (b * nkv + h) * p_len * d, sizeof(float) * past_b[b] * d);
        std::memcpy(rows + past_b[b] * d, cur + (b * nkv + h) * s_len * d,
                    sizeof(float) * s_len * d);
      }
  }
  // attention_bias [B|1, N|1, S, total]: its columns placed over the present's rows.
  std::vector<float> bias;
  int64_t bias_batch = 1, bias_heads = 1;
  if (const Tensor* ab = Opt(ctx, 10)) {
    const Shape& bs = ab->shape();
    if (bs.size() != 4 || (bs[0] != 1 && bs[0] != batch) || (bs[1] != 1 && bs[1] != n) ||
        bs[2] != s_len || bs[3] > present_len)
      return node.Invalid(DescribeInput(node, 10), " has shape ", ShapeToString(bs), "; expected [",
                          batch, " or 1, ", n, " or 1, ", s_len, ", ", total, "]");
    bias_batch = bs[0];
    bias_heads = bs[1];
    bias.assign(static_cast<size_t>(bias_batch * bias_heads * s_len * present_len), 0.f);
    for (int64_t r = 0; r < bias_batch * bias_heads * s_len; ++r)
      std::memcpy(bias.data() + r * present_len, ab->data<float>() + r * bs[3],
                  sizeof(float) * bs[3]);
  }
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, DType::kFloat, {batch, s_len, n * d}));
  reference::MsAttentionArgs a;
  a.batch = batch;
  a.q_heads = n;
  a.kv_heads = nkv;
  a.q_len = s_len;
  a.kv_len = a.kv_cap = present_len;
  a.head_size = a.v_head_size = d;
  a.q = q.data();
  a.k = present[0].data<float>();
  a.v = present[1].data<float>();
  a.scale = node.attr_float("scale", 0.f);
  if (a.scale == 0.f) a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  a.softcap = node.attr_float("softcap", 0.f);
  if (!bias.empty()) {
    a.bias = bias.data();
    a.bias_batch = bias_batch;
    a.bias_heads = bias_heads;
  }
  a.key_end = total_b;
  a.causal = node.attr_int("causal", 1) != 0;
  a.causal_offset = past_b;
  a.window = node.attr_int("local_window_size", -1);
  a.y = y.data<float>();
  RunAttentionCore(a, ctx.intra_op_threads(), fast);
  return Status::Ok();
}

Status GqaKernel(KernelContext& ctx) {
  return RunGqa(ctx, false);
}

// Runs `fn(ctx, true)`: the fast variant of an op whose kernels share one body.
class FastVariantKernel : public Kernel {
 public:
  explicit FastVariantKernel(Status (*fn)(KernelContext&, bool)) : fn_(fn) {}
  Status Run(KernelContext& ctx) const override { return fn_(ctx, true); }

 private:
  Status (*fn_)(KernelContext&, bool);
};

// ---- com.microsoft RotaryEmbedding ----
// input, position_ids, cos_cache, sin_cache -> output. Attributes interleaved, num_heads,
// rotary_embedding_dim, is_packed_batching (0 only), scale (1 only).

Status CheckRotaryAttrs(const NodeView& node) {
  ONYX_RETURN_IF_ERROR(IntAttrIn(node, "interleaved", 0, {0, 1}));
  ONYX_RETURN_IF_ERROR(IntAttrIn(node, "is_packed_batching", 0, {0}));
  const float scale = node.attr_float("scale", 1.f);
  if (scale != 1.f)
    return node.NotSupported("attribute 'scale' = ", scale, " is not implemented (only 1)");
  if (node.attr_int("num_heads", 0) < 0 || node.attr_int("rotary_embedding_dim", 0) < 0)
    return node.Invalid("attributes 'num_heads' and 'rotary_embedding_dim' must be >= 0");
  if (node.attr_int("rotary_embedding_dim", 0) > 0 && node.attr_int("num_heads", 0) == 0)
    return node.Invalid("attribute 'rotary_embedding_dim' needs 'num_heads'");
  return Status::Ok();
}

Status InferMsRotary(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckRotaryAttrs(ctx.node()));
  for (int i = 0; i < 4; ++i) ONYX_RETURN_IF_ERROR(Require(ctx, i, "input"));
  for (int i : {0, 2, 3}) ONYX_RETURN_IF_ERROR(Expect(ctx, i, kF32));
  ONYX_RETURN_IF_ERROR(Expect(ctx, 1, kI64));
  ONYX_RETURN_IF_ERROR(ExpectRank(ctx, 0, {3, 4}));
  ONYX_RETURN_IF_ERROR(ExpectRank(ctx, 1, {1, 2}));
  ONYX_RETURN_IF_ERROR(ExpectRank(ctx, 2, {2}));
  ONYX_RETURN_IF_ERROR(ExpectRank(ctx, 3, {2}));
  ctx.SetOutputType(0, TypeOf(ctx, 0));
  return Status::Ok();
}

Status MsRotaryKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(CheckRotaryAttrs(node));
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 4));
  for (int i : {0, 2, 3}) ONYX_RETURN_IF_ERROR(RunType(ctx, i, DType::kFloat));
  ONYX_RETURN_IF_ERROR(RunType(ctx, 1, DType::kInt64));
  const Tensor& x = ctx.input(0);
  const Tensor& pos = ctx.input(1);
  const Tensor& cos = ctx.input(2);
  const Tensor& sin = ctx.input(3);
  if (cos.rank() != 2 || sin.shape() != cos.shape())
    return node.Invalid("cos_cache ", ShapeToString(cos.shape()), " and sin_cache ",
                        ShapeToString(sin.shape()), " must both be [max_position, rotary_dim/2]");
  reference::RotaryParams p;
  if (x.rank() == 4) {
    p.batch = x.dim(0);
    p.num_heads = x.dim(1);
    p.seq_len = x.dim(2);
    p.head_size = x.dim(3);
  } else if (x.rank() == 3) {
    p.packed_heads = true;
    p.batch = x.dim(0);
    p.seq_len = x.dim(1);
    const int64_t heads = node.attr_int("num_heads", 0);
    p.head_size = heads > 0 ? x.dim(2) / heads : 2 * cos.dim(1);
    if (p.head_size <= 0 || x.dim(2) % p.head_size != 0)
      return node.Invalid(DescribeInput(node, 0), " has shape ", ShapeToString(x.shape()),
                          "; its hidden size must be a multiple of the head size ", p.head_size);
    p.num_heads = x.dim(2) / p.head_size;
  } else {
    return node.Invalid(DescribeInput(node, 0), " must be 3-D or 4-D");
  }
  p.rotary_dim = node.attr_int("rotary_embedding_dim", 0);
  if (p.rotary_dim == 0) p.rotary_dim = p.head_size;
  p.interleaved = node.attr_int("interleaved", 0) != 0;
  if (p.rotary_dim % 2 != 0 || p.rotary_dim > p.head_size || cos.dim(1) != p.rotary_dim / 2)
    return node.Invalid("cos_cache ", ShapeToString(cos.shape()),
                        " must have rotary_dim / 2 = ", p.rotary_dim / 2,
                        " columns (rotary_dim even, at most the head size ", p.head_size, ")");
  // position_ids: [1] (the first position; the rest follow) or [B, S].
  std::vector<int64_t> ids(static_cast<size_t>(p.batch * p.seq_len));
  if (pos.numel() == 1 && pos.rank() == 1) {
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t s = 0; s < p.seq_len; ++s) ids[b * p.seq_len + s] = pos.data<int64_t>()[0] + s;
  } else if (pos.shape() == Shape{p.batch, p.seq_len}) {
    std::copy(pos.data<int64_t>(), pos.data<int64_t>() + pos.numel(), ids.begin());
  } else {
    return node.Invalid(DescribeInput(node, 1), " has shape ", ShapeToString(pos.shape()),
                        "; expected [1] or [", p.batch, ", ", p.seq_len, "]");
  }
  for (int64_t id : ids)
    if (id < 0 || id >= cos.dim(0))
      return node.Fail("position ", id, " is outside the ", cos.dim(0), " rows of cos_cache");
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, DType::kFloat, x.shape()));
  reference::RotaryEmbedding(p, x, cos, sin, ids.data(), &y);
  return Status::Ok();
}

// ======================= MatMulNBits =======================
// A [..., K], B uint8 [N, k_blocks, blob], scales [N * k_blocks], zero_points?, g_idx?, bias? [N]
// -> Y [..., N]. Attributes K, N, bits (2, 4, 8), block_size (a power of two >= 16),
// accuracy_level (0-4: onyx computes in float32, at least the precision each asks for),
// weight_prepacked (0 only).

struct NBitsAttrs {
  int64_t k = 0, n = 0, bits = 4, block_size = 0;
  int64_t k_blocks() const { return (k + block_size - 1) / block_size; }
  int64_t blob() const { return block_size * bits / 8; }
  int64_t zp_row() const { return (k_blocks() * bits + 7) / 8; }
};

StatusOr<NBitsAttrs> ParseNBits(const NodeView& node) {
  NBitsAttrs a;
  ONYX_ASSIGN_OR_RETURN(a.k, node.RequiredInt("K"));
  ONYX_ASSIGN_OR_RETURN(a.n, node.RequiredInt("N"));
  ONYX_ASSIGN_OR_RETURN(a.block_size, node.RequiredInt("block_size"));
  a.bits = node.attr_int("bits", 4);
  if (a.k <= 0 || a.n <= 0) return node.Invalid("attributes 'K' and 'N' must be positive");
  ONYX_RETURN_IF_ERROR(IntAttrIn(node, "bits", 4, {2, 4, 8}));
  if (a.block_size < 16 || (a.block_size & (a.block_size - 1)) != 0)
    return node.Invalid("attribute 'block_size' = ", a.block_size,
                        "; expected a power of two >= 16");
  ONYX_RETURN_IF_ERROR(IntAttrIn(node, "accuracy_level", 0, {0, 1, 2, 3, 4}));
  ONYX_RETURN_IF_ERROR(IntAttrIn(node, "weight_prepacked", 0, {0}));
  return a;
}

Status InferMatMulNBits(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(const NBitsAttrs a, ParseNBits(node));
  ONYX_RETURN_IF_ERROR(Require(ctx, 0, "A"));
  ONYX_RETURN_IF_ERROR(Require(ctx, 1, "B"));
  ONYX_RETURN_IF_ERROR(Require(ctx, 2, "scales"));
  ONYX_RETURN_IF_ERROR(RefuseInput(ctx, 4, "g_idx, deprecated"));
  for (int i : {0, 2, 5}) ONYX_RETURN_IF_ERROR(Expect(ctx, i, kF32));
  ONYX_RETURN_IF_ERROR(Expect(ctx, 1, {DType::kUInt8}));
  ONYX_RETURN_IF_ERROR(Expect(ctx, 3, {DType::kUInt8, DType::kFloat}));
  const TypeInfo& b = TypeOf(ctx, 1);
  if (b.is_tensor() && b.shape_is_static() &&
      b.static_shape() != Shape{a.n, a.k_blocks(), a.blob()}) {
    return node.Invalid("input 1 '", InputName(node, 1), "' has type ", b.ToString(),
                        "; expected [", a.n, ",", a.k_blocks(), ",", a.blob(), "] for K=", a.k,
                        ", N=", a.n, ", bits=", a.bits, ", block_size=", a.block_size);
  }
  ONYX_RETURN_IF_ERROR(ExpectCountOf(ctx, 2, a.n * a.k_blocks(), "one scale per block"));
  if (Has(ctx, 3)) {
    const bool packed = TypeOf(ctx, 3).elem == DType::kUInt8;
    ONYX_RETURN_IF_ERROR(ExpectCountOf(ctx, 3, packed ? a.n * a.zp_row() : a.n * a.k_blocks(),
                                       "one zero point per block"));
  }
  ONYX_RETURN_IF_ERROR(ExpectCountOf(ctx, 5, a.n, "one bias per output feature"));
  const TypeInfo& x = TypeOf(ctx, 0);
  TypeInfo y = TypeInfo::Tensor(DType::kFloat);
  if (x.has_shape) {
    if (x.dims.empty()) return node.Invalid("input 0 (A) must have rank >= 1");
    if (x.dims.back().known() && x.dims.back().value != a.k)
      return node.Invalid("input 0 '", InputName(node, 0), "' has type ", x.ToString(),
                          "; expected its last dim to be K = ", a.k);
    y = x;
    y.dims.back() = Dim::Known(a.n);
  }
  ctx.SetOutputType(0, y);
  return Status::Ok();
}

// The quantised operands, checked against the attributes.
StatusOr<reference::NBitsWeights> ReadNBits(const NodeView& node, const NBitsAttrs& a,
                                            const Tensor& b, const Tensor& scales,
                                            const Tensor* zp) {
  reference::NBitsWeights w;
  w.n = a.n;
  w.k = a.k;
  w.bits = a.bits;
  w.block_size = a.block_size;
  if (b.dtype() != DType::kUInt8 || b.shape() != Shape{a.n, a.k_blocks(), a.blob()})
    return node.Invalid("input 1 (B) is ", DTypeName(b.dtype()), ShapeToString(b.shape()),
                        "; expected uint8 [", a.n, ",", a.k_blocks(), ",", a.blob(), "]");
  if (scales.dtype() != DType::kFloat || scales.numel() != a.n * a.k_blocks())
    return node.Invalid("input 2 (scales) is ", DTypeName(scales.dtype()),
                        ShapeToString(scales.shape()), "; expected ", a.n * a.k_blocks(),
                        " float values");
  w.b = b.data<uint8_t>();
  w.scales = scales.data<float>();
  if (zp) {
    if (zp->dtype() == DType::kUInt8 && zp->numel() == a.n * a.zp_row()) {
      w.zero_u8 = zp->data<uint8_t>();
    } else if (zp->dtype() == DType::kFloat && zp->numel() == a.n * a.k_blocks()) {
      w.zero_f = zp->data<float>();
    } else {
      return node.Invalid("input 3 (zero_points) is ", DTypeName(zp->dtype()),
                          ShapeToString(zp->shape()), "; expected uint8 with ", a.n * a.zp_row(),
                          " or float with ", a.n * a.k_blocks(), " values");
    }
  }
  return w;
}

struct NBitsRun {
  const float* a = nullptr;
  int64_t m = 0;
  const float* bias = nullptr;
  float* y = nullptr;
};

StatusOr<NBitsRun> PrepareNBits(KernelContext& ctx, const NBitsAttrs& attrs) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 3));
  if (Opt(ctx, 4)) return node.NotSupported("input 4 (g_idx) is not implemented");
  ONYX_RETURN_IF_ERROR(RunType(ctx, 0, DType::kFloat));
  const Tensor& x = ctx.input(0);
  if (x.rank() < 1 || x.dim(x.rank() - 1) != attrs.k)
    return node.Invalid(DescribeInput(node, 0), " has shape ", ShapeToString(x.shape()),
                        "; expected its last dim to be K = ", attrs.k);
  NBitsRun r;
  r.a = x.data<float>();
  r.m = x.numel() / attrs.k;
  ONYX_ASSIGN_OR_RETURN(r.bias, FloatVector(ctx, 5, attrs.n));
  Shape out = x.shape();
  out.back() = attrs.n;
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, DType::kFloat, out));
  r.y = y.data<float>();
  return r;
}

Status MatMulNBitsRefKernel(KernelContext& ctx) {
  ONYX_ASSIGN_OR_RETURN(const NBitsAttrs attrs, ParseNBits(ctx.node()));
  ONYX_ASSIGN_OR_RETURN(NBitsRun r, PrepareNBits(ctx, attrs));
  ONYX_ASSIGN_OR_RETURN(reference::NBitsWeights w,
                        ReadNBits(ctx.node(), attrs, ctx.input(1), ctx.input(2), Opt(ctx, 3)));
  reference::MatMulNBitsRef(w, r.a, r.m, r.bias, r.y);
  return Status::Ok();
}

// Rows of A up to which the 4-bit kernel streams B once per eight rows (a decoder's tokens); past
// it, tiles of columns are dequantised into a per-thread float buffer for the panel GEMM, whose
// products then cost far more than the dequantisation.
constexpr int64_t kNBitsStreamRows = 8;
// Columns of W per dequantised tile (with K = 4096: 1 MiB of floats).
constexpr int64_t kNBitsTileColumns = 64;

// The zero point of every block as a float (2^(bits-1) when B has none), for the SIMD kernels.
std::vector<float> NBitsZeros(const reference::NBitsWeights& q) {
  const int64_t kb = q.k_blocks();
  std::vector<float> zeros(static_cast<size_t>(q.n * kb));
  for (int64_t n = 0; n < q.n; ++n)
    for (int64_t blk = 0; blk < kb; ++blk) zeros[n * kb + blk] = q.zero_point(n, blk);
  return zeros;
}

// 4-bit weights stay packed (ORT's layout, read from input B every run): up to eight rows of A
// stream B once, dequantising each block on the fly (common::MatMulNBits4F32); more rows dequantise
// tiles of columns into a per-thread float buffer for the panel GEMM (PanelGemvF32). Other bit
// widths: the weights dequantised once when the plan is made (shared by the session's shape
// specialisations through the weight cache) into column panels for PanelWeightsProduct.
// Non-constant weights are read per run.
class MatMulNBitsFast : public Kernel {
 public:
  MatMulNBitsFast(NBitsAttrs attrs, std::shared_ptr<const std::vector<float>> zeros,
                  std::shared_ptr<const common::PanelWeights> packed)
      : attrs_(attrs), zeros_(std::move(zeros)), packed_(std::move(packed)) {}

  Status Run(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(NBitsRun r, PrepareNBits(ctx, attrs_));
    if (r.m == 0) return Status::Ok();
    const int threads = ctx.intra_op_threads();
    std::shared_ptr<const common::PanelWeights> panels = packed_;
    if (attrs_.bits != 4 && !panels) {
      ONYX_ASSIGN_OR_RETURN(reference::NBitsWeights q,
                            ReadNBits(ctx.node(), attrs_, ctx.input(1), ctx.input(2), Opt(ctx, 3)));
      panels = Pack(q, threads);
    }
    if (panels) {
      common::PanelWeightsProduct(*panels, r.a, r.m, attrs_.k, r.bias, nullptr, r.y, attrs_.n,
                                  threads);
      return Status::Ok();
    }
    ONYX_ASSIGN_OR_RETURN(reference::NBitsWeights q,
                          ReadNBits(ctx.node(), attrs_, ctx.input(1), ctx.input(2), Opt(ctx, 3)));
    std::shared_ptr<const std::vector<float>> zeros = zeros_;
    if (!zeros) zeros = std::make_shared<const std::vector<float>>(NBitsZeros(q));
    common::NBits4Args g;
    g.b = q.b;
    g.scales = q.scales;
    g.zeros = zeros->data();
    g.k_blocks = attrs_.k_blocks();
    g.block = attrs_.block_size;
    g.bias = r.bias;
    g.y = r.y;
    g.ldy = attrs_.n;
    const int64_t k = attrs_.k, n = attrs_.n, kp = g.k_blocks * g.block;
    std::vector<float> a_perm(static_cast<size_t>(r.m * kp));
    common::NBits4PermuteA(r.a, r.m, k, k, g.k_blocks, g.block, a_perm.data());
    g.a_perm = a_perm.data();
    g.rows = r.m;
    if (r.m <= kNBitsStreamRows) {
      ParallelFor(n, k * r.m, threads,
                  [&](int64_t n0, int64_t n1) { common::MatMulNBits4F32(g, n0, n1); });
      return Status::Ok();
    }
    // Tiles of columns: dequantised (in a_perm's order), transposed to [kp, tile] and multiplied
    // by the panel GEMM, one tile per task.
    const int64_t panel = common::PanelGemvPlainPanel();
    const int64_t tile = std::max<int64_t>(1, kNBitsTileColumns / panel) * panel;
    const int64_t tiles = (n + tile - 1) / tile;
    ParallelFor(tiles, tile * kp * r.m, threads, [&](int64_t t0, int64_t t1) {
      std::vector<float> rows(static_cast<size_t>(tile * kp)), cols_major(rows.size());
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t n0 = t * tile, cols = std::min(tile, n - n0);
        common::NBits4Dequantize(g, n0, n0 + cols, rows.data());
        common::Transpose2D32(reinterpret_cast<const uint32_t*>(rows.data()), kp,
                              reinterpret_cast<uint32_t*>(cols_major.data()), tile, kp, cols);
        common::PanelGemvArgs p;
        p.a = a_perm.data();
        p.lda = kp;
        p.rows = r.m;
        p.b = cols_major.data();
        p.panel = panel;
        p.panel_stride = panel;
        p.ldb = tile;
        p.b_padded = false;
        p.k = kp;
        p.n = cols;
        p.bias = r.bias ? r.bias + n0 : nullptr;
        p.y = r.y + n0;
        p.ldy = n;
        common::PanelGemvF32(p, 0, (cols + panel - 1) / panel);
      }
    });
    return Status::Ok();
  }

  bool packed_input(size_t i) const override { return packed_ && i >= 1 && i <= 3; }

  static std::shared_ptr<const common::PanelWeights> Pack(const reference::NBitsWeights& q,
                                                          int threads) {
    std::vector<float> w(static_cast<size_t>(q.n * q.k));
    ParallelFor(q.n, q.k, threads, [&](int64_t n0, int64_t n1) {
      reference::DequantizeNBits(q, n0, n1, w.data() + n0 * q.k);
    });
    return std::make_shared<const common::PanelWeights>(
        common::PackPanelWeights(w.data(), q.n, q.k));
  }

 private:
  NBitsAttrs attrs_;
  std::shared_ptr<const std::vector<float>> zeros_;     // 4 bits, constant zero points
  std::shared_ptr<const common::PanelWeights> packed_;  // other widths, constant weights
};

StatusOr<std::unique_ptr<Kernel>> MakeMatMulNBitsFast(const NodeView& node,
                                                      const std::vector<TypeInfo>&,
                                                      const KernelCreateInfo& info) {
  ONYX_ASSIGN_OR_RETURN(const NBitsAttrs attrs, ParseNBits(node));
  const auto constant = [&](size_t i) {
    return i < info.constants.size() ? info.constants[i] : nullptr;
  };
  const Tensor* b = constant(1);
  const Tensor* scales = constant(2);
  const bool zp_given = node.node().inputs.size() > 3 && !node.node().inputs[3].empty();
  const Tensor* zp = constant(3);
  std::shared_ptr<const std::vector<float>> zeros;
  std::shared_ptr<const common::PanelWeights> packed;
  if (b && scales && (!zp_given || zp)) {
    ONYX_ASSIGN_OR_RETURN(reference::NBitsWeights q, ReadNBits(node, attrs, *b, *scales, zp));
    if (attrs.bits == 4) {
      zeros = std::make_shared<const std::vector<float>>(NBitsZeros(q));
    } else {
      const auto pack = [&] { return MatMulNBitsFast::Pack(q, info.threads); };
      if (info.weights) {
        // B's buffer keys the entry; the scales' and zero points' addresses tell layouts apart.
        const std::string layout =
            "nbits_panels:" + std::to_string(reinterpret_cast<uintptr_t>(scales->raw_data())) +
            ":" + std::to_string(zp ? reinterpret_cast<uintptr_t>(zp->raw_data()) : 0);
        packed = info.weights->GetOrPack<common::PanelWeights>(
            *b, layout, pack, sizeof(float) * static_cast<size_t>(attrs.n * attrs.k));
      } else {
        packed = pack();
      }
    }
  }
  return std::unique_ptr<Kernel>(new MatMulNBitsFast(attrs, std::move(zeros), std::move(packed)));
}

// ======================= registration helpers =======================

KernelImpl FastImpl(const std::string& name, std::initializer_list<size_t> float_inputs,
                    CreateFn create) {
  KernelImpl impl;
  impl.name = name;
  impl.isa = HighwayIsa();  // they call the Highway loops
  std::vector<size_t> inputs(float_inputs);
  impl.supports = [inputs](const NodeView& node, const std::vector<TypeInfo>& types) -> Status {
    for (size_t i : inputs)
      if (i < types.size() && (!types[i].is_tensor() || types[i].elem != DType::kFloat))
        return node.NotSupported("needs float32 inputs");
    return Status::Ok();
  };
  impl.create = std::move(create);
  return impl;
}

template <typename K, typename... Args>
CreateFn Make(Args... args) {
  return [=](const NodeView&, const std::vector<TypeInfo>&) -> StatusOr<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(new K(args...));
  };
}

}  // namespace

void RegisterTransformerMs(OpRegistry& r) {
  // Opset 1 of com.microsoft is the only version of each.
  r.Add(kMsDomain, "SkipLayerNormalization", 1, kLatestOpset, InferSkipLayerNorm, SkipLayerNormRef,
        "SkipLayerNormalization_f32_ref");
  r.Add(kMsDomain, "SkipSimplifiedLayerNormalization", 1, kLatestOpset, InferSkipSimplified,
        SkipSimplifiedRef, "SkipSimplifiedLayerNormalization_f32_ref");
  // ORT registers SimplifiedLayerNormalization (RMSNorm) in the default ONNX domain, opset 1 on.
  r.Add("", "SimplifiedLayerNormalization", 1, kLatestOpset, InferSimplifiedLayerNorm,
        SimplifiedLayerNormKernel, "SimplifiedLayerNormalization_f32_ref");
  r.Add(kMsDomain, "EmbedLayerNormalization", 1, kLatestOpset, InferEmbedLayerNorm,
        EmbedLayerNormKernel, "EmbedLayerNormalization_f32_ref");
  r.Add(kMsDomain, "Gelu", 1, kLatestOpset, InferGelu, GeluRef, "Gelu_f32_ref");
  r.Add(kMsDomain, "BiasGelu", 1, kLatestOpset, InferBiasGelu, BiasGeluRef, "BiasGelu_f32_ref");
  r.Add(kMsDomain, "FastGelu", 1, kLatestOpset, InferFastGelu, FastGeluRef, "FastGelu_f32_ref");
  r.Add(kMsDomain, "QuickGelu", 1, kLatestOpset, InferQuickGelu, QuickGeluRef, "QuickGelu_f32_ref");
  r.Add(kMsDomain, "BiasSplitGelu", 1, kLatestOpset, InferBiasSplitGelu, BiasSplitGeluKernel,
        "BiasSplitGelu_f32_ref");
  r.Add(kMsDomain, "Attention", 1, kLatestOpset, InferMsAttention, MsAttentionKernel,
        "Attention_f32_ref");
  r.Add(kMsDomain, "MultiHeadAttention", 1, kLatestOpset, InferMha, MhaKernel,
        "MultiHeadAttention_f32_ref");
  r.Add(kMsDomain, "GroupQueryAttention", 1, kLatestOpset, InferGqa, GqaKernel,
        "GroupQueryAttention_f32_ref");
  r.Add(kMsDomain, "RotaryEmbedding", 1, kLatestOpset, InferMsRotary, MsRotaryKernel,
        "RotaryEmbedding_f32_ref");
  r.Add(kMsDomain, "MatMulNBits", 1, kLatestOpset, InferMatMulNBits, MatMulNBitsRefKernel,
        "MatMulNBits_f32_ref");
}

// ---- the fast float32 kernels, named by the kernel lists (kernels/kernel_lists.cc) ----

KernelImpl MsSkipLayerNormHwyKernel() {
  return FastImpl("SkipLayerNormalization_f32_hwy", {0, 1, 2}, Make<SkipNormFast>(kSkipLayerNorm));
}

KernelImpl MsSkipSimplifiedLayerNormHwyKernel() {
  return FastImpl("SkipSimplifiedLayerNormalization_f32_simd", {0, 1, 2},
                  Make<SkipNormFast>(kSkipSimplified));
}

KernelImpl MsEmbedLayerNormHwyKernel() {
  return FastImpl("EmbedLayerNormalization_f32_hwy", {2, 3},
                  Make<FastVariantKernel>(RunEmbedLayerNorm));
}

KernelImpl MsGeluHwyKernel() {
  return FastImpl("Gelu_f32_hwy", {0}, Make<GeluFast>(GeluOp::kGelu, 0.f));
}

KernelImpl MsBiasGeluHwyKernel() {
  return FastImpl("BiasGelu_f32_hwy", {0, 1}, Make<GeluFast>(GeluOp::kBiasGelu, 0.f));
}

KernelImpl MsFastGeluHwyKernel() {
  return FastImpl("FastGelu_f32_hwy", {0}, Make<GeluFast>(GeluOp::kFastGelu, 0.f));
}

KernelImpl MsQuickGeluHwyKernel() {
  KernelImpl quick = FastImpl("QuickGelu_f32_hwy", {0}, nullptr);
  quick.create = [](const NodeView& node,
                    const std::vector<TypeInfo>&) -> StatusOr<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(
        new GeluFast(GeluOp::kQuickGelu, node.attr_float("alpha", 1.702f)));
  };
  return quick;
}

KernelImpl MsAttentionHwyKernel() {
  KernelImpl attention = FastImpl("Attention_f32_hwy", {0, 1}, nullptr);
  attention.create_with_info = MakeMsAttentionFast;
  return attention;
}

KernelImpl MsMultiHeadAttentionHwyKernel() {
  return FastImpl("MultiHeadAttention_f32_hwy", {0}, Make<FastVariantKernel>(RunMha));
}

KernelImpl MsGroupQueryAttentionHwyKernel() {
  return FastImpl("GroupQueryAttention_f32_hwy", {0}, Make<FastVariantKernel>(RunGqa));
}

KernelImpl MsMatMulNBitsHwyKernel() {
  KernelImpl nbits = FastImpl("MatMulNBits_f32_hwy", {0}, nullptr);
  nbits.create_with_info = MakeMatMulNBitsFast;
  return nbits;
}

}  // namespace onyx::kernels
