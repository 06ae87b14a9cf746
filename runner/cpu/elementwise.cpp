// Elementwise kernels: unary math, activations, Clip, Softmax family, broadcasting binary and
// variadic ops, Where and inference Dropout (Cast and CastLike: cast.cpp).
#include <cctype>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>

#include "runner/cpu/elementwise_util.h"
#include "runner/cpu/kernels.h"
#include "runner/cpu/tensor_util.h"

namespace onnxtool::runner::cpu {
namespace {

// ---------------------------------------------------------------- integer helpers

/// Two's-complement wrapping arithmetic (signed overflow is undefined in C++).
template <class T>
T wrap_add(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
template <class T>
T wrap_sub(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
template <class T>
T wrap_mul(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
template <class T>
T wrap_neg(T a) {
  return static_cast<T>(uint64_t{0} - static_cast<uint64_t>(a));
}

/// Truncating division that wraps for INT_MIN / -1; the divisor must not be 0.
template <class T>
T int_div(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return wrap_neg(a);
  }
  return static_cast<T>(a / b);
}

/// Remainder with the sign of the divisor (Python %, Mod with fmod=0).
template <class T>
T int_mod_floor(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return 0;
    T r = static_cast<T>(a % b);
    if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
    return r;
  } else {
    return static_cast<T>(a % b);
  }
}

/// Remainder with the sign of the dividend (C %, Mod with fmod=1).
template <class T>
T int_mod_trunc(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return 0;
  }
  return static_cast<T>(a % b);
}

/// a^b for integers by squaring (wrapping); negative exponents give 1/a^|b| truncated.
template <class T>
T int_pow(T base, int64_t exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<T>) {
      if (base == -1) return (exp & 1) ? T(-1) : T(1);
    }
    return 0;
  }
  T result = 1;
  T b = base;
  while (exp) {
    if (exp & 1) result = wrap_mul(result, b);
    b = wrap_mul(b, b);
    exp >>= 1;
  }
  return result;
}

// ---------------------------------------------------------------- unary

/// Elements per float32 block of the float16 paths (on the stack; small enough for L1).
constexpr int64_t kHalfBlock = 512;

/// y = op(x) elementwise for the types of Set; op maps calc -> calc (generic lambda).
/// y = f(x) for n float16 values: the float32 function on blocks widened in bulk, each result
/// rounded once (the same values as element by element, faster, and without float32 copies of
/// the tensors).
template <class F>
void map_halves(const uint16_t* px, uint16_t* py, int64_t n, F f) {
  parallel_ranges(n, kElementwiseGrain, [&](int64_t b, int64_t e) {
    const F fn = f;
    float buf[kHalfBlock];
    for (int64_t i = b; i < e; i += kHalfBlock) {
      const int64_t m = std::min(kHalfBlock, e - i);
      halves_to_floats(px + i, buf, m);
      for (int64_t k = 0; k < m; ++k) buf[k] = fn(buf[k]);
      floats_to_halves(buf, py + i, m);
    }
  });
}

template <unsigned Set, class Op>
void unary_same(KernelContext& ctx, Op op) {
  const Tensor& x = ctx.input(0);
  visit_or_fail<Set>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, Half>) {
      Tensor& y = ctx.output(0, x.dtype(), x.shape());
      // (A generic lambda: op is only called for the types of Set, and float16 is among them here.)
      map_halves(x.data<uint16_t>(), y.mutable_data<uint16_t>(), x.size(),
                 [op](float v) { return static_cast<float>(op(static_cast<calc_t<T>>(v))); });
    } else {
      Tensor& y = ctx.output(0, x.dtype(), x.shape());
      map_unary(x.data<T>(), y.mutable_data<T>(), x.size(),
                [op](T v) { return Num<T>::store(static_cast<calc_t<T>>(op(Num<T>::load(v)))); });
    }
  });
}

/// Unary float math, one functor per op (registered as unary_float_kernel<Op>).
template <class Op>
void unary_float_kernel(KernelContext& ctx) {
  unary_same<kFloats>(ctx, Op{});
}

#define ONNXTOOL_FLOAT_FN(Name, expr)          \
  struct Name {                                \
    template <class C>                         \
    C operator()(C v) const {                  \
      return static_cast<C>(expr);             \
    }                                          \
  };
ONNXTOOL_FLOAT_FN(ExpOp, std::exp(v))
ONNXTOOL_FLOAT_FN(LogOp, std::log(v))
ONNXTOOL_FLOAT_FN(SqrtOp, std::sqrt(v))
ONNXTOOL_FLOAT_FN(ReciprocalOp, C(1) / v)
ONNXTOOL_FLOAT_FN(FloorOp, std::floor(v))
ONNXTOOL_FLOAT_FN(CeilOp, std::ceil(v))
ONNXTOOL_FLOAT_FN(RoundOp, std::nearbyint(v))  // ties to even in the default rounding mode
ONNXTOOL_FLOAT_FN(SinOp, std::sin(v))
ONNXTOOL_FLOAT_FN(CosOp, std::cos(v))
ONNXTOOL_FLOAT_FN(TanOp, std::tan(v))
ONNXTOOL_FLOAT_FN(AsinOp, std::asin(v))
ONNXTOOL_FLOAT_FN(AcosOp, std::acos(v))
ONNXTOOL_FLOAT_FN(AtanOp, std::atan(v))
ONNXTOOL_FLOAT_FN(SinhOp, std::sinh(v))
ONNXTOOL_FLOAT_FN(CoshOp, std::cosh(v))
ONNXTOOL_FLOAT_FN(AsinhOp, std::asinh(v))
ONNXTOOL_FLOAT_FN(AcoshOp, std::acosh(v))
ONNXTOOL_FLOAT_FN(AtanhOp, std::atanh(v))
ONNXTOOL_FLOAT_FN(ErfOp, std::erf(v))
ONNXTOOL_FLOAT_FN(TanhOp, std::tanh(v))
ONNXTOOL_FLOAT_FN(SoftsignOp, v / (C(1) + std::fabs(v)))
// Split at 0 so that neither branch overflows.
ONNXTOOL_FLOAT_FN(SigmoidOp, v >= 0 ? C(1) / (C(1) + std::exp(-v)) : std::exp(v) / (C(1) + std::exp(v)))
ONNXTOOL_FLOAT_FN(SoftplusOp, v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v)))
ONNXTOOL_FLOAT_FN(MishOp, v * std::tanh(v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v))))
ONNXTOOL_FLOAT_FN(HardSwishOp, hard_swish_value(v))
#undef ONNXTOOL_FLOAT_FN

