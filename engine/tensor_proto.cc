// TensorProto/SequenceProto/OptionalProto <-> onyx Tensor/Value.
#include "engine/tensor_proto.h"

#include <cctype>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/weights_in_file.h"
#include "memory/mapped_file.h"
#include "onnx/onnx-data.pb.h"
#include "onnx/onnx-ml.pb.h"

namespace onyx::engine {
namespace {

bool IsSubByte(DType t) {
  return t == DType::kInt4 || t == DType::kUInt4 || t == DType::kFloat4E2M1 || t == DType::kInt2 ||
         t == DType::kUInt2;
}
int BitsPerElement(DType t) {
  return (t == DType::kInt2 || t == DType::kUInt2) ? 2 : 4;
}

// Unpacks n sub-byte elements from packed bytes (low bits first) into one byte each, sign-extending
// the signed types.
void UnpackSubByte(DType t, const uint8_t* packed, size_t packed_bytes, int64_t n, uint8_t* dst) {
  const int bits = BitsPerElement(t);
  const int per_byte = 8 / bits;
  const uint8_t mask = static_cast<uint8_t>((1u << bits) - 1);
  for (int64_t i = 0; i < n; ++i) {
    const size_t byte = static_cast<size_t>(i / per_byte);
    uint8_t v = byte < packed_bytes ? (packed[byte] >> ((i % per_byte) * bits)) & mask : 0;
    if (t == DType::kInt4 || t == DType::kInt2) {
      const int sign = 1 << (bits - 1);
      dst[i] = static_cast<uint8_t>(static_cast<int8_t>((v ^ sign) - sign));
    } else {
      dst[i] = v;
    }
  }
}

size_t PackedBytes(DType t, int64_t n) {
  const int per_byte = 8 / BitsPerElement(t);
  return static_cast<size_t>(n / per_byte + (n % per_byte != 0));  // no n + per_byte overflow
}

std::string TensorLabel(const onnx::TensorProto& p) {
  return p.name().empty() ? std::string("tensor") : "tensor '" + p.name() + "'";
}

// A bool is one byte that kernels read as C++ bool, where only 0 and 1 are valid values: any
// other byte a file holds means true (as numpy and ONNX Runtime read it) and becomes 1.
void NormalizeBools(uint8_t* data, size_t n) {
  for (size_t i = 0; i < n; ++i) data[i] = data[i] != 0;
}

// Fills `out` (already allocated) from a raw little-endian byte buffer.
Status FillFromBytes(const onnx::TensorProto& p, const uint8_t* bytes, size_t size, Tensor& out) {
  const DType t = out.dtype();
  const int64_t n = out.numel();
  if (IsSubByte(t)) {
    const size_t need = PackedBytes(t, n);
    if (size != need)
      return InvalidModel(TensorLabel(p), " of type ", DTypeName(t), " and shape ",
                          ShapeToString(out.shape()), " needs ", need, " bytes of data, found ",
                          size);
    UnpackSubByte(t, bytes, size, n, out.data<uint8_t>());
    return Status::Ok();
  }
  if (size != out.nbytes())
    return InvalidModel(TensorLabel(p), " of type ", DTypeName(t), " and shape ",
                        ShapeToString(out.shape()), " needs ", out.nbytes(),
                        " bytes of data, found ", size);
  if (size) std::memcpy(out.raw_data(), bytes, size);
  if (t == DType::kBool) NormalizeBools(out.data<uint8_t>(), size);
  return Status::Ok();
}

// Resolves an external-data location inside the model directory; anything that leaves it (absolute
// paths, "..", symlinks pointing outside) is rejected.
StatusOr<std::string> ResolveExternalPath(const onnx::TensorProto& p, const std::string& location,
                                          const ExternalDataContext& ext) {
  if (ext.model_dir.empty())
    return InvalidModel(TensorLabel(p), " uses external data '", location,
                        "' but the model was not loaded from a file, so there is no directory to "
                        "read it from");
  if (location.empty())
    return InvalidModel(TensorLabel(p), " has external data without a location");
  if (location[0] == '/' || location.find('\\') != std::string::npos)
    return InvalidModel(TensorLabel(p), " has external data location '", location,
                        "': absolute paths are not allowed; it must be relative to the model's "
                        "directory");
  std::stringstream ss(location);
  std::string part;
  while (std::getline(ss, part, '/'))
    if (part == "..")
      return InvalidModel(TensorLabel(p), " has external data location '", location,
                          "', which leaves the model's directory");
  char dir_real[PATH_MAX], file_real[PATH_MAX];
  if (!realpath(ext.model_dir.c_str(), dir_real))
    return IoError("cannot resolve model directory '", ext.model_dir, "'");
  const std::string full = ext.model_dir + "/" + location;
  if (!realpath(full.c_str(), file_real))
    return NotFound(TensorLabel(p), ": external data file '", location, "' not found in '",
                    ext.model_dir, "'");
  std::string d(dir_real), f(file_real);
  if (f.compare(0, d.size() + 1, d + "/") != 0)
    return InvalidModel(TensorLabel(p), " has external data location '", location,
                        "', which resolves outside the model's directory");
  return f;
}

// The tensor `p` declares (type t, `shape` of `count` elements, `bytes` unpacked), read from its
// external file: location, range and size are all checked before the buffer is allocated.
StatusOr<Tensor> ReadExternal(const onnx::TensorProto& p, const ExternalDataContext& ext, DType t,
                              const Shape& shape, int64_t count, uint64_t bytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  bool in_model_file = false;
  for (const auto& kv : p.external_data()) {
    const std::string& k = kv.key();
    char* end = nullptr;
    if (k == "location") {
      location = kv.value();
    } else if (k == kInModelFileKey) {
      in_model_file = ext.model_file != nullptr;
    } else if (k == "offset" || k == "length") {
      long long v = std::strtoll(kv.value().c_str(), &end, 10);
      if (kv.value().empty() || *end != '\0' || v < 0)
        return InvalidModel(TensorLabel(p), " has external data ", k, " '", kv.value(),
                            "'; expected a non-negative integer");
      (k == "offset" ? offset : length) = v;
    }
  }
  if (t == DType::kString)
    return InvalidModel(TensorLabel(p), ": string tensors cannot use external data");
  // Bytes the loader left in the model file (engine/weights_in_file.h) come from the file it
  // has open; any other location is resolved and opened here.
  std::shared_ptr<const memory::RegularFile> file = in_model_file ? ext.model_file : nullptr;
  if (in_model_file) {
    location = "the model file";
  } else {
    ONYX_ASSIGN_OR_RETURN(std::string path, ResolveExternalPath(p, location, ext));
    auto opened = memory::RegularFile::Open(path);
    if (!opened.ok())
      return opened.status().WithContext(TensorLabel(p) + ": external data '" + location + "': ");
    file = std::make_shared<const memory::RegularFile>(std::move(opened).value());
  }
  const uint64_t size = file->size();
  if (static_cast<uint64_t>(offset) > size)
    return InvalidModel(TensorLabel(p), ": external data offset ", offset, " is past the end of '",
                        location, "' (", size, " bytes)");
  if (length < 0) length = static_cast<int64_t>(size - offset);
  if (static_cast<uint64_t>(offset) + static_cast<uint64_t>(length) > size)
    return InvalidModel(TensorLabel(p), ": external data [", offset, ", ",
                        static_cast<uint64_t>(offset) + static_cast<uint64_t>(length),
                        ") is past the end of '", location, "' (", size, " bytes)");
  // The bytes are copied, not mapped (see memory/mapped_file.h): the session must not change or
  // fault when the file does later. Checked against the tensor before anything is read.
  const bool packed = IsSubByte(t);
  const uint64_t need = packed ? PackedBytes(t, count) : bytes;
  if (static_cast<uint64_t>(length) != need)
    return InvalidModel(TensorLabel(p), " of type ", DTypeName(t), " and shape ",
                        ShapeToString(shape), " needs ", need, " bytes of data, found ", length,
                        " in external data '", location, "'");
  auto read = [&](void* dst) {
    Status s = file->ReadAt(static_cast<uint64_t>(offset), dst, need);
    return s.ok() ? s : s.WithContext(TensorLabel(p) + ": external data '" + location + "': ");
  };
  Tensor out = Tensor::AllocateUninitialized(t, shape);
  if (need == 0) return out;
  // Read straight into the tensor's own buffer when the bytes are its storage: one copy only.
  if (!packed) {
    ONYX_RETURN_IF_ERROR(read(out.raw_data()));
    if (t == DType::kBool) NormalizeBools(out.data<uint8_t>(), need);
    return out;
  }
  std::vector<uint8_t> packed_bytes(need);
  ONYX_RETURN_IF_ERROR(read(packed_bytes.data()));
  ONYX_RETURN_IF_ERROR(FillFromBytes(p, packed_bytes.data(), packed_bytes.size(), out));
  return out;
}

template <typename Src>
Status CheckFieldSize(const onnx::TensorProto& p, const google::protobuf::RepeatedField<Src>& field,
                      int64_t n, int64_t per_elem, const char* field_name) {
  int64_t need = 0;
  if (!CheckedMul(n, per_elem, &need) || static_cast<int64_t>(field.size()) != need)
    return InvalidModel(TensorLabel(p), " of shape ",
                        ShapeToString(Shape(p.dims().begin(), p.dims().end())), " needs ", n,
                        per_elem > 1 ? StrCat(" x ", per_elem) : std::string(), " values in ",
                        field_name, ", found ", field.size());
  return Status::Ok();
}

// The size check is CheckFieldSize, done before `out` was allocated.
template <typename Src, typename Dst>
Status CopyField(const onnx::TensorProto& p, const google::protobuf::RepeatedField<Src>& field,
                 int64_t per_elem, Tensor& out, const char* field_name) {
  const int64_t n = out.numel();
  ONYX_RETURN_IF_ERROR(CheckFieldSize(p, field, n, per_elem, field_name));
  Dst* dst = out.data<Dst>();
  for (int64_t i = 0; i < n * per_elem; ++i) dst[i] = static_cast<Dst>(field.Get(i));
  return Status::Ok();
}

// Checks that the proto holds exactly the data that `n` elements of `t` need (raw_data bytes,
// the typed field's values, string_data entries), without allocating anything. External data
// is checked against its file by FillFromExternal.
Status CheckDataPresent(const onnx::TensorProto& p, DType t, int64_t n, uint64_t bytes) {
  if (p.has_raw_data()) {
    if (t == DType::kString)
      return InvalidModel(TensorLabel(p), ": string tensors cannot use raw_data");
    const uint64_t need = IsSubByte(t) ? PackedBytes(t, n) : bytes;
    if (p.raw_data().size() != need)
      return InvalidModel(TensorLabel(p), " of type ", DTypeName(t), " and shape ",
                          ShapeToString(Shape(p.dims().begin(), p.dims().end())), " needs ", need,
                          " bytes of data, found ", p.raw_data().size());
    return Status::Ok();
  }
  switch (t) {
    case DType::kFloat:
      return CheckFieldSize(p, p.float_data(), n, 1, "float_data");
    case DType::kComplex64:
      return CheckFieldSize(p, p.float_data(), n, 2, "float_data");
    case DType::kDouble:
      return CheckFieldSize(p, p.double_data(), n, 1, "double_data");
    case DType::kComplex128:
      return CheckFieldSize(p, p.double_data(), n, 2, "double_data");
    case DType::kInt64:
      return CheckFieldSize(p, p.int64_data(), n, 1, "int64_data");
    case DType::kUInt32:
    case DType::kUInt64:
      return CheckFieldSize(p, p.uint64_data(), n, 1, "uint64_data");
    case DType::kInt4:
    case DType::kUInt4:
    case DType::kFloat4E2M1:
    case DType::kInt2:
    case DType::kUInt2:
      if (static_cast<size_t>(p.int32_data_size()) != PackedBytes(t, n))
        return InvalidModel(TensorLabel(p), " of shape ",
                            ShapeToString(Shape(p.dims().begin(), p.dims().end())), " needs ",
                            PackedBytes(t, n), " packed values in int32_data, found ",
                            p.int32_data_size());
      return Status::Ok();
    case DType::kString:
      if (p.string_data_size() != n)
        return InvalidModel(TensorLabel(p), " of shape ",
                            ShapeToString(Shape(p.dims().begin(), p.dims().end())), " needs ", n,
                            " values in string_data, found ", p.string_data_size());
      return Status::Ok();
    default:  // the int32_data types; anything else is reported unsupported by the caller
      return CheckFieldSize(p, p.int32_data(), n, 1, "int32_data");
  }
}

}  // namespace

StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& p, const ExternalDataContext& ext) {
  if (!IsKnownDType(p.data_type()))
    return InvalidModel(TensorLabel(p), " has unknown data type ", p.data_type());
  const DType t = static_cast<DType>(p.data_type());
  Shape shape(p.dims().begin(), p.dims().end());
  for (int64_t d : shape)
    if (d < 0)
      return InvalidModel(TensorLabel(p), " has negative dim in shape ", ShapeToString(shape));
  if (p.has_segment())
    return Unsupported(TensorLabel(p), " is segmented, which onyx does not read");
  // Validate before allocating: dims are free to declare, so the size is computed with checked
  // arithmetic, held against the ceiling and against the data actually present first.
  int64_t count = 0;
  uint64_t bytes = 0;
  if (!CheckedElementCount(shape, &count) || !CheckedByteSize(t, count, &bytes))
    return InvalidModel(TensorLabel(p), " of type ", DTypeName(t), " has shape ",
                        ShapeToString(shape), ", whose size does not fit 64 bits");
  if (ext.max_tensor_bytes != 0 && bytes > ext.max_tensor_bytes)
    return LimitExceeded(TensorLabel(p), " of type ", DTypeName(t), " and shape ",
                         ShapeToString(shape), " needs ", bytes, " bytes, more than the limit of ",
                         ext.max_tensor_bytes,
                         " bytes (raise it with SessionOptions::limits.max_tensor_bytes or "
                         "ONYX_MAX_TENSOR_BYTES)");
  if (p.data_location() == onnx::TensorProto::EXTERNAL)
    return ReadExternal(p, ext, t, shape, count, bytes);
  ONYX_RETURN_IF_ERROR(CheckDataPresent(p, t, count, bytes));
  // Raw bytes overwrite the whole buffer (or fail), so it need not be zeroed first.
  Tensor out =
      p.has_raw_data() ? Tensor::AllocateUninitialized(t, shape) : Tensor::Allocate(t, shape);
  const int64_t n = out.numel();

  if (p.has_raw_data()) {
    if (t == DType::kString)
      return InvalidModel(TensorLabel(p), ": string tensors cannot use raw_data");
    const std::string& raw = p.raw_data();
    ONYX_RETURN_IF_ERROR(
        FillFromBytes(p, reinterpret_cast<const uint8_t*>(raw.data()), raw.size(), out));
    return out;
  }
  switch (t) {
    case DType::kFloat:
      ONYX_RETURN_IF_ERROR((CopyField<float, float>(p, p.float_data(), 1, out, "float_data")));
      return out;
    case DType::kComplex64:
      ONYX_RETURN_IF_ERROR((CopyField<float, float>(p, p.float_data(), 2, out, "float_data")));
      return out;
    case DType::kDouble:
      ONYX_RETURN_IF_ERROR((CopyField<double, double>(p, p.double_data(), 1, out, "double_data")));
      return out;
    case DType::kComplex128:
      ONYX_RETURN_IF_ERROR((CopyField<double, double>(p, p.double_data(), 2, out, "double_data")));
      return out;
    case DType::kInt64:
      ONYX_RETURN_IF_ERROR((CopyField<int64_t, int64_t>(p, p.int64_data(), 1, out, "int64_data")));
      return out;
    case DType::kUInt32:
      ONYX_RETURN_IF_ERROR(
          (CopyField<uint64_t, uint32_t>(p, p.uint64_data(), 1, out, "uint64_data")));
      return out;
    case DType::kUInt64:
      ONYX_RETURN_IF_ERROR(
          (CopyField<uint64_t, uint64_t>(p, p.uint64_data(), 1, out, "uint64_data")));
      return out;
    case DType::kInt32:
      ONYX_RETURN_IF_ERROR((CopyField<int32_t, int32_t>(p, p.int32_data(), 1, out, "int32_data")));
      return out;
    case DType::kInt16:
      ONYX_RETURN_IF_ERROR((CopyField<int32_t, int16_t>(p, p.int32_data(), 1, out, "int32_data")));
      return out;
    case DType::kInt8:
      ONYX_RETURN_IF_ERROR((CopyField<int32_t, int8_t>(p, p.int32_data(), 1, out, "int32_data")));
      return out;
    case DType::kUInt16:
    case DType::kFloat16:
    case DType::kBFloat16:
      ONYX_RETURN_IF_ERROR((CopyField<int32_t, uint16_t>(p, p.int32_data(), 1, out, "int32_data")));
      return out;
    case DType::kUInt8:
    case DType::kBool:
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
    case DType::kFloat8E8M0:
      ONYX_RETURN_IF_ERROR((CopyField<int32_t, uint8_t>(p, p.int32_data(), 1, out, "int32_data")));
      if (t == DType::kBool)
        for (int64_t i = 0; i < n; ++i) out.data<uint8_t>()[i] = out.data<uint8_t>()[i] != 0;
      return out;
    case DType::kInt4:
    case DType::kUInt4:
    case DType::kFloat4E2M1:
    case DType::kInt2:
    case DType::kUInt2: {
      // One packed byte per int32 value.
      std::vector<uint8_t> packed;
      for (int32_t v : p.int32_data()) packed.push_back(static_cast<uint8_t>(v));
      if (packed.size() != PackedBytes(t, n))
        return InvalidModel(TensorLabel(p), " of shape ", ShapeToString(shape), " needs ",
                            PackedBytes(t, n), " packed values in int32_data, found ",
                            packed.size());
      UnpackSubByte(t, packed.data(), packed.size(), n, out.data<uint8_t>());
      return out;
    }
    case DType::kString: {
      if (p.string_data_size() != n)
        return InvalidModel(TensorLabel(p), " of shape ", ShapeToString(shape), " needs ", n,
                            " values in string_data, found ", p.string_data_size());
      for (int64_t i = 0; i < n; ++i) out.strings()[i] = p.string_data(static_cast<int>(i));
      return out;
    }
    default:
      break;
  }
  return Unsupported(TensorLabel(p), " has data type ", DTypeName(t), " which onyx cannot read");
}

