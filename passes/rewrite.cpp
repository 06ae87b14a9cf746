// Shared rewrites of the passes.
#include "passes/rewrite.h"

#include <algorithm>
#include <cmath>

#include "ir/graph_util.h"

namespace onnxtool::passes {

bool replace_chain(ir::Graph& graph, const std::vector<ir::Node*>& chain, ir::Node* fused) {
  ir::Node* last = chain.back();
  fused->output(0)->type = last->output(0)->type;
  if (!fold_node_into(graph, last, fused->output(0))) {
    graph.remove_node(fused);
    return false;
  }
  for (auto it = chain.rbegin() + 1; it != chain.rend(); ++it) graph.remove_node(*it);
  return true;
}

bool bypass_node(ir::Graph& graph, ir::Node* node, ir::Value* replacement) {
  ir::Value* out = node->output(0);
  if (!out || !replacement || out == replacement) return false;
  if (out->is_graph_output()) {
    // Keep the output's name: the replacement takes it, when the replacement is a plain
    // intermediate value of this graph that no graph input or output names.
    if (replacement->graph() != &graph || !replacement->producer() || replacement->is_graph_output() ||
        replacement->is_graph_input())
      return false;
    const std::string name = out->name();
    graph.replace_all_uses(out, replacement);
    for (size_t i = 0; i < graph.outputs.size(); ++i)
      if (graph.outputs[i].value == out) graph.set_output_value(i, replacement);
    graph.remove_node(node);
    auto& vi = graph.value_info;
    vi.erase(std::remove_if(vi.begin(), vi.end(), [&](const ir::ValueInfo& v) { return v.value == out || v.value == replacement; }),
             vi.end());
    graph.prune_values();
    graph.rename(replacement, name);
    return true;
  }
  graph.replace_all_uses(out, replacement);
  graph.remove_node(node);
  return true;
}

bool fold_node_into(ir::Graph& graph, ir::Node* node, ir::Value* replacement) {
  ir::Value* out = node->output(0);
  if (!out || !replacement) return false;
  if (out->is_graph_output()) return bypass_node(graph, node, replacement);  // renames already
  const std::string name = out->name();
  const bool plain = replacement->graph() == &graph && replacement->producer() && !replacement->is_graph_output() &&
                     !replacement->is_graph_input() && !replacement->is_initializer();
  if (!bypass_node(graph, node, replacement)) return false;
  if (!plain) return true;
  // The folded node's output is gone; its declared type, if any, went with it.
  auto& vi = graph.value_info;
  vi.erase(std::remove_if(vi.begin(), vi.end(), [&](const ir::ValueInfo& v) { return v.value == out; }), vi.end());
  graph.prune_values();
  if (!graph.find(name)) graph.rename(replacement, name);
  return true;
}

bool near_value(std::optional<double> value, double want) {
  return value && std::fabs(*value - want) <= (want == 0 ? 1e-6 : 1e-4 * std::fabs(want));
}

std::optional<DecomposedNorm> match_decomposed_norm(const ir::Model& model, ir::Node* mean) {
  DecomposedNorm n;
  n.mean = mean;
  if (!ir::is_op(mean, "ReduceMean") || !mean->input(0)) return std::nullopt;
  const ir::Value* x = mean->input(0);
  n.sub = ir::single_consumer(mean->output(0));
  if (!ir::is_op(n.sub, "Sub") || n.sub->input(0) != x || n.sub->input(1) != mean->output(0)) return std::nullopt;
  const ir::Value* d = n.sub->output(0);
  if (d->is_graph_output() || d->uses().size() != 2) return std::nullopt;
  for (const auto& u : d->uses()) {
    ir::Node* reader = u.node;
    if (ir::is_op(reader, "Div") && reader->input(0) == d) n.div = reader;
    else if (ir::is_op(reader, "Pow") && reader->input(0) == d && ir::scalar_constant(model, reader->input(1)) == 2.0) n.square = reader;
    else if (ir::is_op(reader, "Mul") && reader->input(0) == d && reader->input(1) == d) n.square = reader;
  }
  if (!n.square || !n.div) return std::nullopt;
  n.variance = ir::single_consumer(n.square->output(0));
  if (!ir::is_op(n.variance, "ReduceMean")) return std::nullopt;
  n.add_eps = ir::single_consumer(n.variance->output(0));
  if (!ir::is_op(n.add_eps, "Add")) return std::nullopt;
  const auto eps = ir::scalar_constant(model, ir::other_input(*n.add_eps, n.variance->output(0)));
  if (!eps) return std::nullopt;
  n.eps = *eps;
  n.sqrt = ir::single_consumer(n.add_eps->output(0));
  if (!ir::is_op(n.sqrt, "Sqrt") || ir::single_consumer(n.sqrt->output(0)) != n.div || n.div->input(1) != n.sqrt->output(0))
    return std::nullopt;
  return n;
}

std::optional<OutputChannels> conv_output_channels(const ir::Model& model, const ir::Node& node) {
  const bool transposed = ir::is_op(&node, "ConvTranspose");
  if (!transposed && !ir::is_op(&node, "Conv")) return std::nullopt;
  if (transposed && node.attr_int("group", 1) != 1) return std::nullopt;
  const auto w = ir::float_constant(model, node.input(1));
  const size_t axis = transposed ? 1 : 0;
  // An empty weight has nothing to fold into, and its other dims may be any size at all.
  if (!w || w->dims.size() <= axis || w->values.empty()) return std::nullopt;
  return OutputChannels{axis, w->dims[axis], w->dims.size()};
}

bool fold_batchnorm_into_producer(const ir::Model& model, ir::Graph& graph, ir::Node* bn) {
  if (!ir::is_op(bn, "BatchNormalization")) return false;
  ir::Value* x = bn->input(0);
  ir::Node* conv = x ? x->producer() : nullptr;
  const auto out = conv ? conv_output_channels(model, *conv) : std::nullopt;
  if (!out || ir::single_consumer(x) != bn) return false;
  const auto affine = batchnorm_affine(model, *bn);
  return affine && fold_channel_affine(model, graph, *conv, 1, out->weight_axis, 2, affine->scale, affine->shift) &&
         fold_node_into(graph, bn, x);
}

bool fold_channel_affine(const ir::Model& model, ir::Graph& graph, ir::Node& node, size_t weight_index,
                         size_t weight_axis, size_t bias_index, const std::vector<double>& scale,
                         const std::vector<double>& shift) {
  const auto w = ir::float_constant(model, node.input(weight_index));
  if (!w || weight_axis >= w->dims.size()) return false;
  const int64_t channels = w->dims[weight_axis];
  if (channels != static_cast<int64_t>(scale.size()) || scale.size() != shift.size()) return false;
  std::vector<double> bias(scale.size(), 0.0);
  if (node.input(bias_index)) {
    const auto b = ir::float_constant(model, node.input(bias_index));
    if (!b || b->type != w->type || b->values.size() != scale.size()) return false;
    bias = b->values;
  }
  // Scale weight slices along the channel axis: index = (outer * channels + c) * inner + k.
  int64_t inner = 1;
  for (size_t i = weight_axis + 1; i < w->dims.size(); ++i) inner *= w->dims[i];
  std::vector<double> weights = w->values;
  for (size_t i = 0; i < weights.size(); ++i) weights[i] *= scale[static_cast<size_t>((static_cast<int64_t>(i) / inner) % channels)];
  for (size_t c = 0; c < bias.size(); ++c) bias[c] = bias[c] * scale[c] + shift[c];
  const std::string base = node.name.empty() ? node.op_type : node.name;
  node.set_input(weight_index, ir::add_constant(graph, base + "_weight_fused", w->type, w->dims, weights));
  ir::Value* b = ir::add_constant(graph, base + "_bias_fused", w->type, {channels}, bias);
  while (node.inputs().size() <= bias_index) node.append_input(nullptr);
  node.set_input(bias_index, b);
  return true;
}

std::optional<std::vector<double>> channel_vector(const ir::FloatConstant& c, size_t rank, size_t axis, int64_t channels) {
  if (c.dims.size() > rank) return std::nullopt;
  // Right-align the constant's dims with the output's; every dim but the channel one must be 1.
  const size_t offset = rank - c.dims.size();
  for (size_t i = 0; i < c.dims.size(); ++i) {
    const size_t out_axis = offset + i;
    if (out_axis == axis) {
      if (c.dims[i] != channels && c.dims[i] != 1) return std::nullopt;
    } else if (c.dims[i] != 1) {
      return std::nullopt;
    }
  }
  std::vector<double> v(static_cast<size_t>(channels));
  for (int64_t k = 0; k < channels; ++k) v[static_cast<size_t>(k)] = c.values.size() == 1 ? c.values[0] : c.values[static_cast<size_t>(k)];
  return v;
}

std::optional<ChannelAffine> batchnorm_affine(const ir::Model& model, const ir::Node& bn) {
  if (!ir::is_op(&bn, "BatchNormalization") || bn.inputs().size() < 5) return std::nullopt;
  if (bn.attr_int("training_mode", 0) != 0) return std::nullopt;
  if (model.onnx_opset() < 7 && bn.attr_int("is_test", 0) == 0) return std::nullopt;
  if (model.onnx_opset() < 9 && bn.attr_int("spatial", 1) != 1) return std::nullopt;
  for (size_t i = 1; i < bn.outputs().size(); ++i)
    if (bn.output(i) && (bn.output(i)->is_graph_output() || !bn.output(i)->uses().empty())) return std::nullopt;
  std::vector<std::optional<ir::FloatConstant>> p;
  for (size_t i = 1; i < 5; ++i) p.push_back(ir::float_constant(model, bn.input(i)));
  for (const auto& c : p)
    if (!c || c->values.size() != p[0]->values.size()) return std::nullopt;
  const double eps = bn.attr_float("epsilon", 1e-5f);
  ChannelAffine a;
  for (size_t c = 0; c < p[0]->values.size(); ++c) {
    const double s = p[0]->values[c] / std::sqrt(p[3]->values[c] + eps);
    a.scale.push_back(s);
    a.shift.push_back(p[1]->values[c] - p[2]->values[c] * s);
  }
  return a;
}

}  // namespace onnxtool::passes
