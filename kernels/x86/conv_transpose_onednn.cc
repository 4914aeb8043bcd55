// ConvTranspose on oneDNN's deconvolution (float32, static shapes, NCHW-style layout). ONNX
// stores W as [C, M/group, k...]; oneDNN reads it through strides as (G, M/G, C/G, k...), and
// constant weights are reordered once into the layout oneDNN picks.
#include "kernels/x86/conv_transpose_onednn.h"

#include "kernels/reference/conv_pool.h"
#include "kernels/x86/onednn_context.h"

namespace onyx::kernels::x86 {
namespace {

using dnnl::memory;

struct DeconvGeometry {
  std::vector<int64_t> x, y;  // (N, C, spatial...) and (N, M, spatial...)
  memory::dims strides, dil, pad_l, pad_r;
  int64_t group = 1;
};

Status Resolve(const NodeView& node, const std::vector<TypeInfo>& types, DeconvGeometry* g) {
  if (types.size() < 2 || !IsFloatStatic(types[0]) || !IsFloatStatic(types[1]))
    return node.NotSupported("needs float32 X and W with static shapes");
  const Shape x = types[0].static_shape(), w = types[1].static_shape();
  if (x.size() < 3 || x.size() > 5 || w.size() != x.size())
    return node.NotSupported("needs 1- to 3-D spatial input");
  for (int64_t d : x)
    if (d == 0) return node.NotSupported("empty input");
  g->group = node.attr_int("group", 1);
  if (g->group < 1 || x[1] != w[0] || w[0] % g->group != 0)
    return node.NotSupported("channel counts do not match group");
  const int64_t m = w[1] * g->group;
  if (types.size() > 2 && types[2].kind != TypeInfo::Kind::kUnknown &&
      !(IsFloatStatic(types[2]) && types[2].static_shape() == Shape{m}))
    return node.NotSupported("bias must be float32 [M]");
  std::vector<int64_t> in(x.begin() + 2, x.end());
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  const std::vector<int64_t> ks = node.attr_ints("kernel_shape");
  if (!ks.empty() && ks != kernel) return node.NotSupported("kernel_shape differs from W");
  ONYX_ASSIGN_OR_RETURN(WindowGeometry wg, ResolveConvTransposeWindow(node, in, kernel));
  const std::vector<int64_t> out_pad =
      node.attr_ints("output_padding", std::vector<int64_t>(in.size(), 0));
  g->x.assign(x.begin(), x.end());
  g->y = {x[0], m};
  for (size_t i = 0; i < in.size(); ++i) {
    // oneDNN: out = (in - 1) * stride + span - pad_l - pad_r, so output_padding comes off pad_r.
    const int64_t pr = wg.pad_end[i] - out_pad[i];
    if (wg.pad_begin[i] < 0 || pr < 0 || wg.out[i] < 1)
      return node.NotSupported("negative effective padding");
    g->strides.push_back(wg.strides[i]);
    g->dil.push_back(wg.dilations[i] - 1);
    g->pad_l.push_back(wg.pad_begin[i]);
    g->pad_r.push_back(pr);
    g->y.push_back(wg.out[i]);
  }
  return Status::Ok();
}

// W [C, M/G, k...] viewed as oneDNN's (G, M/G, C/G, k...) or (M, C, k...) when G = 1.
memory::desc WeightsView(const Shape& w, int64_t group) {
  const int64_t c = w[0], mg = w[1], cg = c / group;
  int64_t taps = 1;
  for (size_t i = 2; i < w.size(); ++i) taps *= w[i];
  memory::dims spatial(w.begin() + 2, w.end()), spatial_strides(w.size() - 2, 1);
  for (int i = static_cast<int>(spatial.size()) - 2; i >= 0; --i)
    spatial_strides[i] = spatial_strides[i + 1] * spatial[i + 1];
  memory::dims dims, strides;
  if (group > 1) {
    dims = {group, mg, cg};
    strides = {cg * mg * taps, taps, mg * taps};
  } else {
    dims = {mg, c};
    strides = {taps, mg * taps};
  }
  dims.insert(dims.end(), spatial.begin(), spatial.end());
  strides.insert(strides.end(), spatial_strides.begin(), spatial_strides.end());
  return memory::desc(dims, memory::data_type::f32, strides);
}

class ConvTransposeOnednn : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const NodeView& node,
                                                  const std::vector<TypeInfo>& types,
                                                  const KernelCreateInfo& info) {
    auto k = std::unique_ptr<ConvTransposeOnednn>(new ConvTransposeOnednn());
    DeconvGeometry g;
    ONYX_RETURN_IF_ERROR(Resolve(node, types, &g));
    k->threads_ = info.threads;
    k->x_shape_ = types[0].static_shape();
    k->w_shape_ = types[1].static_shape();
    k->y_shape_ = Shape(g.y.begin(), g.y.end());
    k->has_bias_ = types.size() > 2 && types[2].is_tensor();
    try {
      dnnl::engine& eng = CpuEngine();
      k->src_md_ = PlainDesc(g.x);
      k->dst_md_ = PlainDesc(g.y);
      k->user_wei_md_ = WeightsView(k->w_shape_, g.group);
      const memory::desc any_wei(k->user_wei_md_.dims(), memory::data_type::f32,
                                 memory::format_tag::any);
      k->bias_md_ = PlainDesc({g.y[1]});
      SetOmpThreads(k->threads_);
      const auto prop = dnnl::prop_kind::forward_inference;
      const auto alg = dnnl::algorithm::deconvolution_direct;
      auto desc =
          k->has_bias_
              ? dnnl::deconvolution_forward::desc(prop, alg, k->src_md_, any_wei, k->bias_md_,
                                                  k->dst_md_, g.strides, g.dil, g.pad_l, g.pad_r)
              : dnnl::deconvolution_forward::desc(prop, alg, k->src_md_, any_wei, k->dst_md_,
                                                  g.strides, g.dil, g.pad_l, g.pad_r);
      dnnl::deconvolution_forward::primitive_desc pd(desc, ScratchpadAttr(), eng);
      k->wei_md_ = pd.weights_desc();
      k->scratch_md_ = pd.scratchpad_desc();
      k->prim_ = dnnl::deconvolution_forward(pd);
      if (info.deterministic && RunsOnGemmDriver(pd.impl_info_str())) k->threads_ = 1;
      if (const Tensor* wc = info.constants.size() > 1 ? info.constants[1] : nullptr) {
        k->packed_owner_ = PackConstantWeights(info.weights, *wc, k->user_wei_md_, k->wei_md_);
        k->packed_weights_ = *k->packed_owner_;
      }
    } catch (const dnnl::error& e) {
      return node.NotSupported("oneDNN: ", e.what());
    }
    return std::unique_ptr<Kernel>(std::move(k));
  }

