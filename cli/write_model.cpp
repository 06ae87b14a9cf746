// write_model: the check every written model passes, and its report.
#include "cli/write_model.h"

#include <algorithm>

#include "cli/common.h"
#include "cli/progress.h"
#include "ir/error.h"

namespace onnxtool::cli {

checker::WriteCheck check_before_writing(ir::Model& model) {
  checker::WriteCheck gate = checker::check_for_writing(model);
  if (gate.result.errors) {
    std::string first;
    int shown = 0;
    for (const auto& d : gate.result.diagnostics) {
      if (d.severity != ir::Severity::kError || shown == 3) continue;
      first += (shown++ ? "; " : "") + describe(d);
    }
    const size_t n = gate.result.errors;
    // A declaration the nodes contradict mostly comes with the input (an exporter's stale
    // output shape), and has a fix of its own.
    const bool declarations = std::any_of(gate.result.diagnostics.begin(), gate.result.diagnostics.end(),
                                          [](const ir::Diagnostic& d) { return d.rule == "shape.declared-mismatch"; });
    throw Error(ErrorKind::kFailed, "the result fails onnxtool check (" + std::to_string(n) + " error" +
                                        (n == 1 ? "" : "s") + (n > 3 ? ", the first 3" : "") + ": " + first +
                                        "); nothing written" +
                                        (declarations ? "; declared shapes the nodes contradict are replaced by "
                                                        "`onnxtool edit MODEL --fix-declarations -o FIXED`"
                                                      : ""));
  }
  return gate;
}

WrittenModel save_checked(const checker::WriteCheck& gate, const ir::Model& model, const std::string& path,
                          const ir::SaveOptions& options) {
  WrittenModel w;
  w.sorted_nodes = gate.sorted_nodes;
  w.warnings = gate.result.warnings;
  report_step("writing " + path, 0, 1);
  w.saved = ir::save_model(model, path, options);
  report_step("writing " + path, 1, 1);
  return w;
}

WrittenModel write_model(ir::Model& model, const std::string& path, const ir::SaveOptions& options) {
  return save_checked(check_before_writing(model), model, path, options);
}

std::string sorted_line(const WrittenModel& written) {
  if (!written.sorted_nodes) return "";
  return "sorted: " + std::to_string(written.sorted_nodes) +
         " nodes moved into topological order (the input was stored out of order)";
}

nlohmann::json written_json(const WrittenModel& written) {
  return {{"sorted_nodes", written.sorted_nodes}, {"check_warnings", written.warnings}};
}

}  // namespace onnxtool::cli
