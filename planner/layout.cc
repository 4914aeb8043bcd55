// Layout propagation: 2-D convolutions whose fast kernel works on channels-last activations
// become com.onyx NhwcConv (QLinearConv: NhwcQLinearConv), and the ops between them that do not
// care about the layout (elementwise, pooling, channel Concat) follow, so activations stay [N, H,
// W, C] across the network (per-channel ChannelAffine and LRN too). Transposes are placed only
// where a consumer needs the ONNX (NCHW) layout.
#include "planner/layout.h"

#include <algorithm>
#include <set>

#include "kernels/node_view.h"
#include "kernels/op_helpers.h"

namespace onyx::planner {
namespace {

using kernels::OpRegistry;

const Shape kToChannelsLast = {0, 2, 3, 1};
const Shape kToChannelsFirst = {0, 3, 1, 2};

// The op's layout trait (kernels/op_registry.h, declared where each ai.onnx op is registered):
// elementwise ops run unchanged on permuted storage, Concat with its axis remapped.
kernels::LayoutTrait LayoutOf(const PlanStep& st) {
  return st.op && st.node && st.node->domain.empty() ? st.op->layout : kernels::LayoutTrait::kNone;
}

Shape Permute(const Shape& s, const Shape& perm) {
  Shape o(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) o[i] = s[perm[i]];
  return o;
}

bool IsStatic4dFloat(const TypeInfo& t) {
  return t.is_tensor() && t.elem == DType::kFloat && t.shape_is_static() && t.rank() == 4;
}
bool IsStatic4d8Bit(const TypeInfo& t) {
  return t.is_tensor() && kernels::Is8BitInt(t.elem) && t.shape_is_static() && t.rank() == 4;
}

// QuantizeLinear / DequantizeLinear with one scale and zero point: elementwise between the
// quantized and float forms of a value, whatever the layout (a per-axis one is not).
bool IsPerTensorQdq(const ir::Node& n) {
  return n.domain.empty() && (n.op_type == "QuantizeLinear" || n.op_type == "DequantizeLinear");
}

// com.onyx QLinearLookup: a byte table applied element by element (input 1 is the table).
bool IsLookup(const ir::Node& n) {
  return n.domain == "com.onyx" && n.op_type == "QLinearLookup";
}

class LayoutPass {
 public:
  LayoutPass(ExecutionPlan& plan, kernels::IsaLevel max_isa) : plan_(plan), max_isa_(max_isa) {
    const size_t n = plan.slots.size();
    cl_version_.assign(n, -1);
    has_plain_.assign(n, true);
  }

  int Run() {
    CountReaders();
    std::vector<PlanStep> out;
    for (size_t i = 0; i < plan_.steps.size(); ++i) {
      if (TryChannelShuffle(i, out)) {
        i += 2;
        continue;
      }
      PlanStep& st = plan_.steps[i];
      std::vector<PlanStep> before;
      Rewrite(st, before);
      for (PlanStep& b : before) out.push_back(std::move(b));
      out.push_back(std::move(st));
    }
    // Graph outputs and values read by subgraphs keep the ONNX layout.
    for (int o : plan_.output_slots) {
      std::vector<PlanStep> tail;
      RequirePlain(o, tail);
      for (PlanStep& t : tail) out.push_back(std::move(t));
    }
    plan_.steps = std::move(out);
    return transposes_;
  }

 private:
  // The op definition a rewritten node runs with.
  static const kernels::OpDef* Def(const std::string& domain, const std::string& op,
                                   int64_t opset) {
    return OpRegistry::Global().Find(domain, op, opset);
  }

  // True when an impl ahead of the reference kernel (the last) accepts the node with these
  // input types. Several may be registered, each for its own cases (depthwise, oneDNN).
  bool FastImplAccepts(const kernels::OpDef* def, const ir::Node& node,
                       const std::vector<TypeInfo>& types) const {
    if (!def) return false;
    for (size_t i = 0; i + 1 < def->impls.size(); ++i) {
      if (!kernels::IsaAtMost(def->impls[i].isa.RunsAt(), max_isa_)) continue;
      const auto& supports = def->impls[i].supports;
      if (supports && supports(kernels::NodeView(node), types).ok()) return true;
    }
    return false;
  }

  const TypeInfo& TypeOf(int slot) const { return plan_.slots[slot].type; }
  bool IsConstant(int slot) const { return plan_.slots[slot].storage == Storage::kConstant; }
  bool IsChannelsLast(int slot) const {
    return slot >= 0 && slot < static_cast<int>(cl_version_.size()) && cl_version_[slot] >= 0;
  }

