// MatMulInteger and com.microsoft MatMulIntegerToFloat on oneDNN's int8 matmul. B is packed
// once (int8 with a zero zero point: oneDNN takes no other). oneDNN computes the raw products
// sum_k A[r][k] B[k][n] in int32, written into Y's own buffer; an epilogue subtracts A's zero
// point times B's column sums and, for MatMulIntegerToFloat, computes float(acc) * a_scale *
// b_scale[n] + bias[n] in place, as ONNX Runtime does. A's zero point and scale are read per run
// (DynamicQuantizeLinear computes them). oneDNN 2.6 runs its blocked AMX/VNNI kernels (brgemm)
// only without run-time zero points or output scales: with them it fell back to a plain gemm
// three times as slow (BERT-base's 768x768 products at 128 rows: 0.74 against 0.25 ms).
#include "kernels/x86/qmatmul_onednn.h"

#include <cmath>

#include "kernels/x86/onednn_context.h"

namespace onyx::kernels::x86 {
namespace {

using dnnl::memory;

bool Is8Bit(DType t) {
  return t == DType::kUInt8 || t == DType::kInt8;
}

// Where each operand is among the node's inputs (-1: the op has none).
struct Operands {
  int a_scale = -1, b_scale = -1, a_zero = -1, b_zero = -1, bias = -1;
  bool to_float = false;
};

Operands OperandsOf(const NodeView& node) {
  if (node.op_type() == "MatMulIntegerToFloat") return {2, 3, 4, 5, 6, true};
  return {-1, -1, 2, 3, -1, false};  // MatMulInteger
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

  bool packed_input(size_t i) const override { return i == 1; }

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
      for (float& m : multiplier) m = a_scale * m;  // in float, as ONNX Runtime computes it
    }
    Tensor y = ctx.Output(0, ops_.to_float ? DType::kFloat : DType::kInt32, y_shape);
    if (rows == 0) return Status::Ok();
    try {
      dnnl::stream& stream = ThreadStream();
      dnnl::engine& eng = CpuEngine();
      const memory::desc src_md({rows, k_}, DnnlType(a_type_), memory::format_tag::ab);
      const memory::desc dst_md({rows, n_}, memory::data_type::s32, memory::format_tag::ab);
      Execute(prim_, stream,
              {{DNNL_ARG_SRC, memory(src_md, eng, const_cast<void*>(a.raw_data()))},
               {DNNL_ARG_WEIGHTS, packed_weights_},
               {DNNL_ARG_DST, memory(dst_md, eng, y.raw_data())},
               {DNNL_ARG_SCRATCHPAD, ThreadScratchpad(scratch_md_, keys_[kScratch])}});
      stream.wait();
    } catch (const dnnl::error& e) {
      return FromDnnlError(node, e);
    }
    Epilogue(static_cast<int32_t*>(y.raw_data()), rows, a_zero, multiplier);
    return Status::Ok();
  }

 private:
  // acc -= a_zero * colsum[n]; to float: float(acc) * multiplier[n] + bias[n], in place.
  void Epilogue(int32_t* y, int64_t rows, int32_t a_zero,
                const std::vector<float>& multiplier) const {
    const int64_t n = n_;
    const bool to_float = ops_.to_float, per_column = multiplier.size() > 1;
    const float* bias = bias_ ? bias_->data<float>() : nullptr;
    std::vector<int32_t> offset(colsum_.size());
    for (size_t j = 0; j < offset.size(); ++j) offset[j] = a_zero * colsum_[j];
    const int32_t* off = offset.data();
    const float* mul = multiplier.empty() ? nullptr : multiplier.data();
#pragma omp parallel for num_threads(threads_) if (rows * n >= (1 << 15))
    for (int64_t r = 0; r < rows; ++r) {
      int32_t* row = y + r * n;
      if (!to_float) {
        if (a_zero != 0)
          for (int64_t j = 0; j < n; ++j) row[j] -= off[j];
        continue;
      }
      float* out = reinterpret_cast<float*>(row);
      for (int64_t j = 0; j < n; ++j) {
        const float v = static_cast<float>(row[j] - off[j]) * mul[per_column ? j : 0];
        out[j] = bias ? v + bias[j] : v;
      }
    }
  }

  static memory::data_type DnnlType(DType t) {
    return t == DType::kUInt8 ? memory::data_type::u8 : memory::data_type::s8;
  }

