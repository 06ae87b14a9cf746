// Tests of the linear-algebra kernels (runner/cpu/matmul.cpp, conv.cpp, gemm.cpp): MatMul, Gemm,
// Conv, ConvTranspose, Det, MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv, each run
// as a one-node model against a plain reference loop written here, at odd sizes; one thread and
// several threads must give identical bytes; invalid inputs must fail with an Error naming the node.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "runner/cpu/conv_gemm.h"
#include "runner/cpu/gemm_int.h"
#include "runner/profile.h"
#include "tests/kernel_test_util.h"

namespace onnxtool::linalg_kernels_test {
namespace {

using namespace testing;  // NOLINT: the kernel-test harness

std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.size()));
  for (int64_t i = 0; i < t.size(); ++i) {
    switch (t.dtype()) {
      case DataType::kFloat: v[static_cast<size_t>(i)] = t.data<float>()[i]; break;
      case DataType::kDouble: v[static_cast<size_t>(i)] = t.data<double>()[i]; break;
      case DataType::kFloat16: v[static_cast<size_t>(i)] = runner::half_to_float(t.data<uint16_t>()[i]); break;
      default: FAIL("unexpected dtype");
    }
  }
  return v;
}

/// Relative comparison with a floor of 100: the random inputs lie in [-10, 10], so one term of a
/// sum is up to 100 and a sum that cancels to near zero keeps the rounding error of its terms.
void check_near(const Tensor& got, const std::vector<double>& want, double tol) {
  check_relative(as_doubles(got), want, tol, 100);
}

Tensor to_half(const Tensor& t) {
  Tensor h(DataType::kFloat16, t.shape());
  for (int64_t i = 0; i < t.size(); ++i) h.mutable_data<uint16_t>()[i] = runner::float_to_half(t.data<float>()[i]);
  return h;
}

Tensor scalar_float(float v) {
  Tensor t(DataType::kFloat, {});
  t.mutable_data<float>()[0] = v;
  return t;
}

template <class T>
Tensor scalar_of(DataType type, T v) {
  Tensor t(type, {});
  t.mutable_data<T>()[0] = v;
  return t;
}

int64_t count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// ---------------------------------------------------------------- MatMul references

/// numpy matmul of two float tensors (1-D operands promoted), computed in double.
std::vector<double> matmul_reference(const Tensor& a, const Tensor& b, std::vector<int64_t>* out_shape) {
  std::vector<int64_t> sa = a.shape(), sb = b.shape();
  const bool av = sa.size() == 1, bv = sb.size() == 1;
  if (av) sa.insert(sa.begin(), 1);
  if (bv) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  const size_t rank = std::max(sa.size(), sb.size()) - 2;
  std::vector<int64_t> batch(rank);
  auto dim_at = [&](const std::vector<int64_t>& s, size_t i) {
    const size_t lead = s.size() - 2;
    return i + lead >= rank ? s[i + lead - rank] : int64_t{1};
  };
  for (size_t i = 0; i < rank; ++i) batch[i] = std::max(dim_at(sa, i), dim_at(sb, i));
  std::vector<int64_t> shape = batch;
  if (!av) shape.push_back(m);
  if (!bv) shape.push_back(n);
  *out_shape = shape;
  const auto pa = as_doubles(a), pb = as_doubles(b);
  std::vector<double> out;
  for (int64_t bi = 0; bi < count(batch); ++bi) {
    const auto idx = unravel(bi, batch);
    int64_t oa = 0, ob = 0;
    for (size_t d = 0; d < rank; ++d) {
      oa = oa * dim_at(sa, d) + (dim_at(sa, d) == 1 ? 0 : idx[d]);
      ob = ob * dim_at(sb, d) + (dim_at(sb, d) == 1 ? 0 : idx[d]);
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += pa[static_cast<size_t>(oa * m * k + i * k + p)] * pb[static_cast<size_t>(ob * k * n + p * n + j)];
        out.push_back(acc);
      }
  }
  return out;
}

TEST_SUITE("linalg_kernels") {

void check_matmul(const std::vector<int64_t>& sa, const std::vector<int64_t>& sb) {
  CAPTURE(sa.size());
  CAPTURE(sb.size());
  const Tensor a = random_float(sa), b = random_float(sb);
  std::vector<int64_t> shape;
  const auto want = matmul_reference(a, b, &shape);
  const Tensor y = run1(NodeCase("MatMul", 13, {a, b}));
  CHECK(y.shape() == shape);
  check_near(y, want, 1e-5);
}

TEST_CASE("MatMul float: 2-D, 1-D promotion, batch broadcasting, odd sizes") {
  check_matmul({7, 13}, {13, 5});
  check_matmul({1, 1}, {1, 1});
  check_matmul({13}, {13, 4});
  check_matmul({3, 13}, {13});
  check_matmul({9}, {9});
  check_matmul({2, 3, 5, 7}, {7, 3});
  check_matmul({5, 7}, {2, 3, 7, 4});
  check_matmul({2, 1, 4, 6}, {3, 6, 5});
  check_matmul({4}, {2, 4, 3});
  // Large enough for the threaded tile grid (several row and column tiles).
  check_matmul({131, 23}, {23, 2101});
}

TEST_CASE("MatMul double, float16 and the integer types") {
  const Tensor a = random_float({3, 4, 9}), b = random_float({9, 6});
  std::vector<int64_t> shape;
  const auto want = matmul_reference(a, b, &shape);
  const Tensor yd = run1(NodeCase("MatMul", 13, {to_double(a), to_double(b)}));
  CHECK(yd.dtype() == DataType::kDouble);
  check_near(yd, want, 1e-12);
  // float16 in, float16 out: compare against the product of the rounded inputs.
  const Tensor ah = to_half(a), bh = to_half(b);
  Tensor ar(DataType::kFloat, a.shape()), br(DataType::kFloat, b.shape());
  for (int64_t i = 0; i < a.size(); ++i) ar.mutable_data<float>()[i] = runner::half_to_float(ah.data<uint16_t>()[i]);
  for (int64_t i = 0; i < b.size(); ++i) br.mutable_data<float>()[i] = runner::half_to_float(bh.data<uint16_t>()[i]);
  const Tensor yh = run1(NodeCase("MatMul", 13, {ah, bh}));
  CHECK(yh.dtype() == DataType::kFloat16);
  check_near(yh, matmul_reference(ar, br, &shape), 2e-3);

  const Tensor ia = random_ints(DataType::kInt32, {2, 5, 7}, -50, 50);
  const Tensor ib = random_ints(DataType::kInt32, {7, 3}, -50, 50);
  const Tensor yi = run1(NodeCase("MatMul", 13, {ia, ib}));
  REQUIRE(yi.shape() == std::vector<int64_t>{2, 5, 3});
  for (int64_t bi = 0; bi < 2; ++bi)
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        int32_t acc = 0;
        for (int64_t p = 0; p < 7; ++p) acc += ia.data<int32_t>()[bi * 35 + i * 7 + p] * ib.data<int32_t>()[p * 3 + j];
        CHECK(yi.data<int32_t>()[bi * 15 + i * 3 + j] == acc);
      }
  const Tensor ua = random_ints(DataType::kUInt64, {4, 6}, 0, 1000);
  const Tensor ub = random_ints(DataType::kUInt64, {6}, 0, 1000);
  const Tensor yu = run1(NodeCase("MatMul", 13, {ua, ub}));
  REQUIRE(yu.shape() == std::vector<int64_t>{4});
  for (int64_t i = 0; i < 4; ++i) {
    uint64_t acc = 0;
    for (int64_t p = 0; p < 6; ++p) acc += ua.data<uint64_t>()[i * 6 + p] * ub.data<uint64_t>()[p];
    CHECK(yu.data<uint64_t>()[i] == acc);
  }
}

TEST_CASE("MatMul with an empty inner dimension gives zeros") {
  const Tensor y = run1(NodeCase("MatMul", 13, {Tensor(DataType::kFloat, {3, 0}), Tensor(DataType::kFloat, {0, 4})}));
  REQUIRE(y.shape() == std::vector<int64_t>{3, 4});
  for (int64_t i = 0; i < y.size(); ++i) CHECK(y.data<float>()[i] == 0.0f);
}

