// Tests of the elementwise and reduction kernels (runner/cpu/elementwise.cpp, reduce.cpp): each
// kernel runs as a one-node model and is compared with a plain double-precision loop written
// here, at odd sizes (1, 7, 13, 127) with same-shape, scalar, row, column and general broadcasts
// and reductions over last, middle, first and scattered axes. Every run is repeated with several
// threads and must give the same bytes. Invalid inputs must fail with an Error.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>
#include <functional>
#include <map>
#include <random>
#include <tuple>

#include "ir/error.h"
#include "ir/graph.h"
#include "runner/cpu/elementwise_util.h"
#include "runner/session.h"
#include "tests/empty_model.h"
#include "tests/kernel_test_util.h"
#include "tests/random_feed.h"

namespace onnxtool::elementwise_kernels_test {
namespace {

using ir::DataType;
using runner::Tensor;
using runner::Value;

/// Tolerance policy "close": float32 results of one rounding (or a double accumulation).
constexpr double kCloseRel = 2e-6;
constexpr double kCloseAbs = 1e-6;
/// Tolerance policy "approximate": float32 results of several roundings (softmax, exp).
constexpr double kApproxRel = 1e-5;
constexpr double kApproxAbs = 1e-6;

// ---------------------------------------------------------------- one-node models

/// Sets attributes on the node under test.
using AttrSetter = std::function<void(ir::Node&)>;

struct OpRun {
  OpRun(std::string op_type, int64_t version, std::vector<Tensor> in, AttrSetter set = nullptr, size_t n_outputs = 1)
      : op(std::move(op_type)), opset(version), inputs(std::move(in)), attrs(std::move(set)), outputs(n_outputs) {}
  std::string op;
  int64_t opset;
  std::vector<Tensor> inputs;  // an invalid Tensor leaves the input out
  AttrSetter attrs;
  size_t outputs;
};

std::vector<Value> execute(const OpRun& r, int threads) {
  return testing::run_one_node(r.op, r.opset, r.inputs, r.outputs, "node_under_test", r.attrs, threads);
}

/// Runs with 1 and with 3 threads; the outputs must be byte-identical.
std::vector<Tensor> run_all(const OpRun& r) {
  const auto one = execute(r, 1);
  const auto three = execute(r, 3);
  REQUIRE(one.size() == three.size());
  std::vector<Tensor> out;
  for (size_t i = 0; i < one.size(); ++i) {
    REQUIRE(one[i].is_tensor());
    const Tensor& a = one[i].tensor;
    const Tensor& b = three[i].tensor;
    REQUIRE(a.shape() == b.shape());
    if (a.dtype() == DataType::kString) CHECK(a.strings() == b.strings());
    else CHECK((a.bytes() == b.bytes() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0));
    out.push_back(a);
  }
  return out;
}

Tensor run(const OpRun& r) { return run_all(r)[0]; }

AttrSetter int_attr(const std::string& name, int64_t v) {
  return [name, v](ir::Node& n) { n.set_attr(ir::Attribute::make_int(name, v)); };
}

// ---------------------------------------------------------------- tensors

/// This file's stream of random data, seeded apart from the kernel tests' testing::rng().
testing::Rng& rng() {
  static testing::Rng gen(20240611);
  return gen;
}

Tensor random_floats(std::vector<int64_t> shape, float lo = -3.0f, float hi = 3.0f) {
  return testing::uniform_tensor(rng(), std::move(shape), lo, hi);
}

template <class T>
Tensor make(DataType dt, std::vector<int64_t> shape, const std::vector<T>& values) {
  Tensor t(dt, std::move(shape));
  REQUIRE(static_cast<int64_t>(values.size()) == t.size());
  for (size_t i = 0; i < values.size(); ++i) t.mutable_data<T>()[i] = values[i];
  return t;
}

Tensor ints64(std::vector<int64_t> shape, const std::vector<int64_t>& v) { return make(DataType::kInt64, std::move(shape), v); }
Tensor floats(std::vector<int64_t> shape, const std::vector<float>& v) { return make(DataType::kFloat, std::move(shape), v); }

template <class T>
std::vector<T> values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.size());
}

void check_close(const Tensor& got, const std::vector<double>& want, double rel, double abs) {
  REQUIRE(got.dtype() == DataType::kFloat);
  REQUIRE(got.size() == static_cast<int64_t>(want.size()));
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = got.data<float>()[i];
    const bool ok = (std::isnan(g) && std::isnan(want[i])) || std::fabs(g - want[i]) <= abs + rel * std::fabs(want[i]);
    if (!ok && bad++ < 3) CHECK_MESSAGE(ok, "element " << i << ": " << g << " vs " << want[i]);
  }
  CHECK(bad == 0);
}

// ---------------------------------------------------------------- reference loops

/// numpy broadcasting done the slow way: the input element of output index `o`.
int64_t source_index(const std::vector<int64_t>& out_shape, const std::vector<int64_t>& in_shape, int64_t o) {
  int64_t idx = 0, stride = 1;
  for (size_t k = 0; k < in_shape.size(); ++k) {
    const size_t d_in = in_shape.size() - 1 - k, d_out = out_shape.size() - 1 - k;
    int64_t rest = o;
    for (size_t j = out_shape.size() - 1; j > d_out; --j) rest /= out_shape[j];
    const int64_t coord = rest % out_shape[d_out];
    if (in_shape[d_in] != 1) idx += coord * stride;
    stride *= in_shape[d_in];
  }
  return idx;
}

std::vector<int64_t> reference_broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> out(std::max(a.size(), b.size()), 1);
  for (size_t k = 0; k < out.size(); ++k) {
    const int64_t da = k < a.size() ? a[a.size() - 1 - k] : 1;
    const int64_t db = k < b.size() ? b[b.size() - 1 - k] : 1;
    out[out.size() - 1 - k] = da == 1 ? db : da;
  }
  return out;
}

