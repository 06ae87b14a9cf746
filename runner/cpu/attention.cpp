// Attention-family kernels of the recent opsets: Attention (23-25), RotaryEmbedding (23),
// LinearAttention and CausalConvWithState (27) and SwiGLU (28). 16-bit floats compute through float, double through double.
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

// ---------------------------------------------------------------- shared helpers

/// The elements of a float tensor (any float type) converted to C.
template <class C>
std::vector<C> load_floats(const KernelContext& ctx, const Tensor& t) {
  std::vector<C> out(static_cast<size_t>(t.size()));
  visit_or_fail<kFloats>(ctx, t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<C>(Num<T>::load(p[i]));
  });
  return out;
}

/// A new tensor of `type` (a float type) and `shape` holding `values` rounded to the type.
template <class C>
Tensor store_floats(const KernelContext& ctx, DataType type, std::vector<int64_t> shape, const std::vector<C>& values) {
  Tensor out(type, std::move(shape));
  visit_or_fail<kFloats>(ctx, type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out.mutable_data<T>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = Num<T>::store(static_cast<calc_t<T>>(values[i]));
  });
  return out;
}

/// `v` rounded to float16, bfloat16 or float (softmax_precision 10, 16, 1); unchanged for 11.
double round_to_precision(double v, int64_t precision) {
  switch (precision) {
    case 1: return static_cast<float>(v);
    case 10: return half_to_float(float_to_half(static_cast<float>(v)));
    case 16: return bfloat16_to_float(float_to_bfloat16(static_cast<float>(v)));
    default: return v;
  }
}

void gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool ta, const float* b, int64_t ldb, bool tb,
          float* c, int64_t ldc) {
  gemm_f32(m, n, k, a, lda, ta, b, ldb, tb, c, ldc, false);
}
void gemm(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, bool ta, const double* b, int64_t ldb, bool tb,
          double* c, int64_t ldc) {
  gemm_f64(m, n, k, a, lda, ta, b, ldb, tb, c, ldc, false);
}

// ---------------------------------------------------------------- Attention

/// Q, K or V as [batch, heads, seq, head_size] in the compute type, from a 4-D input or a 3-D
/// [batch, seq, heads * head_size] one.
template <class C>
struct Heads {
  int64_t batch = 0, heads = 0, seq = 0, size = 0;
  std::vector<C> data;
};

template <class C>
Heads<C> load_heads(const KernelContext& ctx, const Tensor& t, int64_t num_heads, const char* name) {
  Heads<C> h;
  std::vector<C> flat = load_floats<C>(ctx, t);
  if (t.rank() == 4) {
    h.batch = t.dim(0), h.heads = t.dim(1), h.seq = t.dim(2), h.size = t.dim(3);
    h.data = std::move(flat);
    return h;
  }
  if (num_heads <= 0 || t.dim(2) % num_heads != 0)
    ctx.fail(std::string(name) + " hidden size " + std::to_string(t.dim(2)) + " is not a multiple of its head count " +
             std::to_string(num_heads));
  h.batch = t.dim(0), h.heads = num_heads, h.seq = t.dim(1), h.size = t.dim(2) / num_heads;
  h.data.resize(flat.size());
  for (int64_t b = 0; b < h.batch; ++b)
    for (int64_t s = 0; s < h.seq; ++s)
      for (int64_t n = 0; n < h.heads; ++n)
        for (int64_t d = 0; d < h.size; ++d)
          h.data[static_cast<size_t>(((b * h.heads + n) * h.seq + s) * h.size + d)] =
              flat[static_cast<size_t>(((b * h.seq + s) * h.heads + n) * h.size + d)];
  return h;
}

/// The attention mask resolved against (batch, q_heads, q_len, total): additive values (bool
/// masks as 0 / -inf), broadcast strides per dim, and the mask's own last dim (keys at and past
/// it are padded with -inf).
template <class C>
struct Mask {
  std::vector<C> add;
  int64_t strides[4] = {0, 0, 0, 0};
  int64_t last = 0;
};

