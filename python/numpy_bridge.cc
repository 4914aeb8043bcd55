// numpy <-> onyx values, through the buffer protocol and numpy's Python-level API (dtype.kind and
// itemsize, np.require, np.empty, __array_interface__ for the dtypes numpy cannot export as a
// buffer): a few attribute look-ups per array, no copy for contiguous feeds, none for fresh
// outputs.
#include "numpy_bridge.h"

#include <pybind11/numpy.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

namespace py = pybind11;

namespace onyx::python {
namespace {

struct NumpyApi {
  py::object ndarray, asarray, require, empty, array, object_dtype;
  // numpy dtype for each onyx DType (None where numpy has none).
  std::array<py::object, kMaxDType + 1> dtypes;
  // ml_dtypes' scalar types, matched by identity before numpy's kind/itemsize rules (float8e5m2
  // has numpy kind 'f' and itemsize 1).
  std::vector<std::pair<py::object, DType>> extension_types;
  bool have_ml_dtypes = false;
};

// Created at module import and never freed: its Python references must not be released after
// the interpreter has shut down.
NumpyApi* g_np = nullptr;

const NumpyApi& Np() {
  return *g_np;
}

bool IsSubByte(DType t) {
  return t == DType::kInt4 || t == DType::kUInt4 || t == DType::kInt2 || t == DType::kUInt2 ||
         t == DType::kFloat4E2M1;
}

// onyx keeps int4/int2 elements sign-extended in a byte; ml_dtypes and onnx.numpy_helper keep only
// the low bits (and read nothing else). Normalizes one byte into onyx's form...
uint8_t SubByteToOnyx(DType t, uint8_t v) {
  const int bits = (t == DType::kInt2 || t == DType::kUInt2) ? 2 : 4;
  const uint8_t mask = static_cast<uint8_t>((1u << bits) - 1);
  v &= mask;
  if (t == DType::kInt4 || t == DType::kInt2) {
    const int sign = 1 << (bits - 1);
    return static_cast<uint8_t>(static_cast<int8_t>((v ^ sign) - sign));
  }
  return v;
}
// ...and back into ml_dtypes' canonical form (low bits only), so raw bytes compare equal too.
uint8_t SubByteToNumpy(DType t, uint8_t v) {
  return v & ((t == DType::kInt2 || t == DType::kUInt2) ? 0x03 : 0x0F);
}

// The data of a C-contiguous array through the buffer protocol (cheap), or nullptr when the array
// is not C-contiguous or numpy cannot export its dtype (ml_dtypes' types). The pointer stays valid
// while the caller holds the array: numpy frees data only with the array itself.
void* BufferData(const py::object& array, bool writable) {
  Py_buffer view;
  const int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(array.ptr(), &view, flags) != 0) {
    PyErr_Clear();
    return nullptr;
  }
  void* data = view.buf;
  PyBuffer_Release(&view);
  return data;
}

// The data of a C-contiguous array of any dtype.
void* DataPointer(const py::object& array, bool writable) {
  if (void* data = BufferData(array, writable)) return data;
  py::tuple data = array.attr("__array_interface__")["data"];
  return reinterpret_cast<void*>(data[0].cast<uintptr_t>());
}

std::string TypeName(py::handle obj) {
  return py::str(py::type::handle_of(obj).attr("__name__"));
}

DType DTypeOfNumpy(const py::object& dtype) {
  const py::object scalar = dtype.attr("type");
  for (const auto& [type, t] : Np().extension_types)
    if (scalar.is(type)) return t;
  const char kind = py::str(dtype.attr("kind")).cast<std::string>()[0];
  const size_t size = dtype.attr("itemsize").cast<size_t>();
  switch (kind) {
    case 'f':
      return size == 4   ? DType::kFloat
             : size == 8 ? DType::kDouble
             : size == 2 ? DType::kFloat16
                         : DType::kUndefined;
    case 'i':
      return size == 1   ? DType::kInt8
             : size == 2 ? DType::kInt16
             : size == 4 ? DType::kInt32
             : size == 8 ? DType::kInt64
                         : DType::kUndefined;
    case 'u':
      return size == 1   ? DType::kUInt8
             : size == 2 ? DType::kUInt16
             : size == 4 ? DType::kUInt32
             : size == 8 ? DType::kUInt64
                         : DType::kUndefined;
    case 'b':
      return DType::kBool;
    case 'c':
      return size == 8 ? DType::kComplex64 : size == 16 ? DType::kComplex128 : DType::kUndefined;
    case 'U':
    case 'S':
    case 'O':
      return DType::kString;
    default:
      return DType::kUndefined;
  }
}

py::object DecodeString(const std::string& s) {
  PyObject* u = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "strict");
  if (u) return py::reinterpret_steal<py::object>(u);
  PyErr_Clear();  // not UTF-8: hand the raw bytes back rather than failing the run
  return py::bytes(s);
}

