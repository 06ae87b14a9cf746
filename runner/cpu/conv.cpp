// CPU kernels: Conv, ConvTranspose, ConvInteger and QLinearConv (1-D, 2-D, 3-D and beyond), and
// DeformConv (2-D).
// Geometry (output sizes, pads) is runner/geometry.h's, shared with the device kernels.
// Conv goes through im2col + GEMM (no im2col for 1x1 stride-1 unpadded kernels) and a direct
// loop for depthwise convolutions; ConvTranspose through GEMM + col2im.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "runner/cpu/conv_gemm.h"
#include "runner/cpu/elementwise_util.h"
#include "runner/cpu/epilogue.h"
#include "runner/cpu/gemm.h"
#include "runner/cpu/gemm_int.h"
#include "runner/cpu/kernels.h"
#include "runner/cpu/tensor_util.h"
#include "runner/geometry.h"

namespace onnxtool::runner::cpu {

namespace {

/// The shared geometry, from the tensors.
ConvGeometry conv_geometry(const KernelContext& ctx, const Tensor& x, const Tensor& w) {
  return runner::conv_geometry(ctx, x.shape(), w.shape());
}

ConvGeometry conv_transpose_geometry(const KernelContext& ctx, const Tensor& x, const Tensor& w) {
  return runner::conv_transpose_geometry(ctx, x.shape(), w.shape());
}

/// im2col of the output positions [p0, p1) for one image and one group:
/// col[(c * K + k), o - p0] = x[c, o * s - p + k * d], `pad` outside (0; an integer
/// convolution's zero point, whose value minus itself is 0), rows p1 - p0 long.
template <class T>
void im2col_range(const ConvGeometry& g, const T* x, int64_t channels, int64_t p0, int64_t p1, T* col, T pad = T(0)) {
  const size_t rank = g.in.size();
  const int64_t ksize = g.kernel_size(), isize = g.in_size(), len = p1 - p0;
  // 2-D with output rows under 16 wide: per position, its first input row and column.
  const bool narrow = rank == 2 && g.out[1] < 16;
  std::vector<int64_t> row_at, col_at;
  if (narrow) {
    row_at.resize(static_cast<size_t>(len));
    col_at.resize(static_cast<size_t>(len));
    for (int64_t o = p0; o < p1; ++o) {
      row_at[static_cast<size_t>(o - p0)] = o / g.out[1] * g.stride[0] - g.pad_begin[0];
      col_at[static_cast<size_t>(o - p0)] = o % g.out[1] * g.stride[1] - g.pad_begin[1];
    }
  }
  parallel_ranges(channels * ksize, std::max<int64_t>(1, 16384 / std::max<int64_t>(len, 1)), [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> kidx(rank), oidx(rank);
    // Row r is channel c and kernel offset kidx: found for r0 by division, then counted on (a
    // 64-bit division per dim and row was a third of a small Conv's im2col).
    int64_t c = r0 / ksize;
    for (int64_t d = static_cast<int64_t>(rank) - 1, kr = r0 % ksize; d >= 0; --d) {
      kidx[static_cast<size_t>(d)] = kr % g.kernel[static_cast<size_t>(d)];
      kr /= g.kernel[static_cast<size_t>(d)];
    }
    for (int64_t r = r0; r < r1; ++r) {
      if (r > r0) {
        size_t d = rank;
        while (d-- > 0) {
          if (++kidx[d] < g.kernel[d]) break;
          kidx[d] = 0;
        }
        if (d == static_cast<size_t>(-1)) ++c;
      }
      const T* xc = x + c * isize;
      T* out = col + r * len;  // out[o - p0] is output position o
      if (rank == 1) {
        const int64_t iw = g.in[0], off = kidx[0] * g.dilation[0] - g.pad_begin[0], s = g.stride[0];
        for (int64_t xo = p0; xo < p1; ++xo) {
          const int64_t ix = xo * s + off;
          out[xo - p0] = ix >= 0 && ix < iw ? xc[ix] : pad;
        }
        continue;
      }
      if (rank == 2 && narrow) {
        // Output rows under 16 wide: every position of the block in one loop, its input row and
        // column from the tables (per output row, the loop over the row cost more than its copies).
        const int64_t ky = kidx[0] * g.dilation[0], kx = kidx[1] * g.dilation[1], ih = g.in[0], iw = g.in[1];
        for (int64_t i = 0; i < len; ++i) {
          const int64_t iy = row_at[static_cast<size_t>(i)] + ky, ix = col_at[static_cast<size_t>(i)] + kx;
          out[i] = iy >= 0 && iy < ih && ix >= 0 && ix < iw ? xc[iy * iw + ix] : pad;
        }
        continue;
      }
      if (rank == 2) {
        const int64_t ow = g.out[1], ih = g.in[0], iw = g.in[1];
        const int64_t off = kidx[1] * g.dilation[1] - g.pad_begin[1];
        // Output rows y, each cut to the range: columns [x0, x1) of row y, written from dst on.
        for (int64_t y = p0 / ow; y * ow < p1; ++y) {
          const int64_t x0 = std::max<int64_t>(p0 - y * ow, 0), x1 = std::min<int64_t>(p1 - y * ow, ow);
          T* dst = out + (y * ow + x0 - p0);
          const int64_t iy = y * g.stride[0] - g.pad_begin[0] + kidx[0] * g.dilation[0];
          if (iy < 0 || iy >= ih) {
            std::fill(dst, dst + (x1 - x0), pad);
            continue;
          }
          const T* xrow = xc + iy * iw;
          if (g.stride[1] == 1 && x1 - x0 < 32) {
            // A short run: element by element (three libc calls for a few floats cost more than
            // the row; an audio net's 1x3 Convs over maps 2 to 8 wide spent most of their time there).
            for (int64_t xo = x0; xo < x1; ++xo) {
              const int64_t ix = xo + off;
              dst[xo - x0] = ix >= 0 && ix < iw ? xrow[ix] : pad;
            }
          } else if (g.stride[1] == 1) {
            // Contiguous run: zeros before, a copy, zeros after.
            const int64_t lo = std::clamp<int64_t>(-off, x0, x1), hi = std::clamp<int64_t>(iw - off, x0, x1);
            std::fill(dst, dst + (lo - x0), pad);
            if (hi > lo) std::copy(xrow + lo + off, xrow + hi + off, dst + (lo - x0));
            std::fill(dst + (std::max(lo, hi) - x0), dst + (x1 - x0), pad);
          } else {
            int64_t xo = x0;
            if constexpr (std::is_same_v<T, float>) {
              if (g.stride[1] == 2) {
                // Stride 2 inside the row: two vectors of input give one of every other column
                // (the element-by-element gather was most of a 3-channel stem Conv's time).
                while (xo < x1 && 2 * xo + off < 0) {
                  dst[xo - x0] = pad;
                  ++xo;
                }
                for (; xo + kWideLanes <= x1 && 2 * (xo + kWideLanes) + off <= iw; xo += kWideLanes) {
                  f32xw a, b;
                  std::memcpy(&a, xrow + 2 * xo + off, sizeof a);
                  std::memcpy(&b, xrow + 2 * xo + off + kWideLanes, sizeof b);
                  const f32xw even = every_other_float<0>(a, b);
                  std::memcpy(dst + (xo - x0), &even, sizeof even);
                }
              }
            }
            for (; xo < x1; ++xo) {
              const int64_t ix = xo * g.stride[1] + off;
              dst[xo - x0] = ix >= 0 && ix < iw ? xrow[ix] : pad;
            }
          }
        }
        continue;
      }
      int64_t rest = p0;
      for (size_t d = rank; d-- > 0;) {
        oidx[d] = rest % g.out[d];
        rest /= g.out[d];
      }
      for (int64_t o = p0; o < p1; ++o) {
        int64_t off = 0;
        bool inside = true;
        for (size_t d = 0; d < rank; ++d) {
          const int64_t i = oidx[d] * g.stride[d] - g.pad_begin[d] + kidx[d] * g.dilation[d];
          if (i < 0 || i >= g.in[d]) {
            inside = false;
            break;
          }
          off = off * g.in[d] + i;
        }
        out[o - p0] = inside ? xc[off] : pad;
        for (size_t d = rank; d-- > 0;) {
          if (++oidx[d] < g.out[d]) break;
          oidx[d] = 0;
        }
      }
    }
  });
}

/// im2col of the whole output: col[(c * K + k), o], rows out_size() long.
template <class T>
void im2col(const ConvGeometry& g, const T* x, int64_t channels, T* col) {
  im2col_range(g, x, channels, 0, g.out_size(), col);
}

/// Depthwise 2-D convolution (one input channel per group): a direct loop per output channel.
template <class T>
void depthwise_2d(const ConvGeometry& g, const T* x, const T* w, const T* bias, T* y) {
  const int64_t oh = g.out[0], ow = g.out[1], ih = g.in[0], iw = g.in[1], kh = g.kernel[0], kw = g.kernel[1];
  const int64_t per_group = g.m / g.group;
  parallel_ranges(g.n * g.m, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n = p / g.m, m = p % g.m, c = m / per_group;
      const T* xc = x + (n * g.c + c) * ih * iw;
      const T* wm = w + m * kh * kw;
      T* ym = y + p * oh * ow;
      const T b = bias ? bias[m] : T(0);
      for (int64_t yo = 0; yo < oh; ++yo)
        for (int64_t xo = 0; xo < ow; ++xo) {
          T acc = 0;
          for (int64_t ky = 0; ky < kh; ++ky) {
            const int64_t iy = yo * g.stride[0] - g.pad_begin[0] + ky * g.dilation[0];
            if (iy < 0 || iy >= ih) continue;
            for (int64_t kx = 0; kx < kw; ++kx) {
              const int64_t ix = xo * g.stride[1] - g.pad_begin[1] + kx * g.dilation[1];
              if (ix < 0 || ix >= iw) continue;
              acc += xc[iy * iw + ix] * wm[ky * kw + kx];
            }
          }
          ym[yo * ow + xo] = acc + b;
        }
    }
  });
}

