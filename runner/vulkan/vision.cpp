// Vulkan kernels of the vision family: Resize (nearest and linear, without antialiasing or
// cubic), its taps computed on the host in double as runner/cpu/resize.cpp computes them, then
// one 1-D dispatch of shaders/resize.comp. Whatever the CPU kernel would reject, and the forms
// not implemented here, are declined so that the CPU kernel runs (and reports).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "runner/geometry.h"
#include "runner/vulkan/data.h"

namespace onnxtool::runner::vulkan {

namespace {

// ---------------------------------------------------------------- Resize

std::vector<double> floats_of(DeviceKernelContext& ctx, const Tensor& t, const char* what) {
  if (t.dtype() != DataType::kFloat && t.dtype() != DataType::kFloat16 && t.dtype() != DataType::kDouble)
    ctx.decline(std::string(what) + " is not a float tensor");
  std::vector<double> out(static_cast<size_t>(t.size()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = element_as_double(t, static_cast<int64_t>(i));
  return out;
}

enum class Coord { kHalfPixel, kHalfPixelSymmetric, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfHalfPixelForNN };
enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kLegacy };

// The input coordinate of output coordinate o, in double as the CPU kernel computes it.
double source_coord(Coord m, int64_t o, double scale, int64_t in_len, int64_t out_len) {
  const double x = static_cast<double>(o), in = static_cast<double>(in_len), resized = in * scale;
  switch (m) {
    case Coord::kHalfPixel: return (x + 0.5) / scale - 0.5;
    case Coord::kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(out_len) / resized;
      return in / 2 * (1 - adjustment) + (x + 0.5) / scale - 0.5;
    }
    case Coord::kPytorchHalfPixel: return resized > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case Coord::kAlignCorners: return resized > 1 ? x * (in - 1) / (resized - 1) : 0.0;
    case Coord::kAsymmetric: return x / scale;
    case Coord::kTfHalfPixelForNN: return (x + 0.5) / scale;
  }
  return x;
}

int64_t nearest_of(Nearest m, double x, double scale) {
  const double f = std::floor(x);
  switch (m) {
    case Nearest::kRoundPreferFloor: return static_cast<int64_t>(x - f > 0.5 ? f + 1 : f);
    case Nearest::kRoundPreferCeil: return static_cast<int64_t>(x - f >= 0.5 ? f + 1 : f);
    case Nearest::kFloor: return static_cast<int64_t>(f);
    case Nearest::kCeil: return static_cast<int64_t>(std::ceil(x));
    case Nearest::kLegacy: return scale < 1 ? static_cast<int64_t>(std::ceil(x)) : static_cast<int64_t>(x);
  }
  return static_cast<int64_t>(f);
}

struct ResizeParams {
  uint32_t n, rank, two_taps, pad;
  uint32_t out_dims[kMaxRank];
  uint32_t in_strides[kMaxRank];
  uint32_t offsets[kMaxRank];
};

void resize_kernel(DeviceKernelContext& ctx) {
  const DataType type = require_float(ctx, 0);
  const Shape xs = ctx.input_shape(0);
  const size_t r = xs.size();
  if (r == 0) ctx.decline("a scalar");
  if (r > kMaxRank) ctx.decline("rank above 6");
  const bool legacy = ctx.opset() < 11;
  const std::string mode = ctx.attr_string("mode", "nearest");
  bool linear = false;
  if (mode == "linear") linear = true;
  else if (mode != "nearest") ctx.decline("mode '" + mode + "'");
  Coord coord = Coord::kAsymmetric;
  Nearest nearest = Nearest::kLegacy;
  std::vector<int64_t> axes;
  for (size_t d = 0; d < r; ++d) axes.push_back(static_cast<int64_t>(d));
  Shape shape = xs;
  std::vector<double> scales(r, 1.0);
  if (legacy) {
    const auto s = floats_of(ctx, ctx.host_input(1), "scales");
    if (s.size() != r) ctx.decline("scales does not match the rank");
    for (size_t d = 0; d < r; ++d) {
      if (!(s[d] > 0)) ctx.decline("a scale is not positive");
      scales[d] = s[d];
      shape[d] = static_cast<int64_t>(std::floor(static_cast<double>(xs[d]) * s[d]));
    }
  } else {
    const std::string c = ctx.attr_string("coordinate_transformation_mode", "half_pixel");
    if (c == "half_pixel") coord = Coord::kHalfPixel;
    else if (c == "half_pixel_symmetric" && ctx.opset() >= 19) coord = Coord::kHalfPixelSymmetric;
    else if (c == "pytorch_half_pixel") coord = Coord::kPytorchHalfPixel;
    else if (c == "align_corners") coord = Coord::kAlignCorners;
    else if (c == "asymmetric") coord = Coord::kAsymmetric;
    else if (c == "tf_half_pixel_for_nn") coord = Coord::kTfHalfPixelForNN;
    else ctx.decline("coordinate_transformation_mode '" + c + "'");
    const std::string nm = ctx.attr_string("nearest_mode", "round_prefer_floor");
    if (nm == "round_prefer_floor") nearest = Nearest::kRoundPreferFloor;
    else if (nm == "round_prefer_ceil") nearest = Nearest::kRoundPreferCeil;
    else if (nm == "floor") nearest = Nearest::kFloor;
    else if (nm == "ceil") nearest = Nearest::kCeil;
    else ctx.decline("nearest_mode '" + nm + "'");
    if (ctx.attr_int("exclude_outside", 0) != 0) ctx.decline("exclude_outside");
    if (ctx.opset() >= 18 && ctx.attr_int("antialias", 0) != 0) ctx.decline("antialias");
    if (ctx.opset() >= 18 && ctx.has_attr("axes"))
      axes = normalize_axes(ctx, ctx.attr_ints("axes"), static_cast<int64_t>(r));
    const size_t k = axes.size();
    const bool has_scales = ctx.has_input(2) && ctx.host_input(2).size() > 0;
    const bool has_sizes = ctx.has_input(3) && ctx.host_input(3).size() > 0;
    if (has_scales == has_sizes) ctx.decline("not exactly one of scales and sizes");
    if (has_scales) {
      const auto s = floats_of(ctx, ctx.host_input(2), "scales");
      if (s.size() != k) ctx.decline("scales does not match the axes");
      for (size_t i = 0; i < k; ++i) {
        const auto d = static_cast<size_t>(axes[i]);
        if (!(s[i] > 0)) ctx.decline("a scale is not positive");
        scales[d] = s[i];
        shape[d] = static_cast<int64_t>(std::floor(static_cast<double>(xs[d]) * s[i]));
      }
    } else {
      const Tensor& st = ctx.host_input(3);
      if (st.dtype() != DataType::kInt64) ctx.decline("sizes is not int64");
      const auto sizes = read_int_list(ctx, st, "sizes");
      if (sizes.size() != k) ctx.decline("sizes does not match the axes");
      const std::string policy = ctx.opset() >= 18 ? ctx.attr_string("keep_aspect_ratio_policy", "stretch") : "stretch";
      if (policy != "stretch") ctx.decline("keep_aspect_ratio_policy '" + policy + "'");
      for (size_t i = 0; i < k; ++i) {
        const auto d = static_cast<size_t>(axes[i]);
        if (sizes[i] < 0) ctx.decline("a negative size");
        if (xs[d] == 0) ctx.decline("an empty axis");
        shape[d] = sizes[i];
        scales[d] = static_cast<double>(sizes[i]) / static_cast<double>(xs[d]);
      }
    }
  }
  for (size_t d = 0; d < r; ++d)
    if (xs[d] == 0) ctx.decline("an empty axis");
  ResizeParams p{};
  p.n = checked_u32(ctx, shape_size(shape), "the element count");
  checked_u32(ctx, shape_size(xs), "the element count");
  p.rank = static_cast<uint32_t>(r);
  if (p.n == 0) {
    output(ctx, 0, type, shape);
    return;
  }
  // Per axis and output coordinate: i0, i1, w0, w1 (float bits), as the CPU's taps.
  std::vector<uint32_t> table;
  const Shape in_strides = strides_of(xs);
  for (size_t d = 0; d < r; ++d) {
    p.out_dims[d] = static_cast<uint32_t>(shape[d]);
    p.in_strides[d] = static_cast<uint32_t>(in_strides[d]);
    p.offsets[d] = checked_u32(ctx, static_cast<int64_t>(table.size()), "the tap table");
    bool blends = false;
    for (int64_t o = 0; o < shape[d]; ++o) {
      const double x = source_coord(coord, o, scales[d], xs[d], shape[d]);
      int64_t i0, i1;
      float w0 = 1, w1 = 0;
      if (!linear) {
        i0 = i1 = std::clamp<int64_t>(nearest_of(nearest, x, scales[d]), 0, xs[d] - 1);
      } else {
        const double fl = std::floor(x);
        const double a = std::max(0.0, 1 - std::fabs(fl - x)), b = std::max(0.0, 1 - std::fabs(fl + 1 - x));
        i0 = std::clamp<int64_t>(static_cast<int64_t>(fl), 0, xs[d] - 1);
        i1 = std::clamp<int64_t>(static_cast<int64_t>(fl) + 1, 0, xs[d] - 1);
        w0 = static_cast<float>(a);
        w1 = static_cast<float>(b);
        // x - fl is in [0, 1), so w0 > 0; w1 == 0 leaves the single tap i0 of weight 1, as the
        // CPU's compaction does.
        if (b != 0) blends = true;
      }
      uint32_t b0, b1;
      std::memcpy(&b0, &w0, 4);
      std::memcpy(&b1, &w1, 4);
      table.insert(table.end(), {static_cast<uint32_t>(i0), static_cast<uint32_t>(i1), b0, b1});
    }
    if (blends) p.two_taps |= 1u << d;
  }
  Tensor tab(DataType::kInt32, {static_cast<int64_t>(table.size())});
  if (!table.empty()) std::memcpy(tab.mutable_raw(), table.data(), table.size() * 4);
  auto x = input(ctx, 0);
  auto t = std::static_pointer_cast<const VulkanTensor>(backend_of(ctx).upload(tab));
  auto y = output(ctx, 0, type, shape);
  dispatch_1d(ctx, shader_for("resize", type), {x->range(), t->range(), y->range()}, &p, sizeof p, p.n);
}

}  // namespace

void register_vision(KernelTable& t) { t.add("Resize", resize_kernel); }

}  // namespace onnxtool::runner::vulkan
