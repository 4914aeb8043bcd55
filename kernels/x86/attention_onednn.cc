// ai.onnx Attention (opset 23+) on oneDNN for the common inference form: float32 Q/K/V (3-D
// [B, S, heads * D] or 4-D [B, heads, S, D]), as many K/V heads as Q heads, an optional additive
// float mask, no past state, no causal mask or softcap, only output Y. The heads are read in
// place through strides (no transposes): scores = scale * Q K^T (batched matmul), mask add
// (binary), softmax over the last axis, then Y = P V written straight into Y's layout.
#include "kernels/x86/attention_onednn.h"

#include <algorithm>
#include <cmath>

#include "kernels/x86/onednn_context.h"

namespace onyx::kernels::x86 {
namespace {

using dnnl::memory;

struct AttentionGeometry {
  int64_t b = 0, heads = 0, sq = 0, skv = 0, d = 0, dv = 0;
  bool three_d = false;
  float scale = 1.f;
  std::vector<int64_t> mask;  // mask dims broadcast to rank 4; empty when absent
  Shape y_shape;
};

// A [B, heads, S, D] view of a 3-D [B, S, heads * D] or 4-D [B, heads, S, D] tensor, optionally
// with its last two dims swapped (K^T).
memory::desc HeadView(const AttentionGeometry& g, int64_t s, int64_t d, bool transposed) {
  memory::dims dims = {g.b, g.heads, s, d}, strides;
  if (g.three_d)
    strides = {s * g.heads * d, d, g.heads * d, 1};
  else
    strides = {g.heads * s * d, s * d, d, 1};
  if (transposed) {
    std::swap(dims[2], dims[3]);
    std::swap(strides[2], strides[3]);
  }
  return memory::desc(dims, memory::data_type::f32, strides);
}

Status Resolve(const NodeView& node, const std::vector<TypeInfo>& types, AttentionGeometry* g) {
  for (int i = 0; i < 3; ++i)
    if (!Present(types, i) || !IsFloatStatic(types[i]))
      return node.NotSupported("needs float32 Q, K, V with static shapes");
  for (size_t i = 4; i < types.size(); ++i)
    if (Present(types, i)) return node.NotSupported("past key/value or extra inputs");
  const auto& outs = node.node().outputs;
  for (size_t i = 1; i < outs.size(); ++i)
    if (!outs[i].empty()) return node.NotSupported("outputs other than Y");
  if (node.attr_int("is_causal", 0) != 0 || node.attr_float("softcap", 0.f) != 0.f)
    return node.NotSupported("causal mask or softcap");
  if (node.attr_int("left_window_size", -1) != -1 || node.attr_int("right_window_size", -1) != -1)
    return node.NotSupported("sliding window");
  const Shape q = types[0].static_shape(), k = types[1].static_shape(), v = types[2].static_shape();
  if (q.size() != k.size() || q.size() != v.size() || (q.size() != 3 && q.size() != 4))
    return node.NotSupported("Q, K, V must all be 3-D or all 4-D");
  g->three_d = q.size() == 3;
  g->b = q[0];
  if (k[0] != g->b || v[0] != g->b) return node.NotSupported("batch sizes differ");
  if (g->three_d) {
    const int64_t qh = node.attr_int("q_num_heads", 0), kvh = node.attr_int("kv_num_heads", 0);
    if (qh < 1 || kvh != qh) return node.NotSupported("needs q_num_heads == kv_num_heads");
    if (q[2] % qh || k[2] % qh || v[2] % qh) return node.NotSupported("hidden size not per head");
    g->heads = qh;
    g->sq = q[1];
    g->skv = k[1];
    g->d = q[2] / qh;
    if (k[2] / qh != g->d || v[1] != g->skv) return node.NotSupported("K/V shape mismatch");
    g->dv = v[2] / qh;
    g->y_shape = {g->b, g->sq, g->heads * g->dv};
  } else {
    g->heads = q[1];
    if (k[1] != g->heads || v[1] != g->heads) return node.NotSupported("needs equal head counts");
    g->sq = q[2];
    g->skv = k[2];
    g->d = q[3];
    if (k[3] != g->d || v[2] != g->skv) return node.NotSupported("K/V shape mismatch");
    g->dv = v[3];
    g->y_shape = {g->b, g->heads, g->sq, g->dv};
  }
  for (int64_t x : {g->b, g->heads, g->sq, g->skv, g->d, g->dv})
    if (x < 1) return node.NotSupported("empty dimension");
  g->scale = node.attr_float("scale", 1.f / std::sqrt(static_cast<float>(g->d)));
  if (Present(types, 3)) {
    if (!IsFloatStatic(types[3])) return node.NotSupported("mask must be float32, static shape");
    Shape m = types[3].static_shape();
    if (m.size() > 4) return node.NotSupported("mask of rank above 4");
    m.insert(m.begin(), 4 - m.size(), 1);
    const int64_t full[4] = {g->b, g->heads, g->sq, g->skv};
    for (int i = 0; i < 4; ++i)
      if (m[i] != 1 && m[i] != full[i]) return node.NotSupported("mask does not broadcast");
    g->mask.assign(m.begin(), m.end());
  }
  return Status::Ok();
}

class AttentionOnednn : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const NodeView& node,
                                                  const std::vector<TypeInfo>& types,
                                                  const KernelCreateInfo& info) {
    auto k = std::unique_ptr<AttentionOnednn>(new AttentionOnednn());
    ONYX_RETURN_IF_ERROR(Resolve(node, types, &k->g_));
    k->threads_ = info.threads;
    for (int i = 0; i < 3; ++i) k->in_shapes_.push_back(types[i].static_shape());
    const AttentionGeometry& g = k->g_;
    try {
      dnnl::engine& eng = CpuEngine();
      SetOmpThreads(k->threads_);
      k->q_md_ = HeadView(g, g.sq, g.d, false);
      k->kt_md_ = HeadView(g, g.skv, g.d, true);
      k->v_md_ = HeadView(g, g.skv, g.dv, false);
      k->y_md_ = HeadView(g, g.sq, g.dv, false);
      k->scores_md_ = PlainDesc({g.b, g.heads, g.sq, g.skv});
      dnnl::primitive_attr scaled = ScratchpadAttr();
      scaled.set_output_scales(0, {g.scale});
      const dnnl::primitive_attr attr = ScratchpadAttr();
      dnnl::matmul::primitive_desc qk_pd(dnnl::matmul::desc(k->q_md_, k->kt_md_, k->scores_md_),
                                         scaled, eng);
      k->qk_ = dnnl::matmul(qk_pd);
      k->qk_scratch_ = qk_pd.scratchpad_desc();
      if (!g.mask.empty()) {
        k->mask_md_ = PlainDesc(g.mask);
        dnnl::binary::primitive_desc pd(
            dnnl::binary::desc(dnnl::algorithm::binary_add, k->scores_md_, k->mask_md_,
                               k->scores_md_),
            attr, eng);
        k->add_mask_ = dnnl::binary(pd);
        k->mask_scratch_ = pd.scratchpad_desc();
      }
      // Every primitive takes the running thread's scratchpad (ScratchpadAttr): softmax and
      // P x V used to take oneDNN's library-owned one, a buffer shared by concurrent runs, and
      // 8 threads on one BERT session got wrong batch rows (#19).
      dnnl::softmax_forward::primitive_desc softmax_pd(
          dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, k->scores_md_, 3), attr,
          eng);
      k->softmax_ = dnnl::softmax_forward(softmax_pd);
      k->softmax_scratch_ = softmax_pd.scratchpad_desc();
      dnnl::matmul::primitive_desc pv_pd(dnnl::matmul::desc(k->scores_md_, k->v_md_, k->y_md_),
                                         attr, eng);
      k->pv_ = dnnl::matmul(pv_pd);
      k->pv_scratch_ = pv_pd.scratchpad_desc();
    } catch (const dnnl::error& e) {
      return node.NotSupported("oneDNN: ", e.what());
    }
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status Run(KernelContext& ctx) const override {
    SetOmpThreads(threads_);
    for (int i = 0; i < 3; ++i)
      if (ctx.input(i).shape() != in_shapes_[i])
        return ctx.node().Fail("input ", i, " shape changed after planning");
    // Scores of one call, reused by later calls on the same thread.
    thread_local std::vector<float> scratch;
    const size_t need = static_cast<size_t>(g_.b * g_.heads * g_.sq * g_.skv);
    if (scratch.size() < need) scratch.resize(need);
    auto ptr = [](const Tensor& t) { return const_cast<void*>(t.raw_data()); };
    try {
      dnnl::stream& stream = ThreadStream();
      Tensor y = ctx.Output(0, DType::kFloat, g_.y_shape);
      memory q = ThreadMemory(keys_[kQ], q_md_, ptr(ctx.input(0))),
             kt = ThreadMemory(keys_[kKt], kt_md_, ptr(ctx.input(1))),
             v = ThreadMemory(keys_[kV], v_md_, ptr(ctx.input(2))),
             out = ThreadMemory(keys_[kOut], y_md_, y.raw_data()),
             scores = ThreadMemory(keys_[kScores], scores_md_, scratch.data());
      Execute(qk_, stream,
              {{DNNL_ARG_SRC, q},
               {DNNL_ARG_WEIGHTS, kt},
               {DNNL_ARG_DST, scores},
               {DNNL_ARG_SCRATCHPAD, ThreadScratchpad(qk_scratch_, keys_[kQkScratch])}});
      if (!g_.mask.empty()) {
        const Tensor& m = ctx.input(3);
        if (static_cast<size_t>(m.numel()) !=
            static_cast<size_t>(mask_md_.get_size() / sizeof(float)))
          return ctx.node().Fail("input 3 (attn_mask) shape changed after planning");
        memory mask = ThreadMemory(keys_[kMask], mask_md_, ptr(m));
        Execute(add_mask_, stream,
                {{DNNL_ARG_SRC_0, scores},
                 {DNNL_ARG_SRC_1, mask},
                 {DNNL_ARG_DST, scores},
                 {DNNL_ARG_SCRATCHPAD, ThreadScratchpad(mask_scratch_, keys_[kMaskScratch])}});
      }
      Execute(softmax_, stream,
              {{DNNL_ARG_SRC, scores},
               {DNNL_ARG_DST, scores},
               {DNNL_ARG_SCRATCHPAD, ThreadScratchpad(softmax_scratch_, keys_[kSoftmaxScratch])}});
      if (!g_.mask.empty()) {
        stream.wait();
        ZeroFullyMaskedRows(ctx.input(3).data<float>(), scratch.data());
      }
      Execute(pv_, stream,
              {{DNNL_ARG_SRC, scores},
               {DNNL_ARG_WEIGHTS, v},
               {DNNL_ARG_DST, out},
               {DNNL_ARG_SCRATCHPAD, ThreadScratchpad(pv_scratch_, keys_[kPvScratch])}});
      stream.wait();
    } catch (const dnnl::error& e) {
      return FromDnnlError(ctx.node(), e);
    }
    return Status::Ok();
  }

