// Blocked GEMM (Goto-style packing + a register-tiled micro-kernel) in plain C++.
//
// Structure: C is cut into kMc x kNc tiles that TBB runs in parallel. Each tile walks K in kKc
// slices: it packs its slice of op(A) into kMr-row panels and its slice of op(B) into kNr-column
// panels (zero-padded at the edges), then runs the micro-kernel on every kMr x kNr block. The
// micro-kernel keeps its kMr x kNr accumulators in registers; its fixed-size inner loops are what
// GCC/Clang vectorise at -O3. Packing is tile-local (redundant across tiles by 1/(2*kMc) and
// 1/(2*kNc) of the arithmetic), which keeps the threading trivial.
#include "kernels/reference/gemm_core.h"

#include <tbb/blocked_range2d.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace onyx::kernels {
namespace {

// Micro-tile: kMr rows x kNr columns of C held in registers. 6 x 8 floats is 12 SSE registers of
// accumulators, leaving room for the B row and the A broadcast.
template <typename T>
struct TileShape;
template <>
struct TileShape<float> {
  static constexpr int kMr = 6;
  static constexpr int kNr = 8;
};
template <>
struct TileShape<double> {
  static constexpr int kMr = 6;
  static constexpr int kNr = 4;
};

constexpr int64_t kKc = 256;    // K slice: one packed A panel (kKc x kMr) stays in L1
constexpr int64_t kMc = 120;    // rows per tile (a multiple of kMr)
constexpr int64_t kNc = 384;    // columns per tile: the packed B slice (kKc x kNc) stays in L2
constexpr int64_t kMinMc = 24;  // smallest tile the threaded split makes
constexpr int64_t kMinNc = 64;
// Below this many multiply-adds the work is not worth a thread hand-off.
constexpr int64_t kParallelMinWork = int64_t{1} << 18;

int64_t CeilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
int64_t RoundUp(int64_t a, int64_t unit) {
  return CeilDiv(a, unit) * unit;
}

// Element (i, p) of op(A) and (p, j) of op(B).
template <typename T>
inline T OpA(const T* a, int64_t lda, bool trans, int64_t i, int64_t p) {
  return trans ? a[p * lda + i] : a[i * lda + p];
}
template <typename T>
inline T OpB(const T* b, int64_t ldb, bool trans, int64_t p, int64_t j) {
  return trans ? b[j * ldb + p] : b[p * ldb + j];
}

// Packs op(A)[i0 : i0+mc, p0 : p0+kc] as consecutive panels of kMr rows, each stored p-major
// (dst[p * kMr + r]); rows past mc are zero.
template <typename T>
void PackA(const T* a, int64_t lda, bool trans, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
           T* dst) {
  constexpr int kMr = TileShape<T>::kMr;
  for (int64_t ir = 0; ir < mc; ir += kMr) {
    const int64_t rows = std::min<int64_t>(kMr, mc - ir);
    for (int64_t p = 0; p < kc; ++p) {
      T* d = dst + p * kMr;
      for (int64_t r = 0; r < rows; ++r) d[r] = OpA(a, lda, trans, i0 + ir + r, p0 + p);
      for (int64_t r = rows; r < kMr; ++r) d[r] = T(0);
    }
    dst += kc * kMr;
  }
}

// Packs op(B)[p0 : p0+kc, j0 : j0+nc] as consecutive panels of kNr columns, each stored p-major
// (dst[p * kNr + c]); columns past nc are zero.
template <typename T>
void PackB(const T* b, int64_t ldb, bool trans, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
           T* dst) {
  constexpr int kNr = TileShape<T>::kNr;
  for (int64_t jr = 0; jr < nc; jr += kNr) {
    const int64_t cols = std::min<int64_t>(kNr, nc - jr);
    if (!trans && cols == kNr) {
      // The common case (B row-major, full panel): contiguous copies the compiler vectorises.
      for (int64_t p = 0; p < kc; ++p) {
        const T* s = b + (p0 + p) * ldb + j0 + jr;
        T* d = dst + p * kNr;
        for (int c = 0; c < kNr; ++c) d[c] = s[c];
      }
    } else {
      for (int64_t p = 0; p < kc; ++p) {
        T* d = dst + p * kNr;
        for (int64_t c = 0; c < cols; ++c) d[c] = OpB(b, ldb, trans, p0 + p, j0 + jr + c);
        for (int64_t c = cols; c < kNr; ++c) d[c] = T(0);
      }
    }
    dst += kc * kNr;
  }
}

// acc = sum over p of a_panel[p] (kMr values) outer b_panel[p] (kNr values).
// Written with GCC/Clang vector extensions (16-byte vectors, i.e. SSE2/NEON width): left to the
// auto-vectoriser, GCC 12 vectorises this loop nest along p with shuffles and runs 3x slower.
template <typename T>
inline void MicroKernel(int64_t kc, const T* __restrict a_panel, const T* __restrict b_panel,
                        T (&acc)[TileShape<T>::kMr][TileShape<T>::kNr]) {
  constexpr int kMr = TileShape<T>::kMr;
  constexpr int kNr = TileShape<T>::kNr;
  typedef T Vec __attribute__((vector_size(16)));
  // The same vector read from memory with only element alignment (no aliasing surprises).
  typedef T UnalignedVec __attribute__((vector_size(16), aligned(sizeof(T)), may_alias));
  constexpr int kVecs = kNr * sizeof(T) / sizeof(Vec);  // vectors per accumulator row
  Vec vacc[kMr][kVecs];
  for (int i = 0; i < kMr; ++i)
    for (int v = 0; v < kVecs; ++v) vacc[i][v] = Vec{};
  for (int64_t p = 0; p < kc; ++p) {
    const T* ap = a_panel + p * kMr;
    const UnalignedVec* bp = reinterpret_cast<const UnalignedVec*>(b_panel + p * kNr);
    Vec bv[kVecs];
    for (int v = 0; v < kVecs; ++v) bv[v] = bp[v];
    for (int i = 0; i < kMr; ++i) {
      const T ai = ap[i];
      for (int v = 0; v < kVecs; ++v) vacc[i][v] += ai * bv[v];
    }
  }
  std::memcpy(acc, vacc, sizeof(acc));
}

// Writes alpha * acc into the rows x cols corner of C. The first K slice applies beta (beta == 0
// overwrites); later slices accumulate.
template <typename T>
inline void StoreTile(const T (&acc)[TileShape<T>::kMr][TileShape<T>::kNr], int64_t rows,
                      int64_t cols, T alpha, T beta, bool first, T* c, int64_t ldc) {
  for (int64_t i = 0; i < rows; ++i) {
    T* crow = c + i * ldc;
    if (!first || beta == T(1)) {
      for (int64_t j = 0; j < cols; ++j) crow[j] += alpha * acc[i][j];
    } else if (beta == T(0)) {
      for (int64_t j = 0; j < cols; ++j) crow[j] = alpha * acc[i][j];
    } else {
      for (int64_t j = 0; j < cols; ++j) crow[j] = alpha * acc[i][j] + beta * crow[j];
    }
  }
}

// One kMc x kNc tile of C: rows [i0, i0+mc), columns [j0, j0+nc).
template <typename T>
void GemmTile(bool trans_a, bool trans_b, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
              int64_t ldb, T beta, T* c, int64_t ldc, int64_t i0, int64_t mc, int64_t j0,
              int64_t nc) {
  constexpr int kMr = TileShape<T>::kMr;
  constexpr int kNr = TileShape<T>::kNr;
  const int64_t m_panels = (mc + kMr - 1) / kMr;
  const int64_t n_panels = (nc + kNr - 1) / kNr;
  // Thread-local scratch is safe here: nothing below re-enters TBB while it is in use.
  thread_local std::vector<T> a_pack, b_pack;
  a_pack.resize(static_cast<size_t>(m_panels * kMr * std::min(k, kKc)));
  b_pack.resize(static_cast<size_t>(n_panels * kNr * std::min(k, kKc)));
  for (int64_t p0 = 0; p0 < k; p0 += kKc) {
    const int64_t kc = std::min(kKc, k - p0);
    const bool first = p0 == 0;
    PackA(a, lda, trans_a, i0, mc, p0, kc, a_pack.data());
    PackB(b, ldb, trans_b, p0, kc, j0, nc, b_pack.data());
    for (int64_t jp = 0; jp < n_panels; ++jp) {
      const int64_t cols = std::min<int64_t>(kNr, nc - jp * kNr);
      for (int64_t ip = 0; ip < m_panels; ++ip) {
        const int64_t rows = std::min<int64_t>(kMr, mc - ip * kMr);
        T acc[kMr][kNr];
        MicroKernel<T>(kc, a_pack.data() + ip * kc * kMr, b_pack.data() + jp * kc * kNr, acc);
        StoreTile<T>(acc, rows, cols, alpha, beta, first, c + (i0 + ip * kMr) * ldc + j0 + jp * kNr,
                     ldc);
      }
    }
  }
}

// Dot product with independent partial sums so the loop vectorises without -ffast-math.
template <typename T>
T Dot(const T* x, const T* y, int64_t n) {
  constexpr int kLanes = 8;
  T part[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) part[l] += x[i + l] * y[i + l];
  T sum = 0;
  for (int l = 0; l < kLanes; ++l) sum += part[l];
  for (; i < n; ++i) sum += x[i] * y[i];
  return sum;
}

// Few rows of C (matrix-vector-like products): no packing, stream B once per row.
// Columns [j0, j1) of every row.
template <typename T>
void GemmSmallM(bool trans_a, bool trans_b, int64_t m, int64_t k, T alpha, const T* a, int64_t lda,
                const T* b, int64_t ldb, T beta, T* c, int64_t ldc, int64_t j0, int64_t j1) {
  std::vector<T> a_row(static_cast<size_t>(k));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t p = 0; p < k; ++p) a_row[p] = OpA(a, lda, trans_a, i, p);
    T* crow = c + i * ldc;
    if (trans_b) {
      // C[i, j] = dot(op(A) row i, B row j): both contiguous.
      for (int64_t j = j0; j < j1; ++j) {
        const T v = alpha * Dot(a_row.data(), b + j * ldb, k);
        crow[j] = beta == T(0) ? v : v + beta * crow[j];
      }
    } else {
      // C[i, :] = beta * C[i, :] + sum over p of (alpha * A[i, p]) * B[p, :]: axpy rows.
      if (beta == T(0)) {
        for (int64_t j = j0; j < j1; ++j) crow[j] = T(0);
      } else if (beta != T(1)) {
        for (int64_t j = j0; j < j1; ++j) crow[j] *= beta;
      }
      for (int64_t p = 0; p < k; ++p) {
        const T s = alpha * a_row[p];
        const T* brow = b + p * ldb;
        for (int64_t j = j0; j < j1; ++j) crow[j] += s * brow[j];
      }
    }
  }
}

}  // namespace

