// com.onyx QLinearLookup on AVX512-VBMI: the 256-byte table sits in four zmm registers; two
// vpermi2b select from its halves by the index's low 7 bits and the index's top bit picks the
// half, 64 bytes per three instructions (the reference loop takes about one cycle per byte:
// BERT's [128, 3072] GELU tables 0.39 M bytes). Bitwise the reference's result by construction.
// CPUs without VBMI (before Ice Lake / Zen 4) run the reference kernel.
#include "kernels/x86/qlookup_vbmi.h"

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <memory>

#include "kernels/op_helpers.h"
#include "kernels/reference/fused.h"

namespace onyx::kernels::x86 {
namespace {

__attribute__((target("avx512f,avx512bw,avx512vbmi,bmi2"))) void LookupVbmi(const uint8_t* src,
                                                                            uint8_t* dst, int64_t n,
                                                                            const uint8_t* table) {
  const __m512i t0 = _mm512_loadu_si512(table);
  const __m512i t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128);
  const __m512i t3 = _mm512_loadu_si512(table + 192);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i idx = _mm512_loadu_si512(src + i);
    const __m512i lo = _mm512_permutex2var_epi8(t0, idx, t1);  // entries idx & 127
    const __m512i hi = _mm512_permutex2var_epi8(t2, idx, t3);  // entries 128 + (idx & 127)
    _mm512_storeu_si512(dst + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), lo, hi));
  }
  if (i < n) {  // the tail through masked loads and stores: no read or write past n
    const __mmask64 m = _bzhi_u64(~0ULL, static_cast<unsigned>(n - i));
    const __m512i idx = _mm512_maskz_loadu_epi8(m, src + i);
    const __m512i lo = _mm512_permutex2var_epi8(t0, idx, t1);
    const __m512i hi = _mm512_permutex2var_epi8(t2, idx, t3);
    _mm512_mask_storeu_epi8(dst + i, m, _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), lo, hi));
  }
}

bool CpuHasVbmi() {
  return Cpu().avx512vbmi && Cpu().bmi2;
}

class QLinearLookupVbmiKernel : public Kernel {
 public:
  Status Run(KernelContext& ctx) const override {
    const int threads = ctx.intra_op_threads();
    return RunQLinearLookup(
        ctx, [&](const uint8_t* src, uint8_t* dst, int64_t n, const uint8_t* t) {
          ParallelFor(n, 1, threads,
                      [&](int64_t b, int64_t e) { LookupVbmi(src + b, dst + b, e - b, t); });
        });
  }
};

}  // namespace

KernelImpl QLinearLookupVbmiImpl(const std::string& name) {
  KernelImpl impl;
  impl.name = name;
  impl.isa.min = IsaLevel::kAvx512;  // and VBMI, which no level implies: checked below
  impl.supports = [](const NodeView& node, const std::vector<TypeInfo>&) {
    if (!CpuHasVbmi()) return node.NotSupported("needs a CPU with AVX512-VBMI");
    return Status::Ok();
  };
  impl.create = [](const NodeView&,
                   const std::vector<TypeInfo>&) -> StatusOr<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(new QLinearLookupVbmiKernel());
  };
  return impl;
}

}  // namespace onyx::kernels::x86
