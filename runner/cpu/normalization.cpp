// CPU kernels: BatchNormalization, InstanceNormalization, LayerNormalization,
// GroupNormalization, RMSNormalization, LpNormalization, LRN, MeanVarianceNormalization.
// Statistics are accumulated in double in a fixed order per row, so results do not depend on
// the thread count.
#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "runner/cpu/elementwise_util.h"
#include "runner/cpu/epilogue.h"
#include "runner/cpu/kernels.h"

namespace onnxtool::runner::cpu {

namespace {

void check_float(const KernelContext& ctx, const Tensor& t, const char* what) {
  const DataType d = t.dtype();
  if (d != DataType::kFloat && d != DataType::kDouble && d != DataType::kFloat16 && d != DataType::kBFloat16)
    ctx.fail(std::string(what) + " must be a float tensor, is " + type_name(d));
}

/// A per-channel parameter of length C (fails naming it otherwise).
const Tensor& per_channel(const KernelContext& ctx, size_t input, int64_t c, const char* what) {
  const Tensor& t = ctx.input(input);
  if (t.size() != c) ctx.fail(std::string(what) + " has " + std::to_string(t.size()) + " elements for " + std::to_string(c) + " channels");
  return t;
}

}  // namespace

void batch_norm_factors(const Tensor& scale, const Tensor& bias, const std::vector<double>& mean,
                        const std::vector<double>& var, double eps, std::vector<float>& a, std::vector<float>& b) {
  const size_t c = mean.size();
  a.assign(c, 0.0f);
  b.assign(c, 0.0f);
  for (size_t ch = 0; ch < c; ++ch) {
    const double s = element_as_double(scale, static_cast<int64_t>(ch)) / std::sqrt(var[ch] + eps);
    a[ch] = static_cast<float>(s);
    b[ch] = static_cast<float>(element_as_double(bias, static_cast<int64_t>(ch)) - mean[ch] * s);
  }
}

namespace {

void batch_norm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  check_float(ctx, x, "X");
  if (x.rank() < 1) ctx.fail("X must have rank >= 1");
  const int64_t n = x.dim(0), c = x.rank() > 1 ? x.dim(1) : 1;
  const int64_t inner = x.rank() > 2 ? dims_product(x.shape(), 2, x.rank()) : 1;
  const Tensor& scale = per_channel(ctx, 1, c, "scale");
  const Tensor& bias = per_channel(ctx, 2, c, "B");
  const Tensor& mean = per_channel(ctx, 3, c, "input_mean");
  const Tensor& var = per_channel(ctx, 4, c, "input_var");
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  // Training mode: opset >= 14 training_mode=1; opsets 6-13 when the extra outputs are wanted
  // and is_test (opset < 7) is 0.
  const bool training = ctx.opset() >= 14 ? ctx.attr_int("training_mode", 0) != 0 : (ctx.output_count() > 1 && ctx.has_output(1) && ctx.attr_int("is_test", 0) == 0);
  std::vector<double> mu(static_cast<size_t>(c)), sigma2(static_cast<size_t>(c));
  if (training) {
    const double count = static_cast<double>(n * inner);
    for (int64_t ch = 0; ch < c; ++ch) {
      double s = 0, s2 = 0;
      for (int64_t b = 0; b < n; ++b)
        for (int64_t i = 0; i < inner; ++i) s += element_as_double(x, (b * c + ch) * inner + i);
      const double m = s / count;
      for (int64_t b = 0; b < n; ++b)
        for (int64_t i = 0; i < inner; ++i) {
          const double d = element_as_double(x, (b * c + ch) * inner + i) - m;
          s2 += d * d;
        }
      mu[static_cast<size_t>(ch)] = m;
      sigma2[static_cast<size_t>(ch)] = s2 / count;
    }
    const double momentum = ctx.attr_float("momentum", 0.9f);
    if (ctx.output_count() > 1 && ctx.has_output(1)) {
      Tensor& rm = ctx.output(1, mean.dtype(), {c});
      for (int64_t ch = 0; ch < c; ++ch) set_element_from_double(rm, ch, element_as_double(mean, ch) * momentum + mu[static_cast<size_t>(ch)] * (1 - momentum));
    }
    if (ctx.output_count() > 2 && ctx.has_output(2)) {
      Tensor& rv = ctx.output(2, var.dtype(), {c});
      for (int64_t ch = 0; ch < c; ++ch) set_element_from_double(rv, ch, element_as_double(var, ch) * momentum + sigma2[static_cast<size_t>(ch)] * (1 - momentum));
    }
  } else {
    for (int64_t ch = 0; ch < c; ++ch) {
      mu[static_cast<size_t>(ch)] = element_as_double(mean, ch);
      sigma2[static_cast<size_t>(ch)] = element_as_double(var, ch);
    }
  }
  Tensor& y = ctx.output(0, x.dtype(), x.shape());
  std::vector<float> a, b;
  batch_norm_factors(scale, bias, mu, sigma2, eps, a, b);
  if (x.dtype() == DataType::kFloat) {
    const float* px = x.data<float>();
    float* py = y.mutable_data<float>();
    parallel_ranges(n * c, std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const float s = a[static_cast<size_t>(p % c)], t = b[static_cast<size_t>(p % c)];
        for (int64_t i = 0; i < inner; ++i) py[p * inner + i] = px[p * inner + i] * s + t;
      }
    });
  } else {
    for (int64_t p = 0; p < n * c; ++p) {
      const double s = element_as_double(scale, p % c) / std::sqrt(sigma2[static_cast<size_t>(p % c)] + eps);
      const double t = element_as_double(bias, p % c) - mu[static_cast<size_t>(p % c)] * s;
      for (int64_t i = 0; i < inner; ++i) set_element_from_double(y, p * inner + i, element_as_double(x, p * inner + i) * s + t);
    }
  }
}

