// `onyx check`: the optimised plan's steps against the reference kernels, step by step on the
// same inputs (docs/check.md).
//
//   auto report = onyx::CheckModel("model.onnx", feeds, {});
//   std::cout << report->ToText();  // one row per step; report->flagged counts the failures
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "onyx/session.h"
#include "onyx/status.h"

namespace onyx {

struct CheckOptions {
  int threads = 0;  // intra-op threads of the optimised run; 0: one per core
  OptimizationLevel optimization = OptimizationLevel::kAll;
  bool winograd = true;  // SessionOptions::winograd
  Limits limits;         // as SessionOptions::limits
};

// One step of the optimised schedule compared with the reference kernels of the model nodes it
// stands for.
struct StepCheck {
  int step = 0;                     // position in the optimised schedule
  std::string name;                 // the step's node name
  std::string op;                   // the step's op type (NhwcConv, FusedMatMul, ...)
  std::string impl;                 // its kernel ("Conv_f32_onednn", "+/winograd" variant)
  std::vector<std::string> nodes;   // the model nodes it stands for ("Conv 'c1'"), or itself
  std::vector<std::string> values;  // the model values compared
  std::string bound_kind;           // "exact" | "magnitude" | "normwise" (check_bounds.h)
  std::string bound;                // the stated bound, e.g. "|d| <= 2*K*u*S, K=577"
  int64_t elements = 0;             // elements compared
  double max_abs = 0;               // max |fast - ref|
  double max_rel = 0;               // max |fast - ref| / |ref| over ref != 0
  int64_t max_ulp = 0;              // max distance in float32 (float64) units in the last place
  double ratio = 0;                 // max over elements of |fast - ref| / bound (1 = at the bound)
  bool compared = false;            // false: see `note`
  bool flagged = false;             // some element above its bound
  std::string note;                 // why a step was not compared, or how it was
};

struct CheckReport {
  std::string model;
  int steps = 0;     // steps in the optimised schedule
  int compared = 0;  // steps compared
  int flagged = 0;   // steps above their bound
  double seconds = 0;
  std::vector<StepCheck> checks;  // in schedule order

  // A table: step, node, op(s), kernel, max abs / rel / ulp, bound, ratio, OK or FLAG.
  std::string ToText(bool all = true) const;
  std::string ToJson() const;
};

// Runs the model once on its optimised plan, keeping every value, then each step's model nodes on
// the reference kernels with the step's inputs as the optimised run made them.
StatusOr<CheckReport> CheckModel(const std::string& path, const NamedValues& feeds,
                                 const CheckOptions& options = {});
StatusOr<CheckReport> CheckModelBytes(const std::string& bytes, const NamedValues& feeds,
                                      const CheckOptions& options = {});

}  // namespace onyx
