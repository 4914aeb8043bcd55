// MatMul, Gemm, MatMulInteger and QLinearMatMul. float and double run on the blocked GEMM;
// float16/bfloat16 compute in float; integer types use a plain i-p-j loop (vectorisable, exact).
#include "kernels/reference/matmul.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/element_types.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/gemm_core.h"

namespace onyx::kernels {
namespace {

// A batched matrix product after numpy broadcasting: out[batch] = A[batch] (m x k) * B[batch]
// (k x n).
struct MatMulPlan {
  Shape out;  // the op's output shape (1-D operand dims removed)
  int64_t m = 0, k = 0, n = 0;
  int64_t batch_count = 1;
  std::vector<int64_t> a_offset;  // per batch: element offset of A's matrix
  std::vector<int64_t> b_offset;
  bool b_shared = false;  // every batch uses the same B, and A's matrices are contiguous
};

StatusOr<MatMulPlan> PlanMatMul(const Shape& a_in, const Shape& b_in) {
  if (a_in.empty() || b_in.empty()) {
    return InvalidModel("MatMul operands must have rank >= 1, got ", ShapeToString(a_in), " and ",
                        ShapeToString(b_in));
  }
  Shape a = a_in, b = b_in;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  MatMulPlan p;
  p.m = a[a.size() - 2];
  p.k = a.back();
  p.n = b.back();
  if (b[b.size() - 2] != p.k) {
    return InvalidModel("inner dims differ: A ", ShapeToString(a_in), " has K = ", p.k, ", B ",
                        ShapeToString(b_in), " has K = ", b[b.size() - 2]);
  }
  const Shape a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  ONYX_ASSIGN_OR_RETURN(Shape batch, BroadcastShapes({a_batch, b_batch}));
  p.batch_count = ShapeElementCount(batch);
  p.out = batch;
  if (a_in.size() > 1) p.out.push_back(p.m);
  if (b_in.size() > 1) p.out.push_back(p.n);
  const std::vector<int64_t> as = BroadcastStrides(a_batch, batch);
  const std::vector<int64_t> bs = BroadcastStrides(b_batch, batch);
  p.a_offset.reserve(p.batch_count);
  p.b_offset.reserve(p.batch_count);
  ForEachBroadcast(batch, {as, bs}, [&](int64_t, const int64_t* off) {
    p.a_offset.push_back(off[0] * p.m * p.k);
    p.b_offset.push_back(off[1] * p.k * p.n);
  });
  if (batch.empty()) {  // ForEachBroadcast visits a scalar shape once
    p.a_offset.assign(1, 0);
    p.b_offset.assign(1, 0);
  }
  p.b_shared = true;
  for (int64_t i = 0; i < p.batch_count; ++i) {
    if (p.b_offset[i] != 0 || p.a_offset[i] != i * p.m * p.k) p.b_shared = false;
  }
  return p;
}

// y[i, :] = sum over p of a[i, p] * b[p, :] with exact integer (or plain) arithmetic.
template <typename T>
void SimpleMatMul(const T* a, const T* b, T* y, int64_t m, int64_t k, int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    T* yrow = y + i * n;
    std::fill(yrow, yrow + n, T(0));
    for (int64_t p = 0; p < k; ++p) {
      const T av = a[i * k + p];
      const T* brow = b + p * n;
      for (int64_t j = 0; j < n; ++j) yrow[j] += av * brow[j];
    }
  }
}

constexpr double kSerialMacs = 1 << 16;

template <typename T>
void RunMatMul(const T* a, const T* b, T* y, const MatMulPlan& p) {
  const int64_t mn = p.m * p.n;
  if (mn == 0 || p.batch_count == 0) return;
  if constexpr (std::is_floating_point_v<T>) {
    if (p.b_shared) {
      // B is shared by every batch and A's matrices are back to back: one tall GEMM.
      Gemm<T>(false, false, p.batch_count * p.m, p.n, p.k, T(1), a, p.k, b, p.n, T(0), y, p.n);
      return;
    }
    const auto one = [&](int64_t i) {
      Gemm<T>(false, false, p.m, p.n, p.k, T(1), a + p.a_offset[i], p.k, b + p.b_offset[i], p.n,
              T(0), y + i * mn, p.n);
    };
    // Small batches of small products (a decoder's per-head scores at one token) cost less than
    // handing them to TBB's workers.
    if (static_cast<double>(p.batch_count) * static_cast<double>(mn) * static_cast<double>(p.k) <
        kSerialMacs) {
      for (int64_t i = 0; i < p.batch_count; ++i) one(i);
      return;
    }
    tbb::parallel_for(int64_t{0}, p.batch_count, one);
  } else {
    tbb::parallel_for(int64_t{0}, p.batch_count, [&](int64_t i) {
      SimpleMatMul<T>(a + p.a_offset[i], b + p.b_offset[i], y + i * mn, p.m, p.k, p.n);
    });
  }
}

std::vector<float> ToFloats(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = static_cast<float>(ElementAsDouble(t, i));
  return v;
}

void FromFloats(const std::vector<float>& v, Tensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i) StoreFromDouble(t.dtype(), t.raw_data(), i, v[i]);
}

