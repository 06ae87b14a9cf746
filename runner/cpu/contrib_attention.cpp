// CPU kernels of onnxruntime's com.microsoft fused attention ops: Attention (BERT's, with its
// own QKV projection), MultiHeadAttention, DecoderMaskedMultiHeadAttention (one decoding step on
// a preallocated KV cache) and GroupQueryAttention (the decoder form with a KV cache written in
// place, grouped KV heads, rotary embedding, local windows and softcap). They follow
// onnxruntime's CPU kernels (contrib_ops/cpu/bert) in what they accept and compute:
// masks become additive values (mask_filter_value, or the lowest float where causal), every
// score row is softmaxed in float32, float16 tensors are widened on the way in and rounded once
// on the way out (and where onnxruntime keeps a rotated Q or K in float16, there too). Input
// forms those kernels reject or leave undefined are refused naming the form. One core (attend)
// serves all four; it keeps its own softmax, unlike the opset-23 Attention's (attention.cpp),
// because onnxruntime's windows, sinks and lowest-float masks differ from the standard op's.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "runner/cpu/elementwise_util.h"
#include "runner/cpu/gemm.h"
#include "runner/cpu/kernels.h"
#include "runner/cpu/tensor_util.h"

namespace onnxtool::runner::cpu {

namespace {

constexpr std::string_view kMs = ir::kMicrosoftDomain;
constexpr float kLowest = std::numeric_limits<float>::lowest();

std::string dims_text(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

/// A float32 or float16 tensor's elements as float32.
std::vector<float> widen(const Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.size()));
  if (t.dtype() == DataType::kFloat) {
    std::copy(t.data<float>(), t.data<float>() + t.size(), out.begin());
  } else {
    const uint16_t* h = t.data<uint16_t>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = half_to_float(h[i]);
  }
  return out;
}

/// Writes float32 values into a float32 or float16 tensor (rounding once for float16).
void store(Tensor& y, const std::vector<float>& v) {
  if (y.dtype() == DataType::kFloat) {
    std::copy(v.begin(), v.end(), y.mutable_data<float>());
    return;
  }
  uint16_t* h = y.mutable_data<uint16_t>();
  for (size_t i = 0; i < v.size(); ++i) h[i] = float_to_half(v[i]);
}

/// Values rounded to float16 and back: what onnxruntime's float16 kernels hold between steps.
void round_half(std::vector<float>& v) {
  for (float& x : v) x = half_to_float(float_to_half(x));
}

const Tensor* optional_input(const KernelContext& ctx, size_t i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; }

bool wants_output(const KernelContext& ctx, size_t i) { return ctx.output_count() > i && ctx.has_output(i); }

void require_type(const KernelContext& ctx, const Tensor& t, const char* what, DataType type) {
  if (t.dtype() != type) ctx.fail(std::string(what) + " " + t.describe() + " must be " + type_name(type));
}

void require_shape(const KernelContext& ctx, const Tensor& t, const char* what, const std::vector<int64_t>& shape) {
  if (t.shape() != shape) ctx.fail(std::string(what) + " " + t.describe() + " must be " + dims_text(shape));
}

/// The score window of one query row: columns [lo, hi) are softmaxed, the others get 0. With
/// `smooth`, the softmax has an extra virtual logit `sink` (onnxruntime's smooth softmax).
struct Window {
  int64_t lo = 0, hi = 0;
  bool smooth = false;
  float sink = 0;
};

/// The sizes of one attention: query heads in groups of `group` sharing a KV head, kv_cap cached
/// rows per KV head.
struct Geometry {
  int64_t batch = 0, heads = 0, group = 1, q_len = 0, head_size = 0, v_head_size = 0, kv_cap = 0;
  float scale = 1;
};

/// The shared core: for every batch b and head n, scores = scale * Q[b, n] K[b, n / group]^T over
/// the first keys(b) cached rows, each score row adjusted by `row(b, n, s, scores)` (masks,
/// biases; it returns the row's window), softmaxed, times V, into out [B, S, N * Hv].
/// q is [B, N, S, H]; k and v are [B, N / group, kv_cap, H or Hv].
template <class Keys, class Row>
void attend(const Geometry& g, const float* q, const float* k, const float* v, Keys keys, Row row, float* out) {
  const int64_t kv_heads = g.heads / g.group, hv = g.v_head_size, h = g.head_size;
  parallel_ranges(g.batch * g.heads, 1, [&](int64_t i0, int64_t i1) {
    std::vector<float> scores, ctx_rows(static_cast<size_t>(g.q_len * hv));
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t b = i / g.heads, n = i % g.heads, kvh = b * kv_heads + n / g.group;
      const int64_t t_len = keys(b);
      scores.assign(static_cast<size_t>(g.q_len * t_len), 0.0f);
      const float* qb = q + i * g.q_len * h;
      const float* kb = k + kvh * g.kv_cap * h;
      const float* vb = v + kvh * g.kv_cap * hv;
      if (t_len > 0) gemm_f32(g.q_len, t_len, h, qb, h, false, kb, h, true, scores.data(), t_len, false);
      for (int64_t s = 0; s < g.q_len; ++s) {
        float* r = scores.data() + s * t_len;
        for (int64_t t = 0; t < t_len; ++t) r[t] *= g.scale;
        const Window w = row(b, n, s, r);
        float top = w.smooth ? w.sink : kLowest;
        for (int64_t t = w.lo; t < w.hi; ++t) top = std::max(top, r[t]);
        double sum = w.smooth ? std::exp(static_cast<double>(w.sink) - top) : 0.0;
        for (int64_t t = 0; t < t_len; ++t) {
          if (t < w.lo || t >= w.hi) {
            r[t] = 0;
            continue;
          }
          r[t] = std::exp(r[t] - top);
          sum += r[t];
        }
        for (int64_t t = w.lo; t < w.hi; ++t) r[t] = static_cast<float>(r[t] / sum);
      }
      if (t_len > 0) {
        gemm_f32(g.q_len, hv, t_len, scores.data(), t_len, false, vb, hv, false, ctx_rows.data(), hv, false);
      } else {
        std::fill(ctx_rows.begin(), ctx_rows.end(), 0.0f);
      }
      for (int64_t s = 0; s < g.q_len; ++s)
        std::copy(ctx_rows.begin() + s * hv, ctx_rows.begin() + (s + 1) * hv,
                  out + ((b * g.q_len + s) * g.heads + n) * hv);
    }
  });
}

