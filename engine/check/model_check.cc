// `onyx check`: runs the optimised plan once keeping every value, then, step by step, the model
// nodes each step stands for on the reference kernels, fed with the step's inputs as the
// optimised run made them (so errors never accumulate from step to step), and compares the
// step's outputs with theirs against the bounds of check_bounds.h. Comparison is at the level of
// model values: a channels-last value "x/nhwc" is transposed back to x's layout first.
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "engine/check/check_bounds.h"
#include "engine/executor.h"
#include "engine/model_loader.h"
#include "kernels/reference/control_flow_util.h"
#include "onyx/check.h"
#include "planner/planner.h"

namespace onyx {
namespace {

using check::Bound;
using check::BoundKind;
using check::MagnitudeInput;

constexpr const char* kChannelsLast = "/nhwc";

// A copy the later steps cannot overwrite (arena slots are reused).
Value Keep(const Value& v) {
  return v.is_tensor() ? Value(v.tensor().Clone()) : v;
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// y[i_perm] = x[i]: y's dim d is x's dim perm[d].
Tensor Permute(const Tensor& x, const std::vector<int64_t>& perm) {
  const int64_t rank = x.rank();
  Shape out(rank);
  for (int64_t d = 0; d < rank; ++d) out[d] = x.dim(perm[d]);
  Tensor y = Tensor::Allocate(x.dtype(), out);
  std::vector<int64_t> xstride(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d) xstride[d] = xstride[d + 1] * x.dim(d + 1);
  const size_t elem = DTypeSize(x.dtype());
  const auto* src = static_cast<const uint8_t*>(x.raw_data());
  auto* dst = static_cast<uint8_t*>(y.raw_data());
  std::vector<int64_t> idx(rank, 0);
  const int64_t n = y.numel();
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (int64_t d = 0; d < rank; ++d) off += idx[d] * xstride[perm[d]];
    std::memcpy(dst + i * elem, src + off * elem, elem);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
  return y;
}

// A channels-last value back in the model's layout: NHWC -> NCHW, or the grouped N,H,W,G,C/G
// form of a channel shuffle -> N,G,C/G,H,W.
StatusOr<Tensor> FromChannelsLast(const Tensor& x) {
  if (x.rank() == 4) return Permute(x, {0, 3, 1, 2});
  if (x.rank() == 5) return Permute(x, {0, 3, 4, 1, 2});
  return Unsupported("a channels-last value of rank ", x.rank());
}

// The magnitude a value enters the magnitude evaluation with.
Value Magnitude(const Value& v, MagnitudeInput how) {
  if (!v.is_tensor() || how == MagnitudeInput::kKeep) return v;
  const Tensor& x = v.tensor();
  if (x.dtype() != DType::kFloat && x.dtype() != DType::kDouble) return v;
  Tensor y = x.Clone();
  const double sign = how == MagnitudeInput::kNegAbs ? -1 : 1;
  if (x.dtype() == DType::kFloat) {
    float* p = y.data<float>();
    for (int64_t i = 0; i < y.numel(); ++i) p[i] = static_cast<float>(sign) * std::fabs(p[i]);
  } else {
    double* p = y.data<double>();
    for (int64_t i = 0; i < y.numel(); ++i) p[i] = sign * std::fabs(p[i]);
  }
  return y;
}

// Distance in units in the last place between two floats of the same format.
int64_t UlpDistance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  const int64_t oa = ia < 0 ? int64_t{INT32_MIN} - ia : ia;
  const int64_t ob = ib < 0 ? int64_t{INT32_MIN} - ib : ib;
  return oa > ob ? oa - ob : ob - oa;
}
int64_t UlpDistance(double a, double b) {
  int64_t ia, ib;
  std::memcpy(&ia, &a, 8);
  std::memcpy(&ib, &b, 8);
  const __int128 oa = ia < 0 ? static_cast<__int128>(INT64_MIN) - ia : ia;
  const __int128 ob = ib < 0 ? static_cast<__int128>(INT64_MIN) - ib : ib;
  const __int128 d = oa > ob ? oa - ob : ob - oa;
  return d > INT64_MAX ? INT64_MAX : static_cast<int64_t>(d);
}

// Accumulates the differences of one step's values.
struct Differences {
  int64_t elements = 0;
  double max_abs = 0, max_rel = 0, ratio = 0;
  int64_t max_ulp = 0;
  bool flagged = false;

