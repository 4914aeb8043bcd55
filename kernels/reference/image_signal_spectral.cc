// Reference DFT, STFT, window functions and MelWeightMatrix.
#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "kernels/reference/image_signal.h"

namespace onyx::kernels::reference {
namespace {

using Complex = std::complex<double>;
constexpr double kPi = 3.14159265358979323846;

bool IsPowerOfTwo(int64_t n) {
  return n > 0 && (n & (n - 1)) == 0;
}

// Unnormalised DFT of a in place: sign -1 forward, +1 inverse. Radix-2 for powers of two,
// otherwise the direct O(n^2) sum over a twiddle table.
void Transform(std::vector<Complex>& a, bool inverse) {
  const int64_t n = static_cast<int64_t>(a.size());
  if (n <= 1) return;
  const double sign = inverse ? 1.0 : -1.0;
  if (IsPowerOfTwo(n)) {
    for (int64_t i = 1, j = 0; i < n; ++i) {  // bit-reversal permutation
      int64_t bit = n >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) std::swap(a[i], a[j]);
    }
    for (int64_t len = 2; len <= n; len <<= 1) {
      const int64_t half = len / 2;
      for (int64_t k = 0; k < half; ++k) {
        const double angle = sign * 2 * kPi * static_cast<double>(k) / static_cast<double>(len);
        const Complex w(std::cos(angle), std::sin(angle));
        for (int64_t start = 0; start < n; start += len) {
          const Complex u = a[start + k];
          const Complex v = a[start + k + half] * w;
          a[start + k] = u + v;
          a[start + k + half] = u - v;
        }
      }
    }
    return;
  }
  std::vector<Complex> twiddle(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    const double angle = sign * 2 * kPi * static_cast<double>(j) / static_cast<double>(n);
    twiddle[j] = Complex(std::cos(angle), std::sin(angle));
  }
  std::vector<Complex> out(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    Complex acc = 0;
    int64_t j = 0;  // (k * t) mod n, updated incrementally
    for (int64_t t = 0; t < n; ++t) {
      acc += a[t] * twiddle[j];
      j += k;
      if (j >= n) j -= n;
    }
    out[k] = acc;
  }
  a.swap(out);
}

}  // namespace

void Dft(const Tensor& x, int64_t outer, int64_t axis_len, int64_t inner, int64_t dft_length,
         bool inverse, bool onesided, Tensor& y) {
  const int64_t n = dft_length;
  const int64_t c_in = x.dim(x.rank() - 1);
  const int64_t c_out = y.dim(y.rank() - 1);
  const int64_t out_len = y.numel() / std::max<int64_t>(1, outer * inner * c_out);
  const DType xt = x.dtype();
  const bool irfft = inverse && onesided;
  std::vector<Complex> a(static_cast<size_t>(n));
  auto load = [&](int64_t o, int64_t t, int64_t i) {
    const int64_t off = ((o * axis_len + t) * inner + i) * c_in;
    const double re = LoadAsDouble(xt, x.raw_data(), off);
    const double im = c_in == 2 ? LoadAsDouble(xt, x.raw_data(), off + 1) : 0.0;
    return Complex(re, im);
  };
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      if (irfft) {
        // Rebuild the Hermitian spectrum from bins 0..n/2 (truncated or zero-padded), dropping
        // the imaginary parts of the DC and Nyquist bins as numpy.fft.irfft does.
        for (int64_t k = 0; k < n; ++k) {
          const int64_t src = k <= n / 2 ? k : n - k;
          Complex v = src < axis_len ? load(o, src, i) : Complex(0, 0);
          if (k > n / 2) v = std::conj(v);
          a[k] = v;
        }
        a[0] = Complex(a[0].real(), 0);
        if (n % 2 == 0) a[n / 2] = Complex(a[n / 2].real(), 0);
      } else {
        for (int64_t t = 0; t < n; ++t) a[t] = t < axis_len ? load(o, t, i) : Complex(0, 0);
      }
      Transform(a, inverse);
      const double norm = inverse ? 1.0 / static_cast<double>(n) : 1.0;
      for (int64_t k = 0; k < out_len; ++k) {
        const int64_t off = ((o * out_len + k) * inner + i) * c_out;
        StoreFromDouble(y.dtype(), y.raw_data(), off, a[k].real() * norm);
        if (c_out == 2) StoreFromDouble(y.dtype(), y.raw_data(), off + 1, a[k].imag() * norm);
      }
    }
  }
}

