// The result checks of `extract` and `edit`, and their reports.
#include "cli/surgery.h"

#include <sstream>

#include "cli/common.h"
#include "cli/verify.h"
#include "ir/error.h"

namespace onnxtool::cli {

void refuse_mismatch(const verify::SurgeryCheck& check) {
  if (!check.result.ok())
    throw Error(ErrorKind::kFailed, "verification failed: " + check.result.first_failure() +
                                        "; nothing written (--no-verify writes it anyway)");
}

nlohmann::json surgery_json(const std::optional<verify::SurgeryCheck>& check, const verify::Tolerance& tolerance) {
  if (!check) return nullptr;
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& c : check->result.outputs) {
    nlohmann::json o{{"name", c.name}, {"type", c.type}, {"within", c.within}};
    if (c.diff.elements) o.update({{"max_abs_error", c.diff.max_abs}, {"elements_differing", c.diff.beyond + c.diff.nonfinite_count}});
    outputs.push_back(o);
  }
  return {{"inputs", check->inputs},
          {"random_inputs", check->random_inputs},
          {"note", random_note_json(check->random_inputs)},
          {"tolerance", tolerance_json(tolerance)},
          {"outputs", outputs},
          {"ok", check->result.ok()}};
}

std::string surgery_summary(const verify::SurgeryCheck& check, const verify::Tolerance& tolerance) {
  size_t identical = 0;
  double max_abs = 0;
  for (const auto& c : check.result.outputs) {
    if (c.diff.max_abs == 0 && c.within) ++identical;
    max_abs = std::max(max_abs, c.diff.max_abs);
  }
  std::ostringstream s;
  s << "verified " << check.result.outputs.size() << " output(s) on " << check.inputs << ": " << identical
    << " identical";
  if (identical < check.result.outputs.size()) s << ", max abs error " << max_abs;
  s << " (" << tolerance.name << " tolerance)";
  if (check.random_inputs) s << "\nnote: " << random_inputs_note();
  return s.str();
}

}  // namespace onnxtool::cli