py::tuple ShapeTuple(const Shape& shape) {
  py::tuple t(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) t[i] = py::int_(shape[i]);
  return t;
}

// numpy's numbers for its builtin dtypes (the NPY_TYPES enum), read through numpy's C API by
// py::dtype::num(): the Python attribute lookups of DTypeOfNumpy cost about a microsecond per
// feed, as much as running a small model's operator. Only the number and the byte order are read
// from the descriptor: pybind11 2.10 reads its item size at numpy 1's offset, which numpy 2
// moved. NPY_LONG is int64 on the LP64 Linux targets onyx builds for.
static_assert(sizeof(long) == 8, "NPY_LONG is taken as int64");
constexpr bool kLittleEndian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

// The builtin dtypes by number; a DType's first entry is the one outputs get (NPY_LONG, NPY_ULONG).
constexpr std::pair<int, DType> kNpyTypes[] = {
    {0, DType::kBool},    {1, DType::kInt8},       {2, DType::kUInt8},       {3, DType::kInt16},
    {4, DType::kUInt16},  {5, DType::kInt32},      {6, DType::kUInt32},      {7, DType::kInt64},
    {9, DType::kInt64},   {8, DType::kUInt64},     {10, DType::kUInt64},     {11, DType::kFloat},
    {12, DType::kDouble}, {14, DType::kComplex64}, {15, DType::kComplex128}, {23, DType::kFloat16},
};

DType DTypeOfNpyNum(int num) {
  for (const auto& [n, t] : kNpyTypes)
    if (n == num) return t;
  return DType::kUndefined;
}

int NpyNumOf(DType t) {
  for (const auto& [n, d] : kNpyTypes)
    if (d == t) return n;
  return -1;
}

py::object TensorToArray(const Tensor& t) {
  const NumpyApi& np = Np();
  // A fresh output nobody else holds, of a builtin dtype: an ndarray over the tensor's buffer
  // (a memcpy and an allocation saved; 600 KB cost about 10 us), made through numpy's C API, the
  // tensor kept alive by a capsule, its base. Empty tensors and other dtypes are copied.
  if (const int num = NpyNumOf(t.dtype()); num >= 0 && t.owns_buffer_alone() && t.numel() > 0) {
    std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
    std::vector<py::ssize_t> strides(shape.size());
    py::ssize_t stride = static_cast<py::ssize_t>(DTypeSize(t.dtype()));
    for (size_t i = shape.size(); i-- > 0;) {
      strides[i] = stride;
      stride *= shape[i];
    }
    auto* holder = new Tensor(t);
    const py::capsule base(holder, [](void* p) { delete static_cast<Tensor*>(p); });
    return py::array(py::dtype(num), std::move(shape), std::move(strides), t.raw_data(), base);
  }
  const py::tuple shape = ShapeTuple(t.shape());
  if (t.dtype() == DType::kString) {
    py::list flat(static_cast<size_t>(t.numel()));
    for (int64_t i = 0; i < t.numel(); ++i) flat[i] = DecodeString(t.strings()[i]);
    return np.array(flat, np.object_dtype).attr("reshape")(shape);
  }
  const py::object& dtype = NumpyDType(t.dtype());
  if (dtype.is_none())
    throw Error(Unsupported("an output of element type ", DTypeName(t.dtype()),
                            " has no numpy equivalent",
                            np.have_ml_dtypes ? "" : " (install the ml_dtypes package)"));
  py::object out = np.empty(shape, dtype);
  if (t.numel() == 0) return out;
  auto* dst = static_cast<uint8_t*>(DataPointer(out, /*writable=*/true));
  const auto* src = static_cast<const uint8_t*>(t.raw_data());
  if (IsSubByte(t.dtype())) {
    for (int64_t i = 0; i < t.numel(); ++i) dst[i] = SubByteToNumpy(t.dtype(), src[i]);
  } else {
    std::memcpy(dst, src, t.nbytes());
  }
  return out;
}

}  // namespace

