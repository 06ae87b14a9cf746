// ONNX element types: the enum of TensorProto.DataType and the facts every component needs.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace onnxtool::ir {

/// Values are TensorProto.DataType's numbers, so a stored int32 converts by cast.
enum class DataType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUInt4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUInt2 = 25,
  kInt2 = 26,
};

constexpr int32_t kMaxDataType = 26;

/// True for 1..kMaxDataType.
bool is_valid_data_type(int32_t value);

/// The spec's lower-case name ("float", "float16", "int4", ...); "undefined(N)"-free: unknown
/// values give "unknown".
std::string_view data_type_name(DataType type);

/// Parses a name produced by data_type_name (also accepts "float32"/"fp32"-style aliases).
std::optional<DataType> parse_data_type(std::string_view name);

/// Bits one element occupies in raw_data: 32 for float, 4 for int4, 0 for string/undefined.
int data_type_bits(DataType type);

/// Bytes that `count` elements occupy in raw_data (sub-byte types packed, rounded up);
/// nullopt on overflow or for types without a fixed size (string, undefined).
std::optional<uint64_t> storage_bytes(DataType type, uint64_t count);

bool is_float_type(DataType type);    ///< any floating-point type, float8/float4 included
bool is_integer_type(DataType type);  ///< signed or unsigned integers, sub-byte ones included

/// Product of dims, overflow-checked; nullopt when a dim is negative or the product overflows.
std::optional<uint64_t> element_count(const int64_t* dims, size_t rank);

/// float16 / bfloat16 bit patterns <-> float (round to nearest even; NaN stays NaN).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bfloat16_to_float(uint16_t b);
uint16_t float_to_bfloat16(float f);
/// A double rounded once (to nearest even) into float16 / bfloat16; overflow gives infinity.
/// (Through float first would round twice.)
uint16_t double_to_half(double x);
uint16_t double_to_bfloat16(double x);

/// The float8 types (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ): decoding, and encoding rounded to
/// nearest even, out-of-range values saturating to +-max when `saturate`, else Inf/NaN as the
/// spec's tables say. float8_to_double and double_to_float8 take float8 types only.
bool is_float8(DataType type);
double float8_to_double(DataType type, uint8_t code);
uint8_t double_to_float8(DataType type, double x, bool saturate);

}  // namespace onnxtool::ir
