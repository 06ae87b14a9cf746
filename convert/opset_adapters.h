// What the opset converter knows about each operator, in one table: for an operator and a
// version boundary b (a since_version of one of its schemas), how to rewrite a node going up
// (opset b-1 -> b) and going down (b -> b-1). convert/version_converter.cpp walks the boundaries
// and handles what needs no adapter (attributes added at their defaults, optional inputs added
// at the end, widened types); tests/kernel_coverage_test.cpp checks that every other boundary
// of every operator has a row here.
#pragma once

#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace onnxtool::convert {

class AdapterContext;  // convert/adapter_context.h

/// Rewrites node `n` of graph `g` across boundary `b` (the row's boundary); throws through
/// no_equivalent() when the node has no equivalent on the other side.
using AdapterFn = void (*)(AdapterContext& cx, ir::Graph& g, ir::Node& n, int b);

struct OpsetAdapter {
  /// Default domain, as the node names it when it reaches the boundary: a renamed op has its
  /// up adapter under the older name and its down adapter under the newer one.
  std::string_view op;
  int boundary;          ///< the since_version of the newer schema
  AdapterFn up;          ///< nullptr: going up needs nothing beyond the generic rule
  AdapterFn down;        ///< nullptr: going down needs nothing beyond the generic rule
  std::string_view doc;  ///< what changed at the boundary
};

/// Every row, at most one per (op, boundary).
const std::vector<OpsetAdapter>& opset_adapters();
/// The row of (op, boundary), or nullptr.
const OpsetAdapter* find_opset_adapter(std::string_view op, int boundary);

}  // namespace onnxtool::convert