// float32 takes the vectorized path (PaddleOCR's detection head and SiLU blocks).
void sigmoid_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DataType::kFloat) return unary_same<kFloats>(ctx, SigmoidOp{});
  Tensor& y = ctx.output(0, x.dtype(), x.shape());
  const float* px = x.data<float>();
  float* py = y.mutable_data<float>();
  parallel_ranges(x.size(), kElementwiseGrain, [&](int64_t b, int64_t e) { sigmoid_f32(px + b, py + b, e - b); });
}

// float32 takes the vectorized path (recurrent cells exported as nodes, GELU approximations,
// PyTorch 1.x classifiers' Tanh layers).
void tanh_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DataType::kFloat) return unary_same<kFloats>(ctx, TanhOp{});
  Tensor& y = ctx.output(0, x.dtype(), x.shape());
  const float* px = x.data<float>();
  float* py = y.mutable_data<float>();
  parallel_ranges(x.size(), kElementwiseGrain, [&](int64_t b, int64_t e) { tanh_f32(px + b, py + b, e - b); });
}

void abs_kernel(KernelContext& ctx) {
  unary_same<kNumeric>(ctx, [](auto v) {
    using C = decltype(v);
    if constexpr (std::is_floating_point_v<C>) return std::fabs(v);
    else if constexpr (std::is_signed_v<C>) return v < 0 ? wrap_neg(v) : v;
    else return v;
  });
}

void neg_kernel(KernelContext& ctx) {
  unary_same<kFloats | kSignedInts>(ctx, [](auto v) {
    if constexpr (std::is_floating_point_v<decltype(v)>) return -v;
    else return wrap_neg(v);
  });
}

void sign_kernel(KernelContext& ctx) {
  unary_same<kNumeric>(ctx, [](auto v) {
    using C = decltype(v);
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(v)) return v;
    }
    return static_cast<C>(v > 0 ? 1 : (v < 0 ? -1 : 0));
  });
}

void relu_kernel(KernelContext& ctx) {
  unary_same<kFloats | kSignedInts>(ctx, [](auto v) { return relu_value(v); });
}

void not_kernel(KernelContext& ctx) {
  unary_same<kBools>(ctx, [](bool v) { return !v; });
}

void bitwise_not_kernel(KernelContext& ctx) {
  unary_same<kInts>(ctx, [](auto v) { return static_cast<decltype(v)>(~v); });
}

/// y = pred(x) as bool for float types.
template <class Pred>
void float_predicate(KernelContext& ctx, Pred pred) {
  const Tensor& x = ctx.input(0);
  visit_or_fail<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor& y = ctx.output(0, DataType::kBool, x.shape());
    map_unary(x.data<T>(), y.mutable_data<uint8_t>(), x.size(),
              [&](T v) { return static_cast<uint8_t>(pred(Num<T>::load(v)) ? 1 : 0); });
  });
}

void isnan_kernel(KernelContext& ctx) {
  float_predicate(ctx, [](auto v) { return std::isnan(v); });
}

void isinf_kernel(KernelContext& ctx) {
  const bool neg = ctx.attr_int("detect_negative", 1) != 0;
  const bool pos = ctx.attr_int("detect_positive", 1) != 0;
  float_predicate(ctx, [neg, pos](auto v) { return std::isinf(v) && (v > 0 ? pos : neg); });
}

// ---------------------------------------------------------------- activations with attributes

void leaky_relu_kernel(KernelContext& ctx) {
  const float alpha = ctx.attr_float("alpha", 0.01f);
  unary_same<kFloats>(ctx, [alpha](auto v) { return leaky_relu_value(v, static_cast<decltype(v)>(alpha)); });
}

void elu_kernel(KernelContext& ctx) {
  const double alpha = ctx.attr_float("alpha", 1.0f);
  unary_same<kFloats>(ctx, [alpha](auto v) {
    using C = decltype(v);
    return v < 0 ? static_cast<C>(alpha) * (std::exp(v) - C(1)) : v;
  });
}

void selu_kernel(KernelContext& ctx) {
  const double alpha = ctx.attr_float("alpha", 1.67326319217681884765625f);
  const double gamma = ctx.attr_float("gamma", 1.05070102214813232421875f);
  unary_same<kFloats>(ctx, [alpha, gamma](auto v) {
    using C = decltype(v);
    return static_cast<C>(gamma) * (v > 0 ? v : static_cast<C>(alpha) * (std::exp(v) - C(1)));
  });
}

void celu_kernel(KernelContext& ctx) {
  const double alpha = ctx.attr_float("alpha", 1.0f);
  if (alpha == 0) ctx.fail("Celu alpha must not be 0");
  unary_same<kFloats>(ctx, [alpha](auto v) {
    using C = decltype(v);
    const C a = static_cast<C>(alpha);
    if (v != v) return v;  // NaN propagates, as in the spec's definition (numpy maximum/minimum)
    return std::max(C(0), v) + std::min(C(0), a * (std::exp(v / a) - C(1)));
  });
}

void thresholded_relu_kernel(KernelContext& ctx) {
  const double alpha = ctx.attr_float("alpha", 1.0f);
  unary_same<kFloats>(ctx, [alpha](auto v) { return v > static_cast<decltype(v)>(alpha) ? v : decltype(v)(0); });
}

// float32 Erf and exact Gelu take the vectorized erf (transformer MLPs: the Moonshine encoder's
// eight Erf nodes were a quarter of its run with the scalar std::erf).
void erf_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DataType::kFloat) return unary_float_kernel<ErfOp>(ctx);
  Tensor& y = ctx.output(0, x.dtype(), x.shape());
  const float* px = x.data<float>();
  float* py = y.mutable_data<float>();
  parallel_ranges(x.size(), kElementwiseGrain, [&](int64_t b, int64_t e) {
    map_f32_vec<f32xw>(px + b, py + b, e - b, [](f32xw v) { return erf_vec<f32xw, i32xw>(v); });
  });
}

void hard_sigmoid_kernel(KernelContext& ctx) {
  const double alpha = ctx.attr_float("alpha", 0.2f);
  const double beta = ctx.attr_float("beta", 0.5f);
  unary_same<kFloats>(ctx, [alpha, beta](auto v) {
    using C = decltype(v);
    return hard_sigmoid_value(v, static_cast<C>(alpha), static_cast<C>(beta));
  });
}

}  // namespace