/// Normalizes rows of `len` elements: y = (x - mean) / sqrt(var + eps) * scale[k] + bias[k],
/// where k = the element's index within the row, divided by `param_stride` (1: per element).
/// Optional per-row mean and inverse std outputs.
void normalize_rows(const KernelContext& ctx, const Tensor& x, Tensor& y, int64_t rows, int64_t len, double eps,
                    const std::function<double(int64_t row, int64_t k)>& scale, const std::function<double(int64_t row, int64_t k)>& bias,
                    Tensor* mean_out, Tensor* inv_std_out, bool subtract_mean = true) {
  parallel_ranges(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(len, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      double s = 0;
      if (subtract_mean)
        for (int64_t k = 0; k < len; ++k) s += element_as_double(x, r * len + k);
      const double m = len && subtract_mean ? s / static_cast<double>(len) : 0;
      double v = 0;
      for (int64_t k = 0; k < len; ++k) {
        const double d = element_as_double(x, r * len + k) - m;
        v += d * d;
      }
      const double inv = 1 / std::sqrt((len ? v / static_cast<double>(len) : 0) + eps);
      for (int64_t k = 0; k < len; ++k) set_element_from_double(y, r * len + k, (element_as_double(x, r * len + k) - m) * inv * scale(r, k) + bias(r, k));
      if (mean_out) set_element_from_double(*mean_out, r, m);
      if (inv_std_out) set_element_from_double(*inv_std_out, r, inv);
    }
  });
  (void)ctx;
}

/// The shape of a normalization's per-row statistics: X's with the dims from `axis` on set to 1.
std::vector<int64_t> stats_shape(const Tensor& x, int64_t axis) {
  std::vector<int64_t> shape = x.shape();
  for (size_t i = static_cast<size_t>(axis); i < shape.size(); ++i) shape[i] = 1;
  return shape;
}

/// A float32 row's mean and 1 / sqrt(variance + eps), with normalize_rows' double arithmetic
/// expression for expression (so the float32 paths give its bits).
std::pair<double, double> row_stats_f32(const float* row, int64_t len, double eps) {
  double s = 0;
  for (int64_t k = 0; k < len; ++k) s += row[k];
  const double m = len ? s / static_cast<double>(len) : 0;
  double v = 0;
  for (int64_t k = 0; k < len; ++k) {
    const double d = row[k] - m;
    v += d * d;
  }
  return {m, 1 / std::sqrt((len ? v / static_cast<double>(len) : 0) + eps)};
}

