// Session: load → check operators → plan subgraphs → creation-time plan; run: validate feeds,
// look up (or build) the plan for the input-shape signature, execute in the session's TBB arena.
#include "onyx/session.h"

#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <new>
#include <set>
#include <sstream>
#include <thread>

#include "engine/deterministic_mode.h"
#include "engine/executor.h"
#include "engine/model_loader.h"
#include "engine/shape_cache.h"
#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"
#include "kernels/reference/control_flow_util.h"
#include "kernels/weight_cache.h"
#include "memory/aligned_alloc.h"
#include "planner/planner.h"

namespace onyx {

using engine::CachedPlan;
using engine::PlanPtr;
using engine::SubgraphPlans;
using planner::ExecutionPlan;

StatusOr<OptimizationLevel> ParseOptimizationLevel(const std::string& s) {
  if (s == "none" || s == "0") return OptimizationLevel::kNone;
  if (s == "basic" || s == "1") return OptimizationLevel::kBasic;
  if (s == "all" || s == "2") return OptimizationLevel::kAll;
  return InvalidArgument("optimization level must be none, basic or all; got '", s, "'");
}

struct Session::Impl {
  ir::Model model;
  SessionOptions options;
  Limits limits;  // options.limits resolved
  std::vector<IoInfo> inputs, outputs;
  SubgraphPlans subplans;
  std::unique_ptr<tbb::task_arena> arena;
  int threads = 1;
  kernels::IsaLevel max_isa = kernels::IsaLevel::kScalar;  // SessionIsaCap(options.max_isa)
  bool adapt_threads = true;   // SessionOptions::adapt_threads and ONYX_ADAPT_THREADS
  bool sparse_kernels = true;  // SessionOptions::sparse_kernels and ONYX_SPARSE_KERNELS
  // Runs by thread count, indexed 1..threads (no lock on the run path).
  std::unique_ptr<std::atomic<int64_t>[]> runs_by_threads;
  // Shared by every shape specialisation (DESIGN contract 3): packed weights, constants the
  // fusion pass derives, node outputs folded once whatever the shapes, and the run arenas.
  mutable kernels::WeightCache weights;
  mutable planner::ConstantPool constants;
  std::map<std::string, Value> precomputed;
  mutable memory::ArenaPool arenas;
  // Plans by input signature, least recently used dropped first (declared after what their
  // kernels share, so they go first).
  std::unique_ptr<engine::ShapeCache> plans;
  // Set when the model can only ever have one plan: its weights were released after packing
  // and every run uses this plan (the feeds are checked against the static declared types).
  PlanPtr only_plan;
  bool release_weights = false;
  // The plan for the declared input types, which runs any feed of the declared inputs: new
  // shapes run on it until they have been seen specialize_after_runs times, while `generic_ok`
  // (its weight-heavy steps all have fast kernels, and it has not failed where a shape plan ran).
  PlanPtr generic;
  std::set<std::string> generic_inputs;
  mutable std::atomic<bool> generic_ok{false};
  // The count the latest switch of any plan's ThreadChoice chose (adapt_threads; 0: none yet).
  // Shape-generic runs take it: runs at new shapes do not compare with each other, so they
  // follow what the plans of shapes seen before learnt about the machine's load. New plans start
  // at it: each shape's plan may see only a few runs, too few to learn the load on its own.
  mutable std::atomic<int> learnt_threads{0};
  std::shared_ptr<engine::ThreadChoice::Probes> probes =
      std::make_shared<engine::ThreadChoice::Probes>();
  std::function<void(const std::string&)> before_build;  // testing::SetBeforePlanBuild

  planner::PlanOptions PlanOpts() const {
    planner::PlanOptions o;
    o.optimization = static_cast<planner::OptLevel>(options.optimization);
    o.reference_kernels = options.reference_kernels;
    o.winograd = options.winograd;
    o.bf16 = options.bf16;
    o.sparse_kernels = sparse_kernels;
    o.deterministic = options.deterministic;
    o.max_isa = max_isa;
    o.release_packed_constants = release_weights;
    o.threads = threads;
    o.limits = limits;
    o.weights = &weights;
    o.constant_pool = &constants;
    if (!precomputed.empty()) o.precomputed = &precomputed;
    return o;
  }
  std::string Prefix() const { return model.display_name + ": "; }

