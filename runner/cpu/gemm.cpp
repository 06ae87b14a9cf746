// Row-major GEMM through Eigen, tiled on a fixed grid so that results do not depend on the
// thread count, and the direct 2-D depthwise convolution. Compiled for the build machine's
// instruction set (ONNXTOOL_NATIVE in runner/CMakeLists.txt).
#include "runner/cpu/gemm.h"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "runner/cpu/conv_gemm.h"
#include "runner/cpu/elementwise_util.h"
#include "runner/cpu/epilogue.h"

namespace onnxtool::runner::cpu {

namespace {

// The tile grid is fixed (not derived from the thread count): each tile of C is one Eigen
// product, computed the same way whichever thread runs it.
constexpr int64_t kTileRows = 128;
constexpr int64_t kTileCols = kGemmTileCols;

template <class T>
using MatrixCM = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
template <class T>
using MapC = Eigen::Map<MatrixCM<T>, 0, Eigen::OuterStride<>>;
template <class T>
using MapConst = Eigen::Map<const MatrixCM<T>, 0, Eigen::OuterStride<>>;

// The product is computed in its column-major form, C^T = op(B)^T op(A)^T: the row-major
// buffers are then column-major matrices whose long dimension (N, the spatial size of a
// convolution) is contiguous, which is what Eigen packs and streams fastest.
template <class T>
void gemm_tiles(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, bool ta, const T* b, int64_t ldb, bool tb, T* c,
                int64_t ldc, bool accumulate) {
  if (m <= 0 || n <= 0) return;
  Eigen::setNbThreads(1);  // parallelism comes from the tile loop below
  if (k <= 0) {
    if (!accumulate)
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    return;
  }
  const int64_t col_tiles = (n + kTileCols - 1) / kTileCols;
  // Threads only for products worth waking them for (~4M multiply-adds, a fraction of a
  // millisecond): below that the fork/join costs more than it saves, and on a busy machine a
  // descheduled worker can stall the join for a whole time slice.
  const bool worth_threads = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) >= 4.0e6;
  // Rows of C in tiles of kTileRows; a product of fewer tiles than threads (a small Conv: up to
  // 128 channels over up to 2048 positions) in smaller ones, multiples of 32 rows. Splitting
  // rows at multiples of Eigen's register block leaves every element's sums as they were (the
  // same bytes on all 19 benchmark models with tiles of 32), but each tile packs B again: so
  // only when the tiles run in parallel.
  int64_t tile_rows = kTileRows;
  const int threads = current_threads();
  if (worth_threads && threads > 1 && col_tiles * ((m + kTileRows - 1) / kTileRows) < threads)
    tile_rows = std::max<int64_t>(32, (m + threads - 1) / threads + 31) / 32 * 32;
  // With the smaller tiles, a last tile of one row joins the one before: Eigen would compute it
  // as a matrix-vector product, whose sums are grouped differently.
  const bool merge_last = tile_rows != kTileRows && m > tile_rows && m % tile_rows == 1;
  const int64_t row_tiles = merge_last ? m / tile_rows : (m + tile_rows - 1) / tile_rows;
  const int64_t tiles = row_tiles * col_tiles;
  const int64_t grain = worth_threads ? 1 : tiles;
  parallel_ranges(row_tiles * col_tiles, grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r0 = (t / col_tiles) * tile_rows, c0 = (t % col_tiles) * kTileCols;
      const int64_t rows = t / col_tiles == row_tiles - 1 ? m - r0 : tile_rows, cols = std::min(kTileCols, n - c0);
      MapC<T> out(c + r0 * ldc + c0, cols, rows, Eigen::OuterStride<>(ldc));  // C^T tile
      auto run = [&](const auto& lhs, const auto& rhs) {
        if (accumulate) out.noalias() += lhs * rhs;
        else out.noalias() = lhs * rhs;
      };
      // lhs = op(B)^T tile [cols, k]; rhs = op(A)^T tile [k, rows].
      auto rhs_plain = [&] { return MapConst<T>(a + r0 * lda, k, rows, Eigen::OuterStride<>(lda)); };
      auto rhs_trans = [&] { return MapConst<T>(a + r0, rows, k, Eigen::OuterStride<>(lda)).transpose(); };
      if (!tb) {
        const MapConst<T> lhs(b + c0, cols, k, Eigen::OuterStride<>(ldb));
        if (!ta) run(lhs, rhs_plain());
        else run(lhs, rhs_trans());
      } else {
        const auto lhs = MapConst<T>(b + c0 * ldb, k, cols, Eigen::OuterStride<>(ldb)).transpose();
        if (!ta) run(lhs, rhs_plain());
        else run(lhs, rhs_trans());
      }
    }
  });
}

}  // namespace