void gelu(KernelContext& ctx) {
  const std::string approx = ctx.attr_string("approximate", "none");
  if (approx == "none" && ctx.input(0).dtype() == DataType::kFloat) {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0, x.dtype(), x.shape());
    const float* px = x.data<float>();
    float* py = y.mutable_data<float>();
    parallel_ranges(x.size(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      map_f32_vec<f32xw>(px + b, py + b, e - b, [](f32xw v) {
        return 0.5f * v * (1.0f + erf_vec<f32xw, i32xw>(v * 0.70710678118654752440f));
      });
    });
  } else if (approx == "none") {
    unary_same<kFloats>(ctx, [](auto v) {
      using C = decltype(v);
      return C(0.5) * v * (C(1) + std::erf(v * static_cast<C>(0.70710678118654752440)));
    });
  } else if (approx == "tanh") {
    unary_same<kFloats>(ctx, [](auto v) {
      using C = decltype(v);
      const C k = static_cast<C>(0.79788456080286535588);  // sqrt(2/pi)
      return C(0.5) * v * (C(1) + std::tanh(k * (v + C(0.044715) * v * v * v)));
    });
  } else {
    ctx.fail("Gelu approximate must be 'none' or 'tanh', got '" + approx + "'");
  }
}

namespace {

void swish_kernel(KernelContext& ctx) {
  const double alpha = ctx.attr_float("alpha", 1.0f);
  unary_same<kFloats>(ctx, [alpha](auto v) {
    using C = decltype(v);
    const C z = static_cast<C>(alpha) * v;
    return v * (z >= 0 ? C(1) / (C(1) + std::exp(-z)) : std::exp(z) / (C(1) + std::exp(z)));
  });
}

void shrink_kernel(KernelContext& ctx) {
  const double lambd = ctx.attr_float("lambd", 0.5f);
  const double bias = ctx.attr_float("bias", 0.0f);
  unary_same<kNumeric>(ctx, [lambd, bias](auto v) {
    using C = decltype(v);
    const double d = static_cast<double>(v);
    if (d < -lambd) {
      if constexpr (std::is_floating_point_v<C>) return static_cast<C>(d + bias);
      else return float_to_int<C>(d + bias);
    }
    if (d > lambd) {
      if constexpr (std::is_floating_point_v<C>) return static_cast<C>(d - bias);
      else return float_to_int<C>(d - bias);
    }
    return C(0);
  });
}

// ---------------------------------------------------------------- Clip

/// y = min(max(x, lo), hi): NaN stays NaN, and lo > hi gives hi everywhere (the spec's rule).
template <class T>
void clip_values(const Tensor& x, Tensor& y, calc_t<T> lo, calc_t<T> hi) {
  if constexpr (std::is_same_v<T, Half>) {
    map_halves(x.data<uint16_t>(), y.mutable_data<uint16_t>(), x.size(), [lo, hi](float v) { return clip_value(v, lo, hi); });
  } else {
    map_unary(x.data<T>(), y.mutable_data<T>(), x.size(),
              [lo, hi](T v) { return Num<T>::store(clip_value(Num<T>::load(v), lo, hi)); });
  }
}

// Clip-1 and Clip-6: bounds as attributes.
void clip_6(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const float lo = ctx.attr_float("min", std::numeric_limits<float>::lowest());
  const float hi = ctx.attr_float("max", std::numeric_limits<float>::max());
  visit_or_fail<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor& y = ctx.output(0, x.dtype(), x.shape());
    clip_values<T>(x, y, static_cast<calc_t<T>>(lo), static_cast<calc_t<T>>(hi));
  });
}

// Clip-11 and later: optional scalar inputs min and max.
void clip_11(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  visit_or_fail<kNumeric>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = calc_t<T>;
    C lo = std::numeric_limits<C>::lowest(), hi = std::numeric_limits<C>::max();
    if constexpr (std::is_floating_point_v<C>) {
      lo = -std::numeric_limits<C>::infinity();
      hi = std::numeric_limits<C>::infinity();
    }
    for (size_t i = 1; i <= 2; ++i) {
      if (!ctx.has_input(i)) continue;
      const Tensor& b = ctx.input(i);
      if (b.dtype() != x.dtype()) ctx.fail("Clip bounds must have the input's type " + type_name(x.dtype()));
      if (b.size() != 1) ctx.fail("Clip bound must be a scalar, has shape " + shape_string(b.shape()));
      (i == 1 ? lo : hi) = Num<T>::load(b.data<T>()[0]);
    }
    Tensor& y = ctx.output(0, x.dtype(), x.shape());
    clip_values<T>(x, y, lo, hi);
  });
}

// ---------------------------------------------------------------- Softmax, LogSoftmax, Hardmax

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

/// Softmax/LogSoftmax of contiguous float32 rows with the vectorized exp: exp(x - max) is
/// written to the output once and then scaled (LogSoftmax uses it as scratch).
template <SoftmaxKind kKind>
void softmax_rows_f32(const float* x, float* y, int64_t rows, int64_t n) {
  if (n < 8) {
    // Short rows (a detector's two class scores per anchor): the per-row work below, without its
    // per-row vector setup, and the exps of many rows at once (the same lanes, so the same
    // bits; with fewer than eight elements the sum below is the plain sequence of additions).
    parallel_ranges(rows, std::max<int64_t>(1, 8192 / n), [&](int64_t rb, int64_t re) {
      constexpr int64_t kBlockRows = 256;
      float shifted[kBlockRows * 8], maxima[kBlockRows];
      for (int64_t r0 = rb; r0 < re; r0 += kBlockRows) {
        const int64_t count = std::min(kBlockRows, re - r0);
        for (int64_t r = 0; r < count; ++r) {
          const float* px = x + (r0 + r) * n;
          float mx = px[0];
          bool nan = false;
          for (int64_t k = 0; k < n; ++k) {
            mx = px[k] > mx ? px[k] : mx;
            nan = nan || std::isnan(px[k]);
          }
          if (nan)
            for (int64_t k = 0; k < n; ++k)
              if (std::isnan(px[k])) {
                mx = px[k];
                break;
              }
          maxima[r] = mx;
          for (int64_t k = 0; k < n; ++k) shifted[r * n + k] = px[k] - mx;
        }
        exp_shifted_f32(shifted, y + r0 * n, count * n, 0.0f);
        for (int64_t r = 0; r < count; ++r) {
          const float* px = x + (r0 + r) * n;
          float* py = y + (r0 + r) * n;
          double sum = 0;
          for (int64_t k = 0; k < n; ++k) sum += py[k];
          if constexpr (kKind == SoftmaxKind::kSoftmax) {
            const float inv = static_cast<float>(1.0 / sum);
            for (int64_t k = 0; k < n; ++k) py[k] *= inv;
          } else {
            const float lse = static_cast<float>(std::log(sum));
            for (int64_t k = 0; k < n; ++k) py[k] = (px[k] - maxima[r]) - lse;
          }
        }
      }
    });
    return;
  }
  parallel_ranges(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(n, 1)), [&](int64_t rb, int64_t re) {
    for (int64_t row = rb; row < re; ++row) {
      const float* px = x + row * n;
      float* py = y + row * n;
      // The maximum in vector lanes (comparisons skip NaN; the sign of a zero maximum does not
      // change x - max where it matters), then the first NaN if there is one, as a scan would.
      float mx = px[0];
      {
        f32xw lane_max = f32xw{} + px[0];
        i32xw nan_seen = i32xw{};
        int64_t k = 0;
        for (; k + kWideLanes <= n; k += kWideLanes) {
          f32xw v;
          std::memcpy(&v, px + k, sizeof v);
          lane_max = v > lane_max ? v : lane_max;
          nan_seen |= v != v;
        }
        for (int l = 0; l < kWideLanes; ++l) mx = lane_max[l] > mx ? lane_max[l] : mx;
        bool nan = false;
        for (int l = 0; l < kWideLanes; ++l) nan = nan || nan_seen[l] != 0;
        for (; k < n; ++k) {
          mx = px[k] > mx ? px[k] : mx;
          nan = nan || std::isnan(px[k]);
        }
        if (nan || std::isnan(px[0]))
          for (int64_t j = 0; j < n; ++j)
            if (std::isnan(px[j])) {
              mx = px[j];
              break;
            }
      }
      exp_shifted_f32(px, py, n, mx);
      double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      int64_t k = 0;
      for (; k + 8 <= n; k += 8)
        for (int l = 0; l < 8; ++l) lanes[l] += py[k + l];
      double sum = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
      for (; k < n; ++k) sum += py[k];
      if constexpr (kKind == SoftmaxKind::kSoftmax) {
        const float inv = static_cast<float>(1.0 / sum);
        for (int64_t j = 0; j < n; ++j) py[j] *= inv;
      } else {
        const float lse = static_cast<float>(std::log(sum));
        for (int64_t j = 0; j < n; ++j) py[j] = (px[j] - mx) - lse;
      }
    }
  });
}

