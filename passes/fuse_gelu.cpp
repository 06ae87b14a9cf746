// Pass fuse_gelu: the decomposed erf form of GELU becomes Gelu (opset 20 and later).
#include <cmath>

#include "ir/graph_util.h"
#include "passes/pass_list.h"
#include "passes/rewrite.h"

namespace onnxtool::passes {

/// 0.5 * x * (1 + Erf(x / sqrt(2)))  =>  Gelu(x), in the orders exporters write it:
/// Erf(Div(x, 1.41421) | Mul(x, 0.70711)) -> Add(1) -> then Mul(x, .) -> Mul(., 0.5), or
/// Mul(., 0.5) -> Mul(x, .), or Mul(Mul(x, 0.5), .). Every intermediate must feed only the
/// pattern. The last Mul's output name survives.
PassStats fuse_gelu(ir::Model& model, const PassContext&) {
  PassStats stats;
  if (model.onnx_opset() < 20) return stats;
  ir::for_each_node(model, [&](ir::Graph& g, ir::Node* erf) {
    if (!ir::is_op(erf, "Erf")) return;
    ir::Node* pre = erf->input(0) ? erf->input(0)->producer() : nullptr;
    if (!pre || ir::single_consumer(pre->output(0)) != erf) return;
    ir::Value* x = pre->input(0);
    const bool scaled = (ir::is_op(pre, "Div") && near_value(ir::scalar_constant(model, pre->input(1)), std::sqrt(2.0))) ||
                        (ir::is_op(pre, "Mul") && near_value(ir::scalar_constant(model, pre->input(1)), std::sqrt(0.5)));
    if (!scaled || !x) return;
    ir::Node* add = ir::single_consumer(erf->output(0));
    if (!ir::is_op(add, "Add") || !near_value(ir::scalar_constant(model, ir::other_input(*add, erf->output(0))), 1.0)) return;
    ir::Node* m1 = ir::single_consumer(add->output(0));
    if (!ir::is_op(m1, "Mul")) return;
    ir::Value* o1 = ir::other_input(*m1, add->output(0));
    std::vector<ir::Node*> chain{pre, erf, add, m1};
    ir::Node* last = nullptr;
    if (o1 == x) {  // (x * (1 + erf)) * 0.5
      ir::Node* m2 = ir::single_consumer(m1->output(0));
      if (ir::is_op(m2, "Mul") && near_value(ir::scalar_constant(model, ir::other_input(*m2, m1->output(0))), 0.5)) last = m2;
    } else if (near_value(ir::scalar_constant(model, o1), 0.5)) {  // ((1 + erf) * 0.5) * x
      ir::Node* m2 = ir::single_consumer(m1->output(0));
      if (ir::is_op(m2, "Mul") && ir::other_input(*m2, m1->output(0)) == x) last = m2;
    } else if (ir::Node* h = o1 ? o1->producer() : nullptr;
               ir::is_op(h, "Mul") && ir::single_consumer(o1) == m1 && ir::other_input(*h, x) &&
               near_value(ir::scalar_constant(model, ir::other_input(*h, x)), 0.5)) {
      chain.insert(chain.begin(), h);  // (x * 0.5) * (1 + erf)
      last = m1;
    }
    if (!last) return;
    if (last != m1) chain.push_back(last);
    ir::Node* gelu = g.add_node("Gelu", {x}, {ir::unique_name(g, last->output(0)->name() + "_gelu")}, "", erf->name, last);
    if (replace_chain(g, chain, gelu)) ++stats.fused;
  });
  return stats;
}

}  // namespace onnxtool::passes
