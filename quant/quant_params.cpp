// Scale and zero point computation.
#include "quant/quant_params.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/error.h"

namespace onnxtool::quant {

ir::DataType data_type_of(QuantType type) { return type == QuantType::kInt8 ? ir::DataType::kInt8 : ir::DataType::kUInt8; }

const char* name_of(QuantType type) { return type == QuantType::kInt8 ? "int8" : "uint8"; }

void integer_range(QuantType type, const ParamOptions& o, int32_t& qmin, int32_t& qmax) {
  if (type == QuantType::kInt8) {
    qmin = o.reduce_range ? -64 : (o.symmetric ? -127 : -128);
    qmax = o.reduce_range ? 64 : 127;
  } else {
    qmin = 0;
    qmax = o.reduce_range ? 127 : 255;
  }
}

double round_half_even(double x) { return std::nearbyint(x); }  // the default rounding mode is to-nearest-even

QuantParams compute_params(double rmin, double rmax, QuantType type, const ParamOptions& o) {
  if (!std::isfinite(rmin) || !std::isfinite(rmax) || rmin > rmax)
    throw Error(ErrorKind::kInternal, "compute_params: invalid range [" + std::to_string(rmin) + ", " + std::to_string(rmax) + "]");
  rmin = std::min(rmin, 0.0);
  rmax = std::max(rmax, 0.0);
  int32_t qmin, qmax;
  integer_range(type, o, qmin, qmax);
  QuantParams p;
  p.type = type;
  if (o.symmetric) {
    const double absmax = std::max(std::fabs(rmin), std::fabs(rmax));
    rmin = -absmax;
    rmax = absmax;
  }
  double scale = (rmax - rmin) / static_cast<double>(qmax - qmin);
  // A degenerate range (all zeros) or one too small for float gets scale 1: every value is 0.
  if (!(scale >= static_cast<double>(std::numeric_limits<float>::min())) || !std::isfinite(static_cast<float>(scale))) {
    p.scale = 1.0f;
    p.zero_point = type == QuantType::kInt8 ? 0 : (o.symmetric ? 128 : 0);
    return p;
  }
  p.scale = static_cast<float>(scale);
  if (o.symmetric) {
    // Exact: 0 for int8, 128 for uint8 (the middle of [0, 255], rounded half to even).
    p.zero_point = type == QuantType::kInt8 ? 0 : (o.reduce_range ? 64 : 128);
  } else {
    const double zp = round_half_even(static_cast<double>(qmin) - rmin / static_cast<double>(p.scale));
    p.zero_point = static_cast<int32_t>(std::clamp(zp, static_cast<double>(qmin), static_cast<double>(qmax)));
  }
  return p;
}

}  // namespace onnxtool::quant
