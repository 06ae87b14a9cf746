// Shape functions of the image and vision ops: CenterCropPad, Col2Im, GridSample, AffineGrid,
// NonMaxSuppression, RoiAlign, MaxRoiPool and ImageDecoder (kernels: runner/cpu/image.cpp,
// runner/cpu/vision.cpp, MaxRoiPool in runner/cpu/pooling.cpp).
#include "ir/ops/shape_util.h"

namespace onnxtool::ir {
namespace {

using shape::all_axes;
using shape::checked_mul;
using shape::divide_dim;
using shape::normalize_axes;
using shape::propagate_type;
using shape::rank_of;
using shape::shape_of_dims;
using shape::unknown_shape;
using shape::vector_length;

// CenterCropPad: the dims at `axes` become the shape input's values.
void infer_center_crop_pad(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  if (!in) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  const int64_t r = rank_of(*in);
  auto attr_axes = ctx.attr_ints("axes");
  const std::vector<int64_t> axes = attr_axes ? normalize_axes(ctx, *attr_axes, r) : all_axes(r);
  Shape out = *in;
  const DimValues* v = ctx.input_values(1);
  if (v && v->size() != axes.size())
    ctx.fail("shape.rank", "CenterCropPad shape has " + std::to_string(v->size()) + " entries for " +
                               std::to_string(axes.size()) + " axes");
  for (size_t k = 0; k < axes.size(); ++k) out.dims[static_cast<size_t>(axes[k])] = v ? (*v)[k] : Dim{};
  propagate_type(ctx, 0, 0, std::move(out));
}

// Col2Im: [N, C * prod(block_shape), L] -> [N, C, image_shape...].
void infer_col2im(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  if (in && in->rank() != 3) ctx.fail("shape.rank", "Col2Im needs a rank-3 input, got " + in->to_string());
  const DimValues* image = ctx.input_values(1);
  auto image_len = vector_length(ctx, 1);
  auto block = ctx.input_ints(2);
  if (image && block && image->size() != block->size())
    ctx.fail("shape.rank", "Col2Im image_shape and block_shape have different lengths");
  if (!image_len) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  Shape out = unknown_shape(2 + static_cast<size_t>(*image_len));
  if (in) {
    out.dims[0] = in->dims[0];
    if (block) {
      int64_t prod = 1;
      for (int64_t b : *block) {
        if (b < 1) ctx.fail("shape.attribute", "Col2Im block_shape has the non-positive value " + std::to_string(b));
        prod = checked_mul(ctx, prod, b);
      }
      out.dims[1] = divide_dim(ctx, in->dims[1], prod, "Col2Im input channels");
    }
  }
  if (image)
    for (size_t i = 0; i < image->size(); ++i) out.dims[2 + i] = (*image)[i];
  propagate_type(ctx, 0, 0, std::move(out));
}

// GridSample: [N, C, D1..Dn] sampled at grid [N, D1'..Dn', n] -> [N, C, D1'..Dn'].
void infer_grid_sample(InferenceContext& ctx) {
  const Shape* x = ctx.input_shape(0);
  const Shape* grid = ctx.input_shape(1);
  if (x && grid && x->rank() != grid->rank())
    ctx.fail("shape.rank", "GridSample input " + x->to_string() + " and grid " + grid->to_string() + " differ in rank");
  if (ctx.opset() < 20) {
    if (x && x->rank() != 4) ctx.fail("shape.rank", "GridSample-16 needs a rank-4 input, got " + x->to_string());
    if (grid && grid->rank() != 4) ctx.fail("shape.rank", "GridSample-16 needs a rank-4 grid, got " + grid->to_string());
  }
  if (!x && !grid) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  const size_t r = x ? x->rank() : grid->rank();
  if (r < 3) ctx.fail("shape.rank", "GridSample needs rank >= 3");
  Shape out = unknown_shape(r);
  if (x) {
    out.dims[0] = x->dims[0];
    out.dims[1] = x->dims[1];
  }
  if (grid) {
    const Dim& last = grid->dims[r - 1];
    if (last.is_static() && last.value != static_cast<int64_t>(r - 2))
      ctx.fail("shape.rank", "GridSample grid's last dim is " + std::to_string(last.value) + ", needs " + std::to_string(r - 2));
    out.dims[0] = shape::merge(ctx, out.dims[0], grid->dims[0], "shape.rank", "GridSample batch of input and grid");
    for (size_t i = 2; i < r; ++i) out.dims[i] = grid->dims[i - 1];
  }
  for (Dim& d : out.dims) d.denotation.clear();
  propagate_type(ctx, 0, 0, std::move(out));
}

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

}  // namespace

void register_vision_shapes(SchemaRegistry& r) {
  constexpr int kLast = 1000;
  // CenterCropPad, Col2Im and GridSample are registered again by register_nn_shapes, which
  // runs later and replaces these.
  r.set_shape_fn("", "CenterCropPad", 1, kLast, infer_center_crop_pad);
  r.set_shape_fn("", "Col2Im", 1, kLast, infer_col2im);
  r.set_shape_fn("", "GridSample", 1, kLast, infer_grid_sample);
  r.set_shape_fn("", "NonMaxSuppression", 1, kLast, infer_non_max_suppression);
  r.set_shape_fn("", "RoiAlign", 1, kLast, infer_roi_align);
  r.set_shape_fn("", "MaxRoiPool", 1, kLast, infer_max_roi_pool);
  r.set_shape_fn("", "ImageDecoder", 1, kLast, infer_image_decoder);
  r.set_shape_fn("", "AffineGrid", 1, kLast, infer_affine_grid);
}

}  // namespace onnxtool::ir
