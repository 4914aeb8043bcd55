// Reference kernels for If, Loop and Scan: plain loops over KernelContext::RunSubgraph.
#include "kernels/reference/control_flow.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "kernels/op_helpers.h"
#include "kernels/reference/control_flow_util.h"

namespace onyx::kernels::reference {

namespace {

// Reads a boolean condition (If's cond, Loop's cond and the body's cond_out): one element.
StatusOr<bool> ReadCondition(const NodeView& node, const Value& v, const char* what) {
  if (!v.is_tensor()) return node.Fail(what, " must be a tensor, got a sequence or empty optional");
  const Tensor& t = v.tensor();
  if (t.numel() != 1)
    return node.Fail(what, " must hold exactly one element, got shape ", ShapeToString(t.shape()));
  if (t.dtype() == DType::kBool) return *t.data<bool>();
  if (t.dtype() == DType::kString) return node.Fail(what, " must be bool, got string");
  return ElementAsDouble(t, 0) != 0;
}

const ir::Graph* Body(const NodeView& node, const char* attr) {
  return node.attr_graph(attr);
}

// Element type of a subgraph output as declared, float when the graph leaves it open.
DType DeclaredElem(const ir::Graph& g, size_t output) {
  if (output < g.outputs.size() && g.outputs[output].type.kind == TypeInfo::Kind::kTensor &&
      g.outputs[output].type.elem != DType::kUndefined)
    return g.outputs[output].type.elem;
  return DType::kFloat;
}

// Stacks per-iteration tensors `parts` into output `out` along `axis` of the result (which has
// rank parts' rank + 1); `reverse` stacks the last iteration first. `axis_attr` is the unnormalised
// axis (negative counts from the result's rank). With no parts the element shape and type come
// from the body's declared output `body_output`.
Status StackScanOutput(KernelContext& ctx, int out, const std::vector<Tensor>& parts,
                       int64_t axis_attr, bool reverse, const ir::Graph& body, size_t body_output) {
  const NodeView& node = ctx.node();
  if (!ctx.has_output(out)) return Status::Ok();
  Shape elem_shape;
  DType dtype;
  if (parts.empty()) {
    const TypeInfo& declared = body.outputs[body_output].type;
    dtype = DeclaredElem(body, body_output);
    // Nothing tells the element's rank: an empty 1-D tensor is the best answer.
    if (!declared.has_shape) {
      ctx.Output(out, dtype, {0});
      return Status::Ok();
    }
    elem_shape = DeclaredShapeOrZeros(declared);
  } else {
    elem_shape = parts[0].shape();
    dtype = parts[0].dtype();
  }
  const int64_t rank = static_cast<int64_t>(elem_shape.size()) + 1;
  ONYX_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, axis_attr, rank, "scan output axis"));
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].dtype() != dtype || parts[i].shape() != elem_shape)
      return node.Fail("scan output ", out, " has ", DTypeName(parts[i].dtype()),
                       ShapeToString(parts[i].shape()), " in iteration ", i, " but ",
                       DTypeName(dtype), ShapeToString(elem_shape),
                       " in iteration 0; scan outputs must keep their type and shape");
  }
  const int64_t n = static_cast<int64_t>(parts.size());
  Tensor dst = ctx.Output(out, dtype, InsertDim(elem_shape, axis, n));
  for (int64_t i = 0; i < n; ++i) PutAlongAxis(parts[i], &dst, axis, reverse ? n - 1 - i : i);
  return Status::Ok();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// If

