// Shared harness of the kernel tests: one-node models run with one and with three threads (the
// bytes must agree), tensor builders (random ones: tests/random_feed.h), attribute builders and
// comparisons. Included by the *_kernels_test.cpp files only.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "runner/session.h"
#include "tests/empty_model.h"
#include "tests/random_feed.h"

namespace onnxtool::testing {

using ir::Attribute;
using ir::DataType;
using runner::Tensor;
using runner::Value;

/// A copyable attribute description (ir::Attribute is move-only).
struct Attr {
  enum Kind { kInt, kInts, kFloat, kFloats, kString, kStrings } kind;
  std::string name;
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;

  Attribute make() const {
    switch (kind) {
      case kInt: return Attribute::make_int(name, i);
      case kInts: return Attribute::make_ints(name, ints);
      case kFloat: return Attribute::make_float(name, f);
      case kFloats: return Attribute::make_floats(name, floats);
      case kStrings: {
        Attribute a;
        a.name = name;
        a.type = static_cast<int32_t>(ir::AttrType::kStrings);
        a.strings = strings;
        return a;
      }
      default: return Attribute::make_string(name, s);
    }
  }
};

/// One node with fed inputs (an invalid Tensor marks an omitted input) and attributes.
struct NodeCase {
  NodeCase(std::string op_type, int64_t version, std::vector<Tensor> in, std::vector<Attr> attributes = {},
           size_t n_outputs = 1)
      : op(std::move(op_type)), opset(version), inputs(std::move(in)), attrs(std::move(attributes)), outputs(n_outputs) {}
  std::string op;
  int64_t opset;
  std::vector<Tensor> inputs;
  std::vector<Attr> attrs;
  size_t outputs;
};

/// Compares values with a reference, relatively: |got - want| <= tol * (floor + |want|) for each
/// element; the first element beyond fails the check, naming it.
inline void check_relative(const std::vector<double>& got, const std::vector<double>& want, double tol, double floor) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (std::fabs(got[i] - want[i]) > tol * (floor + std::fabs(want[i]))) {
      FAIL_CHECK("element " << i << ": " << got[i] << " vs expected " << want[i]);
      return;
    }
}

/// A float tensor's values as a double tensor of the same shape.
inline Tensor to_double(const Tensor& t) {
  Tensor d(DataType::kDouble, t.shape());
  for (int64_t i = 0; i < t.size(); ++i) d.mutable_data<double>()[i] = t.data<float>()[i];
  return d;
}

/// Runs a model of one node `op`, named `node_name`, over graph inputs in0.. (an invalid tensor:
/// an omitted input) and outputs out0..; `edit` sets its attributes.
inline std::vector<Value> run_one_node(const std::string& op, int64_t opset, const std::vector<Tensor>& inputs,
                                       size_t outputs, const std::string& node_name,
                                       const std::function<void(ir::Node&)>& edit, int threads) {
  ir::Model m = empty_model(opset);
  ir::Graph& g = *m.graph;
  std::vector<ir::Value*> ins;
  std::map<std::string, Value> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].valid()) {
      ins.push_back(nullptr);
      continue;
    }
    const std::string name = "in" + std::to_string(i);
    ins.push_back(g.add_input(name, ir::TypeInfo::tensor(inputs[i].dtype())).value);
    feeds[name] = Value::of(inputs[i]);
  }
  std::vector<std::string> outs;
  for (size_t i = 0; i < outputs; ++i) outs.push_back("out" + std::to_string(i));
  ir::Node* n = g.add_node(op, ins, outs, "", node_name);
  if (edit) edit(*n);
  for (size_t i = 0; i < outputs; ++i) g.add_output(n->output(i), std::nullopt);
  runner::Session s(m, runner::SessionOptions{threads});
  return s.run(feeds);
}

inline std::vector<Value> run_node(const NodeCase& c, int threads) {
  return run_one_node(c.op, c.opset, c.inputs, c.outputs, "n0", [&c](ir::Node& n) {
    for (const auto& a : c.attrs) n.set_attr(a.make());
  }, threads);
}

/// Runs with one and with three threads, checks the outputs are byte-identical, returns them.
inline std::vector<Tensor> run_checked(const NodeCase& c) {
  auto one = run_node(c, 1);
  auto many = run_node(c, 3);
  std::vector<Tensor> out;
  REQUIRE(one.size() == many.size());
  for (size_t i = 0; i < one.size(); ++i) {
    REQUIRE(one[i].is_tensor());
    const Tensor& a = one[i].tensor;
    const Tensor& b = many[i].tensor;
    REQUIRE(a.shape() == b.shape());
    if (a.dtype() == DataType::kString) CHECK(a.strings() == b.strings());
    else CHECK((a.bytes() == b.bytes() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0));
    out.push_back(a);
  }
  return out;
}

