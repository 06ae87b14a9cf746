// CPU kernels of onnxruntime's com.microsoft ops that transformer models exported for
// onnxruntime use: SkipLayerNormalization and SkipSimplifiedLayerNormalization (residual add,
// then LayerNorm or RMS norm), BiasAdd, BiasSoftmax, MatMulNBits (a MatMul whose weights are
// block-quantized to 4 or 8 bits), RotaryEmbedding and EmbedLayerNormalization (BERT's embedding
// lookups and LayerNorm), and the contrib forms of standard ops those models carry: Range,
// ExpandDims, Trilu, GatherND (the standard kernels, run on adjusted inputs) and Inverse. They
// compute in float32; float16 tensors, where onnxruntime takes them (BiasAdd and BiasSoftmax
// have GPU kernels only there), are widened on the way in and rounded once on the way out, as
// onnxruntime's CPU kernels do. Other types are refused naming the node.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "runner/cpu/elementwise_util.h"
#include "runner/cpu/gemm.h"
#include "runner/cpu/kernels.h"
#include "runner/cpu/tensor_util.h"

namespace onnxtool::runner::cpu {

namespace {

constexpr std::string_view kMs = ir::kMicrosoftDomain;

/// Fails unless `t` is float32, or float16 where the op takes it (`half_ok`).
void require_float(const KernelContext& ctx, const Tensor& t, const char* what, bool half_ok) {
  if (t.dtype() == DataType::kFloat || (half_ok && t.dtype() == DataType::kFloat16)) return;
  ctx.fail(std::string(what) + " is " + type_name(t.dtype()) + ": " + ctx.node().op_type + " runs on float32" +
           (half_ok ? " and float16" : "") + " only (as onnxruntime's CPU kernel)");
}

/// A float tensor's elements as float32: its own storage, or a widened copy of float16.
class Floats {
 public:
  explicit Floats(const Tensor& t) {
    if (t.dtype() == DataType::kFloat) {
      p_ = t.data<float>();
      return;
    }
    copy_.resize(static_cast<size_t>(t.size()));
    const uint16_t* h = t.data<uint16_t>();
    for (size_t i = 0; i < copy_.size(); ++i) copy_[i] = half_to_float(h[i]);
    p_ = copy_.data();
  }
  const float* data() const { return p_; }
  float operator[](int64_t i) const { return p_[i]; }

 private:
  std::vector<float> copy_;
  const float* p_ = nullptr;
};

/// An output computed in float32: written in place for float32, in a scratch buffer then
/// rounded once for float16 (finish()).
class FloatOut {
 public:
  explicit FloatOut(Tensor& y) : y_(y) {
    if (y.dtype() == DataType::kFloat) {
      p_ = y.mutable_data<float>();
    } else {
      scratch_.resize(static_cast<size_t>(y.size()));
      p_ = scratch_.data();
    }
  }
  float* data() { return p_; }
  void finish() {
    if (y_.dtype() == DataType::kFloat) return;
    uint16_t* h = y_.mutable_data<uint16_t>();
    for (size_t i = 0; i < scratch_.size(); ++i) h[i] = float_to_half(scratch_[i]);
  }

