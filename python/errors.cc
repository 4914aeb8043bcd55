// Exception classes with two bases each (onyx.Error and the matching builtin), so callers can catch
// either `onyx.Error` or the builtin they already handle (ValueError for a bad feed, ...).
#include "errors.h"

#include <array>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace onyx::python {
namespace {

struct ErrorClass {
  ErrorCode code;
  const char* name;
  PyObject* builtin;
  const char* doc;
  std::vector<const char*> ort_bases;  // onnxruntime's classes this one also derives from
};

// onnxruntime's exception classes (onnxruntime.capi.onnxruntime_pybind11_state), each derived
// from Exception alone as there; onyx's classes derive from the matching ones.
constexpr const char* kOrtClasses[] = {
    "Fail",           "InvalidArgument",  "NoSuchFile",      "NoModel",
    "EngineError",    "RuntimeException", "InvalidProtobuf", "ModelLoaded",
    "NotImplemented", "InvalidGraph",     "EPFail"};

// Indexed by ErrorCode; the classes live as long as the interpreter (module attributes).
std::array<PyObject*, 16> g_classes{};

PyObject* NewClass(const char* name, PyObject* bases, const char* doc) {
  PyObject* cls = PyErr_NewExceptionWithDoc(name, doc, bases, nullptr);
  if (!cls) throw py::error_already_set();
  return cls;
}

PyObject* ClassFor(ErrorCode code) {
  const size_t i = static_cast<size_t>(code);
  PyObject* cls = i < g_classes.size() ? g_classes[i] : nullptr;
  return cls ? cls : g_classes[0];
}

}  // namespace

py::str DecodeLenient(const std::string& s) {
  PyObject* u = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (!u) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(u);
}

void RegisterErrors(py::module_& m) {
  PyObject* base =
      NewClass("onyx.Error", PyExc_Exception,
               "Base class of every error the onyx engine raises; str(e) is the engine's message.");
  g_classes[0] = base;
  m.attr("Error") = py::handle(base);
  std::map<std::string, PyObject*> ort;
  py::dict ort_dict;
  for (const char* name : kOrtClasses) {
    const std::string qualified = std::string("onyx.capi.onnxruntime_pybind11_state.") + name;
    PyObject* cls = NewClass(qualified.c_str(), PyExc_Exception,
                             "onnxruntime's exception class of this name; onyx's errors of the "
                             "matching kind derive from it.");
    ort[name] = cls;
    ort_dict[name] = py::handle(cls);
  }
  m.attr("ort_exceptions") = ort_dict;
  const ErrorClass kClasses[] = {
      {ErrorCode::kInvalidArgument,
       "InvalidArgument",
       PyExc_ValueError,
       "A bad feed (unknown name, wrong dtype, rank or dimension), option or output name.",
       {"InvalidArgument"}},
      {ErrorCode::kInvalidModel,
       "InvalidModel",
       PyExc_ValueError,
       "The model is not valid ONNX (unparsable bytes, broken graph, bad attribute).",
       {"InvalidGraph", "InvalidProtobuf"}},
      {ErrorCode::kUnsupported,
       "Unsupported",
       PyExc_NotImplementedError,
       "Valid ONNX that onyx cannot run (an operator, opset or type it lacks).",
       {"NotImplemented"}},
      {ErrorCode::kNotFound,
       "NotFound",
       PyExc_FileNotFoundError,
       "A model or external-data file that does not exist.",
       {"NoSuchFile"}},
      {ErrorCode::kIo, "FileError", PyExc_OSError, "Reading or mapping a file failed.", {"Fail"}},
      {ErrorCode::kRuntime,
       "ExecutionError",
       PyExc_RuntimeError,
       "A kernel failed on the values it was given while the model ran.",
       {"RuntimeException"}},
      {ErrorCode::kLimit,
       "LimitExceeded",
       PyExc_MemoryError,
       "A size or count beyond a configured ceiling (SessionOptions limits, ONYX_MAX_* "
       "variables).",
       {"Fail"}},
      {ErrorCode::kCancelled,
       "Cancelled",
       PyExc_RuntimeError,
       "The run was stopped by RunOptions.terminate or its timeout; the session stays usable.",
       {"Fail"}},
  };
  for (const ErrorClass& c : kClasses) {
    py::list base_list;
    base_list.append(py::handle(base));
    base_list.append(py::handle(c.builtin));
    for (const char* o : c.ort_bases) base_list.append(py::handle(ort[o]));
    py::tuple bases(base_list);
    const std::string qualified = std::string("onyx.") + c.name;
    PyObject* cls = NewClass(qualified.c_str(), bases.ptr(), c.doc);
    g_classes[static_cast<size_t>(c.code)] = cls;
    m.attr(c.name) = py::handle(cls);
  }
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      // Messages quote names from the model, which a corrupt file may fill with non-UTF-8 bytes.
      py::object message = DecodeLenient(e.what());
      PyErr_SetObject(ClassFor(e.code()), message.ptr());
    }
  });
}

}  // namespace onyx::python