inline Tensor run1(const NodeCase& c) { return run_checked(c)[0]; }

// ---------------------------------------------------------------- tensors

inline Tensor ints(std::vector<int64_t> v, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  Tensor t(DataType::kInt64, shape);
  std::copy(v.begin(), v.end(), t.mutable_data<int64_t>());
  return t;
}

inline Tensor floats(std::vector<float> v, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  Tensor t(DataType::kFloat, shape);
  std::copy(v.begin(), v.end(), t.mutable_data<float>());
  return t;
}

inline Tensor strings_of(std::vector<int64_t> shape) {
  Tensor t(DataType::kString, std::move(shape));
  for (int64_t i = 0; i < t.size(); ++i) t.mutable_strings()[static_cast<size_t>(i)] = "s" + std::to_string(i);
  return t;
}

inline Attr attr_int(const std::string& n, int64_t v) { return {Attr::kInt, n, v, 0, {}, {}, {}, {}}; }
inline Attr attr_ints(const std::string& n, std::vector<int64_t> v) { return {Attr::kInts, n, 0, 0, {}, std::move(v), {}, {}}; }
inline Attr attr_float(const std::string& n, float v) { return {Attr::kFloat, n, 0, v, {}, {}, {}, {}}; }
inline Attr attr_floats(const std::string& n, std::vector<float> v) { return {Attr::kFloats, n, 0, 0, {}, {}, std::move(v), {}}; }
inline Attr attr_string(const std::string& n, std::string v) { return {Attr::kString, n, 0, 0, std::move(v), {}, {}, {}}; }
inline Attr attr_strings(const std::string& n, std::vector<std::string> v) { return {Attr::kStrings, n, 0, 0, {}, {}, {}, std::move(v)}; }

inline std::vector<int64_t> strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

inline std::vector<int64_t> unravel(int64_t i, const std::vector<int64_t>& shape) {
  std::vector<int64_t> c(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    c[d] = i % shape[d];
    i /= shape[d];
  }
  return c;
}

/// A reference output built element by element: out[i] = in[src(i)] (src -1: `fill`).
inline Tensor gather_reference(const Tensor& in, const std::vector<int64_t>& out_shape,
                        const std::function<int64_t(const std::vector<int64_t>&)>& src, double fill = 0) {
  Tensor out(in.dtype(), out_shape);
  const size_t es = in.dtype() == DataType::kString ? 0 : in.bytes() / static_cast<size_t>(std::max<int64_t>(in.size(), 1));
  for (int64_t i = 0; i < out.size(); ++i) {
    const int64_t s = src(unravel(i, out_shape));
    if (in.dtype() == DataType::kString) {
      out.mutable_strings()[static_cast<size_t>(i)] = s < 0 ? "" : in.strings()[static_cast<size_t>(s)];
    } else if (s < 0) {
      REQUIRE(in.dtype() == DataType::kFloat);
      out.mutable_data<float>()[i] = static_cast<float>(fill);
    } else {
      std::memcpy(static_cast<uint8_t*>(out.mutable_raw()) + static_cast<size_t>(i) * es,
                  static_cast<const uint8_t*>(in.raw()) + static_cast<size_t>(s) * es, es);
    }
  }
  return out;
}

inline void check_same(const Tensor& got, const Tensor& want) {
  REQUIRE(got.dtype() == want.dtype());
  REQUIRE(got.shape() == want.shape());
  if (got.dtype() == DataType::kString) {
    CHECK(got.strings() == want.strings());
    return;
  }
  CHECK(std::memcmp(got.raw(), want.raw(), got.bytes()) == 0);
}

inline void check_close(const Tensor& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < got.size(); ++i) {
    const double g = got.data<float>()[i];
    if (std::fabs(g - want[static_cast<size_t>(i)]) > tol * (1 + std::fabs(want[static_cast<size_t>(i)]))) {
      FAIL_CHECK("element " << i << ": " << g << " vs expected " << want[static_cast<size_t>(i)]);
      return;
    }
  }
}

/// Expects the node to fail with an Error whose message names the node.
inline void check_fails(const NodeCase& c, const std::string& fragment) {
  try {
    run_node(c, 1);
    FAIL_CHECK(c.op << " did not fail (expected '" << fragment << "')");
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK_MESSAGE(msg.find(fragment) != std::string::npos, msg);
    CHECK_MESSAGE(msg.find("n0") != std::string::npos, msg);
  }
}

}  // namespace onnxtool::testing
