// Loop skeletons shared by the elementwise and activation kernels: a compute-type mapping for the
// 16-bit floats, parallel maps over large arrays, and multidirectional (numpy) broadcasting that
// collapses the shapes into an outer odometer over contiguous inner runs.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>
#include <vector>

#include "kernels/element_types.h"
#include "kernels/op_helpers.h"
#include "onyx/tensor.h"

// Forces inlining of the per-element helpers: a call left inside a loop stops vectorisation.
#if defined(__GNUC__)
#define ONYX_ELEMENT_INLINE inline __attribute__((always_inline))
#else
#define ONYX_ELEMENT_INLINE inline
#endif

namespace onyx::kernels::reference {

// Type the arithmetic runs in: float for float16/bfloat16 (no C++ arithmetic), T otherwise.
template <typename T>
using ComputeT =
    std::conditional_t<std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>, float, T>;

// Reads an element as its compute type; a reference (no copy) when no conversion is needed, so
// string elements are not copied.
template <typename T>
ONYX_ELEMENT_INLINE decltype(auto) Load(const T& x) {
  if constexpr (std::is_same_v<T, ComputeT<T>>) {
    return (x);
  } else {
    return static_cast<ComputeT<T>>(x);
  }
}

// cond ? a : b, branch-free for float/double. GCC keeps -ftrapping-math on by default and then
// will not if-convert a floating-point operation that only one arm of a ?: needs, which stops
// vectorisation; selecting on the bits leaves both arms computed and the loop vectorisable.
template <typename C>
ONYX_ELEMENT_INLINE C Select(bool cond, C a, C b) {
  if constexpr (std::is_same_v<C, float> || std::is_same_v<C, double>) {
    using U = std::conditional_t<sizeof(C) == 4, uint32_t, uint64_t>;
    U ua, ub;
    std::memcpy(&ua, &a, sizeof(C));
    std::memcpy(&ub, &b, sizeof(C));
    const U mask = U{0} - static_cast<U>(cond);
    const U r = (ua & mask) | (ub & ~mask);
    C out;
    std::memcpy(&out, &r, sizeof(C));
    return out;
  } else {
    return cond ? a : b;
  }
}

// exp(x) for float without libm calls or branches, so loops over it vectorise (Cephes expf:
// x = n ln2 + r, |r| <= ln2/2, degree-6 polynomial; about 1 ulp). Inputs are clamped to
// [-87.3, 88.7], so results underflow to ~1e-38 rather than 0 and never reach inf: meant for
// activations (Sigmoid, Tanh, Elu, ...), not for the Exp op. NaN propagates.
ONYX_ELEMENT_INLINE float ExpClampedF32(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440e-4f;
  constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  x = Select(x < -87.3f, -87.3f, x);
  x = Select(x > 88.7f, 88.7f, x);
  const float n = (x * kLog2e + kRoundMagic) - kRoundMagic;
  const float r = (x - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n from the exponent bits; n is in [-126, 128] after the clamp, split to stay normal.
  // A NaN input makes n NaN (and the result NaN through p); converting NaN to int is undefined
  // behaviour, so convert 0 then.
  const int32_t ni = static_cast<int32_t>(Select(n != n, 0.0f, n));
  const int32_t half = ni >> 1;
  const uint32_t b1 = static_cast<uint32_t>(half + 127) << 23;
  const uint32_t b2 = static_cast<uint32_t>(ni - half + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, 4);
  std::memcpy(&s2, &b2, 4);
  return p * s1 * s2;
}

// dst[i] = f(src[i]) for i in [0, n); f takes and returns the compute type.
template <typename T, typename R, typename F>
void MapUnary(const T* src, R* dst, int64_t n, int threads, F f) {
  auto body = [&](int64_t begin, int64_t end) {
    const F fn = f;  // a local copy: captured parameters stay in registers, the loop vectorises
    for (int64_t i = begin; i < end; ++i) dst[i] = static_cast<R>(fn(Load(src[i])));
  };
  ParallelFor(n, /*work_per_item=*/1, threads, body);
}

// Fails with kUnsupported: input i's element type is not one this operator accepts.
inline Status UnsupportedInputType(KernelContext& ctx, int i = 0) {
  return ctx.node().NotSupported("input ", i, " has type ", DTypeName(ctx.input(i).dtype()),
                                 ", which this operator does not support");
}

// A whole unary kernel: Y = f(X) with Y of X's type and shape, for the element types `visit`
// accepts (visit(dtype, g) calls g(TypeTag<T>{}) and returns false for other types, as VisitFloat
// does); f takes and returns the compute type.
template <typename Visit, typename F>
Status UnaryKernel(KernelContext& ctx, Visit visit, F f) {
  if (!ctx.has_input(0)) return ctx.node().Invalid("input 0 is missing");
  const Tensor& x = ctx.input(0);
  if (!visit(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        Tensor y = ctx.Output(0, x.dtype(), x.shape());
        MapUnary(x.data<T>(), y.data<T>(), x.numel(), ctx.intra_op_threads(), f);
      }))
    return UnsupportedInputType(ctx);
  return Status::Ok();
}

// UnaryKernel over the float types; `f` is a generic lambda over float/double.
template <typename F>
Status FloatUnaryKernel(KernelContext& ctx, F f) {
  return UnaryKernel(
      ctx, [](DType t, auto g) { return VisitFloat(t, g); }, f);
}

// A broadcast of k inputs to one output shape, collapsed: size-1 output dims are dropped and
// adjacent dims merged when every input walks them contiguously (or not at all). What is left is an
// outer odometer over `outer_shape` and an inner run of `inner` elements in which input j advances
// by inner_stride[j] (0 = broadcast, 1 = contiguous).
struct BroadcastPlan {
  int64_t total = 0;                                // output element count
  int64_t inner = 1;                                // length of one inner run
  std::vector<int64_t> outer_shape;                 // collapsed outer dims, outermost first
  std::vector<std::vector<int64_t>> outer_strides;  // [input][dim], elements
  std::vector<int64_t> inner_stride;                // [input], 0 or 1
  int64_t runs() const { return inner == 0 ? 0 : total / inner; }
};

BroadcastPlan MakeBroadcastPlan(const std::vector<Shape>& inputs, const Shape& out);

// Calls f(out_offset, in_offsets, len) for runs [run_begin, run_end) of the plan; in_offsets[j]
// is the element offset of input j at the start of the run.
template <typename F>
void ForEachRun(const BroadcastPlan& p, int64_t run_begin, int64_t run_end, F&& f) {
  const size_t k = p.inner_stride.size();
  const size_t rank = p.outer_shape.size();
  std::vector<int64_t> idx(rank, 0);
  std::vector<int64_t> off(k, 0);
  // Position the odometer at run_begin.
  int64_t r = run_begin;
  for (size_t d = rank; d-- > 0;) {
    idx[d] = r % p.outer_shape[d];
    r /= p.outer_shape[d];
    for (size_t j = 0; j < k; ++j) off[j] += idx[d] * p.outer_strides[j][d];
  }
  for (int64_t run = run_begin; run < run_end; ++run) {
    f(run * p.inner, off.data(), p.inner);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < p.outer_shape[d]) {
        for (size_t j = 0; j < k; ++j) off[j] += p.outer_strides[j][d];
        break;
      }
      for (size_t j = 0; j < k; ++j) off[j] -= p.outer_strides[j][d] * (p.outer_shape[d] - 1);
      idx[d] = 0;
    }
  }
}