uint64_t RawStorageElementBytes(int32_t data_type) {
  if (!IsKnownDType(data_type)) return 0;
  const DType t = static_cast<DType>(data_type);
  return t == DType::kString || IsSubByte(t) ? 0 : DTypeSize(t);
}

StatusOr<Tensor> TakeTensorFromProto(onnx::TensorProto* p, const ExternalDataContext& ext) {
  const uint64_t elem = RawStorageElementBytes(p->data_type());
  const bool plain_raw = p->has_raw_data() && p->data_location() != onnx::TensorProto::EXTERNAL &&
                         !p->has_segment() && elem != 0 && !p->raw_data().empty();
  if (!plain_raw) return TensorFromProto(*p, ext);
  const DType t = static_cast<DType>(p->data_type());
  // Elements the bytes hold, checked dim by dim so that absurd dims cannot overflow; anything
  // that does not match exactly goes the copying way, which reports the error.
  const uint64_t count = p->raw_data().size() / elem;
  uint64_t n = 1;
  for (int64_t d : p->dims()) {
    if (d < 0 || (d > 0 && n > count / static_cast<uint64_t>(d))) return TensorFromProto(*p, ext);
    n *= static_cast<uint64_t>(d);
  }
  const auto* data = p->raw_data().data();
  if (n * elem != p->raw_data().size() || reinterpret_cast<uintptr_t>(data) % elem != 0 ||
      (ext.max_tensor_bytes != 0 && n * elem > ext.max_tensor_bytes))
    return TensorFromProto(*p, ext);
  auto holder = std::make_shared<std::string>(std::move(*p->mutable_raw_data()));
  p->clear_raw_data();
  if (t == DType::kBool) NormalizeBools(reinterpret_cast<uint8_t*>(holder->data()), holder->size());
  return Tensor::Wrap(t, Shape(p->dims().begin(), p->dims().end()), holder, holder->data());
}

