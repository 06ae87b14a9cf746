// Resampling kernels: Resize and Upsample (image scaling, in the vision family).
#include <cmath>
#include <limits>
#include <numeric>

#include "runner/cpu/kernels.h"
#include "runner/cpu/tensor_util.h"

namespace onnxtool::runner::cpu {
namespace {

enum class ResizeMode { kNearest, kLinear, kCubic };
enum class CoordMode { kHalfPixel, kHalfPixelSymmetric, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfHalfPixelForNN, kTfCropAndResize };
// kSimple: Upsample and Resize-10 (truncate when upsampling, ceil when downsampling).
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };

struct ResizeSpec {
  ResizeMode mode = ResizeMode::kNearest;
  CoordMode coord = CoordMode::kAsymmetric;
  NearestMode nearest = NearestMode::kSimple;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double extrapolation = 0;
};

/// Per output axis: the input taps of every output coordinate (n per coordinate, weights
/// summing to 1 unless excluded) and where the coordinate falls outside the crop (extrapolated).
struct AxisTaps {
  int64_t n = 1;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<uint8_t> outside;
  bool identity = false;
  bool any_outside = false;
};

/// The input coordinate of output coordinate `o` of one axis. As in the spec's reference, the
/// resized length of align_corners, pytorch_half_pixel and half_pixel_symmetric is the unrounded
/// in_len * scale (it matters when scales are given); tf_crop_and_resize uses the output length.
double source_coord(CoordMode m, int64_t o, double scale, int64_t in_len, int64_t out_len, double roi_start, double roi_end) {
  const double x = static_cast<double>(o);
  const double in = static_cast<double>(in_len);
  const double resized = in * scale;
  switch (m) {
    case CoordMode::kHalfPixel:
      return (x + 0.5) / scale - 0.5;
    case CoordMode::kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(out_len) / resized;
      return in / 2 * (1 - adjustment) + (x + 0.5) / scale - 0.5;
    }
    case CoordMode::kPytorchHalfPixel:
      return resized > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case CoordMode::kAlignCorners:
      return resized > 1 ? x * (in - 1) / (resized - 1) : 0.0;
    case CoordMode::kAsymmetric:
      return x / scale;
    case CoordMode::kTfHalfPixelForNN:
      return (x + 0.5) / scale;
    case CoordMode::kTfCropAndResize:
      return out_len > 1 ? roi_start * (in - 1) + x * (roi_end - roi_start) * (in - 1) / static_cast<double>(out_len - 1)
                         : 0.5 * (roi_start + roi_end) * (in - 1);
  }
  return x;
}

int64_t nearest_index(NearestMode m, double x, double scale) {
  const double f = std::floor(x);
  switch (m) {
    case NearestMode::kRoundPreferFloor:
      return static_cast<int64_t>(x - f > 0.5 ? f + 1 : f);
    case NearestMode::kRoundPreferCeil:
      return static_cast<int64_t>(x - f >= 0.5 ? f + 1 : f);
    case NearestMode::kFloor:
      return static_cast<int64_t>(f);
    case NearestMode::kCeil:
      return static_cast<int64_t>(std::ceil(x));
    case NearestMode::kSimple:
      return scale < 1 ? static_cast<int64_t>(std::ceil(x)) : static_cast<int64_t>(x);
  }
  return static_cast<int64_t>(f);
}

/// Keys' cubic convolution kernel with coefficient a.
double cubic_kernel(double s, double a) {
  s = std::fabs(s);
  if (s <= 1) return ((a + 2) * s - (a + 3)) * s * s + 1;
  if (s < 2) return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
  return 0;
}

