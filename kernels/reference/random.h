// Reference kernels for the random generators. With a `seed` attribute every run of a node
// produces the same values (a fresh engine seeded from it per run); without one each run draws a
// new seed. The values are not meant to match any other implementation, only the distribution,
// shape and type.
#pragma once

#include "kernels/kernel.h"

namespace onyx::kernels::reference {

// RandomNormal (1, 22): shape from the `shape` attribute, N(mean, scale^2), `dtype` default float.
Status RandomNormalRef(KernelContext& ctx);
// RandomUniform (1, 22): shape from `shape`, U[low, high), `dtype` default float.
Status RandomUniformRef(KernelContext& ctx);
// RandomNormalLike / RandomUniformLike (1, 22): shape of input 0; `dtype` default input 0's type.
Status RandomNormalLikeRef(KernelContext& ctx);
Status RandomUniformLikeRef(KernelContext& ctx);
// Bernoulli (15, 22): 1 with probability input[i], else 0; `dtype` default the input's type.
Status BernoulliRef(KernelContext& ctx);
// Multinomial (7, 22): input [batch, classes] of unnormalised log-probabilities; output
// [batch, sample_size] class indices (int32 by default, or int64).
Status MultinomialRef(KernelContext& ctx);

}  // namespace onyx::kernels::reference
