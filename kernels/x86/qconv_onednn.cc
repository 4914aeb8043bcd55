// QLinearConv on oneDNN's int8 convolution. The activations' scale and zero point, the weights'
// scales and the output's scale and zero point must be constants: they become the primitive's
// output scales (x_scale * w_scale[m] / y_scale) and zero points, fixed at creation. oneDNN's
// int8 convolutions want channels-last activations: com.onyx NhwcQLinearConv (placed by the
// planner's layout pass) has them; for QLinearConv an NCHW X is reordered in and Y out
// around the primitive (8-bit copies, a quarter of a float one's bytes). The weights, which
// oneDNN takes only as int8 with no zero point, are packed once with the compensation the
// activations' zero point needs. oneDNN adds Y's zero point in float before rounding, where
// QLinearConv rounds and then adds it: a product within a few 1e-6 of a .5 tie may round the
// other way (one step; never with zero point 0).
#include "kernels/x86/qconv_onednn.h"

#include <cmath>

#include "kernels/reference/conv_pool.h"
#include "kernels/x86/onednn_context.h"

namespace onyx::kernels::x86 {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

// QLinearConv's inputs.
enum Input { kX, kXScale, kXZero, kW, kWScale, kWZero, kYScale, kYZero, kBias };

memory::data_type DnnlType(DType t) {
  return t == DType::kUInt8 ? memory::data_type::u8 : memory::data_type::s8;
}

bool IsChannelsLastQLinearConv(const NodeView& node) {
  return node.op_type() == "NhwcQLinearConv";
}

// A constant input's elements as doubles (scales), or an error naming it when it is computed.
StatusOr<std::vector<double>> ConstantValues(const NodeView& node, const KernelCreateInfo& info,
                                             int i) {
  const Tensor* t = static_cast<size_t>(i) < info.constants.size() ? info.constants[i] : nullptr;
  if (!t) return node.NotSupported("input ", i, " must be a constant for oneDNN");
  std::vector<double> v(static_cast<size_t>(t->numel()));
  for (size_t k = 0; k < v.size(); ++k) v[k] = ElementAsDouble(*t, static_cast<int64_t>(k));
  return v;
}

// Whether oneDNN's AMX int8 convolution is slower than its AVX-512 VNNI one for a convolution
// of `n` output channels, a reduction of `k` = C/group * kernel taps and `macs` products (per
// image), so that the VNNI one should be taken. Measured with oneDNN 2.6 on a Xeon with AMX, at
// batch 1 (MobileNetV2 and ResNet-50): AMX won every ResNet-50 convolution (1.2-3.5x; 12.8 M
// products and more, 64 channels and more) and lost where a side is narrow or the work small
// (MobileNetV2's 1x1 convolutions of 16-192 channels, 2.4-11 M products: VNNI 1.1-4.7x faster;
// 2.4 against 3.0 ms a run). The tile setup and the 16-row tiles do not pay off there.
bool AmxLoses(int64_t n, int64_t k, int64_t macs) {
  return n < 64 || k < 64 || macs < 12'000'000;
}

class QLinearConvOnednn : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const NodeView& node,
                                                  const std::vector<TypeInfo>& types,
                                                  const KernelCreateInfo& info) {
    auto k = std::unique_ptr<QLinearConvOnednn>(new QLinearConvOnednn());
    ONYX_RETURN_IF_ERROR(k->Init(node, types, info));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  bool packed_input(size_t i) const override { return i == kW; }

  Status Run(KernelContext& ctx) const override {
    SetOmpThreads(threads_);
    const NodeView& node = ctx.node();
    const Tensor& x = ctx.input(kX);
    if (x.shape() != x_shape_) return node.Fail("input shapes changed after planning");
    try {
      dnnl::stream& stream = ThreadStream();
      Tensor y = ctx.Output(0, y_type_, y_shape_);
      memory user_src = ThreadMemory(keys_[kSrc], user_src_md_, x.raw_data());
      memory user_dst = ThreadMemory(keys_[kDst], user_dst_md_, y.raw_data());
      memory src = user_src, dst = user_dst;
      if (!channels_last_) {
        src = ThreadBuffer(ThreadBufferUse::kSource, src_md_, keys_[kCLSrc]);
        dst = ThreadBuffer(ThreadBufferUse::kDestination, dst_md_, keys_[kCLDst]);
        Execute(src_reorder_, stream, {{DNNL_ARG_FROM, user_src}, {DNNL_ARG_TO, src}});
      }
      ExecArgs args = {{DNNL_ARG_SRC, src},
                       {DNNL_ARG_WEIGHTS, packed_weights_},
                       {DNNL_ARG_DST, dst},
                       {DNNL_ARG_SCRATCHPAD, ThreadScratchpad(scratch_md_, keys_[kScratch])}};
      if (has_bias_)
        args.Add(DNNL_ARG_BIAS,
                 ThreadMemory(keys_[kBiasArg], bias_md_, ctx.input(kBias).raw_data()));
      Execute(prim_, stream, args);
      if (!channels_last_)
        Execute(dst_reorder_, stream, {{DNNL_ARG_FROM, dst}, {DNNL_ARG_TO, user_dst}});
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
    channels_last_ = IsChannelsLastQLinearConv(node);
    x_shape_ = types[kX].static_shape();
    const std::vector<int64_t> xl = ChannelsFirstDims(x_shape_, channels_last_);
    const Shape w_shape = types[kW].static_shape();
    const size_t rank = xl.size();
    const int64_t group = node.attr_int("group", 1);
    const int64_t m = w_shape[0];
    std::vector<int64_t> in(xl.begin() + 2, xl.end());
    std::vector<int64_t> kernel(w_shape.begin() + 2, w_shape.end());
    ONYX_ASSIGN_OR_RETURN(WindowGeometry g, ResolveWindow(node, in, kernel, false));
    std::vector<int64_t> yl = {xl[0], m};
    yl.insert(yl.end(), g.out.begin(), g.out.end());
    for (int64_t d : yl)
      if (d <= 0) return node.NotSupported("empty output");
    y_shape_ = Shape(yl.begin(), yl.end());
    if (channels_last_) {  // stored [N, spatial..., M]
      y_shape_ = {yl[0]};
      y_shape_.insert(y_shape_.end(), yl.begin() + 2, yl.end());
      y_shape_.push_back(m);
    }
    y_type_ = types[kYZero].elem;
    has_bias_ = types.size() > kBias && types[kBias].is_tensor();

    // Scales and zero points, fixed in the primitive.
    ONYX_ASSIGN_OR_RETURN(std::vector<double> x_scale, ConstantValues(node, info, kXScale));
    ONYX_ASSIGN_OR_RETURN(std::vector<double> x_zero, ConstantValues(node, info, kXZero));
    ONYX_ASSIGN_OR_RETURN(std::vector<double> w_scale, ConstantValues(node, info, kWScale));
    ONYX_ASSIGN_OR_RETURN(std::vector<double> w_zero, ConstantValues(node, info, kWZero));
    ONYX_ASSIGN_OR_RETURN(std::vector<double> y_scale, ConstantValues(node, info, kYScale));
    ONYX_ASSIGN_OR_RETURN(std::vector<double> y_zero, ConstantValues(node, info, kYZero));
    for (const auto* v : {&x_scale, &x_zero, &y_scale, &y_zero})
      if (v->size() != 1)
        return node.NotSupported("scales and zero points of X and Y must be scalars");
    const Tensor* w = info.constants.size() > kW ? info.constants[kW] : nullptr;
    if (!w) return node.NotSupported("input 3 (W) must be a constant for oneDNN");
    for (double z : w_zero)
      if (z != 0) return node.NotSupported("oneDNN takes int8 weights without a zero point");
    if (w_scale.size() != 1 && static_cast<int64_t>(w_scale.size()) != m)
      return node.NotSupported("w_scale must be a scalar or have M elements");
    std::vector<float> scales(w_scale.size());
    for (size_t c = 0; c < scales.size(); ++c) {
      // In float and in this order, as ONNX Runtime computes it: the products that land on a
      // rounding tie then round the same way.
      const float s = static_cast<float>(x_scale[0]) * static_cast<float>(w_scale[c]) /
                      static_cast<float>(y_scale[0]);
      if (!std::isfinite(s) || s <= 0) return node.NotSupported("scales must be positive");
      scales[c] = s;
    }

    std::vector<int64_t> wd = w_shape;
    if (group > 1) {  // oneDNN's grouped weights: (G, M/G, C/G, k...), the same bytes
      wd = {group, m / group};
      wd.insert(wd.end(), w_shape.begin() + 1, w_shape.end());
    }
    memory::dims strides = ToDims(g.strides), pad_l = ToDims(g.pad_begin),
                 pad_r = ToDims(g.pad_end), dil(rank - 2);
    for (size_t i = 0; i < rank - 2; ++i) dil[i] = g.dilations[i] - 1;  // oneDNN counts gaps
    try {
      dnnl::engine& eng = CpuEngine();
      const auto xt = DnnlType(types[kX].elem), yt = DnnlType(y_type_);
      src_md_ = memory::desc(ToDims(xl), xt, ChannelsLastTag(rank));
      dst_md_ = memory::desc(ToDims(yl), yt, ChannelsLastTag(rank));
      user_src_md_ = channels_last_ ? src_md_ : memory::desc(ToDims(xl), xt, PlainTag(rank));
      user_dst_md_ = channels_last_ ? dst_md_ : memory::desc(ToDims(yl), yt, PlainTag(rank));
      const memory::desc plain_wei = PlainS8(wd);
      const memory::desc any_wei(ToDims(wd), memory::data_type::s8, Tag::any);
      bias_md_ = memory::desc({m}, memory::data_type::s32, Tag::x);
      dnnl::primitive_attr attr = ScratchpadAttr();
      // Per output channel: dim 1 of the destination.
      attr.set_output_scales(scales.size() == 1 ? 0 : 1 << 1, scales);
      if (x_zero[0] != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {static_cast<int32_t>(x_zero[0])});
      if (y_zero[0] != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {static_cast<int32_t>(y_zero[0])});
      SetOmpThreads(threads_);
      auto desc =
          has_bias_ ? dnnl::convolution_forward::desc(
                          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                          src_md_, any_wei, bias_md_, dst_md_, strides, dil, pad_l, pad_r)
                    : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                      dnnl::algorithm::convolution_direct, src_md_,
                                                      any_wei, dst_md_, strides, dil, pad_l, pad_r);
      dnnl::convolution_forward::primitive_desc pd(desc, attr, eng);
      if (AmxLoses(m / group, (xl[1] / group) * g.KernelSize(),
                   m * (xl[1] / group) * g.OutSize() * g.KernelSize())) {
        // Take oneDNN's next implementation that is not AMX, if any.
        while (std::string(pd.impl_info_str()).find("amx") != std::string::npos && pd.next_impl()) {
        }
        if (std::string(pd.impl_info_str()).find("amx") != std::string::npos)
          pd = dnnl::convolution_forward::primitive_desc(desc, attr, eng);
      }
      // oneDNN's reference convolution is far slower than onyx's own reference kernel.
      const std::string impl = pd.impl_info_str();
      if (impl.find("ref") != std::string::npos)
        return node.NotSupported("oneDNN has only its reference int8 convolution (", impl, ")");
      scratch_md_ = pd.scratchpad_desc();
      prim_ = dnnl::convolution_forward(pd);
      if (!channels_last_)
        ONYX_RETURN_IF_ERROR(MakeLayoutReorders(node, user_src_md_, src_md_, dst_md_, user_dst_md_,
                                                &src_reorder_, &dst_reorder_));
      packed_owner_ = PackConstantWeights(info.weights, *w, plain_wei, pd.weights_desc());
      packed_weights_ = *packed_owner_;
    } catch (const dnnl::error& e) {
      return node.NotSupported("oneDNN: ", e.what());
    }
    return Status::Ok();
  }

  // Row-major int8 weights of these dims.
  static memory::desc PlainS8(const std::vector<int64_t>& dims) {
    memory::dims strides(dims.size(), 1);
    for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
    return memory::desc(ToDims(dims), memory::data_type::s8, strides);
  }

  int threads_ = 1;
  bool channels_last_ = false;  // com.onyx NhwcQLinearConv: X and Y stored [N, spatial..., C]
  Shape x_shape_, y_shape_;
  DType y_type_ = DType::kUInt8;
  bool has_bias_ = false;
  memory::desc user_src_md_, user_dst_md_, src_md_, dst_md_, bias_md_, scratch_md_;
  dnnl::reorder src_reorder_, dst_reorder_;
  memory packed_weights_;
  std::shared_ptr<const memory> packed_owner_;  // keeps the shared packed weights
  enum MemoryArg { kSrc, kDst, kCLSrc, kCLDst, kScratch, kBiasArg };
  MemoryKeys keys_;
  dnnl::convolution_forward prim_;
};

}  // namespace