template <class T>
void gemm_t(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, bool ta, const T* b, int64_t ldb, bool tb, T* c,
            int64_t ldc, bool acc) {
  if constexpr (std::is_same_v<T, float>) gemm_f32(m, n, k, a, lda, ta, b, ldb, tb, c, ldc, acc);
  else gemm_f64(m, n, k, a, lda, ta, b, ldb, tb, c, ldc, acc);
}

/// The im2col buffer: one per thread and element type, shared by every Conv and ConvTranspose
/// node (each fills it and is done with it before the next node runs), so that a session holds
/// the largest one instead of one per node for its lifetime (PaddleOCR det at 512x736: peak RSS
/// 295 -> 177 MiB; quantizing it, two sessions at once: 877 -> 407 MiB).
template <class T>
std::vector<T>& scratch() {
  thread_local std::vector<T> col;
  return col;
}

/// Whether a convolution reads its input as it is, without im2col (1x1 kernel, stride 1, no pads).
bool is_pointwise(const ConvGeometry& g) {
  for (size_t i = 0; i < g.in.size(); ++i)
    if (g.kernel[i] != 1 || g.stride[i] != 1 || g.pad_begin[i] != 0 || g.pad_end[i] != 0) return false;
  return true;
}

/// Float Conv (not depthwise): Y [N, M, O...] = W x im2col(X) + bias, then the fused activations
/// `ep` (nullptr: none), by blocks of output positions, each block a task of its own (with a
/// share of the output channels when there are fewer blocks than threads). The product reads B
/// where it lies: a pointwise convolution's input in place; for a 2-D convolution of stride 1,
/// a copy of the block's input rows with the pads written out, whose shifted views are the rows
/// of im2col (the product then runs over the padded width, and the extra columns are dropped);
/// otherwise an im2col block. About 512 KB of B per block (a quarter of the second-level cache
/// of the machines this was measured on). conv_gemm_f32 makes the bytes independent of the
/// blocks and the threads.
void conv_f32(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, const Epilogue* ep) {
  constexpr int64_t kBlockFloats = 131072;
  const int64_t cg = g.c / g.group, mg = g.m / g.group;
  const int64_t osize = g.out_size(), isize = g.in_size(), kdim = cg * g.kernel_size();
  const bool pointwise = is_pointwise(g);
  // Padded rows: 2-D, stride 1, and the padded width at most an eighth more than the output's.
  const bool rank2 = g.in.size() == 2;
  const int64_t halo_x = rank2 ? (g.kernel[1] - 1) * g.dilation[1] : 0, wp = rank2 ? g.out[1] + halo_x : 0;
  const bool padded = !pointwise && rank2 && g.stride[0] == 1 && g.stride[1] == 1 && halo_x * 8 <= wp;
  const int64_t halo_y = padded ? (g.kernel[0] - 1) * g.dilation[0] : 0;
  // The activations the product applies in its registers, or else to each block after it.
  const Epilogue* in_product = ep && conv_gemm_fuses(*ep) ? ep : nullptr;
  // Tasks: with threads, at least two per thread for products worth waking them for (four
  // million multiply-adds), all of about the same size so that the threads finish together.
  const int threads = current_threads();
  const double work = static_cast<double>(g.n * g.m) * static_cast<double>(osize) * static_cast<double>(std::max<int64_t>(kdim, 1));
  const int64_t want = threads > 1 && work >= 1.0e6 ? 2 * threads : 1;
  const int64_t images = g.n * g.group;
  const auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  // Blocks: output rows for padded rows, positions (whole register tiles) otherwise; as many as
  // the cache size asks for, more when there are too few tasks, then evened out.
  int64_t block = 0, blocks = 0;
  if (padded) {
    const int64_t rows_max = std::clamp<int64_t>(kBlockFloats / std::max<int64_t>(cg * wp, 1) - halo_y, 1, g.out[0]);
    const int64_t count = std::min(g.out[0], std::max(ceil_div(g.out[0], rows_max), ceil_div(want, images)));
    block = ceil_div(g.out[0], count);
    blocks = ceil_div(g.out[0], block);
  } else {
    // With fewer register tiles of positions than tasks wanted, the positions stay whole and the
    // output channels are split instead: blocks of whole tiles left a last block of a few
    // columns, and threads of very unequal work (a 97-position STFT Conv: 48 + 48 + 1).
    const int64_t cols_max = std::max<int64_t>(kBlockFloats / std::max<int64_t>(kdim, 1) / kConvTileCols, 1) * kConvTileCols;
    const int64_t tiles = ceil_div(osize, kConvTileCols);
    const int64_t count = images * tiles < want && osize <= cols_max
                              ? 1
                              : std::min(tiles, std::max(ceil_div(osize, cols_max), ceil_div(want, images)));
    block = std::min(osize, ceil_div(ceil_div(osize, count), kConvTileCols) * kConvTileCols);
    blocks = ceil_div(osize, block);
  }
  // Output channels in parts (multiples of the register tile) when there are still too few.
  int64_t part = mg;
  if (images * blocks < want) {
    const int64_t count = std::min(ceil_div(mg, kConvTileRows), ceil_div(want, images * blocks));
    part = ceil_div(ceil_div(mg, count), kConvTileRows) * kConvTileRows;
  }
  const int64_t parts = ceil_div(mg, part), tasks = images * blocks * parts;
  // One image and one block of positions split by output channels only: its im2col made once,
  // for every part (each part's task made its own copy).
  std::vector<float> shared_col;
  if (!padded && !pointwise && images == 1 && blocks == 1 && parts > 1) {
    shared_col.resize(static_cast<size_t>(kdim * osize));
    im2col_range(g, x, cg, 0, osize, shared_col.data());
  }
  const int64_t task_work = std::max<int64_t>(static_cast<int64_t>(work / static_cast<double>(tasks)), 1);
  parallel_ranges(tasks, std::max<int64_t>(1, (int64_t{1} << 20) / task_work), [&](int64_t t0, int64_t t1) {
    std::vector<float>& buf = scratch<float>();  // this thread's
    thread_local std::vector<int64_t> rows;
    thread_local std::vector<float> out;
    rows.resize(static_cast<size_t>(kdim));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / (g.group * blocks * parts), gi = t / (blocks * parts) % g.group;
      const int64_t bi = t / parts % blocks, r0 = t % parts * part, mrows = std::min(part, mg - r0);
      const float* xg = x + (n * g.c + gi * cg) * isize;
      float* yg = y + (n * g.m + gi * mg + r0) * osize;
      const float* wg = w + (gi * mg + r0) * kdim;
      const float* gb = bias ? bias + gi * mg + r0 : nullptr;
      int64_t p_start = 0, p_len = 0;  // the block's output positions
      if (padded) {
        const int64_t ih = g.in[0], iw = g.in[1], ow = g.out[1], y0 = bi * block, ny = std::min(block, g.out[0] - y0);
        const int64_t in_rows = ny + halo_y, plane = in_rows * wp + halo_x, pl = g.pad_begin[1];
        buf.resize(static_cast<size_t>(cg * plane));
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t r = 0; r < in_rows; ++r) {
            float* dst = buf.data() + c * plane + r * wp;
            const int64_t iy = y0 - g.pad_begin[0] + r;
            if (iy < 0 || iy >= ih) {
              std::fill_n(dst, wp, 0.0f);
              continue;
            }
            // Columns [lo, hi) of the padded row are input columns [lo - pl, hi - pl).
            const int64_t lo = std::clamp<int64_t>(pl, 0, wp), hi = std::clamp<int64_t>(pl + iw, lo, wp);
            const float* src = xg + c * isize + iy * iw;
            for (int64_t i = 0; i < lo; ++i) dst[i] = 0.0f;
            for (int64_t i = lo; i < hi; ++i) dst[i] = src[i - pl];
            for (int64_t i = hi; i < wp; ++i) dst[i] = 0.0f;
          }
        for (int64_t c = 0; c < cg; ++c) std::fill_n(buf.data() + c * plane + in_rows * wp, halo_x, 0.0f);
        for (int64_t c = 0, p = 0; c < cg; ++c)
          for (int64_t ky = 0; ky < g.kernel[0]; ++ky)
            for (int64_t kx = 0; kx < g.kernel[1]; ++kx)
              rows[static_cast<size_t>(p++)] = c * plane + ky * g.dilation[0] * wp + kx * g.dilation[1];
        out.resize(static_cast<size_t>(mrows * ny * wp));
        conv_gemm_f32(mrows, ny * wp, kdim, wg, kdim, buf.data(), rows.data(), out.data(), ny * wp, gb, in_product, gi * mg + r0);
        for (int64_t r = 0; r < mrows; ++r)
          for (int64_t yy = 0; yy < ny; ++yy)
            std::copy_n(out.data() + (r * ny + yy) * wp, ow, yg + r * osize + (y0 + yy) * ow);
        p_start = y0 * ow;
        p_len = ny * ow;
      } else {
        const int64_t p0 = bi * block, len = std::min(block, osize - p0);
        const float* src = xg + p0;
        int64_t ld = isize;
        if (!shared_col.empty()) {
          src = shared_col.data();
          ld = len;
        } else if (!pointwise) {
          buf.resize(static_cast<size_t>(kdim * block));
          im2col_range(g, xg, cg, p0, p0 + len, buf.data());
          src = buf.data();
          ld = len;
        }
        for (int64_t p = 0; p < kdim; ++p) rows[static_cast<size_t>(p)] = p * ld;
        conv_gemm_f32(mrows, len, kdim, wg, kdim, src, rows.data(), yg + p0, osize, gb, in_product, gi * mg + r0);
        p_start = p0;
        p_len = len;
      }
      if (ep && !in_product)
        for (int64_t r = 0; r < mrows; ++r) ep->apply(yg + r * osize + p_start, gi * mg + r0 + r, p_len);
    }
  });
}

