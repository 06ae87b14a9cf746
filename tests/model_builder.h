// A small builder of test models in code: typed inputs with static or symbolic dims, initializers,
// nodes with attributes, outputs. Shared by the test files that build whole graphs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "tests/kernel_test_util.h"

namespace onnxtool::testing {

/// A dim of a graph input: a size, or a symbol (dim_param) such as "N".
using DimSpec = std::variant<int64_t, std::string>;

struct ModelBuilder {
  ir::Model m;
  ir::Graph* g;
  std::mt19937 rng{42};

  explicit ModelBuilder(int64_t opset, int64_t ir_version = 8) {
    m.ir_version = ir_version;
    m.set_opset_version("", opset);
    m.graph = std::make_unique<ir::Graph>();
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
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    std::uniform_real_distribution<float> dist(lo, hi);
    for (float& x : v) x = dist(rng);
    return g->add_initializer(ir::make_tensor(name, ir::DataType::kFloat, dims, v.data(), v.size() * sizeof(float)));
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

}  // namespace onnxtool::testing
