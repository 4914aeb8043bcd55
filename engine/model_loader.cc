// ModelProto → ir::Model: opsets, graphs with subgraphs, attributes of every type, initializers in
// every encoding, model-local function expansion, IR < 4 input defaults, and validation.
#include "engine/model_loader.h"

#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "engine/tensor_proto.h"
#include "engine/weights_in_file.h"
#include "kernels/op_arity.h"
#include "memory/mapped_file.h"
#include "onnx/onnx-ml.pb.h"
#include "planner/schedule.h"

namespace onyx::engine {
namespace {

using FunctionMap = std::map<std::pair<std::string, std::string>, const onnx::FunctionProto*>;

using OpsetMap = std::map<std::string, int64_t>;

// What the whole load shares; counters run across function bodies and subgraphs.
struct LoadState {
  ExternalDataContext ext;
  FunctionMap functions;
  Limits limits;
  int64_t ir_version = 0;
  int64_t inline_counter = 0;
  int64_t nodes = 0;         // after inlining, subgraphs included
  int64_t initializers = 0;  // subgraphs included
  // Nodes each function expands to (saturated at max_nodes + 1); -1 while being counted.
  std::map<const onnx::FunctionProto*, int64_t> expanded_size;
};

// One scope of the load: cheap to copy (a function call or a subgraph makes a new one).
struct LoadContext {
  LoadState* state = nullptr;
  const OpsetMap* opsets = nullptr;  // the model's imports, or a function body's
  int64_t nesting = 0;               // subgraphs around this scope
  int64_t call_depth = 0;            // function calls around this scope
};

Status NodeLimit(const LoadState& st, const std::string& where) {
  return LimitExceeded(where, "the model has more than ", st.limits.max_nodes,
                       " nodes after inlining model-local functions (subgraphs included), the "
                       "limit max_nodes; raise it with SessionOptions::limits.max_nodes or the "
                       "ONYX_MAX_NODES environment variable");
}

constexpr const char* kNestingMarker = " nest more than ";

Status NestingLimit(const LoadState& st, const std::string& where, const char* what) {
  return LimitExceeded(where, what, kNestingMarker, st.limits.max_nesting,
                       " deep, the nesting limit max_nesting; raise it with "
                       "SessionOptions::limits.max_nesting or the ONYX_MAX_NESTING environment "
                       "variable");
}

std::string NormalizeDomain(const std::string& d) {
  return d == "ai.onnx" ? "" : d;
}

// `release`, when given, is `gp` itself: each initializer's bytes are dropped from it once
// converted, so a large model is not held twice while it loads.
StatusOr<std::shared_ptr<ir::Graph>> ConvertGraph(const onnx::GraphProto& gp, LoadContext& lc,
                                                  onnx::GraphProto* release = nullptr);

// A SparseTensorProto checked against the ONNX rules and kept in COO form: values [nnz]; indices
// int64, [nnz] flat or [nnz, rank] coordinates (made flat here), in strictly increasing
// row-major order (the spec's "ascending order without duplication"), each inside the dense
// shape. The dense size is checked against max_tensor_bytes now, though only the planner
// allocates it. Work and memory are linear in the stored nnz, never in the dense size.
// `release`, when given, is `sp` itself: its bytes move into the tensors.
StatusOr<ir::SparseConstant> ConvertSparse(const onnx::SparseTensorProto& sp, LoadContext& lc,
                                           onnx::SparseTensorProto* release = nullptr) {
  const std::string& name = sp.values().name();
  ir::SparseConstant c;
  c.dims.assign(sp.dims().begin(), sp.dims().end());
  for (int64_t d : c.dims)
    if (d < 0) return InvalidModel("sparse tensor '", name, "' has a negative dim");
  if (sp.values().data_type() == onnx::TensorProto::UNDEFINED)
    return InvalidModel("sparse tensor '", name, "' has values without a data type");
  if (!IsKnownDType(sp.values().data_type()))
    return InvalidModel("sparse tensor '", name, "' has values of unknown data type ",
                        sp.values().data_type());
  // The dense shape is only declared: checked before anything of that size is made.
  int64_t count = 0;
  uint64_t bytes = 0;
  if (!CheckedElementCount(c.dims, &count) ||
      !CheckedByteSize(static_cast<DType>(sp.values().data_type()), count, &bytes))
    return InvalidModel("sparse tensor '", name, "' has shape ", ShapeToString(c.dims),
                        ", whose size does not fit 64 bits");
  const uint64_t max_bytes = lc.state->limits.max_tensor_bytes;
  if (max_bytes != 0 && bytes > max_bytes)
    return LimitExceeded("sparse tensor '", name, "' of shape ", ShapeToString(c.dims), " needs ",
                         bytes, " bytes when densified, more than the limit of ", max_bytes,
                         " bytes (raise it with SessionOptions::limits.max_tensor_bytes or "
                         "ONYX_MAX_TENSOR_BYTES)");
  if (sp.indices().data_type() != onnx::TensorProto::INT64)
    return InvalidModel("sparse tensor '", name, "' indices must be int64");
  if (release) {
    ONYX_ASSIGN_OR_RETURN(c.values, TakeTensorFromProto(release->mutable_values(), lc.state->ext));
  } else {
    ONYX_ASSIGN_OR_RETURN(c.values, TensorFromProto(sp.values(), lc.state->ext));
  }
  if (c.values.rank() != 1)
    return InvalidModel("sparse tensor '", name, "' has values of shape ",
                        ShapeToString(c.values.shape()), "; expected one dim [nnz]");
  const int64_t nnz = c.values.numel();
  if (nnz > count)
    return InvalidModel("sparse tensor '", name, "' has ", nnz, " values for shape ",
                        ShapeToString(c.dims), " of ", count, " elements");
  Tensor indices;
  if (release) {
    ONYX_ASSIGN_OR_RETURN(indices, TakeTensorFromProto(release->mutable_indices(), lc.state->ext));
  } else {
    ONYX_ASSIGN_OR_RETURN(indices, TensorFromProto(sp.indices(), lc.state->ext));
  }
  const int64_t* idx = indices.data<int64_t>();
  const size_t rank = c.dims.size();
  if (indices.rank() == 1) {
    if (indices.dim(0) != nnz)
      return InvalidModel("sparse tensor '", name, "' has ", indices.numel(), " indices for ", nnz,
                          " values");
    c.indices = std::move(indices);
  } else if (indices.rank() == 2 && indices.dim(0) == nnz &&
             indices.dim(1) == static_cast<int64_t>(rank)) {
    c.indices = Tensor::Allocate(DType::kInt64, {nnz});
    int64_t* flat = c.indices.data<int64_t>();
    for (int64_t k = 0; k < nnz; ++k) {
      int64_t f = 0;
      for (size_t d = 0; d < rank; ++d) {
        const int64_t v = idx[k * rank + d];
        if (v < 0 || v >= c.dims[d])
          return InvalidModel("sparse tensor '", name, "' index ", v, " of value ", k, " in dim ",
                              d, " is out of range for shape ", ShapeToString(c.dims));
        f = f * c.dims[d] + v;
      }
      flat[k] = f;
    }
  } else {
    return InvalidModel("sparse tensor '", name, "' has indices of shape ",
                        ShapeToString(indices.shape()), "; expected [", nnz, "] or [", nnz, ",",
                        rank, "]");
  }
  const int64_t* flat = c.indices.data<int64_t>();
  for (int64_t k = 0; k < nnz; ++k) {
    if (flat[k] < 0 || flat[k] >= count)
      return InvalidModel("sparse tensor '", name, "' index ", flat[k], " of value ", k,
                          " is out of range for shape ", ShapeToString(c.dims));
    if (k > 0 && flat[k] <= flat[k - 1])
      return InvalidModel(
          "sparse tensor '", name, "' index ", flat[k], " of value ", k,
          flat[k] == flat[k - 1] ? " repeats the previous one" : " is below the previous one",
          "; ONNX requires the indices in ascending order without duplicates");
  }
  return c;
}

// Sparse attribute values (Constant's sparse_value) are densified: attributes are small.
StatusOr<Tensor> SparseToDense(const onnx::SparseTensorProto& sp, LoadContext& lc) {
  ONYX_ASSIGN_OR_RETURN(ir::SparseConstant c, ConvertSparse(sp, lc));
  return c.Densify();
}

StatusOr<ir::Attribute> ConvertAttribute(const onnx::AttributeProto& ap, LoadContext& lc,
                                         const std::string& where) {
  ir::Attribute a;
  a.name = ap.name();
  a.ref_attr_name = ap.ref_attr_name();
  int type = ap.type();
  if (type == 0) {
    // IR < 2 style: infer the type from which field is set.
    if (ap.has_f())
      type = 1;
    else if (ap.has_i())
      type = 2;
    else if (ap.has_s())
      type = 3;
    else if (ap.has_t())
      type = 4;
    else if (ap.has_g())
      type = 5;
    else if (ap.floats_size())
      type = 6;
    else if (ap.ints_size())
      type = 7;
    else if (ap.strings_size())
      type = 8;
    else if (ap.tensors_size())
      type = 9;
    else if (ap.graphs_size())
      type = 10;
    else if (!a.ref_attr_name.empty())
      type = 0;
  }
  if (type < 0 || type > 14)
    return InvalidModel(where, ": attribute '", ap.name(), "' has unknown type ", type);
  a.type = static_cast<ir::AttrType>(type);
  a.f = ap.f();
  a.i = ap.i();
  a.s = ap.s();
  a.floats.assign(ap.floats().begin(), ap.floats().end());
  a.ints.assign(ap.ints().begin(), ap.ints().end());
  a.strings.assign(ap.strings().begin(), ap.strings().end());
  auto ctx = [&](const Status& s) {
    return s.WithContext(where + ": attribute '" + ap.name() + "': ");
  };
  // The nesting error already names the node where the limit was crossed; the path of every
  // enclosing If or Loop would repeat for each of up to max_nesting levels.
  auto sub_ctx = [&](const Status& s) {
    return s.code() == ErrorCode::kLimit && s.message().find(kNestingMarker) != std::string::npos
               ? s
               : ctx(s);
  };
  if (a.type == ir::AttrType::kTensor) {
    auto t = TensorFromProto(ap.t(), lc.state->ext);
    if (!t.ok()) return ctx(t.status());
    a.t = std::move(t).value();
  }
  if (a.type == ir::AttrType::kSparseTensor) {
    auto t = SparseToDense(ap.sparse_tensor(), lc);
    if (!t.ok()) return ctx(t.status());
    a.t = std::move(t).value();
  }
  for (const auto& tp : ap.tensors()) {
    auto t = TensorFromProto(tp, lc.state->ext);
    if (!t.ok()) return ctx(t.status());
    a.tensors.push_back(std::move(t).value());
  }
  LoadContext sub = lc;
  if (a.type == ir::AttrType::kGraph || ap.graphs_size() > 0) {
    if (++sub.nesting > lc.state->limits.max_nesting)
      return ctx(NestingLimit(*lc.state, "", "subgraphs (If, Loop and Scan bodies)"));
  }
  if (a.type == ir::AttrType::kGraph) {
    auto g = ConvertGraph(ap.g(), sub);
    if (!g.ok()) return sub_ctx(g.status());
    a.g = std::move(g).value();
  }
  for (const auto& gp : ap.graphs()) {
    auto g = ConvertGraph(gp, sub);
    if (!g.ok()) return sub_ctx(g.status());
    a.graphs.push_back(std::move(g).value());
  }
  if (ap.has_tp()) a.type_proto = TypeFromProto(ap.tp());
  for (const auto& tp : ap.type_protos()) a.type_protos.push_back(TypeFromProto(tp));
  return a;
}

StatusOr<ir::Node> ConvertNode(const onnx::NodeProto& np, LoadContext& lc, int index) {
  ir::Node n;
  n.name = np.name();
  n.op_type = np.op_type();
  n.domain = NormalizeDomain(np.domain());
  n.index = index;
  n.inputs.assign(np.input().begin(), np.input().end());
  n.outputs.assign(np.output().begin(), np.output().end());
  if (n.op_type.empty()) return InvalidModel("node #", index, " has no op_type");
  auto it = lc.opsets->find(n.domain);
  n.opset = it == lc.opsets->end() ? 0 : it->second;
  std::set<std::string> seen;
  for (const auto& ap : np.attribute()) {
    if (!seen.insert(ap.name()).second)
      return InvalidModel(n.Describe(), ": attribute '", ap.name(), "' appears twice");
    ONYX_ASSIGN_OR_RETURN(ir::Attribute a, ConvertAttribute(ap, lc, n.Describe()));
    n.attributes.push_back(std::move(a));
  }
  return n;
}

// Nodes that `nodes` become once every call of a model-local function is inlined, subgraphs
// included, counted from the protos before anything is built: a function bomb (each level
// calling the next twice) then fails at once instead of building millions of nodes first.
// Saturates at max_nodes + 1. `call_depth` counts the function calls around `nodes`.
StatusOr<int64_t> CountInlinedNodes(
    const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes, LoadState& st,
    int64_t call_depth);

StatusOr<int64_t> InlinedSize(const std::string& name, const onnx::FunctionProto& fn, LoadState& st,
                              int64_t call_depth) {
  if (call_depth > st.limits.max_nesting)
    return NestingLimit(st, "model-local function '" + name + "': ", "function calls");
  auto [it, fresh] = st.expanded_size.emplace(&fn, -1);
  if (!fresh) {
    if (it->second >= 0) return it->second;
    return InvalidModel("model-local function '", name,
                        "' calls itself (directly or through other functions); functions "
                        "cannot be recursive");
  }
  ONYX_ASSIGN_OR_RETURN(int64_t n, CountInlinedNodes(fn.node(), st, call_depth));
  st.expanded_size[&fn] = n;  // `it` may be invalid: the map grew while counting
  return n;
}

StatusOr<int64_t> CountInlinedNodes(
    const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes, LoadState& st,
    int64_t call_depth) {
  const int64_t cap = st.limits.max_nodes + 1;
  int64_t total = 0;
  for (const auto& np : nodes) {
    int64_t n = 1;
    auto fit = st.functions.find({NormalizeDomain(np.domain()), np.op_type()});
    if (fit != st.functions.end()) {
      ONYX_ASSIGN_OR_RETURN(n, InlinedSize(np.op_type(), *fit->second, st, call_depth + 1));
    }
    for (const auto& ap : np.attribute()) {
      std::vector<const onnx::GraphProto*> subs;
      if (ap.has_g()) subs.push_back(&ap.g());
      for (const auto& gp : ap.graphs()) subs.push_back(&gp);
      for (const onnx::GraphProto* gp : subs) {
        ONYX_ASSIGN_OR_RETURN(int64_t k, CountInlinedNodes(gp->node(), st, call_depth));
        n = std::min(cap, n + k);
      }
    }
    total = std::min(cap, total + n);
    if (total == cap) break;
  }
  return total;
}

// Inlines a call to a model-local function: fresh names for its internal values, formal
// inputs/outputs bound to the call's, attribute references substituted.
Status ExpandFunctionCall(const ir::Node& call, const onnx::FunctionProto& fn, LoadContext& lc,
                          std::vector<ir::Node>& out);

Status AppendNode(const onnx::NodeProto& np, LoadContext& lc, std::vector<ir::Node>& out) {
  LoadState& st = *lc.state;
  ONYX_ASSIGN_OR_RETURN(ir::Node n, ConvertNode(np, lc, static_cast<int>(out.size())));
  auto fit = st.functions.find({n.domain, n.op_type});
  if (fit != st.functions.end()) {
    // Refused before a single node of the call is built.
    ONYX_ASSIGN_OR_RETURN(int64_t size,
                          InlinedSize(n.op_type, *fit->second, st, lc.call_depth + 1));
    if (size > st.limits.max_nodes - st.nodes) return NodeLimit(st, n.Describe() + ": ");
    return ExpandFunctionCall(n, *fit->second, lc, out);
  }
  if (n.opset == 0)
    return InvalidModel(n.Describe(), " uses domain '", n.domain.empty() ? "ai.onnx" : n.domain,
                        "', which the model does not import (no opset_import entry)");
  if (++st.nodes > st.limits.max_nodes) return NodeLimit(st, n.Describe() + ": ");
  out.push_back(std::move(n));
  return Status::Ok();
}

Status ExpandFunctionCall(const ir::Node& call, const onnx::FunctionProto& fn, LoadContext& lc,
                          std::vector<ir::Node>& out) {
  LoadState& st = *lc.state;
  if (lc.call_depth + 1 > st.limits.max_nesting)
    return NestingLimit(st, call.Describe() + ": ", "model-local function calls");
  const std::string prefix = "__" + fn.name() + "_" + std::to_string(st.inline_counter++) + "/";
  std::map<std::string, std::string> rename;
  for (int i = 0; i < fn.input_size(); ++i)
    rename[fn.input(i)] = i < static_cast<int>(call.inputs.size()) ? call.inputs[i] : "";
  for (int i = 0; i < fn.output_size(); ++i)
    rename[fn.output(i)] =
        i < static_cast<int>(call.outputs.size()) ? call.outputs[i] : prefix + fn.output(i);
  std::map<std::string, const ir::Attribute*> call_attrs;
  for (const auto& a : call.attributes) call_attrs[a.name] = &a;
  // Function-level opset imports override the caller's for the body; only a function that has
  // any pays for a copy of the (small) map.
  OpsetMap body_opsets;
  LoadContext body_lc = lc;
  ++body_lc.call_depth;
  if (fn.opset_import_size() > 0) {
    body_opsets = *lc.opsets;
    for (const auto& os : fn.opset_import())
      body_opsets[NormalizeDomain(os.domain())] = os.version();
    body_lc.opsets = &body_opsets;
  }
  auto map_name = [&](const std::string& s) -> std::string {
    if (s.empty()) return s;
    auto it = rename.find(s);
    return it != rename.end() ? it->second : prefix + s;
  };
  std::vector<ir::Node> tmp;
  for (const auto& np : fn.node()) {
    tmp.clear();
    ONYX_RETURN_IF_ERROR(AppendNode(np, body_lc, tmp));
    for (ir::Node& n : tmp) {
      for (auto& s : n.inputs) s = map_name(s);
      for (auto& s : n.outputs) s = map_name(s);
      std::vector<ir::Attribute> attrs;
      for (auto& a : n.attributes) {
        if (!a.ref_attr_name.empty()) {
          auto it = call_attrs.find(a.ref_attr_name);
          if (it == call_attrs.end()) {
            // Fall back to the function's declared default, if any.
            bool found = false;
            for (const auto& ap : fn.attribute_proto())
              if (ap.name() == a.ref_attr_name) {
                ONYX_ASSIGN_OR_RETURN(ir::Attribute d, ConvertAttribute(ap, lc, call.Describe()));
                d.name = a.name;
                attrs.push_back(std::move(d));
                found = true;
              }
            if (!found) continue;  // unset optional attribute
          } else {
            ir::Attribute sub = *it->second;
            sub.name = a.name;
            attrs.push_back(std::move(sub));
          }
        } else {
          attrs.push_back(std::move(a));
        }
      }
      n.attributes = std::move(attrs);
      if (n.name.empty())
        n.name = prefix + n.op_type;
      else
        n.name = prefix + n.name;
      n.index = static_cast<int>(out.size());
      out.push_back(std::move(n));
    }
  }
  return Status::Ok();
}

StatusOr<std::shared_ptr<ir::Graph>> ConvertGraph(const onnx::GraphProto& gp, LoadContext& lc,
                                                  onnx::GraphProto* release) {
  auto g = std::make_shared<ir::Graph>();
  g->name = gp.name();
  g->opsets = *lc.opsets;
  LoadState& st = *lc.state;
  // Counted before any is converted, so a model with millions of them fails at once.
  st.initializers += gp.initializer_size() + gp.sparse_initializer_size();
  if (st.initializers > st.limits.max_initializers)
    return LimitExceeded("the model has more than ", st.limits.max_initializers,
                         " initializers (subgraphs included), the limit max_initializers; raise "
                         "it with SessionOptions::limits.max_initializers or the "
                         "ONYX_MAX_INITIALIZERS environment variable");
  for (int i = 0; i < gp.initializer_size(); ++i) {
    const onnx::TensorProto& tp = gp.initializer(i);
    if (tp.name().empty())
      return InvalidModel("graph '", gp.name(), "' has an initializer without a name");
    auto t = release ? TakeTensorFromProto(release->mutable_initializer(i), lc.state->ext)
                     : TensorFromProto(tp, lc.state->ext);
    if (!t.ok()) return t.status().WithContext("initializer '" + tp.name() + "': ");
    if (!g->initializers.emplace(tp.name(), std::move(t).value()).second)
      return InvalidModel("initializer '", tp.name(), "' is defined twice");
    if (release) {
      onnx::TensorProto* done = release->mutable_initializer(i);
      done->clear_raw_data();
      done->clear_float_data();
      done->clear_int64_data();
      done->clear_double_data();
      done->clear_int32_data();
    }
  }
  // Kept sparse (COO): the planner densifies only what a plan reads.
  for (int i = 0; i < gp.sparse_initializer_size(); ++i) {
    const onnx::SparseTensorProto& sp = gp.sparse_initializer(i);
    const std::string name = sp.values().name();
    if (name.empty())
      return InvalidModel("graph '", gp.name(), "' has a sparse initializer without a name");
    auto c = ConvertSparse(sp, lc, release ? release->mutable_sparse_initializer(i) : nullptr);
    if (!c.ok()) return c.status().WithContext("sparse initializer '" + name + "': ");
    if (g->initializers.count(name) ||
        !g->sparse_initializers.emplace(name, std::move(c).value()).second)
      return InvalidModel("initializer '", name, "' is defined twice");
  }
  for (const auto& vi : gp.input()) {
    TypeInfo type = TypeFromProto(vi.type());
    if (vi.type().has_tensor_type() && !IsKnownDType(vi.type().tensor_type().elem_type()) &&
        vi.type().tensor_type().elem_type() != 0)
      return InvalidModel("graph input '", vi.name(), "' has unknown data type ",
                          vi.type().tensor_type().elem_type());
    g->inputs.push_back({vi.name(), type});
  }
  for (const auto& vi : gp.output()) g->outputs.push_back({vi.name(), TypeFromProto(vi.type())});
  for (const auto& vi : gp.value_info()) g->value_info[vi.name()] = TypeFromProto(vi.type());
  for (const auto& np : gp.node()) ONYX_RETURN_IF_ERROR(AppendNode(np, lc, g->nodes));
  // IR >= 4: initializers need not be graph inputs; IR < 4: an initializer listed as an input is
  // that input's default value (the feed overrides it). Both are represented the same way here.
  return g;
}

// Names a subgraph reads from enclosing scopes (its own and nested subgraphs' free names).
void CollectFreeNames(const ir::Graph& g, std::set<std::string>& free_names) {
  std::set<std::string> local;
  for (const auto& v : g.inputs) local.insert(v.name);
  for (const auto& [name, t] : g.initializers) local.insert(name);
  for (const auto& [name, t] : g.sparse_initializers) local.insert(name);
  for (const auto& n : g.nodes)
    for (const auto& o : n.outputs) local.insert(o);
  for (const auto& n : g.nodes) {
    for (const auto& i : n.inputs)
      if (!i.empty() && !local.count(i)) free_names.insert(i);
    for (const auto& i : n.implicit_inputs)
      if (!local.count(i)) free_names.insert(i);
  }
  for (const auto& o : g.outputs)
    if (!local.count(o.name)) free_names.insert(o.name);
}

// Names visible from the enclosing graphs: one set per graph, linked outward, so a subgraph
// sees its scope without a copy of it (copying per node made validation quadratic).
struct Scope {
  const std::unordered_set<std::string_view>* names = nullptr;
  const Scope* parent = nullptr;
  bool Contains(std::string_view name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent)
      if (s->names->count(name)) return true;
    return false;
  }
};

Status ValidateGraphIn(ir::Graph& g, const Scope* outer) {
  // Input and output counts against the ONNX schemas first: everything after this (shape
  // inference, constant folding, kernels) indexes a node's required inputs unchecked.
  for (const auto& n : g.nodes) ONYX_RETURN_IF_ERROR(kernels::CheckNodeArity(n));
  // Every name this graph defines: inputs, initializers and node outputs. The views point into
  // `g`, whose names do not change while it is validated.
  std::unordered_set<std::string_view> names;
  names.reserve(g.inputs.size() + g.initializers.size() + g.sparse_initializers.size() +
                g.nodes.size());
  for (const auto& v : g.inputs) {
    if (v.name.empty()) return InvalidModel("graph '", g.name, "' has an input without a name");
    if (!names.insert(v.name).second)
      return InvalidModel("graph input '", v.name, "' is declared twice");
  }
  for (const auto& [name, t] : g.initializers) names.insert(name);
  for (const auto& [name, t] : g.sparse_initializers) names.insert(name);
  // Single assignment: each name produced once (by a node, an input or an initializer).
  std::unordered_map<std::string_view, const ir::Node*> producer;
  producer.reserve(g.nodes.size());
  for (const auto& n : g.nodes) {
    for (const auto& o : n.outputs) {
      if (o.empty()) continue;
      if (names.count(o))
        return InvalidModel(
            n.Describe(), ": output '", o,
            "' is also a graph input or initializer; every value must be produced once");
      auto [it, fresh] = producer.emplace(o, &n);
      if (!fresh)
        return InvalidModel(n.Describe(), ": output '", o, "' is already produced by ",
                            it->second->Describe(), "; every value must be produced once");
    }
  }
  for (const auto& [name, n] : producer) names.insert(name);
  const Scope here{&names, outer};
  auto visible = [&](const std::string& name) {
    return names.count(name) || (outer != nullptr && outer->Contains(name));
  };
  // Subgraphs first: they see everything visible here (validated as a scope, not by order).
  for (auto& n : g.nodes) {
    std::set<std::string> implicit;
    for (auto& a : n.attributes) {
      std::vector<ir::Graph*> subs;
      if (a.g) subs.push_back(a.g.get());
      for (auto& sg : a.graphs) subs.push_back(sg.get());
      for (ir::Graph* sg : subs) {
        Status s = ValidateGraphIn(*sg, &here);
        if (!s.ok()) return s.WithContext(n.Describe() + ": attribute '" + a.name + "': ");
        CollectFreeNames(*sg, implicit);
      }
    }
    n.implicit_inputs.assign(implicit.begin(), implicit.end());
  }
  for (const auto& n : g.nodes) {
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const std::string& in = n.inputs[i];
      if (in.empty()) continue;
      if (!visible(in))
        return InvalidModel(n.Describe(), ": input ", i, " '", in,
                            "' is not produced by any node, graph input or initializer");
    }
    for (const auto& in : n.implicit_inputs)
      if (!visible(in))
        return InvalidModel(n.Describe(), ": a subgraph reads '", in,
                            "', which is not defined in any enclosing scope");
  }
  for (const auto& o : g.outputs)
    if (!visible(o.name))
      return InvalidModel("graph output '", o.name,
                          "' is not produced by any node, input or initializer");
  // A cycle leaves nodes Kahn's algorithm never reaches; the schedule names one of them.
  return planner::KahnSchedule(g).status();
}

}  // namespace