  bool packed_input(size_t i) const override { return i == 1 && packed_weights_; }

  Status Run(KernelContext& ctx) const override {
    SetOmpThreads(threads_);
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    if (x.shape() != x_shape_ || w.shape() != w_shape_)
      return ctx.node().Fail("input shapes changed after planning");
    try {
      dnnl::stream& stream = ThreadStream();
      Tensor y = ctx.Output(0, DType::kFloat, y_shape_);
      memory src = ThreadMemory(keys_[kSrc], src_md_, x.raw_data());
      memory dst = ThreadMemory(keys_[kDst], dst_md_, y.raw_data());
      memory wei = packed_weights_;
      if (!wei) wei = ReorderWeights(user_wei_md_, wei_md_, w.raw_data(), stream);
      ExecArgs args = {{DNNL_ARG_SRC, src},
                       {DNNL_ARG_WEIGHTS, wei},
                       {DNNL_ARG_DST, dst},
                       {DNNL_ARG_SCRATCHPAD, ThreadScratchpad(scratch_md_, keys_[kScratch])}};
      if (has_bias_)
        args.Add(DNNL_ARG_BIAS, ThreadMemory(keys_[kBias], bias_md_, ctx.input(2).raw_data()));
      Execute(prim_, stream, args);
      stream.wait();
    } catch (const dnnl::error& e) {
      return FromDnnlError(ctx.node(), e);
    }
    return Status::Ok();
  }

 private:
  int threads_ = 1;
  Shape x_shape_, w_shape_, y_shape_;
  bool has_bias_ = false;
  memory::desc src_md_, dst_md_, user_wei_md_, wei_md_, bias_md_, scratch_md_;
  enum MemoryArg { kSrc, kDst, kScratch, kBias };
  MemoryKeys keys_;
  memory packed_weights_;
  std::shared_ptr<const memory> packed_owner_;  // keeps the shared packed weights
  dnnl::deconvolution_forward prim_;
};

}  // namespace

KernelImpl ConvTransposeOnednnImpl(const std::string& name) {
  auto supports = [](const NodeView& node, const std::vector<TypeInfo>& types) {
    DeconvGeometry g;
    return Resolve(node, types, &g);
  };
  return OnednnImpl(name, supports, ConvTransposeOnednn::Create);
}

}  // namespace onyx::kernels::x86
