// The Vulkan kernels of runner/vulkan/data.cpp (data movement), convert.cpp (Cast, Where,
// Quantize/Dequantize, Dropout), vision.cpp (Resize) and control.cpp (Identity) against the CPU
// runner: one-node models of every op at odd sizes, float32 and float16 (and int32 where the
// copies move raw elements), each checked to have run on the device, plus the cases that must
// decline.
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "tests/kernel_test_util.h"
#include "tests/model_builder.h"
#include "tests/vulkan_test_util.h"

namespace onnxtool::vulkan_data_test {
namespace {

using namespace testing;  // NOLINT: the kernel-test harness

/// One input of a case: fed at run time (data), or an initializer (shape-like inputs).
struct In {
  Tensor t;
  bool constant = false;
  bool missing = false;
};
In data(Tensor t) { return {std::move(t), false, false}; }
In init(Tensor t) { return {std::move(t), true, false}; }
In none() { return {Tensor(), false, true}; }

Tensor to_f16(const Tensor& f) {
  Tensor t(DataType::kFloat16, f.shape());
  for (int64_t i = 0; i < f.size(); ++i) t.mutable_data<uint16_t>()[i] = ir::float_to_half(f.data<float>()[i]);
  return t;
}

Tensor int32s(std::vector<int64_t> shape) { return random_ints(DataType::kInt32, std::move(shape), -1000, 1000); }

Tensor int32_list(std::vector<int32_t> v) {
  Tensor t(DataType::kInt32, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.mutable_data<int32_t>());
  return t;
}

Tensor bools(std::vector<int64_t> shape) { return random_ints(DataType::kBool, std::move(shape), 0, 1); }

/// Runs op on the CPU and the device; `on_device` says whether the node must run on the device
/// (otherwise it must have been declined, and the results still agree).
void check_variants(const std::string& op, int64_t opset, const std::vector<In>& inputs,
                    const std::vector<std::vector<Attr>>& variants, size_t outputs = 1, bool on_device = true,
                    DataType out_type = DataType::kFloat) {
  ModelBuilder b(opset);
  std::vector<ir::Value*> ins;
  std::map<std::string, Value> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    if (inputs[i].missing) {
      ins.push_back(nullptr);
      continue;
    }
    const Tensor& t = inputs[i].t;
    if (inputs[i].constant) {
      ins.push_back(b.g->add_initializer(ir::make_tensor(name, t.dtype(), t.shape(), t.raw(), t.bytes())));
    } else {
      std::vector<DimSpec> dims(t.shape().begin(), t.shape().end());
      ins.push_back(b.input(name, t.dtype(), dims));
      feeds[name] = Value::of(t);
    }
  }
  for (size_t v = 0; v < variants.size(); ++v) {
    std::vector<std::string> names;
    for (size_t i = 0; i < outputs; ++i) names.push_back("out" + std::to_string(v) + "_" + std::to_string(i));
    ir::Node* n = b.g->add_node(op, ins, names, "", "node" + std::to_string(v));
    for (const auto& a : variants[v]) n->set_attr(a.make());
    for (size_t i = 0; i < outputs; ++i) b.output(n->output(i), out_type);
  }
  const auto r = run_on_both(b.m, feeds);
  CHECK_MESSAGE(r.mismatch.empty(), op << " opset " << opset << ": " << r.mismatch);
  if (on_device) {
    CHECK_MESSAGE(r.placement.device_nodes == variants.size(), op << " opset " << opset << " did not run on the device: "
                                                     << (r.placement.cpu_nodes.empty() ? "" : r.placement.cpu_nodes[0].reason));
    CHECK(r.placement.cpu_nodes.empty());
  } else {
    CHECK_MESSAGE(r.placement.cpu_nodes.size() == variants.size(), op << " opset " << opset << " should have been declined");
  }
}

void check(const std::string& op, int64_t opset, const std::vector<In>& inputs, const std::vector<Attr>& attrs,
           size_t outputs = 1, bool on_device = true, DataType out_type = DataType::kFloat) {
  check_variants(op, opset, inputs, {attrs}, outputs, on_device, out_type);
}

/// The same case with float32, float16 and (for the raw copies) int32 data as input 0.
void check_types(const std::string& op, int64_t opset, const Tensor& x, std::vector<In> rest,
                 const std::vector<Attr>& attrs, bool with_int32 = false, size_t outputs = 1) {
  std::vector<In> in{data(x)};
  in.insert(in.end(), rest.begin(), rest.end());
  check(op, opset, in, attrs, outputs, true, DataType::kFloat);
  in[0] = data(to_f16(x));
  check(op, opset, in, attrs, outputs, true, DataType::kFloat16);
  if (with_int32) {
    Tensor xi(DataType::kInt32, x.shape());
    for (int64_t i = 0; i < x.size(); ++i) xi.mutable_data<int32_t>()[i] = static_cast<int32_t>(x.data<float>()[i] * 100);
    in[0] = data(xi);
    check(op, opset, in, attrs, outputs, true, DataType::kInt32);
  }
}

TEST_SUITE("vulkan_data") {
  TEST_CASE("views: Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout") {
    if (!vulkan_available()) return;
    const Tensor x = random_float({2, 1, 7, 13});
    check_types("Reshape", 14, x, {init(ints({0, -1, 13}))}, {});
    check_types("Reshape", 14, x, {init(ints({0, 0, 7, -1}))}, {attr_int("allowzero", 0)});
    check("Reshape", 5, {data(x), init(ints({-1}))}, {});
    check("Reshape", 1, {data(x)}, {attr_ints("shape", {14, 13})});
    check("Reshape", 14, {data(random_ints(DataType::kInt64, {3, 4}, -9, 9)), init(ints({4, 3}))}, {}, 1, true,
          DataType::kInt64);
    check_types("Flatten", 13, x, {}, {attr_int("axis", -1)});
    check("Flatten", 13, {data(x)}, {attr_int("axis", 0)});
    check_types("Squeeze", 13, x, {init(ints({1}))}, {});
    check("Squeeze", 11, {data(x)}, {attr_ints("axes", {-3})});
    check("Squeeze", 13, {data(x)}, {});
    check_types("Unsqueeze", 13, x, {init(ints({0, -1}))}, {});
    check("Unsqueeze", 11, {data(x)}, {attr_ints("axes", {2})});
    check_types("Identity", 16, x, {}, {});
    check("Dropout", 13, {data(x)}, {});
    check("Dropout", 7, {data(to_f16(x))}, {attr_float("ratio", 0.3f)}, 1, true, DataType::kFloat16);
    Tensor f(DataType::kBool, {});
    f.mutable_data<uint8_t>()[0] = 0;
    check("Dropout", 13, {data(x), none(), init(f)}, {});
  }

  TEST_CASE("Shape and Size answer from metadata") {
    if (!vulkan_available()) return;
    const Tensor x = random_float({3, 1, 7, 5});
    check("Shape", 15, {data(x)}, {attr_int("start", 1), attr_int("end", -1)}, 1, true, DataType::kInt64);
    check("Shape", 13, {data(x)}, {}, 1, true, DataType::kInt64);
    check("Size", 13, {data(x)}, {}, 1, true, DataType::kInt64);
  }

  TEST_CASE("Transpose, Expand, Tile") {
    if (!vulkan_available()) return;
    check_types("Transpose", 13, random_float({2, 7, 5, 3}), {}, {attr_ints("perm", {0, 2, 3, 1})}, true);
    check_variants("Transpose", 13, {data(random_float({2, 13, 1, 3}))},
                   {{attr_ints("perm", {0, 2, 3, 1})}, {}, {attr_ints("perm", {3, 1, 0, 2})}});
    check_types("Transpose", 13, random_float({127, 13}), {}, {attr_ints("perm", {1, 0})});
    check_types("Transpose", 13, random_float({2, 3, 1, 5, 2, 3}), {}, {attr_ints("perm", {5, 3, 1, 0, 2, 4})});
    check_types("Expand", 13, random_float({3, 1, 5}), {init(ints({2, 1, 7, 5}))}, {});
    check_types("Expand", 8, random_float({1}), {init(ints({13}))}, {});
    check_types("Tile", 13, random_float({2, 3, 5}), {init(ints({1, 3, 2}))}, {});
    check_types("Tile", 6, random_float({1, 3, 7, 5}), {init(ints({2, 1, 1, 3}))}, {});
  }

  TEST_CASE("Concat and Split") {
    if (!vulkan_available()) return;
    for (int64_t axis : {0, 1, -1}) {
      const Tensor a = random_float({3, 7, 5}), b = random_float({3, 7, 5});
      check("Concat", 13, {data(a), data(b), data(random_float({3, 7, 5}))}, {attr_int("axis", axis)});
      check("Concat", 13, {data(to_f16(a)), data(to_f16(b))}, {attr_int("axis", axis)}, 1, true, DataType::kFloat16);
    }
    check("Concat", 13, {data(random_float({2, 1, 3})), data(random_float({2, 13, 3})), data(random_float({2, 0, 3}))},
          {attr_int("axis", 1)});
    check("Concat", 13, {data(int32s({4, 3})), data(int32s({1, 3}))}, {attr_int("axis", 0)}, 1, true, DataType::kInt32);
    check("Concat", 13, {data(random_ints(DataType::kInt64, {2}, 0, 9)), data(random_ints(DataType::kInt64, {3}, 0, 9))},
          {attr_int("axis", 0)}, 1, false, DataType::kInt64);
    const Tensor x = random_float({4, 13, 6});
    check_types("Split", 13, x, {init(ints({3, 10}))}, {attr_int("axis", 1)}, true, 2);
    check_types("Split", 11, x, {}, {attr_int("axis", -1), attr_ints("split", {1, 2, 3})}, false, 3);
    check_types("Split", 13, x, {}, {attr_int("axis", 0)}, false, 2);
    check_types("Split", 18, x, {}, {attr_int("axis", 1), attr_int("num_outputs", 3)}, false, 3);
  }

  TEST_CASE("Slice: attributes and inputs, negative steps, clamping") {
    if (!vulkan_available()) return;
    const Tensor x = random_float({7, 13, 5});
    check("Slice", 9, {data(x)}, {attr_ints("starts", {1, -4}), attr_ints("ends", {100, -1}), attr_ints("axes", {0, 1})});
    check("Slice", 1, {data(x)}, {attr_ints("starts", {2}), attr_ints("ends", {3})});
    check_types("Slice", 13, x, {init(ints({-1, 12})), init(ints({-100, 0})), init(ints({0, 1})), init(ints({-2, -3}))}, {},
                true);
    check_types("Slice", 13, x, {init(ints({0})), init(ints({INT64_MAX})), init(ints({2})), init(ints({2}))}, {});
    check_types("Slice", 13, x, {init(ints({5})), init(ints({2})), init(ints({1})), none()}, {});  // empty
    check("Slice", 13, {data(x), init(int32_list({1})), init(int32_list({-1})), init(int32_list({-1}))}, {});
  }

  TEST_CASE("Gather") {
    if (!vulkan_available()) return;
    const Tensor x = random_float({5, 13, 3});
    check_types("Gather", 13, x, {init(ints({0, -1, 4, 2}, {2, 2}))}, {attr_int("axis", 0)}, true);
    check_types("Gather", 13, x, {init(ints({7}, {}))}, {attr_int("axis", 1)});
    check_types("Gather", 13, x, {init(int32_list({-3, 0, 2, 2}))}, {attr_int("axis", -1)});
    // Indices computed at run time (int64 input of the graph).
    check("Gather", 13, {data(x), data(ints({1, 12, -13}))}, {attr_int("axis", 1)});
    // Out of range: declined, the CPU reports the error (not run here). int64 data: declined.
    check("Gather", 13, {data(random_ints(DataType::kInt64, {4}, 0, 9)), init(ints({1}))}, {}, 1, false,
          DataType::kInt64);
  }

  TEST_CASE("Pad: constant, reflect, edge, wrap; attributes and inputs") {
    if (!vulkan_available()) return;
    const Tensor x = random_float({2, 3, 7, 13});
    check("Pad", 13, {data(x), init(ints({0, 0, 1, 2, 0, 1, 3, 4})), init(floats({2.5f}, {}))}, {});
    check("Pad", 13, {data(to_f16(x)), init(ints({0, 0, 1, 2, 0, 1, 3, 4})), init(to_f16(floats({2.5f}, {})))}, {}, 1, true,
          DataType::kFloat16);
    check_types("Pad", 13, x, {init(ints({0, 0, 3, 12, 0, 0, 6, 12}))}, {attr_string("mode", "reflect")});
    check_types("Pad", 13, x, {init(ints({0, 1, -1, 2, 0, 0, 2, -3}))}, {attr_string("mode", "edge")});
    check_types("Pad", 19, x, {init(ints({0, 0, 9, 20, 0, 0, 9, 20}))}, {attr_string("mode", "wrap")});
    check_types("Pad", 18, x, {init(ints({5, 64, 5, 64})), none(), init(ints({-2, 3}))}, {attr_string("mode", "reflect")});
    check("Pad", 2, {data(x)}, {attr_ints("pads", {0, 0, 1, 1, 0, 0, 1, 1}), attr_float("value", -1.5f)});
    check("Pad", 2, {data(to_f16(x))}, {attr_ints("pads", {0, 0, 1, 1, 0, 0, 1, 1}), attr_float("value", 3.0f)}, 1, true,
          DataType::kFloat16);
    check("Pad", 13, {data(int32s({3, 4})), init(ints({1, 1, 1, 1})), init(int32_list({7}).reshaped({}))}, {}, 1, true,
          DataType::kInt32);
    check("Pad", 13, {data(random_float({1, 127})), init(ints({0, 3, 0, 3}))}, {attr_string("mode", "reflect")});
  }

  TEST_CASE("Cast between float32 and float16") {
    if (!vulkan_available()) return;
    Tensor x = random_float({7, 13});
    // Values at float16's rounding ties, overflow, subnormals, NaN and infinity.
    const float special[] = {1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 65520.0f, 65519.0f, 1e-7f, 3e-5f, -2.98e-8f, 6e-8f,
                             NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e10f};
    for (size_t i = 0; i < std::size(special); ++i) x.mutable_data<float>()[i] = special[i];
    check("Cast", 13, {data(x)}, {attr_int("to", static_cast<int64_t>(DataType::kFloat16))}, 1, true, DataType::kFloat16);
    check("Cast", 19, {data(to_f16(x))}, {attr_int("to", static_cast<int64_t>(DataType::kFloat))}, 1, true, DataType::kFloat);
    check("Cast", 13, {data(x)}, {attr_int("to", static_cast<int64_t>(DataType::kFloat))});
    check("Cast", 13, {data(x)}, {attr_int("to", static_cast<int64_t>(DataType::kInt32))}, 1, false, DataType::kInt32);
  }

  TEST_CASE("Where with broadcasting") {
    if (!vulkan_available()) return;
    for (int64_t n : {1, 7, 127}) {
      check("Where", 16, {data(bools({n, 1, 5})), data(random_float({3, 5})), data(random_float({n, 3, 1}))}, {});
      check("Where", 9, {data(bools({5})), data(to_f16(random_float({n, 5}))), data(to_f16(random_float({1})))}, {}, 1,
            true, DataType::kFloat16);
    }
    check("Where", 16, {data(bools({13})), data(int32s({13})), data(int32s({}))}, {}, 1, true, DataType::kInt32);
  }

  TEST_CASE("Resize nearest and linear") {
    if (!vulkan_available()) return;
    const Tensor x = random_float({1, 3, 7, 5});
    const std::vector<std::string> coords{"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                                          "tf_half_pixel_for_nn"};
    const std::vector<std::string> nearests{"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    std::vector<std::vector<Attr>> variants;
    for (const auto& c : coords)
      for (const auto& nm : nearests)
        variants.push_back({attr_string("mode", "nearest"), attr_string("coordinate_transformation_mode", c),
                            attr_string("nearest_mode", nm)});
    check_variants("Resize", 13, {data(x), none(), init(floats({1, 1, 2.0f, 1.5f}))}, variants);
    check_variants("Resize", 13, {data(x), none(), none(), init(ints({1, 3, 4, 13}))}, variants);
    std::vector<std::vector<Attr>> linear;
    for (const auto& c : coords)
      if (c != "tf_half_pixel_for_nn")
        linear.push_back({attr_string("mode", "linear"), attr_string("coordinate_transformation_mode", c)});
    check_variants("Resize", 13, {data(x), none(), none(), init(ints({1, 3, 13, 3}))}, linear);
    check_variants("Resize", 13, {data(to_f16(x)), none(), none(), init(ints({1, 3, 13, 3}))}, linear, 1, true,
                   DataType::kFloat16);
    check_variants("Resize", 11, {data(x), init(floats({})), init(floats({1, 1, 0.6f, 2.5f}))}, linear);
    check("Resize", 10, {data(x), init(floats({1, 1, 2, 2}))}, {attr_string("mode", "nearest")});
    check("Resize", 10, {data(x), init(floats({1, 1, 0.5f, 3}))}, {attr_string("mode", "linear")});
    check("Resize", 18, {data(x), none(), none(), init(ints({9, 2}))}, {attr_string("mode", "linear"), attr_ints("axes", {1, 3})});
    check("Resize", 13, {data(x), none(), init(floats({1, 1, 2, 2}))}, {attr_string("mode", "cubic")}, 1, false);
  }

  TEST_CASE("QuantizeLinear and DequantizeLinear") {
    if (!vulkan_available()) return;
    Tensor x = random_float({2, 3, 13});
    // Ties of x / scale (round half to even), saturation and NaN.
    const float special[] = {0.25f, 0.75f, -0.25f, -0.75f, 1.25f, 100.0f, -100.0f, NAN, 63.75f, -64.25f};
    for (size_t i = 0; i < std::size(special); ++i) x.mutable_data<float>()[i] = special[i];
    Tensor zp_u(DataType::kUInt8, {}), zp_i(DataType::kInt8, {});
    zp_u.mutable_data<uint8_t>()[0] = 128;
    zp_i.mutable_data<int8_t>()[0] = -3;
    check("QuantizeLinear", 13, {data(x), init(floats({0.5f}, {})), init(zp_u)}, {}, 1, true, DataType::kUInt8);
    check("QuantizeLinear", 13, {data(x), init(floats({0.5f}, {})), init(zp_i)}, {}, 1, true, DataType::kInt8);
    check("QuantizeLinear", 10, {data(x), init(floats({0.1f}, {}))}, {}, 1, true, DataType::kUInt8);
    Tensor zp3(DataType::kInt8, {3});
    for (int i = 0; i < 3; ++i) zp3.mutable_data<int8_t>()[i] = static_cast<int8_t>(i * 5 - 4);
    check("QuantizeLinear", 13, {data(x), init(floats({0.5f, 0.07f, 3.0f})), init(zp3)}, {attr_int("axis", 1)}, 1, true,
          DataType::kInt8);
    const Tensor q = random_ints(DataType::kUInt8, {2, 3, 13}, 0, 255);
    check("DequantizeLinear", 13, {data(q), init(floats({0.5f}, {})), init(zp_u)}, {});
    const Tensor qi = random_ints(DataType::kInt8, {2, 3, 13}, -128, 127);
    check("DequantizeLinear", 13, {data(qi), init(floats({0.5f, 0.07f, 3.0f})), init(zp3)}, {attr_int("axis", -2)});
    check("DequantizeLinear", 13, {data(qi), init(to_f16(floats({0.25f}, {})))}, {}, 1, true, DataType::kFloat16);
    check("DequantizeLinear", 13, {data(random_ints(DataType::kInt8, {1}, -128, 127)), init(floats({2.0f}, {}))}, {});
    // Blocked quantization declines.
    check("DequantizeLinear", 21, {data(qi), init(random_float({2, 3, 7}))}, {attr_int("axis", 2), attr_int("block_size", 2)},
          1, false);
  }
}

}  // namespace
}  // namespace onnxtool::vulkan_data_test
