// Einsum: general Einstein summation with repeated indices (diagonals), ellipsis broadcasting and
// implicit output (the numpy.einsum rules, which ONNX adopts).
//
// Each distinct label, and each ellipsis dim, becomes an axis of one iteration space. An input's
// stride along an axis is the sum of its strides over every position the label occupies (so a
// repeated label walks the diagonal) and 0 where the input lacks the axis or broadcasts it. The
// output axes are iterated in output order; the remaining axes are summed.
// Two float operands that reduce to a batched matrix product take the GEMM path instead.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/element_types.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/gemm_core.h"
#include "kernels/reference/matmul.h"

namespace onyx::kernels {
namespace {

std::string Trim(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != ' ' && c != '\t') out += c;
  return out;
}

bool IsLabel(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// One operand term: its labels in order, with kEllipsis standing for the ellipsis dims.
constexpr int kEllipsis = -1;
struct Term {
  std::vector<int> labels;  // label char codes, or kEllipsis once
  bool has_ellipsis = false;
};

StatusOr<Term> ParseTerm(const std::string& s) {
  Term t;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '.') {
      if (t.has_ellipsis || s.compare(i, 3, "...") != 0) {
        return InvalidModel("term '", s, "' has a malformed or repeated ellipsis");
      }
      t.has_ellipsis = true;
      t.labels.push_back(kEllipsis);
      i += 2;
    } else if (IsLabel(s[i])) {
      t.labels.push_back(s[i]);
    } else {
      return InvalidModel("term '", s, "' has the character '", s[i], "'; expected letters or ...");
    }
  }
  return t;
}

}  // namespace

StatusOr<EinsumPlan> PlanEinsum(const std::string& equation, const std::vector<Shape>& shapes) {
  const std::string eq = Trim(equation);
  const size_t arrow = eq.find("->");
  const std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
  std::vector<Term> terms;
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    ONYX_ASSIGN_OR_RETURN(Term t, ParseTerm(lhs.substr(start, comma - start)));
    terms.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != shapes.size()) {
    return InvalidModel("equation '", equation, "' has ", terms.size(),
                        " operand terms but the node has ", shapes.size(), " inputs");
  }
  // Ellipsis rank: the widest ellipsis over all operands, numpy-broadcast from the right.
  int64_t ell_rank = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const int64_t letters =
        static_cast<int64_t>(terms[i].labels.size()) - (terms[i].has_ellipsis ? 1 : 0);
    const int64_t rank = static_cast<int64_t>(shapes[i].size());
    if (terms[i].has_ellipsis ? rank < letters : rank != letters) {
      return InvalidModel("input ", i, " has shape ", ShapeToString(shapes[i]),
                          " but its term in '", equation, "' has ", letters, " labels");
    }
    if (terms[i].has_ellipsis) ell_rank = std::max(ell_rank, rank - letters);
  }
  EinsumPlan plan;
  // Axes: ellipsis dims first (ids 0..ell_rank-1), then letters in order of appearance.
  std::map<int, int> axis_of;  // letter -> axis
  std::vector<int> letter_count(128, 0);
  plan.sizes.assign(static_cast<size_t>(ell_rank), 1);
  for (const Term& t : terms) {
    for (int l : t.labels) {
      if (l == kEllipsis) continue;
      ++letter_count[l];
      if (!axis_of.count(l)) {
        axis_of[l] = static_cast<int>(plan.sizes.size());
        plan.sizes.push_back(-1);
      }
    }
  }
  const size_t axes = plan.sizes.size();
  plan.strides.assign(terms.size(), std::vector<int64_t>(axes, 0));
  for (size_t i = 0; i < terms.size(); ++i) {
    const Shape& shape = shapes[i];
    const std::vector<int64_t> st = ContiguousStrides(shape);
    const int64_t letters =
        static_cast<int64_t>(terms[i].labels.size()) - (terms[i].has_ellipsis ? 1 : 0);
    const int64_t own_ell = static_cast<int64_t>(shape.size()) - letters;
    size_t dim = 0;
    for (int l : terms[i].labels) {
      if (l == kEllipsis) {
        for (int64_t e = 0; e < own_ell; ++e, ++dim) {
          const size_t axis = static_cast<size_t>(ell_rank - own_ell + e);
          if (shape[dim] == 1) continue;  // broadcast: stride stays 0
          if (plan.sizes[axis] != 1 && plan.sizes[axis] != shape[dim]) {
            return InvalidModel("ellipsis dims of input ", i, " ", ShapeToString(shape),
                                " do not broadcast with the other operands");
          }
          plan.sizes[axis] = shape[dim];
          plan.strides[i][axis] += st[dim];
        }
        continue;
      }
      const size_t axis = static_cast<size_t>(axis_of[l]);
      if (plan.sizes[axis] >= 0 && plan.sizes[axis] != shape[dim]) {
        return InvalidModel("label '", static_cast<char>(l), "' has size ", plan.sizes[axis],
                            " elsewhere but ", shape[dim], " in input ", i, " ",
                            ShapeToString(shape));
      }
      plan.sizes[axis] = shape[dim];
      plan.strides[i][axis] += st[dim];
      ++dim;
    }
  }
  // Output axes.
  if (arrow == std::string::npos) {
    // Implicit: ellipsis dims, then the letters used exactly once, alphabetically (upper case
    // sorts first, as in numpy).
    for (int64_t e = 0; e < ell_rank; ++e) plan.output_axes.push_back(static_cast<int>(e));
    for (const auto& [l, axis] : axis_of)
      if (letter_count[l] == 1) plan.output_axes.push_back(axis);
  } else {
    ONYX_ASSIGN_OR_RETURN(Term out, ParseTerm(eq.substr(arrow + 2)));
    std::vector<bool> seen(128, false);
    for (int l : out.labels) {
      if (l == kEllipsis) {
        for (int64_t e = 0; e < ell_rank; ++e) plan.output_axes.push_back(static_cast<int>(e));
        continue;
      }
      if (!axis_of.count(l)) {
        return InvalidModel("output label '", static_cast<char>(l), "' of '", equation,
                            "' appears in no input");
      }
      if (seen[l]) {
        return InvalidModel("output label '", static_cast<char>(l), "' repeats in '", equation,
                            "'");
      }
      seen[l] = true;
      plan.output_axes.push_back(axis_of[l]);
    }
  }
  std::vector<bool> is_out(axes, false);
  for (int a : plan.output_axes) is_out[a] = true;
  for (size_t a = 0; a < axes; ++a)
    if (!is_out[a]) plan.sum_axes.push_back(static_cast<int>(a));
  for (int a : plan.output_axes) plan.output_shape.push_back(plan.sizes[a]);
  return plan;
}

