// LRN on oneDNN: y = x / (bias + alpha / size * sum of x^2 over the channel window)^beta, the
// window centred on the channel. oneDNN centres it the same way only for odd sizes (ONNX puts the
// extra channel of an even window after the centre), so even sizes stay on the reference kernel.
#include "kernels/x86/lrn_onednn.h"

#include "kernels/x86/onednn_context.h"

namespace onyx::kernels::x86 {
namespace {

using dnnl::memory;

bool ChannelsLast(const NodeView& node) {
  return node.op_type() == "NhwcLRN";
}

Status LrnSupports(const NodeView& node, const std::vector<TypeInfo>& types) {
  if (types.empty() || !IsFloatStatic(types[0]) || types[0].rank() != 4)
    return node.NotSupported("needs a 4-D float32 input with a static shape");
  for (int64_t d : types[0].static_shape())
    if (d == 0) return node.NotSupported("empty input");
  const int64_t size = node.attr_int("size", 0);
  if (size < 1 || size % 2 == 0) return node.NotSupported("needs an odd size");
  return Status::Ok();
}

class LrnOnednn : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const NodeView& node,
                                                  const std::vector<TypeInfo>& types,
                                                  const KernelCreateInfo& info) {
    auto k = std::unique_ptr<LrnOnednn>(new LrnOnednn());
    k->threads_ = info.threads;
    k->shape_ = types[0].static_shape();
    const Shape& s = k->shape_;
    try {
      const auto f32 = memory::data_type::f32;
      // oneDNN describes the tensor by its logical (N, C, H, W) dims and the storage order.
      k->md_ = ChannelsLast(node)
                   ? memory::desc({s[0], s[3], s[1], s[2]}, f32, memory::format_tag::nhwc)
                   : PlainDesc(std::vector<int64_t>(s.begin(), s.end()));
      SetOmpThreads(k->threads_);
      dnnl::lrn_forward::desc desc(dnnl::prop_kind::forward_inference,
                                   dnnl::algorithm::lrn_across_channels, k->md_,
                                   node.attr_int("size", 0), node.attr_float("alpha", 1e-4f),
                                   node.attr_float("beta", 0.75f), node.attr_float("bias", 1.f));
      dnnl::lrn_forward::primitive_desc pd(desc, ScratchpadAttr(), CpuEngine());
      k->scratch_md_ = pd.scratchpad_desc();
      k->prim_ = dnnl::lrn_forward(pd);
    } catch (const dnnl::error& e) {
      return node.NotSupported("oneDNN: ", e.what());
    }
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status Run(KernelContext& ctx) const override {
    return RunSrcDstPrimitive(ctx, prim_, threads_, shape_, md_, shape_, md_, scratch_md_, keys_);
  }

 private:
  int threads_ = 1;
  Shape shape_;
  memory::desc md_, scratch_md_;
  MemoryKeys keys_;
  dnnl::lrn_forward prim_;
};

}  // namespace

KernelImpl LrnOnednnImpl(const std::string& name) {
  return OnednnImpl(name, LrnSupports, LrnOnednn::Create);
}

}  // namespace onyx::kernels::x86
