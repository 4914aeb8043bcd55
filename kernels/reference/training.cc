// Reference kernels for the ai.onnx.preview.training optimizers (see training.h).
#include "kernels/reference/training.h"

#include <cmath>

#include "kernels/op_helpers.h"

namespace onyx::kernels::reference {
namespace {

double Get(const Tensor& t, int64_t i) {
  return ElementAsDouble(t, i);
}
void Put(Tensor* t, int64_t i, double v) {
  StoreFromDouble(t->dtype(), t->raw_data(), i, v);
}

}  // namespace

void AdagradStep(const AdagradAttrs& a, double r, int64_t t, const Tensor& x, const Tensor& g,
                 const Tensor& h, Tensor* x_new, Tensor* h_new) {
  const double rate = r / (1.0 + static_cast<double>(t) * a.decay_factor);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double xi = Get(x, i);
    const double gr = a.norm_coefficient * xi + Get(g, i);
    const double hn = Get(h, i) + gr * gr;
    Put(h_new, i, hn);
    Put(x_new, i, xi - rate * gr / (std::sqrt(hn) + a.epsilon));
  }
}

void AdamStep(const AdamAttrs& a, double r, int64_t t, const Tensor& x, const Tensor& g,
              const Tensor& v, const Tensor& h, Tensor* x_new, Tensor* v_new, Tensor* h_new) {
  // Bias correction of both moments, skipped on the first step (t = 0).
  const double td = static_cast<double>(t);
  const double rate =
      t > 0 ? r * std::sqrt(1.0 - std::pow(a.beta, td)) / (1.0 - std::pow(a.alpha, td)) : r;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double xi = Get(x, i);
    const double gr = a.norm_coefficient * xi + Get(g, i);
    const double vn = a.alpha * Get(v, i) + (1.0 - a.alpha) * gr;
    const double hn = a.beta * Get(h, i) + (1.0 - a.beta) * gr * gr;
    Put(v_new, i, vn);
    Put(h_new, i, hn);
    const double xn = xi - rate * (vn / (std::sqrt(hn) + a.epsilon));
    Put(x_new, i, (1.0 - a.norm_coefficient_post) * xn);
  }
}

void MomentumStep(const MomentumAttrs& a, double r, int64_t t, const Tensor& x, const Tensor& g,
                  const Tensor& v, Tensor* x_new, Tensor* v_new) {
  // The gradient's coefficient is 1 on the first step.
  const double beta = t > 0 ? a.beta : 1.0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double xi = Get(x, i);
    const double gr = a.norm_coefficient * xi + Get(g, i);
    const double vn = a.alpha * Get(v, i) + beta * gr;
    Put(v_new, i, vn);
    Put(x_new, i, a.nesterov ? xi - r * (gr + a.alpha * vn) : xi - r * vn);
  }
}

}  // namespace onyx::kernels::reference