Status ValidateGraph(ir::Graph& g, const std::vector<std::string>& outer_scope) {
  const std::unordered_set<std::string_view> outer_names(outer_scope.begin(), outer_scope.end());
  const Scope outer{&outer_names, nullptr};
  return ValidateGraphIn(g, &outer);
}

namespace {

// Protobuf levels per subgraph level (GraphProto > NodeProto > AttributeProto > GraphProto),
// and room for the messages around and inside the innermost graph (types, tensors): enough
// for max_nesting subgraphs. Capped so that a huge max_nesting cannot let the recursive parser
// (and the recursive conversion after it) overflow the stack.
constexpr int kProtobufLevelsPerSubgraph = 3;
constexpr int kProtobufBaseDepth = 100;  // protobuf's own default
constexpr int kMaxProtobufDepth = 1000;

int ProtobufDepth(const Limits& limits) {
  const int64_t want = kProtobufBaseDepth + kProtobufLevelsPerSubgraph * limits.max_nesting;
  return static_cast<int>(std::min<int64_t>(want, kMaxProtobufDepth));
}

// Parses serialized ModelProto bytes with the error a user can act on. protobuf takes at most
// 2 GiB in one piece; larger models must use external data.
Status ParseModel(const void* data, size_t size, const std::string& prefix, const Limits& limits,
                  onnx::ModelProto* mp) {
  if (size == 0)
    return InvalidModel(prefix, "the file is empty; expected a serialized ONNX ModelProto");
  if (size > static_cast<size_t>(std::numeric_limits<int>::max()))
    return InvalidModel(prefix, "the model is ", size,
                        " bytes; protobuf reads at most 2 GiB, so larger weights must be saved "
                        "as external data");
  google::protobuf::io::CodedInputStream in(static_cast<const uint8_t*>(data),
                                            static_cast<int>(size));
  const int depth = ProtobufDepth(limits);
  in.SetRecursionLimit(depth);
  if (!mp->ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
    return InvalidModel(prefix,
                        "not a valid ONNX model: protobuf parsing failed (truncated or corrupt "
                        "file? or messages nested more than ",
                        depth,
                        " deep: subgraphs may nest deeper than the nesting limit "
                        "max_nesting = ",
                        limits.max_nesting,
                        "; raise it with SessionOptions::limits.max_nesting or "
                        "ONYX_MAX_NESTING)");
  return Status::Ok();
}

// Converts a parsed model; the main graph's initializer bytes are released from `mp` as they
// are converted.
// Initializers of `g` (subgraphs included) whose external data lives in one of
// edits.external_files get those bytes as raw_data.
Status ReadExternalFromMemory(onnx::GraphProto* g, const ModelEdits& edits) {
  for (auto& t : *g->mutable_initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    std::string location;
    uint64_t offset = 0, length = 0;
    bool has_length = false;
    for (const auto& e : t.external_data()) {
      if (e.key() == "location") location = e.value();
      if (e.key() == "offset") offset = std::strtoull(e.value().c_str(), nullptr, 10);
      if (e.key() == "length") {
        length = std::strtoull(e.value().c_str(), nullptr, 10);
        has_length = true;
      }
    }
    auto file = edits.external_files.find(location);
    if (file == edits.external_files.end()) continue;
    const std::string_view bytes = file->second;
    if (!has_length) length = offset <= bytes.size() ? bytes.size() - offset : 0;
    if (offset > bytes.size() || length > bytes.size() - offset)
      return InvalidArgument("initializer '", t.name(), "': its external data (offset ", offset,
                             ", length ", length, ") lies outside the ", bytes.size(),
                             " bytes given in memory for '", location, "'");
    t.set_raw_data(std::string(bytes.substr(offset, length)));
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto::DEFAULT);
  }
  for (auto& n : *g->mutable_node())
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) ONYX_RETURN_IF_ERROR(ReadExternalFromMemory(a.mutable_g(), edits));
      for (auto& sg : *a.mutable_graphs()) ONYX_RETURN_IF_ERROR(ReadExternalFromMemory(&sg, edits));
    }
  return Status::Ok();
}

