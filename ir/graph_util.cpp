// Graph helpers of the rewriting layers (see graph_util.h).
#include "ir/graph_util.h"

#include "ir/constant.h"

namespace onnxtool::ir {

const Tensor* constant_of(const Model& model, const Value* value) {
  if (!value || !value->is_initializer()) return nullptr;
  // From IR version 4 on, an initializer that is also a graph input is a default the caller may
  // override, so it is not a constant.
  if (value->is_graph_input() && model.ir_version >= 4) return nullptr;
  return value->initializer();
}

bool has_single_use(const Value* value) {
  return value && !value->is_graph_output() && value->uses().size() == 1;
}

Node* single_consumer(const Value* value) {
  return has_single_use(value) ? value->uses().front().node : nullptr;
}

bool is_op(const Node* node, std::string_view op_type) {
  return node && node->op_type == op_type && (node->domain.empty() || node->domain == "ai.onnx");
}

Value* other_input(const Node& node, const Value* known) {
  if (node.inputs().size() != 2) return nullptr;
  if (node.input(0) == known) return node.input(1);
  if (node.input(1) == known) return node.input(0);
  return nullptr;
}

std::optional<std::vector<int64_t>> constant_ints(const Model& model, const Value* value) {
  const Tensor* t = constant_of(model, value);
  return t ? read_ints(*t) : std::nullopt;
}

std::optional<FloatConstant> float_constant(const Model& model, const Value* value) {
  const Tensor* t = constant_of(model, value);
  if (!t) return std::nullopt;
  auto values = read_floats(*t);
  if (!values) return std::nullopt;
  return FloatConstant{t->type(), t->dims, std::move(*values)};
}

std::optional<double> scalar_constant(const Model& model, const Value* value) {
  const auto c = float_constant(model, value);
  if (!c || c->values.size() != 1) return std::nullopt;
  return c->values[0];
}

std::optional<std::vector<int64_t>> ints_input_or_attr(const Model& model, const Node& node, size_t index,
                                                       std::string_view attr) {
  if (node.input(index)) return constant_ints(model, node.input(index));
  if (!node.attr(attr)) return std::nullopt;
  return node.attr_ints(attr);
}

std::string unique_name(const Graph& graph, const std::string& base) {
  return fresh_name(base, [&](const std::string& candidate) {
    return graph.lookup(candidate) != nullptr || graph.defined_below(candidate);
  });
}

Value* add_constant(Graph& graph, const std::string& base, DataType type, std::vector<int64_t> dims,
                    const std::vector<double>& values) {
  return graph.add_initializer(make_float_tensor(unique_name(graph, base), type, std::move(dims), values));
}

Value* add_int64_constant(Graph& graph, const std::string& base, std::vector<int64_t> dims,
                          const std::vector<int64_t>& values) {
  return graph.add_initializer(
      make_tensor(unique_name(graph, base), DataType::kInt64, std::move(dims), values.data(), values.size() * sizeof(int64_t)));
}

Attribute copy_attribute(const Attribute& a) {
  Attribute c;
  c.name = a.name;
  c.ref_attr_name = a.ref_attr_name;
  c.type = a.type;
  c.f = a.f;
  c.i = a.i;
  c.s = a.s;
  c.t = a.t;
  c.sparse_tensor = a.sparse_tensor;
  c.tp = a.tp;
  c.floats = a.floats;
  c.ints = a.ints;
  c.strings = a.strings;
  c.tensors = a.tensors;
  c.sparse_tensors = a.sparse_tensors;
  c.type_protos = a.type_protos;
  return c;
}

}  // namespace onnxtool::ir