/// [B, L, N * H] (plus a bias of N * H values when given) as [B, N, L, H].
std::vector<float> to_heads(const std::vector<float>& x, int64_t batch, int64_t len, int64_t heads, int64_t head_size,
                            const float* bias) {
  std::vector<float> y(x.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t l = 0; l < len; ++l)
      for (int64_t n = 0; n < heads; ++n)
        for (int64_t e = 0; e < head_size; ++e)
          y[static_cast<size_t>(((b * heads + n) * len + l) * head_size + e)] =
              x[static_cast<size_t>((b * len + l) * heads * head_size + n * head_size + e)] +
              (bias ? bias[n * head_size + e] : 0.0f);
  return y;
}

/// past [B, N, P, H] then new [B, N, L, H] along the sequence: [B, N, P + L, H].
std::vector<float> concat_past(const std::vector<float>* past, const std::vector<float>& cur, int64_t rows, int64_t p,
                               int64_t l, int64_t h) {
  std::vector<float> y(static_cast<size_t>(rows * (p + l) * h));
  for (int64_t r = 0; r < rows; ++r) {
    if (past) std::copy_n(past->begin() + r * p * h, p * h, y.begin() + r * (p + l) * h);
    std::copy_n(cur.begin() + r * l * h, l * h, y.begin() + r * (p + l) * h + p * h);
  }
  return y;
}

// ---------------------------------------------------------------- masks of Attention and MultiHeadAttention

/// A key padding or attention mask (int32) with unidirectional masking, as onnxruntime's
/// PrepareMask resolves it: 0 where a key is attended, mask_filter_value where the mask hides it,
/// the lowest float past the diagonal (keys after past + s) when causal. Forms: [B] key lengths (keys at and after the
/// length hidden), [2B] lengths then start positions (keys before the start hidden; Attention
/// only), [B, T] 0/1 per key, [B, S, T] 0/1 per query and key.
struct KeyMask {
  const int32_t* data = nullptr;
  enum Form { kNone, kLengths, kLengthsStarts, kPerKey, kPerQuery } form = kNone;
  int64_t batch = 0, q_len = 0, total = 0, past = 0;
  bool causal = false;
  float filter = -10000.0f;

  float at(int64_t b, int64_t s, int64_t t) const {
    // onnxruntime leaves the last query row unmasked: the same when the keys end with the
    // queries (self-attention), all keys for it when there are more keys than past + queries.
    if (causal && s + 1 < q_len && t > past + s) return kLowest;
    switch (form) {
      case kNone:
        return 0;
      case kLengths:
        return t >= data[b] ? filter : 0;
      case kLengthsStarts:
        return (t >= data[b] || t < std::min<int64_t>(data[batch + b], total)) ? filter : 0;
      case kPerKey:
        return data[b * total + t] > 0 ? 0 : filter;
      case kPerQuery:
        return data[(b * q_len + s) * total + t] > 0 ? 0 : filter;
    }
    return 0;
  }
};

KeyMask read_mask(const KernelContext& ctx, const Tensor* m, const char* what, int64_t batch, int64_t q_len,
                  int64_t total, int64_t past, bool starts_ok) {
  KeyMask k;
  k.batch = batch, k.q_len = q_len, k.total = total, k.past = past;
  k.causal = ctx.attr_int("unidirectional", 0) == 1 && q_len > 1;
  k.filter = ctx.attr_float("mask_filter_value", -10000.0f);
  if (!m) return k;
  require_type(ctx, *m, what, DataType::kInt32);
  const std::vector<int64_t>& d = m->shape();
  k.data = m->data<int32_t>();
  if (d.size() == 1 && d[0] == batch) {
    k.form = KeyMask::kLengths;
  } else if (starts_ok && d.size() == 1 && d[0] == 2 * batch) {
    k.form = KeyMask::kLengthsStarts;
  } else if (d.size() == 2 && d[0] == batch && d[1] == total) {
    k.form = KeyMask::kPerKey;
  } else if (d.size() == 3 && d[0] == batch && d[1] == q_len && d[2] == total) {
    k.form = KeyMask::kPerQuery;
  } else if (d.size() == 1 && d[0] == 3 * batch + 2) {
    ctx.fail(std::string(what) + " " + m->describe() +
             ": the [3 * batch + 2] form (key lengths, cumulative lengths) is not supported");
  } else if (d.size() == 4) {
    ctx.fail(std::string(what) + " " + m->describe() +
             ": the 4-D (Megatron) form is not supported (nor by onnxruntime's CPU kernel)");
  } else {
    ctx.fail(std::string(what) + " " + m->describe() + " must be [batch] = [" + std::to_string(batch) + "]" +
             (starts_ok ? ", [2 * batch]" : "") + ", [batch, total_sequence] = " + dims_text({batch, total}) +
             " or [batch, sequence, total_sequence] = " + dims_text({batch, q_len, total}));
  }
  return k;
}

/// attention_bias [B or 1, N or 1, S, T] as a lookup (0 when absent).
struct AttentionBias {
  std::vector<float> data;
  int64_t batch_stride = 0, head_stride = 0, row = 0;
  bool present = false;
  const float* at(int64_t b, int64_t n, int64_t s) const {
    return data.data() + b * batch_stride + n * head_stride + s * row;
  }
};

AttentionBias read_attention_bias(const KernelContext& ctx, const Tensor* t, DataType type, int64_t batch,
                                  int64_t heads, int64_t q_len, int64_t total) {
  AttentionBias a;
  if (!t) return a;
  require_type(ctx, *t, "attention_bias", type);
  const std::vector<int64_t>& d = t->shape();
  if (d.size() != 4 || (d[0] != batch && d[0] != 1) || (d[1] != heads && d[1] != 1) || d[2] != q_len || d[3] != total)
    ctx.fail("attention_bias " + t->describe() +
             " must be [batch or 1, num_heads or 1, sequence, total_sequence] with batch " + std::to_string(batch) +
             ", num_heads " + std::to_string(heads) + ", sequence " + std::to_string(q_len) + ", total_sequence " +
             std::to_string(total));
  a.present = true;
  a.data = widen(*t);
  a.row = total;
  a.head_stride = d[1] == 1 ? 0 : q_len * total;
  a.batch_stride = d[0] == 1 ? 0 : d[1] * q_len * total;
  return a;
}

