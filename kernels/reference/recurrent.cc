// Reference kernels for RNN, GRU and LSTM: the ONNX equations, one time step at a time.
#include "kernels/reference/recurrent.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

#include "kernels/reference/gemm_core.h"

namespace onyx::kernels::reference {

int64_t RnnGateCount(RnnCell cell) {
  switch (cell) {
    case RnnCell::kRnn:
      return 1;
    case RnnCell::kGru:
      return 3;
    case RnnCell::kLstm:
      return 4;
  }
  return 1;
}

template <typename Acc>
Acc RnnActivation::Apply(Acc x) const {
  const Acc a = static_cast<Acc>(alpha);
  const Acc b = static_cast<Acc>(beta);
  switch (kind) {
    case Kind::kRelu:
      return x > 0 ? x : Acc(0);
    case Kind::kTanh:
      return std::tanh(x);
    case Kind::kSigmoid:
      // Split on the sign so exp never overflows.
      if (x >= 0) return Acc(1) / (Acc(1) + std::exp(-x));
      return std::exp(x) / (Acc(1) + std::exp(x));
    case Kind::kAffine:
      return a * x + b;
    case Kind::kLeakyRelu:
      return x >= 0 ? x : a * x;
    case Kind::kThresholdedRelu:
      return x > a ? x : Acc(0);
    case Kind::kScaledTanh:
      return a * std::tanh(b * x);
    case Kind::kHardSigmoid:
      return std::max(Acc(0), std::min(Acc(1), a * x + b));
    case Kind::kElu:
      return x >= 0 ? x : a * (std::exp(x) - Acc(1));
    case Kind::kSoftsign:
      return x / (Acc(1) + std::fabs(x));
    case Kind::kSoftplus:
      // log(1 + e^x) = max(x, 0) + log1p(e^-|x|), stable for large |x|.
      return std::max(x, Acc(0)) + std::log1p(std::exp(-std::fabs(x)));
  }
  return x;
}

bool ParseRnnActivation(const std::string& name, RnnActivation* act, bool* uses_alpha,
                        bool* uses_beta) {
  std::string n;
  for (char ch : name) n.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  using K = RnnActivation::Kind;
  struct Entry {
    const char* name;
    K kind;
    bool alpha, beta;
    float def_alpha, def_beta;  // the defaults of the ONNX operators of the same name
  };
  static const Entry kEntries[] = {
      {"relu", K::kRelu, false, false, 0, 0},
      {"tanh", K::kTanh, false, false, 0, 0},
      {"sigmoid", K::kSigmoid, false, false, 0, 0},
      {"affine", K::kAffine, true, true, 1.0f, 0.0f},
      {"leakyrelu", K::kLeakyRelu, true, false, 0.01f, 0},
      {"thresholdedrelu", K::kThresholdedRelu, true, false, 1.0f, 0},
      {"scaledtanh", K::kScaledTanh, true, true, 1.0f, 1.0f},
      {"hardsigmoid", K::kHardSigmoid, true, true, 0.2f, 0.5f},
      {"elu", K::kElu, true, false, 1.0f, 0},
      {"softsign", K::kSoftsign, false, false, 0, 0},
      {"softplus", K::kSoftplus, false, false, 0, 0},
  };
  for (const Entry& e : kEntries) {
    if (n != e.name) continue;
    act->kind = e.kind;
    act->alpha = e.def_alpha;
    act->beta = e.def_beta;
    *uses_alpha = e.alpha;
    *uses_beta = e.beta;
    return true;
  }
  return false;
}

namespace {

template <typename Acc>
Acc Clip(Acc x, Acc clip) {
  if (clip <= 0) return x;
  return std::min(clip, std::max(-clip, x));
}

}  // namespace

template <typename Acc>
void RecurrentRef(const RnnParams& p, const RnnInputs<Acc>& in, const RnnOutputs<Acc>& out) {
  const int64_t S = p.seq_length, N = p.batch, I = p.input_size, H = p.hidden_size;
  const int64_t D = p.num_directions;
  const int64_t G = RnnGateCount(p.cell);
  const int64_t GH = G * H;
  const Acc clip = static_cast<Acc>(p.clip);
  const size_t fns_per_dir = p.activations.size() / static_cast<size_t>(D);

  // Element offsets for the two layouts.
  auto x_off = [&](int64_t t, int64_t b) { return (p.batch_first ? b * S + t : t * N + b) * I; };
  auto y_off = [&](int64_t t, int64_t d, int64_t b) {
    return (p.batch_first ? (b * S + t) * D + d : (t * D + d) * N + b) * H;
  };
  auto state_off = [&](int64_t d, int64_t b) {
    return (p.batch_first ? b * D + d : d * N + b) * H;
  };

  std::vector<int64_t> lens(static_cast<size_t>(N), S);
  if (in.seq_lens)
    for (int64_t b = 0; b < N; ++b) lens[b] = in.seq_lens[b];
  const int64_t max_len = N > 0 ? *std::max_element(lens.begin(), lens.end()) : 0;

  // Y is zero past each sequence's end; the valid steps are overwritten below.
  if (out.Y) std::fill(out.Y, out.Y + S * D * N * H, Acc(0));

  // X rearranged as [S, N, I] rows so one matrix product covers every step.
  std::vector<Acc> x_rows(static_cast<size_t>(S * N * I));
  for (int64_t t = 0; t < S; ++t)
    for (int64_t b = 0; b < N; ++b)
      std::copy(in.X + x_off(t, b), in.X + x_off(t, b) + I, x_rows.begin() + (t * N + b) * I);

  std::vector<Acc> xw(static_cast<size_t>(S * N * GH));
  std::vector<Acc> hr(static_cast<size_t>(N * GH));
  std::vector<Acc> h(static_cast<size_t>(N * H)), c(static_cast<size_t>(N * H));
  std::vector<Acc> h_new(static_cast<size_t>(H)), gate(static_cast<size_t>(GH));
  std::vector<Acc> rh(static_cast<size_t>(H));

  for (int64_t d = 0; d < D; ++d) {
    const bool reverse = D == 2 ? d == 1 : p.reverse;
    const Acc* W = in.W + d * GH * I;
    const Acc* R = in.R + d * GH * H;
    const Acc* Wb = in.B ? in.B + d * 2 * GH : nullptr;
    const Acc* Rb = in.B ? Wb + GH : nullptr;
    const Acc* P = in.P ? in.P + d * 3 * H : nullptr;
    const RnnActivation* fns = p.activations.data() + d * fns_per_dir;

    // Input projections of every step at once: xw[t, b, :] = X[t, b, :] * W^T.
    Gemm<Acc>(false, true, S * N, GH, I, Acc(1), x_rows.data(), I, W, I, Acc(0), xw.data(), GH);

    for (int64_t b = 0; b < N; ++b) {
      for (int64_t j = 0; j < H; ++j) {
        h[b * H + j] = in.initial_h ? in.initial_h[state_off(d, b) + j] : Acc(0);
        c[b * H + j] = in.initial_c ? in.initial_c[state_off(d, b) + j] : Acc(0);
      }
    }

    for (int64_t s = 0; s < max_len; ++s) {
      // Recurrent projections of the previous state: hr[b, :] = H_{t-1}[b, :] * R^T.
      Gemm<Acc>(false, true, N, GH, H, Acc(1), h.data(), H, R, H, Acc(0), hr.data(), GH);
      for (int64_t b = 0; b < N; ++b) {
        if (s >= lens[b]) continue;
        const int64_t t = reverse ? lens[b] - 1 - s : s;
        const Acc* xg = xw.data() + (t * N + b) * GH;
        const Acc* hg = hr.data() + b * GH;
        Acc* hb = h.data() + b * H;
        Acc* cb = c.data() + b * H;
        // gate[g*H + j] = Xt*W^T + Wb (+ Ht-1*R^T + Rb, except GRU's h gate, handled below)
        for (int64_t k = 0; k < GH; ++k) gate[k] = xg[k] + (Wb ? Wb[k] : Acc(0));

        switch (p.cell) {
          case RnnCell::kRnn:
            // Ht = f(Xt*W^T + Ht-1*R^T + Wb + Rb)
            for (int64_t j = 0; j < H; ++j)
              h_new[j] = fns[0].Apply(Clip(gate[j] + hg[j] + (Rb ? Rb[j] : Acc(0)), clip));
            break;
          case RnnCell::kGru: {
            // Gates z, r, h. zt = f(..), rt = f(..)
            Acc* z = gate.data();
            Acc* r = gate.data() + H;
            Acc* hh = gate.data() + 2 * H;
            for (int64_t j = 0; j < 2 * H; ++j)
              gate[j] = fns[0].Apply(Clip(gate[j] + hg[j] + (Rb ? Rb[j] : Acc(0)), clip));
            const Acc* Rh = R + 2 * H * H;
            const Acc* Rbh = Rb ? Rb + 2 * H : nullptr;
            if (p.linear_before_reset) {
              // ht = g(Xt*Wh^T + rt (.) (Ht-1*Rh^T + Rbh) + Wbh)
              for (int64_t j = 0; j < H; ++j)
                hh[j] += r[j] * (hg[2 * H + j] + (Rbh ? Rbh[j] : Acc(0)));
            } else {
              // ht = g(Xt*Wh^T + (rt (.) Ht-1)*Rh^T + Rbh + Wbh)
              for (int64_t k = 0; k < H; ++k) rh[k] = r[k] * hb[k];
              for (int64_t j = 0; j < H; ++j) {
                Acc acc = 0;
                for (int64_t k = 0; k < H; ++k) acc += rh[k] * Rh[j * H + k];
                hh[j] += acc + (Rbh ? Rbh[j] : Acc(0));
              }
            }
            // Ht = (1 - zt) (.) ht + zt (.) Ht-1
            for (int64_t j = 0; j < H; ++j) {
              const Acc hv = fns[1].Apply(Clip(hh[j], clip));
              h_new[j] = (Acc(1) - z[j]) * hv + z[j] * hb[j];
            }
            break;
          }
          case RnnCell::kLstm: {
            // Gates i, o, f, c; peepholes P = [Pi, Po, Pf].
            for (int64_t k = 0; k < GH; ++k) gate[k] += hg[k] + (Rb ? Rb[k] : Acc(0));
            const Acc* gi = gate.data();
            const Acc* go = gate.data() + H;
            const Acc* gf = gate.data() + 2 * H;
            const Acc* gc = gate.data() + 3 * H;
            for (int64_t j = 0; j < H; ++j) {
              const Acc c_prev = cb[j];
              const Acc i = fns[0].Apply(Clip(gi[j] + (P ? P[j] * c_prev : Acc(0)), clip));
              // input_forget couples the gates: ft = 1 - it.
              const Acc f =
                  p.input_forget
                      ? Acc(1) - i
                      : fns[0].Apply(Clip(gf[j] + (P ? P[2 * H + j] * c_prev : Acc(0)), clip));
              const Acc g = fns[1].Apply(Clip(gc[j], clip));
              const Acc c_new = f * c_prev + i * g;
              // The output gate peeks at the new cell state.
              const Acc o = fns[0].Apply(Clip(go[j] + (P ? P[H + j] * c_new : Acc(0)), clip));
              cb[j] = c_new;
              h_new[j] = o * fns[2].Apply(c_new);
            }
            break;
          }
        }
        std::copy(h_new.begin(), h_new.end(), hb);
        if (out.Y) std::copy(h_new.begin(), h_new.end(), out.Y + y_off(t, d, b));
      }
    }

    for (int64_t b = 0; b < N; ++b) {
      const bool ran = lens[b] > 0;
      for (int64_t j = 0; j < H; ++j) {
        if (out.Y_h) out.Y_h[state_off(d, b) + j] = ran ? h[b * H + j] : Acc(0);
        if (out.Y_c) out.Y_c[state_off(d, b) + j] = ran ? c[b * H + j] : Acc(0);
      }
    }
  }
}

template float RnnActivation::Apply<float>(float) const;
template double RnnActivation::Apply<double>(double) const;
template void RecurrentRef<float>(const RnnParams&, const RnnInputs<float>&,
                                  const RnnOutputs<float>&);
template void RecurrentRef<double>(const RnnParams&, const RnnInputs<double>&,
                                   const RnnOutputs<double>&);

}  // namespace onyx::kernels::reference