/// C = A B^T for a few rows of A and many of B (a classifier over thousands of classes, a
/// recurrent layer's input projection): computed as C^T = B A^T by the convolution kernel, B's
/// rows as its weights, read once in tiles of eight, and A^T (small) in cache. Eigen packed the
/// transposed B for every tile instead (ddddocr's 61x1024 by 8210x1024 Gemm: 23 GFLOP/s).
void product_by_transposed(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                           float* c, int64_t ldc, bool accumulate) {
  std::vector<float> at(static_cast<size_t>(k * m)), ct(static_cast<size_t>(n * m));
  std::vector<int64_t> rows(static_cast<size_t>(k));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) at[static_cast<size_t>(p * m + i)] = a[i * lda + p];
  for (int64_t p = 0; p < k; ++p) rows[static_cast<size_t>(p)] = p * m;
  constexpr int64_t kBlockRows = 64;
  const int64_t blocks = (n + kBlockRows - 1) / kBlockRows;
  const int64_t block_work = kBlockRows * m * k;
  parallel_ranges(blocks, std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(block_work, 1)), [&](int64_t b0, int64_t b1) {
    const int64_t r0 = b0 * kBlockRows, r1 = std::min(n, b1 * kBlockRows);
    conv_gemm_f32(r1 - r0, m, k, b + r0 * ldb, ldb, at.data(), rows.data(), ct.data() + r0 * m, m, nullptr);
  });
  parallel_ranges(m, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      float* ci = c + i * ldc;
      if (accumulate)
        for (int64_t j = 0; j < n; ++j) ci[j] += ct[static_cast<size_t>(j * m + i)];
      else
        for (int64_t j = 0; j < n; ++j) ci[j] = ct[static_cast<size_t>(j * m + i)];
    }
  });
}

void gemm_f32(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool ta, const float* b, int64_t ldb, bool tb,
              float* c, int64_t ldc, bool accumulate) {
  if (!ta && tb && m >= 4 && m <= 256 && n >= 64 && k >= 16) {
    product_by_transposed(m, n, k, a, lda, b, ldb, c, ldc, accumulate);
    return;
  }
  gemm_tiles<float>(m, n, k, a, lda, ta, b, ldb, tb, c, ldc, accumulate);
}

void gemm_f64(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, bool ta, const double* b, int64_t ldb, bool tb,
              double* c, int64_t ldc, bool accumulate) {
  gemm_tiles<double>(m, n, k, a, lda, ta, b, ldb, tb, c, ldc, accumulate);
}

namespace {

/// The first n floats of a vector stored at dst (0 <= n <= kWideLanes): one masked store where
/// AVX-512 has it (a few floats copied through libc's memmove cost more than the arithmetic of
/// a small depthwise plane's row).
inline void store_first(float* dst, f32xw v, int64_t n) {
#if defined(__AVX512F__)
  _mm512_mask_storeu_ps(dst, static_cast<__mmask16>((1u << n) - 1u), reinterpret_cast<__m512>(v));
#else
  float tmp[kWideLanes];
  std::memcpy(tmp, &v, sizeof v);
  for (int64_t i = 0; i < n; ++i) dst[i] = tmp[i];
#endif
}

/// The first n floats at src (0 <= n <= kWideLanes), zeros after them; nothing past them read.
inline f32xw load_first(const float* src, int64_t n) {
#if defined(__AVX512F__)
  return reinterpret_cast<f32xw>(_mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1u), src));
#else
  float tmp[kWideLanes] = {};
  for (int64_t i = 0; i < n; ++i) tmp[i] = src[i];
  f32xw v;
  std::memcpy(&v, tmp, sizeof v);
  return v;
#endif
}

/// n floats from src to dst (not overlapping), in vectors.
inline void copy_floats(float* dst, const float* src, int64_t n) {
  int64_t i = 0;
  for (; i + kWideLanes <= n; i += kWideLanes) {
    f32xw v;
    std::memcpy(&v, src + i, sizeof v);
    std::memcpy(dst + i, &v, sizeof v);
  }
  if (i < n) store_first(dst + i, load_first(src + i, n - i), n - i);
}

