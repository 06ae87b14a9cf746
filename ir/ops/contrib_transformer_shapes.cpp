// Shape functions of onnxruntime's com.microsoft transformer ops that the runner executes
// (runner/cpu/contrib_transformer.cpp): the residual-add normalizations, BiasAdd, BiasSoftmax,
// MatMulNBits, RotaryEmbedding and EmbedLayerNormalization, and the contrib forms of Range,
// ExpandDims, Trilu, GatherND and Inverse; and the fused attention ops (Attention,
// MultiHeadAttention, DecoderMaskedMultiHeadAttention, GroupQueryAttention) that
// runner/cpu/contrib_attention.cpp runs.
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

// A size taken from an attribute: unknown unless positive (the kernel refuses the others).
Dim positive_dim(int64_t v) { return v > 0 ? Dim::of(v) : Dim(); }

// Attention(input [B, S, Din], weights [Din, Dq + Dk + Dv], ...): output [B, S, Dv] of input's
// type (Dv from qkv_hidden_sizes, else a third of weights' columns); present [2, B, N, P + S, H]
// with the total length known when past's is.
void infer_bert_attention(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  const Shape* w = ctx.input_shape(1);
  const int64_t heads = ctx.attr_int("num_heads", 0);
  const auto sizes = ctx.attr_ints("qkv_hidden_sizes");
  Dim v_hidden, hidden;
  if (sizes && sizes->size() == 3) {
    v_hidden = positive_dim((*sizes)[2]);
    hidden = positive_dim((*sizes)[0]);
  } else {
    v_hidden = hidden = shape::exact_quotient(shape::dim_at(w, 1), 3);
  }
  std::optional<Shape> out;
  if (in && in->rank() == 3) out = shape::shape_of_dims({in->dims[0], in->dims[1], v_hidden});
  propagate_type(ctx, 0, 0, out);
  if (!wants_output(ctx, 1)) return;
  Dim total;
  const Shape* past = ctx.input_shape(4);
  if (past && past->rank() == 5 && in && in->rank() == 3)
    total = shape::sum_dims(ctx, past->dims[3], in->dims[1]);
  else if (!ctx.has_input(4) && in && in->rank() == 3)
    total = in->dims[1];
  propagate_type(ctx, 0, 1,
                 shape::shape_of_dims({Dim::of(2), shape::dim_at(in, 0), positive_dim(heads), total,
                                       heads > 0 ? shape::exact_quotient(hidden, heads) : Dim()}));
}

// MultiHeadAttention(query [B, S, D], key, value, ...): output [B, S, Dv] (Dv value's last dim
// when 3-D, else D); present_key / present_value [B, N, P + L, H or Hv]; qk [B, N, S, P + L].
void infer_multi_head_attention(InferenceContext& ctx) {
  const Shape* q = ctx.input_shape(0);
  const Shape* k = ctx.input_shape(1);
  const Shape* v = ctx.input_shape(2);
  const Shape* past = ctx.input_shape(6);
  const int64_t heads = ctx.attr_int("num_heads", 0);
  const Dim hidden = shape::dim_at(q, 2);
  const Dim v_hidden = v && v->rank() == 3 ? v->dims[2] : hidden;
  std::optional<Shape> out;
  if (q && q->rank() == 3) out = shape::shape_of_dims({q->dims[0], q->dims[1], v_hidden});
  propagate_type(ctx, 0, 0, out);
  Dim kv_len;
  if (k && k->rank() == 3) kv_len = k->dims[1];
  if (k && k->rank() == 4) kv_len = k->dims[2];
  Dim total = kv_len;
  if (ctx.has_input(6)) total = past && past->rank() == 4 ? shape::sum_dims(ctx, past->dims[2], kv_len) : Dim();
  const auto per_head = [&](const Dim& d) { return heads > 0 ? shape::exact_quotient(d, heads) : Dim(); };
  const Dim batch = shape::dim_at(q, 0);
  if (wants_output(ctx, 1))
    propagate_type(ctx, 0, 1, shape::shape_of_dims({batch, positive_dim(heads), total, per_head(hidden)}));
  if (wants_output(ctx, 2))
    propagate_type(ctx, 0, 2, shape::shape_of_dims({batch, positive_dim(heads), total, per_head(v_hidden)}));
  if (wants_output(ctx, 3))
    propagate_type(ctx, 0, 3, shape::shape_of_dims({batch, positive_dim(heads), shape::dim_at(q, 1), total}));
}

// DecoderMaskedMultiHeadAttention(query [B, 1, D], ..., past_key [B, N, M, H], ...): output of
// query's type and shape; present_key / present_value the caches' shapes.
void infer_decoder_masked_mha(InferenceContext& ctx) {
  propagate_type_and_shape(ctx, 0, 0);
  for (size_t i : {size_t{1}, size_t{2}}) {
    const Shape* cache = ctx.input_shape(4 + i);  // past_key, past_value
    if (wants_output(ctx, i)) propagate_type(ctx, 0, i, cache ? std::optional<Shape>(*cache) : std::nullopt);
  }
}

// GroupQueryAttention(query [B, S, D], ...): output [B, S, N * H] (D itself unless QKV is packed
// into query, H = D / (N + 2 Nkv)); present_key / present_value [B, Nkv, max(total, past), H].
void infer_group_query_attention(InferenceContext& ctx) {
  const Shape* q = ctx.input_shape(0);
  const int64_t heads = ctx.attr_int("num_heads", 0), kv_heads = ctx.attr_int("kv_num_heads", 0);
  const bool packed = !ctx.has_input(1);
  const Dim d = shape::dim_at(q, 2);
  Dim head_size = heads <= 0 || kv_heads <= 0 ? Dim() : shape::exact_quotient(d, packed ? heads + 2 * kv_heads : heads);
  Dim hidden = packed ? (head_size.kind == Dim::Kind::kValue ? Dim::of(head_size.value * heads) : Dim()) : d;
  std::optional<Shape> out;
  if (q && q->rank() == 3) out = shape::shape_of_dims({q->dims[0], q->dims[1], hidden});
  propagate_type(ctx, 0, 0, out);
  const Shape present = shape::shape_of_dims({shape::dim_at(q, 0), positive_dim(kv_heads), Dim(), head_size});
  for (size_t i : {size_t{1}, size_t{2}})
    if (wants_output(ctx, i)) propagate_type(ctx, 0, i, present);
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
  add("Attention", infer_bert_attention);
  add("MultiHeadAttention", infer_multi_head_attention);
  add("GroupQueryAttention", infer_group_query_attention);
  add("DecoderMaskedMultiHeadAttention", infer_decoder_masked_mha);
}

}  // namespace onnxtool::ir
