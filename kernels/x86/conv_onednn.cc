// Convolution on oneDNN: Conv, com.onyx FusedConv (bias, residual, activation as post-ops) and
// com.onyx NhwcConv (the same on channels-last activations, placed by the planner's layout pass).
// The primitive is created once per plan; constant weights are reordered once into the layout
// oneDNN picks (format_tag::any).
#include "kernels/x86/conv_onednn.h"

#include <cstring>

#include "kernels/reference/conv_pool.h"
#include "kernels/x86/onednn_context.h"

namespace onyx::kernels::x86 {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

// Stored shape of a logical (N, C, spatial...) tensor.
Shape StoredShape(const std::vector<int64_t>& logical, bool channels_last) {
  if (!channels_last) return Shape(logical.begin(), logical.end());
  Shape s = {logical[0]};
  s.insert(s.end(), logical.begin() + 2, logical.end());
  s.push_back(logical[1]);
  return s;
}

// Whether a convolution should run with Winograd's algorithm, F(4x4 or 2x2, 3x3) on nChw16c:
// 3x3, stride 1, no dilation, ungrouped, channel counts that fill 16-lane blocks and a map of at
// least 14x14. Measured on AVX-512 with oneDNN 2.6, such convolutions (the ResNet-50, VGG-19,
// DenseNet-121 and Inception shapes) run 1.2-2.6x faster than direct, the two reorders included;
// on 13x13 maps (SqueezeNet) or with fewer channels they run slower.
bool WinogradPays(const std::vector<int64_t>& x, const std::vector<int64_t>& y, const Shape& w,
                  const WindowGeometry& g, int64_t group) {
  if (x.size() != 4 || group != 1 || w[2] != 3 || w[3] != 3) return false;
  for (size_t i = 0; i < 2; ++i)
    if (g.strides[i] != 1 || g.dilations[i] != 1) return false;
  const int64_t c = x[1], m = y[1];
  return c % 16 == 0 && m % 16 == 0 && c >= 32 && m >= 32 && y[2] >= 14 && y[3] >= 14;
}

class ConvOnednn : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const NodeView& node,
                                                  const std::vector<TypeInfo>& types,
                                                  const KernelCreateInfo& info) {
    auto k = std::unique_ptr<ConvOnednn>(new ConvOnednn());
    ONYX_RETURN_IF_ERROR(k->Init(node, types, info));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  std::string variant() const override { return winograd_ ? "winograd" : ""; }
  bool packed_input(size_t i) const override { return i == 1 && packed_weights_; }

  Status Run(KernelContext& ctx) const override {
    SetOmpThreads(threads_);
    const NodeView& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    if (x.shape() != x_shape_ || w.shape() != w_shape_)
      return node.Fail("input shapes changed after planning");
    try {
      dnnl::stream& stream = ThreadStream();
      Tensor y = ctx.Output(0, DType::kFloat, y_shape_);
      memory src = ThreadMemory(keys_[kSrc], src_md_, x.raw_data());
      memory dst = ThreadMemory(keys_[kDst], dst_md_, y.raw_data());
      memory user_dst = dst;
      if (bf16_) {  // float32 activations converted to the primitive's bfloat16 source
        memory converted = ThreadBuffer(ThreadBufferUse::kSource, bf16_src_md_, keys_[kBf16Src]);
        Execute(bf16_reorder_, stream, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, converted}});
        src = converted;
      }
      if (winograd_) {  // Winograd runs on nChw16c: reorder in and out around it
        memory blocked_src =
            ThreadBuffer(ThreadBufferUse::kSource, blocked_src_md_, keys_[kBlockedSrc]);
        Execute(src_reorder_, stream, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, blocked_src}});
        src = blocked_src;
        dst = ThreadBuffer(ThreadBufferUse::kDestination, blocked_dst_md_, keys_[kBlockedDst]);
      }
      memory wei = packed_weights_;
      if (!wei) wei = ReorderWeights(user_wei_md_, wei_md_, w.raw_data(), stream);  // computed
      ExecArgs args = {{DNNL_ARG_SRC, src},
                       {DNNL_ARG_WEIGHTS, wei},
                       {DNNL_ARG_DST, dst},
                       {DNNL_ARG_SCRATCHPAD, ThreadScratchpad(scratch_md_, keys_[kScratch])}};
      if (has_bias_)
        args.Add(DNNL_ARG_BIAS, ThreadMemory(keys_[kBias], bias_md_, ctx.input(2).raw_data()));
      if (has_residual_) {
        const Tensor& z = ctx.input(3);
        if (z.shape() != y_shape_) return node.Fail("input 3 (Z) shape changed after planning");
        // The planner usually gives Y the dying Z's buffer; otherwise copy Z in first.
        if (y.raw_data() != z.raw_data()) std::memcpy(y.raw_data(), z.raw_data(), z.nbytes());
      }
      Execute(prim_, stream, args);
      if (winograd_) Execute(dst_reorder_, stream, {{DNNL_ARG_FROM, dst}, {DNNL_ARG_TO, user_dst}});
      stream.wait();
    } catch (const dnnl::error& e) {
      return FromDnnlError(node, e);
    }
    return Status::Ok();
  }

 private:
  Status Init(const NodeView& node, const std::vector<TypeInfo>& types,
              const KernelCreateInfo& info) {
    threads_ = info.threads;
    const bool cl = IsChannelsLastConv(node);
    x_shape_ = types[0].static_shape();
    w_shape_ = types[1].static_shape();
    std::vector<int64_t> xl = ChannelsFirstDims(x_shape_, cl);
    const int64_t group = node.attr_int("group", 1);
    const int64_t m = w_shape_[0];
    std::vector<int64_t> in(xl.begin() + 2, xl.end());
    std::vector<int64_t> kernel(w_shape_.begin() + 2, w_shape_.end());
    ONYX_ASSIGN_OR_RETURN(WindowGeometry g, ResolveWindow(node, in, kernel, false));
    std::vector<int64_t> yl = {xl[0], m};
    yl.insert(yl.end(), g.out.begin(), g.out.end());
    y_shape_ = StoredShape(yl, cl);
    // A 2-D convolution along a line (a [k, 1] kernel on a width-1 map, as tf2onnx and jax2tf
    // export 1-D convolutions) is given to oneDNN as the 1-D convolution it is: the same bytes,
    // and 3x faster (Magika's [5, 1] convolution on [1, 256, 512, 1]: 12.6 -> 3.9 ms).
    Shape wl = w_shape_;
    if (xl.size() == 4) {
      for (size_t a : {size_t{1}, size_t{0}}) {
        if (g.in[a] != 1 || g.kernel[a] != 1 || g.out[a] != 1 || g.pad_begin[a] != 0 ||
            g.pad_end[a] != 0)
          continue;
        for (auto* v :
             {&g.in, &g.kernel, &g.strides, &g.dilations, &g.pad_begin, &g.pad_end, &g.out})
          v->erase(v->begin() + static_cast<std::ptrdiff_t>(a));
        for (auto* v : {&xl, &yl, &wl}) v->erase(v->begin() + 2 + static_cast<std::ptrdiff_t>(a));
        break;
      }
    }
    const size_t rank = xl.size();

    has_bias_ = types.size() > 2 && types[2].is_tensor();
    has_residual_ = types.size() > 3 && types[3].is_tensor();
    if (has_residual_ && types[3].static_shape() != y_shape_)
      return node.NotSupported("input 3 (Z) must have the output's shape");

    std::vector<int64_t> wd = wl;
    if (group > 1) {  // oneDNN's grouped weights: (G, M/G, C/G, k...), the same bytes
      wd = {group, m / group};
      wd.insert(wd.end(), wl.begin() + 1, wl.end());
    }
    memory::dims strides = ToDims(g.strides), pad_l = ToDims(g.pad_begin),
                 pad_r = ToDims(g.pad_end), dil(rank - 2);
    for (size_t i = 0; i < rank - 2; ++i) dil[i] = g.dilations[i] - 1;  // oneDNN counts gaps
    try {
      dnnl::engine& eng = CpuEngine();
      const auto f32 = memory::data_type::f32;
      src_md_ = cl ? memory::desc(ToDims(xl), f32, ChannelsLastTag(rank)) : PlainDesc(xl);
      dst_md_ = cl ? memory::desc(ToDims(yl), f32, ChannelsLastTag(rank)) : PlainDesc(yl);
      user_wei_md_ = PlainDesc(wd);
      bf16_ = info.bf16;
      if (bf16_ && !CpuHasBf16())
        return node.Invalid(
            "bf16 precision needs a CPU with AVX512-BF16 or AMX; this one has "
            "neither (SessionOptions::bf16)");
      const auto wt = bf16_ ? memory::data_type::bf16 : f32;
      const memory::desc any_wei(ToDims(wd), wt, Tag::any);
      bias_md_ = PlainDesc({m});
      dnnl::post_ops ops;
      // The residual as a sum post-op (Y already holds Z): with a binary add oneDNN 2.6 falls
      // back from brgconv to jit_1x1, about half as fast on ResNet-50's 1x1 convolutions.
      if (has_residual_) ops.append_sum(1.f);
      ONYX_RETURN_IF_ERROR(AppendActivation(node, ops));
      dnnl::primitive_attr attr = ScratchpadAttr();
      attr.set_post_ops(ops);
      SetOmpThreads(threads_);
      auto make_pd = [&](dnnl::algorithm alg, const memory::desc& src, const memory::desc& dst) {
        auto desc = has_bias_ ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                                alg, src, any_wei, bias_md_, dst,
                                                                strides, dil, pad_l, pad_r)
                              : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                                alg, src, any_wei, dst, strides,
                                                                dil, pad_l, pad_r);
        return dnnl::convolution_forward::primitive_desc(desc, attr, eng);
      };
      dnnl::convolution_forward::primitive_desc pd;
      // Not in deterministic mode: oneDNN picks its Winograd schedule and blocking from the
      // thread count (jit_avx512_core_f32_wino_conv_4x3's W_SGD needs 1.5 tile blocks a thread).
      if (info.winograd && !info.deterministic && !bf16_ && !has_residual_ &&
          WinogradPays(xl, yl, wl, g, group)) {
        try {  // oneDNN's Winograd kernels need AVX-512 and the nChw16c layout
          blocked_src_md_ = memory::desc(ToDims(xl), f32, Tag::nChw16c);
          blocked_dst_md_ = memory::desc(ToDims(yl), f32, Tag::nChw16c);
          pd = make_pd(dnnl::algorithm::convolution_winograd, blocked_src_md_, blocked_dst_md_);
          // Reorders run concurrently from several threads, so they must need no scratchpad
          // (a library-owned one is shared); plain layout changes like these never do.
          const dnnl::reorder::primitive_desc to_blocked(eng, src_md_, eng, blocked_src_md_,
                                                         ScratchpadAttr());
          const dnnl::reorder::primitive_desc from_blocked(eng, blocked_dst_md_, eng, dst_md_,
                                                           ScratchpadAttr());
          if (to_blocked.scratchpad_desc().get_size() == 0 &&
              from_blocked.scratchpad_desc().get_size() == 0) {
            src_reorder_ = dnnl::reorder(to_blocked);
            dst_reorder_ = dnnl::reorder(from_blocked);
            winograd_ = true;
          }
        } catch (const dnnl::error&) {
          winograd_ = false;
        }
      }
      if (bf16_) {
        bf16_src_md_ = memory::desc(ToDims(xl), memory::data_type::bf16,
                                    cl ? ChannelsLastTag(rank) : PlainTag(rank));
        pd = make_pd(dnnl::algorithm::convolution_direct, bf16_src_md_, dst_md_);
        const dnnl::reorder::primitive_desc to_bf16(eng, src_md_, eng, bf16_src_md_,
                                                    ScratchpadAttr());
        if (to_bf16.scratchpad_desc().get_size() != 0)
          return node.NotSupported("oneDNN's bfloat16 conversion needs a scratchpad");
        bf16_reorder_ = dnnl::reorder(to_bf16);
      } else if (!winograd_) {
        pd = make_pd(dnnl::algorithm::convolution_direct, src_md_, dst_md_);
      }
      wei_md_ = pd.weights_desc();
      scratch_md_ = pd.scratchpad_desc();
      prim_ = dnnl::convolution_forward(pd);
      if (info.deterministic && RunsOnGemmDriver(pd.impl_info_str())) threads_ = 1;
      if (const Tensor* wc = info.constants.size() > 1 ? info.constants[1] : nullptr) {
        packed_owner_ = PackConstantWeights(info.weights, *wc, user_wei_md_, wei_md_);
        packed_weights_ = *packed_owner_;
      }
    } catch (const dnnl::error& e) {
      return node.NotSupported("oneDNN: ", e.what());
    }
    return Status::Ok();
  }

  int threads_ = 1;
  bool winograd_ = false;  // run as reorder to nChw16c, Winograd, reorder back
  bool bf16_ = false;      // bfloat16 source and weights (SessionOptions::bf16)
  memory::desc bf16_src_md_;
  dnnl::reorder bf16_reorder_;
  memory::desc blocked_src_md_, blocked_dst_md_;
  dnnl::reorder src_reorder_, dst_reorder_;
  Shape x_shape_, w_shape_, y_shape_;
  bool has_bias_ = false, has_residual_ = false;
  memory::desc src_md_, dst_md_, user_wei_md_, wei_md_, bias_md_, scratch_md_;
  memory packed_weights_;                       // null when the weights are not constant
  std::shared_ptr<const memory> packed_owner_;  // keeps the shared packed weights
  enum MemoryArg { kSrc, kDst, kBlockedSrc, kBlockedDst, kScratch, kBias, kBf16Src };
  MemoryKeys keys_;
  dnnl::convolution_forward prim_;
};

}  // namespace