/// n zeros at dst, in vectors.
inline void zero_floats(float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + kWideLanes <= n; i += kWideLanes) std::memset(dst + i, 0, sizeof(f32xw));
  if (i < n) store_first(dst + i, f32xw{}, n - i);
}

/// The first n floats of V vectors stored at dst (0 <= n <= V * kWideLanes).
template <int V>
inline void store_vectors(float* dst, const f32xw (&v)[V], int64_t n) {
  for (int i = 0; i < V; ++i) {
    const int64_t left = n - int64_t{i} * kWideLanes;
    if (left >= kWideLanes) std::memcpy(dst + i * kWideLanes, &v[i], sizeof v[i]);
    else if (left > 0) store_first(dst + i * kWideLanes, v[i], left);
  }
}

/// Input rows [r0, r1) of a plane split into their sw phases (phase q of a row: its columns q,
/// q + sw, q + 2 sw...), each phase at `lead` in a row of `width` floats with zeros around it,
/// so that every tap reads contiguous floats and no load leaves the buffer: phase q of input row
/// iy starts at out + (iy * sw + q) * width + lead.
void padded_phases(const float* xc, int64_t r0, int64_t r1, int64_t iw, int64_t sw, int64_t lead, int64_t width, float* out) {
  const int64_t phase_len = (iw + sw - 1) / sw;
  for (int64_t iy = r0; iy < r1; ++iy) {
    const float* xr = xc + iy * iw;
    float* dst = out + iy * sw * width + lead;
    for (int64_t q = 0; q < sw; ++q) {
      float* row = dst + q * width;
      zero_floats(row - lead, lead);
      const int64_t len = (iw - q + sw - 1) / sw;  // this phase's columns
      zero_floats(row + len, width - lead - len);
    }
    if (sw == 1) {
      copy_floats(dst, xr, iw);
      continue;
    }
    int64_t j0 = 0;
    if (sw == 2) {
      // Two vectors of input at a time into one of even and one of odd columns.
      for (; 2 * j0 + 2 * kWideLanes <= iw; j0 += kWideLanes) {
        f32xw a, b;
        std::memcpy(&a, xr + 2 * j0, sizeof a);
        std::memcpy(&b, xr + 2 * j0 + kWideLanes, sizeof b);
        const f32xw even = every_other_float<0>(a, b), odd = every_other_float<1>(a, b);
        std::memcpy(dst + j0, &even, sizeof even);
        std::memcpy(dst + width + j0, &odd, sizeof odd);
      }
    }
    for (int64_t q = 0; q < sw; ++q)
      for (int64_t j = j0; j < phase_len && j * sw + q < iw; ++j) dst[q * width + j] = xr[j * sw + q];
  }
}

/// Adds the taps of one kernel row (weights `wrow`, tap kx reading at row + tap_at[kx]) to a
/// chunk's V accumulators; masked, only in the lanes masks[kx * V + v] keeps.
template <int V, bool kMasked>
inline void add_taps(f32xw (&acc)[V], const float* row, const int64_t* tap_at, const float* wrow, int64_t kw,
                     const i32xw* masks) {
  for (int64_t kx = 0; kx < kw; ++kx) {
    const float wv = wrow[kx];
    const float* src = row + tap_at[kx];
    for (int v = 0; v < V; ++v) {
      f32xw xv;
      std::memcpy(&xv, src + v * kWideLanes, sizeof xv);
      if constexpr (kMasked) acc[v] = masks[kx * V + v] ? acc[v] + wv * xv : acc[v];
      else acc[v] = acc[v] + wv * xv;
    }
  }
}

/// Output columns a register chunk covers: kChunkVectors vectors.
constexpr int kChunkVectors = 4;