  int NewSlot(const std::string& name, TypeInfo type) {
    const int id = static_cast<int>(plan_.slots.size());
    ValueSlot s;
    s.name = name;
    s.type = std::move(type);
    s.storage = Storage::kHeap;
    plan_.slots.push_back(s);
    plan_.slot_of[name] = id;
    cl_version_.push_back(-1);
    has_plain_.push_back(true);
    return id;
  }

  // A synthesized Transpose step from slot `from` into slot `to`, named after the value in the
  // ONNX layout (`plain`) so that `onyx plan` shows which model value crosses layouts.
  PlanStep TransposeStep(int from, int to, int plain, const Shape& perm, const std::string& tag) {
    ir::Node& n = plan_.synthesized_nodes.emplace_back();
    n.name = "layout/" + tag + "/" + plan_.slots[plain].name;
    n.op_type = "Transpose";
    n.opset = 21;
    n.inputs = {plan_.slots[from].name};
    n.outputs = {plan_.slots[to].name};
    n.attributes.push_back(ir::IntsAttr("perm", perm));
    n.index = -1;
    PlanStep st;
    st.node = &n;
    st.op = Def("", "Transpose", 21);
    st.inputs = {from};
    st.outputs = {to};
    ++transposes_;
    return st;
  }

  // The channels-last copy of plain slot `s` (made before the current step when missing).
  int RequireChannelsLast(int s, std::vector<PlanStep>& before) {
    if (cl_version_[s] >= 0) return cl_version_[s];
    const TypeInfo& t = TypeOf(s);
    const int id =
        NewSlot(plan_.slots[s].name + "/nhwc",
                TypeInfo::TensorWithShape(t.elem, Permute(t.static_shape(), kToChannelsLast)));
    if (IsConstant(s)) {  // permute constants now instead of at run time
      plan_.slots[id].storage = Storage::kConstant;
      plan_.constants[id] = Value(PermuteConstant(plan_.constants[s].tensor(), kToChannelsLast));
    } else {
      before.push_back(TransposeStep(s, id, s, kToChannelsLast, "to_nhwc"));
    }
    cl_version_[s] = id;
    return id;
  }

  // Makes sure the ONNX-layout slot `s` is produced (from its channels-last copy if need be).
  void RequirePlain(int s, std::vector<PlanStep>& before) {
    if (s < 0 || has_plain_[s]) return;
    before.push_back(TransposeStep(cl_version_[s], s, s, kToChannelsFirst, "to_nchw"));
    has_plain_[s] = true;
  }

  static Tensor PermuteConstant(const Tensor& t, const Shape& perm) {
    const Shape& s = t.shape();
    Tensor o = Tensor::Allocate(t.dtype(), Permute(s, perm));
    const size_t es = DTypeSize(t.dtype());
    const auto* src = static_cast<const uint8_t*>(t.raw_data());
    auto* dst = static_cast<uint8_t*>(o.raw_data());
    Shape os = o.shape(), idx(4, 0);
    int64_t k = 0;
    for (idx[0] = 0; idx[0] < os[0]; ++idx[0])
      for (idx[1] = 0; idx[1] < os[1]; ++idx[1])
        for (idx[2] = 0; idx[2] < os[2]; ++idx[2])
          for (idx[3] = 0; idx[3] < os[3]; ++idx[3], ++k) {
            int64_t src_idx = 0;
            Shape in_idx(4);
            for (int d = 0; d < 4; ++d) in_idx[perm[d]] = idx[d];
            for (int d = 0; d < 4; ++d) src_idx = src_idx * s[d] + in_idx[d];
            std::copy(src + src_idx * es, src + (src_idx + 1) * es, dst + k * es);
          }
    return o;
  }

  // Output k of `st` now lives channels-last in a new slot; the plain one is made on demand.
  void MoveOutputToChannelsLast(PlanStep& st, size_t k) {
    const int o = st.outputs[k];
    const TypeInfo& t = TypeOf(o);
    const int id =
        NewSlot(plan_.slots[o].name + "/nhwc",
                TypeInfo::TensorWithShape(t.elem, Permute(t.static_shape(), kToChannelsLast)));
    st.outputs[k] = id;
    cl_version_[o] = id;
    has_plain_[o] = false;
  }