// Runs f over every run of the plan, in parallel chunks of runs when the output is large.
template <typename F>
void ForEachRunParallel(const BroadcastPlan& p, int threads, F&& f) {
  const int64_t runs = p.runs();
  if (runs == 0) return;
  ParallelFor(runs, p.total / runs, threads, [&](int64_t b, int64_t e) { ForEachRun(p, b, e, f); });
}

// dst[i] = op(a[ia], b[ib]) over the broadcast of a's and b's shapes to `out`. op takes the
// compute types of A and B; its result is cast to R. Fast paths: equal shapes, a scalar operand,
// then contiguous/broadcast inner runs (all vectorisable).
template <typename A, typename B, typename R, typename Op>
void BinaryBroadcast(const A* a, const Shape& a_shape, const B* b, const Shape& b_shape, R* dst,
                     const Shape& out, int threads, Op op) {
  using CA = ComputeT<A>;
  using CB = ComputeT<B>;
  const int64_t n = ShapeElementCount(out);
  if (n == 0) return;
  const int64_t na = ShapeElementCount(a_shape);
  const int64_t nb = ShapeElementCount(b_shape);
  auto run_flat = [&](auto&& body) { ParallelFor(n, /*work_per_item=*/1, threads, body); };
  if (na == n && nb == n) {  // same element count as the output: same shape after broadcasting
    run_flat([&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) dst[i] = static_cast<R>(op(Load(a[i]), Load(b[i])));
    });
    return;
  }
  if (nb == 1 && na == n) {
    const CB bv = Load(b[0]);
    run_flat([&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) dst[i] = static_cast<R>(op(Load(a[i]), bv));
    });
    return;
  }
  if (na == 1 && nb == n) {
    const CA av = Load(a[0]);
    run_flat([&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) dst[i] = static_cast<R>(op(av, Load(b[i])));
    });
    return;
  }
  const BroadcastPlan plan = MakeBroadcastPlan({a_shape, b_shape}, out);
  const int64_t sa = plan.inner_stride[0], sb = plan.inner_stride[1];
  ForEachRunParallel(plan, threads, [&](int64_t o, const int64_t* off, int64_t len) {
    const A* pa = a + off[0];
    const B* pb = b + off[1];
    R* pd = dst + o;
    if (sa == 1 && sb == 1) {
      for (int64_t i = 0; i < len; ++i) pd[i] = static_cast<R>(op(Load(pa[i]), Load(pb[i])));
    } else if (sa == 1) {
      const CB bv = Load(pb[0]);
      for (int64_t i = 0; i < len; ++i) pd[i] = static_cast<R>(op(Load(pa[i]), bv));
    } else if (sb == 1) {
      const CA av = Load(pa[0]);
      for (int64_t i = 0; i < len; ++i) pd[i] = static_cast<R>(op(av, Load(pb[i])));
    } else {
      const R v = static_cast<R>(op(Load(pa[0]), Load(pb[0])));
      for (int64_t i = 0; i < len; ++i) pd[i] = v;
    }
  });
}

}  // namespace onyx::kernels::reference