void TensorToProto(const Tensor& t, const std::string& name, onnx::TensorProto* p) {
  p->Clear();
  p->set_name(name);
  p->set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.shape()) p->add_dims(d);
  const int64_t n = t.numel();
  if (t.dtype() == DType::kString) {
    for (int64_t i = 0; i < n; ++i) p->add_string_data(t.strings()[i]);
    return;
  }
  if (IsSubByte(t.dtype())) {
    const int bits = BitsPerElement(t.dtype());
    const int per_byte = 8 / bits;
    std::string raw(PackedBytes(t.dtype(), n), '\0');
    const uint8_t mask = static_cast<uint8_t>((1u << bits) - 1);
    for (int64_t i = 0; i < n; ++i)
      raw[i / per_byte] =
          static_cast<char>(static_cast<uint8_t>(raw[i / per_byte]) |
                            ((t.data<uint8_t>()[i] & mask) << ((i % per_byte) * bits)));
    p->set_raw_data(raw);
    return;
  }
  p->set_raw_data(std::string(static_cast<const char*>(t.raw_data()), t.nbytes()));
}

namespace {
// Whether a dim_param is a name that ties dims together ("batch", "unk__3"), rather than a
// placeholder for "unknown" ("?", "", "*").
bool NamesADim(const std::string& p) {
  for (char c : p)
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') return true;
  return false;
}
}  // namespace