 private:
  // A query row whose mask row is all -inf attends no key: ONNX gives it zero probabilities (a
  // zero output row) where the softmax gave NaN. The mask is [mb, mh, mi, mj], broadcast.
  void ZeroFullyMaskedRows(const float* mask, float* scores) const {
    const int64_t mb = g_.mask[0], mh = g_.mask[1], mi = g_.mask[2], mj = g_.mask[3];
    for (int64_t r = 0; r < mb * mh * mi; ++r) {
      const float* row = mask + r * mj;
      if (!std::all_of(row, row + mj, [](float x) { return std::isinf(x) && x < 0; })) continue;
      const int64_t rb = r / (mh * mi), rh = (r / mi) % mh, ri = r % mi;
      for (int64_t b = 0; b < g_.b; ++b) {
        if (mb != 1 && b != rb) continue;
        for (int64_t h = 0; h < g_.heads; ++h) {
          if (mh != 1 && h != rh) continue;
          for (int64_t i = 0; i < g_.sq; ++i) {
            if (mi != 1 && i != ri) continue;
            float* s = scores + ((b * g_.heads + h) * g_.sq + i) * g_.skv;
            std::fill(s, s + g_.skv, 0.0f);
          }
        }
      }
    }
  }

  AttentionGeometry g_;
  int threads_ = 1;
  std::vector<Shape> in_shapes_;
  memory::desc q_md_, kt_md_, v_md_, y_md_, scores_md_, mask_md_;
  memory::desc qk_scratch_, mask_scratch_, softmax_scratch_, pv_scratch_;
  enum MemoryArg {
    kQ,
    kKt,
    kV,
    kOut,
    kScores,
    kMask,
    kQkScratch,
    kMaskScratch,
    kSoftmaxScratch,
    kPvScratch
  };
  MemoryKeys keys_;
  dnnl::matmul qk_, pv_;
  dnnl::binary add_mask_;
  dnnl::softmax_forward softmax_;
};

}  // namespace

KernelImpl AttentionOnednnImpl(const std::string& name) {
  auto supports = [](const NodeView& node, const std::vector<TypeInfo>& types) {
    AttentionGeometry g;
    return Resolve(node, types, &g);
  };
  return OnednnImpl(name, supports, AttentionOnednn::Create);
}

}  // namespace onyx::kernels::x86