TEST_CASE("MatMul rejects mismatched operands") {
  check_fails(NodeCase("MatMul", 13, {random_float({3, 4}), random_float({5, 2})}), "inner dims");
  check_fails(NodeCase("MatMul", 13, {random_float({2, 3, 4}), random_float({3, 4, 2})}), "broadcast");
  check_fails(NodeCase("MatMul", 13, {random_float({3, 4}), to_double(random_float({4, 2}))}), "different types");
}

// ---------------------------------------------------------------- Gemm

std::vector<double> gemm_reference(const Tensor& a, const Tensor& b, const Tensor* c, bool ta, bool tb, double alpha,
                                   double beta) {
  const int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1), n = tb ? b.dim(0) : b.dim(1);
  const auto pa = as_doubles(a), pb = as_doubles(b);
  std::vector<double> out;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p)
        acc += pa[static_cast<size_t>(ta ? p * m + i : i * k + p)] * pb[static_cast<size_t>(tb ? j * k + p : p * n + j)];
      double v = alpha * acc;
      if (c) {
        const auto& s = c->shape();
        const int64_t rows = s.size() == 2 ? s[0] : 1, cols = s.empty() ? 1 : s.back();
        v += beta * c->data<float>()[(rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j)];
      }
      out.push_back(v);
    }
  return out;
}

TEST_CASE("Gemm: transposes, alpha, beta and every broadcast form of C") {
  const int64_t m = 7, k = 11, n = 5;
  const std::vector<std::vector<int64_t>> c_shapes{{m, n}, {n}, {1, n}, {m, 1}, {}, {1}};
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (const auto& cs : c_shapes) {
        CAPTURE(ta);
        CAPTURE(tb);
        CAPTURE(cs.size());
        const Tensor a = random_float(ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k});
        const Tensor b = random_float(tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n});
        const Tensor c = random_float(cs);
        const Tensor y = run1(NodeCase("Gemm", 13, {a, b, c},
                                       {attr_int("transA", ta), attr_int("transB", tb), attr_float("alpha", 0.5f),
                                        attr_float("beta", -1.5f)}));
        CHECK(y.shape() == std::vector<int64_t>{m, n});
        check_near(y, gemm_reference(a, b, &c, ta, tb, 0.5, -1.5), 1e-5);
      }
}

TEST_CASE("Gemm by a transposed B of many rows: a few rows of A, as C^T = B A^T in register tiles") {
  // A classifier's shape (m rows of A against n >= 64 rows of B), with column tails of one, two
  // and three vectors (m = 13, 37, 61) and an m of more than one tile; any thread count gives
  // the same bytes (run1 checks).
  for (int64_t m : {4, 13, 37, 61, 100}) {
    CAPTURE(m);
    const int64_t k = 70, n = 150;
    const Tensor a = random_float({m, k}), b = random_float({n, k}), c = random_float({n});
    const Tensor y = run1(NodeCase("Gemm", 13, {a, b, c}, {attr_int("transB", 1)}));
    check_near(y, gemm_reference(a, b, &c, false, true, 1.0, 1.0), 1e-5);
  }
}

TEST_CASE("Gemm: C omitted (opset 11+), opset 6 broadcast attribute, double and int32") {
  const Tensor a = random_float({4, 9}), b = random_float({9, 3});
  check_near(run1(NodeCase("Gemm", 11, {a, b})), gemm_reference(a, b, nullptr, false, false, 1, 1), 1e-5);
  const Tensor c = random_float({3});
  check_near(run1(NodeCase("Gemm", 6, {a, b, c}, {attr_int("broadcast", 1)})), gemm_reference(a, b, &c, false, false, 1, 1), 1e-5);
  check_near(run1(NodeCase("Gemm", 13, {to_double(a), to_double(b), to_double(c)}, {attr_float("alpha", 2.0f)})),
             gemm_reference(a, b, &c, false, false, 2, 1), 1e-12);
  const Tensor ia = random_ints(DataType::kInt32, {3, 4}, -9, 9);
  const Tensor ib = random_ints(DataType::kInt32, {4, 2}, -9, 9);
  const Tensor ic = random_ints(DataType::kInt32, {2}, -9, 9);
  const Tensor y = run1(NodeCase("Gemm", 13, {ia, ib, ic}, {attr_float("alpha", 2.0f), attr_float("beta", 3.0f)}));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j) {
      int32_t acc = 0;
      for (int64_t p = 0; p < 4; ++p) acc += ia.data<int32_t>()[i * 4 + p] * ib.data<int32_t>()[p * 2 + j];
      CHECK(y.data<int32_t>()[i * 2 + j] == 2 * acc + 3 * ic.data<int32_t>()[j]);
    }
}

TEST_CASE("Gemm rejects bad shapes") {
  check_fails(NodeCase("Gemm", 13, {random_float({3, 4}), random_float({5, 2})}), "inner dims");
  check_fails(NodeCase("Gemm", 13, {random_float({3, 4}), random_float({4, 2}), random_float({3, 3})}), "broadcast");
  check_fails(NodeCase("Gemm", 13, {random_float({2, 3, 4}), random_float({4, 2})}), "2-D");
}

// ---------------------------------------------------------------- Conv references

struct ConvSpec {
  std::vector<int64_t> stride, dilation, pad_begin, pad_end;
  int64_t group = 1;
};

/// Where window position `at` (an output position; an input position for ConvTranspose) meets
/// kernel position `k` in a tensor of spatial dims `dims`: its flat offset, or -1 in the padding.
int64_t window_offset(const std::vector<int64_t>& at, const std::vector<int64_t>& k, const ConvSpec& s,
                      const std::vector<int64_t>& dims) {
  int64_t off = 0;
  for (size_t d = 0; d < dims.size(); ++d) {
    const int64_t pos = at[d] * s.stride[d] - s.pad_begin[d] + k[d] * s.dilation[d];
    if (pos < 0 || pos >= dims[d]) return -1;
    off = off * dims[d] + pos;
  }
  return off;
}

/// Direct N-D convolution in double: Y[n, m, o...] = B[m] + sum over c in m's group and k of
/// X[n, c, o*s - p + k*d] * W[m, c, k].
std::vector<double> conv_reference(const Tensor& x, const Tensor& w, const Tensor* b, const ConvSpec& s,
                                   std::vector<int64_t>* out_shape) {
  const size_t rank = x.rank() - 2;
  const int64_t nb = x.dim(0), c = x.dim(1), m = w.dim(0), cg = c / s.group, mg = m / s.group;
  std::vector<int64_t> in(x.shape().begin() + 2, x.shape().end()), ker(w.shape().begin() + 2, w.shape().end()), out(rank);
  for (size_t d = 0; d < rank; ++d)
    out[d] = (in[d] + s.pad_begin[d] + s.pad_end[d] - ((ker[d] - 1) * s.dilation[d] + 1)) / s.stride[d] + 1;
  *out_shape = {nb, m};
  out_shape->insert(out_shape->end(), out.begin(), out.end());
  const auto px = as_doubles(x), pw = as_doubles(w);
  std::vector<double> y;
  const int64_t osize = count(out), ksize = count(ker), isize = count(in);
  for (int64_t n = 0; n < nb; ++n)
    for (int64_t mo = 0; mo < m; ++mo)
      for (int64_t o = 0; o < osize; ++o) {
        const auto oi = unravel(o, out);
        double acc = b ? b->data<float>()[mo] : 0.0;
        const int64_t g = mo / mg;
        for (int64_t ci = 0; ci < cg; ++ci)
          for (int64_t kk = 0; kk < ksize; ++kk) {
            const int64_t off = window_offset(oi, unravel(kk, ker), s, in);
            if (off < 0) continue;
            acc += px[static_cast<size_t>((n * c + g * cg + ci) * isize + off)] *
                   pw[static_cast<size_t>((mo * cg + ci) * ksize + kk)];
          }
        y.push_back(acc);
      }
  return y;
}

std::vector<Attr> conv_attrs(const ConvSpec& s) {
  std::vector<int64_t> pads = s.pad_begin;
  pads.insert(pads.end(), s.pad_end.begin(), s.pad_end.end());
  return {attr_ints("strides", s.stride), attr_ints("dilations", s.dilation), attr_ints("pads", pads),
          attr_int("group", s.group)};
}

