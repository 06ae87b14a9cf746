// The Vulkan kernels of MatMul, Gemm, Conv and ConvTranspose against the CPU runner: generated
// one-node models at odd sizes (broadcast batches, transposes, groups, depthwise, strides,
// dilations, pads, auto_pad), in float32 and float16, each checked to run on the device (or to
// be declined where the kernel must decline). Float16 runs twice: with float32 arithmetic (two
// ulps of the CPU runner) and with the device's float16 arithmetic (within the rounding error
// bound of a float16 sum).
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "tests/model_builder.h"
#include "tests/random_feed.h"
#include "tests/vulkan_test_util.h"

namespace onnxtool::vulkan_linalg_test {
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

/// The number of products each output of `op` sums (at most): the accumulation length K.
int64_t sum_length(const std::string& op, const std::vector<In>& inputs, const std::vector<Attr>& attrs) {
  const auto& a = inputs[0].shape;
  const auto& w = inputs[1].shape;
  if (op == "MatMul") return a.back();
  int64_t kernel = 1;
  for (size_t d = 2; d < w.size(); ++d) kernel *= w[d];
  if (op == "Conv") return w[1] * kernel;
  if (op == "ConvTranspose") return w[0] * kernel;  // every input channel of the group, every tap
  for (const Attr& at : attrs)
    if (at.name == "transA" && at.i) return a[0];
  return a[1];  // Gemm
}

/// Float16 arithmetic: every product and partial sum rounds to float16 (unit roundoff u = 2^-11),
/// so an output that sums K products may differ from the exact sum by (K + 1) u sum|a_i b_i|
/// (recursive summation; bias, alpha and beta add three roundings), and the CPU's own result by
/// one more rounding of the output. sum|a_i b_i| is the CPU's output on the absolute values of
/// the inputs (alpha and beta made positive too).
void check_fp16_arithmetic(ir::Model& model, const std::string& op, const std::vector<In>& inputs,
                           const std::vector<Attr>& attrs, const std::map<std::string, runner::Value>& feeds,
                           int64_t opset) {
  runner::Session cpu(model);
  const Tensor want = cpu.run(feeds)[0].tensor;
  runner::SessionOptions options;
  options.device = runner::DeviceSpec::parse("vulkan:0");
  runner::Session gpu(model, options);
  const Tensor got = gpu.run(feeds)[0].tensor;
  CHECK(testing::same_bytes(got, gpu.run(feeds)[0].tensor));
  testing::ModelBuilder b(opset);
  std::vector<ir::Value*> values;
  std::map<std::string, runner::Value> abs_feeds;
  for (const auto& in : inputs) {
    std::vector<testing::DimSpec> dims(in.shape.begin(), in.shape.end());
    values.push_back(b.input(in.name, DataType::kFloat, dims));
    const Tensor& t = feeds.at(in.name).tensor;
    Tensor a(DataType::kFloat, t.shape());
    for (int64_t i = 0; i < t.size(); ++i) runner::set_element_from_double(a, i, std::fabs(runner::element_as_double(t, i)));
    abs_feeds[in.name] = runner::Value::of(std::move(a));
  }
  std::vector<Attr> abs_attrs = attrs;
  for (Attr& at : abs_attrs) at.f = std::fabs(at.f);
  b.output(b.op(op, values, "y", abs_attrs), DataType::kFloat);
  runner::Session bound_session(b.m);
  const Tensor bound = bound_session.run(abs_feeds)[0].tensor;
  const double u = std::ldexp(1.0, -11);
  const double k = static_cast<double>(sum_length(op, inputs, attrs));
  REQUIRE(got.shape() == want.shape());
  for (int64_t i = 0; i < want.size(); ++i) {
    const double g = runner::element_as_double(got, i), w = runner::element_as_double(want, i);
    const double limit = (k + 4) * u * runner::element_as_double(bound, i) + u * std::fabs(w);
    if (!(std::fabs(g - w) <= limit)) {
      FAIL_CHECK(op << " float16 arithmetic: element " << i << ": " << g << " vs CPU " << w << " (bound " << limit
                    << ", K " << k << ")");
      return;
    }
  }
}

/// Builds `op` at `opset` over graph inputs of `type` (all of them fed, so that the node is not
/// folded as a constant), runs it on the CPU and on the device, and checks the results agree and
/// that the node ran on the device (or on the CPU when `on_device` is false).
void check(const std::string& op, int64_t opset, const std::vector<In>& inputs, const std::vector<Attr>& attrs,
           DataType type = DataType::kFloat, bool on_device = true) {
  testing::ModelBuilder b(opset);
  std::vector<ir::Value*> values;
  std::map<std::string, runner::Value> feeds;
  testing::Rng rng(7);
  for (const auto& in : inputs) {
    std::vector<testing::DimSpec> dims(in.shape.begin(), in.shape.end());
    values.push_back(b.input(in.name, type, dims));
    feeds[in.name] = runner::Value::of(testing::uniform_tensor(rng, in.shape, -1, 1, type));
  }
  b.output(b.op(op, values, "y", attrs), type);
  if (type == DataType::kFloat16 && on_device) check_fp16_arithmetic(b.m, op, inputs, attrs, feeds, opset);
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

TEST_CASE("float16 arithmetic is float16: a sum of 3000 ones stalls at 2048, and :fp32-arithmetic reaches 3000") {
  if (!testing::vulkan_available()) return;
  std::string why;
  bool fp16_arithmetic = false;
  for (const auto& d : runner::list_devices(&why))
    if (d.id == "vulkan:0") fp16_arithmetic = d.fp16_arithmetic && d.fp16_storage;
  for (const char* op : {"MatMul", "Conv"}) {
    CAPTURE(op);
    const bool conv = std::string(op) == "Conv";
    const std::vector<int64_t> xs = conv ? std::vector<int64_t>{1, 3000, 1} : std::vector<int64_t>{1, 3000};
    const std::vector<int64_t> ws = conv ? std::vector<int64_t>{1, 3000, 1} : std::vector<int64_t>{3000, 1};
    testing::ModelBuilder b(13);
    ir::Value* x = b.input("x", DataType::kFloat16, std::vector<testing::DimSpec>(xs.begin(), xs.end()));
    ir::Value* w = b.input("w", DataType::kFloat16, std::vector<testing::DimSpec>(ws.begin(), ws.end()));
    b.output(b.op(op, {x, w}, "y"), DataType::kFloat16);
    std::map<std::string, runner::Value> feeds;
    Tensor ones_x(DataType::kFloat16, xs), ones_w(DataType::kFloat16, ws);
    for (int64_t i = 0; i < 3000; ++i) {
      runner::set_element_from_double(ones_x, i, 1.0);
      runner::set_element_from_double(ones_w, i, 1.0);
    }
    feeds["x"] = runner::Value::of(ones_x);
    feeds["w"] = runner::Value::of(ones_w);
    for (const char* device : {"vulkan:0", "vulkan:0:fp32-arithmetic"}) {
      CAPTURE(device);
      runner::SessionOptions options;
      options.device = runner::DeviceSpec::parse(device);
      runner::Session s(b.m, options);
      const double y = runner::element_as_double(s.run(feeds)[0].tensor, 0);
      const bool fp16 = fp16_arithmetic && std::string(device) == "vulkan:0";
      CHECK(y == (fp16 ? 2048.0 : 3000.0));
    }
  }
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
}  // namespace onnxtool::vulkan_linalg_test