/// Normalizes groups of n elements with stride `inner` (inner == 1: contiguous rows).
template <SoftmaxKind kKind, class T>
void softmax_groups(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  using C = calc_t<T>;
  using Acc = std::conditional_t<std::is_same_v<C, double>, long double, double>;
  if constexpr (std::is_same_v<T, float> && kKind != SoftmaxKind::kHardmax) {
    if (inner == 1) {
      softmax_rows_f32<kKind>(x, y, outer, n);
      return;
    }
    // Another axis than the last (a detector's class axis in the middle): blocks of up to 64
    // columns transposed into rows, normalized as rows, and transposed back.
    constexpr int64_t kBlock = 64;
    const int64_t per_outer = (inner + kBlock - 1) / kBlock;
    parallel_ranges(outer * per_outer, std::max<int64_t>(1, 8192 / std::max<int64_t>(n * kBlock, 1)), [&](int64_t gb, int64_t ge) {
      std::vector<float> rows(static_cast<size_t>(kBlock * n)), done(static_cast<size_t>(kBlock * n));
      for (int64_t g = gb; g < ge; ++g) {
        const int64_t o = g / per_outer, i0 = (g % per_outer) * kBlock, cols = std::min(kBlock, inner - i0);
        const float* px = x + o * n * inner + i0;
        float* py = y + o * n * inner + i0;
        for (int64_t k = 0; k < n; ++k)
          for (int64_t c = 0; c < cols; ++c) rows[static_cast<size_t>(c * n + k)] = px[k * inner + c];
        softmax_rows_f32<kKind>(rows.data(), done.data(), cols, n);
        for (int64_t k = 0; k < n; ++k)
          for (int64_t c = 0; c < cols; ++c) py[k * inner + c] = done[static_cast<size_t>(c * n + k)];
      }
    });
    return;
  }
  const int64_t groups = outer * inner;
  parallel_ranges(groups, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)), [&](int64_t gb, int64_t ge) {
    for (int64_t g = gb; g < ge; ++g) {
      const int64_t o = g / inner, i = g % inner;
      const T* px = x + o * n * inner + i;
      T* py = y + o * n * inner + i;
      C mx = Num<T>::load(px[0]);
      int64_t arg = 0;
      for (int64_t k = 1; k < n; ++k) {
        const C v = Num<T>::load(px[k * inner]);
        if (v > mx || (std::isnan(v) && !std::isnan(mx))) {
          mx = v;
          arg = k;
        }
      }
      if constexpr (kKind == SoftmaxKind::kHardmax) {
        for (int64_t k = 0; k < n; ++k) py[k * inner] = Num<T>::store(C(k == arg ? 1 : 0));
      } else {
        Acc sum = 0;
        for (int64_t k = 0; k < n; ++k) sum += static_cast<Acc>(std::exp(Num<T>::load(px[k * inner]) - mx));
        if constexpr (kKind == SoftmaxKind::kSoftmax) {
          const C inv = static_cast<C>(Acc(1) / sum);
          for (int64_t k = 0; k < n; ++k) py[k * inner] = Num<T>::store(std::exp(Num<T>::load(px[k * inner]) - mx) * inv);
        } else {
          const C lse = static_cast<C>(std::log(sum));
          for (int64_t k = 0; k < n; ++k) py[k * inner] = Num<T>::store(Num<T>::load(px[k * inner]) - mx - lse);
        }
      }
    }
  });
}

// Before opset 13 the input is coerced to 2-D [prod(dims < axis), prod(dims >= axis)] and each
// row is normalized; from 13 on only the one axis is.
template <SoftmaxKind kKind>
void softmax_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const SoftmaxGeometry g = softmax_geometry(ctx, ctx.opset(), x.shape());
  visit_or_fail<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor& y = ctx.output(0, x.dtype(), x.shape());
    if (x.size() == 0) return;
    softmax_groups<kKind>(x.data<T>(), y.mutable_data<T>(), g.outer, g.n, g.inner);
  });
}

// ---------------------------------------------------------------- binary ops