void check_conv(const std::vector<int64_t>& xs, const std::vector<int64_t>& ws, const ConvSpec& s, bool bias) {
  const Tensor x = random_float(xs), w = random_float(ws), b = random_float({ws[0]});
  std::vector<int64_t> shape;
  const auto want = conv_reference(x, w, bias ? &b : nullptr, s, &shape);
  std::vector<Tensor> ins{x, w};
  if (bias) ins.push_back(b);
  for (int64_t opset : {1, 11, 22}) {
    const Tensor y = run1(NodeCase("Conv", opset, ins, conv_attrs(s)));
    CHECK(y.shape() == shape);
    check_near(y, want, 1e-5);
  }
}

TEST_CASE("Conv depthwise: an infinite weight never meets the zeros around the input") {
  const ConvSpec same{{1, 1}, {1, 1}, {1, 1}, {1, 1}, 2};
  const Tensor b = random_float({2});
  // An infinite weight at the top-left tap: the outputs whose top-left tap falls outside the
  // input (row 0 and column 0) take no product of it and stay finite (0 * inf would be NaN).
  const Tensor xr = random_float({1, 2, 12, 40});
  Tensor wi = random_float({2, 1, 3, 3});
  wi.mutable_data<float>()[0] = std::numeric_limits<float>::infinity();
  const Tensor yi = run1(NodeCase("Conv", 11, {xr, wi, b}, conv_attrs(same)));
  const float* out = yi.data<float>();
  for (int64_t col = 0; col < 40; ++col) CHECK(std::isfinite(out[col]));
  for (int64_t row = 0; row < 12; ++row) CHECK(std::isfinite(out[row * 40]));
  CHECK(std::isinf(out[41]));
  // The other channel has finite weights: all finite.
  for (int64_t i = 12 * 40; i < 2 * 12 * 40; ++i) CHECK(std::isfinite(out[i]));
}

TEST_CASE("Conv 2-D: general, strided, dilated, padded, grouped, 1x1 and depthwise") {
  check_conv({1, 3, 9, 11}, {5, 3, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}}, true);
  check_conv({2, 3, 13, 7}, {4, 3, 3, 2}, {{2, 3}, {1, 1}, {0, 1}, {2, 0}}, false);
  check_conv({1, 2, 11, 12}, {3, 2, 3, 3}, {{1, 2}, {2, 3}, {2, 1}, {1, 2}}, true);
  check_conv({2, 6, 8, 9}, {9, 2, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}, 3}, true);  // 3 groups
  check_conv({1, 7, 13, 5}, {11, 7, 1, 1}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}}, true);   // pointwise
  check_conv({1, 7, 13, 5}, {11, 7, 1, 1}, {{2, 1}, {1, 1}, {0, 1}, {1, 0}}, false);  // strided 1x1
  check_conv({2, 5, 17, 19}, {5, 1, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}, 5}, true);  // depthwise
  check_conv({1, 4, 16, 15}, {4, 1, 5, 5}, {{2, 2}, {1, 1}, {2, 2}, {2, 2}, 4}, false);
  check_conv({1, 3, 9, 10}, {6, 1, 3, 3}, {{1, 2}, {2, 1}, {0, 3}, {1, 0}, 3}, true);   // multiplier 2
  // Depthwise with strided columns (each input row split into phases; rows of 70 and 67 take
  // the vector split of stride 2 and its scalar tail), dilated, multiplier 2.
  check_conv({1, 3, 20, 70}, {3, 1, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, {1, 1}, 3}, true);
  check_conv({1, 2, 15, 50}, {2, 1, 3, 3}, {{3, 3}, {2, 2}, {2, 1}, {1, 2}, 2}, false);
  check_conv({1, 2, 9, 67}, {4, 1, 3, 3}, {{1, 4}, {1, 1}, {0, 1}, {0, 1}, 2}, true);
  // Short rows of stride 1 (whole rows in registers): dilated 5x5 with wide, uneven pads, and
  // a row stride of 2, at widths of one to four vectors.
  check_conv({1, 4, 12, 30}, {4, 1, 5, 5}, {{1, 1}, {2, 2}, {4, 3}, {4, 5}, 4}, true);
  check_conv({1, 3, 11, 5}, {3, 1, 3, 3}, {{2, 1}, {1, 1}, {1, 1}, {0, 1}, 3}, false);
  check_conv({1, 2, 6, 64}, {2, 1, 3, 7}, {{1, 1}, {1, 1}, {1, 3}, {1, 3}, 2}, true);
  check_conv({1, 1, 7, 7}, {3, 1, 2, 2}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}}, true);        // one channel
  // Rows of several register chunks (edge chunks masked, interior ones not), strides 1 and 2,
  // 7 wide with a multiplier of 2; 17 wide (the loop over taps).
  check_conv({1, 3, 6, 150}, {3, 1, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}, 3}, true);
  check_conv({1, 2, 8, 301}, {4, 1, 3, 7}, {{2, 2}, {1, 1}, {1, 3}, {1, 3}, 2}, false);
  check_conv({1, 2, 5, 90}, {2, 1, 1, 17}, {{1, 1}, {1, 1}, {0, 8}, {0, 8}, 2}, true);
  // Blocks of four output rows: 3 and 5 tap rows of stride 1 (each input row loaded once for
  // the rows that read it), 3 of stride 2 and 3 dilated (one tap row at a time), heights that
  // leave a remainder of rows, planes of one to four vectors and wider.
  check_conv({1, 4, 41, 40}, {4, 1, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}, 4}, true);
  check_conv({1, 3, 23, 20}, {3, 1, 5, 5}, {{1, 1}, {1, 1}, {2, 2}, {2, 2}, 3}, false);
  check_conv({1, 2, 37, 80}, {2, 1, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, {1, 1}, 2}, true);
  check_conv({1, 2, 30, 33}, {2, 1, 3, 3}, {{1, 1}, {2, 2}, {2, 2}, {2, 2}, 2}, true);
  check_conv({1, 2, 14, 200}, {4, 1, 5, 3}, {{1, 1}, {1, 1}, {2, 1}, {2, 1}, 2}, true);
  // Large enough that the product is split over threads.
  check_conv({1, 16, 67, 69}, {24, 16, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}}, true);
  // Few positions, many output channels (an STFT as a strided 1-D Conv): the threads share one
  // im2col and split the channels.
  check_conv({1, 1, 15712}, {257, 1, 256}, {{160}, {1}, {0}, {0}}, true);
  // Stride 2 along rows of 70 and 77 (im2col reads every other column two vectors at a time,
  // with pads and a dilation at the row ends).
  check_conv({1, 3, 20, 70}, {5, 3, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, {1, 1}}, true);
  check_conv({1, 2, 9, 77}, {3, 2, 3, 3}, {{1, 2}, {1, 2}, {0, 3}, {1, 0}}, false);
}

