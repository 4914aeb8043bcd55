// Ml family: ai.onnx.ml ArrayFeatureExtractor, Binarizer, LabelEncoder and TreeEnsemble-5; the
// other ai.onnx.ml families register from here (ml_tree.cc, ml_linear.cc, ml_features.cc).
#include "kernels/reference/ml.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"
#include "kernels/ops/ml_common.h"
#include "kernels/reference/ml_tree.h"

namespace onyx::kernels {
namespace {

using ml::AddPrepared;
using ml::CheckType;
using ml::Contains;
using ml::CreateParsed;
using ml::InputDType;
using ml::kMl;
using ml::kNumericInputs;
using ml::SameShape;
using ml::StringList;
using reference::LabelEncoderTable;
using reference::TreeEnsembleModel;
using reference::TreeEnsembleSpec;

// ---- ArrayFeatureExtractor (ai.onnx.ml 1) ----

const std::vector<DType> kFeatureTypes = {DType::kFloat, DType::kDouble, DType::kInt64,
                                          DType::kInt32, DType::kString};

Status InferArrayFeatureExtractor(InferContext& ctx) {
  const NodeView& node = ctx.node();
  const TypeInfo& x = ctx.input_type(0);
  const TypeInfo& y = ctx.input_type(1);
  if (!x.is_tensor()) return Status::Ok();
  ONYX_RETURN_IF_ERROR(CheckType(node, 0, x.elem, kFeatureTypes));
  if (y.is_tensor()) ONYX_RETURN_IF_ERROR(CheckType(node, 1, y.elem, {DType::kInt64}));
  TypeInfo z = TypeInfo::Tensor(x.elem);
  if (x.has_shape) {
    if (x.rank() == 0)
      return node.Invalid("input 0 '", InputName(node, 0), "' is a scalar; expected rank >= 1");
    Dim k;
    if (y.shape_is_static()) k = Dim::Known(ShapeElementCount(y.static_shape()));
    z.has_shape = true;
    // A 1-D input gives a [1, k] matrix, as ONNX Runtime does.
    if (x.rank() == 1) {
      z.dims = {Dim::Known(1), k};
    } else {
      z.dims.assign(x.dims.begin(), x.dims.end() - 1);
      z.dims.push_back(k);
    }
  }
  ctx.SetOutputType(0, z);
  return Status::Ok();
}

Status ArrayFeatureExtractorKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& y = ctx.input(1);
  ONYX_RETURN_IF_ERROR(CheckType(node, 0, x.dtype(), kFeatureTypes));
  ONYX_RETURN_IF_ERROR(CheckType(node, 1, y.dtype(), {DType::kInt64}));
  if (x.rank() == 0)
    return node.Fail("input 0 '", InputName(node, 0), "' is a scalar; expected rank >= 1");
  const int64_t n = x.shape().back();
  const int64_t* idx = y.data<int64_t>();
  for (int64_t j = 0; j < y.numel(); ++j) {
    if (idx[j] < 0 || idx[j] >= n) {
      return node.Fail("input 1 '", InputName(node, 1), "' holds index ", idx[j], ", outside [0, ",
                       n, ") (the last dim of input 0 ", ShapeToString(x.shape()), ")");
    }
  }
  Shape z_shape;
  if (x.rank() == 1) {
    z_shape = {1, y.numel()};
  } else {
    z_shape.assign(x.shape().begin(), x.shape().end() - 1);
    z_shape.push_back(y.numel());
  }
  Tensor z = ctx.Output(0, x.dtype(), z_shape);
  int64_t outer = 1;
  for (int64_t d = 0; d + 1 < x.rank(); ++d) outer *= x.dim(d);
  reference::ArrayFeatureExtract(x, outer, n, idx, y.numel(), &z);
  return Status::Ok();
}

// ---- Binarizer (ai.onnx.ml 1) ----

Status InferBinarizer(InferContext& ctx) {
  const TypeInfo& x = ctx.input_type(0);
  if (x.is_tensor()) ONYX_RETURN_IF_ERROR(CheckType(ctx.node(), 0, x.elem, kNumericInputs));
  return InferSameAsInput0(ctx);
}

Status BinarizerKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  ONYX_RETURN_IF_ERROR(CheckType(ctx.node(), 0, x.dtype(), kNumericInputs));
  Tensor y = ctx.Output(0, x.dtype(), x.shape());
  reference::Binarize(x, ctx.node().attr_float("threshold", 0.0f), &y);
  return Status::Ok();
}

