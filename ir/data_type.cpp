// Facts about ONNX element types.
#include "ir/data_type.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

namespace onnxtool::ir {
namespace {

enum class Kind { kOther, kFloat, kInteger };

struct TypeFacts {
  std::string_view name;
  int bits;
  Kind kind;
};

constexpr Kind F = Kind::kFloat, I = Kind::kInteger, O = Kind::kOther;

// Indexed by the DataType number.
constexpr std::array<TypeFacts, kMaxDataType + 1> kFacts = {{
    {"undefined", 0, O},      {"float", 32, F},      {"uint8", 8, I},
    {"int8", 8, I},           {"uint16", 16, I},     {"int16", 16, I},
    {"int32", 32, I},         {"int64", 64, I},      {"string", 0, O},
    {"bool", 8, O},           {"float16", 16, F},    {"double", 64, F},
    {"uint32", 32, I},        {"uint64", 64, I},     {"complex64", 64, O},
    {"complex128", 128, O},   {"bfloat16", 16, F},   {"float8e4m3fn", 8, F},
    {"float8e4m3fnuz", 8, F}, {"float8e5m2", 8, F},  {"float8e5m2fnuz", 8, F},
    {"uint4", 4, I},          {"int4", 4, I},        {"float4e2m1", 4, F},
    {"float8e8m0", 8, F},     {"uint2", 2, I},       {"int2", 2, I},
}};

Kind kind_of(DataType type) {
  auto v = static_cast<int32_t>(type);
  if (v < 0 || v > kMaxDataType) return Kind::kOther;
  return kFacts[static_cast<size_t>(v)].kind;
}

}  // namespace

bool is_valid_data_type(int32_t value) { return value >= 1 && value <= kMaxDataType; }

std::string_view data_type_name(DataType type) {
  auto v = static_cast<int32_t>(type);
  if (v < 0 || v > kMaxDataType) return "unknown";
  return kFacts[static_cast<size_t>(v)].name;
}

std::optional<DataType> parse_data_type(std::string_view name) {
  for (int32_t v = 0; v <= kMaxDataType; ++v)
    if (kFacts[static_cast<size_t>(v)].name == name) return static_cast<DataType>(v);
  if (name == "float32" || name == "fp32") return DataType::kFloat;
  if (name == "float64" || name == "fp64") return DataType::kDouble;
  if (name == "fp16" || name == "half") return DataType::kFloat16;
  if (name == "bf16") return DataType::kBFloat16;
  return std::nullopt;
}

int data_type_bits(DataType type) {
  auto v = static_cast<int32_t>(type);
  if (v < 0 || v > kMaxDataType) return 0;
  return kFacts[static_cast<size_t>(v)].bits;
}

std::optional<uint64_t> storage_bytes(DataType type, uint64_t count) {
  const int bits = data_type_bits(type);
  if (bits == 0) return std::nullopt;
  if (bits >= 8) {
    const uint64_t size = static_cast<uint64_t>(bits / 8);
    if (count > std::numeric_limits<uint64_t>::max() / size) return std::nullopt;
    return count * size;
  }
  const uint64_t per_byte = static_cast<uint64_t>(8 / bits);
  return count / per_byte + (count % per_byte != 0 ? 1 : 0);
}

bool is_float_type(DataType type) { return kind_of(type) == Kind::kFloat; }

bool is_integer_type(DataType type) { return kind_of(type) == Kind::kInteger; }

std::optional<uint64_t> element_count(const int64_t* dims, size_t rank) {
  uint64_t n = 1;
  for (size_t i = 0; i < rank; ++i) {
    if (dims[i] < 0) return std::nullopt;
    const auto d = static_cast<uint64_t>(dims[i]);
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / d) return std::nullopt;
    n *= d;
  }
  return n;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      uint32_t m = man;
      do {
        ++e;
        m <<= 1;
      } while ((m & 0x400) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (m & 0x3ff) << 13;
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | man << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | man << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00);  // rounds to infinity
  if (abs < 0x38800000u) {
    // Subnormal half (or zero): shift the implicit-one mantissa into place, round to nearest even.
    if (abs < 0x33000000u) return sign;
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffff) | 0x800000;
    const uint32_t shift = 126 - e;  // 14 + (112 - e)
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = abs - 0x38000000u;  // rebias exponent 127 -> 15
  const uint32_t rem = r & 0x1fff;
  r >>= 13;
  if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) ++r;
  return static_cast<uint16_t>(sign | r);
}

float bfloat16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_bfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // NaN stays NaN
  const uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

