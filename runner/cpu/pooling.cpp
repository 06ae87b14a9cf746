// CPU kernels: MaxPool (with Indices), AveragePool, LpPool, their Global forms, MaxUnpool.
#include <cmath>
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "runner/cpu/elementwise_util.h"
#include "runner/cpu/kernels.h"
#include "runner/geometry.h"

namespace onnxtool::runner::cpu {

namespace {

enum class PoolKind { kMax, kAverage, kLp };

/// Pools one plane. Windows are visited in a fixed order; each output is written by one thread.
template <class T, PoolKind kKind>
void pool_plane(const PoolGeometry& g, const T* x, T* y, int64_t* indices, int64_t plane, bool count_include_pad, double p,
                bool column_major, int64_t plane_size_in) {
  using C = typename Num<T>::calc;
  const size_t rank = g.in.size();
  const int64_t osize = dims_product(g.out, 0, rank);
  std::vector<int64_t> o(rank, 0), k(rank);
  const int64_t ksize = dims_product(g.kernel, 0, rank);
  for (int64_t oi = 0; oi < osize; ++oi) {
    double acc = kKind == PoolKind::kMax ? -std::numeric_limits<double>::infinity() : 0;
    int64_t count = 0, best = -1;
    // Window extent clipped to the padded input (for count_include_pad).
    int64_t padded_count = 1;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t start = o[d] * g.stride[d] - g.pad_begin[d];
      const int64_t end = std::min(start + (g.kernel[d] - 1) * g.dilation[d] + 1, g.in[d] + g.pad_end[d]);
      int64_t n = 0;
      for (int64_t i = start; i < end; i += g.dilation[d]) ++n;
      padded_count *= n;
    }
    std::fill(k.begin(), k.end(), 0);
    for (int64_t ki = 0; ki < ksize; ++ki) {
      int64_t off = 0;
      int64_t cm_off = 0;
      bool inside = true;
      for (size_t d = 0; d < rank; ++d) {
        const int64_t i = o[d] * g.stride[d] - g.pad_begin[d] + k[d] * g.dilation[d];
        if (i < 0 || i >= g.in[d]) {
          inside = false;
          break;
        }
        off = off * g.in[d] + i;
      }
      if (inside) {
        const double v = static_cast<double>(static_cast<C>(Num<T>::load(x[off])));
        if constexpr (kKind == PoolKind::kMax) {
          if (v > acc || best < 0) {
            acc = v;
            best = off;
          }
        } else if constexpr (kKind == PoolKind::kAverage) {
          acc += v;
        } else {
          acc += std::pow(std::fabs(v), p);
        }
        ++count;
        (void)cm_off;
      }
      for (size_t d = rank; d-- > 0;) {
        if (++k[d] < g.kernel[d]) break;
        k[d] = 0;
      }
    }
    double out;
    if constexpr (kKind == PoolKind::kMax) {
      out = count ? acc : -std::numeric_limits<double>::infinity();
    } else if constexpr (kKind == PoolKind::kAverage) {
      const int64_t div = count_include_pad ? padded_count : count;
      out = div ? acc / static_cast<double>(div) : 0;
    } else {
      out = std::pow(acc, 1.0 / p);
    }
    y[oi] = Num<T>::store(static_cast<C>(out));
    if (indices) {
      int64_t idx = best;
      if (idx >= 0 && column_major) {
        // storage_order 1: the index in column-major order of the spatial dims.
        int64_t rem = idx, cm = 0, mul = 1;
        std::vector<int64_t> c(rank);
        for (size_t d = rank; d-- > 0;) {
          c[d] = rem % g.in[d];
          rem /= g.in[d];
        }
        for (size_t d = 0; d < rank; ++d) {
          cm += c[d] * mul;
          mul *= g.in[d];
        }
        idx = cm;
      }
      indices[oi] = plane * plane_size_in + idx;
    }
    for (size_t d = rank; d-- > 0;) {
      if (++o[d] < g.out[d]) break;
      o[d] = 0;
    }
  }
}

/// One spatial dim of an undilated pooling window: input and output sizes, kernel, stride and
/// leading pad. Window o covers [o * stride - pad, + kernel) clipped to [0, in).
struct PoolDim {
  int64_t in, out, kernel, stride, pad;
  int64_t lo(int64_t o) const { return std::max<int64_t>(o * stride - pad, 0); }
  int64_t hi(int64_t o) const { return std::min(o * stride - pad + kernel, in); }
};

/// acc[o] = max(acc[o], row[c]) over the columns c of window o in ascending order, keeping the
/// earlier value unless a later one is greater (so a NaN never enters). Outputs whose window lies
/// fully inside the row take a loop over the kernel offset outside and the outputs inside, which
/// vectorizes; the clipped ones at the ends go one by one.
void max_row_into(const float* row, float* acc, const PoolDim& w) {
  // Fully inside: o * stride >= pad and o * stride - pad + kernel <= in.
  const int64_t first = std::min((w.pad + w.stride - 1) / w.stride, w.out);
  const int64_t last = w.in - w.kernel + w.pad < 0 ? first : std::clamp((w.in - w.kernel + w.pad) / w.stride + 1, first, w.out);
  auto clipped = [&](int64_t o) {
    float a = acc[o];
    for (int64_t c = w.lo(o), e = w.hi(o); c < e; ++c) a = row[c] > a ? row[c] : a;
    acc[o] = a;
  };
  for (int64_t o = 0; o < first; ++o) clipped(o);
  if (w.stride == 1) {
    const float* base = row - w.pad;
    for (int64_t k = 0; k < w.kernel; ++k)
      for (int64_t o = first; o < last; ++o) acc[o] = base[o + k] > acc[o] ? base[o + k] : acc[o];
  } else if (w.stride == 2) {
    // (2x2/2 pools: a constant stride lets the loads vectorize.)
    for (int64_t k = 0; k < w.kernel; ++k) {
      const float* base = row - w.pad + k;
      for (int64_t o = first; o < last; ++o) acc[o] = base[o * 2] > acc[o] ? base[o * 2] : acc[o];
    }
  } else {
    const int64_t s = w.stride;
    for (int64_t k = 0; k < w.kernel; ++k) {
      const float* base = row - w.pad + k;
      for (int64_t o = first; o < last; ++o) acc[o] = base[o * s] > acc[o] ? base[o * s] : acc[o];
    }
  }
  for (int64_t o = last; o < w.out; ++o) clipped(o);
}

/// MaxPool of one float32 plane (rank 1 or 2, no dilation, no Indices); the same bits as
/// pool_plane. pool_plane scans each window in row-major order, takes its first element and then
/// any greater one: equal maxima (+0 and -0) resolve to the first, and a NaN wins only as the
/// window's first element (nothing compares greater). Here windows take the max over their
/// columns, then over their rows, both in ascending order and skipping NaNs, which picks the
/// same element; a last pass puts back the NaN of windows that start with one. Overlapping
/// row windows (stride < kernel) reuse each input row's column maxima from `scratch` (h x w.out
/// floats), so a k x k window costs 2k instead of k * k; otherwise rows go straight into the output.
/// `skip_nan_only`: the maxima skipping NaN, without putting back the NaN of windows that
/// start with one (max_pool_volume_f32 does that over the whole window).
void max_pool_plane_f32(const PoolDim& h, const PoolDim& w, const float* x, float* y, std::vector<float>& scratch,
                        bool skip_nan_only = false) {
  constexpr float kLowest = -std::numeric_limits<float>::infinity();  // an empty window's value
  const int64_t ow = w.out;
  std::fill(y, y + h.out * ow, kLowest);
  if (h.stride < h.kernel) {
    scratch.assign(static_cast<size_t>(h.in * ow), kLowest);
    for (int64_t r = 0; r < h.in; ++r) max_row_into(x + r * w.in, scratch.data() + r * ow, w);
    for (int64_t o = 0; o < h.out; ++o) {
      float* out = y + o * ow;
      for (int64_t r = h.lo(o), e = h.hi(o); r < e; ++r) {
        const float* m = scratch.data() + r * ow;
        for (int64_t j = 0; j < ow; ++j) out[j] = m[j] > out[j] ? m[j] : out[j];
      }
    }
  } else {
    for (int64_t o = 0; o < h.out; ++o)
      for (int64_t r = h.lo(o), e = h.hi(o); r < e; ++r) max_row_into(x + r * w.in, y + o * ow, w);
  }
  if (skip_nan_only) return;
  bool nan = false;
  for (int64_t i = 0; i < h.in * w.in; ++i) nan |= x[i] != x[i];
  if (!nan) return;
  for (int64_t o = 0; o < h.out; ++o)
    for (int64_t j = 0; j < ow; ++j) {
      if (h.lo(o) >= h.hi(o) || w.lo(j) >= w.hi(j)) continue;
      const float first = x[h.lo(o) * w.in + w.lo(j)];
      if (first != first) {
        // pool_plane's value went through double: the NaN comes out quiet, payload kept.
        uint32_t bits;
        std::memcpy(&bits, &first, sizeof(bits));
        bits |= 0x00400000u;
        std::memcpy(y + o * ow + j, &bits, sizeof(bits));
      }
    }
}

/// Whether max_pool_pairs_f32 takes a plane: windows of two columns at stride 2 and of one or
/// two rows at a stride of their height, none of them clipped (no pads, whole windows).
bool is_pair_pool(const PoolDim& h, const PoolDim& w) {
  return w.kernel == 2 && w.stride == 2 && w.pad == 0 && 2 * w.out <= w.in && (h.kernel == 1 || h.kernel == 2) &&
         h.stride == h.kernel && h.pad == 0 && h.kernel * h.out <= h.in;
}

/// The window's value as pool_plane computes it: its first element, then each later one that is
/// greater (a NaN stays only as the first), a NaN made quiet (pool_plane goes through double).
template <class V, class I>
inline V pair_window_max(V first, V b, V c, V d) {
  V m = b > first ? b : first;
  m = c > m ? c : m;
  m = d > m ? d : m;
  I bits;
  std::memcpy(&bits, &m, sizeof bits);
  bits |= (m != m) & static_cast<int32_t>(0x00400000);
  std::memcpy(&m, &bits, sizeof bits);
  return m;
}

/// MaxPool of a float32 plane whose windows are 1x2 or 2x2 at their own stride (is_pair_pool),
/// the commonest pools of all (VGG-style and audio nets), a vector of outputs at a time from two
/// vectors of each input row split into even and odd columns: the bits of pool_plane.
void max_pool_pairs_f32(const PoolDim& h, const PoolDim& w, const float* x, float* y) {
  const int64_t ow = w.out, iw = w.in;
  for (int64_t o = 0; o < h.out; ++o) {
    const float* r0 = x + o * h.kernel * iw;
    const float* r1 = h.kernel == 2 ? r0 + iw : r0;
    float* out = y + o * ow;
    int64_t j = 0;
    for (; j + kWideLanes <= ow; j += kWideLanes) {
      f32xw a0, a1, b0, b1;
      std::memcpy(&a0, r0 + 2 * j, sizeof a0);
      std::memcpy(&a1, r0 + 2 * j + kWideLanes, sizeof a1);
      std::memcpy(&b0, r1 + 2 * j, sizeof b0);
      std::memcpy(&b1, r1 + 2 * j + kWideLanes, sizeof b1);
      const f32xw m = pair_window_max<f32xw, i32xw>(every_other_float<0>(a0, a1), every_other_float<1>(a0, a1),
                                                    every_other_float<0>(b0, b1), every_other_float<1>(b0, b1));
      std::memcpy(out + j, &m, sizeof m);
    }
    for (; j < ow; ++j) {
      // One lane of the same operations.
      typedef float f1 __attribute__((vector_size(4)));
      typedef int32_t i1 __attribute__((vector_size(4)));
      const f1 m = pair_window_max<f1, i1>(f1{r0[2 * j]}, f1{r0[2 * j + 1]}, f1{r1[2 * j]}, f1{r1[2 * j + 1]});
      out[j] = m[0];
    }
  }
}

/// MaxPool of one float32 volume (3 spatial dims, no dilation, no Indices); the same bits as
/// pool_plane. Each input depth slice is pooled over height and width once (maxima skipping
/// NaN), then each output takes the greatest of its depth window's slices in ascending order,
/// keeping the earlier on ties: the element pool_plane's row-major scan keeps. A window whose
/// first element is NaN is NaN, as there.
void max_pool_volume_f32(const PoolDim& d, const PoolDim& h, const PoolDim& w, const float* x, float* y,
                         std::vector<float>& slices, std::vector<float>& scratch) {
  constexpr float kLowest = -std::numeric_limits<float>::infinity();
  const int64_t plane_in = h.in * w.in, plane_out = h.out * w.out;
  slices.resize(static_cast<size_t>(d.in * plane_out));
  for (int64_t i = 0; i < d.in; ++i)
    max_pool_plane_f32(h, w, x + i * plane_in, slices.data() + i * plane_out, scratch, /*skip_nan_only=*/true);
  bool nan = false;
  for (int64_t i = 0; i < d.in * plane_in; ++i) nan |= x[i] != x[i];
  for (int64_t o = 0; o < d.out; ++o) {
    float* out = y + o * plane_out;
    std::fill(out, out + plane_out, kLowest);
    for (int64_t i = d.lo(o); i < d.hi(o); ++i) {
      const float* m = slices.data() + i * plane_out;
      for (int64_t j = 0; j < plane_out; ++j) out[j] = m[j] > out[j] ? m[j] : out[j];
    }
    if (!nan || d.lo(o) >= d.hi(o)) continue;
    for (int64_t r = 0; r < h.out; ++r)
      for (int64_t c = 0; c < w.out; ++c) {
        if (h.lo(r) >= h.hi(r) || w.lo(c) >= w.hi(c)) continue;
        const float first = x[d.lo(o) * plane_in + h.lo(r) * w.in + w.lo(c)];
        if (first != first) {
          // pool_plane's value went through double: the NaN comes out quiet, payload kept.
          uint32_t bits;
          std::memcpy(&bits, &first, sizeof(bits));
          bits |= 0x00400000u;
          std::memcpy(out + r * w.out + c, &bits, sizeof(bits));
        }
      }
  }
}

/// AveragePool of one float32 plane (1 to 3 spatial dims, no dilation), summed in double:
/// first each input row's window sums (for every kernel column in order, its input column
/// added to the outputs that hold it: a loop over outputs that vectorizes), then each output
/// adds the row sums of its window's rows in order, divided by its count (or, with
/// count_include_pad, by the window clipped to the padded input), rounded once to float. A k x k
/// window costs 2k additions instead of k * k. The double sums of float inputs are exact (so
/// the same as the generic scan's) unless the window's values span more than 2^29 in magnitude.
/// `dims` are the spatial dims, outermost first; `pad_end` their trailing pads.
void average_pool_plane_f32(const std::vector<PoolDim>& dims, const std::vector<int64_t>& pad_end, bool include_pad,
                            const float* x, float* y, std::vector<double>& rows_sum, std::vector<double>& acc) {
  const size_t rank = dims.size();
  const PoolDim& w = dims[rank - 1];
  // The window's extent within the padded input (count_include_pad's divisor), and within the input.
  const auto padded = [](const PoolDim& d, int64_t end, int64_t o) {
    const int64_t start = o * d.stride - d.pad;
    return std::max<int64_t>(std::min(start + d.kernel, d.in + end) - start, 0);
  };
  const auto inside = [](const PoolDim& d, int64_t o) { return std::max<int64_t>(d.hi(o) - d.lo(o), 0); };
  const PoolDim unit{1, 1, 1, 1, 0};
  const PoolDim& d0 = rank == 3 ? dims[0] : unit;
  const PoolDim& d1 = rank >= 2 ? dims[rank - 2] : unit;
  const int64_t end0 = rank == 3 ? pad_end[0] : 0, end1 = rank >= 2 ? pad_end[rank - 2] : 0;
  // Row sums of every input row (depth x height of them) over each output column's window.
  rows_sum.assign(static_cast<size_t>(d0.in * d1.in * w.out), 0.0);
  for (int64_t r = 0; r < d0.in * d1.in; ++r) {
    const float* row = x + r * w.in;
    double* sums = rows_sum.data() + r * w.out;
    for (int64_t k = 0; k < w.kernel; ++k) {
      // Outputs j whose column j * stride - pad + k lies inside the row.
      const int64_t off = k - w.pad;
      const int64_t j0 = off >= 0 ? 0 : (-off + w.stride - 1) / w.stride;
      const int64_t j1 = w.in - off <= 0 ? 0 : std::min(w.out, (w.in - off - 1) / w.stride + 1);
      if (w.stride == 1) {
        const float* src = row + off;
        for (int64_t j = j0; j < j1; ++j) sums[j] += static_cast<double>(src[j]);
      } else {
        for (int64_t j = j0; j < j1; ++j) sums[j] += static_cast<double>(row[j * w.stride + off]);
      }
    }
  }
  acc.resize(static_cast<size_t>(w.out));
  for (int64_t o0 = 0; o0 < d0.out; ++o0)
    for (int64_t o1 = 0; o1 < d1.out; ++o1) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t i0 = d0.lo(o0); i0 < d0.hi(o0); ++i0)
        for (int64_t i1 = d1.lo(o1); i1 < d1.hi(o1); ++i1) {
          const double* sums = rows_sum.data() + (i0 * d1.in + i1) * w.out;
          for (int64_t j = 0; j < w.out; ++j) acc[static_cast<size_t>(j)] += sums[j];
        }
      const int64_t outer = inside(d0, o0) * inside(d1, o1);
      const int64_t outer_padded = (rank == 3 ? padded(d0, end0, o0) : 1) * (rank >= 2 ? padded(d1, end1, o1) : 1);
      float* out = y + (o0 * d1.out + o1) * w.out;
      for (int64_t j = 0; j < w.out; ++j) {
        const int64_t div = include_pad ? outer_padded * padded(w, pad_end[rank - 1], j) : outer * inside(w, j);
        out[j] = div ? static_cast<float>(acc[static_cast<size_t>(j)] / static_cast<double>(div)) : 0.0f;
      }
    }
}

