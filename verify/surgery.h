// The checks of `extract` and `edit` before they write: the result run against the original on
// the runner.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "ir/diagnostic.h"
#include "ir/graph.h"
#include "verify/reference.h"

namespace onnxtool::verify {

struct SurgeryCheck {
  VerifyResult result;
  std::string inputs;  ///< how the original's inputs were chosen, and their shapes
  bool random_inputs = false;  ///< made up, not given (Reference::random_inputs)
};

/// Runs `original` on `inputs`, keeps the values of its main graph that `extracted` takes as
/// inputs and gives as outputs, runs `extracted` on those and compares its outputs with them.
/// Throws Error(kFailed) when either model does not run (see Reference).
SurgeryCheck verify_extracted(ir::Model& original, ir::Model& extracted, const VerifyInputs& inputs,
                              const Tolerance& tolerance);

/// Runs both models on the same inputs (fed to `edited` under the names `input_renames` gives
/// them) and compares the outputs in order.
SurgeryCheck verify_edited(ir::Model& original, ir::Model& edited, const std::map<std::string, std::string>& input_renames,
                           const VerifyInputs& inputs, const Tolerance& tolerance);

}  // namespace onnxtool::verify