/// depthwise_rows_block for output rows one input row apart (stride and dilation 1 down the
/// rows) and KH tap rows: each input row's vectors are loaded once per tap column and added to
/// every output row that reads them (with R = 4 and KH = 3: half the loads, which bound the
/// loop), each sum still in the single-row loop's order (output row r meets input row r + ky
/// in order of ky, and within it the taps in order).
template <int V, int R, int KH>
inline void depthwise_rows_shared(const float* row0, int64_t row_step, const int64_t* tap_at, const float* wm, int64_t kw,
                                  float b, float* out, int64_t ldo, int64_t n) {
  f32xw acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = f32xw{} + b;
#pragma GCC unroll 16
  for (int t = 0; t < R + KH - 1; ++t) {
    const float* row = row0 + t * row_step;
    for (int64_t kx = 0; kx < kw; ++kx) {
      f32xw xv[V];
      for (int v = 0; v < V; ++v) std::memcpy(&xv[v], row + tap_at[kx] + v * kWideLanes, sizeof xv[v]);
#pragma GCC unroll 16
      for (int ky = 0; ky < KH; ++ky) {
        const int r = t - ky;
        if (r < 0 || r >= R) continue;
        const float wv = wm[ky * kw + kx];
        for (int v = 0; v < V; ++v) acc[r][v] = acc[r][v] + wv * xv[v];
      }
    }
  }
  for (int r = 0; r < R; ++r) store_vectors<V>(out + r * ldo, acc[r], n);
}

/// R output rows by V vectors of one chunk whose every tap row lies inside the input, all taps
/// added without masks (the zeros around the phases then add nothing, see zeros_add_nothing):
/// R * V independent sums, so that the multiply-adds do not wait on each other, each in the
/// order of the single-row loop (tap row by tap row, tap by tap). `row0` is the phase row of
/// the first output row's first tap row at the chunk's column; output row r's rows are
/// `row_step` floats further on per row, `tap_step` per tap row.
template <int V, int R>
inline void depthwise_rows_block(const float* row0, int64_t row_step, int64_t tap_step, const int64_t* tap_at,
                                 const float* wm, int64_t kh, int64_t kw, float b, float* out, int64_t ldo, int64_t n) {
  f32xw acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = f32xw{} + b;
  for (int64_t ky = 0; ky < kh; ++ky) {
    const float* rows = row0 + ky * tap_step;
    for (int64_t kx = 0; kx < kw; ++kx) {
      const float wv = wm[ky * kw + kx];
      const float* src = rows + tap_at[kx];
      for (int r = 0; r < R; ++r)
        for (int v = 0; v < V; ++v) {
          f32xw xv;
          std::memcpy(&xv, src + r * row_step + v * kWideLanes, sizeof xv);
          acc[r][v] = acc[r][v] + wv * xv;
        }
    }
  }
  for (int r = 0; r < R; ++r) store_vectors<V>(out + r * ldo, acc[r], n);
}

