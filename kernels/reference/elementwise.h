// Reference kernels of the elementwise family (ai.onnx): unary math, binary arithmetic, comparison,
// logic and bitwise ops with multidirectional broadcasting, variadic Sum/Mean/Max/Min, Where,
// Clip and Cast/CastLike. Each is a stateless KernelFn that reads its attributes per run and
// branches on the node's opset where ONNX changed the semantics.
//
// Contract shared by all: inputs and outputs are dense row-major tensors; outputs are written
// element by element in index order, so running in place on a same-shape input is safe (for the
// variadic ops only on input 0 or 1: later inputs are read after the output is first written).
// Float16/bfloat16 compute through float, float8/float4 through Cast only.
#pragma once

#include <string>

#include "kernels/kernel.h"

namespace onyx::kernels::reference {

// ---- unary math (elementwise_unary.cc); output has the input's type unless noted ----
Status AbsRef(KernelContext& ctx);
Status NegRef(KernelContext& ctx);
Status ReciprocalRef(KernelContext& ctx);
Status FloorRef(KernelContext& ctx);
Status CeilRef(KernelContext& ctx);
Status RoundRef(KernelContext& ctx);  // half to even
Status SqrtRef(KernelContext& ctx);
Status ExpRef(KernelContext& ctx);
Status LogRef(KernelContext& ctx);
Status SinRef(KernelContext& ctx);
Status CosRef(KernelContext& ctx);
Status TanRef(KernelContext& ctx);
Status AsinRef(KernelContext& ctx);
Status AcosRef(KernelContext& ctx);
Status AtanRef(KernelContext& ctx);
Status SinhRef(KernelContext& ctx);
Status CoshRef(KernelContext& ctx);
Status AsinhRef(KernelContext& ctx);
Status AcoshRef(KernelContext& ctx);
Status AtanhRef(KernelContext& ctx);
Status ErfRef(KernelContext& ctx);
Status SignRef(KernelContext& ctx);
Status IsNaNRef(KernelContext& ctx);  // bool output
Status IsInfRef(KernelContext& ctx);  // bool output; detect_negative / detect_positive
Status NotRef(KernelContext& ctx);
Status BitwiseNotRef(KernelContext& ctx);

// ---- binary with broadcasting (elementwise_binary.cc); numpy rules from opset 7, the legacy
// `broadcast`/`axis` attributes before ----
Status AddRef(KernelContext& ctx);
Status SubRef(KernelContext& ctx);
Status MulRef(KernelContext& ctx);
// Integer division truncates toward zero; x / 0 is 0 for integers (as numpy).
Status DivRef(KernelContext& ctx);
// Base and exponent may have different types; the output has the base's type.
Status PowRef(KernelContext& ctx);
// fmod=0: result takes the divisor's sign (Python %); fmod=1: the dividend's (C fmod). x % 0 = 0.
Status ModRef(KernelContext& ctx);
Status BitShiftRef(KernelContext& ctx);  // shifts >= the bit width give 0
Status BitwiseAndRef(KernelContext& ctx);
Status BitwiseOrRef(KernelContext& ctx);
Status BitwiseXorRef(KernelContext& ctx);
Status AndRef(KernelContext& ctx);
Status OrRef(KernelContext& ctx);
Status XorRef(KernelContext& ctx);
Status EqualRef(KernelContext& ctx);  // strings too (opset 19)
Status GreaterRef(KernelContext& ctx);
Status LessRef(KernelContext& ctx);
Status GreaterOrEqualRef(KernelContext& ctx);
Status LessOrEqualRef(KernelContext& ctx);

// ---- variadic and selection (elementwise_variadic.cc) ----
Status MaxRef(KernelContext& ctx);  // NaN propagates
Status MinRef(KernelContext& ctx);
Status SumRef(KernelContext& ctx);
Status MeanRef(KernelContext& ctx);
Status WhereRef(KernelContext& ctx);
// min/max attributes before opset 11, optional scalar inputs from 11. min > max gives max.
Status ClipRef(KernelContext& ctx);

// ---- conversion (elementwise_cast.cc) ----
Status CastRef(KernelContext& ctx);
Status CastLikeRef(KernelContext& ctx);

// Converts n elements of `src` (type `from`) into `dst` (type `to`) with ONNX Cast rules:
// float -> integer truncates toward zero and wraps like a two's complement narrowing, integer ->
// narrower integer (int4/uint4/int2/uint2 included) keeps the low bits, float8 honours `saturate`,
// float8e8m0 uses `round_mode` ("up", "down", "nearest"), strings parse/print numbers.
Status CastElements(DType from, const void* src, DType to, void* dst, int64_t n, bool saturate,
                    const std::string& round_mode);

}  // namespace onyx::kernels::reference
