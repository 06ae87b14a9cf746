// CPU kernels: QuantizeLinear, DequantizeLinear (per tensor, per axis, blocked; 8-bit, 16-bit,
// 4-bit and float8 types) and DynamicQuantizeLinear.
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "runner/cpu/elementwise_util.h"
#include "runner/cpu/kernels.h"
#include "runner/cpu/tensor_util.h"

namespace onnxtool::runner::cpu {

namespace {

/// Integer range of a quantized type (nullopt for float8).
bool int_range(DataType t, double& lo, double& hi) {
  switch (t) {
    case DataType::kUInt8: lo = 0; hi = 255; return true;
    case DataType::kInt8: lo = -128; hi = 127; return true;
    case DataType::kUInt16: lo = 0; hi = 65535; return true;
    case DataType::kInt16: lo = -32768; hi = 32767; return true;
    case DataType::kInt32: lo = -2147483648.0; hi = 2147483647.0; return true;
    case DataType::kUInt4: lo = 0; hi = 15; return true;
    case DataType::kInt4: lo = -8; hi = 7; return true;
    default: return false;
  }
}

/// Element values of a quantized tensor as double (sub-byte types unpacked, float8 decoded).
std::vector<double> quantized_values(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.size()));
  if (t.dtype() == DataType::kUInt4 || t.dtype() == DataType::kInt4) {
    const Tensor codes = unpack_sub_byte(t);
    for (int64_t i = 0; i < t.size(); ++i) {
      const uint8_t c = codes.data<uint8_t>()[i];
      v[static_cast<size_t>(i)] = t.dtype() == DataType::kInt4 && c >= 8 ? static_cast<double>(c) - 16 : c;
    }
  } else if (is_float8(t.dtype())) {
    for (int64_t i = 0; i < t.size(); ++i) v[static_cast<size_t>(i)] = float8_to_double(t.dtype(), t.data<uint8_t>()[i]);
  } else {
    for (int64_t i = 0; i < t.size(); ++i) v[static_cast<size_t>(i)] = element_as_double(t, i);
  }
  return v;
}

/// Maps element i of x to its scale / zero-point index: per tensor, per axis, or blocked.
struct ParamIndex {
  int64_t axis_dim = 1, inner = 1, block = 0, params_on_axis = 1;
  bool per_tensor = true;
  int64_t operator()(int64_t i) const {
    if (per_tensor) return 0;
    const int64_t outer = i / (axis_dim * inner);
    const int64_t a = (i / inner) % axis_dim;
    const int64_t r = i % inner;
    if (block == 0) return a;
    return (outer * params_on_axis + a / block) * inner + r;
  }
};

ParamIndex param_index(const KernelContext& ctx, const Tensor& x, const Tensor& scale) {
  ParamIndex p;
  if (scale.size() == 1 && scale.rank() <= 1) return p;
  const int64_t rank = static_cast<int64_t>(x.rank());
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 1), rank);
  p.per_tensor = false;
  p.axis_dim = x.dim(static_cast<size_t>(axis));
  p.inner = dims_product(x.shape(), static_cast<size_t>(axis) + 1, x.rank());
  p.block = ctx.attr_int("block_size", 0);
  if (p.block < 0) ctx.fail("block_size must not be negative");
  if (p.block == 0) {
    if (scale.rank() != 1 || scale.dim(0) != p.axis_dim)
      ctx.fail("per-axis scale must be 1-D of length " + std::to_string(p.axis_dim) + " (axis " + std::to_string(axis) + "), got " + scale.describe());
  } else {
    p.params_on_axis = (p.axis_dim + p.block - 1) / p.block;
    std::vector<int64_t> want = x.shape();
    want[static_cast<size_t>(axis)] = p.params_on_axis;
    if (scale.shape() != want)
      ctx.fail("blocked scale must have shape " + shape_string(want) + " (block_size " + std::to_string(p.block) + "), got " + scale.describe());
  }
  return p;
}

