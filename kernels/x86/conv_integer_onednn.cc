// ConvInteger (2-D, static shapes, constant W) on oneDNN's int8 convolution, exact in int32.
// oneDNN takes int8 weights without a zero point and adds no zero point of its own here, so it
// computes the raw sums R = sum x * w8 over the window's taps inside the image, with w8 = W
// shifted to int8 (uint8 W: w - 128). ConvInteger's sum over the same taps (padding contributes
// nothing: it is x_zero_point in X's own domain) is then
//   sum (x - xz)(w - wz[m]) = sum (x - xz)(w8 - d[m]),   d[m] = wz[m] - shift
//                           = R - xz * B[m, p] - d[m] * (S[n, g, p] - xz * Cnt[p])
// where B[m, p] sums w8 over the taps of output position p that fall inside the image, S sums X
// over the channels of group g and those taps, and Cnt counts them (times C / group). B and Cnt
// depend on the geometry only and are made once; S is one pass over X per run, and only when
// some d[m] is not 0 (ONNX Runtime's dynamically quantized uint8 weights: zero point 119 in
// ddddocr). X and Y are NCHW; oneDNN's int8 convolutions want NHWC, so X is reordered in (8-bit)
// and Y out. CPUs without VNNI (or AMX) run the reference: oneDNN's older int8 kernels add pairs
// of products in 16 bits, which saturates.
#include "kernels/x86/conv_integer_onednn.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "kernels/common/int_product.h"
#include "kernels/reference/conv_pool.h"
#include "kernels/x86/onednn_context.h"