  // The constants of `plan` by name (values a kernel released to its packed copy left out), for
  // the subgraphs planned inside it.
  static std::map<std::string, Value> ConstantsByName(const planner::ExecutionPlan& plan) {
    std::map<std::string, Value> out;
    for (const auto& [id, v] : plan.constants)
      if (!v.is_tensor() || v.tensor().numel() == 0 || v.tensor().raw_data() != nullptr)
        out.emplace(plan.slots[id].name, v);
    return out;
  }

  // Plans every subgraph of `g` into `into`, as dynamic (heap-only) plans. `outer` holds the
  // types visible from enclosing scopes, so bodies that read outer values infer their types;
  // `outer_values` the enclosing constants among them, which the subgraphs read as constants of
  // their own. `shaped`: the set made for a plan of concrete shapes, where a subgraph that cannot
  // be planned is left out (the session's set made at creation runs it).
  Status BuildSubplans(const ir::Graph& g, const std::map<std::string, TypeInfo>& outer,
                       const std::map<std::string, Value>& outer_values, SubgraphPlans* into,
                       bool shaped) const {
    for (const auto& n : g.nodes)
      for (const auto& a : n.attributes) {
        std::vector<const ir::Graph*> subs;
        if (a.g) subs.push_back(a.g.get());
        for (const auto& sg : a.graphs) subs.push_back(sg.get());
        if (subs.empty()) continue;
        // Only the names the node's subgraphs read from outside (nested ones included): passing
        // every enclosing value on made a long chain of Ifs quadratic to plan.
        std::map<std::string, TypeInfo> node_outer;
        std::map<std::string, Value> node_values;
        for (const auto& name : n.implicit_inputs) {
          auto it = outer.find(name);
          if (it != outer.end()) node_outer.emplace(name, it->second);
          auto v = outer_values.find(name);
          if (v != outer_values.end()) node_values.emplace(name, v->second);
        }
        for (const ir::Graph* sg : subs) {
          std::map<std::string, TypeInfo> in_types;
          for (const auto& in : sg->inputs) in_types[in.name] = in.type;
          planner::PlanOptions o = PlanOpts();
          o.use_arena = false;
          o.precomputed = nullptr;  // names of the main graph's nodes
          o.outer_constants = &node_values;
          auto p = planner::BuildPlan(*sg, in_types, node_outer, o);
          if (!p.ok() && shaped) continue;
          if (!p.ok()) {
            Status s = p.status().WithContext(n.Describe() + ": attribute '" + a.name + "': ");
            // An If branch or a Loop body that cannot be planned for these shapes may never run:
            // the main plan accepted the node (InferIf, InferLoop), so the error waits for it.
            if ((n.op_type == "If" || n.op_type == "Loop") && n.domain.empty() &&
                kernels::reference::DeferrableInferenceError(s)) {
              into->insert_or_assign(sg, std::move(s));
              continue;
            }
            return s;
          }
          std::map<std::string, TypeInfo> inner = node_outer;
          for (const auto& slot : (*p)->slots) inner[slot.name] = slot.type;
          std::map<std::string, Value> inner_values = node_values;
          for (auto& [name, v] : ConstantsByName(**p)) inner_values.insert_or_assign(name, v);
          into->insert_or_assign(sg, std::move(p));
          ONYX_RETURN_IF_ERROR(BuildSubplans(*sg, inner, inner_values, into, shaped));
        }
      }
    return Status::Ok();
  }