// Applies SessionOptions::edits to the parsed model.
Status ApplyEdits(onnx::ModelProto& mp, const ModelEdits& edits) {
  onnx::GraphProto* g = mp.mutable_graph();
  for (const auto& edit : edits.initializers) {
    // Named copies, not structured bindings: C++17 lambdas cannot capture those (clang refuses).
    const std::string& name = edit.first;
    const Tensor& tensor = edit.second;
    onnx::TensorProto* target = nullptr;
    for (auto& init : *g->mutable_initializer())
      if (init.name() == name) target = &init;
    if (!target) {
      const bool is_input =
          std::any_of(g->input().begin(), g->input().end(),
                      [&](const onnx::ValueInfoProto& v) { return v.name() == name; });
      if (!is_input)
        return InvalidArgument("an initializer was given for '", name,
                               "', but the model has no initializer or graph input of that name");
      target = g->add_initializer();
    }
    TensorToProto(tensor, name, target);
  }
  if (!edits.external_files.empty()) ONYX_RETURN_IF_ERROR(ReadExternalFromMemory(g, edits));
  if (edits.dims_by_name.empty() && edits.dims_by_denotation.empty()) return Status::Ok();
  for (auto& in : *g->mutable_input()) {
    if (!in.type().has_tensor_type() || !in.type().tensor_type().has_shape()) continue;
    for (auto& d : *in.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
      auto by_name =
          d.has_dim_param() ? edits.dims_by_name.find(d.dim_param()) : edits.dims_by_name.end();
      auto by_denotation = edits.dims_by_denotation.find(d.denotation());
      int64_t value = -1;
      if (by_name != edits.dims_by_name.end())
        value = by_name->second;
      else if (!d.denotation().empty() && by_denotation != edits.dims_by_denotation.end())
        value = by_denotation->second;
      else
        continue;
      if (d.has_dim_value() && d.dim_value() != value)
        return InvalidArgument("input '", in.name(), "': a free dimension override sets ", value,
                               " for a dimension fixed at ", d.dim_value());
      d.set_dim_value(value);
    }
  }
  return Status::Ok();
}

