// The planner: for one graph and concrete (or declared) input types, runs shape inference and
// constant folding in schedule order, picks kernels, computes liveness and the arena layout.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "onyx/limits.h"
#include "planner/constant_pool.h"
#include "planner/execution_plan.h"

namespace onyx::kernels {
class WeightCache;
}

namespace onyx::planner {

enum class OptLevel { kNone = 0, kBasic = 1, kAll = 2 };

struct PlanOptions {
  OptLevel optimization = OptLevel::kAll;  // none: no folding; basic/all: fold constants
  bool use_arena = true;                   // false for subgraphs: every value on the heap
  bool infer_only = false;                 // stop after inference (no kernels, no arena)
  bool reference_kernels = false;          // only the reference kernel of each op (testing)
  int threads = 1;                         // intra-op threads the kernels will run with
  bool winograd = true;                    // 3x3 convolutions may use Winograd's algorithm
  bool bf16 = false;                       // bfloat16 operands in convolutions and products
  bool sparse_kernels = true;              // block-sparse kernels for pruned constant weights
  // Deterministic mode: only impls with KernelImpl::thread_invariant, created with
  // KernelCreateInfo::deterministic (SessionOptions::deterministic).
  bool deterministic = false;
  // Impls whose KernelIsa::RunsAt() is above this are skipped (Session: SessionIsaCap).
  kernels::IsaLevel max_isa = kernels::ProcessIsaCap();
  // After kernel creation, constants that every reader holds in a packed copy of its own
  // (Kernel::packed_input) keep their shape but drop their values. Only for a plan that is never
  // rebuilt, so the graph's weights can be released as well (Session does this).
  bool release_packed_constants = false;
  // Testing only: != 0 shuffles the fusion pass's rule list with this seed; the plan must come
  // out identical (tests/planner/fusion_order_test.cc).
  uint64_t fusion_rule_seed = 0;
  // Ceilings checked at plan time: max_tensor_bytes on every value whose shape is known,
  // max_arena_bytes on the arena. 0 means no ceiling (Session passes its resolved limits).
  Limits limits;
  // Sharing across a session's shape specialisations (DESIGN contract 3); each may be null.
  kernels::WeightCache* weights = nullptr;  // packed weights, by source buffer and layout
  ConstantPool* constant_pool = nullptr;    // constants the fusion pass derives from weights
  // Values of node outputs that do not depend on the input shapes, folded once by the session's
  // plan for the declared types: a node whose outputs are all here is neither inferred nor
  // folded again, and its outputs keep one buffer across plans.
  const std::map<std::string, Value>* precomputed = nullptr;
  // For subgraphs: values of enclosing-scope names known when the enclosing graph was planned (its
  // initializers and folded constants). The subgraph reads them as constants of its own, so it
  // folds over them and its kernels pack them (an If branch's convolutions and LSTMs on the main
  // graph's weights, as in Silero VAD), instead of treating them as run-time values.
  const std::map<std::string, Value>* outer_constants = nullptr;
};

// `input_types`: types of the graph inputs the caller feeds (concrete shapes for a run plan,
// declared ones for the creation-time check). Graph inputs not listed use their initializer as
// a constant (IR < 4 defaults) or their declared type. `outer_types`: names visible from
// enclosing scopes (for subgraphs).
StatusOr<std::unique_ptr<ExecutionPlan>> BuildPlan(
    const ir::Graph& graph, const std::map<std::string, TypeInfo>& input_types,
    const std::map<std::string, TypeInfo>& outer_types, const PlanOptions& options);

// Every node of the graph and its subgraphs whose (domain, op, opset) has no registered OpDef,
// as one error listing them all; Ok when everything is implemented.
Status CheckOperatorsSupported(const ir::Graph& graph);

// Makes dense initializers of the sparse ones (in `graph` and its subgraphs) that no reader can
// take in COO form (no kernel of a reading op sets KernelImpl::reads_sparse_constants), one at a
// time, freeing each COO form: then the plan holds one copy of such a weight, not two. Sparse
// initializers that nothing reads stay COO and are never densified.
void DensifySparseInitializers(ir::Graph& graph);

}  // namespace onyx::planner