  Status CheckFeed(const IoInfo& decl, const Value& v) const {
    const TypeInfo& t = decl.type;
    const std::string who = "input '" + decl.name + "'";
    if (!v.defined()) return InvalidArgument(Prefix(), who, " has no value");
    switch (t.kind) {
      case TypeInfo::Kind::kTensor: {
        if (!v.is_tensor())
          return InvalidArgument(Prefix(), who, " expects a tensor ", t.ToString(), ", got a ",
                                 v.is_sequence() ? "sequence" : "empty optional");
        const Tensor& x = v.tensor();
        if (t.elem != DType::kUndefined && x.dtype() != t.elem)
          return InvalidArgument(Prefix(), who, " expects element type ", DTypeName(t.elem),
                                 ", got ", DTypeName(x.dtype()));
        if (t.has_shape) {
          if (x.rank() != t.rank())
            return InvalidArgument(Prefix(), who, " expects rank ", t.rank(), " (shape ",
                                   t.ToString(), "), got shape ", ShapeToString(x.shape()));
          for (int64_t d = 0; d < x.rank(); ++d)
            if (t.dims[d].known() && t.dims[d].value != x.dim(d))
              return InvalidArgument(Prefix(), who, " expects dim ", d, " = ", t.dims[d].value,
                                     " (shape ", t.ToString(), "), got shape ",
                                     ShapeToString(x.shape()));
        }
        // A caller-made tensor may carry any dims: [2^62, 4] must not reach a kernel as a
        // count that wrapped around.
        ONYX_RETURN_IF_ERROR(
            memory::CheckTensorBytes(who, x.dtype(), x.shape(), limits.max_tensor_bytes)
                .WithContext(Prefix()));
        if (x.numel() > 0 && x.dtype() != DType::kString && x.raw_data() == nullptr)
          return InvalidArgument(Prefix(), who, " has no data");
        return Status::Ok();
      }
      case TypeInfo::Kind::kSequence:
        if (!v.is_sequence() && !v.is_optional_none())
          return InvalidArgument(Prefix(), who, " expects a sequence ", t.ToString());
        return Status::Ok();
      default:
        return Status::Ok();
    }
  }

  // True when no feed can ever ask for a second plan: every input is a tensor of static declared
  // type, none is an overridable initializer, and no subgraph reads outer values.
  bool PlannedOnce() const {
    const ir::Graph& g = *model.graph;
    if (g.initializers.empty() && g.sparse_initializers.empty()) return false;
    for (const auto& in : g.inputs) {
      if (g.IsInitializer(in.name) || in.type.kind != TypeInfo::Kind::kTensor ||
          in.type.elem == DType::kUndefined || !in.type.has_shape)
        return false;
      for (const auto& d : in.type.dims)
        if (!d.known()) return false;
    }
    for (const auto& n : g.nodes)
      for (const auto& a : n.attributes)
        if (a.g || !a.graphs.empty()) return false;
    return true;
  }

  static std::string Signature(const std::map<std::string, TypeInfo>& types) {
    std::string sig;
    for (const auto& [name, t] : types) sig += name + ':' + t.ToString() + ';';
    return sig;
  }

  // `shaped_subplans`: also plan the subgraphs for these shapes (CachedPlan::subplans); not for
  // the plan made at creation, whose types the session's own subgraph plans already have.
  StatusOr<PlanPtr> BuildCachedPlan(const std::map<std::string, TypeInfo>& types,
                                    bool shaped_subplans = true) const {
    auto p = planner::BuildPlan(*model.graph, types, {}, PlanOpts());
    if (!p.ok()) return p.status().WithContext(Prefix());
    auto cached = std::make_shared<CachedPlan>();
    cached->plan = std::move(p).value();
    // What this plan alone holds: constants folded for its shapes. Weights, precomputed and
    // pooled constants are shared (their buffers have other owners).
    for (const auto& [id, v] : cached->plan->constants)
      if (v.is_tensor() && v.tensor().owns_buffer_alone()) cached->bytes += v.tensor().nbytes();
    if (adapt_threads && threads > 1)
      cached->threads =
          std::make_unique<engine::ThreadChoice>(threads, learnt_threads.load(), probes);
    if (shaped_subplans && !subplans.empty()) {
      std::map<std::string, TypeInfo> outer;
      for (const auto& slot : cached->plan->slots) outer[slot.name] = slot.type;
      cached->subplans = std::make_unique<SubgraphPlans>();
      ONYX_RETURN_IF_ERROR(BuildSubplans(*model.graph, outer, ConstantsByName(*cached->plan),
                                         cached->subplans.get(), true));
    }
    return PlanPtr(std::move(cached));
  }