int64_t count(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// ---------------------------------------------------------------- broadcasting binary ops

TEST_SUITE("elementwise_kernels") {
  TEST_CASE("float16 conversions in bulk are bit-identical to ir's, NaN payloads included") {
    using runner::cpu::floats_to_halves;
    using runner::cpu::halves_to_floats;
    // Every float16, in blocks of eight (NaN blocks take the portable path) and one at a time.
    std::vector<uint16_t> halves(65536);
    for (size_t i = 0; i < halves.size(); ++i) halves[i] = static_cast<uint16_t>(i);
    std::vector<float> bulk(halves.size()), single(halves.size());
    halves_to_floats(halves.data(), bulk.data(), static_cast<int64_t>(halves.size()));
    for (size_t i = 0; i < halves.size(); ++i) halves_to_floats(&halves[i], &single[i], 1);
    size_t wrong = 0;
    for (size_t i = 0; i < halves.size(); ++i) {
      const float want = ir::half_to_float(halves[i]);
      wrong += std::memcmp(&want, &bulk[i], 4) != 0 || std::memcmp(&want, &single[i], 4) != 0;
    }
    CHECK(wrong == 0);
    // A sweep of float32 bit patterns (a prime stride over all 2^32) and the edges: ties at every
    // exponent, the largest float16 and the rounding to infinity, subnormals, NaNs.
    std::vector<float> floats;
    for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4099) {
      const auto b = static_cast<uint32_t>(bits);
      float f;
      std::memcpy(&f, &b, 4);
      floats.push_back(f);
    }
    for (int e = -30; e <= 16; ++e)
      for (float m : {1.0f, 1.00048828125f, 1.0009765625f, 1.00146484375f, 1.99951171875f})
        for (float s : {1.0f, -1.0f}) floats.push_back(s * std::ldexp(m, e));
    for (float f : {65504.0f, 65519.0f, 65519.99f, 65520.0f, 1e9f, 5.96e-8f, 2.98e-8f, 2.9802322e-8f, 6.1e-5f, 0.0f, -0.0f,
                    std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min()})
      floats.push_back(f);
    std::vector<uint16_t> out(floats.size()), one(floats.size());
    floats_to_halves(floats.data(), out.data(), static_cast<int64_t>(floats.size()));
    for (size_t i = 0; i < floats.size(); ++i) floats_to_halves(&floats[i], &one[i], 1);
    wrong = 0;
    for (size_t i = 0; i < floats.size(); ++i) {
      const uint16_t want = ir::float_to_half(floats[i]);
      wrong += out[i] != want || one[i] != want;
    }
    CHECK(wrong == 0);
    CHECK(floats.size() > 1000000);
  }

  TEST_CASE("float32 Add/Sub/Mul/Div fast paths match the reference at odd sizes and broadcasts") {
    const std::map<std::string, std::function<double(double, double)>> ops = {
        {"Add", [](double a, double b) { return a + b; }},
        {"Sub", [](double a, double b) { return a - b; }},
        {"Mul", [](double a, double b) { return a * b; }},
        {"Div", [](double a, double b) { return a / b; }},
    };
    std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes;
    for (int64_t n : {1, 7, 13, 127}) {
      shapes.push_back({{n}, {n}});               // same shape
      shapes.push_back({{3, n}, {}});             // scalar right
      shapes.push_back({{}, {n, 2}});             // scalar left
      shapes.push_back({{7, n}, {n}});            // row
      shapes.push_back({{n, 13}, {n, 1}});        // column
      shapes.push_back({{n, 1}, {1, 7}});         // outer product
      shapes.push_back({{2, n, 1, 3}, {n, 5, 1}});  // general
      shapes.push_back({{1, n}, {7, 1, 1}});
    }
    // Big enough for parallel chunks that start mid-row.
    shapes.push_back({{301, 127}, {127}});
    shapes.push_back({{301, 127}, {301, 1}});
    shapes.push_back({{301, 127}, {301, 127}});
    shapes.push_back({{}, {301, 127}});
    for (const auto& [op, fn] : ops) {
      for (const auto& [sa, sb] : shapes) {
        CAPTURE(op);
        CAPTURE(runner::shape_string(sa));
        CAPTURE(runner::shape_string(sb));
        const Tensor a = random_floats(sa);
        const Tensor b = op == "Div" ? random_floats(sb, 0.5f, 3.0f) : random_floats(sb);
        const Tensor y = run({op, 14, {a, b}});
        const auto out_shape = reference_broadcast(sa, sb);
        REQUIRE(y.shape() == out_shape);
        std::vector<double> want(static_cast<size_t>(count(out_shape)));
        for (int64_t o = 0; o < count(out_shape); ++o)
          want[static_cast<size_t>(o)] = fn(a.data<float>()[source_index(out_shape, sa, o)],
                                            b.data<float>()[source_index(out_shape, sb, o)]);
        check_close(y, want, kCloseRel, kCloseAbs);
      }
    }
  }

  TEST_CASE("binary ops on float16, double and integer types") {
    Tensor h(DataType::kFloat16, {3});
    for (int i = 0; i < 3; ++i) h.mutable_data<uint16_t>()[i] = runner::float_to_half(0.5f * static_cast<float>(i + 1));
    const Tensor hy = run({"Mul", 14, {h, h}});
    REQUIRE(hy.dtype() == DataType::kFloat16);
    CHECK(runner::half_to_float(hy.data<uint16_t>()[2]) == 2.25f);

    const Tensor d = make<double>(DataType::kDouble, {2}, {1.5, -2.25});
    CHECK(values<double>(run({"Sub", 14, {d, d}})) == std::vector<double>{0, 0});

    // int32 wraps like two's complement; division truncates toward zero; INT_MIN / -1 wraps.
    const Tensor i32 = make<int32_t>(DataType::kInt32, {4}, {2147483647, -7, 7, -2147483647 - 1});
    const Tensor one = make<int32_t>(DataType::kInt32, {}, {1});
    CHECK(values<int32_t>(run({"Add", 14, {i32, one}}))[0] == -2147483647 - 1);
    const Tensor div = make<int32_t>(DataType::kInt32, {4}, {2, 2, -2, -1});
    CHECK(values<int32_t>(run({"Div", 14, {i32, div}})) == std::vector<int32_t>{1073741823, -3, -3, -2147483647 - 1});
    const Tensor u8 = make<uint8_t>(DataType::kUInt8, {2}, {200, 100});
    CHECK(values<uint8_t>(run({"Add", 14, {u8, u8}})) == std::vector<uint8_t>{144, 200});
  }

  TEST_CASE("Mod, Pow, BitShift, logic and comparison semantics") {
    const Tensor a = ints64({4}, {-7, 7, -7, 7});
    const Tensor b = ints64({4}, {3, -3, -3, 3});
    CHECK(values<int64_t>(run({"Mod", 13, {a, b}})) == std::vector<int64_t>{2, -2, -1, 1});
    CHECK(values<int64_t>(run({"Mod", 13, {a, b}, int_attr("fmod", 1)})) == std::vector<int64_t>{-1, 1, -1, 1});
    const Tensor fa = floats({2}, {-7.5f, 7.5f});
    const Tensor fb = floats({2}, {2.0f, -2.0f});
    CHECK(values<float>(run({"Mod", 13, {fa, fb}, int_attr("fmod", 1)})) == std::vector<float>{-1.5f, 1.5f});
    CHECK(values<float>(run({"Mod", 13, {fa, fb}})) == std::vector<float>{0.5f, -0.5f});

    // Pow with mixed types: float base with int exponent, int base with int and float exponents.
    CHECK(values<float>(run({"Pow", 15, {floats({3}, {2, 3, 4}), ints64({3}, {3, 2, -1})}})) ==
          std::vector<float>{8, 9, 0.25f});
    CHECK(values<int64_t>(run({"Pow", 15, {ints64({3}, {2, -3, 5}), ints64({3}, {10, 3, 0})}})) ==
          std::vector<int64_t>{1024, -27, 1});
    const Tensor base32 = make<int32_t>(DataType::kInt32, {2}, {4, 9});
    CHECK(values<int32_t>(run({"Pow", 15, {base32, floats({2}, {0.5f, 0.5f})}})) == std::vector<int32_t>{2, 3});

    const Tensor x = make<uint8_t>(DataType::kUInt8, {3}, {1, 255, 16});
    const Tensor s = make<uint8_t>(DataType::kUInt8, {3}, {3, 1, 9});
    CHECK(values<uint8_t>(run({"BitShift", 11, {x, s}, [](ir::Node& n) {
                                 n.set_attr(ir::Attribute::make_string("direction", "LEFT"));
                               }})) == std::vector<uint8_t>{8, 254, 0});

    const Tensor p = make<uint8_t>(DataType::kBool, {2, 2}, {0, 0, 1, 1});
    const Tensor q = make<uint8_t>(DataType::kBool, {2}, {0, 1});
    CHECK(values<uint8_t>(run({"Xor", 7, {p, q}})) == std::vector<uint8_t>{0, 1, 1, 0});
    CHECK(values<uint8_t>(run({"And", 7, {p, q}})) == std::vector<uint8_t>{0, 0, 0, 1});
    const Tensor nan = floats({3}, {NAN, 1.0f, 2.0f});
    const Tensor two = floats({}, {2.0f});
    CHECK(values<uint8_t>(run({"GreaterOrEqual", 16, {nan, two}})) == std::vector<uint8_t>{0, 0, 1});
    CHECK(values<uint8_t>(run({"Equal", 13, {nan, nan}})) == std::vector<uint8_t>{0, 1, 1});

    Tensor s1(DataType::kString, {2});
    s1.mutable_strings() = {"a", "b"};
    Tensor s2(DataType::kString, {});
    s2.mutable_strings() = {"b"};
    CHECK(values<uint8_t>(run({"Equal", 19, {s1, s2}})) == std::vector<uint8_t>{0, 1});
  }

  TEST_CASE("opset 6 broadcast and axis attributes") {
    const Tensor a = random_floats({2, 3, 4});
    const Tensor b = random_floats({3});
    const Tensor y = run({"Add", 6, {a, b}, [](ir::Node& n) {
                           n.set_attr(ir::Attribute::make_int("broadcast", 1));
                           n.set_attr(ir::Attribute::make_int("axis", 1));
                         }});
    std::vector<double> want(24);
    for (int64_t i = 0; i < 24; ++i) want[static_cast<size_t>(i)] = double(a.data<float>()[i]) + b.data<float>()[(i / 4) % 3];
    check_close(y, want, kCloseRel, kCloseAbs);
    // Without broadcast=1 the shapes must agree.
    CHECK_THROWS_AS(run({"Add", 6, {a, b}}), Error);
  }

  TEST_CASE("variadic Sum/Mean/Max/Min broadcast and fold in input order") {
    const Tensor a = random_floats({13, 1});
    const Tensor b = random_floats({7});
    const Tensor c = random_floats({1, 7});
    for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
      CAPTURE(op);
      const Tensor y = run({op, 13, {a, b, c}});
      REQUIRE(y.shape() == std::vector<int64_t>{13, 7});
      std::vector<double> want(91);
      for (int64_t i = 0; i < 13; ++i)
        for (int64_t j = 0; j < 7; ++j) {
          const double x0 = a.data<float>()[i], x1 = b.data<float>()[j], x2 = c.data<float>()[j];
          double r;
          if (std::string(op) == "Sum") r = x0 + x1 + x2;
          else if (std::string(op) == "Mean") r = (x0 + x1 + x2) / 3;
          else if (std::string(op) == "Max") r = std::max({x0, x1, x2});
          else r = std::min({x0, x1, x2});
          want[static_cast<size_t>(i * 7 + j)] = r;
        }
      check_close(y, want, kApproxRel, kApproxAbs);
    }
    const Tensor i8 = make<int8_t>(DataType::kInt8, {3}, {-5, 3, 0});
    const Tensor j8 = make<int8_t>(DataType::kInt8, {3}, {2, -1, 0});
    CHECK(values<int8_t>(run({"Max", 13, {i8, j8}})) == std::vector<int8_t>{2, 3, 0});
  }

  // ---------------------------------------------------------------- unary and activations

  TEST_CASE("unary math and activations match the reference at odd sizes") {
    const std::map<std::string, std::function<double(double)>> ops = {
        {"Exp", [](double v) { return std::exp(v); }},
        {"Tanh", [](double v) { return std::tanh(v); }},
        {"Sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }},
        {"Softplus", [](double v) { return std::log(std::exp(v) + 1); }},
        {"Softsign", [](double v) { return v / (1 + std::fabs(v)); }},
        {"Relu", [](double v) { return v > 0 ? v : 0; }},
        {"HardSwish", [](double v) { return v * std::max(0.0, std::min(1.0, v / 6 + 0.5)); }},
        {"HardSigmoid", [](double v) { return std::max(0.0, std::min(1.0, 0.2 * v + 0.5)); }},
        {"Abs", [](double v) { return std::fabs(v); }},
        {"Neg", [](double v) { return -v; }},
        {"Floor", [](double v) { return std::floor(v); }},
        {"Erf", [](double v) { return std::erf(v); }},
        {"Mish", [](double v) { return v * std::tanh(std::log1p(std::exp(v))); }},
        {"Gelu", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }},
        {"Atan", [](double v) { return std::atan(v); }},
    };
    for (int64_t n : {1, 7, 13, 127, 40001}) {
      const Tensor x = random_floats({n});
      for (const auto& [op, fn] : ops) {
        CAPTURE(op);
        CAPTURE(n);
        const Tensor y = run({op, 20, {x}});
        std::vector<double> want(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(i)] = fn(x.data<float>()[i]);
        check_close(y, want, kApproxRel, kApproxAbs);
      }
    }
    // Round is half to even; Sign of ints; IsInf with detection flags; Shrink.
    CHECK(values<float>(run({"Round", 11, {floats({5}, {0.5f, 1.5f, 2.5f, -0.5f, -1.6f})}})) ==
          std::vector<float>{0, 2, 2, -0.0f, -2});
    CHECK(values<int32_t>(run({"Sign", 13, {make<int32_t>(DataType::kInt32, {3}, {-4, 0, 9})}})) ==
          std::vector<int32_t>{-1, 0, 1});
    const Tensor inf = floats({3}, {INFINITY, -INFINITY, 1.0f});
    CHECK(values<uint8_t>(run({"IsInf", 10, {inf}, int_attr("detect_negative", 0)})) == std::vector<uint8_t>{1, 0, 0});
    CHECK(values<float>(run({"Shrink", 9, {floats({3}, {-2, 0.3f, 2})}, [](ir::Node& n) {
                              n.set_attr(ir::Attribute::make_float("lambd", 1.0f));
                              n.set_attr(ir::Attribute::make_float("bias", 0.5f));
                            }})) == std::vector<float>{-1.5f, 0, 1.5f});
  }

  TEST_CASE("vectorized float32 exp and sigmoid against double precision") {
    std::vector<float> x;
    for (float v = -110.0f; v < 89.0f; v += 0.0137f) x.push_back(v);
    for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 88.7f, -87.3f}) x.push_back(v);
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<float> e(x.size()), s(x.size());
    runner::cpu::exp_shifted_f32(x.data(), e.data(), n, 0.0f);
    runner::cpu::sigmoid_f32(x.data(), s.data(), n);
    double worst_exp = 0, worst_sig = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double ref = std::exp(double(x[i]));
      if (ref > 1.2e-38 && ref < 3.4e38) worst_exp = std::max(worst_exp, std::fabs(e[i] - ref) / ref);
      else if (ref <= 1.2e-38) CHECK(e[i] < 1.2e-38f);
      const double sig = 1 / (1 + std::exp(-double(x[i])));
      if (sig > 1.2e-38) worst_sig = std::max(worst_sig, std::fabs(s[i] - sig) / sig);
    }
    CHECK(worst_exp < 3e-7);
    CHECK(worst_sig < 5e-7);
    const float special[4] = {NAN, INFINITY, -INFINITY, 100.0f};
    float out[4];
    runner::cpu::exp_shifted_f32(special, out, 4, 0.0f);
    CHECK(std::isnan(out[0]));
    CHECK(out[1] == INFINITY);
    CHECK(out[2] < 1e-44f);
    CHECK(out[3] == INFINITY);
    runner::cpu::sigmoid_f32(special, out, 4);
    CHECK(std::isnan(out[0]));
    CHECK(out[1] == 1.0f);
    CHECK(out[2] == 0.0f);
  }

  TEST_CASE("vectorized float32 tanh within 2 ulp of the correctly rounded value") {
    // Every 613th float from 0 to 10 (the polynomial, the join at 0.625, the exp branch, the
    // saturation), both signs; tiny, subnormal and special values. Every 61st gave 1.26 ulp at most.
    std::vector<float> x;
    for (uint32_t bits = 0; bits <= 0x41200000u; bits += 613) {
      float v;
      std::memcpy(&v, &bits, sizeof v);
      x.push_back(v);
      x.push_back(-v);
    }
    for (float v : {0.625f, std::nextafter(0.625f, 0.0f), 9.1f, 50.0f, 1e-30f, 1e-42f, INFINITY, -INFINITY, NAN}) x.push_back(v);
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<float> got(x.size());
    runner::cpu::tanh_f32(x.data(), got.data(), n);
    double worst = 0;
    size_t wrong_sign = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(x[i])) {
        CHECK(std::isnan(got[i]));
        continue;
      }
      wrong_sign += std::signbit(got[i]) != std::signbit(x[i]);
      const double ref = std::tanh(double(x[i]));
      const float rounded = static_cast<float>(ref);
      const double ulp = std::fabs(double(std::nextafter(rounded, INFINITY)) - double(rounded));
      worst = std::max(worst, std::fabs(double(got[i]) - ref) / (ulp > 0 ? ulp : 1e-45));
    }
    CHECK(wrong_sign == 0);
    CHECK(worst < 2.0);
    // The kernel, any length (the tail of a vector), matches the function.
    const Tensor t = floats({7}, {-3, -0.5f, 0, 0.1f, 0.7f, 2, 30});
    const auto y = values<float>(run({"Tanh", 13, {t}}));
    for (size_t i = 0; i < y.size(); ++i) CHECK(std::fabs(y[i] - std::tanh(values<float>(t)[i])) <= 3e-7f);
  }

  TEST_CASE("float32 Erf and Gelu: the vectorized erf within 2.1 ulp of the correctly rounded value") {
    // Every 97th float from 0 to 4.5 (the polynomials' pieces and their joins), both signs, tiny,
    // subnormal and special values. An exhaustive run over [0, 4.5] gave 2.04 ulp at most.
    std::vector<float> x;
    for (uint32_t u = 0; u <= 0x40900000u; u += 97) {
      float v;
      std::memcpy(&v, &u, sizeof v);
      x.push_back(v);
      x.push_back(-v);
    }
    for (float v : {1.0f, 2.5f, 4.0f, 3.9999998f, 1e-40f, -1e-40f, 1e-30f, 5.0f, -7.0f, 1e30f}) x.push_back(v);
    const int64_t n = static_cast<int64_t>(x.size());
    const Tensor xt = floats({n}, x);
    const Tensor y = run({"Erf", 13, {xt}});
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double ref = std::erf(double(x[size_t(i)]));
      const float rounded = static_cast<float>(ref);
      const double ulp = std::fabs(double(std::nextafter(rounded, 0.0f)) - rounded);
      const double err = std::fabs(y.data<float>()[i] - ref) / std::max(ulp, 1e-45);
      worst = std::max(worst, err);
    }
    CHECK(worst <= 2.1);
    const float special[5] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f};
    const auto out = values<float>(run({"Erf", 13, {floats({5}, std::vector<float>(special, special + 5))}}));
    CHECK(std::isnan(out[0]));
    CHECK(out[1] == 1.0f);
    CHECK(out[2] == -1.0f);
    CHECK(std::signbit(out[4]));
    // Gelu (exact form) goes through the same erf: within a few ulp of the double formula, plus
    // the rounding of 1 + erf in float where it cancels (negative inputs), as any float Gelu.
    const Tensor g = run({"Gelu", 20, {xt}});
    for (int64_t i = 0; i < n; ++i) {
      const double v = x[size_t(i)], ref = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
      CHECK(std::fabs(g.data<float>()[i] - ref) <= 4e-7 * std::fabs(ref) + 1.2e-7 * std::fabs(v) + 1e-44);
    }
  }

  TEST_CASE("float32 sigmoid at the widest vector width has the bits of the four-lane formula") {
    // The four-lane computation sigmoid_f32 had before it went to wider vectors. Both are compiled
    // here with this file's flags; the runner's -march=native build may fuse multiply-adds (FMA),
    // the same way at any width, so the kernel is compared with itself across thread counts only.
    const auto four_lanes = [](const float* x, float* y, int64_t n) {
      runner::cpu::map_f32x4(x, y, n, [](runner::cpu::f32x4 v) {
        const runner::cpu::f32x4 e = runner::cpu::exp_f32x4(v < 0 ? v : -v);
        const runner::cpu::f32x4 s = 1.0f / (1.0f + e);
        const runner::cpu::f32x4 neg = v < -104.0f ? runner::cpu::f32x4{} : e * s;
        return v >= 0 ? s : neg;
      });
    };
    std::vector<float> x;
    for (float v = -120.0f; v < 100.0f; v += 0.0371f) x.push_back(v);
    for (float v : {0.0f, -0.0f, 1e-40f, -1e-40f, 88.7f, -103.9f, -104.0f, -104.1f, INFINITY, -INFINITY, NAN, -NAN})
      x.push_back(v);
    std::shuffle(x.begin(), x.end(), rng());
    // Every tail length of the vector loop, and a tensor split into parallel chunks.
    for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{7}, int64_t{15}, int64_t{16}, int64_t{17}, int64_t{31},
                      static_cast<int64_t>(x.size())}) {
      CAPTURE(n);
      std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
      four_lanes(x.data(), want.data(), n);
      runner::cpu::sigmoid_f32(x.data(), got.data(), n);
      CHECK(std::memcmp(want.data(), got.data(), static_cast<size_t>(n) * sizeof(float)) == 0);
    }
  }

  TEST_CASE("float32 Relu, LeakyRelu, Clip, HardSigmoid, HardSwish: vectorized loops keep the per-element bits") {
    // Special values: signed zeros, infinities, NaNs with payloads, denormals, the Clip bounds.
    std::vector<float> special = {0.0f, -0.0f, INFINITY, -INFINITY, 1e-40f, -1e-40f, -1.0f, 6.0f, 3.0f, -3.0f, 2.5f, -2.5f};
    for (uint32_t bits : {0x7fc00001u, 0xffc00123u, 0x7fa00000u}) {
      float v;
      std::memcpy(&v, &bits, sizeof(v));
      special.push_back(v);
    }
    using Fn = std::function<float(float)>;
    // HardSigmoid's alpha is a power of two: alpha * v is exact, so the runner's build fusing
    // alpha * v + beta into one FMA (-march=native) gives the same bits as this file's formula.
    const float alpha = 0.2f, lo = -1.0f, hi = 6.0f, ha = 0.25f, hb = 0.4f;
    struct Case {
      const char* op;
      int64_t opset;
      AttrSetter attrs;
      bool bounds;  // Clip-11 min and max inputs
      Fn fn;        // the kernel's formula, element by element
    };
    const std::vector<Case> cases = {
        {"Relu", 14, nullptr, false, [](float v) { return v < 0 ? 0.0f : v; }},
        {"LeakyRelu", 16, [&](ir::Node& n) { n.set_attr(ir::Attribute::make_float("alpha", alpha)); }, false,
         [&](float v) { return v < 0 ? v * alpha : v; }},
        {"Clip", 13, nullptr, true, [&](float v) { v = v < lo ? lo : v; return v > hi ? hi : v; }},
        {"Clip", 6, [&](ir::Node& n) {
           n.set_attr(ir::Attribute::make_float("min", lo));
           n.set_attr(ir::Attribute::make_float("max", hi));
         }, false, [&](float v) { v = v < lo ? lo : v; return v > hi ? hi : v; }},
        {"HardSigmoid", 6, [&](ir::Node& n) {
           n.set_attr(ir::Attribute::make_float("alpha", ha));
           n.set_attr(ir::Attribute::make_float("beta", hb));
         }, false, [&](float v) { return v != v ? v : std::max(0.0f, std::min(1.0f, ha * v + hb)); }},
        {"HardSwish", 14, nullptr, false, [](float v) { return v * std::max(0.0f, std::min(1.0f, v / 6.0f + 0.5f)); }},
    };
    for (int64_t n : {int64_t{1}, int64_t{15}, int64_t{17}, int64_t{70001}}) {
      Tensor x = random_floats({n}, -8.0f, 8.0f);
      for (int64_t i = 0; i < n; i += 7) x.mutable_data<float>()[i] = special[static_cast<size_t>(i / 7) % special.size()];
      for (const Case& c : cases) {
        CAPTURE(c.op);
        CAPTURE(c.opset);
        CAPTURE(n);
        std::vector<Tensor> in{x};
        if (c.bounds) {
          in.push_back(floats({}, {lo}));
          in.push_back(floats({}, {hi}));
        }
        const Tensor y = run({c.op, c.opset, in, c.attrs});
        int bad = 0;
        for (int64_t i = 0; i < n; ++i) {
          const float want = c.fn(x.data<float>()[i]), got = y.data<float>()[i];
          if (std::memcmp(&want, &got, sizeof(float)) != 0 && bad++ < 3)
            FAIL_CHECK("element " << i << " of " << x.data<float>()[i] << ": " << got << " vs " << want);
        }
        CHECK(bad == 0);
      }
    }
  }

  TEST_CASE("float16 activations in float32 blocks keep the per-element bits") {
    // Random halves with signed zeros, infinities, subnormals and NaNs of several payloads.
    const auto halves = [](std::vector<int64_t> shape) {
      Tensor t(DataType::kFloat16, std::move(shape));
      const uint16_t special[] = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x0001, 0x83ff, 0x7e01, 0xfd55, 0x7bff, 0x3c00, 0xbc00};
      std::uniform_real_distribution<float> d(-20.0f, 20.0f);
      for (int64_t i = 0; i < t.size(); ++i)
        t.mutable_data<uint16_t>()[i] = i % 5 == 0 ? special[static_cast<size_t>(i / 5) % 11] : ir::float_to_half(d(rng()));
      return t;
    };
    const auto same_bits = [](const Tensor& y, const std::vector<uint16_t>& want) {
      REQUIRE(y.dtype() == DataType::kFloat16);
      REQUIRE(y.size() == static_cast<int64_t>(want.size()));
      int bad = 0;
      for (size_t i = 0; i < want.size(); ++i)
        if (y.data<uint16_t>()[i] != want[i] && bad++ < 3) FAIL_CHECK("element " << i << ": " << y.data<uint16_t>()[i] << " vs " << want[i]);
      CHECK(bad == 0);
    };
    const float alpha = 0.2f;
    const std::vector<std::tuple<const char*, int64_t, AttrSetter, std::function<float(float)>>> unary = {
        {"Relu", 14, nullptr, [](float v) { return v < 0 ? 0.0f : v; }},
        {"LeakyRelu", 16, [&](ir::Node& n) { n.set_attr(ir::Attribute::make_float("alpha", alpha)); },
         [&](float v) { return v < 0 ? v * alpha : v; }},
        {"HardSwish", 14, nullptr, [](float v) { return v * std::max(0.0f, std::min(1.0f, v / 6.0f + 0.5f)); }},
        {"Neg", 13, nullptr, [](float v) { return -v; }},
    };
    for (int64_t n : {int64_t{1}, int64_t{511}, int64_t{513}, int64_t{70001}})
      for (const auto& u : unary) {
        // (No structured bindings: clang 14 cannot capture them in CAPTURE's lambda.)
        const char* op = std::get<0>(u);
        const int64_t opset = std::get<1>(u);
        const AttrSetter& attrs = std::get<2>(u);
        const auto& fn = std::get<3>(u);
        CAPTURE(std::string(op));
        CAPTURE(n);
        const Tensor x = halves({n});
        const Tensor y = run({op, opset, {x}, attrs});
        std::vector<uint16_t> want(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(i)] = ir::float_to_half(fn(ir::half_to_float(x.data<uint16_t>()[i])));
        same_bits(y, want);
      }
    // Clip, and Sub and Div with a scalar on either side or two operands of one shape (blocks
    // of widened halves), and with a broadcast operand (whole tensors widened).
    const auto half_scalar = [](float v) {
      Tensor t(DataType::kFloat16, {});
      t.mutable_data<uint16_t>()[0] = ir::float_to_half(v);
      return t;
    };
    const auto h = [](const Tensor& t, int64_t i) { return ir::half_to_float(t.data<uint16_t>()[i]); };
    for (int64_t n : {int64_t{1}, int64_t{513}, int64_t{70001}}) {
      CAPTURE(n);
      const Tensor x = halves({n}), other = halves({n});
      const Tensor lo = half_scalar(-1.5f), hi = half_scalar(3.0f), c = half_scalar(0.7f);
      std::vector<uint16_t> want(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(i)] = ir::float_to_half(runner::cpu::clip_value(h(x, i), -1.5f, 3.0f));
      same_bits(run({"Clip", 13, {x, lo, hi}}), want);
      for (const char* op : {"Sub", "Div"}) {
        CAPTURE(std::string(op));
        const bool sub = std::string(op) == "Sub";
        const auto f = [sub](float a, float b) { return sub ? a - b : a / b; };
        for (int form = 0; form < 3; ++form) {
          CAPTURE(form);
          const Tensor y = form == 0 ? run({op, 14, {x, c}}) : form == 1 ? run({op, 14, {c, x}}) : run({op, 14, {x, other}});
          for (int64_t i = 0; i < n; ++i) {
            const float a = form == 1 ? 0.7f : h(x, i), b = form == 0 ? h(c, 0) : form == 1 ? h(x, i) : h(other, i);
            want[static_cast<size_t>(i)] = ir::float_to_half(f(form == 1 ? h(c, 0) : a, b));
          }
          same_bits(y, want);
        }
      }
    }
  }

  TEST_CASE("PRelu broadcasts the slope; Clip with attributes, inputs and integer types") {
    const Tensor x = random_floats({2, 13, 7});
    const Tensor slope = random_floats({13, 1});
    const Tensor y = run({"PRelu", 16, {x, slope}});
    std::vector<double> want(182);
    for (int64_t i = 0; i < 182; ++i) {
      const double v = x.data<float>()[i];
      want[static_cast<size_t>(i)] = v < 0 ? v * slope.data<float>()[(i / 7) % 13] : v;
    }
    check_close(y, want, kCloseRel, kCloseAbs);
    // Opset 6: a per-channel slope of C values.
    const Tensor y6 = run({"PRelu", 6, {x, random_floats({13}, 0.1f, 0.2f)}});
    CHECK(y6.shape() == x.shape());

    const Tensor c = floats({4}, {-5, 0.5f, 5, NAN});
    CHECK(values<float>(run({"Clip", 6, {c}, [](ir::Node& n) {
                              n.set_attr(ir::Attribute::make_float("min", -1));
                              n.set_attr(ir::Attribute::make_float("max", 1));
                            }}))[2] == 1.0f);
    const auto clipped = values<float>(run({"Clip", 13, {c, floats({}, {-1}), Tensor()}}));
    CHECK(clipped[0] == -1.0f);
    CHECK(clipped[2] == 5.0f);
    CHECK(std::isnan(clipped[3]));
    const Tensor i8 = make<int8_t>(DataType::kInt8, {3}, {-128, 0, 127});
    CHECK(values<int8_t>(run({"Clip", 13, {i8, make<int8_t>(DataType::kInt8, {}, {-3}),
                                           make<int8_t>(DataType::kInt8, {}, {3})}})) == std::vector<int8_t>{-3, 0, 3});
    // min > max gives max everywhere.
    CHECK(values<float>(run({"Clip", 13, {floats({2}, {-9, 9}), floats({}, {2}), floats({}, {1})}})) ==
          std::vector<float>{1, 1});
  }

  TEST_CASE("Softmax, LogSoftmax and Hardmax along one axis and coerced to 2-D") {
    for (int64_t n : {1, 7, 13, 127}) {
      const std::vector<int64_t> shape{3, n, 5};
      const Tensor x = random_floats(shape, -20, 20);
      for (int64_t axis : {1, 2, -1}) {
        for (const char* op : {"Softmax", "LogSoftmax"}) {
          for (int64_t opset : {11, 13}) {
            CAPTURE(op);
            CAPTURE(n);
            CAPTURE(axis);
            CAPTURE(opset);
            const Tensor y = run({op, opset, {x}, int_attr("axis", axis)});
            const int64_t a = axis < 0 ? axis + 3 : axis;
            // Group = the elements normalized together.
            const int64_t outer = a == 1 ? 3 : 3 * n;
            const int64_t len = opset < 13 ? (a == 1 ? n * 5 : 5) : (a == 1 ? n : 5);
            const int64_t inner = opset < 13 ? 1 : (a == 1 ? 5 : 1);
            std::vector<double> want(static_cast<size_t>(x.size()));
            for (int64_t o = 0; o < outer; ++o)
              for (int64_t i = 0; i < inner; ++i) {
                double mx = -INFINITY, sum = 0;
                for (int64_t k = 0; k < len; ++k) mx = std::max(mx, double(x.data<float>()[(o * len + k) * inner + i]));
                for (int64_t k = 0; k < len; ++k) sum += std::exp(x.data<float>()[(o * len + k) * inner + i] - mx);
                for (int64_t k = 0; k < len; ++k) {
                  const int64_t idx = (o * len + k) * inner + i;
                  const double v = x.data<float>()[idx] - mx;
                  want[static_cast<size_t>(idx)] = std::string(op) == "Softmax" ? std::exp(v) / sum : v - std::log(sum);
                }
              }
            check_close(y, want, kApproxRel, kApproxAbs);
          }
        }
      }
    }
    // A middle axis over more than one block of 64 columns (transposed into rows and back).
    {
      const Tensor x = random_floats({2, 9, 150}, -20, 20);
      for (const char* op : {"Softmax", "LogSoftmax"}) {
        CAPTURE(op);
        const Tensor y = run({op, 13, {x}, int_attr("axis", 1)});
        std::vector<double> want(static_cast<size_t>(x.size()));
        for (int64_t o = 0; o < 2; ++o)
          for (int64_t i = 0; i < 150; ++i) {
            double mx = -INFINITY, sum = 0;
            for (int64_t k = 0; k < 9; ++k) mx = std::max(mx, double(x.data<float>()[(o * 9 + k) * 150 + i]));
            for (int64_t k = 0; k < 9; ++k) sum += std::exp(x.data<float>()[(o * 9 + k) * 150 + i] - mx);
            for (int64_t k = 0; k < 9; ++k) {
              const int64_t idx = (o * 9 + k) * 150 + i;
              const double v = x.data<float>()[idx] - mx;
              want[static_cast<size_t>(idx)] = std::string(op) == "Softmax" ? std::exp(v) / sum : v - std::log(sum);
            }
          }
        check_close(y, want, kApproxRel, kApproxAbs);
      }
    }
    // Short rows (fewer than eight: many rows' exps at once, in blocks of 256 rows) behave as
    // long ones: a NaN or +inf spreads NaN over its row, -inf gets 0, and 300 two-element rows
    // (two blocks) match the reference.
    for (int64_t n : {3, 19}) {
      CAPTURE(n);
      std::vector<float> v(static_cast<size_t>(4 * n), 1.0f);
      v[1] = NAN;                                     // row 0
      v[static_cast<size_t>(n) + 2] = INFINITY;       // row 1
      v[static_cast<size_t>(2 * n)] = -INFINITY;      // row 2
      const Tensor y = run({"Softmax", 13, {floats({4, n}, v)}});
      for (int64_t k = 0; k < n; ++k) {
        CHECK(std::isnan(y.data<float>()[k]));
        CHECK(std::isnan(y.data<float>()[n + k]));
        CHECK(y.data<float>()[3 * n + k] == doctest::Approx(1.0 / static_cast<double>(n)));
      }
      CHECK(y.data<float>()[2 * n] == 0.0f);
      CHECK(y.data<float>()[2 * n + 1] == doctest::Approx(1.0 / static_cast<double>(n - 1)));
    }
    const Tensor pairs = random_floats({300, 2}, -20, 20);
    const Tensor yp = run({"Softmax", 13, {pairs}});
    for (int64_t r = 0; r < 300; ++r) {
      const double a = pairs.data<float>()[2 * r], b = pairs.data<float>()[2 * r + 1];
      CHECK(yp.data<float>()[2 * r] == doctest::Approx(1.0 / (1.0 + std::exp(b - a))).epsilon(1e-5));
    }
    const Tensor h = floats({2, 3}, {1, 3, 3, 5, 0, 5});
    CHECK(values<float>(run({"Hardmax", 13, {h}})) == std::vector<float>{0, 1, 0, 1, 0, 0});
    CHECK(values<float>(run({"Hardmax", 11, {h}, int_attr("axis", 0)})) == std::vector<float>{0, 0, 0, 1, 0, 0});
  }

  // ---------------------------------------------------------------- reductions

  TEST_CASE("Reduce* over last, middle, first and scattered axes match the reference") {
    struct Kind {
      const char* op;
      double init;
      std::function<double(double, double)> step;
      std::function<double(double, int64_t)> finish;
    };
    const std::vector<Kind> kinds = {
        {"ReduceSum", 0, [](double a, double v) { return a + v; }, [](double a, int64_t) { return a; }},
        {"ReduceMean", 0, [](double a, double v) { return a + v; }, [](double a, int64_t n) { return a / double(n); }},
        {"ReduceMax", -INFINITY, [](double a, double v) { return std::max(a, v); }, [](double a, int64_t) { return a; }},
        {"ReduceMin", INFINITY, [](double a, double v) { return std::min(a, v); }, [](double a, int64_t) { return a; }},
        {"ReduceL1", 0, [](double a, double v) { return a + std::fabs(v); }, [](double a, int64_t) { return a; }},
        {"ReduceL2", 0, [](double a, double v) { return a + v * v; }, [](double a, int64_t) { return std::sqrt(a); }},
        {"ReduceSumSquare", 0, [](double a, double v) { return a + v * v; }, [](double a, int64_t) { return a; }},
        {"ReduceLogSumExp", 0, [](double a, double v) { return a + std::exp(v); }, [](double a, int64_t) { return std::log(a); }},
        {"ReduceProd", 1, [](double a, double v) { return a * v; }, [](double a, int64_t) { return a; }},
    };
    std::vector<std::vector<int64_t>> shapes;
    for (int64_t n : {1, 7, 13, 127}) {
      shapes.push_back({n});
      shapes.push_back({3, n});
      shapes.push_back({n, 5, 7});
      shapes.push_back({2, 7, n, 3});
    }
    shapes.push_back({301, 127});  // parallel rows
    shapes.push_back({127, 301});
    for (const auto& shape : shapes) {
      const int64_t rank = static_cast<int64_t>(shape.size());
      std::vector<std::vector<int64_t>> axis_sets = {{-1}, {0}, {}};
      if (rank >= 3) axis_sets.push_back({1});
      if (rank >= 3) axis_sets.push_back({0, 2});
      if (rank >= 4) axis_sets.push_back({1, 3});
      const Tensor x = random_floats(shape, 0.7f, 1.3f);  // products stay in range
      for (const auto& kind : kinds) {
        for (const auto& axes : axis_sets) {
          for (int64_t keepdims : {0, 1}) {
            CAPTURE(kind.op);
            CAPTURE(runner::shape_string(shape));
            CAPTURE(runner::shape_string(axes));
            CAPTURE(keepdims);
            // Opset 18: axes as an input; opset 11: as an attribute.
            const bool as_input = (rng()() & 1) != 0;
            OpRun r{kind.op, as_input ? 18 : 11, {x}, nullptr};
            if (as_input) {
              r.inputs.push_back(axes.empty() ? Tensor() : ints64({static_cast<int64_t>(axes.size())}, axes));
              r.attrs = int_attr("keepdims", keepdims);
            } else {
              r.attrs = [axes, keepdims](ir::Node& n) {
                if (!axes.empty()) n.set_attr(ir::Attribute::make_ints("axes", axes));
                n.set_attr(ir::Attribute::make_int("keepdims", keepdims));
              };
            }
            const Tensor y = run(r);
            std::vector<bool> red(shape.size(), axes.empty());
            for (int64_t a : axes) red[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
            std::vector<int64_t> out_shape, out_keep;
            for (size_t d = 0; d < shape.size(); ++d) {
              out_keep.push_back(red[d] ? 1 : shape[d]);
              if (!red[d] || keepdims) out_shape.push_back(red[d] ? 1 : shape[d]);
            }
            REQUIRE(y.shape() == out_shape);
            std::vector<double> acc(static_cast<size_t>(count(out_keep)), kind.init);
            for (int64_t i = 0; i < x.size(); ++i) {
              int64_t rest = i, o = 0, stride = 1;
              for (size_t d = shape.size(); d-- > 0;) {
                const int64_t c = rest % shape[d];
                rest /= shape[d];
                if (!red[d]) o += c * stride;
                stride *= out_keep[d];
              }
              acc[static_cast<size_t>(o)] = kind.step(acc[static_cast<size_t>(o)], x.data<float>()[i]);
            }
            const int64_t per_output = x.size() / count(out_keep);
            for (auto& v : acc) v = kind.finish(v, per_output);
            check_close(y, acc, kApproxRel, kApproxAbs);
          }
        }
      }
    }
  }

  TEST_CASE("ReduceMax/ReduceMin float32 rows: the element a scan keeps (first NaN, first of +0/-0), any length") {
    // Rows of lengths around the 16-lane blocks, with NaN payloads, signed zeros and infinities.
    for (int64_t n : {1, 5, 16, 17, 37, 100}) {
      for (int variant = 0; variant < 6; ++variant) {
        std::vector<float> v(static_cast<size_t>(n));
        for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = static_cast<float>((k * 7919) % 23) - 11.0f;
        if (variant == 1) v[static_cast<size_t>(n / 2)] = INFINITY;
        if (variant == 2 || variant == 3) {
          // Two NaNs with different payloads: the first one comes out.
          const uint32_t first = 0x7fc00001u, second = 0x7fc00002u;
          std::memcpy(&v[static_cast<size_t>(n - 1)], &second, 4);
          std::memcpy(&v[static_cast<size_t>((n - 1) / 2)], &first, 4);
        }
        if (variant == 4 || variant == 5) {
          // All zeros of both signs (and negatives for min): the first zero's sign wins.
          for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = (k + variant) % 2 ? -0.0f : 0.0f;
        }
        for (const char* op : {"ReduceMax", "ReduceMin"}) {
          CAPTURE(n);
          CAPTURE(variant);
          CAPTURE(op);
          const bool max = std::string(op) == "ReduceMax";
          float want = max ? -INFINITY : INFINITY;
          bool found_nan = false;
          for (float x : v) {
            if (found_nan) break;
            if (x != x) {
              want = x;
              found_nan = true;
            } else if (max ? x > want : x < want) {
              want = x;
            }
          }
          const float got = values<float>(run({op, 18, {floats({1, n}, v), ints64({1}, {1})}, int_attr("keepdims", 0)}))[0];
          uint32_t a, b;
          std::memcpy(&a, &got, 4);
          std::memcpy(&b, &want, 4);
          CHECK(a == b);
        }
      }
    }
  }

  TEST_CASE("reductions: noop_with_empty_axes, empty inputs, integer types") {
    const Tensor x = random_floats({3, 4});
    const Tensor empty_axes(DataType::kInt64, {0});
    const Tensor same = run({"ReduceSum", 13, {x, empty_axes}, int_attr("noop_with_empty_axes", 1)});
    CHECK(values<float>(same) == values<float>(x));
    CHECK(run({"ReduceSum", 13, {x, empty_axes}}).shape() == std::vector<int64_t>{1, 1});

    const Tensor none(DataType::kFloat, {0, 3});
    CHECK(values<float>(run({"ReduceSum", 13, {none, ints64({1}, {0})}})) == std::vector<float>{0, 0, 0});
    CHECK(values<float>(run({"ReduceProd", 18, {none, ints64({1}, {0})}})) == std::vector<float>{1, 1, 1});
    CHECK(std::isinf(values<float>(run({"ReduceMax", 18, {none, ints64({1}, {0})}}))[0]));

    const Tensor i = make<int32_t>(DataType::kInt32, {2, 3}, {1, -2, 3, 4, 5, -7});
    CHECK(values<int32_t>(run({"ReduceSum", 13, {i, ints64({1}, {1})}, int_attr("keepdims", 0)})) ==
          std::vector<int32_t>{2, 2});
    CHECK(values<int32_t>(run({"ReduceMean", 18, {i, ints64({1}, {1})}, int_attr("keepdims", 0)})) ==
          std::vector<int32_t>{0, 0});
    CHECK(values<int32_t>(run({"ReduceMin", 18, {i, ints64({1}, {0})}})) == std::vector<int32_t>{1, -2, -7});
    const Tensor b = make<uint8_t>(DataType::kBool, {2, 2}, {0, 1, 0, 0});
    CHECK(values<uint8_t>(run({"ReduceMax", 20, {b, ints64({1}, {1})}, int_attr("keepdims", 0)})) ==
          std::vector<uint8_t>{1, 0});
  }

  TEST_CASE("ArgMax/ArgMin with keepdims and select_last_index") {
    const Tensor x = floats({2, 4}, {1, 5, 5, 0, 2, 2, -1, -1});
    CHECK(values<int64_t>(run({"ArgMax", 13, {x}, int_attr("axis", 1)})) == std::vector<int64_t>{1, 0});
    const Tensor last = run({"ArgMax", 13, {x}, [](ir::Node& n) {
                              n.set_attr(ir::Attribute::make_int("axis", -1));
                              n.set_attr(ir::Attribute::make_int("select_last_index", 1));
                              n.set_attr(ir::Attribute::make_int("keepdims", 0));
                            }});
    CHECK(last.shape() == std::vector<int64_t>{2});
    CHECK(values<int64_t>(last) == std::vector<int64_t>{2, 1});
    const Tensor m = run({"ArgMin", 13, {x}, int_attr("select_last_index", 1)});
    CHECK(m.shape() == std::vector<int64_t>{1, 4});
    CHECK(values<int64_t>(m) == std::vector<int64_t>{0, 1, 1, 1});
    // Large enough for parallel chunks.
    const Tensor big = random_floats({127, 301});
    const Tensor am = run({"ArgMax", 13, {big}, int_attr("axis", 0)});
    for (int64_t j = 0; j < 301; ++j) {
      int64_t best = 0;
      for (int64_t i = 1; i < 127; ++i)
        if (big.data<float>()[i * 301 + j] > big.data<float>()[best * 301 + j]) best = i;
      CHECK(am.data<int64_t>()[j] == best);
    }
  }

  TEST_CASE("CumSum exclusive and reverse along each axis") {
    for (int64_t n : {1, 7, 13, 127}) {
      const Tensor x = random_floats({3, n});
      for (int64_t axis : {0, 1, -1}) {
        for (int64_t exclusive : {0, 1}) {
          for (int64_t reverse : {0, 1}) {
            const Tensor y = run({"CumSum", 14, {x, ints64({}, {axis})}, [=](ir::Node& node) {
                                   node.set_attr(ir::Attribute::make_int("exclusive", exclusive));
                                   node.set_attr(ir::Attribute::make_int("reverse", reverse));
                                 }});
            const int64_t a = axis < 0 ? axis + 2 : axis;
            std::vector<double> want(static_cast<size_t>(x.size()));
            for (int64_t i = 0; i < 3; ++i)
              for (int64_t j = 0; j < n; ++j) {
                double s = 0;
                const int64_t len = a == 0 ? 3 : n, pos = a == 0 ? i : j;
                for (int64_t k = 0; k < len; ++k) {
                  const bool take = reverse ? (exclusive ? k > pos : k >= pos) : (exclusive ? k < pos : k <= pos);
                  if (take) s += x.data<float>()[a == 0 ? k * n + j : i * n + k];
                }
                want[static_cast<size_t>(i * n + j)] = s;
              }
            check_close(y, want, kApproxRel, kApproxAbs);
          }
        }
      }
    }
  }

  TEST_CASE("Einsum: matmul, transpose, trace, diagonal, broadcast ellipsis") {
    const Tensor a = random_floats({7, 13});
    const Tensor b = random_floats({13, 5});
    const Tensor mm = run({"Einsum", 12, {a, b}, [](ir::Node& n) {
                             n.set_attr(ir::Attribute::make_string("equation", "ij,jk->ik"));
                           }});
    std::vector<double> want(35, 0.0);
    for (int i = 0; i < 7; ++i)
      for (int k = 0; k < 5; ++k)
        for (int j = 0; j < 13; ++j) want[static_cast<size_t>(i * 5 + k)] += double(a.data<float>()[i * 13 + j]) * b.data<float>()[j * 5 + k];
    check_close(mm, want, kApproxRel, kApproxAbs);

    auto eq = [](const char* e) { return [e](ir::Node& n) { n.set_attr(ir::Attribute::make_string("equation", e)); }; };
    const Tensor sq = floats({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
    CHECK(values<float>(run({"Einsum", 12, {sq}, eq("ii")})) == std::vector<float>{15});
    CHECK(values<float>(run({"Einsum", 12, {sq}, eq("ii->i")})) == std::vector<float>{1, 5, 9});
    CHECK(values<float>(run({"Einsum", 12, {sq}, eq("ji")})) == std::vector<float>{1, 4, 7, 2, 5, 8, 3, 6, 9});
    CHECK(values<float>(run({"Einsum", 12, {sq, sq}, eq("ij,ij->")})) == std::vector<float>{285});

    // Batched matmul with the batch dims broadcast through the ellipsis.
    const Tensor x = random_floats({2, 1, 3, 4});
    const Tensor y = random_floats({5, 4, 2});
    const Tensor z = run({"Einsum", 12, {x, y}, eq("...ij,...jk->...ik")});
    REQUIRE(z.shape() == std::vector<int64_t>{2, 5, 3, 2});
    std::vector<double> zw(60, 0.0);
    for (int p = 0; p < 2; ++p)
      for (int q = 0; q < 5; ++q)
        for (int i = 0; i < 3; ++i)
          for (int k = 0; k < 2; ++k)
            for (int j = 0; j < 4; ++j)
              zw[static_cast<size_t>(((p * 5 + q) * 3 + i) * 2 + k)] +=
                  double(x.data<float>()[(p * 3 + i) * 4 + j]) * y.data<float>()[(q * 4 + j) * 2 + k];
    check_close(z, zw, kApproxRel, kApproxAbs);
  }

  // ---------------------------------------------------------------- Where, Cast, Dropout

  TEST_CASE("Where broadcasts three inputs of any element type") {
    const Tensor c = make<uint8_t>(DataType::kBool, {2, 1}, {1, 0});
    const Tensor x = ints64({3}, {1, 2, 3});
    const Tensor y = ints64({}, {-1});
    CHECK(values<int64_t>(run({"Where", 16, {c, x, y}})) == std::vector<int64_t>{1, 2, 3, -1, -1, -1});
    Tensor sx(DataType::kString, {2});
    sx.mutable_strings() = {"a", "b"};
    Tensor sy(DataType::kString, {2});
    sy.mutable_strings() = {"c", "d"};
    const Tensor s = run({"Where", 16, {make<uint8_t>(DataType::kBool, {2}, {0, 1}), sx, sy}});
    CHECK(s.strings() == std::vector<std::string>{"c", "b"});
    // Same-shape fast path at a parallel size.
    const Tensor big_c = make<uint8_t>(DataType::kBool, {40000}, std::vector<uint8_t>(40000, 1));
    const Tensor big_x = random_floats({40000});
    CHECK(values<float>(run({"Where", 16, {big_c, big_x, random_floats({40000})}})) == values<float>(big_x));
  }

  TEST_CASE("Cast between numeric types, 16-bit floats, float8 and strings") {
    auto cast = [](const Tensor& x, DataType to, int64_t saturate = 1) {
      return run({"Cast", 19, {x}, [to, saturate](ir::Node& n) {
                    n.set_attr(ir::Attribute::make_int("to", static_cast<int64_t>(to)));
                    n.set_attr(ir::Attribute::make_int("saturate", saturate));
                  }});
    };
    // float -> float16 agrees with the runtime's conversion; double -> float16 rounds once.
    const Tensor f = random_floats({127}, -1000, 1000);
    const Tensor h = cast(f, DataType::kFloat16);
    for (int64_t i = 0; i < 127; ++i) CHECK(h.data<uint16_t>()[i] == runner::float_to_half(f.data<float>()[i]));
    // 1 + 2^-11 + 2^-40 lies just above a tie: once-rounded gives 1 + 2^-10, via float gives 1.
    const Tensor d = make<double>(DataType::kDouble, {1}, {1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)});
    CHECK(cast(d, DataType::kFloat16).data<uint16_t>()[0] == 0x3c01);
    CHECK(cast(d, DataType::kBFloat16).data<uint16_t>()[0] == 0x3f80);
    // float -> int truncates; int16 -> int8 keeps the low bits; anything -> bool is != 0.
    CHECK(values<int32_t>(cast(floats({3}, {2.9f, -2.9f, NAN}), DataType::kInt32)) == std::vector<int32_t>{2, -2, 0});
    CHECK(values<int8_t>(cast(make<int16_t>(DataType::kInt16, {1}, {200}), DataType::kInt8)) == std::vector<int8_t>{-56});
    CHECK(values<uint8_t>(cast(floats({3}, {0.0f, -0.0f, 0.1f}), DataType::kBool)) == std::vector<uint8_t>{0, 0, 1});
    CHECK(values<float>(cast(make<uint8_t>(DataType::kBool, {2}, {1, 0}), DataType::kFloat)) == std::vector<float>{1, 0});

    // float8: saturation, Inf/NaN handling and an exact round trip of every code.
    const Tensor big = floats({4}, {448, 500, -1e9f, INFINITY});
    CHECK(values<uint8_t>(cast(big, DataType::kFloat8E4M3FN)) == std::vector<uint8_t>{0x7e, 0x7e, 0xfe, 0x7e});
    CHECK(values<uint8_t>(cast(big, DataType::kFloat8E4M3FN, 0)) == std::vector<uint8_t>{0x7e, 0x7f, 0xff, 0x7f});
    CHECK(values<uint8_t>(cast(big, DataType::kFloat8E5M2, 0))[3] == 0x7c);
    CHECK(values<uint8_t>(cast(floats({1}, {-0.0f}), DataType::kFloat8E4M3FNUZ))[0] == 0x00);
    for (DataType t : {DataType::kFloat8E4M3FN, DataType::kFloat8E4M3FNUZ, DataType::kFloat8E5M2, DataType::kFloat8E5M2FNUZ}) {
      CAPTURE(static_cast<int>(t));
      Tensor codes(t, {256});
      for (int i = 0; i < 256; ++i) codes.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(i);
      const Tensor back = cast(cast(codes, DataType::kFloat), t, 0);
      const Tensor as_float = cast(codes, DataType::kFloat);
      for (int i = 0; i < 256; ++i) {
        if (std::isnan(as_float.data<float>()[i])) continue;
        CHECK(back.data<uint8_t>()[i] == i);
      }
    }
    // Strings: shortest round-trip digits (numpy's str), and the reserved literals.
    const Tensor s = cast(floats({5}, {0.039187793f, 1.0f, 1e-5f, 1.5e20f, -2.5f}), DataType::kString);
    CHECK(s.strings() == std::vector<std::string>{"0.039187793", "1.0", "1e-05", "1.5e+20", "-2.5"});
    Tensor in(DataType::kString, {5});
    in.mutable_strings() = {"3.25", "-inf", "NaN", "+INF", "1e3"};
    const auto parsed = values<float>(cast(in, DataType::kFloat));
    CHECK(parsed[0] == 3.25f);
    CHECK(parsed[1] == -INFINITY);
    CHECK(std::isnan(parsed[2]));
    CHECK(parsed[3] == INFINITY);
    CHECK(parsed[4] == 1000.0f);
    Tensor big_int(DataType::kString, {1});
    big_int.mutable_strings() = {"9007199254740993"};  // not representable as a double
    CHECK(values<int64_t>(cast(big_int, DataType::kInt64))[0] == 9007199254740993LL);
    // CastLike takes the type of its second input.
    CHECK(run({"CastLike", 15, {floats({1}, {2.5f}), ints64({}, {0})}}).dtype() == DataType::kInt64);
  }

  TEST_CASE("Dropout in inference is the identity with a mask of ones") {
    const Tensor x = random_floats({7, 13});
    const auto out = run_all({"Dropout", 13, {x, floats({}, {0.3f}), make<uint8_t>(DataType::kBool, {}, {0})}, nullptr, 2});
    CHECK(values<float>(out[0]) == values<float>(x));
    CHECK(out[1].dtype() == DataType::kBool);
    CHECK(values<uint8_t>(out[1]) == std::vector<uint8_t>(91, 1));
    const auto old = run_all({"Dropout", 7, {x}, nullptr, 2});
    CHECK(old[1].dtype() == DataType::kFloat);
  }

  // ---------------------------------------------------------------- invalid inputs

  TEST_CASE("invalid inputs fail with an Error naming the node") {
    const Tensor a = random_floats({2, 3});
    const Tensor b = random_floats({4});
    auto fails = [](const OpRun& r) {
      try {
        execute(r, 1);
      } catch (const Error& e) {
        CHECK(std::string(e.what()).find("node_under_test") != std::string::npos);
        return true;
      }
      return false;
    };
    CHECK(fails({"Add", 14, {a, b}}));                                        // shapes do not broadcast
    CHECK(fails({"Add", 14, {a, ints64({1}, {1})}}));                          // mixed types
    CHECK(fails({"Div", 14, {ints64({2}, {1, 2}), ints64({2}, {1, 0})}}));     // integer division by zero
    CHECK(fails({"Mod", 13, {ints64({1}, {1}), ints64({1}, {0})}}));
    CHECK(fails({"Sqrt", 13, {ints64({1}, {4})}}));                            // unsupported type
    CHECK(fails({"Where", 16, {a, a, a}}));                                    // condition not bool
    CHECK(fails({"Clip", 13, {a, floats({2}, {0, 1}), Tensor()}}));            // bound not a scalar
    CHECK(fails({"PRelu", 16, {a, random_floats({2, 2, 3})}}));                // slope larger than X
    CHECK(fails({"ReduceSum", 13, {a, ints64({1}, {2})}}));                    // axis out of range
    CHECK(fails({"ReduceMean", 18, {a, ints64({2}, {1, -1})}}));               // axis given twice
    CHECK(fails({"Softmax", 13, {a}, int_attr("axis", 2)}));
    CHECK(fails({"ArgMax", 13, {Tensor(DataType::kFloat, {2, 0})}, int_attr("axis", 1)}));  // empty axis
    CHECK(fails({"CumSum", 14, {a, ints64({}, {5})}}));
    CHECK(fails({"Einsum", 12, {a}, [](ir::Node& n) { n.set_attr(ir::Attribute::make_string("equation", "ijk->i")); }}));
    CHECK(fails({"Einsum", 12, {a, b}, [](ir::Node& n) { n.set_attr(ir::Attribute::make_string("equation", "ij,j->i")); }}));
    CHECK(fails({"Cast", 13, {a}, int_attr("to", 99)}));
    Tensor text(DataType::kString, {1});
    text.mutable_strings() = {"hello"};
    CHECK(fails({"Cast", 13, {text}, int_attr("to", 1)}));
    CHECK(fails({"BitShift", 11, {make<uint8_t>(DataType::kUInt8, {1}, {1}), make<uint8_t>(DataType::kUInt8, {1}, {1})}}));
  }
}

}  // namespace
}  // namespace onnxtool::elementwise_kernels_test
