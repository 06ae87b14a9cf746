// The Vulkan kernels of MatMul, Gemm, Conv and ConvTranspose against the CPU runner: generated
// one-node models at odd sizes (broadcast batches, transposes, groups, depthwise, strides,
// dilations, pads, auto_pad), in float32 and float16, each checked to run on the device (or to
// be declined where the kernel must decline).
#include <doctest/doctest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "tests/model_builder.h"
#include "tests/vulkan_test_util.h"

namespace onnxtool {
namespace {

using ir::DataType;
using runner::Tensor;
using testing::Attr;
using testing::attr_float;
using testing::attr_int;
using testing::attr_ints;
using testing::attr_string;

struct In {
  std::string name;
  std::vector<int64_t> shape;
};

/// A tensor of uniform values in [-1, 1) of the given float type.
Tensor random_tensor(DataType type, const std::vector<int64_t>& shape, std::mt19937& rng) {
  Tensor t(type, shape);
  std::uniform_real_distribution<float> d(-1, 1);
  for (int64_t i = 0; i < t.size(); ++i) runner::set_element_from_double(t, i, d(rng));
  return t;
}

/// Builds `op` at `opset` over graph inputs of `type` (all of them fed, so that the node is not
/// folded as a constant), runs it on the CPU and on the device, and checks the results agree and
/// that the node ran on the device (or on the CPU when `on_device` is false).
void check(const std::string& op, int64_t opset, const std::vector<In>& inputs, const std::vector<Attr>& attrs,
           DataType type = DataType::kFloat, bool on_device = true) {
  testing::ModelBuilder b(opset);
  std::vector<ir::Value*> values;
  std::map<std::string, runner::Value> feeds;
  std::mt19937 rng(7);
  for (const auto& in : inputs) {
    std::vector<testing::DimSpec> dims(in.shape.begin(), in.shape.end());
    values.push_back(b.input(in.name, type, dims));
    feeds[in.name] = runner::Value::of(random_tensor(type, in.shape, rng));
  }
  b.output(b.op(op, values, "y", attrs), type);
  const auto r = testing::run_on_both(b.m, feeds);
  CHECK_MESSAGE(r.mismatch.empty(), r.mismatch);
  if (on_device) {
    CHECK(r.placement.device_nodes == 1);
    CHECK(r.placement.cpu_nodes.empty());
    for (const auto& c : r.placement.cpu_nodes) MESSAGE(op << " declined: " << c.reason);
  } else {
    CHECK(r.placement.device_nodes == 0);
    CHECK(r.placement.cpu_nodes.size() == 1);
  }
}

const DataType kTypes[] = {DataType::kFloat, DataType::kFloat16};

TEST_SUITE("vulkan_linalg") {
TEST_CASE("MatMul: plain, vector and broadcast batched operands") {
  if (!testing::vulkan_available()) return;
  for (DataType t : kTypes) {
    CAPTURE(static_cast<int>(t));
    check("MatMul", 13, {{"a", {1, 1}}, {"b", {1, 1}}}, {}, t);
    check("MatMul", 13, {{"a", {7, 13}}, {"b", {13, 5}}}, {}, t);
    check("MatMul", 13, {{"a", {2, 1, 7, 13}}, {"b", {3, 13, 17}}}, {}, t);
    check("MatMul", 13, {{"a", {13}}, {"b", {2, 13, 7}}}, {}, t);
  }
  check("MatMul", 1, {{"a", {127, 33}}, {"b", {33, 19}}}, {});
  check("MatMul", 9, {{"a", {3, 13}}, {"b", {13}}}, {});
  check("MatMul", 13, {{"a", {13}}, {"b", {13}}}, {});
  check("MatMul", 13, {{"a", {4, 1, 3, 5}}, {"b", {1, 2, 5, 18}}}, {});
  check("MatMul", 13, {{"a", {2, 1, 1, 1, 3, 4}}, {"b", {4, 2}}}, {});
  // Silero VAD style: a long K against a few rows.
  check("MatMul", 13, {{"a", {1, 2, 129}}, {"b", {129, 31}}}, {});
}

TEST_CASE("MatMul: what the kernel declines") {
  if (!testing::vulkan_available()) return;
  // Five batch dims: an output of rank 7.
  check("MatMul", 13, {{"a", {1, 2, 1, 2, 1, 2, 3}}, {"b", {3, 2}}}, {}, DataType::kFloat, false);
}

TEST_CASE("Gemm: transposes, alpha, beta and the broadcasts of C") {
  if (!testing::vulkan_available()) return;
  for (DataType t : kTypes) {
    CAPTURE(static_cast<int>(t));
    check("Gemm", 13, {{"a", {7, 13}}, {"b", {13, 5}}, {"c", {5}}}, {}, t);
    check("Gemm", 13, {{"a", {13, 7}}, {"b", {5, 13}}, {"c", {7, 5}}},
          {attr_int("transA", 1), attr_int("transB", 1), attr_float("alpha", 0.5f), attr_float("beta", -2.0f)}, t);
  }
  check("Gemm", 13, {{"a", {1, 1}}, {"b", {1, 1}}}, {});
  check("Gemm", 11, {{"a", {127, 9}}, {"b", {9, 17}}}, {attr_float("alpha", 3.0f)});
  check("Gemm", 13, {{"a", {7, 13}}, {"b", {3, 13}}, {"c", {7, 1}}}, {attr_int("transB", 1)});
  check("Gemm", 13, {{"a", {13, 7}}, {"b", {13, 3}}, {"c", {1}}}, {attr_int("transA", 1)});
  check("Gemm", 13, {{"a", {13, 7}}, {"b", {13, 3}}, {"c", {}}}, {attr_int("transA", 1), attr_float("beta", 0.25f)});
  check("Gemm", 13, {{"a", {4, 6}}, {"b", {6, 3}}, {"c", {4, 3}}}, {attr_float("beta", 0.0f)});
  // Opsets 1-6: C broadcasts only with broadcast=1; without it C must be [M, N].
  check("Gemm", 6, {{"a", {7, 13}}, {"b", {13, 5}}, {"c", {5}}}, {attr_int("broadcast", 1)});
  check("Gemm", 6, {{"a", {7, 13}}, {"b", {13, 5}}, {"c", {7, 5}}}, {});
  check("Gemm", 6, {{"a", {7, 13}}, {"b", {13, 5}}, {"c", {5}}}, {}, DataType::kFloat, false);
  check("Gemm", 1, {{"a", {3, 4}}, {"b", {5, 4}}, {"c", {3, 5}}}, {attr_int("transB", 1)});
}

TEST_CASE("Conv: 1-D, 2-D and 3-D with strides, dilations, pads, groups and auto_pad") {
  if (!testing::vulkan_available()) return;
  for (DataType t : kTypes) {
    CAPTURE(static_cast<int>(t));
    check("Conv", 11, {{"x", {1, 3, 13}}, {"w", {5, 3, 3}}, {"b", {5}}}, {attr_ints("pads", {1, 1}), attr_ints("strides", {2})},
          t);
    check("Conv", 11, {{"x", {2, 4, 7, 9}}, {"w", {6, 2, 3, 3}}, {"b", {6}}},
          {attr_int("group", 2), attr_ints("dilations", {2, 1}), attr_ints("pads", {1, 2, 0, 1})}, t);
    // Depthwise, PaddleOCR style.
    check("Conv", 11, {{"x", {1, 8, 13, 13}}, {"w", {8, 1, 3, 3}}, {"b", {8}}},
          {attr_int("group", 8), attr_ints("strides", {2, 2}), attr_string("auto_pad", "SAME_UPPER")}, t);
  }
  check("Conv", 1, {{"x", {1, 1, 1, 1}}, {"w", {1, 1, 1, 1}}}, {});
  check("Conv", 11, {{"x", {1, 4, 7, 7}}, {"w", {8, 1, 3, 3}}}, {attr_int("group", 4), attr_ints("pads", {1, 1, 1, 1})});
  check("Conv", 11, {{"x", {1, 3, 8, 7}}, {"w", {4, 3, 2, 4}}},
        {attr_string("auto_pad", "SAME_LOWER"), attr_ints("strides", {3, 2}), attr_ints("kernel_shape", {2, 4})});
  check("Conv", 11, {{"x", {1, 3, 9, 7}}, {"w", {4, 3, 3, 2}}, {"b", {4}}},
        {attr_string("auto_pad", "VALID"), attr_ints("dilations", {3, 2})});
  check("Conv", 11, {{"x", {2, 16, 5, 6}}, {"w", {7, 16, 1, 1}}, {"b", {7}}}, {});
  // Silero VAD style: 1-D, strided, wide.
  check("Conv", 13, {{"x", {1, 16, 127}}, {"w", {24, 16, 5}}, {"b", {24}}},
        {attr_ints("pads", {2, 2}), attr_ints("strides", {2})});
  check("Conv", 11, {{"x", {1, 2, 5, 6, 7}}, {"w", {3, 2, 2, 3, 2}}, {"b", {3}}},
        {attr_ints("pads", {1, 0, 1, 0, 1, 1}), attr_ints("strides", {1, 2, 2})});
}

TEST_CASE("ConvTranspose: strides, dilations, pads, output_padding, output_shape and auto_pad") {
  if (!testing::vulkan_available()) return;
  for (DataType t : kTypes) {
    CAPTURE(static_cast<int>(t));
    check("ConvTranspose", 11, {{"x", {1, 3, 7}}, {"w", {3, 2, 3}}, {"b", {2}}}, {attr_ints("strides", {2})}, t);
    // PaddleOCR det style upsampling.
    check("ConvTranspose", 11, {{"x", {1, 8, 7, 9}}, {"w", {8, 4, 2, 2}}, {"b", {4}}}, {attr_ints("strides", {2, 2})}, t);
  }
  check("ConvTranspose", 1, {{"x", {1, 1, 1, 1}}, {"w", {1, 1, 1, 1}}}, {});
  check("ConvTranspose", 11, {{"x", {2, 4, 5, 6}}, {"w", {4, 3, 3, 3}}, {"b", {6}}},
        {attr_int("group", 2), attr_ints("strides", {2, 3}), attr_ints("pads", {1, 0, 1, 2}),
         attr_ints("output_padding", {1, 1}), attr_ints("dilations", {2, 1})});
  check("ConvTranspose", 11, {{"x", {1, 2, 5, 4}}, {"w", {2, 3, 3, 3}}},
        {attr_ints("strides", {2, 2}), attr_ints("output_shape", {13, 8})});
  check("ConvTranspose", 11, {{"x", {1, 2, 5, 4}}, {"w", {2, 3, 3, 2}}},
        {attr_ints("strides", {2, 3}), attr_string("auto_pad", "SAME_UPPER")});
  check("ConvTranspose", 11, {{"x", {1, 2, 5, 4}}, {"w", {2, 3, 4, 3}}},
        {attr_ints("strides", {3, 2}), attr_string("auto_pad", "SAME_LOWER")});
  check("ConvTranspose", 11, {{"x", {1, 3, 4, 4}}, {"w", {3, 1, 3, 3}}, {"b", {3}}},
        {attr_int("group", 3), attr_string("auto_pad", "VALID"), attr_ints("kernel_shape", {3, 3})});
  check("ConvTranspose", 11, {{"x", {1, 2, 3, 4, 2}}, {"w", {2, 2, 2, 3, 2}}}, {attr_ints("strides", {2, 1, 2})});
}
}

}  // namespace
}  // namespace onnxtool