void instance_norm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  check_float(ctx, x, "input");
  if (x.rank() < 3) ctx.fail("input must be [N, C, D...], got " + x.describe());
  const int64_t c = x.dim(1), len = dims_product(x.shape(), 2, x.rank());
  const Tensor& scale = per_channel(ctx, 1, c, "scale");
  const Tensor& bias = per_channel(ctx, 2, c, "B");
  Tensor& y = ctx.output(0, x.dtype(), x.shape());
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  if (x.dtype() == DataType::kFloat) {
    // float32: normalize_rows' arithmetic (double sums, the same expression per element, so the
    // same bits) on the raw arrays, without its per-element type dispatch.
    const float* px = x.data<float>();
    float* py = y.mutable_data<float>();
    parallel_ranges(x.dim(0) * c, std::max<int64_t>(1, 4096 / std::max<int64_t>(len, 1)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* row = px + r * len;
        const auto [m, inv] = row_stats_f32(row, len, eps);
        const double sc = element_as_double(scale, r % c), b = element_as_double(bias, r % c);
        for (int64_t k = 0; k < len; ++k) py[r * len + k] = static_cast<float>((row[k] - m) * inv * sc + b);
      }
    });
    return;
  }
  normalize_rows(ctx, x, y, x.dim(0) * c, len, eps, [&](int64_t r, int64_t) { return element_as_double(scale, r % c); },
                 [&](int64_t r, int64_t) { return element_as_double(bias, r % c); }, nullptr, nullptr);
}

/// Index of element k of the normalized block into a parameter broadcast to the block's shape.
struct Broadcast {
  std::vector<int64_t> block;  // the normalized dims
  const Tensor* t = nullptr;
  std::vector<int64_t> strides;  // of t's dims, right-aligned to block (0 where broadcast)
  void init(const KernelContext& ctx, const Tensor& param, const std::vector<int64_t>& dims, const char* what) {
    t = &param;
    block = dims;
    const auto& s = param.shape();
    if (s.size() > dims.size()) ctx.fail(std::string(what) + " " + param.describe() + " has more dims than the normalized block");
    strides.assign(dims.size(), 0);
    int64_t stride = 1;
    for (size_t i = s.size(); i-- > 0;) {
      const size_t d = dims.size() - s.size() + i;
      if (s[i] != 1 && s[i] != dims[d]) ctx.fail(std::string(what) + " " + param.describe() + " does not broadcast to the normalized shape " + shape_string(dims));
      strides[d] = s[i] == 1 ? 0 : stride;
      stride *= s[i];
    }
  }
  double at(int64_t k) const {
    int64_t off = 0;
    for (size_t d = block.size(); d-- > 0;) {
      off += (k % block[d]) * strides[d];
      k /= block[d];
    }
    return element_as_double(*t, off);
  }
};

void layer_norm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  check_float(ctx, x, "X");
  const int64_t rank = static_cast<int64_t>(x.rank());
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", -1), rank);
  const int64_t rows = dims_product(x.shape(), 0, static_cast<size_t>(axis)), len = dims_product(x.shape(), static_cast<size_t>(axis), x.rank());
  const std::vector<int64_t> block(x.shape().begin() + axis, x.shape().end());
  Broadcast scale, bias;
  scale.init(ctx, ctx.input(1), block, "Scale");
  const bool has_bias = ctx.has_input(2);
  if (has_bias) bias.init(ctx, ctx.input(2), block, "B");
  Tensor& y = ctx.output(0, x.dtype(), x.shape());
  const std::vector<int64_t> stat_shape = stats_shape(x, axis);
  const auto stash = static_cast<DataType>(ctx.attr_int("stash_type", 1));
  Tensor* mean = ctx.output_count() > 1 && ctx.has_output(1) ? &ctx.output(1, stash, stat_shape) : nullptr;
  Tensor* inv = ctx.output_count() > 2 && ctx.has_output(2) ? &ctx.output(2, stash, stat_shape) : nullptr;
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  if (x.dtype() == DataType::kFloat && !mean && !inv && len <= (int64_t{1} << 24)) {
    // float32: normalize_rows' arithmetic (double sums, the same expression per element, so the
    // same bits) on the raw arrays, Scale and B expanded to the row once.
    std::vector<double> sc(static_cast<size_t>(len)), b(static_cast<size_t>(len), 0.0);
    for (int64_t k = 0; k < len; ++k) {
      sc[static_cast<size_t>(k)] = scale.at(k);
      if (has_bias) b[static_cast<size_t>(k)] = bias.at(k);
    }
    const float* px = x.data<float>();
    float* py = y.mutable_data<float>();
    parallel_ranges(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(len, 1)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* row = px + r * len;
        const auto [m, inv_std] = row_stats_f32(row, len, eps);
        float* out = py + r * len;
        for (int64_t k = 0; k < len; ++k)
          out[k] = static_cast<float>((row[k] - m) * inv_std * sc[static_cast<size_t>(k)] + b[static_cast<size_t>(k)]);
      }
    });
    return;
  }
  normalize_rows(ctx, x, y, rows, len, eps, [&](int64_t, int64_t k) { return scale.at(k); },
                 [&](int64_t, int64_t k) { return has_bias ? bias.at(k) : 0.0; }, mean, inv);
}