Status TypeMismatch(const NodeView& node, int i, const Tensor& t, const Tensor& expected) {
  return node.Invalid("input ", i, " '", node.node().inputs[i], "' has type ", DTypeName(t.dtype()),
                      "; expected ", DTypeName(expected.dtype()), " like input 0");
}

bool IsMatMulType(DType t) {
  switch (t) {
    case DType::kFloat:
    case DType::kDouble:
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt32:
    case DType::kUInt64:
      return true;
    default:
      return false;
  }
}

// Integer product of two 8-bit operands with zero points: (a - a_zero) * (b - b_zero) in int32.
// a_zero is a scalar or one value per row of A (size m); b_zero a scalar or one per column of B
// (size n).
StatusOr<std::vector<int32_t>> QuantizedProduct(const NodeView& node, const Tensor& a,
                                                const Tensor* a_zero, int a_zero_index,
                                                const Tensor& b, const Tensor* b_zero,
                                                int b_zero_index, MatMulPlan* plan) {
  for (int i : {0, 1}) {
    const Tensor& t = i == 0 ? a : b;
    if (t.dtype() != DType::kUInt8 && t.dtype() != DType::kInt8) {
      const int index = i == 0 ? 0 : (a_zero_index == 2 ? 1 : 3);
      return node.NotSupported("input ", index, " '", node.node().inputs[index], "' has type ",
                               DTypeName(t.dtype()), "; expected uint8 or int8");
    }
  }
  auto planned = PlanMatMul(a.shape(), b.shape());
  if (!planned.ok()) return node.Invalid(planned.status().message());
  *plan = std::move(planned).value();
  const MatMulPlan& p = *plan;
  // Zero points: scalar, or per row of A [m] / per column of B [n].
  auto zeros = [&](const Tensor* z, int index, int64_t count) -> StatusOr<std::vector<int32_t>> {
    std::vector<int32_t> v(static_cast<size_t>(count), 0);
    if (!z) return v;
    // A float zero point could hold NaN or 1e30, whose int32 conversion is undefined.
    if (z->dtype() != DType::kUInt8 && z->dtype() != DType::kInt8 && z->dtype() != DType::kInt32) {
      return node.Invalid("input ", index, " '", node.node().inputs[index], "' has type ",
                          DTypeName(z->dtype()), "; expected a uint8, int8 or int32 zero point");
    }
    if (z->numel() == 1) {
      std::fill(v.begin(), v.end(), static_cast<int32_t>(ElementAsDouble(*z, 0)));
    } else if (z->rank() == 1 && z->dim(0) == count) {
      for (int64_t i = 0; i < count; ++i) v[i] = static_cast<int32_t>(ElementAsDouble(*z, i));
    } else {
      return node.Invalid("input ", index, " '", node.node().inputs[index], "' has shape ",
                          ShapeToString(z->shape()), "; expected a scalar or [", count, "]");
    }
    return v;
  };
  ONYX_ASSIGN_OR_RETURN(std::vector<int32_t> az, zeros(a_zero, a_zero_index, p.m));
  ONYX_ASSIGN_OR_RETURN(std::vector<int32_t> bz, zeros(b_zero, b_zero_index, p.n));
  std::vector<int32_t> a32(static_cast<size_t>(a.numel())), b32(static_cast<size_t>(b.numel()));
  for (int64_t i = 0; i < a.numel(); ++i)
    a32[i] = static_cast<int32_t>(ElementAsDouble(a, i)) -
             az[(i / std::max<int64_t>(p.k, 1)) % std::max<int64_t>(p.m, 1)];
  for (int64_t i = 0; i < b.numel(); ++i)
    b32[i] = static_cast<int32_t>(ElementAsDouble(b, i)) - bz[i % std::max<int64_t>(p.n, 1)];
  std::vector<int32_t> y(static_cast<size_t>(p.batch_count * p.m * p.n));
  RunMatMul<int32_t>(a32.data(), b32.data(), y.data(), p);
  return y;
}

}  // namespace

StatusOr<Shape> MatMulShape(const Shape& a, const Shape& b) {
  ONYX_ASSIGN_OR_RETURN(MatMulPlan p, PlanMatMul(a, b));
  return p.out;
}

