// IR helpers: attribute lookup and node descriptions used in every error message.
#include "kernels/ir/graph.h"

#include <cstring>
#include <set>

namespace onyx::ir {

const char* AttrTypeName(AttrType t) {
  switch (t) {
    case AttrType::kUndefined:
      return "undefined";
    case AttrType::kFloat:
      return "float";
    case AttrType::kInt:
      return "int";
    case AttrType::kString:
      return "string";
    case AttrType::kTensor:
      return "tensor";
    case AttrType::kGraph:
      return "graph";
    case AttrType::kFloats:
      return "floats";
    case AttrType::kInts:
      return "ints";
    case AttrType::kStrings:
      return "strings";
    case AttrType::kTensors:
      return "tensors";
    case AttrType::kGraphs:
      return "graphs";
    case AttrType::kSparseTensor:
      return "sparse_tensor";
    case AttrType::kSparseTensors:
      return "sparse_tensors";
    case AttrType::kTypeProto:
      return "type_proto";
    case AttrType::kTypeProtos:
      return "type_protos";
  }
  return "unknown";
}

const Attribute* Node::attr(const std::string& attr_name) const {
  for (const Attribute& a : attributes)
    if (a.name == attr_name) return &a;
  return nullptr;
}

std::string Node::Describe() const {
  std::string s = op_type + " node";
  if (!name.empty()) s += " '" + name + "'";
  s += " (#" + std::to_string(index) + ")";
  return s;
}

std::vector<std::string> Graph::RequiredInputs() const {
  std::vector<std::string> out;
  for (const ValueInfo& v : inputs)
    if (!IsInitializer(v.name)) out.push_back(v.name);
  return out;
}

Tensor SparseConstant::Densify() const {
  Tensor dense = Tensor::Allocate(values.dtype(), dims);
  const int64_t* idx = indices.data<int64_t>();
  const int64_t n = nnz();
  if (values.dtype() == DType::kString) {
    for (int64_t k = 0; k < n; ++k) dense.strings()[idx[k]] = values.strings()[k];
    return dense;
  }
  const size_t esize = DTypeSize(values.dtype());
  char* out = static_cast<char*>(dense.raw_data());
  const char* in = static_cast<const char*>(values.raw_data());
  for (int64_t k = 0; k < n; ++k) std::memcpy(out + idx[k] * esize, in + k * esize, esize);
  return dense;
}

Attribute IntAttr(const std::string& name, int64_t v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kInt;
  a.i = v;
  return a;
}

Attribute FloatAttr(const std::string& name, float v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kFloat;
  a.f = v;
  return a;
}

Attribute StringAttr(const std::string& name, const std::string& v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kString;
  a.s = v;
  return a;
}

Attribute StringsAttr(const std::string& name, const std::vector<std::string>& v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kStrings;
  a.strings = v;
  return a;
}

Attribute IntsAttr(const std::string& name, const std::vector<int64_t>& v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kInts;
  a.ints = v;
  return a;
}

Attribute FloatsAttr(const std::string& name, const std::vector<float>& v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kFloats;
  a.floats = v;
  return a;
}

void SetAttr(Node& n, Attribute a) {
  for (Attribute& old : n.attributes) {
    if (old.name == a.name) {
      old = std::move(a);
      return;
    }
  }
  n.attributes.push_back(std::move(a));
}

void EraseAttr(Node& n, const std::string& name) {
  for (size_t i = 0; i < n.attributes.size(); ++i) {
    if (n.attributes[i].name == name) {
      n.attributes.erase(n.attributes.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
  }
}

}  // namespace onyx::ir