// ---- LabelEncoder (ai.onnx.ml 1, 2, 4) ----

const std::vector<DType> kLabelTypes = {DType::kString, DType::kInt64, DType::kFloat,
                                        DType::kInt32,  DType::kInt16, DType::kDouble};

Tensor FloatList(const std::vector<float>& v) {
  Tensor t = Tensor::Allocate(DType::kFloat, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

// Adds keys (a 1-D tensor of any supported type) to the table, key i -> value position i.
// A repeated key keeps its last position (opset 4 rule).
void AddKeys(const Tensor& keys, LabelEncoderTable* table) {
  table->key_type = keys.dtype();
  for (int64_t i = 0; i < keys.numel(); ++i) {
    switch (keys.dtype()) {
      case DType::kString:
        table->string_keys[keys.strings()[i]] = i;
        break;
      case DType::kInt64:
        table->int_keys[keys.data<int64_t>()[i]] = i;
        break;
      case DType::kInt32:
        table->int_keys[keys.data<int32_t>()[i]] = i;
        break;
      case DType::kInt16:
        table->int_keys[keys.data<int16_t>()[i]] = i;
        break;
      default: {  // float, double
        const double v = ElementAsDouble(keys, i);
        if (std::isnan(v)) {
          table->nan_index = i;
        } else {
          table->float_keys[v] = i;
        }
        break;
      }
    }
  }
}

// Opset 1: classes_strings maps strings to their index (default_int64 when missing) or indices
// back to strings (default_string when out of range); the input type picks the direction.
StatusOr<LabelEncoderTable> BuildLabelEncoderV1(const NodeView& node, DType input) {
  const std::vector<std::string> classes = node.attr_strings("classes_strings");
  LabelEncoderTable table;
  if (input == DType::kString) {
    for (int64_t i = static_cast<int64_t>(classes.size()); i-- > 0;)
      table.string_keys[classes[i]] = i;  // the first occurrence wins
    table.key_type = DType::kString;
    std::vector<int64_t> idx(classes.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i);
    table.values = MakeInt64Tensor(idx);
    table.default_value = MakeInt64Tensor({node.attr_int("default_int64", -1)});
    return table;
  }
  if (input == DType::kInt64) {
    table.key_type = DType::kInt64;
    for (size_t i = 0; i < classes.size(); ++i) table.int_keys[static_cast<int64_t>(i)] = i;
    table.values = StringList(classes);
    table.default_value = StringList({node.attr_string("default_string", "_Unused")});
    return table;
  }
  return node.NotSupported("input 0 '", InputName(node, 0), "' has type ", DTypeName(input),
                           "; opset 1 expects string or int64");
}

StatusOr<LabelEncoderTable> BuildLabelEncoder(const NodeView& node, DType input) {
  if (node.opset() < 2) return BuildLabelEncoderV1(node, input);
  const bool tensors = node.opset() >= 4;  // keys_tensor / values_tensor / default_tensor
  // Exactly one keys_* and one values_* attribute; count them all to report duplicates.
  Tensor keys;
  int key_attrs = 0;
  Tensor values;
  int value_attrs = 0;
  const auto take = [](Tensor t, Tensor* dst, int* count) {
    *dst = std::move(t);
    ++*count;
  };
  if (node.has_attr("keys_strings"))
    take(StringList(node.attr_strings("keys_strings")), &keys, &key_attrs);
  if (node.has_attr("keys_int64s"))
    take(MakeInt64Tensor(node.attr_ints("keys_int64s")), &keys, &key_attrs);
  if (node.has_attr("keys_floats"))
    take(FloatList(node.attr_floats("keys_floats")), &keys, &key_attrs);
  if (tensors && node.attr_tensor("keys_tensor"))
    take(*node.attr_tensor("keys_tensor"), &keys, &key_attrs);
  if (node.has_attr("values_strings"))
    take(StringList(node.attr_strings("values_strings")), &values, &value_attrs);
  if (node.has_attr("values_int64s"))
    take(MakeInt64Tensor(node.attr_ints("values_int64s")), &values, &value_attrs);
  if (node.has_attr("values_floats"))
    take(FloatList(node.attr_floats("values_floats")), &values, &value_attrs);
  if (tensors && node.attr_tensor("values_tensor"))
    take(node.attr_tensor("values_tensor")->Clone(), &values, &value_attrs);
  if (key_attrs != 1 || value_attrs != 1)
    return node.Invalid("exactly one 'keys_*' and one 'values_*' attribute must be set");
  if (!Contains(kLabelTypes, keys.dtype()))
    return node.NotSupported("keys of type ", DTypeName(keys.dtype()), " are not supported");
  if (!Contains(kLabelTypes, values.dtype()))
    return node.NotSupported("values of type ", DTypeName(values.dtype()), " are not supported");
  if (keys.numel() != values.numel()) {
    return node.Invalid("the keys (", keys.numel(), ") and values (", values.numel(),
                        ") attributes have different lengths");
  }
  if (input != DType::kUndefined && input != keys.dtype()) {
    return node.Invalid("input 0 '", InputName(node, 0), "' has type ", DTypeName(input),
                        " but the keys are ", DTypeName(keys.dtype()));
  }
  LabelEncoderTable table;
  AddKeys(keys, &table);
  table.values = values.Reshaped({values.numel()});
  const DType out = values.dtype();
  if (const Tensor* def = tensors ? node.attr_tensor("default_tensor") : nullptr) {
    if (def->dtype() != out || def->numel() != 1) {
      return node.Invalid("attribute 'default_tensor' must hold one ", DTypeName(out),
                          " (the values' type), got ", DTypeName(def->dtype()),
                          ShapeToString(def->shape()));
    }
    table.default_value = def->Clone().Reshaped({1});
  } else if (out == DType::kString) {
    table.default_value = StringList({node.attr_string("default_string", "_Unused")});
  } else {
    // Integral values default to default_int64 (-1), floating ones to default_float (-0.0).
    const bool floating = out == DType::kFloat || out == DType::kDouble;
    table.default_value = Tensor::Allocate(out, {1});
    StoreFromDouble(out, table.default_value.raw_data(), 0,
                    floating ? static_cast<double>(node.attr_float("default_float", -0.0f))
                             : static_cast<double>(node.attr_int("default_int64", -1)));
  }
  return table;
}

Status InferLabelEncoder(InferContext& ctx) {
  const TypeInfo& x = ctx.input_type(0);
  const DType in = x.is_tensor() ? x.elem : DType::kUndefined;
  if (in != DType::kUndefined) ONYX_RETURN_IF_ERROR(CheckType(ctx.node(), 0, in, kLabelTypes));
  if (in == DType::kUndefined && ctx.node().opset() < 2) return Status::Ok();
  ONYX_ASSIGN_OR_RETURN(const LabelEncoderTable table, BuildLabelEncoder(ctx.node(), in));
  ctx.SetOutputType(0, SameShape(x, table.values.dtype()));
  return Status::Ok();
}

class LabelEncoderKernel : public Kernel {
 public:
  explicit LabelEncoderKernel(std::shared_ptr<const LabelEncoderTable> table)
      : table_(std::move(table)) {}
  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    const Tensor& x = ctx.input(0);
    std::shared_ptr<const LabelEncoderTable> table = table_;
    if (!table || x.dtype() != table->key_type) {
      // Built now when the input type was unknown at plan time (opset 1 needs it).
      ONYX_ASSIGN_OR_RETURN(LabelEncoderTable t, BuildLabelEncoder(node, x.dtype()));
      table = std::make_shared<const LabelEncoderTable>(std::move(t));
    }
    Tensor y = ctx.Output(0, table->values.dtype(), x.shape());
    reference::LabelEncode(*table, x, &y);
    return Status::Ok();
  }

 private:
  std::shared_ptr<const LabelEncoderTable> table_;
};

StatusOr<std::unique_ptr<Kernel>> CreateLabelEncoder(const NodeView& node,
                                                     const std::vector<TypeInfo>& types) {
  const DType in = InputDType(types);
  std::shared_ptr<const LabelEncoderTable> table;
  if (in != DType::kUndefined) {
    ONYX_ASSIGN_OR_RETURN(LabelEncoderTable t, BuildLabelEncoder(node, in));
    table = std::make_shared<const LabelEncoderTable>(std::move(t));
  }
  return std::unique_ptr<Kernel>(new LabelEncoderKernel(std::move(table)));
}

// ---- TreeEnsemble (ai.onnx.ml 5) ----

const std::vector<DType> kTreeTypes = {DType::kFloat, DType::kDouble, DType::kFloat16};

StatusOr<std::vector<int64_t>> IntsOfLength(const NodeView& node, const char* name, size_t n) {
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> v, node.RequiredInts(name));
  if (v.size() != n)
    return node.Invalid("attribute '", name, "' has ", v.size(), " entries; expected ", n);
  return v;
}

