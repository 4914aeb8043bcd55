// com.microsoft DynamicQuantizeLSTM, what ONNX Runtime's dynamic quantization makes of an LSTM
// (ddddocr's older OCR model): 8-bit W [D, I, 4H] and R [D, H, 4H] (note: transposed against
// ONNX's LSTM) with per-direction or per-column scales and zero points, and float activations
// quantized on the fly. As ONNX Runtime computes it on one thread: X of every step quantized to
// uint8 once (scale (max - min) / 255 over its values and 0, zero point round(-min / scale)), the
// hidden state again at each step, integer products, then scaled back to float; the gates
// (i, o, f, c), biases and cell as ONNX's LSTM with its default activations. Sequence lengths,
// peepholes, clip, input_forget and other activations are refused at load.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common/int_product.h"
#include "kernels/common/simd_kernels.h"
#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"

namespace onyx::kernels {
namespace {

constexpr const char* kMsDomain = "com.microsoft";
constexpr int kX = 0, kW = 1, kR = 2, kB = 3, kSeqLens = 4, kInitialH = 5, kInitialC = 6, kP = 7,
              kWScale = 8, kWZero = 9, kRScale = 10, kRZero = 11;

Status CheckAttributes(const NodeView& node) {
  if (node.has_attr("clip")) return node.NotSupported("attribute 'clip' is not implemented");
  if (node.attr_int("input_forget", 0) != 0)
    return node.NotSupported("attribute 'input_forget' = ", node.attr_int("input_forget", 0),
                             " is not implemented");
  if (node.has_attr("activation_alpha") || node.has_attr("activation_beta"))
    return node.NotSupported("attributes 'activation_alpha'/'activation_beta' are not implemented");
  const std::vector<std::string> acts = node.attr_strings("activations", {});
  for (size_t i = 0; i < acts.size(); ++i) {
    const char* want = i % 3 == 0 ? "Sigmoid" : "Tanh";
    if (acts[i] != want)
      return node.NotSupported("attribute 'activations' = '", acts[i], "' at ", i,
                               " is not implemented (only Sigmoid, Tanh, Tanh)");
  }
  const std::string dir = node.attr_string("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    return node.Invalid("attribute 'direction' = '", dir,
                        "'; expected forward, reverse or bidirectional");
  if (node.attr_int("hidden_size", 0) <= 0)
    return node.Invalid("attribute 'hidden_size' must be positive");
  return Status::Ok();
}

Status InferDynamicQuantizeLstm(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(CheckAttributes(node));
  for (int i : {kSeqLens, kP})
    if (ctx.has_input(i))
      return node.NotSupported("input ", i, " '", InputName(node, i), "' is not implemented");
  for (int i : {kX, kW, kR, kWScale, kWZero, kRScale, kRZero})
    if (!ctx.has_input(i)) return node.Invalid("input ", i, " is required");
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, kX, {DType::kFloat}));
  for (int i : {kW, kR, kWZero, kRZero})
    ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, i, {DType::kInt8, DType::kUInt8}));
  for (int i : {kB, kInitialH, kInitialC, kWScale, kRScale})
    if (ctx.has_input(i)) ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, i, {DType::kFloat}));
  const int64_t h = node.attr_int("hidden_size", 0);
  const int64_t d = node.attr_string("direction", "forward") == "bidirectional" ? 2 : 1;
  const TypeInfo& x = ctx.input_type(kX);
  if (x.has_shape && x.rank() != 3)
    return node.Invalid("input 0 'X' has shape ", x.ToString(), "; expected [S, B, I]");
  const Dim seq = x.has_shape ? x.dims[0] : Dim();
  const Dim batch = x.has_shape ? x.dims[1] : Dim();
  TypeInfo y = TypeInfo::Tensor(DType::kFloat);
  y.has_shape = true;
  y.dims = {seq, Dim::Known(d), batch, Dim::Known(h)};
  TypeInfo state = TypeInfo::Tensor(DType::kFloat);
  state.has_shape = true;
  state.dims = {Dim::Known(d), batch, Dim::Known(h)};
  if (ctx.has_output(0)) ctx.SetOutputType(0, y);
  if (ctx.num_outputs() > 1 && ctx.has_output(1)) ctx.SetOutputType(1, state);
  if (ctx.num_outputs() > 2 && ctx.has_output(2)) ctx.SetOutputType(2, state);
  return Status::Ok();
}

