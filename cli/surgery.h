// What `extract` and `edit` share: the check of their result before it is written, and how it
// is reported.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "passes/verify_surgery.h"

namespace onnxtool::cli {

/// Refuses (Error kFailed) a result whose outputs differ from the original's.
void refuse_mismatch(const passes::SurgeryCheck& check);

/// The run's facts for --json: inputs, tolerance, each output, ok; null when nothing ran.
nlohmann::json surgery_json(const std::optional<passes::SurgeryCheck>& check, const runner::Tolerance& tolerance);

/// "verified 2 output(s) on random (seed 0): x=float32[1,3]: 2 exact (exact tolerance)".
std::string surgery_summary(const passes::SurgeryCheck& check, const runner::Tolerance& tolerance);

}  // namespace onnxtool::cli