/// Adds attention_bias (when given) and the key mask to the scores of query s of head n of batch b.
void add_bias_and_mask(const AttentionBias& ab, const KeyMask& mask, int64_t b, int64_t n, int64_t s, int64_t total,
                       float* r) {
  const float* a = ab.present ? ab.at(b, n, s) : nullptr;
  for (int64_t t = 0; t < total; ++t) r[t] += (a ? a[t] : 0.0f) + mask.at(b, s, t);
}

/// attend() over every one of `total` keys, with attention_bias and the key mask added to the scores.
void attend_all_keys(const Geometry& g, const float* q, const float* k, const float* v, const AttentionBias& ab,
                     const KeyMask& mask, int64_t total, float* out) {
  attend(
      g, q, k, v, [&](int64_t) { return total; },
      [&](int64_t b, int64_t n, int64_t s, float* r) {
        add_bias_and_mask(ab, mask, b, n, s, total, r);
        return Window{0, total};
      },
      out);
}

/// The op's float type (query's or input's): float32 or float16, as onnxruntime's CPU kernels take.
DataType float_type(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.dtype() != DataType::kFloat && t.dtype() != DataType::kFloat16)
    ctx.fail(std::string(what) + " is " + type_name(t.dtype()) + ": " + ctx.node().op_type +
             " runs on float32 and float16 only (as onnxruntime's CPU kernel)");
  return t.dtype();
}

int64_t num_heads_attr(const KernelContext& ctx, const char* name) {
  const int64_t n = ctx.attr_int(name, 0);
  if (n <= 0) ctx.fail(std::string("the attribute ") + name + " must be positive, got " + std::to_string(n));
  return n;
}

float scale_attr(const KernelContext& ctx, int64_t head_size) {
  const float s = ctx.attr_float("scale", 0.0f);
  return s == 0.0f ? 1.0f / std::sqrt(static_cast<float>(head_size)) : s;
}

// ---------------------------------------------------------------- MultiHeadAttention

// MultiHeadAttention(query, key, value, bias, key_padding_mask, attention_bias, past_key,
// past_value): query [B, S, D]; key and value [B, L, D] and [B, L, Dv] (bias [2D + Dv] added to
// all three, past_key / past_value [B, N, P, H] prepended) or already split into heads [B, N, L,
// H] (cross attention: bias added to query only, no past). Outputs: [B, S, Dv], present_key and
// present_value [B, N, P + L, H], and qk, the scaled scores with masks and bias added.
void multi_head_attention(KernelContext& ctx) {
  const Tensor& query = ctx.input(0);
  const DataType type = float_type(ctx, query, "query");
  const int64_t heads = num_heads_attr(ctx, "num_heads");
  if (query.rank() == 5)
    ctx.fail("query " + query.describe() + ": packed QKV is not supported (nor by onnxruntime's CPU kernel)");
  if (query.rank() != 3) ctx.fail("query " + query.describe() + " must be [batch, sequence, hidden]");
  const Tensor* key = optional_input(ctx, 1);
  const Tensor* value = optional_input(ctx, 2);
  if (key && key->rank() == 5)
    ctx.fail("key " + key->describe() + ": packed KV is not supported (nor by onnxruntime's CPU kernel)");
  if (!key || !value)
    ctx.fail("key and value must both be given: packed QKV is not supported (nor by onnxruntime's CPU kernel)");
  for (size_t i : {size_t{8}, size_t{9}})
    if (ctx.has_input(i))
      ctx.fail(std::string(i == 8 ? "past_sequence_length" : "cache_indirection") +
               " is not supported (the shared-buffer decoding form)");
  const int64_t batch = query.dim(0), q_len = query.dim(1), hidden = query.dim(2);
  if (hidden % heads != 0)
    ctx.fail("query " + query.describe() + "'s hidden size is not a multiple of num_heads " + std::to_string(heads));
  const int64_t head_size = hidden / heads;
  require_type(ctx, *key, "key", type);
  require_type(ctx, *value, "value", type);
  const bool split = key->rank() == 4;
  int64_t kv_len = 0, v_hidden = 0;
  if (split) {
    kv_len = key->dim(2);
    require_shape(ctx, *key, "key", {batch, heads, kv_len, head_size});
    require_shape(ctx, *value, "value", key->shape());
    v_hidden = hidden;
  } else {
    if (key->rank() != 3 || value->rank() != 3)
      ctx.fail("key " + key->describe() + " and value " + value->describe() + " must both be 3-D or both 4-D");
    kv_len = key->dim(1);
    require_shape(ctx, *key, "key", {batch, kv_len, hidden});
    v_hidden = value->dim(2);
    if (value->dim(0) != batch || value->dim(1) != kv_len || v_hidden % heads != 0)
      ctx.fail("value " + value->describe() + " must be [batch, kv_sequence, v_hidden] = [" + std::to_string(batch) +
               ", " + std::to_string(kv_len) + ", a multiple of num_heads]");
  }
  const int64_t v_head = v_hidden / heads;
  const Tensor* bias_t = optional_input(ctx, 3);
  std::vector<float> bias;
  if (bias_t) {
    require_type(ctx, *bias_t, "bias", type);
    require_shape(ctx, *bias_t, "bias", {2 * hidden + v_hidden});
    bias = widen(*bias_t);
  }
  const Tensor* past_key = optional_input(ctx, 6);
  const Tensor* past_value = optional_input(ctx, 7);
  if ((past_key == nullptr) != (past_value == nullptr)) ctx.fail("past_key and past_value must be given together");
  int64_t past = 0;
  if (past_key) {
    if (split)
      ctx.fail("past_key with key and value split into heads (4-D) is not supported (nor by onnxruntime's CPU kernel)");
    if (!wants_output(ctx, 1) || !wants_output(ctx, 2))
      ctx.fail("past_key and past_value without the present_key and present_value outputs are not supported");
    require_type(ctx, *past_key, "past_key", type);
    require_type(ctx, *past_value, "past_value", type);
    past = past_key->rank() == 4 ? past_key->dim(2) : 0;
    require_shape(ctx, *past_key, "past_key", {batch, heads, past, head_size});
    require_shape(ctx, *past_value, "past_value", {batch, heads, past, v_head});
  }
  const int64_t total = past + kv_len;
  const KeyMask mask = read_mask(ctx, optional_input(ctx, 4), "key_padding_mask", batch, q_len, total, past, false);
  const AttentionBias ab = read_attention_bias(ctx, optional_input(ctx, 5), type, batch, heads, q_len, total);

  const float* bq = bias_t ? bias.data() : nullptr;
  const std::vector<float> q = to_heads(widen(query), batch, q_len, heads, head_size, bq);
  std::vector<float> k, v;
  if (split) {
    k = widen(*key);
    v = widen(*value);
  } else {
    k = to_heads(widen(*key), batch, kv_len, heads, head_size, bq ? bq + hidden : nullptr);
    v = to_heads(widen(*value), batch, kv_len, heads, v_head, bq ? bq + 2 * hidden : nullptr);
    if (past_key) {
      const std::vector<float> pk = widen(*past_key), pv = widen(*past_value);
      k = concat_past(&pk, k, batch * heads, past, kv_len, head_size);
      v = concat_past(&pv, v, batch * heads, past, kv_len, v_head);
    }
  }
  Tensor& y = ctx.output(0, type, {batch, q_len, v_hidden});
  if (wants_output(ctx, 1)) store(ctx.output(1, type, {batch, heads, total, head_size}), k);
  if (wants_output(ctx, 2)) store(ctx.output(2, type, {batch, heads, total, v_head}), v);
  std::vector<float> out(static_cast<size_t>(batch * q_len * v_hidden)), qk_values;
  if (wants_output(ctx, 3)) qk_values.resize(static_cast<size_t>(batch * heads * q_len * total));
  float* qk = qk_values.empty() ? nullptr : qk_values.data();
  Geometry g;
  g.batch = batch, g.heads = heads, g.q_len = q_len, g.head_size = head_size, g.v_head_size = v_head, g.kv_cap = total;
  g.scale = scale_attr(ctx, head_size);
  attend(
      g, q.data(), k.data(), v.data(), [&](int64_t) { return total; },
      [&](int64_t b, int64_t n, int64_t s, float* r) {
        add_bias_and_mask(ab, mask, b, n, s, total, r);
        if (qk) std::copy_n(r, total, qk + ((b * heads + n) * q_len + s) * total);
        return Window{0, total};
      },
      out.data());
  store(y, out);
  if (qk) store(ctx.output(3, type, {batch, heads, q_len, total}), qk_values);
}

