// Opset version conversion of the default ONNX domain, between opsets 7 and 28, up and down,
// including subgraphs: every op whose signature or semantics changed between the two versions
// is rewritten to its equivalent at the target.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnxtool::convert {

constexpr int64_t kMinConvertOpset = 7;
constexpr int64_t kMaxConvertOpset = 28;

struct VersionReport {
  int64_t from = 0, to = 0;
  int64_t rewritten_nodes = 0;  ///< nodes whose inputs/attributes changed
  int64_t added_nodes = 0;      ///< helper nodes/initializers added for a rewrite
};

/// Converts the model's default-domain opset to `target`. Throws Error(kUsage) for a target
/// outside [7, 28], and Error(kFailed) naming the node and the reason when a node has no
/// equivalent at the target (the model is left unchanged in that case: the conversion works on
/// a copy only at the CLI level, so callers must not save a model after a throw).
VersionReport convert_opset(ir::Model& model, int64_t target);

}  // namespace onnxtool::convert