void InitNumpyBridge() {
  if (g_np) return;
  auto* api = new NumpyApi();
  py::module_ np = py::module_::import("numpy");
  api->ndarray = np.attr("ndarray");
  api->asarray = np.attr("asarray");
  api->require = np.attr("require");
  api->empty = np.attr("empty");
  api->array = np.attr("array");
  api->object_dtype = np.attr("dtype")("O");
  for (auto& d : api->dtypes) d = py::none();
  for (const auto& [num, t] : kNpyTypes) {
    py::object& d = api->dtypes[static_cast<int>(t)];
    if (d.is_none()) d = py::dtype(num);
  }
  api->dtypes[static_cast<int>(DType::kString)] = api->object_dtype;
  try {
    py::module_ ml = py::module_::import("ml_dtypes");
    const std::pair<DType, const char*> kMl[] = {
        {DType::kBFloat16, "bfloat16"},
        {DType::kFloat8E4M3FN, "float8_e4m3fn"},
        {DType::kFloat8E4M3FNUZ, "float8_e4m3fnuz"},
        {DType::kFloat8E5M2, "float8_e5m2"},
        {DType::kFloat8E5M2FNUZ, "float8_e5m2fnuz"},
        {DType::kFloat8E8M0, "float8_e8m0fnu"},
        {DType::kFloat4E2M1, "float4_e2m1fn"},
        {DType::kInt4, "int4"},
        {DType::kUInt4, "uint4"},
        {DType::kInt2, "int2"},
        {DType::kUInt2, "uint2"},
    };
    for (const auto& [t, name] : kMl) {
      if (!py::hasattr(ml, name)) continue;  // older ml_dtypes: that type stays unsupported
      py::object scalar = ml.attr(name);
      py::object dtype = np.attr("dtype")(scalar);
      if (dtype.attr("itemsize").cast<size_t>() != DTypeSize(t)) continue;
      api->dtypes[static_cast<int>(t)] = dtype;
      api->extension_types.emplace_back(scalar, t);
    }
    api->have_ml_dtypes = true;
  } catch (py::error_already_set&) {
    // Without ml_dtypes, bfloat16/float8/int4 values cannot cross into Python; the rest works.
  }
  g_np = api;
}

py::object NumpyDType(DType t) {
  const int i = static_cast<int>(t);
  return (i >= 0 && i <= kMaxDType) ? Np().dtypes[i] : py::none();
}

