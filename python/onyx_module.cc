// pybind11 module `_onyx`: Session over numpy arrays; python/onyx wraps it in an
// onnxruntime-like InferenceSession.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>

#include "onyx/session.h"

namespace py = pybind11;

namespace onyx {
namespace {

// Reads dtype facts through numpy's Python attributes, not its C structs, so the module works
// with numpy 1.x and 2.x alike.
DType DTypeOfArray(const py::object& a) {
  const py::object dt = a.attr("dtype");
  const char kind = dt.attr("kind").cast<std::string>()[0];
  const ssize_t size = dt.attr("itemsize").cast<ssize_t>();
  if (kind == 'f')
    return size == 4   ? DType::kFloat
           : size == 8 ? DType::kDouble
           : size == 2 ? DType::kFloat16
                       : DType::kUndefined;
  if (kind == 'i')
    return size == 1   ? DType::kInt8
           : size == 2 ? DType::kInt16
           : size == 4 ? DType::kInt32
                       : DType::kInt64;
  if (kind == 'u')
    return size == 1   ? DType::kUInt8
           : size == 2 ? DType::kUInt16
           : size == 4 ? DType::kUInt32
                       : DType::kUInt64;
  if (kind == 'b') return DType::kBool;
  if (kind == 'O' || kind == 'U' || kind == 'S') return DType::kString;
  return DType::kUndefined;
}

const char* NumpyFormat(DType t) {
  switch (t) {
    case DType::kFloat:
      return "float32";
    case DType::kDouble:
      return "float64";
    case DType::kFloat16:
      return "float16";
    case DType::kInt8:
      return "int8";
    case DType::kInt16:
      return "int16";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kUInt8:
      return "uint8";
    case DType::kUInt16:
      return "uint16";
    case DType::kUInt32:
      return "uint32";
    case DType::kUInt64:
      return "uint64";
    case DType::kBool:
      return "bool";
    case DType::kBFloat16:
      return "uint16";  // raw bits; numpy has no bfloat16
    default:
      return nullptr;
  }
}

Tensor ToTensor(const std::string& name, py::object obj) {
  py::module_ np = py::module_::import("numpy");
  // np.require keeps rank 0 (ascontiguousarray would turn a scalar into shape [1]).
  py::object a = np.attr("require")(np.attr("asarray")(obj), py::none(), "C");
  const DType t = DTypeOfArray(a);
  if (t == DType::kUndefined)
    throw Error(InvalidArgument("input '", name, "': numpy dtype ",
                                std::string(py::str(a.attr("dtype"))), " is not supported"));
  Shape shape = a.attr("shape").cast<std::vector<int64_t>>();
  if (t == DType::kString) {
    Tensor x = Tensor::Allocate(DType::kString, shape);
    py::list flat = a.attr("ravel")().attr("tolist")();
    for (size_t i = 0; i < flat.size(); ++i) {
      py::object o = flat[i];
      x.strings()[i] =
          py::isinstance<py::bytes>(o) ? std::string(py::bytes(o)) : std::string(py::str(o));
    }
    return x;
  }
  Tensor x = Tensor::Allocate(t, shape);
  py::buffer_info info = py::buffer(a).request();
  if (x.nbytes()) std::memcpy(x.raw_data(), info.ptr, x.nbytes());
  return x;
}

py::object FromValue(const Value& v) {
  if (v.is_optional_none()) return py::none();
  if (v.is_sequence()) {
    py::list l;
    for (const Tensor& t : v.sequence()) l.append(FromValue(Value(t)));
    return l;
  }
  const Tensor& t = v.tensor();
  std::vector<ssize_t> shape(t.shape().begin(), t.shape().end());
  if (t.dtype() == DType::kString) {
    py::list flat;
    for (int64_t i = 0; i < t.numel(); ++i) flat.append(py::str(t.strings()[i]));
    return py::module_::import("numpy").attr("array")(flat, "object").attr("reshape")(shape);
  }
  const char* fmt = NumpyFormat(t.dtype());
  if (!fmt)
    throw Error(Unsupported("output of type ", DTypeName(t.dtype()), " has no numpy equivalent"));
  py::bytes raw(static_cast<const char*>(t.raw_data()), t.nbytes());
  py::module_ np = py::module_::import("numpy");
  return np.attr("frombuffer")(raw, fmt).attr("reshape")(shape).attr("copy")();
}

py::dict IoDict(const IoInfo& io) {
  py::dict d;
  d["name"] = io.name;
  d["type"] = io.type.ToString();
  d["elem_type"] = DTypeName(io.type.elem);
  py::list shape;
  for (const Dim& dim : io.type.dims) {
    if (dim.known())
      shape.append(dim.value);
    else if (!dim.symbol.empty())
      shape.append(dim.symbol);
    else
      shape.append(py::none());
  }
  d["shape"] = shape;
  return d;
}

}  // namespace
}  // namespace onyx

PYBIND11_MODULE(_onyx, m) {
  using namespace onyx;
  m.doc() = "onyx: a CPU inference engine for ONNX models (native module)";
  py::register_exception<Error>(m, "Error", PyExc_RuntimeError);
  py::class_<Session>(m, "Session")
      .def(py::init([](py::object model, int threads, const std::string& opt) {
             SessionOptions o;
             o.intra_op_threads = threads;
             auto level = ParseOptimizationLevel(opt);
             if (!level.ok()) throw Error(level.status());
             o.optimization = *level;
             if (py::isinstance<py::bytes>(model))
               return Session::FromBytes(std::string(py::bytes(model)), o);
             return Session(std::string(py::str(model)), o);
           }),
           py::arg("model"), py::arg("intra_op_threads") = 0, py::arg("optimization") = "all")
      .def("inputs",
           [](const Session& s) {
             py::list l;
             for (const auto& io : s.inputs()) l.append(IoDict(io));
             return l;
           })
      .def("required_inputs", &Session::required_inputs)
      .def("outputs",
           [](const Session& s) {
             py::list l;
             for (const auto& io : s.outputs()) l.append(IoDict(io));
             return l;
           })
      .def("run", [](const Session& s, py::dict feeds) {
        NamedValues in;
        for (auto item : feeds) {
          const std::string name = py::str(item.first);
          in.push_back(
              {name, Value(ToTensor(name, py::reinterpret_borrow<py::object>(item.second)))});
        }
        NamedValues out;
        {
          py::gil_scoped_release release;
          ThrowIfError(s.Run(in, {}, &out));
        }
        py::list result;
        for (const auto& [name, v] : out) result.append(py::make_tuple(name, FromValue(v)));
        return result;
      });
}
