// The Vulkan kernels of runner/vulkan/nn.cpp (pooling, the normalizations) and reduce.cpp
// (Softmax family, Reduce*) against the CPU runner: generated one-node models at odd sizes,
// float32 and float16, each run on both and required to agree (testing::run_on_both) and to have
// run on the device, or to have been declined where the kernel must decline.
#include <doctest/doctest.h>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "tests/kernel_test_util.h"
#include "tests/random_feed.h"
#include "tests/vulkan_test_util.h"

namespace onnxtool::vulkan_nn_test {
namespace {

using ir::DataType;
using runner::Tensor;
using testing::Attr;
using testing::run_on_both;
using testing::vulkan_available;

Attr i(const char* name, int64_t v) { return testing::attr_int(name, v); }
Attr is(const char* name, std::vector<int64_t> v) { return testing::attr_ints(name, std::move(v)); }
Attr f(const char* name, float v) { return testing::attr_float(name, v); }
Attr s(const char* name, std::string v) { return testing::attr_string(name, std::move(v)); }
Attr ss(const char* name, std::vector<std::string> v) { return testing::attr_strings(name, std::move(v)); }
Attr fs(const char* name, std::vector<float> v) { return testing::attr_floats(name, std::move(v)); }

/// Uniform values in [lo, hi) of a float type (drawn as doubles), from one stream through the
/// file's cases.
Tensor rand_t(std::vector<int64_t> shape, DataType type = DataType::kFloat, double lo = -3, double hi = 3) {
  static testing::Rng rng(7);
  return testing::uniform_tensor<double>(rng, std::move(shape), lo, hi, type);
}

Tensor ints_t(std::vector<int64_t> v) {
  Tensor t(DataType::kInt64, {static_cast<int64_t>(v.size())});
  for (size_t k = 0; k < v.size(); ++k) t.mutable_data<int64_t>()[k] = v[k];
  return t;
}

/// One node: inputs fed (`fed`) or as initializers, then compared CPU vs Vulkan.
struct OneNode {
  ir::Model m;
  std::map<std::string, runner::Value> feeds;
  std::vector<ir::Value*> ins;