namespace onyx::kernels::x86 {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

enum Input { kX, kW, kXZero, kWZero };

int32_t ZeroPointAt(const Tensor& z, int64_t i) {
  return z.dtype() == DType::kUInt8 ? z.data<uint8_t>()[i] : z.data<int8_t>()[i];
}

class ConvIntegerOnednn : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const NodeView& node,
                                                  const std::vector<TypeInfo>& types,
                                                  const KernelCreateInfo& info) {
    auto k = std::unique_ptr<ConvIntegerOnednn>(new ConvIntegerOnednn());
    ONYX_RETURN_IF_ERROR(k->Init(node, types, info));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  bool packed_input(size_t i) const override { return i == kW; }

  Status Run(KernelContext& ctx) const override {
    SetOmpThreads(threads_);
    const NodeView& node = ctx.node();
    const Tensor& x = ctx.input(kX);
    if (x.shape() != x_shape_) return node.Fail("input shapes changed after planning");
    int32_t xz = 0;
    if (ctx.has_input(kXZero)) {
      const Tensor& z = ctx.input(kXZero);
      if (z.numel() != 1 || z.dtype() != x.dtype())
        return node.Invalid("input 2 (x_zero_point) must be one value of X's type");
      xz = ZeroPointAt(z, 0);
    }
    Tensor y = ctx.Output(0, DType::kInt32, y_shape_);
    try {
      dnnl::stream& stream = ThreadStream();
      memory user_src = ThreadMemory(keys_[kSrc], user_src_md_, x.raw_data());
      memory user_dst = ThreadMemory(keys_[kDst], user_dst_md_, y.raw_data());
      memory src = ThreadBuffer(ThreadBufferUse::kSource, src_md_, keys_[kCLSrc]);
      memory dst = ThreadBuffer(ThreadBufferUse::kDestination, dst_md_, keys_[kCLDst]);
      Execute(src_reorder_, stream, {{DNNL_ARG_FROM, user_src}, {DNNL_ARG_TO, src}});
      Execute(prim_, stream,
              {{DNNL_ARG_SRC, src},
               {DNNL_ARG_WEIGHTS, packed_weights_},
               {DNNL_ARG_DST, dst},
               {DNNL_ARG_SCRATCHPAD, ThreadScratchpad(scratch_md_, keys_[kScratch])}});
      Execute(dst_reorder_, stream, {{DNNL_ARG_FROM, dst}, {DNNL_ARG_TO, user_dst}});
      stream.wait();
    } catch (const dnnl::error& e) {
      return FromDnnlError(node, e);
    }
    Correct(x, xz, y.data<int32_t>());
    return Status::Ok();
  }

 private:
  // Y -= xz * B[m, p] + d[m] * (S[n, g, p] - xz * Cnt[p]), Y NCHW.
  void Correct(const Tensor& x, int32_t xz, int32_t* y) const {
    const bool with_d = any_d_;
    if (xz == 0 && !with_d) return;
    const int64_t n = x_shape_[0], c = x_shape_[1], h = x_shape_[2], w = x_shape_[3];
    const int64_t cg = c / group_, mg = m_ / group_, plane = oh_ * ow_;
    // S - xz * Cnt per (image, group, position), from per-group channel sums of X.
    std::vector<int32_t> s;
    if (with_d) {
      s.assign(static_cast<size_t>(n * group_ * plane), 0);
      std::vector<int32_t> sums(static_cast<size_t>(h * w));
      const bool u8 = x.dtype() == DType::kUInt8;
      for (int64_t b = 0; b < n; ++b) {
        for (int64_t g = 0; g < group_; ++g) {
          std::fill(sums.begin(), sums.end(), 0);
          for (int64_t ch = g * cg; ch < (g + 1) * cg; ++ch)
            common::AddBytesToInt32(
                static_cast<const uint8_t*>(x.raw_data()) + (b * c + ch) * h * w, !u8, h * w,
                sums.data());
          int32_t* out = s.data() + (b * group_ + g) * plane;
          for (int64_t p = 0; p < plane; ++p) {
            int32_t acc = 0;
            for (const Tap& t : taps_[p]) acc += sums[t.offset];
            out[p] = acc - xz * cnt_[p];
          }
        }
      }
    }
#pragma omp parallel for num_threads(threads_) if (n * m_ * plane >= (1 << 15))
    for (int64_t bm = 0; bm < n * m_; ++bm) {
      const int64_t b = bm / m_, m = bm % m_;
      const bool with_s = with_d && d_[m] != 0;
      common::SubtractScaled(y + bm * plane, plane, xz, b_.data() + m * plane, with_s ? d_[m] : 0,
                             with_s ? s.data() + (b * group_ + m / mg) * plane : nullptr);
    }
  }

  Status Init(const NodeView& node, const std::vector<TypeInfo>& types,
              const KernelCreateInfo& info) {
    threads_ = info.threads;
    x_shape_ = types[kX].static_shape();
    const Tensor* w = info.constants.size() > kW ? info.constants[kW] : nullptr;
    if (!w) return node.NotSupported("input 1 (W) must be a constant for oneDNN");
    group_ = node.attr_int("group", 1);
    m_ = w->dim(0);
    const int64_t c = x_shape_[1], cg = c / group_;
    ONYX_ASSIGN_OR_RETURN(WindowGeometry g, ResolveWindow(node, {x_shape_[2], x_shape_[3]},
                                                          {w->dim(2), w->dim(3)}, false));
    oh_ = g.out[0], ow_ = g.out[1];
    if (oh_ <= 0 || ow_ <= 0) return node.NotSupported("empty output");
    y_shape_ = {x_shape_[0], m_, oh_, ow_};

    // W as int8 (uint8 shifted by -128), and d[m] = wz[m] - shift.
    const int32_t shift = w->dtype() == DType::kUInt8 ? 128 : 0;
    Tensor w8 = Tensor::Allocate(DType::kInt8, w->shape());
    for (int64_t i = 0; i < w->numel(); ++i)
      w8.data<int8_t>()[i] = static_cast<int8_t>(
          shift ? static_cast<int32_t>(w->data<uint8_t>()[i]) - shift : w->data<int8_t>()[i]);
    d_.assign(static_cast<size_t>(m_), -shift);
    if (Given(types, kWZero)) {
      const Tensor* wz = info.constants.size() > kWZero ? info.constants[kWZero] : nullptr;
      if (!wz) return node.NotSupported("input 3 (w_zero_point) must be a constant for oneDNN");
      if (wz->numel() != 1 && wz->numel() != m_)
        return node.NotSupported("w_zero_point must be a scalar or have M values");
      for (int64_t m = 0; m < m_; ++m) d_[m] = ZeroPointAt(*wz, wz->numel() == 1 ? 0 : m) - shift;
    }

    any_d_ = std::any_of(d_.begin(), d_.end(), [](int32_t v) { return v != 0; });

    // The taps of each output position that fall inside the image, and per output channel the
    // sum of w8 over them (B) and their count times C / group (Cnt).
    const int64_t kh = w->dim(2), kw = w->dim(3), plane = oh_ * ow_;
    std::vector<int32_t> wsum(static_cast<size_t>(m_ * kh * kw), 0);  // over C/group
    for (int64_t m = 0; m < m_; ++m)
      for (int64_t ci = 0; ci < cg; ++ci)
        for (int64_t t = 0; t < kh * kw; ++t)
          wsum[m * kh * kw + t] += w8.data<int8_t>()[(m * cg + ci) * kh * kw + t];
    taps_.assign(static_cast<size_t>(plane), {});
    cnt_.assign(static_cast<size_t>(plane), 0);
    for (int64_t oy = 0; oy < oh_; ++oy)
      for (int64_t ox = 0; ox < ow_; ++ox)
        for (int64_t ky = 0; ky < kh; ++ky)
          for (int64_t kx = 0; kx < kw; ++kx) {
            const int64_t iy = oy * g.strides[0] - g.pad_begin[0] + ky * g.dilations[0];
            const int64_t ix = ox * g.strides[1] - g.pad_begin[1] + kx * g.dilations[1];
            if (iy < 0 || iy >= x_shape_[2] || ix < 0 || ix >= x_shape_[3]) continue;
            taps_[oy * ow_ + ox].push_back(Tap{iy * x_shape_[3] + ix, ky * kw + kx});
          }
    b_.assign(static_cast<size_t>(m_ * plane), 0);
    for (int64_t p = 0; p < plane; ++p) {
      cnt_[p] = static_cast<int32_t>(taps_[p].size() * cg);
      for (int64_t m = 0; m < m_; ++m) {
        int32_t acc = 0;
        for (const Tap& t : taps_[p]) acc += wsum[m * kh * kw + t.kernel];
        b_[m * plane + p] = acc;
      }
    }

    std::vector<int64_t> wd = w->shape();
    if (group_ > 1) {  // oneDNN's grouped weights: (G, M/G, C/G, kh, kw), the same bytes
      wd = {group_, m_ / group_, cg, kh, kw};
    }
    const std::vector<int64_t> xl(x_shape_.begin(), x_shape_.end());
    const std::vector<int64_t> yl(y_shape_.begin(), y_shape_.end());
    memory::dims dil = {g.dilations[0] - 1, g.dilations[1] - 1};  // oneDNN counts gaps
    try {
      dnnl::engine& eng = CpuEngine();
      const auto xt =
          types[kX].elem == DType::kUInt8 ? memory::data_type::u8 : memory::data_type::s8;
      src_md_ = memory::desc(ToDims(xl), xt, Tag::nhwc);
      dst_md_ = memory::desc(ToDims(yl), memory::data_type::s32, Tag::nhwc);
      user_src_md_ = memory::desc(ToDims(xl), xt, Tag::nchw);
      user_dst_md_ = memory::desc(ToDims(yl), memory::data_type::s32, Tag::nchw);
      memory::dims wstrides(wd.size(), 1);
      for (size_t i = wd.size() - 1; i > 0; --i) wstrides[i - 1] = wstrides[i] * wd[i];
      const memory::desc plain_wei(ToDims(wd), memory::data_type::s8, wstrides);
      const memory::desc any_wei(ToDims(wd), memory::data_type::s8, Tag::any);
      SetOmpThreads(threads_);
      const dnnl::convolution_forward::desc desc(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_md_, any_wei,
          dst_md_, ToDims(g.strides), dil, ToDims(g.pad_begin), ToDims(g.pad_end));
      const dnnl::convolution_forward::primitive_desc pd(desc, ScratchpadAttr(), eng);
      // oneDNN's reference convolution is far slower than onyx's own reference kernel.
      const std::string impl = pd.impl_info_str();
      if (impl.find("ref") != std::string::npos)
        return node.NotSupported("oneDNN has only its reference int8 convolution (", impl, ")");
      scratch_md_ = pd.scratchpad_desc();
      prim_ = dnnl::convolution_forward(pd);
      ONYX_RETURN_IF_ERROR(MakeLayoutReorders(node, user_src_md_, src_md_, dst_md_, user_dst_md_,
                                              &src_reorder_, &dst_reorder_));
      // A private copy: the shifted weights are not the model's tensor, so no shared cache entry.
      packed_owner_ =
          PackConstantWeights(shift ? nullptr : info.weights, w8, plain_wei, pd.weights_desc());
      packed_weights_ = *packed_owner_;
    } catch (const dnnl::error& e) {
      return node.NotSupported("oneDNN: ", e.what());
    }
    return Status::Ok();
  }

  static bool Given(const std::vector<TypeInfo>& types, int i) {
    return static_cast<size_t>(i) < types.size() && types[i].is_tensor();
  }

  struct Tap {
    int64_t offset;  // in the input plane
    int64_t kernel;  // ky * kw + kx
  };

  int threads_ = 1;
  Shape x_shape_, y_shape_;
  int64_t group_ = 1, m_ = 0, oh_ = 0, ow_ = 0;
  std::vector<int32_t> d_;  // wz[m] - shift
  bool any_d_ = false;      // some d[m] is not 0: the per-run window sums of X are needed
  std::vector<std::vector<Tap>> taps_;  // per output position
  std::vector<int32_t> cnt_;            // taps inside the image times C / group
  std::vector<int32_t> b_;              // [M, positions]: w8 summed over those taps
  memory::desc user_src_md_, user_dst_md_, src_md_, dst_md_, scratch_md_;
  dnnl::reorder src_reorder_, dst_reorder_;
  memory packed_weights_;
  std::shared_ptr<const memory> packed_owner_;
  enum MemoryArg { kSrc, kDst, kCLSrc, kCLDst, kScratch };
  MemoryKeys keys_;
  dnnl::convolution_forward prim_;
};

