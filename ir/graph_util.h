// Graph helpers that every rewriting layer uses (passes, convert, quant): walking the nodes,
// reading constants, matching nodes, adding constants under fresh names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace onnxtool::ir {

/// The walk of every rewrite: fn(graph, node) for each node of each graph of the model (subgraphs
/// included, parents first), in graph order. fn matches and rewrites; it may add and remove nodes
/// (Graph::for_each_node: a node removed before its turn is skipped, added nodes are not visited).
template <class Fn>
void for_each_node(Model& model, Fn fn) {
  for_each_graph(model, [&](Graph& g) { g.for_each_node([&](Node* n) { fn(g, n); }); });
}

/// The tensor a value always holds: a non-overridable initializer (an initializer that is not
/// also a graph input, or any initializer below IR version 4), or nullptr.
const Tensor* constant_of(const Model& model, const Value* value);

/// True when the value's only readers are nodes (no graph output) and there is exactly one.
bool has_single_use(const Value* value);

/// The one node reading `value`, when the value has exactly one use and is no graph output.
Node* single_consumer(const Value* value);

/// True for the default domain ("" or "ai.onnx") and that op type.
bool is_op(const Node* node, std::string_view op_type);

/// The other input of a binary node one of whose two inputs is `known`, or nullptr.
Value* other_input(const Node& node, const Value* known);

/// The elements of an integer (or bool) constant as int64, exactly; nullopt when `value` is not a
/// constant of such a type. Integers are never read through a floating type (see ir/constant.h).
std::optional<std::vector<int64_t>> constant_ints(const Model& model, const Value* value);

/// A floating-point constant (float, double, float16 or bfloat16) read as doubles; nullopt for
/// integer constants, which have constant_ints.
struct FloatConstant {
  DataType type = DataType::kUndefined;
  std::vector<int64_t> dims;
  std::vector<double> values;
};
std::optional<FloatConstant> float_constant(const Model& model, const Value* value);

/// The value of a floating-point constant holding exactly one number, or nullopt (integer
/// constants included: compare those with constant_ints).
std::optional<double> scalar_constant(const Model& model, const Value* value);

/// Integer constant input, or the ints attribute of that name when the input is absent (for ops
/// whose attribute became an input: Pad pads, Squeeze axes...). nullopt when neither is known.
std::optional<std::vector<int64_t>> ints_input_or_attr(const Model& model, const Node& node, size_t index,
                                                       std::string_view attr);

/// A fresh value name for `graph`, derived from `base` by fresh_name (ir/graph.h): no value of
/// `graph` or of an enclosing graph has it (the new value shadows nothing), and none of a graph
/// nested in it (nothing there is shadowed: subgraphs see the new value). Graphs beside it (the
/// other branch of an If) do not matter. Costs a hash lookup per enclosing and nested graph per
/// candidate: on a graph without subgraphs, as cheap as Graph::lookup.
std::string unique_name(const Graph& graph, const std::string& base);

/// Adds an initializer of floating-point `type` holding `values` (rounded to the type by
/// make_float_tensor, ir/constant.h) under unique_name(graph, base); returns its value. Integer
/// types: add_int64_constant.
Value* add_constant(Graph& graph, const std::string& base, DataType type, std::vector<int64_t> dims,
                    const std::vector<double>& values);

/// Adds an int64 initializer holding `values` exactly under unique_name(graph, base).
Value* add_int64_constant(Graph& graph, const std::string& base, std::vector<int64_t> dims,
                          const std::vector<int64_t>& values);

/// A copy of an attribute that holds no subgraph (graph-valued attributes are not copied).
Attribute copy_attribute(const Attribute& a);

}  // namespace onnxtool::ir