/// Conv in float or double: Y [N, M, O...] from X [N, C, I...], W [M, C/g, K...], optional bias,
/// then the fused activations `ep` (float only; nullptr: none). Double goes through im2col of
/// the whole output and the Eigen GEMM.
template <class T>
void conv_compute(const ConvGeometry& g, const T* x, const T* w, const T* bias, T* y, std::vector<T>& col,
                  const Epilogue* ep = nullptr) {
  const int64_t cg = g.c / g.group, mg = g.m / g.group;
  const int64_t ksize = g.kernel_size(), osize = g.out_size(), isize = g.in_size();
  if (cg == 1 && g.in.size() == 2) {
    if constexpr (std::is_same_v<T, float>) {
      const DepthwiseArgs a{g.n, g.c, g.m, g.in[0], g.in[1], g.out[0], g.out[1], g.kernel[0], g.kernel[1], g.stride[0],
                            g.stride[1], g.dilation[0], g.dilation[1], g.pad_begin[0], g.pad_begin[1]};
      depthwise_conv2d_f32(a, x, w, bias, y, ep);
    } else {
      depthwise_2d(g, x, w, bias, y);
    }
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    conv_f32(g, x, w, bias, y, ep);
    return;
  } else {
    const bool pointwise = is_pointwise(g);
    const int64_t kdim = cg * ksize;
    if (!pointwise) col.resize(static_cast<size_t>(kdim * osize));
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t gi = 0; gi < g.group; ++gi) {
        const T* xg = x + (n * g.c + gi * cg) * isize;
        const T* src = xg;
        if (!pointwise) {
          im2col(g, xg, cg, col.data());
          src = col.data();
        }
        T* yg = y + (n * g.m + gi * mg) * osize;
        gemm_t<T>(mg, osize, kdim, w + gi * mg * kdim, kdim, false, src, osize, false, yg, osize, false);
      }
    if (bias) {
      parallel_ranges(g.n * g.m, std::max<int64_t>(1, 16384 / std::max<int64_t>(osize, 1)), [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
          const T b = bias[p % g.m];
          T* yp = y + p * osize;
          for (int64_t o = 0; o < osize; ++o) yp[o] += b;
        }
      });
    }
  }
}

