// ControlFlow family: If, Loop, Scan. Shape functions infer the graph attributes through
// InferContext::InferSubgraph; the reference kernels live in kernels/reference/control_flow.cc.
#include "kernels/reference/control_flow.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"
#include "kernels/reference/control_flow_util.h"

namespace onyx::kernels {

namespace {

using reference::MergeTypes;
using reference::RelaxDims;
using reference::SameType;

TypeInfo ScalarType(DType t) {
  return TypeInfo::TensorWithShape(t, {});
}

// `t` without dim `axis` (already normalised); shapeless types pass through.
TypeInfo DropDim(const TypeInfo& t, int64_t axis) {
  TypeInfo r = t;
  if (r.kind == TypeInfo::Kind::kTensor && r.has_shape) r.dims.erase(r.dims.begin() + axis);
  return r;
}

// `t` with `d` inserted before `axis` (already normalised for the result's rank).
TypeInfo InsertTypeDim(const TypeInfo& t, int64_t axis, const Dim& d) {
  TypeInfo r = t;
  if (r.kind == TypeInfo::Kind::kTensor && r.has_shape) r.dims.insert(r.dims.begin() + axis, d);
  return r;
}

// Checks that input i, when its type is known, is a bool tensor (If's and Loop's cond).
Status ExpectBoolCond(InferContext& ctx, int i) {
  if (!ctx.has_input(i)) return Status::Ok();
  const TypeInfo& t = ctx.input_type(i);
  if (t.kind == TypeInfo::Kind::kTensor && t.elem != DType::kBool && t.elem != DType::kUndefined)
    return ctx.node().Invalid("input ", i, " '", ctx.node().node().inputs[i],
                              "' must be bool, got ", t.ToString());
  return Status::Ok();
}

Status RequireGraph(InferContext& ctx, const char* attr) {
  if (!ctx.node().attr_graph(attr))
    return ctx.node().Invalid("graph attribute '", attr, "' is missing");
  return Status::Ok();
}

// Infers the body with `in` types and widens the state types at positions
// [state_in, state_in + count) of `in` (matched with body outputs [state_out, ...)) until the body
// maps them to themselves: values carried across iterations may change shape. Returns the body's
// output types from the last pass and leaves the widened state types in `in`.
StatusOr<std::vector<TypeInfo>> InferCarried(InferContext& ctx, std::vector<TypeInfo>* in,
                                             size_t state_in, size_t state_out, size_t count) {
  constexpr int kMaxPasses = 4;
  std::vector<TypeInfo> out;
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    ONYX_ASSIGN_OR_RETURN(out, ctx.InferSubgraph("body", *in));
    if (out.size() < state_out + count)
      return ctx.node().Invalid("body has ", out.size(), " outputs; expected at least ",
                                state_out + count);
    bool stable = true;
    for (size_t i = 0; i < count; ++i) {
      TypeInfo merged = MergeTypes((*in)[state_in + i], out[state_out + i]);
      if (SameType(merged, (*in)[state_in + i])) continue;
      stable = false;
      // Late passes keep only kinds and ranks, so the widening ends.
      (*in)[state_in + i] = pass + 2 >= kMaxPasses ? RelaxDims(merged) : merged;
    }
    if (stable) break;
  }
  return out;
}

// ---- If ----

Status InferIf(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectBoolCond(ctx, 0));
  ONYX_RETURN_IF_ERROR(RequireGraph(ctx, "then_branch"));
  ONYX_RETURN_IF_ERROR(RequireGraph(ctx, "else_branch"));
  // A constant condition picks one branch: only its inference counts.
  const Tensor* cond = ctx.has_input(0) ? ctx.input_constant(0) : nullptr;
  const bool known = cond && cond->numel() == 1 && cond->dtype() == DType::kBool;
  const bool taken = known && *cond->data<bool>();
  StatusOr<std::vector<TypeInfo>> then_types = ctx.InferSubgraph("then_branch", {});
  StatusOr<std::vector<TypeInfo>> else_types = ctx.InferSubgraph("else_branch", {});
  // A branch whose inference fails is left to run time (its plan is made when it runs, and
  // fails there with the same error), as long as the other branch can run: the node's outputs
  // then take the other branch's types.
  for (const auto* failed : {&then_types, &else_types}) {
    if (failed->ok()) continue;
    const bool is_then = failed == &then_types;
    const auto& other = is_then ? else_types : then_types;
    const bool needed = known ? taken == is_then : !other.ok();
    if (needed || !reference::DeferrableInferenceError(failed->status())) return failed->status();
  }
  const int n = ctx.num_outputs();
  const std::vector<TypeInfo>& any = then_types.ok() ? *then_types : *else_types;
  const size_t n_then = then_types.ok() ? then_types->size() : any.size();
  const size_t n_else = else_types.ok() ? else_types->size() : any.size();
  if (static_cast<int>(n_then) < n || static_cast<int>(n_else) < n)
    return ctx.node().Invalid("the node has ", n, " outputs but then_branch has ", n_then,
                              " and else_branch ", n_else);
  for (int i = 0; i < n; ++i) {
    if (!ctx.has_output(i)) continue;
    if (known) {
      ctx.SetOutputType(i, (taken ? *then_types : *else_types)[i]);
    } else if (then_types.ok() && else_types.ok()) {
      ctx.SetOutputType(i, MergeTypes((*then_types)[i], (*else_types)[i]));
    } else {
      ctx.SetOutputType(i, any[i]);
    }
  }
  return Status::Ok();
}