template <class C>
Mask<C> resolve_mask(const KernelContext& ctx, const Tensor& m, const int64_t (&target)[4]) {
  if (m.rank() < 1 || m.rank() > 4)
    ctx.fail("attn_mask must have rank 1 to 4, has shape " + shape_string(m.shape()));
  Mask<C> r;
  const size_t pad = 4 - m.rank();
  std::vector<int64_t> dims(4, 1);
  for (size_t d = 0; d < m.rank(); ++d) dims[pad + d] = m.dim(d);
  const std::vector<int64_t> st = strides_of(dims);
  for (size_t d = 0; d < 3; ++d) {
    if (dims[d] != 1 && dims[d] != target[d])
      ctx.fail("attn_mask shape " + shape_string(m.shape()) + " does not broadcast to (batch, q_heads, q_len, total) " +
               shape_string({target[0], target[1], target[2], target[3]}));
    r.strides[d] = dims[d] == 1 ? 0 : st[d];
  }
  if (dims[3] > target[3])
    ctx.fail("attn_mask last dim " + std::to_string(dims[3]) + " exceeds the total sequence length " +
             std::to_string(target[3]));
  r.strides[3] = 1;
  r.last = dims[3];
  r.add.resize(static_cast<size_t>(m.size()));
  const C neg_inf = -std::numeric_limits<C>::infinity();
  if (m.dtype() == DataType::kBool) {
    const auto* p = m.data<uint8_t>();
    for (size_t i = 0; i < r.add.size(); ++i) r.add[i] = p[i] ? C(0) : neg_inf;
  } else {
    visit_or_fail<kNumeric>(ctx, m.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* p = m.data<T>();
      for (size_t i = 0; i < r.add.size(); ++i) r.add[i] = static_cast<C>(Num<T>::load(p[i]));
    });
  }
  return r;
}