  template <typename T>
  void Floats(const T* fast, const T* ref, const T* mag, int64_t n, const Bound& bound) {
    double ref_max = 0;
    for (int64_t i = 0; i < n; ++i)
      if (std::isfinite(ref[i]))
        ref_max = std::max(ref_max, std::fabs(static_cast<double>(ref[i])));
    for (int64_t i = 0; i < n; ++i) {
      ++elements;
      const double f = fast[i], r = ref[i];
      if (std::isnan(f) || std::isnan(r) || std::isinf(f) || std::isinf(r)) {
        if ((std::isnan(f) && std::isnan(r)) || f == r) continue;
        flagged = true;
        ratio = std::numeric_limits<double>::infinity();
        max_abs = std::numeric_limits<double>::infinity();
        continue;
      }
      const double d = std::fabs(f - r);
      max_abs = std::max(max_abs, d);
      if (r != 0) max_rel = std::max(max_rel, d / std::fabs(r));
      max_ulp = std::max(max_ulp, UlpDistance(fast[i], ref[i]));
      if (d == 0) continue;
      const double allowed =
          bound.Element(mag ? std::fabs(static_cast<double>(mag[i])) : 0, r, ref_max);
      const double q = allowed > 0 ? d / allowed : std::numeric_limits<double>::infinity();
      ratio = std::max(ratio, q);
      if (d > allowed) flagged = true;
    }
  }

  // Integers (and bools): differences in integer units, at most `tolerance`.
  template <typename T>
  void Integers(const T* fast, const T* ref, int64_t n, int64_t tolerance) {
    for (int64_t i = 0; i < n; ++i) {
      ++elements;
      const double f = static_cast<double>(fast[i]), r = static_cast<double>(ref[i]);
      const double d = std::fabs(f - r);
      if (d == 0) continue;
      max_abs = std::max(max_abs, d);
      if (r != 0) max_rel = std::max(max_rel, d / std::fabs(r));
      max_ulp = std::max(max_ulp, static_cast<int64_t>(std::min(d, 9.2e18)));
      ratio = std::max(ratio, tolerance > 0 ? d / static_cast<double>(tolerance)
                                            : std::numeric_limits<double>::infinity());
      if (d > static_cast<double>(tolerance)) flagged = true;
    }
  }

