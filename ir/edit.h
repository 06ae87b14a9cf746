// Small edits of a model's interface and metadata (`onnxtool edit`): renaming graph inputs and
// outputs, setting input dims (then re-inferring the shapes that follow), metadata.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace onnxtool::ir {

struct EditRequest {
  std::vector<std::pair<std::string, std::string>> rename_inputs;   ///< OLD, NEW
  std::vector<std::pair<std::string, std::string>> rename_outputs;  ///< OLD, NEW
  std::vector<std::pair<std::string, std::vector<Dim>>> input_shapes;
  std::vector<std::pair<std::string, std::string>> set_metadata;  ///< KEY, VALUE
  std::vector<std::string> remove_metadata;
  std::optional<std::string> producer_name;
  std::optional<std::string> doc_string;
  /// Re-infer every declared shape (value_info, graph outputs) from the inputs even when no input
  /// shape changes: declarations the model's own nodes contradict are replaced.
  bool fix_declarations = false;

  bool changes_shapes() const { return !input_shapes.empty() || fix_declarations; }
};

struct EditReport {
  size_t renamed = 0;
  size_t shapes_set = 0;
  /// value_info and graph output declarations rewritten by the re-inference after new input
  /// shapes (their old dims were stale), and those whose shape inference could no longer tell
  /// (their shape dropped, the element type kept).
  size_t declarations_updated = 0;
  size_t declarations_cleared = 0;
  size_t metadata_set = 0;
  size_t metadata_removed = 0;
};

/// Parses "N,3,224,224": each dim a size (digits), a symbol (a letter or '_', then letters,
/// digits, '_'), or '?' for a free unnamed dim. Throws Error(kUsage) naming `what` for anything
/// else (an empty dim, a negative or out-of-range size).
std::vector<Dim> parse_dims(const std::string& what, const std::string& text);

/// Applies the edits in order: renames (every use follows, in subgraphs that capture the value
/// too), input shapes, metadata, producer and doc string. Throws Error(kUsage), one line, for a
/// name that is no graph input/output, a new name already used anywhere in the model, a
/// metadata key to remove that is absent, and for an input shape (of any rank: a declaration can
/// be stale) that shape inference finds contradicted by the model (a Reshape target, a weight, a
/// Conv input of the wrong rank); the model is then in an unspecified state and must not be saved.
///
/// New input shapes re-infer every node output of the main graph and its subgraphs from scratch,
/// and replace the declared types of value_info entries and graph outputs with the new ones, so
/// that no stale dim survives.
EditReport edit_model(Model& model, const EditRequest& request);

}  // namespace onnxtool::ir
