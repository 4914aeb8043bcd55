// The in-memory IR every layer speaks: attributes, nodes and graphs (with nested subgraphs).
// The loader (engine/) builds it from protobuf, the planner reads it, kernels see nodes through
// NodeView. It lives at the bottom of the dependency chain so kernels may read attributes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "onyx/tensor.h"
#include "onyx/value.h"

namespace onyx::ir {

struct Graph;

// Values equal ONNX AttributeProto.AttributeType.
enum class AttrType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kInt = 2,
  kString = 3,
  kTensor = 4,
  kGraph = 5,
  kFloats = 6,
  kInts = 7,
  kStrings = 8,
  kTensors = 9,
  kGraphs = 10,
  kSparseTensor = 11,
  kSparseTensors = 12,
  kTypeProto = 13,
  kTypeProtos = 14,
};
const char* AttrTypeName(AttrType t);

struct Attribute {
  std::string name;
  AttrType type = AttrType::kUndefined;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;  // sparse tensors arrive densified
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
  TypeInfo type_proto;
  std::vector<TypeInfo> type_protos;
  std::string ref_attr_name;  // inside a function body: the caller's attribute to substitute
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;                // "" is ai.onnx
  int64_t opset = 0;                 // the model's opset import for `domain`
  std::vector<std::string> inputs;   // "" marks an omitted optional input
  std::vector<std::string> outputs;  // "" marks an omitted optional output
  std::vector<Attribute> attributes;
  int index = 0;  // position in its graph's node list (the schedule tie-break)
  // Names from enclosing scopes that this node's subgraphs read; scheduling and liveness treat
  // them as extra inputs.
  std::vector<std::string> implicit_inputs;

  const Attribute* attr(const std::string& attr_name) const;
  // "Conv node 'conv1' (#3)"; the op type alone when the node has no name.
  std::string Describe() const;
};

// Attribute and node editing, for the planner's rewrites and for tests that build nodes.
Attribute IntAttr(const std::string& name, int64_t v);
Attribute FloatAttr(const std::string& name, float v);
Attribute StringAttr(const std::string& name, const std::string& v);
Attribute IntsAttr(const std::string& name, const std::vector<int64_t>& v);
Attribute FloatsAttr(const std::string& name, const std::vector<float>& v);
Attribute StringsAttr(const std::string& name, const std::vector<std::string>& v);
// Adds or replaces the attribute of the same name.
void SetAttr(Node& n, Attribute a);
void EraseAttr(Node& n, const std::string& name);

struct ValueInfo {
  std::string name;
  TypeInfo type;
};

// A sparse_initializer kept as the model stores it (COO), checked by the loader: `indices` holds
// the nnz flat row-major positions (int64 [nnz], strictly increasing, each < the dense element
// count), `values` the nnz elements ([nnz], the initializer's element type). The planner
// densifies it only for a plan that reads it; a kernel can read this form at creation
// (KernelCreateInfo::sparse_constants).
struct SparseConstant {
  Shape dims;  // the dense shape
  Tensor values;
  Tensor indices;
  int64_t nnz() const { return values.numel(); }
  Tensor Densify() const;  // the dense tensor (zeros elsewhere)
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  std::vector<ValueInfo> inputs;  // graph inputs, initializer-backed ones included (IR < 4)
  std::vector<ValueInfo> outputs;
  std::map<std::string, TypeInfo> value_info;                 // declared types of intermediates
  std::map<std::string, Tensor> initializers;                 // dense ones
  std::map<std::string, SparseConstant> sparse_initializers;  // names disjoint from initializers
  std::map<std::string, int64_t> opsets;  // domain → version, shared by subgraphs
  // Inputs that the caller must feed: graph inputs without an initializer.
  std::vector<std::string> RequiredInputs() const;
  // Whether `name` is a dense or a sparse initializer.
  bool IsInitializer(const std::string& name) const {
    return initializers.count(name) > 0 || sparse_initializers.count(name) > 0;
  }
  const SparseConstant* FindSparseInitializer(const std::string& name) const {
    auto it = sparse_initializers.find(name);
    return it == sparse_initializers.end() ? nullptr : &it->second;
  }
};

// The model around the main graph.
struct Model {
  int64_t ir_version = 0;
  std::string producer_name;
  std::string producer_version;
  std::map<std::string, int64_t> opsets;
  std::shared_ptr<Graph> graph;
  std::string path;          // file it came from; "" when loaded from bytes
  std::string display_name;  // basename of path, or "<bytes>", used in error messages
};

}  // namespace onyx::ir
