// The canonical rule list: every family, in a fixed order (which the result does not depend on).
#include "planner/fusion/rules.h"

namespace onyx::planner::fusion {

std::vector<Rule> AllRules() {
  std::vector<Rule> rules;
  AddCleanupRules(rules);
  AddShapeRules(rules);
  AddConvRules(rules);
  AddMatMulRules(rules);
  AddAffineRules(rules);
  AddNormalizationRules(rules);
  AddAttentionRules(rules);
  AddQuantizationRules(rules);
  return rules;
}

}  // namespace onyx::planner::fusion
