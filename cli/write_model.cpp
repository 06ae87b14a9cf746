// write_model: the check every written model passes, and its report.
#include "cli/write_model.h"

#include <algorithm>
#include <filesystem>
#include <iostream>

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

std::string output_or_in_place(const std::string& model, const std::string& output, bool in_place) {
  // --in-place alone names the input as the output: the result goes through a temporary file
  // renamed over it, so the model is either the old one or the new one, never a mix.
  if (output.empty() && !in_place)
    throw_usage_error("no output: pass -o OUT, or --in-place to replace " + model + " with the result");
  return output.empty() ? model : output;
}

void refuse_overwriting_input(const std::string& model, const std::string& output, bool in_place) {
  if (ir::same_file(model, output) && !in_place)
    throw_usage_error(output + ": is the input model itself; pass --in-place to overwrite it");
}

void refuse_overwriting_input(const std::string& model, const std::string& output) {
  if (ir::same_file(model, output)) throw_usage_error(output + ": is the input model itself; choose another output");
}

void refuse_in_place_elsewhere(const std::string& model, const std::string& output, bool in_place) {
  if (in_place && !ir::same_file(model, output))
    throw_usage_error("--in-place: " + output + " is not the input model; leave out -o to replace " + model +
                      ", or --in-place to write " + output);
}

uint64_t saved_bytes(const ir::SaveReport& saved) { return saved.model_bytes + saved.data_bytes; }

uint64_t stored_bytes(const ir::LoadInfo& info) {
  uint64_t total = info.file_size;
  for (const std::string& location : info.external_files) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(std::filesystem::path(info.base_dir) / location, ec);
    if (!ec) total += size;  // a missing file failed the load already
  }
  return total;
}

void print_sorted(const WrittenModel& written) {
  if (written.sorted_nodes)
    std::cout << "sorted: " << written.sorted_nodes << " nodes moved into topological order (the input was stored out of order)\n";
}

void print_wrote(const std::string& path, const WrittenModel& written) {
  print_sorted(written);
  std::cout << "wrote " << path << " (" << human_bytes(saved_bytes(written.saved)) << ")\n";
}

nlohmann::json written_json(const WrittenModel& written) {
  return {{"sorted_nodes", written.sorted_nodes}, {"check_warnings", written.warnings}};
}

nlohmann::json file_bytes_json(uint64_t before, const ir::SaveReport& saved) {
  return {{"before", before}, {"after", saved_bytes(saved)}};
}

}  // namespace onnxtool::cli
