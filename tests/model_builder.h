// Builders of test models in code. ModelBuilder: typed inputs with static or symbolic dims,
// random weights, nodes with attributes, outputs, for tests that run or rewrite whole graphs.
// ShapeNet: inputs from dim strings ("N,3,?"), multi-output nodes in any domain, and shape
// inference with the rule ids it reported, for the shape-function tests.
#pragma once

#include <cctype>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/diagnostic.h"
#include "ir/graph.h"
#include "ir/shape_inference.h"
#include "ir/tensor.h"
#include "tests/kernel_test_util.h"
#include "tests/random_feed.h"

namespace onnxtool::testing {

/// A dim of a graph input: a size, or a symbol (dim_param) such as "N".
using DimSpec = std::variant<int64_t, std::string>;

struct ModelBuilder {
  ir::Model m;
  ir::Graph* g;
  Rng rng{42};

  explicit ModelBuilder(int64_t opset, int64_t ir_version = 8) {
    m = empty_model(opset, ir_version);
    g = m.graph.get();
    g->name = "test";
  }

  ir::Value* input(const std::string& name, ir::DataType type, const std::vector<DimSpec>& dims) {
    ir::Shape s;
    for (const auto& d : dims)
      s.dims.push_back(std::holds_alternative<int64_t>(d) ? ir::Dim::of(std::get<int64_t>(d))
                                                          : ir::Dim::symbol(std::get<std::string>(d)));
    return g->add_input(name, ir::TypeInfo::tensor(type, s)).value;
  }

  /// A float initializer of uniform random values in [lo, hi).
  ir::Value* weight(const std::string& name, std::vector<int64_t> dims, float lo = -1, float hi = 1) {
    return uniform_initializer(*g, rng, name, std::move(dims), lo, hi);
  }

  /// An int64 initializer: a vector, or a scalar when `scalar` is set (one value).
  ir::Value* ints(const std::string& name, const std::vector<int64_t>& v, bool scalar = false) {
    const std::vector<int64_t> dims = scalar ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(v.size())};
    return g->add_initializer(ir::make_tensor(name, ir::DataType::kInt64, dims, v.data(), v.size() * sizeof(int64_t)));
  }

  ir::Value* scalar(const std::string& name, float v) {
    return g->add_initializer(ir::make_tensor(name, ir::DataType::kFloat, {}, &v, sizeof v));
  }

  /// A node with one output named `out` (the node is named out + "_node").
  ir::Node* node(const std::string& op, std::vector<ir::Value*> in, const std::string& out, const std::vector<Attr>& attrs = {}) {
    ir::Node* n = g->add_node(op, std::move(in), {out}, "", out + "_node");
    for (const auto& a : attrs) n->set_attr(a.make());
    return n;
  }

  ir::Value* op(const std::string& op_type, std::vector<ir::Value*> in, const std::string& out, const std::vector<Attr>& attrs = {}) {
    return node(op_type, std::move(in), out, attrs)->output(0);
  }

  /// A graph output; `type` declares its element type (shape left unknown), as a valid model must.
  void output(ir::Value* v, std::optional<ir::DataType> type = std::nullopt) {
    g->add_output(v, type ? std::optional<ir::TypeInfo>(ir::TypeInfo::tensor(*type)) : std::nullopt);
  }
};

/// "N,3,?" -> [N,3,?] (a number, a symbol, or ? for an unknown dim); "" -> rank 0.
inline ir::Shape parse_shape(const std::string& text) {
  ir::Shape s;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string d = text.substr(start, end - start);
    if (d == "?") s.dims.emplace_back();
    else if (std::isdigit(static_cast<unsigned char>(d[0]))) s.dims.push_back(ir::Dim::of(std::stoll(d)));
    else s.dims.push_back(ir::Dim::symbol(d));
    start = end + 1;
  }
  return s;
}

/// A one-graph model for shape-inference tests, inferred with infer().
struct ShapeNet {
  ir::Model model;
  ir::Graph* g;
  ir::DiagnosticSink sink;

  /// The default opset, and ai.onnx.ml's when ml_opset > 0.
  explicit ShapeNet(int64_t opset, int64_t ml_opset = 0) {
    model = empty_model(opset);
    model.graph->name = "main";
    if (ml_opset > 0) model.set_opset_version("ai.onnx.ml", ml_opset);
    g = model.graph.get();
  }
  ir::Value* in(const std::string& name, ir::DataType t, const std::string& dims) {
    return g->add_input(name, ir::TypeInfo::tensor(t, parse_shape(dims))).value;
  }
  ir::Value* in(const std::string& name, ir::DataType t, std::optional<ir::Shape> shape) {
    return g->add_input(name, ir::TypeInfo::tensor(t, std::move(shape))).value;
  }
  ir::Value* in_unranked(const std::string& name, ir::DataType t) {
    return g->add_input(name, ir::TypeInfo::tensor(t)).value;
  }
  /// An int64 initializer: a vector, or a scalar when `scalar` is set (one value).
  ir::Value* ints(const std::string& name, const std::vector<int64_t>& v, bool scalar = false) {
    std::vector<int64_t> dims;
    if (!scalar) dims.push_back(static_cast<int64_t>(v.size()));
    return g->add_initializer(ir::make_tensor(name, ir::DataType::kInt64, dims, v.data(), v.size() * sizeof(int64_t)));
  }
  ir::Value* floats(const std::string& name, const std::vector<float>& v) {
    return g->add_initializer(ir::make_tensor(name, ir::DataType::kFloat, {static_cast<int64_t>(v.size())}, v.data(),
                                              v.size() * sizeof(float)));
  }
  ir::Node* node(const std::string& op, const std::vector<ir::Value*>& inputs, const std::vector<std::string>& outputs,
                 const std::vector<Attr>& attrs = {}, const std::string& domain = "") {
    ir::Node* n = g->add_node(op, inputs, outputs, domain);
    for (const auto& a : attrs) n->set_attr(a.make());
    return n;
  }
  ir::Value* v(const std::string& name) { return g->find(name); }
  std::string type(const std::string& name) { return g->find(name)->type.to_string(); }
  void infer() { ir::infer_shapes(model, sink); }
  /// The rule ids infer() reported, space-separated.
  std::string rules() const {
    std::string out;
    for (const auto& d : sink.items()) out += (out.empty() ? "" : " ") + d.rule;
    return out;
  }
};

/// Adds a graph attribute `attr` to `owner` holding a new, empty subgraph of owner's graph.
inline ir::Graph* add_subgraph(ir::Node* owner, const std::string& attr) {
  ir::Attribute a;
  a.name = attr;
  a.type = static_cast<int32_t>(ir::AttrType::kGraph);
  a.g = std::make_unique<ir::Graph>(owner->graph());
  a.g->name = attr;
  ir::Graph* sub = a.g.get();
  owner->set_attr(std::move(a));
  return sub;
}

}  // namespace onnxtool::testing
