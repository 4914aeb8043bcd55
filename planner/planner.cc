// BuildPlan: inference + folding in schedule order, storage choice, kernels, liveness, arena.
#include "planner/planner.h"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>

#include "kernels/op_helpers.h"
#include "memory/aligned_alloc.h"
#include "planner/arena_plan.h"
#include "planner/common_subexpressions.h"
#include "planner/constant_folding.h"
#include "planner/fusion/fusion_pass.h"
#include "planner/fusion/fusion_report.h"
#include "planner/layout.h"
#include "planner/liveness.h"
#include "planner/schedule.h"
#include "planner/shape_inference.h"

namespace onyx::planner {
namespace {

using kernels::OpRegistry;

bool ArenaEligible(const TypeInfo& t) {
  return t.is_tensor() && t.shape_is_static() && t.elem != DType::kString &&
         t.elem != DType::kUndefined && DTypeSize(t.elem) > 0;
}

// A tensor type whose dims are all known must fit 64-bit sizes and max_tensor_bytes (0: none).
// Checked right after inference, before folding or any kernel could allocate it.
Status CheckKnownSize(const TypeInfo& t, uint64_t max_bytes, const std::string& who) {
  if (!t.is_tensor() || !t.shape_is_static()) return Status::Ok();
  return memory::CheckTensorBytes(who, t.elem, t.static_shape(), max_bytes);
}

std::string UnsupportedMessage(const ir::Node& n) {
  const auto ranges = OpRegistry::Global().Ranges(n.domain, n.op_type);
  const std::string domain = n.domain.empty() ? "ai.onnx" : n.domain;
  std::ostringstream os;
  os << n.Describe() << " uses " << n.op_type << " from opset " << n.opset << " of domain '"
     << domain << "': ";
  if (ranges.empty()) {
    os << "onyx does not implement this operator";
  } else {
    os << "no kernel registered for this opset (found opsets ";
    for (size_t i = 0; i < ranges.size(); ++i) {
      os << (i ? ", " : "") << ranges[i].first << "..";
      if (ranges[i].second < kernels::kLatestOpset) os << ranges[i].second;
    }
    os << ")";
  }
  return os.str();
}

void CollectUnsupported(const ir::Graph& g, std::vector<std::string>& out) {
  for (const auto& n : g.nodes) {
    if (!OpRegistry::Global().Find(n.domain, n.op_type, n.opset))
      out.push_back(UnsupportedMessage(n));
    for (const auto& a : n.attributes) {
      if (a.g) CollectUnsupported(*a.g, out);
      for (const auto& sg : a.graphs) CollectUnsupported(*sg, out);
    }
  }
}

class PlanBuilder {
 public:
  PlanBuilder(const ir::Graph& g, const PlanOptions& opts) : g_(g), opts_(opts) {
    plan_ = std::make_unique<ExecutionPlan>();
    plan_->graph = &g;
  }

  int Slot(const std::string& name) {
    auto it = plan_->slot_of.find(name);
    if (it != plan_->slot_of.end()) return it->second;
    const int id = static_cast<int>(plan_->slots.size());
    ValueSlot s;
    s.name = name;
    plan_->slots.push_back(s);
    plan_->slot_of[name] = id;
    return id;
  }