/// One output channel of a depthwise convolution, each output row in chunks of V vectors that
/// accumulate in registers over all taps. The input rows go through padded_phases into
/// `phases` just before the first output row that reads them (so that reading the input, which
/// is rarely in cache, overlaps the arithmetic); `ready` input rows are there already. A lane mask per chunk,
/// tap column and vector keeps the taps that fall outside the input (and the lanes past the
/// row) out of the sum, since adding a zero product would turn a -0 into +0: the same
/// operations, in the same order, as a loop over taps adding into the output row.
template <int V>
void depthwise_plane_chunks(const DepthwiseArgs& g, const float* xc, float* phases, int64_t ready, int64_t lead,
                            int64_t width, const float* wm, float b, float* ym, std::vector<i32xw>& inside) {
  const int64_t oh = g.out_h, ow = g.out_w, ih = g.in_h, iw = g.in_w, kh = g.kernel_h, kw = g.kernel_w;
  const int64_t sw = g.stride_w, dw = g.dilation_w, pw = g.pad_left;
  constexpr int64_t kCols = int64_t{V} * kWideLanes;
  const int64_t chunks = (ow + kCols - 1) / kCols;
  // Per tap column: its phase row and the shift of its columns within it.
  int64_t tap_at[16];
  for (int64_t kx = 0; kx < kw; ++kx) {
    const int64_t off = kx * dw - pw, q = ((off % sw) + sw) % sw, shift = (off - q) / sw;
    tap_at[kx] = q * width + lead + shift;
  }
  // Without masks when the zeros around the phases add nothing: when every weight is finite (0
  // * inf is NaN). A sum starts from +0 + bias and is never -0, so adding a +0 or -0 product
  // leaves it as it is.
  bool unmasked = true;
  for (int64_t t = 0; t < kh * kw; ++t) unmasked = unmasked && std::isfinite(wm[t]);
  if (!unmasked) inside.resize(static_cast<size_t>(chunks * kw * V));
  for (int64_t c = 0; c < chunks && !unmasked; ++c)
    for (int64_t kx = 0; kx < kw; ++kx)
      for (int v = 0; v < V; ++v) {
        i32xw& mask = inside[static_cast<size_t>((c * kw + kx) * V + v)];
        for (int l = 0; l < kWideLanes; ++l) {
          const int64_t xo = c * kCols + v * kWideLanes + l, ix = xo * sw + kx * dw - pw;
          mask[l] = xo < ow && ix >= 0 && ix < iw ? -1 : 0;
        }
      }
  // Whether every lane of chunk c takes every tap (the interior): no masks there.
  const auto whole = [&](int64_t c) {
    const int64_t first = c * kCols, last = first + kCols - 1;
    return first * sw - pw >= 0 && last < ow && last * sw + (kw - 1) * dw - pw < iw;
  };
  // Output rows in blocks of kRows where all their tap rows lie inside the input; the phases
  // made a few rows ahead of the block reading them (a load of floats stored moments before, by
  // stores that do not cover it, waits for them to leave the store buffer).
  constexpr int kRows = 4;
  constexpr int64_t kAhead = 8;
  const int64_t sh = g.stride_h, dh = g.dilation_h, span_h = (kh - 1) * dh;
  for (int64_t yo = 0; yo < oh;) {
    const int64_t top = yo * sh - g.pad_top;
    const bool block = unmasked && top >= 0 && yo + kRows <= oh && (yo + kRows - 1) * sh - g.pad_top + span_h < ih;
    const int64_t last = (block ? yo + kRows - 1 : yo) * sh - g.pad_top + span_h;
    const int64_t needed = std::min(ih, last + 1);
    if (needed > ready) {
      const int64_t upto = std::min(ih, needed + kAhead);
      padded_phases(xc, ready, upto, iw, sw, lead, width, phases);
      ready = upto;
    }
    if (block) {
      for (int64_t c = 0; c < chunks; ++c) {
        const int64_t c0 = c * kCols;
        const float* row0 = phases + top * sw * width + c0;
        float* out = ym + yo * ow + c0;
        const int64_t n = std::min(kCols, ow - c0);
        if (sh == 1 && dh == 1 && kh == 3)
          depthwise_rows_shared<V, kRows, 3>(row0, sw * width, tap_at, wm, kw, b, out, ow, n);
        else if (sh == 1 && dh == 1 && kh == 5)
          depthwise_rows_shared<V, kRows, 5>(row0, sw * width, tap_at, wm, kw, b, out, ow, n);
        else
          depthwise_rows_block<V, kRows>(row0, sh * sw * width, dh * sw * width, tap_at, wm, kh, kw, b, out, ow, n);
      }
      yo += kRows;
      continue;
    }
    for (int64_t c = 0; c < chunks; ++c) {
      f32xw acc[V];
      for (int v = 0; v < V; ++v) acc[v] = f32xw{} + b;
      for (int64_t ky = 0; ky < kh; ++ky) {
        const int64_t iy = yo * g.stride_h - g.pad_top + ky * g.dilation_h;
        if (iy < 0 || iy >= ih) continue;
        const float* row = phases + iy * sw * width + c * kCols;
        if (unmasked || whole(c)) add_taps<V, false>(acc, row, tap_at, wm + ky * kw, kw, nullptr);
        else add_taps<V, true>(acc, row, tap_at, wm + ky * kw, kw, inside.data() + c * kw * V);
      }
      const int64_t c0 = c * kCols;
      store_vectors<V>(ym + yo * ow + c0, acc, std::min(kCols, ow - c0));
    }
    ++yo;
  }
}

}  // namespace

