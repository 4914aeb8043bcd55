#include "kernels/common/recurrent_weights.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "kernels/common/fast_kernel.h"
#include "kernels/op_helpers.h"

namespace onyx::kernels::common {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

StatusOr<RecurrentWeights> ReadRecurrentWeights(const NodeView& node,
                                                const std::vector<TypeInfo>& types,
                                                const KernelCreateInfo& info, int64_t gates) {
  const auto constant = [&](int i) -> const Tensor* {
    return i < static_cast<int>(info.constants.size()) ? info.constants[i] : nullptr;
  };
  RecurrentWeights rw;
  rw.w = constant(kRecurrentW);
  rw.r = constant(kRecurrentR);
  const bool has_b = Present(types, kRecurrentB);
  rw.b = has_b ? constant(kRecurrentB) : nullptr;
  if (!rw.w || !rw.r || (has_b && !rw.b)) return node.NotSupported("needs constant W, R and B");
  const Tensor *w = rw.w, *r = rw.r, *b = rw.b;
  if (w->dtype() != DType::kFloat || r->dtype() != DType::kFloat || w->rank() != 3 ||
      r->rank() != 3 || (b && (b->dtype() != DType::kFloat || b->rank() != 2)))
    return node.NotSupported("needs float32 W [D, ", gates, "H, I], R [D, ", gates, "H, H], B [D, ",
                             2 * gates, "H]");
  rw.dirs = w->dim(0);
  rw.hidden = r->dim(2);
  rw.input = w->dim(2);
  const int64_t g = gates * rw.hidden;
  if (rw.dirs != r->dim(0) || w->dim(1) != g || r->dim(1) != g || rw.hidden < 1 || rw.input < 1 ||
      (b && (b->dim(0) != rw.dirs || b->dim(1) != 2 * g)))
    return node.NotSupported("W, R and B shapes do not agree");
  const std::string direction = node.attr_string("direction", "forward");
  if ((direction == "bidirectional") != (rw.dirs == 2) || rw.dirs > 2)
    return node.NotSupported("direction does not match W");
  rw.reverse = direction == "reverse";
  rw.w_shape = w->shape();
  rw.r_shape = r->shape();
  return rw;
}

bool RunsAsPlanned(const KernelContext& ctx, const RecurrentWeights& rw, int time_axis,
                   std::initializer_list<int> states, const Shape& state_shape) {
  const Tensor& x = ctx.input(kRecurrentX);
  if (x.dtype() != DType::kFloat || x.rank() != 3 || x.dim(time_axis) == 0 ||
      x.dim(2) != rw.input || ctx.input(kRecurrentW).shape() != rw.w_shape ||
      ctx.input(kRecurrentR).shape() != rw.r_shape)
    return false;
  for (int i : states) {
    if (i >= ctx.num_inputs() || !ctx.has_input(i)) continue;
    if (ctx.input(i).dtype() != DType::kFloat || ctx.input(i).shape() != state_shape) return false;
  }
  return true;
}

std::optional<RecurrentRun> BeginRecurrentRun(KernelContext& ctx, const RecurrentWeights& rw) {
  const Tensor& x = ctx.input(kRecurrentX);
  RecurrentRun run;
  run.s_len = x.rank() == 3 ? x.dim(0) : 0;
  run.batch = x.rank() == 3 ? x.dim(1) : 0;
  const Shape state_shape = {rw.dirs, run.batch, rw.hidden};
  const bool seq_lens = ctx.num_inputs() > kRecurrentSeqLens && ctx.has_input(kRecurrentSeqLens);
  if (seq_lens || !RunsAsPlanned(ctx, rw, 0, {kRecurrentInitialH}, state_shape))
    return std::nullopt;
  if (ctx.num_outputs() > 0 && ctx.has_output(0))
    run.y = ctx.Output(0, DType::kFloat, {run.s_len, rw.dirs, run.batch, rw.hidden});
  if (ctx.num_outputs() > 1 && ctx.has_output(1))
    run.y_h = ctx.Output(1, DType::kFloat, state_shape);
  return run;
}

void InitialHidden(const KernelContext& ctx, int64_t d, int64_t batch, int64_t hidden, float* hs) {
  const size_t n = static_cast<size_t>(batch * hidden);
  if (ctx.num_inputs() > kRecurrentInitialH && ctx.has_input(kRecurrentInitialH)) {
    std::memcpy(hs, ctx.input(kRecurrentInitialH).data<float>() + d * batch * hidden,
                n * sizeof(float));
  } else {
    std::fill(hs, hs + n, 0.f);
  }
}

Status RecurrentSupports(const NodeView& node, const std::vector<TypeInfo>& types,
                         const std::vector<std::string>& defaults, bool layout1) {
  if (!RequireInputType(types, kRecurrentX, DType::kFloat).ok())
    return node.NotSupported("needs float32 X");
  const int64_t layout = node.attr_int("layout", 0);
  if (layout != 0 && !(layout1 && layout == 1)) return node.NotSupported("layout ", layout);
  if (node.has_attr("clip")) return node.NotSupported("clip");
  if (node.has_attr("activation_alpha") || node.has_attr("activation_beta"))
    return node.NotSupported("activation parameters");
  const std::vector<std::string> acts = node.attr_strings("activations", {});
  if (acts.size() % defaults.size() != 0)
    return node.NotSupported("activations not in groups of ", defaults.size());
  for (size_t i = 0; i < acts.size(); ++i)
    if (Lower(acts[i]) != Lower(defaults[i % defaults.size()]))
      return node.NotSupported("activations other than the defaults");
  return Status::Ok();
}

}  // namespace onyx::kernels::common