void rms_norm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  check_float(ctx, x, "X");
  const int64_t rank = static_cast<int64_t>(x.rank());
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", -1), rank);
  const int64_t rows = dims_product(x.shape(), 0, static_cast<size_t>(axis)), len = dims_product(x.shape(), static_cast<size_t>(axis), x.rank());
  const std::vector<int64_t> block(x.shape().begin() + axis, x.shape().end());
  Broadcast scale;
  scale.init(ctx, ctx.input(1), block, "scale");
  Tensor& y = ctx.output(0, ctx.input(1).dtype(), x.shape());
  Tensor* inv = nullptr;  // onnxruntime's SimplifiedLayerNormalization: the optional inverse RMS
  if (ctx.output_count() > 1 && ctx.has_output(1))
    inv = &ctx.output(1, static_cast<DataType>(ctx.attr_int("stash_type", 1)), stats_shape(x, axis));
  normalize_rows(ctx, x, y, rows, len, ctx.attr_float("epsilon", 1e-5f), [&](int64_t, int64_t k) { return scale.at(k); },
                 [](int64_t, int64_t) { return 0.0; }, nullptr, inv, false);
}

/// onnxruntime's LayerNormalization of the ai.onnx domain below opset 17: ONNX's, except that Y
/// takes Scale's type; X and Scale of different types are refused.
void onnxruntime_layer_norm(KernelContext& ctx) {
  if (ctx.input(0).dtype() != ctx.input(1).dtype())
    ctx.fail("X (" + ctx.input(0).describe() + ") and Scale (" + ctx.input(1).describe() +
             ") of different types are not supported");
  layer_norm(ctx);
}

void group_norm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  check_float(ctx, x, "X");
  if (x.rank() < 3) ctx.fail("X must be [N, C, D...], got " + x.describe());
  const int64_t groups = ctx.attr_int("num_groups", 0);
  const int64_t c = x.dim(1);
  if (groups < 1 || c % groups != 0) ctx.fail("num_groups " + std::to_string(groups) + " must divide the " + std::to_string(c) + " channels");
  const int64_t spatial = dims_product(x.shape(), 2, x.rank()), per_group = c / groups;
  // Opset 18: scale and bias per group; opset 21: per channel.
  const int64_t params = ctx.opset() >= 21 ? c : groups;
  const Tensor& scale = per_channel(ctx, 1, params, "scale");
  const Tensor& bias = per_channel(ctx, 2, params, "bias");
  Tensor& y = ctx.output(0, x.dtype(), x.shape());
  const int64_t len = per_group * spatial;
  auto param = [&](const Tensor& t, int64_t r, int64_t k) {
    const int64_t g = r % groups;
    return params == groups ? element_as_double(t, g) : element_as_double(t, g * per_group + k / spatial);
  };
  normalize_rows(ctx, x, y, x.dim(0) * groups, len, ctx.attr_float("epsilon", 1e-5f),
                 [&](int64_t r, int64_t k) { return param(scale, r, k); }, [&](int64_t r, int64_t k) { return param(bias, r, k); }, nullptr,
                 nullptr);
}

void lp_norm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  check_float(ctx, x, "input");
  const int64_t rank = static_cast<int64_t>(x.rank());
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", -1), rank);
  const int64_t p = ctx.attr_int("p", 2);
  if (p != 1 && p != 2) ctx.fail("p must be 1 or 2");
  const int64_t outer = dims_product(x.shape(), 0, static_cast<size_t>(axis)), len = x.dim(static_cast<size_t>(axis)),
                inner = dims_product(x.shape(), static_cast<size_t>(axis) + 1, x.rank());
  Tensor& y = ctx.output(0, x.dtype(), x.shape());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double norm = 0;
      for (int64_t k = 0; k < len; ++k) {
        const double v = element_as_double(x, (o * len + k) * inner + i);
        norm += p == 1 ? std::fabs(v) : v * v;
      }
      if (p == 2) norm = std::sqrt(norm);
      for (int64_t k = 0; k < len; ++k) {
        const int64_t at = (o * len + k) * inner + i;
        set_element_from_double(y, at, norm == 0 ? 0 : element_as_double(x, at) / norm);
      }
    }
}

