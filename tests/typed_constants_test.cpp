// Integer constants keep every value through optimize and convert: INT64_MAX / INT64_MIN ends,
// negative steps, clamped starts, in Slice, Range, Gather, Reshape and Unsqueeze axes. Each model
// runs in the runner before and after the full optimize pipeline and opset conversions down and
// up; outputs must be identical (these rewrites move integers, they compute nothing new). Also the
// typed readers of ir/constant.h themselves, and its float writer against the runner's.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <random>

#include <unistd.h>

#include "convert/version_converter.h"
#include "ir/constant.h"
#include "ir/error.h"
#include "ir/model_io.h"
#include "passes/pass.h"
#include "runner/session.h"
#include "tests/model_builder.h"
#include "tests/test_data.h"

namespace onnxtool::typed_constants_test {
namespace {

using ir::DataType;
using runner::Tensor;
using runner::Value;
using testing::attr_int;
using testing::attr_ints;
using testing::ModelBuilder;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

/// x: float[N, 3, 4] with N = 2.
std::map<std::string, Value> feeds_x() {
  Tensor t(DataType::kFloat, {2, 3, 4});
  for (int64_t i = 0; i < t.size(); ++i) t.mutable_data<float>()[i] = static_cast<float>(i) - 7.5f;
  return {{"x", Value::of(t)}};
}

std::vector<Tensor> run(ir::Model& m) {
  runner::Session s(m, runner::SessionOptions{1});
  std::vector<Tensor> out;
  for (auto& v : s.run(feeds_x())) out.push_back(v.tensor.clone());
  return out;
}

void check_identical(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const std::string& path) {
  INFO(path);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].describe() == b[i].describe());
    REQUIRE(a[i].bytes() == b[i].bytes());
    CHECK(std::memcmp(a[i].raw(), b[i].raw(), a[i].bytes()) == 0);
  }
}

/// The int64 elements of a tensor.
std::vector<int64_t> ints_of(const Tensor& t) {
  REQUIRE(t.dtype() == DataType::kInt64);
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.size());
}

/// Runs `make()`'s model as it is, after the full optimize pipeline, after conversion to `down`
/// (0: none) and after conversion to 21 and back; every result must equal the original's.
/// Returns the original outputs.
std::vector<Tensor> check_paths(const std::function<ir::Model()>& make, int64_t down) {
  ir::Model original = make();
  const int64_t opset = original.opset_version("").value_or(0);
  const auto expected = run(original);

  ir::Model optimized = make();
  passes::optimize(optimized, passes::OptimizeOptions{});
  check_identical(expected, run(optimized), "optimize");

  if (down) {
    ir::Model lowered = make();
    convert::convert_opset(lowered, down);
    check_identical(expected, run(lowered), "convert --opset " + std::to_string(down));
    convert::convert_opset(lowered, opset);
    check_identical(expected, run(lowered), "convert --opset " + std::to_string(down) + " and back");
  }
  ir::Model raised = make();
  convert::convert_opset(raised, 21);
  check_identical(expected, run(raised), "convert --opset 21");
  convert::convert_opset(raised, opset);
  check_identical(expected, run(raised), "convert --opset 21 and back");
  return expected;
}

/// Slice(Shape(x), starts, ends[, axes, steps]) at opset 13.
std::function<ir::Model()> shape_slice(std::vector<int64_t> starts, std::vector<int64_t> ends,
                                       std::vector<int64_t> steps = {}) {
  return [=] {
    ModelBuilder b(13);
    ir::Value* x = b.input("x", DataType::kFloat, {"N", 3, 4});
    std::vector<ir::Value*> in = {b.op("Shape", {x}, "shape"), b.ints("starts", starts), b.ints("ends", ends)};
    if (!steps.empty()) {
      in.push_back(b.ints("axes", {0}));
      in.push_back(b.ints("steps", steps));
    }
    b.output(b.op("Slice", in, "y"), DataType::kInt64);
    return std::move(b.m);
  };
}

}  // namespace

