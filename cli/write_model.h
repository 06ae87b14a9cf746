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

/// The output of a command that takes --in-place (convert, edit): -o OUT, or with --in-place
/// alone the input model itself; neither given is a usage error.
std::string output_or_in_place(const std::string& model, const std::string& output, bool in_place);
/// Refuses an output that is the input model itself, unless --in-place asks for that.
void refuse_overwriting_input(const std::string& model, const std::string& output, bool in_place);
/// The same for a command without --in-place (optimize, quantize, extract).
void refuse_overwriting_input(const std::string& model, const std::string& output);
/// Refuses --in-place with an -o naming another file: it would only lift the checks that keep
/// the input intact. After loading, when the output's folder is known to exist.
void refuse_in_place_elsewhere(const std::string& model, const std::string& output, bool in_place);

/// The bytes a save wrote: the model file and its external data.
uint64_t saved_bytes(const ir::SaveReport& saved);

/// The bytes a model is stored in as loaded: its file and the external data files it refers to
/// (what saved_bytes counts for the result, so that "before -> after" compares like with like).
uint64_t stored_bytes(const ir::LoadInfo& info);

/// Prints the line write_model's sort earns in a command's text output, when it moved nodes:
/// "sorted: 79 nodes moved into topological order (the input was stored out of order)".
void print_sorted(const WrittenModel& written);

/// The last lines of extract and edit: print_sorted's, then "wrote OUT (12.3 KB)".
void print_wrote(const std::string& path, const WrittenModel& written);

/// {"sorted_nodes", "check_warnings"} for a command's --json.
nlohmann::json written_json(const WrittenModel& written);

/// {"before", "after"}: the input file's size and the output's, for --json.
nlohmann::json file_bytes_json(uint64_t before, const ir::SaveReport& saved);

}  // namespace onnxtool::cli
