// A model's main graph as Graphviz DOT text (`onnxtool inspect --graph`): a box per node with its
// op, name, key attributes and weights, the graph inputs and outputs as shapes of their own,
// edges labelled with the type of the tensor they carry, and large graphs clustered by the
// path-like prefixes of their node names.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace onnxtool::ir {

/// Graphs of more nodes than this are clustered by name prefix unless told otherwise: below it
/// dot lays a graph out legibly as it is.
constexpr size_t kDotClusterThreshold = 200;
/// The prefix levels of that automatic clustering. Names split on '/' and '.', so three levels
/// of "/encoder/layer.0/attention/self/MatMul" are encoder > layer > 0: one cluster per layer.
/// Levels count after the prefix all nodes share (a "/bert/" before every name).
constexpr int kDotDefaultClusterDepth = 3;

struct DotOptions {
  /// Levels of name prefix to cluster by: -1 automatic (kDotDefaultClusterDepth above
  /// kDotClusterThreshold nodes, none below), 0 never.
  int cluster_depth = -1;
};

struct DotGraph {
  std::string text;
  size_t nodes = 0;     ///< ONNX nodes drawn
  size_t edges = 0;     ///< edges drawn (graph outputs' included)
  size_t clusters = 0;  ///< clusters drawn
};

/// The main graph of `model` in DOT. Types come from Value::type: run shape inference first for
/// the edges to carry shapes. Subgraphs (If branches, Loop and Scan bodies) are summarized in
/// their node's label, and the outer values they read drawn as dashed edges into it. The same
/// model gives the same bytes.
DotGraph graph_dot(const Model& model, const DotOptions& options = {});

/// `s` as a DOT quoted string, quotes included: quotes and backslashes escaped, '&' as the entity
/// Graphviz reads back, control characters shown as '?' (a newline as the two characters \n),
/// bytes that are not UTF-8 as '?', so that any name from a model lays out as written.
std::string dot_quote(std::string_view s);

/// The cluster path of a node name: its components split on '/' and '.' (empty ones dropped),
/// without the last (the node's own name), up to the first that is the node's `op_type` (in
/// "p2o.Conv.58" the op is no place), at most `depth` of them (-1: all).
std::vector<std::string> dot_name_prefix(std::string_view node_name, int depth, std::string_view op_type = {});

}  // namespace onnxtool::ir
