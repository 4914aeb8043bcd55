// Typed attribute access for kernels and shape functions.
#include "kernels/node_view.h"

namespace onyx::kernels {

int64_t NodeView::attr_int(const std::string& name, int64_t def) const {
  const ir::Attribute* a = node_->attr(name);
  return a && a->type == ir::AttrType::kInt ? a->i : def;
}

float NodeView::attr_float(const std::string& name, float def) const {
  const ir::Attribute* a = node_->attr(name);
  if (!a) return def;
  if (a->type == ir::AttrType::kFloat) return a->f;
  if (a->type == ir::AttrType::kInt) return static_cast<float>(a->i);
  return def;
}

std::string NodeView::attr_string(const std::string& name, const std::string& def) const {
  const ir::Attribute* a = node_->attr(name);
  return a && a->type == ir::AttrType::kString ? a->s : def;
}

std::vector<int64_t> NodeView::attr_ints(const std::string& name, std::vector<int64_t> def) const {
  const ir::Attribute* a = node_->attr(name);
  if (!a) return def;
  if (a->type == ir::AttrType::kInts) return a->ints;
  if (a->type == ir::AttrType::kInt) return {a->i};
  return def;
}

std::vector<float> NodeView::attr_floats(const std::string& name, std::vector<float> def) const {
  const ir::Attribute* a = node_->attr(name);
  if (!a) return def;
  if (a->type == ir::AttrType::kFloats) return a->floats;
  if (a->type == ir::AttrType::kFloat) return {a->f};
  return def;
}

std::vector<std::string> NodeView::attr_strings(const std::string& name,
                                                std::vector<std::string> def) const {
  const ir::Attribute* a = node_->attr(name);
  if (!a) return def;
  if (a->type == ir::AttrType::kStrings) return a->strings;
  if (a->type == ir::AttrType::kString) return {a->s};
  return def;
}

const Tensor* NodeView::attr_tensor(const std::string& name) const {
  const ir::Attribute* a = node_->attr(name);
  return a && (a->type == ir::AttrType::kTensor || a->type == ir::AttrType::kSparseTensor)
             ? &a->t
             : nullptr;
}

const ir::Graph* NodeView::attr_graph(const std::string& name) const {
  const ir::Attribute* a = node_->attr(name);
  return a && a->type == ir::AttrType::kGraph ? a->g.get() : nullptr;
}

namespace {
Status Missing(const NodeView& n, const std::string& name, const char* want) {
  const ir::Attribute* a = n.node().attr(name);
  if (!a) return n.Invalid("required attribute '", name, "' is missing");
  return n.Invalid("attribute '", name, "' must be ", want, ", got ", ir::AttrTypeName(a->type));
}
}  // namespace

StatusOr<int64_t> NodeView::RequiredInt(const std::string& name) const {
  const ir::Attribute* a = node_->attr(name);
  if (a && a->type == ir::AttrType::kInt) return a->i;
  return Missing(*this, name, "an int");
}

StatusOr<float> NodeView::RequiredFloat(const std::string& name) const {
  const ir::Attribute* a = node_->attr(name);
  if (a && a->type == ir::AttrType::kFloat) return a->f;
  return Missing(*this, name, "a float");
}

StatusOr<std::string> NodeView::RequiredString(const std::string& name) const {
  const ir::Attribute* a = node_->attr(name);
  if (a && a->type == ir::AttrType::kString) return a->s;
  return Missing(*this, name, "a string");
}

StatusOr<std::vector<int64_t>> NodeView::RequiredInts(const std::string& name) const {
  const ir::Attribute* a = node_->attr(name);
  if (a && a->type == ir::AttrType::kInts) return a->ints;
  return Missing(*this, name, "a list of ints");
}

}  // namespace onyx::kernels
