// The Vulkan elementwise kernels on generated cases: every unary op on odd sizes with the special
// values (NaN, infinities, zeros, large magnitudes) mixed into random data, and the binary ops
// under broadcasting, in float32 and float16, against the CPU runner.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/op_schema.h"
#include "runner/vulkan/shaders/op_codes.h"
#include "tests/model_builder.h"
#include "tests/random_feed.h"
#include "tests/vulkan_test_util.h"

namespace onnxtool::vulkan_elementwise_test {
namespace {

using runner::Tensor;
using testing::ModelBuilder;

/// A float32 or float16 tensor of `shape`: uniform in [-scale, scale) with the special values at
/// the front (as many as fit).
Tensor data(ir::DataType type, const std::vector<int64_t>& shape, float scale, uint32_t seed) {
  testing::Rng rng(seed);
  Tensor t = testing::uniform_tensor(rng, shape, -scale, scale, type);
  const float special[] = {std::numeric_limits<float>::quiet_NaN(), INFINITY, -INFINITY, 0.0f, -0.0f, 30.0f, -30.0f,
                           1e-3f, 0.5f, -0.5f, 2.5f};
  for (int64_t i = 0; i < std::min<int64_t>(t.size(), std::size(special)); ++i)
    runner::set_element_from_double(t, i, special[i]);
  return t;
}

/// Runs a one-node model on both devices; the node must run on the device.
void check_node(const std::string& op, ir::DataType type, const std::vector<std::vector<int64_t>>& shapes,
                const std::vector<testing::Attr>& attrs = {}, int64_t opset = 21) {
  ModelBuilder b(opset);
  std::vector<ir::Value*> ins;
  std::map<std::string, runner::Value> feeds;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::string name = "x" + std::to_string(i);
    std::vector<testing::DimSpec> dims(shapes[i].begin(), shapes[i].end());
    ins.push_back(b.input(name, type, dims));
    feeds[name] = runner::Value::of(data(type, shapes[i], 3.0f, static_cast<uint32_t>(7 + i)));
  }
  b.output(b.op(op, ins, "y", attrs), type);
  const auto r = testing::run_on_both(b.m, feeds);
  INFO(op << " " << ir::data_type_name(type) << " " << runner::shape_string(shapes[0]));
  CHECK(r.mismatch == "");
  CHECK(r.placement.device_nodes == 1);
  CHECK(r.placement.cpu_nodes.empty());
}

TEST_SUITE("vulkan_elementwise") {
TEST_CASE("unary ops on odd sizes with NaN, infinities and zeros") {
  if (!testing::vulkan_available()) return;
  // Every op the device registers from unary.comp's op-code list, at an opset that has it.
  std::vector<std::string> ops;
#define ONNXTOOL_UNARY_NAME(name, code, onnx_op) \
  if (onnx_op) ops.push_back(#name);
  UNARY_OPS(ONNXTOOL_UNARY_NAME)
#undef ONNXTOOL_UNARY_NAME
  CHECK(ops.size() >= 30);
  testing::SanitizerSample sample(2);  // three sizes per op: one or two of them
  for (ir::DataType type : {ir::DataType::kFloat, ir::DataType::kFloat16})
    for (const std::string& op : ops) {
      const int64_t opset = std::max(21, ir::SchemaRegistry::instance().first_version("", op));
      for (int64_t n : {1, 13, 127})
        if (!sample.skip()) check_node(op, type, {{n}}, {}, opset);
    }
  check_node("Gelu", ir::DataType::kFloat, {{7, 13}});
  check_node("Gelu", ir::DataType::kFloat, {{7, 13}}, {testing::attr_string("approximate", "tanh")});
  check_node("LeakyRelu", ir::DataType::kFloat, {{7}}, {testing::attr_float("alpha", 0.3f)});
}

TEST_CASE("binary ops under broadcasting") {
  if (!testing::vulkan_available()) return;
  const std::vector<std::vector<std::vector<int64_t>>> shapes = {
      {{1}, {1}}, {{7, 1, 13}, {13}}, {{1}, {7, 13}}, {{2, 1, 5, 1}, {3, 1, 4}}, {{127}, {127}}, {{1, 3, 1, 1, 2, 1}, {2, 2}}};
  testing::SanitizerSample sample(5);  // six shapes per op: one or two of them, a different one each op
  for (ir::DataType type : {ir::DataType::kFloat, ir::DataType::kFloat16})
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean"})
      for (const auto& s : shapes)
        if (!sample.skip()) check_node(op, type, s);
  // PRelu's slope broadcasts to X's shape (one direction).
  for (const auto& s : std::vector<std::vector<std::vector<int64_t>>>{{{7, 13}, {13}}, {{2, 3, 5}, {3, 1}}, {{127}, {1}}})
    for (ir::DataType type : {ir::DataType::kFloat, ir::DataType::kFloat16}) check_node("PRelu", type, s);
  check_node("Sum", ir::DataType::kFloat, {{7, 13}, {13}, {7, 1}});
  check_node("Max", ir::DataType::kFloat16, {{7, 13}, {13}, {7, 1}, {1}});
}
}

}  // namespace
}  // namespace onnxtool::vulkan_elementwise_test
