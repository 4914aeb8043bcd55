// Reference GridSample (N-d, nearest/linear/cubic, zeros/border/reflection) and AffineGrid.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/element_types.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/image_signal.h"

namespace onyx::kernels::reference {
namespace {

// Reflects x into [lo, hi] by bouncing off the borders (PyTorch's reflect_coordinates).
double Reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double dx = lo - x;
    const int64_t n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const int64_t n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

// Keys cubic coefficients (a = -0.75) for the taps at t+1, t, 1-t, 2-t from the sample.
void CubicCoeffs(double t, double c[4]) {
  constexpr double a = -0.75;
  auto far = [](double x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };
  auto near = [](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };
  t = std::fabs(t);
  c[0] = far(t + 1);
  c[1] = near(t);
  c[2] = near(1 - t);
  c[3] = far(2 - t);
}

}  // namespace

void GridSample(const Tensor& x, const Tensor& grid, GridSampleMode mode, GridSamplePadding padding,
                bool align_corners, Tensor& y) {
  const int64_t N = x.dim(0), C = x.dim(1);
  const int64_t k = x.rank() - 2;  // spatial rank
  Shape in_dims(x.shape().begin() + 2, x.shape().end());
  int64_t in_size = 1;
  for (int64_t d : in_dims) in_size *= d;
  int64_t out_size = 1;
  for (int64_t d = 1; d <= k; ++d) out_size *= grid.dim(d);
  const std::vector<int64_t> in_strides = ContiguousStrides(in_dims);

  // Sampling borders per spatial dim: pixel centres with align_corners, pixel edges without.
  std::vector<double> lo(k), hi(k);
  for (int64_t d = 0; d < k; ++d) {
    lo[d] = align_corners ? 0.0 : -0.5;
    hi[d] = align_corners ? static_cast<double>(in_dims[d] - 1) : in_dims[d] - 0.5;
  }
  const int64_t taps_per_dim = mode == GridSampleMode::kNearest  ? 1
                               : mode == GridSampleMode::kLinear ? 2
                                                                 : 4;
  int64_t corners = 1;
  for (int64_t d = 0; d < k; ++d) corners *= taps_per_dim;

  std::vector<int64_t> tap_index(static_cast<size_t>(k * taps_per_dim));
  std::vector<double> tap_weight(static_cast<size_t>(k * taps_per_dim));
  std::vector<char> tap_valid(static_cast<size_t>(k * taps_per_dim));
  std::vector<int64_t> corner_offset(static_cast<size_t>(corners));
  std::vector<double> corner_weight(static_cast<size_t>(corners));

  // Maps an integer index to a readable one; false when it reads padding zeros.
  auto resolve = [&](int64_t d, int64_t i, int64_t* out) {
    const int64_t len = in_dims[d];
    if (i >= 0 && i < len) {
      *out = i;
      return true;
    }
    switch (padding) {
      case GridSamplePadding::kZeros:
        return false;
      case GridSamplePadding::kBorder:
        *out = std::clamp<int64_t>(i, 0, len - 1);
        return true;
      case GridSamplePadding::kReflection:
        *out = std::clamp<int64_t>(
            static_cast<int64_t>(Reflect(static_cast<double>(i), lo[d], hi[d])), 0, len - 1);
        return true;
    }
    return false;
  };

  // X once in double (the taps of every output point read it many times).
  std::vector<double> xd(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) xd[i] = LoadAsDouble(x.dtype(), x.raw_data(), i);
  float* y_float = y.dtype() == DType::kFloat ? y.data<float>() : nullptr;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t o = 0; o < out_size; ++o) {
      // The grid's last dim lists coordinates innermost-first: (x=W, y=H, z=D).
      const int64_t g = (n * out_size + o) * k;
      for (int64_t d = 0; d < k; ++d) {
        const double v = LoadAsDouble(grid.dtype(), grid.raw_data(), g + (k - 1 - d));
        const double len = static_cast<double>(in_dims[d]);
        // Unnormalise; stored as float like onnx.reference, which matters for the rounding below.
        double c = static_cast<float>(align_corners ? (v + 1) / 2.0 * (len - 1)
                                                    : ((v + 1) * len - 1) / 2.0);
        // NaN samples the padding; huge coordinates are bounded so integer casts stay defined.
        constexpr double kFar = 1e12;
        c = std::isnan(c) ? -len - 2 : std::clamp(c, -kFar, kFar);
        if (mode == GridSampleMode::kNearest) c = std::nearbyint(c);  // half to even (PyTorch)
        // Nearest and linear move an outside coordinate inside first; cubic (as in PyTorch and
        // ONNX Runtime) keeps it and resolves each of its four taps through the padding instead.
        if (mode != GridSampleMode::kCubic && (c < lo[d] || c > hi[d])) {
          if (padding == GridSamplePadding::kBorder) c = std::clamp(c, 0.0, len - 1);
          if (padding == GridSamplePadding::kReflection) c = Reflect(c, lo[d], hi[d]);
        }
        const double fl = std::floor(c);
        int64_t* idx = tap_index.data() + d * taps_per_dim;
        double* w = tap_weight.data() + d * taps_per_dim;
        char* valid = tap_valid.data() + d * taps_per_dim;
        if (mode == GridSampleMode::kNearest) {
          idx[0] = static_cast<int64_t>(c);
          w[0] = 1;
        } else if (mode == GridSampleMode::kLinear) {
          idx[0] = static_cast<int64_t>(fl);
          idx[1] = idx[0] + 1;
          w[0] = 1 - (c - fl);
          w[1] = c - fl;
        } else {
          double cc[4];
          CubicCoeffs(c - fl, cc);
          for (int t = 0; t < 4; ++t) {
            idx[t] = static_cast<int64_t>(fl) - 1 + t;
            w[t] = cc[t];
          }
        }
        for (int64_t t = 0; t < taps_per_dim; ++t) {
          int64_t r = 0;
          valid[t] = resolve(d, idx[t], &r);
          idx[t] = r;
        }
      }
      // Tensor product of the per-dim taps; a corner in the zero padding contributes nothing.
      int64_t live = 0;
      for (int64_t corner = 0; corner < corners; ++corner) {
        int64_t rem = corner, off = 0;
        double w = 1;
        bool ok = true;
        for (int64_t d = k; d-- > 0;) {
          const int64_t t = rem % taps_per_dim;
          rem /= taps_per_dim;
          ok = ok && tap_valid[d * taps_per_dim + t];
          off += tap_index[d * taps_per_dim + t] * in_strides[d];
          w *= tap_weight[d * taps_per_dim + t];
        }
        if (!ok) continue;
        corner_offset[live] = off;
        corner_weight[live] = w;
        ++live;
      }
      for (int64_t c = 0; c < C; ++c) {
        const double* src = xd.data() + (n * C + c) * in_size;
        double acc = 0;
        for (int64_t j = 0; j < live; ++j) acc += corner_weight[j] * src[corner_offset[j]];
        const int64_t out_index = (n * C + c) * out_size + o;
        if (y_float) {
          y_float[out_index] = static_cast<float>(acc);
        } else {
          StoreSaturated(y.dtype(), y.raw_data(), out_index, acc);
        }
      }
    }
  }
}