StatusOr<std::vector<double>> TensorAttr(const NodeView& node, const char* name) {
  const Tensor* t = node.attr_tensor(name);
  if (!t) return node.Invalid("required attribute '", name, "' is missing");
  if (t->dtype() == DType::kString)
    return node.Invalid("attribute '", name, "' must be a numeric tensor");
  return TensorToDoubles(*t);
}

// Fails when following the interior-node links from any node can come back to it.
Status CheckAcyclic(const NodeView& node, const TreeEnsembleModel& m) {
  enum : uint8_t { kNew, kOnPath, kDone };
  std::vector<uint8_t> state(m.nodes.size(), kNew);
  std::vector<std::pair<int64_t, int>> stack;  // node, next child to visit (0 true, 1 false)
  for (size_t start = 0; start < m.nodes.size(); ++start) {
    if (state[start] != kNew) continue;
    stack.push_back({static_cast<int64_t>(start), 0});
    state[start] = kOnPath;
    while (!stack.empty()) {
      auto& [id, child] = stack.back();
      if (child == 2) {
        state[id] = kDone;
        stack.pop_back();
        continue;
      }
      const TreeEnsembleModel::Node& n = m.nodes[id];
      const bool leaf = child == 0 ? n.true_is_leaf : n.false_is_leaf;
      const int64_t next = child == 0 ? n.true_id : n.false_id;
      ++child;
      if (leaf || state[next] == kDone) continue;
      if (state[next] == kOnPath)
        return node.Invalid("the tree nodes form a cycle through node ", next);
      state[next] = kOnPath;
      stack.push_back({next, 0});
    }
  }
  return Status::Ok();
}