/// Conv and ConvTranspose around their compute function: the type checks, the output, and the
/// element types (float and double compute in their own type; float16 and bfloat16 in float,
/// rounded once at the end). `compute(g, x, w, bias, y, scratch)` takes typed pointers.
template <class Geometry, class Compute>
void conv_family(KernelContext& ctx, Geometry geometry, Compute compute) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  if (x.dtype() != w.dtype()) ctx.fail("X and W have different types");
  const ConvGeometry g = geometry(ctx, x, w);
  const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (b && (b->rank() != 1 || b->dim(0) != g.m)) ctx.fail("B must be [" + std::to_string(g.m) + "], got " + b->describe());
  std::vector<int64_t> shape{g.n, g.m};
  shape.insert(shape.end(), g.out.begin(), g.out.end());
  Tensor& y = ctx.output(0, x.dtype(), shape);
  if (y.size() == 0) return;
  switch (x.dtype()) {
    case DataType::kFloat:
      compute(g, x.data<float>(), w.data<float>(), b ? b->data<float>() : nullptr, y.mutable_data<float>(), scratch<float>());
      break;
    case DataType::kDouble:
      compute(g, x.data<double>(), w.data<double>(), b ? b->data<double>() : nullptr, y.mutable_data<double>(),
              scratch<double>());
      break;
    case DataType::kFloat16:
    case DataType::kBFloat16: {
      const Tensor xf = widen_to_float(x), wf = widen_to_float(w);
      const Tensor bf = b ? widen_to_float(*b) : Tensor();
      Tensor yf(DataType::kFloat, y.shape());
      compute(g, xf.data<float>(), wf.data<float>(), b ? bf.data<float>() : nullptr, yf.mutable_data<float>(), scratch<float>());
      ctx.set_output(0, narrow_from_float(yf, x.dtype()));
      break;
    }
    default: ctx.fail(ctx.node().op_type + " does not support element type " + type_name(x.dtype()));
  }
}

}  // namespace

