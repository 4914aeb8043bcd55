// Matrix products on oneDNN: MatMul (batched, numpy broadcasting), Gemm (opset 7+) and
// com.onyx FusedMatMul. Addends (Gemm's C, the fused bias and residual) are binary post-ops and
// the activation an eltwise post-op, so the product is written once. Constant B is reordered
// once into oneDNN's preferred blocked layout.
#include "kernels/x86/matmul_onednn.h"

#include <algorithm>
#include <atomic>
#include <list>
#include <mutex>
#include <utility>

#include "kernels/common/fast_kernel.h"
#include "kernels/common/simd_kernels.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/fused.h"
#include "kernels/x86/onednn_context.h"

namespace onyx::kernels::x86 {
namespace {

using dnnl::memory;

// Descriptor of a row-major tensor of `dims`, optionally read with its last two dims swapped.
memory::desc MatrixDesc(const std::vector<int64_t>& dims, bool transposed) {
  memory::desc d = PlainDesc(dims);
  if (!transposed) return d;
  const size_t r = dims.size();
  memory::dims strides(r, 1);
  for (int i = static_cast<int>(r) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * std::max<int64_t>(dims[i + 1], 1);
  memory::dims view = ToDims(dims);
  std::swap(view[r - 1], view[r - 2]);
  std::swap(strides[r - 1], strides[r - 2]);
  return memory::desc(view, memory::data_type::f32, strides);
}

bool IsGemm(const NodeView& node) {
  return node.op_type() == "Gemm";
}
bool IsFused(const NodeView& node) {
  return node.op_type() == "FusedMatMul";
}

// How one call is laid out: the operand shapes as oneDNN sees them (same rank, batch dims
// broadcast by 1s) and which inputs are added by post-ops.
struct MatMulGeometry {
  std::vector<int64_t> a, b, y;  // oneDNN dims (a and b as stored, before transposition)
  Shape y_shape;                 // the ONNX output shape
  bool trans_a = false, trans_b = false;
  float alpha = 1.f, beta = 1.f;
  int c_input = -1;        // Gemm's C or FusedMatMul's Bias: input index, -1 when absent
  std::vector<int64_t> c;  // its oneDNN dims (broadcast against y)
  int z_input = -1;        // FusedMatMul's residual
  // Rows not known at plan time (a symbolic batch or sequence): A is read as [rows, K], B is
  // packed once and each row count gets its own primitive (y_shape is unused then).
  bool dynamic_rows = false;
};

// Gemm's and FusedMatMul's attributes: transA, transB, alpha, and Gemm's beta.
Status ReadAttributes(const NodeView& node, MatMulGeometry* g) {
  if (IsGemm(node) || IsFused(node)) {
    g->trans_a = node.attr_int("transA", 0) != 0;
    g->trans_b = node.attr_int("transB", 0) != 0;
    g->alpha = node.attr_float("alpha", 1.f);
  }
  if (IsGemm(node)) {
    if (node.opset() < 7) return node.NotSupported("Gemm before opset 7 (broadcast attribute)");
    g->beta = node.attr_float("beta", 1.f);
  }
  return Status::Ok();
}

// The dynamic-rows case: A float whose shape is not fully known, B a float [K, N] (or [N, K] with
// transB) of static shape, no transposed A; addends only as a bias broadcast along rows (Gemm's C
// of shape [N], [1, N] or a scalar; FusedMatMul's Bias). Everything else stays with the
// static-shape primitive or the generic kernels.
Status ResolveDynamicRows(const NodeView& node, const std::vector<TypeInfo>& types,
                          MatMulGeometry* g) {
  const TypeInfo& ta = types[0];
  if (!ta.is_tensor() || ta.elem != DType::kFloat || !IsFloatStatic(types[1]))
    return node.NotSupported("needs float32 A and B with static shapes");
  if (ta.has_shape && ta.rank() < 2) return node.NotSupported("needs A of rank >= 2");
  const Shape b = types[1].static_shape();
  if (b.size() != 2) return node.NotSupported("dynamic A needs a 2-D B");
  ONYX_RETURN_IF_ERROR(ReadAttributes(node, g));
  if (IsGemm(node) && ta.has_shape && ta.rank() != 2) return node.NotSupported("Gemm needs 2-D A");
  if (g->trans_a) return node.NotSupported("dynamic A read transposed");
  // K comes from B; A's last dim is checked against it at run time when it is not known now.
  const int64_t k = g->trans_b ? b[1] : b[0], n = g->trans_b ? b[0] : b[1];
  if (ta.has_shape && ta.dims.back().known() && ta.dims.back().value != k)
    return node.NotSupported("inner dimensions differ");
  if (k == 0 || n == 0) return node.NotSupported("empty inner or output dimension");
  g->a = {DNNL_RUNTIME_DIM_VAL, k};
  g->b = {b[0], b[1]};
  g->y = {DNNL_RUNTIME_DIM_VAL, n};
  g->dynamic_rows = true;
  const int c_in = IsGemm(node) || IsFused(node) ? 2 : -1;
  if (c_in >= 0 && Present(types, c_in)) {
    if (!IsFloatStatic(types[c_in])) return node.NotSupported("C must be float32, static shape");
    const Shape c = types[c_in].static_shape();
    int64_t count = 1;
    for (int64_t d : c) count *= d;
    const bool row = c.empty() || (c.size() == 1 && (c[0] == n || c[0] == 1)) ||
                     (c.size() == 2 && c[0] == 1 && (c[1] == n || c[1] == 1));
    if (!row || (IsFused(node) && c != Shape{n}))
      return node.NotSupported("dynamic A takes only a bias along the rows");
    g->c_input = c_in;
    g->c = {1, count == 1 ? 1 : n};
  }
  if (IsFused(node) && Present(types, 3)) {
    const TypeInfo& z = types[3];
    if (!z.is_tensor() || z.elem != DType::kFloat) return node.NotSupported("Z must be float32");
    g->z_input = 3;  // its shape is checked against the output's at run time
  }
  if (!ActivationSupported(node)) return node.NotSupported("activation has no oneDNN post-op");
  return Status::Ok();
}

Status ResolveGeometry(const NodeView& node, const std::vector<TypeInfo>& types,
                       MatMulGeometry* g) {
  if (types.size() >= 2 && !IsFloatStatic(types[0])) return ResolveDynamicRows(node, types, g);
  if (types.size() < 2 || !IsFloatStatic(types[0]) || !IsFloatStatic(types[1]))
    return node.NotSupported("needs float32 A and B with static shapes");
  Shape a = types[0].static_shape(), b = types[1].static_shape();
  if (a.size() < 2 || b.size() < 2) return node.NotSupported("needs A and B of rank >= 2");
  ONYX_RETURN_IF_ERROR(ReadAttributes(node, g));
  if (IsGemm(node) && (a.size() != 2 || b.size() != 2))
    return node.NotSupported("Gemm needs 2-D A and B");
  const size_t rank = std::max(a.size(), b.size());
  if (rank > 6) return node.NotSupported("rank above 6");
  a.insert(a.begin(), rank - a.size(), 1);
  b.insert(b.begin(), rank - b.size(), 1);
  const int64_t m = g->trans_a ? a[rank - 1] : a[rank - 2];
  const int64_t ka = g->trans_a ? a[rank - 2] : a[rank - 1];
  const int64_t kb = g->trans_b ? b[rank - 1] : b[rank - 2];
  const int64_t n = g->trans_b ? b[rank - 2] : b[rank - 1];
  if (ka != kb) return node.NotSupported("inner dimensions differ");
  std::vector<int64_t> y(rank);
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (a[i] != b[i] && a[i] != 1 && b[i] != 1)
      return node.NotSupported("batch dimensions do not broadcast");
    y[i] = std::max(a[i], b[i]);
  }
  y[rank - 2] = m;
  y[rank - 1] = n;
  for (int64_t d : y)
    if (d == 0) return node.NotSupported("empty output");
  if (ka == 0) return node.NotSupported("empty inner dimension");
  // One big GEMM when B is a single matrix: fold A's batch dims into its rows.
  bool b_single = true;
  for (size_t i = 0; i + 2 < rank; ++i) b_single = b_single && b[i] == 1;
  const size_t out_rank = std::max(types[0].rank(), types[1].rank());
  g->y_shape = Shape(y.end() - out_rank, y.end());
  if (b_single && !g->trans_a && rank > 2) {
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < rank; ++i) rows *= a[i];
    a = {rows, a[rank - 1]};
    b = {b[rank - 2], b[rank - 1]};
    y = {rows, n};
  }
  g->a.assign(a.begin(), a.end());
  g->b.assign(b.begin(), b.end());
  g->y = y;