  ir::Node& CloneNode(const ir::Node& from, const std::string& domain, const std::string& op) {
    ir::Node& n = plan_.synthesized_nodes.emplace_back(from);
    n.domain = domain;
    n.op_type = op;
    n.opset = domain.empty() ? from.opset : 1;
    return n;
  }

  std::vector<TypeInfo> InputTypes(const PlanStep& st) const {
    std::vector<TypeInfo> types;
    for (int id : st.inputs) types.push_back(id >= 0 ? TypeOf(id) : TypeInfo());
    return types;
  }

  bool TryConv(PlanStep& st, std::vector<PlanStep>& before) {
    const ir::Node& n = *st.node;
    const bool plain_conv = n.domain.empty() && n.op_type == "Conv";
    const bool fused_conv = n.domain == "com.onyx" && n.op_type == "FusedConv";
    if (!plain_conv && !fused_conv) return false;
    if (st.inputs.size() < 2 || st.inputs[0] < 0 || st.outputs.size() != 1 || st.outputs[0] < 0 ||
        !IsStatic4dFloat(TypeOf(st.inputs[0])) || !IsStatic4dFloat(TypeOf(st.outputs[0])))
      return false;
    ir::Node candidate = n;
    candidate.domain = "com.onyx";
    candidate.op_type = "NhwcConv";
    candidate.opset = 1;
    std::vector<TypeInfo> types = InputTypes(st);
    types[0] = TypeInfo::TensorWithShape(
        DType::kFloat, Permute(TypeOf(st.inputs[0]).static_shape(), kToChannelsLast));
    const bool has_z = st.inputs.size() > 3 && st.inputs[3] >= 0;
    if (has_z) {
      if (!IsStatic4dFloat(TypeOf(st.inputs[3]))) return false;
      types[3] = TypeInfo::TensorWithShape(
          DType::kFloat, Permute(TypeOf(st.inputs[3]).static_shape(), kToChannelsLast));
    }
    const kernels::OpDef* def = Def("com.onyx", "NhwcConv", 1);
    if (!FastImplAccepts(def, candidate, types)) return false;
    st.node = &CloneNode(n, "com.onyx", "NhwcConv");
    st.op = def;
    st.inputs[0] = RequireChannelsLast(st.inputs[0], before);
    if (has_z) st.inputs[3] = RequireChannelsLast(st.inputs[3], before);
    MoveOutputToChannelsLast(st, 0);
    return true;
  }

  // QLinearConv on 8-bit activations becomes com.onyx NhwcQLinearConv when its fast kernel
  // takes it (oneDNN's int8 convolution works channels-last).
  bool TryQLinearConv(PlanStep& st, std::vector<PlanStep>& before) {
    const ir::Node& n = *st.node;
    if (!n.domain.empty() || n.op_type != "QLinearConv" || st.inputs.size() < 8 ||
        st.inputs[0] < 0 || st.outputs.size() != 1 || st.outputs[0] < 0 ||
        !IsStatic4d8Bit(TypeOf(st.inputs[0])) || !IsStatic4d8Bit(TypeOf(st.outputs[0])))
      return false;
    ir::Node candidate = n;
    candidate.domain = "com.onyx";
    candidate.op_type = "NhwcQLinearConv";
    candidate.opset = 1;
    std::vector<TypeInfo> types = InputTypes(st);
    const TypeInfo& x = TypeOf(st.inputs[0]);
    types[0] = TypeInfo::TensorWithShape(x.elem, Permute(x.static_shape(), kToChannelsLast));
    const kernels::OpDef* def = Def("com.onyx", "NhwcQLinearConv", 1);
    if (!FastImplAccepts(def, candidate, types)) return false;
    st.node = &CloneNode(n, "com.onyx", "NhwcQLinearConv");
    st.op = def;
    st.inputs[0] = RequireChannelsLast(st.inputs[0], before);
    MoveOutputToChannelsLast(st, 0);
    return true;
  }