// An 8-bit weight matrix [K, N] of one direction with its scale and zero point (one, or one per
// column).
struct QuantWeights {
  std::vector<uint8_t> w;     // [K, N]'s 8-bit values in row pairs (common::PairRows8Bit)
  bool is_signed = false;     // int8 (else uint8)
  std::vector<int32_t> zero;  // one, or one per column
  std::vector<float> scale;
  int64_t k = 0, n = 0;
};

// `scale_input`: the input index of `scale`; its zero point is the next input.
Status ReadWeights(const NodeView& node, const Tensor& w, const Tensor& scale, const Tensor& zero,
                   int64_t dir, int64_t k, int64_t n, int scale_input, QuantWeights* out) {
  const int64_t dirs = w.dim(0);
  const bool per_column = scale.numel() == dirs * n;
  if (!per_column && scale.numel() != dirs)
    return node.Fail(DescribeInput(node, scale_input), " has ", scale.numel(), " values; expected ",
                     dirs, " or ", dirs * n);
  if (zero.numel() != scale.numel())
    return node.Fail(DescribeInput(node, scale_input + 1), " has ", zero.numel(),
                     " values; expected as many as its scale (", scale.numel(), ")");
  const int64_t per = per_column ? n : 1;
  out->k = k;
  out->n = n;
  out->scale.assign(scale.data<float>() + dir * per, scale.data<float>() + dir * per + per);
  out->zero.resize(static_cast<size_t>(per));
  for (int64_t j = 0; j < per; ++j)
    out->zero[j] = zero.dtype() == DType::kInt8 ? zero.data<int8_t>()[dir * per + j]
                                                : zero.data<uint8_t>()[dir * per + j];
  out->is_signed = w.dtype() == DType::kInt8;
  const auto* bytes = static_cast<const uint8_t*>(w.raw_data()) + dir * k * n;
  out->w = common::PairRows8Bit(bytes, k, n);
  return Status::Ok();
}

// The integer buffers of QuantizedProduct, kept by the caller across the steps of a sequence.
struct ProductScratch {
  std::vector<int32_t> q, acc;
};