Status MatMulKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (b.dtype() != a.dtype()) return TypeMismatch(node, 1, b, a);
  if (!IsMatMulType(a.dtype())) {
    return node.NotSupported("input 0 '", node.node().inputs[0], "' has type ",
                             DTypeName(a.dtype()));
  }
  auto planned = PlanMatMul(a.shape(), b.shape());
  if (!planned.ok()) return node.Invalid(planned.status().message());
  const MatMulPlan& p = planned.value();
  Tensor y = ctx.Output(0, a.dtype(), p.out);
  if (a.dtype() == DType::kFloat16 || a.dtype() == DType::kBFloat16) {
    const std::vector<float> af = ToFloats(a), bf = ToFloats(b);
    std::vector<float> yf(static_cast<size_t>(y.numel()));
    RunMatMul<float>(af.data(), bf.data(), yf.data(), p);
    FromFloats(yf, y);
    return Status::Ok();
  }
  VisitNumeric(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> ||
                  std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>) {
      RunMatMul<T>(a.data<T>(), b.data<T>(), y.data<T>(), p);
    }
  });
  return Status::Ok();
}

Status GemmKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const auto& names = node.node().inputs;
  if (b.dtype() != a.dtype()) return TypeMismatch(node, 1, b, a);
  if (!IsMatMulType(a.dtype())) {
    return node.NotSupported("input 0 '", names[0], "' has type ", DTypeName(a.dtype()));
  }
  if (a.rank() != 2 || b.rank() != 2) {
    return node.Invalid("inputs 0 '", names[0], "' ", ShapeToString(a.shape()), " and 1 '",
                        names[1], "' ", ShapeToString(b.shape()), " must be matrices (rank 2)");
  }
  const bool trans_a = node.attr_int("transA", 0) != 0;
  const bool trans_b = node.attr_int("transB", 0) != 0;
  const double alpha = node.attr_float("alpha", 1.0f);
  double beta = node.attr_float("beta", 1.0f);
  const int64_t m = trans_a ? a.dim(1) : a.dim(0);
  const int64_t k = trans_a ? a.dim(0) : a.dim(1);
  const int64_t kb = trans_b ? b.dim(1) : b.dim(0);
  const int64_t n = trans_b ? b.dim(0) : b.dim(1);
  if (k != kb) {
    return node.Invalid("input 1 '", names[1], "' has shape ", ShapeToString(b.shape()),
                        (trans_b ? " (transposed)" : ""), "; expected K = ", k,
                        " to match input 0 '", names[0], "' ", ShapeToString(a.shape()),
                        (trans_a ? " (transposed)" : ""));
  }
  Tensor y = ctx.Output(0, a.dtype(), {m, n});
  const Tensor* c = ctx.num_inputs() > 2 && ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (c && c->dtype() != a.dtype()) return TypeMismatch(node, 2, *c, a);
  if (c && c->rank() > 2) {
    return node.Invalid("input 2 '", names[2], "' has shape ", ShapeToString(c->shape()),
                        "; expected rank <= 2, broadcastable to [", m, ",", n, "]");
  }
  std::vector<int64_t> c_strides;
  if (c) {
    // C broadcasts unidirectionally to [m, n] (opset 7+; earlier opsets' `broadcast` flag only
    // allowed what this accepts).
    const Shape& cs = c->shape();
    const Shape full{m, n};
    for (size_t i = 0; i < cs.size(); ++i) {
      const int64_t want = full[2 - cs.size() + i];
      if (cs[i] != 1 && cs[i] != want) {
        return node.Invalid("input 2 '", names[2], "' has shape ", ShapeToString(cs),
                            "; expected it to broadcast to [", m, ",", n, "]");
      }
    }
    c_strides = BroadcastStrides(cs, full);
  }
  if (!c) beta = 0;
  // Fills Y with beta-free C (the GEMM then applies beta), or leaves it for beta = 0.
  auto fill_c = [&](auto* ydst, auto load) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) ydst[i * n + j] = load(i * c_strides[0] + j * c_strides[1]);
  };
  const int64_t lda = a.dim(1), ldb = b.dim(1);
  const DType t = a.dtype();
  if (t == DType::kFloat16 || t == DType::kBFloat16) {
    const std::vector<float> af = ToFloats(a), bf = ToFloats(b);
    std::vector<float> yf(static_cast<size_t>(m * n));
    if (beta != 0) {
      const std::vector<float> cf = ToFloats(*c);
      fill_c(yf.data(), [&](int64_t i) { return cf[i]; });
    }
    Gemm<float>(trans_a, trans_b, m, n, k, static_cast<float>(alpha), af.data(), lda, bf.data(),
                ldb, static_cast<float>(beta), yf.data(), n);
    FromFloats(yf, y);
    return Status::Ok();
  }
  VisitNumeric(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_arithmetic_v<T>) {
      T* yd = y.data<T>();
      if (beta != 0) {
        const T* cd = c->data<T>();
        fill_c(yd, [&](int64_t i) { return cd[i]; });
      }
      if constexpr (std::is_floating_point_v<T>) {
        Gemm<T>(trans_a, trans_b, m, n, k, static_cast<T>(alpha), a.data<T>(), lda, b.data<T>(),
                ldb, static_cast<T>(beta), yd, n);
      } else {
        GemmNaive<T, T>(trans_a, trans_b, m, n, k, static_cast<T>(alpha), a.data<T>(), lda,
                        b.data<T>(), ldb, static_cast<T>(beta), yd, n);
      }
    }
  });
  return Status::Ok();
}