void Stft(const Tensor& signal, int64_t frame_step, const Tensor* window, int64_t frame_length,
          Tensor& y) {
  const int64_t batch = signal.dim(0), length = signal.dim(1), c_in = signal.dim(2);
  const int64_t frames = y.dim(1), bins = y.dim(2);
  if (y.numel() == 0) return;  // batch 0: frame_length is bounded by no buffer ([0, 2^50, 1])
  const DType st = signal.dtype();
  std::vector<Complex> a(static_cast<size_t>(frame_length));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t t = 0; t < frame_length; ++t) {
        const int64_t pos = f * frame_step + t;
        Complex v(0, 0);
        if (pos < length) {
          const int64_t off = (b * length + pos) * c_in;
          v = Complex(LoadAsDouble(st, signal.raw_data(), off),
                      c_in == 2 ? LoadAsDouble(st, signal.raw_data(), off + 1) : 0.0);
        }
        if (window) v *= LoadAsDouble(window->dtype(), window->raw_data(), t);
        a[t] = v;
      }
      Transform(a, /*inverse=*/false);
      for (int64_t k = 0; k < bins; ++k) {
        const int64_t off = ((b * frames + f) * bins + k) * 2;
        StoreFromDouble(y.dtype(), y.raw_data(), off, a[k].real());
        StoreFromDouble(y.dtype(), y.raw_data(), off + 1, a[k].imag());
      }
    }
  }
}

void Window(WindowKind kind, bool periodic, Tensor& y) {
  const int64_t size = y.numel();
  // A periodic window is the first `size` points of a symmetric window of size + 1.
  const double denom = static_cast<double>(periodic ? size : size - 1);
  for (int64_t n = 0; n < size; ++n) {
    const double t = static_cast<double>(n) / denom;
    double v = 0;
    switch (kind) {
      case WindowKind::kHann: {
        const double s = std::sin(kPi * t);
        v = s * s;
        break;
      }
      case WindowKind::kHamming: {
        constexpr double kAlpha = 25.0 / 46.0;
        v = kAlpha - (1.0 - kAlpha) * std::cos(2 * kPi * t);
        break;
      }
      case WindowKind::kBlackman:
        v = 0.42 - 0.5 * std::cos(2 * kPi * t) + 0.08 * std::cos(4 * kPi * t);
        break;
    }
    StoreFromDouble(y.dtype(), y.raw_data(), n, v);
  }
}

void MelWeightMatrix(int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate,
                     double lower_edge_hertz, double upper_edge_hertz, Tensor& y) {
  const int64_t num_bins = dft_length / 2 + 1;
  if (y.numel() == 0) return;  // 0 mel bins: dft_length may be INT64_MAX (dft_length + 1)
  std::vector<double> out(static_cast<size_t>(num_bins * num_mel_bins), 0.0);
  auto hz_to_mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double low_mel = hz_to_mel(lower_edge_hertz);
  const double high_mel = hz_to_mel(upper_edge_hertz);
  // num_mel_bins + 2 band edges, spaced evenly in mel (the step divides by the edge count, as
  // onnx.reference and ONNX Runtime do), mapped to spectrogram bins.
  const int64_t edges = num_mel_bins + 2;
  const double mel_step = (high_mel - low_mel) / static_cast<double>(edges);
  std::vector<int64_t> bin(static_cast<size_t>(edges));
  for (int64_t i = 0; i < edges; ++i) {
    const double mel = static_cast<double>(i) * mel_step + low_mel;
    const double hz = 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
    const double b =
        std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate));
    // Bins past the spectrogram are never written; clamping keeps the cast defined.
    bin[i] = static_cast<int64_t>(std::clamp(b, -1.0, static_cast<double>(num_bins) + 1));
  }
  auto set = [&](int64_t row, int64_t col, double v) {
    if (row >= 0 && row < num_bins) out[row * num_mel_bins + col] = v;
  };
  // Rows [lo, hi] clipped to the spectrogram.
  auto first = [&](int64_t lo) { return std::max<int64_t>(lo, 0); };
  auto last = [&](int64_t hi) { return std::min<int64_t>(hi, num_bins - 1); };
  for (int64_t m = 0; m < num_mel_bins; ++m) {
    const int64_t left = bin[m], center = bin[m + 1], right = bin[m + 2];
    if (center == left) {
      set(center, m, 1.0);
    } else {
      for (int64_t j = first(left); j <= last(center); ++j)
        set(j, m, static_cast<double>(j - left) / static_cast<double>(center - left));
    }
    if (right > center) {
      for (int64_t j = first(center); j <= last(right - 1); ++j)
        set(j, m, static_cast<double>(right - j) / static_cast<double>(right - center));
    }
  }
  for (int64_t i = 0; i < y.numel(); ++i) StoreFromDouble(y.dtype(), y.raw_data(), i, out[i]);
}

}  // namespace onyx::kernels::reference