Status ConvIntegerOnednnSupports(const NodeView& node, const std::vector<TypeInfo>& types) {
  if (!CpuHasVnni()) return node.NotSupported("needs a CPU with AVX512-VNNI or AMX");
  if (types.size() < 2) return node.NotSupported("needs X and W");
  const TypeInfo& x = types[kX];
  const TypeInfo& w = types[kW];
  if (!x.is_tensor() || !Is8BitInt(x.elem) || !x.shape_is_static() || x.rank() != 4)
    return node.NotSupported("needs 8-bit 4-D X with a static shape");
  if (!w.is_tensor() || !Is8BitInt(w.elem) || !w.shape_is_static() || w.rank() != 4)
    return node.NotSupported("needs 8-bit 4-D W with a static shape");
  const Shape xs = x.static_shape(), ws = w.static_shape();
  const int64_t group = node.attr_int("group", 1);
  if (group < 1 || ws[0] % group != 0 || xs[1] != ws[1] * group)
    return node.NotSupported("channel counts do not match group");
  for (int64_t d : xs)
    if (d == 0) return node.NotSupported("empty input");
  // K * 255 * 255 must fit in int32 with the corrections (the reference's own range).
  if (ws[1] * ws[2] * ws[3] > (1 << 14)) return node.NotSupported("reduction too long");
  return Status::Ok();
}

}  // namespace

KernelImpl ConvIntegerOnednnImpl(const std::string& name) {
  KernelImpl impl = OnednnImpl(name, ConvIntegerOnednnSupports, ConvIntegerOnednn::Create);
  // oneDNN's int8 kernels are exact only with VNNI or AMX (CpuHasVnni): below, the planner
  // reports "runs at avx512_vnni, above the ISA cap".
  impl.isa.min = IsaLevel::kAvx512Vnni;
  return impl;
}

}  // namespace onyx::kernels::x86
