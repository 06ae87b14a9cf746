// CPU kernels: RNN, GRU and LSTM (forward, reverse, bidirectional; sequence_lens; layouts 0
// and 1; activation lists with alpha/beta; clip; LSTM peepholes and input_forget; GRU
// linear_before_reset), and onnxruntime's com.microsoft DynamicQuantizeLSTM (8-bit weights).
// The input projection of all steps is one GEMM; each step is one GEMM with the recurrence
// weights plus the gate arithmetic.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "runner/cpu/elementwise_util.h"
#include "runner/cpu/gemm.h"
#include "runner/cpu/gemm_int.h"
#include "runner/cpu/kernels.h"
#include "runner/cpu/tensor_util.h"
#include "runner/recurrent.h"

namespace onnxtool::runner::cpu {

namespace {

using Cell = RecurrentCell;

/// An activation function with its alpha and beta.
struct Activation : RecurrentActivation {
  /// By kind, the index in kRecurrentActivationNames (comparing names here cost a string
  /// comparison per gate value).
  float operator()(float x) const {
    switch (kind) {
      case 0: return 1.0f / (1.0f + std::exp(-x));  // Sigmoid
      case 1: return std::tanh(x);
      case 2: return std::max(0.0f, x);  // Relu
      case 3: return alpha * x + beta;   // Affine
      case 4: return x >= 0 ? x : alpha * x;  // LeakyRelu
      case 5: return x > alpha ? x : 0.0f;    // ThresholdedRelu
      case 6: return alpha * std::tanh(beta * x);  // ScaledTanh
      case 7: return std::max(0.0f, std::min(1.0f, alpha * x + beta));  // HardSigmoid
      case 8: return x >= 0 ? x : alpha * (std::exp(x) - 1);  // Elu
      case 9: return x / (1 + std::fabs(x));  // Softsign
      case 10: return std::log1p(std::exp(x));  // Softplus
      default: return x;
    }
  }
  /// v[j] = f(v[j]) for n floats: Sigmoid and Tanh vectorized (elementwise_util.h, as the
  /// Sigmoid and Tanh kernels compute them), the others one by one.
  void apply(float* v, int64_t n) const {
    if (kind == 0) {
      sigmoid_f32(v, v, n);
    } else if (kind == 1) {
      tanh_f32(v, v, n);
    } else {
      for (int64_t j = 0; j < n; ++j) v[j] = (*this)(v[j]);
    }
  }
};

/// out[b * ldo + r] = sum over i of h[b * k + i] * rt[i * ldr + r], for b < batch and r < rows:
/// the recurrence product H R^T of a few sequences from R transposed (rt), where a GEMM
/// library's packing costs more than the product. Sixty-four outputs at a time accumulate over
/// i in order, in vectors of sixteen lanes (one vector type on every x86 machine): each output's
/// sum is a plain sequence of multiply-adds, whatever the block or thread.
void few_rows_product(int64_t batch, int64_t rows, int64_t k, const float* h, const float* rt, int64_t ldr, float* out,
                      int64_t ldo) {
  using V = float __attribute__((vector_size(64)));
  constexpr int64_t kLanes = 16, kWide = 4 * kLanes;
  for (int64_t b = 0; b < batch; ++b) {
    const float* hb = h + b * k;
    float* ob = out + b * ldo;
    int64_t r0 = 0;
    for (; r0 + kWide <= rows; r0 += kWide) {
      V acc[4] = {};
      for (int64_t i = 0; i < k; ++i) {
        const float* row = rt + i * ldr + r0;
        const V hv = V{} + hb[i];
        for (int c = 0; c < 4; ++c) {
          V wv;
          std::memcpy(&wv, row + c * kLanes, sizeof wv);
          acc[c] += hv * wv;
        }
      }
      std::memcpy(ob + r0, acc, sizeof acc);
    }
    for (int64_t r = r0; r < rows; ++r) {
      float sum = 0;
      for (int64_t i = 0; i < k; ++i) sum += hb[i] * rt[i * ldr + r];
      ob[r] = sum;
    }
  }
}

/// DynamicQuantizeLSTM's weights (com.microsoft): W [dirs, input, 4H] and R [dirs, hidden, 4H]
/// (transposed against LSTM's), int8 or uint8, with a scale per direction or per column and one
/// zero point per direction (onnxruntime requires a direction's zero points to be equal, and 0
/// for int8).
struct QuantizedWeights {
  struct Operand {
    const Tensor* t = nullptr;
    std::vector<float> scales;   ///< dirs x (1 or 4H)
    std::vector<int32_t> zeros;  ///< dirs
    int64_t scales_per_dir = 1;
  };
  Operand w, r;
};

/// out[M, N] = a x b, or out += a x b with `accumulate`, as onnxruntime's quantized recurrences
/// compute it: `a` [M, K] float quantized to uint8 over all its values (the range widened to
/// include 0; scale (max - min) / 255, or 1 for a constant range; zero point and values rounded
/// half to even), multiplied in integers by `b` [K, N] (8-bit, zero point zb), each column then
/// scaled by scale(a) * its scale (`scales`: 1 or N values).
void quantized_product(int64_t m, int64_t n, int64_t k, const float* a, const Int8Matrix& b, int32_t zb,
                       const float* scales, bool per_column, float* out, bool accumulate) {
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < m * k; ++i) {
    lo = a[i] < lo ? a[i] : lo;
    hi = hi < a[i] ? a[i] : hi;
  }
  const float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  const float zero = std::nearbyint(std::max(0.0f, std::min(255.0f, 0.0f - lo / scale)));
  std::vector<uint8_t> qa(static_cast<size_t>(m * k));
  for (int64_t i = 0; i < m * k; ++i)
    qa[static_cast<size_t>(i)] = static_cast<uint8_t>(std::max(0.0f, std::min(255.0f, std::nearbyint(a[i] / scale) + zero)));
  const std::vector<int32_t> za(static_cast<size_t>(m), static_cast<int32_t>(zero)), zbs(static_cast<size_t>(n), zb);
  std::vector<int32_t> c(static_cast<size_t>(m * n));
  int_gemm(m, n, k, Int8Matrix{qa.data(), false, k}, za.data(), b, zbs.data(), c.data(), n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const float v = static_cast<float>(c[static_cast<size_t>(i * n + j)]) * (scale * scales[per_column ? j : 0]);
      out[i * n + j] = accumulate ? out[i * n + j] + v : v;
    }
}

/// Reads one quantized weight of DynamicQuantizeLSTM: `t` [dirs, rows, gh] with its scale and
/// zero point inputs (`scale_index`, `zero_index`).
QuantizedWeights::Operand quantized_operand(const KernelContext& ctx, size_t index, size_t scale_index, size_t zero_index,
                                            int64_t dirs, int64_t gh, const char* name) {
  QuantizedWeights::Operand op;
  op.t = &ctx.input(index);
  const std::string what(name);
  if (op.t->dtype() != DataType::kInt8 && op.t->dtype() != DataType::kUInt8)
    ctx.fail(what + " must be int8 or uint8, is " + type_name(op.t->dtype()));
  const Tensor& s = ctx.input(scale_index);
  const Tensor& z = ctx.input(zero_index);
  if (s.dtype() != DataType::kFloat) ctx.fail(what + "_scale must be float");
  if (z.dtype() != op.t->dtype()) ctx.fail(what + "_zero_point must have " + what + "'s type");
  if (s.size() != dirs && s.size() != dirs * gh)
    ctx.fail(what + "_scale must have " + std::to_string(dirs) + " or " + std::to_string(dirs * gh) + " values, has " +
             std::to_string(s.size()));
  if (z.size() != s.size()) ctx.fail(what + "_zero_point must have as many values as " + what + "_scale");
  op.scales_per_dir = s.size() / dirs;
  op.scales.assign(s.data<float>(), s.data<float>() + s.size());
  for (int64_t d = 0; d < dirs; ++d) {
    const int64_t base = d * op.scales_per_dir;
    const auto zero_at = [&](int64_t i) {
      return z.dtype() == DataType::kInt8 ? static_cast<int32_t>(z.data<int8_t>()[i]) : static_cast<int32_t>(z.data<uint8_t>()[i]);
    };
    for (int64_t i = 1; i < op.scales_per_dir; ++i)
      if (zero_at(base + i) != zero_at(base)) ctx.fail(what + "_zero_point must be one value per direction");
    if (z.dtype() == DataType::kInt8 && zero_at(base) != 0) ctx.fail(what + "_zero_point must be 0 for int8 weights");
    op.zeros.push_back(zero_at(base));
  }
  return op;
}

std::vector<Activation> activations(const KernelContext& ctx, Cell cell, int64_t dirs) {
  std::vector<Activation> out;
  for (const auto& a : recurrent_activations(ctx, cell, dirs)) out.push_back(Activation{a});
  return out;
}

/// RNN, GRU, LSTM; with `quantized`, DynamicQuantizeLSTM (W and R from it, transposed and 8-bit).
void recurrent(KernelContext& ctx, Cell cell, bool quantized = false) {
  // float16/bfloat16 recurrences (a model converted to float16) compute in float32: the inputs
  // widened here, the outputs narrowed at the end, as onnxruntime's CPU kernels do.
  const DataType io_type = ctx.input(0).dtype();
  const bool narrow = io_type == DataType::kFloat16 || io_type == DataType::kBFloat16;
  std::vector<Tensor> widened(ctx.input_count());
  std::vector<bool> is_widened(ctx.input_count(), false);
  if (narrow)
    for (size_t i = 0; i < ctx.input_count(); ++i)
      if (ctx.has_input(i) && ctx.input(i).dtype() == io_type) {
        widened[i] = widen_to_float(ctx.input(i));
        is_widened[i] = true;
      }
  const auto in = [&](size_t i) -> const Tensor& { return is_widened[i] ? widened[i] : ctx.input(i); };
  const Tensor& x = in(0);
  const Tensor& w = in(1);
  const Tensor& r = in(2);
  if (x.dtype() != DataType::kFloat) ctx.fail(ctx.node().op_type + " supports float tensors, got " + type_name(x.dtype()));
  if (x.rank() != 3 || w.rank() != 3 || r.rank() != 3) ctx.fail("X, W and R must be 3-D");
  const int64_t layout = ctx.opset() >= 14 ? ctx.attr_int("layout", 0) : 0;
  const int64_t seq = layout ? x.dim(1) : x.dim(0), batch = layout ? x.dim(0) : x.dim(1), input = x.dim(2);
  const int64_t gates = cell == Cell::kLstm ? 4 : cell == Cell::kGru ? 3 : 1;
  const int64_t dirs = w.dim(0);
  const int64_t hidden = quantized ? r.dim(1) : r.dim(2);
  const std::string direction = ctx.attr_string("direction", "forward");
  if ((direction == "bidirectional") != (dirs == 2) || (direction != "forward" && direction != "reverse" && direction != "bidirectional"))
    ctx.fail("direction '" + direction + "' does not match W's " + std::to_string(dirs) + " directions");
  const int64_t gh = gates * hidden;
  const bool shapes_ok = quantized ? w.dim(1) == input && w.dim(2) == gh && r.dim(0) == dirs && r.dim(2) == gh
                                   : w.dim(1) == gh && w.dim(2) == input && r.dim(0) == dirs && r.dim(1) == gh;
  if (!shapes_ok)
    ctx.fail("W " + w.describe() + " / R " + r.describe() + " do not match " + std::to_string(gates) + " gates of hidden size " + std::to_string(hidden));
  if (ctx.has_attr("hidden_size") && ctx.attr_int("hidden_size", hidden) != hidden) ctx.fail("hidden_size differs from R's shape");
  auto float_input = [&](size_t i, int64_t elements, const char* what) -> const float* {
    if (!ctx.has_input(i)) return nullptr;
    const Tensor& t = in(i);
    if (t.dtype() != DataType::kFloat) ctx.fail(std::string(what) + " must be float like X, is " + type_name(t.dtype()));
    if (t.size() != elements) ctx.fail(std::string(what) + " must have " + std::to_string(elements) + " elements, has " + std::to_string(t.size()));
    return t.data<float>();
  };
  if (!quantized && (w.dtype() != DataType::kFloat || r.dtype() != DataType::kFloat)) ctx.fail("W and R must be float like X");
  QuantizedWeights qw;
  if (quantized) {
    qw.w = quantized_operand(ctx, 1, 8, 9, dirs, gh, "W");
    qw.r = quantized_operand(ctx, 2, 10, 11, dirs, gh, "R");
  }
  const float* pb = float_input(3, dirs * 2 * gh, "B");
  std::vector<int64_t> lens(static_cast<size_t>(batch), seq);
  if (ctx.has_input(4)) {
    const Tensor& sl = ctx.input(4);
    if (sl.size() != batch) ctx.fail("sequence_lens must have " + std::to_string(batch) + " values");
    if (sl.dtype() != DataType::kInt32 && sl.dtype() != DataType::kInt64) ctx.fail("sequence_lens must be int32 or int64");
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t v = sl.dtype() == DataType::kInt32 ? sl.data<int32_t>()[b] : sl.data<int64_t>()[b];
      if (v < 0 || v > seq) ctx.fail("sequence_lens value " + std::to_string(v) + " is outside [0, " + std::to_string(seq) + "]");
      lens[static_cast<size_t>(b)] = v;
    }
  }
  const float* h0 = float_input(5, dirs * batch * hidden, "initial_h");
  const float* c0 = cell == Cell::kLstm ? float_input(6, dirs * batch * hidden, "initial_c") : nullptr;
  const float* peep = cell == Cell::kLstm ? float_input(7, dirs * 3 * hidden, "P") : nullptr;
  const auto acts = activations(ctx, cell, dirs);
  const size_t per_dir = cell == Cell::kLstm ? 3 : cell == Cell::kGru ? 2 : 1;
  const float clip = ctx.has_attr("clip") ? ctx.attr_float("clip", 0) : 0;
  const bool input_forget = cell == Cell::kLstm && ctx.attr_int("input_forget", 0) != 0;
  const bool lbr = cell == Cell::kGru && ctx.attr_int("linear_before_reset", 0) != 0;