 private:
  Tensor& y_;
  std::vector<float> scratch_;
  float* p_ = nullptr;
};

/// Input i, or nullptr when omitted.
const Tensor* optional_input(const KernelContext& ctx, size_t i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; }

/// Output i when the node names it, else nullptr.
Tensor* optional_output(KernelContext& ctx, size_t i, DataType type, std::vector<int64_t> shape) {
  if (ctx.output_count() <= i || !ctx.has_output(i)) return nullptr;
  return &ctx.output(i, type, std::move(shape));
}

/// Checks that `t` is 1-D of `len` elements of X's type.
void require_vector(const KernelContext& ctx, const Tensor& t, const char* what, int64_t len, DataType type) {
  if (t.dtype() != type || t.rank() != 1 || t.size() != len)
    ctx.fail(std::string(what) + " " + t.describe() + " must be 1-D of " + std::to_string(len) + " " + type_name(type));
}

// ---------------------------------------------------------------- SkipLayerNormalization

// SkipLayerNormalization(input, skip, gamma, beta, bias) and SkipSimplifiedLayerNormalization
// (input, skip, gamma, bias): s = input + skip + bias, then LayerNorm (or the RMS norm) of s over
// the last axis. skip is input's shape or a trailing part of it ([1, S, H] or [S, H]), repeated.
// Outputs: the normalized s; mean and inv_std_var ([..., 1], float32; onnxruntime's CPU kernel
// leaves them unwritten, the statistics are given here); s itself.
template <bool kSimplified>
void skip_layer_norm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& skip = ctx.input(1);
  const Tensor& gamma = ctx.input(2);
  require_float(ctx, x, "input", true);
  if (x.rank() < 2) ctx.fail("input " + x.describe() + " must be [batch, sequence, hidden] or [tokens, hidden]");
  const int64_t hidden = x.shape().back(), rows = x.size() / std::max<int64_t>(hidden, 1);
  const DataType t = x.dtype();
  if (skip.dtype() != t || skip.rank() < 1 || skip.shape().back() != hidden || skip.size() == 0 ||
      x.size() % skip.size() != 0)
    ctx.fail("skip " + skip.describe() + " must be " + type_name(t) + " of input's shape or its trailing part, input is " +
             x.describe());
  require_vector(ctx, gamma, "gamma", hidden, t);
  const Tensor* beta = kSimplified ? nullptr : optional_input(ctx, 3);
  const Tensor* bias = optional_input(ctx, kSimplified ? 3 : 4);
  if (beta) require_vector(ctx, *beta, "beta", hidden, t);
  if (bias) require_vector(ctx, *bias, "bias", hidden, t);
  const double eps = ctx.attr_float("epsilon", 1e-12f);

  std::vector<int64_t> stat_shape = x.shape();
  stat_shape.back() = 1;
  Tensor& y = ctx.output(0, t, x.shape());
  Tensor* mean_t = optional_output(ctx, 1, DataType::kFloat, stat_shape);
  Tensor* inv_t = optional_output(ctx, 2, DataType::kFloat, stat_shape);
  Tensor* sum_t = optional_output(ctx, 3, t, x.shape());

  const Floats px(x), ps(skip), pg(gamma);
  std::optional<Floats> pb, pbias;
  if (beta) pb.emplace(*beta);
  if (bias) pbias.emplace(*bias);
  FloatOut out(y);
  std::optional<FloatOut> sum_out;
  if (sum_t) sum_out.emplace(*sum_t);
  float* py = out.data();
  float* psum = sum_out ? sum_out->data() : nullptr;
  float* pmean = mean_t ? mean_t->mutable_data<float>() : nullptr;
  float* pinv = inv_t ? inv_t->mutable_data<float>() : nullptr;
  const int64_t skip_size = skip.size();
  parallel_ranges(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(hidden, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t off = r * hidden;
      const float* in = px.data() + off;
      const float* sk = ps.data() + off % skip_size;
      float* o = py + off;
      double s1 = 0, s2 = 0;
      for (int64_t h = 0; h < hidden; ++h) {
        float v = in[h] + sk[h];
        if (pbias) v += (*pbias)[h];
        o[h] = v;
        if (psum) psum[off + h] = v;
        s1 += v;
        s2 += static_cast<double>(v) * v;
      }
      // The RMS form divides by the root of the mean square; LayerNorm centres first (a second
      // pass, which keeps the variance free of the cancellation in E[s^2] - m^2).
      const double m = kSimplified ? 0.0 : s1 / static_cast<double>(hidden);
      double var = s2 / static_cast<double>(hidden);
      if (!kSimplified) {
        var = 0;
        for (int64_t h = 0; h < hidden; ++h) var += (o[h] - m) * (o[h] - m);
        var /= static_cast<double>(hidden);
      }
      const double inv = 1 / std::sqrt(var + eps);
      for (int64_t h = 0; h < hidden; ++h)
        o[h] = static_cast<float>((o[h] - m) * inv * pg[h] + (pb ? (*pb)[h] : 0.0f));
      if (pmean) pmean[r] = static_cast<float>(m);
      if (pinv) pinv[r] = static_cast<float>(inv);
    }
  });
  out.finish();
  if (sum_out) sum_out->finish();
}

// ---------------------------------------------------------------- BiasAdd

