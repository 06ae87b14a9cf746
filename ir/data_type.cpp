// Facts about ONNX element types.
#include "ir/data_type.h"

#include <array>
#include <cstring>
#include <limits>

namespace onnxtool::ir {
namespace {

struct TypeFacts {
  std::string_view name;
  int bits;
};

// Indexed by the DataType number.
constexpr std::array<TypeFacts, kMaxDataType + 1> kFacts = {{
    {"undefined", 0},      {"float", 32},         {"uint8", 8},
    {"int8", 8},           {"uint16", 16},        {"int16", 16},
    {"int32", 32},         {"int64", 64},         {"string", 0},
    {"bool", 8},           {"float16", 16},       {"double", 64},
    {"uint32", 32},        {"uint64", 64},        {"complex64", 64},
    {"complex128", 128},   {"bfloat16", 16},      {"float8e4m3fn", 8},
    {"float8e4m3fnuz", 8}, {"float8e5m2", 8},     {"float8e5m2fnuz", 8},
    {"uint4", 4},          {"int4", 4},           {"float4e2m1", 4},
    {"float8e8m0", 8},     {"uint2", 2},          {"int2", 2},
}};

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

bool is_float_type(DataType type) {
  switch (type) {
    case DataType::kFloat:
    case DataType::kFloat16:
    case DataType::kDouble:
    case DataType::kBFloat16:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kFloat4E2M1:
    case DataType::kFloat8E8M0:
      return true;
    default:
      return false;
  }
}

bool is_integer_type(DataType type) {
  switch (type) {
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kUInt16:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kUInt32:
    case DataType::kUInt64:
    case DataType::kUInt4:
    case DataType::kInt4:
    case DataType::kUInt2:
    case DataType::kInt2:
      return true;
    default:
      return false;
  }
}

bool is_signed_type(DataType type) {
  switch (type) {
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kInt4:
    case DataType::kInt2:
      return true;
    default:
      return is_float_type(type) && type != DataType::kFloat8E8M0;
  }
}

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

}  // namespace onnxtool::ir
