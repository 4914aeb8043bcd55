// pybind11 module `onyx._onyx`: the native Session over numpy values. The `onyx` package wraps it
// in an onnxruntime-shaped InferenceSession (python/onyx/session.py).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "check_binding.h"
#include "engine/prune/pruning.h"
#include "errors.h"
#include "numpy_bridge.h"
#include "onyx/model_file.h"
#include "onyx/session.h"

namespace py = pybind11;

namespace onyx::python {
namespace {

// ONNX Runtime's NodeArg.type spelling: "tensor(float)", "seq(tensor(int64))",
// "optional(seq(tensor(float)))", "map(string,tensor(float))".
std::string OrtTypeString(const TypeInfo& t) {
  const auto inner = [&] { return t.inner ? OrtTypeString(*t.inner) : std::string("unknown"); };
  switch (t.kind) {
    case TypeInfo::Kind::kTensor:
      return StrCat("tensor(", DTypeName(t.elem), ")");
    case TypeInfo::Kind::kSequence:
      return "seq(" + inner() + ")";
    case TypeInfo::Kind::kOptional:
      return "optional(" + inner() + ")";
    case TypeInfo::Kind::kMap:
      return StrCat("map(", DTypeName(t.map_key), ",", inner(), ")");
    default:
      return "unknown";
  }
}

// ONNX Runtime's NodeArg.shape: ints, symbol strings, None for unnamed unknown dims; [] when the
// rank is unknown or the value is not a tensor.
py::list ShapeList(const TypeInfo& t) {
  py::list shape;
  if (!t.is_tensor() || !t.has_shape) return shape;
  for (const Dim& d : t.dims) {
    if (d.known())
      shape.append(d.value);
    else if (!d.symbol.empty())
      shape.append(DecodeLenient(d.symbol));
    else
      shape.append(py::none());
  }
  return shape;
}

py::dict IoDict(const IoInfo& io) {
  py::dict d;
  d["name"] = DecodeLenient(io.name);
  d["type"] = OrtTypeString(io.type);
  d["shape"] = ShapeList(io.type);
  d["onyx_type"] = DecodeLenient(io.type.ToString());
  return d;
}

template <typename List>
std::string JoinNames(const List& ios) {
  std::string names;
  for (const auto& io : ios) names += (names.empty() ? "" : ", ") + io.name;
  return names;
}

// The flag behind onyx.RunOptions.terminate: Python sets it from any thread while run() works
// without the GIL, and the engine reads it between operators and loop iterations.
struct TerminateFlag {
  std::atomic<bool> value{false};
};

// Holds the session plus lookup tables; every method but run() is quick and keeps the GIL.
class PySession {
 public:
  PySession(const py::object& model, int intra_op_threads, const std::string& optimization,
            bool reference_kernels, const std::string& conv_algorithm, int64_t max_shape_plans,
            int64_t max_shape_plan_bytes, int64_t specialize_after_runs, bool adapt_threads,
            const std::string& precision, const py::object& initializers,
            const std::map<std::string, int64_t>& dims_by_name,
            const std::map<std::string, int64_t>& dims_by_denotation,
            const py::object& external_files, bool deterministic, const std::string& max_isa) {
    SessionOptions o;
    // Model edits: the converter keeps borrowed arrays alive until the session is made.
    FeedConverter converter;
    if (!initializers.is_none())
      for (py::handle item : initializers) {
        py::tuple kv = py::reinterpret_borrow<py::tuple>(item);
        IoInfo decl{kv[0].cast<std::string>(), TypeInfo()};
        Value v = converter.Convert(decl, kv[1]);
        if (!v.is_tensor())
          ThrowIfError(InvalidArgument("initializer '", decl.name, "' must be a tensor"));
        o.edits.initializers.emplace_back(decl.name, v.tensor());
      }
    o.edits.dims_by_name = dims_by_name;
    o.edits.dims_by_denotation = dims_by_denotation;
    // In-memory external-data files: read through the buffer protocol, borrowed until the
    // session is made (the caller's dict keeps the objects alive).
    std::vector<py::buffer_info> external_buffers;
    if (!external_files.is_none())
      for (py::handle item : external_files.attr("items")()) {
        py::tuple kv = py::reinterpret_borrow<py::tuple>(item);
        py::buffer_info info = py::reinterpret_borrow<py::buffer>(kv[1]).request();
        const size_t size = static_cast<size_t>(info.size * info.itemsize);
        o.edits.external_files[kv[0].cast<std::string>()] =
            std::string_view(static_cast<const char*>(info.ptr), size);
        external_buffers.push_back(std::move(info));
      }
    o.adapt_threads = adapt_threads;
    o.deterministic = deterministic;
    o.max_isa = max_isa;  // checked by Session::Create
    if (precision != "fp32" && precision != "bf16")
      ThrowIfError(InvalidArgument("precision must be 'fp32' or 'bf16', got '", precision, "'"));
    o.bf16 = precision == "bf16";
    // Signed here so that a negative value gets this message rather than pybind11's overload
    // mismatch; 0 leaves the choice to the environment variable or the default.
    if (max_shape_plans < 0)
      ThrowIfError(InvalidArgument(
          "max_shape_plans must be >= 0 (0: ONYX_MAX_SHAPE_PLANS or the default), got ",
          max_shape_plans));
    if (max_shape_plan_bytes < 0)
      ThrowIfError(InvalidArgument(
          "max_shape_plan_bytes must be >= 0 (0: ONYX_MAX_SHAPE_PLAN_BYTES or the default), got ",
          max_shape_plan_bytes));
    if (specialize_after_runs < 0)
      ThrowIfError(InvalidArgument(
          "specialize_after_runs must be >= 0 (0: ONYX_SPECIALIZE_AFTER_RUNS or the default), "
          "got ",
          specialize_after_runs));
    o.limits.specialize_after_runs = specialize_after_runs;
    o.limits.max_shape_plans = max_shape_plans;
    o.limits.max_shape_plan_bytes = static_cast<uint64_t>(max_shape_plan_bytes);
    o.intra_op_threads = intra_op_threads;
    auto level = ParseOptimizationLevel(optimization);
    ThrowIfError(level.status());
    o.optimization = *level;
    o.reference_kernels = reference_kernels;
    if (conv_algorithm != "auto" && conv_algorithm != "direct")
      ThrowIfError(
          InvalidArgument("conv_algorithm must be 'auto' or 'direct', got '", conv_algorithm, "'"));
    o.winograd = conv_algorithm == "auto";
    if (py::isinstance<py::bytes>(model) || py::isinstance<py::bytearray>(model)) {
      const std::string bytes = py::isinstance<py::bytes>(model)
                                    ? std::string(py::reinterpret_borrow<py::bytes>(model))
                                    : std::string(py::reinterpret_borrow<py::bytearray>(model));
      py::gil_scoped_release release;  // parsing and planning a large model takes a while
      session_ = std::make_unique<Session>(Session::FromBytes(bytes, o));
    } else {
      const std::string path = py::str(model);
      py::gil_scoped_release release;
      session_ = std::make_unique<Session>(path, o);
    }
  }