// ---------------------------------------------------------------- DecoderMaskedMultiHeadAttention

// DecoderMaskedMultiHeadAttention(query, key, value, mask_index, attention_bias, past_key,
// past_value, past_sequence_length, beam_width, cache_indirection, bias): one decoding step,
// query [B, 1, D]. Self-attention: key and value [B, 1, D] (bias [3D] added to all three) are
// written at row past_sequence_length P of the caches past_key / past_value [B, N, M, H]
// (past_present_share_buffer = 1), which present_key / present_value return; the query attends
// to the P + 1 cached rows. Cross attention: no past, key and value split into heads [B, N, L, H]
// (bias added to query only). mask_index [B, total] 0/1 per key; attention_bias [B or 1, N or 1,
// 1, total].
void decoder_masked_mha(KernelContext& ctx) {
  const Tensor& query = ctx.input(0);
  const DataType type = float_type(ctx, query, "query");
  const int64_t heads = num_heads_attr(ctx, "num_heads");
  if (ctx.has_input(9)) ctx.fail("cache_indirection (beam search) is not supported");
  if (ctx.has_input(8)) {
    const Tensor& beams = ctx.input(8);
    require_type(ctx, beams, "beam_width", DataType::kInt32);
    if (beams.size() != 1 || beams.data<int32_t>()[0] > 1)
      ctx.fail("beam_width " + beams.describe() + " other than one value of 1 is not supported");
  }
  if (wants_output(ctx, 3) || ctx.attr_int("output_qk", 0) != 0) ctx.fail("the qk output (output_qk) is not supported");
  if (query.rank() != 3 || query.dim(1) != 1) ctx.fail("query " + query.describe() + " must be [batch, 1, hidden]");
  const Tensor* key = optional_input(ctx, 1);
  const Tensor* value = optional_input(ctx, 2);
  if (!key || !value) ctx.fail("key and value must both be given: packed QKV is not supported");
  require_type(ctx, *key, "key", type);
  require_type(ctx, *value, "value", type);
  const int64_t batch = query.dim(0), hidden = query.dim(2);
  if (hidden % heads != 0)
    ctx.fail("query " + query.describe() + "'s hidden size is not a multiple of num_heads " + std::to_string(heads));
  const int64_t head_size = hidden / heads;
  const Tensor* past_key = optional_input(ctx, 5);
  const Tensor* past_value = optional_input(ctx, 6);
  if ((past_key == nullptr) != (past_value == nullptr)) ctx.fail("past_key and past_value must be given together");
  const bool cross = past_key == nullptr;
  const Tensor* bias_t = optional_input(ctx, 10);
  std::vector<float> bias;
  if (bias_t) {
    require_type(ctx, *bias_t, "bias", type);
    require_shape(ctx, *bias_t, "bias", {3 * hidden});
    bias = widen(*bias_t);
  }
  const float* bq = bias_t ? bias.data() : nullptr;
  const std::vector<float> q = to_heads(widen(query), batch, 1, heads, head_size, bq);
  std::vector<float> k, v;
  int64_t total = 0, cap = 0, past = 0;
  if (cross) {
    if (wants_output(ctx, 1) || wants_output(ctx, 2))
      ctx.fail("present_key and present_value need past_key and past_value");
    if (key->rank() != 4)
      ctx.fail("key " + key->describe() +
               " must be split into heads [batch, num_heads, kv_sequence, head_size] for cross attention");
    total = cap = key->dim(2);
    require_shape(ctx, *key, "key", {batch, heads, total, head_size});
    require_shape(ctx, *value, "value", key->shape());
    if (ctx.has_input(4))
      ctx.fail("attention_bias with cross attention is not supported (nor by onnxruntime's CPU kernel)");
    k = widen(*key);
    v = widen(*value);
  } else {
    if (ctx.attr_int("past_present_share_buffer", 0) == 0)
      ctx.fail("past_key without past_present_share_buffer = 1 is not supported (nor by onnxruntime's CPU kernel)");
    require_shape(ctx, *key, "key", {batch, 1, hidden});
    require_shape(ctx, *value, "value", {batch, 1, hidden});
    require_type(ctx, *past_key, "past_key", type);
    require_type(ctx, *past_value, "past_value", type);
    cap = past_key->rank() == 4 ? past_key->dim(2) : 0;
    require_shape(ctx, *past_key, "past_key", {batch, heads, cap, head_size});
    require_shape(ctx, *past_value, "past_value", past_key->shape());
    if (!ctx.has_input(7)) ctx.fail("past_sequence_length is required with past_key");
    const Tensor& p_t = ctx.input(7);
    require_type(ctx, p_t, "past_sequence_length", DataType::kInt32);
    if (p_t.size() != 1) ctx.fail("past_sequence_length " + p_t.describe() + " must hold one value");
    past = p_t.data<int32_t>()[0];
    if (past < 1 || past >= cap)
      ctx.fail("past_sequence_length " + std::to_string(past) + " must be from 1 to the cache length " +
               std::to_string(cap) + " - 1");
    total = past + 1;
    k = widen(*past_key);
    v = widen(*past_value);
    const std::vector<float> nk = to_heads(widen(*key), batch, 1, heads, head_size, bq ? bq + hidden : nullptr);
    const std::vector<float> nv = to_heads(widen(*value), batch, 1, heads, head_size, bq ? bq + 2 * hidden : nullptr);
    for (int64_t r = 0; r < batch * heads; ++r) {
      std::copy_n(nk.begin() + r * head_size, head_size, k.begin() + (r * cap + past) * head_size);
      std::copy_n(nv.begin() + r * head_size, head_size, v.begin() + (r * cap + past) * head_size);
    }
  }
  const Tensor* mask_t = optional_input(ctx, 3);
  if (mask_t && mask_t->rank() != 2)
    ctx.fail("mask_index " + mask_t->describe() + " must be [batch, total_sequence] (0/1 per key)");
  const KeyMask mask = read_mask(ctx, mask_t, "mask_index", batch, 1, total, past, false);
  const AttentionBias ab = read_attention_bias(ctx, optional_input(ctx, 4), type, batch, heads, 1, total);
  Tensor& y = ctx.output(0, type, {batch, 1, hidden});
  std::vector<float> out(static_cast<size_t>(batch * hidden));
  if (!cross) {
    if (wants_output(ctx, 1)) store(ctx.output(1, type, {batch, heads, cap, head_size}), k);
    if (wants_output(ctx, 2)) store(ctx.output(2, type, {batch, heads, cap, head_size}), v);
  }
  Geometry g;
  g.batch = batch, g.heads = heads, g.q_len = 1, g.head_size = head_size, g.v_head_size = head_size, g.kv_cap = cap;
  g.scale = scale_attr(ctx, head_size);
  attend_all_keys(g, q.data(), k.data(), v.data(), ab, mask, total, out.data());
  store(y, out);
}