  // The plan for these input types: cached, or built now without stopping runs on other shapes,
  // or (`allow_generic`, *generic set) the shape-generic plan for a shape not seen often yet.
  StatusOr<PlanPtr> PlanFor(const std::map<std::string, TypeInfo>& types, bool allow_generic,
                            bool* generic_used = nullptr) const {
    if (generic_used) *generic_used = false;
    if (only_plan) return only_plan;
    const std::string sig = Signature(types);
    bool use_generic = allow_generic && generic_ok.load() && types.size() == generic_inputs.size();
    for (auto it = types.begin(); use_generic && it != types.end(); ++it)
      use_generic = generic_inputs.count(it->first) > 0;
    const int after =
        use_generic ? static_cast<int>(std::min<int64_t>(limits.specialize_after_runs, INT_MAX))
                    : 1;
    auto p = plans->GetOrBuild(
        sig,
        [&]() -> StatusOr<PlanPtr> {
          if (before_build) before_build(sig);
          return BuildCachedPlan(types);
        },
        after);
    if (p.ok() && !*p) {
      if (generic_used) *generic_used = true;
      return generic;
    }
    return p;
  }

  // Whether the declared-type plan is worth running for new shapes: no step that reads a weight
  // (a constant of 64 KiB or more) fell back to its operator's last, reference-level kernel
  // while faster ones exist (convolutions with unknown spatial dims do; matrix products with
  // unknown rows do not, oneDNN takes the row count at run time).
  static bool GenericWorthRunning(const ExecutionPlan& plan) {
    constexpr size_t kWeightBytes = 64 << 10;
    for (const auto& st : plan.steps) {
      if (!st.op || st.op->impls.size() < 2) continue;
      const std::string& last = st.op->impls.back().name;
      if (st.impl_name.compare(0, last.size(), last) != 0) continue;
      for (int id : st.inputs) {
        auto c = id >= 0 ? plan.constants.find(id) : plan.constants.end();
        if (c != plan.constants.end() && c->second.is_tensor() &&
            c->second.tensor().nbytes() >= kWeightBytes)
          return false;
      }
    }
    return true;
  }

