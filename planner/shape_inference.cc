// The planner's InferContext: hands each op's shape function its input types and constants.
#include "planner/shape_inference.h"

namespace onyx::planner {
namespace {

class PlanInferContext : public kernels::InferContext {
 public:
  PlanInferContext(const ir::Node& node, const std::vector<TypeInfo>& types,
                   const std::vector<const Tensor*>& constants, const SubgraphInferFn& sub,
                   std::vector<TypeInfo>* outputs)
      : view_(node), types_(types), constants_(constants), sub_(sub), outputs_(outputs) {}

  const kernels::NodeView& node() const override { return view_; }
  int num_inputs() const override { return static_cast<int>(types_.size()); }
  bool has_input(int i) const override {
    return i >= 0 && i < num_inputs() && !view_.node().inputs[i].empty();
  }
  const TypeInfo& input_type(int i) const override {
    static const TypeInfo kUnknown;
    return i >= 0 && i < num_inputs() ? types_[i] : kUnknown;
  }
  const Tensor* input_constant(int i) const override {
    return i >= 0 && i < num_inputs() ? constants_[i] : nullptr;
  }
  int num_outputs() const override { return static_cast<int>(outputs_->size()); }
  bool has_output(int i) const override {
    return i >= 0 && i < num_outputs() && !view_.node().outputs[i].empty();
  }
  void SetOutputType(int i, TypeInfo type) override {
    if (i >= 0 && i < num_outputs()) (*outputs_)[i] = std::move(type);
  }
  StatusOr<std::vector<TypeInfo>> InferSubgraph(const std::string& attr,
                                                const std::vector<TypeInfo>& inputs) override {
    const ir::Graph* g = view_.attr_graph(attr);
    if (!g) return view_.Invalid("graph attribute '", attr, "' is missing");
    if (!sub_) return view_.NotSupported("subgraph inference is not available here");
    return sub_(*g, inputs);
  }

 private:
  kernels::NodeView view_;
  const std::vector<TypeInfo>& types_;
  const std::vector<const Tensor*>& constants_;
  const SubgraphInferFn& sub_;
  std::vector<TypeInfo>* outputs_;
};

}  // namespace

Status InferNode(const ir::Node& node, const kernels::OpDef& op,
                 const std::vector<TypeInfo>& input_types,
                 const std::vector<const Tensor*>& input_constants,
                 const SubgraphInferFn& infer_subgraph, std::vector<TypeInfo>* outputs) {
  outputs->assign(node.outputs.size(), TypeInfo());
  if (!op.infer) return Status::Ok();
  PlanInferContext ctx(node, input_types, input_constants, infer_subgraph, outputs);
  Status s = op.infer(ctx);
  if (s.ok()) return s;
  // Shape functions usually name the node already; add it when they did not.
  if (s.message().find(node.Describe()) == std::string::npos)
    return s.WithContext(node.Describe() + ": ");
  return s;
}

TypeInfo MergeDeclared(const TypeInfo& inferred, const TypeInfo* declared) {
  if (!declared || declared->kind == TypeInfo::Kind::kUnknown) return inferred;
  if (inferred.kind == TypeInfo::Kind::kUnknown) return *declared;
  if (inferred.kind != TypeInfo::Kind::kTensor || declared->kind != TypeInfo::Kind::kTensor)
    return inferred;
  TypeInfo out = inferred;
  if (out.elem == DType::kUndefined) out.elem = declared->elem;
  if (!out.has_shape && declared->has_shape) {
    out.has_shape = true;
    out.dims = declared->dims;
  } else if (out.has_shape && declared->has_shape && out.dims.size() == declared->dims.size()) {
    for (size_t i = 0; i < out.dims.size(); ++i)
      if (!out.dims[i].known() && out.dims[i].symbol.empty()) out.dims[i] = declared->dims[i];
  }
  return out;
}

}  // namespace onyx::planner
