// The Python exception classes of onyx and the translator that turns onyx::Error into them.
//
//   onyx.Error                                    base of everything the engine raises
//   onyx.InvalidArgument(Error, ValueError)       bad feeds, options, output names
//   onyx.InvalidModel(Error, ValueError)          the model breaks the ONNX rules (garbage bytes
//   too) onyx.Unsupported(Error, NotImplementedError)  valid ONNX that onyx cannot run
//   onyx.NotFound(Error, FileNotFoundError)       a model or external-data file that does not exist
//   onyx.FileError(Error, OSError)                reading a file failed
//   onyx.ExecutionError(Error, RuntimeError)      a kernel failed on the values it was given
//
// Each also derives from the matching onnxruntime class (Fail, InvalidArgument, NoSuchFile, ...,
// created here as `ort_exceptions` and exported by onyx.capi.onnxruntime_pybind11_state), so
// except clauses written for onnxruntime catch onyx's errors.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "onyx/status.h"

namespace onyx::python {

// A Python str from bytes that should be UTF-8; invalid sequences become U+FFFD.
pybind11::str DecodeLenient(const std::string& s);

// Creates the classes, adds them to `m` and registers the onyx::Error translator.
void RegisterErrors(pybind11::module_& m);

}  // namespace onyx::python
