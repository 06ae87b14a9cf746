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

/// MaxRoiPool: max over a pooled_shape grid of bins of each RoI (x1, y1, x2, y2 scaled by
/// spatial_scale and rounded; bins with no pixel give 0).
void max_roi_pool(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  if (x.rank() != 4 || rois.rank() != 2 || rois.dim(1) != 5) ctx.fail("X must be [N, C, H, W] and rois [R, 5]");
  const auto pooled = ctx.attr_ints("pooled_shape");
  if (pooled.size() != 2 || pooled[0] < 1 || pooled[1] < 1) ctx.fail("pooled_shape must be two positive sizes");
  const double scale = ctx.attr_float("spatial_scale", 1.0f);
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3), ph = pooled[0], pw = pooled[1];
  const int64_t r = rois.dim(0);
  Tensor& y = ctx.output(0, x.dtype(), {r, c, ph, pw});
  visit_or_fail<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = typename Num<T>::calc;
    const T* px = x.data<T>();
    const T* pr = rois.data<T>();
    T* py = y.mutable_data<T>();
    for (int64_t i = 0; i < r; ++i) {
      const auto b = static_cast<int64_t>(static_cast<double>(static_cast<C>(Num<T>::load(pr[i * 5]))));
      if (b < 0 || b >= n) ctx.fail("RoI batch index " + std::to_string(b) + " is outside [0, " + std::to_string(n) + ")");
      auto coord = [&](int k) { return static_cast<int64_t>(std::round(static_cast<double>(static_cast<C>(Num<T>::load(pr[i * 5 + k]))) * scale)); };
      const int64_t x1 = coord(1), y1 = coord(2), x2 = coord(3), y2 = coord(4);
      const double bin_h = static_cast<double>(std::max<int64_t>(y2 - y1 + 1, 1)) / static_cast<double>(ph);
      const double bin_w = static_cast<double>(std::max<int64_t>(x2 - x1 + 1, 1)) / static_cast<double>(pw);
      for (int64_t ch = 0; ch < c; ++ch) {
        const T* plane = px + (b * c + ch) * h * w;
        for (int64_t py_ = 0; py_ < ph; ++py_)
          for (int64_t px_ = 0; px_ < pw; ++px_) {
            const int64_t hs = std::clamp<int64_t>(static_cast<int64_t>(std::floor(py_ * bin_h)) + y1, 0, h);
            const int64_t he = std::clamp<int64_t>(static_cast<int64_t>(std::ceil((py_ + 1) * bin_h)) + y1, 0, h);
            const int64_t ws = std::clamp<int64_t>(static_cast<int64_t>(std::floor(px_ * bin_w)) + x1, 0, w);
            const int64_t we = std::clamp<int64_t>(static_cast<int64_t>(std::ceil((px_ + 1) * bin_w)) + x1, 0, w);
            double best = 0;
            bool any = false;
            for (int64_t yy = hs; yy < he; ++yy)
              for (int64_t xx = ws; xx < we; ++xx) {
                const double v = static_cast<double>(static_cast<C>(Num<T>::load(plane[yy * w + xx])));
                if (!any || v > best) best = v;
                any = true;
              }
            py[((i * c + ch) * ph + py_) * pw + px_] = Num<T>::store(static_cast<C>(any ? best : 0.0));
          }
      }
    }
  });
}

}  // namespace

void register_pooling_kernels(KernelRegistry& r) {
  r.add("", "MaxRoiPool", 1, kMaxOpset, max_roi_pool);
  r.add("", "MaxPool", 1, kMaxOpset, pool<PoolKind::kMax>);
  r.add("", "AveragePool", 1, kMaxOpset, pool<PoolKind::kAverage>);
  r.add("", "LpPool", 1, kMaxOpset, pool<PoolKind::kLp>);
  r.add("", "GlobalMaxPool", 1, kMaxOpset, global_pool<PoolKind::kMax>);
  r.add("", "GlobalAveragePool", 1, kMaxOpset, global_pool<PoolKind::kAverage>);
  r.add("", "GlobalLpPool", 1, kMaxOpset, global_pool<PoolKind::kLp>);
  r.add("", "MaxUnpool", 9, kMaxOpset, max_unpool);
}

}  // namespace onnxtool::runner::cpu
