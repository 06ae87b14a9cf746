// CPU kernels: RoiAlign, NonMaxSuppression, GridSample and MaxRoiPool.
// Arithmetic is done in double and rounded once on store; work is split only over independent
// outputs (output points, RoIs, transform lines), so results do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "runner/cpu/double_access.h"
#include "runner/cpu/elementwise_util.h"
#include "runner/cpu/kernels.h"
#include "runner/cpu/tensor_util.h"

namespace onnxtool::runner::cpu {

namespace {

// ---------------------------------------------------------------- GridSample

enum class Interp { kNearest, kLinear, kCubic };
enum class Padding { kZeros, kBorder, kReflection };

/// Reflects x into [lo, hi] by repeated mirroring at the bounds.
double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x >= lo && x <= hi) return x;
  const double dx = x < lo ? lo - x : x - hi;
  const double n = std::floor(dx / range);
  const double r = dx - n * range;
  const bool even = std::fmod(n, 2.0) == 0;
  const double v = (x < lo) == even ? lo + r : hi - r;
  return std::min(hi, std::max(lo, v));
}

/// One tap of a 1-D interpolation: an index into the dim (-1: a zero from padding) and a weight.
struct Tap {
  int64_t index;
  double weight;
};

/// The cubic convolution weights (Keys, a = -0.75) of the four taps around a point at
/// fraction t past the second tap.
void cubic_weights(double t, double w[4]) {
  constexpr double a = -0.75;
  auto near = [&](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };       // |x| <= 1
  auto far = [&](double x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };  // 1 < |x| < 2
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

struct GridSampleSpec {
  Interp interp;
  Padding padding;
  bool align_corners;
};

/// The taps of one spatial dim of length `len` for the normalized coordinate g.
void dim_taps(const GridSampleSpec& s, double g, int64_t len, std::vector<Tap>& taps) {
  taps.clear();
  const int ntaps = s.interp == Interp::kNearest ? 1 : s.interp == Interp::kLinear ? 2 : 4;
  if (std::isnan(g) || len <= 0) {
    for (int i = 0; i < ntaps; ++i) taps.push_back({-1, 0.0});
    return;
  }
  const double lo = s.align_corners ? 0.0 : -0.5;
  const double hi = s.align_corners ? static_cast<double>(len - 1) : len - 0.5;
  double x = s.align_corners ? (g + 1) / 2 * static_cast<double>(len - 1) : ((g + 1) * static_cast<double>(len) - 1) / 2;
  if (s.interp == Interp::kNearest) x = std::nearbyint(x);  // halfway cases to even, as PyTorch
  if (x < lo || x > hi) {
    if (s.padding == Padding::kBorder) x = std::min(static_cast<double>(len - 1), std::max(0.0, x));
    else if (s.padding == Padding::kReflection) x = reflect(x, lo, hi);
  }
  // Far outside points sample only padding zeros: bound them so the integer conversions stay
  // defined.
  const double far = static_cast<double>(len) + 8;
  x = std::min(far, std::max(-far, x));
  auto pixel = [&](int64_t i) -> int64_t {
    switch (s.padding) {
      case Padding::kZeros: return i >= 0 && i < len ? i : -1;
      case Padding::kBorder: return std::min(len - 1, std::max<int64_t>(0, i));
      default: return std::min(len - 1, std::max<int64_t>(0, static_cast<int64_t>(reflect(static_cast<double>(i), lo, hi))));
    }
  };
  if (s.interp == Interp::kNearest) {
    taps.push_back({pixel(static_cast<int64_t>(x)), 1.0});
    return;
  }
  const double x0 = std::floor(x);
  const int64_t i0 = static_cast<int64_t>(x0);
  const double t = x - x0;
  if (s.interp == Interp::kLinear) {
    taps.push_back({pixel(i0), 1 - t});
    taps.push_back({pixel(i0 + 1), t});
    return;
  }
  double w[4];
  cubic_weights(t, w);
  for (int k = 0; k < 4; ++k) taps.push_back({pixel(i0 - 1 + k), w[k]});
}

void grid_sample(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& grid = ctx.input(1);
  require_float(ctx, grid, "grid");
  const int64_t opset = ctx.opset();
  if (x.rank() < 3) ctx.fail("X must have rank >= 3, has shape " + shape_string(x.shape()));
  if (opset < 20 && x.rank() != 4) ctx.fail("GridSample-16 supports 4-D X only, got " + shape_string(x.shape()));
  const size_t r = x.rank() - 2;
  if (grid.rank() != r + 2 || grid.dim(0) != x.dim(0) || grid.dim(r + 1) != static_cast<int64_t>(r))
    ctx.fail("grid " + shape_string(grid.shape()) + " does not match X " + shape_string(x.shape()) + " (expected [N, ..., " +
             std::to_string(r) + "])");
  GridSampleSpec spec{};
  const std::string mode = ctx.attr_string("mode", opset < 20 ? "bilinear" : "linear");
  if (mode == "nearest") spec.interp = Interp::kNearest;
  else if (mode == "linear" || mode == "bilinear") spec.interp = Interp::kLinear;
  else if (mode == "cubic" || mode == "bicubic") spec.interp = Interp::kCubic;
  else ctx.fail("unknown mode '" + mode + "'");
  const std::string padding = ctx.attr_string("padding_mode", "zeros");
  if (padding == "zeros") spec.padding = Padding::kZeros;
  else if (padding == "border") spec.padding = Padding::kBorder;
  else if (padding == "reflection") spec.padding = Padding::kReflection;
  else ctx.fail("unknown padding_mode '" + padding + "'");
  spec.align_corners = ctx.attr_int("align_corners", 0) != 0;

  const int64_t n = x.dim(0), c = x.dim(1);
  const std::vector<int64_t> in_dims(x.shape().begin() + 2, x.shape().end());
  std::vector<int64_t> out_shape{n, c};
  for (size_t d = 1; d <= r; ++d) out_shape.push_back(grid.dim(d));
  const int64_t points = dims_product(grid.shape(), 1, r + 1);
  const int64_t in_plane = dims_product(in_dims, 0, r);
  const std::vector<int64_t> in_strides = strides_of(in_dims);
  Tensor& y = ctx.output(0, x.dtype(), out_shape);
  if (y.size() == 0) return;
  const std::vector<double> g = read_doubles(ctx, grid);
  const bool numeric = visit<kNumeric>(x.dtype(), [](auto) {});
  if (!numeric && spec.interp != Interp::kNearest)
    ctx.fail("GridSample interpolates numeric tensors only; " + type_name(x.dtype()) + " needs mode 'nearest'");

  // Per output point: the flattened taps (offset into a plane, -1 for padding zeros) and weights.
  auto for_points = [&](auto&& per_point) {
    parallel_ranges(n * points, std::max<int64_t>(1, 4096 / std::max<int64_t>(c, 1)), [&](int64_t b, int64_t e) {
      std::vector<std::vector<Tap>> taps(r);
      std::vector<int64_t> offs;
      std::vector<double> weights;
      for (int64_t p = b; p < e; ++p) {
        const double* gp = g.data() + p * static_cast<int64_t>(r);
        // Grid coordinates list the innermost dim first.
        for (size_t d = 0; d < r; ++d) dim_taps(spec, gp[r - 1 - d], in_dims[d], taps[d]);
        offs.assign(1, 0);
        weights.assign(1, 1.0);
        for (size_t d = 0; d < r; ++d) {
          std::vector<int64_t> o2;
          std::vector<double> w2;
          for (size_t k = 0; k < offs.size(); ++k)
            for (const Tap& t : taps[d]) {
              o2.push_back(offs[k] < 0 || t.index < 0 ? -1 : offs[k] + t.index * in_strides[d]);
              w2.push_back(weights[k] * t.weight);
            }
          offs.swap(o2);
          weights.swap(w2);
        }
        per_point(p / points, p % points, offs, weights);
      }
    });
  };
  if (numeric) {
    visit<kNumeric>(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      T* py = y.mutable_data<T>();
      for_points([&](int64_t b, int64_t p, const std::vector<int64_t>& offs, const std::vector<double>& w) {
        for (int64_t ch = 0; ch < c; ++ch) {
          const T* plane = px + (b * c + ch) * in_plane;
          double acc = 0;
          for (size_t k = 0; k < offs.size(); ++k)
            if (offs[k] >= 0) acc += w[k] * to_double(plane[offs[k]]);
          py[(b * c + ch) * points + p] = from_double<T>(acc);
        }
      });
    });
    return;
  }
  visit_storage_or_fail(ctx, x.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E* px = elements<E>(x);
    E* py = mutable_elements<E>(y);
    for_points([&](int64_t b, int64_t p, const std::vector<int64_t>& offs, const std::vector<double>&) {
      for (int64_t ch = 0; ch < c; ++ch)
        py[(b * c + ch) * points + p] = offs[0] >= 0 ? px[(b * c + ch) * in_plane + offs[0]] : E{};
    });
  });
}

