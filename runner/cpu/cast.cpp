// CPU kernels: Cast and CastLike between every element type: plain numeric types, bool, the
// float8 types (through double), and strings (numpy's formatting and parsing); BitCast, which
// reinterprets element bytes.
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "runner/cpu/elementwise_util.h"
#include "runner/cpu/kernels.h"

namespace onnxtool::runner::cpu {

void halves_to_floats(const uint16_t* in, float* out, int64_t n) {
  int64_t i = 0;
#ifdef __F16C__
  const __m128i magnitude = _mm_set1_epi16(0x7fff), infinity = _mm_set1_epi16(0x7c00);
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    if (_mm_movemask_epi8(_mm_cmpgt_epi16(_mm_and_si128(h, magnitude), infinity)) != 0) {
      for (int64_t k = i; k < i + 8; ++k) out[k] = load_half(in[k]);  // a NaN among them
      continue;
    }
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) out[i] = load_half(in[i]);
}

void floats_to_halves(const float* in, uint16_t* out, int64_t n) {
  int64_t i = 0;
#ifdef __F16C__
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(in + i);
    if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {
      for (int64_t k = i; k < i + 8; ++k) out[k] = store_half(in[k]);  // a NaN among them
      continue;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
#endif
  for (; i < n; ++i) out[i] = store_half(in[i]);
}

namespace {

/// One element from storage type S to storage type D (both plain types).
template <class S, class D>
D convert_element(S s) {
  if constexpr (std::is_same_v<S, D>) {
    return s;
  } else if constexpr (std::is_same_v<D, Bool8>) {
    return Bool8{static_cast<uint8_t>(Num<S>::load(s) != 0 ? 1 : 0)};
  } else if constexpr (std::is_same_v<S, Bool8>) {
    return Num<D>::store(static_cast<calc_t<D>>(s.value != 0 ? 1 : 0));
  } else if constexpr (is_float_v<S> && is_float_v<D>) {
    if constexpr (std::is_same_v<S, double> && std::is_same_v<D, Half>) return Half{double_to_half(s)};
    else if constexpr (std::is_same_v<S, double> && std::is_same_v<D, BFloat16>) return BFloat16{double_to_bfloat16(s)};
    else return Num<D>::store(static_cast<calc_t<D>>(Num<S>::load(s)));
  } else if constexpr (is_float_v<S>) {  // float -> integer
    return float_to_int<D>(static_cast<double>(Num<S>::load(s)));
  } else if constexpr (std::is_same_v<D, Half>) {  // integer -> 16-bit float
    return Half{double_to_half(static_cast<double>(s))};
  } else if constexpr (std::is_same_v<D, BFloat16>) {
    return BFloat16{double_to_bfloat16(static_cast<double>(s))};
  } else {  // integer -> integer (wraps) or integer -> float/double
    return static_cast<D>(s);
  }
}

/// Formats like numpy's str() of a float: the shortest digits that read back as the same
/// value, positional for exponents in [-4, 16), else scientific ("1e-05", "1.5e+20").
template <class F>
std::string format_float(F v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const auto epos = sci.find('e');
  std::string mant = sci.substr(0, epos);
  const int exp = std::atoi(sci.c_str() + epos + 1);
  std::string sign;
  if (!mant.empty() && mant[0] == '-') {
    sign = "-";
    mant.erase(0, 1);
  }
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  if (exp >= -4 && exp < 16) {
    std::string out;
    if (exp < 0) {
      out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else if (static_cast<int>(digits.size()) <= exp + 1) {
      out = digits + std::string(static_cast<size_t>(exp + 1) - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<size_t>(exp + 1)) + "." + digits.substr(static_cast<size_t>(exp + 1));
    }
    return sign + out;
  }
  std::string m = digits.substr(0, 1);
  if (digits.size() > 1) m += "." + digits.substr(1);
  char e[16];
  std::snprintf(e, sizeof(e), "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
  return sign + m + e;
}

/// Parses a Cast string: decimal/scientific numbers and (case-insensitive) INF, +INF, -INF, NaN.
double parse_number(const KernelContext& ctx, const std::string& s) {
  const char* p = s.c_str();
  char* end = nullptr;
  const double v = std::strtod(p, &end);
  while (end && *end == ' ') ++end;
  if (end == p || (end && *end != '\0')) ctx.fail("cannot cast string '" + s + "' to a number");
  return v;
}

/// Strings to numbers: integers parse exactly when they are integer literals.
Tensor cast_from_string(const KernelContext& ctx, const Tensor& x, DataType to, bool saturate) {
  const auto& in = x.strings();
  if (is_integer_type(to) && data_type_bits(to) >= 8) {
    Tensor tmp(DataType::kInt64, x.shape());
    int64_t* p = tmp.mutable_data<int64_t>();
    for (size_t i = 0; i < in.size(); ++i) {
      const char* b = in[i].c_str();
      char* end = nullptr;
      const long long v = std::strtoll(b, &end, 10);
      char* uend = nullptr;
      const unsigned long long u = std::strtoull(b, &uend, 10);
      if (end != b && *end == '\0' && v != LLONG_MIN && v != LLONG_MAX) p[i] = v;
      else if (to == DataType::kUInt64 && uend != b && *uend == '\0' && b[0] != '-') p[i] = static_cast<int64_t>(u);
      else p[i] = float_to_int<int64_t>(parse_number(ctx, in[i]));
    }
    return cast_tensor(ctx, tmp, to, saturate);
  }
  Tensor tmp(DataType::kDouble, x.shape());
  double* p = tmp.mutable_data<double>();
  for (size_t i = 0; i < in.size(); ++i) {
    std::string s = in[i];
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (to == DataType::kBool && (s == "true" || s == "false")) p[i] = s == "true";
    else p[i] = parse_number(ctx, in[i]);
  }
  if (to == DataType::kFloat) {  // parse float32 directly: double rounding could differ
    Tensor out(DataType::kFloat, x.shape());
    for (size_t i = 0; i < in.size(); ++i) {
      const char* b = in[i].c_str();
      char* end = nullptr;
      out.mutable_data<float>()[i] = std::strtof(b, &end);
    }
    return out;
  }
  return cast_tensor(ctx, tmp, to, saturate);
}

Tensor cast_to_string(const KernelContext& ctx, const Tensor& x) {
  Tensor out(DataType::kString, x.shape());
  auto& s = out.mutable_strings();
  const int64_t n = x.size();
  if (x.dtype() == DataType::kFloat) {
    for (int64_t i = 0; i < n; ++i) s[static_cast<size_t>(i)] = format_float(x.data<float>()[i]);
  } else if (x.dtype() == DataType::kDouble) {
    for (int64_t i = 0; i < n; ++i) s[static_cast<size_t>(i)] = format_float(x.data<double>()[i]);
  } else if (is_float_type(x.dtype())) {
    Tensor f = cast_tensor(ctx, x, DataType::kFloat, true);
    for (int64_t i = 0; i < n; ++i) s[static_cast<size_t>(i)] = format_float(f.data<float>()[i]);
  } else if (x.dtype() == DataType::kBool) {
    for (int64_t i = 0; i < n; ++i) s[static_cast<size_t>(i)] = x.data<uint8_t>()[i] ? "1" : "0";
  } else {
    visit_or_fail<kInts>(ctx, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < n; ++i) s[static_cast<size_t>(i)] = std::to_string(x.data<T>()[i]);
    });
  }
  return out;
}

}  // namespace

Tensor cast_tensor(const KernelContext& ctx, const Tensor& x, DataType to, bool saturate) {
  const DataType from = x.dtype();
  if (from == to) return x;
  if (from == DataType::kString) return cast_from_string(ctx, x, to, saturate);
  if (to == DataType::kString) return cast_to_string(ctx, x);
  const int64_t n = x.size();
  if (is_float8(from)) {
    Tensor tmp(DataType::kDouble, x.shape());
    const uint8_t* p = x.data<uint8_t>();
    double* q = tmp.mutable_data<double>();
    for (int64_t i = 0; i < n; ++i) q[i] = float8_to_double(from, p[i]);
    return cast_tensor(ctx, tmp, to, saturate);
  }
  if (is_float8(to)) {
    const Tensor d = cast_tensor(ctx, x, DataType::kDouble, saturate);
    Tensor out(to, x.shape());
    const double* p = d.data<double>();
    uint8_t* q = out.mutable_data<uint8_t>();
    parallel_ranges(n, kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) q[i] = double_to_float8(to, p[i], saturate);
    });
    return out;
  }
  Tensor out;
  const bool ok = visit<kAllPlain>(from, [&](auto stag) {
    using S = typename decltype(stag)::type;
    visit<kAllPlain>(to, [&](auto dtag) {
      using D = typename decltype(dtag)::type;
      out = Tensor(to, x.shape());
      map_unary(x.data<S>(), out.mutable_data<D>(), n, [](S v) { return convert_element<S, D>(v); });
    });
  });
  if (!ok || !out.valid())
    ctx.fail("Cast from " + type_name(from) + " to " + type_name(to) + " is not supported");
  return out;
}