  // Anything else (float16, strings, ...): equal bytes, or flagged.
  void Bytes(const Tensor& fast, const Tensor& ref) {
    elements += ref.numel();
    bool equal = true;
    if (ref.dtype() == DType::kString) {
      for (int64_t i = 0; i < ref.numel(); ++i)
        if (fast.strings()[i] != ref.strings()[i]) equal = false;
    } else {
      equal = std::memcmp(fast.raw_data(), ref.raw_data(), ref.nbytes()) == 0;
    }
    if (!equal) {
      flagged = true;
      ratio = std::numeric_limits<double>::infinity();
    }
  }
};

// Integer and bool tensors through Differences::Integers; false for other element types.
bool CompareIntegers(const Tensor& fast, const Tensor& ref, int64_t tolerance, Differences* diff) {
  const int64_t n = ref.numel();
  switch (ref.dtype()) {
#define ONYX_CHECK_INTEGERS(dtype, T)                            \
  case dtype:                                                    \
    diff->Integers(fast.data<T>(), ref.data<T>(), n, tolerance); \
    return true;
    ONYX_CHECK_INTEGERS(DType::kInt8, int8_t)
    ONYX_CHECK_INTEGERS(DType::kUInt8, uint8_t)
    ONYX_CHECK_INTEGERS(DType::kInt16, int16_t)
    ONYX_CHECK_INTEGERS(DType::kUInt16, uint16_t)
    ONYX_CHECK_INTEGERS(DType::kInt32, int32_t)
    ONYX_CHECK_INTEGERS(DType::kUInt32, uint32_t)
    ONYX_CHECK_INTEGERS(DType::kInt64, int64_t)
    ONYX_CHECK_INTEGERS(DType::kUInt64, uint64_t)
    ONYX_CHECK_INTEGERS(DType::kBool, bool)
#undef ONYX_CHECK_INTEGERS
    default:
      return false;
  }
}

// The tensors a value holds: itself, a sequence's items, none for an empty optional; false for
// maps.
bool Items(const Value& v, std::vector<Tensor>* out) {
  out->clear();
  if (v.is_tensor()) {
    out->push_back(v.tensor());
  } else if (v.is_sequence()) {
    *out = v.sequence();
  } else if (!v.is_optional_none()) {
    return false;
  }
  return true;
}

// A node's inputs and the outer names its subgraphs read.
std::vector<std::string> AllInputs(const ir::Node& n) {
  std::vector<std::string> all = n.inputs;
  all.insert(all.end(), n.implicit_inputs.begin(), n.implicit_inputs.end());
  return all;
}

// Plans the subgraphs (If branches, Loop and Scan bodies, nested ones) of `g`, whose plan is
// `plan`, with `base`'s options, as Session does: heap-only plans that read the enclosing
// constants as their own. An If branch or Loop body that cannot be planned for these shapes keeps
// its error for the run that reaches it.
Status PlanSubgraphs(const ir::Graph& g, const planner::ExecutionPlan& plan,
                     const planner::PlanOptions& base, engine::SubgraphPlans* into,
                     const std::map<std::string, TypeInfo>* enclosing_types = nullptr,
                     const std::map<std::string, Value>* enclosing_values = nullptr) {
  std::map<std::string, TypeInfo> outer =
      enclosing_types ? *enclosing_types : std::map<std::string, TypeInfo>{};
  std::map<std::string, Value> outer_values =
      enclosing_values ? *enclosing_values : std::map<std::string, Value>{};
  for (const auto& slot : plan.slots) outer[slot.name] = slot.type;
  for (const auto& [id, v] : plan.constants)
    if (!v.is_tensor() || v.tensor().numel() == 0 || v.tensor().raw_data() != nullptr)
      outer_values.insert_or_assign(plan.slots[id].name, v);
  for (const auto& n : g.nodes)
    for (const auto& a : n.attributes) {
      std::vector<const ir::Graph*> subs;
      if (a.g) subs.push_back(a.g.get());
      for (const auto& sg : a.graphs) subs.push_back(sg.get());
      if (subs.empty()) continue;
      std::map<std::string, TypeInfo> node_outer;
      std::map<std::string, Value> node_values;
      for (const auto& name : n.implicit_inputs) {
        if (auto it = outer.find(name); it != outer.end()) node_outer.emplace(name, it->second);
        if (auto v = outer_values.find(name); v != outer_values.end())
          node_values.emplace(name, v->second);
      }
      for (const ir::Graph* sg : subs) {
        std::map<std::string, TypeInfo> in_types;
        for (const auto& in : sg->inputs) in_types[in.name] = in.type;
        planner::PlanOptions o = base;
        o.use_arena = false;
        o.precomputed = nullptr;
        o.outer_constants = &node_values;
        auto p = planner::BuildPlan(*sg, in_types, node_outer, o);
        if (!p.ok()) {
          Status s = p.status().WithContext(n.Describe() + ": attribute '" + a.name + "': ");
          if ((n.op_type == "If" || n.op_type == "Loop") && n.domain.empty() &&
              kernels::reference::DeferrableInferenceError(s)) {
            into->insert_or_assign(sg, std::move(s));
            continue;
          }
          return s;
        }
        const planner::ExecutionPlan& sub = **p;
        into->insert_or_assign(sg, std::move(p));
        ONYX_RETURN_IF_ERROR(PlanSubgraphs(*sg, sub, base, into, &node_outer, &node_values));
      }
    }
  return Status::Ok();
}

class Checker {
 public:
  Checker(const ir::Model& model, const CheckOptions& options)
      : model_(model), graph_(*model.graph), options_(options) {
    threads_ = options.threads > 0
                   ? options.threads
                   : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    arena_ = std::make_unique<tbb::task_arena>(threads_);
  }

  StatusOr<CheckReport> Run(const NamedValues& feeds) {
    const auto start = std::chrono::steady_clock::now();
    ONYX_RETURN_IF_ERROR(RunOptimised(feeds));
    for (size_t i = 0; i < graph_.nodes.size(); ++i) {
      model_nodes_[&graph_.nodes[i]] = static_cast<int>(i);
      for (const auto& o : graph_.nodes[i].outputs)
        if (!o.empty()) producer_[o] = static_cast<int>(i);
    }
    CheckReport report;
    report.model = model_.display_name;
    report.steps = static_cast<int>(plan_->steps.size());
    for (size_t s = 0; s < plan_->steps.size(); ++s) {
      StepCheck c = CheckStep(static_cast<int>(s));
      report.compared += c.compared;
      report.flagged += c.flagged;
      report.checks.push_back(std::move(c));
    }
    report.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return report;
  }