template <PoolKind kKind>
void pool(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const PoolGeometry g = pool_geometry(ctx, x.shape());
  std::vector<int64_t> shape{x.dim(0), x.dim(1)};
  shape.insert(shape.end(), g.out.begin(), g.out.end());
  Tensor& y = ctx.output(0, x.dtype(), shape);
  int64_t* indices = nullptr;
  if (kKind == PoolKind::kMax && ctx.output_count() > 1 && ctx.has_output(1))
    indices = ctx.output(1, DataType::kInt64, shape).mutable_data<int64_t>();
  if (kKind == PoolKind::kMax && ctx.attr_int("storage_order", 0) != 0 && g.in.size() != 2 && indices)
    ctx.fail("storage_order 1 is defined for 2-D pooling");
  const bool include_pad = ctx.attr_int("count_include_pad", 0) != 0;
  // LpPool-1 declares p as a float attribute, later versions as an int.
  const double p = ctx.opset() < 2 ? ctx.attr_float("p", 2.0f) : static_cast<double>(ctx.attr_int("p", 2));
  const bool column_major = ctx.attr_int("storage_order", 0) != 0;
  const int64_t isize = dims_product(g.in, 0, g.in.size()), osize = dims_product(g.out, 0, g.out.size());
  if (kKind == PoolKind::kMax && (x.dtype() == DataType::kFloat || x.dtype() == DataType::kFloat16) && !indices &&
      g.in.size() <= 2 && std::all_of(g.dilation.begin(), g.dilation.end(), [](int64_t d) { return d == 1; })) {
    // 1-D pools as 2-D ones of height 1.
    const size_t r = g.in.size();
    const PoolDim h = r == 2 ? PoolDim{g.in[0], g.out[0], g.kernel[0], g.stride[0], g.pad_begin[0]} : PoolDim{1, 1, 1, 1, 0};
    const PoolDim w{g.in[r - 1], g.out[r - 1], g.kernel[r - 1], g.stride[r - 1], g.pad_begin[r - 1]};
    if (x.dtype() == DataType::kFloat) {
      const bool pair = is_pair_pool(h, w);
      const float* px = x.data<float>();
      float* py = y.mutable_data<float>();
      parallel_ranges(g.planes, 1, [&](int64_t p0, int64_t p1) {
        std::vector<float> scratch;
        for (int64_t pl = p0; pl < p1; ++pl) {
          if (pair) max_pool_pairs_f32(h, w, px + pl * isize, py + pl * osize);
          else max_pool_plane_f32(h, w, px + pl * isize, py + pl * osize, scratch);
        }
      });
    } else {
      // float16: each plane widened to float32 (exact), pooled, and narrowed back, which is
      // exact for the maxima and maps a NaN as store_half does in pool_plane.
      const uint16_t* px = x.data<uint16_t>();
      uint16_t* py = y.mutable_data<uint16_t>();
      parallel_ranges(g.planes, 1, [&](int64_t p0, int64_t p1) {
        std::vector<float> scratch, in(static_cast<size_t>(isize)), out(static_cast<size_t>(osize));
        for (int64_t pl = p0; pl < p1; ++pl) {
          halves_to_floats(px + pl * isize, in.data(), isize);
          max_pool_plane_f32(h, w, in.data(), out.data(), scratch);
          floats_to_halves(out.data(), py + pl * osize, osize);
        }
      });
    }
    return;
  }
  if (kKind == PoolKind::kAverage && x.dtype() == DataType::kFloat && !g.in.empty() && g.in.size() <= 3 &&
      std::all_of(g.dilation.begin(), g.dilation.end(), [](int64_t d) { return d == 1; })) {
    std::vector<PoolDim> dims;
    for (size_t d = 0; d < g.in.size(); ++d) dims.push_back({g.in[d], g.out[d], g.kernel[d], g.stride[d], g.pad_begin[d]});
    const float* px = x.data<float>();
    float* py = y.mutable_data<float>();
    parallel_ranges(g.planes, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(osize, 1)), [&](int64_t p0, int64_t p1) {
      std::vector<double> rows_sum, acc;
      for (int64_t pl = p0; pl < p1; ++pl)
        average_pool_plane_f32(dims, g.pad_end, include_pad, px + pl * isize, py + pl * osize, rows_sum, acc);
    });
    return;
  }
  if (kKind == PoolKind::kMax && x.dtype() == DataType::kFloat && !indices && g.in.size() == 3 &&
      std::all_of(g.dilation.begin(), g.dilation.end(), [](int64_t d) { return d == 1; })) {
    const PoolDim d{g.in[0], g.out[0], g.kernel[0], g.stride[0], g.pad_begin[0]};
    const PoolDim h{g.in[1], g.out[1], g.kernel[1], g.stride[1], g.pad_begin[1]};
    const PoolDim w{g.in[2], g.out[2], g.kernel[2], g.stride[2], g.pad_begin[2]};
    const float* px = x.data<float>();
    float* py = y.mutable_data<float>();
    parallel_ranges(g.planes, 1, [&](int64_t p0, int64_t p1) {
      std::vector<float> slices, scratch;
      for (int64_t pl = p0; pl < p1; ++pl) max_pool_volume_f32(d, h, w, px + pl * isize, py + pl * osize, slices, scratch);
    });
    return;
  }
  constexpr unsigned kTypes = kKind == PoolKind::kMax ? (kFloats | kSignedInts | kUnsignedInts) : kFloats;
  visit_or_fail<kTypes>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    parallel_ranges(g.planes, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t pl = p0; pl < p1; ++pl)
        pool_plane<T, kKind>(g, px + pl * isize, py + pl * osize, indices ? indices + pl * osize : nullptr, pl, include_pad, p,
                             column_major, isize);
    });
  });
}

