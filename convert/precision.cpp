// Placeholder until the precision converter lands.
#include "convert/precision.h"

#include "ir/error.h"

namespace onnxtool::convert {
PrecisionReport to_fp16(ir::Model&, const Fp16Options&) { throw_usage_error("--to-fp16 is not built yet"); }
PrecisionReport to_fp32(ir::Model&) { throw_usage_error("--to-fp32 is not built yet"); }
}  // namespace onnxtool::convert