void conv(KernelContext& ctx) {
  conv_family(ctx, conv_geometry, [&ctx](const ConvGeometry& g, const auto* x, const auto* w, const auto* bias, auto* y,
                                         auto& col) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(x)>>;
    if constexpr (std::is_same_v<T, float>) {
      // Fused activations only on float32 data: float16 rounds the Conv's output first.
      const Epilogue* ep = ctx.epilogue();
      if (ep && ctx.input(0).dtype() == DataType::kFloat && ep->fits(g.m)) {
        conv_compute(g, x, w, bias, y, col, ep);
        ctx.epilogue_applied();
        return;
      }
    }
    conv_compute(g, x, w, bias, y, col);
  });
}

namespace {

// ---------------------------------------------------------------- ConvTranspose

/// col2im: adds col[(m * K + k), i] into y[m, i * s - p + k * d] (inside the output).
template <class T>
void col2im(const ConvGeometry& g, const T* col, int64_t channels, T* y) {
  const size_t rank = g.in.size();
  const int64_t ksize = g.kernel_size(), isize = g.in_size(), osize = g.out_size();
  parallel_ranges(channels, 1, [&](int64_t c0, int64_t c1) {
    std::vector<int64_t> kidx(rank), iidx(rank);
    for (int64_t c = c0; c < c1; ++c) {
      T* yc = y + c * osize;
      for (int64_t k = 0; k < ksize; ++k) {
        int64_t kr = k;
        for (size_t d = rank; d-- > 0;) {
          kidx[d] = kr % g.kernel[d];
          kr /= g.kernel[d];
        }
        const T* src = col + (c * ksize + k) * isize;
        if (rank == 2) {
          // Row by row: the output row of each input row, then the columns that land inside.
          const int64_t ih = g.in[0], iw = g.in[1], oh = g.out[0], ow = g.out[1];
          const int64_t sx = g.stride[1], off_x = kidx[1] * g.dilation[1] - g.pad_begin[1];
          int64_t x_lo = 0, x_hi = iw;
          while (x_lo < iw && x_lo * sx + off_x < 0) ++x_lo;
          while (x_hi > x_lo && (x_hi - 1) * sx + off_x >= ow) --x_hi;
          for (int64_t iy = 0; iy < ih; ++iy) {
            const int64_t oy = iy * g.stride[0] - g.pad_begin[0] + kidx[0] * g.dilation[0];
            if (oy < 0 || oy >= oh) continue;
            T* yrow = yc + oy * ow + off_x;
            const T* srow = src + iy * iw;
            for (int64_t ix = x_lo; ix < x_hi; ++ix) yrow[ix * sx] += srow[ix];
          }
          continue;
        }
        std::fill(iidx.begin(), iidx.end(), 0);
        for (int64_t i = 0; i < isize; ++i) {
          int64_t off = 0;
          bool inside = true;
          for (size_t d = 0; d < rank; ++d) {
            const int64_t o = iidx[d] * g.stride[d] - g.pad_begin[d] + kidx[d] * g.dilation[d];
            if (o < 0 || o >= g.out[d]) {
              inside = false;
              break;
            }
            off = off * g.out[d] + o;
          }
          if (inside) yc[off] += src[i];
          for (size_t d = rank; d-- > 0;) {
            if (++iidx[d] < g.in[d]) break;
            iidx[d] = 0;
          }
        }
      }
    }
  });
}

template <class T>
void conv_transpose_compute(const ConvGeometry& g, const T* x, const T* w, const T* bias, T* y, std::vector<T>& col) {
  const int64_t cg = g.c / g.group, mg = g.m / g.group;
  const int64_t ksize = g.kernel_size(), isize = g.in_size(), osize = g.out_size();
  col.resize(static_cast<size_t>(mg * ksize * isize));
  std::fill(y, y + g.n * g.m * osize, T(0));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t gi = 0; gi < g.group; ++gi) {
      // col [mg*K, I] = W_g^T [mg*K, cg] x X_g [cg, I]
      const T* wg = w + gi * cg * mg * ksize;
      const T* xg = x + (n * g.c + gi * cg) * isize;
      gemm_t<T>(mg * ksize, isize, cg, wg, mg * ksize, true, xg, isize, false, col.data(), isize, false);
      col2im(g, col.data(), mg, y + (n * g.m + gi * mg) * osize);
    }
  if (bias)
    for (int64_t p = 0; p < g.n * g.m; ++p)
      for (int64_t o = 0; o < osize; ++o) y[p * osize + o] += bias[p % g.m];
}

void conv_transpose(KernelContext& ctx) {
  conv_family(ctx, conv_transpose_geometry, [](const ConvGeometry& g, const auto* x, const auto* w, const auto* bias,
                                               auto* y, auto& col) { conv_transpose_compute(g, x, w, bias, y, col); });
}

// ---------------------------------------------------------------- integer convolutions

/// An integer convolution's weights with their zero points (scalar or per output channel),
/// packed for the integer GEMM (int_gemm_pack_a): M rows of int_gemm_a_stride(C / group x kernel).
std::vector<int16_t> pack_conv_weights(const ConvGeometry& g, const Tensor& w, const std::vector<int32_t>& w_zero) {
  const int64_t depth = g.c / g.group * g.kernel_size();
  std::vector<int16_t> packed(static_cast<size_t>(g.m * int_gemm_a_stride(depth)));
  int_gemm_pack_a(g.m, depth, Int8Matrix{w.raw(), w.dtype() == DataType::kInt8, depth}, w_zero.data(), packed.data());
  return packed;
}