  const size_t yr = g->y.size();
  if (IsGemm(node) && Present(types, 2)) {
    if (!IsFloatStatic(types[2])) return node.NotSupported("C must be float32, static shape");
    const Shape c = types[2].static_shape();
    if (c.size() > 2) return node.NotSupported("C of rank above 2");
    std::vector<int64_t> cd(2, 1);
    for (size_t i = 0; i < c.size(); ++i) cd[2 - c.size() + i] = c[i];
    if ((cd[0] != 1 && cd[0] != m) || (cd[1] != 1 && cd[1] != n))
      return node.NotSupported("C does not broadcast to [M, N]");
    g->c_input = 2;
    g->c = cd;
  }
  if (IsFused(node) && Present(types, 2)) {
    if (!IsFloatStatic(types[2]) || types[2].static_shape() != Shape{n})
      return node.NotSupported("Bias must be float32 [N]");
    g->c_input = 2;
    g->c.assign(yr, 1);
    g->c[yr - 1] = n;
  }
  if (IsFused(node) && Present(types, 3)) {
    if (!IsFloatStatic(types[3]) || types[3].static_shape() != g->y_shape)
      return node.NotSupported("Z must have the output's shape");
    g->z_input = 3;
  }
  if (!ActivationSupported(node)) return node.NotSupported("activation has no oneDNN post-op");
  return Status::Ok();
}

// A fused node's activation as the Highway unary op RunGemv applies after PanelGemvF32.
struct PanelGemvActivation {
  bool on = false;
  common::UnaryOp op = common::UnaryOp::kRelu;
  common::UnaryParams params;
};

// False when the node's activation does not parse (the primitive then reports it).
bool PanelActivation(const NodeView& node, PanelGemvActivation* out) {
  *out = PanelGemvActivation();
  if (node.attr_string("activation", "").empty()) return true;
  auto parsed = ParseFusedActivation(node);
  if (!parsed.ok()) return false;
  out->on = common::ToUnary(*parsed, &out->op, &out->params);
  return true;
}

// The column panels of a packed [K, N] weight when PanelGemvF32 can read them: oneDNN's blocked
// layouts whose innermost block is `panel` columns with K running contiguously inside a panel
// (BA16a64b: blocks of 16 rows of 64 columns, the row blocks of a panel one after another).
bool ColumnPanels(const memory::desc& md, int64_t* panel, int64_t* panel_stride) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.ndims != 2 || d.format_kind != dnnl_blocked || d.data_type != dnnl_f32 || d.offset0 != 0)
    return false;
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  int64_t rows_block = 1;
  if (b.inner_nblks == 2 && b.inner_idxs[0] == 0 && b.inner_idxs[1] == 1) {
    rows_block = b.inner_blks[0];
  } else if (!(b.inner_nblks == 1 && b.inner_idxs[0] == 1)) {
    return false;
  }
  *panel = b.inner_blks[b.inner_nblks - 1];
  *panel_stride = b.strides[1];
  return b.strides[0] == rows_block * *panel && *panel_stride >= d.padded_dims[0] * *panel &&
         common::PanelGemvTakesPanel(*panel);
}