template <class C>
void attention_impl(KernelContext& ctx) {
  const Tensor& tq = ctx.input(0);
  const Tensor& tk = ctx.input(1);
  const Tensor& tv = ctx.input(2);
  const size_t rank = tq.rank();
  if ((rank != 3 && rank != 4) || tk.rank() != rank || tv.rank() != rank)
    ctx.fail("Q, K and V must all be 3-D or all 4-D, have shapes " + shape_string(tq.shape()) + ", " +
             shape_string(tk.shape()) + ", " + shape_string(tv.shape()));
  int64_t q_heads_attr = ctx.attr_int("q_num_heads", 0), kv_heads_attr = ctx.attr_int("kv_num_heads", 0);
  if (rank == 3 && (!ctx.has_attr("q_num_heads") || !ctx.has_attr("kv_num_heads")))
    ctx.fail("3-D Q, K, V need the q_num_heads and kv_num_heads attributes");
  const Heads<C> q = load_heads<C>(ctx, tq, q_heads_attr, "Q");
  Heads<C> k = load_heads<C>(ctx, tk, kv_heads_attr, "K");
  Heads<C> v = load_heads<C>(ctx, tv, kv_heads_attr, "V");
  if (rank == 4 && ((ctx.has_attr("q_num_heads") && q_heads_attr != q.heads) ||
                    (ctx.has_attr("kv_num_heads") && kv_heads_attr != k.heads)))
    ctx.fail("q_num_heads/kv_num_heads disagree with the head dims of the 4-D Q and K");
  if (k.batch != q.batch || v.batch != q.batch) ctx.fail("Q, K and V have different batch sizes");
  if (k.heads != v.heads) ctx.fail("K and V have different head counts");
  if (k.heads <= 0 || q.heads % k.heads != 0)
    ctx.fail("q_num_heads " + std::to_string(q.heads) + " is not a multiple of kv_num_heads " + std::to_string(k.heads));
  if (k.size != q.size)
    ctx.fail("K head size " + std::to_string(k.size) + " differs from Q head size " + std::to_string(q.size));
  if (k.seq != v.seq) ctx.fail("K and V have different sequence lengths");
  const int64_t batch = q.batch, hq = q.heads, hkv = k.heads, sq = q.seq, dk = q.size, dv = v.size;

  // KV cache: present = concat(past, new) along the sequence.
  const bool has_past = ctx.has_input(4) || ctx.has_input(5);
  if (has_past && !(ctx.has_input(4) && ctx.has_input(5))) ctx.fail("past_key and past_value must be given together");
  int64_t past = 0;
  std::vector<C> kall = std::move(k.data), vall = std::move(v.data);
  if (has_past) {
    const Tensor& pk = ctx.input(4);
    const Tensor& pv = ctx.input(5);
    if (pk.rank() != 4 || pv.rank() != 4 || pk.dim(0) != batch || pk.dim(1) != hkv || pk.dim(3) != dk ||
        pv.dim(0) != batch || pv.dim(1) != hkv || pv.dim(3) != dv || pv.dim(2) != pk.dim(2))
      ctx.fail("past_key " + shape_string(pk.shape()) + " / past_value " + shape_string(pv.shape()) +
               " do not match (batch, kv_heads, past_len, head_size)");
    past = pk.dim(2);
    auto concat = [&](const std::vector<C>& old, const std::vector<C>& add, int64_t add_len, int64_t d) {
      std::vector<C> out(static_cast<size_t>(batch * hkv * (past + add_len) * d));
      for (int64_t bh = 0; bh < batch * hkv; ++bh) {
        std::copy_n(old.begin() + bh * past * d, past * d, out.begin() + bh * (past + add_len) * d);
        std::copy_n(add.begin() + bh * add_len * d, add_len * d, out.begin() + bh * (past + add_len) * d + past * d);
      }
      return out;
    };
    kall = concat(load_floats<C>(ctx, pk), kall, k.seq, dk);
    vall = concat(load_floats<C>(ctx, pv), vall, v.seq, dv);
  }
  const int64_t total = past + k.seq;

  std::vector<int64_t> nonpad;
  if (ctx.opset() >= 24 && ctx.has_input(6)) {
    if (has_past) ctx.fail("nonpad_kv_seqlen cannot be combined with past_key/past_value");
    const Tensor& np = ctx.input(6);
    if (np.dtype() != DataType::kInt64 || np.rank() != 1 || np.dim(0) != batch)
      ctx.fail("nonpad_kv_seqlen must be int64 of shape (batch_size,), is " + np.describe());
    nonpad.assign(np.data<int64_t>(), np.data<int64_t>() + batch);
  }

  const int64_t target[4] = {batch, hq, sq, total};
  const bool has_mask = ctx.has_input(3);
  Mask<C> mask;
  if (has_mask) mask = resolve_mask<C>(ctx, ctx.input(3), target);

  const bool causal = ctx.attr_int("is_causal", 0) != 0;
  const int64_t left = ctx.opset() >= 25 ? ctx.attr_int("left_window_size", -1) : -1;
  const int64_t right = ctx.opset() >= 25 ? ctx.attr_int("right_window_size", -1) : -1;
  if (left < -1 || right < -1) ctx.fail("left_window_size/right_window_size must be -1 or nonnegative");
  const int64_t mode = ctx.attr_int("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) ctx.fail("qk_matmul_output_mode must be 0, 1, 2 or 3, is " + std::to_string(mode));
  const float softcap = ctx.attr_float("softcap", 0.0f);
  const int64_t precision = ctx.attr_int("softmax_precision", 0);
  if (ctx.has_attr("softmax_precision") && precision != 1 && precision != 10 && precision != 11 && precision != 16)
    ctx.fail("softmax_precision must be 1, 10, 11 or 16, is " + std::to_string(precision));
  const double scale = ctx.has_attr("scale") ? ctx.attr_float("scale", 1.0f) : 1.0 / std::sqrt(static_cast<double>(dk));
  const C root = static_cast<C>(std::sqrt(scale));  // the spec scales Q and K by sqrt(scale) each

  std::vector<C> qs(q.data.size()), ks(kall.size());
  for (size_t i = 0; i < qs.size(); ++i) qs[i] = q.data[i] * root;
  for (size_t i = 0; i < ks.size(); ++i) ks[i] = kall[i] * root;

  const bool want_qk = ctx.has_output(3);
  std::vector<C> y(static_cast<size_t>(batch * hq * sq * dv));
  std::vector<C> qk_out(want_qk ? static_cast<size_t>(batch * hq * sq * total) : 0);
  const C neg_inf = -std::numeric_limits<C>::infinity();
  const int64_t group = hq / hkv;

  parallel_ranges(batch * hq, 1, [&](int64_t t0, int64_t t1) {
    std::vector<C> scores(static_cast<size_t>(sq * total)), bias(static_cast<size_t>(total));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / hq, h = t % hq, g = h / group;
      const C* qp = qs.data() + t * sq * dk;
      const C* kp = ks.data() + (b * hkv + g) * total * dk;
      const C* vp = vall.data() + (b * hkv + g) * total * dv;
      gemm(sq, total, dk, qp, dk, false, kp, dk, true, scores.data(), total);
      C* qk_row0 = want_qk ? qk_out.data() + t * sq * total : nullptr;
      const int64_t offset = !nonpad.empty() ? nonpad[static_cast<size_t>(b)] - sq : past;
      for (int64_t i = 0; i < sq; ++i) {
        C* row = scores.data() + i * total;
        if (mode == 0 && want_qk) std::copy_n(row, total, qk_row0 + i * total);
        if (softcap > 0)
          for (int64_t j = 0; j < total; ++j) row[j] = static_cast<C>(softcap * std::tanh(row[j] / softcap));
        if (mode == 1 && want_qk) std::copy_n(row, total, qk_row0 + i * total);
        // The additive bias: mask, causal frontier, sliding window, padding.
        bool all_masked = true;
        for (int64_t j = 0; j < total; ++j) {
          C bj = 0;
          if (has_mask) {
            bj = j < mask.last ? mask.add[static_cast<size_t>(b * mask.strides[0] + h * mask.strides[1] +
                                                              i * mask.strides[2] + j)]
                               : neg_inf;
          }
          const int64_t diff = i + offset - j;
          if (causal && diff < 0) bj += neg_inf;
          if ((left >= 0 && diff > left) || (right >= 0 && -diff > right)) bj += neg_inf;
          if (!nonpad.empty() && j >= nonpad[static_cast<size_t>(b)]) bj += neg_inf;
          bias[static_cast<size_t>(j)] = bj;
          if (!(std::isinf(bj) && bj < 0)) all_masked = false;
          row[j] += bj;
        }
        if (mode == 2 && want_qk) std::copy_n(row, total, qk_row0 + i * total);
        if (all_masked || total == 0) {
          // A row with no attendable key gives zero probabilities (and a zero output row).
          std::fill_n(row, total, C(0));
        } else {
          double mx = -std::numeric_limits<double>::infinity();
          for (int64_t j = 0; j < total; ++j) {
            const double x = round_to_precision(row[j], precision);
            if (x > mx || std::isnan(x)) mx = x;
          }
          double sum = 0;
          std::vector<double> e(static_cast<size_t>(total));
          for (int64_t j = 0; j < total; ++j) {
            e[static_cast<size_t>(j)] = std::exp(round_to_precision(row[j], precision) - mx);
            sum += e[static_cast<size_t>(j)];
          }
          for (int64_t j = 0; j < total; ++j)
            row[j] = static_cast<C>(round_to_precision(e[static_cast<size_t>(j)] / sum, precision));
        }
        if (mode == 3 && want_qk) std::copy_n(row, total, qk_row0 + i * total);
      }
      gemm(sq, dv, total, scores.data(), total, false, vp, dv, false, y.data() + t * sq * dv, dv);
    }
  });

  if (rank == 3) {
    std::vector<C> y3(y.size());
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < hq; ++h)
        for (int64_t s = 0; s < sq; ++s)
          std::copy_n(y.begin() + ((b * hq + h) * sq + s) * dv, dv, y3.begin() + ((b * sq + s) * hq + h) * dv);
    ctx.set_output(0, store_floats(ctx, tq.dtype(), {batch, sq, hq * dv}, y3));
  } else {
    ctx.set_output(0, store_floats(ctx, tq.dtype(), {batch, hq, sq, dv}, y));
  }
  if (ctx.has_output(1)) ctx.set_output(1, store_floats(ctx, tk.dtype(), {batch, hkv, total, dk}, kall));
  if (ctx.has_output(2)) ctx.set_output(2, store_floats(ctx, tv.dtype(), {batch, hkv, total, dv}, vall));
  if (want_qk) ctx.set_output(3, store_floats(ctx, tq.dtype(), {batch, hq, sq, total}, qk_out));
}