  StatusOr<std::unique_ptr<ExecutionPlan>> Build(
      const std::map<std::string, TypeInfo>& input_types,
      const std::map<std::string, TypeInfo>& outer_types) {
    // Graph inputs: fed, defaulted by an initializer (IR < 4), or declared.
    for (const auto& in : g_.inputs) {
      const int id = Slot(in.name);
      ValueSlot& s = plan_->slots[id];
      auto fed = input_types.find(in.name);
      auto init = g_.initializers.find(in.name);
      const ir::SparseConstant* sparse = g_.FindSparseInitializer(in.name);
      if (fed != input_types.end()) {
        s.storage = Storage::kInput;
        s.type = fed->second;
      } else if (init != g_.initializers.end()) {
        s.storage = Storage::kConstant;
        s.type = TypeOfValue(Value(init->second));
        plan_->constants[id] = Value(init->second);
      } else if (sparse != nullptr) {
        AddSparseConstant(id, *sparse);
      } else {
        s.storage = Storage::kInput;
        s.type = in.type;
      }
      if (s.storage == Storage::kInput)
        ONYX_RETURN_IF_ERROR(
            CheckKnownSize(s.type, opts_.limits.max_tensor_bytes, "graph input '" + in.name + "'"));
      plan_->input_slots.push_back(id);
    }
    for (const auto& [name, t] : g_.initializers) {
      if (plan_->slot_of.count(name)) continue;
      const int id = Slot(name);
      plan_->slots[id].storage = Storage::kConstant;
      plan_->slots[id].type = TypeOfValue(Value(t));
      plan_->constants[id] = Value(t);
    }
    // Sparse initializers become dense constants only where this graph reads them (every consumer
    // needs dense values today; a kernel that reads the COO form still gets it at creation).
    if (!g_.sparse_initializers.empty()) {
      std::set<std::string> read;
      for (const auto& n : g_.nodes) {
        read.insert(n.inputs.begin(), n.inputs.end());
        read.insert(n.implicit_inputs.begin(), n.implicit_inputs.end());
      }
      for (const auto& o : g_.outputs) read.insert(o.name);
      for (const auto& [name, sp] : g_.sparse_initializers)
        if (!plan_->slot_of.count(name) && read.count(name)) AddSparseConstant(Slot(name), sp);
    }
    ONYX_ASSIGN_OR_RETURN(std::vector<int> order, KahnSchedule(g_));
    // Declared graph-output types by name (the last declaration wins, as the scan it replaces).
    std::map<std::string, const TypeInfo*> output_types;
    for (const auto& o : g_.outputs)
      if (o.type.kind != TypeInfo::Kind::kUnknown) output_types[o.name] = &o.type;
    std::set<std::string> produced;
    for (const auto& n : g_.nodes)
      for (const auto& o : n.outputs)
        if (!o.empty()) produced.insert(o);
    // Values Conv, Gemm and MatMul read: a DequantizeLinear of constant weights or bias there is
    // left for the quantized-island rules (planner/fusion/quantization_rules.cc), which need its
    // int8 input.
    if (opts_.optimization == OptLevel::kAll && !opts_.reference_kernels)
      for (const auto& n : g_.nodes)
        if (n.domain.empty() &&
            (n.op_type == "Conv" || n.op_type == "Gemm" || n.op_type == "MatMul"))
          for (size_t i = 1; i < n.inputs.size(); ++i) island_inputs_.insert(n.inputs[i]);
    auto resolve = [&](const std::string& name) -> int {
      if (name.empty()) return -1;
      auto it = plan_->slot_of.find(name);
      if (it != plan_->slot_of.end()) return it->second;
      const int id = Slot(name);
      if (!produced.count(name) && opts_.outer_constants) {
        auto c = opts_.outer_constants->find(name);
        if (c != opts_.outer_constants->end()) {  // an enclosing constant: this plan's own
          SetConstant(id, c->second);
          return id;
        }
      }
      if (!produced.count(name)) {  // from an enclosing scope
        plan_->slots[id].storage = Storage::kOuter;
        auto ot = outer_types.find(name);
        if (ot != outer_types.end()) plan_->slots[id].type = ot->second;
        plan_->outer_names.push_back(name);
      }
      return id;
    };

    for (int ni : order) {
      const ir::Node& node = g_.nodes[ni];
      if (UsePrecomputed(node)) continue;
      const kernels::OpDef* op = OpRegistry::Global().Find(node.domain, node.op_type, node.opset);
      if (!op) return Unsupported(UnsupportedMessage(node));
      std::vector<int> in_ids, implicit_ids;
      std::vector<TypeInfo> in_types;
      std::vector<const Tensor*> in_consts;
      std::vector<const Value*> in_values;
      for (const auto& name : node.inputs) {
        const int id = resolve(name);
        in_ids.push_back(id);
        in_types.push_back(id >= 0 ? plan_->slots[id].type : TypeInfo());
        const Value* cv = nullptr;
        if (id >= 0) {
          auto c = plan_->constants.find(id);
          if (c != plan_->constants.end()) cv = &c->second;
        }
        in_values.push_back(cv);
        in_consts.push_back(cv && cv->is_tensor() ? &cv->tensor() : nullptr);
      }
      for (const auto& name : node.implicit_inputs) implicit_ids.push_back(resolve(name));

      std::vector<TypeInfo> out_types;
      SubgraphInferFn sub = [&](const ir::Graph& sg, const std::vector<TypeInfo>& inputs)
          -> StatusOr<std::vector<TypeInfo>> { return InferSubgraph(node, sg, inputs); };
      ONYX_RETURN_IF_ERROR(InferNode(node, *op, in_types, in_consts, sub, &out_types));

      std::vector<int> out_ids;
      for (size_t k = 0; k < node.outputs.size(); ++k) {
        const int id = node.outputs[k].empty() ? -1 : Slot(node.outputs[k]);
        out_ids.push_back(id);
        if (id < 0) continue;
        auto declared = g_.value_info.find(node.outputs[k]);
        const TypeInfo* decl = declared != g_.value_info.end() ? &declared->second : nullptr;
        auto out_decl = output_types.find(node.outputs[k]);
        if (out_decl != output_types.end()) decl = out_decl->second;
        plan_->slots[id].type = MergeDeclared(out_types[k], decl);
        plan_->slots[id].storage = Storage::kHeap;
        // One check for every shape function: a negative known dim is never a shape, whatever
        // hostile attribute or constant produced it. (Declared value_info is not checked here:
        // some exporters write -1 for an unknown dim.)
        const TypeInfo& inferred = out_types[k];
        if (inferred.is_tensor() && inferred.has_shape)
          for (const Dim& d : inferred.dims)
            if (d.known() && d.value < 0)
              return kernels::NodeView(node).Invalid("output ", k, " '", node.outputs[k],
                                                     "' would have shape ", inferred.ToString(),
                                                     ", with a negative dim");
        const TypeInfo& t = plan_->slots[id].type;
        if (t.is_tensor() && t.shape_is_static())
          ONYX_RETURN_IF_ERROR(
              kernels::CheckOutputSize(kernels::NodeView(node), static_cast<int>(k), t.elem,
                                       t.static_shape(), opts_.limits.max_tensor_bytes));
      }

      if (opts_.optimization != OptLevel::kNone && TryFold(node, *op, in_values, in_types, out_ids))
        continue;
      PlanStep step;
      step.node = &node;
      step.op = op;
      step.inputs = std::move(in_ids);
      step.outputs = std::move(out_ids);
      step.implicit = std::move(implicit_ids);
      plan_->steps.push_back(std::move(step));
    }
    for (const auto& o : g_.outputs) plan_->output_slots.push_back(resolve(o.name));
    if (opts_.infer_only) return std::move(plan_);
    const int merged =
        opts_.optimization != OptLevel::kNone ? EliminateCommonSubexpressions(*plan_) : 0;
    plan_->fused_nodes =
        merged + fusion::RunFusionPass(*plan_, opts_.optimization, opts_.fusion_rule_seed,
                                       opts_.constant_pool);
    if (opts_.optimization == OptLevel::kAll && !opts_.reference_kernels)
      plan_->layout_transposes = PropagateChannelsLast(*plan_, opts_.max_isa);

    for (int o : plan_->output_slots) plan_->slots[o].is_graph_output = true;
    for (PlanStep& st : plan_->steps)
      for (int o : st.outputs)
        if (o >= 0 && opts_.use_arena && !plan_->slots[o].is_graph_output &&
            ArenaEligible(plan_->slots[o].type))
          plan_->slots[o].storage = Storage::kArena;
    ComputeLiveness(*plan_);
    ChooseInPlace(*plan_);
    ONYX_RETURN_IF_ERROR(PlanArenaForPlan(*plan_, opts_.limits.max_arena_bytes));
    ONYX_RETURN_IF_ERROR(CreateKernels());
    if (opts_.release_packed_constants) ReleasePackedConstants();
    plan_->IndexConstants();
    return std::move(plan_);
  }