// What a kernel makes at run time for the shapes it meets (oneDNN primitives), the most recently
// used `capacity` kept. Thread-safe; a held null value stands for "none can be made".
template <typename Key, typename T>
class RecentlyUsed {
 public:
  explicit RecentlyUsed(size_t capacity) : capacity_(capacity) {}
  // True, with *value set, when `key` is held; it becomes the most recent.
  bool Find(const Key& key, std::shared_ptr<const T>* value) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = items_.begin(); it != items_.end(); ++it)
      if (it->first == key) {
        items_.splice(items_.begin(), items_, it);
        *value = items_.front().second;
        return true;
      }
    return false;
  }
  void Add(Key key, std::shared_ptr<const T> value) const {
    std::lock_guard<std::mutex> lock(mu_);
    items_.emplace_front(std::move(key), std::move(value));
    if (items_.size() > capacity_) items_.pop_back();
  }
  // For a seen-set: true when `key` was not held, and holds it from now on (most recent either
  // way). One lock, so two threads meeting a key at once do not both take it as new.
  bool FirstSight(const Key& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = items_.begin(); it != items_.end(); ++it)
      if (it->first == key) {
        items_.splice(items_.begin(), items_, it);
        return false;
      }
    items_.emplace_front(key, nullptr);
    if (items_.size() > capacity_) items_.pop_back();
    return true;
  }

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  mutable std::list<std::pair<Key, std::shared_ptr<const T>>> items_;
};