TypeInfo TypeFromProto(const onnx::TypeProto& proto) {
  TypeInfo info;
  switch (proto.value_case()) {
    case onnx::TypeProto::kTensorType:
    case onnx::TypeProto::kSparseTensorType: {
      const bool sparse = proto.value_case() == onnx::TypeProto::kSparseTensorType;
      const int32_t elem =
          sparse ? proto.sparse_tensor_type().elem_type() : proto.tensor_type().elem_type();
      const bool has_shape =
          sparse ? proto.sparse_tensor_type().has_shape() : proto.tensor_type().has_shape();
      const auto& shape = sparse ? proto.sparse_tensor_type().shape() : proto.tensor_type().shape();
      info.kind = TypeInfo::Kind::kTensor;
      info.elem = IsKnownDType(elem) ? static_cast<DType>(elem) : DType::kUndefined;
      info.has_shape = has_shape;
      for (const auto& d : shape.dim()) {
        // A negative dim_value (some exporters write -1) and a dim_param that names nothing
        // ("?" from paddle2onnx, "") are each an unknown of their own, not one shared symbol.
        if (d.has_dim_value())
          info.dims.push_back(d.dim_value() >= 0 ? Dim::Known(d.dim_value()) : Dim());
        else
          info.dims.push_back(NamesADim(d.dim_param()) ? Dim::Symbol(d.dim_param()) : Dim());
      }
      break;
    }
    case onnx::TypeProto::kSequenceType:
      info.kind = TypeInfo::Kind::kSequence;
      info.inner = std::make_shared<TypeInfo>(TypeFromProto(proto.sequence_type().elem_type()));
      break;
    case onnx::TypeProto::kOptionalType:
      info.kind = TypeInfo::Kind::kOptional;
      info.inner = std::make_shared<TypeInfo>(TypeFromProto(proto.optional_type().elem_type()));
      break;
    case onnx::TypeProto::kMapType:
      info.kind = TypeInfo::Kind::kMap;
      info.map_key = static_cast<DType>(proto.map_type().key_type());
      info.inner = std::make_shared<TypeInfo>(TypeFromProto(proto.map_type().value_type()));
      break;
    default:
      break;
  }
  return info;
}

