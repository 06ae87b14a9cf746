// What `extract` and `edit` share: the check of their result before it is written, and how it
// is reported.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "verify/surgery.h"

namespace onnxtool::cli {

/// Refuses (Error kFailed) a result whose outputs differ from the original's.
void refuse_mismatch(const verify::SurgeryCheck& check);

/// The run's facts for --json: inputs, tolerance, each output, ok; null when nothing ran.
nlohmann::json surgery_json(const std::optional<verify::SurgeryCheck>& check, const verify::Tolerance& tolerance);

/// "verified 2 output(s) on random (seed 0): x=float32[1,3]: 2 exact (exact tolerance)".
std::string surgery_summary(const verify::SurgeryCheck& check, const verify::Tolerance& tolerance);

}  // namespace onnxtool::cli