class MatMulOnednn : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const NodeView& node,
                                                  const std::vector<TypeInfo>& types,
                                                  const KernelCreateInfo& info) {
    auto k = std::unique_ptr<MatMulOnednn>(new MatMulOnednn());
    ONYX_RETURN_IF_ERROR(ResolveGeometry(node, types, &k->g_));
    ONYX_RETURN_IF_ERROR(k->Init(node, types, info));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  bool packed_input(size_t i) const override { return i == 1 && packed_b_; }

  Status Run(KernelContext& ctx) const override {
    if (g_.dynamic_rows) return RunDynamicRows(ctx);
    const NodeView& node = ctx.node();
    if (gemv_ && g_.a[0] <= common::kPanelGemvMaxRows) {
      const Tensor& a = ctx.input(0);
      if (a.shape() != a_shape_ || ctx.input(1).shape() != b_shape_)
        return node.Fail("input shapes changed after planning");
      const Tensor* z = g_.z_input >= 0 ? &ctx.input(g_.z_input) : nullptr;
      if (z && z->shape() != g_.y_shape)
        return node.Fail("input 3 (Z) shape changed after planning");
      Tensor y = ctx.Output(0, DType::kFloat, g_.y_shape);
      RunGemv(ctx, a.data<float>(), g_.a[0], z ? z->data<float>() : nullptr, y.data<float>());
      return Status::Ok();
    }
    SetOmpThreads(run_threads_);
    try {
      dnnl::stream& stream = ThreadStream();
      const Tensor& a = ctx.input(0);
      const Tensor& b = ctx.input(1);
      if (a.shape() != a_shape_ || b.shape() != b_shape_)
        return node.Fail("input shapes changed after planning");
      Tensor y = ctx.Output(0, DType::kFloat, g_.y_shape);
      memory src = ThreadMemory(keys_[kSrc], src_md_, a.raw_data());
      memory dst = ThreadMemory(keys_[kDst], dst_md_, y.raw_data());
      if (bf16_) {  // float32 A converted to the primitive's bfloat16 source
        memory converted = ThreadBuffer(ThreadBufferUse::kSource, bf16_src_md_, keys_[kBf16Src]);
        Execute(bf16_reorder_, stream, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, converted}});
        src = converted;
      }
      memory wei = packed_b_;
      if (!wei) {
        wei = user_b_md_ == wei_md_ ? ThreadMemory(keys_[kWeights], user_b_md_, b.raw_data())
                                    : ReorderWeights(user_b_md_, wei_md_, b.raw_data(), stream);
      }
      ExecArgs args = {{DNNL_ARG_SRC, src},
                       {DNNL_ARG_WEIGHTS, wei},
                       {DNNL_ARG_DST, dst},
                       {DNNL_ARG_SCRATCHPAD, ThreadScratchpad(scratch_md_, keys_[kScratch])}};
      int post = 0;
      if (g_.c_input >= 0) {
        memory c = scaled_c_;
        if (!c) c = ThreadMemory(keys_[kC], c_md_, ctx.input(g_.c_input).raw_data());
        AddC(args, c, &post);
      }
      if (g_.z_input >= 0) {
        const Tensor& z = ctx.input(g_.z_input);
        if (z.shape() != g_.y_shape) return node.Fail("input 3 (Z) shape changed after planning");
        args.Add(DNNL_ARG_ATTR_MULTIPLE_POST_OP(post++) | DNNL_ARG_SRC_1,
                 ThreadMemory(keys_[kZ], dst_md_, z.raw_data()));
      }
      Execute(prim_, stream, args);
      stream.wait();
    } catch (const dnnl::error& e) {
      return FromDnnlError(node, e);
    }
    return Status::Ok();
  }

 private:
  struct RowsPrimitive;
  // The primitive for `rows` rows, made at the first call with that many (B's layout fixed).
  StatusOr<std::shared_ptr<const RowsPrimitive>> ForRows(const NodeView& node, int64_t rows) const {
    std::shared_ptr<const RowsPrimitive> held;
    if (by_rows_.Find(rows, &held)) return held;
    auto made = std::make_shared<RowsPrimitive>();
    try {
      const int64_t k = g_.a[1], n = g_.y[1];
      const memory::desc dst = PlainDesc({rows, n});
      ONYX_ASSIGN_OR_RETURN(dnnl::primitive_attr attr, MakeAttr(node, dst));
      const dnnl::matmul::desc desc = Desc(PlainDesc({rows, k}), wei_md_, dst);
      dnnl::matmul::primitive_desc pd(desc, attr, CpuEngine());
      made->src_md = PlainDesc({rows, k});
      made->dst_md = dst;
      made->scratch_md = pd.scratchpad_desc();
      made->prim = dnnl::matmul(pd);
    } catch (const dnnl::error& e) {
      return FromDnnlError(node, e);
    }
    by_rows_.Add(rows, made);
    return std::shared_ptr<const RowsPrimitive>(made);
  }

  // A of any row count: memory objects are made per call, for this call's rows (the per-thread
  // ones are keyed by descriptor and would be rebuilt anyway).
  Status RunDynamicRows(KernelContext& ctx) const {
    SetOmpThreads(run_threads_);
    const NodeView& node = ctx.node();
    const Tensor& a = ctx.input(0);
    const int64_t k = g_.a[1], n = g_.y[1];
    if (a.rank() < 2 || (IsGemm(node) && a.rank() != 2))
      return node.Invalid("input 0 (A) has shape ", ShapeToString(a.shape()), ", expected rank ",
                          IsGemm(node) ? "2" : ">= 2");
    if (a.dim(a.rank() - 1) != k)
      return node.Invalid("input 0 (A) has shape ", ShapeToString(a.shape()), " but B needs ", k,
                          " columns");
    if (ctx.input(1).shape() != b_shape_) return node.Fail("input shapes changed after planning");
    Shape y_shape = a.shape();
    y_shape.back() = n;
    const Tensor* z = g_.z_input >= 0 ? &ctx.input(g_.z_input) : nullptr;
    if (z && (z->dtype() != DType::kFloat || z->shape() != y_shape))
      return node.Invalid("input 3 (Z) has shape ", ShapeToString(z->shape()), "; the product has ",
                          ShapeToString(y_shape));
    Tensor y = ctx.Output(0, DType::kFloat, y_shape);
    const int64_t rows = a.numel() / k;
    // More rows than a block: blocks of kRowBlock rows, then the rest, so that the row counts a
    // kernel meets are at most kRowBlock whatever the lengths fed (a new row count is a JIT
    // compile, 0.5-1.5 ms per length over BERT's 25 products): BERT's lengths 8..256 in steps of
    // 8 compile 8 primitives per product instead of 32, and its first pass over them at 2
    // threads took 176 ms instead of 195 (steady passes 1-5% slower: the blocks read B again).
    const float* ap = a.data<float>();
    const float* zp = z ? z->data<float>() : nullptr;
    float* yp = y.data<float>();
    // A row count's first run reads the packed B in place, and primitives are compiled for its
    // blocks from its second run on: compiling at first sight cost BERT's lengths 8..64 about
    // 0.5 ms each, and the panels ran as fast there. The count is the call's, not a block's: a
    // sweep's length 72 (blocks 64 + 8) would otherwise compile at its first call because 64
    // and 8 ran once before (first-call cost at lengths 72..120 up to 2 ms at 2 threads).
    // Deterministic mode: the row count alone picks panels or primitive, not the runs before
    // (the two round differently).
    const bool first = !deterministic_ && seen_rows_.FirstSight(rows);
    for (int64_t done = 0; done < rows;) {
      const int64_t chunk = std::min(rows - done, kRowBlock);
      ONYX_RETURN_IF_ERROR(
          RunRows(ctx, ap + done * k, chunk, zp ? zp + done * n : nullptr, yp + done * n, first));
      done += chunk;
    }
    return Status::Ok();
  }

  // Rows of A at `a` times the packed B into `y`, Z at `z` (laid out as y) when present; on the
  // panels unless a primitive for `rows` exists or this row count has run before.
  Status RunRows(KernelContext& ctx, const float* a, int64_t rows, const float* z, float* y,
                 bool first_sight) const {
    if (gemv_ && rows <= common::kPanelGemvMaxRows) {
      RunGemv(ctx, a, rows, z, y);
      return Status::Ok();
    }
    const NodeView& node = ctx.node();
    std::shared_ptr<const RowsPrimitive> p;
    if (!by_rows_.Find(rows, &p)) {
      if (gemv_ && first_sight) {
        RunGemv(ctx, a, rows, z, y);
        return Status::Ok();
      }
      ONYX_ASSIGN_OR_RETURN(p, ForRows(node, rows));
    }
    try {
      dnnl::stream& stream = ThreadStream();
      // Memory objects per call: kept per thread and row count they measured 1.5% faster on
      // BERT, but a model fed many shapes then holds thousands of them (+7 MB over 1,000 shapes).
      const memory src(p->src_md, CpuEngine(), const_cast<float*>(a));
      const memory dst(p->dst_md, CpuEngine(), y);
      ExecArgs args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, packed_b_}, {DNNL_ARG_DST, dst}};
      int post = 0;
      if (g_.c_input >= 0) {
        memory c = scaled_c_;
        if (!c) c = ThreadMemory(keys_[kC], c_md_, ctx.input(g_.c_input).raw_data());
        AddC(args, c, &post);
      }
      if (z)
        args.Add(DNNL_ARG_ATTR_MULTIPLE_POST_OP(post++) | DNNL_ARG_SRC_1,
                 memory(p->dst_md, CpuEngine(), const_cast<float*>(z)));
      if (p->scratch_md.get_size() != 0)
        args.Add(DNNL_ARG_SCRATCHPAD, ThreadScratchpad(p->scratch_md, p->keys[kScratch]));
      Execute(p->prim, stream, args);
      stream.wait();
    } catch (const dnnl::error& e) {
      return FromDnnlError(node, e);
    }
    return Status::Ok();
  }

  // Rows times the packed B read in its column panels (PanelGemvF32), the panels split between
  // the threads: a few rows in one pass over B (oneDNN's primitive for one row read B about 10%
  // slower: 1.93 against 1.76 ms for GPT-2's 256 x 50257 language-model head at one thread), more
  // in blocks of five per panel.
  void RunGemv(KernelContext& ctx, const float* a, int64_t rows, const float* z, float* y) const {
    common::PanelGemvArgs args;
    args.a = a;
    args.rows = rows;
    args.k = g_.a[1];
    args.lda = args.k;
    args.n = g_.y[g_.y.size() - 1];
    args.b = static_cast<const float*>(packed_b_.get_data_handle());
    args.panel = panel_;
    args.panel_stride = panel_stride_;
    args.ldb = panel_;
    args.alpha = g_.alpha;
    if (g_.c_input >= 0) {
      args.bias = scaled_c_ ? static_cast<const float*>(scaled_c_.get_data_handle())
                            : ctx.input(g_.c_input).data<float>();
      args.bias_scalar = g_.c.back() == 1;
    }
    args.z = z;
    args.y = y;
    args.ldy = args.n;
    const int64_t panels = (args.n + panel_ - 1) / panel_;
    ParallelFor(panels, rows * args.k * panel_, threads_, [&](int64_t begin, int64_t end) {
      common::PanelGemvF32(args, begin, end);
      if (!act_.on) return;
      // The activation on this range of columns while its rows are still in cache.
      const int64_t c0 = begin * panel_, c1 = std::min(end * panel_, args.n);
      for (int64_t r = 0; r < rows; ++r) {
        float* row = y + r * args.ldy + c0;
        common::UnaryF32(act_.op, act_.params, row, row, c1 - c0);
      }
    });
  }

  // The product's description: with C as oneDNN's own bias when it can be (5-9% faster than a
  // binary post-op adding it: BERT's 24 products at 16 to 64 rows, weights cold).
  dnnl::matmul::desc Desc(const memory::desc& src, const memory::desc& wei,
                          const memory::desc& dst) const {
    return native_bias_ ? dnnl::matmul::desc(src, wei, c_md_, dst)
                        : dnnl::matmul::desc(src, wei, dst);
  }

  // The arguments for C: oneDNN's bias, or the next binary post-op's operand.
  void AddC(ExecArgs& args, const memory& c, int* post) const {
    if (native_bias_)
      args.Add(DNNL_ARG_BIAS, c);
    else
      args.Add(DNNL_ARG_ATTR_MULTIPLE_POST_OP((*post)++) | DNNL_ARG_SRC_1, c);
  }

  // Scratchpad mode, output scale and post-ops: C's addition (unless it is the bias) and Z's
  // (Z laid out as `dst`), then the activation.
  StatusOr<dnnl::primitive_attr> MakeAttr(const NodeView& node, const memory::desc& dst) const {
    dnnl::post_ops ops;
    if (g_.c_input >= 0 && !native_bias_) ops.append_binary(dnnl::algorithm::binary_add, c_md_);
    if (g_.z_input >= 0) ops.append_binary(dnnl::algorithm::binary_add, dst);
    ONYX_RETURN_IF_ERROR(AppendActivation(node, ops));
    dnnl::primitive_attr attr = ScratchpadAttr();
    attr.set_post_ops(ops);
    if (g_.alpha != 1.f) attr.set_output_scales(0, {g_.alpha});
    return attr;
  }

  Status Init(const NodeView& node, const std::vector<TypeInfo>& types,
              const KernelCreateInfo& info) {
    threads_ = run_threads_ = info.threads;
    deterministic_ = info.deterministic;
    if (!g_.dynamic_rows) a_shape_ = types[0].static_shape();
    b_shape_ = types[1].static_shape();
    const Tensor* const_b = info.constants.size() > 1 ? info.constants[1] : nullptr;
    if (g_.dynamic_rows && !const_b) return node.NotSupported("dynamic A needs a constant B");
    const Tensor* const_c =
        g_.c_input >= 0 && info.constants.size() > static_cast<size_t>(g_.c_input)
            ? info.constants[g_.c_input]
            : nullptr;
    if (g_.beta != 1.f && g_.c_input >= 0 && !const_c)
      return node.NotSupported("beta != 1 needs a constant C");
    try {
      dnnl::engine& eng = CpuEngine();
      const auto f32 = memory::data_type::f32;
      // Unknown rows: the layout of B is the one oneDNN picks for a typical row count (its
      // blocked layout does not change with the rows), and each row count gets a primitive
      // for that layout at its first run (RunDynamicRows).
      std::vector<int64_t> a_dims = g_.a, y_dims = g_.y;
      if (g_.dynamic_rows) a_dims[0] = y_dims[0] = kTypicalRows;
      src_md_ = MatrixDesc(a_dims, g_.trans_a);
      user_b_md_ = MatrixDesc(g_.b, g_.trans_b);
      std::vector<int64_t> b_logical = g_.b;
      if (g_.trans_b) std::swap(b_logical[b_logical.size() - 1], b_logical[b_logical.size() - 2]);
      // bfloat16 operands (SessionOptions::bf16) for products of a known shape with a constant B
      // and A not transposed; the others stay float32.
      if (info.bf16 && !CpuHasBf16())
        return node.Invalid(
            "bf16 precision needs a CPU with AVX512-BF16 or AMX; this one has "
            "neither (SessionOptions::bf16)");
      bf16_ = info.bf16 && const_b && !g_.dynamic_rows && !g_.trans_a && a_dims.size() <= 4;
      const auto bt = bf16_ ? memory::data_type::bf16 : f32;
      const memory::desc wei_any =
          const_b ? memory::desc(ToDims(b_logical), bt, memory::format_tag::any) : user_b_md_;
      memory::desc pd_src = src_md_;
      if (bf16_) {
        const memory::format_tag plain[] = {memory::format_tag::a, memory::format_tag::ab,
                                            memory::format_tag::abc, memory::format_tag::abcd};
        bf16_src_md_ =
            memory::desc(ToDims(a_dims), memory::data_type::bf16, plain[a_dims.size() - 1]);
        pd_src = bf16_src_md_;
        const dnnl::reorder::primitive_desc to_bf16(eng, src_md_, eng, bf16_src_md_,
                                                    ScratchpadAttr());
        if (to_bf16.scratchpad_desc().get_size() != 0)
          return node.NotSupported("oneDNN's bfloat16 conversion needs a scratchpad");
        bf16_reorder_ = dnnl::reorder(to_bf16);
      }
      dst_md_ = PlainDesc(y_dims);
      if (g_.c_input >= 0) {
        std::vector<int64_t> cd = g_.c;
        cd.insert(cd.begin(), g_.y.size() - cd.size(), 1);
        c_md_ = PlainDesc(cd);
      }
      // C, when present, is a row: one value per column, or one.
      bool c_row = true;
      for (size_t i = 0; i + 1 < g_.c.size(); ++i) c_row = c_row && g_.c[i] == 1;
      // C is oneDNN's bias when it is a row and nothing scales the product: oneDNN's output
      // scale would scale the bias too.
      native_bias_ = g_.c_input >= 0 && c_row && g_.alpha == 1.f;
      ONYX_ASSIGN_OR_RETURN(dnnl::primitive_attr attr, MakeAttr(node, dst_md_));
      SetOmpThreads(threads_);
      const dnnl::matmul::desc desc = Desc(pd_src, wei_any, dst_md_);
      dnnl::matmul::primitive_desc pd(desc, attr, eng);
      const bool reference_impl = std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
      // Deterministic mode: the gemm driver on one thread (rows up to kPanelGemvMaxRows on the
      // panels still use the session's threads; they split columns).
      run_threads_ = deterministic_ && RunsOnGemmDriver(pd.impl_info_str()) ? 1 : threads_;
      wei_md_ = pd.weights_desc();
      scratch_md_ = pd.scratchpad_desc();
      prim_ = dnnl::matmul(pd);
      dnnl::stream stream(eng);
      if (const_b) {
        packed_b_owner_ = PackConstantWeights(info.weights, *const_b, user_b_md_, wei_md_);
        packed_b_ = *packed_b_owner_;
      }
      // Rows read the packed B directly (RunGemv), when it is a plain [K, N] product with at most
      // a bias along the rows added and an activation that parses (no batch of B, A not
      // transposed).
      gemv_ = const_b && !bf16_ && g_.a.size() == 2 && g_.b.size() == 2 && !g_.trans_a &&
              (g_.c_input < 0 || c_row) && PanelActivation(node, &act_) &&
              ColumnPanels(wei_md_, &panel_, &panel_stride_);
      // oneDNN's reference matmul (its pick for, say, an output scale with C broadcast along
      // the columns: KMeans's Gemm, alpha -2 and C [M, 1]) is slower than onyx's own blocked
      // GEMM, 0.12 ms against 0.01 ms at [100, 8] x [8, 5]; unless the rows all go to RunGemv.
      if (reference_impl && !(gemv_ && !g_.dynamic_rows && g_.a[0] <= common::kPanelGemvMaxRows))
        return node.NotSupported("oneDNN has only its reference matmul for this form");
      if (const_c && g_.beta != 1.f) {  // fold beta into a private copy of constant C
        scaled_c_ = memory(c_md_, eng);
        const float* src = const_c->data<float>();
        float* dst = static_cast<float*>(scaled_c_.get_data_handle());
        for (int64_t i = 0; i < const_c->numel(); ++i) dst[i] = g_.beta * src[i];
      }
      stream.wait();
    } catch (const dnnl::error& e) {
      return node.NotSupported("oneDNN: ", e.what());
    }
    return Status::Ok();
  }

  MatMulGeometry g_;
  int threads_ = 1;
  bool deterministic_ = false;  // KernelCreateInfo::deterministic
  int run_threads_ = 1;         // threads the primitives run on (1: see Init)
  Shape a_shape_, b_shape_;
  memory::desc src_md_, user_b_md_, wei_md_, dst_md_, c_md_, scratch_md_;
  bool bf16_ = false;  // bfloat16 A and B (SessionOptions::bf16): A converted per run
  memory::desc bf16_src_md_;
  dnnl::reorder bf16_reorder_;
  // Unknown rows: a primitive per row count seen, least recently used first out.
  struct RowsPrimitive {
    dnnl::matmul prim;
    memory::desc src_md, dst_md, scratch_md;
    MemoryKeys keys;  // its scratchpad's per-thread memory
  };
  static constexpr int64_t kTypicalRows = 64;
  static constexpr int64_t kRowBlock = 64;
  static constexpr size_t kMaxRowCounts = kRowBlock;
  RecentlyUsed<int64_t, RowsPrimitive> by_rows_{kMaxRowCounts};
  RecentlyUsed<int64_t, int> seen_rows_{kMaxRowCounts};  // calls' row counts seen
  enum MemoryArg { kSrc, kDst, kWeights, kScratch, kC, kZ, kBf16Src };
  MemoryKeys keys_;
  memory packed_b_, scaled_c_;
  bool native_bias_ = false;  // C is oneDNN's bias argument, not a binary post-op
  bool gemv_ = false;         // RunGemv can read packed_b_'s column panels
  PanelGemvActivation act_;   // what RunGemv applies after the sums
  int64_t panel_ = 0, panel_stride_ = 0;
  std::shared_ptr<const memory> packed_b_owner_;  // keeps the shared packed B
  dnnl::matmul prim_;
};