Tensor FeedConverter::ToTensor(const std::string& who, py::handle obj) {
  // Fast path: an aligned, C-contiguous, native-order ndarray of a builtin dtype, read in place.
  if (py::isinstance<py::array>(obj)) {
    const auto arr = py::reinterpret_borrow<py::array>(obj);
    const py::dtype dtype = arr.dtype();
    const DType t = DTypeOfNpyNum(dtype.num());
    const char order = dtype.byteorder();
    constexpr int kFlags =
        py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | py::detail::npy_api::NPY_ARRAY_ALIGNED_;
    if (t != DType::kUndefined &&
        (order == '=' || order == '|' || (order == '<' && kLittleEndian)) &&
        (arr.flags() & kFlags) == kFlags) {
      Shape shape(static_cast<size_t>(arr.ndim()));
      for (size_t i = 0; i < shape.size(); ++i) shape[i] = arr.shape(static_cast<py::ssize_t>(i));
      void* data = const_cast<void*>(arr.data());
      borrowed_.push_back(arr);
      return Tensor::Borrow(t, shape, data);
    }
  }
  const NumpyApi& np = Np();
  py::object a =
      py::isinstance(obj, np.ndarray) ? py::reinterpret_borrow<py::object>(obj) : np.asarray(obj);
  const py::object dtype = a.attr("dtype");
  const DType t = DTypeOfNumpy(dtype);
  if (t == DType::kUndefined)
    throw Error(InvalidArgument(who, ": numpy dtype ", std::string(py::str(dtype)),
                                " has no ONNX element type"));
  const Shape shape = a.attr("shape").cast<Shape>();
  // Kernels read native (little-endian) bytes: a big-endian array ('>f4', from files written on
  // other machines or by struct-minded code) is converted, not misread (ONNX Runtime misreads it).
  if (t != DType::kString && !dtype.attr("isnative").cast<bool>())
    a = a.attr("astype")(dtype.attr("newbyteorder")("="));
  if (t == DType::kString) {
    Tensor x = Tensor::Allocate(DType::kString, shape);
    py::list flat = a.attr("ravel")().attr("tolist")();
    for (size_t i = 0; i < flat.size(); ++i) {
      py::handle o = flat[i];
      if (py::isinstance<py::str>(o))
        x.strings()[i] = o.cast<std::string>();
      else if (py::isinstance<py::bytes>(o))
        x.strings()[i] = std::string(py::reinterpret_borrow<py::bytes>(o));
      else
        throw Error(InvalidArgument(who, ": element ", i, " of the string array is a ", TypeName(o),
                                    ", expected str or bytes"));
    }
    return x;
  }
  // Fast path: a C-contiguous, aligned array of a dtype numpy exports through the buffer protocol.
  void* data = IsSubByte(t) ? nullptr : BufferData(a, /*writable=*/false);
  if (!data || reinterpret_cast<uintptr_t>(data) % DTypeSize(t) != 0) {
    // 'C': row-major contiguous, 'A': aligned; np.require copies only when the array is neither.
    a = np.require(a, py::none(), "CA");
    data = DataPointer(a, /*writable=*/false);
  }
  if (IsSubByte(t)) {
    Tensor x = Tensor::Allocate(t, shape);
    const auto* src = static_cast<const uint8_t*>(data);
    auto* dst = x.data<uint8_t>();
    for (int64_t i = 0; i < x.numel(); ++i) dst[i] = SubByteToOnyx(t, src[i]);
    return x;
  }
  borrowed_.push_back(std::move(a));
  return Tensor::Borrow(t, shape, data);
}

Value FeedConverter::ToSequence(const std::string& who, const TypeInfo* decl, py::handle obj) {
  if (!py::isinstance<py::list>(obj) && !py::isinstance<py::tuple>(obj))
    throw Error(InvalidArgument(who, " expects a sequence (a list of numpy arrays), got a ",
                                TypeName(obj)));
  DType elem = DType::kUndefined;
  if (decl && decl->inner && decl->inner->is_tensor()) elem = decl->inner->elem;
  std::vector<Tensor> items;
  size_t i = 0;
  for (py::handle item : obj) {
    Tensor x = ToTensor(StrCat(who, " item ", i), item);
    if (elem != DType::kUndefined && x.dtype() != elem)
      throw Error(InvalidArgument(who, " item ", i, " has element type ", DTypeName(x.dtype()),
                                  ", the sequence holds ", DTypeName(elem)));
    items.push_back(std::move(x));
    ++i;
  }
  if (elem == DType::kUndefined) {
    if (items.empty())
      throw Error(InvalidArgument(who,
                                  ": the model does not declare the element type of this "
                                  "sequence, so it cannot be fed empty"));
    elem = items[0].dtype();
  }
  return Value::Sequence(std::move(items), elem);
}