template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc, bool parallel) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || alpha == T(0)) {
    // Nothing to multiply: C = beta * C (beta == 0 overwrites, NaNs included).
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  const bool threaded = parallel && m * n * k >= kParallelMinWork;
  if (m < TileShape<T>::kMr) {
    constexpr int64_t kColumnChunk = 256;
    if (!threaded) {
      GemmSmallM(trans_a, trans_b, m, k, alpha, a, lda, b, ldb, beta, c, ldc, 0, n);
      return;
    }
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, kColumnChunk),
                      [&](const tbb::blocked_range<int64_t>& r) {
                        GemmSmallM(trans_a, trans_b, m, k, alpha, a, lda, b, ldb, beta, c, ldc,
                                   r.begin(), r.end());
                      });
    return;
  }
  // Tiles of at most kMc x kNc, evened out; when threaded, cut finer (down to kMinMc x kMinNc) so
  // that every thread gets a couple of tiles.
  int64_t m_tiles = CeilDiv(m, kMc);
  int64_t n_tiles = CeilDiv(n, kNc);
  if (threaded) {
    const int64_t want = 2 * static_cast<int64_t>(tbb::this_task_arena::max_concurrency());
    if (m_tiles * n_tiles < want)
      n_tiles =
          std::max(n_tiles, std::min(CeilDiv(want, m_tiles), std::max<int64_t>(1, n / kMinNc)));
    if (m_tiles * n_tiles < want)
      m_tiles =
          std::max(m_tiles, std::min(CeilDiv(want, n_tiles), std::max<int64_t>(1, m / kMinMc)));
  }
  const int64_t mc = RoundUp(CeilDiv(m, m_tiles), TileShape<T>::kMr);
  const int64_t nc = RoundUp(CeilDiv(n, n_tiles), TileShape<T>::kNr);
  m_tiles = CeilDiv(m, mc);
  n_tiles = CeilDiv(n, nc);
  auto run_tile = [&](int64_t ti, int64_t tj) {
    const int64_t i0 = ti * mc;
    const int64_t j0 = tj * nc;
    GemmTile(trans_a, trans_b, k, alpha, a, lda, b, ldb, beta, c, ldc, i0, std::min(mc, m - i0), j0,
             std::min(nc, n - j0));
  };
  if (!threaded || m_tiles * n_tiles == 1) {
    for (int64_t ti = 0; ti < m_tiles; ++ti)
      for (int64_t tj = 0; tj < n_tiles; ++tj) run_tile(ti, tj);
    return;
  }
  tbb::parallel_for(tbb::blocked_range2d<int64_t>(0, m_tiles, 1, 0, n_tiles, 1),
                    [&](const tbb::blocked_range2d<int64_t>& r) {
                      for (int64_t ti = r.rows().begin(); ti < r.rows().end(); ++ti)
                        for (int64_t tj = r.cols().begin(); tj < r.cols().end(); ++tj)
                          run_tile(ti, tj);
                    });
}

template void Gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                          const float*, int64_t, float, float*, int64_t, bool);
template void Gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                           const double*, int64_t, double, double*, int64_t, bool);

}  // namespace onyx::kernels