// A MatMul (the caller checks the op: FusedMatMul's scale and addends are not done here) of two
// plain row-major float operands of one rank, B's batch dims equal to A's or all 1:
// Y[i] = A[i] B[i] with PanelGemvF32, a panel of B and 100 rows at a time. Nothing to compile,
// so a shape's first run costs its arithmetic only. False (nothing written) when the
// operands are of another kind.
bool PlainBatchedProduct(KernelContext& ctx, Status* status) {
  // A work item: one panel of B against up to 100 rows of A (twenty blocks of five), so a panel
  // copied to be read contiguously is read twenty times.
  constexpr int64_t kRows = 100;
  if (!ctx.has_input(0) || !ctx.has_input(1)) return false;
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const int64_t r = a.rank();
  if (a.dtype() != DType::kFloat || b.dtype() != DType::kFloat || r < 2 || b.rank() != r)
    return false;
  const int64_t m = a.dim(r - 2), k = a.dim(r - 1), n = b.dim(r - 1);
  if (b.dim(r - 2) != k || m == 0 || k == 0 || n == 0) return false;
  bool same = true, shared = true;
  for (int64_t i = 0; i + 2 < r; ++i) {
    same = same && b.dim(i) == a.dim(i);
    shared = shared && b.dim(i) == 1;
  }
  if (!same && !shared) return false;
  Shape y_shape = a.shape();
  y_shape[r - 1] = n;
  auto y = NewOutput(ctx, 0, DType::kFloat, y_shape);
  if (!y.ok()) {
    *status = y.status();
    return true;
  }
  const int64_t batch = a.numel() / (m * k), chunks = (m + kRows - 1) / kRows;
  common::PanelGemvArgs g;
  g.lda = k;
  g.k = k;
  g.n = n;
  g.panel = common::PanelGemvPlainPanel();
  g.panel_stride = g.panel;
  g.ldb = n;
  g.b_padded = false;
  g.ldy = n;
  const int64_t panels = (n + g.panel - 1) / g.panel;
  const float* ap = a.data<float>();
  const float* bp = b.data<float>();
  float* yp = y->data<float>();
  const int64_t items = batch * chunks * panels;
  // The work of an item is its rows (a decoder step has one), not kRows.
  ParallelFor(items, std::min(m, kRows) * k * g.panel, ctx.intra_op_threads(),
              [&](int64_t begin, int64_t end) {
                common::PanelGemvArgs t = g;
                for (int64_t w = begin; w < end; ++w) {
                  const int64_t i = w / (chunks * panels), row = w / panels % chunks * kRows,
                                p = w % panels;
                  t.a = ap + (i * m + row) * k;
                  t.rows = std::min<int64_t>(kRows, m - row);
                  t.b = bp + (same ? i * k * n : 0);
                  t.y = yp + (i * m + row) * n;
                  common::PanelGemvF32(t, p, p + 1);
                }
              });
  *status = Status::Ok();
  return true;
}