Status MatMulIntegerKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor* a_zero = ctx.num_inputs() > 2 && ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const Tensor* b_zero = ctx.num_inputs() > 3 && ctx.has_input(3) ? &ctx.input(3) : nullptr;
  MatMulPlan p;
  ONYX_ASSIGN_OR_RETURN(std::vector<int32_t> acc, QuantizedProduct(node, ctx.input(0), a_zero, 2,
                                                                   ctx.input(1), b_zero, 3, &p));
  Tensor y = ctx.Output(0, DType::kInt32, p.out);
  std::copy(acc.begin(), acc.end(), y.data<int32_t>());
  return Status::Ok();
}

Status QLinearMatMulKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  MatMulPlan p;
  ONYX_ASSIGN_OR_RETURN(
      std::vector<int32_t> acc,
      QuantizedProduct(node, ctx.input(0), &ctx.input(2), 2, ctx.input(3), &ctx.input(5), 5, &p));
  const Tensor& a_scale = ctx.input(1);
  const Tensor& b_scale = ctx.input(4);
  const Tensor& y_scale = ctx.input(6);
  const Tensor& y_zero = ctx.input(7);
  for (int i : {6, 7}) {
    if (ctx.input(i).numel() != 1) {
      return node.Invalid("input ", i, " '", node.node().inputs[i], "' has shape ",
                          ShapeToString(ctx.input(i).shape()), "; expected a scalar");
    }
  }
  // a_scale: scalar or one per row of A; b_scale: scalar or one per column of B.
  auto per = [&](const Tensor& t, int index, int64_t count) -> StatusOr<std::vector<double>> {
    if (t.numel() == 1)
      return std::vector<double>(static_cast<size_t>(count), ElementAsDouble(t, 0));
    if (t.rank() == 1 && t.dim(0) == count) return TensorToDoubles(t);
    return node.Invalid("input ", index, " '", node.node().inputs[index], "' has shape ",
                        ShapeToString(t.shape()), "; expected a scalar or [", count, "]");
  };
  ONYX_ASSIGN_OR_RETURN(std::vector<double> a_s, per(a_scale, 1, p.m));
  ONYX_ASSIGN_OR_RETURN(std::vector<double> b_s, per(b_scale, 4, p.n));
  const DType out_type = y_zero.dtype();
  if (out_type != DType::kUInt8 && out_type != DType::kInt8) {
    return node.NotSupported("input 7 '", node.node().inputs[7], "' has type ", DTypeName(out_type),
                             "; expected uint8 or int8");
  }
  // The multiplier a_scale * b_scale / y_scale is rounded in the scales' own type (as numpy and
  // ONNX Runtime do for float16 scales); the rescale itself is done in double.
  const DType st = a_scale.dtype();
  auto round_to_scale_type = [&](double v) {
    uint64_t bits = 0;  // room for any scale type
    StoreFromDouble(st, &bits, 0, v);
    return LoadAsDouble(st, &bits, 0);
  };
  const double ys = ElementAsDouble(y_scale, 0);
  std::vector<double> scale(static_cast<size_t>(p.m * p.n));
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j)
      scale[i * p.n + j] = round_to_scale_type(round_to_scale_type(a_s[i] * b_s[j]) / ys);
  const double zero = ElementAsDouble(y_zero, 0);
  const double lo = out_type == DType::kInt8 ? -128 : 0;
  const double hi = out_type == DType::kInt8 ? 127 : 255;
  Tensor y = ctx.Output(0, out_type, p.out);
  const size_t mn = static_cast<size_t>(std::max<int64_t>(p.m * p.n, 1));
  for (size_t i = 0; i < acc.size(); ++i) {
    const double q = std::nearbyint(static_cast<double>(acc[i]) * scale[i % mn] + zero);
    StoreFromDouble(out_type, y.raw_data(), static_cast<int64_t>(i), std::min(hi, std::max(lo, q)));
  }
  return Status::Ok();
}

}  // namespace onyx::kernels