/// The shapes a binary op broadcasts. Before opset 7 arithmetic, logic and comparison ops had a
/// `broadcast` attribute (0: shapes must be equal) and an `axis` at which B's dims line up with
/// A's; B is padded with 1s to A's rank and the result must have A's shape.
std::vector<std::vector<int64_t>> binary_shapes(const KernelContext& ctx, const Tensor& a, const Tensor& b) {
  if (ctx.opset() >= 7) return {a.shape(), b.shape()};
  if (ctx.attr_int("broadcast", 0) == 0) {
    if (a.shape() != b.shape())
      ctx.fail("shapes " + shape_string(a.shape()) + " and " + shape_string(b.shape()) +
               " differ and the broadcast attribute is not set");
    return {a.shape(), b.shape()};
  }
  const int64_t ra = static_cast<int64_t>(a.rank()), rb = static_cast<int64_t>(b.rank());
  if (rb > ra) ctx.fail("legacy broadcast needs B's rank <= A's rank");
  int64_t axis = ctx.has_attr("axis") ? ctx.attr_int("axis", 0) : ra - rb;
  if (axis < 0) axis += ra;
  if (axis < 0 || axis + rb > ra) ctx.fail("legacy broadcast axis " + std::to_string(axis) + " is out of range");
  std::vector<int64_t> bs(static_cast<size_t>(ra), 1);
  for (int64_t i = 0; i < rb; ++i) {
    const int64_t d = b.dim(static_cast<size_t>(i));
    if (d != 1 && d != a.dim(static_cast<size_t>(axis + i)))
      ctx.fail("legacy broadcast: B " + shape_string(b.shape()) + " does not match A " + shape_string(a.shape()) +
               " at axis " + std::to_string(axis));
    bs[static_cast<size_t>(axis + i)] = d;
  }
  return {a.shape(), bs};
}

/// Runs op over the broadcast of inputs 0 and 1 (same element type T, checked) into an output
/// of type OutT; op maps storage (T, T) -> storage OutT.
template <class T, class OutT, class Op>
void binary_run(KernelContext& ctx, DataType out_type, Op op) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  BroadcastIter it(ctx, binary_shapes(ctx, a, b));
  Tensor& y = ctx.output(0, out_type, it.shape());
  broadcast_binary(it, a.data<T>(), b.data<T>(), y.mutable_data<OutT>(), op);
}

void check_same_types(const KernelContext& ctx) {
  for (size_t i = 1; i < ctx.input_count(); ++i)
    if (ctx.has_input(i) && ctx.input(i).dtype() != ctx.input(0).dtype())
      ctx.fail("inputs have different element types: " + type_name(ctx.input(0).dtype()) + " and " +
               type_name(ctx.input(i).dtype()));
}

/// Fails when an integer divisor tensor holds a zero (division would trap).
template <class T>
void check_no_zero_divisor(const KernelContext& ctx, const Tensor& b) {
  if constexpr (std::is_integral_v<T>) {
    const T* p = b.data<T>();
    for (int64_t i = 0; i < b.size(); ++i)
      if (p[i] == 0) ctx.fail("integer division by zero");
  }
}

enum class Arith { kAdd, kSub, kMul, kDiv };

template <Arith kOp>
void arith_kernel(KernelContext& ctx) {
  check_same_types(ctx);
  visit_or_fail<kNumeric>(ctx, ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      if constexpr (kOp == Arith::kDiv) check_no_zero_divisor<T>(ctx, ctx.input(1));
      binary_run<T, T>(ctx, data_type_of<T>(), [](T a, T b) {
        if constexpr (kOp == Arith::kAdd) return wrap_add(a, b);
        else if constexpr (kOp == Arith::kSub) return wrap_sub(a, b);
        else if constexpr (kOp == Arith::kMul) return wrap_mul(a, b);
        else return int_div(a, b);
      });
    } else {
      const auto arith = [](auto a, auto b) {
        if constexpr (kOp == Arith::kAdd) return a + b;
        else if constexpr (kOp == Arith::kSub) return a - b;
        else if constexpr (kOp == Arith::kMul) return a * b;
        else return a / b;
      };
      if constexpr (std::is_same_v<T, Half>) {
        // float16: the float32 arithmetic on the operands widened in bulk, rounded once at the
        // end (the same values as element by element, faster).
        const Tensor& a = ctx.input(0);
        const Tensor& b = ctx.input(1);
        // A scalar operand, or two of the same shape: by blocks, without float32 copies.
        if (b.size() == 1 && a.size() >= 1 && a.rank() >= b.rank()) {
          const float c = half_to_float(b.data<uint16_t>()[0]);
          Tensor& y = ctx.output(0, a.dtype(), a.shape());
          map_halves(a.data<uint16_t>(), y.mutable_data<uint16_t>(), a.size(), [c, arith](float v) { return arith(v, c); });
          return;
        }
        if (a.size() == 1 && b.size() >= 1 && b.rank() >= a.rank()) {
          const float c = half_to_float(a.data<uint16_t>()[0]);
          Tensor& y = ctx.output(0, b.dtype(), b.shape());
          map_halves(b.data<uint16_t>(), y.mutable_data<uint16_t>(), b.size(), [c, arith](float v) { return arith(c, v); });
          return;
        }
        if (a.shape() == b.shape()) {
          Tensor& y = ctx.output(0, a.dtype(), a.shape());
          const uint16_t* pa = a.data<uint16_t>();
          const uint16_t* pb = b.data<uint16_t>();
          uint16_t* py = y.mutable_data<uint16_t>();
          parallel_ranges(a.size(), kElementwiseGrain, [&](int64_t e0, int64_t e1) {
            float fa[kHalfBlock], fb[kHalfBlock];
            for (int64_t i = e0; i < e1; i += kHalfBlock) {
              const int64_t m = std::min(kHalfBlock, e1 - i);
              halves_to_floats(pa + i, fa, m);
              halves_to_floats(pb + i, fb, m);
              for (int64_t k = 0; k < m; ++k) fa[k] = arith(fa[k], fb[k]);
              floats_to_halves(fa, py + i, m);
            }
          });
          return;
        }
        BroadcastIter it(ctx, binary_shapes(ctx, a, b));
        const Tensor af = widen_to_float(a), bf = widen_to_float(b);
        Tensor yf(DataType::kFloat, it.shape());
        broadcast_binary(it, af.data<float>(), bf.data<float>(), yf.mutable_data<float>(), arith);
        ctx.set_output(0, narrow_from_float(yf, DataType::kFloat16));
      } else {
        binary_run<T, T>(ctx, data_type_of<T>(), [&](T sa, T sb) {
          return Num<T>::store(static_cast<calc_t<T>>(arith(Num<T>::load(sa), Num<T>::load(sb))));
        });
      }
    }
  });
}