  // Node outputs the declared-type plan folded: they hold for every feed, because a feed must
  // match every dim the model declares. Not when a graph input has an initializer (IR < 4): a
  // feed may replace it, and what was folded from it.
  void CollectPrecomputed(const ExecutionPlan& declared) {
    const ir::Graph& g = *model.graph;
    for (const auto& in : g.inputs)
      if (g.IsInitializer(in.name)) return;
    for (const auto& n : g.nodes)
      for (const auto& o : n.outputs) {
        if (o.empty()) continue;
        auto slot = declared.slot_of.find(o);
        if (slot == declared.slot_of.end()) continue;
        auto c = declared.constants.find(slot->second);
        if (c != declared.constants.end()) precomputed.emplace(o, c->second);
      }
  }
};

StatusOr<Session> Session::CreateFromModel(ir::Model model, SessionOptions options) {
  auto impl = std::make_shared<Impl>();
  impl->model = std::move(model);
  impl->options = options;
  impl->options.edits = {};  // applied by the loader; may borrow the caller's buffers
  impl->limits = ResolveLimits(options.limits);
  const std::string prefix = impl->Prefix();
  StatusOr<kernels::IsaLevel> isa = kernels::SessionIsaCap(options.max_isa);
  if (!isa.ok()) return isa.status().WithContext(prefix);
  impl->max_isa = *isa;
  Status s = planner::CheckOperatorsSupported(*impl->model.graph);
  if (!s.ok()) return s.WithContext(prefix);
  planner::DensifySparseInitializers(*impl->model.graph);
  if (options.deterministic) {
    s = engine::CheckDeterministicMode(*impl->model.graph, options);
    if (!s.ok()) return s.WithContext(prefix);
  }
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  impl->threads = options.intra_op_threads > 0 ? options.intra_op_threads : hw;
  impl->arena = std::make_unique<tbb::task_arena>(impl->threads);
  impl->runs_by_threads = std::make_unique<std::atomic<int64_t>[]>(impl->threads + 1);
  for (int t = 0; t <= impl->threads; ++t) impl->runs_by_threads[t].store(0);
  const char* adapt = std::getenv("ONYX_ADAPT_THREADS");
  impl->adapt_threads = options.adapt_threads && !(adapt && std::string(adapt) == "0");
  const char* sparse = std::getenv("ONYX_SPARSE_KERNELS");
  impl->sparse_kernels = options.sparse_kernels && !(sparse && std::string(sparse) == "0");
  for (const auto& in : impl->model.graph->inputs) impl->inputs.push_back({in.name, in.type});
  for (const auto& out : impl->model.graph->outputs) impl->outputs.push_back({out.name, out.type});
  // Creation-time plan with the declared input types: reports unsupported types and bad
  // attributes now, not halfway through a run; reused when every input shape is static.
  std::map<std::string, TypeInfo> declared;
  for (const auto& name : impl->model.graph->RequiredInputs())
    for (const auto& in : impl->inputs)
      if (in.name == name) declared[name] = in.type;
  // A model planned once keeps each weight a oneDNN kernel packed only in its packed layout:
  // the plan drops the original values and the graph its initializers.
  impl->release_weights = impl->PlannedOnce();
  impl->plans = std::make_unique<engine::ShapeCache>(impl->limits.max_shape_plans,
                                                     impl->limits.max_shape_plan_bytes);
  auto p = impl->BuildCachedPlan(declared, false);
  if (!p.ok()) return p.status();
  impl->plans->Pin(Impl::Signature(declared), *p);
  if (!impl->release_weights) {
    impl->CollectPrecomputed(*(*p)->plan);
    impl->generic = *p;
    for (const auto& [name, t] : declared) impl->generic_inputs.insert(name);
    // Deterministic mode: every shape runs on its own plan from its first run, never first on the
    // shape-generic plan, whose kernels may differ (docs/determinism.md).
    impl->generic_ok = !options.deterministic && impl->limits.specialize_after_runs > 1 &&
                       Impl::GenericWorthRunning(*(*p)->plan);
  }
  std::map<std::string, TypeInfo> outer;
  for (const auto& slot : (*p)->plan->slots) outer[slot.name] = slot.type;
  s = impl->BuildSubplans(*impl->model.graph, outer, Impl::ConstantsByName(*(*p)->plan),
                          &impl->subplans, false);
  if (!s.ok()) return s.WithContext(prefix);
  if (impl->release_weights) {
    impl->only_plan = *p;
    impl->model.graph->initializers.clear();
    impl->model.graph->sparse_initializers.clear();
  }
  return Session(impl);
}

StatusOr<Session> Session::Create(const std::string& path, SessionOptions options) {
  ONYX_ASSIGN_OR_RETURN(
      ir::Model m, engine::LoadModelFromFile(path, ResolveLimits(options.limits), options.edits));
  return CreateFromModel(std::move(m), options);
}

StatusOr<Session> Session::CreateFromBytes(const std::string& bytes, SessionOptions options) {
  ONYX_ASSIGN_OR_RETURN(
      ir::Model m,
      engine::LoadModelFromBytes(bytes, "<bytes>", ResolveLimits(options.limits), options.edits));
  return CreateFromModel(std::move(m), options);
}

StatusOr<std::vector<std::string>> UnsupportedNodes(const std::string& path) {
  ONYX_ASSIGN_OR_RETURN(ir::Model m, engine::LoadModelFromFile(path));
  Status s = planner::CheckOperatorsSupported(*m.graph);
  if (s.ok()) return std::vector<std::string>{};
  std::vector<std::string> lines;
  std::istringstream is(s.message());
  std::string line;
  while (std::getline(is, line)) {
    if (line.rfind("  ", 0) == 0) line = line.substr(2);
    if (line.find(" nodes cannot run:") == std::string::npos) lines.push_back(line);
  }
  return lines;
}

Session::Session(const std::string& path, SessionOptions options) {
  auto s = Create(path, options);
  if (!s.ok()) throw Error(s.status());
  impl_ = s->impl_;
}

Session Session::FromBytes(const std::string& bytes, SessionOptions options) {
  auto s = CreateFromBytes(bytes, options);
  if (!s.ok()) throw Error(s.status());
  return std::move(s).value();
}

const std::vector<IoInfo>& Session::inputs() const {
  return impl_->inputs;
}
const std::vector<IoInfo>& Session::outputs() const {
  return impl_->outputs;
}
std::vector<std::string> Session::required_inputs() const {
  return impl_->model.graph->RequiredInputs();
}

Status Session::Run(const NamedValues& feeds, const RunOptions& options,
                    NamedValues* outputs) const {
  const Impl& im = *impl_;
  const ir::Graph& g = *im.model.graph;
  std::map<std::string, const Value*> by_name;
  for (const auto& [name, v] : feeds) {
    auto it = std::find_if(im.inputs.begin(), im.inputs.end(),
                           [&name = name](const IoInfo& i) { return i.name == name; });
    if (it == im.inputs.end()) {
      std::string names;
      for (const auto& i : im.inputs) names += (names.empty() ? "" : ", ") + i.name;
      return InvalidArgument(im.Prefix(), "unknown input '", name,
                             "'; the model's inputs are: ", names);
    }
    if (!by_name.emplace(name, &v).second)
      return InvalidArgument(im.Prefix(), "input '", name, "' is fed twice");
    ONYX_RETURN_IF_ERROR(im.CheckFeed(*it, v));
  }
  for (const auto& name : g.RequiredInputs())
    if (!by_name.count(name))
      return InvalidArgument(im.Prefix(), "missing input '", name,
                             "' (required, no initializer default)");
  // Symbols shared by several inputs must agree.
  std::map<std::string, std::pair<int64_t, std::string>> symbols;
  for (const auto& in : im.inputs) {
    auto it = by_name.find(in.name);
    if (it == by_name.end() || !it->second->is_tensor() || !in.type.has_shape) continue;
    const Tensor& x = it->second->tensor();
    for (int64_t d = 0; d < x.rank() && d < in.type.rank(); ++d) {
      const std::string& sym = in.type.dims[d].symbol;
      if (sym.empty()) continue;
      auto [s, fresh] = symbols.emplace(sym, std::make_pair(x.dim(d), in.name));
      if (!fresh && s->second.first != x.dim(d))
        return InvalidArgument(im.Prefix(), "dim '", sym, "' is ", s->second.first, " in input '",
                               s->second.second, "' but ", x.dim(d), " in input '", in.name, "'");
    }
  }
  std::map<std::string, TypeInfo> types;
  for (const auto& [name, v] : by_name) types[name] = TypeOfValue(*v);
  bool generic = false;
  ONYX_ASSIGN_OR_RETURN(auto cached, im.PlanFor(types, true, &generic));
  std::vector<Value> inputs;
  for (const auto& in : g.inputs) {
    auto it = by_name.find(in.name);
    inputs.push_back(it == by_name.end() ? Value() : *it->second);
  }
  std::vector<Value> outs;
  const auto execute = [&](const CachedPlan& cp, bool adapt) {
    // Shape-generic runs see many shapes, whose times do not compare: they take the count the
    // shape plans chose last.
    engine::ThreadChoice* choice = adapt && options.max_threads <= 0 ? cp.threads.get() : nullptr;
    const int learnt = im.learnt_threads.load(std::memory_order_relaxed);
    const int threads = choice                     ? choice->Next()
                        : options.max_threads > 0  ? std::min(options.max_threads, im.threads)
                        : cp.threads && learnt > 0 ? learnt
                                                   : im.threads;
    const ExecutionPlan& plan = *cp.plan;
    kernels::ReleaseIdleWorkers(threads);
    const engine::Executor ex(&im.subplans, threads, cp.subplans.get());
    const auto start = std::chrono::steady_clock::now();
    Status s;
    im.arena->execute([&] {
      // The arena is allocated here; shapes a hostile model declares can make it impossible.
      // Tensors kernels allocate on this thread obey max_tensor_bytes (memory/aligned_alloc.h).
      memory::TensorByteCeilingScope ceiling(im.limits.max_tensor_bytes);
      try {
        s = ex.Run(plan, &im.arenas, inputs, nullptr, &outs, options);
      } catch (const std::bad_alloc&) {
        s = RuntimeError("out of memory: the plan needs an arena of ", plan.arena_bytes, " bytes");
      }
    });
    if (choice && s.ok() &&
        choice->Record(
            threads,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()))
      im.learnt_threads.store(choice->current(), std::memory_order_relaxed);
    im.runs_by_threads[threads].fetch_add(1, std::memory_order_relaxed);
    return s;
  };
  Status s = execute(*cached, !generic);
  if (!s.ok() && generic && s.code() != ErrorCode::kCancelled && s.code() != ErrorCode::kLimit) {
    // The shape-generic plan could not take these shapes (a kernel chosen for the declared types
    // refused them): run a plan made for them. When that one succeeds, the generic plan was at
    // fault and new shapes get plans of their own from now on.
    ONYX_ASSIGN_OR_RETURN(cached, im.PlanFor(types, false));
    outs.clear();
    s = execute(*cached, true);
    if (s.ok()) im.generic_ok = false;
  }
  if (!s.ok()) return s.WithContext(im.Prefix());
  outputs->clear();
  for (size_t i = 0; i < outs.size(); ++i)
    outputs->push_back({g.outputs[i].name, std::move(outs[i])});
  return Status::Ok();
}

NamedValues Session::Run(const NamedValues& feeds, const RunOptions& options) const {
  NamedValues out;
  ThrowIfError(Run(feeds, options, &out));
  return out;
}

StatusOr<std::string> Session::DescribePlan(const std::map<std::string, Shape>& shapes, bool json,
                                            bool why) const {
  const Impl& im = *impl_;
  std::map<std::string, TypeInfo> types;
  for (const auto& name : im.model.graph->RequiredInputs()) {
    for (const auto& in : im.inputs) {
      if (in.name != name) continue;
      TypeInfo t = in.type;
      auto it = shapes.find(name);
      if (it != shapes.end()) {
        t = TypeInfo::TensorWithShape(in.type.elem, it->second);
      } else if (t.is_tensor() && t.has_shape) {
        for (Dim& d : t.dims)
          if (!d.known()) d = Dim::Known(1);
      }
      types[name] = t;
    }
  }
  for (const auto& [name, s] : shapes)
    if (!types.count(name)) return InvalidArgument("--shape names unknown input '", name, "'");
  ONYX_ASSIGN_OR_RETURN(auto cached, im.PlanFor(types, false));
  // Weights: the model's initializers, and the packed copies kernels made of them, one of each
  // whatever the number of shape plans (DESIGN contract 3).
  size_t initializer_bytes = 0;
  for (const auto& [name, t] : im.model.graph->initializers) initializer_bytes += t.nbytes();
  for (const auto& [name, sp] : im.model.graph->sparse_initializers)
    initializer_bytes += sp.values.nbytes() + sp.indices.nbytes();
  const ShapePlanStats st = shape_plan_stats();
  if (!json)
    return cached->plan->Print(why) + StrCat("weights: ", initializer_bytes,
                                             " bytes of initializers, ", st.packed_weight_bytes,
                                             " packed, ", st.shared_constant_bytes,
                                             " derived; shared by every shape plan\n");
  return cached->plan->ToJson(StrCat("\"weight_bytes\": {\"initializers\": ", initializer_bytes,
                                     ", \"packed\": ", st.packed_weight_bytes,
                                     ", \"derived\": ", st.shared_constant_bytes, "}"));
}

std::string Session::DescribeGenericPlan(bool json) const {
  const Impl& im = *impl_;
  const PlanPtr& p = im.only_plan ? im.only_plan : im.generic;
  bool all_static = true;
  for (const auto& in : im.inputs)
    all_static = all_static && in.type.kind == TypeInfo::Kind::kTensor && in.type.shape_is_static();
  const bool one_plan = im.only_plan || all_static;
  const char* use = one_plan ? "every input shape is static: this is the only plan"
                    : im.generic_ok.load()
                        ? "new input shapes run on this plan"
                        : "new input shapes get plans of their own (a weight-heavy step has no "
                          "fast kernel here, or specialize_after_runs is 1)";
  if (!json) return p->plan->Print() + "shape-generic plan: " + use + "\n";
  return p->plan->ToJson(
      StrCat("\"runs_new_shapes\": ", !one_plan && im.generic_ok.load() ? "true" : "false"));
}

int64_t Session::ir_version() const {
  return impl_->model.ir_version;
}
std::map<std::string, int64_t> Session::opsets() const {
  return impl_->model.opsets;
}
std::string Session::model_name() const {
  return impl_->model.display_name;
}

namespace {
void CountOps(const ir::Graph& g, std::map<std::string, int>& counts) {
  for (const auto& n : g.nodes) {
    ++counts[(n.domain.empty() ? "" : n.domain + ":") + n.op_type];
    for (const auto& a : n.attributes) {
      if (a.g) CountOps(*a.g, counts);
      for (const auto& sg : a.graphs) CountOps(*sg, counts);
    }
  }
}
}  // namespace

namespace {
bool AllDeterministic(const ir::Graph& g) {
  for (const auto& n : g.nodes) {
    const kernels::OpDef* op = kernels::OpRegistry::Global().Find(n.domain, n.op_type, n.opset);
    if (op && !op->deterministic) return false;
    for (const auto& a : n.attributes) {
      if (a.g && !AllDeterministic(*a.g)) return false;
      for (const auto& sg : a.graphs)
        if (!AllDeterministic(*sg)) return false;
    }
  }
  return true;
}
}  // namespace

const Limits& Session::limits() const {
  return impl_->limits;
}

int Session::intra_op_threads() const {
  return impl_->threads;
}

std::map<int, int64_t> Session::runs_by_threads() const {
  std::map<int, int64_t> runs;
  for (int t = 1; t <= impl_->threads; ++t)
    if (const int64_t n = impl_->runs_by_threads[t].load(std::memory_order_relaxed)) runs[t] = n;
  return runs;
}

size_t Session::released_weight_bytes() const {
  return impl_->only_plan ? impl_->only_plan->plan->released_constant_bytes : 0;
}

ShapePlanStats Session::shape_plan_stats() const {
  const Impl& im = *impl_;
  ShapePlanStats s;
  if (im.only_plan) {
    s.plans = 1;
  } else {
    const engine::ShapeCacheStats c = im.plans->stats();
    s.plans = c.entries;
    s.plan_bytes = c.bytes;
    s.builds = c.builds;
    s.hits = c.hits;
    s.evictions = c.evictions;
    s.generic_runs = c.generic_runs;
  }
  s.packed_weight_bytes = im.weights.bytes();
  s.shared_constant_bytes = im.constants.bytes();
  s.free_arena_bytes = im.arenas.free_bytes();
  return s;
}

namespace testing {
void SetBeforePlanBuild(const Session& session, std::function<void(const std::string&)> hook) {
  session.impl_->before_build = std::move(hook);
}
}  // namespace testing

bool Session::deterministic() const {
  return AllDeterministic(*impl_->model.graph);
}

bool Session::deterministic_mode() const {
  return impl_->options.deterministic;
}

std::map<std::string, int> Session::operator_counts() const {
  std::map<std::string, int> counts;
  CountOps(*impl_->model.graph, counts);
  return counts;
}

}  // namespace onyx
