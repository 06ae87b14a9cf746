// Precision conversion: float32 -> float16 (weights and compute, sensitive ops kept in float32
// behind Casts) and float16/bfloat16 -> float32 (removing the Casts that become redundant).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnxtool::convert {

struct Fp16Options {
  /// Graph inputs and outputs stay float32 (Casts at the boundary).
  bool keep_io_types = false;
  /// Op types kept in float32 in addition to the built-in list of numerically sensitive ops.
  std::vector<std::string> block_ops;
};

struct PrecisionReport {
  int64_t converted_initializers = 0;  ///< float initializers / constants whose type changed
  int64_t converted_values = 0;        ///< value types changed (inputs, outputs, value_info)
  int64_t casts_added = 0;
  int64_t casts_removed = 0;
  int64_t blocked_nodes = 0;  ///< nodes kept in float32
};

/// float32 -> float16. Throws Error(kUsage) when the model has no float32 tensors to convert.
PrecisionReport to_fp16(ir::Model& model, const Fp16Options& options);

/// float16 and bfloat16 -> float32; sorts the graph topologically. Throws Error(kUsage) when the
/// model has no float16/bfloat16 tensors.
PrecisionReport to_fp32(ir::Model& model);

}  // namespace onnxtool::convert