// BiasAdd(X, bias, skip): X + bias + skip, X and skip [N, S, C], bias [C].
void bias_add(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& bias = ctx.input(1);
  const Tensor& skip = ctx.input(2);
  require_float(ctx, x, "X", true);
  if (x.rank() != 3) ctx.fail("X " + x.describe() + " must be [N, S, C]");
  require_vector(ctx, bias, "bias", x.dim(2), x.dtype());
  if (skip.dtype() != x.dtype() || skip.shape() != x.shape())
    ctx.fail("skip " + skip.describe() + " must be of X's type and shape " + x.describe());
  Tensor& y = ctx.output(0, x.dtype(), x.shape());
  const Floats px(x), pb(bias), ps(skip);
  FloatOut out(y);
  float* py = out.data();
  const int64_t c = x.dim(2);
  parallel_ranges(x.size(), kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) py[i] = px[i] + pb[i % c] + ps[i];
  });
  out.finish();
}

// ---------------------------------------------------------------- BiasSoftmax

// BiasSoftmax(data, bias): softmax(data + bias) over the axes from `axis` on. data is read as
// rows (the axes before axis) of `inner` elements and bias as rows of the same length, fewer of
// them: with is_inner_broadcast consecutive data rows share a bias row (bias [x, 1, inner] for
// data [x, n, inner]), otherwise the bias rows repeat (bias [1, n, inner]).
void bias_softmax(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& bias = ctx.input(1);
  require_float(ctx, x, "data", true);
  if (bias.dtype() != x.dtype()) ctx.fail("bias " + bias.describe() + " must be of data's type " + x.describe());
  if (!ctx.has_attr("is_inner_broadcast")) ctx.fail("the attribute is_inner_broadcast is required");
  const bool inner_broadcast = ctx.attr_int("is_inner_broadcast", 0) != 0;
  const int64_t rank = static_cast<int64_t>(x.rank());
  int64_t axis = ctx.attr_int("axis", 1);
  if (axis < -rank || axis >= rank) ctx.fail("axis " + std::to_string(axis) + " is outside data " + x.describe());
  if (axis < 0) axis += rank;
  int64_t inner = 1;
  for (int64_t d = axis; d < rank; ++d) inner *= x.dim(static_cast<size_t>(d));
  const int64_t rows = inner ? x.size() / inner : 0;
  const int64_t bias_rows = inner ? bias.size() / inner : 0;
  if (rows > 0 && (bias_rows == 0 || bias.size() % inner != 0 || rows % bias_rows != 0))
    ctx.fail("bias " + bias.describe() + " must hold rows of " + std::to_string(inner) + " elements, a divisor of data " +
             x.describe() + "'s " + std::to_string(rows) + " rows");
  const int64_t share = bias_rows ? rows / bias_rows : 1;  // data rows per bias row (inner broadcast)
  Tensor& y = ctx.output(0, x.dtype(), x.shape());
  const Floats px(x), pb(bias);
  FloatOut out(y);
  float* py = out.data();
  parallel_ranges(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(inner, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* in = px.data() + r * inner;
      const float* b = pb.data() + (inner_broadcast ? r / share : r % bias_rows) * inner;
      float* o = py + r * inner;
      float top = -INFINITY;
      for (int64_t i = 0; i < inner; ++i) {
        o[i] = in[i] + b[i];
        top = std::max(top, o[i]);
      }
      double sum = 0;
      for (int64_t i = 0; i < inner; ++i) {
        o[i] = std::exp(o[i] - top);
        sum += o[i];
      }
      for (int64_t i = 0; i < inner; ++i) o[i] = static_cast<float>(o[i] / sum);
    }
  });
  out.finish();
}

// ---------------------------------------------------------------- MatMulNBits