void lrn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  check_float(ctx, x, "X");
  if (x.rank() < 3) ctx.fail("X must be [N, C, D...], got " + x.describe());
  const int64_t size = ctx.attr_int("size", 0);
  if (size < 1) ctx.fail("size must be positive");
  const double alpha = ctx.attr_float("alpha", 1e-4f), beta = ctx.attr_float("beta", 0.75f), bias = ctx.attr_float("bias", 1.0f);
  const int64_t n = x.dim(0), c = x.dim(1), inner = dims_product(x.shape(), 2, x.rank());
  Tensor& y = ctx.output(0, x.dtype(), x.shape());
  const int64_t lo_off = (size - 1) / 2, hi_off = size - 1 - lo_off;
  parallel_ranges(n * c, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t b = p / c, ch = p % c;
      const int64_t lo = std::max<int64_t>(0, ch - lo_off), hi = std::min(c - 1, ch + hi_off);
      for (int64_t i = 0; i < inner; ++i) {
        double s = 0;
        for (int64_t k = lo; k <= hi; ++k) {
          const double v = element_as_double(x, (b * c + k) * inner + i);
          s += v * v;
        }
        const int64_t at = p * inner + i;
        set_element_from_double(y, at, element_as_double(x, at) / std::pow(bias + alpha / static_cast<double>(size) * s, beta));
      }
    }
  });
}

void mvn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  check_float(ctx, x, "X");
  const int64_t rank = static_cast<int64_t>(x.rank());
  std::vector<int64_t> axes = ctx.attr_ints("axes", {0, 2, 3});
  std::vector<bool> reduce(static_cast<size_t>(rank), false);
  for (int64_t a : axes) reduce[static_cast<size_t>(normalize_axis(ctx, a, rank))] = true;
  Tensor& y = ctx.output(0, x.dtype(), x.shape());
  // Group elements by their coordinates on the kept axes.
  const auto& shape = x.shape();
  std::vector<int64_t> key(static_cast<size_t>(x.size()));
  int64_t groups = 1;
  std::vector<int64_t> kept_stride(static_cast<size_t>(rank), 0);
  for (int64_t d = rank; d-- > 0;)
    if (!reduce[static_cast<size_t>(d)]) {
      kept_stride[static_cast<size_t>(d)] = groups;
      groups *= shape[static_cast<size_t>(d)];
    }
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t rem = i, k = 0;
    for (int64_t d = rank; d-- > 0;) {
      k += (rem % shape[static_cast<size_t>(d)]) * kept_stride[static_cast<size_t>(d)];
      rem /= shape[static_cast<size_t>(d)];
    }
    key[static_cast<size_t>(i)] = k;
  }
  std::vector<double> sum(static_cast<size_t>(groups), 0), sq(static_cast<size_t>(groups), 0);
  std::vector<int64_t> count(static_cast<size_t>(groups), 0);
  for (int64_t i = 0; i < x.size(); ++i) {
    const double v = element_as_double(x, i);
    sum[static_cast<size_t>(key[static_cast<size_t>(i)])] += v;
    sq[static_cast<size_t>(key[static_cast<size_t>(i)])] += v * v;
    count[static_cast<size_t>(key[static_cast<size_t>(i)])]++;
  }
  for (int64_t i = 0; i < x.size(); ++i) {
    const auto g = static_cast<size_t>(key[static_cast<size_t>(i)]);
    const double m = sum[g] / static_cast<double>(count[g]);
    const double var = sq[g] / static_cast<double>(count[g]) - m * m;
    set_element_from_double(y, i, (element_as_double(x, i) - m) / (std::sqrt(std::max(var, 0.0)) + 1e-9));
  }
}

}  // namespace

void register_normalization_kernels(KernelRegistry& r) {
  r.add("BatchNormalization", batch_norm);
  r.add("InstanceNormalization", instance_norm);
  r.add("LayerNormalization", layer_norm);
  r.add("GroupNormalization", group_norm);
  r.add("RMSNormalization", rms_norm);
  // onnxruntime's own ai.onnx ops (ir/ops/onnxruntime_schemas.def), where ONNX has none.
  r.add(ir::kOnnxruntimeAiOnnx, "LayerNormalization", 1, kMaxOpset, onnxruntime_layer_norm);
  r.add(ir::kOnnxruntimeAiOnnx, "SimplifiedLayerNormalization", 1, kMaxOpset, rms_norm);
  r.add("LpNormalization", lp_norm);
  r.add("LRN", lrn);
  r.add("", "MeanVarianceNormalization", 1, kMaxOpset, mvn);
}

}  // namespace onnxtool::runner::cpu
