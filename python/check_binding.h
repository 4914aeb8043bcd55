// Registers onyx._onyx.check (the per-step accuracy report of onyx/check.h).
#pragma once

#include <pybind11/pybind11.h>

namespace onyx::python {

void RegisterCheck(pybind11::module_& m);

}  // namespace onyx::python