  explicit OneNode(int64_t opset) {
    m = testing::empty_model(opset);
  }
  OneNode& in(const Tensor& t) {
    const std::string name = "in" + std::to_string(ins.size());
    ins.push_back(m.graph->add_input(name, ir::TypeInfo::tensor(t.dtype())).value);
    feeds[name] = runner::Value::of(t);
    return *this;
  }
  OneNode& constant(const Tensor& t) {
    const std::string name = "c" + std::to_string(ins.size());
    ins.push_back(m.graph->add_initializer(ir::make_tensor(name, t.dtype(), t.shape(), t.raw(), t.bytes())));
    return *this;
  }
  OneNode& none() {
    ins.push_back(nullptr);
    return *this;
  }
  /// Runs on both; `declined`: the node must run on the CPU instead of the device.
  void check(const std::string& op, const std::vector<Attr>& attrs = {}, size_t outputs = 1, bool declined = false) {
    std::vector<std::string> outs;
    for (size_t k = 0; k < outputs; ++k) outs.push_back("out" + std::to_string(k));
    ir::Node* n = m.graph->add_node(op, ins, outs, "", "n0");
    for (const auto& a : attrs) n->set_attr(a.make());
    for (size_t k = 0; k < outputs; ++k) m.graph->add_output(n->output(k), std::nullopt);
    const auto r = run_on_both(m, feeds);
    INFO(op << " opset " << m.onnx_opset());
    CHECK_MESSAGE(r.mismatch.empty(), r.mismatch);
    if (declined) {
      CHECK(r.placement.device_nodes == 0);
      CHECK(r.placement.cpu_nodes.size() == 1);
    } else {
      CHECK(r.placement.device_nodes == 1);
      CHECK_MESSAGE(r.placement.cpu_nodes.empty(), (r.placement.cpu_nodes.empty() ? "" : r.placement.cpu_nodes[0].reason));
    }
  }
};

const DataType kTypes[] = {DataType::kFloat, DataType::kFloat16};

TEST_SUITE("vulkan_nn") {
TEST_CASE("MaxPool and AveragePool: 1-D, 2-D, 3-D; strided, padded, dilated, ceil_mode, auto_pad") {
  if (!vulkan_available()) return;
  for (DataType t : kTypes) {
    for (const char* op : {"MaxPool", "AveragePool"}) {
      const bool avg = std::string(op) == "AveragePool";
      OneNode(12).in(rand_t({1, 3, 13, 13}, t)).check(op, {is("kernel_shape", {3, 3}), is("strides", {2, 2}), is("pads", {1, 1, 1, 1})});
      OneNode(12).in(rand_t({2, 5, 127}, t)).check(op, {is("kernel_shape", {4}), is("strides", {3})});
      if (t == DataType::kFloat16) continue;  // float16: the storage path, checked by the cases above
      OneNode(12).in(rand_t({1, 2, 7, 7, 7}, t)).check(op, {is("kernel_shape", {2, 3, 2}), is("pads", {0, 1, 1, 1, 0, 1})});
      OneNode(12).in(rand_t({1, 3, 13, 7}, t)).check(op, {is("kernel_shape", {3, 2}), is("strides", {2, 3}), i("ceil_mode", 1)});
      for (const char* ap : {"SAME_UPPER", "SAME_LOWER", "VALID"})
        OneNode(12).in(rand_t({1, 2, 13, 7}, t)).check(op, {is("kernel_shape", {4, 3}), is("strides", {2, 2}), s("auto_pad", ap)});
      // Dilations: MaxPool from opset 10, AveragePool from 19.
      OneNode(avg ? 19 : 12).in(rand_t({1, 2, 13, 13}, t)).check(op, {is("kernel_shape", {3, 3}), is("dilations", {2, 3}), is("pads", {2, 1, 0, 3})});
      OneNode(1).in(rand_t({1, 1, 7, 7}, t)).check(op, {is("kernel_shape", {2, 2})});
    }
    // count_include_pad, with padding larger than some windows.
    for (int64_t inc : {0, 1})
      OneNode(11).in(rand_t({1, 3, 7, 13}, t)).check("AveragePool", {is("kernel_shape", {3, 5}), is("pads", {1, 2, 2, 2}), is("strides", {2, 3}), i("count_include_pad", inc), i("ceil_mode", 1)});
  }
  // The Indices output is not computed on the device.
  OneNode(12).in(rand_t({1, 2, 7, 7})).check("MaxPool", {is("kernel_shape", {2, 2})}, 2, true);
  // Integer MaxPool runs on the CPU.
  Tensor xi(DataType::kInt32, {1, 1, 4, 4});
  for (int k = 0; k < 16; ++k) xi.mutable_data<int32_t>()[k] = k * 7 % 11;
  OneNode(12).in(xi).check("MaxPool", {is("kernel_shape", {2, 2})}, 1, true);
}

TEST_CASE("GlobalAveragePool and GlobalMaxPool") {
  if (!vulkan_available()) return;
  for (DataType t : kTypes)
    for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
      OneNode(11).in(rand_t({2, 7, 13, 13}, t)).check(op);
      if (t == DataType::kFloat16) continue;
      OneNode(11).in(rand_t({1, 127, 1, 1}, t)).check(op);
      OneNode(11).in(rand_t({3, 5, 1000}, t)).check(op);
      OneNode(11).in(rand_t({1, 2, 3, 5, 7}, t)).check(op);
    }
}

TEST_CASE("Softmax, LogSoftmax, Hardmax: the coerced 2-D form before opset 13, one axis after") {
  if (!vulkan_available()) return;
  for (DataType t : kTypes)
    for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
      OneNode(11).in(rand_t({2, 3, 7, 13}, t)).check(op);
      if (t == DataType::kFloat16) continue;
      OneNode(11).in(rand_t({2, 3, 7, 13}, t)).check(op, {i("axis", 2)});
      OneNode(11).in(rand_t({7, 1000}, t)).check(op, {i("axis", -1)});
      OneNode(13).in(rand_t({2, 3, 7, 13}, t)).check(op);
      OneNode(13).in(rand_t({2, 127, 13}, t)).check(op, {i("axis", 1)});
      OneNode(13).in(rand_t({1, 1}, t)).check(op, {i("axis", 0)});
      OneNode(13).in(rand_t({5, 3000}, t, -20, 20)).check(op);
    }
  // Ties: Hardmax takes the first maximum.
  Tensor x(DataType::kFloat, {3, 7});
  for (int k = 0; k < 21; ++k) x.mutable_data<float>()[k] = static_cast<float>(k % 3);
  OneNode(13).in(x).check("Hardmax");
}

TEST_CASE("Reduce*: axes as attribute and as input, keepdims, noop_with_empty_axes, all axes") {
  if (!vulkan_available()) return;
  const char* ops[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                       "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
  // One shader serves every op (an op code): the sanitizer build runs the cases of seven ops.
  testing::SanitizerSample sample(3);
  for (DataType t : kTypes)
    for (const char* op : ops) {
      if (sample.skip()) continue;
      const std::string name = op;
      // Positive values for the logarithm, values near 1 for products.
      const double lo = name == "ReduceLogSum" ? 0.1 : name == "ReduceProd" ? 0.8 : -3;
      const double hi = name == "ReduceLogSum" ? 2 : name == "ReduceProd" ? 1.2 : 3;
      auto x = [&](std::vector<int64_t> shape) { return rand_t(std::move(shape), t, lo, hi); };
      const int64_t input_since = name == "ReduceSum" ? 13 : 18;
      // Axes as an attribute.
      OneNode(input_since - 2).in(x({2, 7, 13})).check(op, {is("axes", {1})});
      if (t == DataType::kFloat16) {
        OneNode(input_since).in(x({4, 1, 600})).constant(ints_t({0, 2})).check(op);
        continue;
      }
      OneNode(input_since - 2).in(x({2, 7, 13})).check(op, {is("axes", {0, 2}), i("keepdims", 0)});
      OneNode(input_since - 2).in(x({3, 127})).check(op);  // all axes
      OneNode(input_since - 2).in(x({2, 3, 5, 7})).check(op, {is("axes", {-1, 1}), i("keepdims", 1)});
      // Axes as an input.
      OneNode(input_since).in(x({2, 7, 13})).constant(ints_t({-1})).check(op, {i("keepdims", 0)});
      OneNode(input_since).in(x({4, 1, 600})).constant(ints_t({0, 2})).check(op);
      OneNode(input_since).in(x({2, 7, 13})).check(op);                       // no axes: all
      OneNode(input_since).in(x({2, 7, 13})).constant(ints_t({})).check(op);  // empty axes: all
      OneNode(input_since).in(x({2, 7, 13})).constant(ints_t({})).check(op, {i("noop_with_empty_axes", 1)});
    }
  // A long row (more elements than a workgroup) and a fed axes input.
  OneNode(18).in(rand_t({3, 5000})).in(ints_t({1})).check("ReduceMean");
  OneNode(18).in(rand_t({2, 5000, 3})).constant(ints_t({1})).check("ReduceLogSumExp", {i("keepdims", 0)});
}

TEST_CASE("BatchNormalization (inference), InstanceNormalization, LayerNormalization, LpNormalization") {
  if (!vulkan_available()) return;
  for (DataType t : kTypes) {
    auto bn = [&](int64_t opset, std::vector<int64_t> shape, std::vector<Attr> attrs = {}, size_t outputs = 1,
                  bool declined = false) {
      const int64_t c = shape.size() > 1 ? shape[1] : 1;
      OneNode(opset)
          .in(rand_t(shape, t))
          .constant(rand_t({c}, t))
          .constant(rand_t({c}, t))
          .constant(rand_t({c}, t))
          .constant(rand_t({c}, t, 0.1, 2))
          .check("BatchNormalization", attrs, outputs, declined);
    };
    bn(9, {2, 7, 13, 13});
    bn(15, {2, 7, 13, 13}, {f("epsilon", 1e-3f)});
    bn(15, {5, 7});
    bn(7, {1, 3, 127}, {i("spatial", 1)});
    bn(7, {1, 3, 5}, {i("spatial", 0)}, 1, true);
    bn(15, {2, 3, 5, 5}, {i("training_mode", 1)}, 3, true);

    OneNode(6).in(rand_t({2, 7, 13, 13}, t)).constant(rand_t({7}, t)).constant(rand_t({7}, t)).check("InstanceNormalization");
    OneNode(6).in(rand_t({1, 3, 1000}, t, 5, 9)).constant(rand_t({3}, t)).constant(rand_t({3}, t)).check("InstanceNormalization", {f("epsilon", 1e-2f)});

    OneNode(17).in(rand_t({2, 13, 127}, t)).constant(rand_t({127}, t)).constant(rand_t({127}, t)).check("LayerNormalization");
    OneNode(17).in(rand_t({2, 7, 13}, t)).constant(rand_t({7, 13}, t)).constant(rand_t({13}, t)).check("LayerNormalization", {i("axis", 1)}, 1, true);
    OneNode(17).in(rand_t({2, 7, 13}, t)).constant(rand_t({7, 13}, t)).check("LayerNormalization", {i("axis", -2), f("epsilon", 1e-3f)});
    OneNode(17).in(rand_t({3, 1, 1000}, t)).constant(rand_t({1}, t)).constant(rand_t({1000}, t)).check("LayerNormalization");
    OneNode(17).in(rand_t({2, 7, 13}, t)).constant(rand_t({13}, t)).check("LayerNormalization", {}, 3, true);

    for (int64_t p : {1, 2}) {
      OneNode(1).in(rand_t({2, 7, 13}, t)).check("LpNormalization", {i("p", p)});
      OneNode(1).in(rand_t({2, 7, 13}, t)).check("LpNormalization", {i("p", p), i("axis", 1)});
    }
  }
}

TEST_CASE("RNN, GRU and LSTM: directions, layouts, initial state, clip, activations, peepholes, linear_before_reset") {
  if (!vulkan_available()) return;
  struct Cell {
    const char* op;
    int64_t gates;
    size_t outputs;
  };
  for (DataType t : kTypes)
    for (const Cell& c : {Cell{"RNN", 1, 2}, Cell{"GRU", 3, 2}, Cell{"LSTM", 4, 3}}) {
      const bool lstm = c.gates == 4;
      // Forward, seq 7, batch 3, input 5, hidden 13, with bias and initial state.
      {
        OneNode n(13);
        n.in(rand_t({7, 3, 5}, t)).constant(rand_t({1, c.gates * 13, 5}, t, -0.5, 0.5));
        n.constant(rand_t({1, c.gates * 13, 13}, t, -0.5, 0.5)).constant(rand_t({1, 2 * c.gates * 13}, t, -0.5, 0.5));
        n.none().in(rand_t({1, 3, 13}, t));
        if (lstm) n.in(rand_t({1, 3, 13}, t));
        n.check(c.op, {i("hidden_size", 13)}, c.outputs);
      }
      if (t == DataType::kFloat16) continue;
      // Bidirectional in layout 1 (opset 14), no bias.
      {
        OneNode n(14);
        n.in(rand_t({2, 6, 7}, t)).constant(rand_t({2, c.gates * 4, 7}, t, -1, 1));
        n.constant(rand_t({2, c.gates * 4, 4}, t, -1, 1));
        n.check(c.op, {s("direction", "bidirectional"), i("layout", 1)}, c.outputs);
      }
      // Reverse, one step of batch 1, clipped, other activations with alpha and beta.
      {
        OneNode n(13);
        n.in(rand_t({1, 1, 3}, t)).constant(rand_t({1, c.gates * 6, 3}, t)).constant(rand_t({1, c.gates * 6, 6}, t));
        const std::vector<std::string> acts = c.gates == 1   ? std::vector<std::string>{"ScaledTanh"}
                                              : c.gates == 3 ? std::vector<std::string>{"HardSigmoid", "Softsign"}
                                                             : std::vector<std::string>{"HardSigmoid", "LeakyRelu", "Affine"};
        n.check(c.op,
                {s("direction", "reverse"), f("clip", 1.5f), ss("activations", acts),
                 fs("activation_alpha", {0.3f, 0.2f, 0.7f}), fs("activation_beta", {0.4f, 0.1f})},
                c.outputs);
      }
      // sequence_lens shorter than the sequence runs on the CPU.
      {
        OneNode n(13);
        Tensor lens(DataType::kInt32, {2});
        lens.mutable_data<int32_t>()[0] = 3;
        lens.mutable_data<int32_t>()[1] = 2;
        n.in(rand_t({3, 2, 4}, t)).constant(rand_t({1, c.gates * 5, 4}, t, -1, 1)).constant(rand_t({1, c.gates * 5, 5}, t, -1, 1));
        n.none().in(lens);
        n.check(c.op, {}, c.outputs, true);
      }
    }
  // LSTM peepholes with and without input_forget.
  for (int64_t forget : {0, 1}) {
    OneNode n(13);
    n.in(rand_t({5, 2, 3})).constant(rand_t({1, 16, 3}, DataType::kFloat, -1, 1)).constant(rand_t({1, 16, 4}, DataType::kFloat, -1, 1));
    n.constant(rand_t({1, 32}, DataType::kFloat, -1, 1)).none().none().none().constant(rand_t({1, 12}, DataType::kFloat, -1, 1));
    n.check("LSTM", {i("input_forget", forget)}, 3);
  }
  // GRU with linear_before_reset, both directions.
  for (DataType t : kTypes) {
    OneNode n(13);
    n.in(rand_t({6, 3, 5}, t)).constant(rand_t({2, 21, 5}, t, -1, 1)).constant(rand_t({2, 21, 7}, t, -1, 1));
    n.constant(rand_t({2, 42}, t, -1, 1));
    n.check("GRU", {s("direction", "bidirectional"), i("linear_before_reset", 1)}, 2);
  }
}
}

}  // namespace
}  // namespace onnxtool::vulkan_nn_test
