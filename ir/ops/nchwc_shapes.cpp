// Shape functions of onnxruntime's channel-blocked ops, the domain com.microsoft.nchwc
// (ir/ops/nchwc_schemas.def; kernels: runner/cpu/nchwc.cpp). A blocked tensor is declared
// [N, Cp, H, W], Cp the channels rounded up to the block size (ir/nchwc_layout.h): Conv, the
// pools and Upsample see it as a plain tensor of Cp channels; ReorderInput pads, ReorderOutput
// drops the padding.
#include "ir/error.h"
#include "ir/nchwc_layout.h"
#include "ir/ops/shape_util.h"

namespace onnxtool::ir {
namespace {

using shape::propagate_type;
using shape::unknown_shape;

constexpr const char* kBlockRule = "shape.nchwc-block";

/// The block size of the node's graph; a contradiction in the model fails this node.
int64_t block_size(const InferenceContext& ctx) {
  const Graph* g = ctx.node().graph();
  if (!g) return machine_nchwc_block_size();
  try {
    return nchwc_block_size(*g).size;
  } catch (const Error& e) {
    ctx.fail(kBlockRule, e.what());
  }
}

/// The rank-4 input X (the NCHWc kernels take 2-D images only), or nullptr when unknown.
const Shape* image_input(const InferenceContext& ctx) {
  const Shape* x = ctx.input_shape(0);
  if (x && x->rank() != 4) ctx.fail("shape.rank", ctx.node().op_type + " of com.microsoft.nchwc takes a 4-D input, got " + x->to_string());
  return x;
}

// ReorderInput: [N, C, H, W] (or [N, H, W, C] with channels_last) -> [N, Cp, H, W].
void infer_reorder_input(InferenceContext& ctx) {
  const Shape* x = image_input(ctx);
  if (!x) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  const bool last = ctx.attr_int("channels_last", 0) != 0;
  const Dim& c = x->dims[last ? 3 : 1];
  Shape out = unknown_shape(4);
  out.dims[0] = x->dims[0];
  if (c.is_static()) out.dims[1] = Dim::of(nchwc_padded(c.value, block_size(ctx)));
  for (size_t i = 0; i < 2; ++i) out.dims[2 + i] = x->dims[(last ? 1 : 2) + i];
  propagate_type(ctx, 0, 0, std::move(out));
}

// ReorderOutput: [N, Cp, H, W] -> [N, channels, H, W] (or [N, H, W, channels]).
void infer_reorder_output(InferenceContext& ctx) {
  const int64_t channels = ctx.attr_int("channels", 0);
  if (channels <= 0) ctx.fail("shape.attribute", "ReorderOutput needs channels > 0, got " + std::to_string(channels));
  const Shape* x = image_input(ctx);
  if (!x) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  const Dim& c = x->dims[1];
  if (c.is_static()) {
    const int64_t block = block_size(ctx);
    if (c.value != nchwc_padded(channels, block))
      ctx.fail(kBlockRule, "input " + x->to_string() + " is not " + std::to_string(channels) +
                               " channels padded to the block size " + std::to_string(block));
  }
  const bool last = ctx.attr_int("channels_last", 0) != 0;
  Shape out = unknown_shape(4);
  out.dims[0] = x->dims[0];
  out.dims[last ? 3 : 1] = Dim::of(channels);
  for (size_t i = 0; i < 2; ++i) out.dims[(last ? 1 : 2) + i] = x->dims[2 + i];
  propagate_type(ctx, 0, 0, std::move(out));
}

void infer_conv(InferenceContext& ctx) {
  image_input(ctx);
  shape::conv_like(ctx);
}

void infer_pool(InferenceContext& ctx) {
  image_input(ctx);
  shape::pool_like(ctx);
}

void infer_global_pool(InferenceContext& ctx) {
  image_input(ctx);
  shape::global_pool_like(ctx);
}

// Upsample: each dim times its integer scale.
void infer_upsample(InferenceContext& ctx) {
  const Shape* x = image_input(ctx);
  const auto scales = ctx.attr_ints("scales");
  if (scales && scales->size() != 4) ctx.fail("shape.attribute", "Upsample scales must have 4 values, has " + std::to_string(scales->size()));
  if (scales)
    for (int64_t s : *scales)
      if (s <= 0) ctx.fail("shape.attribute", "Upsample scales must be positive, got " + std::to_string(s));
  if (!x || !scales) {
    propagate_type(ctx, 0, 0, x ? std::optional<Shape>(unknown_shape(4)) : std::nullopt);
    return;
  }
  Shape out = unknown_shape(4);
  for (size_t i = 0; i < 4; ++i) out.dims[i] = shape::mul(ctx, x->dims[i], Dim::of((*scales)[i]));
  propagate_type(ctx, 0, 0, std::move(out));
}

}  // namespace

void register_nchwc_shapes(SchemaRegistry& r) {
  const std::string_view d = kNchwcDomain;
  r.set_shape_fn(d, "ReorderInput", 1, kMaxOpset, infer_reorder_input);
  r.set_shape_fn(d, "ReorderOutput", 1, kMaxOpset, infer_reorder_output);
  r.set_shape_fn(d, "Conv", 1, kMaxOpset, infer_conv);
  r.set_shape_fn(d, "MaxPool", 1, kMaxOpset, infer_pool);
  r.set_shape_fn(d, "AveragePool", 1, kMaxOpset, infer_pool);
  r.set_shape_fn(d, "GlobalMaxPool", 1, kMaxOpset, infer_global_pool);
  r.set_shape_fn(d, "GlobalAveragePool", 1, kMaxOpset, infer_global_pool);
  r.set_shape_fn(d, "Upsample", 1, kMaxOpset, infer_upsample);
}

}  // namespace onnxtool::ir