// ---------------------------------------------------------------- Attention

// Attention(input, weights, bias, mask_index, past, attention_bias): BERT's self-attention with
// its projection. input [B, S, Din] times weights [Din, Dq + Dk + Dv] plus bias gives Q, K, V
// (each D = 3 * hidden / 3, or qkv_hidden_sizes with Dq = Dk); past [2, B, N, P, H] holds the
// earlier keys and values, present [2, B, N, P + S, H] all of them. Output [B, S, Dv].
void attention(KernelContext& ctx) {
  const Tensor& input = ctx.input(0);
  const Tensor& weights = ctx.input(1);
  const DataType type = float_type(ctx, input, "input");
  require_type(ctx, weights, "weights", type);
  const int64_t heads = num_heads_attr(ctx, "num_heads");
  if (ctx.attr_int("do_rotary", 0) != 0) ctx.fail("do_rotary is not supported (nor by onnxruntime's CPU kernel)");
  if (ctx.has_input(6)) ctx.fail("past_sequence_length is not supported (the shared-buffer decoding form)");
  if (input.rank() != 3) ctx.fail("input " + input.describe() + " must be [batch, sequence, input_hidden]");
  const int64_t batch = input.dim(0), q_len = input.dim(1), in_hidden = input.dim(2);
  if (weights.rank() != 2 || weights.dim(0) != in_hidden)
    ctx.fail("weights " + weights.describe() + " must be [input_hidden = " + std::to_string(in_hidden) +
             ", 3 * hidden]");
  const int64_t cols = weights.dim(1);
  std::vector<int64_t> sizes = ctx.attr_ints("qkv_hidden_sizes");
  if (sizes.empty()) {
    if (cols % 3 != 0) ctx.fail("weights " + weights.describe() + " must have 3 * hidden columns");
    sizes = {cols / 3, cols / 3, cols / 3};
  }
  if (sizes.size() != 3 || sizes[0] != sizes[1] || sizes[0] + sizes[1] + sizes[2] != cols)
    ctx.fail("qkv_hidden_sizes " + dims_text(sizes) + " must be 3 sizes, Q's equal to K's, adding up to weights " +
             weights.describe() + "'s columns");
  for (int64_t s : sizes)
    if (s <= 0 || s % heads != 0)
      ctx.fail("hidden size " + std::to_string(s) + " is not a positive multiple of num_heads " +
               std::to_string(heads));
  const int64_t hidden = sizes[0], v_hidden = sizes[2], head_size = hidden / heads, v_head = v_hidden / heads;
  const Tensor* bias_t = optional_input(ctx, 2);
  std::vector<float> bias(static_cast<size_t>(cols), 0.0f);
  if (bias_t) {
    require_type(ctx, *bias_t, "bias", type);
    require_shape(ctx, *bias_t, "bias", {cols});
    bias = widen(*bias_t);
  }
  const Tensor* past_t = optional_input(ctx, 4);
  const Tensor* ab_t = optional_input(ctx, 5);
  int64_t past = 0;
  if (past_t) {
    if (ab_t) ctx.fail("past with attention_bias is not supported (nor by onnxruntime's CPU kernel)");
    if (ctx.attr_int("past_present_share_buffer", 0) != 0) ctx.fail("past_present_share_buffer is not supported");
    if (hidden != v_hidden)
      ctx.fail("past needs V's hidden size equal to K's, qkv_hidden_sizes are " + dims_text(sizes));
    require_type(ctx, *past_t, "past", type);
    past = past_t->rank() == 5 ? past_t->dim(3) : 0;
    require_shape(ctx, *past_t, "past", {2, batch, heads, past, head_size});
  }
  const int64_t total = past + q_len;
  // A [B, 1] or [1, 1] mask is a placeholder that onnxruntime ignores.
  const Tensor* mask_t = optional_input(ctx, 3);
  if (mask_t && mask_t->rank() == 2 && !(mask_t->dim(0) == batch && mask_t->dim(1) == total) &&
      (mask_t->dim(0) == batch || mask_t->dim(0) == 1) && mask_t->dim(1) == 1)
    mask_t = nullptr;
  const KeyMask mask = read_mask(ctx, mask_t, "mask_index", batch, q_len, total, past, true);
  const AttentionBias ab = read_attention_bias(ctx, ab_t, type, batch, heads, q_len, total);

  // The projection: [B * S, Din] x [Din, Dq + Dk + Dv], then split into heads with the bias.
  const std::vector<float> x = widen(input), w = widen(weights);
  std::vector<float> proj(static_cast<size_t>(batch * q_len * cols));
  if (!proj.empty() && in_hidden > 0)
    gemm_f32(batch * q_len, cols, in_hidden, x.data(), in_hidden, false, w.data(), cols, false, proj.data(), cols,
             false);
  std::vector<float> qs(static_cast<size_t>(batch * q_len * hidden)), ks(qs.size()),
      vs(static_cast<size_t>(batch * q_len * v_hidden));
  for (int64_t r = 0; r < batch * q_len; ++r) {
    std::copy_n(proj.begin() + r * cols, hidden, qs.begin() + r * hidden);
    std::copy_n(proj.begin() + r * cols + hidden, hidden, ks.begin() + r * hidden);
    std::copy_n(proj.begin() + r * cols + 2 * hidden, v_hidden, vs.begin() + r * v_hidden);
  }
  const std::vector<float> q = to_heads(qs, batch, q_len, heads, head_size, bias.data());
  std::vector<float> k = to_heads(ks, batch, q_len, heads, head_size, bias.data() + hidden);
  std::vector<float> v = to_heads(vs, batch, q_len, heads, v_head, bias.data() + 2 * hidden);
  if (past_t) {
    const std::vector<float> pv = widen(*past_t);
    const int64_t half = batch * heads * past * head_size;
    const std::vector<float> pk(pv.begin(), pv.begin() + half), pvv(pv.begin() + half, pv.end());
    k = concat_past(&pk, k, batch * heads, past, q_len, head_size);
    v = concat_past(&pvv, v, batch * heads, past, q_len, head_size);
  }
  Tensor& y = ctx.output(0, type, {batch, q_len, v_hidden});
  std::vector<float> out(static_cast<size_t>(batch * q_len * v_hidden));
  if (wants_output(ctx, 1)) {
    if (hidden != v_hidden)
      ctx.fail("the present output needs V's hidden size equal to K's, qkv_hidden_sizes are " + dims_text(sizes));
    std::vector<float> present(k);
    present.insert(present.end(), v.begin(), v.end());
    store(ctx.output(1, type, {2, batch, heads, total, head_size}), present);
  }
  Geometry g;
  g.batch = batch, g.heads = heads, g.q_len = q_len, g.head_size = head_size, g.v_head_size = v_head, g.kv_cap = total;
  g.scale = scale_attr(ctx, head_size);
  attend_all_keys(g, q.data(), k.data(), v.data(), ab, mask, total, out.data());
  store(y, out);
}