// ---------------------------------------------------------------- RoiAlign

void roi_align(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  const Tensor& batch_indices = ctx.input(2);
  require_float(ctx, x, "X");
  require_float(ctx, rois, "rois");
  if (x.rank() != 4) ctx.fail("X must be 4-D (N, C, H, W), has shape " + shape_string(x.shape()));
  if (rois.rank() != 2 || rois.dim(1) != 4) ctx.fail("rois must have shape [num_rois, 4], has " + shape_string(rois.shape()));
  const int64_t num_rois = rois.dim(0);
  if (batch_indices.size() != num_rois)
    ctx.fail("batch_indices has " + std::to_string(batch_indices.size()) + " values for " + std::to_string(num_rois) + " rois");
  const std::vector<int64_t> batch = read_int_list(ctx, batch_indices, "batch_indices");
  const int64_t n = x.dim(0), c = x.dim(1), height = x.dim(2), width = x.dim(3);
  for (int64_t b : batch)
    if (b < 0 || b >= n) ctx.fail("batch index " + std::to_string(b) + " is outside [0, " + std::to_string(n) + ")");
  const int64_t out_h = ctx.attr_int("output_height", 1), out_w = ctx.attr_int("output_width", 1);
  if (out_h < 1 || out_w < 1) ctx.fail("output_height and output_width must be positive");
  const int64_t sampling_ratio = ctx.attr_int("sampling_ratio", 0);
  if (sampling_ratio < 0) ctx.fail("sampling_ratio must be >= 0");
  const double scale = ctx.attr_float("spatial_scale", 1.0f);
  const std::string mode = ctx.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") ctx.fail("unknown mode '" + mode + "'");
  const bool max_mode = mode == "max";
  // Opset 10 has no coordinate_transformation_mode and behaves as output_half_pixel.
  const std::string ctm = ctx.opset() >= 16 ? ctx.attr_string("coordinate_transformation_mode", "half_pixel") : "output_half_pixel";
  if (ctm != "half_pixel" && ctm != "output_half_pixel") ctx.fail("unknown coordinate_transformation_mode '" + ctm + "'");
  const bool half_pixel = ctm == "half_pixel";

  const std::vector<double> xv = read_doubles(ctx, x);
  const std::vector<double> rv = read_doubles(ctx, rois);
  std::vector<double> out(static_cast<size_t>(num_rois * c * out_h * out_w), 0.0);
  Tensor& y = ctx.output(0, x.dtype(), {num_rois, c, out_h, out_w});
  if (height > 0 && width > 0) {
    // One bilinear sample: four plane offsets and weights (all zero outside the map).
    struct Sample {
      int64_t pos[4];
      double w[4];
    };
    parallel_ranges(num_rois, 1, [&](int64_t r0, int64_t r1) {
      std::vector<Sample> samples;
      for (int64_t roi = r0; roi < r1; ++roi) {
        const double offset = half_pixel ? 0.5 : 0.0;
        const double* box = rv.data() + roi * 4;
        const double start_w = box[0] * scale - offset, start_h = box[1] * scale - offset;
        const double end_w = box[2] * scale - offset, end_h = box[3] * scale - offset;
        double roi_w = end_w - start_w, roi_h = end_h - start_h;
        if (!half_pixel) {  // malformed RoIs are forced to 1x1
          roi_w = std::max(roi_w, 1.0);
          roi_h = std::max(roi_h, 1.0);
        }
        const double bin_h = roi_h / static_cast<double>(out_h), bin_w = roi_w / static_cast<double>(out_w);
        auto grid_count = [&](double extent, int64_t pooled) -> int64_t {
          if (sampling_ratio > 0) return sampling_ratio;
          const double v = std::ceil(extent / static_cast<double>(pooled));
          if (!(v > 0)) return 0;
          return static_cast<int64_t>(std::min(v, 1e6));
        };
        const int64_t grid_h = grid_count(roi_h, out_h), grid_w = grid_count(roi_w, out_w);
        const double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
        samples.clear();
        for (int64_t ph = 0; ph < out_h; ++ph)
          for (int64_t pw = 0; pw < out_w; ++pw)
            for (int64_t iy = 0; iy < grid_h; ++iy) {
              const double yy = start_h + static_cast<double>(ph) * bin_h +
                                (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
              for (int64_t ix = 0; ix < grid_w; ++ix) {
                double xx = start_w + static_cast<double>(pw) * bin_w +
                            (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
                double yv = yy;
                Sample s{{0, 0, 0, 0}, {0, 0, 0, 0}};
                if (!(yv < -1.0 || yv > static_cast<double>(height) || xx < -1.0 || xx > static_cast<double>(width))) {
                  yv = std::max(yv, 0.0);
                  xx = std::max(xx, 0.0);
                  int64_t y_low = static_cast<int64_t>(yv), x_low = static_cast<int64_t>(xx), y_high, x_high;
                  if (y_low >= height - 1) {
                    y_high = y_low = height - 1;
                    yv = static_cast<double>(y_low);
                  } else {
                    y_high = y_low + 1;
                  }
                  if (x_low >= width - 1) {
                    x_high = x_low = width - 1;
                    xx = static_cast<double>(x_low);
                  } else {
                    x_high = x_low + 1;
                  }
                  const double ly = yv - static_cast<double>(y_low), lx = xx - static_cast<double>(x_low);
                  const double hy = 1 - ly, hx = 1 - lx;
                  s = Sample{{y_low * width + x_low, y_low * width + x_high, y_high * width + x_low, y_high * width + x_high},
                             {hy * hx, hy * lx, ly * hx, ly * lx}};
                }
                samples.push_back(s);
              }
            }
        const int64_t per_bin = grid_h * grid_w;
        for (int64_t ch = 0; ch < c; ++ch) {
          const double* plane = xv.data() + (batch[static_cast<size_t>(roi)] * c + ch) * height * width;
          double* o = out.data() + (roi * c + ch) * out_h * out_w;
          for (int64_t bin = 0; bin < out_h * out_w; ++bin) {
            const Sample* sb = samples.data() + bin * per_bin;
            double v = 0;
            for (int64_t k = 0; k < per_bin; ++k) {
              const Sample& s = sb[k];
              if (max_mode) {
                // The weighted corners' maximum, as the reference implementation defines it.
                double m = s.w[0] * plane[s.pos[0]];
                for (int q = 1; q < 4; ++q) m = std::max(m, s.w[q] * plane[s.pos[q]]);
                v = k == 0 ? m : std::max(v, m);
              } else {
                v += s.w[0] * plane[s.pos[0]] + s.w[1] * plane[s.pos[1]] + s.w[2] * plane[s.pos[2]] + s.w[3] * plane[s.pos[3]];
              }
            }
            o[bin] = max_mode ? v : v / count;
          }
        }
      }
    });
  }
  write_doubles(ctx, y, out);
}

// ---------------------------------------------------------------- NonMaxSuppression

void non_max_suppression(KernelContext& ctx) {
  const Tensor& boxes = ctx.input(0);
  const Tensor& scores = ctx.input(1);
  require_float(ctx, boxes, "boxes");
  require_float(ctx, scores, "scores");
  if (boxes.rank() != 3 || boxes.dim(2) != 4) ctx.fail("boxes must have shape [batches, boxes, 4], has " + shape_string(boxes.shape()));
  if (scores.rank() != 3 || scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1))
    ctx.fail("scores " + shape_string(scores.shape()) + " does not match boxes " + shape_string(boxes.shape()));
  const int64_t center = ctx.attr_int("center_point_box", 0);
  if (center != 0 && center != 1) ctx.fail("center_point_box must be 0 or 1, is " + std::to_string(center));
  int64_t max_out = 0;
  if (ctx.has_input(2) && ctx.input(2).size() > 0) max_out = std::max<int64_t>(0, read_int_list(ctx, ctx.input(2), "max_output_boxes_per_class")[0]);
  double iou_threshold = 0;
  if (ctx.has_input(3) && ctx.input(3).size() > 0) iou_threshold = read_doubles(ctx, ctx.input(3))[0];
  bool has_score_threshold = false;
  double score_threshold = 0;
  if (ctx.has_input(4) && ctx.input(4).size() > 0) {
    has_score_threshold = true;
    score_threshold = read_doubles(ctx, ctx.input(4))[0];
  }
  const int64_t batches = boxes.dim(0), num_boxes = boxes.dim(1), classes = scores.dim(1);
  const std::vector<double> bv = read_doubles(ctx, boxes);
  const std::vector<double> sv = read_doubles(ctx, scores);
  // Corners (x_min, y_min, x_max, y_max) of every box.
  std::vector<double> corners(bv.size());
  for (int64_t i = 0; i < batches * num_boxes; ++i) {
    const double* b = bv.data() + i * 4;
    double* o = corners.data() + i * 4;
    if (center) {
      o[0] = b[0] - b[2] / 2;
      o[2] = b[0] + b[2] / 2;
      o[1] = b[1] - b[3] / 2;
      o[3] = b[1] + b[3] / 2;
    } else {
      o[0] = std::min(b[1], b[3]);
      o[2] = std::max(b[1], b[3]);
      o[1] = std::min(b[0], b[2]);
      o[3] = std::max(b[0], b[2]);
    }
  }
  // True when IoU(a, b) is strictly above the threshold.
  auto suppresses = [&](const double* a, const double* b) {
    const double ix0 = std::max(a[0], b[0]), ix1 = std::min(a[2], b[2]);
    if (ix1 <= ix0) return false;
    const double iy0 = std::max(a[1], b[1]), iy1 = std::min(a[3], b[3]);
    if (iy1 <= iy0) return false;
    const double inter = (ix1 - ix0) * (iy1 - iy0);
    const double area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
    const double uni = area_a + area_b - inter;
    if (inter <= 0 || area_a <= 0 || area_b <= 0 || uni <= 0) return false;
    return inter / uni > iou_threshold;
  };
  std::vector<int64_t> selected;  // triples
  std::vector<int64_t> order, kept;
  for (int64_t b = 0; b < batches && max_out > 0; ++b)
    for (int64_t cl = 0; cl < classes; ++cl) {
      const double* s = sv.data() + (b * classes + cl) * num_boxes;
      order.clear();
      for (int64_t i = 0; i < num_boxes; ++i)
        if (!has_score_threshold || s[i] > score_threshold) order.push_back(i);
      // Highest score first; equal scores keep the lower index first.
      std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return s[i] > s[j]; });
      kept.clear();
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        const double* bi = corners.data() + (b * num_boxes + i) * 4;
        bool keep = true;
        for (int64_t k : kept)
          if (suppresses(bi, corners.data() + (b * num_boxes + k) * 4)) {
            keep = false;
            break;
          }
        if (!keep) continue;
        kept.push_back(i);
        selected.insert(selected.end(), {b, cl, i});
      }
    }
  Tensor& y = ctx.output(0, DataType::kInt64, {static_cast<int64_t>(selected.size() / 3), 3});
  std::copy(selected.begin(), selected.end(), y.mutable_data<int64_t>());
}

// ---------------------------------------------------------------- MaxRoiPool

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

void register_vision_kernels(KernelRegistry& registry) {
  registry.add("GridSample", grid_sample);
  registry.add("RoiAlign", roi_align);
  registry.add("NonMaxSuppression", non_max_suppression);
  registry.add("MaxRoiPool", max_roi_pool);
}

}  // namespace onnxtool::runner::cpu