 private:
  Status RunOptimised(const NamedValues& feeds) {
    std::map<std::string, TypeInfo> types;
    std::set<std::string> declared;
    for (const auto& in : graph_.inputs) declared.insert(in.name);
    for (const auto& [name, v] : feeds) {
      if (!declared.count(name))
        return InvalidArgument(model_.display_name, ": the model has no input '", name, "'");
      types[name] = TypeOfValue(v);
      values_[name] = v;
    }
    for (const auto& name : graph_.RequiredInputs())
      if (!types.count(name))
        return InvalidArgument(model_.display_name, ": input '", name, "' is not fed");
    planner::PlanOptions o;
    o.optimization = static_cast<planner::OptLevel>(options_.optimization);
    o.winograd = options_.winograd;
    o.threads = threads_;
    o.limits = ResolveLimits(options_.limits);
    auto plan = planner::BuildPlan(graph_, types, {}, o);
    if (!plan.ok()) return plan.status().WithContext(model_.display_name + ": ");
    plan_ = std::move(plan).value();
    for (const auto& [id, v] : plan_->constants) constants_[plan_->slots[id].name] = v;

    std::vector<Value> inputs;
    for (const auto& in : graph_.inputs) {
      auto it = values_.find(in.name);
      inputs.push_back(it == values_.end() ? Value() : it->second);
    }
    ONYX_RETURN_IF_ERROR(
        PlanSubgraphs(graph_, *plan_, o, &subplans_).WithContext(model_.display_name + ": "));
    RunOptions ro;
    // The main graph's values only: subgraph runs report theirs too, once per iteration.
    ro.observer = [this](const std::string& name, const Value& v) {
      if (plan_->slot_of.count(name)) values_[name] = Keep(v);
    };
    std::vector<Value> outs;
    Status s;
    const engine::Executor ex(&subplans_, threads_);
    arena_->execute([&] { s = ex.Run(*plan_, &arenas_, inputs, nullptr, &outs, ro); });
    return s.WithContext(model_.display_name + ": optimised run: ");
  }

  // A model value as the optimised run made it, in the model's layout; a constant of the plan or
  // the model; or, for a value no step made (its node was removed or folded away into others),
  // its producer's reference result on such values.
  StatusOr<Value> ModelValue(const std::string& name, bool* is_constant) {
    *is_constant = false;
    if (auto it = values_.find(name); it != values_.end()) return it->second;
    if (auto it = values_.find(name + kChannelsLast);
        it != values_.end() && it->second.is_tensor()) {
      ONYX_ASSIGN_OR_RETURN(Tensor t, FromChannelsLast(it->second.tensor()));
      return Value(t);
    }
    if (auto it = constants_.find(name); it != constants_.end()) {
      *is_constant = true;
      return it->second;
    }
    if (auto it = graph_.initializers.find(name); it != graph_.initializers.end()) {
      *is_constant = true;
      return Value(it->second);
    }
    if (auto it = derived_.find(name); it != derived_.end()) return it->second;
    auto p = producer_.find(name);
    if (p == producer_.end()) return NotFound("no value '", name, "' in the optimised run");
    const ir::Node& n = graph_.nodes[p->second];
    std::map<std::string, Value> in;
    std::set<std::string> consts;
    for (const auto& i : AllInputs(n)) {
      if (i.empty() || in.count(i)) continue;
      bool c = false;
      ONYX_ASSIGN_OR_RETURN(in[i], ModelValue(i, &c));
      if (c) consts.insert(i);
    }
    ONYX_ASSIGN_OR_RETURN(auto outs, RunReference({n}, in, consts));
    for (auto& [k, v] : outs) derived_[k] = v;
    auto it = derived_.find(name);
    if (it == derived_.end()) return NotFound("no value '", name, "' from ", n.Describe());
    return it->second;
  }

