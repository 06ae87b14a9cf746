// The table of runtime departures in float16 and the matchers of its patterns.
#include "convert/runtime_departures.h"

#include <algorithm>
#include <unordered_set>

#include "ir/graph_util.h"

namespace onnxtool::convert {
namespace {

/// Nodes that only move or relabel elements: their output holds the input's values.
bool is_view(const ir::Node* n) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Identity"})
    if (ir::is_op(n, op)) return true;
  return false;
}

/// The value `v` views (through Reshape, Transpose...), the views walked added to `path`.
const ir::Value* viewed(const ir::Value* v, std::vector<const ir::Node*>& path) {
  while (v && v->producer() && is_view(v->producer())) {
    path.push_back(v->producer());
    v = v->producer()->input(0);
  }
  return v;
}

bool is_float32(const ir::Value* v) { return v && v->type.is_tensor() && v->type.data_type() == ir::DataType::kFloat; }

/// Peak picking: a score kept where it equals the maximum around it, Equal(x, MaxPool(x)) (or
/// GreaterOrEqual / LessOrEqual, the maximum a GlobalMaxPool or ReduceMax), x and the maximum
/// each seen through any views. onnxruntime 1.30's CPU provider runs MaxPool (and Equal,
/// ReduceMax...) in float32 behind Casts it inserts, then drops each float32 -> float16 -> float32
/// pair of Casts as a no-op: the maximum is taken over x before its float16 rounding, while a
/// view, which has a float16 kernel, passes the rounded x on. The two sides then differ wherever
/// x is not a float16 already, and nearly every peak is lost. Kept: the comparison, the maximum
/// and the views on both sides, so that both read one float32 copy of x.
std::vector<const ir::Node*> match_peak_picking(const ir::Graph& graph) {
  std::unordered_set<const ir::Node*> keep;
  for (const auto& n : graph.nodes()) {
    if (!n || !(ir::is_op(n.get(), "Equal") || ir::is_op(n.get(), "GreaterOrEqual") ||
                ir::is_op(n.get(), "LessOrEqual")))
      continue;
    for (size_t side = 0; side < 2; ++side) {
      std::vector<const ir::Node*> path;
      const ir::Value* x = viewed(n->input(side), path);
      const ir::Value* maximum = viewed(n->input(1 - side), path);
      if (!is_float32(x) || !maximum || !maximum->producer()) continue;
      const ir::Node* m = maximum->producer();
      if (!(ir::is_op(m, "MaxPool") || ir::is_op(m, "GlobalMaxPool") || ir::is_op(m, "ReduceMax"))) continue;
      if (viewed(m->input(0), path) != x) continue;
      keep.insert(n.get());
      keep.insert(m);
      keep.insert(path.begin(), path.end());
      break;
    }
  }
  std::vector<const ir::Node*> out;
  for (const auto& n : graph.nodes())
    if (n && keep.count(n.get())) out.push_back(n.get());
  return out;
}

}  // namespace

const std::vector<RuntimeDeparture>& runtime_departures() {
  static const std::vector<RuntimeDeparture> table = {
      {"peak_picking", "onnxruntime 1.30", "docs/runtime_departures.md#peak_picking", match_peak_picking},
  };
  return table;
}

}  // namespace onnxtool::convert