  bool TryPool(PlanStep& st) {
    const ir::Node& n = *st.node;
    if (!n.domain.empty() || st.inputs.empty() || !IsChannelsLast(st.inputs[0])) return false;
    std::string op;
    const bool global = n.op_type == "GlobalAveragePool" || n.op_type == "GlobalMaxPool";
    if (n.op_type == "MaxPool" || n.op_type == "GlobalMaxPool") op = "NhwcMaxPool";
    if (n.op_type == "AveragePool" || n.op_type == "GlobalAveragePool") op = "NhwcAveragePool";
    if (op.empty() || st.outputs.empty() || st.outputs[0] < 0) return false;
    for (size_t k = 1; k < st.outputs.size(); ++k)
      if (st.outputs[k] >= 0) return false;  // MaxPool's Indices
    if (n.op_type == "AveragePool" && n.opset < 19 && n.attr("dilations")) return false;
    const TypeInfo& x = TypeOf(st.inputs[0]);
    ir::Node candidate = n;
    candidate.domain = "com.onyx";
    candidate.op_type = op;
    candidate.opset = 1;
    if (global) {
      const Shape s = x.static_shape();
      candidate.attributes = {ir::IntsAttr("kernel_shape", {s[2], s[3]})};
    }
    std::vector<TypeInfo> types = {TypeOf(cl_version_[st.inputs[0]])};
    const kernels::OpDef* def = Def("com.onyx", op, 1);
    if (!FastImplAccepts(def, candidate, types)) return false;
    ir::Node& made = plan_.synthesized_nodes.emplace_back(std::move(candidate));
    st.node = &made;
    st.op = def;
    st.inputs[0] = cl_version_[st.inputs[0]];
    MoveOutputToChannelsLast(st, 0);
    return true;
  }

  bool TryElementwise(PlanStep& st, std::vector<PlanStep>& before) {
    const ir::Node& n = *st.node;
    const bool lookup = IsLookup(n);
    const bool qdq = IsPerTensorQdq(n) || lookup;
    const kernels::LayoutTrait layout = LayoutOf(st);
    const bool unary = qdq || layout == kernels::LayoutTrait::kUnaryElementwise;
    if (!unary && layout != kernels::LayoutTrait::kBroadcastElementwise) return false;
    if (st.outputs.size() != 1 || st.outputs[0] < 0) return false;
    const TypeInfo& y = TypeOf(st.outputs[0]);
    if (!(IsStatic4dFloat(y) || (qdq && IsStatic4d8Bit(y)))) return false;
    bool any_cl = false;
    for (int id : st.inputs) any_cl = any_cl || IsChannelsLast(id);
    if (!any_cl) return false;
    const Shape out = TypeOf(st.outputs[0]).static_shape();
    if (unary) {  // Clip's bounds and similar extra inputs are scalars
      for (size_t i = 1; i < st.inputs.size() && !lookup; ++i)
        if (st.inputs[i] >= 0 && TypeOf(st.inputs[i]).rank() > 0) return false;
      if (!IsChannelsLast(st.inputs[0])) return false;
      st.inputs[0] = cl_version_[st.inputs[0]];
      MoveOutputToChannelsLast(st, 0);
      return true;
    }
    // Every operand must be channels-last with the output's shape, a constant (permuted at plan
    // time) or a one-element tensor.
    for (int id : st.inputs) {
      if (id < 0) continue;
      const TypeInfo& t = TypeOf(id);
      if (IsChannelsLast(id)) {
        if (t.static_shape() != out) return false;
        continue;
      }
      if (!t.is_tensor() || !t.shape_is_static() || t.rank() > 4) return false;
      const Shape s = t.static_shape();
      int64_t numel = 1;
      for (int64_t d : s) numel *= d;
      if (numel == 1) continue;
      if (!IsConstant(id) && s != out) return false;
    }
    for (int& id : st.inputs) {
      if (id < 0) continue;
      if (IsChannelsLast(id)) {
        id = cl_version_[id];
        continue;
      }
      const TypeInfo& t = TypeOf(id);
      Shape s = t.static_shape();
      int64_t numel = 1;
      for (int64_t d : s) numel *= d;
      if (numel == 1 && s.size() < 4) continue;  // scalars broadcast the same in any layout
      if (s.size() < 4) {                        // right-aligned broadcasting: make it rank 4 first
        const int id4 = NewSlot(plan_.slots[id].name + "/rank4", TypeInfo());
        s.insert(s.begin(), 4 - s.size(), 1);
        Tensor c = plan_.constants[id].tensor().Clone();
        Tensor r = Tensor::Allocate(c.dtype(), s);
        std::copy(static_cast<const uint8_t*>(c.raw_data()),
                  static_cast<const uint8_t*>(c.raw_data()) + c.nbytes(),
                  static_cast<uint8_t*>(r.raw_data()));
        plan_.slots[id4].type = TypeInfo::TensorWithShape(r.dtype(), s);
        plan_.slots[id4].storage = Storage::kConstant;
        plan_.constants[id4] = Value(std::move(r));
        id = id4;
      }
      id = RequireChannelsLast(id, before);
    }
    MoveOutputToChannelsLast(st, 0);
    return true;
  }