StatusOr<TreeEnsembleModel> ParseTreeEnsemble(const NodeView& node) {
  TreeEnsembleModel m;
  ONYX_ASSIGN_OR_RETURN(const std::vector<int64_t> features, node.RequiredInts("nodes_featureids"));
  const size_t n = features.size();
  if (n == 0) return node.Invalid("attribute 'nodes_featureids' is empty");
  ONYX_ASSIGN_OR_RETURN(const auto true_ids, IntsOfLength(node, "nodes_truenodeids", n));
  ONYX_ASSIGN_OR_RETURN(const auto false_ids, IntsOfLength(node, "nodes_falsenodeids", n));
  ONYX_ASSIGN_OR_RETURN(const auto true_leafs, IntsOfLength(node, "nodes_trueleafs", n));
  ONYX_ASSIGN_OR_RETURN(const auto false_leafs, IntsOfLength(node, "nodes_falseleafs", n));
  ONYX_ASSIGN_OR_RETURN(const std::vector<double> modes, TensorAttr(node, "nodes_modes"));
  if (modes.size() != n)
    return node.Invalid("attribute 'nodes_modes' has ", modes.size(), " entries; expected ", n);
  std::vector<double> splits;
  if (node.attr_tensor("nodes_splits")) {
    ONYX_ASSIGN_OR_RETURN(splits, TensorAttr(node, "nodes_splits"));
    if (splits.size() != n)
      return node.Invalid("attribute 'nodes_splits' has ", splits.size(), " entries; expected ", n);
  }
  std::vector<int64_t> missing = node.attr_ints("nodes_missing_value_tracks_true");
  if (!missing.empty() && missing.size() != n) {
    return node.Invalid("attribute 'nodes_missing_value_tracks_true' has ", missing.size(),
                        " entries; expected ", n);
  }
  std::vector<double> members;
  if (node.attr_tensor("membership_values")) {
    ONYX_ASSIGN_OR_RETURN(members, TensorAttr(node, "membership_values"));
  }
  size_t member_pos = 0;  // sets are listed in node order, each ended by a NaN

  ONYX_ASSIGN_OR_RETURN(m.leaf_targets, node.RequiredInts("leaf_targetids"));
  ONYX_ASSIGN_OR_RETURN(m.leaf_weights, TensorAttr(node, "leaf_weights"));
  const size_t leaves = m.leaf_targets.size();
  if (m.leaf_weights.size() != leaves) {
    return node.Invalid("attribute 'leaf_weights' has ", m.leaf_weights.size(),
                        " entries; expected ", leaves, " (as 'leaf_targetids')");
  }
  ONYX_ASSIGN_OR_RETURN(m.n_targets, node.RequiredInt("n_targets"));
  if (m.n_targets < 1) return node.Invalid("attribute 'n_targets' must be >= 1, got ", m.n_targets);
  for (int64_t t : m.leaf_targets) {
    if (t < 0 || t >= m.n_targets)
      return node.Invalid("attribute 'leaf_targetids' has ", t, ", outside [0, ", m.n_targets, ")");
  }
  ONYX_ASSIGN_OR_RETURN(m.roots, node.RequiredInts("tree_roots"));
  for (int64_t r : m.roots) {
    if (r < 0 || r >= static_cast<int64_t>(n))
      return node.Invalid("attribute 'tree_roots' has ", r, ", outside [0, ", n, ")");
  }
  const int64_t aggregate = node.attr_int("aggregate_function", 1);
  if (aggregate < 0 || aggregate > 3)
    return node.Invalid("attribute 'aggregate_function' must be in [0, 3], got ", aggregate);
  m.aggregate = static_cast<TreeEnsembleModel::Aggregate>(aggregate);
  const int64_t post = node.attr_int("post_transform", 0);
  if (post < 0 || post > 4)
    return node.Invalid("attribute 'post_transform' must be in [0, 4], got ", post);
  m.post_transform = static_cast<TreeEnsembleModel::PostTransform>(post);

  m.nodes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    TreeEnsembleModel::Node& t = m.nodes[i];
    const double mode = modes[i];
    if (!(mode >= 0 && mode <= 6) || mode != std::floor(mode))
      return node.Invalid("attribute 'nodes_modes' [", i, "] = ", mode, " is not in [0, 6]");
    t.mode = static_cast<TreeEnsembleModel::Mode>(static_cast<int>(mode));
    if (features[i] < 0)
      return node.Invalid("attribute 'nodes_featureids' [", i, "] = ", features[i], " is negative");
    t.feature = features[i];
    m.max_feature = std::max(m.max_feature, t.feature);
    t.missing_tracks_true = !missing.empty() && missing[i] != 0;
    if (t.mode == TreeEnsembleModel::Mode::kMember) {
      if (member_pos >= members.size()) {
        return node.Invalid("attribute 'membership_values' has no set for node ", i,
                            " (mode BRANCH_MEMBER)");
      }
      while (member_pos < members.size() && !std::isnan(members[member_pos]))
        t.members.push_back(members[member_pos++]);
      ++member_pos;  // the NaN that ends the set
    } else {
      if (splits.empty()) return node.Invalid("required attribute 'nodes_splits' is missing");
      t.split = splits[i];
    }
    t.true_is_leaf = true_leafs[i] != 0;
    t.false_is_leaf = false_leafs[i] != 0;
    t.true_id = true_ids[i];
    t.false_id = false_ids[i];
    for (int side = 0; side < 2; ++side) {
      const bool leaf = side == 0 ? t.true_is_leaf : t.false_is_leaf;
      const int64_t id = side == 0 ? t.true_id : t.false_id;
      const int64_t limit = static_cast<int64_t>(leaf ? leaves : n);
      if (id < 0 || id >= limit) {
        return node.Invalid("attribute '", side == 0 ? "nodes_truenodeids" : "nodes_falsenodeids",
                            "' [", i, "] = ", id, " is outside [0, ", limit, ") (",
                            leaf ? "leaves" : "nodes", ")");
      }
    }
  }
  ONYX_RETURN_IF_ERROR(CheckAcyclic(node, m));
  return m;
}