 private:
  // A constant read only through kernels' packed copies keeps its shape (kernels check it) and
  // drops its values: a tensor without a buffer. Graph outputs and values read by subgraphs
  // (implicit inputs) always keep theirs.
  void ReleasePackedConstants() {
    std::map<int, bool> only_packed;
    for (const PlanStep& st : plan_->steps) {
      for (size_t i = 0; i < st.inputs.size(); ++i) {
        const int id = st.inputs[i];
        if (id < 0 || !plan_->constants.count(id)) continue;
        auto [it, fresh] = only_packed.emplace(id, true);
        it->second = it->second && st.kernel && st.kernel->packed_input(i);
      }
      for (int id : st.implicit)
        if (id >= 0) only_packed[id] = false;
    }
    for (int o : plan_->output_slots) only_packed[o] = false;
    for (const auto& [id, packed] : only_packed) {
      if (!packed) continue;
      Value& v = plan_->constants[id];
      if (!v.is_tensor() || v.tensor().dtype() == DType::kString) continue;
      const Tensor& t = v.tensor();
      plan_->released_constant_bytes += t.nbytes();
      v = Value(Tensor::Borrow(t.dtype(), t.shape(), nullptr));
    }
  }

  // A node the session folded once, whatever the input shapes: its outputs become constants
  // sharing the session's buffers.
  bool UsePrecomputed(const ir::Node& node) {
    if (!opts_.precomputed || node.outputs.empty()) return false;
    for (const auto& o : node.outputs)
      if (!o.empty() && !opts_.precomputed->count(o)) return false;
    for (const auto& o : node.outputs)
      if (!o.empty()) SetConstant(Slot(o), opts_.precomputed->at(o));
    ++plan_->folded_nodes;
    return true;
  }