  // Outputs: Y [seq, dirs, batch, hidden] (layout 1: [batch, seq, dirs, hidden]); Y_h, Y_c
  // [dirs, batch, hidden] (layout 1: [batch, dirs, hidden]).
  Tensor* y = ctx.output_count() > 0 && ctx.has_output(0)
                  ? &ctx.output(0, DataType::kFloat, layout ? std::vector<int64_t>{batch, seq, dirs, hidden} : std::vector<int64_t>{seq, dirs, batch, hidden})
                  : nullptr;
  const std::vector<int64_t> state_shape = layout ? std::vector<int64_t>{batch, dirs, hidden} : std::vector<int64_t>{dirs, batch, hidden};
  Tensor* yh = ctx.output_count() > 1 && ctx.has_output(1) ? &ctx.output(1, DataType::kFloat, state_shape) : nullptr;
  Tensor* yc = cell == Cell::kLstm && ctx.output_count() > 2 && ctx.has_output(2) ? &ctx.output(2, DataType::kFloat, state_shape) : nullptr;
  if (y) std::fill(y->mutable_data<float>(), y->mutable_data<float>() + y->size(), 0.0f);
  auto x_at = [&](int64_t t, int64_t b) { return x.data<float>() + (layout ? (b * seq + t) : (t * batch + b)) * input; };
  auto state_index = [&](int64_t d, int64_t b) { return layout ? (b * dirs + d) * hidden : (d * batch + b) * hidden; };
  auto y_at = [&](int64_t t, int64_t d, int64_t b) { return y->mutable_data<float>() + (layout ? ((b * seq + t) * dirs + d) : ((t * dirs + d) * batch + b)) * hidden; };