Status InferTreeEnsemble(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(const TreeEnsembleModel m, ParseTreeEnsemble(node));
  const TypeInfo& x = ctx.input_type(0);
  if (!x.is_tensor()) return Status::Ok();
  ONYX_RETURN_IF_ERROR(CheckType(node, 0, x.elem, kTreeTypes));
  TypeInfo y = TypeInfo::Tensor(x.elem);
  if (x.has_shape) {
    if (x.rank() != 2) {
      return node.Invalid("input 0 '", InputName(node, 0), "' has shape ", x.ToString(),
                          "; expected [N, F]");
    }
    if (x.dims[1].known() && x.dims[1].value <= m.max_feature) {
      return node.Invalid("input 0 '", InputName(node, 0), "' has ", x.dims[1].value,
                          " features but the trees read feature ", m.max_feature);
    }
    y.has_shape = true;
    y.dims = {x.dims[0], Dim::Known(m.n_targets)};
  }
  ctx.SetOutputType(0, y);
  return Status::Ok();
}

// X at run time: float, double or float16, [N, F] with F > max_feature.
Status CheckTreeEnsembleInput(const NodeView& node, const Tensor& x, int64_t max_feature) {
  ONYX_RETURN_IF_ERROR(CheckType(node, 0, x.dtype(), kTreeTypes));
  if (x.rank() != 2) {
    return node.Fail("input 0 '", InputName(node, 0), "' has shape ", ShapeToString(x.shape()),
                     "; expected [N, F]");
  }
  if (x.dim(1) <= max_feature) {
    return node.Fail("input 0 '", InputName(node, 0), "' has ", x.dim(1),
                     " features but the trees read feature ", max_feature);
  }
  return Status::Ok();
}