  // Runs `nodes` on the reference kernels; `inputs` binds every name they read from outside
  // (`constants` among them become initializers, so shape inference sees them). Returns every
  // value the nodes produce.
  StatusOr<std::map<std::string, Value>> RunReference(const std::vector<ir::Node>& nodes,
                                                      const std::map<std::string, Value>& inputs,
                                                      const std::set<std::string>& constants) {
    ir::Graph g;
    g.name = "check";
    g.opsets = graph_.opsets;
    g.nodes = nodes;
    std::map<std::string, TypeInfo> types;
    std::vector<Value> feed;
    for (const auto& [name, v] : inputs) {
      if (constants.count(name) && v.is_tensor() && v.tensor().raw_data() != nullptr) {
        g.initializers[name] = v.tensor();
      } else {
        g.inputs.push_back({name, TypeOfValue(v)});
        types[name] = TypeOfValue(v);
        feed.push_back(v);
      }
    }
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      g.nodes[i].index = static_cast<int>(i);
      for (const auto& o : g.nodes[i].outputs)
        if (!o.empty()) g.outputs.push_back({o, TypeInfo()});
    }
    planner::PlanOptions o;
    o.optimization = planner::OptLevel::kNone;
    o.reference_kernels = true;
    o.use_arena = false;
    o.threads = threads_;
    auto plan = planner::BuildPlan(g, types, {}, o);
    if (!plan.ok()) return plan.status();
    engine::SubgraphPlans subplans;
    ONYX_RETURN_IF_ERROR(PlanSubgraphs(g, **plan, o, &subplans));
    std::vector<Value> outs;
    Status s;
    const engine::Executor ex(&subplans, threads_);
    arena_->execute([&] { s = ex.Run(**plan, &arenas_, feed, nullptr, &outs, RunOptions{}); });
    ONYX_RETURN_IF_ERROR(s);
    std::map<std::string, Value> by_name;
    for (size_t i = 0; i < outs.size(); ++i) by_name[g.outputs[i].name] = std::move(outs[i]);
    return by_name;
  }

  // The model nodes a step stands for: those the fusion pass folded into it, the node itself, or
  // the model node a layout rewrite copied (same index and outputs). Empty: planner-made.
  std::vector<const ir::Node*> ModelNodesOf(const planner::PlanStep& st) const {
    if (!st.fused.empty()) return st.fused;
    if (model_nodes_.count(st.node)) return {st.node};
    const int idx = st.node->index;
    if (idx < 0 || idx >= static_cast<int>(graph_.nodes.size())) return {};
    const ir::Node& m = graph_.nodes[idx];
    if (m.outputs.size() != st.node->outputs.size()) return {};
    for (size_t i = 0; i < m.outputs.size(); ++i) {
      std::string o = st.node->outputs[i];
      if (EndsWith(o, kChannelsLast)) o.resize(o.size() - std::strlen(kChannelsLast));
      if (o != m.outputs[i]) return {};
    }
    return {&m};
  }