StatusOr<Value> ValueFromMapProto(const onnx::MapProto& proto) {
  const DType key = static_cast<DType>(proto.key_type());
  if (key != DType::kInt64 && key != DType::kString)
    return Unsupported("map '", proto.name(), "' has ", DTypeName(key),
                       " keys; onyx reads int64 and string keys");
  const int64_t n = key == DType::kString ? proto.string_keys_size() : proto.keys_size();
  if (proto.values().tensor_values_size() != n)
    return InvalidArgument("map '", proto.name(), "' has ", n, " keys but ",
                           proto.values().tensor_values_size(), " tensor values");
  Tensor keys = Tensor::Allocate(key, {n});
  for (int64_t i = 0; i < n; ++i) {
    if (key == DType::kString)
      keys.strings()[i] = proto.string_keys(static_cast<int>(i));
    else
      keys.data<int64_t>()[i] = proto.keys(static_cast<int>(i));
  }
  std::vector<Tensor> items;
  for (const auto& tp : proto.values().tensor_values()) {
    ONYX_ASSIGN_OR_RETURN(Tensor t, TensorFromProto(tp, ExternalDataContext{}));
    if (t.numel() != 1 || (!items.empty() && t.dtype() != items[0].dtype()))
      return InvalidArgument("map '", proto.name(),
                             "' values must be one-element tensors of one type");
    items.push_back(std::move(t));
  }
  const DType value = items.empty() ? DType::kFloat : items[0].dtype();
  Tensor values = Tensor::Allocate(value, {n});
  for (int64_t i = 0; i < n; ++i) {
    if (value == DType::kString)
      values.strings()[i] = items[i].strings()[0];
    else
      std::memcpy(static_cast<char*>(values.raw_data()) + i * DTypeSize(value), items[i].raw_data(),
                  DTypeSize(value));
  }
  return Value::Map(std::move(keys), std::move(values));
}

