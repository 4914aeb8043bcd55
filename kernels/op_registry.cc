// The operator registry, filled once in a fixed order.
#include "kernels/op_registry.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace onyx::kernels {

const OpRegistry& OpRegistry::Global() {
  static const OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    RegisterAllOps(*r);
    // A kernel list set twice or for an unknown operator is a defect of this build: say so
    // at once rather than run with a kernel missing.
    for (const std::string& e : r->registration_errors()) {
      std::fprintf(stderr, "onyx: operator registry: %s\n", e.c_str());
      std::abort();
    }
    return r;
  }();
  return *registry;
}

OpDef& OpRegistry::Add(const std::string& domain, const std::string& op_type, int64_t since,
                       int64_t until, InferFn infer, KernelFn reference_fn,
                       const std::string& impl_name) {
  OpDef def;
  def.domain = domain;
  def.op_type = op_type;
  def.since = since;
  def.until = until;
  def.infer = infer;
  std::string name = impl_name.empty() ? op_type + "_ref" : impl_name;
  def.impls.push_back(KernelImpl{name, nullptr,
                                 [reference_fn](const NodeView&, const std::vector<TypeInfo>&)
                                     -> StatusOr<std::unique_ptr<Kernel>> {
                                   return std::unique_ptr<Kernel>(new FunctionKernel(reference_fn));
                                 },
                                 nullptr});
  return AddDef(std::move(def));
}

OpDef& OpRegistry::AddDef(OpDef def) {
  auto& list = ops_[{def.domain, def.op_type}];
  list.push_back(std::make_unique<OpDef>(std::move(def)));
  return *list.back();
}

const OpDef* OpRegistry::Find(const std::string& domain, const std::string& op_type,
                              int64_t opset) const {
  const std::string d = domain == "ai.onnx" ? "" : domain;
  auto it = ops_.find({d, op_type});
  if (it == ops_.end()) return nullptr;
  for (const auto& def : it->second)
    if (opset >= def->since && opset <= def->until) return def.get();
  return nullptr;
}

std::vector<std::pair<int64_t, int64_t>> OpRegistry::Ranges(const std::string& domain,
                                                            const std::string& op_type) const {
  std::vector<std::pair<int64_t, int64_t>> out;
  auto it = ops_.find({domain == "ai.onnx" ? "" : domain, op_type});
  if (it == ops_.end()) return out;
  for (const auto& def : it->second) out.push_back({def->since, def->until});
  std::sort(out.begin(), out.end());
  return out;
}

OpDefs& OpDefs::InPlace(int input) {
  for (OpDef* d : defs_) d->inplace_input = input;
  return *this;
}

OpDefs& OpDefs::Layout(LayoutTrait layout) {
  for (OpDef* d : defs_) d->layout = layout;
  return *this;
}

OpDefs& OpDefs::Activation(const ActivationRule* rule) {
  for (OpDef* d : defs_) d->activation = rule;
  return *this;
}

void OpRegistry::MarkImpls(const std::function<bool(const std::string&, bool)>& invariant) {
  for (auto& [key, defs] : ops_)
    for (auto& def : defs)
      for (size_t i = 0; i < def->impls.size(); ++i)
        def->impls[i].thread_invariant = invariant(def->impls[i].name, i + 1 == def->impls.size());
}

int OpRegistry::RemoveImpls(const std::function<bool(const KernelImpl&)>& drop) {
  int n = 0;
  for (auto& [key, defs] : ops_)
    for (auto& def : defs) {
      std::vector<KernelImpl>& impls = def->impls;
      if (impls.size() < 2) continue;
      const auto last = impls.end() - 1;  // the reference kernel stays
      const auto kept = std::remove_if(impls.begin(), last, drop);
      n += static_cast<int>(last - kept);
      impls.erase(kept, last);
    }
  return n;
}

int OpRegistry::PrependImpl(const std::string& domain, const std::string& op_type, KernelImpl impl,
                            int64_t since, int64_t until) {
  auto it = ops_.find({domain == "ai.onnx" ? "" : domain, op_type});
  if (it == ops_.end()) return 0;
  int n = 0;
  for (auto& def : it->second) {
    if (def->until < since || def->since > until) continue;
    def->impls.insert(def->impls.begin(), impl);
    ++n;
  }
  return n;
}

KernelEntry::KernelEntry(KernelImpl impl)
    : make([impl = std::move(impl)](const OpDef&) { return impl; }) {}

KernelEntry::KernelEntry(std::function<KernelImpl(const OpDef&)> make_impl, int64_t since_opset,
                         int64_t until_opset)
    : make(std::move(make_impl)), since(since_opset), until(until_opset) {}

void OpRegistry::SetKernels(const std::string& domain, const std::string& op_type,
                            std::vector<KernelEntry> list) {
  const std::string where = (domain.empty() ? "ai.onnx" : domain) + " " + op_type;
  auto it = ops_.find({domain == "ai.onnx" ? "" : domain, op_type});
  if (it == ops_.end()) {
    registration_errors_.push_back("kernel list for " + where + ": the operator is not registered");
    return;
  }
  if (!listed_.insert(it->first).second) {
    registration_errors_.push_back("kernel list for " + where + ": set twice");
    return;
  }
  for (auto& def : it->second) {
    std::vector<KernelImpl> fast;
    for (const KernelEntry& e : list) {
      if (e.until < def->since || e.since > def->until) continue;
      fast.push_back(e.make(*def));
    }
    def->impls.insert(def->impls.begin(), fast.begin(), fast.end());
  }
}

std::vector<const OpDef*> OpRegistry::All() const {
  std::vector<const OpDef*> out;
  for (const auto& [key, list] : ops_)
    for (const auto& def : list) out.push_back(def.get());
  return out;
}

OpDefs AddRanges(OpRegistry& r, const char* op, std::initializer_list<int64_t> sinces,
                 InferFn infer, KernelFn fn) {
  std::vector<OpDef*> defs;
  const int64_t* s = sinces.begin();
  for (size_t i = 0; i < sinces.size(); ++i) {
    const int64_t until = i + 1 < sinces.size() ? s[i + 1] - 1 : kLatestOpset;
    defs.push_back(&r.Add("", op, s[i], until, infer, fn));
  }
  return OpDefs(std::move(defs));
}

}  // namespace onyx::kernels