// ---- Loop ----
Status InferLoop(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireGraph(ctx, "body"));
  ONYX_RETURN_IF_ERROR(ExpectBoolCond(ctx, 1));
  if (ctx.has_input(0)) {
    const TypeInfo& m = ctx.input_type(0);
    if (m.kind == TypeInfo::Kind::kTensor && m.elem != DType::kInt64 && m.elem != DType::kUndefined)
      return ctx.node().Invalid("input 0 'M' must be int64, got ", m.ToString());
  }
  const int num_carried = std::max(0, ctx.num_inputs() - 2);
  std::vector<TypeInfo> in = {ScalarType(DType::kInt64), ScalarType(DType::kBool)};
  for (int i = 0; i < num_carried; ++i) in.push_back(ctx.input_type(2 + i));
  StatusOr<std::vector<TypeInfo>> inferred = InferCarried(ctx, &in, 2, 1, num_carried);
  if (!inferred.ok()) {
    // A body that may never run (a trip count or a condition not known to start it) keeps its
    // inference error for run time, as an If branch does: the loop-carried values then keep
    // their input types and the scan outputs are unknown until a run.
    const Tensor* m = ctx.has_input(0) ? ctx.input_constant(0) : nullptr;
    const Tensor* c = ctx.has_input(1) ? ctx.input_constant(1) : nullptr;
    const bool runs = (!ctx.has_input(0) || (m && m->numel() == 1 && TensorToInts(*m)[0] > 0)) &&
                      (!ctx.has_input(1) ||
                       (c && c->numel() == 1 && c->dtype() == DType::kBool && *c->data<bool>()));
    if (runs || !reference::DeferrableInferenceError(inferred.status())) return inferred.status();
    for (int i = 0; i < ctx.num_outputs(); ++i)
      if (ctx.has_output(i)) ctx.SetOutputType(i, i < num_carried ? in[2 + i] : TypeInfo());
    return Status::Ok();
  }
  const std::vector<TypeInfo>& out = *inferred;
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    if (!ctx.has_output(i)) continue;
    if (i < num_carried) {
      ctx.SetOutputType(i, in[2 + i]);
    } else if (1 + i < static_cast<int>(out.size())) {
      // Scan outputs: one slice per iteration, stacked on a new leading axis.
      ctx.SetOutputType(i, InsertTypeDim(out[1 + i], 0, Dim()));
    }
  }
  return Status::Ok();
}