StatusOr<ir::Model> LoadImpl(onnx::ModelProto& mp, const std::string& display_name,
                             const std::string& model_dir, const Limits& limits,
                             const ModelEdits& edits,
                             std::shared_ptr<const memory::RegularFile> model_file = nullptr) {
  const std::string prefix = display_name + ": ";
  if (!mp.has_graph())
    return InvalidModel(prefix,
                        "not a valid ONNX model: it has no graph (is this really an .onnx file?)");
  ONYX_RETURN_IF_ERROR(ApplyEdits(mp, edits).WithContext(prefix));
  if (!mp.has_ir_version() || mp.ir_version() <= 0)
    return InvalidModel(prefix, "the model has no ir_version");
  if (mp.ir_version() < kMinIrVersion || mp.ir_version() > kMaxIrVersion)
    return Status(ErrorCode::kUnsupported,
                  StrCat(prefix, "IR version ", mp.ir_version(), " is not supported (onyx reads ",
                         kMinIrVersion, " to ", kMaxIrVersion, ")"));
  LoadState st;
  st.limits = limits;
  st.ir_version = mp.ir_version();
  st.ext.model_dir = model_dir;
  st.ext.max_tensor_bytes = limits.max_tensor_bytes;
  st.ext.model_file = std::move(model_file);
  OpsetMap opsets;
  for (const auto& os : mp.opset_import()) opsets[NormalizeDomain(os.domain())] = os.version();
  if (opsets.empty())
    return InvalidModel(prefix, "the model imports no opset (opset_import is empty)");
  for (const auto& fn : mp.functions())
    st.functions[{NormalizeDomain(fn.domain()), fn.name()}] = &fn;
  LoadContext lc;
  lc.state = &st;
  lc.opsets = &opsets;
  ir::Model m;
  m.ir_version = mp.ir_version();
  m.producer_name = mp.producer_name();
  m.producer_version = mp.producer_version();
  m.opsets = opsets;
  m.display_name = display_name;
  auto g = ConvertGraph(mp.graph(), lc, mp.mutable_graph());
  if (!g.ok()) return g.status().WithContext(prefix);
  m.graph = std::move(g).value();
  Status s = ValidateGraph(*m.graph, {});
  if (!s.ok()) return s.WithContext(prefix);
  return m;
}
}  // namespace