// y[rows, N] = dequantize(quantize_u8(a[rows, K]) x W): `a` quantized as a whole, as ONNX
// Runtime's dynamic quantization does for each product.
void QuantizedProduct(const float* a, int64_t rows, const QuantWeights& w, float* y,
                      ProductScratch& scratch) {
  const int64_t count = rows * w.k;
  float lo = 0.f, hi = 0.f;
  for (int64_t i = 0; i < count; ++i) {
    lo = std::min(lo, a[i]);
    hi = std::max(hi, a[i]);
  }
  float scale = (hi - lo) / 255.f;
  if (scale == 0.f) scale = 1.f;
  const int32_t zp = static_cast<int32_t>(std::clamp(std::nearbyint(-lo / scale), 0.f, 255.f));
  std::vector<int32_t>& q = scratch.q;
  q.resize(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    q[i] = static_cast<int32_t>(
               std::clamp(std::nearbyint(a[i] / scale) + static_cast<float>(zp), 0.f, 255.f)) -
           zp;
  std::vector<int32_t>& acc = scratch.acc;
  acc.resize(static_cast<size_t>(rows * w.n));
  common::Int32RowsTimes8BitMatrix(q.data(), rows, w.k, w.w.data(), w.is_signed, w.n, acc.data());
  const bool per_column_zero = w.zero.size() > 1;
  for (int64_t r = 0; r < rows; ++r) {
    // sum_k q[k] (w[k][j] - zero[j]) = sum_k q[k] w[k][j] - zero[j] sum_k q[k], exactly.
    int32_t qsum = 0;
    for (int64_t k = 0; k < w.k; ++k) qsum += q[r * w.k + k];
    const int32_t* row = acc.data() + r * w.n;
    for (int64_t j = 0; j < w.n; ++j)
      y[r * w.n + j] = static_cast<float>(row[j] - w.zero[per_column_zero ? j : 0] * qsum) *
                       (scale * w.scale[w.scale.size() == 1 ? 0 : j]);
  }
}

// W's and R's 8-bit values of one direction each, with their scales and zero points.
struct DirectionWeights {
  std::vector<QuantWeights> w, r;
};

// `prepared`: the weights made at kernel creation when W, R and their scales and zero points are
// plan constants (the usual case); null: made from this run's inputs.
Status RunDynamicQuantizeLstm(KernelContext& ctx, const DirectionWeights* prepared) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(CheckAttributes(node));
  const Tensor& x = ctx.input(kX);
  const Tensor& w = ctx.input(kW);
  const Tensor& r = ctx.input(kR);
  const int64_t h = node.attr_int("hidden_size", 0), g = 4 * h;
  const std::string direction = node.attr_string("direction", "forward");
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  if (x.rank() != 3) return node.Fail("input 0 'X' has rank ", x.rank(), "; expected 3");
  const int64_t s_len = x.dim(0), batch = x.dim(1), in = x.dim(2);
  if (w.shape() != Shape{dirs, in, g})
    return node.Fail(DescribeInput(node, kW), " has shape ", ShapeToString(w.shape()),
                     "; expected ", ShapeToString({dirs, in, g}));
  if (r.shape() != Shape{dirs, h, g})
    return node.Fail(DescribeInput(node, kR), " has shape ", ShapeToString(r.shape()),
                     "; expected ", ShapeToString({dirs, h, g}));
  const Tensor* b = ctx.has_input(kB) ? &ctx.input(kB) : nullptr;
  if (b && b->shape() != Shape{dirs, 2 * g})
    return node.Fail(DescribeInput(node, kB), " has shape ", ShapeToString(b->shape()),
                     "; expected ", ShapeToString({dirs, 2 * g}));
  const Shape state_shape = {dirs, batch, h};
  for (int i : {kInitialH, kInitialC})
    if (ctx.num_inputs() > i && ctx.has_input(i) && ctx.input(i).shape() != state_shape)
      return node.Fail(DescribeInput(node, i), " has shape ", ShapeToString(ctx.input(i).shape()),
                       "; expected ", ShapeToString(state_shape));
  Tensor y, y_h, y_c;
  if (ctx.has_output(0)) y = ctx.Output(0, DType::kFloat, {s_len, dirs, batch, h});
  if (ctx.num_outputs() > 1 && ctx.has_output(1)) y_h = ctx.Output(1, DType::kFloat, state_shape);
  if (ctx.num_outputs() > 2 && ctx.has_output(2)) y_c = ctx.Output(2, DType::kFloat, state_shape);

  DirectionWeights made;
  if (!prepared) {
    made.w.resize(static_cast<size_t>(dirs));
    made.r.resize(static_cast<size_t>(dirs));
    for (int64_t d = 0; d < dirs; ++d) {
      ONYX_RETURN_IF_ERROR(ReadWeights(node, w, ctx.input(kWScale), ctx.input(kWZero), d, in, g,
                                       kWScale, &made.w[d]));
      ONYX_RETURN_IF_ERROR(ReadWeights(node, r, ctx.input(kRScale), ctx.input(kRZero), d, h, g,
                                       kRScale, &made.r[d]));
    }
    prepared = &made;
  }
  // One direction, start to end, on buffers of its own: the two directions of a bidirectional
  // LSTM are independent and run on two threads when the session has them.
  const auto run_direction = [&](int64_t d) {
    std::vector<float> xw(static_cast<size_t>(s_len * batch * g));
    std::vector<float> hw(static_cast<size_t>(batch * g));
    std::vector<float> hs(static_cast<size_t>(batch * h)), cs(static_cast<size_t>(batch * h));
    const QuantWeights& wq = prepared->w[d];
    const QuantWeights& rq = prepared->r[d];
    ProductScratch scratch;
    if (s_len * batch > 0) QuantizedProduct(x.data<float>(), s_len * batch, wq, xw.data(), scratch);
    const auto init = [&](int i, std::vector<float>& state) {
      if (ctx.num_inputs() > i && ctx.has_input(i)) {
        const float* src = ctx.input(i).data<float>() + d * batch * h;
        std::copy(src, src + batch * h, state.begin());
      } else {
        std::fill(state.begin(), state.end(), 0.f);
      }
    };
    init(kInitialH, hs);
    init(kInitialC, cs);
    const float* wb = b ? b->data<float>() + d * 2 * g : nullptr;
    const bool reverse = dirs == 2 ? d == 1 : direction == "reverse";
    for (int64_t step = 0; step < s_len; ++step) {
      const int64_t t = reverse ? s_len - 1 - step : step;
      QuantizedProduct(hs.data(), batch, rq, hw.data(), scratch);
      // The pre-activations (i, o, f, c) in place of the recurrent product, then the cell on
      // Highway (LSTM_f32_hwy's, tested against the reference cell).
      for (int64_t n = 0; n < batch; ++n) {
        const float* xg = xw.data() + (t * batch + n) * g;
        float* hg = hw.data() + n * g;
        for (int64_t j = 0; j < g; ++j) hg[j] = xg[j] + hg[j] + (wb ? wb[j] + wb[g + j] : 0.f);
      }
      common::LstmCellF32(hw.data(), batch, h, cs.data(), hs.data());
      if (y.defined())
        std::copy(hs.begin(), hs.end(), y.data<float>() + (t * dirs + d) * batch * h);
    }
    if (y_h.defined()) std::copy(hs.begin(), hs.end(), y_h.data<float>() + d * batch * h);
    if (y_c.defined()) std::copy(cs.begin(), cs.end(), y_c.data<float>() + d * batch * h);
  };
  // Work of one direction, about one unit per multiply-add: above ParallelFor's threshold
  // whenever a split pays.
  const int64_t work = std::max<int64_t>(1, s_len * batch * (in + h) * g);
  ParallelFor(dirs, work, ctx.intra_op_threads(), [&](int64_t begin, int64_t end) {
    for (int64_t d = begin; d < end; ++d) run_direction(d);
  });
  return Status::Ok();
}

