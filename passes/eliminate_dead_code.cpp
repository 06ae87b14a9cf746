// Pass eliminate_dead_code: removes what nothing uses.
#include <algorithm>
#include <unordered_set>

#include "passes/pass_list.h"

namespace onnxtool::passes {

namespace {

/// A node is live when one of its outputs is a graph output or is used by a live node (uses from
/// subgraph nodes count: they are recorded on the outer value).
int64_t remove_dead_nodes(ir::Graph& g) {
  int64_t removed = 0;
  // Walk backwards, not counting uses by nodes this walk already found dead: in topological order
  // readers come after their producers, so a whole dead chain goes in one walk (a walk per node
  // of the chain would be quadratic). A reader placed before its producer, or inside a dead
  // node's subgraph, is caught by the next walk; walks repeat until one finds nothing.
  bool again = true;
  while (again) {
    std::unordered_set<const ir::Node*> dead;
    for (auto it = g.nodes().rbegin(); it != g.nodes().rend(); ++it) {
      const ir::Node* n = it->get();
      bool used = false;
      for (const ir::Value* o : n->outputs()) {
        if (!o) continue;
        if (o->is_graph_output()) used = true;
        for (const ir::Use& u : o->uses())
          if (!dead.count(u.node)) used = true;
      }
      if (!used) dead.insert(n);
    }
    again = !dead.empty();
    if (again) {
      g.remove_nodes_if([&](const ir::Node& n) { return dead.count(&n) > 0; });
      removed += static_cast<int64_t>(dead.size());
    }
  }
  return removed;
}

}  // namespace

/// Removes nodes whose outputs nothing reads (ONNX ops have no side effects), then initializers
/// nothing reads, graph inputs that are initializers nobody reads, and value_info entries of
/// values that no longer exist. Graph outputs and inputs the caller feeds are never touched.
PassStats eliminate_dead_code(ir::Model& model, const PassContext&) {
  PassStats stats;
  ir::for_each_graph(model, [&](ir::Graph& g) {
    stats.removed += remove_dead_nodes(g);
    std::vector<ir::Value*> unused;
    for (const auto& t : g.initializers()) {
      ir::Value* v = g.find(t->name);
      if (v && v->uses().empty() && !v->is_graph_output()) unused.push_back(v);
    }
    for (ir::Value* v : unused) {
      // A graph input backed by an unused initializer is an optional override nobody reads.
      for (size_t i = g.inputs.size(); i-- > 0;)
        if (g.inputs[i].value == v) g.remove_input(i);
      if (!v->is_graph_input()) {
        g.remove_initializer(v);
        ++stats.initializers_removed;
      }
    }
    auto& vi = g.value_info;
    vi.erase(std::remove_if(vi.begin(), vi.end(),
                            [](const ir::ValueInfo& v) {
                              return !v.value->producer() && !v.value->is_graph_input() &&
                                     !v.value->is_initializer() && v.value->uses().empty();
                            }),
             vi.end());
    g.prune_values();
  });
  return stats;
}

}  // namespace onnxtool::passes
