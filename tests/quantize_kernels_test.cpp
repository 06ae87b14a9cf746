// Tests of the linear quantization kernels (runner/cpu/quantize_linear.cpp): QuantizeLinear and
// DequantizeLinear per tensor, per axis and blocked, on 8-bit, 16-bit and int32 types, and
// DynamicQuantizeLinear, each run as a one-node model against the spec's formulas evaluated
// element by element in double; integer outputs must match exactly (ties round half to even,
// values saturate at both ends); one thread and several threads must give identical bytes;
// invalid inputs must fail with an Error naming the node.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tests/kernel_test_util.h"

namespace onnxtool::quantize_kernels_test {
namespace {

using namespace testing;  // NOLINT: the kernel-test harness

/// Relative tolerance of DequantizeLinear's float outputs (one or two float roundings).
constexpr double kDequantizeTol = 1e-6;

/// An integer type a tensor can be quantized to, with its range.
struct QType {
  DataType type;
  double lo, hi;
  const char* name;
};

const QType kUInt8{DataType::kUInt8, 0, 255, "uint8"};
const QType kInt8{DataType::kInt8, -128, 127, "int8"};
const QType kUInt16{DataType::kUInt16, 0, 65535, "uint16"};
const QType kInt16{DataType::kInt16, -32768, 32767, "int16"};

double element(const Tensor& t, int64_t i) {
  REQUIRE(runner::is_plain_numeric(t.dtype()));
  return runner::element_as_double(t, i);
}

/// A tensor of an integer or float type holding the given values (already in range).
Tensor make(DataType type, std::vector<int64_t> shape, const std::vector<double>& v) {
  Tensor t(type, std::move(shape));
  REQUIRE(t.size() == static_cast<int64_t>(v.size()));
  REQUIRE(runner::is_plain_numeric(type));
  for (int64_t i = 0; i < t.size(); ++i) runner::set_element_from_double(t, i, v[static_cast<size_t>(i)]);
  return t;
}

int64_t count_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

/// Random integers of a quantized type, over [lo, hi] clipped to the type's range.
Tensor random_q(const QType& q, std::vector<int64_t> shape, double lo, double hi) {
  return random_ints(q.type, std::move(shape), static_cast<int64_t>(std::max(lo, q.lo)),
                     static_cast<int64_t>(std::min(hi, q.hi)));
}

/// How element i of x finds its scale and zero point: per tensor (axis unused), per axis, or
/// in blocks of block_size along the axis (the parameters then have x's shape with that dim
/// divided by block_size, rounded up).
struct Params {
  bool per_tensor = true;
  int64_t axis = 1, block = 0;
  int64_t index(const Tensor& x, const Tensor& scale, int64_t i) const {
    if (per_tensor) return 0;
    const int64_t a = axis < 0 ? axis + static_cast<int64_t>(x.rank()) : axis;
    const auto c = unravel(i, x.shape());
    if (block == 0) return c[static_cast<size_t>(a)];
    auto pc = c;
    pc[static_cast<size_t>(a)] /= block;
    int64_t off = 0;
    for (size_t d = 0; d < pc.size(); ++d) off = off * scale.dim(d) + pc[d];
    return off;
  }
};

/// The spec's x / y_scale of two float tensors: one float division. The quotient of two floats
/// computed in double and rounded to float is exactly the float quotient.
double float_quotient(double x, double scale) { return static_cast<float>(x / scale); }

/// QuantizeLinear by the spec: saturate(round(x / y_scale) + y_zero_point), ties to even.
std::vector<double> quantize_reference(const Tensor& x, const Tensor& scale, const Tensor* zp, const QType& q, const Params& p) {
  std::vector<double> y;
  for (int64_t i = 0; i < x.size(); ++i) {
    const int64_t k = p.index(x, scale, i);
    const double z = zp ? element(*zp, k) : 0;
    y.push_back(std::clamp(std::nearbyint(float_quotient(element(x, i), element(scale, k))) + z, q.lo, q.hi));
  }
  return y;
}

/// DequantizeLinear by the spec: (x - x_zero_point) * x_scale.
std::vector<double> dequantize_reference(const Tensor& x, const Tensor& scale, const Tensor* zp, const Params& p) {
  std::vector<double> y;
  for (int64_t i = 0; i < x.size(); ++i) {
    const int64_t k = p.index(x, scale, i);
    y.push_back((element(x, i) - (zp ? element(*zp, k) : 0)) * element(scale, k));
  }
  return y;
}

/// Exact comparison of an integer tensor with reference values, reporting the first mismatch.
void check_ints(const Tensor& got, const QType& q, const std::vector<double>& want) {
  REQUIRE(got.dtype() == q.type);
  REQUIRE(got.size() == static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < got.size(); ++i)
    if (element(got, i) != want[static_cast<size_t>(i)]) {
      FAIL_CHECK(q.name << " element " << i << ": " << element(got, i) << " vs expected " << want[static_cast<size_t>(i)]);
      return;
    }
}

/// Runs QuantizeLinear and DequantizeLinear on one configuration and checks both.
void check_quantize(int64_t opset, const QType& q, const Tensor& x, const Tensor& scale, const Tensor* zp, const Params& p) {
  CAPTURE(opset);
  CAPTURE(q.name);
  CAPTURE(x.describe());
  CAPTURE(scale.describe());
  CAPTURE(p.axis);
  CAPTURE(p.block);
  std::vector<Attr> attrs;
  if (!p.per_tensor) attrs.push_back(attr_int("axis", p.axis));
  if (p.block) attrs.push_back(attr_int("block_size", p.block));
  std::vector<Tensor> in{x, scale};
  if (zp) in.push_back(*zp);
  else if (q.type != DataType::kUInt8) attrs.push_back(attr_int("output_dtype", static_cast<int64_t>(q.type)));
  const Tensor y = run1({"QuantizeLinear", opset, in, attrs});
  REQUIRE(y.shape() == x.shape());
  check_ints(y, q, quantize_reference(x, scale, zp, q, p));
  // Dequantizing the reference's integers: (q - zero_point) * scale.
  const Tensor qx = make(q.type, x.shape(), quantize_reference(x, scale, zp, q, p));
  std::vector<Tensor> din{qx, scale};
  if (zp) din.push_back(*zp);
  std::vector<Attr> dattrs;
  if (!p.per_tensor) dattrs.push_back(attr_int("axis", p.axis));
  if (p.block) dattrs.push_back(attr_int("block_size", p.block));
  const Tensor d = run1({"DequantizeLinear", opset, din, dattrs});
  REQUIRE(d.dtype() == DataType::kFloat);
  REQUIRE(d.shape() == x.shape());
  check_close(d, dequantize_reference(qx, scale, zp, p), kDequantizeTol);
}

Tensor scalar(float v) { return floats({v}, {1}).reshaped({}); }

/// DynamicQuantizeLinear by the spec, with float tensors rounded to float after each operation:
/// x_min = min(0, min(x)), x_max = max(0, max(x)), y_scale = (x_max - x_min) / 255,
/// y_zero_point = saturate(round(0 - x_min / y_scale)), y = saturate(round(x / y_scale) + y_zero_point).
struct DynamicResult {
  std::vector<double> y;
  double scale, zero_point;
};

DynamicResult dynamic_reference(const Tensor& x) {
  double lo = 0, hi = 0;
  for (int64_t i = 0; i < x.size(); ++i) {
    lo = std::min(lo, element(x, i));
    hi = std::max(hi, element(x, i));
  }
  DynamicResult r;
  r.scale = static_cast<float>(static_cast<double>(static_cast<float>(hi - lo)) / 255.0);
  // With an all-zero input the range is empty: scale 0, zero point 0 and y all zero.
  r.zero_point = r.scale == 0 ? 0 : std::clamp(std::nearbyint(0 - float_quotient(lo, r.scale)), 0.0, 255.0);
  for (int64_t i = 0; i < x.size(); ++i)
    r.y.push_back(r.scale == 0 ? 0 : std::clamp(std::nearbyint(float_quotient(element(x, i), r.scale)) + r.zero_point, 0.0, 255.0));
  return r;
}

void check_dynamic(const Tensor& x) {
  CAPTURE(x.describe());
  const auto outs = run_checked({"DynamicQuantizeLinear", 11, {x}, {}, 3});
  const DynamicResult want = dynamic_reference(x);
  REQUIRE(outs[0].shape() == x.shape());
  check_ints(outs[0], kUInt8, want.y);
  REQUIRE(outs[1].dtype() == DataType::kFloat);
  REQUIRE(outs[1].shape().empty());
  CHECK(outs[1].data<float>()[0] == want.scale);
  REQUIRE(outs[2].dtype() == DataType::kUInt8);
  REQUIRE(outs[2].shape().empty());
  CHECK(outs[2].data<uint8_t>()[0] == want.zero_point);
}

const std::vector<std::vector<int64_t>> kShapes{{1}, {7}, {13, 7}, {2, 3, 13}, {127}, {3, 1, 7, 5}};

TEST_SUITE("quantize_kernels") {

TEST_CASE("QuantizeLinear and DequantizeLinear per tensor: uint8 and int8, zero points, saturation") {
  int turn = 0;
  for (int64_t opset : {10, 13, 19, 21})
    for (const auto& shape : kShapes)
      for (const QType* q : {&kUInt8, &kInt8}) {
        // Scales small enough that x in [-10, 10] saturates at both ends for some elements.
        const float s = std::vector<float>{0.05f, 0.1f, 0.037f, 0.3f}[static_cast<size_t>(turn++ % 4)];
        const Tensor x = random_float(shape);
        const Tensor scale = turn % 2 ? scalar(s) : floats({s});
        const Tensor zp_scalar = make(q->type, {}, {q->type == DataType::kUInt8 ? 128.0 : -5.0});
        const Tensor zp_edge = make(q->type, {}, {q->type == DataType::kUInt8 ? 3.0 : 100.0});
        check_quantize(opset, *q, x, scale, &zp_scalar, {});
        check_quantize(opset, *q, x, scale, &zp_edge, {});
        if (q->type == DataType::kUInt8) check_quantize(opset, *q, x, scale, nullptr, {});
      }
}

TEST_CASE("QuantizeLinear rounds half to even and saturates at both ends") {
  // x / 0.5 = 2.5, 3.5, -2.5, -3.5, 0.5, 1.5, -0.5, -1.5, 1000, -1000: exact quotients.
  const Tensor x = floats({1.25f, 1.75f, -1.25f, -1.75f, 0.25f, 0.75f, -0.25f, -0.75f, 500, -500});
  const Tensor scale = scalar(0.5f);
  const Tensor zero8 = make(DataType::kInt8, {}, {0});
  const Tensor y8 = run1({"QuantizeLinear", 13, {x, scale, zero8}});
  CHECK(std::vector<int8_t>(y8.data<int8_t>(), y8.data<int8_t>() + 10) == std::vector<int8_t>{2, 4, -2, -4, 0, 2, 0, -2, 127, -128});
  const Tensor ten = make(DataType::kUInt8, {}, {10});
  const Tensor yu = run1({"QuantizeLinear", 13, {x, scale, ten}});
  CHECK(std::vector<uint8_t>(yu.data<uint8_t>(), yu.data<uint8_t>() + 10) == std::vector<uint8_t>{12, 14, 8, 6, 10, 12, 10, 8, 255, 0});
  // Infinities saturate too.
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor yi = run1({"QuantizeLinear", 13, {floats({inf, -inf}), scale, zero8}});
  CHECK(std::vector<int8_t>(yi.data<int8_t>(), yi.data<int8_t>() + 2) == std::vector<int8_t>{127, -128});
  // The same 12 values repeated: runs of 32 and more take the vector path, with its packs.
  std::vector<float> many;
  for (int r = 0; r < 6; ++r) {
    many.insert(many.end(), x.data<float>(), x.data<float>() + 10);
    many.push_back(inf);
    many.push_back(-inf);
  }
  const Tensor y8_many = run1({"QuantizeLinear", 13, {floats(many), scale, zero8}});
  const Tensor yu_many = run1({"QuantizeLinear", 13, {floats(many), scale, ten}});
  for (size_t i = 0; i < many.size(); ++i) {
    const size_t k = i % 12;
    CAPTURE(i);
    CHECK(y8_many.data<int8_t>()[i] == (k < 10 ? y8.data<int8_t>()[k] : k == 10 ? 127 : -128));
    CHECK(yu_many.data<uint8_t>()[i] == (k < 10 ? yu.data<uint8_t>()[k] : k == 10 ? 255 : 0));
  }
  // The same ties through the reference, on 16-bit types at opset 21.
  check_quantize(21, kInt16, x, scale, nullptr, {});
  const Tensor zu16 = make(DataType::kUInt16, {}, {3});
  check_quantize(21, kUInt16, x, scale, &zu16, {});
}

TEST_CASE("QuantizeLinear and DequantizeLinear per axis: axis 0, 1 (default), -1") {
  const std::vector<std::vector<int64_t>> shapes{{5, 7}, {3, 5, 7}, {2, 3, 13, 7}, {1, 13}, {7, 1}};
  for (int64_t opset : {13, 19, 21})
    for (const auto& shape : shapes)
      for (int64_t axis : {0, 1, -1, -2})
        for (const QType* q : {&kUInt8, &kInt8}) {
          const int64_t a = axis < 0 ? axis + static_cast<int64_t>(shape.size()) : axis;
          if (a < 0 || a >= static_cast<int64_t>(shape.size())) continue;
          const int64_t len = shape[static_cast<size_t>(a)];
          const Tensor x = random_float(shape), scale = random_float({len}, 0.02f, 0.2f);
          const Tensor zp = random_q(*q, {len}, -20, 200);
          Params p;
          p.per_tensor = false;
          p.axis = axis;
          check_quantize(opset, *q, x, scale, &zp, p);
          // Without the attribute the axis is 1.
          if (a == 1 && shape[1] > 1) {
            CAPTURE("default axis");
            const Tensor y = run1({"QuantizeLinear", opset, {x, scale, zp}});
            check_ints(y, *q, quantize_reference(x, scale, &zp, *q, p));
          }
        }
}

TEST_CASE("QuantizeLinear and DequantizeLinear on 16-bit types (opset 21): per tensor and per axis") {
  for (const QType* q : {&kUInt16, &kInt16})
    for (const auto& shape : kShapes) {
      // A scale of 1e-4 puts x in [-10, 10] at up to 100000 steps: both ends saturate.
      const Tensor x = random_float(shape);
      const Tensor zp = make(q->type, {}, {q->type == DataType::kUInt16 ? 30000.0 : -1000.0});
      check_quantize(21, *q, x, scalar(1e-4f), &zp, {});
      check_quantize(21, *q, x, scalar(7e-4f), &zp, {});
      check_quantize(21, *q, x, scalar(3e-3f), nullptr, {});
      Params p;
      p.per_tensor = false;
      p.axis = -1;
      const int64_t len = shape.back();
      const Tensor zpa = random_q(*q, {len}, -30000, 30000);
      check_quantize(21, *q, x, random_float({len}, 1e-4f, 1e-3f), &zpa, p);
    }
}

TEST_CASE("QuantizeLinear and DequantizeLinear blocked (opset 21): block_size along axis 0, 1, -1") {
  struct Case {
    std::vector<int64_t> shape;
    int64_t axis, block;
  };
  const std::vector<Case> cases{{{6, 7}, 0, 2},     {{6, 7}, 1, 3},     {{7, 13}, 1, 4},  {{2, 13, 5}, -2, 4},
                                {{2, 13, 5}, 1, 13}, {{3, 5, 7}, -1, 2}, {{1, 7}, 1, 1},   {{13, 1}, 0, 5}};
  for (const auto& c : cases)
    for (const QType* q : {&kUInt8, &kInt8, &kInt16}) {
      const int64_t a = c.axis < 0 ? c.axis + static_cast<int64_t>(c.shape.size()) : c.axis;
      std::vector<int64_t> pshape = c.shape;
      pshape[static_cast<size_t>(a)] = (pshape[static_cast<size_t>(a)] + c.block - 1) / c.block;
      const Tensor x = random_float(c.shape), scale = random_float(pshape, 0.02f, 0.2f);
      const Tensor zp = random_q(*q, pshape, -20, 200);
      Params p;
      p.per_tensor = false;
      p.axis = c.axis;
      p.block = c.block;
      check_quantize(21, *q, x, scale, &zp, p);
      if (q->type == DataType::kInt8) check_quantize(21, *q, x, scale, nullptr, p);
    }
}

TEST_CASE("QuantizeLinear of int32 input and output_dtype without a zero point") {
  Tensor x = random_ints(DataType::kInt32, {3, 13}, -3000, 3000);
  const Tensor zp = make(DataType::kUInt8, {}, {128});
  check_quantize(13, kUInt8, x, scalar(7.3f), &zp, {});
  // Zero point omitted: output_dtype picks the type (opset 21), uint8 otherwise.
  const Tensor xf = random_float({2, 7});
  for (const QType* q : {&kInt8, &kUInt16, &kInt16}) {
    const Tensor y = run1({"QuantizeLinear", 21, {xf, scalar(0.05f)}, {attr_int("output_dtype", static_cast<int64_t>(q->type))}});
    check_ints(y, *q, quantize_reference(xf, scalar(0.05f), nullptr, *q, {}));
  }
  check_ints(run1({"QuantizeLinear", 21, {xf, scalar(0.05f)}}), kUInt8, quantize_reference(xf, scalar(0.05f), nullptr, kUInt8, {}));
}

TEST_CASE("DequantizeLinear of int32 with zero point 0, and the extremes of each type") {
  for (const auto& shape : kShapes) {
    const Tensor x = random_ints(DataType::kInt32, shape, -2000000000, 2000000000);
    const Tensor s = scalar(3.1e-7f);
    const Tensor zero = make(DataType::kInt32, {}, {0});
    check_close(run1({"DequantizeLinear", 13, {x, s, zero}}), dequantize_reference(x, s, &zero, {}), kDequantizeTol);
    check_close(run1({"DequantizeLinear", 10, {x, s}}), dequantize_reference(x, s, nullptr, {}), kDequantizeTol);
    // Per axis on int32 (opset 13+).
    Params p;
    p.per_tensor = false;
    p.axis = 0;
    const Tensor sa = random_float({shape[0]}, 1e-7f, 1e-6f);
    check_close(run1({"DequantizeLinear", 13, {x, sa}, {attr_int("axis", 0)}}), dequantize_reference(x, sa, nullptr, p),
                kDequantizeTol);
  }
  for (const QType* q : {&kUInt8, &kInt8, &kUInt16, &kInt16}) {
    CAPTURE(q->name);
    const Tensor x = make(q->type, {4}, {q->lo, q->hi, q->lo + 1, 0});
    const Tensor zp = make(q->type, {}, {q->lo});
    const Tensor s = scalar(0.25f);
    check_close(run1({"DequantizeLinear", 21, {x, s, zp}}), dequantize_reference(x, s, &zp, {}), kDequantizeTol);
    check_close(run1({"DequantizeLinear", 21, {x, s}}), dequantize_reference(x, s, nullptr, {}), kDequantizeTol);
  }
}

TEST_CASE("DynamicQuantizeLinear: the spec's scale, zero point and values") {
  // Random data at odd sizes: both signs, only positive (zero point 0), only negative (255).
  for (const auto& shape : kShapes) {
    check_dynamic(random_float(shape));
    check_dynamic(random_float(shape, 0.5f, 9));
    check_dynamic(random_float(shape, -9, -0.5f));
    check_dynamic(random_float(shape, -0.01f, 3));
  }
  // Extremes whose difference is exact: the scale is 15.875 / 255 in any precision.
  Tensor x = random_float({13, 7});
  x.mutable_data<float>()[3] = -6.375f;
  x.mutable_data<float>()[50] = 9.5f;
  for (int64_t i = 0; i < x.size(); ++i) x.mutable_data<float>()[i] = std::clamp(x.data<float>()[i], -6.375f, 9.5f);
  check_dynamic(x);
  CHECK(run_checked({"DynamicQuantizeLinear", 11, {x}, {}, 3})[1].data<float>()[0] == static_cast<float>(15.875 / 255));
  // All zeros: scale 0, zero point 0, all outputs 0.
  for (const auto& shape : std::vector<std::vector<int64_t>>{{1}, {7}, {3, 13}}) {
    const Tensor z = floats(std::vector<float>(static_cast<size_t>(count_of(shape)), 0.0f), shape);
    const auto outs = run_checked({"DynamicQuantizeLinear", 11, {z}, {}, 3});
    CHECK(outs[1].data<float>()[0] == 0.0f);
    CHECK(outs[2].data<uint8_t>()[0] == 0);
    check_ints(outs[0], kUInt8, std::vector<double>(static_cast<size_t>(z.size()), 0));
    check_dynamic(z);
  }
}

TEST_CASE("DynamicQuantizeLinear rounds half to even") {
  // Range [0, 255]: scale 1, zero point 0.
  const auto a = run_checked({"DynamicQuantizeLinear", 11, {floats({0, 255, 2.5f, 3.5f, 127.5f, 254.5f})}, {}, 3});
  CHECK(a[1].data<float>()[0] == 1.0f);
  CHECK(a[2].data<uint8_t>()[0] == 0);
  CHECK(std::vector<uint8_t>(a[0].data<uint8_t>(), a[0].data<uint8_t>() + 6) == std::vector<uint8_t>{0, 255, 2, 4, 128, 254});
  // Range [-51, 204]: scale 1, zero point 51; -0.5 rounds to 0, 0.5 to 0, 1.5 to 2.
  const auto b = run_checked({"DynamicQuantizeLinear", 11, {floats({-51, 204, -0.5f, 0.5f, 1.5f, -1.5f})}, {}, 3});
  CHECK(b[1].data<float>()[0] == 1.0f);
  CHECK(b[2].data<uint8_t>()[0] == 51);
  CHECK(std::vector<uint8_t>(b[0].data<uint8_t>(), b[0].data<uint8_t>() + 6) == std::vector<uint8_t>{0, 255, 51, 51, 53, 49});
  // Only negative values: the zero point saturates at 255.
  check_dynamic(floats({-25.5f, -12.25f, -0.05f, -0.15f, 0}));
}

TEST_CASE("Quantization kernels reject bad inputs") {
  const Tensor x = random_float({3, 5});
  check_fails(NodeCase("QuantizeLinear", 13, {x, random_float({4}, 0.1f, 1)}, {attr_int("axis", 1)}), "per-axis scale");
  check_fails(NodeCase("QuantizeLinear", 21, {x, random_float({3, 2}, 0.1f, 1)}, {attr_int("axis", 1), attr_int("block_size", 2)}),
              "blocked scale");
  check_fails(NodeCase("DequantizeLinear", 13, {make(DataType::kUInt8, {2}, {1, 2}), scalar(0.5f), make(DataType::kInt8, {}, {0})}),
              "different types");
  Tensor xd(DataType::kDouble, {2});
  xd.mutable_data<double>()[0] = xd.mutable_data<double>()[1] = 1;
  check_fails(NodeCase("DynamicQuantizeLinear", 11, {xd}, {}, 3), "x must be float");
}

}  // TEST_SUITE

}  // namespace
}  // namespace onnxtool::quantize_kernels_test