// Reads constant W and R (values, scales, zero points per direction) once, at kernel creation,
// instead of on every run (ddddocr's [2, 512, 2048] pair: 4 M elements per run).
class DynamicQuantizeLstmKernel : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const NodeView& node,
                                                  const std::vector<TypeInfo>&,
                                                  const KernelCreateInfo& info) {
    auto k = std::unique_ptr<DynamicQuantizeLstmKernel>(new DynamicQuantizeLstmKernel());
    const auto constant = [&](int i) -> const Tensor* {
      return i < static_cast<int>(info.constants.size()) ? info.constants[i] : nullptr;
    };
    const Tensor *w = constant(kW), *r = constant(kR);
    const bool all = w && r && w->rank() == 3 && r->rank() == 3 && w->dim(0) == r->dim(0) &&
                     w->dim(2) == r->dim(2) && constant(kWScale) && constant(kWZero) &&
                     constant(kRScale) && constant(kRZero);
    if (all) {
      const int64_t dirs = w->dim(0), in = w->dim(1), h = r->dim(1), g = w->dim(2);
      k->prepared_.w.resize(static_cast<size_t>(dirs));
      k->prepared_.r.resize(static_cast<size_t>(dirs));
      for (int64_t d = 0; d < dirs; ++d) {
        ONYX_RETURN_IF_ERROR(ReadWeights(node, *w, *constant(kWScale), *constant(kWZero), d, in, g,
                                         kWScale, &k->prepared_.w[d]));
        ONYX_RETURN_IF_ERROR(ReadWeights(node, *r, *constant(kRScale), *constant(kRZero), d, h, g,
                                         kRScale, &k->prepared_.r[d]));
      }
      k->has_prepared_ = true;
    }
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status Run(KernelContext& ctx) const override {
    return RunDynamicQuantizeLstm(ctx, has_prepared_ ? &prepared_ : nullptr);
  }

 private:
  DirectionWeights prepared_;
  bool has_prepared_ = false;
};

}  // namespace

void RegisterDynamicQuantizeLstm(OpRegistry& r) {
  OpDef def;
  def.domain = kMsDomain;
  def.op_type = "DynamicQuantizeLSTM";
  def.since = 1;
  def.until = kLatestOpset;
  def.infer = InferDynamicQuantizeLstm;
  def.impls.push_back(KernelImpl{"DynamicQuantizeLSTM_ref", nullptr, nullptr,
                                 CreateWithInfoFn(DynamicQuantizeLstmKernel::Create)});
  r.AddDef(std::move(def));
}

}  // namespace onyx::kernels
