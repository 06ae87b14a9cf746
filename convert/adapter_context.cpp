// The helpers the opset adapters and the version walk share (convert/adapter_context.h).
#include "convert/adapter_context.h"

#include "ir/error.h"
#include "ir/graph_util.h"

namespace onnxtool::convert {

using ir::Attribute;
using ir::DataType;
using ir::Graph;
using ir::Node;
using ir::Value;

void no_equivalent(const Node& n, int64_t target, const std::string& why) {
  throw Error(ErrorKind::kFailed, n.describe() + ": no equivalent at opset " +
                                      std::to_string(target) + ": " + why);
}

std::optional<size_t> rank_of(const Value* v) {
  if (!v || !v->type.is_tensor() || !v->type.shape) return std::nullopt;
  return v->type.shape->dims.size();
}

std::optional<int64_t> dim_of(const Value* v, size_t axis) {
  if (!v || !v->type.is_tensor() || !v->type.shape) return std::nullopt;
  const auto& dims = v->type.shape->dims;
  if (axis >= dims.size() || !dims[axis].is_static()) return std::nullopt;
  return dims[axis].value;
}

DataType elem_type(const Value* v) {
  return v && v->type.is_tensor() ? v->type.data_type() : DataType::kUndefined;
}

std::string base(const Node& n) {
  if (!n.name.empty()) return n.name;
  return n.outputs().empty() || !n.output(0) ? n.op_type : n.output(0)->name();
}

const Node* next_node(const Graph& g, const Node& n) {
  const size_t i = g.node_index(&n);
  return i + 1 < g.nodes().size() ? g.nodes()[i + 1].get() : nullptr;
}

Node* AdapterContext::add_after(Graph& g, Node& n, size_t index, const std::string& op) {
  Value* y = n.output(index);
  const std::string name = y->name();
  g.rename(y, ir::unique_name(g, name + "_before_" + op));
  y->type = ir::TypeInfo{};
  Node* after = g.add_node(op, {y}, {name}, "", node_name(base(n) + "_" + op), next_node(g, n));
  for (size_t i = 0; i < g.outputs.size(); ++i)
    if (g.outputs[i].value == y) g.set_output_value(i, after->output(0));
  g.replace_all_uses(y, after->output(0));
  after->set_input(0, y);
  return after;
}

void put_input(Node& n, size_t index, Value* v) {
  while (n.inputs().size() < index) n.append_input(nullptr);
  if (index < n.inputs().size())
    n.set_input(index, v);
  else
    n.append_input(v);
}

void trim_inputs(Node& n) {
  while (!n.inputs().empty() && !n.inputs().back()) n.remove_input(n.inputs().size() - 1);
}

std::optional<ir::TypedValues> AdapterContext::const_values(const Value* v) const {
  if (!v) return std::nullopt;
  if (const ir::Tensor* t = ir::constant_of(model_, v)) return ir::read_values(*t);
  const Node* p = v->producer();
  if (!p || !ir::is_op(p, "Constant") || p->attributes.size() != 1) return std::nullopt;
  const Attribute& a = p->attributes[0];
  ir::TypedValues out;
  if (a.name == "value" && a.t) return ir::read_values(*a.t);
  if (a.name == "value_int") out.ints = std::vector<int64_t>{a.i};
  if (a.name == "value_ints") out.ints = a.ints;
  if (a.name == "value_float") out.floats = std::vector<double>{a.f};
  if (a.name == "value_floats") out.floats = std::vector<double>(a.floats.begin(), a.floats.end());
  if (!out.ints && !out.floats) return std::nullopt;
  return out;
}

std::vector<int64_t> AdapterContext::required_ints(const Node& n, size_t index, const std::string& what) const {
  auto v = const_values(n.input(index));
  if (!v) no_equivalent(n, to_, "its " + what + " input is not a constant");
  if (!v->ints) no_equivalent(n, to_, "its " + what + " input is not an integer tensor");
  return *v->ints;
}

std::vector<double> AdapterContext::required_floats(const Node& n, size_t index, const std::string& what) const {
  auto v = const_values(n.input(index));
  if (!v) no_equivalent(n, to_, "its " + what + " input is not a constant");
  if (!v->floats) no_equivalent(n, to_, "its " + what + " input is not a floating-point tensor");
  return *v->floats;
}

Value* AdapterContext::add_ints(Graph& g, const Node& n, const std::string& what, const std::vector<int64_t>& v,
                                bool scalar) {
  ++report_.added_nodes;
  // Written directly: int64 values such as INT64_MAX do not survive a trip through double.
  const std::vector<int64_t> dims =
      scalar ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(v.size())};
  return g.add_initializer(ir::make_tensor(ir::unique_name(g, base(n) + "_" + what), DataType::kInt64, dims,
                                           v.data(), v.size() * sizeof(int64_t)));
}

Value* AdapterContext::add_scalar(Graph& g, const Node& n, const std::string& what, DataType type, double v) {
  ++report_.added_nodes;
  return ir::add_constant(g, base(n) + "_" + what, type, {}, {v});
}

Value* AdapterContext::add_floats(Graph& g, const Node& n, const std::string& what, const std::vector<double>& v) {
  ++report_.added_nodes;
  return ir::add_constant(g, base(n) + "_" + what, DataType::kFloat, {static_cast<int64_t>(v.size())}, v);
}

Value* AdapterContext::add_cast(Graph& g, const Node& n, Value* x, DataType to) {
  ++report_.added_nodes;
  Node* cast = g.add_node("Cast", {x}, {ir::unique_name(g, x->name() + "_as_" + std::string(ir::data_type_name(to)))},
                          "", node_name(base(n) + "_Cast"), &n);
  cast->set_attr(Attribute::make_int("to", static_cast<int64_t>(to)));
  cast->output(0)->type = ir::TypeInfo::tensor(to, x->type.is_tensor() ? x->type.shape : std::nullopt);
  return cast->output(0);
}

void AdapterContext::remove_marked_nodes() {
  for (auto& [g, n] : removed_) g->remove_node(n);
  removed_.clear();
}

int64_t AdapterContext::non_negative_axis(const Node& n, int64_t axis, std::optional<size_t> rank) const {
  if (axis >= 0) return axis;
  if (!rank)
    no_equivalent(n, to_, "negative axis " + std::to_string(axis) + " needs opset 11 and the input rank is unknown");
  return axis + static_cast<int64_t>(*rank);
}

}  // namespace onnxtool::convert