AxisTaps axis_taps(const ResizeSpec& spec, int64_t in_len, int64_t out_len, double scale, double roi_start, double roi_end) {
  AxisTaps t;
  // Filter support in input pixels: 1 (linear) or 2 (cubic), stretched by 1/scale when
  // antialiasing a downscale.
  const double stretch = spec.antialias && scale < 1 ? scale : 1.0;
  int64_t first = 0;  // first tap relative to floor(x)
  if (spec.mode == ResizeMode::kLinear) {
    first = static_cast<int64_t>(std::floor(-1 / stretch)) + 1;
    t.n = 2 - 2 * first;
  } else if (spec.mode == ResizeMode::kCubic) {
    first = static_cast<int64_t>(std::floor(-2 / stretch)) + 1;
    t.n = 2 - 2 * first;
  }
  const size_t n = static_cast<size_t>(t.n);
  t.index.assign(static_cast<size_t>(out_len) * n, 0);
  t.weight.assign(static_cast<size_t>(out_len) * n, 0.0);
  t.outside.assign(static_cast<size_t>(out_len), 0);
  std::vector<double> w(n);
  for (int64_t o = 0; o < out_len; ++o) {
    const double x = source_coord(spec.coord, o, scale, in_len, out_len, roi_start, roi_end);
    int64_t* idx = &t.index[static_cast<size_t>(o) * n];
    double* wt = &t.weight[static_cast<size_t>(o) * n];
    if (spec.coord == CoordMode::kTfCropAndResize && (x < 0 || x > static_cast<double>(in_len - 1))) {
      t.outside[static_cast<size_t>(o)] = 1;
      t.any_outside = true;
      continue;
    }
    if (spec.mode == ResizeMode::kNearest) {
      idx[0] = std::clamp<int64_t>(nearest_index(spec.nearest, x, scale), 0, in_len - 1);
      wt[0] = 1;
      continue;
    }
    const double fl = std::floor(x);
    double sum = 0;
    for (size_t i = 0; i < n; ++i) {
      const double p = fl + static_cast<double>(first) + static_cast<double>(i);
      const double s = (p - x) * stretch;
      w[i] = spec.mode == ResizeMode::kLinear ? std::max(0.0, 1 - std::fabs(s)) : cubic_kernel(s, spec.cubic_a);
      sum += w[i];
    }
    // The plain kernels already sum to 1; the stretched ones are normalized.
    if (stretch < 1 && sum != 0)
      for (double& v : w) v /= sum;
    if (spec.exclude_outside) {
      double kept = 0;
      for (size_t i = 0; i < n; ++i) {
        const int64_t p = static_cast<int64_t>(fl) + first + static_cast<int64_t>(i);
        if (p < 0 || p >= in_len) w[i] = 0;
        kept += w[i];
      }
      if (kept != 0)
        for (double& v : w) v /= kept;
    }
    for (size_t i = 0; i < n; ++i) {
      idx[i] = std::clamp<int64_t>(static_cast<int64_t>(fl) + first + static_cast<int64_t>(i), 0, in_len - 1);
      wt[i] = w[i];
    }
  }
  // Compact to one tap per coordinate when no coordinate has two non-zero weights (integer
  // coordinates, scale 1).
  bool single = true;
  for (int64_t o = 0; o < out_len && single; ++o) {
    int nonzero = 0;
    for (size_t i = 0; i < n; ++i) nonzero += t.weight[static_cast<size_t>(o) * n + i] != 0;
    single = nonzero <= 1;
  }
  if (single && n > 1) {
    AxisTaps c;
    c.n = 1;
    c.outside = t.outside;
    c.any_outside = t.any_outside;
    for (int64_t o = 0; o < out_len; ++o) {
      size_t pick = 0;
      for (size_t i = 0; i < n; ++i)
        if (t.weight[static_cast<size_t>(o) * n + i] != 0) pick = i;
      c.index.push_back(t.index[static_cast<size_t>(o) * n + pick]);
      c.weight.push_back(t.weight[static_cast<size_t>(o) * n + pick]);
    }
    t = std::move(c);
  }
  t.identity = t.n == 1 && out_len == in_len && !t.any_outside;
  for (int64_t o = 0; o < out_len && t.identity; ++o)
    t.identity = t.index[static_cast<size_t>(o)] == o && t.weight[static_cast<size_t>(o)] == 1;
  return t;
}

/// Stores a computed value into an element: rounded and saturated for integers.
template <class T>
T store_resampled(double v) {
  using C = calc_t<T>;
  if constexpr (std::is_same_v<C, bool>) {
    return Num<T>::store(v != 0);
  } else if constexpr (std::is_integral_v<C>) {
    const double r = std::nearbyint(v);
    const double lo = static_cast<double>(std::numeric_limits<C>::lowest());
    const double hi = static_cast<double>(std::numeric_limits<C>::max());
    if (!(r >= lo)) return Num<T>::store(std::numeric_limits<C>::lowest());
    if (r >= hi) return Num<T>::store(std::numeric_limits<C>::max());
    return Num<T>::store(static_cast<C>(r));
  } else {
    return Num<T>::store(static_cast<C>(v));
  }
}