// ---- Scan 9+ ----
Status InferScan9(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireGraph(ctx, "body"));
  ONYX_ASSIGN_OR_RETURN(int64_t m, node.RequiredInt("num_scan_inputs"));
  if (m < 1 || m > ctx.num_inputs())
    return node.Invalid("num_scan_inputs ", m, " must be in [1, ", ctx.num_inputs(), "]");
  const int n = ctx.num_inputs() - static_cast<int>(m);
  const std::vector<int64_t> in_axes = node.attr_ints("scan_input_axes");
  const std::vector<int64_t> out_axes = node.attr_ints("scan_output_axes");
  if (!in_axes.empty() && static_cast<int64_t>(in_axes.size()) != m)
    return node.Invalid("scan_input_axes has ", in_axes.size(), " entries; expected ", m);

  std::vector<TypeInfo> in;
  for (int i = 0; i < n; ++i) in.push_back(ctx.input_type(i));
  Dim length;  // iterations: the scan axis of scan input 0
  for (int j = 0; j < m; ++j) {
    const TypeInfo& t = ctx.input_type(n + j);
    if (t.kind == TypeInfo::Kind::kTensor && t.has_shape) {
      ONYX_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, in_axes.empty() ? 0 : in_axes[j],
                                                        t.rank(), "scan_input_axes entry"));
      if (j == 0) length = t.dims[axis];
      in.push_back(DropDim(t, axis));
    } else {
      in.push_back(t);
    }
  }
  ONYX_ASSIGN_OR_RETURN(std::vector<TypeInfo> out, InferCarried(ctx, &in, 0, 0, n));
  const int k_out = static_cast<int>(out.size()) - n;
  if (!out_axes.empty() && static_cast<int>(out_axes.size()) != k_out)
    return node.Invalid("scan_output_axes has ", out_axes.size(), " entries; expected ", k_out);
  for (int i = 0; i < ctx.num_outputs() && i < static_cast<int>(out.size()); ++i) {
    if (!ctx.has_output(i)) continue;
    if (i < n) {
      ctx.SetOutputType(i, in[i]);
      continue;
    }
    const TypeInfo& elem = out[i];
    if (elem.kind == TypeInfo::Kind::kTensor && elem.has_shape) {
      ONYX_ASSIGN_OR_RETURN(
          int64_t axis, NormalizeAxis(node, out_axes.empty() ? 0 : out_axes[i - n], elem.rank() + 1,
                                      "scan_output_axes entry"));
      ctx.SetOutputType(i, InsertTypeDim(elem, axis, length));
    } else {
      ctx.SetOutputType(i, elem);
    }
  }
  return Status::Ok();
}

// ---- Scan 8 ----
Status InferScan8(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireGraph(ctx, "body"));
  ONYX_ASSIGN_OR_RETURN(int64_t m, node.RequiredInt("num_scan_inputs"));
  if (m < 1 || m > ctx.num_inputs() - 1)
    return node.Invalid("num_scan_inputs ", m, " must be in [1, ", ctx.num_inputs() - 1, "]");
  const int n = ctx.num_inputs() - 1 - static_cast<int>(m);
  Dim batch, seq;
  std::vector<TypeInfo> in;
  for (int i = 0; i < n; ++i) {
    const TypeInfo& t = ctx.input_type(1 + i);
    if (t.kind == TypeInfo::Kind::kTensor && t.has_shape && t.rank() < 1)
      return node.Invalid("state input ", 1 + i, " has type ", t.ToString(),
                          "; expected a leading batch dimension");
    in.push_back(t.has_shape ? DropDim(t, 0) : t);
  }
  for (int j = 0; j < m; ++j) {
    const TypeInfo& t = ctx.input_type(1 + n + j);
    if (t.kind == TypeInfo::Kind::kTensor && t.has_shape) {
      if (t.rank() < 2)
        return node.Invalid("scan input ", 1 + n + j, " has type ", t.ToString(),
                            "; expected [batch, sequence, ...]");
      if (j == 0) {
        batch = t.dims[0];
        seq = t.dims[1];
      }
      in.push_back(DropDim(DropDim(t, 0), 0));
    } else {
      in.push_back(t);
    }
  }
  ONYX_ASSIGN_OR_RETURN(std::vector<TypeInfo> out, InferCarried(ctx, &in, 0, 0, n));
  for (int i = 0; i < ctx.num_outputs() && i < static_cast<int>(out.size()); ++i) {
    if (!ctx.has_output(i)) continue;
    if (i < n)
      ctx.SetOutputType(i, InsertTypeDim(in[i], 0, batch));
    else
      ctx.SetOutputType(i, InsertTypeDim(InsertTypeDim(out[i], 0, seq), 0, batch));
  }
  return Status::Ok();
}

}  // namespace

void RegisterControlFlow(OpRegistry& r) {
  // If and Loop keep their semantics across opsets 1..25; later opsets only widen the types
  // (sequences in 13, optionals in 16, float8 in 19, int4 in 21, ...), all of which are plain
  // Values to these kernels.
  r.Add("", "If", 1, kLatestOpset, InferIf, reference::IfRef);
  r.Add("", "Loop", 1, kLatestOpset, InferLoop, reference::LoopRef);
  // Scan 8 has a batch axis and sequence_lens; 9 dropped both for per-input axes/directions.
  r.Add("", "Scan", 8, 8, InferScan8, reference::Scan8Ref);
  r.Add("", "Scan", 9, kLatestOpset, InferScan9, reference::Scan9Ref);
}

}  // namespace onyx::kernels
