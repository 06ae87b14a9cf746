// Row-major GEMM through Eigen, tiled on a fixed grid so that results do not depend on the
// thread count, and the direct 2-D depthwise convolution. Compiled for the build machine's
// instruction set (ONNXTOOL_NATIVE in runner/CMakeLists.txt).
#include "runner/cpu/gemm.h"

#include <Eigen/Core>

#include <algorithm>
#include <cstring>
#include <vector>

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
  int threads = 1;
#ifdef _OPENMP
  threads = omp_in_parallel() ? 1 : omp_get_max_threads();
#endif
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

/// Splits each of the ih rows of a plane (iw floats) into its sw phases: row iy's phase q, at
/// out + (iy * sw + q) * phase_len, holds columns q, q + sw, q + 2 sw... (A function of its own:
/// in the kernel's lambda the sizes were reloaded from the captures after every store.)
void split_phases(const float* xc, int64_t ih, int64_t iw, int64_t sw, int64_t phase_len, float* out) {
  for (int64_t iy = 0; iy < ih; ++iy) {
    const float* xr = xc + iy * iw;
    float* dst = out + iy * sw * phase_len;
    int64_t j0 = 0;
    if (sw == 2) {
      // Two vectors of input at a time into one of even and one of odd columns.
      for (; 2 * j0 + 2 * kWideLanes <= iw; j0 += kWideLanes) {
        f32xw a, b;
        std::memcpy(&a, xr + 2 * j0, sizeof a);
        std::memcpy(&b, xr + 2 * j0 + kWideLanes, sizeof b);
        const f32xw even = every_other_float<0>(a, b), odd = every_other_float<1>(a, b);
        std::memcpy(dst + j0, &even, sizeof even);
        std::memcpy(dst + phase_len + j0, &odd, sizeof odd);
      }
    }
    for (int64_t q = 0; q < sw; ++q)
      for (int64_t j = j0; j * sw + q < iw; ++j) dst[q * phase_len + j] = xr[j * sw + q];
  }
}

/// One output channel of a depthwise convolution with stride 1 along rows of at most 16 V
/// columns: each output row accumulates in V vector registers over all taps. The input plane is
/// copied into rows padded with zeros so that every load stays inside the buffer, and a lane
/// mask per tap column keeps the taps that fall outside the input out of the sum (adding a zero
/// product would turn a -0 into +0): the same operations, in the same order, as the row loop.
template <int V>
void depthwise_plane_rows(const DepthwiseArgs& g, const float* xc, const float* wm, float b, float* ym,
                          std::vector<float>& buf) {
  const int64_t oh = g.out_h, ow = g.out_w, ih = g.in_h, iw = g.in_w, kh = g.kernel_h, kw = g.kernel_w;
  const int64_t dw = g.dilation_w, pw = g.pad_left;
  // Row r of the buffer holds input row r at [lead, lead + iw); a tap's loads start at
  // lead + kx * dw - pw >= 0 and end within V vectors after it.
  const int64_t lead = pw, width = lead + (kw - 1) * dw - pw + V * kWideLanes + 1;
  buf.assign(static_cast<size_t>(ih * width), 0.0f);
  for (int64_t iy = 0; iy < ih; ++iy) std::copy(xc + iy * iw, xc + (iy + 1) * iw, buf.data() + iy * width + lead);
  i32xw inside[16][V];  // per tap column (kw <= 16) and vector: lanes whose input column exists
  for (int64_t kx = 0; kx < kw; ++kx)
    for (int v = 0; v < V; ++v)
      for (int l = 0; l < kWideLanes; ++l) {
        const int64_t xo = v * kWideLanes + l, ix = xo + kx * dw - pw;
        inside[kx][v][l] = xo < ow && ix >= 0 && ix < iw ? -1 : 0;
      }
  for (int64_t yo = 0; yo < oh; ++yo) {
    f32xw acc[V];
    for (int v = 0; v < V; ++v) acc[v] = f32xw{} + b;
    for (int64_t ky = 0; ky < kh; ++ky) {
      const int64_t iy = yo * g.stride_h - g.pad_top + ky * g.dilation_h;
      if (iy < 0 || iy >= ih) continue;
      const float* row = buf.data() + iy * width + lead - pw;
      for (int64_t kx = 0; kx < kw; ++kx) {
        const float wv = wm[ky * kw + kx];
        const float* src = row + kx * dw;
        for (int v = 0; v < V; ++v) {
          f32xw xv;
          std::memcpy(&xv, src + v * kWideLanes, sizeof xv);
          acc[v] = inside[kx][v] ? acc[v] + wv * xv : acc[v];
        }
      }
    }
    float out[V * kWideLanes];
    std::memcpy(out, acc, sizeof out);
    std::copy(out, out + ow, ym + yo * ow);
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
  // Strided columns (2 to 4): each input row split once into its sw phases, phase q holding
  // columns q, q + sw, q + 2 sw..., so that every tap of the interior reads contiguous floats
  // (input column xo * sw + off is element xo + floor(off / sw) of phase off mod sw).
  const bool phased = sw > 1 && sw <= 4;
  // Rows of at most four vectors with stride 1: whole rows in registers (the row loop below
  // spends more on loop overhead than on arithmetic when rows are this short).
  const bool rows_in_registers = sw == 1 && ow <= 4 * kWideLanes && kw <= 16;
  const int64_t phase_len = (iw + sw - 1) / sw;
  parallel_ranges(g.n * g.m, 1, [&](int64_t p0, int64_t p1) {
    thread_local std::vector<float> phases;
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n = p / g.m, m = p % g.m, c = m / per_group;
      const float* xc = x + (n * g.c + c) * ih * iw;
      const float* wm = w + m * kh * kw;
      float* ym = y + p * oh * ow;
      const float b = bias ? bias[m] : 0.0f;
      if (rows_in_registers) {
        thread_local std::vector<float> padded;
        const int vecs = static_cast<int>((ow + kWideLanes - 1) / kWideLanes);
        if (vecs == 1) depthwise_plane_rows<1>(g, xc, wm, b, ym, padded);
        else if (vecs == 2) depthwise_plane_rows<2>(g, xc, wm, b, ym, padded);
        else if (vecs == 3) depthwise_plane_rows<3>(g, xc, wm, b, ym, padded);
        else depthwise_plane_rows<4>(g, xc, wm, b, ym, padded);
        if (ep) ep->apply(ym, m, oh * ow);
        continue;
      }
      if (phased) {
        phases.resize(static_cast<size_t>(ih * sw * phase_len));
        split_phases(xc, ih, iw, sw, phase_len, phases.data());
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
            } else if (phased && x_hi > x_lo) {
              // off may be negative: floor division into phase and shift.
              const int64_t q = ((off % sw) + sw) % sw, shift = (off - q) / sw;
              const float* src = phases.data() + (iy * sw + q) * phase_len;
              for (int64_t xo = x_lo; xo < x_hi; ++xo) row[xo] += wv * src[xo + shift];
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