/// A scalar of the input's type holding the extrapolation value (empty string, zero bytes for
/// types without a numeric conversion).
Tensor extrapolation_element(const Tensor& x, double v) {
  Tensor t(x.dtype(), {});
  if (x.dtype() == DataType::kString) return t;
  if (!visit<kAllPlain>(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        t.mutable_data<T>()[0] = store_resampled<T>(v);
      }))
    std::memset(t.mutable_raw(), 0, t.bytes());
  return t;
}

/// Resampling where every axis has one tap of weight 1: a gather of whole elements (any type).
/// Output rows (all axes but the last) that read the same source row as the row before are
/// copied from it.
void resample_gather(const KernelContext& ctx, const Tensor& x, Tensor& out, const std::vector<AxisTaps>& axes,
                     const Tensor& fill_t) {
  const size_t r = x.rank();
  const auto in_strides = strides_of(x.shape());
  const std::vector<int64_t>& shape = out.shape();
  const int64_t inner = shape[r - 1];
  const int64_t rows = out.size() / inner;
  const AxisTaps& last = axes[r - 1];
  visit_storage_or_fail(ctx, x.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E fill = elements<E>(fill_t)[0];
    const E* in = elements<E>(x);
    E* o = mutable_elements<E>(out);
    parallel_ranges(rows, std::max<int64_t>(1, 8192 / inner), [&](int64_t r0, int64_t r1) {
      std::vector<int64_t> c(r - 1);
      unravel(r0, std::vector<int64_t>(shape.begin(), shape.end() - 1), c.data());
      int64_t prev = -1;  // source offset of the previous row of this chunk, -1 for none or fill
      for (int64_t row = r0; row < r1; ++row) {
        int64_t off = 0;
        bool outside = false;
        for (size_t d = 0; d + 1 < r; ++d) {
          const size_t i = static_cast<size_t>(c[d]);
          outside = outside || axes[d].outside[i];
          off += axes[d].index[i] * in_strides[d];
        }
        E* dst = o + row * inner;
        if (outside) {
          fill_elements(dst, fill, inner);
        } else if (off == prev) {
          copy_elements(dst, dst - inner, inner);
        } else if (last.identity) {
          copy_elements(dst, in + off, inner);
        } else {
          const E* src = in + off;
          const int64_t* ix = last.index.data();
          if (last.any_outside)
            for (int64_t j = 0; j < inner; ++j) dst[j] = last.outside[static_cast<size_t>(j)] ? fill : src[ix[j]];
          else
            for (int64_t j = 0; j < inner; ++j) dst[j] = src[ix[j]];
        }
        prev = outside ? -1 : off;
        for (size_t d = r - 1; d-- > 0;) {
          if (++c[d] < shape[d]) break;
          c[d] = 0;
        }
      }
    });
  });
}

/// Weighted resampling (linear, cubic): each output element is the sum over the product of the
/// axes' taps, accumulated in double.
template <class T>
void resample_weighted(const Tensor& x, Tensor& out, const std::vector<AxisTaps>& axes, double extrapolation) {
  const size_t r = x.rank();
  const auto in_strides = strides_of(x.shape());
  const std::vector<int64_t>& shape = out.shape();
  const int64_t inner = shape[r - 1];
  const int64_t rows = out.size() / inner;
  const AxisTaps& last = axes[r - 1];
  const size_t nx = static_cast<size_t>(last.n);
  const T* in = x.data<T>();
  T* o = out.mutable_data<T>();
  const T fill = store_resampled<T>(extrapolation);
  parallel_ranges(rows, std::max<int64_t>(1, 2048 / inner), [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> c(r - 1);
    std::vector<std::pair<int64_t, double>> combos, next;
    unravel(r0, std::vector<int64_t>(shape.begin(), shape.end() - 1), c.data());
    for (int64_t row = r0; row < r1; ++row) {
      // (offset, weight) of every combination of the outer axes' taps.
      combos.assign(1, {0, 1.0});
      bool outside = false;
      for (size_t d = 0; d + 1 < r && !outside; ++d) {
        const AxisTaps& a = axes[d];
        const size_t i = static_cast<size_t>(c[d]);
        if (a.outside[i]) {
          outside = true;
          break;
        }
        next.clear();
        for (const auto& [off, w] : combos)
          for (size_t t = 0; t < static_cast<size_t>(a.n); ++t) {
            const double wt = a.weight[i * static_cast<size_t>(a.n) + t];
            if (wt != 0) next.push_back({off + a.index[i * static_cast<size_t>(a.n) + t] * in_strides[d], w * wt});
          }
        combos.swap(next);
      }
      T* dst = o + row * inner;
      if (outside) {
        fill_elements(dst, fill, inner);
      } else {
        for (int64_t j = 0; j < inner; ++j) {
          if (last.outside[static_cast<size_t>(j)]) {
            dst[j] = fill;
            continue;
          }
          const int64_t* ix = &last.index[static_cast<size_t>(j) * nx];
          const double* wx = &last.weight[static_cast<size_t>(j) * nx];
          double acc = 0;
          for (const auto& [off, w] : combos) {
            double s = 0;
            for (size_t t = 0; t < nx; ++t) s += wx[t] * static_cast<double>(Num<T>::load(in[off + ix[t]]));
            acc += w * s;
          }
          dst[j] = store_resampled<T>(acc);
        }
      }
      for (size_t d = r - 1; d-- > 0;) {
        if (++c[d] < shape[d]) break;
        c[d] = 0;
      }
    }
  });
}