  void CountReaders() {
    readers_.assign(plan_.slots.size(), 0);
    for (const PlanStep& st : plan_.steps)
      for (const auto* list : {&st.inputs, &st.implicit})
        for (int id : *list)
          if (id >= 0) ++readers_[id];
    for (int o : plan_.output_slots) readers_[o] += 2;  // never an internal-only value
  }

  bool IsOp(const PlanStep& st, const char* op) const {
    return st.node->domain.empty() && st.node->op_type == op && st.outputs.size() == 1 &&
           st.outputs[0] >= 0 && TypeOf(st.outputs[0]).shape_is_static();
  }

  int ShapeConstant(const std::string& name, const Shape& shape) {
    Tensor t = Tensor::Allocate(DType::kInt64, {static_cast<int64_t>(shape.size())});
    for (size_t i = 0; i < shape.size(); ++i) t.data<int64_t>()[i] = shape[i];
    const int id = NewSlot(name, TypeInfo::TensorWithShape(DType::kInt64, t.shape()));
    plan_.slots[id].storage = Storage::kConstant;
    plan_.constants[id] = Value(std::move(t));
    return id;
  }

  // ShuffleNet's channel shuffle on a channels-last [N, C, H, W] value x:
  //   Reshape -> [N, g, C/g, H, W], Transpose perm [0, 2, 1, 3, 4], Reshape -> [N, C, H, W]
  // is, on the stored [N, H, W, C], Reshape -> [N, H, W, g, C/g], Transpose [0, 1, 2, 4, 3],
  // Reshape -> [N, H, W, C]: the same three steps without leaving channels-last.
  bool TryChannelShuffle(size_t i, std::vector<PlanStep>& out) {
    if (i + 2 >= plan_.steps.size()) return false;
    PlanStep& r1 = plan_.steps[i];
    PlanStep& tr = plan_.steps[i + 1];
    PlanStep& r2 = plan_.steps[i + 2];
    if (!IsOp(r1, "Reshape") || !IsOp(tr, "Transpose") || !IsOp(r2, "Reshape")) return false;
    if (r1.inputs.empty() || !IsChannelsLast(r1.inputs[0])) return false;
    const int a = r1.outputs[0], b = tr.outputs[0];
    if (tr.inputs.empty() || tr.inputs[0] != a || r2.inputs.empty() || r2.inputs[0] != b ||
        readers_[a] != 1 || readers_[b] != 1)
      return false;
    const Shape x = TypeOf(r1.inputs[0]).static_shape();   // [N, C, H, W]
    const Shape s5 = TypeOf(a).static_shape();             // [N, g, C/g, H, W]
    const Shape y = TypeOf(r2.outputs[0]).static_shape();  // [N, C, H, W]
    if (x.size() != 4 || s5.size() != 5 || y != x || s5[0] != x[0] || s5[3] != x[2] ||
        s5[4] != x[3] || s5[1] * s5[2] != x[1])
      return false;
    if (kernels::NodeView(*tr.node).attr_ints("perm") != std::vector<int64_t>{0, 2, 1, 3, 4})
      return false;
    const int64_t n = x[0], c = x[1], h = x[2], w = x[3], g = s5[1], cg = s5[2];
    const std::string base = plan_.slots[a].name;
    const int split =
        NewSlot(base + "/nhwc", TypeInfo::TensorWithShape(DType::kFloat, {n, h, w, g, cg}));
    const int swapped = NewSlot(plan_.slots[b].name + "/nhwc",
                                TypeInfo::TensorWithShape(DType::kFloat, {n, h, w, cg, g}));
    ir::Node& t_node = CloneNode(*tr.node, "", "Transpose");
    ir::SetAttr(t_node, ir::IntsAttr("perm", {0, 1, 2, 4, 3}));
    r1.inputs = {cl_version_[r1.inputs[0]], ShapeConstant(base + "/nhwc_shape", {n, h, w, g, cg})};
    r1.outputs = {split};
    tr.node = &t_node;
    tr.inputs = {split};
    tr.outputs = {swapped};
    r2.inputs = {swapped, ShapeConstant(plan_.slots[b].name + "/nhwc_shape", {n, h, w, c})};
    MoveOutputToChannelsLast(r2, 0);
    for (PlanStep* st : {&r1, &tr, &r2}) out.push_back(std::move(*st));
    return true;
  }