  bool TryFold(const ir::Node& node, const kernels::OpDef& op,
               const std::vector<const Value*>& in_values, const std::vector<TypeInfo>& in_types,
               const std::vector<int>& out_ids) {
    if (node.domain.empty() && node.op_type == "DequantizeLinear" && node.outputs.size() == 1 &&
        island_inputs_.count(node.outputs[0]))
      return false;
    if (node.domain.empty() && (node.op_type == "Shape" || node.op_type == "Size") &&
        !in_types.empty() && out_ids.size() == 1 && out_ids[0] >= 0) {
      if (auto t = FoldShapeOp(node, in_types[0])) {
        SetConstant(out_ids[0], Value(*t));
        ++plan_->folded_nodes;
        return true;
      }
    }
    if (!CanFold(node, op, in_values)) return false;
    auto outs = FoldNode(node, op, in_values, in_types);
    if (!outs.ok()) return false;  // left to run time, where the error names the step
    for (size_t k = 0; k < out_ids.size(); ++k)
      if (out_ids[k] >= 0) {
        if (k >= outs->size() || !(*outs)[k].defined()) return false;
      }
    for (size_t k = 0; k < out_ids.size(); ++k)
      if (out_ids[k] >= 0) SetConstant(out_ids[k], (*outs)[k]);
    ++plan_->folded_nodes;
    return true;
  }

  void SetConstant(int id, Value v) {
    plan_->slots[id].storage = Storage::kConstant;
    plan_->slots[id].type = TypeOfValue(v);
    plan_->constants[id] = std::move(v);
  }

  StatusOr<std::vector<TypeInfo>> InferSubgraph(const ir::Node& node, const ir::Graph& sg,
                                                const std::vector<TypeInfo>& inputs) {
    std::map<std::string, TypeInfo> in_types, outer;
    for (size_t i = 0; i < sg.inputs.size(); ++i)
      in_types[sg.inputs[i].name] = i < inputs.size() && inputs[i].kind != TypeInfo::Kind::kUnknown
                                        ? inputs[i]
                                        : sg.inputs[i].type;
    // Only the names the subgraphs read from outside (the loader's implicit inputs, nested ones
    // included): copying every slot made a long chain of Ifs quadratic to plan.
    for (const auto& name : node.implicit_inputs) {
      auto it = plan_->slot_of.find(name);
      if (it != plan_->slot_of.end()) outer[name] = plan_->slots[it->second].type;
    }
    PlanOptions o = opts_;
    o.infer_only = true;
    o.use_arena = false;
    o.precomputed = nullptr;  // names of the enclosing graph's nodes
    ONYX_ASSIGN_OR_RETURN(auto sub, BuildPlan(sg, in_types, outer, o));
    std::vector<TypeInfo> out;
    for (int id : sub->output_slots) out.push_back(sub->slots[id].type);
    return out;
  }