// MatMulNBits(A, B, scales, zero_points, g_idx, bias): A [..., K] times the [K, N] matrix that B
// holds quantized, block by block along K. B is [N, k_blocks, blob] bytes, each block's
// block_size values of `bits` bits packed from the low bits of each byte up; a column's value
// is (q - zero_point) * scale with one scale and zero point per (column, block). Zero points are
// packed like B, a row of ceil(k_blocks * bits / 8) bytes per column, or given as floats (one
// per block); absent, they are 2^(bits-1). Y = A x W (+ bias), [..., N].
void matmul_nbits(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const Tensor& scales = ctx.input(2);
  const Tensor* zp = optional_input(ctx, 3);
  if (ctx.has_input(4)) ctx.fail("g_idx is not supported (it is deprecated; reorder the weights instead)");
  const Tensor* bias = optional_input(ctx, 5);
  require_float(ctx, a, "A", true);
  const int64_t k = ctx.attr_int("K", 0), n = ctx.attr_int("N", 0), bits = ctx.attr_int("bits", 4);
  const int64_t block = ctx.attr_int("block_size", 0);
  if (bits != 4 && bits != 8) ctx.fail("bits " + std::to_string(bits) + " is not supported (4 and 8 are)");
  if (block < 16 || (block & (block - 1)) != 0) ctx.fail("block_size " + std::to_string(block) + " must be a power of two, at least 16");
  if (k <= 0 || n <= 0) ctx.fail("K and N must be positive, got K " + std::to_string(k) + ", N " + std::to_string(n));
  if (a.rank() < 1 || a.shape().back() != k) ctx.fail("A " + a.describe() + " must end in K = " + std::to_string(k));
  const int64_t blocks = (k + block - 1) / block, blob = block * bits / 8;
  if (b.dtype() != DataType::kUInt8 || b.size() != n * blocks * blob)
    ctx.fail("B " + b.describe() + " must be uint8 [N, k_blocks, blob] = [" + std::to_string(n) + ", " +
             std::to_string(blocks) + ", " + std::to_string(blob) + "]");
  if (scales.dtype() != a.dtype() || scales.size() != n * blocks)
    ctx.fail("scales " + scales.describe() + " must be " + type_name(a.dtype()) + " of N * k_blocks = " + std::to_string(n * blocks) + " elements");
  const int64_t zp_row = (blocks * bits + 7) / 8;
  const bool zp_packed = zp && zp->dtype() == DataType::kUInt8;
  if (zp && zp_packed && zp->size() != n * zp_row)
    ctx.fail("zero_points " + zp->describe() + " (packed) must have N * ceil(k_blocks * bits / 8) = " + std::to_string(n * zp_row) + " bytes");
  if (zp && !zp_packed && (zp->dtype() != a.dtype() || zp->size() != n * blocks))
    ctx.fail("zero_points " + zp->describe() + " must be uint8 (packed) or " + type_name(a.dtype()) + " of N * k_blocks elements");
  if (bias) require_vector(ctx, *bias, "bias", n, a.dtype());

  // The dequantized weights, one row of K per output column: the products then read both
  // operands contiguously.
  const Floats sc(scales);
  std::optional<Floats> zf;
  if (zp && !zp_packed) zf.emplace(*zp);
  const uint8_t* pq = b.data<uint8_t>();
  const uint8_t* pz = zp_packed ? zp->data<uint8_t>() : nullptr;
  const float default_zero = static_cast<float>(int64_t{1} << (bits - 1));
  std::vector<float> w(static_cast<size_t>(n * k));
  parallel_ranges(n, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      for (int64_t kb = 0; kb < blocks; ++kb) {
        const float scale = sc[c * blocks + kb];
        float zero = default_zero;
        if (zf) {
          zero = (*zf)[c * blocks + kb];
        } else if (pz) {
          const uint8_t byte = pz[c * zp_row + kb * bits / 8];
          zero = static_cast<float>(bits == 8 ? byte : (kb % 2 ? byte >> 4 : byte & 0xF));
        }
        const uint8_t* blob_p = pq + (c * blocks + kb) * blob;
        const int64_t first = kb * block, count = std::min(block, k - first);
        for (int64_t i = 0; i < count; ++i) {
          const int q = bits == 8 ? blob_p[i] : (i % 2 ? blob_p[i / 2] >> 4 : blob_p[i / 2] & 0xF);
          w[static_cast<size_t>(c * k + first + i)] = (static_cast<float>(q) - zero) * scale;
        }
      }
    }
  });

  std::vector<int64_t> y_shape = a.shape();
  y_shape.back() = n;
  Tensor& y = ctx.output(0, a.dtype(), y_shape);
  const int64_t m = a.size() / k;
  const Floats pa(a);
  std::optional<Floats> pbias;
  if (bias) pbias.emplace(*bias);
  FloatOut out(y);
  float* py = out.data();
  // The product on the float GEMM the MatMul kernel uses (w is B transposed, [N, K]): float
  // sums as onnxruntime's kernel makes them at accuracy_level 0, and at GEMM speed.
  gemm_f32(m, n, k, pa.data(), k, false, w.data(), k, true, py, n, false);
  if (pbias)
    for (int64_t i = 0; i < m * n; ++i) py[i] += (*pbias)[i % n];
  out.finish();
}

// ---------------------------------------------------------------- RotaryEmbedding