/// The float32 fast path of weighted resampling when only the last two axes resize (NCHW
/// images): per output row the vertical taps, per output column the horizontal ones, summed in
/// float from precomputed tables.
void resample_planes_f32(const Tensor& x, Tensor& out, const AxisTaps& ty, const AxisTaps& tx) {
  const size_t r = x.rank();
  const int64_t ih = x.dim(r - 2), iw = x.dim(r - 1);
  const int64_t oh = out.dim(r - 2), ow = out.dim(r - 1);
  const int64_t planes = x.size() / (ih * iw);
  const size_t ny = static_cast<size_t>(ty.n), nx = static_cast<size_t>(tx.n);
  const std::vector<float> wy(ty.weight.begin(), ty.weight.end()), wx(tx.weight.begin(), tx.weight.end());
  const float* in = x.data<float>();
  float* o = out.mutable_data<float>();
  parallel_ranges(planes * oh, std::max<int64_t>(1, 4096 / ow), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t p = t / oh, y = t % oh;
      const float* plane = in + p * ih * iw;
      float* dst = o + t * ow;
      for (int64_t j = 0; j < ow; ++j) dst[j] = 0;
      for (size_t a = 0; a < ny; ++a) {
        const float w = wy[static_cast<size_t>(y) * ny + a];
        if (w == 0) continue;
        const float* row = plane + ty.index[static_cast<size_t>(y) * ny + a] * iw;
        const int64_t* ix = tx.index.data();
        const float* wj = wx.data();
        if (nx == 2) {  // bilinear
          for (int64_t j = 0; j < ow; ++j) dst[j] += w * (wj[2 * j] * row[ix[2 * j]] + wj[2 * j + 1] * row[ix[2 * j + 1]]);
        } else {
          for (int64_t j = 0; j < ow; ++j) {
            float s = 0;
            for (size_t c = 0; c < nx; ++c) s += wj[static_cast<size_t>(j) * nx + c] * row[ix[static_cast<size_t>(j) * nx + c]];
            dst[j] += w * s;
          }
        }
      }
    }
  });
}

/// Resamples `x` to `out_shape` with per-axis scales (used by the coordinate transforms) and
/// crop boxes.
Tensor resample(const KernelContext& ctx, const ResizeSpec& spec, const Tensor& x, const std::vector<int64_t>& out_shape,
                const std::vector<double>& scales, const std::vector<double>& roi_start, const std::vector<double>& roi_end) {
  const size_t r = x.rank();
  if (r == 0) ctx.fail("cannot resize a scalar");
  Tensor out(x.dtype(), out_shape);
  if (out.size() == 0) return out;
  std::vector<AxisTaps> axes;
  bool gather = true;
  for (size_t d = 0; d < r; ++d) {
    if (x.dim(d) == 0) ctx.fail("cannot resize the empty axis " + std::to_string(d) + " of " + x.describe());
    axes.push_back(axis_taps(spec, x.dim(d), out_shape[d], scales[d], roi_start[d], roi_end[d]));
    if (axes.back().n != 1) gather = false;
    for (double w : axes.back().weight) gather = gather && w == 1;
  }
  const Tensor fill = extrapolation_element(x, spec.extrapolation);
  if (gather) {
    resample_gather(ctx, x, out, axes, fill);
    return out;
  }
  bool planes = x.dtype() == DataType::kFloat && r >= 2 && !axes[r - 1].any_outside && !axes[r - 2].any_outside;
  for (size_t d = 0; d + 2 < r; ++d) planes = planes && axes[d].identity;
  if (planes) {
    resample_planes_f32(x, out, axes[r - 2], axes[r - 1]);
    return out;
  }
  if (!visit<kNumeric>(x.dtype(), [&](auto tag) { resample_weighted<typename decltype(tag)::type>(x, out, axes, spec.extrapolation); }))
    ctx.fail("linear and cubic resizing need a numeric type, got " + type_name(x.dtype()));
  return out;
}