/// Integer convolution with x's zero point and packed weights (pack_conv_weights) into y
/// [N, M, O...], int32 sums wrapping modulo 2^32: the integer GEMM of the packed weights of each
/// group by the packed im2col of tiles of output positions (no im2col for 1x1 stride-1 unpadded
/// kernels), one tile per task, so that memory stays bounded for large images. After each tile,
/// `finish(n, m0, rows, o0, cols)` may rewrite its sums in place while they are in cache:
/// channels [m0, m0 + rows) of image n, positions [o0, o0 + cols).
template <class T, class Finish>
void conv_integer_compute(const ConvGeometry& g, const T* x, const int16_t* pw, int32_t x_zero, int32_t* y,
                          const Finish& finish) {
  const int64_t cg = g.c / g.group, mg = g.m / g.group;
  const int64_t ksize = g.kernel_size(), osize = g.out_size(), isize = g.in_size();
  const int64_t depth = cg * ksize, wstride = int_gemm_a_stride(depth);
  const bool pointwise = is_pointwise(g);
  // Tiles of output positions: whole B panels, the 8-bit im2col tile about 512 KB (the packed
  // one about as large, read once per register tile of weight rows), at least two panels so
  // that each weight row is reused, and at least four tiles per image when it is that large so
  // that threads share small images.
  const int64_t tile = std::clamp<int64_t>(
      std::min(524288 / std::max<int64_t>(depth, 1), (osize / 4 + kIntGemmPanel - 1)) / kIntGemmPanel * kIntGemmPanel,
      2 * kIntGemmPanel, 64 * kIntGemmPanel);
  const int64_t tiles = (osize + tile - 1) / tile;
  const int64_t tasks = g.n * g.group * tiles;
  const int64_t task_work = mg * std::min(tile, osize) * std::max<int64_t>(depth, 1);
  constexpr bool is_signed = std::is_same_v<T, int8_t>;
  parallel_ranges(tasks, std::max<int64_t>(1, (int64_t{1} << 20) / task_work), [&](int64_t t0, int64_t t1) {
    std::vector<T> col(pointwise ? 0 : static_cast<size_t>(depth * tile));
    std::vector<int16_t> packed(static_cast<size_t>(int_gemm_packed_b_size(depth, tile)));
    const std::vector<int32_t> zeros(static_cast<size_t>(tile), x_zero);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / (g.group * tiles), gi = t / tiles % g.group, o0 = t % tiles * tile;
      const int64_t cols = std::min(tile, osize - o0);
      const T* xg = x + (n * g.c + gi * cg) * isize;
      if (pointwise) {
        int_gemm_pack_b(depth, cols, Int8Matrix{xg + o0, is_signed, isize}, zeros.data(), packed.data());
      } else {
        im2col_range(g, xg, cg, o0, o0 + cols, col.data(), static_cast<T>(x_zero));
        int_gemm_pack_b(depth, cols, Int8Matrix{col.data(), is_signed, cols}, zeros.data(), packed.data());
      }
      int_gemm_packed(mg, cols, depth, pw + gi * mg * wstride, packed.data(), y + (n * g.m + gi * mg) * osize + o0, osize);
      finish(n, gi * mg, mg, o0, cols);
    }
  });
}

/// ConvInteger / QLinearConv's int32 sums for either type of x.
void conv_integer_sums(const ConvGeometry& g, const Tensor& x, const Tensor& w, int32_t x_zero, const std::vector<int32_t>& w_zero,
                       int32_t* y) {
  const std::vector<int16_t> pw = pack_conv_weights(g, w, w_zero);
  const auto none = [](int64_t, int64_t, int64_t, int64_t, int64_t) {};
  if (x.dtype() == DataType::kInt8) conv_integer_compute(g, x.data<int8_t>(), pw.data(), x_zero, y, none);
  else conv_integer_compute(g, x.data<uint8_t>(), pw.data(), x_zero, y, none);
}

std::vector<int32_t> per_channel_ints(const KernelContext& ctx, size_t input, int64_t m, const char* what) {
  std::vector<int32_t> z(static_cast<size_t>(m), 0);
  if (!ctx.has_input(input)) return z;
  const Tensor& t = ctx.input(input);
  if (t.size() == 1) std::fill(z.begin(), z.end(), int_at(t, 0));
  else if (t.size() == m)
    for (int64_t i = 0; i < m; ++i) z[static_cast<size_t>(i)] = int_at(t, i);
  else ctx.fail(std::string(what) + " has " + std::to_string(t.size()) + " elements; expected 1 or " + std::to_string(m));
  return z;
}

void check_int8(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.dtype() != DataType::kUInt8 && t.dtype() != DataType::kInt8)
    ctx.fail(std::string(what) + " must be uint8 or int8, is " + type_name(t.dtype()));
}

/// A zero point, when present, must have its operand's 8-bit type, as the spec types it (the
/// integer GEMM relies on the range, the im2col pads with x's zero point in x's type).
void check_zero_point(const KernelContext& ctx, size_t input, const Tensor& operand, const char* what) {
  if (!ctx.has_input(input)) return;
  if (ctx.input(input).dtype() != operand.dtype())
    ctx.fail(std::string(what) + " must have the type of its operand (" + type_name(operand.dtype()) + "), is " +
             type_name(ctx.input(input).dtype()));
}

/// The geometry of an integer convolution of inputs x and w (8-bit), after checking their types
/// and their zero points' (inputs xz and wz, when given).
ConvGeometry integer_conv_geometry(const KernelContext& ctx, size_t xi, size_t xz, size_t wi, size_t wz) {
  const Tensor& x = ctx.input(xi);
  const Tensor& w = ctx.input(wi);
  check_int8(ctx, x, "x");
  check_int8(ctx, w, "w");
  check_zero_point(ctx, xz, x, "x_zero_point");
  check_zero_point(ctx, wz, w, "w_zero_point");
  return conv_geometry(ctx, x, w);
}

void conv_integer(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const ConvGeometry g = integer_conv_geometry(ctx, 0, 2, 1, 3);
  const int32_t xz = ctx.has_input(2) ? int_at(ctx.input(2), 0) : 0;
  const auto wz = per_channel_ints(ctx, 3, g.m, "w_zero_point");
  std::vector<int64_t> shape{g.n, g.m};
  shape.insert(shape.end(), g.out.begin(), g.out.end());
  Tensor& y = ctx.output(0, DataType::kInt32, shape);
  conv_integer_sums(g, x, w, xz, wz, y.mutable_data<int32_t>());
}