void ValueToMapProto(const Value& m, const std::string& name, onnx::MapProto* proto) {
  proto->Clear();
  proto->set_name(name);
  if (!m.is_map()) return;
  const Tensor& keys = m.map_keys();
  const Tensor& values = m.map_values();
  proto->set_key_type(static_cast<int32_t>(keys.dtype()));
  onnx::SequenceProto* seq = proto->mutable_values();
  seq->set_elem_type(onnx::SequenceProto::TENSOR);
  for (int64_t i = 0; i < keys.numel(); ++i) {
    if (keys.dtype() == DType::kString)
      proto->add_string_keys(keys.strings()[i]);
    else
      proto->add_keys(keys.data<int64_t>()[i]);
    Tensor item = Tensor::Allocate(values.dtype(), {});
    if (values.dtype() == DType::kString)
      item.strings()[0] = values.strings()[i];
    else
      std::memcpy(item.raw_data(),
                  static_cast<const char*>(values.raw_data()) + i * DTypeSize(values.dtype()),
                  DTypeSize(values.dtype()));
    TensorToProto(item, "", seq->add_tensor_values());
  }
}

StatusOr<Value> ValueFromSequenceProto(const onnx::SequenceProto& proto) {
  if (proto.elem_type() == onnx::SequenceProto::MAP) {
    std::vector<Value> maps;
    for (const auto& mp : proto.map_values()) {
      ONYX_ASSIGN_OR_RETURN(Value m, ValueFromMapProto(mp));
      maps.push_back(std::move(m));
    }
    const DType key = maps.empty() ? DType::kInt64 : maps[0].map_key_type();
    const DType value = maps.empty() ? DType::kFloat : maps[0].map_value_type();
    return Value::MapSequence(std::move(maps), key, value);
  }
  if (proto.elem_type() != onnx::SequenceProto::TENSOR &&
      proto.elem_type() != onnx::SequenceProto::UNDEFINED)
    return Unsupported("sequence '", proto.name(), "' holds non-tensor elements");
  std::vector<Tensor> items;
  DType elem = DType::kUndefined;
  for (const auto& tp : proto.tensor_values()) {
    ONYX_ASSIGN_OR_RETURN(Tensor t, TensorFromProto(tp, ExternalDataContext{}));
    elem = t.dtype();
    items.push_back(std::move(t));
  }
  return Value::Sequence(std::move(items), elem);
}