  StepCheck CheckStep(int s) {
    const planner::PlanStep& st = plan_->steps[s];
    StepCheck c;
    c.step = s;
    c.name = st.node->name;
    c.op = st.node->op_type;
    c.impl = st.impl_name;
    const std::string variant = st.kernel ? st.kernel->variant() : "";
    if (!variant.empty() && !EndsWith(c.impl, "/" + variant)) c.impl += "/" + variant;
    if (st.op && !st.op->deterministic) {
      c.note = "random operator: its outputs differ from run to run";
      return c;
    }
    std::vector<const ir::Node*> nodes = ModelNodesOf(st);
    const bool planner_made = nodes.empty();
    if (planner_made) {
      nodes = {st.node};  // a layout Transpose: checked against its own reference
      c.note = "planner-made";
    }
    std::sort(nodes.begin(), nodes.end(),
              [](const ir::Node* a, const ir::Node* b) { return a->index < b->index; });
    for (const ir::Node* n : nodes) c.nodes.push_back(n->op_type + " '" + n->name + "'");

    // The values to compare: the step's outputs, as model values.
    std::set<std::string> produced;
    for (const ir::Node* n : nodes)
      for (const auto& o : n->outputs)
        if (!o.empty()) produced.insert(o);
    std::vector<std::pair<std::string, std::string>> targets;  // model value, optimised value
    for (int o : st.outputs) {
      if (o < 0) continue;
      const std::string& name = plan_->slots[o].name;
      std::string base = name;
      if (!planner_made && EndsWith(base, kChannelsLast))
        base.resize(base.size() - std::strlen(kChannelsLast));
      if (produced.count(base) && values_.count(name)) targets.push_back({base, name});
    }
    if (targets.empty()) {
      c.note = "no output to compare";
      return c;
    }

    // The step's inputs as the optimised run made them.
    std::map<std::string, Value> inputs;
    std::set<std::string> constants;
    for (const ir::Node* n : nodes)
      for (const auto& i : AllInputs(*n)) {
        if (i.empty() || produced.count(i) || inputs.count(i)) continue;
        bool is_const = false;
        StatusOr<Value> v = planner_made ? LookUpStepInput(i, &is_const) : ModelValue(i, &is_const);
        if (!v.ok()) {
          c.note = "input '" + i + "': " + v.status().message();
          return c;
        }
        inputs[i] = std::move(v).value();
        if (is_const) constants.insert(i);
        if (!planner_made && derived_.count(i) && !values_.count(i))
          c.note += (c.note.empty() ? "" : "; ") + std::string("input '") + i +
                    "' from the reference of its producer (no step made it)";
      }
    std::vector<ir::Node> copies;
    for (const ir::Node* n : nodes) copies.push_back(*n);
    auto ref = RunReference(copies, inputs, constants);
    if (!ref.ok()) {
      c.note = "reference run failed: " + ref.status().message();
      return c;
    }

    std::map<std::string, TypeInfo> types;
    for (const auto& [k, v] : inputs) types[k] = TypeOfValue(v);
    for (const auto& [k, v] : *ref) types[k] = TypeOfValue(v);
    const bool winograd = c.impl.find("winograd") != std::string::npos;
    const Bound bound = check::BoundFor(nodes, types, winograd);
    c.bound_kind = check::BoundKindName(bound.kind);
    c.bound = bound.text;

    std::map<std::string, Value> magnitude;
    if (bound.kind == BoundKind::kMagnitude) {
      auto m = RunMagnitude(nodes, inputs, constants, winograd);
      if (!m.ok()) {
        c.note = "magnitude run failed: " + m.status().message();
        return c;
      }
      magnitude = std::move(m).value();
    }

    Differences diff;
    for (const auto& [model_name, fast_name] : targets) {
      c.values.push_back(model_name);
      const Value& fv = values_.at(fast_name);
      const Value& rv = ref->at(model_name);
      std::vector<Tensor> fast_items, ref_items, mag_items;
      if (!Items(fv, &fast_items) || !Items(rv, &ref_items)) {
        c.note = "value '" + model_name + "' is a map: not compared";
        return c;
      }
      if (auto it = magnitude.find(model_name); it != magnitude.end())
        if (!Items(it->second, &mag_items) || mag_items.size() != ref_items.size())
          mag_items.clear();
      if (fv.kind() != rv.kind() || fast_items.size() != ref_items.size()) {
        c.flagged = true;
        c.note = "value '" + model_name + "': " + TypeOfValue(fv).ToString() +
                 " but the reference made " + TypeOfValue(rv).ToString();
        return c;
      }
      for (size_t k = 0; k < ref_items.size(); ++k) {
        Tensor fast = fast_items[k];
        if (fast_name != model_name) {
          auto t = FromChannelsLast(fast);
          if (!t.ok()) {
            c.note = t.status().message();
            return c;
          }
          fast = std::move(t).value();
        }
        const Tensor& r = ref_items[k];
        if (fast.dtype() != r.dtype() || fast.shape() != r.shape()) {
          c.flagged = true;
          c.note = "value '" + model_name + "': " + TypeOfValue(fast).ToString() +
                   " but the reference made " + TypeOfValue(r).ToString();
          return c;
        }
        const Tensor* mag = mag_items.empty() ? nullptr : &mag_items[k];
        if (mag && (mag->dtype() != r.dtype() || mag->numel() != r.numel())) mag = nullptr;
        if (r.dtype() == DType::kFloat) {
          diff.Floats(fast.data<float>(), r.data<float>(), mag ? mag->data<float>() : nullptr,
                      r.numel(), bound);
        } else if (r.dtype() == DType::kDouble) {
          diff.Floats(fast.data<double>(), r.data<double>(), mag ? mag->data<double>() : nullptr,
                      r.numel(), bound);
        } else if (!CompareIntegers(fast, r, bound.integer_tolerance, &diff)) {
          diff.Bytes(fast, r);
        }
      }
    }
    c.compared = true;
    c.elements = diff.elements;
    c.max_abs = diff.max_abs;
    c.max_rel = diff.max_rel;
    c.max_ulp = diff.max_ulp;
    c.ratio = diff.ratio;
    c.flagged = diff.flagged;
    return c;
  }