// RotaryEmbedding(input, position_ids, cos_cache, sin_cache): rotates pairs of each head's first
// rotary_embedding_dim values (all of the head by default) by the angle of the token's
// position, whose cos and sin are rows of the caches. The pairs are (i, i + dim/2), or with
// `interleaved` (2i, 2i + 1). input is [batch, seq, hidden] (heads side by side) or [batch,
// heads, seq, head_size]; position_ids is one start position (token s at start + s) or
// [batch, seq].
void rotary_embedding(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& pos = ctx.input(1);
  const Tensor& cos_t = ctx.input(2);
  const Tensor& sin_t = ctx.input(3);
  require_float(ctx, x, "input", true);
  if (x.rank() != 3 && x.rank() != 4) ctx.fail("input " + x.describe() + " must be 3-D or 4-D");
  if (cos_t.dtype() != x.dtype() || sin_t.dtype() != x.dtype() || cos_t.rank() != 2 || cos_t.shape() != sin_t.shape())
    ctx.fail("cos_cache " + cos_t.describe() + " and sin_cache " + sin_t.describe() + " must be 2-D of one shape and input's type");
  if (pos.dtype() != DataType::kInt64) ctx.fail("position_ids " + pos.describe() + " must be int64");
  if (ctx.attr_int("is_packed_batching", 0) != 0) ctx.fail("is_packed_batching is not supported");
  const bool interleaved = ctx.attr_int("interleaved", 0) != 0;
  const int64_t rot_attr = ctx.attr_int("rotary_embedding_dim", 0);
  int64_t heads = ctx.attr_int("num_heads", 0);
  if (rot_attr > 0 && heads <= 0) ctx.fail("num_heads must be given with rotary_embedding_dim");
  const bool transposed = x.rank() == 4;
  const int64_t batch = x.dim(0), seq = transposed ? x.dim(2) : x.dim(1);
  const int64_t hidden = transposed ? x.dim(1) * x.dim(3) : x.dim(2);
  const int64_t max_pos = cos_t.dim(0), half_cache = cos_t.dim(1);
  const int64_t head_size = rot_attr == 0 ? half_cache * 2 : hidden / heads;
  if (heads <= 0) heads = head_size > 0 ? hidden / head_size : 0;
  const int64_t rot = rot_attr > 0 ? rot_attr : head_size;
  if (head_size <= 0 || heads * head_size != hidden || rot > head_size || rot % 2 != 0 || rot / 2 > half_cache)
    ctx.fail("input " + x.describe() + " does not split into heads that the caches " + cos_t.describe() + " fit (num_heads " +
             std::to_string(heads) + ", rotary_embedding_dim " + std::to_string(rot) + ")");
  if (transposed && x.dim(1) != heads) ctx.fail("input " + x.describe() + " must have num_heads = " + std::to_string(heads) + " at axis 1");
  const bool one_start = pos.size() == 1 && pos.rank() <= 1;
  if (!one_start && (pos.rank() != 2 || pos.dim(0) != batch || pos.dim(1) != seq))
    ctx.fail("position_ids " + pos.describe() + " must be one value or [batch, sequence] = [" + std::to_string(batch) + ", " +
             std::to_string(seq) + "]");
  const int64_t head_stride = transposed ? seq * head_size : head_size;
  const int64_t seq_stride = transposed ? head_size : heads * head_size;
  const int64_t batch_stride = seq * hidden;
  Tensor& y = ctx.output(0, x.dtype(), x.shape());
  const Floats px(x), pc(cos_t), psn(sin_t);
  FloatOut out(y);
  float* py = out.data();
  const int64_t* pp = pos.data<int64_t>();
  const int64_t half = rot / 2;
  // Positions are checked here: the workers below cannot fail the node.
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t s = 0; s < seq; ++s) {
      const int64_t p = one_start ? pp[0] + s : pp[bi * seq + s];
      if (p < 0 || p >= max_pos)
        ctx.fail("position " + std::to_string(p) + " is outside the caches' " + std::to_string(max_pos) + " rows");
    }
  parallel_ranges(batch * seq * heads, std::max<int64_t>(1, 4096 / head_size), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t bi = i / (seq * heads), s = (i / heads) % seq, h = i % heads;
      const int64_t p = one_start ? pp[0] + s : pp[bi * seq + s];
      const int64_t off = bi * batch_stride + s * seq_stride + h * head_stride;
      const float* in = px.data() + off;
      float* o = py + off;
      const float* cs = pc.data() + p * half_cache;
      const float* sn = psn.data() + p * half_cache;
      for (int64_t j = 0; j < half; ++j) {
        const int64_t a = interleaved ? 2 * j : j, b = interleaved ? 2 * j + 1 : j + half;
        o[a] = in[a] * cs[j] - in[b] * sn[j];
        o[b] = in[a] * sn[j] + in[b] * cs[j];
      }
      for (int64_t j = rot; j < head_size; ++j) o[j] = in[j];
    }
  });
  out.finish();
}

