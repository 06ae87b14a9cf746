// Shape functions of onnxruntime's com.microsoft transformer ops that the runner executes
// (runner/cpu/contrib_transformer.cpp): the residual-add normalizations, BiasAdd, BiasSoftmax,
// MatMulNBits, RotaryEmbedding and EmbedLayerNormalization, and the contrib forms of Range,
// ExpandDims, Trilu, GatherND and Inverse.
#include "ir/ops/shape_util.h"

namespace onnxtool::ir {
namespace {

constexpr std::string_view kMs = kMicrosoftDomain;

using shape::propagate_type;
using shape::propagate_type_and_shape;

bool wants_output(const InferenceContext& ctx, size_t i) { return ctx.output_count() > i && ctx.has_output(i); }

void infer_same_as_x(InferenceContext& ctx) { propagate_type_and_shape(ctx, 0, 0); }

// Skip(Simplified)LayerNormalization: output and input_skip_bias_sum of input's type and shape;
// mean and inv_std_var float, input's shape with the normalized (last) axis 1.
void infer_skip_layer_norm(InferenceContext& ctx) {
  propagate_type_and_shape(ctx, 0, 0);
  const Shape* in = ctx.input_shape(0);
  std::optional<Shape> stats;
  if (in && in->rank() > 0) {
    stats = *in;
    stats->dims.back() = Dim::of(1);
  }
  for (size_t i : {size_t{1}, size_t{2}})
    if (wants_output(ctx, i)) ctx.set_output_tensor(i, DataType::kFloat, stats);
  if (wants_output(ctx, 3)) propagate_type_and_shape(ctx, 0, 3);
}

// MatMulNBits(A, ...): A's type, A's shape with the last axis N.
void infer_matmul_nbits(InferenceContext& ctx) {
  const Shape* a = ctx.input_shape(0);
  std::optional<Shape> y;
  if (a && a->rank() > 0) {
    y = *a;
    y->dims.back() = Dim::of(ctx.attr_int("N", 0));
  }
  propagate_type(ctx, 0, 0, y);
}

// EmbedLayerNormalization(input_ids [B, S], ..., word_embedding [V, H], ...): output and
// embedding_sum [B, S, H] of the embeddings' type, mask_index int32 [B].
void infer_embed_layer_norm(InferenceContext& ctx) {
  const Shape* ids = ctx.input_shape(0);
  const Shape* word = ctx.input_shape(2);
  std::optional<Shape> out;
  if (ids && ids->rank() == 2) out = shape::shape_of_dims({ids->dims[0], ids->dims[1], shape::dim_at(word, 1)});
  propagate_type(ctx, 2, 0, out);
  if (wants_output(ctx, 1)) ctx.set_output_tensor(1, DataType::kInt32, shape::shape_of_dims({shape::dim_at(ids, 0)}));
  if (wants_output(ctx, 2)) propagate_type(ctx, 2, 2, out);
}

// Range: 1-D of start's type, the length unknown until run.
void infer_range(InferenceContext& ctx) { propagate_type(ctx, 0, 0, shape::unknown_shape(1)); }

// ExpandDims(X, axis): X with a 1 inserted at the constant axis; rank + 1 unknown dims otherwise.
void infer_expand_dims(InferenceContext& ctx) {
  const Shape* x = ctx.input_shape(0);
  if (!x) return propagate_type(ctx, 0, 0, std::nullopt);
  const auto axis = ctx.input_ints(1);
  const int64_t rank = static_cast<int64_t>(x->rank());
  if (!axis || axis->size() != 1 || (*axis)[0] < -rank || (*axis)[0] > rank)
    return propagate_type(ctx, 0, 0, shape::unknown_shape(x->rank() + 1));
  Shape y = *x;
  const int64_t a = (*axis)[0];
  y.dims.insert(y.dims.begin() + (a >= 0 ? a : rank + a + 1), Dim::of(1));
  propagate_type(ctx, 0, 0, y);
}

// GatherND: ONNX's GatherND without batch dims.
void infer_gather_nd(InferenceContext& ctx) {
  const OpSchema* standard = SchemaRegistry::instance().find("", "GatherND", 11);
  if (standard && standard->infer) standard->infer(ctx);
}

}  // namespace

void register_contrib_transformer_shapes(SchemaRegistry& r) {
  const auto add = [&r](std::string_view op, ShapeFn fn) { r.set_shape_fn(kMs, op, 1, kMaxOpset, fn); };
  add("SkipLayerNormalization", infer_skip_layer_norm);
  add("SkipSimplifiedLayerNormalization", infer_skip_layer_norm);
  add("BiasAdd", infer_same_as_x);
  add("BiasSoftmax", infer_same_as_x);
  add("MatMulNBits", infer_matmul_nbits);
  add("RotaryEmbedding", infer_same_as_x);
  add("EmbedLayerNormalization", infer_embed_layer_norm);
  add("Range", infer_range);
  add("ExpandDims", infer_expand_dims);
  add("Trilu", infer_same_as_x);
  add("GatherND", infer_gather_nd);
  add("Inverse", infer_same_as_x);
}

}  // namespace onnxtool::ir