  std::vector<float> xs(static_cast<size_t>(seq * batch * input));
  for (int64_t t = 0; t < seq; ++t)
    for (int64_t b = 0; b < batch; ++b) std::copy(x_at(t, b), x_at(t, b) + input, xs.data() + (t * batch + b) * input);
  // Each step's product H R^T by blocks of kRecurrentRows rows of R, each its own product (so
  // that the bytes never depend on which thread computes a block). The two directions of a
  // bidirectional layer are independent: one thread each; but where there are threads for
  // every direction and R is larger than a core's second-level cache, the directions run one
  // after the other with each step's blocks shared among the threads, each thread taking the
  // same blocks at every step. The blocks go in ascending order at even steps and descending at
  // odd ones: the rows a step read last are still in cache when the next step starts with them
  // (R larger than the cache, read in the same order every time, evicted each row just before
  // its next use). ddddocr's LSTM (4 MB of R per direction): 23.8 -> 18.0 ms at 1 thread, 12.7 ->
  // 8.7 ms at 2.
  constexpr int64_t kRecurrentRows = 64;
  const int64_t row_blocks = (gh + kRecurrentRows - 1) / kRecurrentRows;
  const int threads = current_threads();
  const bool share_steps = threads >= dirs && threads > 1 && row_blocks >= threads && gh * hidden * 4 >= (int64_t{1} << 20);
  // A few sequences and R within a core's second-level cache: the product from R transposed,
  // made once per direction (few_rows_product). A larger R is read once per step either way,
  // and the blocks above keep it in cache better (ddddocr's 4 MB: 23 ms as blocks, 30 ms
  // transposed).
  // Transposing R costs about one step's product: not worth it for a few steps (Silero runs
  // one step per call: 0.13 -> 0.31 ms with it).
  const bool few = !quantized && batch <= 16 && seq >= 8 && gh * hidden * 4 < (int64_t{1} << 20);
  const auto recurrence = [&](const float* hv, const float* rd, const float* rt, float* out, bool descending) {
    const auto blocks = [&](int64_t b0, int64_t b1) {
      for (int64_t i = b0; i < b1; ++i) {
        const int64_t r0 = (descending ? b1 - 1 - (i - b0) : i) * kRecurrentRows, rows = std::min(kRecurrentRows, gh - r0);
        if (few) few_rows_product(batch, rows, hidden, hv, rt + r0, gh, out + r0, gh);
        else gemm_f32(batch, rows, hidden, hv, hidden, false, rd + r0 * hidden, hidden, true, out + r0, gh, false);
      }
    };
    if (!share_steps) {
      blocks(0, row_blocks);
      return;
    }
    // One range per thread, the same at every step (a static schedule).
    const int64_t per = (row_blocks + threads - 1) / threads;
    parallel_ranges(threads, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) blocks(std::min(row_blocks, t * per), std::min(row_blocks, (t + 1) * per));
    });
  };
  parallel_ranges(share_steps ? 1 : dirs, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t d = share_steps ? 0 : p0; d < (share_steps ? dirs : p1); ++d) {
      std::vector<float> xw(static_cast<size_t>(seq * batch * gh)), hr(static_cast<size_t>(batch * gh));
      const bool reverse = direction == "reverse" || d == 1;
      const float* wd = quantized ? nullptr : w.data<float>() + d * gh * input;
      const float* rd = quantized ? nullptr : r.data<float>() + d * gh * hidden;
      std::vector<float> rt(few ? static_cast<size_t>(gh * hidden) : 0);
      if (few)
        for (int64_t row = 0; row < gh; ++row)
          for (int64_t i = 0; i < hidden; ++i) rt[static_cast<size_t>(i * gh + row)] = rd[row * hidden + i];
      const float* wb = pb ? pb + d * 2 * gh : nullptr;
      const float* rb = pb ? wb + gh : nullptr;
      const Activation* a = &acts[static_cast<size_t>(d) * per_dir];
      // X W^T for all steps at once: [seq*batch, gh] (quantized: X W, W stored transposed).
      const auto quantized_by = [&](const QuantizedWeights::Operand& op, int64_t rows, int64_t m, const float* a, float* out) {
        const auto* base = static_cast<const uint8_t*>(op.t->raw()) + d * rows * gh;
        quantized_product(m, gh, rows, a, Int8Matrix{base, op.t->dtype() == DataType::kInt8, gh}, op.zeros[static_cast<size_t>(d)],
                          op.scales.data() + d * op.scales_per_dir, op.scales_per_dir > 1, out, false);
      };
      // Quantized, the range of X is that of the steps up to the longest sequence, as onnxruntime
      // quantizes them.
      const int64_t longest = lens.empty() ? 0 : *std::max_element(lens.begin(), lens.end());
      if (quantized) quantized_by(qw.w, input, longest * batch, xs.data(), xw.data());
      else gemm_f32(seq * batch, gh, input, xs.data(), input, false, wd, input, true, xw.data(), gh, false);
      std::vector<float> h(static_cast<size_t>(batch * hidden), 0.0f), c(static_cast<size_t>(batch * hidden), 0.0f);
      for (int64_t b = 0; b < batch; ++b) {
        if (h0) std::copy(h0 + state_index(d, b), h0 + state_index(d, b) + hidden, h.data() + b * hidden);
        if (c0) std::copy(c0 + state_index(d, b), c0 + state_index(d, b) + hidden, c.data() + b * hidden);
      }
      std::vector<float> hprev, hq;
      // Gates of one batch row: LSTM's i, o, f, c~ and a copy of the new cell state; GRU's z, r,
      // h~ and (r * H_prev) with its product by R_h.
      std::vector<float> gates(cell == Cell::kRnn ? 0 : static_cast<size_t>(5 * hidden));
      for (int64_t step = 0; step < seq; ++step) {
        // H R^T: [batch, gh] (quantized: H R).
        if (quantized) {
          // onnxruntime multiplies the previous step's outputs, zeros for a sequence that ended
          // before it: they count in H's quantization range.
          hq = h;
          for (int64_t b = 0; b < batch; ++b)
            if (step > lens[static_cast<size_t>(b)]) std::fill_n(hq.data() + b * hidden, hidden, 0.0f);
          quantized_by(qw.r, hidden, batch, hq.data(), hr.data());
        } else {
          recurrence(h.data(), rd, rt.data(), hr.data(), step % 2 == 1);
        }
        hprev = h;
        for (int64_t b = 0; b < batch; ++b) {
          const int64_t len = lens[static_cast<size_t>(b)];
          if (step >= len) continue;  // past this sequence's end: the state stays
          const int64_t t = reverse ? len - 1 - step : step;
          const float* g = xw.data() + (t * batch + b) * gh;
          const float* q = hr.data() + b * gh;
          float* hb = h.data() + b * hidden;
          float* cb = c.data() + b * hidden;
          const float* hp = hprev.data() + b * hidden;
          auto pre = [&](int64_t gate, int64_t j, bool with_r) {
            float v = g[gate * hidden + j] + (with_r ? q[gate * hidden + j] : 0.0f);
            if (wb) v += wb[gate * hidden + j] + (with_r ? rb[gate * hidden + j] : 0.0f);
            return v;
          };
          auto clipped = [&](float v) { return clip > 0 ? std::min(clip, std::max(-clip, v)) : v; };
          if (cell == Cell::kLstm) {
            // Gate by gate over the row, so that the activations run vectorized.
            float* gi = gates.data();
            float* go = gi + hidden;
            float* gf = go + hidden;
            float* gc = gf + hidden;
            float* cs = gc + hidden;
            const float* pd = peep ? peep + d * 3 * hidden : nullptr;
            for (int64_t j = 0; j < hidden; ++j) {
              gi[j] = pre(0, j, true) + (pd ? pd[j] * cb[j] : 0.0f);
              go[j] = pre(1, j, true);
              gf[j] = pre(2, j, true) + (pd ? pd[2 * hidden + j] * cb[j] : 0.0f);
              gc[j] = clipped(pre(3, j, true));
              gi[j] = clipped(gi[j]);
              gf[j] = clipped(gf[j]);
            }
            a[0].apply(gi, hidden);
            if (input_forget) {
              for (int64_t j = 0; j < hidden; ++j) gf[j] = 1 - gi[j];
            } else {
              a[0].apply(gf, hidden);
            }
            a[1].apply(gc, hidden);
            for (int64_t j = 0; j < hidden; ++j) {
              cb[j] = gf[j] * cb[j] + gi[j] * gc[j];
              go[j] = clipped(go[j] + (pd ? pd[hidden + j] * cb[j] : 0.0f));
              cs[j] = cb[j];
            }
            a[0].apply(go, hidden);
            a[2].apply(cs, hidden);
            for (int64_t j = 0; j < hidden; ++j) hb[j] = go[j] * cs[j];
            if (y) std::copy(hb, hb + hidden, y_at(t, d, b));
            continue;
          }
          if (cell == Cell::kGru) {
            // Gate by gate over the row, so that the activations run vectorized; the reset
            // product (r * H_prev) R_h^T of linear_before_reset 0 as one matrix-vector product.
            float* gz = gates.data();
            float* gr = gz + hidden;
            float* gn = gr + hidden;
            float* rh = gn + hidden;
            float* rp = rh + hidden;
            for (int64_t j = 0; j < hidden; ++j) {
              gz[j] = clipped(pre(0, j, true));
              gr[j] = clipped(pre(1, j, true));
            }
            a[0].apply(gz, hidden);
            a[0].apply(gr, hidden);
            if (lbr) {
              for (int64_t j = 0; j < hidden; ++j) {
                const float rpart = q[2 * hidden + j] + (rb ? rb[2 * hidden + j] : 0.0f);
                gn[j] = clipped(g[2 * hidden + j] + (wb ? wb[2 * hidden + j] : 0.0f) + gr[j] * rpart);
              }
            } else {
              for (int64_t j = 0; j < hidden; ++j) rh[j] = gr[j] * hp[j];
              gemm_f32(1, hidden, hidden, rh, hidden, false, rd + 2 * hidden * hidden, hidden, true, rp, hidden, false);
              for (int64_t j = 0; j < hidden; ++j) {
                float v = g[2 * hidden + j] + rp[j];
                if (wb) v += wb[2 * hidden + j] + rb[2 * hidden + j];
                gn[j] = clipped(v);
              }
            }
            a[1].apply(gn, hidden);
            for (int64_t j = 0; j < hidden; ++j) hb[j] = (1 - gz[j]) * gn[j] + gz[j] * hp[j];
            if (y) std::copy(hb, hb + hidden, y_at(t, d, b));
            continue;
          }
          // RNN: one gate.
          for (int64_t j = 0; j < hidden; ++j) hb[j] = clipped(pre(0, j, true));
          a[0].apply(hb, hidden);
          if (y) std::copy(hb, hb + hidden, y_at(t, d, b));
        }
      }
      for (int64_t b = 0; b < batch; ++b) {
        if (yh) std::copy(h.data() + b * hidden, h.data() + (b + 1) * hidden, yh->mutable_data<float>() + state_index(d, b));
        if (yc) std::copy(c.data() + b * hidden, c.data() + (b + 1) * hidden, yc->mutable_data<float>() + state_index(d, b));
      }
    }
  });
  if (narrow) {
    Tensor* results[3] = {y, yh, yc};
    for (size_t i = 0; i < 3; ++i)
      if (results[i]) ctx.set_output(i, narrow_from_float(*results[i], io_type));
  }
}

void rnn(KernelContext& ctx) { recurrent(ctx, Cell::kRnn); }
void gru(KernelContext& ctx) { recurrent(ctx, Cell::kGru); }
void lstm(KernelContext& ctx) { recurrent(ctx, Cell::kLstm); }
void dynamic_quantize_lstm(KernelContext& ctx) { recurrent(ctx, Cell::kLstm, true); }

}  // namespace

void register_rnn_kernels(KernelRegistry& r) {
  r.add("RNN", rnn);
  r.add("GRU", gru);
  r.add("LSTM", lstm);
  r.add(ir::kMicrosoftDomain, "DynamicQuantizeLSTM", 1, kMaxOpset, dynamic_quantize_lstm);
}

}  // namespace onnxtool::runner::cpu