TEST_CASE("Conv's float product: every row count of a tile, column tails, any split gives the same bytes") {
  Rng rng(7);
  for (const auto& size : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 1, 1}, {3, 5, 47}, {8, 27, 48}, {9, 16, 49}, {16, 64, 96}, {17, 33, 150}, {7, 0, 20}, {24, 300, 200}}) {
    // (No structured bindings: clang 14 cannot capture them in CAPTURE's lambda.)
    const int64_t m = std::get<0>(size), k = std::get<1>(size), n = std::get<2>(size);
    CAPTURE(m);
    CAPTURE(k);
    CAPTURE(n);
    const Tensor wt = uniform_tensor(rng, {m, k}, -2, 2), bt = uniform_tensor(rng, {k, n}, -2, 2);
    const Tensor bias_t = uniform_tensor(rng, {m}, -2, 2);
    const float *w = wt.data<float>(), *b = bt.data<float>(), *bias = bias_t.data<float>();
    // The whole product in one call, with and without the bias.
    std::vector<float> whole(static_cast<size_t>(m * n)), plain(static_cast<size_t>(m * n));
    std::vector<int64_t> rows(static_cast<size_t>(k));
    for (int64_t p = 0; p < k; ++p) rows[size_t(p)] = p * n;
    runner::cpu::conv_gemm_f32(m, n, k, w, k, b, rows.data(), whole.data(), n, bias);
    runner::cpu::conv_gemm_f32(m, n, k, w, k, b, rows.data(), plain.data(), n, nullptr);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double want = 0;
        for (int64_t p = 0; p < k; ++p) want += double(w[size_t(i * k + p)]) * b[size_t(p * n + j)];
        CHECK(std::abs(plain[size_t(i * n + j)] - want) <= 1e-5 * (1.0 + 4.0 * double(k)));
        CHECK(whole[size_t(i * n + j)] == plain[size_t(i * n + j)] + bias[size_t(i)]);
      }
    // Rows and columns split at odd points (each block a call of its own, W, B and C offset):
    // every element is the same chain of multiply-adds, so the bytes are the same.
    std::vector<float> split(whole.size(), -1.0f);
    for (int64_t r0 = 0; r0 < m; r0 += 5)
      for (int64_t c0 = 0; c0 < n; c0 += 13) {
        const int64_t cols = std::min<int64_t>(13, n - c0);
        runner::cpu::conv_gemm_f32(std::min<int64_t>(5, m - r0), cols, k, w + r0 * k, k, b + c0, rows.data(),
                                   split.data() + r0 * n + c0, n, bias + r0);
      }
    CHECK(std::memcmp(split.data(), whole.data(), whole.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("Conv 1-D and 3-D") {
  check_conv({2, 3, 17}, {4, 3, 3}, {{1}, {1}, {1}, {1}}, true);
  check_conv({1, 4, 23}, {6, 2, 4}, {{3}, {2}, {2}, {0}, 2}, false);
  check_conv({1, 2, 5, 6, 7}, {3, 2, 3, 2, 3}, {{1, 1, 2}, {1, 2, 1}, {1, 0, 1}, {0, 1, 1}}, true);
  check_conv({1, 4, 5, 5, 5}, {4, 1, 3, 3, 3}, {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 4}, false);
}

TEST_CASE("Conv with more than 2048 output positions: im2col in blocks of positions") {
  // Blocks end mid-row, on strided, dilated and padded rows, in two images and two groups.
  check_conv({2, 6, 75, 64}, {4, 3, 3, 3}, {{1, 1}, {1, 2}, {1, 2}, {0, 1}, 2}, true);
  check_conv({1, 3, 5000}, {4, 3, 5}, {{2}, {1}, {2}, {1}}, true);
  check_conv({1, 2, 9, 17, 19}, {3, 2, 3, 3, 3}, {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}}, false);
}

TEST_CASE("Conv auto_pad, kernel_shape, double and float16") {
  const Tensor x = random_float({1, 2, 7, 8}), w = random_float({3, 2, 3, 4});
  std::vector<int64_t> shape;
  // SAME: output = ceil(in / stride), total pad split evenly, the odd one at the end (UPPER) or
  // the beginning (LOWER).
  // rows: out 4, total (4-1)*2+3-7 = 2 -> 1/1; cols: out 4, total (4-1)*2+4-8 = 2 -> 1/1.
  const ConvSpec same{{2, 2}, {1, 1}, {1, 1}, {1, 1}};
  const Tensor y = run1(NodeCase("Conv", 11, {x, w}, {attr_string("auto_pad", "SAME_UPPER"), attr_ints("strides", {2, 2}),
                                                      attr_ints("kernel_shape", {3, 4})}));
  check_near(y, conv_reference(x, w, nullptr, same, &shape), 1e-5);
  CHECK(y.shape() == shape);
  // stride 1: total rows 2 -> 1/1; total cols 3 -> UPPER 1/2, LOWER 2/1.
  const Tensor yu = run1(NodeCase("Conv", 11, {x, w}, {attr_string("auto_pad", "SAME_UPPER")}));
  check_near(yu, conv_reference(x, w, nullptr, {{1, 1}, {1, 1}, {1, 1}, {1, 2}}, &shape), 1e-5);
  CHECK(yu.shape() == std::vector<int64_t>{1, 3, 7, 8});
  const Tensor yl = run1(NodeCase("Conv", 11, {x, w}, {attr_string("auto_pad", "SAME_LOWER")}));
  check_near(yl, conv_reference(x, w, nullptr, {{1, 1}, {1, 1}, {1, 2}, {1, 1}}, &shape), 1e-5);
  const Tensor yv = run1(NodeCase("Conv", 22, {x, w}, {attr_string("auto_pad", "VALID"), attr_ints("pads", {0, 0, 0, 0})}));
  check_near(yv, conv_reference(x, w, nullptr, {{1, 1}, {1, 1}, {0, 0}, {0, 0}}, &shape), 1e-5);
  CHECK(yv.shape() == std::vector<int64_t>{1, 3, 5, 5});

  const ConvSpec plain{{1, 1}, {1, 1}, {1, 0}, {0, 1}};
  const Tensor b = random_float({3});
  const auto want = conv_reference(x, w, &b, plain, &shape);
  check_near(run1(NodeCase("Conv", 11, {to_double(x), to_double(w), to_double(b)}, conv_attrs(plain))), want, 1e-12);
  const Tensor yh = run1(NodeCase("Conv", 11, {to_half(x), to_half(w), to_half(b)}, conv_attrs(plain)));
  CHECK(yh.dtype() == DataType::kFloat16);
  check_near(yh, want, 2e-2);
}

TEST_CASE("Conv rejects bad inputs") {
  check_fails(NodeCase("Conv", 11, {random_float({1, 3, 5, 5}), random_float({4, 2, 3, 3})}), "channels");
  check_fails(NodeCase("Conv", 11, {random_float({1, 3, 2, 2}), random_float({4, 3, 3, 3})}), "larger");
  check_fails(NodeCase("Conv", 11, {random_float({1, 3, 5, 5}), random_float({4, 3, 3, 3}), random_float({3})}), "B must be");
  check_fails(NodeCase("Conv", 11, {random_float({1, 3, 5, 5}), random_float({4, 3, 3, 3})}, {attr_ints("strides", {1})}), "strides");
  check_fails(NodeCase("Conv", 11, {random_float({1, 3, 5, 5}), random_float({4, 3, 3, 3})}, {attr_string("auto_pad", "FULL")}),
              "auto_pad");
}

// ---------------------------------------------------------------- ConvTranspose

/// Direct transposed convolution in double: each X[n, c, i...] * W[c, m, k...] lands at
/// Y[n, g*mg + m, i*s - p + k*d], kept when inside the output of size `out`.
std::vector<double> conv_transpose_reference(const Tensor& x, const Tensor& w, const Tensor* b, const ConvSpec& s,
                                             const std::vector<int64_t>& out) {
  const int64_t nb = x.dim(0), c = x.dim(1), mg = w.dim(1), m = mg * s.group, cg = c / s.group;
  std::vector<int64_t> in(x.shape().begin() + 2, x.shape().end()), ker(w.shape().begin() + 2, w.shape().end());
  const int64_t osize = count(out), ksize = count(ker), isize = count(in);
  std::vector<double> y(static_cast<size_t>(nb * m * osize), 0.0);
  const auto px = as_doubles(x), pw = as_doubles(w);
  for (int64_t n = 0; n < nb; ++n)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t i = 0; i < isize; ++i) {
        const auto ii = unravel(i, in);
        const int64_t g = ci / cg;
        for (int64_t mo = 0; mo < mg; ++mo)
          for (int64_t kk = 0; kk < ksize; ++kk) {
            const int64_t off = window_offset(ii, unravel(kk, ker), s, out);
            if (off < 0) continue;
            y[static_cast<size_t>((n * m + g * mg + mo) * osize + off)] +=
                px[static_cast<size_t>((n * c + ci) * isize + i)] * pw[static_cast<size_t>((ci * mg + mo) * ksize + kk)];
          }
      }
  if (b)
    for (size_t i = 0; i < y.size(); ++i) y[i] += b->data<float>()[(static_cast<int64_t>(i) / osize) % m];
  return y;
}

/// The default output size: s*(i-1) + output_padding + (k-1)*d + 1 - pads.
std::vector<int64_t> transpose_out(const Tensor& x, const Tensor& w, const ConvSpec& s, const std::vector<int64_t>& out_pad) {
  std::vector<int64_t> out;
  for (size_t d = 0; d + 2 < x.rank(); ++d)
    out.push_back(s.stride[d] * (x.dim(d + 2) - 1) + out_pad[d] + (w.dim(d + 2) - 1) * s.dilation[d] + 1 - s.pad_begin[d] -
                  s.pad_end[d]);
  return out;
}

