// Folding runs kernels in a heap-only context: no arena, no subgraphs.
#include "planner/constant_folding.h"

#include <algorithm>

namespace onyx::planner {
namespace {

class FoldContext : public kernels::KernelContext {
 public:
  FoldContext(const ir::Node& node, const std::vector<const Value*>& inputs)
      : view_(node), inputs_(inputs), outputs_(node.outputs.size()) {}

  const kernels::NodeView& node() const override { return view_; }
  int num_inputs() const override { return static_cast<int>(inputs_.size()); }
  bool has_input(int i) const override {
    return i >= 0 && i < num_inputs() && inputs_[i] != nullptr && inputs_[i]->defined();
  }
  const Value& input_value(int i) const override {
    static const Value kNone;
    return has_input(i) ? *inputs_[i] : kNone;
  }
  int num_outputs() const override { return static_cast<int>(outputs_.size()); }
  bool has_output(int i) const override {
    return i >= 0 && i < num_outputs() && !view_.node().outputs[i].empty();
  }
  Tensor Output(int i, DType dtype, const Shape& shape) override {
    Tensor t = Tensor::Allocate(dtype, shape);
    if (i >= 0 && i < num_outputs()) outputs_[i] = Value(t);
    return t;
  }
  void SetOutput(int i, Value v) override {
    if (i >= 0 && i < num_outputs()) outputs_[i] = std::move(v);
  }
  StatusOr<std::vector<Value>> RunSubgraph(const std::string&, const std::vector<Value>&) override {
    return view_.NotSupported("subgraphs are not run during constant folding");
  }
  int intra_op_threads() const override { return 1; }
  std::vector<Value>& outputs() { return outputs_; }

 private:
  kernels::NodeView view_;
  const std::vector<const Value*>& inputs_;
  std::vector<Value> outputs_;
};

}  // namespace

bool CanFold(const ir::Node& node, const kernels::OpDef& op,
             const std::vector<const Value*>& inputs) {
  if (!op.deterministic || op.impls.empty()) return false;
  for (const auto& a : node.attributes)
    if (a.g || !a.graphs.empty()) return false;
  for (size_t i = 0; i < node.inputs.size(); ++i)
    if (!node.inputs[i].empty() && (i >= inputs.size() || inputs[i] == nullptr)) return false;
  return true;
}

StatusOr<std::vector<Value>> FoldNode(const ir::Node& node, const kernels::OpDef& op,
                                      const std::vector<const Value*>& inputs,
                                      const std::vector<TypeInfo>& input_types) {
  kernels::NodeView view(node);
  ONYX_ASSIGN_OR_RETURN(auto kernel, op.impls.back().create(view, input_types));
  FoldContext ctx(node, inputs);
  Status s;
  try {
    s = kernel->Run(ctx);
  } catch (const std::bad_alloc&) {
    s = view.Fail("out of memory while folding constants");
  } catch (const std::exception& e) {
    s = view.Fail("kernel failed while folding constants: ", e.what());
  }
  if (!s.ok()) return s;
  return std::move(ctx.outputs());
}

std::optional<Tensor> FoldShapeOp(const ir::Node& node, const TypeInfo& input) {
  if (node.domain != "" || !input.shape_is_static()) return std::nullopt;
  const Shape shape = input.static_shape();
  if (node.op_type == "Size")
    return Tensor::Scalar<int64_t>(DType::kInt64, ShapeElementCount(shape));
  if (node.op_type != "Shape") return std::nullopt;
  kernels::NodeView view(node);
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t start = view.attr_int("start", 0), end = view.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(shape[i]);
  Tensor t = Tensor::Allocate(DType::kInt64, {static_cast<int64_t>(dims.size())});
  std::copy(dims.begin(), dims.end(), t.data<int64_t>());
  return t;
}

}  // namespace onyx::planner