  // A planner-made step's input, by the name the plan gives it.
  StatusOr<Value> LookUpStepInput(const std::string& name, bool* is_constant) {
    *is_constant = false;
    if (auto it = values_.find(name); it != values_.end()) return it->second;
    if (auto it = constants_.find(name); it != constants_.end()) {
      *is_constant = true;
      return it->second;
    }
    return NotFound("no value '", name, "' in the optimised run");
  }

  // The nodes evaluated on magnitudes (check_bounds.h's rules), on the same inputs; `winograd`:
  // a convolution's magnitude is its S_patch.
  StatusOr<std::map<std::string, Value>> RunMagnitude(const std::vector<const ir::Node*>& nodes,
                                                      const std::map<std::string, Value>& inputs,
                                                      const std::set<std::string>& constants,
                                                      bool winograd) {
    std::vector<ir::Node> rewritten;
    std::map<std::string, Value> in;
    std::set<std::string> consts;
    const auto add = [&](ir::Node m, const std::vector<MagnitudeInput>& how) {
      for (size_t i = 0; i < m.inputs.size(); ++i) {
        const std::string name = m.inputs[i];
        auto it = inputs.find(name);
        if (name.empty() || it == inputs.end()) continue;  // made inside: already a magnitude
        const MagnitudeInput h = i < how.size() ? how[i] : MagnitudeInput::kAbs;
        const std::string renamed = h == MagnitudeInput::kKeep     ? name
                                    : h == MagnitudeInput::kNegAbs ? name + "|-abs|"
                                                                   : name + "|abs|";
        m.inputs[i] = renamed;
        if (!in.count(renamed)) in[renamed] = Magnitude(it->second, h);
        if (constants.count(name)) consts.insert(renamed);
      }
      rewritten.push_back(std::move(m));
    };
    for (const ir::Node* n : nodes) {
      auto w =
          n->op_type == "Conv" && n->inputs.size() > 1 ? inputs.find(n->inputs[1]) : inputs.end();
      if (winograd && w != inputs.end() && w->second.is_tensor()) {
        std::vector<ir::Node> patch;
        Tensor wsum;
        const std::string wsum_name = n->inputs[1] + "|wsum";
        if (check::WinogradMagnitude(*n, w->second.tensor(), wsum_name, &patch, &wsum)) {
          in[wsum_name] = wsum;
          consts.insert(wsum_name);
          add(patch[0], {MagnitudeInput::kAbs});
          add(patch[1], {MagnitudeInput::kKeep, MagnitudeInput::kKeep, MagnitudeInput::kAbs});
          continue;
        }
      }
      ir::Node m;
      std::vector<MagnitudeInput> how;
      if (!check::MagnitudeRule(*n, &m, &how))
        return Unsupported(n->Describe(), " has no magnitude rule");
      add(std::move(m), how);
    }
    return RunReference(rewritten, in, consts);
  }

