// Reference kernels for the ai.onnx.preview.training optimizers: Adagrad, Adam and Momentum
// (opset 1). Each updates one tensor X with its gradient G and optimizer state, elementwise.
#pragma once

#include <cstdint>

#include "onyx/tensor.h"

namespace onyx::kernels::reference {

struct AdagradAttrs {
  double decay_factor = 0;
  double epsilon = 1e-6;
  double norm_coefficient = 0;
};

// r' = r / (1 + t * decay_factor); g' = norm_coefficient * x + g; h_new = h + g'^2;
// x_new = x - r' * g' / (sqrt(h_new) + epsilon). Tensors share one float/double dtype and shape
// (x_new and h_new allocated by the caller); computed in double.
void AdagradStep(const AdagradAttrs& a, double r, int64_t t, const Tensor& x, const Tensor& g,
                 const Tensor& h, Tensor* x_new, Tensor* h_new);

struct AdamAttrs {
  double alpha = 0.9;
  double beta = 0.999;
  double epsilon = 1e-6;
  double norm_coefficient = 0;
  double norm_coefficient_post = 0;
};

// g' = norm_coefficient * x + g; v_new = alpha * v + (1 - alpha) * g';
// h_new = beta * h + (1 - beta) * g'^2; r' = r * sqrt(1 - beta^t) / (1 - alpha^t) when t > 0;
// x_new = (1 - norm_coefficient_post) * (x - r' * v_new / (sqrt(h_new) + epsilon)).
void AdamStep(const AdamAttrs& a, double r, int64_t t, const Tensor& x, const Tensor& g,
              const Tensor& v, const Tensor& h, Tensor* x_new, Tensor* v_new, Tensor* h_new);

struct MomentumAttrs {
  double alpha = 0;
  double beta = 0;
  double norm_coefficient = 0;
  bool nesterov = false;
};

// g' = norm_coefficient * x + g; v_new = alpha * v + (t > 0 ? beta : 1) * g';
// x_new = x - r * v_new (standard) or x - r * (g' + alpha * v_new) (nesterov).
void MomentumStep(const MomentumAttrs& a, double r, int64_t t, const Tensor& x, const Tensor& g,
                  const Tensor& v, Tensor* x_new, Tensor* v_new);

}  // namespace onyx::kernels::reference