void qlinear_conv(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(3);
  const Tensor& yz = ctx.input(7);
  const ConvGeometry g = integer_conv_geometry(ctx, 0, 2, 3, 5);
  const float xs = ctx.input(1).data<float>()[0];
  const int32_t xz = int_at(ctx.input(2), 0);
  const Tensor& wst = ctx.input(4);
  std::vector<float> ws(static_cast<size_t>(g.m));
  if (wst.size() == 1) std::fill(ws.begin(), ws.end(), wst.data<float>()[0]);
  else if (wst.size() == g.m) std::copy(wst.data<float>(), wst.data<float>() + g.m, ws.begin());
  else ctx.fail("w_scale has " + std::to_string(wst.size()) + " elements; expected 1 or " + std::to_string(g.m));
  const auto wz = per_channel_ints(ctx, 5, g.m, "w_zero_point");
  const float ys = ctx.input(6).data<float>()[0];
  const int32_t zy = int_at(yz, 0);
  const auto bias = per_channel_ints(ctx, 8, g.m, "B");
  std::vector<int32_t> acc(static_cast<size_t>(g.n * g.m * g.out_size()));
  conv_integer_sums(g, x, w, xz, wz, acc.data());
  std::vector<int64_t> shape{g.n, g.m};
  shape.insert(shape.end(), g.out.begin(), g.out.end());
  Tensor& y = ctx.output(0, yz.dtype(), shape);
  const int64_t osize = g.out_size();
  const int32_t lo = yz.dtype() == DataType::kUInt8 ? 0 : -128, hi = yz.dtype() == DataType::kUInt8 ? 255 : 127;
  for (int64_t i = 0; i < y.size(); ++i) {
    const int64_t m = (i / osize) % g.m;
    const double v = std::nearbyint(static_cast<double>(acc[static_cast<size_t>(i)] + bias[static_cast<size_t>(m)]) * xs *
                                    ws[static_cast<size_t>(m)] / ys) + zy;
    const int32_t q = static_cast<int32_t>(std::min<double>(hi, std::max<double>(lo, v)));
    if (yz.dtype() == DataType::kUInt8) y.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(q);
    else y.mutable_data<int8_t>()[i] = static_cast<int8_t>(q);
  }
}

/// Packed weights of conv_from_quantized, kept between runs (the weights are constants).
struct QuantizedConvState {
  const void* source = nullptr;
  std::vector<int16_t> packed;
};

// ---------------------------------------------------------------- DeformConv

void deform_conv(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor& offset = ctx.input(2);
  if (x.rank() != 4)
    ctx.fail("only 2-D DeformConv (X of rank 4) is implemented, X has shape " + shape_string(x.shape()));
  if (w.rank() != 4 || offset.rank() != 4) ctx.fail("W and offset must be 4-D for a 2-D DeformConv");
  if (w.dtype() != x.dtype() || offset.dtype() != x.dtype()) ctx.fail("X, W and offset must have one type");
  const int64_t n = x.dim(0), ic = x.dim(1), ih = x.dim(2), iw = x.dim(3);
  const int64_t oc = w.dim(0);
  const int64_t group = ctx.attr_int("group", 1), og = ctx.attr_int("offset_group", 1);
  if (group <= 0 || og <= 0) ctx.fail("group and offset_group must be positive");
  if (ic != w.dim(1) * group || oc % group != 0)
    ctx.fail("X " + shape_string(x.shape()) + " and W " + shape_string(w.shape()) + " do not agree with group " +
             std::to_string(group));
  if (ic % og != 0) ctx.fail("input channels are not a multiple of offset_group");
  const std::vector<int64_t> ks = ctx.has_attr("kernel_shape") ? ctx.attr_ints("kernel_shape")
                                                               : std::vector<int64_t>{w.dim(2), w.dim(3)};
  if (ks.size() != 2 || ks[0] != w.dim(2) || ks[1] != w.dim(3)) ctx.fail("kernel_shape disagrees with W");
  const std::vector<int64_t> dil = spatial_attr(ctx, "dilations", 2, 1);
  const std::vector<int64_t> str = spatial_attr(ctx, "strides", 2, 1);
  const std::vector<int64_t> pads = spatial_attr(ctx, "pads", 4, 0);
  if (dil[0] <= 0 || dil[1] <= 0 || str[0] <= 0 || str[1] <= 0) ctx.fail("dilations and strides must be positive");
  const int64_t kh = ks[0], kw = ks[1];
  const int64_t oh = (ih + pads[0] + pads[2] - ((kh - 1) * dil[0] + 1)) / str[0] + 1;
  const int64_t ow = (iw + pads[1] + pads[3] - ((kw - 1) * dil[1] + 1)) / str[1] + 1;
  if (oh <= 0 || ow <= 0) ctx.fail("the dilated kernel does not fit the padded input");
  if (offset.shape() != std::vector<int64_t>{n, og * kh * kw * 2, oh, ow})
    ctx.fail("offset must be (N, offset_group * kH * kW * 2, oH, oW) = " + shape_string({n, og * kh * kw * 2, oh, ow}) +
             ", is " + shape_string(offset.shape()));
  const bool has_bias = ctx.has_input(3), has_mask = ctx.has_input(4);
  if (has_bias && (ctx.input(3).shape() != std::vector<int64_t>{oc} || ctx.input(3).dtype() != x.dtype()))
    ctx.fail("B must be (M) of the input type, is " + ctx.input(3).describe());
  if (has_mask && (ctx.input(4).shape() != std::vector<int64_t>{n, og * kh * kw, oh, ow} ||
                   ctx.input(4).dtype() != x.dtype()))
    ctx.fail("mask must be (N, offset_group * kH * kW, oH, oW) = " + shape_string({n, og * kh * kw, oh, ow}) +
             ", is " + ctx.input(4).describe());
  Tensor& y = ctx.output(0, x.dtype(), {n, oc, oh, ow});
  const int64_t icg = ic / group, ocg = oc / group, ico = ic / og, opix = oh * ow;
  visit_or_fail<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using F = calc_t<T>;
    const T* xp = x.data<T>();
    const T* wp = w.data<T>();
    const T* op = offset.data<T>();
    const T* bp = has_bias ? ctx.input(3).data<T>() : nullptr;
    const T* mp = has_mask ? ctx.input(4).data<T>() : nullptr;
    T* yp = y.mutable_data<T>();
    // One task per (batch, output channel): sample the deformed taps and sum.
    parallel_ranges(n * oc, 1, [&](int64_t t0, int64_t t1) {
      std::vector<F> acc(static_cast<size_t>(opix));
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t b = t / oc, m = t % oc, g = m / ocg;
        std::fill(acc.begin(), acc.end(), bp ? Num<T>::load(bp[m]) : F(0));
        for (int64_t cg = 0; cg < icg; ++cg) {
          const int64_t c = g * icg + cg, ogi = c / ico;
          const T* plane = xp + (b * ic + c) * ih * iw;
          for (int64_t a = 0; a < kh; ++a)
            for (int64_t e = 0; e < kw; ++e) {
              const F wv = Num<T>::load(wp[((m * icg + cg) * kh + a) * kw + e]);
              const int64_t tap = (ogi * kh + a) * kw + e;
              const T* off_h = op + ((b * og * kh * kw + tap) * 2) * opix;
              const T* off_w = off_h + opix;
              const T* mk = mp ? mp + (b * og * kh * kw + tap) * opix : nullptr;
              for (int64_t i = 0; i < oh; ++i)
                for (int64_t j = 0; j < ow; ++j) {
                  const int64_t p = i * ow + j;
                  const F ph = static_cast<F>(i * str[0] - pads[0] + a * dil[0]) + Num<T>::load(off_h[p]);
                  const F pw = static_cast<F>(j * str[1] - pads[1] + e * dil[1]) + Num<T>::load(off_w[p]);
                  // Bilinear sampling; neighbours outside the image count as zero.
                  if (!(ph > F(-1) && ph < static_cast<F>(ih) && pw > F(-1) && pw < static_cast<F>(iw))) continue;
                  const F h0f = std::floor(ph), w0f = std::floor(pw);
                  const auto h0 = static_cast<int64_t>(h0f), w0 = static_cast<int64_t>(w0f);
                  const F lh = ph - h0f, lw = pw - w0f;
                  auto px = [&](int64_t yy, int64_t xx) -> F {
                    return yy >= 0 && yy < ih && xx >= 0 && xx < iw ? Num<T>::load(plane[yy * iw + xx]) : F(0);
                  };
                  const F v = (F(1) - lh) * ((F(1) - lw) * px(h0, w0) + lw * px(h0, w0 + 1)) +
                              lh * ((F(1) - lw) * px(h0 + 1, w0) + lw * px(h0 + 1, w0 + 1));
                  const F mv = mk ? Num<T>::load(mk[p]) : F(1);
                  acc[static_cast<size_t>(p)] += wv * v * mv;
                }
            }
        }
        for (int64_t p = 0; p < opix; ++p) yp[t * opix + p] = Num<T>::store(acc[static_cast<size_t>(p)]);
      }
    });
  });
}

}  // namespace