namespace {

/// A float8 format: exponent/mantissa widths, bias, and how NaN/Inf/-0 are encoded.
struct Float8Format {
  int exp_bits, man_bits, bias;
  bool ieee;  ///< E5M2: all-ones exponent is Inf (mantissa 0) or NaN
  bool fnuz;  ///< FNUZ: 0x80 is NaN, no negative zero, no Inf
  // Otherwise (E4M3FN): only S.1111.111 is NaN, no Inf.
};

const Float8Format* float8_format(DataType t) {
  static const Float8Format e4m3fn{4, 3, 7, false, false};
  static const Float8Format e4m3fnuz{4, 3, 8, false, true};
  static const Float8Format e5m2{5, 2, 15, true, false};
  static const Float8Format e5m2fnuz{5, 2, 16, false, true};
  switch (t) {
    case DataType::kFloat8E4M3FN: return &e4m3fn;
    case DataType::kFloat8E4M3FNUZ: return &e4m3fnuz;
    case DataType::kFloat8E5M2: return &e5m2;
    case DataType::kFloat8E5M2FNUZ: return &e5m2fnuz;
    default: return nullptr;
  }
}

double float8_max(const Float8Format& f) {
  const int max_exp_field = (1 << f.exp_bits) - 1 - (f.ieee ? 1 : 0);
  const int max_man = (1 << f.man_bits) - 1 - ((!f.ieee && !f.fnuz) ? 1 : 0);  // E4M3FN: S.1111.111 is NaN
  return std::ldexp(1.0 + max_man / double(1 << f.man_bits), max_exp_field - f.bias);
}

double float8_decode(const Float8Format& f, uint8_t b) {
  if (f.fnuz && b == 0x80) return std::numeric_limits<double>::quiet_NaN();
  const bool neg = b & 0x80;
  const int e = (b >> f.man_bits) & ((1 << f.exp_bits) - 1);
  const int m = b & ((1 << f.man_bits) - 1);
  double v;
  if (f.ieee && e == (1 << f.exp_bits) - 1) {
    v = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (!f.ieee && !f.fnuz && (b & 0x7f) == 0x7f) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    v = std::ldexp(m, 1 - f.bias - f.man_bits);
  } else {
    v = std::ldexp(1.0 + m / double(1 << f.man_bits), e - f.bias);
  }
  return neg ? -v : v;
}

/// Rounds to nearest even; out of range saturates to +-max or becomes Inf/NaN (the spec's tables).
uint8_t float8_encode(const Float8Format& f, double x, bool saturate) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  const uint8_t nan = f.fnuz ? 0x80 : static_cast<uint8_t>(sign | 0x7f);
  const uint8_t max_code = static_cast<uint8_t>(((1 << f.exp_bits) - 1 - (f.ieee ? 1 : 0)) << f.man_bits |
                                                ((1 << f.man_bits) - 1 - ((!f.ieee && !f.fnuz) ? 1 : 0)));
  const auto overflow = [&]() -> uint8_t {
    if (saturate) return f.fnuz ? max_code | (sign ? 0x80 : 0) : (sign | max_code);
    if (f.ieee) return static_cast<uint8_t>(sign | 0x7c);
    return nan;
  };
  if (std::isnan(x)) return nan;
  if (std::isinf(x)) return overflow();
  double a = std::fabs(x);
  const int emin = 1 - f.bias;
  int e2;
  std::frexp(a, &e2);
  const int e_unb = a == 0 ? emin : std::max(e2 - 1, emin);
  const double quantum = std::ldexp(1.0, e_unb - f.man_bits);
  a = std::nearbyint(a / quantum) * quantum;
  if (a > float8_max(f)) return overflow();
  if (a == 0) return f.fnuz ? 0 : sign;
  uint8_t code;
  if (a < std::ldexp(1.0, emin)) {
    code = static_cast<uint8_t>(a / std::ldexp(1.0, emin - f.man_bits));
  } else {
    std::frexp(a, &e2);
    const int e = e2 - 1;
    const int m = static_cast<int>((a / std::ldexp(1.0, e) - 1.0) * (1 << f.man_bits));
    code = static_cast<uint8_t>((e + f.bias) << f.man_bits | m);
  }
  return static_cast<uint8_t>(sign | code);
}

/// Rounds a double once (to nearest even) into an IEEE-style binary format with `exp_bits` and
/// `man_bits` (float16: 5/10, bfloat16: 8/7); overflow gives infinity. Going through float
/// first would round twice.
uint16_t double_to_ieee16(double x, int exp_bits, int man_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int emin = 1 - bias;
  const uint32_t inf = ((1u << exp_bits) - 1) << man_bits;
  const uint32_t sign = std::signbit(x) ? 1u << (exp_bits + man_bits) : 0;
  if (std::isnan(x)) return static_cast<uint16_t>(inf | 1u << (man_bits - 1));
  double a = std::fabs(x);
  if (std::isinf(a)) return static_cast<uint16_t>(sign | inf);
  int e2;
  std::frexp(a, &e2);
  const int e_unb = a == 0 ? emin : std::max(e2 - 1, emin);
  const double quantum = std::ldexp(1.0, e_unb - man_bits);
  a = std::nearbyint(a / quantum) * quantum;
  if (a >= std::ldexp(1.0, bias + 1)) return static_cast<uint16_t>(sign | inf);
  if (a == 0) return static_cast<uint16_t>(sign);
  if (a < std::ldexp(1.0, emin))
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(a / std::ldexp(1.0, emin - man_bits)));
  std::frexp(a, &e2);
  const int e = e2 - 1;
  const uint32_t m = static_cast<uint32_t>((a / std::ldexp(1.0, e) - 1.0) * (1 << man_bits));
  return static_cast<uint16_t>(sign | static_cast<uint32_t>(e + bias) << man_bits | m);
}


}  // namespace

uint16_t double_to_half(double x) { return double_to_ieee16(x, 5, 10); }
uint16_t double_to_bfloat16(double x) { return double_to_ieee16(x, 8, 7); }

bool is_float8(DataType type) { return float8_format(type) != nullptr; }
double float8_to_double(DataType type, uint8_t code) { return float8_decode(*float8_format(type), code); }
uint8_t double_to_float8(DataType type, double x, bool saturate) {
  return float8_encode(*float8_format(type), x, saturate);
}

}  // namespace onnxtool::ir