Status QLinearConvOnednnSupports(const NodeView& node, const std::vector<TypeInfo>& types) {
  if (!CpuHasVnni()) return node.NotSupported("needs a CPU with AVX512-VNNI or AMX");
  if (types.size() < 8) return node.NotSupported("needs 8 or 9 inputs");
  const TypeInfo& x = types[kX];
  const TypeInfo& w = types[kW];
  if (!x.is_tensor() || !Is8BitInt(x.elem) || !x.shape_is_static())
    return node.NotSupported("needs 8-bit X with a static shape");
  if (!w.is_tensor() || w.elem != DType::kInt8 || !w.shape_is_static())
    return node.NotSupported("needs int8 W with a static shape");
  const int64_t rank = x.rank();
  if (rank < 3 || rank > 5 || w.rank() != rank)
    return node.NotSupported("needs 1-, 2- or 3-D spatial input");
  const std::vector<int64_t> xs =
      ChannelsFirstDims(x.static_shape(), IsChannelsLastQLinearConv(node));
  const Shape ws = w.static_shape();
  const int64_t group = node.attr_int("group", 1);
  if (group < 1 || ws[0] % group != 0 || xs[1] != ws[1] * group)
    return node.NotSupported("channel counts do not match group");
  for (int64_t d : xs)
    if (d == 0) return node.NotSupported("empty input");
  const TypeInfo& yz = types[kYZero];
  if (!yz.is_tensor() || !Is8BitInt(yz.elem))
    return node.NotSupported("needs an 8-bit y_zero_point");
  if (!types[kXZero].is_tensor() || types[kXZero].elem != x.elem)
    return node.NotSupported("x_zero_point must have X's type");
  for (int i : {kXScale, kWScale, kYScale})
    if (!types[i].is_tensor() || types[i].elem != DType::kFloat)
      return node.NotSupported("scales must be float32");
  if (types.size() > kBias && types[kBias].kind != TypeInfo::Kind::kUnknown &&
      !(types[kBias].is_tensor() && types[kBias].elem == DType::kInt32 &&
        types[kBias].shape_is_static() && types[kBias].static_shape() == Shape{ws[0]}))
    return node.NotSupported("bias must be int32 [M]");
  return Status::Ok();
}

KernelImpl QLinearConvOnednnImpl(const std::string& name) {
  KernelImpl impl = OnednnImpl(name, QLinearConvOnednnSupports, QLinearConvOnednn::Create);
  // oneDNN's int8 kernels are exact only with VNNI or AMX (CpuHasVnni): below, the planner
  // reports "runs at avx512_vnni, above the ISA cap".
  impl.isa.min = IsaLevel::kAvx512Vnni;
  return impl;
}

}  // namespace onyx::kernels::x86