/// Stores double values into a tensor of a quantized type (packing sub-byte types).
void store_quantized(Tensor& y, const std::vector<double>& q) {
  const DataType t = y.dtype();
  if (t == DataType::kUInt4 || t == DataType::kInt4) {
    Tensor codes(DataType::kUInt8, y.shape());
    for (int64_t i = 0; i < y.size(); ++i) codes.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(static_cast<int32_t>(q[static_cast<size_t>(i)]) & 0xF);
    y = pack_sub_byte(codes, t);
    return;
  }
  for (int64_t i = 0; i < y.size(); ++i) set_element_from_double(y, i, q[static_cast<size_t>(i)]);
}

/// y[i] = clamp(nearbyint(x[i] / s) + z, lo, hi) for n float32 values into an 8-bit type Q
/// (lo and hi within Q's range): the same operations in the same order as one element at a
/// time, so the same bytes. NaN gives lo.
template <class Q>
void quantize_run(const float* x, float s, float z, float lo, float hi, Q* y, int64_t n) {
  static_assert(std::is_same_v<Q, uint8_t> || std::is_same_v<Q, int8_t>);
  int64_t i = 0;
#if defined(__AVX2__)
  const __m256 vs = _mm256_set1_ps(s), vz = _mm256_set1_ps(z), vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  const auto quantize8 = [&](const float* p) {
    __m256 v = _mm256_div_ps(_mm256_loadu_ps(p), vs);
    // Ties to even, as nearbyint in the default rounding mode.
    v = _mm256_add_ps(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vz);
    // max_ps returns its second operand when the first is NaN: lo, as std::max(lo, NaN) does.
    // Whole numbers within [lo, hi] are then converted exactly.
    return _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(v, vlo), vhi));
  };
  // The packs interleave 128-bit lanes: 4-byte groups come out as 0 2 4 6 1 3 5 7. The values
  // already lie in Q's range, so the saturating packs change none.
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (; i + 32 <= n; i += 32) {
    const __m256i a = quantize8(x + i), b = quantize8(x + i + 8), c = quantize8(x + i + 16), d = quantize8(x + i + 24);
    __m256i bytes;
    if constexpr (std::is_same_v<Q, uint8_t>)
      bytes = _mm256_packus_epi16(_mm256_packus_epi32(a, b), _mm256_packus_epi32(c, d));
    else
      bytes = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm256_permutevar8x32_epi32(bytes, order));
  }
#endif
  for (; i < n; ++i) y[i] = static_cast<Q>(std::min(hi, std::max(lo, std::nearbyint(x[i] / s) + z)));
}

void quantize_linear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  DataType out = zp ? zp->dtype() : DataType::kUInt8;
  if (!zp && ctx.opset() >= 21) {
    const int64_t o = ctx.attr_int("output_dtype", 0);
    if (o != 0) out = static_cast<DataType>(o);
  }
  double lo = 0, hi = 0;
  const bool integer = int_range(out, lo, hi);
  if (!integer && !is_float8(out)) ctx.fail("QuantizeLinear cannot produce " + type_name(out));
  const ParamIndex pi = param_index(ctx, x, scale);
  if (zp && zp->shape() != scale.shape() && zp->size() != scale.size()) ctx.fail("y_zero_point and y_scale differ in shape");
  const std::vector<double> zps = zp ? quantized_values(*zp) : std::vector<double>(static_cast<size_t>(scale.size()), 0.0);
  const bool saturate = ctx.attr_int("saturate", 1) != 0;
  Tensor& y = ctx.output(0, out, x.shape());
  const int64_t n = x.size();
  if (integer && x.dtype() == DataType::kFloat && scale.dtype() == DataType::kFloat && (out == DataType::kUInt8 || out == DataType::kInt8)) {
    // The hot path of quantized models: float32 -> 8-bit, per tensor or per axis.
    const float* px = x.data<float>();
    const float* ps = scale.data<float>();
    const float flo = static_cast<float>(lo), fhi = static_cast<float>(hi);
    uint8_t* pu = out == DataType::kUInt8 ? y.mutable_data<uint8_t>() : nullptr;
    int8_t* pk = out == DataType::kInt8 ? y.mutable_data<int8_t>() : nullptr;
    std::vector<float> zf(zps.begin(), zps.end());
    parallel_ranges(n, kElementwiseGrain, [&](int64_t b, int64_t e) {
      if (pi.block != 0) {
        for (int64_t i = b; i < e; ++i) {
          const int64_t k = pi(i);
          const float c = std::min(fhi, std::max(flo, std::nearbyint(px[i] / ps[k]) + zf[static_cast<size_t>(k)]));
          if (pu) pu[i] = static_cast<uint8_t>(c);
          else pk[i] = static_cast<int8_t>(c);
        }
        return;
      }
      // Per tensor or per axis: runs of elements that share a scale (a whole range, or the
      // `inner` elements of one channel).
      for (int64_t i = b; i < e;) {
        const int64_t end = pi.per_tensor ? e : std::min(e, (i / pi.inner + 1) * pi.inner);
        const int64_t k = pi(i);
        const float s = ps[k], z = zf[static_cast<size_t>(k)];
        if (pu) quantize_run(px + i, s, z, flo, fhi, pu + i, end - i);
        else quantize_run(px + i, s, z, flo, fhi, pk + i, end - i);
        i = end;
      }
    });
    return;
  }
  std::vector<double> q(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = pi(i);
    const double s = element_as_double(scale, k);
    if (integer) {
      // Division in the scale's precision (float32 for float scales), then round half to even.
      const double v = x.dtype() == DataType::kDouble ? element_as_double(x, i) / s : static_cast<double>(static_cast<float>(element_as_double(x, i)) / static_cast<float>(s));
      q[static_cast<size_t>(i)] = std::min(hi, std::max(lo, std::nearbyint(v) + zps[static_cast<size_t>(k)]));
    } else {
      q[static_cast<size_t>(i)] = static_cast<double>(static_cast<float>(element_as_double(x, i)) / static_cast<float>(s)) + zps[static_cast<size_t>(k)];
    }
  }
  if (integer) {
    store_quantized(y, q);
  } else {
    for (int64_t i = 0; i < n; ++i) y.mutable_data<uint8_t>()[i] = double_to_float8(out, q[static_cast<size_t>(i)], saturate);
  }
}