StatusOr<Value> ValueFromOptionalProto(const onnx::OptionalProto& proto) {
  switch (proto.elem_type()) {
    case onnx::OptionalProto::TENSOR:
      if (proto.has_tensor_value()) {
        ONYX_ASSIGN_OR_RETURN(Tensor t,
                              TensorFromProto(proto.tensor_value(), ExternalDataContext{}));
        return Value(std::move(t));
      }
      return Value::OptionalNone(TypeInfo::Tensor(DType::kUndefined));
    case onnx::OptionalProto::SEQUENCE:
      if (proto.has_sequence_value()) return ValueFromSequenceProto(proto.sequence_value());
      {
        TypeInfo seq;
        seq.kind = TypeInfo::Kind::kSequence;
        return Value::OptionalNone(seq);
      }
    case onnx::OptionalProto::UNDEFINED:
      return Value::OptionalNone(TypeInfo());
    default:
      return Unsupported("optional '", proto.name(), "' holds a type onyx cannot read");
  }
}

void ValueToSequenceProto(const Value& v, const std::string& name, onnx::SequenceProto* proto) {
  proto->Clear();
  proto->set_name(name);
  if (v.is_map_sequence()) {
    proto->set_elem_type(onnx::SequenceProto::MAP);
    for (const Value& m : v.maps()) ValueToMapProto(m, "", proto->add_map_values());
    return;
  }
  proto->set_elem_type(onnx::SequenceProto::TENSOR);
  if (!v.is_sequence()) return;
  for (const Tensor& t : v.sequence()) TensorToProto(t, "", proto->add_tensor_values());
}

