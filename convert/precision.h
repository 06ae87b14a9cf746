// Precision conversion: float32 -> float16 (weights and compute, sensitive ops kept in float32
// behind Casts) and float16/bfloat16 -> float32 (removing the Casts that become redundant).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnxtool::convert {

/// The precision change a conversion asks for.
enum class Precision { kKeep, kFloat16, kFloat32 };

/// float16's largest finite value.
constexpr double kFloat16Max = 65504;
/// Values whose measured magnitude reaches this stay float32 under range-guided conversion: a
/// quarter of float16's largest finite value, headroom for inputs larger than the ones measured.
constexpr double kFloat16RangeLimit = 16384;

struct Fp16Options {
  /// Graph inputs and outputs stay float32 (Casts at the boundary).
  bool keep_io_types = false;
  /// Op types kept in float32 in addition to the built-in list of numerically sensitive ops.
  std::vector<std::string> block_ops;
  /// Values whose range does not fit float16 (measured by the caller on sample inputs): the
  /// nodes that produce or read them stay float32.
  std::set<std::string> keep_float32_values;
  /// Values where float16 was measured to lose beyond tolerance (see verify::to_fp16_guided): the
  /// nodes that produce or read them stay float32.
  std::set<std::string> keep_float32_for_accuracy;
  /// Convert the nodes of runtime_departures()' patterns too (by default they stay float32).
  bool allow_runtime_bugs = false;
};

/// The nodes one pattern of runtime_departures() kept in float32.
struct RuntimeKept {
  std::string pattern, runtime, doc;  ///< as the table's row says
  std::vector<std::string> nodes;     ///< as Node::describe() says
};

struct PrecisionReport {
  int64_t converted_initializers = 0;  ///< float initializers / constants whose type changed
  int64_t converted_values = 0;        ///< value types changed (inputs, outputs, value_info)
  int64_t casts_added = 0;
  int64_t casts_removed = 0;
  int64_t blocked_nodes = 0;  ///< nodes kept in float32
  /// The nodes kept in float32 only because of keep_float32_values (as Node::describe() says).
  std::vector<std::string> range_blocked;
  /// The nodes kept in float32 only because of keep_float32_for_accuracy.
  std::vector<std::string> accuracy_blocked;
  /// The nodes kept in float32 because a runtime departs from the spec on them in float16, by
  /// pattern in table order (patterns that matched nothing left out).
  std::vector<RuntimeKept> runtime_blocked;
};

/// float32 -> float16. Throws Error(kUsage) when the model has no float32 tensors to convert.
PrecisionReport to_fp16(ir::Model& model, const Fp16Options& options);

/// float16 and bfloat16 -> float32; sorts the graph topologically. Throws Error(kUsage) when the
/// model has no float16/bfloat16 tensors.
PrecisionReport to_fp32(ir::Model& model);

/// The preprocessing `convert --to-fp16` runs first (unless --no-preprocess): the optimize
/// pipeline without fuse_conv_input_affine. BatchNormalization, Conv + Add/Mul... folded first:
/// an unfolded BatchNorm after a Conv whose outputs reach thousands loses the normalized value to
/// float16 rounding (PaddleOCR det: cosine 0.2 unfolded, 0.999 folded). Not
/// fuse_conv_input_affine: it would move a Mul/Add that --block-ops keeps in float32 into a
/// float16 Conv's weights (PaddleOCR rec's learnable scales of 0.02: cosine 0.9998 -> 0.996).
void preprocess_for_fp16(ir::Model& model);

}  // namespace onnxtool::convert
