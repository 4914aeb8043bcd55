// MatMulInteger, com.microsoft MatMulIntegerToFloat and com.microsoft QGemm (transB, alpha, an
// int32 C row, float or requantized 8-bit output) on oneDNN's int8 matmul. B is packed
// once (int8 with a zero zero point: oneDNN takes no other). oneDNN computes the raw products
// sum_k A[r][k] B[k][n] in int32, written into Y's own buffer; an epilogue subtracts A's zero
// point times B's column sums and, for MatMulIntegerToFloat, computes float(acc) * a_scale *
// b_scale[n] + bias[n] in place, as ONNX Runtime does. A's zero point and scale are read per run
// (DynamicQuantizeLinear computes them). A uint8 B, or one with a zero point (ONNX Runtime's older
// dynamic quantization: uint8 weights, zero point 119 in ddddocr), is shifted to int8 at plan
// time and its zero point zb' taken out in the epilogue too: sum_k (a - za)(b - zb') = raw -
// za * colsum - zb' * (rowsum(a) - K * za). oneDNN 2.6 runs its blocked AMX/VNNI kernels (brgemm)
// only without run-time zero points or output scales: with them it fell back to a plain gemm
// three times as slow (BERT-base's 768x768 products at 128 rows: 0.74 against 0.25 ms).
#include "kernels/x86/qmatmul_onednn.h"

#include <algorithm>
#include <cmath>

#include "kernels/x86/onednn_context.h"