void AffineGrid(const Tensor& theta, const std::vector<int64_t>& spatial, bool align_corners,
                Tensor& grid) {
  const int64_t N = theta.dim(0);
  const int64_t k = static_cast<int64_t>(spatial.size());  // 2 or 3
  // N = 0 leaves the spatial sizes unbounded (size [0, 1, 2^40, 2^40]): no base tables for them.
  if (grid.numel() == 0) return;
  // Base coordinates per dim in [-1, 1]: pixel centres, or the corner pixels with align_corners.
  std::vector<std::vector<double>> base(static_cast<size_t>(k));
  for (int64_t d = 0; d < k; ++d) {
    const int64_t len = spatial[d];
    for (int64_t i = 0; i < len; ++i) {
      double v;
      if (align_corners) {
        v = len > 1 ? -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(len - 1) : -1.0;
      } else {
        v = -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(len);
      }
      base[d].push_back(v);
    }
  }
  int64_t points = 1;
  for (int64_t d : spatial) points *= d;
  std::vector<int64_t> pos(static_cast<size_t>(k), 0);
  std::vector<double> homo(static_cast<size_t>(k + 1));
  for (int64_t n = 0; n < N; ++n) {
    std::fill(pos.begin(), pos.end(), 0);
    for (int64_t p = 0; p < points; ++p) {
      // Homogeneous point (x, y[, z], 1) with x along the innermost spatial dim.
      for (int64_t j = 0; j < k; ++j) homo[j] = base[k - 1 - j][pos[k - 1 - j]];
      homo[k] = 1.0;
      for (int64_t r = 0; r < k; ++r) {
        double acc = 0;
        for (int64_t j = 0; j <= k; ++j)
          acc += LoadAsDouble(theta.dtype(), theta.raw_data(), (n * k + r) * (k + 1) + j) * homo[j];
        StoreFromDouble(grid.dtype(), grid.raw_data(), (n * points + p) * k + r, acc);
      }
      for (int64_t d = k; d-- > 0;) {
        if (++pos[d] < spatial[d]) break;
        pos[d] = 0;
      }
    }
  }
}

}  // namespace onyx::kernels::reference