namespace {

// The generic evaluation: out[o] = sum over the summed axes of the product of the operands.
template <typename T, typename Acc>
void EinsumGeneric(const EinsumPlan& plan, const std::vector<const T*>& inputs, T* out) {
  const size_t n_in = inputs.size();
  const size_t n_out = plan.output_axes.size();
  const size_t n_sum = plan.sum_axes.size();
  int64_t sum_count = 1;
  for (int a : plan.sum_axes) sum_count *= plan.sizes[a];
  const int64_t out_count = ShapeElementCount(plan.output_shape);
  std::vector<int64_t> oidx(n_out, 0), sidx(n_sum, 0);
  std::vector<int64_t> base(n_in, 0), off(n_in, 0);
  for (int64_t o = 0; o < out_count; ++o) {
    Acc sum = 0;
    off = base;
    std::fill(sidx.begin(), sidx.end(), 0);
    for (int64_t s = 0; s < sum_count; ++s) {
      Acc prod = 1;
      for (size_t i = 0; i < n_in; ++i) prod *= static_cast<Acc>(inputs[i][off[i]]);
      sum += prod;
      for (size_t d = n_sum; d-- > 0;) {  // next summed position
        const int a = plan.sum_axes[d];
        for (size_t i = 0; i < n_in; ++i) off[i] += plan.strides[i][a];
        if (++sidx[d] < plan.sizes[a]) break;
        for (size_t i = 0; i < n_in; ++i) off[i] -= plan.strides[i][a] * plan.sizes[a];
        sidx[d] = 0;
      }
    }
    out[o] = static_cast<T>(sum);
    for (size_t d = n_out; d-- > 0;) {  // next output position
      const int a = plan.output_axes[d];
      for (size_t i = 0; i < n_in; ++i) base[i] += plan.strides[i][a];
      if (++oidx[d] < plan.sizes[a]) break;
      for (size_t i = 0; i < n_in; ++i) base[i] -= plan.strides[i][a] * plan.sizes[a];
      oidx[d] = 0;
    }
  }
}

// Two operands as a batched GEMM: out[b, m, n] = sum_k A[b, m, k] * B[b, k, n], when every axis is
// one of batch (both inputs and output), m (A and output), n (B and output) or k (both inputs,
// summed), and the output is ordered batch..., m..., n... . Each group may span several axes, as
// long as a single stride describes it on every operand (checked by MakeGroup).
struct GemmGroups {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  // element strides of one step in the group's flattened index, per operand (0 = absent)
  int64_t a_batch = 0, b_batch = 0, a_m = 0, b_n = 0, a_k = 0, b_k = 0;
};

// Flattens `axes` (in order) into one index; false when the operand strides do not allow it.
bool MakeGroup(const EinsumPlan& p, const std::vector<int>& axes, int operand, int64_t* size,
               int64_t* stride) {
  *size = 1;
  *stride = 0;
  int64_t expected = -1;
  for (size_t j = axes.size(); j-- > 0;) {
    const int a = axes[j];
    const int64_t s = p.strides[operand][a];
    if (p.sizes[a] == 1) continue;
    if (expected >= 0 && s != expected) return false;
    if (expected < 0) *stride = s;
    *size *= p.sizes[a];
    expected = s * p.sizes[a];
  }
  return true;
}

bool PlanAsGemm(const EinsumPlan& p, GemmGroups* g) {
  if (p.strides.size() != 2) return false;
  std::vector<int> batch, m, n, k;
  std::vector<bool> is_out(p.sizes.size(), false);
  for (int a : p.output_axes) is_out[a] = true;
  for (size_t a = 0; a < p.sizes.size(); ++a) {
    const bool in_a = p.strides[0][a] != 0 || p.sizes[a] == 1;
    const bool in_b = p.strides[1][a] != 0 || p.sizes[a] == 1;
    if (p.sizes[a] == 1) continue;  // size-1 axes fit any group
    if (!in_a || !in_b) {
      if (!is_out[a]) return false;  // summed over one operand only: not a GEMM
    }
  }
  // Output order must be batch, m, n.
  int phase = 0;
  for (int a : p.output_axes) {
    if (p.sizes[a] == 1) continue;
    const bool in_a = p.strides[0][a] != 0, in_b = p.strides[1][a] != 0;
    const int kind = in_a && in_b ? 0 : (in_a ? 1 : 2);
    if (kind < phase) return false;
    phase = kind;
    (kind == 0 ? batch : kind == 1 ? m : n).push_back(a);
  }
  for (int a : p.sum_axes)
    if (p.sizes[a] != 1) k.push_back(a);
  int64_t s0, s1;
  if (!MakeGroup(p, batch, 0, &g->batch, &g->a_batch) || !MakeGroup(p, batch, 1, &s0, &g->b_batch))
    return false;
  if (!MakeGroup(p, m, 0, &g->m, &g->a_m) || !MakeGroup(p, n, 1, &g->n, &g->b_n)) return false;
  if (!MakeGroup(p, k, 0, &g->k, &g->a_k) || !MakeGroup(p, k, 1, &s1, &g->b_k)) return false;
  return true;
}

// A rows x cols matrix with element (r, c) at r * row_stride + c * col_stride, as the GEMM's
// (trans, leading dimension) pair; false when neither dim has unit stride.
bool MatrixLayout(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride, bool* trans,
                  int64_t* ld) {
  if (cols == 1 || col_stride == 1) {  // row-major: (r, c) at r * ld + c
    *trans = false;
    *ld = rows == 1 ? cols : row_stride;
    return true;
  }
  if (rows == 1 || row_stride == 1) {  // column-major: (r, c) at c * ld + r
    *trans = true;
    *ld = col_stride;
    return true;
  }
  return false;
}

template <typename T>
void EinsumGemm(const GemmGroups& g, bool trans_a, int64_t lda, bool trans_b, int64_t ldb,
                const T* a, const T* b, T* out) {
  tbb::parallel_for(int64_t{0}, g.batch, [&](int64_t i) {
    Gemm<T>(trans_a, trans_b, g.m, g.n, g.k, T(1), a + i * g.a_batch, lda, b + i * g.b_batch, ldb,
            T(0), out + i * g.m * g.n, g.n);
  });
}

}  // namespace