void dequantize_linear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (zp && zp->dtype() != x.dtype()) ctx.fail("x and x_zero_point have different types");
  DataType out = scale.dtype();
  if (ctx.opset() >= 23) {
    const int64_t o = ctx.attr_int("output_dtype", 0);
    if (o != 0) out = static_cast<DataType>(o);
  }
  if (out != DataType::kFloat && out != DataType::kDouble && out != DataType::kFloat16 && out != DataType::kBFloat16)
    ctx.fail("DequantizeLinear cannot produce " + type_name(out));
  const ParamIndex pi = param_index(ctx, x, scale);
  const std::vector<double> zps = zp ? quantized_values(*zp) : std::vector<double>(static_cast<size_t>(scale.size()), 0.0);
  Tensor& y = ctx.output(0, out, x.shape());
  const int64_t n = x.size();
  if (out == DataType::kFloat && scale.dtype() == DataType::kFloat && (x.dtype() == DataType::kUInt8 || x.dtype() == DataType::kInt8 || x.dtype() == DataType::kInt32)) {
    const float* ps = scale.data<float>();
    float* py = y.mutable_data<float>();
    // (x - zero_point) * scale in float32, over runs of elements that share a scale (a whole
    // range per tensor, one channel's `inner` elements per axis, one element when blocked).
    auto dequantize = [&](const auto* px) {
      parallel_ranges(n, kElementwiseGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e;) {
          const int64_t end = pi.per_tensor ? e : pi.block != 0 ? i + 1 : std::min(e, (i / pi.inner + 1) * pi.inner);
          const int64_t k = pi(i);
          const float s = ps[k], z = static_cast<float>(zps[static_cast<size_t>(k)]);
          for (int64_t j = i; j < end; ++j) py[j] = (static_cast<float>(px[j]) - z) * s;
          i = end;
        }
      });
    };
    if (x.dtype() == DataType::kUInt8) dequantize(x.data<uint8_t>());
    else if (x.dtype() == DataType::kInt8) dequantize(x.data<int8_t>());
    else dequantize(x.data<int32_t>());
    return;
  }
  const std::vector<double> xs = quantized_values(x);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = pi(i);
    const float v = static_cast<float>(xs[static_cast<size_t>(i)] - zps[static_cast<size_t>(k)]) * static_cast<float>(element_as_double(scale, k));
    set_element_from_double(y, i, v);
  }
}