class TreeEnsembleKernel : public Kernel {
 public:
  explicit TreeEnsembleKernel(TreeEnsembleModel model) : model_(std::move(model)) {}
  Status Run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    ONYX_RETURN_IF_ERROR(CheckTreeEnsembleInput(ctx.node(), x, model_.max_feature));
    Tensor y = ctx.Output(0, x.dtype(), {x.dim(0), model_.n_targets});
    reference::TreeEnsemblePredict(model_, x, &y);
    return Status::Ok();
  }

 private:
  TreeEnsembleModel model_;
};

// TreeEnsemble-5 on the flat forest of reference/ml_tree.h, the TreeEnsembleClassifier/Regressor
// machinery: the same double comparisons and tree-order double sums as TreeEnsembleKernel (the
// reference walk, kept as the oracle), so the same results.
// Interior nodes keep their positions; leaf i becomes node nodes.size() + i with its one weight.
TreeEnsembleSpec SpecOfModel(const TreeEnsembleModel& m) {
  TreeEnsembleSpec s;
  const int64_t n = static_cast<int64_t>(m.nodes.size());
  const int64_t leaves = static_cast<int64_t>(m.leaf_weights.size());
  const auto add = [&s](int64_t id, reference::TreeMode mode, int64_t feature, double split,
                        bool missing, int64_t t, int64_t f) {
    s.tree_ids.push_back(0);
    s.node_ids.push_back(id);
    s.modes.push_back(mode);
    s.feature_ids.push_back(feature);
    s.thresholds.push_back(split);
    s.missing_true.push_back(missing ? 1 : 0);
    s.true_ids.push_back(t);
    s.false_ids.push_back(f);
  };
  for (int64_t i = 0; i < n; ++i) {
    const TreeEnsembleModel::Node& nd = m.nodes[i];
    // TreeEnsembleModel::Mode lists LEQ..NEQ in TreeMode's order.
    const bool member = nd.mode == TreeEnsembleModel::Mode::kMember;
    s.members.push_back(nd.members);
    add(i, member ? reference::TreeMode::kMember : static_cast<reference::TreeMode>(nd.mode),
        nd.feature, nd.split, nd.missing_tracks_true, nd.true_is_leaf ? n + nd.true_id : nd.true_id,
        nd.false_is_leaf ? n + nd.false_id : nd.false_id);
  }
  for (int64_t l = 0; l < leaves; ++l) {
    add(n + l, reference::TreeMode::kLeaf, 0, 0.0, false, n + l, n + l);
    s.weight_tree_ids.push_back(0);
    s.weight_node_ids.push_back(n + l);
    s.weight_targets.push_back(m.leaf_targets[l]);
    s.weights.push_back(m.leaf_weights[l]);
  }
  s.roots = m.roots;
  s.n_targets = m.n_targets;
  return s;
}