namespace {

// A dict fed to a map input (DictVectorizer's): keys become an int64 or string tensor and values a
// tensor of the declared value type, pair i being the dict's i-th item.
Value DictToMap(const std::string& who, const TypeInfo& t, py::handle obj) {
  if (!py::isinstance<py::dict>(obj))
    throw Error(InvalidArgument(who, " expects a map (a dict), got a ", TypeName(obj)));
  const DType key = t.map_key;
  const DType value = t.inner && t.inner->is_tensor() ? t.inner->elem : DType::kUndefined;
  if (key != DType::kInt64 && key != DType::kString)
    throw Error(Unsupported(who, ": maps with ", DTypeName(key), " keys cannot be fed"));
  if (value != DType::kFloat && value != DType::kDouble && value != DType::kInt64 &&
      value != DType::kString)
    throw Error(Unsupported(who, ": maps with ", DTypeName(value), " values cannot be fed"));
  const auto d = py::reinterpret_borrow<py::dict>(obj);
  const int64_t n = static_cast<int64_t>(d.size());
  Tensor keys = Tensor::Allocate(key, {n});
  Tensor values = Tensor::Allocate(value, {n});
  const auto as_string = [&](py::handle o, const char* what) {
    if (py::isinstance<py::str>(o)) return o.cast<std::string>();
    if (py::isinstance<py::bytes>(o)) return std::string(py::reinterpret_borrow<py::bytes>(o));
    throw Error(InvalidArgument(who, ": a ", what, " is a ", TypeName(o), ", expected str"));
  };
  int64_t i = 0;
  try {
    for (auto item : d) {
      if (key == DType::kString)
        keys.strings()[i] = as_string(item.first, "key");
      else
        keys.data<int64_t>()[i] = item.first.cast<int64_t>();
      switch (value) {
        case DType::kFloat:
          values.data<float>()[i] = item.second.cast<float>();
          break;
        case DType::kDouble:
          values.data<double>()[i] = item.second.cast<double>();
          break;
        case DType::kInt64:
          values.data<int64_t>()[i] = item.second.cast<int64_t>();
          break;
        default:
          values.strings()[i] = as_string(item.second, "value");
          break;
      }
      ++i;
    }
  } catch (py::cast_error&) {
    throw Error(InvalidArgument(who, ": item ", i, " of the dict does not fit map(", DTypeName(key),
                                ", ", DTypeName(value), ")"));
  }
  return Value::Map(std::move(keys), std::move(values));
}

py::object ElementToPython(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kString:
      return DecodeString(t.strings()[i]);
    case DType::kInt64:
      return py::int_(t.data<int64_t>()[i]);
    case DType::kFloat:
      return py::float_(t.data<float>()[i]);
    case DType::kDouble:
      return py::float_(t.data<double>()[i]);
    default:
      throw Error(Unsupported("a map holds ", DTypeName(t.dtype()),
                              " elements, which have no Python equivalent here"));
  }
}

// A map as a dict in key order, as onnxruntime returns ZipMap's items.
py::dict MapToDict(const Value& m) {
  py::dict d;
  const Tensor& keys = m.map_keys();
  const Tensor& values = m.map_values();
  for (int64_t i = 0; i < keys.numel(); ++i)
    d[ElementToPython(keys, i)] = ElementToPython(values, i);
  return d;
}

}  // namespace

Value FeedConverter::Convert(const IoInfo& decl, py::handle obj) {
  const std::string who = "input '" + decl.name + "'";
  const TypeInfo* t = &decl.type;
  if (t->kind == TypeInfo::Kind::kOptional) {
    if (obj.is_none()) return Value::OptionalNone(t->inner ? *t->inner : TypeInfo());
    t = t->inner.get();
  } else if (obj.is_none()) {
    throw Error(InvalidArgument(who, " is None; only optional inputs accept None (it expects ",
                                decl.type.ToString(), ")"));
  }
  if (t && t->kind == TypeInfo::Kind::kSequence) return ToSequence(who, t, obj);
  if (t && t->kind == TypeInfo::Kind::kMap) return DictToMap(who, *t, obj);
  try {
    return Value(ToTensor(who, obj));
  } catch (py::error_already_set& e) {
    // np.asarray failed (ragged list, unknown object): report it against the input.
    throw Error(InvalidArgument(who, ": cannot make a numpy array of the ", TypeName(obj),
                                " given: ", e.what()));
  }
}

py::object ValueToPython(const Value& v) {
  if (v.is_optional_none()) return py::none();
  if (v.is_sequence()) {
    py::list items;
    for (const Tensor& t : v.sequence()) items.append(TensorToArray(t));
    return items;
  }
  if (v.is_map()) return MapToDict(v);
  if (v.is_map_sequence()) {
    py::list items;
    for (const Value& m : v.maps()) items.append(MapToDict(m));
    return items;
  }
  if (!v.is_tensor()) throw Error(RuntimeError("the run produced no value for an output"));
  return TensorToArray(v.tensor());
}

}  // namespace onyx::python