void mod_kernel(KernelContext& ctx) {
  check_same_types(ctx);
  const bool fmod = ctx.attr_int("fmod", 0) != 0;
  visit_or_fail<kNumeric>(ctx, ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      check_no_zero_divisor<T>(ctx, ctx.input(1));
      if (fmod) binary_run<T, T>(ctx, data_type_of<T>(), [](T a, T b) { return int_mod_trunc(a, b); });
      else binary_run<T, T>(ctx, data_type_of<T>(), [](T a, T b) { return int_mod_floor(a, b); });
    } else {
      binary_run<T, T>(ctx, data_type_of<T>(), [fmod](T sa, T sb) {
        const auto a = Num<T>::load(sa), b = Num<T>::load(sb);
        auto r = std::fmod(a, b);
        if (!fmod && r != 0 && ((r < 0) != (b < 0))) r += b;
        return Num<T>::store(r);
      });
    }
  });
}

enum class Logic { kAnd, kOr, kXor };

template <Logic kOp>
void logic_kernel(KernelContext& ctx) {
  check_same_types(ctx);
  if (ctx.input(0).dtype() != DataType::kBool) ctx.fail("logical ops take bool inputs, got " + type_name(ctx.input(0).dtype()));
  binary_run<uint8_t, uint8_t>(ctx, DataType::kBool, [](uint8_t a, uint8_t b) {
    const bool x = a != 0, y = b != 0;
    if constexpr (kOp == Logic::kAnd) return static_cast<uint8_t>(x && y);
    else if constexpr (kOp == Logic::kOr) return static_cast<uint8_t>(x || y);
    else return static_cast<uint8_t>(x != y);
  });
}

template <Logic kOp>
void bitwise_kernel(KernelContext& ctx) {
  check_same_types(ctx);
  visit_or_fail<kInts>(ctx, ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    binary_run<T, T>(ctx, data_type_of<T>(), [](T a, T b) {
      if constexpr (kOp == Logic::kAnd) return static_cast<T>(a & b);
      else if constexpr (kOp == Logic::kOr) return static_cast<T>(a | b);
      else return static_cast<T>(a ^ b);
    });
  });
}

void bitshift_kernel(KernelContext& ctx) {
  check_same_types(ctx);
  const std::string dir = ctx.attr_string("direction", "");
  if (dir != "LEFT" && dir != "RIGHT") ctx.fail("BitShift direction must be LEFT or RIGHT, got '" + dir + "'");
  const bool left = dir == "LEFT";
  visit_or_fail<kUnsignedInts>(ctx, ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr T kBits = static_cast<T>(sizeof(T) * 8);
    binary_run<T, T>(ctx, data_type_of<T>(), [left](T a, T b) {
      if (b >= kBits) return T(0);  // shifting by the width or more is undefined in C++
      return left ? static_cast<T>(a << b) : static_cast<T>(a >> b);
    });
  });
}

enum class Cmp { kEq, kGt, kLt, kGe, kLe };

template <Cmp kOp>
void compare_kernel(KernelContext& ctx) {
  check_same_types(ctx);
  const DataType dt = ctx.input(0).dtype();
  if (dt == DataType::kString) {
    if (kOp != Cmp::kEq) ctx.fail("only Equal compares strings");
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    BroadcastIter it(ctx, {a.shape(), b.shape()});
    Tensor& y = ctx.output(0, DataType::kBool, it.shape());
    uint8_t* out = y.mutable_data<uint8_t>();
    const int64_t sa = it.inner_stride(0), sb = it.inner_stride(1);
    it.for_runs(0, it.size(), [&](int64_t o, int64_t n, const int64_t* off) {
      for (int64_t j = 0; j < n; ++j)
        out[o + j] = a.strings()[static_cast<size_t>(off[0] + j * sa)] == b.strings()[static_cast<size_t>(off[1] + j * sb)];
    });
    return;
  }
  visit_or_fail<kAllPlain>(ctx, dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    binary_run<T, uint8_t>(ctx, DataType::kBool, [](T sa, T sb) {
      const auto a = Num<T>::load(sa), b = Num<T>::load(sb);
      if constexpr (kOp == Cmp::kEq) return static_cast<uint8_t>(a == b);
      else if constexpr (kOp == Cmp::kGt) return static_cast<uint8_t>(a > b);
      else if constexpr (kOp == Cmp::kLt) return static_cast<uint8_t>(a < b);
      else if constexpr (kOp == Cmp::kGe) return static_cast<uint8_t>(a >= b);
      else return static_cast<uint8_t>(a <= b);
    });
  });
}

// ---------------------------------------------------------------- Pow, PRelu

// Pow: base T (floats, int32, int64; other ints accepted too), exponent of any numeric type.
// Float bases compute in their own precision with the exponent converted; integer bases use
// exact integer powers for integer exponents and pow() in double (truncated) for float ones.
void pow_kernel(KernelContext& ctx) {
  const Tensor& base = ctx.input(0);
  const Tensor& expo = ctx.input(1);
  if (!visit<kNumeric>(expo.dtype(), [](auto) {}))
    ctx.fail("Pow exponent type " + type_name(expo.dtype()) + " is not supported");
  visit_or_fail<kNumeric>(ctx, base.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    BroadcastIter it(ctx, binary_shapes(ctx, base, expo));
    Tensor& y = ctx.output(0, base.dtype(), it.shape());
    if constexpr (is_float_v<T>) {
      using C = calc_t<T>;
      const Tensor e = cast_tensor(ctx, expo, data_type_of<C>(), true);
      broadcast_binary(it, base.data<T>(), e.data<C>(), y.mutable_data<T>(), [](T a, C p) {
        const C x = Num<T>::load(a);
        if (p == 2) return Num<T>::store(x * x);
        return Num<T>::store(std::pow(x, p));
      });
    } else if (is_integer_type(expo.dtype())) {
      const Tensor e = cast_tensor(ctx, expo, DataType::kInt64, true);
      broadcast_binary(it, base.data<T>(), e.data<int64_t>(), y.mutable_data<T>(),
                       [](T a, int64_t b) { return int_pow(a, b); });
    } else {
      const Tensor e = cast_tensor(ctx, expo, DataType::kDouble, true);
      broadcast_binary(it, base.data<T>(), e.data<double>(), y.mutable_data<T>(), [](T a, double b) {
        return float_to_int<T>(std::pow(static_cast<double>(a), b));
      });
    }
  });
}