  // ChannelAffine (per-channel scale and shift on axis 1, with an activation) on a
  // channels-last input becomes NhwcChannelAffine: the same parameters, channels last.
  bool TryChannelAffine(PlanStep& st) {
    const ir::Node& n = *st.node;
    if (n.domain != "com.onyx" || n.op_type != "ChannelAffine" || st.inputs.size() != 3 ||
        !IsChannelsLast(st.inputs[0]) || st.outputs.size() != 1 || st.outputs[0] < 0)
      return false;
    const kernels::OpDef* def = Def("com.onyx", "NhwcChannelAffine", 1);
    if (!def) return false;
    st.node = &CloneNode(n, "com.onyx", "NhwcChannelAffine");
    st.op = def;
    st.inputs[0] = cl_version_[st.inputs[0]];
    MoveOutputToChannelsLast(st, 0);
    return true;
  }

  // LRN on a channels-last input becomes NhwcLRN when its fast kernel takes it (odd sizes).
  bool TryLrn(PlanStep& st) {
    const ir::Node& n = *st.node;
    if (!n.domain.empty() || n.op_type != "LRN" || st.inputs.size() != 1 ||
        !IsChannelsLast(st.inputs[0]) || st.outputs.size() != 1 || st.outputs[0] < 0)
      return false;
    ir::Node candidate = n;
    candidate.domain = "com.onyx";
    candidate.op_type = "NhwcLRN";
    candidate.opset = 1;
    const kernels::OpDef* def = Def("com.onyx", "NhwcLRN", 1);
    if (!FastImplAccepts(def, candidate, {TypeOf(cl_version_[st.inputs[0]])})) return false;
    st.node = &CloneNode(n, "com.onyx", "NhwcLRN");
    st.op = def;
    st.inputs[0] = cl_version_[st.inputs[0]];
    MoveOutputToChannelsLast(st, 0);
    return true;
  }

  bool TryConcat(PlanStep& st, std::vector<PlanStep>& before) {
    const ir::Node& n = *st.node;
    if (LayoutOf(st) != kernels::LayoutTrait::kConcatAxis || st.outputs.size() != 1 ||
        st.outputs[0] < 0 || !IsStatic4dFloat(TypeOf(st.outputs[0])))
      return false;
    bool any_cl = false;
    for (int id : st.inputs) {
      if (id < 0 || !IsStatic4dFloat(TypeOf(id))) return false;
      any_cl = any_cl || IsChannelsLast(id);
    }
    if (!any_cl) return false;
    int64_t axis = kernels::NodeView(n).attr_int("axis", 1);
    if (axis < 0) axis += 4;
    if (axis < 0 || axis > 3) return false;
    const int64_t stored_axis[4] = {0, 3, 1, 2};
    ir::Node& made = CloneNode(n, "", "Concat");
    ir::SetAttr(made, ir::IntAttr("axis", stored_axis[axis]));
    st.node = &made;
    for (int& id : st.inputs) id = RequireChannelsLast(id, before);
    MoveOutputToChannelsLast(st, 0);
    return true;
  }

  void Rewrite(PlanStep& st, std::vector<PlanStep>& before) {
    if (TryConv(st, before) || TryQLinearConv(st, before) || TryPool(st) ||
        TryElementwise(st, before) || TryChannelAffine(st) || TryLrn(st) || TryConcat(st, before))
      return;
    for (int id : st.inputs) RequirePlain(id, before);
    for (int id : st.implicit) RequirePlain(id, before);
  }

  ExecutionPlan& plan_;
  std::vector<int> cl_version_;  // per ONNX-layout slot: its channels-last copy, or -1
  std::vector<bool> has_plain_;  // per slot: whether the ONNX-layout value is produced
  std::vector<int> readers_;     // per original slot: steps reading it (+2 for graph outputs)
  int transposes_ = 0;
  kernels::IsaLevel max_isa_;
};

bool HasChannelsLastConv() {
  const kernels::OpDef* def = OpRegistry::Global().Find("com.onyx", "NhwcConv", 1);
  return def && def->impls.size() > 1;
}

}  // namespace

int PropagateChannelsLast(ExecutionPlan& plan, kernels::IsaLevel max_isa) {
  if (!HasChannelsLastConv()) return 0;
  bool any_conv = false;
  for (const PlanStep& st : plan.steps)
    any_conv = any_conv || st.node->op_type == "Conv" || st.node->op_type == "FusedConv" ||
               st.node->op_type == "QLinearConv";
  if (!any_conv) return 0;
  return LayoutPass(plan, max_isa).Run();
}

}  // namespace onyx::planner