void conv_from_quantized(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(3);
  const ConvGeometry g = integer_conv_geometry(ctx, 0, 2, 3, 5);
  const Tensor& xs = ctx.input(1);
  if (xs.dtype() != DataType::kFloat || xs.size() != 1) ctx.fail("x_scale must be one float32 value");
  const int32_t xz = ctx.has_input(2) ? int_at(ctx.input(2), 0) : 0;
  const Tensor& wst = ctx.input(4);
  if (wst.dtype() != DataType::kFloat || (wst.size() != 1 && wst.size() != g.m))
    ctx.fail("w_scale must hold 1 or " + std::to_string(g.m) + " float32 values");
  const float* bias = nullptr;
  if (ctx.has_input(6)) {
    const Tensor& b = ctx.input(6);
    if (b.dtype() != DataType::kFloat || b.size() != g.m) ctx.fail("B must hold " + std::to_string(g.m) + " float32 values");
    bias = b.data<float>();
  }
  // The product of the two scales once per channel, in double: each output is its exact
  // integer sum scaled, rounded once to float, plus the bias.
  std::vector<double> multiplier(static_cast<size_t>(g.m));
  for (int64_t m = 0; m < g.m; ++m)
    multiplier[static_cast<size_t>(m)] = double{xs.data<float>()[0]} * wst.data<float>()[wst.size() == 1 ? 0 : m];
  auto& state = ctx.state<QuantizedConvState>();
  if (state.source != w.raw() || state.packed.empty()) {
    state.packed = pack_conv_weights(g, w, per_channel_ints(ctx, 5, g.m, "w_zero_point"));
    state.source = w.raw();
  }
  std::vector<int64_t> shape{g.n, g.m};
  shape.insert(shape.end(), g.out.begin(), g.out.end());
  Tensor& y = ctx.output(0, DataType::kFloat, shape);
  // The sums are written where their floats go, then replaced tile by tile.
  auto* out = static_cast<unsigned char*>(y.mutable_raw());
  const Epilogue* ep = ctx.epilogue() && ctx.epilogue()->fits(g.m) ? ctx.epilogue() : nullptr;
  const int64_t osize = g.out_size();
  const auto finish = [&](int64_t n, int64_t m0, int64_t rows, int64_t o0, int64_t cols) {
    for (int64_t m = m0; m < m0 + rows; ++m) {
      unsigned char* row = out + ((n * g.m + m) * osize + o0) * 4;
      const double k = multiplier[static_cast<size_t>(m)];
      const float b = bias ? bias[m] : 0.0f;
      for (int64_t i = 0; i < cols; ++i) {
        int32_t a;
        std::memcpy(&a, row + i * 4, 4);
        const float v = static_cast<float>(a * k) + b;
        std::memcpy(row + i * 4, &v, 4);
      }
      if (ep) ep->apply(reinterpret_cast<float*>(row), m, cols);  // the bytes are floats now
    }
  };
  auto* sums = reinterpret_cast<int32_t*>(out);
  if (x.dtype() == DataType::kInt8) conv_integer_compute(g, x.data<int8_t>(), state.packed.data(), xz, sums, finish);
  else conv_integer_compute(g, x.data<uint8_t>(), state.packed.data(), xz, sums, finish);
  if (ep) ctx.epilogue_applied();
}

void register_conv_kernels(KernelRegistry& r) {
  r.add("Conv", conv);
  r.add("ConvTranspose", conv_transpose);
  r.add("ConvInteger", conv_integer);
  r.add("QLinearConv", qlinear_conv);
  r.add("DeformConv", deform_conv);
}

}  // namespace onnxtool::runner::cpu