StatusOr<ir::Model> LoadModelFromBytes(const std::string& bytes, const std::string& display_name,
                                       const Limits& limits, const ModelEdits& edits) {
  onnx::ModelProto mp;
  ONYX_RETURN_IF_ERROR(ParseModel(bytes.data(), bytes.size(), display_name + ": ", limits, &mp));
  return LoadImpl(mp, display_name, "", limits, edits);
}

std::string ModelDir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

std::string ModelBaseName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

namespace {

// A regular file only, opened without blocking: a FIFO or a device is refused at once.
StatusOr<memory::RegularFile> OpenModelFile(const std::string& path) {
  auto file = memory::RegularFile::Open(path);
  if (!file.ok()) return NotFound("cannot open model file '", path, "': ", file.status().message());
  return file;
}

// The whole file, read into owned memory and parsed. Not mapped: a file truncated while it is
// parsed then gives an error instead of SIGBUS (the cost, measured: memory/mapped_file.h). The
// bytes are freed once parsed; initializers' raw bytes then move, not copy, into tensors.
Status ParseWholeFile(const memory::RegularFile& file, const std::string& base,
                      const Limits& limits, onnx::ModelProto* mp) {
  if (file.size() > static_cast<uint64_t>(std::numeric_limits<int>::max()))
    return ParseModel(nullptr, file.size(), base + ": ", limits, mp);
  auto bytes = memory::ReadAll(file);
  if (!bytes.ok()) return bytes.status().WithContext(base + ": ");
  return ParseModel(bytes->data.get(), bytes->size, base + ": ", limits, mp);
}

}  // namespace