TEST_SUITE("typed_constants") {
  TEST_CASE("the typed readers keep every integer and refuse what they cannot hold") {
    const std::vector<int64_t> big = {kMax, kMin, -1, 0};
    const auto t = ir::make_tensor("t", DataType::kInt64, {4}, big.data(), big.size() * 8);
    CHECK(ir::read_ints(t).value() == big);
    CHECK_FALSE(ir::read_floats(t));
    CHECK_FALSE(ir::read_ints(t, 3));  // more elements than allowed

    const uint64_t huge[2] = {1, uint64_t{1} << 63};
    CHECK_FALSE(ir::read_ints(ir::make_tensor("u", DataType::kUInt64, {2}, huge, sizeof huge)));
    const int8_t small[2] = {-128, 127};
    CHECK(ir::read_ints(ir::make_tensor("s", DataType::kInt8, {2}, small, 2)).value() == std::vector<int64_t>{-128, 127});
    const uint8_t flags[2] = {0, 1};
    CHECK(ir::read_ints(ir::make_tensor("b", DataType::kBool, {2}, flags, 2)).value() == std::vector<int64_t>{0, 1});

    const uint16_t halves[2] = {0x3c00, 0xfbff};  // 1, -65504
    CHECK(ir::read_floats(ir::make_tensor("h", DataType::kFloat16, {2}, halves, 4)).value() == std::vector<double>{1, -65504});
    CHECK_FALSE(ir::read_ints(ir::make_tensor("h", DataType::kFloat16, {2}, halves, 4)));

    // Typed-field storage (int64_data) reads like raw data.
    ir::Tensor typed;
    typed.name = "typed";
    typed.data_type = static_cast<int32_t>(DataType::kInt64);
    typed.dims = {2};
    typed.int64_data = {kMax, kMin};
    CHECK(ir::read_ints(typed).value() == std::vector<int64_t>{kMax, kMin});

    ir::TypedValues v;
    v.floats = std::vector<double>{0.0, -0.0};
    CHECK(v.all_equal(0));
    v.floats = std::vector<double>{9007199254740992.0};  // 2^53
    CHECK_FALSE(v.all_equal((int64_t{1} << 53) + 1));
  }

  TEST_CASE("make_float_tensor writes the bytes the runner stores: float16 and bfloat16 through float") {
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> values = {
        0.0, -0.0, 1.0, -2.5, 1.0 / 3, inf, -inf, nan, -nan,
        std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::max(),  // float: 0, inf
        1e-40, std::ldexp(1, -149), std::ldexp(1, -150), std::ldexp(3, -150),  // float denormals and ties
        std::ldexp(1, -24), std::ldexp(1, -25), std::ldexp(3, -25), 6e-8,        // float16 denormals and ties
        65504, 65519.99, 65520, -65520, 1e300, 3.4e38, 3.39e38,                  // float16, float, bfloat16 overflow
        1 + std::ldexp(1, -11), 1 + std::ldexp(3, -11),                          // float16 ties to even
        1 + std::ldexp(1, -8), 1 + std::ldexp(3, -8),                            // bfloat16 ties to even
        1 + std::ldexp(1, -11) + std::ldexp(1, -30),  // a float16 tie once rounded to float
        1 + std::ldexp(1, -8) + std::ldexp(1, -30),   // a bfloat16 tie once rounded to float
    };
    std::mt19937 rng(42);
    std::uniform_real_distribution<double> mantissa(-1, 1);
    std::uniform_int_distribution<int> exponent(-160, 140);
    for (int i = 0; i < 2000; ++i) values.push_back(std::ldexp(mantissa(rng), exponent(rng)));
    const int64_t n = static_cast<int64_t>(values.size());

    for (DataType type : {DataType::kFloat, DataType::kDouble, DataType::kFloat16, DataType::kBFloat16}) {
      INFO(ir::data_type_name(type));
      Tensor stored(type, {n});
      for (int64_t i = 0; i < n; ++i) runner::set_element_from_double(stored, i, values[static_cast<size_t>(i)]);
      const ir::Tensor want = runner::to_ir(stored, "c");
      const ir::Tensor got = ir::make_float_tensor("c", type, {n}, values);
      CHECK(got.name == want.name);
      CHECK(got.dims == want.dims);
      CHECK(got.data_type == want.data_type);
      REQUIRE(got.raw_data);
      CHECK(got.raw_data->view() == want.raw_data->view());
    }
    // Through float, as the runner: a value just above a float16 tie rounds to the tie first, then
    // to even (1.0), where rounding once would go up.
    const std::vector<double> above_tie = {1 + std::ldexp(1, -11) + std::ldexp(1, -30)};
    const ir::Tensor half = ir::make_float_tensor("h", DataType::kFloat16, {1}, above_tie);
    CHECK(ir::read_floats(half).value() == std::vector<double>{1.0});
    CHECK(ir::double_to_half(above_tie[0]) != ir::float_to_half(1.0f));

    CHECK_THROWS_AS(ir::make_float_tensor("c", DataType::kFloat, {2}, {1.0}), Error);
    CHECK_THROWS_AS(ir::make_float_tensor("c", DataType::kInt64, {1}, {1.0}), Error);
  }

  TEST_CASE("Slice of a shape to INT64_MAX keeps its dims (the PyTorch x.shape[1:] export)") {
    const auto out = check_paths(shape_slice({1}, {kMax}), 9);
    CHECK(ints_of(out[0]) == std::vector<int64_t>{3, 4});
  }

  TEST_CASE("the CLI: optimize and convert --opset 9 of x.shape[1:] keep [3, 4]") {
    const auto dir = std::filesystem::temp_directory_path() / ("onnxtool_typed_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string model = (dir / "shape_slice.onnx").string();
    ir::save_model(shape_slice({1}, {kMax})(), model);
    for (const std::string& args : {"optimize " + model + " -o " + (dir / "opt.onnx").string(),
                                   "convert " + model + " -o " + (dir / "op9.onnx").string() + " --opset 9"}) {
      INFO(args);
      CHECK(std::system((testing::onnxtool_binary() + " " + args + " >/dev/null").c_str()) == 0);
    }
    for (const char* name : {"opt.onnx", "op9.onnx"}) {
      INFO(name);
      auto loaded = ir::load_model((dir / name).string());
      const auto out = run(loaded.model);
      REQUIRE(out.size() == 1);
      CHECK(ints_of(out[0]) == std::vector<int64_t>{3, 4});
    }
    std::filesystem::remove_all(dir);
  }

  TEST_CASE("Slice from INT64_MIN, from clamped and past-the-end starts") {
    CHECK(ints_of(check_paths(shape_slice({kMin}, {-1}), 9)[0]) == std::vector<int64_t>{2, 3});
    CHECK(ints_of(check_paths(shape_slice({-100}, {2}), 9)[0]) == std::vector<int64_t>{2, 3});
    CHECK(ints_of(check_paths(shape_slice({5}, {kMax}), 9)[0]).empty());
    CHECK(ints_of(check_paths(shape_slice({1}, {kMin}), 9)[0]).empty());
  }

  TEST_CASE("Slice with negative steps from INT64_MAX to INT64_MIN reverses") {
    // Steps other than 1 exist from opset 10 on: no conversion below.
    CHECK(ints_of(check_paths(shape_slice({kMax}, {kMin}, {-1}), 0)[0]) == std::vector<int64_t>{4, 3, 2});
    CHECK(ints_of(check_paths(shape_slice({-1}, {kMin}, {-2}), 0)[0]) == std::vector<int64_t>{4, 2});
    CHECK(ints_of(check_paths(shape_slice({0}, {kMax}, {kMax}), 0)[0]) == std::vector<int64_t>{2});
    ir::Model m = shape_slice({kMax}, {kMin}, {-1})();
    CHECK_THROWS_AS(convert::convert_opset(m, 9), Error);
  }

  TEST_CASE("a reversing Slice keeps its input's shape and is still no no-op") {
    auto make = [] {
      ModelBuilder b(13);
      ir::Value* x = b.input("x", DataType::kFloat, {2, 3, 4});
      b.output(b.op("Slice", {x, b.ints("starts", {-1}), b.ints("ends", {kMin}), b.ints("axes", {2}), b.ints("steps", {-1})}, "y"));
      return std::move(b.m);
    };
    const auto out = check_paths(make, 0);
    CHECK(out[0].data<float>()[0] == -4.5f);  // x[0, 0, 3]
  }

  TEST_CASE("Gather of a shape with a negative index, Range, and int64 arithmetic near the limits") {
    auto make = [] {
      ModelBuilder b(13);
      ir::Value* x = b.input("x", DataType::kFloat, {"N", 3, 4});
      ir::Value* shape = b.op("Shape", {x}, "shape");
      ir::Value* last = b.op("Gather", {shape, b.ints("minus_one", {-1}, true)}, "last");
      b.output(b.op("Range", {b.ints("zero", {0}, true), last, b.ints("one", {1}, true)}, "range"));
      b.output(b.op("Range", {b.ints("hi", {kMax - 3}, true), b.ints("max", {kMax}, true), b.ints("step", {1}, true)}, "top"));
      ir::Value* sum = b.op("Add", {b.ints("big", {kMax - 10}), b.ints("one_v", {1})}, "big_plus_one");
      b.output(b.op("Add", {shape, sum}, "shifted"));
      b.output(b.op("Mul", {b.op("Add", {shape, b.ints("zeros", {0})}, "plus_zero"), b.ints("ones", {1})}, "times_one"));
      return std::move(b.m);
    };
    const auto out = check_paths(make, 11);  // Range exists from opset 11
    CHECK(ints_of(out[0]) == std::vector<int64_t>{0, 1, 2, 3});
    CHECK(ints_of(out[1]) == std::vector<int64_t>{kMax - 3, kMax - 2, kMax - 1});
    CHECK(ints_of(out[2]) == std::vector<int64_t>{kMax - 7, kMax - 6, kMax - 5});
    CHECK(ints_of(out[3]) == std::vector<int64_t>{2, 3, 4});
  }

  TEST_CASE("Reshape with 0 and -1, and a target built from the shape and a constant") {
    auto make = [] {
      ModelBuilder b(13);
      ir::Value* x = b.input("x", DataType::kFloat, {"N", 3, 4});
      b.output(b.op("Reshape", {x, b.ints("zero_minus_one", {0, -1})}, "flat"));
      ir::Value* batch = b.op("Gather", {b.op("Shape", {x}, "shape"), b.ints("at0", {0})}, "batch");
      ir::Value* target = b.op("Concat", {batch, b.ints("rest", {-1, 2})}, "target", {attr_int("axis", 0)});
      b.output(b.op("Reshape", {x, target}, "halves"));
      return std::move(b.m);
    };
    const auto out = check_paths(make, 9);
    CHECK(out[0].shape() == std::vector<int64_t>{2, 12});
    CHECK(out[1].shape() == std::vector<int64_t>{2, 6, 2});
  }

  TEST_CASE("Unsqueeze and Squeeze axes as inputs, negative, across opset 13") {
    auto make = [] {
      ModelBuilder b(13);
      ir::Value* x = b.input("x", DataType::kFloat, {"N", 3, 4});
      ir::Value* u = b.op("Unsqueeze", {x, b.ints("axes_neg", {-1, 1})}, "u");
      b.output(u);
      b.output(b.op("Squeeze", {u, b.ints("axes_back", {-1})}, "s"));
      return std::move(b.m);
    };
    const auto out = check_paths(make, 11);
    CHECK(out[0].shape() == std::vector<int64_t>{2, 1, 3, 4, 1});
    CHECK(out[1].shape() == std::vector<int64_t>{2, 1, 3, 4});
  }

  TEST_CASE("a Constant node's value_ints of INT64_MAX survives conversion to Slice-1 attributes") {
    auto make = [] {
      ModelBuilder b(13);
      ir::Value* x = b.input("x", DataType::kFloat, {"N", 3, 4});
      ir::Node* ends = b.node("Constant", {}, "ends", {attr_ints("value_ints", {kMax})});
      ir::Node* starts = b.node("Constant", {}, "starts", {attr_ints("value_ints", {1})});
      b.output(b.op("Slice", {b.op("Shape", {x}, "shape"), starts->output(0), ends->output(0)}, "y"));
      return std::move(b.m);
    };
    CHECK(ints_of(check_paths(make, 9)[0]) == std::vector<int64_t>{3, 4});
  }
}

}  // namespace onnxtool::typed_constants_test
