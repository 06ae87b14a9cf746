// A semantic diff of two models: versions, I/O, nodes (matched by name, then by structure),
// attributes, initializers (with the largest value change) and metadata.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace onnxtool::ir {

/// One difference: a kind ("opset", "input_added", "node_added", "node_removed", "node_changed",
/// "initializer_changed", ...), the thing it is about, and what changed ("old -> new").
struct Difference {
  std::string kind;
  std::string subject;
  std::string detail;
  /// For node_added / node_removed / node_changed: the node's op type (a's, for a changed node).
  std::string op_type;
  /// For initializer_*: the tensor's stored bytes in a and in b (-1 where it is absent).
  int64_t bytes_a = -1, bytes_b = -1;
};

struct ModelDiff {
  std::vector<Difference> differences;
  size_t nodes_a = 0, nodes_b = 0, matched_by_name = 0, matched_by_structure = 0;
  /// Matched nodes listed in another order (the fewest to move to restore a's order): the
  /// graphs compute the same, so this is no difference, but a sort or a rewrite shows in it.
  size_t reordered = 0;
  bool equal() const { return differences.empty(); }
};

/// The differences counted by kind, for a few lines instead of one per difference.
struct DiffSummary {
  struct Nodes {
    size_t count = 0;
    std::map<std::string, size_t> by_op_type;
  };
  Nodes nodes_added, nodes_removed, nodes_changed;
  struct Initializers {
    size_t count = 0;
    int64_t bytes_a = 0, bytes_b = 0;  ///< the stored bytes of these initializers in a, in b
  };
  Initializers initializers_added, initializers_removed, initializers_changed;
  /// Counts of the other kinds: "input_added", "output_changed", "metadata_removed",
  /// "ir_version", "producer", "graph"... (opset changes are in `opsets`).
  std::map<std::string, size_t> other;
  /// Opset changes: {domain, "9 -> 13"}.
  std::vector<std::pair<std::string, std::string>> opsets;
};
DiffSummary summarize_diff(const ModelDiff& diff);

/// Compares b against a (main graph nodes; subgraphs compared as part of their node's
/// attributes by node count). Initializer changes report the largest absolute difference.
ModelDiff diff_models(const Model& a, const Model& b);

}  // namespace onnxtool::ir
