// TraceShapeValue: the elements of shape arithmetic, followed back to known numbers and dims.
#include "planner/fusion/shape_values.h"

#include <algorithm>

#include "kernels/node_view.h"
#include "kernels/op_helpers.h"

namespace onyx::planner::fusion {
namespace {

constexpr int kMaxDepth = 64;  // longer chains are left as they are

// An int64 / int32 constant of rank <= 1 short enough to be a shape.
bool IntList(const Tensor& t) {
  return (t.dtype() == DType::kInt64 || t.dtype() == DType::kInt32) && t.rank() <= 1 &&
         t.numel() <= static_cast<int64_t>(kMaxShapeValueAtoms);
}

// The numbers of a constant int list (and whether it is 0-d).
std::optional<ShapeValue> ConstantValue(const Tensor& t) {
  if (!IntList(t)) return std::nullopt;
  ShapeValue v;
  v.scalar = t.rank() == 0;
  for (int64_t x : kernels::TensorToInts(t)) v.atoms.push_back({-1, x});
  return v;
}

// The numbers of constant input `i` of `n`, or of attribute `attr` when the node's opset takes
// them from there.
std::optional<std::vector<int64_t>> Ints(const FusionGraph& g, const FusionNode& n, size_t i,
                                         const std::string& attr, bool from_attr) {
  if (from_attr) {
    if (!kernels::NodeView(*n.node).has_attr(attr)) return std::nullopt;
    return kernels::NodeView(*n.node).attr_ints(attr);
  }
  const Tensor* t = i < n.inputs.size() && n.inputs[i] >= 0 ? g.Constant(n.inputs[i]) : nullptr;
  if (!t || !IntList(*t)) return std::nullopt;
  return kernels::TensorToInts(*t);
}

// An axis of a 1-d value: 0 or -1.
bool FirstAxis(int64_t axis) {
  return axis == 0 || axis == -1;
}

std::optional<ShapeValue> Trace(const FusionGraph& g, int slot, int depth);

std::optional<ShapeValue> TraceNode(const FusionGraph& g, const FusionNode& n, int depth) {
  const ir::Node& node = *n.node;
  const kernels::NodeView v(node);
  auto input = [&](size_t i) -> std::optional<ShapeValue> {
    if (i >= n.inputs.size() || n.inputs[i] < 0) return std::nullopt;
    return Trace(g, n.inputs[i], depth + 1);
  };
  if (node.domain == "com.onyx" && node.op_type == "DimsOf") {
    const std::vector<int64_t> sources = v.attr_ints("sources");
    const std::vector<int64_t> values = v.attr_ints("values");
    if (sources.size() != values.size() || sources.empty()) return std::nullopt;
    ShapeValue out;
    out.scalar = v.attr_int("scalar", 0) != 0;
    for (size_t k = 0; k < sources.size(); ++k) {
      if (sources[k] < 0) {
        out.atoms.push_back({-1, values[k]});
        continue;
      }
      if (sources[k] >= static_cast<int64_t>(n.inputs.size()) || n.inputs[sources[k]] < 0)
        return std::nullopt;
      out.atoms.push_back({n.inputs[sources[k]], values[k]});
    }
    return out;
  }
  if (!node.domain.empty()) return std::nullopt;
  const std::string& op = node.op_type;
  if (op == "Shape") {
    if (n.inputs.empty() || n.inputs[0] < 0) return std::nullopt;
    const TypeInfo& t = g.Type(n.inputs[0]);
    if (!t.is_tensor() || !t.has_shape) return std::nullopt;
    const int64_t rank = t.rank();
    int64_t start = v.attr_int("start", 0), end = v.attr_int("end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, 0, rank);
    if (end - start > static_cast<int64_t>(kMaxShapeValueAtoms)) return std::nullopt;
    ShapeValue out;
    for (int64_t i = start; i < end; ++i)
      out.atoms.push_back(t.dims[i].known() ? DimAtom{-1, t.dims[i].value}
                                            : DimAtom{n.inputs[0], i});
    return out;
  }
  if (op == "Identity") return input(0);
  if (op == "Cast") {
    if (v.attr_int("to", 0) != static_cast<int64_t>(DType::kInt64)) return std::nullopt;
    return input(0);
  }
  if (op == "Gather") {
    auto data = input(0);
    if (!data || data->scalar || !FirstAxis(v.attr_int("axis", 0)) || n.inputs.size() < 2)
      return std::nullopt;
    const Tensor* idx = n.inputs[1] >= 0 ? g.Constant(n.inputs[1]) : nullptr;
    auto indices = idx ? ConstantValue(*idx) : std::nullopt;
    if (!indices) return std::nullopt;
    const int64_t len = static_cast<int64_t>(data->atoms.size());
    ShapeValue out;
    out.scalar = indices->scalar;
    for (const DimAtom& a : indices->atoms) {
      const int64_t i = a.value < 0 ? a.value + len : a.value;
      if (i < 0 || i >= len) return std::nullopt;  // out of range: left to the kernel's error
      out.atoms.push_back(data->atoms[i]);
    }
    return out;
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    auto x = input(0);
    const bool from_attr = node.opset < 13;
    auto axes = Ints(g, n, 1, "axes", from_attr);
    if (!x) return std::nullopt;
    if (op == "Unsqueeze") {
      if (!x->scalar || !axes || axes->size() != 1 || !FirstAxis((*axes)[0])) return std::nullopt;
      x->scalar = false;
      return x;
    }
    const bool no_axes = from_attr ? !v.has_attr("axes") : n.inputs.size() < 2 || n.inputs[1] < 0;
    if (x->scalar || x->atoms.size() != 1) return std::nullopt;
    if (!no_axes && (!axes || axes->size() != 1 || !FirstAxis((*axes)[0]))) return std::nullopt;
    x->scalar = true;
    return x;
  }
  if (op == "Concat") {
    if (!FirstAxis(v.attr_int("axis", 0))) return std::nullopt;
    ShapeValue out;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      auto x = input(i);
      if (!x || x->scalar) return std::nullopt;
      out.atoms.insert(out.atoms.end(), x->atoms.begin(), x->atoms.end());
      if (out.atoms.size() > kMaxShapeValueAtoms) return std::nullopt;
    }
    return out;
  }
  if (op == "Slice") {
    auto x = input(0);
    if (!x || x->scalar) return std::nullopt;
    const bool from_attr = node.opset < 10;
    auto starts = Ints(g, n, 1, "starts", from_attr);
    auto ends = Ints(g, n, 2, "ends", from_attr);
    if (!starts || !ends || starts->size() != 1 || ends->size() != 1) return std::nullopt;
    const bool has_axes = from_attr ? v.has_attr("axes") : n.inputs.size() > 3 && n.inputs[3] >= 0;
    if (has_axes) {
      auto axes = Ints(g, n, 3, "axes", from_attr);
      if (!axes || axes->size() != 1 || !FirstAxis((*axes)[0])) return std::nullopt;
    }
    if (!from_attr && n.inputs.size() > 4 && n.inputs[4] >= 0) {
      auto steps = Ints(g, n, 4, "steps", false);
      if (!steps || steps->size() != 1 || (*steps)[0] != 1) return std::nullopt;
    }
    const int64_t len = static_cast<int64_t>(x->atoms.size());
    int64_t start = (*starts)[0], end = (*ends)[0];
    if (start < 0) start = std::max<int64_t>(start, -len) + len;
    if (end < 0) end = std::max<int64_t>(end, -len) + len;
    start = std::clamp<int64_t>(start, 0, len);
    end = std::clamp<int64_t>(end, 0, len);
    ShapeValue out;
    for (int64_t i = start; i < end; ++i) out.atoms.push_back(x->atoms[i]);
    return out;
  }
  return std::nullopt;
}

std::optional<ShapeValue> Trace(const FusionGraph& g, int slot, int depth) {
  if (slot < 0 || depth > kMaxDepth) return std::nullopt;
  if (const Tensor* c = g.Constant(slot)) return ConstantValue(*c);
  const TypeInfo& t = g.Type(slot);
  if (!t.is_tensor() || t.elem != DType::kInt64) return std::nullopt;
  const int p = g.Producer(slot);
  if (p < 0) return std::nullopt;
  const FusionNode& n = g.node(p);
  if (n.outputs.empty() || n.outputs[0] != slot) return std::nullopt;
  auto out = TraceNode(g, n, depth);
  if (!out || out->atoms.size() > kMaxShapeValueAtoms || (out->scalar && out->atoms.size() != 1))
    return std::nullopt;
  return out;
}

}  // namespace

std::optional<ShapeValue> TraceShapeValue(const FusionGraph& g, int slot) {
  return Trace(g, slot, 0);
}

bool IsShapeValueOp(const FusionNode& n) {
  const ir::Node& node = *n.node;
  if (node.domain == "com.onyx") return node.op_type == "DimsOf";
  if (!node.domain.empty()) return false;
  static const char* const kOps[] = {"Shape",     "Identity", "Cast",   "Gather",
                                     "Unsqueeze", "Squeeze",  "Concat", "Slice"};
  for (const char* op : kOps)
    if (node.op_type == op) return true;
  return false;
}

}  // namespace onyx::planner::fusion
