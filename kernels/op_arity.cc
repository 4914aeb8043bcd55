#include "kernels/op_arity.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <tuple>

namespace onyx::kernels {
namespace {

struct OpArity {
  const char* domain;
  const char* op_type;
  int since_version;
  int min_input;
  int max_input;  // INT32_MAX when the last formal input is variadic
  int min_output;
  int max_output;
  uint32_t required;        // bit i: formal input i is Single (neither Optional nor Variadic)
  bool variadic_last;       // the last formal input repeats
  const char* input_names;  // formal input names, ", "-separated
  const char* attributes;   // attribute names, sorted, ", "-separated
};

// Sorted by (domain, op_type, since_version); generated from the pinned onnx package.
constexpr OpArity kOpArity[] = {
#include "op_arity_table.inc"
};

using Key = std::tuple<std::string_view, std::string_view, int64_t>;

Key KeyOf(const OpArity& a) {
  return {a.domain, a.op_type, a.since_version};
}

const OpArity* Find(const ir::Node& node) {
  const Key key{node.domain, node.op_type, node.opset};
  // The first row after `key`; the one before it is the newest version <= node.opset.
  const OpArity* it = std::upper_bound(std::begin(kOpArity), std::end(kOpArity), key,
                                       [](const Key& k, const OpArity& a) { return k < KeyOf(a); });
  if (it == std::begin(kOpArity)) return nullptr;
  --it;
  if (node.domain != it->domain || node.op_type != it->op_type) return nullptr;
  return it;
}

// Formal name of input i; inputs past the last formal one belong to a variadic last one.
std::string FormalName(const OpArity& a, size_t i) {
  std::string_view names = a.input_names;
  for (size_t k = 0;; ++k) {
    const size_t comma = names.find(", ");
    if (k == i || comma == std::string_view::npos) return std::string(names.substr(0, comma));
    names.remove_prefix(comma + 2);
  }
}

bool ListHas(std::string_view list, std::string_view name) {
  while (!list.empty()) {
    const size_t comma = list.find(", ");
    if (list.substr(0, comma) == name) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 2);
  }
  return false;
}

// An attribute's value for error messages: "CRD", "3", "[1, 2]", "a graph".
std::string ValueText(const ir::Attribute& a) {
  const auto list = [](const auto& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size() && i < 8; ++i) s += StrCat(i ? ", " : "", v[i]);
    return s + (v.size() > 8 ? ", ...]" : "]");
  };
  if (!a.ref_attr_name.empty()) return StrCat("the caller's '", a.ref_attr_name, "'");
  switch (a.type) {
    case ir::AttrType::kInt:
      return StrCat(a.i);
    case ir::AttrType::kFloat:
      return StrCat(a.f);
    case ir::AttrType::kString:
      return StrCat("'", a.s, "'");
    case ir::AttrType::kInts:
      return list(a.ints);
    case ir::AttrType::kFloats:
      return list(a.floats);
    case ir::AttrType::kStrings:
      return list(a.strings);
    default:
      return "a value of another kind (tensor, graph or type)";
  }
}

// "2 inputs", "1 to 3 inputs", "at least 1 input"; `what` is the singular noun.
std::string Range(int lo, int hi, const char* what) {
  const char* plural = hi == 1 ? "" : "s";
  if (hi == INT32_MAX) return StrCat("at least ", lo, " ", what, lo == 1 ? "" : "s");
  if (lo == hi) return StrCat(lo, " ", what, plural);
  return StrCat(lo, " to ", hi, " ", what, plural);
}

// "1 input", "0 inputs".
std::string Count(int64_t n, const char* what) {
  return StrCat(n, " ", what, n == 1 ? "" : "s");
}

}  // namespace

Status CheckNodeArity(const ir::Node& node) {
  const OpArity* a = Find(node);
  if (a == nullptr) return Status::Ok();
  const std::string schema = StrCat(a->op_type, "-", a->since_version);
  const int64_t n_in = static_cast<int64_t>(node.inputs.size());
  const std::string takes = StrCat(schema, " takes ", Range(a->min_input, a->max_input, "input"),
                                   " (", a->input_names, a->variadic_last ? "..." : "", ")");
  // The first absent position is the first required input missing: min_input counts positions.
  if (n_in < a->min_input)
    return InvalidModel(node.Describe(), ": has ", Count(n_in, "input"), "; ", takes, ": input ",
                        n_in, " '", FormalName(*a, n_in), "' is missing");
  if (n_in > a->max_input)
    return InvalidModel(node.Describe(), ": has ", Count(n_in, "input"), "; ", takes);
  for (size_t i = 0; i < node.inputs.size() && i < 32; ++i) {
    if (node.inputs[i].empty() && (a->required >> i & 1u))
      return InvalidModel(node.Describe(), ": input ", i, " '", FormalName(*a, i),
                          "' is missing: ", schema, " requires it, but its name is empty");
  }
  const int64_t n_out = static_cast<int64_t>(node.outputs.size());
  if (n_out < a->min_output || n_out > a->max_output)
    return InvalidModel(node.Describe(), ": has ", Count(n_out, "output"), "; ", schema,
                        " produces ", Range(a->min_output, a->max_output, "output"));
  // An attribute the schema does not define has no meaning onyx could implement: refusing it
  // beats running as if it were absent (a newer opset's attribute in an older model, a typo).
  for (const ir::Attribute& attr : node.attributes) {
    if (!ListHas(a->attributes, attr.name)) {
      return InvalidModel(node.Describe(), ": attribute '", attr.name, "' = ", ValueText(attr),
                          " is not defined by ", schema,
                          " (its attributes: ", *a->attributes ? a->attributes : "none", ")");
    }
  }
  return Status::Ok();
}

std::vector<SchemaChange> SchemaChangesWithin(const std::string& domain, const std::string& op_type,
                                              int64_t since, int64_t until) {
  std::vector<SchemaChange> changes;
  ir::Node probe;
  probe.domain = domain;
  probe.op_type = op_type;
  probe.opset = since;
  const OpArity* base = Find(probe);
  if (base == nullptr) return changes;
  for (const OpArity* it = base + 1; it != std::end(kOpArity); base = it++) {
    if (it->domain != domain || it->op_type != op_type || it->since_version > until) break;
    std::string added;
    std::string_view list = it->attributes;
    while (!list.empty()) {
      const size_t comma = list.find(", ");
      const std::string_view name = list.substr(0, comma);
      if (!ListHas(base->attributes, name)) added += StrCat(added.empty() ? "" : ", ", name);
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 2);
    }
    const bool inputs_changed = std::string_view(it->input_names) != base->input_names;
    if (!added.empty() || inputs_changed)
      changes.push_back({it->since_version, added, inputs_changed ? it->input_names : ""});
  }
  return changes;
}

}  // namespace onyx::kernels