ResizeMode read_resize_mode(const KernelContext& ctx, bool legacy) {
  const std::string m = ctx.attr_string("mode", "nearest");
  if (m == "nearest") return ResizeMode::kNearest;
  if (m == "linear" || (legacy && m == "bilinear")) return ResizeMode::kLinear;
  if (m == "cubic" && !legacy) return ResizeMode::kCubic;
  ctx.fail("unsupported mode '" + m + "'");
}

/// Floats of a float16/float/double tensor.
std::vector<double> read_float_list(const KernelContext& ctx, const Tensor& t, const char* what) {
  std::vector<double> out(static_cast<size_t>(t.size()));
  if (!visit<kFloats>(t.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(Num<T>::load(t.data<T>()[i]));
      }))
    ctx.fail(std::string(what) + " must be a float tensor, is " + type_name(t.dtype()));
  return out;
}

/// Upsample-7/9 and Resize-10: scales only, asymmetric coordinates, nearest truncates (ceil
/// when downscaling) and linear clamps.
void resize_legacy(KernelContext& ctx, const std::vector<double>& scales) {
  const Tensor& x = ctx.input(0);
  const size_t r = x.rank();
  if (scales.size() != r) ctx.fail("scales has " + std::to_string(scales.size()) + " values for " + x.describe());
  ResizeSpec spec;
  spec.mode = read_resize_mode(ctx, true);
  std::vector<int64_t> shape(r);
  for (size_t d = 0; d < r; ++d) {
    if (!(scales[d] > 0)) ctx.fail("scales must be positive");
    if (ctx.node().op_type == "Upsample" && scales[d] < 1) ctx.fail("Upsample scales must be >= 1");
    shape[d] = static_cast<int64_t>(std::floor(static_cast<double>(x.dim(d)) * scales[d]));
  }
  ctx.set_output(0, resample(ctx, spec, x, shape, scales, std::vector<double>(r, 0.0), std::vector<double>(r, 1.0)));
}

void upsample_7(KernelContext& ctx) {
  std::vector<double> scales;
  for (float s : ctx.attr_floats("scales")) scales.push_back(s);
  resize_legacy(ctx, scales);
}

void upsample_9(KernelContext& ctx) { resize_legacy(ctx, read_float_list(ctx, ctx.input(1), "scales")); }