Status EinsumKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(std::string equation, node.RequiredString("equation"));
  std::vector<Shape> shapes;
  const DType t = ctx.input(0).dtype();
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.input(i).dtype() != t) {
      return node.Invalid("input ", i, " '", node.node().inputs[i], "' has type ",
                          DTypeName(ctx.input(i).dtype()), "; expected ", DTypeName(t),
                          " like input 0");
    }
    shapes.push_back(ctx.input(i).shape());
  }
  auto planned = PlanEinsum(equation, shapes);
  if (!planned.ok()) return node.Invalid(planned.status().message());
  const EinsumPlan& plan = planned.value();
  Tensor y = ctx.Output(0, t, plan.output_shape);
  GemmGroups groups;
  bool trans_a = false, trans_b = false;
  int64_t lda = 0, ldb = 0;
  const bool as_gemm = (t == DType::kFloat || t == DType::kDouble) && PlanAsGemm(plan, &groups) &&
                       MatrixLayout(groups.m, groups.k, groups.a_m, groups.a_k, &trans_a, &lda) &&
                       MatrixLayout(groups.k, groups.n, groups.b_k, groups.b_n, &trans_b, &ldb);
  const bool ok = VisitNumeric(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<const T*> inputs;
    for (int i = 0; i < ctx.num_inputs(); ++i) inputs.push_back(ctx.input(i).data<T>());
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (as_gemm) {
        EinsumGemm<T>(groups, trans_a, lda, trans_b, ldb, inputs[0], inputs[1], y.data<T>());
        return;
      }
    }
    using Acc =
        std::conditional_t<std::is_integral_v<T>,
                           std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>, double>;
    EinsumGeneric<T, Acc>(plan, inputs, y.data<T>());
  });
  if (!ok)
    return node.NotSupported("input 0 '", node.node().inputs[0], "' has type ", DTypeName(t));
  return Status::Ok();
}

}  // namespace onyx::kernels