  const Session& session() const { return *session_; }

  // Session::shape_plan_stats() plus the cache's limits as resolved at creation.
  py::dict ShapePlanStatsDict() const {
    const ShapePlanStats st = session_->shape_plan_stats();
    py::dict d;
    d["plans"] = st.plans;
    d["plan_bytes"] = st.plan_bytes;
    d["builds"] = st.builds;
    d["hits"] = st.hits;
    d["evictions"] = st.evictions;
    d["generic_runs"] = st.generic_runs;
    d["packed_weight_bytes"] = st.packed_weight_bytes;
    d["shared_constant_bytes"] = st.shared_constant_bytes;
    d["free_arena_bytes"] = st.free_arena_bytes;
    d["max_shape_plans"] = session_->limits().max_shape_plans;
    d["max_shape_plan_bytes"] = session_->limits().max_shape_plan_bytes;
    d["specialize_after_runs"] = session_->limits().specialize_after_runs;
    return d;
  }

  py::list Inputs() const {
    py::list l;
    for (const auto& io : session_->inputs()) l.append(IoDict(io));
    return l;
  }
  py::list Outputs() const {
    py::list l;
    for (const auto& io : session_->outputs()) l.append(IoDict(io));
    return l;
  }

  // feeds: a mapping name -> array / list / None. output_names: None for all outputs, in model
  // order. Everything is checked before the model runs; the GIL is released while it runs.
  // `terminate` (a TerminateFlag or None) and `timeout_ms` (0: none) cancel the run.
  // `profile` (a list or None): when a list, one tuple per executed kernel step is appended to it
  // (node, op_type, domain, impl, start ns on the monotonic clock, duration ns, thread id, depth,
  // fused nodes, output shapes).
  // `output_buffers` ({output name: writable numpy array} or None): outputs computed straight
  // into those arrays where the engine can (RunOptions::output_buffers); such an output is
  // returned as that very array object.
  py::list Run(const py::object& feeds, const py::object& output_names,
               const TerminateFlag* terminate, int64_t timeout_ms, const py::object& profile,
               const py::object& output_buffers) const {
    if (timeout_ms < 0)
      throw Error(InvalidArgument("timeout_ms must be >= 0 (0: no limit), got ", timeout_ms));
    const auto& outs = session_->outputs();
    std::vector<size_t> wanted;
    if (output_names.is_none()) {
      for (size_t i = 0; i < outs.size(); ++i) wanted.push_back(i);
    } else {
      for (py::handle n : output_names) {
        const std::string name = py::str(n);
        auto it = std::find_if(outs.begin(), outs.end(),
                               [&](const IoInfo& io) { return io.name == name; });
        if (it == outs.end())
          throw Error(InvalidArgument("unknown output '", name,
                                      "'; the model's outputs are: ", JoinNames(outs)));
        wanted.push_back(static_cast<size_t>(it - outs.begin()));
      }
    }
    if (!py::hasattr(feeds, "items"))
      throw Error(
          InvalidArgument("feeds must be a dict {input name: numpy array}, got a ",
                          std::string(py::str(py::type::handle_of(feeds).attr("__name__")))));
    const auto& ins = session_->inputs();
    FeedConverter converter;
    NamedValues in;
    for (py::handle item : feeds.attr("items")()) {
      py::tuple kv = py::reinterpret_borrow<py::tuple>(item);
      if (!py::isinstance<py::str>(kv[0]))
        throw Error(InvalidArgument("feed names must be str, got ", std::string(py::repr(kv[0]))));
      const std::string name = kv[0].cast<std::string>();
      auto it =
          std::find_if(ins.begin(), ins.end(), [&](const IoInfo& io) { return io.name == name; });
      if (it == ins.end())
        throw Error(InvalidArgument("unknown input '", name,
                                    "'; the model's inputs are: ", JoinNames(ins)));
      in.push_back({name, converter.Convert(*it, kv[1])});
    }
    // Caller arrays for outputs: only those the converter borrowed (contiguous, aligned) and that
    // are writable; the engine then decides per output whether it can write there.
    std::map<std::string, Tensor> buffers;
    std::map<std::string, std::pair<const void*, py::object>> buffer_arrays;
    if (!output_buffers.is_none())
      for (py::handle item : output_buffers.attr("items")()) {
        py::tuple kv = py::reinterpret_borrow<py::tuple>(item);
        const std::string name = kv[0].cast<std::string>();
        py::buffer_info info;
        try {
          info = py::reinterpret_borrow<py::buffer>(kv[1]).request(/*writable=*/true);
        } catch (const py::error_already_set&) {
          continue;  // read-only: the output is made as usual and copied by the caller
        }
        Value v = converter.Convert(IoInfo{name, TypeInfo()}, kv[1]);
        if (!v.is_tensor() || v.tensor().raw_data() != info.ptr) continue;
        buffers[name] = v.tensor();
        buffer_arrays[name] = {info.ptr, py::reinterpret_borrow<py::object>(kv[1])};
      }
    NamedValues out;
    Status status;
    RunOptions options;
    if (!buffers.empty()) options.output_buffers = &buffers;
    options.terminate = terminate ? &terminate->value : nullptr;
    options.timeout_ms = timeout_ms;
    struct Step {
      std::string node, op, domain, impl;
      int64_t start_ns, dur_ns;
      size_t thread;
      int depth, fused;
      std::vector<Shape> shapes;
    };
    std::vector<Step> steps;
    std::mutex steps_mutex;  // steps of parallel subgraphs may report from several threads
    const bool profiling = !profile.is_none();
    if (profiling)
      options.step_observer = [&](const StepEvent& e) {
        Step s{std::string(e.node_name),
               std::string(e.op_type),
               std::string(e.domain),
               std::string(e.impl),
               std::chrono::duration_cast<std::chrono::nanoseconds>(e.start.time_since_epoch())
                   .count(),
               e.duration.count(),
               std::hash<std::thread::id>()(e.thread),
               e.depth,
               e.fused_nodes,
               e.output_shapes};
        std::lock_guard<std::mutex> lock(steps_mutex);
        steps.push_back(std::move(s));
      };
    {
      py::gil_scoped_release release;
      status = session_->Run(in, options, &out);
    }
    if (profiling) {
      py::list events = profile;
      for (const Step& s : steps) {
        py::list shapes;
        for (const Shape& sh : s.shapes) shapes.append(py::cast(sh));
        events.append(py::make_tuple(DecodeLenient(s.node), s.op, s.domain, s.impl, s.start_ns,
                                     s.dur_ns, s.thread, s.depth, s.fused, shapes));
      }
    }
    ThrowIfError(status);
    py::list result;
    for (size_t i : wanted) {
      const Value& v = out[i].second;
      auto b = buffer_arrays.find(out[i].first);
      if (b != buffer_arrays.end() && v.is_tensor() && v.tensor().raw_data() == b->second.first)
        result.append(b->second.second);  // written in place
      else
        result.append(ValueToPython(v));
    }
    return result;
  }