  // Slot `id` becomes the dense form of `sp`; remembered so kernels get the COO form too.
  void AddSparseConstant(int id, const ir::SparseConstant& sp) {
    Tensor dense = sp.Densify();
    sparse_of_.emplace(dense.raw_data(), &sp);
    plan_->slots[id].storage = Storage::kConstant;
    plan_->slots[id].type = TypeOfValue(Value(dense));
    plan_->constants[id] = Value(std::move(dense));
  }

  // The sparse form of a constant that is still the unchanged densified sparse initializer (same
  // buffer and shape: no pass permuted, folded or replaced it), else null.
  const ir::SparseConstant* SparseFormOf(const Tensor& t) const {
    auto it = sparse_of_.find(t.raw_data());
    return it != sparse_of_.end() && t.shape() == it->second->dims ? it->second : nullptr;
  }

  Status CreateKernels() {
    for (PlanStep& st : plan_->steps) {
      kernels::NodeView view(*st.node);
      std::vector<TypeInfo> types;
      for (int id : st.inputs) types.push_back(id >= 0 ? plan_->slots[id].type : TypeInfo());
      std::string rejections;
      // The reference kernel is registered first, so it is the last impl in the list.
      const size_t first =
          opts_.reference_kernels && !st.op->impls.empty() ? st.op->impls.size() - 1 : 0;
      for (size_t ii = first; ii < st.op->impls.size(); ++ii) {
        const kernels::KernelImpl& impl = st.op->impls[ii];
        if (opts_.deterministic && !impl.thread_invariant) {
          rejections += " " + impl.name + ": not audited as thread-count invariant;";
          st.rejected.emplace_back(impl.name, "not audited as thread-count invariant");
          continue;  // docs/determinism.md
        }
        const kernels::IsaLevel isa = impl.isa.RunsAt();
        if (!kernels::IsaAtMost(isa, opts_.max_isa)) {
          st.rejected.emplace_back(
              impl.name, StrCat("runs at ", kernels::IsaName(isa),
                                *impl.isa.library ? StrCat(" (", impl.isa.library, ")") : "",
                                ", above the ISA cap ", kernels::IsaName(opts_.max_isa)));
          continue;
        }
        if (impl.supports) {
          Status s = impl.supports(view, types);
          if (!s.ok()) {
            rejections += " " + impl.name + ": " + s.message() + ";";
            st.rejected.emplace_back(impl.name, "supports() refused: " + s.message());
            continue;
          }
        }
        StatusOr<std::unique_ptr<kernels::Kernel>> k = std::unique_ptr<kernels::Kernel>();
        if (impl.create_with_info) {
          kernels::KernelCreateInfo info;
          info.threads = opts_.threads;
          info.winograd = opts_.winograd;
          info.bf16 = opts_.bf16;
          info.sparse = opts_.sparse_kernels;
          info.deterministic = opts_.deterministic;
          info.weights = opts_.weights;
          for (int id : st.inputs) {
            auto c = id >= 0 ? plan_->constants.find(id) : plan_->constants.end();
            info.constants.push_back(c != plan_->constants.end() && c->second.is_tensor()
                                         ? &c->second.tensor()
                                         : nullptr);
            info.sparse_constants.push_back(
                info.constants.back() != nullptr ? SparseFormOf(*info.constants.back()) : nullptr);
          }
          k = impl.create_with_info(view, types, info);
        } else {
          k = impl.create(view, types);
        }
        if (!k.ok() && k.status().code() == ErrorCode::kUnsupported &&
            ii + 1 < st.op->impls.size()) {
          rejections += " " + impl.name + ": " + k.status().message() + ";";
          st.rejected.emplace_back(impl.name, "create refused: " + k.status().message());
          continue;  // a fast kernel that cannot take this node after all: try the next one
        }
        if (!k.ok()) {
          const Status& s = k.status();
          if (s.message().find(st.node->Describe()) == std::string::npos)
            return s.WithContext(st.node->Describe() + ": ");
          return s;
        }
        st.kernel = std::move(k).value();
        st.impl_name = impl.name;
        st.isa = isa;
        if (const std::string v = st.kernel->variant(); !v.empty()) st.impl_name += "/" + v;
        break;
      }
      if (!st.kernel) return view.NotSupported("no kernel accepts this node:", rejections);
    }
    return Status::Ok();
  }