namespace {

void cast_kernel(KernelContext& ctx) {
  const ir::Attribute* attr = ctx.node().attr("to");
  if (!attr) ctx.fail("Cast needs the 'to' attribute");
  int64_t to = attr->i;
  if (attr->attr_type() == ir::AttrType::kString) {  // Cast-1: a type name such as "FLOAT"
    std::string name = attr->s;
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const auto t = ir::parse_data_type(name);
    if (!t) ctx.fail("Cast 'to' names no data type: '" + attr->s + "'");
    to = static_cast<int64_t>(*t);
  }
  if (!ir::is_valid_data_type(static_cast<int32_t>(to)))
    ctx.fail("Cast 'to' " + std::to_string(to) + " is not a data type");
  const bool saturate = ctx.attr_int("saturate", 1) != 0;
  ctx.set_output(0, cast_tensor(ctx, ctx.input(0), static_cast<DataType>(to), saturate));
}

void cast_like_kernel(KernelContext& ctx) {
  const bool saturate = ctx.attr_int("saturate", 1) != 0;
  ctx.set_output(0, cast_tensor(ctx, ctx.input(0), ctx.input(1).dtype(), saturate));
}

// ---------------------------------------------------------------- BitCast

void bit_cast(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!ctx.has_attr("to")) ctx.fail("BitCast needs the 'to' attribute");
  const int64_t to_code = ctx.attr_int("to", 0);
  if (to_code <= 0 || to_code > INT32_MAX || !ir::is_valid_data_type(static_cast<int32_t>(to_code)))
    ctx.fail("'to' = " + std::to_string(to_code) + " is not a data type");
  const auto to = static_cast<DataType>(to_code);
  if (x.dtype() == DataType::kString || to == DataType::kString) ctx.fail("BitCast does not take string tensors");
  const int from_bits = ir::data_type_bits(x.dtype()), to_bits = ir::data_type_bits(to);
  if (from_bits <= 0 || to_bits <= 0 || from_bits != to_bits)
    ctx.fail("cannot bitcast " + type_name(x.dtype()) + " (" + std::to_string(from_bits) + " bits) to " + type_name(to) +
             " (" + std::to_string(to_bits) + " bits)");
  // Same width means the same little-endian storage (sub-byte types pack alike).
  Tensor& y = ctx.output(0, to, x.shape());
  if (x.bytes() > 0) std::memcpy(y.mutable_raw(), x.raw(), x.bytes());
}

}  // namespace

void register_cast_kernels(KernelRegistry& r) {
  r.add("Cast", cast_kernel);
  r.add("CastLike", cast_like_kernel);
  r.add("BitCast", bit_cast);
}

}  // namespace onnxtool::runner::cpu