 private:
  std::unique_ptr<Session> session_;
};

}  // namespace
}  // namespace onyx::python

PYBIND11_MODULE(_onyx, m) {
  using onyx::python::PySession;
  m.doc() =
      "onyx native module: the engine's Session over numpy values. Use the `onyx` package "
      "(onyx.InferenceSession) rather than this module directly.";
  onyx::python::RegisterErrors(m);
  onyx::python::InitNumpyBridge();
  onyx::python::RegisterCheck(m);
  using onyx::python::TerminateFlag;
  py::class_<TerminateFlag>(m, "TerminateFlag",
                            "A flag that stops runs given it (onyx.RunOptions.terminate).")
      .def(py::init<>())
      .def_property(
          "value", [](const TerminateFlag& f) { return f.value.load(); },
          [](TerminateFlag& f, bool v) { f.value.store(v); },
          "True stops the runs that use this flag between operators and loop iterations.");
  m.def(
      "prune",
      [](const std::string& model, const std::string& output, const std::string& method,
         double sparsity, const std::string& layers, int64_t block, bool sparse_initializers) {
        onyx::prune::PruneOptions o;
        auto m = onyx::prune::ParseMethod(method);
        onyx::ThrowIfError(m.status());
        o.method = *m;
        auto l = onyx::prune::ParseLayerSet(layers);
        onyx::ThrowIfError(l.status());
        o.layers = *l;
        o.sparsity = sparsity;
        o.block = block;
        o.sparse_initializers = sparse_initializers;
        onyx::StatusOr<onyx::prune::PruneReport> rep = onyx::prune::PruneReport{};
        {
          py::gil_scoped_release release;
          rep = onyx::prune::PruneModelFile(model, output, o);
        }
        onyx::ThrowIfError(rep.status());
        py::list rows;
        for (const auto& r : rep->layers) {
          py::dict d;
          d["initializer"] = r.initializer;
          d["node"] = r.node;
          d["op_type"] = r.op_type;
          d["shape"] = r.shape;
          d["threshold"] = r.threshold;
          d["elements"] = r.elements;
          d["zeros"] = r.zeros;
          d["sparsity"] = r.sparsity();
          rows.append(d);
        }
        py::dict d;
        d["layers"] = rows;
        d["elements"] = rep->elements;
        d["zeros"] = rep->zeros;
        d["sparsity"] = rep->sparsity();
        d["span_fraction"] = rep->span_fraction;
        d["skipped"] = rep->skipped;
        return d;
      },
      py::arg("model"), py::arg("output"), py::arg("method") = "relative",
      py::arg("sparsity") = 0.5, py::arg("layers") = "all", py::arg("block") = 1,
      py::arg("sparse_initializers") = false,
      "Prunes a model file's weights (docs/sparsity.md) into `output`; returns the report.");
  m.def(
      "model_metadata",
      [](const py::object& model) {
        onyx::StatusOr<onyx::ModelMetadata> meta = onyx::ModelMetadata{};
        if (py::isinstance<py::bytes>(model)) {
          const std::string bytes = model.cast<std::string>();
          py::gil_scoped_release release;
          meta = onyx::ReadModelMetadataFromBytes(bytes);
        } else {
          const std::string path = py::str(model);
          py::gil_scoped_release release;
          meta = onyx::ReadModelMetadata(path);
        }
        onyx::ThrowIfError(meta.status());
        using onyx::python::DecodeLenient;
        py::dict d;
        d["producer_name"] = DecodeLenient(meta->producer_name);
        d["producer_version"] = DecodeLenient(meta->producer_version);
        d["domain"] = DecodeLenient(meta->domain);
        d["description"] = DecodeLenient(meta->description);
        d["graph_name"] = DecodeLenient(meta->graph_name);
        d["graph_description"] = DecodeLenient(meta->graph_description);
        d["version"] = meta->version;
        py::dict custom;
        for (const auto& [k, v] : meta->custom_metadata)
          custom[DecodeLenient(k)] = DecodeLenient(v);
        d["custom_metadata_map"] = custom;
        return d;
      },
      py::arg("model"),
      "The metadata fields of a model file (path) or serialized ModelProto (bytes) as a dict.");
  m.def(
      "save_model",
      [](const py::object& model, const std::string& dest, const std::string& external_data_file,
         uint64_t external_min_bytes) {
        onyx::SaveModelOptions o;
        o.external_data_file = external_data_file;
        o.external_min_bytes = external_min_bytes;
        std::string path, bytes;
        if (py::isinstance<py::bytes>(model))
          bytes = model.cast<std::string>();
        else
          path = py::str(model);
        onyx::Status status;
        {
          py::gil_scoped_release release;
          status = onyx::SaveModelCopy(path, bytes, dest, o);
        }
        onyx::ThrowIfError(status);
      },
      py::arg("model"), py::arg("dest"), py::arg("external_data_file") = "",
      py::arg("external_min_bytes") = 1024,
      "Writes a copy of the model (path or bytes) to `dest`, its initializers inline or, those of "
      "at least external_min_bytes, in `external_data_file` next to `dest`.");
  py::class_<PySession>(m, "Session", "A loaded and planned ONNX model (native).")
      .def(py::init<const py::object&, int, const std::string&, bool, const std::string&, int64_t,
                    int64_t, int64_t, bool, const std::string&, const py::object&,
                    const std::map<std::string, int64_t>&, const std::map<std::string, int64_t>&,
                    const py::object&, bool, const std::string&>(),
           py::arg("model"), py::arg("intra_op_threads") = 0, py::arg("optimization") = "all",
           py::arg("reference_kernels") = false, py::arg("conv_algorithm") = "auto",
           py::arg("max_shape_plans") = 0, py::arg("max_shape_plan_bytes") = 0,
           py::arg("specialize_after_runs") = 0, py::arg("adapt_threads") = true,
           py::arg("precision") = "fp32", py::arg("initializers") = py::none(),
           py::arg("dims_by_name") = std::map<std::string, int64_t>(),
           py::arg("dims_by_denotation") = std::map<std::string, int64_t>(),
           py::arg("external_files") = py::none(), py::arg("deterministic") = false,
           py::arg("max_isa") = "",
           "Loads `model` (a path, or serialized ModelProto bytes) and plans it. "
           "`max_shape_plans` and `max_shape_plan_bytes` bound the cache of per-input-shape "
           "plans (0: the environment variable or the default). `initializers` ([(name, array)]) "
           "replace the model's, `dims_by_name` / `dims_by_denotation` fix symbolic input dims, "
           "`external_files` ({name: bytes}) stand in for external-data files. `deterministic`: "
           "bitwise-identical outputs at every thread count and run (docs/determinism.md).")
      .def("inputs", &PySession::Inputs,
           "Every graph input as a dict: name, type, shape, onyx_type (initializer-backed ones "
           "included).")
      .def("outputs", &PySession::Outputs, "Every graph output as a dict (see inputs()).")
      .def(
          "required_inputs",
          [](const PySession& s) {
            py::list names;
            for (const auto& n : s.session().required_inputs())
              names.append(onyx::python::DecodeLenient(n));
            return names;
          },
          "Names of the inputs that must be fed (no initializer default).")
      .def("run", &PySession::Run, py::arg("feeds"), py::arg("output_names") = py::none(),
           py::arg("terminate") = nullptr, py::arg("timeout_ms") = 0,
           py::arg("profile") = py::none(), py::arg("output_buffers") = py::none(),
           "Runs the model on {name: value} feeds; returns the requested outputs as a list. "
           "`terminate` (a TerminateFlag) and `timeout_ms` (0: none) stop it with onyx.Cancelled; "
           "`profile` (a list) receives one tuple per kernel step; `output_buffers` ({name: "
           "array}) are written in place where the engine can.")
      .def("shape_plan_stats", &PySession::ShapePlanStatsDict,
           "The cache of per-input-shape plans as a dict: plans, plan_bytes, builds, hits, "
           "evictions, generic_runs, packed_weight_bytes, shared_constant_bytes, "
           "free_arena_bytes, and the resolved max_shape_plans, max_shape_plan_bytes and "
           "specialize_after_runs.")
      .def_property_readonly(
          "intra_op_threads", [](const PySession& s) { return s.session().intra_op_threads(); },
          "Threads the session runs kernels on.")
      .def(
          "runs_by_threads",
          [](const PySession& s) {
            py::dict d;
            for (const auto& [t, n] : s.session().runs_by_threads()) d[py::int_(t)] = n;
            return d;
          },
          "Runs so far by the thread count they ran at (adapt_threads: fewer than "
          "intra_op_threads when that was faster lately).")
      .def_property_readonly(
          "deterministic", [](const PySession& s) { return s.session().deterministic(); },
          "False when the model uses a random operator (outputs vary from run to run).")
      .def_property_readonly(
          "deterministic_mode", [](const PySession& s) { return s.session().deterministic_mode(); },
          "Whether the session runs in deterministic mode (docs/determinism.md).")
      .def_property_readonly(
          "model_name",
          [](const PySession& s) { return onyx::python::DecodeLenient(s.session().model_name()); },
          "The name the engine's messages use for the model.")
      .def_property_readonly(
          "ir_version", [](const PySession& s) { return s.session().ir_version(); },
          "The model's IR version.")
      .def_property_readonly(
          "opsets", [](const PySession& s) { return s.session().opsets(); },
          "Opset imports: domain ('' is ai.onnx) -> version.");
}