// PRelu: y = x < 0 ? slope * x : x, slope broadcast to x (unidirectional). Before opset 7 a 1-D
// slope of C values applies per channel (dim 1).
void prelu_kernel(KernelContext& ctx) {
  check_same_types(ctx);
  const Tensor& x = ctx.input(0);
  Tensor slope = ctx.input(1);
  if (ctx.opset() < 7 && slope.rank() == 1 && x.rank() > 2 && slope.dim(0) == x.dim(1) && slope.dim(0) != 1) {
    std::vector<int64_t> s(x.rank() - 1, 1);
    s[0] = slope.dim(0);
    slope = slope.reshaped(s);
  }
  BroadcastIter it(ctx, {x.shape(), slope.shape()});
  if (it.shape() != x.shape())
    ctx.fail("slope " + shape_string(slope.shape()) + " does not broadcast to X " + shape_string(x.shape()));
  visit_or_fail<kFloats | kSignedInts | kUnsignedInts>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor& y = ctx.output(0, x.dtype(), x.shape());
    broadcast_binary(it, x.data<T>(), slope.data<T>(), y.mutable_data<T>(), [](T a, T s) {
      const auto v = Num<T>::load(a);
      if constexpr (std::is_integral_v<T>) return v < 0 ? wrap_mul(v, Num<T>::load(s)) : v;
      else return v < 0 ? Num<T>::store(v * Num<T>::load(s)) : a;
    });
  });
}

// ---------------------------------------------------------------- variadic Sum, Mean, Max, Min

enum class Fold { kSum, kMean, kMax, kMin };

template <Fold kOp>
void variadic_kernel(KernelContext& ctx) {
  const size_t n = ctx.input_count();
  if (n == 0) ctx.fail("needs at least one input");
  check_same_types(ctx);
  constexpr unsigned kSet = (kOp == Fold::kSum || kOp == Fold::kMean) ? unsigned(kFloats) : unsigned(kNumeric);
  visit_or_fail<kSet>(ctx, ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor acc = ctx.input(0);
    for (size_t k = 1; k < n; ++k) {
      const Tensor& b = ctx.input(k);
      BroadcastIter it(ctx, {acc.shape(), b.shape()});
      Tensor next(acc.dtype(), it.shape());
      broadcast_binary(it, acc.data<T>(), b.data<T>(), next.mutable_data<T>(), [](T sa, T sb) {
        const auto a = Num<T>::load(sa), c = Num<T>::load(sb);
        if constexpr (kOp == Fold::kSum || kOp == Fold::kMean) {
          return Num<T>::store(a + c);
        } else {
          // NaN propagates (numpy maximum/minimum).
          if constexpr (std::is_floating_point_v<decltype(a)>) {
            if (std::isnan(a)) return sa;
            if (std::isnan(c)) return sb;
          }
          if constexpr (kOp == Fold::kMax) return a < c ? sb : sa;
          else return c < a ? sb : sa;
        }
      });
      acc = next;
    }
    if constexpr (kOp == Fold::kMean) {
      if (n > 1) {
        T* p = acc.mutable_data<T>();
        const auto div = static_cast<calc_t<T>>(n);
        map_unary(p, p, acc.size(), [div](T v) { return Num<T>::store(Num<T>::load(v) / div); });
      }
    }
    ctx.set_output(0, acc);
  });
}

// ---------------------------------------------------------------- Where

template <class E>
void where_copy(const BroadcastIter& it, const uint8_t* c, const E* x, const E* y, E* out) {
  const int64_t sc = it.inner_stride(0), sx = it.inner_stride(1), sy = it.inner_stride(2);
  it.parallel_runs([&](int64_t o, int64_t n, const int64_t* off) {
    const uint8_t* pc = c + off[0];
    const E* px = x + off[1];
    const E* py = y + off[2];
    E* po = out + o;
    if (sc == 1 && sx == 1 && sy == 1) {
      for (int64_t j = 0; j < n; ++j) po[j] = pc[j] ? px[j] : py[j];
    } else {
      for (int64_t j = 0; j < n; ++j) po[j] = pc[j * sc] ? px[j * sx] : py[j * sy];
    }
  });
}

void where_kernel(KernelContext& ctx) {
  const Tensor& c = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  if (c.dtype() != DataType::kBool) ctx.fail("Where condition must be bool, is " + type_name(c.dtype()));
  if (x.dtype() != y.dtype()) ctx.fail("Where X and Y have different types " + type_name(x.dtype()) + " and " + type_name(y.dtype()));
  BroadcastIter it(ctx, {c.shape(), x.shape(), y.shape()});
  Tensor& out = ctx.output(0, x.dtype(), it.shape());
  const uint8_t* pc = c.data<uint8_t>();
  if (x.dtype() == DataType::kString) {
    auto& o = out.mutable_strings();
    const int64_t sc = it.inner_stride(0), sx = it.inner_stride(1), sy = it.inner_stride(2);
    it.for_runs(0, it.size(), [&](int64_t p, int64_t n, const int64_t* off) {
      for (int64_t j = 0; j < n; ++j)
        o[static_cast<size_t>(p + j)] = pc[off[0] + j * sc] ? x.strings()[static_cast<size_t>(off[1] + j * sx)]
                                                           : y.strings()[static_cast<size_t>(off[2] + j * sy)];
    });
    return;
  }
  // Elements are copied as bits: only the element size matters.
  switch (data_type_bits(x.dtype())) {
    case 8: where_copy(it, pc, x.data<uint8_t>(), y.data<uint8_t>(), out.mutable_data<uint8_t>()); break;
    case 16: where_copy(it, pc, x.data<uint16_t>(), y.data<uint16_t>(), out.mutable_data<uint16_t>()); break;
    case 32: where_copy(it, pc, x.data<uint32_t>(), y.data<uint32_t>(), out.mutable_data<uint32_t>()); break;
    case 64: where_copy(it, pc, x.data<uint64_t>(), y.data<uint64_t>(), out.mutable_data<uint64_t>()); break;
    default: ctx.fail("Where does not support element type " + type_name(x.dtype()));
  }
}

// ---------------------------------------------------------------- Dropout

/// A tensor of ones of type `t` (the inference-mode mask).
Tensor ones(DataType t, const std::vector<int64_t>& shape) {
  Tensor m(t, shape);
  if (t == DataType::kBool) {
    std::memset(m.mutable_raw(), 1, m.bytes());
  } else {
    visit<kFloats>(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = m.mutable_data<T>();
      for (int64_t i = 0; i < m.size(); ++i) p[i] = Num<T>::store(1);
    });
  }
  return m;
}