// ---------------------------------------------------------------- GroupQueryAttention

/// Rotates the first `rot` elements of each head row of x [B, heads, S, H] in place by the
/// angles of positions pos(b, s) (cos and sin caches [M, rot / 2]): pairs (j, j + rot / 2), or
/// (2j, 2j + 1) when interleaved.
template <class Pos>
void rotate(std::vector<float>& x, int64_t batch, int64_t heads, int64_t len, int64_t h, int64_t rot, bool interleaved,
            const std::vector<float>& cos_c, const std::vector<float>& sin_c, Pos pos) {
  const int64_t half = rot / 2;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t n = 0; n < heads; ++n)
      for (int64_t s = 0; s < len; ++s) {
        float* o = x.data() + ((b * heads + n) * len + s) * h;
        const float* cs = cos_c.data() + pos(b, s) * half;
        const float* sn = sin_c.data() + pos(b, s) * half;
        for (int64_t j = 0; j < half; ++j) {
          const int64_t i0 = interleaved ? 2 * j : j, i1 = interleaved ? 2 * j + 1 : j + half;
          const float a = o[i0], c = o[i1];
          o[i0] = a * cs[j] - c * sn[j];
          o[i1] = a * sn[j] + c * cs[j];
        }
      }
}

// GroupQueryAttention(query, key, value, past_key, past_value, seqlens_k, total_sequence_length,
// cos_cache, sin_cache, position_ids, attention_bias, head_sink): query [B, S, N * H] with key
// and value [B, S, Nkv * H], or all three packed in query [B, S, (N + 2 Nkv) * H]. Batch b has
// seqlens_k[b] + 1 tokens in all; the new S ones follow its past ones (none on the first prompt,
// S == total_sequence_length). present_key / present_value [B, Nkv, max(total, past buffer), H]
// hold the past tokens, then the new ones, then zeros. Query head n reads KV head n / (N / Nkv);
// each query attends causally (the last local_window_size keys when set), scores optionally
// soft-capped (softcap * tanh(x / softcap)) and biased, softmaxed (smooth: with a sink logit).
void group_query_attention(KernelContext& ctx) {
  const Tensor& query = ctx.input(0);
  const DataType type = query.dtype();
  if (type != DataType::kFloat && type != DataType::kFloat16)
    ctx.fail("query is " + type_name(type) +
             ": GroupQueryAttention runs on float32 and float16 only (as onnxruntime's CPU kernel)");
  const int64_t heads = num_heads_attr(ctx, "num_heads"), kv_heads = num_heads_attr(ctx, "kv_num_heads");
  if (heads % kv_heads != 0)
    ctx.fail("num_heads " + std::to_string(heads) + " is not a multiple of kv_num_heads " + std::to_string(kv_heads));
  if (wants_output(ctx, 3) || ctx.attr_int("qk_output", 0) != 0)
    ctx.fail("the output_qk output (qk_output) is not supported");
  if (query.rank() != 3) ctx.fail("query " + query.describe() + " must be [batch, sequence, hidden]");
  const int64_t batch = query.dim(0), q_len = query.dim(1);
  const Tensor* key = optional_input(ctx, 1);
  const Tensor* value = optional_input(ctx, 2);
  if ((key == nullptr) != (value == nullptr))
    ctx.fail("key and value must be given together (or both omitted for packed QKV)");
  const bool packed = key == nullptr;
  const int64_t q_cols = query.dim(2);
  int64_t head_size = 0;
  if (packed) {
    if (q_cols % (heads + 2 * kv_heads) != 0)
      ctx.fail("packed query " + query.describe() + "'s hidden size is not (num_heads + 2 * kv_num_heads) * head_size");
    head_size = q_cols / (heads + 2 * kv_heads);
  } else {
    if (q_cols % heads != 0) ctx.fail("query " + query.describe() + "'s hidden size is not a multiple of num_heads");
    head_size = q_cols / heads;
    require_type(ctx, *key, "key", type);
    require_type(ctx, *value, "value", type);
    require_shape(ctx, *key, "key", {batch, q_len, kv_heads * head_size});
    require_shape(ctx, *value, "value", {batch, q_len, kv_heads * head_size});
  }
  if (head_size % 8 != 0)
    ctx.fail("head size " + std::to_string(head_size) +
             " is not a multiple of 8 (onnxruntime's CPU kernel refuses it too)");
  const Tensor* past_key = optional_input(ctx, 3);
  const Tensor* past_value = optional_input(ctx, 4);
  if ((past_key == nullptr) != (past_value == nullptr)) ctx.fail("past_key and past_value must be given together");
  int64_t past_cap = 0;
  if (past_key) {
    require_type(ctx, *past_key, "past_key", type);
    require_type(ctx, *past_value, "past_value", type);
    past_cap = past_key->rank() == 4 ? past_key->dim(2) : 0;
    require_shape(ctx, *past_key, "past_key", {batch, kv_heads, past_cap, head_size});
    require_shape(ctx, *past_value, "past_value", past_key->shape());
  }
  const Tensor& seqlens = ctx.input(5);
  const Tensor& total_t = ctx.input(6);
  require_type(ctx, seqlens, "seqlens_k", DataType::kInt32);
  require_shape(ctx, seqlens, "seqlens_k", {batch});
  require_type(ctx, total_t, "total_sequence_length", DataType::kInt32);
  if (total_t.size() != 1) ctx.fail("total_sequence_length " + total_t.describe() + " must hold one value");
  const int64_t total = total_t.data<int32_t>()[0];
  const int64_t present_len = std::max(total, past_cap);
  // As onnxruntime: a prompt is the whole sequence at once; otherwise the S new tokens of each
  // batch are its last ones.
  const bool first_prompt = q_len == total;
  if (!first_prompt && q_len > 1 && batch > 1)
    ctx.fail("a subsequent prompt (" + std::to_string(q_len) + " new tokens after past ones) in a batch of " +
             std::to_string(batch) + " is not supported (nor by onnxruntime's CPU kernel): batch 1 only");
  const int32_t* sk = seqlens.data<int32_t>();
  std::vector<int64_t> lens(static_cast<size_t>(batch)), pasts(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = static_cast<int64_t>(sk[b]) + 1;
    const int64_t p = first_prompt ? 0 : len - q_len;
    if (len < 1 || len > total || p < 0 || p > past_cap || p + q_len > present_len)
      ctx.fail("seqlens_k[" + std::to_string(b) + "] = " + std::to_string(sk[b]) + " does not fit " +
               std::to_string(q_len) + " new tokens after the past ones in a cache of " + std::to_string(present_len) +
               " (past buffer " + std::to_string(past_cap) + ", total_sequence_length " + std::to_string(total) + ")");
    lens[static_cast<size_t>(b)] = len;
    pasts[static_cast<size_t>(b)] = p;
  }

  // Q, K, V as heads [B, heads, S, H].
  const std::vector<float> x = widen(query);
  std::vector<float> q, k, v;
  if (packed) {
    const int64_t all = heads + 2 * kv_heads;
    const std::vector<float> t = to_heads(x, batch, q_len, all, head_size, nullptr);
    q.resize(static_cast<size_t>(batch * heads * q_len * head_size));
    k.resize(static_cast<size_t>(batch * kv_heads * q_len * head_size));
    v.resize(k.size());
    const int64_t hs = q_len * head_size;
    for (int64_t b = 0; b < batch; ++b) {
      const auto src = t.begin() + b * all * hs;
      std::copy_n(src, heads * hs, q.begin() + b * heads * hs);
      std::copy_n(src + heads * hs, kv_heads * hs, k.begin() + b * kv_heads * hs);
      std::copy_n(src + (heads + kv_heads) * hs, kv_heads * hs, v.begin() + b * kv_heads * hs);
    }
  } else {
    q = to_heads(x, batch, q_len, heads, head_size, nullptr);
    k = to_heads(widen(*key), batch, q_len, kv_heads, head_size, nullptr);
    v = to_heads(widen(*value), batch, q_len, kv_heads, head_size, nullptr);
  }

  if (ctx.attr_int("do_rotary", 0) != 0) {
    const Tensor* cos_t = optional_input(ctx, 7);
    const Tensor* sin_t = optional_input(ctx, 8);
    if (!cos_t || !sin_t) ctx.fail("do_rotary needs cos_cache and sin_cache");
    require_type(ctx, *cos_t, "cos_cache", type);
    require_type(ctx, *sin_t, "sin_cache", type);
    if (cos_t->rank() != 2 || sin_t->shape() != cos_t->shape() || cos_t->dim(0) < total || cos_t->dim(1) % 8 != 0 ||
        cos_t->dim(1) > head_size / 16 * 8 || cos_t->dim(1) == 0)
      ctx.fail(
          "cos_cache " + cos_t->describe() + " and sin_cache " + sin_t->describe() +
          " must be one shape [at least total_sequence_length, a positive multiple of 8 up to head_size / 16 * 8]");
    const int64_t rows = cos_t->dim(0), rot = cos_t->dim(1) * 2;
    const Tensor* pos_t = optional_input(ctx, 9);
    const int64_t* pos_ids = nullptr;
    if (pos_t) {
      require_type(ctx, *pos_t, "position_ids", DataType::kInt64);
      if (pos_t->rank() != 2 || pos_t->dim(0) != batch || pos_t->dim(1) < q_len || (first_prompt && pos_t->size() < 1))
        ctx.fail("position_ids " + pos_t->describe() + " must be [batch, at least sequence]");
      pos_ids = pos_t->data<int64_t>();
    }
    // Positions as onnxruntime takes them: from position_ids (the first value plus s on a
    // prompt), else s on a prompt and the token's place in its batch otherwise.
    const auto pos = [&](int64_t b, int64_t s) -> int64_t {
      if (pos_ids) return first_prompt ? pos_ids[0] + s : pos_ids[b * q_len + s];
      return first_prompt ? s : pasts[static_cast<size_t>(b)] + s;
    };
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t s = 0; s < q_len; ++s)
        if (pos(b, s) < 0 || pos(b, s) >= rows)
          ctx.fail("position " + std::to_string(pos(b, s)) + " is outside the rotary caches' " + std::to_string(rows) +
                   " rows");
    const bool interleaved = ctx.attr_int("rotary_interleaved", 0) != 0;
    const std::vector<float> cs = widen(*cos_t), sn = widen(*sin_t);
    rotate(q, batch, heads, q_len, head_size, rot, interleaved, cs, sn, pos);
    rotate(k, batch, kv_heads, q_len, head_size, rot, interleaved, cs, sn, pos);
    if (type == DataType::kFloat16) {
      round_half(q);
      round_half(k);
    }
  }

  // The caches: past tokens, the new ones after them, zeros after that.
  const int64_t chunk = present_len * head_size;
  std::vector<float> pk(static_cast<size_t>(batch * kv_heads * chunk), 0.0f), pv(pk.size(), 0.0f);
  std::vector<float> old_k, old_v;
  if (past_key) old_k = widen(*past_key), old_v = widen(*past_value);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t n = 0; n < kv_heads; ++n) {
      const int64_t r = b * kv_heads + n, p = pasts[static_cast<size_t>(b)];
      if (past_key) {
        std::copy_n(old_k.begin() + r * past_cap * head_size, p * head_size, pk.begin() + r * chunk);
        std::copy_n(old_v.begin() + r * past_cap * head_size, p * head_size, pv.begin() + r * chunk);
      }
      std::copy_n(k.begin() + r * q_len * head_size, q_len * head_size, pk.begin() + r * chunk + p * head_size);
      std::copy_n(v.begin() + r * q_len * head_size, q_len * head_size, pv.begin() + r * chunk + p * head_size);
    }

  const AttentionBias ab = read_attention_bias(ctx, optional_input(ctx, 10), type, batch, heads, q_len, total);
  const Tensor* sink_t = optional_input(ctx, 11);
  std::vector<float> sinks;
  if (sink_t) {
    require_type(ctx, *sink_t, "head_sink", type);
    require_shape(ctx, *sink_t, "head_sink", {heads});
    sinks = widen(*sink_t);
  }
  const bool smooth = ctx.attr_int("smooth_softmax", 0) != 0 || sink_t;
  const float softcap = ctx.attr_float("softcap", 0.0f);
  const int64_t window = ctx.attr_int("local_window_size", -1);

  Tensor& y = ctx.output(0, type, {batch, q_len, heads * head_size});
  Tensor& present_k = ctx.output(1, type, {batch, kv_heads, present_len, head_size});
  Tensor& present_v = ctx.output(2, type, {batch, kv_heads, present_len, head_size});
  store(present_k, pk);
  store(present_v, pv);
  Geometry g;
  g.batch = batch, g.heads = heads, g.group = heads / kv_heads, g.q_len = q_len, g.head_size = head_size;
  g.v_head_size = head_size, g.kv_cap = present_len, g.scale = scale_attr(ctx, head_size);
  std::vector<float> out(static_cast<size_t>(batch * q_len * heads * head_size));
  attend(
      g, q.data(), pk.data(), pv.data(), [&](int64_t b) { return lens[static_cast<size_t>(b)]; },
      [&](int64_t b, int64_t n, int64_t s, float* r) {
        const int64_t len = lens[static_cast<size_t>(b)];
        const int64_t causal = std::min(pasts[static_cast<size_t>(b)] + s + 1, len);
        Window w{window >= 0 && causal > window ? causal - window : 0, causal, smooth, sinks.empty() ? 0.0f : sinks[n]};
        const float* a = ab.present ? ab.at(b, n, s) : nullptr;
        for (int64_t t = w.lo; t < w.hi; ++t) {
          if (softcap > 0) r[t] = softcap * std::tanh(r[t] / softcap);
          if (a) r[t] += a[t];
        }
        return w;
      },
      out.data());
  store(y, out);
}

}  // namespace

void register_contrib_attention_kernels(KernelRegistry& r) {
  const auto add = [&r](std::string_view op, KernelFn fn) { r.add(kMs, op, 1, kMaxOpset, fn); };
  add("Attention", attention);
  add("MultiHeadAttention", multi_head_attention);
  add("GroupQueryAttention", group_query_attention);
  add("DecoderMaskedMultiHeadAttention", decoder_masked_mha);
}

}  // namespace onnxtool::runner::cpu