template <PoolKind kKind>
void global_pool(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 3) ctx.fail("X must be [N, C, D1, ...], got " + x.describe());
  std::vector<int64_t> shape(x.rank(), 1);
  shape[0] = x.dim(0);
  shape[1] = x.dim(1);
  Tensor& y = ctx.output(0, x.dtype(), shape);
  const int64_t planes = x.dim(0) * x.dim(1), size = x.size() / std::max<int64_t>(planes, 1);
  const double p = ctx.opset() < 2 ? ctx.attr_float("p", 2.0f) : static_cast<double>(ctx.attr_int("p", 2));
  if (kKind != PoolKind::kLp && x.dtype() == DataType::kFloat) {
    // float32: eight partial results per plane (sums in double, or maxima), combined in a fixed
    // order: one chain of dependent additions waited on each addition's latency.
    const float* px = x.data<float>();
    float* py = y.mutable_data<float>();
    parallel_ranges(planes, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(size, 1)), [&](int64_t p0, int64_t p1) {
      for (int64_t pl = p0; pl < p1; ++pl) {
        const float* v = px + pl * size;
        constexpr int64_t kLanes = 8;
        double lane[kLanes];
        std::fill(lane, lane + kLanes, kKind == PoolKind::kMax ? -std::numeric_limits<double>::infinity() : 0.0);
        int64_t i = 0;
        for (; i + kLanes <= size; i += kLanes)
          for (int64_t l = 0; l < kLanes; ++l) {
            const double e = v[i + l];
            if constexpr (kKind == PoolKind::kMax) lane[l] = lane[l] < e ? e : lane[l];  // NaN never enters
            else lane[l] += e;
          }
        for (int64_t l = 0; i < size; ++i, ++l) {
          const double e = v[i];
          if constexpr (kKind == PoolKind::kMax) lane[l] = lane[l] < e ? e : lane[l];
          else lane[l] += e;
        }
        for (int64_t half = kLanes / 2; half > 0; half /= 2)
          for (int64_t l = 0; l < half; ++l) {
            if constexpr (kKind == PoolKind::kMax) lane[l] = lane[l] < lane[l + half] ? lane[l + half] : lane[l];
            else lane[l] += lane[l + half];
          }
        double acc = lane[0];
        if constexpr (kKind == PoolKind::kAverage) acc = size ? acc / static_cast<double>(size) : 0;
        py[pl] = static_cast<float>(acc);
      }
    });
    return;
  }
  visit_or_fail<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = typename Num<T>::calc;
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    parallel_ranges(planes, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t pl = p0; pl < p1; ++pl) {
        const T* v = px + pl * size;
        double acc = kKind == PoolKind::kMax ? -std::numeric_limits<double>::infinity() : 0;
        for (int64_t i = 0; i < size; ++i) {
          const double e = static_cast<double>(static_cast<C>(Num<T>::load(v[i])));
          if constexpr (kKind == PoolKind::kMax) acc = std::max(acc, e);
          else if constexpr (kKind == PoolKind::kAverage) acc += e;
          else acc += std::pow(std::fabs(e), p);
        }
        if constexpr (kKind == PoolKind::kAverage) acc = size ? acc / static_cast<double>(size) : 0;
        if constexpr (kKind == PoolKind::kLp) acc = std::pow(acc, 1.0 / p);
        py[pl] = Num<T>::store(static_cast<C>(acc));
      }
    });
  });
}