namespace onyx::kernels::x86 {
namespace {

using dnnl::memory;

// Where each operand is among the node's inputs (-1: the op has none).
struct Operands {
  int b = 1, a_scale = -1, b_scale = -1, a_zero = -1, b_zero = -1;
  int bias = -1;                  // float, added after the multiplier (MatMulIntegerToFloat)
  int c = -1;                     // int32, added to the products (QGemm)
  int y_scale = -1, y_zero = -1;  // QGemm's quantized output
  bool to_float = false;          // scaled by a_scale * b_scale (else int32 out)
};

Operands OperandsOf(const NodeView& node) {
  Operands o;
  if (node.op_type() == "MatMulIntegerToFloat") {
    o.a_scale = 2, o.b_scale = 3, o.a_zero = 4, o.b_zero = 5, o.bias = 6, o.to_float = true;
  } else if (node.op_type() == "QGemm") {
    o.b = 3, o.a_scale = 1, o.a_zero = 2, o.b_scale = 4, o.b_zero = 5, o.c = 6, o.y_scale = 7;
    o.y_zero = 8, o.to_float = true;
  } else {  // MatMulInteger
    o.a_zero = 2, o.b_zero = 3;
  }
  return o;
}

bool Given(const std::vector<TypeInfo>& types, int i) {
  return i >= 0 && static_cast<size_t>(i) < types.size() &&
         types[i].kind != TypeInfo::Kind::kUnknown;
}

const Tensor* ConstantInput(const KernelCreateInfo& info, int i) {
  return i >= 0 && static_cast<size_t>(i) < info.constants.size() ? info.constants[i] : nullptr;
}

class QuantizedMatMulOnednn : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const NodeView& node,
                                                  const std::vector<TypeInfo>& types,
                                                  const KernelCreateInfo& info) {
    auto k = std::unique_ptr<QuantizedMatMulOnednn>(new QuantizedMatMulOnednn());
    ONYX_RETURN_IF_ERROR(k->Init(node, types, info));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  bool packed_input(size_t i) const override { return static_cast<int>(i) == ops_.b; }

  Status Run(KernelContext& ctx) const override {
    SetOmpThreads(threads_);
    const NodeView& node = ctx.node();
    const Tensor& a = ctx.input(0);
    if (a.dtype() != a_type_ || a.rank() < 2 || a.shape().back() != k_)
      return node.Fail("input 0 (A) has shape ", ShapeToString(a.shape()), " and type ",
                       DTypeName(a.dtype()), "; the kernel was made for ", DTypeName(a_type_),
                       " [..., ", k_, "]");
    Shape y_shape = a.shape();
    y_shape.back() = n_;
    const int64_t rows = a.numel() / k_;
    if (rows_ != DNNL_RUNTIME_DIM_VAL && rows != rows_)
      return node.Fail("input 0 (A) has ", rows, " rows; the kernel was made for ", rows_);
    int32_t a_zero = 0;
    if (ops_.a_zero >= 0 && ctx.has_input(ops_.a_zero)) {
      const Tensor& z = ctx.input(ops_.a_zero);
      if (z.numel() != 1 || z.dtype() != a_type_)
        return node.Fail("input ", ops_.a_zero, " (a_zero_point) must be one ", DTypeName(a_type_));
      a_zero = a_type_ == DType::kUInt8 ? z.data<uint8_t>()[0] : z.data<int8_t>()[0];
    }
    std::vector<float> multiplier;
    if (ops_.to_float) {
      const Tensor& s = ctx.input(ops_.a_scale);
      if (s.numel() != 1 || s.dtype() != DType::kFloat)
        return node.Fail("input ", ops_.a_scale, " (a_scale) must be one float");
      const float a_scale = s.data<float>()[0];
      multiplier = b_scale_;
      // In float and in this order, as ONNX Runtime computes it.
      for (float& m : multiplier) m = alpha_ * a_scale * m;
      if (y_type_ != DType::kFloat)
        for (float& m : multiplier) m /= y_scale_;
    }
    Tensor y = ctx.Output(0, y_type_, y_shape);
    if (rows == 0) return Status::Ok();
    // The int32 products go to Y's own buffer when it has 4-byte elements, else to this
    // thread's buffer (kept: a fresh one of this size is mapped and faulted in on every run).
    thread_local std::vector<int32_t> acc_buffer;
    int32_t* acc = static_cast<int32_t*>(y.raw_data());
    if (DTypeSize(y_type_) != 4) {
      if (acc_buffer.size() < static_cast<size_t>(rows * n_))
        acc_buffer.resize(static_cast<size_t>(rows * n_));
      acc = acc_buffer.data();
    }
    try {
      dnnl::stream& stream = ThreadStream();
      dnnl::engine& eng = CpuEngine();
      // Rows fixed at plan time: this thread's memory objects (ThreadMemory); else made here.
      memory src, dst;
      if (rows_ != DNNL_RUNTIME_DIM_VAL) {
        src = ThreadMemory(keys_[kSrc], src_md_, a.raw_data());
        dst = ThreadMemory(keys_[kDst], dst_md_, acc);
      } else {
        const memory::desc src_md({rows, k_}, DnnlType(a_type_), memory::format_tag::ab);
        const memory::desc dst_md({rows, n_}, memory::data_type::s32, memory::format_tag::ab);
        src = memory(src_md, eng, const_cast<void*>(a.raw_data()));
        dst = memory(dst_md, eng, acc);
      }
      Execute(prim_, stream,
              {{DNNL_ARG_SRC, src},
               {DNNL_ARG_WEIGHTS, packed_weights_},
               {DNNL_ARG_DST, dst},
               {DNNL_ARG_SCRATCHPAD, ThreadScratchpad(scratch_md_, keys_[kScratch])}});
      stream.wait();
    } catch (const dnnl::error& e) {
      return FromDnnlError(node, e);
    }
    // B's zero point needs each row's sum of A minus K times A's zero point.
    std::vector<int32_t> rowsum;
    if (has_b_zero_) {
      rowsum.resize(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r) {
        int32_t s = 0;
        if (a_type_ == DType::kUInt8) {
          const uint8_t* p = a.data<uint8_t>() + r * k_;
          for (int64_t kk = 0; kk < k_; ++kk) s += p[kk];
        } else {
          const int8_t* p = a.data<int8_t>() + r * k_;
          for (int64_t kk = 0; kk < k_; ++kk) s += p[kk];
        }
        rowsum[r] = s - static_cast<int32_t>(k_) * a_zero;
      }
    }
    Epilogue(acc, y.raw_data(), rows, a_zero, multiplier, rowsum);
    return Status::Ok();
  }

 private:
  // acc += c[n] - a_zero * colsum[n] (- b_zero'[n] * rowsum[r] when B has a zero point); then
  // int32 out as it is, float out as float(acc) * multiplier[n] + bias[n], or 8-bit out as
  // saturate(round(float(acc) * multiplier[n]) + y_zero). `y` may be `acc` itself (4-byte
  // outputs, written in place).
  void Epilogue(int32_t* acc, void* y, int64_t rows, int32_t a_zero,
                const std::vector<float>& multiplier, const std::vector<int32_t>& rowsum) const {
    const int64_t n = n_;
    const bool per_column = multiplier.size() > 1;
    const float* bias = bias_ ? bias_->data<float>() : nullptr;
    std::vector<int32_t> offset(colsum_.size());
    for (size_t j = 0; j < offset.size(); ++j)
      offset[j] = a_zero * colsum_[j] - (c_.empty() ? 0 : c_[j]);
    const int32_t* off = offset.data();
    const float* mul = multiplier.empty() ? nullptr : multiplier.data();
    const DType yt = y_type_;
    const float lo = yt == DType::kUInt8 ? 0.f : -128.f, hi = yt == DType::kUInt8 ? 255.f : 127.f;
    const float zero = static_cast<float>(y_zero_);
    const bool per_column_zero = b_zero_.size() > 1;
#pragma omp parallel for num_threads(threads_) if (rows * n >= (1 << 15))
    for (int64_t r = 0; r < rows; ++r) {
      int32_t* row = acc + r * n;
      if (!rowsum.empty())
        for (int64_t j = 0; j < n; ++j) row[j] -= b_zero_[per_column_zero ? j : 0] * rowsum[r];
      if (yt == DType::kInt32) {
        for (int64_t j = 0; j < n; ++j) row[j] -= off[j];
      } else if (yt == DType::kFloat) {
        float* out = static_cast<float*>(y) + r * n;
        for (int64_t j = 0; j < n; ++j) {
          const float v = static_cast<float>(row[j] - off[j]) * mul[per_column ? j : 0];
          out[j] = bias ? v + bias[j] : v;
        }
      } else if (yt == DType::kUInt8) {
        uint8_t* out = static_cast<uint8_t*>(y) + r * n;
        for (int64_t j = 0; j < n; ++j)
          out[j] = static_cast<uint8_t>(Requantize(
              static_cast<float>(row[j] - off[j]) * mul[per_column ? j : 0], lo, hi, zero));
      } else {
        int8_t* out = static_cast<int8_t*>(y) + r * n;
        for (int64_t j = 0; j < n; ++j)
          out[j] = static_cast<int8_t>(Requantize(
              static_cast<float>(row[j] - off[j]) * mul[per_column ? j : 0], lo, hi, zero));
      }
    }
  }

  // saturate(round_half_even(v) + zero) for a finite v, as int: v is clamped to the range first
  // (the bounds are integers, so clamping and rounding commute) and rounded by adding and
  // subtracting 1.5 * 2^23, exact for |v| <= 2^22, so that the loop vectorizes.
  static int Requantize(float v, float lo, float hi, float zero) {
    v = std::min(hi - zero, std::max(lo - zero, v));
    const float rounded = (v + 12582912.f) - 12582912.f;
    return static_cast<int>(rounded + zero);
  }

  static memory::data_type DnnlType(DType t) {
    return t == DType::kUInt8 ? memory::data_type::u8 : memory::data_type::s8;
  }

  Status Init(const NodeView& node, const std::vector<TypeInfo>& types,
              const KernelCreateInfo& info) {
    threads_ = info.threads;
    ops_ = OperandsOf(node);
    a_type_ = types[0].elem;
    const Tensor* b = ConstantInput(info, ops_.b);
    if (!b) return node.NotSupported("input ", ops_.b, " (B) must be a constant for oneDNN");
    const bool trans_b = node.attr_int("transB", 0) != 0;  // QGemm: B stored [N, K]
    k_ = b->dim(trans_b ? 1 : 0);
    n_ = b->dim(trans_b ? 0 : 1);
    alpha_ = node.attr_float("alpha", 1.f);
    y_type_ = !ops_.to_float ? DType::kInt32 : DType::kFloat;
    if (Given(types, ops_.y_zero)) {
      const Tensor* ys = ConstantInput(info, ops_.y_scale);
      const Tensor* yz = ConstantInput(info, ops_.y_zero);
      if (!ys || !yz || ys->numel() != 1 || yz->numel() != 1)
        return node.NotSupported("y_scale and y_zero_point must be constant scalars for oneDNN");
      y_type_ = yz->dtype();
      y_scale_ = ys->data<float>()[0];
      y_zero_ = y_type_ == DType::kUInt8 ? yz->data<uint8_t>()[0] : yz->data<int8_t>()[0];
    } else if (Given(types, ops_.y_scale)) {
      return node.NotSupported("y_scale without y_zero_point");
    }
    if (Given(types, ops_.c)) {
      const Tensor* c = ConstantInput(info, ops_.c);
      if (!c || c->dtype() != DType::kInt32 || c->numel() != n_ || c->shape().back() != n_)
        return node.NotSupported("C must be a constant int32 row of N values for oneDNN");
      c_.assign(c->data<int32_t>(), c->data<int32_t>() + n_);
    }
    // oneDNN takes int8 B without a zero point: a uint8 B is shifted by -128, and its zero
    // point (minus the same shift) is taken out in the epilogue.
    const int32_t shift = b->dtype() == DType::kUInt8 ? 128 : 0;
    b_zero_.assign(1, -shift);
    if (ops_.b_zero >= 0 && Given(types, ops_.b_zero)) {
      const Tensor* z = ConstantInput(info, ops_.b_zero);
      if (!z) return node.NotSupported("b_zero_point must be a constant for oneDNN");
      if (z->dtype() != b->dtype() || (z->numel() != 1 && z->numel() != n_))
        return node.NotSupported("b_zero_point must have B's type and 1 or N values");
      b_zero_.resize(static_cast<size_t>(z->numel()));
      for (int64_t j = 0; j < z->numel(); ++j)
        b_zero_[j] =
            (z->dtype() == DType::kUInt8 ? z->data<uint8_t>()[j] : z->data<int8_t>()[j]) - shift;
    }
    has_b_zero_ = std::any_of(b_zero_.begin(), b_zero_.end(), [](int32_t v) { return v != 0; });
    if (ops_.to_float) {
      const Tensor* s = ConstantInput(info, ops_.b_scale);
      if (!s) return node.NotSupported("b_scale must be a constant for oneDNN");
      if (s->numel() != 1 && s->numel() != n_)
        return node.NotSupported("b_scale must have 1 or N values");
      for (int64_t j = 0; j < s->numel(); ++j) b_scale_.push_back(s->data<float>()[j]);
      if (Given(types, ops_.bias)) {
        bias_ = ConstantInput(info, ops_.bias);
        if (!bias_ || bias_->numel() != n_) return node.NotSupported("bias must be a constant [N]");
      }
    }
    // Rows known at plan time get a primitive made for them: oneDNN's blocked (brgemm, AMX)
    // kernels need them; with a run-time row count it falls back to a plain gemm.
    int64_t& rows = rows_;
    if (types[0].shape_is_static()) {
      const Shape a = types[0].static_shape();
      rows = 1;
      for (size_t i = 0; i + 1 < a.size(); ++i) rows *= a[i];
      if (rows == 0) rows = DNNL_RUNTIME_DIM_VAL;
    }
    try {
      dnnl::engine& eng = CpuEngine();
      src_md_ = memory::desc({rows, k_}, DnnlType(a_type_), memory::format_tag::ab);
      const memory::desc any_wei({k_, n_}, memory::data_type::s8, memory::format_tag::any);
      dst_md_ = memory::desc({rows, n_}, memory::data_type::s32, memory::format_tag::ab);
      const dnnl::primitive_attr attr = ScratchpadAttr();
      SetOmpThreads(threads_);
      const dnnl::matmul::desc desc(src_md_, any_wei, dst_md_);
      const dnnl::matmul::primitive_desc pd(desc, attr, eng);
      const std::string impl = pd.impl_info_str();
      if (impl.find("ref") != std::string::npos)
        return node.NotSupported("oneDNN has only its reference int8 matmul (", impl, ")");
      scratch_md_ = pd.scratchpad_desc();
      prim_ = dnnl::matmul(pd);
      // B as stored: [K, N] row-major, or [N, K] (transB) read with swapped strides.
      const memory::desc plain_wei({k_, n_}, memory::data_type::s8,
                                   trans_b ? memory::dims{1, k_} : memory::dims{n_, 1});
      // A uint8 B shifted to int8 (a private copy, so no shared cache entry keyed on it).
      Tensor shifted;
      if (shift != 0) {
        shifted = Tensor::Allocate(DType::kInt8, b->shape());
        for (int64_t i = 0; i < b->numel(); ++i)
          shifted.data<int8_t>()[i] = static_cast<int8_t>(b->data<uint8_t>()[i] - shift);
      }
      const Tensor& b8 = shift != 0 ? shifted : *b;
      packed_owner_ = PackConstantWeights(shift != 0 ? nullptr : info.weights, b8, plain_wei,
                                          pd.weights_desc());
      colsum_.assign(static_cast<size_t>(n_), 0);
      const int8_t* bd = b8.data<int8_t>();
      for (int64_t kk = 0; kk < k_; ++kk)
        for (int64_t j = 0; j < n_; ++j) colsum_[j] += bd[trans_b ? j * k_ + kk : kk * n_ + j];
      packed_weights_ = *packed_owner_;
    } catch (const dnnl::error& e) {
      return node.NotSupported("oneDNN: ", e.what());
    }
    return Status::Ok();
  }

  int threads_ = 1;
  Operands ops_;
  DType a_type_ = DType::kUInt8;
  int64_t k_ = 0, n_ = 0;
  std::vector<float> b_scale_;
  std::vector<int32_t> colsum_;  // sum over k of B[k][n] (B shifted to int8)
  std::vector<int32_t> b_zero_;  // B's zero point minus the shift, 1 or N values
  bool has_b_zero_ = false;      // some b_zero_ value is not 0
  std::vector<int32_t> c_;       // QGemm's C, or empty
  float alpha_ = 1.f, y_scale_ = 1.f;
  int32_t y_zero_ = 0;
  DType y_type_ = DType::kInt32;  // int32, float, or QGemm's 8-bit output
  const Tensor* bias_ = nullptr;  // a plan constant: lives as long as the plan
  memory::desc scratch_md_;
  memory packed_weights_;
  std::shared_ptr<const memory> packed_owner_;
  int64_t rows_ = DNNL_RUNTIME_DIM_VAL;  // A's rows when known at plan time
  memory::desc src_md_, dst_md_;         // for those rows
  enum MemoryArg { kScratch, kSrc, kDst };
  MemoryKeys keys_;
  dnnl::matmul prim_;
};

}  // namespace