  const ir::Graph& g_;
  PlanOptions opts_;
  std::unique_ptr<ExecutionPlan> plan_;
  std::map<const void*, const ir::SparseConstant*> sparse_of_;  // dense buffer → its COO form
  std::set<std::string> island_inputs_;  // DequantizeLinear outputs not folded (see Build)
};

}  // namespace

StatusOr<std::unique_ptr<ExecutionPlan>> BuildPlan(
    const ir::Graph& graph, const std::map<std::string, TypeInfo>& input_types,
    const std::map<std::string, TypeInfo>& outer_types, const PlanOptions& options) {
  // Constant folding runs kernels here: their allocations obey the same ceiling as a run's.
  std::optional<memory::TensorByteCeilingScope> ceiling;
  if (options.limits.max_tensor_bytes != 0) ceiling.emplace(options.limits.max_tensor_bytes);
  PlanBuilder b(graph, options);
  return b.Build(input_types, outer_types);
}

Status CheckOperatorsSupported(const ir::Graph& graph) {
  std::vector<std::string> missing;
  CollectUnsupported(graph, missing);
  if (missing.empty()) return Status::Ok();
  std::string msg = missing.size() == 1 ? missing[0] : StrCat(missing.size(), " nodes cannot run:");
  if (missing.size() > 1)
    for (const auto& m : missing) msg += "\n  " + m;
  return Unsupported(msg);
}

void DensifySparseInitializers(ir::Graph& g) {
  for (auto& n : g.nodes)
    for (auto& a : n.attributes) {
      if (a.g) DensifySparseInitializers(*a.g);
      for (auto& sg : a.graphs) DensifySparseInitializers(*sg);
    }
  if (g.sparse_initializers.empty()) return;
  std::map<std::string, bool> coo_reader;  // read name → some reader may take the COO form
  auto read = [&](const std::string& name, bool takes_coo) {
    if (g.sparse_initializers.count(name)) coo_reader[name] = coo_reader[name] || takes_coo;
  };
  for (const auto& n : g.nodes) {
    bool takes_coo = false;
    if (const kernels::OpDef* def = OpRegistry::Global().Find(n.domain, n.op_type, n.opset))
      for (const auto& impl : def->impls) takes_coo = takes_coo || impl.reads_sparse_constants;
    for (const auto& in : n.inputs) read(in, takes_coo);
    for (const auto& in : n.implicit_inputs) read(in, false);
  }
  for (const auto& o : g.outputs) read(o.name, false);
  for (const auto& [name, takes_coo] : coo_reader) {
    if (takes_coo) continue;
    auto it = g.sparse_initializers.find(name);
    g.initializers.emplace(name, it->second.Densify());
    g.sparse_initializers.erase(it);
  }
}

void ExecutionPlan::IndexConstants() {
  constant_at.assign(slots.size(), nullptr);
  for (const auto& [id, v] : constants)
    if (id >= 0 && static_cast<size_t>(id) < constant_at.size()) constant_at[id] = &v;
}

const char* StorageName(Storage s) {
  switch (s) {
    case Storage::kInput:
      return "input";
    case Storage::kConstant:
      return "constant";
    case Storage::kArena:
      return "arena";
    case Storage::kHeap:
      return "heap";
    case Storage::kOuter:
      return "outer";
  }
  return "?";
}

// Escapes a string for a JSON string literal (quotes, backslashes, control characters).
std::string JsonEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '"':
        o += "\\\"";
        break;
      case '\\':
        o += "\\\\";
        break;
      case '\n':
        o += "\\n";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += c;
        }
    }
  }
  return o;
}

