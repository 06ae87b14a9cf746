// The speed-up estimate of quantization (quant/speed.h).
#include "quant/speed.h"

#include "ir/graph_util.h"
#include "quant/op_rules.h"

namespace onnxtool::quant {

const CostModel& default_cost_model() {
  static const CostModel costs;
  return costs;
}

double node_macs(const ir::Model& model, const ir::Node& node, const ElementCount& elements, const ir::Value* weight) {
  const ir::Value* y = node.output(0);
  return y ? elements(y) * reduction_size(model, node, weight) : 0;
}

double node_elements(const ir::Node& node, const ElementCount& elements) {
  const ir::Value* x = node.input(0);
  const ir::Value* y = node.output(0);
  return (x ? elements(x) : 0) + (y ? elements(y) : 0);
}

bool slow_integer_conv(const ir::Model& model, const ir::Node& node, const ir::Value* weight) {
  if (!ir::is_op(&node, "Conv")) return false;
  if (node.attr_int("group", 1) > 1) return true;
  const std::vector<int64_t>* dims = weight_dims(model, node, weight);
  return dims && dims->size() > 1 && (*dims)[1] < 8;
}

double static_gain(double macs, double elements, bool slow, const CostModel& c) {
  if (slow) return (macs + elements * c.float_element) * (1 - c.slow_conv_factor);
  return macs * (1 - c.int8_mac) + elements * (c.float_element - c.int8_element);
}

double dynamic_gain(double macs, double elements, bool conv, const CostModel& c) {
  return macs * (1 - (conv ? c.dynamic_conv_mac : c.dynamic_mac)) - elements * c.dynamic_element;
}

double float_cost(const ir::Model& model, const ElementCount& elements, const CostModel& costs) {
  double total = 0;
  ir::for_each_graph(const_cast<ir::Model&>(model), [&](ir::Graph& g) {  // subgraphs too: If branches, Loop bodies
    for (const auto& node : g.nodes()) {
      if (!node || !node->subgraphs().empty()) continue;  // the control op itself: its subgraphs count
      total += costs.node_fixed;
      if (const double macs = node_macs(model, *node, elements); macs > 0) {
        total += macs + node_elements(*node, elements) * costs.float_element;
        continue;
      }
      for (const ir::Value* out : node->outputs())
        if (out) total += elements(out) * costs.other_element;
    }
  });
  return total;
}

double estimated_speedup(double float_cost, const std::vector<GroupEstimate>& groups) {
  double saved = 0;
  for (const auto& g : groups) saved += g.gain;
  if (!(float_cost > 0)) return 1;
  // A model cannot get faster than its parts that stay: the gains are capped at 95% of it.
  return float_cost / std::max(float_cost - saved, 0.05 * float_cost);
}

double element_count(const std::map<std::string, double>& sizes, const ir::Value* v) {
  for (int hops = 0; v && hops < 2; ++hops) {
    if (auto it = sizes.find(v->name()); it != sizes.end()) return it->second;
    if (v->type.is_tensor() && v->type.shape && v->type.shape->is_static()) {
      double n = 1;
      for (const ir::Dim& d : v->type.shape->dims) n *= static_cast<double>(d.value);
      return n;
    }
    const ir::Node* c = ir::single_consumer(v);
    v = ir::is_op(c, "Relu") || ir::is_op(c, "Clip") ? c->output(0) : nullptr;
  }
  return 0;
}

}  // namespace onnxtool::quant