// Products of two computed operands whose shapes are not known at plan time (attention's
// Q x K^T and P x V with a symbolic sequence length): a static-shape primitive per shape seen,
// made at its first run and kept (a few per kernel, least recently used dropped), and the
// operator's generic kernel for products too small to repay making a primitive.
class MatMulOnednnPerShape : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const NodeView& node,
                                                  const std::vector<TypeInfo>& types,
                                                  const KernelCreateInfo& info) {
    auto k = std::unique_ptr<MatMulOnednnPerShape>(new MatMulOnednnPerShape());
    k->info_ = info;
    k->info_.constants.clear();  // no constant operand: nothing to keep pointers to
    k->plain_ = node.op_type() == "MatMul";
    const OpDef* op = OpRegistry::Global().Find(node.domain(), node.op_type(), node.opset());
    if (!op || op->impls.size() < 2) return node.NotSupported("no generic kernel to fall back on");
    const KernelImpl& generic = op->impls.back();
    auto fallback = generic.create_with_info ? generic.create_with_info(node, types, info)
                                             : generic.create(node, types);
    if (!fallback.ok()) return fallback.status();
    k->fallback_ = std::move(fallback).value();
    return std::unique_ptr<Kernel>(std::move(k));
  }

  std::string variant() const override { return "per_shape"; }

  Status Run(KernelContext& ctx) const override {
    for (int i = 0; i < ctx.num_inputs(); ++i)
      if (ctx.has_input(i) && ctx.input(i).dtype() != DType::kFloat) return fallback_->Run(ctx);
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    int64_t macs = 0;
    if (a.rank() < 2 || b.rank() < 2) return fallback_->Run(ctx);
    if (!CheckedMul(a.numel(), b.dim(b.rank() - 1), &macs)) macs = INT64_MAX;
    Status plain;
    if (macs < kMinMacs)
      return plain_ && PlainBatchedProduct(ctx, &plain) ? plain : fallback_->Run(ctx);
    // The inputs' shapes as one key: each rank then its dims, -1 for an absent input.
    std::vector<int64_t> key;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) {
        key.push_back(-1);
        continue;
      }
      const Shape& shape = ctx.input(i).shape();
      key.push_back(static_cast<int64_t>(shape.size()));
      key.insert(key.end(), shape.begin(), shape.end());
    }
    std::shared_ptr<const Kernel> k;
    if (!kernels_.Find(key, &k)) {
      // A shape's first run: the plain product, a primitive from its second run on (compiling
      // one per new shape cost BERT 8 per length, 0.1-0.3 ms each, for a shape maybe never seen
      // again).
      const bool first = seen_.FirstSight(key);
      // Once a kernel has compiled twice as many shapes as it keeps, its shapes come and go
      // faster than primitives pay back (BERT fed every length 1..160: each call compiled
      // anew): the plain product then serves every shape not already held. Not in
      // deterministic mode: the shape alone picks the product there (the two round
      // differently), a primitive made at its first run.
      if (plain_ && !info_.deterministic &&
          (first || made_.load(std::memory_order_relaxed) >= 2 * kMaxShapes) &&
          PlainBatchedProduct(ctx, &plain))
        return plain;
      made_.fetch_add(1, std::memory_order_relaxed);
      // A shape the primitive cannot take (empty dims, broadcasts it refuses) runs the generic
      // kernel from now on: the null entry remembers that.
      std::vector<TypeInfo> types;
      for (int i = 0; i < ctx.num_inputs(); ++i)
        types.push_back(ctx.has_input(i)
                            ? TypeInfo::TensorWithShape(DType::kFloat, ctx.input(i).shape())
                            : TypeInfo());
      MatMulGeometry g;
      if (ResolveGeometry(ctx.node(), types, &g).ok()) {
        auto made = MatMulOnednn::Create(ctx.node(), types, info_);
        if (made.ok()) k = std::shared_ptr<const Kernel>(std::move(made).value());
      }
      kernels_.Add(std::move(key), k);
    }
    return k ? k->Run(ctx) : fallback_->Run(ctx);
  }

 private:
  static constexpr int64_t kMinMacs = int64_t{1} << 18;  // about 20 us of work at 1 thread
  static constexpr size_t kMaxShapes = 32;
  KernelCreateInfo info_;
  bool plain_ = false;  // a MatMul, which PlainBatchedProduct computes (FusedMatMul is not)
  std::unique_ptr<Kernel> fallback_;
  RecentlyUsed<std::vector<int64_t>, Kernel> kernels_{kMaxShapes};
  RecentlyUsed<std::vector<int64_t>, int> seen_{4 * kMaxShapes};  // shapes run once
  mutable std::atomic<size_t> made_{0};                           // primitives compiled
};