void attention(KernelContext& ctx) {
  if (ctx.input(0).dtype() == DataType::kDouble) attention_impl<double>(ctx);
  else attention_impl<float>(ctx);
}

// ---------------------------------------------------------------- RotaryEmbedding

void rotary_embedding(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& cos_t = ctx.input(1);
  const Tensor& sin_t = ctx.input(2);
  if (x.rank() != 3 && x.rank() != 4) ctx.fail("X must be 3-D or 4-D, has shape " + shape_string(x.shape()));
  if (cos_t.dtype() != x.dtype() || sin_t.dtype() != x.dtype())
    ctx.fail("cos_cache and sin_cache must have the type of X");
  // View X as [batch, seq, heads, head] with element strides (4-D is [batch, heads, seq, head]).
  int64_t batch = x.dim(0), seq, heads, head;
  int64_t s_stride, h_stride;
  if (x.rank() == 4) {
    heads = x.dim(1), seq = x.dim(2), head = x.dim(3);
    s_stride = head, h_stride = seq * head;
  } else {
    heads = ctx.attr_int("num_heads", 0);
    if (heads <= 0 || x.dim(2) % heads != 0)
      ctx.fail("3-D X needs num_heads dividing its hidden size " + std::to_string(x.dim(2)) + " (num_heads " +
               std::to_string(heads) + ")");
    seq = x.dim(1), head = x.dim(2) / heads;
    s_stride = heads * head, h_stride = head;
  }
  if (x.rank() == 4 && ctx.has_attr("num_heads") && ctx.attr_int("num_heads", 0) != heads)
    ctx.fail("num_heads disagrees with the head dim of the 4-D X");
  int64_t rot = ctx.attr_int("rotary_embedding_dim", 0);
  if (rot == 0) rot = head;
  if (rot < 0 || rot > head || rot % 2 != 0)
    ctx.fail("rotary_embedding_dim " + std::to_string(rot) + " must be even and at most the head size " +
             std::to_string(head));
  const int64_t half = rot / 2;
  // Row index into the caches for (b, s).
  std::vector<int64_t> rows(static_cast<size_t>(batch * seq));
  if (ctx.has_input(3)) {
    const Tensor& pos = ctx.input(3);
    if (pos.dtype() != DataType::kInt64 || pos.shape() != std::vector<int64_t>{batch, seq})
      ctx.fail("position_ids must be int64 of shape (batch, seq), is " + pos.describe());
    if (cos_t.rank() != 2 || sin_t.shape() != cos_t.shape() || cos_t.dim(1) != half)
      ctx.fail("with position_ids the caches must be (max_position, rotary_dim / 2 = " + std::to_string(half) +
               "), are " + shape_string(cos_t.shape()) + " and " + shape_string(sin_t.shape()));
    for (size_t i = 0; i < rows.size(); ++i) {
      const int64_t p = pos.data<int64_t>()[i];
      if (p < 0 || p >= cos_t.dim(0))
        ctx.fail("position id " + std::to_string(p) + " is outside the caches' " + std::to_string(cos_t.dim(0)) + " rows");
      rows[i] = p;
    }
  } else {
    if (cos_t.shape() != std::vector<int64_t>{batch, seq, half} || sin_t.shape() != cos_t.shape())
      ctx.fail("without position_ids the caches must be (batch, seq, rotary_dim / 2) = " +
               shape_string({batch, seq, half}) + ", are " + shape_string(cos_t.shape()) + " and " +
               shape_string(sin_t.shape()));
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int64_t>(i);
  }
  const bool interleaved = ctx.attr_int("interleaved", 0) != 0;
  Tensor& y = ctx.output(0, x.dtype(), x.shape());
  visit_or_fail<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using F = calc_t<T>;
    const T* xp = x.data<T>();
    const T* cp = cos_t.data<T>();
    const T* sp = sin_t.data<T>();
    T* yp = y.mutable_data<T>();
    parallel_ranges(batch * seq * heads, 64, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t b = t / (seq * heads), s = t / heads % seq, h = t % heads;
        const int64_t base = b * seq * heads * head + s * s_stride + h * h_stride;
        const int64_t row = rows[static_cast<size_t>(b * seq + s)] * half;
        const T* in = xp + base;
        T* out = yp + base;
        for (int64_t i = 0; i < half; ++i) {
          const F c = Num<T>::load(cp[row + i]), sn = Num<T>::load(sp[row + i]);
          const int64_t i1 = interleaved ? 2 * i : i, i2 = interleaved ? 2 * i + 1 : i + half;
          const F x1 = Num<T>::load(in[i1]), x2 = Num<T>::load(in[i2]);
          out[i1] = Num<T>::store(c * x1 - sn * x2);
          out[i2] = Num<T>::store(sn * x1 + c * x2);
        }
        for (int64_t i = rot; i < head; ++i) out[i] = in[i];
      }
    });
  });
}

