// onyx._onyx.check: onyx/check.h over numpy feeds; python/onyx/check.py wraps it (onyx.check).
#include "check_binding.h"

#include <pybind11/stl.h>

#include "errors.h"
#include "numpy_bridge.h"
#include "onyx/check.h"

namespace py = pybind11;

namespace onyx::python {

void RegisterCheck(py::module_& m) {
  m.def(
      "check",
      [](const py::object& model, const py::dict& inputs, int threads,
         const std::string& optimization, const std::string& conv_algorithm) {
        CheckOptions o;
        if (threads < 0) ThrowIfError(InvalidArgument("threads must be >= 0, got ", threads));
        o.threads = threads;
        StatusOr<OptimizationLevel> level = ParseOptimizationLevel(optimization);
        ThrowIfError(level.status());
        o.optimization = *level;
        if (conv_algorithm != "auto" && conv_algorithm != "direct")
          ThrowIfError(InvalidArgument("conv_algorithm must be 'auto' or 'direct', got '",
                                       conv_algorithm, "'"));
        o.winograd = conv_algorithm == "auto";
        FeedConverter converter;  // keeps borrowed arrays alive through the check
        NamedValues feeds;
        for (auto item : inputs) {
          const std::string name = py::str(item.first);
          feeds.push_back({name, converter.Convert(IoInfo{name, TypeInfo()}, item.second)});
        }
        StatusOr<CheckReport> report = CheckReport{};
        if (py::isinstance<py::bytes>(model)) {
          const std::string bytes = model.cast<std::string>();
          py::gil_scoped_release release;
          report = CheckModelBytes(bytes, feeds, o);
        } else {
          const std::string path = py::str(model);
          py::gil_scoped_release release;
          report = CheckModel(path, feeds, o);
        }
        ThrowIfError(report.status());
        return py::make_tuple(report->ToJson(), report->ToText());
      },
      py::arg("model"), py::arg("inputs"), py::arg("threads") = 0, py::arg("optimization") = "all",
      py::arg("conv_algorithm") = "auto",
      "onyx check on a model (path or bytes) and feeds: (report as JSON, report as a table).");
}

}  // namespace onyx::python
