// float32 -> float16 guided by runs of the model: what `onnxtool convert --to-fp16` does when it
// verifies. Values whose measured range does not fit float16 stay float32 from the start; then,
// while the float16 result is beyond tolerance, the first value where it departs from the
// float32 model is kept in float32 too (its producer's inputs, when keeping the value itself
// did not help), and the conversion is redone — onnxruntime's auto mixed precision idea,
// localized by one pair of runs per round. Where a few rounds do not localize it (an error that
// grows a little at every layer), the shortest head of the graph kept whole in float32 is found
// by bisection.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "convert/precision.h"
#include "ir/graph.h"
#include "ir/progress.h"
#include "verify/reference.h"

namespace onnxtool::verify {

/// Rounds of localization before bisecting: each keeps at least one more value in float32.
constexpr int kLocalizedRounds = 8;

struct GuidedFp16 {
  ir::Model model;                           ///< the float16 model of the last round
  convert::PrecisionReport report;           ///< its conversion report
  VerifyResult verified;                     ///< its check against the reference: ok() unless it gave up
  std::vector<std::string> range_values;     ///< kept float32: beyond kFloat16RangeLimit
  std::vector<std::string> accuracy_values;  ///< kept float32: float16 departed there
  int rounds = 0;                            ///< conversions beyond the first
  /// When localizing did not suffice: the first head_nodes nodes in run order (a control-flow
  /// node's bodies just before it), up to head_last (as Node::describe() says), kept in float32
  /// whole. 0: none.
  size_t head_nodes = 0;
  std::string head_last;
  size_t graph_nodes = 0;  ///< the nodes of every graph, when the head was searched (else 0)
  /// The float16 headroom the verification inputs showed: the largest finite magnitude of a float
  /// value the conversion did not keep in float32 for its range, and that value's name ("" when
  /// none). Far below 65504 on random inputs says nothing of real ones.
  double largest_magnitude = 0;
  std::string largest_value;
};

/// `base` is the float32 model as the caller prepared it (loaded, opset-converted,
/// preprocessed); it is only run. `prepare` returns a fresh copy of it on each call, for each
/// round's conversion. `reference` is the original run on the verification inputs.
/// `options.keep_float32_values` and `keep_float32_for_accuracy` may list values already; the
/// measured ones are added. Never throws for accuracy: the caller reads `verified`.
/// `progress` hears each round begin (phase kGuidedFp16Phase, no total: the rounds end when
/// the result is within tolerance).
GuidedFp16 to_fp16_guided(ir::Model& base, const std::function<ir::Model()>& prepare, convert::Fp16Options options,
                          const Reference& reference, const Tolerance& tolerance,
                          const ir::Progress& progress = {});

/// The progress phase of to_fp16_guided.
inline constexpr const char* kGuidedFp16Phase = "float16 conversion guided by verification runs";

}  // namespace onnxtool::verify