// ---------------------------------------------------------------- SwiGLU

void swiglu(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != b.dtype() || a.shape() != b.shape())
    ctx.fail("A " + a.describe() + " and B " + b.describe() + " must have the same type and shape (no broadcasting)");
  const float alpha = ctx.attr_float("alpha", 1.0f);
  Tensor& y = ctx.output(0, a.dtype(), a.shape());
  visit_or_fail<kFloats>(ctx, a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using F = calc_t<T>;
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* py = y.mutable_data<T>();
    parallel_ranges(a.size(), kElementwiseGrain, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const F x = Num<T>::load(pa[i]);
        const F gate = x / (F(1) + std::exp(-static_cast<F>(alpha) * x));
        py[i] = Num<T>::store(gate * Num<T>::load(pb[i]));
      }
    });
  });
}

// ---------------------------------------------------------------- CausalConvWithState

void causal_conv_with_state(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  if (x.rank() != 3) ctx.fail("input must be (batch, channels, length), has shape " + shape_string(x.shape()));
  const int64_t batch = x.dim(0), ch = x.dim(1), len = x.dim(2);
  if (w.rank() != 3 || w.dim(0) != ch || w.dim(1) != 1 || w.dim(2) < 1)
    ctx.fail("weight must be (channels, 1, k) with channels " + std::to_string(ch) + ", has shape " +
             shape_string(w.shape()));
  if (w.dtype() != x.dtype()) ctx.fail("weight must have the type of input");
  const int64_t k = w.dim(2), carry = k - 1;
  const std::string act = ctx.attr_string("activation", "none");
  if (act != "none" && act != "silu" && act != "swish")
    ctx.fail("activation must be 'none', 'silu' or 'swish', is '" + act + "'");
  const bool silu = act != "none";
  const bool has_bias = ctx.has_input(2), has_past = ctx.has_input(3);
  if (has_bias && (ctx.input(2).shape() != std::vector<int64_t>{ch} || ctx.input(2).dtype() != x.dtype()))
    ctx.fail("bias must be (channels) of the input type, is " + ctx.input(2).describe());
  if (has_past &&
      (ctx.input(3).shape() != std::vector<int64_t>{batch, ch, carry} || ctx.input(3).dtype() != x.dtype()))
    ctx.fail("past_state must be (batch, channels, k - 1) = " + shape_string({batch, ch, carry}) +
             " of the input type, is " + ctx.input(3).describe());
  Tensor& y = ctx.output(0, x.dtype(), x.shape());
  Tensor& state = ctx.output(1, x.dtype(), {batch, ch, carry});
  visit_or_fail<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using F = calc_t<T>;
    const T* xp = x.data<T>();
    const T* wp = w.data<T>();
    const T* bp = has_bias ? ctx.input(2).data<T>() : nullptr;
    const T* pp = has_past ? ctx.input(3).data<T>() : nullptr;
    T* yp = y.mutable_data<T>();
    T* sp = state.mutable_data<T>();
    parallel_ranges(batch * ch, 16, [&](int64_t t0, int64_t t1) {
      std::vector<F> padded(static_cast<size_t>(carry + len));
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t c = t % ch;
        for (int64_t i = 0; i < carry; ++i) padded[static_cast<size_t>(i)] = pp ? Num<T>::load(pp[t * carry + i]) : F(0);
        for (int64_t i = 0; i < len; ++i) padded[static_cast<size_t>(carry + i)] = Num<T>::load(xp[t * len + i]);
        for (int64_t i = 0; i < len; ++i) {
          F acc = 0;
          for (int64_t m = 0; m < k; ++m) acc += Num<T>::load(wp[c * k + m]) * padded[static_cast<size_t>(i + m)];
          if (bp) acc += Num<T>::load(bp[c]);
          const F conv = Num<T>::load(Num<T>::store(acc));  // the spec rounds the convolution to T first
          yp[t * len + i] = Num<T>::store(silu ? conv / (F(1) + std::exp(-conv)) : conv);
        }
        for (int64_t i = 0; i < carry; ++i) sp[t * carry + i] = Num<T>::store(padded[static_cast<size_t>(len + i)]);
      }
    });
  });
}

