// Type and shape inference over a whole model, with symbolic dims and propagation of the values
// of small integer tensors (shape computations), driven by the schemas' shape functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/diagnostic.h"
#include "ir/graph.h"
#include "ir/op_schema.h"

namespace onnxtool::ir {

/// Thrown by shape functions (through InferenceContext::fail); the driver turns it into a
/// Diagnostic on the node and carries on with the next node.
struct ShapeError {
  std::string rule;
  std::string message;
};

/// A known integer value of a small 0-D/1-D tensor: each element a static number or a symbol.
using DimValues = std::vector<Dim>;

class ShapeInferencer;

/// What a shape function sees of one node, and how it reports outputs.
class InferenceContext {
 public:
  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }

  size_t input_count() const { return node_.inputs().size(); }
  size_t output_count() const { return node_.outputs().size(); }
  /// True when input i is given (not omitted with "" and within the input count).
  bool has_input(size_t i) const { return node_.input(i) != nullptr; }
  bool has_output(size_t i) const { return node_.output(i) != nullptr; }
  /// The known type of input i, or nullptr when omitted or unknown.
  const TypeInfo* input_type(size_t i) const;
  /// Element type of a tensor input, or nullopt.
  std::optional<DataType> input_elem_type(size_t i) const;
  /// Shape of a tensor input, or nullptr when the rank is unknown.
  const Shape* input_shape(size_t i) const;
  /// A constant input: an initializer (that is not an overridable graph input) or the output of
  /// a Constant node. nullptr otherwise.
  const Tensor* input_tensor(size_t i) const;
  /// The values of an integer input when known (constant, or propagated through shape
  /// computations: elements may be symbols).
  const DimValues* input_values(size_t i) const;
  /// The values of an integer input when all are known numbers.
  std::optional<std::vector<int64_t>> input_ints(size_t i) const;

  // Attributes, type-checked: a present attribute of another type fails with node.attribute-type.
  bool has_attr(std::string_view name) const { return node_.attr(name) != nullptr; }
  int64_t attr_int(std::string_view name, int64_t fallback) const;
  float attr_float(std::string_view name, float fallback) const;
  std::string attr_string(std::string_view name, std::string fallback) const;
  std::optional<std::vector<int64_t>> attr_ints(std::string_view name) const;
  const Tensor* attr_tensor(std::string_view name) const;
  Graph* attr_graph(std::string_view name) const;

  void set_output(size_t i, TypeInfo type);
  void set_output_tensor(size_t i, DataType type, std::optional<Shape> shape);
  /// Records the values of an integer output (for shape computations downstream).
  void set_output_values(size_t i, DimValues values);
  /// Output i's type so far (set by this shape function), or nullptr.
  const TypeInfo* output_type(size_t i) const;

  /// Infers a subgraph (If branches, Loop/Scan bodies) given its input types (nullopt: leave the
  /// declared type) and returns its output types (kUnset where unknown).
  std::vector<TypeInfo> infer_subgraph(Graph& graph, const std::vector<std::optional<TypeInfo>>& inputs);

  /// Reports a contradiction (rule id, message) and stops this node's inference.
  [[noreturn]] void fail(std::string rule, std::string message) const;

 private:
  friend class ShapeInferencer;
  InferenceContext(ShapeInferencer& owner, Node& node, int64_t opset)
      : owner_(owner), node_(node), opset_(opset), outputs_(node.outputs().size()),
        output_values_(node.outputs().size()) {}
  const Attribute* typed_attr(std::string_view name, AttrType type) const;
  ShapeInferencer& owner_;
  Node& node_;
  int64_t opset_;
  std::vector<TypeInfo> outputs_;
  std::vector<std::optional<DimValues>> output_values_;
};

struct ShapeInferenceOptions {
  /// Report declared types (value_info, graph outputs) that contradict inference.
  bool check_declared = true;
  /// Propagate values of integer tensors with at most this many elements.
  size_t max_value_elements = 64;
};

/// Infers types and shapes for every value of the model (main graph, subgraphs, and with
/// unknown inputs, function bodies), merging them into Value::type. Contradictions become
/// diagnostics in `sink` (rule ids "shape.*"); nothing throws for a bad model.
void infer_shapes(Model& model, DiagnosticSink& sink, const ShapeInferenceOptions& options = {});

/// Inferred types by value, for a caller that must leave the model as it is (the checker).
using TypeTable = std::unordered_map<const Value*, TypeInfo>;

/// infer_shapes without writing to the model: the merged type of every value inference
/// touched goes into the returned table (a value absent from it keeps its own type).
TypeTable infer_types(const Model& model, DiagnosticSink& sink, const ShapeInferenceOptions& options = {});

/// Writes every inferred type of a node output that has none declared as a value_info entry
/// (what onnx.shape_inference.infer_shapes does). Returns how many entries were added.
size_t store_inferred_value_info(Model& model);

/// Registers the shape functions of every op family into the registry.
void register_shape_functions(SchemaRegistry& registry);

}  // namespace onnxtool::ir