  Status Init(const NodeView& node, const std::vector<TypeInfo>& types,
              const KernelCreateInfo& info) {
    threads_ = info.threads;
    ops_ = OperandsOf(node);
    a_type_ = types[0].elem;
    const Tensor* b = ConstantInput(info, 1);
    if (!b) return node.NotSupported("input 1 (B) must be a constant for oneDNN");
    k_ = b->dim(0);
    n_ = b->dim(1);
    if (ops_.b_zero >= 0 && Given(types, ops_.b_zero)) {
      const Tensor* z = ConstantInput(info, ops_.b_zero);
      if (!z) return node.NotSupported("b_zero_point must be a constant for oneDNN");
      const auto* bytes = static_cast<const uint8_t*>(z->raw_data());
      for (size_t i = 0; i < z->nbytes(); ++i)
        if (bytes[i] != 0) return node.NotSupported("oneDNN takes int8 B without a zero point");
    }
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
    int64_t rows = DNNL_RUNTIME_DIM_VAL;
    if (types[0].shape_is_static()) {
      const Shape a = types[0].static_shape();
      rows = 1;
      for (size_t i = 0; i + 1 < a.size(); ++i) rows *= a[i];
      if (rows == 0) rows = DNNL_RUNTIME_DIM_VAL;
    }
    try {
      dnnl::engine& eng = CpuEngine();
      const memory::desc src_md({rows, k_}, DnnlType(a_type_), memory::format_tag::ab);
      const memory::desc any_wei({k_, n_}, memory::data_type::s8, memory::format_tag::any);
      const memory::desc dst_md({rows, n_}, memory::data_type::s32, memory::format_tag::ab);
      const dnnl::primitive_attr attr = ScratchpadAttr();
      SetOmpThreads(threads_);
      const dnnl::matmul::desc desc(src_md, any_wei, dst_md);
      const dnnl::matmul::primitive_desc pd(desc, attr, eng);
      const std::string impl = pd.impl_info_str();
      if (impl.find("ref") != std::string::npos)
        return node.NotSupported("oneDNN has only its reference int8 matmul (", impl, ")");
      scratch_md_ = pd.scratchpad_desc();
      prim_ = dnnl::matmul(pd);
      const memory::desc plain_wei({k_, n_}, memory::data_type::s8, memory::format_tag::ab);
      packed_owner_ = PackConstantWeights(info.weights, *b, plain_wei, pd.weights_desc());
      colsum_.assign(static_cast<size_t>(n_), 0);
      for (int64_t kk = 0; kk < k_; ++kk)
        for (int64_t j = 0; j < n_; ++j) colsum_[j] += b->data<int8_t>()[kk * n_ + j];
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
  std::vector<int32_t> colsum_;   // sum over k of B[k][n]
  const Tensor* bias_ = nullptr;  // a plan constant: lives as long as the plan
  memory::desc scratch_md_;
  memory packed_weights_;
  std::shared_ptr<const memory> packed_owner_;
  enum MemoryArg { kScratch };
  MemoryKeys keys_;
  dnnl::matmul prim_;
};

}  // namespace

Status QuantizedMatMulOnednnSupports(const NodeView& node, const std::vector<TypeInfo>& types) {
  const Operands ops = OperandsOf(node);
  if (types.size() < 2) return node.NotSupported("needs A and B");
  const TypeInfo& a = types[0];
  const TypeInfo& b = types[1];
  if (!a.is_tensor() || !Is8Bit(a.elem) || !a.has_shape || a.rank() < 2)
    return node.NotSupported("needs 8-bit A of rank >= 2");
  if (!a.dims.back().known()) return node.NotSupported("A's last dim must be known");
  if (!b.is_tensor() || b.elem != DType::kInt8 || !b.shape_is_static() || b.rank() != 2)
    return node.NotSupported("needs int8 B [K, N] of static shape");
  if (b.static_shape()[0] != a.dims.back().value || b.static_shape()[0] == 0 ||
      b.static_shape()[1] == 0)
    return node.NotSupported("A's last dim must equal B's rows (both non-zero)");
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
  return OnednnImpl(name, QuantizedMatMulOnednnSupports, QuantizedMatMulOnednn::Create);
}

}  // namespace onyx::kernels::x86