// ---------------------------------------------------------------- LinearAttention

void linear_attention(KernelContext& ctx) {
  const Tensor& tq = ctx.input(0);
  const Tensor& tk = ctx.input(1);
  const Tensor& tv = ctx.input(2);
  if (tq.rank() != 3 || tk.rank() != 3 || tv.rank() != 3)
    ctx.fail("query, key and value must be 3-D (B, T, H*D)");
  const int64_t hq = ctx.attr_int("q_num_heads", 0), hkv = ctx.attr_int("kv_num_heads", 0);
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0)
    ctx.fail("q_num_heads (" + std::to_string(hq) + ") must be a positive multiple of kv_num_heads (" +
             std::to_string(hkv) + ")");
  const std::string rule = ctx.attr_string("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    ctx.fail("update_rule must be 'linear', 'gated', 'delta' or 'gated_delta', is '" + rule + "'");
  const bool gating = rule == "gated" || rule == "gated_delta";
  const bool delta = rule == "delta" || rule == "gated_delta";
  const int64_t batch = tq.dim(0), steps = tq.dim(1);
  if (tq.dim(2) % hq != 0) ctx.fail("query last dim is not a multiple of q_num_heads");
  const int64_t dk = tq.dim(2) / hq;
  if (tk.dim(0) != batch || tk.dim(1) != steps || tk.dim(2) != hkv * dk)
    ctx.fail("key must be (B, T, kv_num_heads * d_k) = " + shape_string({batch, steps, hkv * dk}) + ", is " +
             shape_string(tk.shape()));
  if (tv.dim(0) != batch || tv.dim(1) != steps || tv.dim(2) % hkv != 0)
    ctx.fail("value must be (B, T, kv_num_heads * d_v), is " + shape_string(tv.shape()));
  const int64_t dv = tv.dim(2) / hkv;
  if (tk.dtype() != tq.dtype() || tv.dtype() != tq.dtype()) ctx.fail("query, key and value must have one type");
  // The spec lists decay for the gated rules and beta for the delta rules; like the reference
  // implementation, an input the rule does not use is an error rather than silently ignored.
  if (gating != ctx.has_input(4))
    ctx.fail("update_rule '" + rule + (gating ? "' requires" : "' does not take") + " the decay input");
  if (delta != ctx.has_input(5))
    ctx.fail("update_rule '" + rule + (delta ? "' requires" : "' does not take") + " the beta input");
  int64_t decay_width = 0, beta_width = 0;
  std::vector<float> decay, beta;
  if (gating) {
    const Tensor& d = ctx.input(4);
    if (d.rank() != 3 || d.dim(0) != batch || d.dim(1) != steps || (d.dim(2) != hkv && d.dim(2) != hkv * dk))
      ctx.fail("decay must be (B, T, kv_num_heads) or (B, T, kv_num_heads * d_k), is " + shape_string(d.shape()));
    decay_width = d.dim(2) / hkv;  // 1 or d_k per head
    decay = load_floats<float>(ctx, d);
  }
  if (delta) {
    const Tensor& bt = ctx.input(5);
    if (bt.rank() != 3 || bt.dim(0) != batch || bt.dim(1) != steps || (bt.dim(2) != hkv && bt.dim(2) != 1))
      ctx.fail("beta must be (B, T, kv_num_heads) or (B, T, 1), is " + shape_string(bt.shape()));
    beta_width = bt.dim(2);
    beta = load_floats<float>(ctx, bt);
  }
  DataType state_type = tq.dtype();
  std::vector<float> state(static_cast<size_t>(batch * hkv * dk * dv), 0.0f);
  if (ctx.has_input(3)) {
    const Tensor& ps = ctx.input(3);
    if (ps.shape() != std::vector<int64_t>{batch, hkv, dk, dv})
      ctx.fail("past_state must be (B, kv_num_heads, d_k, d_v) = " + shape_string({batch, hkv, dk, dv}) + ", is " +
               shape_string(ps.shape()));
    state_type = ps.dtype();
    state = load_floats<float>(ctx, ps);
  }
  const float attr_scale = ctx.attr_float("scale", 0.0f);
  const float scale = attr_scale == 0.0f ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(dk))) : attr_scale;
  const std::vector<float> q = load_floats<float>(ctx, tq), k = load_floats<float>(ctx, tk), v = load_floats<float>(ctx, tv);
  std::vector<float> out(static_cast<size_t>(batch * steps * hq * dv));
  const int64_t group = hq / hkv;
  // Each (batch, kv head) state evolves on its own; its query heads read it after each step.
  parallel_ranges(batch * hkv, 1, [&](int64_t t0, int64_t t1) {
    std::vector<float> vt(static_cast<size_t>(dv));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / hkv, g = t % hkv;
      float* s = state.data() + t * dk * dv;
      for (int64_t step = 0; step < steps; ++step) {
        const int64_t bt = b * steps + step;
        const float* kt = k.data() + (bt * hkv + g) * dk;
        const float* vin = v.data() + (bt * hkv + g) * dv;
        if (gating) {
          const float* gp = decay.data() + (bt * hkv + g) * decay_width;
          for (int64_t i = 0; i < dk; ++i) {
            const float f = std::exp(gp[decay_width == 1 ? 0 : i]);
            for (int64_t j = 0; j < dv; ++j) s[i * dv + j] *= f;
          }
        }
        if (delta) {
          const float bv = beta[static_cast<size_t>(bt * beta_width + (beta_width == 1 ? 0 : g))];
          for (int64_t j = 0; j < dv; ++j) {
            float r = 0;
            for (int64_t i = 0; i < dk; ++i) r += s[i * dv + j] * kt[i];
            vt[static_cast<size_t>(j)] = bv * (vin[j] - r);
          }
        } else {
          std::copy_n(vin, dv, vt.begin());
        }
        for (int64_t i = 0; i < dk; ++i)
          for (int64_t j = 0; j < dv; ++j) s[i * dv + j] += kt[i] * vt[static_cast<size_t>(j)];
        for (int64_t hh = 0; hh < group; ++hh) {
          const int64_t h = g * group + hh;
          const float* qt = q.data() + (bt * hq + h) * dk;
          float* o = out.data() + (bt * hq + h) * dv;
          for (int64_t j = 0; j < dv; ++j) {
            float acc = 0;
            for (int64_t i = 0; i < dk; ++i) acc += qt[i] * s[i * dv + j];
            o[j] = scale * acc;
          }
        }
      }
    }
  });
  ctx.set_output(0, store_floats(ctx, tq.dtype(), {batch, steps, hq * dv}, out));
  ctx.set_output(1, store_floats(ctx, state_type, {batch, hkv, dk, dv}, state));
}

}  // namespace

void register_attention_kernels(KernelRegistry& r) {
  r.add("Attention", attention);
  r.add("RotaryEmbedding", rotary_embedding);
  r.add("CausalConvWithState", causal_conv_with_state);
  r.add("LinearAttention", linear_attention);
  r.add("SwiGLU", swiglu);
}

}  // namespace onnxtool::runner::cpu
