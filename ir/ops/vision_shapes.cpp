// Shape functions of the vision ops: AffineGrid, NonMaxSuppression, RoiAlign, MaxRoiPool,
// ImageDecoder, Resize, Upsample, Col2Im, GridSample and CenterCropPad (kernels:
// runner/cpu/image.cpp, runner/cpu/vision.cpp, runner/cpu/resize.cpp).
#include <cmath>

#include "ir/ops/shape_util.h"

namespace onnxtool::ir {
namespace {

using shape::all_axes;
using shape::input_numbers;
using shape::normalize_axes;
using shape::propagate_type;
using shape::rank_of;
using shape::shape_of_dims;
using shape::unknown_shape;
using shape::vector_length;

void infer_non_max_suppression(InferenceContext& ctx) {
  ctx.set_output_tensor(0, DataType::kInt64, shape_of_dims({Dim{}, Dim::of(3)}));
}

// RoiAlign: [num_rois, C, output_height, output_width].
void infer_roi_align(InferenceContext& ctx) {
  const Shape* x = ctx.input_shape(0);
  const Shape* rois = ctx.input_shape(1);
  const Shape* idx = ctx.input_shape(2);
  if (x && x->rank() != 4) ctx.fail("shape.rank", "RoiAlign needs a rank-4 input, got " + x->to_string());
  if (rois && rois->rank() != 2) ctx.fail("shape.rank", "RoiAlign rois must be rank 2, got " + rois->to_string());
  if (idx && idx->rank() != 1) ctx.fail("shape.rank", "RoiAlign batch_indices must be rank 1, got " + idx->to_string());
  Dim n;
  if (rois) n = rois->dims[0];
  if (idx) n = shape::merge(ctx, n, idx->dims[0], "shape.rank", "RoiAlign rois and batch_indices counts");
  propagate_type(ctx, 0, 0, shape_of_dims({n, x ? x->dims[1] : Dim{}, Dim::of(ctx.attr_int("output_height", 1)),
                                           Dim::of(ctx.attr_int("output_width", 1))}));
}

void infer_max_roi_pool(InferenceContext& ctx) {
  const Shape* x = ctx.input_shape(0);
  const Shape* rois = ctx.input_shape(1);
  auto pooled = ctx.attr_ints("pooled_shape");
  if (x && x->rank() != 4) ctx.fail("shape.rank", "MaxRoiPool needs a rank-4 input, got " + x->to_string());
  if (pooled && pooled->size() != 2) ctx.fail("shape.attribute", "pooled_shape must have 2 entries");
  propagate_type(ctx, 0, 0, shape_of_dims({rois && rois->rank() == 2 ? rois->dims[0] : Dim{}, x ? x->dims[1] : Dim{},
                                           pooled ? Dim::of((*pooled)[0]) : Dim{}, pooled ? Dim::of((*pooled)[1]) : Dim{}}));
}

void infer_image_decoder(InferenceContext& ctx) {
  const std::string format = ctx.attr_string("pixel_format", "RGB");
  Dim channels;
  if (format == "RGB" || format == "BGR") channels = Dim::of(3);
  else if (format == "Grayscale") channels = Dim::of(1);
  else ctx.fail("shape.attribute", "pixel_format '" + format + "' is not RGB, BGR or Grayscale");
  ctx.set_output_tensor(0, DataType::kUInt8, shape_of_dims({Dim{}, Dim{}, channels}));
}

// AffineGrid: theta [N, 2, 3] with size (N, C, H, W) -> [N, H, W, 2]; [N, 3, 4] with
// (N, C, D, H, W) -> [N, D, H, W, 3].
void infer_affine_grid(InferenceContext& ctx) {
  const Shape* theta = ctx.input_shape(0);
  if (theta && theta->rank() != 3) ctx.fail("shape.rank", "AffineGrid theta must be rank 3, got " + theta->to_string());
  const DimValues* size = ctx.input_values(1);
  auto len = vector_length(ctx, 1);
  if (len && *len != 4 && *len != 5) ctx.fail("shape.rank", "AffineGrid size must have 4 or 5 entries, has " + std::to_string(*len));
  if (!len) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  const size_t spatial = static_cast<size_t>(*len) - 2;
  Shape out = unknown_shape(spatial + 2);
  out.dims[spatial + 1] = Dim::of(static_cast<int64_t>(spatial));
  if (theta) out.dims[0] = theta->dims[0];
  if (size) {
    out.dims[0] = shape::merge(ctx, out.dims[0], (*size)[0], "shape.rank", "AffineGrid batch of theta and size");
    for (size_t i = 0; i < spatial; ++i) out.dims[1 + i] = (*size)[2 + i];
  }
  for (Dim& d : out.dims) d.denotation.clear();
  propagate_type(ctx, 0, 0, std::move(out));
}

// floor(dim * scale). A symbolic dim gets a derived symbol when the scale is exactly p/q with a
// small power-of-two q (2, 0.5, 1.5, ...: every such float is exact), unknown otherwise.
Dim scale_dim(const InferenceContext& ctx, const Dim& d, double scale) {
  if (scale == 1.0) return d;
  if (!std::isfinite(scale) || scale <= 0) return Dim{};
  if (!d.is_static()) {
    for (int64_t q = 1; q <= 1024; q *= 2) {
      const double p = scale * static_cast<double>(q);
      if (p == std::floor(p) && p < 1.0e9) return shape::affine_dim(ctx, d, static_cast<int64_t>(p), 0, q);
    }
    return Dim{};
  }
  const double v = std::floor(static_cast<double>(d.value) * scale);
  if (!std::isfinite(v) || v < 0 || v >= 9.0e18) return Dim{};
  return Dim::of(static_cast<int64_t>(v));
}

// Upsample-1: height_scale/width_scale; Upsample-7: scales attribute; Upsample-9: scales input.
void infer_upsample(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  std::optional<std::vector<double>> scales;
  if (ctx.opset() < 7) {
    if (in && in->rank() != 4) ctx.fail("shape.rank", "Upsample-1 needs a rank-4 input, got " + in->to_string());
    scales = std::vector<double>{1.0, 1.0, ctx.attr_float("height_scale", 1.0f), ctx.attr_float("width_scale", 1.0f)};
  } else if (ctx.opset() < 9) {
    const Attribute* a = ctx.node().attr("scales");
    if (a && a->attr_type() == AttrType::kFloats) scales = std::vector<double>(a->floats.begin(), a->floats.end());
  } else {
    scales = input_numbers(ctx, 1);
  }
  if (!in) {
    propagate_type(ctx, 0, 0, scales ? std::optional<Shape>(unknown_shape(scales->size())) : std::nullopt);
    return;
  }
  Shape out = unknown_shape(in->rank());
  if (scales) {
    if (scales->size() != in->rank())
      ctx.fail("shape.resize", "scales has " + std::to_string(scales->size()) + " entries for a rank-" +
                                   std::to_string(in->rank()) + " input");
    for (size_t i = 0; i < in->rank(); ++i) out.dims[i] = scale_dim(ctx, in->dims[i], (*scales)[i]);
  }
  propagate_type(ctx, 0, 0, std::move(out));
}

// Resize-10: (X, scales); Resize-11/13: (X, roi, scales, sizes), an empty scales meaning
// "use sizes"; Resize-18+: axes and keep_aspect_ratio_policy.
void infer_resize(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  const size_t scales_i = ctx.opset() < 11 ? 1 : 2;
  const size_t sizes_i = 3;
  std::optional<std::vector<int64_t>> axes_attr;
  std::string policy = "stretch";
  if (ctx.opset() >= 18) {
    axes_attr = ctx.attr_ints("axes");
    policy = ctx.attr_string("keep_aspect_ratio_policy", "stretch");
  }
  const auto scales_len = vector_length(ctx, scales_i);
  const auto sizes_len = vector_length(ctx, sizes_i);
  const bool scales_given = ctx.has_input(scales_i) && !(scales_len && *scales_len == 0);
  const bool sizes_given = ctx.opset() >= 11 && ctx.has_input(sizes_i) && !(sizes_len && *sizes_len == 0);
  if (scales_given && sizes_given && scales_len && sizes_len)
    ctx.fail("shape.resize", "only one of scales and sizes may be given");
  if (!in) {
    std::optional<Shape> out;
    const auto len = sizes_given ? sizes_len : scales_given ? scales_len : std::nullopt;
    if (!axes_attr && len) out = unknown_shape(static_cast<size_t>(*len));
    propagate_type(ctx, 0, 0, std::move(out));
    return;
  }
  const int64_t r = rank_of(*in);
  const std::vector<int64_t> axes = axes_attr ? normalize_axes(ctx, *axes_attr, r) : all_axes(r);
  Shape out = *in;
  for (Dim& d : out.dims) d.denotation.clear();
  auto unknown_axes = [&] {
    for (int64_t a : axes) out.dims[static_cast<size_t>(a)] = Dim{};
  };
  auto check_len = [&](size_t len, const char* what) {
    if (len != axes.size())
      ctx.fail("shape.resize", std::string(what) + " has " + std::to_string(len) + " entries for " +
                                   std::to_string(axes.size()) + " axes");
  };
  if (sizes_given && !scales_given) {
    const DimValues* sizes = ctx.input_values(sizes_i);
    if (!sizes) {
      unknown_axes();
    } else {
      check_len(sizes->size(), "sizes");
      if (policy == "stretch") {
        for (size_t k = 0; k < axes.size(); ++k) {
          const Dim& s = (*sizes)[k];
          out.dims[static_cast<size_t>(axes[k])] = s.kind == Dim::Kind::kParam ? Dim::symbol(s.param) : s.is_static() ? Dim::of(s.value) : Dim{};
        }
      } else {
        // not_larger / not_smaller: one scale for every resized axis, keeping the aspect ratio.
        std::optional<double> scale;
        bool known = true;
        for (size_t k = 0; k < axes.size(); ++k) {
          const Dim& s = (*sizes)[k];
          const Dim& d = in->dims[static_cast<size_t>(axes[k])];
          if (!s.is_static() || !d.is_static() || d.value == 0) {
            known = false;
            break;
          }
          const double ratio = static_cast<double>(s.value) / static_cast<double>(d.value);
          if (!scale) scale = ratio;
          else scale = policy == "not_larger" ? std::min(*scale, ratio) : std::max(*scale, ratio);
        }
        if (!known || !scale || (policy != "not_larger" && policy != "not_smaller")) {
          unknown_axes();
        } else {
          for (int64_t a : axes) {
            const double v = std::floor(*scale * static_cast<double>(in->dims[static_cast<size_t>(a)].value) + 0.5);
            out.dims[static_cast<size_t>(a)] = Dim::of(static_cast<int64_t>(v));
          }
        }
      }
    }
  } else if (scales_given && !sizes_given) {
    auto scales = input_numbers(ctx, scales_i);
    if (!scales) {
      unknown_axes();
    } else {
      check_len(scales->size(), "scales");
      // tf_crop_and_resize with a region of interest: sizes depend on the roi as well.
      std::optional<std::vector<double>> roi;
      if (ctx.opset() >= 11 && ctx.attr_string("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize")
        roi = input_numbers(ctx, 1);
      for (size_t k = 0; k < axes.size(); ++k) {
        Dim& o = out.dims[static_cast<size_t>(axes[k])];
        if (ctx.opset() >= 11 && ctx.attr_string("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize" &&
            (!roi || roi->size() != 2 * axes.size() || (*roi)[k + axes.size()] - (*roi)[k] != 1.0)) {
          o = Dim{};
          continue;
        }
        o = scale_dim(ctx, o, (*scales)[k]);
      }
    }
  } else {
    unknown_axes();
  }
  propagate_type(ctx, 0, 0, std::move(out));
}

// Col2Im(input (N, C * prod(block), L), image_shape, block_shape) -> (N, C, image_shape...).
void infer_col2im(InferenceContext& ctx) {
  const Shape* x = shape::shape_of_rank(ctx, 0, 3, "Col2Im input");
  const DimValues* image = ctx.input_values(1);
  const Shape* image_shape = ctx.input_shape(1);
  auto block = ctx.input_ints(2);
  std::optional<size_t> n;
  if (image) n = image->size();
  else if (image_shape && image_shape->rank() == 1 && image_shape->dims[0].is_static())
    n = static_cast<size_t>(image_shape->dims[0].value);
  else if (block) n = block->size();
  if (!n) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  if (block && block->size() != *n)
    ctx.fail("shape.attribute", "Col2Im block_shape has " + std::to_string(static_cast<int64_t>(block->size())) +
                                    " values, image_shape " + std::to_string(static_cast<int64_t>(*n)));
  Shape out;
  out.dims.push_back(shape::dim_at(x, 0));
  Dim c;
  if (block) {
    std::vector<Dim> bd;
    for (int64_t b : *block) bd.push_back(Dim::of(b));
    auto prod = shape::static_product(ctx, bd);
    if (prod && *prod > 0) c = shape::exact_quotient(shape::dim_at(x, 1), *prod);
  }
  out.dims.push_back(c);
  for (size_t i = 0; i < *n; ++i) out.dims.push_back(image ? (*image)[i] : Dim{});
  propagate_type(ctx, 0, 0, std::move(out));
}

// GridSample(X (N, C, D...), grid (N, D_out..., r)) -> (N, C, D_out...).
void infer_grid_sample(InferenceContext& ctx) {
  const Shape* x = ctx.input_shape(0);
  const Shape* grid = ctx.input_shape(1);
  if (ctx.opset() < 20) {
    x = shape::shape_of_rank(ctx, 0, 4, "GridSample input X");
    grid = shape::shape_of_rank(ctx, 1, 4, "GridSample grid");
  }
  if (x && grid && x->rank() != grid->rank())
    ctx.fail("shape.rank", "GridSample X " + x->to_string() + " and grid " + grid->to_string() +
                               " must have the same rank");
  if (!x && !grid) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  const size_t rank = x ? x->rank() : grid->rank();
  if (rank < 3) ctx.fail("shape.rank", "GridSample inputs need rank >= 3");
  if (grid) {
    const Dim& r = grid->dims[rank - 1];
    if (r.is_static() && r.value != static_cast<int64_t>(rank) - 2)
      ctx.fail("shape.rank", "GridSample grid " + grid->to_string() + " must end with " +
                                 std::to_string(static_cast<int64_t>(rank) - 2) + " coordinates");
  }
  Shape out;
  out.dims.push_back(shape::merge(ctx, shape::dim_at(x, 0), shape::dim_at(grid, 0), "shape.broadcast", "batch of X vs grid"));
  out.dims.push_back(shape::dim_at(x, 1));
  for (size_t i = 1; i + 1 < rank; ++i) out.dims.push_back(shape::dim_at(grid, i));
  propagate_type(ctx, 0, 0, std::move(out));
}

// CenterCropPad(input, shape): the axes (all by default) take the sizes in `shape`.
void infer_center_crop_pad(InferenceContext& ctx) {
  const Shape* x = ctx.input_shape(0);
  if (!x) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  const int64_t rank = static_cast<int64_t>(x->rank());
  std::vector<int64_t> axes;
  if (auto a = ctx.attr_ints("axes")) {
    for (int64_t axis : *a) axes.push_back(shape::normalize_axis(ctx, axis, rank, "axes value"));
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  const DimValues* sizes = ctx.input_values(1);
  if (sizes && sizes->size() != axes.size())
    ctx.fail("shape.attribute", "CenterCropPad shape has " + std::to_string(static_cast<int64_t>(sizes->size())) +
                                    " values for " + std::to_string(static_cast<int64_t>(axes.size())) + " axes");
  Shape out = *x;
  for (size_t i = 0; i < axes.size(); ++i)
    out.dims[static_cast<size_t>(axes[i])] = sizes ? (*sizes)[i] : Dim{};
  propagate_type(ctx, 0, 0, std::move(out));
}

}  // namespace

void register_vision_shapes(SchemaRegistry& r) {
  r.set_shape_fn("NonMaxSuppression", infer_non_max_suppression);
  r.set_shape_fn("RoiAlign", infer_roi_align);
  r.set_shape_fn("MaxRoiPool", infer_max_roi_pool);
  r.set_shape_fn("ImageDecoder", infer_image_decoder);
  r.set_shape_fn("AffineGrid", infer_affine_grid);
  r.set_shape_fn("Upsample", infer_upsample);
  r.set_shape_fn("Resize", infer_resize);
  r.set_shape_fn("Col2Im", infer_col2im);
  r.set_shape_fn("GridSample", infer_grid_sample);
  r.set_shape_fn("CenterCropPad", infer_center_crop_pad);
}

}  // namespace onnxtool::ir
