// Pass sort_topologically: orders every graph's nodes so that each value is produced before use.
#include "passes/pass_list.h"

namespace onnxtool::passes {

/// Keeps the existing order wherever it is already valid (ir::Graph::topological_sort), so a
/// sorted model is left byte-identical. Throws Error(kFailed) naming the nodes of a cycle.
PassStats sort_topologically(ir::Model& model, const PassContext&) {
  ir::for_each_graph(model, [](ir::Graph& g) { g.topological_sort(); });
  return {};
}

}  // namespace onnxtool::passes