// ---------------------------------------------------------------- EmbedLayerNormalization

// EmbedLayerNormalization(input_ids, segment_ids, word_embedding, position_embedding,
// segment_embedding, gamma, beta, mask, position_ids): per token, the sum of its word, position
// and segment embedding rows, then LayerNorm. Positions are the token's index in its sequence,
// or position_ids ([batch, seq], or [1, seq] for every batch). Outputs: the normalized sums
// [batch, seq, hidden]; mask_index [batch], the count of mask values equal to 1 per sequence (0
// without mask); the sums themselves.
void embed_layer_norm(KernelContext& ctx) {
  const Tensor& ids = ctx.input(0);
  const Tensor* seg_ids = optional_input(ctx, 1);
  const Tensor& word = ctx.input(2);
  const Tensor& position = ctx.input(3);
  const Tensor* seg = optional_input(ctx, 4);
  const Tensor& gamma = ctx.input(5);
  const Tensor& beta = ctx.input(6);
  const Tensor* mask = optional_input(ctx, 7);
  const Tensor* pos_ids = optional_input(ctx, 8);
  require_float(ctx, word, "word_embedding", false);
  if (ids.dtype() != DataType::kInt32 || ids.rank() != 2) ctx.fail("input_ids " + ids.describe() + " must be int32 [batch, sequence]");
  const int64_t batch = ids.dim(0), seq = ids.dim(1);
  if (word.rank() != 2) ctx.fail("word_embedding " + word.describe() + " must be 2-D");
  const int64_t hidden = word.dim(1);
  const auto check_table = [&](const Tensor& t, const char* what) {
    if (t.dtype() != DataType::kFloat || t.rank() != 2 || t.dim(1) != hidden)
      ctx.fail(std::string(what) + " " + t.describe() + " must be float [rows, " + std::to_string(hidden) + "]");
  };
  check_table(position, "position_embedding");
  if ((seg_ids == nullptr) != (seg == nullptr)) ctx.fail("segment_ids and segment_embedding must be given together");
  if (seg) check_table(*seg, "segment_embedding");
  const auto check_ids = [&](const Tensor* t, const char* what, bool broadcast_ok) {
    if (t && (t->dtype() != DataType::kInt32 || t->rank() != 2 || t->dim(1) != seq ||
              (t->dim(0) != batch && !(broadcast_ok && t->dim(0) == 1))))
      ctx.fail(std::string(what) + " " + t->describe() + " must be int32 of input_ids' shape " + ids.describe());
  };
  check_ids(seg_ids, "segment_ids", false);
  check_ids(mask, "mask", false);
  check_ids(pos_ids, "position_ids", true);
  require_vector(ctx, gamma, "gamma", hidden, DataType::kFloat);
  require_vector(ctx, beta, "beta", hidden, DataType::kFloat);
  const double eps = ctx.attr_float("epsilon", 1e-12f);

  Tensor& y = ctx.output(0, DataType::kFloat, {batch, seq, hidden});
  Tensor* mask_index = optional_output(ctx, 1, DataType::kInt32, {batch});
  Tensor* sums = optional_output(ctx, 2, DataType::kFloat, {batch, seq, hidden});
  const int32_t* pi = ids.data<int32_t>();
  const int32_t* psi = seg_ids ? seg_ids->data<int32_t>() : nullptr;
  const int32_t* ppi = pos_ids ? pos_ids->data<int32_t>() : nullptr;
  const bool pos_broadcast = pos_ids && pos_ids->dim(0) == 1 && batch != 1;
  const float* pw = word.data<float>();
  const float* pp = position.data<float>();
  const float* ps = seg ? seg->data<float>() : nullptr;
  const float* pg = gamma.data<float>();
  const float* pb = beta.data<float>();
  float* py = y.mutable_data<float>();
  float* psum = sums ? sums->mutable_data<float>() : nullptr;
  const auto check_row = [&](int64_t id, int64_t rows, const char* what) {
    if (id < 0 || id >= rows)
      ctx.fail(std::string(what) + " " + std::to_string(id) + " is outside the table's " + std::to_string(rows) + " rows");
  };
  // Every index is checked here: the workers below cannot fail the node.
  for (int64_t t = 0; t < batch * seq; ++t) {
    check_row(pi[t], word.dim(0), "input id");
    check_row(ppi ? ppi[pos_broadcast ? t % seq : t] : t % seq, position.dim(0), "position");
    if (psi) check_row(psi[t], seg->dim(0), "segment id");
  }
  parallel_ranges(batch * seq, std::max<int64_t>(1, 4096 / std::max<int64_t>(hidden, 1)), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const float* w = pw + pi[t] * hidden;
      const int64_t p = ppi ? ppi[pos_broadcast ? t % seq : t] : t % seq;
      const float* pe = pp + p * hidden;
      const float* se = ps ? ps + psi[t] * hidden : nullptr;
      float* o = py + t * hidden;
      double s1 = 0;
      for (int64_t h = 0; h < hidden; ++h) {
        float v = w[h] + pe[h];
        if (se) v += se[h];
        o[h] = v;
        if (psum) psum[t * hidden + h] = v;
        s1 += v;
      }
      const double m = s1 / static_cast<double>(hidden);
      double var = 0;
      for (int64_t h = 0; h < hidden; ++h) var += (o[h] - m) * (o[h] - m);
      const double inv = 1 / std::sqrt(var / static_cast<double>(hidden) + eps);
      for (int64_t h = 0; h < hidden; ++h) o[h] = static_cast<float>((o[h] - m) * inv * pg[h] + pb[h]);
    }
  });
  if (mask_index) {
    int32_t* pm = mask_index->mutable_data<int32_t>();
    const int32_t* mk = mask ? mask->data<int32_t>() : nullptr;
    for (int64_t bi = 0; bi < batch; ++bi) {
      int32_t count = 0;
      for (int64_t s = 0; mk && s < seq; ++s) count += mk[bi * seq + s] == 1;
      pm[bi] = count;
    }
  }
}