/// min(0, x...) and max(0, x...) over [b, e), NaN skipped: each is +0 or a value beyond it (a
/// -0 never replaces the initial +0), so chunk results combine in any order to the same bits.
void min_max(const float* x, int64_t b, int64_t e, float& lo, float& hi) {
  lo = 0;
  hi = 0;
  int64_t i = b;
#if defined(__AVX2__)
  // vminps / vmaxps return their second operand when either is NaN or both are zeros, as the
  // scalar comparisons below keep the running value.
  __m256 vlo = _mm256_setzero_ps(), vhi = _mm256_setzero_ps();
  for (; i + 8 <= e; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    vlo = _mm256_min_ps(v, vlo);
    vhi = _mm256_max_ps(v, vhi);
  }
  alignas(32) float l[8], h[8];
  _mm256_store_ps(l, vlo);
  _mm256_store_ps(h, vhi);
  for (int j = 0; j < 8; ++j) {
    lo = l[j] < lo ? l[j] : lo;
    hi = hi < h[j] ? h[j] : hi;
  }
#endif
  for (; i < e; ++i) {
    lo = x[i] < lo ? x[i] : lo;  // false for NaN
    hi = hi < x[i] ? x[i] : hi;
  }
}

}  // namespace

DynamicQuantized dynamic_quantize(const KernelContext& ctx, const Tensor& x) {
  if (x.dtype() != DataType::kFloat) ctx.fail("x must be float, is " + type_name(x.dtype()));
  const float* px = x.data<float>();
  // Range over chunks (one min/max pass), combined in chunk order; the bits do not depend on the split.
  const int64_t grain = 4 * kElementwiseGrain;
  const int64_t chunks = std::max<int64_t>(1, (x.size() + grain - 1) / grain);
  std::vector<float> los(static_cast<size_t>(chunks)), his(static_cast<size_t>(chunks));
  parallel_ranges(chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      min_max(px, c * grain, std::min(x.size(), (c + 1) * grain), los[static_cast<size_t>(c)], his[static_cast<size_t>(c)]);
  });
  float lo = 0, hi = 0;
  for (int64_t c = 0; c < chunks; ++c) {
    lo = los[static_cast<size_t>(c)] < lo ? los[static_cast<size_t>(c)] : lo;
    hi = hi < his[static_cast<size_t>(c)] ? his[static_cast<size_t>(c)] : hi;
  }
  const float scale = (hi - lo) / 255.0f;
  float zero = 0;
  if (scale != 0) zero = std::min(255.0f, std::max(0.0f, std::nearbyint(0.0f - lo / scale)));
  DynamicQuantized q{Tensor(DataType::kUInt8, x.shape()), scale, static_cast<uint8_t>(zero)};
  uint8_t* py = q.values.mutable_data<uint8_t>();
  if (scale == 0) std::fill(py, py + x.size(), static_cast<uint8_t>(zero));
  else parallel_ranges(x.size(), kElementwiseGrain, [&](int64_t b, int64_t e) { quantize_run(px + b, scale, zero, 0.0f, 255.0f, py + b, e - b); });
  return q;
}

namespace {

void dynamic_quantize_linear(KernelContext& ctx) {
  DynamicQuantized q = dynamic_quantize(ctx, ctx.input(0));
  ctx.set_output(0, std::move(q.values));
  ctx.output(1, DataType::kFloat, {}).mutable_data<float>()[0] = q.scale;
  ctx.output(2, DataType::kUInt8, {}).mutable_data<uint8_t>()[0] = q.zero_point;
}

}  // namespace

void register_quantize_linear_kernels(KernelRegistry& r) {
  r.add("QuantizeLinear", quantize_linear);
  r.add("DequantizeLinear", dequantize_linear);
  r.add("DynamicQuantizeLinear", dynamic_quantize_linear);
  // onnxruntime's quantizer writes its com.microsoft forms for 16-bit and 4-bit types: the same
  // operation (per tensor or per `axis`, rounding half to even); at the domain's opset 1 none of
  // the later ONNX attributes (block_size, output_dtype, saturate) apply.
  r.add(ir::kMicrosoftDomain, "QuantizeLinear", 1, 1, quantize_linear);
  r.add(ir::kMicrosoftDomain, "DequantizeLinear", 1, 1, dequantize_linear);
}

}  // namespace onnxtool::runner::cpu