void check_conv_transpose(const std::vector<int64_t>& xs, const std::vector<int64_t>& ws, const ConvSpec& s,
                          const std::vector<int64_t>& out_pad, bool bias) {
  const Tensor x = random_float(xs), w = random_float(ws), b = random_float({ws[1] * s.group});
  const auto out = transpose_out(x, w, s, out_pad);
  std::vector<int64_t> shape{xs[0], ws[1] * s.group};
  shape.insert(shape.end(), out.begin(), out.end());
  auto attrs = conv_attrs(s);
  attrs.push_back(attr_ints("output_padding", out_pad));
  std::vector<Tensor> ins{x, w};
  if (bias) ins.push_back(b);
  const auto want = conv_transpose_reference(x, w, bias ? &b : nullptr, s, out);
  for (int64_t opset : {1, 11, 22}) {
    const Tensor y = run1(NodeCase("ConvTranspose", opset, ins, attrs));
    CHECK(y.shape() == shape);
    check_near(y, want, 1e-5);
  }
}

TEST_CASE("ConvTranspose 1-D, 2-D, 3-D: strides, pads, dilations, output_padding, groups") {
  check_conv_transpose({1, 3, 5, 6}, {3, 4, 3, 3}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}}, {0, 0}, true);
  check_conv_transpose({2, 2, 7, 5}, {2, 3, 3, 2}, {{2, 3}, {1, 1}, {1, 0}, {0, 1}}, {1, 2}, false);
  check_conv_transpose({1, 4, 6, 5}, {4, 2, 3, 3}, {{2, 2}, {2, 1}, {1, 1}, {2, 0}, 2}, {1, 0}, true);
  check_conv_transpose({1, 3, 11}, {3, 2, 4}, {{3}, {1}, {1}, {2}}, {2}, true);
  check_conv_transpose({1, 2, 3, 4, 3}, {2, 2, 2, 3, 2}, {{2, 1, 2}, {1, 2, 1}, {0, 1, 0}, {1, 0, 0}}, {1, 0, 1}, false);
  // The ConvTranspose of PaddleOCR det: 2x2 kernel, stride 2.
  check_conv_transpose({1, 24, 40, 40}, {24, 24, 2, 2}, {{2, 2}, {1, 1}, {0, 0}, {0, 0}}, {0, 0}, true);
}

TEST_CASE("ConvTranspose output_shape and auto_pad SAME") {
  const Tensor x = random_float({1, 2, 4, 5}), w = random_float({2, 3, 3, 3});
  // output_shape [9, 11] with stride 2: full size 2*3+3 = 9 rows (total pad 0), 2*4+3 = 11 cols.
  const Tensor y = run1(NodeCase("ConvTranspose", 11, {x, w}, {attr_ints("strides", {2, 2}), attr_ints("output_shape", {9, 11})}));
  CHECK(y.shape() == std::vector<int64_t>{1, 3, 9, 11});
  check_near(y, conv_transpose_reference(x, w, nullptr, {{2, 2}, {1, 1}, {0, 0}, {0, 0}}, {9, 11}), 1e-5);
  // output_shape [7, 8]: total pads 2 and 3, the larger half at the start (not SAME_UPPER).
  const Tensor y2 = run1(NodeCase("ConvTranspose", 11, {x, w}, {attr_ints("strides", {2, 2}), attr_ints("output_shape", {7, 8})}));
  CHECK(y2.shape() == std::vector<int64_t>{1, 3, 7, 8});
  check_near(y2, conv_transpose_reference(x, w, nullptr, {{2, 2}, {1, 1}, {1, 2}, {1, 1}}, {7, 8}), 1e-5);
  // SAME_UPPER: output = in * stride = [8, 10]; total pads 1 and 1 -> start 0, end 1.
  const Tensor y3 = run1(NodeCase("ConvTranspose", 22, {x, w}, {attr_ints("strides", {2, 2}), attr_string("auto_pad", "SAME_UPPER")}));
  CHECK(y3.shape() == std::vector<int64_t>{1, 3, 8, 10});
  check_near(y3, conv_transpose_reference(x, w, nullptr, {{2, 2}, {1, 1}, {0, 0}, {1, 1}}, {8, 10}), 1e-5);
  const Tensor y4 = run1(NodeCase("ConvTranspose", 22, {x, w}, {attr_ints("strides", {2, 2}), attr_string("auto_pad", "SAME_LOWER")}));
  check_near(y4, conv_transpose_reference(x, w, nullptr, {{2, 2}, {1, 1}, {1, 1}, {0, 0}}, {8, 10}), 1e-5);
}

TEST_CASE("ConvTranspose double and float16, and bad inputs") {
  const Tensor x = random_float({1, 2, 3, 4}), w = random_float({2, 2, 2, 3}), b = random_float({2});
  const ConvSpec s{{2, 1}, {1, 1}, {0, 1}, {0, 0}};
  const auto out = transpose_out(x, w, s, {0, 0});
  const auto want = conv_transpose_reference(x, w, &b, s, out);
  check_near(run1(NodeCase("ConvTranspose", 11, {to_double(x), to_double(w), to_double(b)}, conv_attrs(s))), want, 1e-12);
  check_near(run1(NodeCase("ConvTranspose", 11, {to_half(x), to_half(w), to_half(b)}, conv_attrs(s))), want, 2e-2);
  check_fails(NodeCase("ConvTranspose", 11, {random_float({1, 3, 4, 4}), random_float({2, 2, 3, 3})}), "channels");
  check_fails(NodeCase("ConvTranspose", 11, {random_float({1, 2, 4, 4}), random_float({2, 2, 3, 3}), random_float({5})}), "B must be");
}

// ---------------------------------------------------------------- Det

TEST_CASE("Det: 2x2, 3x3 with pivoting, batches, singular matrices") {
  const Tensor a = floats({3, 8, 4, 6}, {2, 2});
  check_near(run1(NodeCase("Det", 11, {a})), {3 * 6 - 8 * 4}, 1e-6);
  // Leading zero forces a row swap; the batch holds a singular matrix (rows 1 and 3 equal).
  const Tensor b = floats({0, 2, 1, 1, 1, 1, 3, 0, 4,  //
                           1, 2, 3, 4, 5, 6, 1, 2, 3},
                          {2, 3, 3});
  const Tensor y = run1(NodeCase("Det", 22, {b}));
  CHECK(y.shape() == std::vector<int64_t>{2});
  // 0*(1*4-1*0) - 2*(1*4-1*3) + 1*(1*0-1*3) = -5.
  check_near(y, {-5, 0}, 1e-6);
  const Tensor d = run1(NodeCase("Det", 11, {to_double(floats({2, 0, 0, 0, 3, 0, 0, 0, 4}, {1, 1, 3, 3}))}));
  CHECK(d.shape() == std::vector<int64_t>{1, 1});
  CHECK(d.data<double>()[0] == 24.0);
  check_fails(NodeCase("Det", 11, {random_float({2, 3})}), "n, n");
  check_fails(NodeCase("Det", 11, {random_float({3})}), "n, n");
}

// ---------------------------------------------------------------- integer products

TEST_CASE("MatMulInteger: uint8 x int8 with scalar and per-column zero points") {
  const int64_t m = 5, k = 9, n = 7;
  const Tensor a = random_ints(DataType::kUInt8, {2, m, k}, 0, 255);
  const Tensor b = random_ints(DataType::kInt8, {k, n}, -128, 127);
  const Tensor az = scalar_of<uint8_t>(DataType::kUInt8, 131);
  const Tensor bz = random_ints(DataType::kInt8, {n}, -5, 5);
  const Tensor y = run1(NodeCase("MatMulInteger", 10, {a, b, az, bz}));
  REQUIRE(y.dtype() == DataType::kInt32);
  REQUIRE(y.shape() == std::vector<int64_t>{2, m, n});
  for (int64_t bi = 0; bi < 2; ++bi)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int32_t acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += (a.data<uint8_t>()[(bi * m + i) * k + p] - 131) * (b.data<int8_t>()[p * n + j] - bz.data<int8_t>()[j]);
        CHECK(y.data<int32_t>()[(bi * m + i) * n + j] == acc);
      }
  // No zero points.
  const Tensor y0 = run1(NodeCase("MatMulInteger", 10, {a, b}));
  int32_t acc = 0;
  for (int64_t p = 0; p < k; ++p) acc += a.data<uint8_t>()[p] * b.data<int8_t>()[p * n];
  CHECK(y0.data<int32_t>()[0] == acc);
  check_fails(NodeCase("MatMulInteger", 10, {random_float({2, 2}), b}), "uint8 or int8");
  check_fails(NodeCase("MatMulInteger", 10, {a, b, az, random_ints(DataType::kInt8, {3}, 0, 1)}), "zero point");
}

