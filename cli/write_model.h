// The one way a subcommand writes a model: sorted, checked, then saved, or refused with nothing
// written.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "checker/checker.h"
#include "ir/graph.h"
#include "ir/model_io.h"

namespace onnxtool::cli {

/// What write_model did.
struct WrittenModel {
  ir::SaveReport saved;
  int64_t sorted_nodes = 0;  ///< nodes moved into topological order on the way
  size_t warnings = 0;       ///< the checker's warnings on what was written
};

/// The gate alone, for a command that checks its result before verifying it (edit, extract):
/// checker::check_for_writing, refusing (Error kFailed, one line naming the first errors,
/// "nothing written") a model with errors.
checker::WriteCheck check_before_writing(ir::Model& model);

/// Saves a model that passed check_before_writing and has not changed since.
WrittenModel save_checked(const checker::WriteCheck& gate, const ir::Model& model, const std::string& path,
                          const ir::SaveOptions& options = {});

/// Writes `model` to `path` through checker::check_for_writing: every graph sorted
/// topologically, then checked as `onnxtool check` checks a file. A result with errors is refused
/// (Error kFailed, one line naming the first errors and "nothing written"): onnxtool never writes
/// a model its own check rejects.
WrittenModel write_model(ir::Model& model, const std::string& path, const ir::SaveOptions& options = {});

/// The line write_model's sort earns in a command's text output ("" when nothing moved):
/// "sorted: 79 nodes moved into topological order (the input was stored out of order)".
std::string sorted_line(const WrittenModel& written);

/// {"sorted_nodes", "check_warnings"} for a command's --json.
nlohmann::json written_json(const WrittenModel& written);

}  // namespace onnxtool::cli