std::string ExecutionPlan::Print(bool why) const {
  std::ostringstream os;
  os << "schedule (" << steps.size() << " steps, " << folded_nodes << " nodes folded, "
     << fused_nodes << " fused):\n";
  for (size_t i = 0; i < steps.size(); ++i) {
    const PlanStep& st = steps[i];
    os << "  " << i << ": " << st.node->Describe() << " [" << st.impl_name << "]";
    for (const ir::Node* f : st.fused) os << " + " << f->Describe();
    os << " isa=" << kernels::IsaName(st.isa) << "\n";
    if (why)
      for (const auto& [impl, reason] : st.rejected)
        os << "      not " << impl << ": " << reason << "\n";
    for (int o : st.outputs) {
      if (o < 0) continue;
      const ValueSlot& s = slots[o];
      os << "      -> " << s.name << " " << s.type.ToString() << " " << StorageName(s.storage);
      if (s.storage == Storage::kArena) os << " @" << s.offset << " +" << s.bytes;
      if (s.in_place_of >= 0) os << " (in place of " << slots[s.in_place_of].name << ")";
      os << "\n";
    }
  }
  os << "arena_bytes " << arena_bytes << ", no_reuse_bytes " << arena_bytes_no_reuse
     << ", max_live_bytes " << arena_bytes_max_live << "\n";
  os << fusion::FusionsText(*this);
  return os.str();
}

std::string ExecutionPlan::ToJson(const std::string& extra) const {
  std::ostringstream os;
  os << "{\n  \"nodes\": " << steps.size() << ",\n  \"folded_nodes\": " << folded_nodes
     << ",\n  \"fused_nodes\": " << fused_nodes << ",\n  \"arena_bytes\": " << arena_bytes
     << ",\n  \"no_reuse_bytes\": " << arena_bytes_no_reuse
     << ",\n  \"max_live_bytes\": " << arena_bytes_max_live << ",\n  \"schedule\": [";
  for (size_t i = 0; i < steps.size(); ++i) {
    const PlanStep& st = steps[i];
    os << (i ? "," : "") << "\n    {\"step\": " << i << ", \"node\": \""
       << JsonEscape(st.node->name) << "\", \"op\": \"" << JsonEscape(st.node->op_type)
       << "\", \"index\": " << st.node->index << ", \"impl\": \"" << JsonEscape(st.impl_name)
       << "\", \"isa\": \"" << kernels::IsaName(st.isa) << "\", \"rejected\": [";
    for (size_t r = 0; r < st.rejected.size(); ++r)
      os << (r ? ", " : "") << "{\"impl\": \"" << JsonEscape(st.rejected[r].first)
         << "\", \"reason\": \"" << JsonEscape(st.rejected[r].second) << "\"}";
    os << "], \"outputs\": [";
    bool first = true;
    for (int o : st.outputs) {
      if (o < 0) continue;
      const ValueSlot& s = slots[o];
      os << (first ? "" : ", ") << "{\"name\": \"" << JsonEscape(s.name) << "\", \"type\": \""
         << JsonEscape(s.type.ToString()) << "\", \"storage\": \"" << StorageName(s.storage)
         << "\"";
      if (s.storage == Storage::kArena)
        os << ", \"offset\": " << s.offset << ", \"bytes\": " << s.bytes;
      if (s.in_place_of >= 0)
        os << ", \"in_place_of\": \"" << JsonEscape(slots[s.in_place_of].name) << "\"";
      os << "}";
      first = false;
    }
    os << "]}";
  }
  os << "\n  ],\n" << fusion::FusionsJson(*this, "  ");
  if (!extra.empty()) os << ",\n  " << extra;
  os << "\n}\n";
  return os.str();
}

}  // namespace onyx::planner