// ---------------------------------------------------------------- the contrib forms of standard ops

/// The standard kernel of `op` at `opset`, run on `inputs` with this node's attributes: output 0.
void run_standard(KernelContext& ctx, std::string_view op, int64_t opset, std::vector<const Value*> inputs) {
  const KernelFn fn = KernelRegistry::instance().find("", op, opset);
  if (!fn) ctx.fail(std::string(op) + " has no standard kernel to run on");
  ctx.set_output(0, std::move(ctx.delegate(fn, ctx.node(), opset, std::move(inputs), 1)[0]));
}

// Range(start, limit, delta): ONNX's Range, delta 1 when omitted.
void contrib_range(KernelContext& ctx) {
  Value one;
  const Value* delta = ctx.has_input(2) ? &ctx.input_value(2) : nullptr;
  if (!delta) {
    Tensor t(ctx.input(0).dtype(), {});
    set_element_from_double(t, 0, 1);
    one = Value::of(std::move(t));
    delta = &one;
  }
  run_standard(ctx, "Range", 11, {&ctx.input_value(0), &ctx.input_value(1), delta});
}

// ExpandDims(X, axis): X with a dim of 1 inserted at axis (int32 scalar; negative counts from
// the end, -1 appending), axis in [-rank, rank].
void expand_dims(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& axis_t = ctx.input(1);
  if (axis_t.dtype() != DataType::kInt32 || axis_t.size() != 1) ctx.fail("axis " + axis_t.describe() + " must be one int32");
  const int64_t rank = static_cast<int64_t>(x.rank()), axis = axis_t.data<int32_t>()[0];
  if (axis < -rank || axis > rank)
    ctx.fail("axis " + std::to_string(axis) + " is outside [" + std::to_string(-rank) + ", " + std::to_string(rank) + "]");
  std::vector<int64_t> shape = x.shape();
  shape.insert(shape.begin() + (axis >= 0 ? axis : rank + axis + 1), 1);
  ctx.set_output(0, x.reshaped(shape));
}

// Trilu(X, k): ONNX's Trilu.
void contrib_trilu(KernelContext& ctx) {
  std::vector<const Value*> inputs{&ctx.input_value(0)};
  if (ctx.has_input(1)) inputs.push_back(&ctx.input_value(1));
  run_standard(ctx, "Trilu", 14, inputs);
}