void max_unpool(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  if (x.rank() < 3 || ind.shape() != x.shape() || ind.dtype() != DataType::kInt64)
    ctx.fail("X and I must have the same [N, C, D...] shape, I int64");
  const size_t rank = x.rank() - 2;
  std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape");
  if (kernel.size() != rank) ctx.fail("kernel_shape must have " + std::to_string(rank) + " values");
  const auto stride = spatial_attr(ctx, "strides", rank, 1);
  std::vector<int64_t> pads = ctx.attr_ints("pads");
  if (pads.empty()) pads.assign(2 * rank, 0);
  std::vector<int64_t> shape{x.dim(0), x.dim(1)};
  for (size_t i = 0; i < rank; ++i) shape.push_back((x.dim(i + 2) - 1) * stride[i] + kernel[i] - pads[i] - pads[i + rank]);
  const std::vector<int64_t> natural = shape;  // the shape the indices refer to
  if (ctx.has_input(2)) {
    const auto os = read_int_list(ctx, ctx.input(2), "output_shape");
    if (os.size() != x.rank()) ctx.fail("output_shape must have rank " + std::to_string(x.rank()) + " values");
    shape = os;
  }
  Tensor& y = ctx.output(0, x.dtype(), shape);
  std::memset(y.mutable_raw(), 0, y.bytes());
  const int64_t total = y.size();
  visit_or_fail<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    const int64_t* pi = ind.data<int64_t>();
    const int64_t natural_total = shape_size(natural);
    for (int64_t i = 0; i < x.size(); ++i) {
      if (pi[i] < 0 || pi[i] >= natural_total) ctx.fail("index " + std::to_string(pi[i]) + " is outside the unpooled tensor");
      // Re-linearize the index from the natural unpooled shape into the requested one.
      int64_t rem = pi[i], off = 0, mul = 1;
      for (size_t d = natural.size(); d-- > 0;) {
        const int64_t c = rem % natural[d];
        rem /= natural[d];
        if (c >= shape[d]) ctx.fail("index " + std::to_string(pi[i]) + " does not fit output_shape");
        off += c * mul;
        mul *= shape[d];
      }
      if (off >= total) ctx.fail("index " + std::to_string(pi[i]) + " is outside the output");
      py[off] = px[i];
    }
  });
}

}  // namespace

void register_pooling_kernels(KernelRegistry& r) {
  r.add("MaxPool", pool<PoolKind::kMax>);
  r.add("AveragePool", pool<PoolKind::kAverage>);
  r.add("LpPool", pool<PoolKind::kLp>);
  r.add("GlobalMaxPool", global_pool<PoolKind::kMax>);
  r.add("GlobalAveragePool", global_pool<PoolKind::kAverage>);
  r.add("GlobalLpPool", global_pool<PoolKind::kLp>);
  r.add("MaxUnpool", max_unpool);
}

}  // namespace onnxtool::runner::cpu
