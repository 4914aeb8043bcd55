// The enumerated kernel test: every registered non-reference impl of every operator definition
// runs on every grid case (kernel_grid.h) it accepts, against the definition's reference impl (its
// last), compared with the operator's named tolerance: with its constants as plan-time
// initializers on one thread; on two threads, with output 0 written over the input the definition
// allows (in place) where it allows one; and with the constants seen only at run time. An impl no
// grid case reaches fails the test. Registered once per ONYX_ISA level (tests/CMakeLists.txt):
// impls that run above the process's cap are not run, and a level this CPU lacks skips the whole
// test.
#include "tests/kernels/kernel_grid.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/op_registry.h"
#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {
namespace {

using kernels::OpDef;

// The opset a case runs at against `def`, or -1 when their ranges do not overlap.
int64_t OpsetFor(const GridCase& c, const OpDef& def) {
  const int64_t lo = std::max(c.min_opset, def.since);
  const int64_t hi = std::min(c.max_opset, def.until);
  return lo <= hi ? lo : -1;
}

std::string DefName(const OpDef& def) {
  return (def.domain.empty() ? "" : def.domain + ".") + def.op_type + "-" +
         std::to_string(def.since);
}

// Definitions that have at least one non-reference impl.
std::vector<const OpDef*> DefsWithFastImpls() {
  std::vector<const OpDef*> defs;
  for (const OpDef* def : kernels::OpRegistry::Global().All())
    if (def->impls.size() > 1) defs.push_back(def);
  return defs;
}

// Grid cases of `def`'s operator, each with the opset it runs at.
std::vector<std::pair<const GridCase*, int64_t>> CasesOf(const OpDef& def) {
  std::vector<std::pair<const GridCase*, int64_t>> cases;
  for (const GridCase& c : KernelGrid()) {
    if (c.domain != def.domain || c.op != def.op_type) continue;
    const int64_t opset = OpsetFor(c, def);
    if (opset >= 0) cases.push_back({&c, opset});
  }
  return cases;
}

// Skips the test when ONYX_ISA names a level this CPU lacks (its ctest entry on a smaller CPU).
bool IsaCapUsable(std::string* why) {
  const auto cap = kernels::EnvIsaCap();
  if (!cap.ok()) *why = cap.status().message();
  return cap.ok();
}

// What the coverage check found over a set of definitions.
struct Coverage {
  int pairs = 0;     // (definition, fast impl) pairs checked
  int covered = 0;   // of which some grid case reaches the impl
  int not_here = 0;  // pairs left out: the impl needs an ISA above this CPU's
  std::set<std::string> impl_names;
  std::vector<std::string> uncovered;                       // one message per pair no case reaches
  std::vector<const kernels::KernelImpl*> uncovered_impls;  // the impl of each
};

// For each non-reference impl of each definition: whether some grid case of its operator, at an
// opset of its range, is taken by it (`supports` accepts it and creation does not decline it).
Coverage CheckCoverage(const std::vector<const OpDef*>& defs) {
  Coverage cov;
  for (const OpDef* def : defs) {
    const auto cases = CasesOf(*def);
    for (size_t k = 0; k + 1 < def->impls.size(); ++k) {
      const kernels::KernelImpl& impl = def->impls[k];
      if (!kernels::IsaAtMost(impl.isa.min, kernels::MachineIsa())) {
        ++cov.not_here;
        continue;
      }
      ++cov.pairs;
      cov.impl_names.insert(impl.name);
      std::string reasons;
      bool taken = false;
      for (const auto& [c, opset] : cases) {
        RunOptions o;
        o.constant_inputs = ConstantInputsOf(*c);
        PreparedImpl p(impl, SpecOf(*c, opset), InputsOf(*c, 1), o);
        if (!p.declined()) {
          taken = true;
          break;
        }
        if (reasons.size() < 2000) reasons += "\n    " + c->name + ": " + p.status().message();
      }
      if (taken) {
        ++cov.covered;
        continue;
      }
      cov.uncovered_impls.push_back(&impl);
      cov.uncovered.push_back("registered kernel " + impl.name + " (" + DefName(*def) +
                              ") has no grid case" +
                              (cases.empty() ? " (the grid has no case for this operator and opset)"
                                             : ": every case was declined:" + reasons));
    }
  }
  return cov;
}

TEST(KernelGrid, EveryRegisteredKernelHasACase) {
  std::string why;
  if (!IsaCapUsable(&why)) GTEST_SKIP() << why;
  // Under a cap below the machine's an impl may decline every node for the cap's sake (oneDNN's
  // int8 kernels below VNNI, its global pooling below AVX-512): coverage is judged uncapped,
  // and only for impls this CPU can run at all.
  const bool uncapped = kernels::ProcessIsaCap() == kernels::MachineIsa();
  const Coverage cov = CheckCoverage(DefsWithFastImpls());
  for (size_t i = 0; i < cov.uncovered.size(); ++i) {
    const std::string& m = cov.uncovered[i];
    if (uncapped)
      ADD_FAILURE() << m;
    else if (kernels::IsaAtMost(cov.uncovered_impls[i]->isa.RunsAt(), kernels::ProcessIsaCap()))
      std::printf("[grid] under ONYX_ISA=%s: %s\n", kernels::IsaName(kernels::ProcessIsaCap()),
                  m.substr(0, m.find(':')).c_str());
  }
  std::printf(
      "[grid] coverage: %d of %d (definition, fast impl) pairs, %zu impl names, %zu cases; %d "
      "pairs need a CPU above this one\n",
      cov.covered, cov.pairs, cov.impl_names.size(), KernelGrid().size(), cov.not_here);
}

// The check itself: an impl that declines every case, and one of an operator the grid lacks, are
// named; one that takes a case is not (definitions built here, outside the registry).
TEST(KernelGrid, CoverageCheckNamesAnImplWithoutCases) {
  const OpDef* relu = kernels::OpRegistry::Global().Find("", "Relu", 14);
  ASSERT_NE(relu, nullptr);
  OpDef def = *relu;
  kernels::KernelImpl declines;
  declines.name = "Relu_f32_declines_all";
  declines.supports = [](const kernels::NodeView& node, const std::vector<TypeInfo>&) {
    return node.NotSupported("declines everything");
  };
  declines.create = relu->impls.back().create;
  kernels::KernelImpl takes = declines;
  takes.name = "Relu_f32_takes_all";
  takes.supports = nullptr;
  def.impls = {declines, takes, relu->impls.back()};
  OpDef unknown = def;
  unknown.domain = "com.onyx";
  unknown.op_type = "NoGridCases";
  unknown.impls = {takes, relu->impls.back()};
  const Coverage cov = CheckCoverage({&def, &unknown});
  EXPECT_EQ(cov.pairs, 3);
  EXPECT_EQ(cov.covered, 1);
  ASSERT_EQ(cov.uncovered.size(), 2u);
  EXPECT_NE(cov.uncovered[0].find("registered kernel Relu_f32_declines_all (Relu-"),
            std::string::npos)
      << cov.uncovered[0];
  EXPECT_NE(cov.uncovered[0].find("declines everything"), std::string::npos) << cov.uncovered[0];
  EXPECT_NE(cov.uncovered[1].find("the grid has no case for this operator"), std::string::npos)
      << cov.uncovered[1];
}

constexpr int kScale = 16;

TEST(KernelGrid, FastKernelsMatchTheReference) {
  std::string why;
  if (!IsaCapUsable(&why)) GTEST_SKIP() << why;
  const kernels::IsaLevel cap = kernels::ProcessIsaCap();
  const auto start = std::chrono::steady_clock::now();
  int comparisons = 0, above_cap = 0, runs_declined = 0;
  std::set<std::string> impls_run;
  std::set<const GridCase*> cases_run;
  for (const OpDef* def : DefsWithFastImpls()) {
    const kernels::KernelImpl& ref_impl = def->impls.back();
    for (const auto& [case_ptr, case_opset] : CasesOf(*def)) {
      // Cases that mark a dimension also run 16 times larger on 4 threads: the kernels' threaded
      // splits start above sizes the small cases reach.
      const GridCase* c = case_ptr;
      const int64_t opset = case_opset;
      for (int scale : {1, kScale}) {
        if (scale > 1 && c->scale_dim < 0) continue;
        const NodeSpec spec = SpecOf(*c, opset);
        const std::vector<Tensor> inputs = InputsOf(*c, 1, scale);
        const std::vector<int> constants = ConstantInputsOf(*c);
        const std::string what = DefName(*def) + " case " + c->name +
                                 (scale > 1 ? " x" + std::to_string(scale) : "") + " (opset " +
                                 std::to_string(opset) + ")";
        RunOptions ref_options;
        ref_options.constant_inputs = constants;
        const RunResult ref = RunImpl(ref_impl, spec, inputs, ref_options);
        if (!ref.status.ok()) {
          ADD_FAILURE() << "grid case " << what << " is invalid: the reference impl "
                        << ref_impl.name << " fails: " << ref.status.message();
          continue;
        }
        const Tolerance tol = ToleranceFor(def->domain, def->op_type);
        for (size_t k = 0; k + 1 < def->impls.size(); ++k) {
          const kernels::KernelImpl& impl = def->impls[k];
          if (!kernels::IsaAtMost(impl.isa.RunsAt(), cap)) {
            ++above_cap;
            continue;
          }
          struct Variant {
            const char* name;
            int threads;
            int over;        // output 0 written over this input; -1: a fresh buffer
            bool constants;  // the case's constant inputs handed to the kernel at creation
          };
          // The first variant decides whether the impl takes the case; a later one it declines
          // (e.g. weights it packs only when they are constant) is left out.
          const bool in_place = def->inplace_input >= 0 &&
                                def->inplace_input < static_cast<int>(inputs.size()) &&
                                inputs[def->inplace_input].defined();
          std::vector<Variant> variants = {{"", 1, -1, true}};
          if (scale > 1) {
            variants = {{" on 4 threads", 4, -1, true}};
            if (in_place) variants.push_back({" in place, 4 threads", 4, def->inplace_input, true});
          } else if (in_place) {
            variants.push_back({" in place, 2 threads", 2, def->inplace_input, true});
          } else {
            variants.push_back({" 2 threads", 2, -1, true});
          }
          if (scale == 1 && !constants.empty() && impl.create_with_info)
            variants.push_back({" constants seen at run time", 1, -1, false});
          for (size_t vi = 0; vi < variants.size(); ++vi) {
            const Variant& v = variants[vi];
            RunOptions o;
            o.threads = v.threads;
            o.output_over_input = v.over;
            if (v.constants) o.constant_inputs = constants;
            const RunResult got = RunImpl(impl, spec, inputs, o);
            if (got.declined) {
              if (vi == 0) {
                ++runs_declined;
                break;
              }
              continue;
            }
            impls_run.insert(impl.name);
            cases_run.insert(c);
            ++comparisons;
            if (!got.status.ok()) {
              ADD_FAILURE() << impl.name << " on " << what << v.name
                            << " fails: " << got.status.message();
              continue;
            }
            const std::string diff = CompareOutputs(got.outputs, ref.outputs, tol);
            EXPECT_EQ(diff, "") << impl.name << (got.variant.empty() ? "" : "/" + got.variant)
                                << " on " << what << v.name << " vs " << ref_impl.name;
          }
        }
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "[grid] ONYX_ISA cap %s: %zu impls run on %zu cases, %d comparisons; %d runs of impls "
      "above the cap skipped, %d (impl, case) pairs declined; %.2f s\n",
      kernels::IsaName(cap), impls_run.size(), cases_run.size(), comparisons, above_cap,
      runs_declined, seconds);
}

// Every case name is unique within its operator (failure messages and benchmarks name them).
TEST(KernelGrid, CaseNamesAreUnique) {
  std::set<std::string> seen;
  for (const GridCase& c : KernelGrid())
    EXPECT_TRUE(seen.insert(c.domain + "." + c.op + "/" + c.name).second)
        << c.op << " case " << c.name << " is listed twice";
}

}  // namespace
}  // namespace onyx::testing