Status ConvOnednnSupports(const NodeView& node, const std::vector<TypeInfo>& types) {
  if (types.size() < 2 || !IsFloatStatic(types[0]) || !IsFloatStatic(types[1]))
    return node.NotSupported("needs float32 X and W with static shapes");
  const bool cl = IsChannelsLastConv(node);
  const int64_t rank = types[0].rank();
  if (rank < 3 || rank > 5 || types[1].rank() != rank)
    return node.NotSupported("needs 1-, 2- or 3-D spatial input");
  const std::vector<int64_t> xl = ChannelsFirstDims(types[0].static_shape(), cl);
  const Shape w = types[1].static_shape();
  const int64_t group = node.attr_int("group", 1);
  if (group < 1 || w[0] % group != 0 || xl[1] != w[1] * group || xl[0] == 0)
    return node.NotSupported("channel counts do not match group");
  for (int64_t d : xl)
    if (d == 0) return node.NotSupported("empty input");
  if (types.size() > 2 && types[2].kind != TypeInfo::Kind::kUnknown &&
      !(IsFloatStatic(types[2]) && types[2].static_shape() == Shape{w[0]}))
    return node.NotSupported("bias must be float32 [M]");
  if (types.size() > 3 && types[3].kind != TypeInfo::Kind::kUnknown && !IsFloatStatic(types[3]))
    return node.NotSupported("residual must be a float32 tensor of static shape");
  if (!ActivationSupported(node)) return node.NotSupported("activation has no oneDNN post-op");
  return Status::Ok();
}

KernelImpl ConvOnednnImpl(const std::string& name) {
  return OnednnImpl(name, ConvOnednnSupports, ConvOnednn::Create);
}

}  // namespace onyx::kernels::x86