// Inference Dropout is the identity with a mask of ones. Training mode (opset 12+: the
// training_mode input) with a nonzero ratio drops elements with a seeded generator and scales
// the kept ones by 1 / (1 - ratio).
void dropout_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!visit<kFloats>(x.dtype(), [](auto) {})) ctx.fail("Dropout does not support element type " + type_name(x.dtype()));
  const DataType mask_type = ctx.opset() >= 10 ? DataType::kBool : x.dtype();
  bool training = false;
  double ratio = ctx.attr_float("ratio", 0.5f);
  if (ctx.opset() >= 12) {
    ratio = 0.5;
    if (ctx.has_input(1)) {
      const Tensor r = cast_tensor(ctx, ctx.input(1), DataType::kDouble, true);
      if (r.size() != 1) ctx.fail("Dropout ratio must be a scalar");
      ratio = r.data<double>()[0];
    }
    if (ctx.has_input(2)) {
      const Tensor& t = ctx.input(2);
      if (t.dtype() != DataType::kBool || t.size() != 1) ctx.fail("Dropout training_mode must be a bool scalar");
      training = t.data<uint8_t>()[0] != 0;
    }
  }
  if (!training || ratio == 0) {
    ctx.set_output(0, x);
    if (ctx.has_output(1)) ctx.set_output(1, ones(mask_type, x.shape()));
    return;
  }
  if (ratio < 0 || ratio >= 1) ctx.fail("Dropout ratio must be in [0, 1), got " + std::to_string(ratio));
  std::mt19937_64 gen(static_cast<uint64_t>(ctx.attr_int("seed", 0)));
  std::uniform_real_distribution<double> dist(0.0, 1.0);
  Tensor mask(DataType::kBool, x.shape());
  uint8_t* m = mask.mutable_data<uint8_t>();
  for (int64_t i = 0; i < x.size(); ++i) m[i] = dist(gen) >= ratio;
  const double scale = 1.0 / (1.0 - ratio);
  visit<kFloats>(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor& y = ctx.output(0, x.dtype(), x.shape());
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    for (int64_t i = 0; i < x.size(); ++i)
      py[i] = Num<T>::store(static_cast<calc_t<T>>(m[i] ? static_cast<double>(Num<T>::load(px[i])) * scale : 0.0));
  });
  if (ctx.has_output(1)) ctx.set_output(1, mask);
}

}  // namespace

void register_elementwise_kernels(KernelRegistry& r) {
  // Unary float math (opset 6/13 versions only widened the types).
  r.add("Exp", unary_float_kernel<ExpOp>);
  r.add("Log", unary_float_kernel<LogOp>);
  r.add("Sqrt", unary_float_kernel<SqrtOp>);
  r.add("Reciprocal", unary_float_kernel<ReciprocalOp>);
  r.add("Floor", unary_float_kernel<FloorOp>);
  r.add("Ceil", unary_float_kernel<CeilOp>);
  r.add("Round", unary_float_kernel<RoundOp>);
  r.add("Sin", unary_float_kernel<SinOp>);
  r.add("Cos", unary_float_kernel<CosOp>);
  r.add("Tan", unary_float_kernel<TanOp>);
  r.add("Asin", unary_float_kernel<AsinOp>);
  r.add("Acos", unary_float_kernel<AcosOp>);
  r.add("Atan", unary_float_kernel<AtanOp>);
  r.add("Sinh", unary_float_kernel<SinhOp>);
  r.add("Cosh", unary_float_kernel<CoshOp>);
  r.add("Asinh", unary_float_kernel<AsinhOp>);
  r.add("Acosh", unary_float_kernel<AcoshOp>);
  r.add("Atanh", unary_float_kernel<AtanhOp>);
  r.add("Erf", erf_kernel);
  r.add("Tanh", tanh_kernel);
  r.add("Sigmoid", sigmoid_kernel);
  r.add("Softplus", unary_float_kernel<SoftplusOp>);
  r.add("Softsign", unary_float_kernel<SoftsignOp>);
  r.add("Mish", unary_float_kernel<MishOp>);
  r.add("HardSwish", unary_float_kernel<HardSwishOp>);
  r.add("Abs", abs_kernel);
  r.add("Neg", neg_kernel);
  r.add("Sign", sign_kernel);
  r.add("IsNaN", isnan_kernel);
  r.add("IsInf", isinf_kernel);
  r.add("Not", not_kernel);
  r.add("BitwiseNot", bitwise_not_kernel);

  // Activations (the opset 1 versions only add the ignored consumed_inputs attribute).
  r.add("Relu", relu_kernel);
  r.add("LeakyRelu", leaky_relu_kernel);
  r.add("PRelu", prelu_kernel);
  r.add("Elu", elu_kernel);
  r.add("Selu", selu_kernel);
  r.add("Celu", celu_kernel);
  r.add("ThresholdedRelu", thresholded_relu_kernel);
  r.add("HardSigmoid", hard_sigmoid_kernel);
  r.add("Gelu", gelu);
  r.add("Swish", swish_kernel);
  r.add("Shrink", shrink_kernel);
  r.add("", "Clip", 1, 10, clip_6);
  r.add("", "Clip", 11, kMaxOpset, clip_11);
  r.add("Softmax", softmax_kernel<SoftmaxKind::kSoftmax>);
  r.add("LogSoftmax", softmax_kernel<SoftmaxKind::kLogSoftmax>);
  r.add("Hardmax", softmax_kernel<SoftmaxKind::kHardmax>);

  // Broadcasting binary ops (opset < 7: the broadcast/axis attributes, see binary_shapes).
  r.add("Add", arith_kernel<Arith::kAdd>);
  r.add("Sub", arith_kernel<Arith::kSub>);
  r.add("Mul", arith_kernel<Arith::kMul>);
  r.add("Div", arith_kernel<Arith::kDiv>);
  r.add("Pow", pow_kernel);
  r.add("Mod", mod_kernel);
  r.add("BitShift", bitshift_kernel);
  r.add("And", logic_kernel<Logic::kAnd>);
  r.add("Or", logic_kernel<Logic::kOr>);
  r.add("Xor", logic_kernel<Logic::kXor>);
  r.add("BitwiseAnd", bitwise_kernel<Logic::kAnd>);
  r.add("BitwiseOr", bitwise_kernel<Logic::kOr>);
  r.add("BitwiseXor", bitwise_kernel<Logic::kXor>);
  r.add("Equal", compare_kernel<Cmp::kEq>);
  r.add("Greater", compare_kernel<Cmp::kGt>);
  r.add("Less", compare_kernel<Cmp::kLt>);
  r.add("GreaterOrEqual", compare_kernel<Cmp::kGe>);
  r.add("LessOrEqual", compare_kernel<Cmp::kLe>);

  // Variadic (opset < 8: no broadcasting, which the broadcasting kernel also covers).
  r.add("Sum", variadic_kernel<Fold::kSum>);
  r.add("Mean", variadic_kernel<Fold::kMean>);
  r.add("Max", variadic_kernel<Fold::kMax>);
  r.add("Min", variadic_kernel<Fold::kMin>);
  r.add("Where", where_kernel);

  r.add("Dropout", dropout_kernel);
}

}  // namespace onnxtool::runner::cpu
