// Quantization parameters: the scale and zero point that map a real range onto an integer type.
#pragma once

#include <cstdint>
#include <string>

#include "ir/data_type.h"

namespace onnxtool::quant {

/// The integer types onnxtool quantizes to.
enum class QuantType { kInt8, kUInt8 };

ir::DataType data_type_of(QuantType type);
const char* name_of(QuantType type);

/// How a range becomes parameters.
struct ParamOptions {
  /// Range symmetric around 0: zero point 0 (int8) or 128 (uint8), exactly.
  bool symmetric = false;
  /// 7-bit range (int8 [-64, 64], uint8 [0, 127]) for CPUs whose int8 dot products saturate.
  bool reduce_range = false;
};

struct QuantParams {
  float scale = 1;
  int32_t zero_point = 0;
  QuantType type = QuantType::kUInt8;
};

/// The integer range [qmin, qmax] used for a type and options (symmetric int8 uses [-127, 127]
/// so that the range is symmetric).
void integer_range(QuantType type, const ParamOptions& options, int32_t& qmin, int32_t& qmax);

/// Parameters for the real range [rmin, rmax]: the range is first widened to include 0 (so that
/// zero is exactly representable); a degenerate range (all zeros) gets scale 1; the scale is
/// never 0, negative, NaN or Inf. Non-finite bounds are an internal error (callers filter them).
QuantParams compute_params(double rmin, double rmax, QuantType type, const ParamOptions& options);

/// Round half to even, as QuantizeLinear does.
double round_half_even(double x);

}  // namespace onnxtool::quant
