// Shape functions of the vision ops: AffineGrid, NonMaxSuppression, RoiAlign, MaxRoiPool and
// ImageDecoder (kernels: runner/cpu/image.cpp, runner/cpu/vision.cpp, MaxRoiPool in
// runner/cpu/pooling.cpp). CenterCropPad, Col2Im and GridSample are with the images in
// nn_shapes.cpp.
#include "ir/ops/shape_util.h"

namespace onnxtool::ir {
namespace {

using shape::propagate_type;
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

}  // namespace

void register_vision_shapes(SchemaRegistry& r) {
  constexpr int kLast = 1000;
  r.set_shape_fn("", "NonMaxSuppression", 1, kLast, infer_non_max_suppression);
  r.set_shape_fn("", "RoiAlign", 1, kLast, infer_roi_align);
  r.set_shape_fn("", "MaxRoiPool", 1, kLast, infer_max_roi_pool);
  r.set_shape_fn("", "ImageDecoder", 1, kLast, infer_image_decoder);
  r.set_shape_fn("", "AffineGrid", 1, kLast, infer_affine_grid);
}

}  // namespace onnxtool::ir