Status QuantizedMatMulOnednnSupports(const NodeView& node, const std::vector<TypeInfo>& types) {
  const Operands ops = OperandsOf(node);
  if (!CpuHasVnni()) return node.NotSupported("needs a CPU with AVX512-VNNI or AMX");
  if (types.size() <= static_cast<size_t>(ops.b)) return node.NotSupported("needs A and B");
  const TypeInfo& a = types[0];
  const TypeInfo& b = types[ops.b];
  if (node.attr_int("transA", 0) != 0) return node.NotSupported("transA is not supported");
  const bool trans_b = node.attr_int("transB", 0) != 0;
  if (!a.is_tensor() || !Is8BitInt(a.elem) || !a.has_shape || a.rank() < 2)
    return node.NotSupported("needs 8-bit A of rank >= 2");
  if (!a.dims.back().known()) return node.NotSupported("A's last dim must be known");
  if (!b.is_tensor() || !Is8BitInt(b.elem) || !b.shape_is_static() || b.rank() != 2)
    return node.NotSupported("needs 8-bit B [K, N] of static shape");
  const int64_t k = b.static_shape()[trans_b ? 1 : 0], n = b.static_shape()[trans_b ? 0 : 1];
  if (k != a.dims.back().value || k == 0 || n == 0)
    return node.NotSupported("A's last dim must equal B's K (both non-zero)");
  if (ops.c >= 0 && a.rank() != 2) return node.NotSupported("QGemm's A must be a matrix");
  if (Given(types, ops.a_zero) &&
      (!types[ops.a_zero].is_tensor() || types[ops.a_zero].elem != a.elem))
    return node.NotSupported("a_zero_point must have A's type");
  if (ops.to_float) {
    if (!Given(types, ops.a_scale) || !Given(types, ops.b_scale) ||
        types[ops.a_scale].elem != DType::kFloat || types[ops.b_scale].elem != DType::kFloat)
      return node.NotSupported("needs float a_scale and b_scale");
    if (Given(types, ops.bias) && types[ops.bias].elem != DType::kFloat)
      return node.NotSupported("bias must be float");
  }
  return Status::Ok();
}

KernelImpl QuantizedMatMulOnednnImpl(const std::string& name) {
  KernelImpl impl = OnednnImpl(name, QuantizedMatMulOnednnSupports, QuantizedMatMulOnednn::Create);
  // oneDNN's int8 kernels are exact only with VNNI or AMX (CpuHasVnni): below, the planner
  // reports "runs at avx512_vnni, above the ISA cap".
  impl.isa.min = IsaLevel::kAvx512Vnni;
  return impl;
}

}  // namespace onyx::kernels::x86