class TreeEnsembleForestKernel : public Kernel {
 public:
  TreeEnsembleForestKernel(TreeEnsembleModel m, reference::Forest<double> f)
      : m_(std::move(m)), f_(std::move(f)) {}
  Status Run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    ONYX_RETURN_IF_ERROR(CheckTreeEnsembleInput(ctx.node(), x, m_.max_feature));
    const int64_t k = m_.n_targets;
    const DType t = x.dtype();
    ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, t, {x.dim(0), k}));
    const double highest = reference::TreeEnsembleHighest(t);
    const double lowest = reference::TreeEnsembleLowest(t);
    using Agg = TreeEnsembleModel::Aggregate;
    // TreeEnsembleModel::Aggregate lists AVERAGE, SUM, MIN, MAX in TreeAggregate's order.
    reference::EvaluateForest<double>(
        f_, static_cast<reference::TreeAggregate>(m_.aggregate), x, ctx.intra_op_threads(),
        [&](int64_t r0, int64_t rows, const double* score, const uint8_t* has) {
          std::vector<double> acc(static_cast<size_t>(k));
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t j = 0; j < k; ++j) {
              const double v = score[r * k + j];
              const bool reached = has[r * k + j] != 0;
              switch (m_.aggregate) {
                case Agg::kMin:
                  acc[j] = reached ? std::min(v, highest) : highest;
                  break;
                case Agg::kMax:
                  acc[j] = reached ? std::max(v, lowest) : lowest;
                  break;
                case Agg::kAverage:
                  acc[j] = m_.roots.empty() ? v : v / static_cast<double>(m_.roots.size());
                  break;
                default:
                  acc[j] = v;
                  break;
              }
            }
            reference::TreeEnsemblePostTransform(m_.post_transform, &acc);
            for (int64_t j = 0; j < k; ++j)
              StoreFromDouble(t, y.raw_data(), (r0 + r) * k + j, acc[j]);
          }
        });
    return Status::Ok();
  }

 private:
  TreeEnsembleModel m_;
  reference::Forest<double> f_;
};

StatusOr<std::unique_ptr<Kernel>> CreateTreeEnsembleForest(const NodeView& node,
                                                           const std::vector<TypeInfo>&) {
  ONYX_ASSIGN_OR_RETURN(TreeEnsembleModel m, ParseTreeEnsemble(node));
  auto f = reference::CompileForest<double>(SpecOfModel(m));
  if (!f.ok()) return f.status().WithContext(node.node().Describe() + ": ");
  return std::unique_ptr<Kernel>(new TreeEnsembleForestKernel(std::move(m), std::move(f).value()));
}

}  // namespace

void RegisterMl(OpRegistry& r) {
  r.Add(kMl, "ArrayFeatureExtractor", 1, kLatestOpset, InferArrayFeatureExtractor,
        ArrayFeatureExtractorKernel);
  r.Add(kMl, "Binarizer", 1, kLatestOpset, InferBinarizer, BinarizerKernel);
  // Opset 1 converts with classes_strings; 2 introduced keys_*/values_*; 4 added the *_tensor
  // attributes and more key/value types. One parser handles all three.
  AddPrepared(r, "LabelEncoder", 1, 1, InferLabelEncoder, CreateLabelEncoder);
  AddPrepared(r, "LabelEncoder", 2, 3, InferLabelEncoder, CreateLabelEncoder);
  AddPrepared(r, "LabelEncoder", 4, kLatestOpset, InferLabelEncoder, CreateLabelEncoder);
  {
    // The flat forest first; the reference walk is the oracle (reference_kernels).
    OpDef def;
    def.domain = kMl;
    def.op_type = "TreeEnsemble";
    def.since = 5;
    def.infer = InferTreeEnsemble;
    def.impls.push_back(
        KernelImpl{"TreeEnsemble_forest", nullptr, CreateTreeEnsembleForest, nullptr});
    def.impls.push_back(KernelImpl{"TreeEnsemble_ref", nullptr,
                                   CreateParsed<TreeEnsembleKernel, ParseTreeEnsemble>, nullptr});
    r.AddDef(std::move(def));
  }
  ml::RegisterMlTree(r);
  ml::RegisterMlLinear(r);
  ml::RegisterMlFeatures(r);
}

namespace ml {

StatusOr<std::vector<double>> FloatsOrTensor(const NodeView& node, const std::string& name,
                                             bool* is_double) {
  if (is_double) *is_double = false;
  const std::string tname = name + "_as_tensor";
  const Tensor* t = node.attr_tensor(tname);
  if (t && node.has_attr(name))
    return node.Invalid("attributes '", name, "' and '", tname, "' are both set; expected one");
  if (!t) {
    const std::vector<float> f = node.attr_floats(name);
    return std::vector<double>(f.begin(), f.end());
  }
  if (t->dtype() == DType::kString)
    return node.Invalid("attribute '", tname, "' must be a numeric tensor");
  if (is_double) *is_double = t->dtype() == DType::kDouble;
  return TensorToDoubles(*t);
}

}  // namespace ml

}  // namespace onyx::kernels