// GatherND(data, indices): ONNX's GatherND without batch dims; int32 indices are widened.
void contrib_gather_nd(KernelContext& ctx) {
  const Tensor& idx = ctx.input(1);
  Value wide;
  const Value* indices = &ctx.input_value(1);
  if (idx.dtype() == DataType::kInt32) {
    Tensor t(DataType::kInt64, idx.shape());
    for (int64_t i = 0; i < idx.size(); ++i) t.mutable_data<int64_t>()[i] = idx.data<int32_t>()[i];
    wide = Value::of(std::move(t));
    indices = &wide;
  } else if (idx.dtype() != DataType::kInt64) {
    ctx.fail("indices " + idx.describe() + " must be int32 or int64");
  }
  run_standard(ctx, "GatherND", 11, {&ctx.input_value(0), indices});
}

// Inverse(X): the inverse of each [n, n] matrix of X's last two axes, by Gauss-Jordan
// elimination with partial pivoting in double; float16 and float32 are rounded once at the end.
void inverse(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const DataType t = x.dtype();
  if (t != DataType::kFloat && t != DataType::kFloat16 && t != DataType::kDouble)
    ctx.fail("X is " + type_name(t) + ": Inverse runs on float32, float16 and double only (as onnxruntime's CPU kernel)");
  if (x.rank() < 2 || x.dim(x.rank() - 1) != x.dim(x.rank() - 2)) ctx.fail("X " + x.describe() + " must end in square matrices");
  const int64_t n = x.dim(x.rank() - 1), count = n ? x.size() / (n * n) : 0;
  Tensor& y = ctx.output(0, t, x.shape());
  for (int64_t m = 0; m < count; ++m) {
    const int64_t base = m * n * n;
    std::vector<double> a(static_cast<size_t>(n * n)), inv(static_cast<size_t>(n * n), 0.0);
    for (int64_t i = 0; i < n * n; ++i) a[static_cast<size_t>(i)] = element_as_double(x, base + i);
    for (int64_t i = 0; i < n; ++i) inv[static_cast<size_t>(i * n + i)] = 1;
    const auto at = [n](std::vector<double>& v, int64_t r, int64_t c) -> double& { return v[static_cast<size_t>(r * n + c)]; };
    for (int64_t c = 0; c < n; ++c) {
      int64_t pivot = c;
      for (int64_t r = c + 1; r < n; ++r)
        if (std::abs(at(a, r, c)) > std::abs(at(a, pivot, c))) pivot = r;
      if (at(a, pivot, c) == 0) ctx.fail("matrix " + std::to_string(m) + " of X " + x.describe() + " is singular");
      if (pivot != c)
        for (int64_t j = 0; j < n; ++j) {
          std::swap(at(a, c, j), at(a, pivot, j));
          std::swap(at(inv, c, j), at(inv, pivot, j));
        }
      const double d = at(a, c, c);
      for (int64_t j = 0; j < n; ++j) {
        at(a, c, j) /= d;
        at(inv, c, j) /= d;
      }
      for (int64_t r = 0; r < n; ++r) {
        const double f = at(a, r, c);
        if (r == c || f == 0) continue;
        for (int64_t j = 0; j < n; ++j) {
          at(a, r, j) -= f * at(a, c, j);
          at(inv, r, j) -= f * at(inv, c, j);
        }
      }
    }
    for (int64_t i = 0; i < n * n; ++i) set_element_from_double(y, base + i, inv[static_cast<size_t>(i)]);
  }
}

}  // namespace

void register_contrib_transformer_kernels(KernelRegistry& r) {
  const auto add = [&r](std::string_view op, KernelFn fn) { r.add(kMs, op, 1, kMaxOpset, fn); };
  add("SkipLayerNormalization", skip_layer_norm<false>);
  add("SkipSimplifiedLayerNormalization", skip_layer_norm<true>);
  add("BiasAdd", bias_add);
  add("BiasSoftmax", bias_softmax);
  add("MatMulNBits", matmul_nbits);
  add("RotaryEmbedding", rotary_embedding);
  add("EmbedLayerNormalization", embed_layer_norm);
  add("Range", contrib_range);
  add("ExpandDims", expand_dims);
  add("Trilu", contrib_trilu);
  add("GatherND", contrib_gather_nd);
  add("Inverse", inverse);
}

}  // namespace onnxtool::runner::cpu