Status ReadModelProto(const std::string& path, const Limits& limits, onnx::ModelProto* mp) {
  ONYX_ASSIGN_OR_RETURN(memory::RegularFile file, OpenModelFile(path));
  return ParseWholeFile(file, ModelBaseName(path), limits, mp);
}

Status ReadModelProtoLeavingWeights(const std::string& path, const Limits& limits,
                                    onnx::ModelProto* mp,
                                    std::shared_ptr<const memory::RegularFile>* file) {
  ONYX_ASSIGN_OR_RETURN(memory::RegularFile opened, OpenModelFile(path));
  auto shared = std::make_shared<const memory::RegularFile>(std::move(opened));
  const std::string base = ModelBaseName(path);
  std::string bytes;
  bool plain = false;
  ONYX_RETURN_IF_ERROR(ReadModelLeavingWeights(*shared, kLeaveInFileMinBytes, &bytes, &plain)
                           .WithContext(base + ": "));
  // A file whose wire format does not walk is parsed whole, and protobuf says what is wrong.
  if (!plain) {
    if (file) *file = nullptr;
    return ParseWholeFile(*shared, base, limits, mp);
  }
  if (file) *file = std::move(shared);
  return ParseModel(bytes.data(), bytes.size(), base + ": ", limits, mp);
}

Status ParseModelProto(const std::string& bytes, const std::string& display_name,
                       const Limits& limits, onnx::ModelProto* mp) {
  return ParseModel(bytes.data(), bytes.size(), display_name + ": ", limits, mp);
}

StatusOr<ir::Model> LoadModelFromFile(const std::string& path, const Limits& limits,
                                      const ModelEdits& edits) {
  onnx::ModelProto mp;
  std::shared_ptr<const memory::RegularFile> file;
  ONYX_RETURN_IF_ERROR(ReadModelProtoLeavingWeights(path, limits, &mp, &file));
  auto m = LoadImpl(mp, ModelBaseName(path), ModelDir(path), limits, edits, std::move(file));
  if (!m.ok()) return m;
  m->path = path;
  return m;
}

}  // namespace onyx::engine
