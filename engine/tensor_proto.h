// Conversions between ONNX protobuf messages (TensorProto, SequenceProto, OptionalProto, TypeProto)
// and onyx values: every initializer encoding in, the canonical encoding out.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "memory/mapped_file.h"
#include "onyx/status.h"
#include "onyx/tensor.h"
#include "onyx/value.h"

namespace onnx {
class TensorProto;
class TypeProto;
class SequenceProto;
class OptionalProto;
class MapProto;
}  // namespace onnx

namespace onyx::engine {

// Where a tensor's external data may be read from: the model's directory (empty = external data
// is not allowed, e.g. a model loaded from bytes).
struct ExternalDataContext {
  std::string model_dir;
  // Ceiling on the bytes of any one tensor read (Limits::max_tensor_bytes; 0: none). The loader
  // sets it from the session's limits; checked before a buffer is allocated.
  uint64_t max_tensor_bytes = 0;
  // The model file the loader read, when it left large initializers' bytes there
  // (engine/weights_in_file.h): tensors marked kInModelFileKey are read from it.
  std::shared_ptr<const memory::RegularFile> model_file;
};

// Decodes raw_data (little-endian; sub-byte types packed), the typed repeated fields (float16 and
// bfloat16 in int32_data, ...), string_data and external data. Sub-byte types are unpacked to one
// byte per element. Errors name the tensor and say what was expected and found.
StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto, const ExternalDataContext& ext);
// Bytes per element when a TensorProto's raw_data is its tensor's storage as it is: any known
// type but strings and the sub-byte ones (packed in files); 0 otherwise.
uint64_t RawStorageElementBytes(int32_t data_type);
// The same, but a raw_data buffer that already is the tensor's bytes is moved out of `proto`
// into the tensor instead of copied (model loading: the weights are then held once).
StatusOr<Tensor> TakeTensorFromProto(onnx::TensorProto* proto, const ExternalDataContext& ext);
// Encodes as raw_data (strings as string_data), the way onnx.numpy_helper.from_array does.
void TensorToProto(const Tensor& t, const std::string& name, onnx::TensorProto* proto);

TypeInfo TypeFromProto(const onnx::TypeProto& proto);

StatusOr<Value> ValueFromSequenceProto(const onnx::SequenceProto& proto);
StatusOr<Value> ValueFromOptionalProto(const onnx::OptionalProto& proto);
void ValueToSequenceProto(const Value& v, const std::string& name, onnx::SequenceProto* proto);
void ValueToOptionalProto(const Value& v, const std::string& name, onnx::OptionalProto* proto);
// Maps (ai.onnx.ml): keys in keys / string_keys, values as a sequence of scalar tensors, the way
// onnx.numpy_helper.from_dict writes them.
StatusOr<Value> ValueFromMapProto(const onnx::MapProto& proto);
void ValueToMapProto(const Value& m, const std::string& name, onnx::MapProto* proto);

// Reads a .pb file holding a TensorProto, SequenceProto (of tensors or maps), MapProto or
// OptionalProto. `hint` is the expected
// type (from the graph input); kUnknown means guess: tensor first, then sequence, then optional.
StatusOr<Value> ReadValueFile(const std::string& path, const TypeInfo& hint);
// Writes a value as the matching proto; `type` picks OptionalProto for optional-typed outputs.
Status WriteValueFile(const std::string& path, const std::string& name, const Value& v,
                      const TypeInfo& type);

}  // namespace onyx::engine
