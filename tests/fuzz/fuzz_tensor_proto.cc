// libFuzzer harness: TensorProto / SequenceProto / OptionalProto bytes -> value, the way
// engine::ReadValueFile reads a .pb feed (in memory instead of from a file). A tensor that
// decodes must survive a round trip through TensorToProto unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "engine/tensor_proto.h"
#include "onnx/onnx-data.pb.h"
#include "onnx/onnx-ml.pb.h"

namespace {

using onyx::DType;
using onyx::Tensor;

bool SameTensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.dtype() == DType::kString) {
    for (int64_t i = 0; i < a.numel(); ++i)
      if (a.strings()[i] != b.strings()[i]) return false;
    return true;
  }
  return a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
}

void CheckTensor(const std::string& bytes) {
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) return;
  auto tensor = onyx::engine::TensorFromProto(proto, onyx::engine::ExternalDataContext{});
  if (!tensor.ok()) return;
  onnx::TensorProto again;
  onyx::engine::TensorToProto(*tensor, proto.name(), &again);
  auto back = onyx::engine::TensorFromProto(again, onyx::engine::ExternalDataContext{});
  if (!back.ok() || !SameTensor(*tensor, *back)) {
    std::fprintf(stderr, "round trip changed the tensor: %s\n",
                 back.ok() ? "values differ" : back.status().ToString().c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  CheckTensor(bytes);
  // The same bytes as the other two kinds a feed file may hold.
  onnx::SequenceProto sequence;
  if (sequence.ParseFromString(bytes)) (void)onyx::engine::ValueFromSequenceProto(sequence);
  onnx::OptionalProto optional;
  if (optional.ParseFromString(bytes)) (void)onyx::engine::ValueFromOptionalProto(optional);
  return 0;
}