void resize(KernelContext& ctx) {
  if (ctx.opset() < 11) {
    resize_legacy(ctx, read_float_list(ctx, ctx.input(1), "scales"));
    return;
  }
  const Tensor& x = ctx.input(0);
  const size_t r = x.rank();
  ResizeSpec spec;
  spec.mode = read_resize_mode(ctx, false);
  const std::string coord = ctx.attr_string("coordinate_transformation_mode", "half_pixel");
  if (coord == "half_pixel") spec.coord = CoordMode::kHalfPixel;
  else if (coord == "half_pixel_symmetric" && ctx.opset() >= 19) spec.coord = CoordMode::kHalfPixelSymmetric;
  else if (coord == "pytorch_half_pixel") spec.coord = CoordMode::kPytorchHalfPixel;
  else if (coord == "align_corners") spec.coord = CoordMode::kAlignCorners;
  else if (coord == "asymmetric") spec.coord = CoordMode::kAsymmetric;
  else if (coord == "tf_half_pixel_for_nn") spec.coord = CoordMode::kTfHalfPixelForNN;
  else if (coord == "tf_crop_and_resize") spec.coord = CoordMode::kTfCropAndResize;
  else ctx.fail("unsupported coordinate_transformation_mode '" + coord + "'");
  const std::string nearest = ctx.attr_string("nearest_mode", "round_prefer_floor");
  if (nearest == "round_prefer_floor") spec.nearest = NearestMode::kRoundPreferFloor;
  else if (nearest == "round_prefer_ceil") spec.nearest = NearestMode::kRoundPreferCeil;
  else if (nearest == "floor") spec.nearest = NearestMode::kFloor;
  else if (nearest == "ceil") spec.nearest = NearestMode::kCeil;
  else ctx.fail("unsupported nearest_mode '" + nearest + "'");
  spec.cubic_a = ctx.attr_float("cubic_coeff_a", -0.75f);
  spec.exclude_outside = ctx.attr_int("exclude_outside", 0) != 0;
  spec.extrapolation = ctx.attr_float("extrapolation_value", 0.0f);
  spec.antialias = ctx.opset() >= 18 && ctx.attr_int("antialias", 0) != 0;

  std::vector<int64_t> axes;
  if (ctx.opset() >= 18 && ctx.has_attr("axes")) axes = normalize_axes(ctx, ctx.attr_ints("axes"), static_cast<int64_t>(r));
  else
    for (size_t d = 0; d < r; ++d) axes.push_back(static_cast<int64_t>(d));
  const size_t k = axes.size();
  std::vector<double> roi_start(r, 0.0), roi_end(r, 1.0), scales(r, 1.0);
  std::vector<int64_t> shape = x.shape();
  if (spec.coord == CoordMode::kTfCropAndResize && ctx.has_input(1) && ctx.input(1).size() > 0) {
    const auto roi = read_float_list(ctx, ctx.input(1), "roi");
    if (roi.size() != 2 * k) ctx.fail("roi has " + std::to_string(roi.size()) + " values, expected " + std::to_string(2 * k));
    for (size_t i = 0; i < k; ++i) {
      roi_start[static_cast<size_t>(axes[i])] = roi[i];
      roi_end[static_cast<size_t>(axes[i])] = roi[i + k];
    }
  }
  const bool has_scales = ctx.has_input(2) && ctx.input(2).size() > 0;
  const bool has_sizes = ctx.has_input(3) && ctx.input(3).size() > 0;
  if (has_scales == has_sizes) ctx.fail("exactly one of scales and sizes must be given");
  if (has_scales) {
    const auto s = read_float_list(ctx, ctx.input(2), "scales");
    if (s.size() != k) ctx.fail("scales has " + std::to_string(s.size()) + " values, expected " + std::to_string(k));
    for (size_t i = 0; i < k; ++i) {
      const size_t d = static_cast<size_t>(axes[i]);
      if (!(s[i] > 0)) ctx.fail("scales must be positive");
      scales[d] = s[i];
      const double extent = spec.coord == CoordMode::kTfCropAndResize ? roi_end[d] - roi_start[d] : 1.0;
      shape[d] = static_cast<int64_t>(std::floor(static_cast<double>(x.dim(d)) * extent * s[i]));
    }
  } else {
    const Tensor& st = ctx.input(3);
    if (st.dtype() != DataType::kInt64) ctx.fail("sizes must be int64");
    const auto sizes = read_int_list(ctx, st, "sizes");
    if (sizes.size() != k) ctx.fail("sizes has " + std::to_string(sizes.size()) + " values, expected " + std::to_string(k));
    const std::string policy = ctx.opset() >= 18 ? ctx.attr_string("keep_aspect_ratio_policy", "stretch") : "stretch";
    for (size_t i = 0; i < k; ++i) {
      if (sizes[i] < 0) ctx.fail("sizes must be >= 0");
      if (x.dim(static_cast<size_t>(axes[i])) == 0) ctx.fail("cannot resize an empty axis");
    }
    if (policy == "stretch") {
      for (size_t i = 0; i < k; ++i) {
        const size_t d = static_cast<size_t>(axes[i]);
        shape[d] = sizes[i];
        scales[d] = static_cast<double>(sizes[i]) / static_cast<double>(x.dim(d));
      }
    } else if (policy == "not_larger" || policy == "not_smaller") {
      double s = policy == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
      for (size_t i = 0; i < k; ++i) {
        const double ratio = static_cast<double>(sizes[i]) / static_cast<double>(x.dim(static_cast<size_t>(axes[i])));
        s = policy == "not_larger" ? std::min(s, ratio) : std::max(s, ratio);
      }
      for (size_t i = 0; i < k; ++i) {
        const size_t d = static_cast<size_t>(axes[i]);
        shape[d] = static_cast<int64_t>(std::floor(s * static_cast<double>(x.dim(d)) + 0.5));
        scales[d] = s;
      }
    } else {
      ctx.fail("unsupported keep_aspect_ratio_policy '" + policy + "'");
    }
  }
  ctx.set_output(0, resample(ctx, spec, x, shape, scales, roi_start, roi_end));
}

}  // namespace

void register_resize_kernels(KernelRegistry& r) {
  r.add("", "Upsample", 7, 8, upsample_7);
  r.add("", "Upsample", 9, 9, upsample_9);
  r.add("Resize", resize);
}

}  // namespace onnxtool::runner::cpu