TEST_CASE("ConvInteger: zero points, padding and groups") {
  const Tensor x = random_ints(DataType::kUInt8, {1, 4, 6, 7}, 0, 255);
  const Tensor w = random_ints(DataType::kUInt8, {6, 2, 3, 3}, 0, 255);
  const ConvSpec s{{1, 2}, {1, 1}, {1, 0}, {1, 2}, 2};
  // Reference through the float reference on zero-point-shifted values (all exact in double).
  Tensor xf(DataType::kFloat, x.shape()), wf(DataType::kFloat, w.shape());
  for (int64_t i = 0; i < x.size(); ++i) xf.mutable_data<float>()[i] = static_cast<float>(x.data<uint8_t>()[i] - 100);
  for (int64_t i = 0; i < w.size(); ++i) wf.mutable_data<float>()[i] = static_cast<float>(w.data<uint8_t>()[i] - 7);
  std::vector<int64_t> shape;
  const auto want = conv_reference(xf, wf, nullptr, s, &shape);
  auto attrs = conv_attrs(s);
  const Tensor y = run1(NodeCase("ConvInteger", 10,
                                 {x, w, scalar_of<uint8_t>(DataType::kUInt8, 100), scalar_of<uint8_t>(DataType::kUInt8, 7)}, attrs));
  REQUIRE(y.dtype() == DataType::kInt32);
  REQUIRE(y.shape() == shape);
  for (int64_t i = 0; i < y.size(); ++i) CHECK(y.data<int32_t>()[i] == static_cast<int32_t>(want[static_cast<size_t>(i)]));
  check_fails(NodeCase("ConvInteger", 10, {x, random_float({6, 2, 3, 3})}, attrs), "uint8 or int8");
}

/// The integer GEMM's contract, summed plainly: sum_k (A[i,k] - za[i]) * (B[k,j] - zb[j]) modulo 2^32.
std::vector<int32_t> int_gemm_reference(int64_t m, int64_t n, int64_t k, const std::vector<int32_t>& a,
                                        const std::vector<int32_t>& za, const std::vector<int32_t>& b,
                                        const std::vector<int32_t>& zb) {
  std::vector<int32_t> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      uint32_t acc = 0;
      for (int64_t p = 0; p < k; ++p)
        acc += static_cast<uint32_t>((a[static_cast<size_t>(i * k + p)] - za[static_cast<size_t>(i)]) *
                                     (b[static_cast<size_t>(p * n + j)] - zb[static_cast<size_t>(j)]));
      c[static_cast<size_t>(i * n + j)] = static_cast<int32_t>(acc);
    }
  return c;
}

TEST_CASE("Integer GEMM: odd sizes, uint8/int8 operands, per-row and per-column zero points") {
  using runner::cpu::Int8Matrix;
  std::uniform_int_distribution<int> byte(0, 255);
  const std::vector<int64_t> sizes{1, 3, 17, 33, 100, 130};
  int cases = 0;
  for (int64_t m : sizes)
    for (int64_t n : sizes)
      for (int64_t k : {int64_t{1}, int64_t{3}, int64_t{17}, int64_t{33}, int64_t{100}, int64_t{1100}}) {
        if (m * n * k > 2'000'000) continue;
        const bool as = (m + n + k) % 2 == 1, bs = (m + 2 * n + k) % 3 != 0;
        CAPTURE(m);
        CAPTURE(n);
        CAPTURE(k);
        CAPTURE(as);
        CAPTURE(bs);
        std::vector<uint8_t> ab(static_cast<size_t>(m * k)), bb(static_cast<size_t>(k * n));
        std::vector<int32_t> a(ab.size()), b(bb.size()), za(static_cast<size_t>(m)), zb(static_cast<size_t>(n));
        const auto value = [](uint8_t v, bool is_signed) { return is_signed ? static_cast<int32_t>(static_cast<int8_t>(v)) : int32_t{v}; };
        for (size_t i = 0; i < ab.size(); ++i) a[i] = value(ab[i] = static_cast<uint8_t>(byte(rng())), as);
        for (size_t i = 0; i < bb.size(); ++i) b[i] = value(bb[i] = static_cast<uint8_t>(byte(rng())), bs);
        for (auto& z : za) z = value(static_cast<uint8_t>(byte(rng())), as);
        for (auto& z : zb) z = value(static_cast<uint8_t>(byte(rng())), bs);
        // Extreme values in a corner: |A - za| = |B - zb| = 255 along a whole row and column.
        if (as == bs) {
          for (int64_t p = 0; p < k; ++p) {
            a[static_cast<size_t>(p)] = value(ab[static_cast<size_t>(p)] = as ? 0x80 : 0, as);
            b[static_cast<size_t>(p * n)] = value(bb[static_cast<size_t>(p * n)] = as ? 0x80 : 0, bs);
          }
          za[0] = zb[0] = as ? 127 : 255;
        }
        const auto want = int_gemm_reference(m, n, k, a, za, b, zb);
        const int64_t ldc = n + 3;
        std::vector<int32_t> c(static_cast<size_t>(m * ldc), 77);
        runner::cpu::int_gemm(m, n, k, Int8Matrix{ab.data(), as, k}, za.data(), Int8Matrix{bb.data(), bs, n}, zb.data(), c.data(), ldc);
        int wrong = 0;
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) wrong += c[static_cast<size_t>(i * ldc + j)] != want[static_cast<size_t>(i * n + j)];
          for (int64_t j = n; j < ldc; ++j) wrong += c[static_cast<size_t>(i * ldc + j)] != 77;  // untouched
        }
        CHECK(wrong == 0);
        // The packed entry points (as the convolutions use them) give the same sums.
        if (m <= 33) {
          std::vector<int16_t> pa(static_cast<size_t>(m * runner::cpu::int_gemm_a_stride(k)));
          std::vector<int16_t> pb(static_cast<size_t>(runner::cpu::int_gemm_packed_b_size(k, n)));
          runner::cpu::int_gemm_pack_a(m, k, Int8Matrix{ab.data(), as, k}, za.data(), pa.data());
          runner::cpu::int_gemm_pack_b(k, n, Int8Matrix{bb.data(), bs, n}, zb.data(), pb.data());
          std::vector<int32_t> cp(static_cast<size_t>(m * n));
          runner::cpu::int_gemm_packed(m, n, k, pa.data(), pb.data(), cp.data(), n);
          CHECK(cp == want);
        }
        ++cases;
      }
  CHECK(cases > 150);
}