void depthwise_conv2d_f32(const DepthwiseArgs& g, const float* x, const float* w, const float* bias, float* y,
                          const Epilogue* ep) {
  const int64_t oh = g.out_h, ow = g.out_w, ih = g.in_h, iw = g.in_w, kh = g.kernel_h, kw = g.kernel_w;
  const int64_t sh = g.stride_h, sw = g.stride_w, dh = g.dilation_h, dw = g.dilation_w, ph = g.pad_top, pw = g.pad_left;
  const int64_t per_group = g.m / g.c;
  // The output columns whose whole kernel row lies inside the input: [x_lo, x_hi).
  int64_t x_lo = 0;
  while (x_lo < ow && x_lo * sw - pw < 0) ++x_lo;
  int64_t x_hi = ow;
  while (x_hi > x_lo && (x_hi - 1) * sw - pw + (kw - 1) * dw >= iw) --x_hi;
  // Strides up to 4 and kernel rows up to 16 (every depthwise layer of the models measured):
  // the input rows split into their sw phases with zeros around them (input column
  // xo * sw + off is element xo + floor(off / sw) of phase off mod sw, so that every tap reads
  // contiguous floats), and each output row computed in chunks of vectors that stay in
  // registers over all taps (adding each tap into the output row in memory cost three memory
  // operations per multiply-add: the stride-2 layers of retinaface ran at a third of the
  // speed). Otherwise a loop over taps adding into each output row.
  const bool chunked = sw <= 4 && kw <= 16;
  const int vecs = static_cast<int>(std::min<int64_t>((ow + kWideLanes - 1) / kWideLanes, kChunkVectors));
  const int64_t span = int64_t{vecs} * kWideLanes * ((ow + vecs * kWideLanes - 1) / (vecs * kWideLanes));
  const int64_t lead = (pw + sw - 1) / sw;
  const int64_t reach = std::max<int64_t>(0, ((kw - 1) * dw - pw) / sw);  // the largest shift of a tap
  const int64_t width = lead + span + reach + 1;
  parallel_ranges(g.n * g.m, 1, [&](int64_t p0, int64_t p1) {
    thread_local std::vector<float> phases;
    thread_local std::vector<i32xw> inside;
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n = p / g.m, m = p % g.m, c = m / per_group;
      const float* xc = x + (n * g.c + c) * ih * iw;
      const float* wm = w + m * kh * kw;
      float* ym = y + p * oh * ow;
      const float b = bias ? bias[m] : 0.0f;
      if (chunked) {
        // The phases of a channel are made once for all the output channels that read it.
        const bool reuse = p != p0 && (p - 1) / g.m == n && (m - 1) / per_group == c;
        phases.resize(static_cast<size_t>(ih * sw * width));
        const int64_t ready = reuse ? ih : 0;
        float* ph = phases.data();
        if (vecs == 1) depthwise_plane_chunks<1>(g, xc, ph, ready, lead, width, wm, b, ym, inside);
        else if (vecs == 2) depthwise_plane_chunks<2>(g, xc, ph, ready, lead, width, wm, b, ym, inside);
        else if (vecs == 3) depthwise_plane_chunks<3>(g, xc, ph, ready, lead, width, wm, b, ym, inside);
        else depthwise_plane_chunks<4>(g, xc, ph, ready, lead, width, wm, b, ym, inside);
        // The fused activations while the plane is in cache.
        if (ep) ep->apply(ym, m, oh * ow);
        continue;
      }
      for (int64_t yo = 0; yo < oh; ++yo) {
        float* row = ym + yo * ow;
        std::fill(row, row + ow, b);
        for (int64_t ky = 0; ky < kh; ++ky) {
          const int64_t iy = yo * sh - ph + ky * dh;
          if (iy < 0 || iy >= ih) continue;
          const float* xr = xc + iy * iw;
          for (int64_t kx = 0; kx < kw; ++kx) {
            const float wv = wm[ky * kw + kx];
            const int64_t off = kx * dw - pw;
            // Edges with bounds checks, the interior as a straight (vectorizable) loop.
            for (int64_t xo = 0; xo < x_lo; ++xo) {
              const int64_t ix = xo * sw + off;
              if (ix >= 0 && ix < iw) row[xo] += wv * xr[ix];
            }
            if (sw == 1) {
              const float* src = xr + off;
              for (int64_t xo = x_lo; xo < x_hi; ++xo) row[xo] += wv * src[xo];
            } else {
              for (int64_t xo = x_lo; xo < x_hi; ++xo) row[xo] += wv * xr[xo * sw + off];
            }
            for (int64_t xo = x_hi; xo < ow; ++xo) {
              const int64_t ix = xo * sw + off;
              if (ix >= 0 && ix < iw) row[xo] += wv * xr[ix];
            }
          }
        }
      }
      // The fused activations while the plane is in cache.
      if (ep) ep->apply(ym, m, oh * ow);
    }
  });
}

}  // namespace onnxtool::runner::cpu