void ValueToOptionalProto(const Value& v, const std::string& name, onnx::OptionalProto* proto) {
  proto->Clear();
  proto->set_name(name);
  if (v.is_tensor()) {
    proto->set_elem_type(onnx::OptionalProto::TENSOR);
    TensorToProto(v.tensor(), "", proto->mutable_tensor_value());
  } else if (v.is_sequence()) {
    proto->set_elem_type(onnx::OptionalProto::SEQUENCE);
    ValueToSequenceProto(v, "", proto->mutable_sequence_value());
  } else {
    const TypeInfo& t = v.is_optional_none() ? v.none_type() : TypeInfo();
    proto->set_elem_type(t.kind == TypeInfo::Kind::kSequence ? onnx::OptionalProto::SEQUENCE
                                                             : onnx::OptionalProto::TENSOR);
  }
}

namespace {
// Input files are regular files only, opened without blocking (a FIFO is refused at once).
StatusOr<std::string> ReadFile(const std::string& path) {
  ONYX_ASSIGN_OR_RETURN(memory::RegularFile f, memory::RegularFile::Open(path));
  if (f.size() > static_cast<uint64_t>(INT_MAX))
    return InvalidArgument("'", path, "' is ", f.size(),
                           " bytes; protobuf messages are limited to 2 GiB");
  std::string bytes(static_cast<size_t>(f.size()), '\0');
  ONYX_RETURN_IF_ERROR(f.ReadAt(0, bytes.data(), bytes.size()));
  return bytes;
}
}  // namespace

StatusOr<Value> ReadValueFile(const std::string& path, const TypeInfo& hint) {
  ONYX_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  const auto kind = hint.kind;
  if (kind == TypeInfo::Kind::kSequence) {
    onnx::SequenceProto sp;
    if (!sp.ParseFromString(bytes)) return InvalidArgument("'", path, "' is not a SequenceProto");
    ONYX_ASSIGN_OR_RETURN(Value v, ValueFromSequenceProto(sp));
    // An empty SequenceProto carries no element type; take it from the declared type.
    if (v.is_sequence() && v.sequence().empty() && hint.inner && hint.inner->is_tensor())
      return Value::Sequence({}, hint.inner->elem);
    return v;
  }
  if (kind == TypeInfo::Kind::kMap) {
    onnx::MapProto mp;
    if (!mp.ParseFromString(bytes)) return InvalidArgument("'", path, "' is not a MapProto");
    return ValueFromMapProto(mp);
  }
  if (kind == TypeInfo::Kind::kOptional) {
    onnx::OptionalProto op;
    if (!op.ParseFromString(bytes)) return InvalidArgument("'", path, "' is not an OptionalProto");
    return ValueFromOptionalProto(op);
  }
  onnx::TensorProto tp;
  if (!tp.ParseFromString(bytes)) return InvalidArgument("'", path, "' is not a TensorProto");
  if (kind == TypeInfo::Kind::kUnknown && !tp.has_data_type()) {
    onnx::SequenceProto sp;
    if (sp.ParseFromString(bytes) && sp.has_elem_type()) return ValueFromSequenceProto(sp);
  }
  ONYX_ASSIGN_OR_RETURN(Tensor t, TensorFromProto(tp, ExternalDataContext{}));
  return Value(std::move(t));
}

Status WriteValueFile(const std::string& path, const std::string& name, const Value& v,
                      const TypeInfo& type) {
  std::string bytes;
  if (type.kind == TypeInfo::Kind::kOptional || v.is_optional_none()) {
    onnx::OptionalProto op;
    ValueToOptionalProto(v, name, &op);
    bytes = op.SerializeAsString();
  } else if (v.is_sequence() || v.is_map_sequence()) {
    onnx::SequenceProto sp;
    ValueToSequenceProto(v, name, &sp);
    bytes = sp.SerializeAsString();
  } else if (v.is_map()) {
    onnx::MapProto mp;
    ValueToMapProto(v, name, &mp);
    bytes = mp.SerializeAsString();
  } else {
    onnx::TensorProto tp;
    TensorToProto(v.tensor(), name, &tp);
    bytes = tp.SerializeAsString();
  }
  std::ofstream f(path, std::ios::binary);
  if (!f) return IoError("cannot write '", path, "'");
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) return IoError("writing '", path, "' failed");
  return Status::Ok();
}

}  // namespace onyx::engine
