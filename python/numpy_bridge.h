// numpy <-> onyx values without numpy's C API (whose structs changed in numpy 2), so one build
// works with numpy 1.x and 2.x.
//
// Element types: numpy's own dtypes for float/double/float16/(u)int8..64/bool/complex; strings as
// numpy object arrays of str (str, bytes and numpy 'U'/'S' arrays are accepted as feeds);
// ml_dtypes' dtypes for bfloat16, float8e4m3fn(uz), float8e5m2(fnuz), float8e8m0, float4e2m1,
// int4/uint4 and int2/uint2 (one element per byte, as ml_dtypes and onnx.numpy_helper store them).
// Sequences are Python lists of arrays, empty optionals are None.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "onyx/session.h"
#include "onyx/value.h"

namespace onyx::python {

// Imports numpy (and ml_dtypes when installed) once; call at module import, with the GIL.
void InitNumpyBridge();

// The numpy dtype an onyx element type converts to; None when there is none (strings: object).
pybind11::object NumpyDType(DType t);

// Converts feeds. Contiguous, aligned arrays are borrowed, not copied: the converter keeps every
// array it borrowed from alive, so it must outlive the run that reads the values.
class FeedConverter {
 public:
  // Throws onyx::Error (InvalidArgument) naming the input for anything that cannot be fed.
  Value Convert(const IoInfo& decl, pybind11::handle obj);

 private:
  Tensor ToTensor(const std::string& who, pybind11::handle obj);
  Value ToSequence(const std::string& who, const TypeInfo* decl, pybind11::handle obj);

  std::vector<pybind11::object> borrowed_;
};

// A run's output as Python: a numpy array, a list for a sequence, None for an empty optional. An
// output tensor that alone holds its buffer (a fresh graph output) becomes the array's memory
// without a copy; anything shared (a weight, the same value twice, a view of a feed) is copied.
pybind11::object ValueToPython(const Value& v);

}  // namespace onyx::python