TEST_CASE("MatMulInteger: batch broadcasting both ways, int8 x uint8, per-row A zero point") {
  // A broadcast over B's batches (one GEMM per batch) and B shared by A's batches (one merged GEMM).
  for (const auto& [sa, sb] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{17, 33}, {3, 33, 19}}, {{2, 3, 17, 33}, {33, 19}}, {{3, 1, 5, 40}, {1, 2, 40, 35}}}) {
    const Tensor a = random_ints(DataType::kInt8, sa, -128, 127);
    const Tensor b = random_ints(DataType::kUInt8, sb, 0, 255);
    const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
    const Tensor az = random_ints(DataType::kInt8, {m}, -128, 127);
    const Tensor bz = random_ints(DataType::kUInt8, {n}, 0, 255);
    Tensor af(DataType::kFloat, sa), bf(DataType::kFloat, sb);
    for (int64_t i = 0; i < a.size(); ++i) af.mutable_data<float>()[i] = a.data<int8_t>()[i] - az.data<int8_t>()[i / k % m];
    for (int64_t i = 0; i < b.size(); ++i) bf.mutable_data<float>()[i] = b.data<uint8_t>()[i] - bz.data<uint8_t>()[i % n];
    std::vector<int64_t> shape;
    const auto want = matmul_reference(af, bf, &shape);  // exact: integer sums far below 2^24 per term, in double
    const Tensor y = run1(NodeCase("MatMulInteger", 10, {a, b, az, bz}));
    REQUIRE(y.shape() == shape);
    int wrong = 0;
    for (int64_t i = 0; i < y.size(); ++i) wrong += y.data<int32_t>()[i] != static_cast<int32_t>(want[static_cast<size_t>(i)]);
    CHECK(wrong == 0);
  }
  check_fails(NodeCase("MatMulInteger", 10, {random_ints(DataType::kUInt8, {2, 3}, 0, 255),
                                             random_ints(DataType::kUInt8, {3, 2}, 0, 255), ints({1})}),
              "zero point must be uint8 or int8");
}

/// ConvInteger against the double reference on zero-point-shifted values (exact), x scalar zero
/// point, w per output channel.
template <class TX, class TW>
void check_conv_integer(const std::vector<int64_t>& xs, const std::vector<int64_t>& ws, const ConvSpec& s) {
  const DataType tx = std::is_signed_v<TX> ? DataType::kInt8 : DataType::kUInt8;
  const DataType tw = std::is_signed_v<TW> ? DataType::kInt8 : DataType::kUInt8;
  const int64_t xlo = std::is_signed_v<TX> ? -128 : 0, wlo = std::is_signed_v<TW> ? -128 : 0;
  const Tensor x = random_ints(tx, xs, xlo, xlo + 255), w = random_ints(tw, ws, wlo, wlo + 255);
  const Tensor xz = scalar_of<TX>(tx, static_cast<TX>(xlo + 77));
  const Tensor wz = random_ints(tw, {ws[0]}, wlo, wlo + 255);
  const int64_t per_m = w.size() / ws[0];
  Tensor xf(DataType::kFloat, xs), wf(DataType::kFloat, ws);
  for (int64_t i = 0; i < x.size(); ++i) xf.mutable_data<float>()[i] = static_cast<float>(x.data<TX>()[i] - (xlo + 77));
  for (int64_t i = 0; i < w.size(); ++i) wf.mutable_data<float>()[i] = static_cast<float>(w.data<TW>()[i] - wz.data<TW>()[i / per_m]);
  std::vector<int64_t> shape;
  const auto want = conv_reference(xf, wf, nullptr, s, &shape);
  const Tensor y = run1(NodeCase("ConvInteger", 10, {x, w, xz, wz}, conv_attrs(s)));
  REQUIRE(y.shape() == shape);
  int wrong = 0;
  for (int64_t i = 0; i < y.size(); ++i) wrong += y.data<int32_t>()[i] != static_cast<int32_t>(want[static_cast<size_t>(i)]);
  CHECK(wrong == 0);
}

TEST_CASE("ConvInteger: strides, dilations, padding, groups, depthwise, 1x1, 1-D and 3-D, many tiles") {
  check_conv_integer<uint8_t, uint8_t>({2, 6, 11, 13}, {9, 2, 3, 3}, {{2, 1}, {1, 2}, {1, 2}, {2, 0}, 3});
  check_conv_integer<int8_t, uint8_t>({1, 5, 9, 8}, {7, 5, 2, 3}, {{1, 3}, {2, 1}, {0, 1}, {1, 1}});
  check_conv_integer<uint8_t, int8_t>({1, 4, 10, 9}, {4, 1, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}, 4});  // depthwise
  check_conv_integer<int8_t, int8_t>({2, 7, 13, 5}, {11, 7, 1, 1}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}});    // pointwise
  check_conv_integer<uint8_t, uint8_t>({1, 3, 23}, {5, 3, 4}, {{2}, {3}, {3}, {1}});                    // 1-D
  check_conv_integer<uint8_t, int8_t>({1, 2, 5, 6, 4}, {3, 2, 2, 3, 2}, {{1, 2, 1}, {2, 1, 1}, {1, 1, 0}, {0, 1, 1}});
  // Deep enough for several output tiles and weight register tiles, with odd channel counts.
  check_conv_integer<uint8_t, uint8_t>({1, 67, 19, 23}, {21, 67, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}});
  check_conv_integer<uint8_t, uint8_t>({1, 130, 37, 41}, {19, 130, 1, 1}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}});
}

/// A QDQ model's Conv: DequantizeLinear(x) and DequantizeLinear(constant w, per output channel)
/// into a float Conv (and a Relu after it), which the session runs as an integer convolution.
/// Checked against the double convolution of the dequantized tensors, with 1 and 3 threads
/// giving the same bytes, and the profile naming the integer kernel.
template <class TX, class TW>
void check_qdq_conv(const std::vector<int64_t>& xs, const std::vector<int64_t>& ws, const ConvSpec& s, bool relu,
                    bool dequantized_output) {
  const DataType tx = std::is_signed_v<TX> ? DataType::kInt8 : DataType::kUInt8;
  const DataType tw = std::is_signed_v<TW> ? DataType::kInt8 : DataType::kUInt8;
  const int64_t xlo = std::is_signed_v<TX> ? -128 : 0, wlo = std::is_signed_v<TW> ? -128 : 0, m = ws[0];
  const Tensor x = random_ints(tx, xs, xlo, xlo + 255), w = random_ints(tw, ws, wlo, wlo + 255);
  const Tensor xz = scalar_of<TX>(tx, static_cast<TX>(xlo + 93));
  const Tensor wz = random_ints(tw, {m}, wlo + 100, wlo + 155);
  const Tensor xscale = scalar_float(0.0371f), b = random_float({m});
  Tensor wscale(DataType::kFloat, {m});
  for (int64_t i = 0; i < m; ++i) wscale.mutable_data<float>()[i] = 0.002f * static_cast<float>(i + 3);
  // The dequantized tensors as DequantizeLinear computes them (float), then the reference.
  const int64_t per_m = w.size() / m;
  Tensor xf(DataType::kFloat, xs), wf(DataType::kFloat, ws);
  for (int64_t i = 0; i < x.size(); ++i) xf.mutable_data<float>()[i] = static_cast<float>(x.data<TX>()[i] - (xlo + 93)) * 0.0371f;
  for (int64_t i = 0; i < w.size(); ++i)
    wf.mutable_data<float>()[i] = static_cast<float>(w.data<TW>()[i] - wz.data<TW>()[i / per_m]) * wscale.data<float>()[i / per_m];
  std::vector<int64_t> shape;
  auto want = conv_reference(xf, wf, &b, s, &shape);
  if (relu)
    for (double& v : want) v = std::max(v, 0.0);

  ir::Model model = empty_model(13);
  ir::Graph& g = *model.graph;
  const auto init = [&](const std::string& name, const Tensor& t) {
    return g.add_initializer(ir::make_tensor(name, t.dtype(), t.shape(), t.raw(), t.bytes()));
  };
  ir::Shape xshape;
  for (int64_t d : xs) xshape.dims.push_back(ir::Dim::of(d));
  ir::Value* xq = g.add_input("xq", ir::TypeInfo::tensor(tx, xshape)).value;
  ir::Node* dx = g.add_node("DequantizeLinear", {xq, init("xs", xscale), init("xz", xz)}, {"x"});
  ir::Node* dw = g.add_node("DequantizeLinear", {init("wq", w), init("wscale", wscale), init("wz", wz)}, {"w"});
  dw->set_attr(ir::Attribute::make_int("axis", 0));
  ir::Node* conv = g.add_node("Conv", {dx->output(0), dw->output(0), init("b", b)}, {"c"}, "", "conv");
  for (const Attr& a : conv_attrs(s)) conv->set_attr(a.make());
  ir::Value* y = conv->output(0);
  if (relu) y = g.add_node("Relu", {y}, {"y"})->output(0);
  g.add_output(y, std::nullopt);
  if (dequantized_output) g.add_output(dx->output(0), std::nullopt);
  std::map<std::string, Value> feeds{{"xq", Value::of(x)}};
  std::vector<std::vector<uint8_t>> bytes;
  for (int threads : {1, 3}) {
    runner::SessionOptions o;
    o.threads = threads;
    runner::Session session(model, o);
    runner::Profiler profiler;
    session.set_profiler(&profiler);
    const auto out = session.run(feeds);
    REQUIRE(out[0].tensor.shape() == shape);
    check_near(out[0].tensor, want, 1e-6);
    const auto* p = static_cast<const uint8_t*>(out[0].tensor.raw());
    bytes.emplace_back(p, p + out[0].tensor.bytes());
    std::string ran;
    for (const auto& e : profiler.events()) ran += e.op_type + ";";
    CHECK(ran == std::string(relu ? "Conv(int8)+Relu;" : "Conv(int8);").insert(0, dequantized_output ? "DequantizeLinear;" : ""));
    if (dequantized_output) check_same(out[1].tensor, xf);
  }
  CHECK(bytes[0] == bytes[1]);
}