// MatMul or FusedMatMul (attention's scaled scores) whose operands are float tensors of rank >= 2
// (or unknown rank) with shapes not fully known: the per-shape kernel takes it. Gemm keeps to the
// two static paths.
bool PerShapeCandidate(const NodeView& node, const std::vector<TypeInfo>& types) {
  if ((node.op_type() != "MatMul" && !IsFused(node)) || types.size() < 2) return false;
  for (size_t i = 0; i < types.size(); ++i) {
    const TypeInfo& t = types[i];
    if (i >= 2 && t.kind == TypeInfo::Kind::kUnknown) continue;  // an omitted Bias or Z
    if (!t.is_tensor() || t.elem != DType::kFloat || (i < 2 && t.has_shape && t.rank() < 2))
      return false;
  }
  return !IsFloatStatic(types[0]) || !IsFloatStatic(types[1]);
}

// Either product kernel, by what is known at plan time.
StatusOr<std::unique_ptr<Kernel>> CreateMatMulOnednn(const NodeView& node,
                                                     const std::vector<TypeInfo>& types,
                                                     const KernelCreateInfo& info) {
  MatMulGeometry g;
  if (ResolveGeometry(node, types, &g).ok()) {
    auto k = MatMulOnednn::Create(node, types, info);
    // Unknown rows with a B that is not constant after all: per shape, like two computed ones.
    if (k.ok() || k.status().code() != ErrorCode::kUnsupported || !PerShapeCandidate(node, types))
      return k;
  }
  return MatMulOnednnPerShape::Create(node, types, info);
}

}  // namespace

Status MatMulOnednnSupports(const NodeView& node, const std::vector<TypeInfo>& types) {
  MatMulGeometry g;
  Status s = ResolveGeometry(node, types, &g);
  if (!s.ok() && PerShapeCandidate(node, types)) return Status::Ok();
  return s;
}

KernelImpl MatMulOnednnImpl(const std::string& name) {
  return OnednnImpl(name, MatMulOnednnSupports, CreateMatMulOnednn);
}

}  // namespace onyx::kernels::x86