Status IfRef(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  if (!ctx.has_input(0)) return node.Invalid("input 0 'cond' is missing");
  ONYX_ASSIGN_OR_RETURN(bool cond, ReadCondition(node, ctx.input_value(0), "input 0 'cond'"));
  const char* branch = cond ? "then_branch" : "else_branch";
  if (!Body(node, branch)) return node.Invalid("graph attribute '", branch, "' is missing");
  ONYX_ASSIGN_OR_RETURN(std::vector<Value> outs, ctx.RunSubgraph(branch, {}));
  if (static_cast<int>(outs.size()) < ctx.num_outputs())
    return node.Invalid(branch, " produces ", outs.size(), " outputs; the node has ",
                        ctx.num_outputs());
  for (int i = 0; i < ctx.num_outputs(); ++i)
    if (ctx.has_output(i)) ctx.SetOutput(i, std::move(outs[i]));
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Loop

Status LoopRef(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const ir::Graph* body = Body(node, "body");
  if (!body) return node.Invalid("graph attribute 'body' is missing");
  const int num_carried = std::max(0, ctx.num_inputs() - 2);
  const int num_body_outputs = static_cast<int>(body->outputs.size());
  if (num_body_outputs < 1 + num_carried)
    return node.Invalid("body has ", num_body_outputs, " outputs; expected at least ",
                        1 + num_carried, " (cond_out and ", num_carried, " loop-carried values)");
  const int num_scan = num_body_outputs - 1 - num_carried;

  // Trip count M (optional): a scalar int64; absent means unbounded.
  int64_t max_trips = std::numeric_limits<int64_t>::max();
  if (ctx.has_input(0)) {
    const Value& m = ctx.input_value(0);
    if (!m.is_tensor() || m.tensor().numel() != 1 ||
        (m.tensor().dtype() != DType::kInt64 && m.tensor().dtype() != DType::kInt32))
      return node.Fail("input 0 'M' must be a single int64 element");
    max_trips = TensorToInts(m.tensor())[0];
  }
  bool cond = true;
  if (ctx.has_input(1)) {
    ONYX_ASSIGN_OR_RETURN(cond, ReadCondition(node, ctx.input_value(1), "input 1 'cond'"));
  }

  std::vector<Value> carried;
  for (int i = 0; i < num_carried; ++i) {
    if (!ctx.has_input(2 + i)) return node.Invalid("loop-carried input ", 2 + i, " is missing");
    carried.push_back(ctx.input_value(2 + i));
  }
  std::vector<std::vector<Tensor>> scans(num_scan);

  int64_t it = 0;
  // The body's cond_out decides whether the next iteration runs, as in the ONNX reference
  // evaluator and ONNX Runtime (also when the node's cond input is omitted).
  for (; it < max_trips && cond; ++it) {
    // A body without nodes runs no executor step, so the loop itself must look (contract 8).
    ONYX_RETURN_IF_ERROR(ctx.CheckCancelled());
    std::vector<Value> in;
    in.reserve(2 + carried.size());
    in.emplace_back(Tensor::Scalar<int64_t>(DType::kInt64, it));
    in.emplace_back(Tensor::Scalar<bool>(DType::kBool, cond));
    for (Value& v : carried) in.push_back(std::move(v));
    ONYX_ASSIGN_OR_RETURN(std::vector<Value> out, ctx.RunSubgraph("body", in));
    if (static_cast<int>(out.size()) != num_body_outputs)
      return node.Fail("body returned ", out.size(), " values; expected ", num_body_outputs);
    ONYX_ASSIGN_OR_RETURN(cond, ReadCondition(node, out[0], "body output 0 'cond_out'"));
    for (int i = 0; i < num_carried; ++i) carried[i] = std::move(out[1 + i]);
    for (int k = 0; k < num_scan; ++k) {
      Value& v = out[1 + num_carried + k];
      if (!v.is_tensor())
        return node.Fail("body output ", 1 + num_carried + k, " is a scan output and must be a ",
                         "tensor");
      scans[k].push_back(std::move(v.tensor()));
    }
  }

  for (int i = 0; i < num_carried && i < ctx.num_outputs(); ++i) {
    if (!ctx.has_output(i)) continue;
    // Without iterations the outputs are the initial values, which live in the caller's memory.
    ctx.SetOutput(i, it == 0 ? OwnedCopy(carried[i]) : std::move(carried[i]));
  }
  for (int k = 0; k < num_scan && num_carried + k < ctx.num_outputs(); ++k) {
    ONYX_RETURN_IF_ERROR(
        StackScanOutput(ctx, num_carried + k, scans[k], 0, false, *body, 1 + num_carried + k));
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Scan opset 9+

Status Scan9Ref(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const ir::Graph* body = Body(node, "body");
  if (!body) return node.Invalid("graph attribute 'body' is missing");
  ONYX_ASSIGN_OR_RETURN(int64_t num_scan_inputs, node.RequiredInt("num_scan_inputs"));
  const int num_inputs = ctx.num_inputs();
  if (num_scan_inputs < 1 || num_scan_inputs > num_inputs)
    return node.Invalid("num_scan_inputs ", num_scan_inputs, " must be in [1, ", num_inputs, "]");
  const int m = static_cast<int>(num_scan_inputs);
  const int n = num_inputs - m;  // loop state variables
  const int num_body_outputs = static_cast<int>(body->outputs.size());
  if (num_body_outputs < n)
    return node.Invalid("body has ", num_body_outputs, " outputs; expected at least ", n,
                        " (one per state variable)");
  const int k_out = num_body_outputs - n;  // scan outputs

  const std::vector<int64_t> in_axes_attr = node.attr_ints("scan_input_axes");
  const std::vector<int64_t> in_dirs = node.attr_ints("scan_input_directions");
  const std::vector<int64_t> out_axes_attr = node.attr_ints("scan_output_axes");
  const std::vector<int64_t> out_dirs = node.attr_ints("scan_output_directions");
  if (!in_axes_attr.empty() && static_cast<int>(in_axes_attr.size()) != m)
    return node.Invalid("scan_input_axes has ", in_axes_attr.size(), " entries; expected ", m);
  if (!in_dirs.empty() && static_cast<int>(in_dirs.size()) != m)
    return node.Invalid("scan_input_directions has ", in_dirs.size(), " entries; expected ", m);
  if (!out_axes_attr.empty() && static_cast<int>(out_axes_attr.size()) != k_out)
    return node.Invalid("scan_output_axes has ", out_axes_attr.size(), " entries; expected ",
                        k_out);
  if (!out_dirs.empty() && static_cast<int>(out_dirs.size()) != k_out)
    return node.Invalid("scan_output_directions has ", out_dirs.size(), " entries; expected ",
                        k_out);

  std::vector<Value> states;
  for (int i = 0; i < n; ++i) {
    if (!ctx.has_input(i)) return node.Invalid("state input ", i, " is missing");
    states.push_back(ctx.input_value(i));
  }
  std::vector<int64_t> in_axes(m);
  int64_t length = -1;
  for (int j = 0; j < m; ++j) {
    const int idx = n + j;
    if (!ctx.has_input(idx) || !ctx.input_value(idx).is_tensor())
      return node.Invalid("scan input ", idx, " must be a tensor");
    const Tensor& x = ctx.input(idx);
    ONYX_ASSIGN_OR_RETURN(in_axes[j],
                          NormalizeAxis(node, in_axes_attr.empty() ? 0 : in_axes_attr[j], x.rank(),
                                        "scan_input_axes entry"));
    const int64_t len = x.dim(in_axes[j]);
    if (length >= 0 && len != length)
      return node.Fail("scan input ", idx, " has ", len,
                       " elements along its scan axis; scan input ", n, " has ", length,
                       " (all must match)");
    length = len;
  }

  std::vector<std::vector<Tensor>> scans(k_out);
  for (int64_t t = 0; t < length; ++t) {
    ONYX_RETURN_IF_ERROR(ctx.CheckCancelled());
    std::vector<Value> in;
    in.reserve(n + m);
    for (Value& v : states) in.push_back(std::move(v));
    for (int j = 0; j < m; ++j) {
      const bool reverse = !in_dirs.empty() && in_dirs[j] == 1;
      in.emplace_back(TakeAlongAxis(ctx.input(n + j), in_axes[j], reverse ? length - 1 - t : t));
    }
    ONYX_ASSIGN_OR_RETURN(std::vector<Value> out, ctx.RunSubgraph("body", in));
    if (static_cast<int>(out.size()) != num_body_outputs)
      return node.Fail("body returned ", out.size(), " values; expected ", num_body_outputs);
    for (int i = 0; i < n; ++i) states[i] = std::move(out[i]);
    for (int k = 0; k < k_out; ++k) {
      if (!out[n + k].is_tensor())
        return node.Fail("body output ", n + k, " is a scan output and must be a tensor");
      scans[k].push_back(std::move(out[n + k].tensor()));
    }
  }

  for (int i = 0; i < n && i < ctx.num_outputs(); ++i)
    if (ctx.has_output(i)) ctx.SetOutput(i, length == 0 ? OwnedCopy(states[i]) : states[i]);
  for (int k = 0; k < k_out && n + k < ctx.num_outputs(); ++k) {
    const int64_t axis = out_axes_attr.empty() ? 0 : out_axes_attr[k];
    const bool reverse = !out_dirs.empty() && out_dirs[k] == 1;
    ONYX_RETURN_IF_ERROR(StackScanOutput(ctx, n + k, scans[k], axis, reverse, *body, n + k));
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Scan opset 8

Status Scan8Ref(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const ir::Graph* body = Body(node, "body");
  if (!body) return node.Invalid("graph attribute 'body' is missing");
  ONYX_ASSIGN_OR_RETURN(int64_t num_scan_inputs, node.RequiredInt("num_scan_inputs"));
  const int num_inputs = ctx.num_inputs() - 1;  // after sequence_lens
  if (num_scan_inputs < 1 || num_scan_inputs > num_inputs)
    return node.Invalid("num_scan_inputs ", num_scan_inputs, " must be in [1, ", num_inputs, "]");
  const int m = static_cast<int>(num_scan_inputs);
  const int n = num_inputs - m;
  const int num_body_outputs = static_cast<int>(body->outputs.size());
  if (num_body_outputs < n)
    return node.Invalid("body has ", num_body_outputs, " outputs; expected at least ", n);
  const int k_out = num_body_outputs - n;
  const std::vector<int64_t> dirs = node.attr_ints("directions");
  if (!dirs.empty() && static_cast<int>(dirs.size()) != m)
    return node.Invalid("directions has ", dirs.size(), " entries; expected ", m);

  // Batch axis 0 and sequence axis 1 on every scan input; batch axis 0 on every state.
  int64_t batch = -1, max_seq = -1;
  for (int j = 0; j < m; ++j) {
    const int idx = 1 + n + j;
    if (!ctx.has_input(idx) || !ctx.input_value(idx).is_tensor())
      return node.Invalid("scan input ", idx, " must be a tensor");
    const Tensor& x = ctx.input(idx);
    if (x.rank() < 2)
      return node.Fail("scan input ", idx, " has shape ", ShapeToString(x.shape()),
                       "; expected [batch, sequence, ...]");
    if (batch >= 0 && (x.dim(0) != batch || x.dim(1) != max_seq))
      return node.Fail("scan input ", idx, " has shape ", ShapeToString(x.shape()),
                       "; expected batch ", batch, " and sequence length ", max_seq);
    batch = x.dim(0);
    max_seq = x.dim(1);
  }
  for (int i = 0; i < n; ++i) {
    const int idx = 1 + i;
    if (!ctx.has_input(idx) || !ctx.input_value(idx).is_tensor())
      return node.Invalid("state input ", idx, " must be a tensor");
    const Tensor& s = ctx.input(idx);
    if (s.rank() < 1 || s.dim(0) != batch)
      return node.Fail("state input ", idx, " has shape ", ShapeToString(s.shape()),
                       "; expected a leading batch dimension of ", batch);
  }
  std::vector<int64_t> lens(static_cast<size_t>(batch), max_seq);
  if (ctx.has_input(0)) {
    const Tensor& sl = ctx.input(0);
    if (sl.dtype() != DType::kInt64 && sl.dtype() != DType::kInt32)
      return node.Fail("input 0 'sequence_lens' must be int64, got ", DTypeName(sl.dtype()));
    if (sl.numel() != batch)
      return node.Fail("input 0 'sequence_lens' has ", sl.numel(), " elements; expected batch ",
                       batch);
    lens = TensorToInts(sl);
    for (int64_t b = 0; b < batch; ++b)
      if (lens[b] < 0 || lens[b] > max_seq)
        return node.Fail("input 0 'sequence_lens' entry ", b, " = ", lens[b], " is outside [0, ",
                         max_seq, "]");
  }

  // final_states[i][b], scans[k][b][t]
  std::vector<std::vector<Value>> final_states(n, std::vector<Value>(batch));
  std::vector<std::vector<std::vector<Tensor>>> scans(
      k_out, std::vector<std::vector<Tensor>>(static_cast<size_t>(batch)));
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Value> states;
    for (int i = 0; i < n; ++i) states.emplace_back(TakeAlongAxis(ctx.input(1 + i), 0, b));
    std::vector<Tensor> sequences;
    for (int j = 0; j < m; ++j) sequences.push_back(TakeAlongAxis(ctx.input(1 + n + j), 0, b));
    const int64_t len = lens[b];
    for (int64_t t = 0; t < len; ++t) {
      ONYX_RETURN_IF_ERROR(ctx.CheckCancelled());
      std::vector<Value> in;
      for (Value& v : states) in.push_back(std::move(v));
      for (int j = 0; j < m; ++j) {
        const bool reverse = !dirs.empty() && dirs[j] == 1;
        in.emplace_back(TakeAlongAxis(sequences[j], 0, reverse ? len - 1 - t : t));
      }
      ONYX_ASSIGN_OR_RETURN(std::vector<Value> out, ctx.RunSubgraph("body", in));
      if (static_cast<int>(out.size()) != num_body_outputs)
        return node.Fail("body returned ", out.size(), " values; expected ", num_body_outputs);
      states.assign(out.begin(), out.begin() + n);
      for (int k = 0; k < k_out; ++k) {
        if (!out[n + k].is_tensor())
          return node.Fail("body output ", n + k, " is a scan output and must be a tensor");
        scans[k][b].push_back(std::move(out[n + k].tensor()));
      }
    }
    for (int i = 0; i < n; ++i) final_states[i][b] = std::move(states[i]);
  }

  // States: [batch, ...state shape]; every batch's final state must have one shape.
  for (int i = 0; i < n && i < ctx.num_outputs(); ++i) {
    if (!ctx.has_output(i)) continue;
    const Tensor& init = ctx.input(1 + i);
    Shape st_shape(init.shape().begin() + 1, init.shape().end());
    DType dtype = init.dtype();
    if (batch > 0) {
      if (!final_states[i][0].is_tensor())
        return node.Fail("body output ", i, " is a state and must be a tensor");
      st_shape = final_states[i][0].tensor().shape();
      dtype = final_states[i][0].tensor().dtype();
    }
    for (int64_t b = 0; b < batch; ++b) {
      const Value& v = final_states[i][b];
      if (!v.is_tensor() || v.tensor().shape() != st_shape || v.tensor().dtype() != dtype)
        return node.Fail("state ", i, " ends with different types or shapes across the batch");
    }
    Tensor dst = ctx.Output(i, dtype, InsertDim(st_shape, 0, batch));
    for (int64_t b = 0; b < batch; ++b) PutAlongAxis(final_states[i][b].tensor(), &dst, 0, b);
  }

  // Scan outputs: [batch, max_seq, ...]; positions past a batch's length are zero.
  for (int k = 0; k < k_out && n + k < ctx.num_outputs(); ++k) {
    const int out = n + k;
    if (!ctx.has_output(out)) continue;
    const Tensor* first = nullptr;
    for (int64_t b = 0; b < batch && !first; ++b)
      if (!scans[k][b].empty()) first = &scans[k][b][0];
    const Shape elem_shape = first ? first->shape() : DeclaredShapeOrZeros(body->outputs[out].type);
    const DType dtype = first ? first->dtype() : DeclaredElem(*body, out);
    Shape shape = {batch, max_seq};
    shape.insert(shape.end(), elem_shape.begin(), elem_shape.end());
    Tensor dst = ctx.Output(out, dtype, shape);
    FillZero(&dst);
    const int64_t elem_count = ShapeElementCount(elem_shape);
    for (int64_t b = 0; b < batch; ++b) {
      for (size_t t = 0; t < scans[k][b].size(); ++t) {
        const Tensor& part = scans[k][b][t];
        if (part.shape() != elem_shape || part.dtype() != dtype)
          return node.Fail("scan output ", out, " changes type or shape between iterations (",
                           DTypeName(part.dtype()), ShapeToString(part.shape()), " vs ",
                           DTypeName(dtype), ShapeToString(elem_shape), ")");
        CopyElements(dtype, part.raw_data(), 0, dst.raw_data(),
                     (b * max_seq + static_cast<int64_t>(t)) * elem_count, elem_count);
      }
    }
  }
  return Status::Ok();
}

}  // namespace onyx::kernels::reference