TEST_CASE("QDQ Conv: DequantizeLinear -> Conv runs as an integer convolution of the quantized tensors") {
  check_qdq_conv<uint8_t, int8_t>({1, 6, 11, 13}, {8, 6, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}}, true, false);
  check_qdq_conv<int8_t, int8_t>({2, 6, 11, 13}, {9, 2, 3, 3}, {{2, 1}, {1, 2}, {1, 2}, {2, 0}, 3}, false, false);
  check_qdq_conv<uint8_t, uint8_t>({1, 4, 10, 9}, {4, 1, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, {1, 1}, 4}, true, true);  // depthwise
  check_qdq_conv<int8_t, uint8_t>({1, 70, 19, 23}, {21, 70, 1, 1}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}}, false, true);  // pointwise
  check_qdq_conv<uint8_t, int8_t>({1, 3, 23}, {5, 3, 4}, {{2}, {3}, {3}, {1}}, true, false);  // 1-D
}

/// Requantization as the spec defines it: round half to even, add the zero point, saturate.
int32_t requantize(double real, double y_scale, int32_t y_zero, int32_t lo, int32_t hi) {
  const double v = std::nearbyint(real / y_scale) + y_zero;
  return static_cast<int32_t>(std::min<double>(hi, std::max<double>(lo, v)));
}

TEST_CASE("QLinearMatMul: uint8 and int8, per-tensor and per-column, saturation") {
  const int64_t m = 4, k = 6, n = 5;
  for (int opset : {10, 21}) {
    CAPTURE(opset);
    const Tensor a = random_ints(DataType::kUInt8, {m, k}, 0, 255);
    const Tensor b = random_ints(DataType::kUInt8, {k, n}, 0, 255);
    const float sa = 0.02f, sy = 0.5f;
    Tensor sb(DataType::kFloat, {n});
    Tensor zb(DataType::kUInt8, {n});
    for (int64_t j = 0; j < n; ++j) {
      sb.mutable_data<float>()[j] = 0.01f * static_cast<float>(j + 1);
      zb.mutable_data<uint8_t>()[j] = static_cast<uint8_t>(120 + j);
    }
    const Tensor y = run1(NodeCase("QLinearMatMul", opset,
                                   {a, scalar_float(sa), scalar_of<uint8_t>(DataType::kUInt8, 128), b, sb, zb, scalar_float(sy),
                                    scalar_of<uint8_t>(DataType::kUInt8, 10)}));
    REQUIRE(y.dtype() == DataType::kUInt8);
    int saturated = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int32_t acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += (a.data<uint8_t>()[i * k + p] - 128) * (b.data<uint8_t>()[p * n + j] - zb.data<uint8_t>()[j]);
        const double real = static_cast<double>(acc) * sa * sb.data<float>()[j];
        const int32_t want = requantize(real, sy, 10, 0, 255);
        saturated += want == 0 || want == 255;
        CHECK(y.data<uint8_t>()[i * n + j] == want);
      }
    CHECK(saturated > 0);
  }
  // int8 with a half-way value: acc 5 * 1 * 1 / 2 = 2.5 rounds to 2, -2.5 to -2 (half to even).
  Tensor a8(DataType::kInt8, {1, 2}), b8(DataType::kInt8, {2, 1});
  a8.mutable_data<int8_t>()[0] = 2;
  a8.mutable_data<int8_t>()[1] = 3;
  b8.mutable_data<int8_t>()[0] = 1;
  b8.mutable_data<int8_t>()[1] = 1;
  const auto i8 = [](int8_t v) { return scalar_of<int8_t>(DataType::kInt8, v); };
  const Tensor y8 = run1(NodeCase("QLinearMatMul", 10, {a8, scalar_float(1), i8(0), b8, scalar_float(1), i8(0), scalar_float(2), i8(0)}));
  CHECK(y8.data<int8_t>()[0] == 2);
  b8.mutable_data<int8_t>()[0] = -1;
  b8.mutable_data<int8_t>()[1] = -1;
  const Tensor y8n = run1(NodeCase("QLinearMatMul", 10, {a8, scalar_float(1), i8(0), b8, scalar_float(1), i8(0), scalar_float(2), i8(0)}));
  CHECK(y8n.data<int8_t>()[0] == -2);
  check_fails(NodeCase("QLinearMatMul", 10, {a8, scalar_float(1), i8(0), b8, scalar_float(1), i8(0), scalar_float(2), scalar_float(0)}),
              "y_zero_point");
}

TEST_CASE("QLinearConv: per-output-channel weight scale and zero point, int32 bias") {
  const Tensor x = random_ints(DataType::kUInt8, {1, 3, 7, 6}, 0, 255);
  const Tensor w = random_ints(DataType::kInt8, {4, 3, 3, 3}, -127, 127);
  const ConvSpec s{{2, 1}, {1, 1}, {1, 1}, {1, 1}};
  const float xs = 0.05f, ys = 0.7f;
  Tensor ws(DataType::kFloat, {4}), wz(DataType::kInt8, {4});
  Tensor bias(DataType::kInt32, {4});
  for (int64_t m = 0; m < 4; ++m) {
    ws.mutable_data<float>()[m] = 0.003f * static_cast<float>(m + 1);
    wz.mutable_data<int8_t>()[m] = static_cast<int8_t>(m - 2);
    bias.mutable_data<int32_t>()[m] = static_cast<int32_t>(1000 * (m - 2));
  }
  Tensor xf(DataType::kFloat, x.shape()), wf(DataType::kFloat, w.shape());
  for (int64_t i = 0; i < x.size(); ++i) xf.mutable_data<float>()[i] = static_cast<float>(x.data<uint8_t>()[i] - 128);
  for (int64_t i = 0; i < w.size(); ++i) wf.mutable_data<float>()[i] = static_cast<float>(w.data<int8_t>()[i] - wz.data<int8_t>()[i / 27]);
  std::vector<int64_t> shape;
  const auto acc = conv_reference(xf, wf, nullptr, s, &shape);
  const Tensor y = run1(NodeCase("QLinearConv", 10,
                                 {x, scalar_float(xs), scalar_of<uint8_t>(DataType::kUInt8, 128), w, ws, wz, scalar_float(ys),
                                  scalar_of<uint8_t>(DataType::kUInt8, 100), bias},
                                 conv_attrs(s)));
  REQUIRE(y.dtype() == DataType::kUInt8);
  REQUIRE(y.shape() == shape);
  const int64_t osize = shape[2] * shape[3];
  for (int64_t i = 0; i < y.size(); ++i) {
    const int64_t m = i / osize;
    const double real = (acc[static_cast<size_t>(i)] + bias.data<int32_t>()[m]) * static_cast<double>(xs) * ws.data<float>()[m];
    CHECK(y.data<uint8_t>()[i] == requantize(real, ys, 100, 0, 255));
  }
  check_fails(NodeCase("QLinearConv", 10,
                       {x, scalar_float(xs), scalar_of<uint8_t>(DataType::kUInt8, 128), w, random_float({3}), wz, scalar_float(ys),
                        scalar_of<uint8_t>(DataType::kUInt8, 100)},
                       conv_attrs(s)),
              "w_scale");
}

}  // TEST_SUITE

}  // namespace
}  // namespace onnxtool::linalg_kernels_test