  const ir::Model& model_;
  const ir::Graph& graph_;
  CheckOptions options_;
  int threads_ = 1;
  std::unique_ptr<tbb::task_arena> arena_;
  engine::SubgraphPlans subplans_;  // the optimised plan's subgraphs
  memory::ArenaPool arenas_;
  std::unique_ptr<planner::ExecutionPlan> plan_;
  std::map<std::string, Value> values_;     // every value of the optimised run, feeds included
  std::map<std::string, Value> constants_;  // the optimised plan's constants by name
  std::map<std::string, Value> derived_;    // values no step made, from their producers
  std::map<const ir::Node*, int> model_nodes_;
  std::map<std::string, int> producer_;  // model value -> index of the model node making it
};

std::string Fixed(double v, const char* fmt = "%.3g") {
  if (std::isinf(v)) return "inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string JsonString(const std::string& s) {
  return "\"" + planner::JsonEscape(s) + "\"";
}

std::string Joined(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// Long names lose their middle: model names differ at both ends ("encoder.layer.4" ... "/MatMul").
std::string Clip(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  const size_t head = (n - 3) / 2;
  return s.substr(0, head) + "..." + s.substr(s.size() - (n - 3 - head));
}

}  // namespace

std::string CheckReport::ToText(bool all) const {
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "%4s  %-36s %-30s %-30s %10s %10s %8s %7s  %-32s %s\n", "step",
                "node", "ops", "kernel", "max abs", "max rel", "max ulp", "ratio", "bound", "");
  out << line;
  for (const auto& c : checks) {
    if (!all && !c.flagged) continue;
    std::vector<std::string> ops;
    for (const auto& n : c.nodes) ops.push_back(n.substr(0, n.find(' ')));
    if (!c.compared) {
      std::snprintf(line, sizeof line, "%4d  %-36s %-30s %-30s  not compared: %s\n", c.step,
                    Clip(c.name, 36).c_str(), Clip(Joined(ops, "+"), 30).c_str(),
                    Clip(c.impl, 30).c_str(), c.note.c_str());
    } else {
      std::snprintf(line, sizeof line, "%4d  %-36s %-30s %-30s %10s %10s %8lld %7s  %-32s %s\n",
                    c.step, Clip(c.name, 36).c_str(), Clip(Joined(ops, "+"), 30).c_str(),
                    Clip(c.impl, 30).c_str(), Fixed(c.max_abs).c_str(), Fixed(c.max_rel).c_str(),
                    static_cast<long long>(c.max_ulp), Fixed(c.ratio, "%.3f").c_str(),
                    c.bound.c_str(), c.flagged ? "FLAG" : "OK");
    }
    out << line;
  }
  double worst = 0;
  int64_t worst_ulp = 0;
  for (const auto& c : checks)
    if (c.compared) {
      worst = std::max(worst, c.ratio);
      worst_ulp = std::max(worst_ulp, c.max_ulp);
    }
  out << model << ": " << steps << " steps, " << compared << " compared, " << flagged
      << " above their bound; worst ratio to bound " << Fixed(worst, "%.3f") << ", worst "
      << worst_ulp << " ulp; " << Fixed(seconds, "%.2f") << " s\n";
  return out.str();
}

std::string CheckReport::ToJson() const {
  std::ostringstream out;
  out << "{\"model\": " << JsonString(model) << ", \"steps\": " << steps
      << ", \"compared\": " << compared << ", \"flagged\": " << flagged
      << ", \"seconds\": " << JsonNumber(seconds)
      << ", \"unit_roundoff\": " << JsonNumber(check::kUnitRoundoff) << ", \"checks\": [";
  for (size_t i = 0; i < checks.size(); ++i) {
    const StepCheck& c = checks[i];
    out << (i ? "," : "") << "\n  {\"step\": " << c.step << ", \"name\": " << JsonString(c.name)
        << ", \"op\": " << JsonString(c.op) << ", \"impl\": " << JsonString(c.impl)
        << ", \"nodes\": [";
    for (size_t k = 0; k < c.nodes.size(); ++k) out << (k ? ", " : "") << JsonString(c.nodes[k]);
    out << "], \"values\": [";
    for (size_t k = 0; k < c.values.size(); ++k) out << (k ? ", " : "") << JsonString(c.values[k]);
    out << "], \"compared\": " << (c.compared ? "true" : "false")
        << ", \"flagged\": " << (c.flagged ? "true" : "false")
        << ", \"bound_kind\": " << JsonString(c.bound_kind)
        << ", \"bound\": " << JsonString(c.bound) << ", \"elements\": " << c.elements
        << ", \"max_abs\": " << JsonNumber(c.max_abs) << ", \"max_rel\": " << JsonNumber(c.max_rel)
        << ", \"max_ulp\": " << c.max_ulp << ", \"ratio\": " << JsonNumber(c.ratio)
        << ", \"note\": " << JsonString(c.note) << "}";
  }
  out << "\n]}\n";
  return out.str();
}

StatusOr<CheckReport> CheckModel(const std::string& path, const NamedValues& feeds,
                                 const CheckOptions& options) {
  ONYX_ASSIGN_OR_RETURN(ir::Model model,
                        engine::LoadModelFromFile(path, ResolveLimits(options.limits)));
  Checker checker(model, options);
  return checker.Run(feeds);
}

StatusOr<CheckReport> CheckModelBytes(const std::string& bytes, const NamedValues& feeds,
                                      const CheckOptions& options) {
  ONYX_ASSIGN_OR_RETURN(
      ir::Model model, engine::LoadModelFromBytes(bytes, "<bytes>", ResolveLimits(options.limits)));
  Checker checker(model, options);
  return checker.Run(feeds);
}

}  // namespace onyx
