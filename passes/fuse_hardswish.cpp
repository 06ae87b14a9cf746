// Pass fuse_hardswish: the decomposed hard-swish of exporters becomes HardSwish (opset 14 and
// later).
#include <algorithm>

#include "ir/graph_util.h"
#include "passes/pass_list.h"
#include "passes/rewrite.h"

namespace onnxtool::passes {

namespace {

/// True when `n` computes v / 6 or v * (1/6) for its input `v`.
bool divides_by_six(const ir::Model& m, const ir::Node* n, const ir::Value* v) {
  if (ir::is_op(n, "Div")) return n->input(0) == v && near_value(ir::scalar_constant(m, n->input(1)), 6.0);
  if (ir::is_op(n, "Mul")) return near_value(ir::scalar_constant(m, ir::other_input(*n, v)), 1.0 / 6.0);
  return false;
}

/// The hard-sigmoid part of a hard-swish over x, when `n` computes one from x:
/// Clip(x + 3, 0, 6) (then scaled by 1/6 elsewhere), or HardSigmoid(x, 1/6, 0.5). Returns the
/// nodes computing it (first to last) and whether the 1/6 scale is already applied.
struct HardSigmoidPart {
  std::vector<ir::Node*> nodes;
  bool scaled = false;
};
std::optional<HardSigmoidPart> hard_sigmoid_of(const ir::Model& m, ir::Node* n, const ir::Value* x) {
  if (ir::is_op(n, "HardSigmoid") && n->input(0) == x && near_value(n->attr_float("alpha", 0.2f), 1.0 / 6.0) &&
      near_value(n->attr_float("beta", 0.5f), 0.5))
    return HardSigmoidPart{{n}, true};
  if (!ir::is_op(n, "Clip") || n->inputs().size() < 3) return std::nullopt;
  if (!near_value(ir::scalar_constant(m, n->input(1)), 0.0) || !near_value(ir::scalar_constant(m, n->input(2)), 6.0))
    return std::nullopt;
  ir::Node* add = n->input(0) ? n->input(0)->producer() : nullptr;
  if (!ir::is_op(add, "Add") || ir::single_consumer(add->output(0)) != n) return std::nullopt;
  if (!near_value(ir::scalar_constant(m, ir::other_input(*add, x)), 3.0)) return std::nullopt;
  return HardSigmoidPart{{add, n}, false};
}

}  // namespace

/// x * HardSigmoid(x) => HardSwish(x), in the forms exporters write: Mul(x, Clip(x + 3, 0, 6))
/// then Div(., 6) or Mul(., 1/6); Mul(x, Clip(x + 3, 0, 6) / 6); Mul(x, HardSigmoid(x) with
/// alpha 1/6, beta 0.5). Every intermediate must feed only the pattern (x may have other
/// readers). The last node's output name survives.
PassStats fuse_hardswish(ir::Model& model, const PassContext&) {
  PassStats stats;
  if (model.onnx_opset() < 14) return stats;
  ir::for_each_node(model, [&](ir::Graph& g, ir::Node* mul) {
    if (!ir::is_op(mul, "Mul") || mul->inputs().size() != 2) return;
    // mul = x * s, where s is the hard sigmoid of x (scaled or not).
    std::vector<ir::Node*> chain;
    ir::Value* x = nullptr;
    bool scaled = false;
    for (int k = 0; k < 2 && !x; ++k) {
      ir::Value* cand = mul->input(k);
      ir::Value* s = mul->input(1 - k);
      ir::Node* sp = s ? s->producer() : nullptr;
      if (!cand || !sp || ir::single_consumer(s) != mul) continue;
      if (auto part = hard_sigmoid_of(model, sp, cand)) {  // x * Clip(x + 3, 0, 6), x * HardSigmoid(x)
        x = cand;
        chain = part->nodes;
        scaled = part->scaled;
        continue;
      }
      // x * (Clip(x + 3, 0, 6) / 6): look through the scale.
      for (ir::Value* in : sp->inputs()) {
        ir::Node* p = in ? in->producer() : nullptr;
        if (x || !p || ir::single_consumer(in) != sp || !divides_by_six(model, sp, in)) continue;
        auto part = hard_sigmoid_of(model, p, cand);
        if (!part || part->scaled) continue;
        x = cand;
        chain = part->nodes;
        chain.push_back(sp);
        scaled = true;
      }
    }
    if (!x) return;
    chain.push_back(mul);
    ir::Node* last = mul;
    if (!scaled) {  // (x * Clip(x + 3, 0, 6)) / 6
      ir::Node* d = ir::single_consumer(mul->output(0));
      if (!divides_by_six(model, d, mul->output(0))) return;
      chain.push_back(d);
      last = d;
    }
    ir::Node* hswish =
        g.add_node("HardSwish", {x}, {ir::unique_name(g, last->output(0)->name() + "_hardswish")}, "", mul->name, last);
    if (replace_chain(g, chain, hswish)) ++stats.fused;
  });
  return stats;
}

}  // namespace onnxtool::passes
