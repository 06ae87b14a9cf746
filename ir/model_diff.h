// A semantic diff of two models: versions, I/O, nodes (matched by name, then by structure),
// attributes, initializers (with the largest value change) and metadata.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnxtool::ir {

/// One difference: a kind ("opset", "input_added", "node_added", "node_removed", "node_changed",
/// "initializer_changed", ...), the thing it is about, and what changed ("old -> new").
struct Difference {
  std::string kind;
  std::string subject;
  std::string detail;
};

struct ModelDiff {
  std::vector<Difference> differences;
  size_t nodes_a = 0, nodes_b = 0, matched_by_name = 0, matched_by_structure = 0;
  /// Matched nodes listed in another order (the fewest to move to restore a's order): the
  /// graphs compute the same, so this is no difference, but a sort or a rewrite shows in it.
  size_t reordered = 0;
  bool equal() const { return differences.empty(); }
};

/// Compares b against a (main graph nodes; subgraphs compared as part of their node's
/// attributes by node count). Initializer changes report the largest absolute difference.
ModelDiff diff_models(const Model& a, const Model& b);

}  // namespace onnxtool::ir
