// Pooling on oneDNN: MaxPool (without the Indices output), AveragePool, GlobalAveragePool,
// GlobalMaxPool, and com.onyx NhwcMaxPool / NhwcAveragePool on channels-last activations.
#include "kernels/x86/pool_onednn.h"

#include <string>

#include "kernels/reference/conv_pool.h"
#include "kernels/x86/onednn_context.h"

namespace onyx::kernels::x86 {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

bool ChannelsLast(const NodeView& node) {
  return node.op_type().rfind("Nhwc", 0) == 0;
}
bool IsGlobal(const NodeView& node) {
  return node.op_type().rfind("Global", 0) == 0;
}
bool IsMax(const NodeView& node) {
  return node.op_type().find("MaxPool") != std::string::npos;
}

struct PoolGeometry {
  std::vector<int64_t> x, y;  // logical (N, C, spatial...) dims
  Shape y_shape;              // stored output shape
  memory::dims kernel, strides, dil, pad_l, pad_r;
  dnnl::algorithm alg;
};

Status Resolve(const NodeView& node, const std::vector<TypeInfo>& types, PoolGeometry* g) {
  if (types.empty() || !types[0].is_tensor() || !types[0].shape_is_static())
    return node.NotSupported("needs a tensor input with a static shape");
  // 8-bit values (quantized models) only for max pooling: a maximum is exact in any type, an
  // average would round differently from the reference.
  const DType t = types[0].elem;
  if (t != DType::kFloat && !(Is8BitInt(t) && IsMax(node)))
    return node.NotSupported("needs float32 input (uint8 or int8 for max pooling)");
  const Shape s = types[0].static_shape();
  if (s.size() < 3 || s.size() > 5) return node.NotSupported("needs 1- to 3-D spatial input");
  for (int64_t d : s)
    if (d == 0) return node.NotSupported("empty input");
  const bool cl = ChannelsLast(node);
  g->x.assign(s.begin(), s.end());
  if (cl) {
    g->x = {s[0], s.back()};
    g->x.insert(g->x.end(), s.begin() + 1, s.end() - 1);
  }
  const size_t sr = g->x.size() - 2;
  std::vector<int64_t> in(g->x.begin() + 2, g->x.end());
  const bool max = IsMax(node);
  if (max && node.node().outputs.size() > 1 && !node.node().outputs[1].empty())
    return node.NotSupported("the Indices output");
  if (IsGlobal(node)) {
    g->kernel = ToDims(in);
    g->strides.assign(sr, 1);
    g->dil.assign(sr, 0);
    g->pad_l.assign(sr, 0);
    g->pad_r.assign(sr, 0);
    g->y = {g->x[0], g->x[1]};
    g->y.insert(g->y.end(), sr, 1);
  } else {
    if (node.attr_ints("kernel_shape").size() != sr)
      return node.NotSupported("kernel_shape does not match the input rank");
    if (!max && node.opset() < 19 && node.node().domain.empty() && node.has_attr("dilations"))
      return node.NotSupported("dilations before AveragePool-19");
    const bool ceil = node.attr_int("ceil_mode", 0) != 0;
    const bool include_pad = !max && node.attr_int("count_include_pad", 0) != 0;
    if (ceil && include_pad) return node.NotSupported("ceil_mode with count_include_pad");
    if (max && node.attr_int("storage_order", 0) != 0)
      return node.NotSupported("storage_order (only matters for Indices)");
    ONYX_ASSIGN_OR_RETURN(WindowGeometry w,
                          ResolveWindow(node, in, node.attr_ints("kernel_shape"), true));
    g->kernel = ToDims(w.kernel);
    g->strides = ToDims(w.strides);
    g->pad_l = ToDims(w.pad_begin);
    g->dil.resize(sr);
    g->pad_r.resize(sr);
    g->y = {g->x[0], g->x[1]};
    for (size_t i = 0; i < sr; ++i) {
      g->dil[i] = w.dilations[i] - 1;
      const int64_t eff = (w.kernel[i] - 1) * w.dilations[i] + 1;
      // oneDNN derives the output size by flooring; pad the end so that it matches ONNX's
      // (ceil_mode windows that start inside the input count only real elements).
      g->pad_r[i] = (w.out[i] - 1) * w.strides[i] + eff - in[i] - w.pad_begin[i];
      if (w.out[i] < 1) return node.NotSupported("unusual window geometry");
      // Negative: the last window stops short of the input's end (floor mode leaves a remainder
      // smaller than the stride), which oneDNN's floored size formula gives with no end padding.
      if (g->pad_r[i] < 0) g->pad_r[i] = 0;
      if (g->pad_r[i] >= eff || w.pad_begin[i] >= eff)
        return node.NotSupported("padding as large as the window");
      g->y.push_back(w.out[i]);
    }
    g->alg = max           ? dnnl::algorithm::pooling_max
             : include_pad ? dnnl::algorithm::pooling_avg_include_padding
                           : dnnl::algorithm::pooling_avg_exclude_padding;
  }
  if (IsGlobal(node))
    g->alg = max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
  g->y_shape = Shape(g->y.begin(), g->y.end());
  if (cl) {
    g->y_shape = {g->y[0]};
    g->y_shape.insert(g->y_shape.end(), g->y.begin() + 2, g->y.end());
    g->y_shape.push_back(g->y[1]);
  }
  return Status::Ok();
}

class PoolOnednn : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const NodeView& node,
                                                  const std::vector<TypeInfo>& types,
                                                  const KernelCreateInfo& info) {
    auto k = std::unique_ptr<PoolOnednn>(new PoolOnednn());
    ONYX_RETURN_IF_ERROR(Resolve(node, types, &k->g_));
    k->threads_ = info.threads;
    k->x_shape_ = types[0].static_shape();
    try {
      const bool cl = ChannelsLast(node);
      const DType t = types[0].elem;
      const auto dt = t == DType::kFloat   ? memory::data_type::f32
                      : t == DType::kUInt8 ? memory::data_type::u8
                                           : memory::data_type::s8;
      const size_t r = k->g_.x.size();
      const auto plain = [&](const std::vector<int64_t>& d) {
        return memory::desc(ToDims(d), dt, PlainTag(r));
      };
      k->src_md_ = cl ? memory::desc(ToDims(k->g_.x), dt, ChannelsLastTag(r)) : plain(k->g_.x);
      k->dst_md_ = cl ? memory::desc(ToDims(k->g_.y), dt, ChannelsLastTag(r)) : plain(k->g_.y);
      SetOmpThreads(k->threads_);
      dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, k->g_.alg, k->src_md_,
                                          k->dst_md_, k->g_.strides, k->g_.kernel, k->g_.dil,
                                          k->g_.pad_l, k->g_.pad_r);
      dnnl::pooling_v2_forward::primitive_desc pd(desc, ScratchpadAttr(), CpuEngine());
      const std::string impl = pd.impl_info_str();
      if (t != DType::kFloat && impl.find("ref") != std::string::npos)
        return node.NotSupported("oneDNN has only its reference 8-bit pooling here");
      // A global pooling of a plain layout gets oneDNN's simple_nchw: 0.25 / 0.63 ms (average /
      // max) on [1, 512, 508, 1], against 0.02 ms for kernels/common's GlobalPool_f32_hwy.
      if (IsGlobal(node) && !cl && impl.rfind("jit", 0) != 0)
        return node.NotSupported("oneDNN has no vectorised global pooling for this layout");
      k->scratch_md_ = pd.scratchpad_desc();
      k->prim_ = dnnl::pooling_v2_forward(pd);
    } catch (const dnnl::error& e) {
      return node.NotSupported("oneDNN: ", e.what());
    }
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status Run(KernelContext& ctx) const override {
    return RunSrcDstPrimitive(ctx, prim_, threads_, x_shape_, src_md_, g_.y_shape, dst_md_,
                              scratch_md_, keys_);
  }

 private:
  PoolGeometry g_;
  int threads_ = 1;
  Shape x_shape_;
  memory::desc src_md_, dst_md_, scratch_md_;
  MemoryKeys keys_;
  dnnl::pooling_v2_forward prim_;
};

}  // namespace

KernelImpl PoolOnednnImpl(const std::string& name) {
  auto supports = [](const NodeView& node, const std::vector<TypeInfo>& types) {
    PoolGeometry g;
    return Resolve(node, types, &g);
  };
  return OnednnImpl(name, supports, PoolOnednn::Create);
}

}  // namespace onyx::kernels::x86
