// Tests of the pooling and normalization kernels (runner/cpu/pooling.cpp, normalization.cpp):
// MaxPool (with Indices), AveragePool, LpPool, their Global forms, BatchNormalization,
// InstanceNormalization, LayerNormalization and GroupNormalization, each run as a one-node model
// against a plain double-precision reference loop written here from the ONNX spec, at odd sizes;
// one thread and several threads must give identical bytes; invalid inputs must fail with an
// Error naming the node.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tests/kernel_test_util.h"

namespace onnxtool::nn_kernels_test {
namespace {

using namespace testing;  // NOLINT: the kernel-test harness

/// Relative tolerance of the float results computed through double.
constexpr double kFloatTol = 1e-5;

double element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::kFloat: return t.data<float>()[i];
    case DataType::kDouble: return t.data<double>()[i];
    case DataType::kInt8: return t.data<int8_t>()[i];
    case DataType::kUInt8: return t.data<uint8_t>()[i];
    default: FAIL("unexpected dtype"); return 0;
  }
}

std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.size(); ++i) v.push_back(element(t, i));
  return v;
}

/// Exact comparison of a pooled tensor of any supported type with a reference.
void check_exact(const Tensor& got, const std::vector<double>& want) {
  const auto g = as_doubles(got);
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i)
    if (g[i] != want[i]) {
      FAIL_CHECK("element " << i << ": " << g[i] << " vs expected " << want[i]);
      return;
    }
}

/// Relative comparison (floor 1) of a float or double tensor with a reference.
void check_near(const Tensor& got, const std::vector<double>& want, double tol) {
  check_relative(as_doubles(got), want, tol, 1);
}

int64_t count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// ---------------------------------------------------------------- pooling references

/// The attributes of one pooling node; an empty list or string means "attribute not set".
struct Pool {
  std::vector<int64_t> kernel, strides, pads, dilations;
  std::string auto_pad;
  int64_t ceil_mode = 0, count_include_pad = 0, storage_order = 0, p = 0;

  std::vector<Attr> attrs() const {
    std::vector<Attr> a{attr_ints("kernel_shape", kernel)};
    if (!strides.empty()) a.push_back(attr_ints("strides", strides));
    if (!pads.empty()) a.push_back(attr_ints("pads", pads));
    if (!dilations.empty()) a.push_back(attr_ints("dilations", dilations));
    if (!auto_pad.empty()) a.push_back(attr_string("auto_pad", auto_pad));
    if (ceil_mode) a.push_back(attr_int("ceil_mode", ceil_mode));
    if (count_include_pad) a.push_back(attr_int("count_include_pad", count_include_pad));
    if (storage_order) a.push_back(attr_int("storage_order", storage_order));
    if (p) a.push_back(attr_int("p", p));
    return a;
  }
};

enum class PoolOp { kMax, kAverage, kLp };

struct PoolResult {
  std::vector<int64_t> shape;
  std::vector<double> y;
  std::vector<int64_t> indices;
};

/// One spatial dim of a pooling node from the spec's shape formulas: the output size and the
/// padding at each end. False when the kernel does not fit the (padded) input.
bool pool_dim(const Pool& p, size_t d, int64_t in, int64_t* out, int64_t* pad_begin, int64_t* pad_end) {
  const size_t rank = p.kernel.size();
  const int64_t k = p.kernel[d];
  const int64_t s = p.strides.empty() ? 1 : p.strides[d];
  const int64_t dil = p.dilations.empty() ? 1 : p.dilations[d];
  const int64_t span = dil * (k - 1) + 1;
  if (p.auto_pad == "SAME_UPPER" || p.auto_pad == "SAME_LOWER") {
    *out = static_cast<int64_t>(std::ceil(static_cast<double>(in) / static_cast<double>(s)));
    const int64_t total = std::max<int64_t>(0, (*out - 1) * s + span - in);
    // SAME_UPPER puts the odd pad at the end, SAME_LOWER at the beginning.
    *pad_begin = p.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    *pad_end = total - *pad_begin;
    return true;
  }
  if (p.auto_pad == "VALID") {
    if (in < span) return false;
    *pad_begin = *pad_end = 0;
    *out = static_cast<int64_t>(std::ceil(static_cast<double>(in - span + 1) / static_cast<double>(s)));
    return true;
  }
  *pad_begin = p.pads.empty() ? 0 : p.pads[d];
  *pad_end = p.pads.empty() ? 0 : p.pads[d + rank];
  const int64_t room = in + *pad_begin + *pad_end - span;
  if (room < 0) return false;
  const double q = static_cast<double>(room) / static_cast<double>(s);
  *out = static_cast<int64_t>(p.ceil_mode ? std::ceil(q) : std::floor(q)) + 1;
  // ceil_mode: a last window that would start in the end padding is dropped.
  if (p.ceil_mode && (*out - 1) * s >= in + *pad_begin) --*out;
  return true;
}

/// Pools x ([N, C, D...]) the plain way: every output position visits every kernel position.
bool pool_reference(const Tensor& x, const Pool& p, PoolOp op, PoolResult* r) {
  const size_t rank = x.rank() - 2;
  REQUIRE(p.kernel.size() == rank);
  const std::vector<int64_t> in(x.shape().begin() + 2, x.shape().end());
  std::vector<int64_t> out(rank), pb(rank), pe(rank);
  for (size_t d = 0; d < rank; ++d)
    if (!pool_dim(p, d, in[d], &out[d], &pb[d], &pe[d])) return false;
  r->shape = {x.dim(0), x.dim(1)};
  r->shape.insert(r->shape.end(), out.begin(), out.end());
  const int64_t planes = x.dim(0) * x.dim(1), plane_in = count(in);
  for (int64_t plane = 0; plane < planes; ++plane)
    for (int64_t oi = 0; oi < count(out); ++oi) {
      const auto o = unravel(oi, out);
      double best = 0, sum = 0;
      int64_t best_at = -1, inside = 0, in_padded = 0;
      for (int64_t ki = 0; ki < count(p.kernel); ++ki) {
        const auto k = unravel(ki, p.kernel);
        bool is_inside = true, is_in_padded = true;
        int64_t off = 0;
        for (size_t d = 0; d < rank; ++d) {
          const int64_t s = p.strides.empty() ? 1 : p.strides[d];
          const int64_t dil = p.dilations.empty() ? 1 : p.dilations[d];
          const int64_t pos = o[d] * s - pb[d] + k[d] * dil;
          if (pos < 0 || pos >= in[d]) is_inside = false;
          if (pos < -pb[d] || pos >= in[d] + pe[d]) is_in_padded = false;
          off = off * in[d] + pos;
        }
        if (is_in_padded) ++in_padded;
        if (!is_inside) continue;
        ++inside;
        const double v = element(x, plane * plane_in + off);
        // The first of equal maxima in kernel order wins.
        if (best_at < 0 || v > best) {
          best = v;
          best_at = off;
        }
        sum += op == PoolOp::kLp ? std::pow(std::fabs(v), static_cast<double>(p.p)) : v;
      }
      if (inside == 0) FAIL("a window with no input element");  // excluded by the shape rules
      if (op == PoolOp::kMax) r->y.push_back(best);
      else if (op == PoolOp::kAverage) r->y.push_back(sum / static_cast<double>(p.count_include_pad ? in_padded : inside));
      else r->y.push_back(std::pow(sum, 1.0 / static_cast<double>(p.p)));
      // Indices count over the whole flattened tensor; storage_order 1 lays out H and W
      // column-major within a plane.
      int64_t idx = best_at;
      if (p.storage_order == 1) {
        const auto c = unravel(best_at, in);
        idx = c[0] + c[1] * in[0];
      }
      r->indices.push_back(plane * plane_in + idx);
    }
  return true;
}

/// Runs one pooling node on x and compares it with the reference; false if the kernel does not fit.
bool check_pool(const std::string& op_type, int64_t opset, const Tensor& x, const Pool& p, bool want_indices = false) {
  const PoolOp op = op_type == "MaxPool" ? PoolOp::kMax : op_type == "AveragePool" ? PoolOp::kAverage : PoolOp::kLp;
  PoolResult want;
  if (!pool_reference(x, p, op, &want)) return false;
  CAPTURE(op_type);
  CAPTURE(opset);
  CAPTURE(x.describe());
  CAPTURE(p.auto_pad);
  CAPTURE(p.ceil_mode);
  CAPTURE(p.count_include_pad);
  CAPTURE(p.storage_order);
  const auto outs = run_checked({op_type, opset, {x}, p.attrs(), want_indices ? size_t{2} : size_t{1}});
  REQUIRE(outs[0].shape() == want.shape);
  if (op == PoolOp::kMax) {
    check_exact(outs[0], want.y);
  } else if (op == PoolOp::kAverage && (x.dtype() == DataType::kFloat || x.dtype() == DataType::kDouble)) {
    // Averages are exact too: summed in double in kernel order, divided once, rounded once.
    std::vector<double> rounded = want.y;
    if (x.dtype() == DataType::kFloat)
      for (double& v : rounded) v = static_cast<float>(v);
    check_exact(outs[0], rounded);
  } else {
    check_near(outs[0], want.y, kFloatTol);
  }
  if (want_indices) {
    REQUIRE(outs[1].dtype() == DataType::kInt64);
    REQUIRE(outs[1].shape() == want.shape);
    const std::vector<int64_t> got(outs[1].data<int64_t>(), outs[1].data<int64_t>() + outs[1].size());
    CHECK(got == want.indices);
  }
  return true;
}

/// 2-D geometries: plain, strided, padded (symmetric and not), dilated, ceil_mode, 1x1, large kernel.
std::vector<Pool> geometries_2d() {
  std::vector<Pool> g;
  g.push_back({{3, 3}, {}, {}, {}, "", 0});
  g.push_back({{2, 2}, {2, 2}, {}, {}, "", 0});
  g.push_back({{3, 3}, {2, 2}, {1, 1, 1, 1}, {}, "", 0});
  g.push_back({{3, 2}, {1, 2}, {0, 1, 2, 0}, {}, "", 0});
  g.push_back({{3, 3}, {2, 1}, {2, 1, 2, 1}, {2, 2}, "", 0});
  g.push_back({{2, 3}, {3, 2}, {}, {}, "", 1});
  g.push_back({{3, 3}, {2, 2}, {1, 1, 1, 1}, {}, "", 1});
  g.push_back({{3, 3}, {3, 3}, {0, 0, 2, 2}, {1, 2}, "", 1});
  g.push_back({{1, 1}, {2, 3}, {}, {}, "", 0});
  g.push_back({{5, 5}, {2, 2}, {2, 2, 2, 2}, {}, "", 0});
  g.push_back({{2, 2}, {2, 2}, {1, 1, 1, 1}, {}, "", 1});
  return g;
}

/// auto_pad geometries: SAME_UPPER, SAME_LOWER and VALID with several kernels, strides, dilations.
std::vector<Pool> auto_pad_geometries_2d() {
  std::vector<Pool> g;
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER", "VALID"})
    for (const std::vector<int64_t>& k : {std::vector<int64_t>{2, 2}, {3, 3}, {3, 2}, {4, 1}})
      for (const std::vector<int64_t>& s : {std::vector<int64_t>{1, 1}, {2, 2}, {3, 2}}) {
        g.push_back({k, s, {}, {}, mode, 0});
        if (k[0] == 3 && s[0] == 2) g.push_back({k, s, {}, {2, 1}, mode, 0});
      }
  return g;
}

const std::vector<std::vector<int64_t>> kSizes2d{{1, 1}, {1, 7}, {7, 7}, {7, 13}, {13, 13}, {13, 1}};
const std::vector<std::vector<int64_t>> kBatches{{1, 1}, {2, 3}, {3, 5}};

/// Runs every geometry at every 2-D size (batch and channel counts rotating); returns how many ran.
int run_2d(const char* op, int64_t opset, const std::vector<Pool>& geometries, bool with_indices,
           const std::function<void(Pool&)>& adjust = {}) {
  int ran = 0, turn = 0;
  for (Pool p : geometries) {
    if (adjust) adjust(p);
    for (const auto& hw : kSizes2d) {
      const auto& nc = kBatches[static_cast<size_t>(turn++) % kBatches.size()];
      const Tensor x = random_float({nc[0], nc[1], hw[0], hw[1]});
      if (check_pool(op, opset, x, p, with_indices)) ++ran;
    }
  }
  return ran;
}

// ---------------------------------------------------------------- normalization references

/// BatchNormalization in inference mode: per channel (x - mean) / sqrt(var + eps) * scale + B.
std::vector<double> batch_norm_reference(const Tensor& x, const Tensor& scale, const Tensor& b, const Tensor& mean,
                                         const Tensor& var, double eps) {
  const int64_t c = x.dim(1), inner = x.size() / (x.dim(0) * c);
  std::vector<double> y;
  for (int64_t i = 0; i < x.size(); ++i) {
    const int64_t ch = (i / inner) % c;
    y.push_back((element(x, i) - element(mean, ch)) / std::sqrt(element(var, ch) + eps) * element(scale, ch) + element(b, ch));
  }
  return y;
}

/// Mean and variance (divided by the count) of `len` elements of x from `begin`, with stride 1.
void moments(const Tensor& x, int64_t begin, int64_t len, double* mean, double* var) {
  double s = 0;
  for (int64_t i = 0; i < len; ++i) s += element(x, begin + i);
  *mean = s / static_cast<double>(len);
  double v = 0;
  for (int64_t i = 0; i < len; ++i) v += (element(x, begin + i) - *mean) * (element(x, begin + i) - *mean);
  *var = v / static_cast<double>(len);
}

/// The index into a parameter tensor of shape `param` broadcast (right-aligned) to `block`.
int64_t broadcast_index(const std::vector<int64_t>& block, const std::vector<int64_t>& param, int64_t k) {
  const auto c = unravel(k, block);
  int64_t off = 0;
  const size_t lead = block.size() - param.size();
  for (size_t d = 0; d < param.size(); ++d) off = off * param[d] + (param[d] == 1 ? 0 : c[d + lead]);
  return off;
}

struct LayerNormResult {
  std::vector<double> y, mean, inv_std_dev;
};

/// LayerNormalization: each row (the dims from axis on) normalized by its own mean and
/// variance, then scaled and shifted element-wise by Scale and B broadcast to the row's shape.
LayerNormResult layer_norm_reference(const Tensor& x, int64_t axis, const Tensor& scale, const Tensor* bias, double eps) {
  const int64_t rank = static_cast<int64_t>(x.rank());
  if (axis < 0) axis += rank;
  const std::vector<int64_t> block(x.shape().begin() + axis, x.shape().end());
  const int64_t len = count(block), rows = x.size() / len;
  LayerNormResult r;
  for (int64_t row = 0; row < rows; ++row) {
    double m = 0, v = 0;
    moments(x, row * len, len, &m, &v);
    const double inv = 1 / std::sqrt(v + eps);
    for (int64_t k = 0; k < len; ++k) {
      double y = (element(x, row * len + k) - m) * inv * element(scale, broadcast_index(block, scale.shape(), k));
      if (bias) y += element(*bias, broadcast_index(block, bias->shape(), k));
      r.y.push_back(y);
    }
    r.mean.push_back(m);
    r.inv_std_dev.push_back(inv);
  }
  return r;
}

/// GroupNormalization: the channels of each sample split into num_groups groups, each group
/// normalized over its channels and spatial positions, then scale and bias applied per group
/// (opset 18) or per channel (opset 21).
std::vector<double> group_norm_reference(const Tensor& x, int64_t groups, const Tensor& scale, const Tensor& bias, double eps,
                                         bool per_channel) {
  const int64_t n = x.dim(0), c = x.dim(1), spatial = x.size() / (n * c), per_group = c / groups;
  std::vector<double> y(static_cast<size_t>(x.size()));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t begin = (b * c + g * per_group) * spatial, len = per_group * spatial;
      double m = 0, v = 0;
      moments(x, begin, len, &m, &v);
      for (int64_t k = 0; k < len; ++k) {
        const int64_t ch = g * per_group + k / spatial;
        const int64_t param = per_channel ? ch : g;
        y[static_cast<size_t>(begin + k)] = (element(x, begin + k) - m) / std::sqrt(v + eps) * element(scale, param) + element(bias, param);
      }
    }
  return y;
}

TEST_SUITE("nn_kernels") {

TEST_CASE("MaxPool 2-D: kernels, strides, pads, dilations, ceil_mode at odd sizes, with Indices") {
  int ran = 0;
  for (int64_t opset : {12, 22}) {
    ran += run_2d("MaxPool", opset, geometries_2d(), false);
    ran += run_2d("MaxPool", opset, geometries_2d(), true);
  }
  CHECK(ran > 100);
}

TEST_CASE("MaxPool 2-D Indices with storage_order 1 (column-major within a plane)") {
  const int ran = run_2d("MaxPool", 12, geometries_2d(), true, [](Pool& p) { p.storage_order = 1; });
  CHECK(ran > 40);
  // A hand-made case: the maximum of a 2x3 plane at (h=0, w=2) is index 2 in row-major order
  // and 0 + 2 * 2 = 4 in column-major order.
  const Tensor x = floats({1, 2, 9, 4, 5, 6}, {1, 1, 2, 3});
  for (int64_t order : {0, 1}) {
    const auto outs = run_checked({"MaxPool", 12, {x}, {attr_ints("kernel_shape", {2, 3}), attr_int("storage_order", order)}, 2});
    CHECK(outs[0].data<float>()[0] == 9.0f);
    CHECK(outs[1].data<int64_t>()[0] == (order ? 4 : 2));
  }
}

TEST_CASE("MaxPool 2-D auto_pad SAME_UPPER, SAME_LOWER and VALID") {
  const int ran = run_2d("MaxPool", 12, auto_pad_geometries_2d(), true);
  CHECK(ran > 100);
  // SAME_UPPER pads the odd element at the end, SAME_LOWER at the beginning: with a
  // [1, 2, 3, 4] row, kernel 2, the last window of SAME_UPPER is (4, pad) and the first of
  // SAME_LOWER is (pad, 1).
  const Tensor x = floats({1, 2, 3, 4}, {1, 1, 4});
  CHECK(as_doubles(run1({"MaxPool", 12, {x}, {attr_ints("kernel_shape", {2}), attr_string("auto_pad", "SAME_UPPER")}})) ==
        std::vector<double>{2, 3, 4, 4});
  CHECK(as_doubles(run1({"MaxPool", 12, {x}, {attr_ints("kernel_shape", {2}), attr_string("auto_pad", "SAME_LOWER")}})) ==
        std::vector<double>{1, 2, 3, 4});
}

TEST_CASE("MaxPool 1-D and 3-D") {
  int ran = 0, turn = 0;
  std::vector<Pool> g1{{{3}, {}, {}, {}, "", 0},       {{2}, {2}, {}, {}, "", 0},       {{3}, {2}, {1, 1}, {}, "", 1},
                       {{3}, {3}, {0, 2}, {2}, "", 1}, {{4}, {1}, {}, {}, "SAME_UPPER", 0}, {{4}, {3}, {}, {}, "SAME_LOWER", 0},
                       {{5}, {2}, {}, {3}, "VALID", 0}};
  for (const Pool& p : g1)
    for (int64_t len : {1, 7, 13, 127}) {
      const auto& nc = kBatches[static_cast<size_t>(turn++) % kBatches.size()];
      if (check_pool("MaxPool", 12, random_float({nc[0], nc[1], len}), p, true)) ++ran;
    }
  CHECK(ran > 20);
  Pool p3{{3, 2, 3}, {2, 1, 2}, {1, 0, 1, 1, 1, 0}, {1, 2, 1}, "", 1};
  CHECK(check_pool("MaxPool", 12, random_float({2, 3, 7, 5, 13}), p3, true));
  CHECK(check_pool("MaxPool", 12, random_float({1, 1, 1, 7, 1}), Pool{{1, 3, 1}, {1, 2, 1}, {}, {}, "", 0}, true));
}

TEST_CASE("MaxPool on double, int8 and uint8 inputs") {
  Pool p{{3, 3}, {2, 2}, {1, 1, 1, 1}, {}, "", 1};
  CHECK(check_pool("MaxPool", 12, to_double(random_float({2, 3, 7, 13})), p, true));
  // The padding never wins, even when every element is negative.
  CHECK(check_pool("MaxPool", 12, random_ints(DataType::kInt8, {2, 3, 13, 7}, -128, -1), p));
  CHECK(check_pool("MaxPool", 12, random_ints(DataType::kInt8, {3, 5, 7, 7}, -128, 127), p));
  CHECK(check_pool("MaxPool", 12, random_ints(DataType::kUInt8, {1, 3, 13, 13}, 0, 255), p));
  CHECK(check_pool("MaxPool", 12, random_ints(DataType::kUInt8, {2, 1, 7, 7}, 0, 3), Pool{{2, 3}, {1, 1}, {}, {}, "", 0}));
}

// ---------------------------------------------------------------- MaxPool float32 fast path

/// The float32 MaxPool bit for bit as the generic scan computes it (rank 1 or 2, no dilation):
/// each window in row-major order, its first element taken and then any greater one, so a NaN
/// wins only as the window's first element and of equal maxima (-0 and +0) the first stays; an
/// empty window (all padding) gives -inf; the value goes through double, which quiets a NaN.
/// False when the kernel does not fit.
bool max_pool_bits_reference(const Tensor& x, const Pool& p, Tensor* y) {
  const size_t rank = x.rank() - 2;
  std::vector<int64_t> in(x.shape().begin() + 2, x.shape().end()), out(rank), pb(rank), pe(rank);
  for (size_t d = 0; d < rank; ++d)
    if (!pool_dim(p, d, in[d], &out[d], &pb[d], &pe[d])) return false;
  // Rank 1 as a 2-D pool of height 1.
  const int64_t h = rank == 2 ? in[0] : 1, w = in[rank - 1], oh = rank == 2 ? out[0] : 1, ow = out[rank - 1];
  const int64_t kh = rank == 2 ? p.kernel[0] : 1, kw = p.kernel[rank - 1];
  const int64_t sh = rank == 2 && !p.strides.empty() ? p.strides[0] : 1, sw = p.strides.empty() ? 1 : p.strides[rank - 1];
  const int64_t ph = rank == 2 ? pb[0] : 0, pw = pb[rank - 1];
  std::vector<int64_t> shape{x.dim(0), x.dim(1)};
  shape.insert(shape.end(), out.begin(), out.end());
  *y = Tensor(DataType::kFloat, shape);
  const float* px = x.data<float>();
  float* py = y->mutable_data<float>();
  for (int64_t plane = 0; plane < x.dim(0) * x.dim(1); ++plane)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double best = -std::numeric_limits<double>::infinity();
        bool any = false;
        for (int64_t a = i * sh - ph; a < i * sh - ph + kh; ++a)
          for (int64_t b = j * sw - pw; b < j * sw - pw + kw; ++b) {
            if (a < 0 || a >= h || b < 0 || b >= w) continue;
            const double v = px[plane * h * w + a * w + b];
            if (!any || v > best) best = v;
            any = true;
          }
        py[(plane * oh + i) * ow + j] = static_cast<float>(best);
      }
  return true;
}

/// Floats with many ties (+0 next to -0, repeated small integers), -inf, and with probability
/// `nan_rate` quiet NaNs of either sign and distinct payloads.
Tensor tricky_floats(std::vector<int64_t> shape, double nan_rate) {
  Tensor t(DataType::kFloat, std::move(shape));
  const float pool[] = {-2.0f, -1.0f, -0.0f, 0.0f, 1.0f, 2.0f, -std::numeric_limits<float>::infinity(), 0.5f};
  std::uniform_int_distribution<int> pick(0, 9);
  std::uniform_real_distribution<double> u(0, 1);
  std::uniform_real_distribution<float> any(-5, 5);
  for (int64_t i = 0; i < t.size(); ++i) {
    float v;
    if (u(rng()) < nan_rate) {
      const uint32_t bits = (i % 2 ? 0xffc00000u : 0x7fc00000u) | static_cast<uint32_t>(i % 4093 + 1);
      std::memcpy(&v, &bits, sizeof(v));
    } else {
      const int k = pick(rng());
      v = k < 8 ? pool[k] : any(rng());
    }
    t.mutable_data<float>()[i] = v;
  }
  return t;
}

/// Runs MaxPool on float32 x (Y only: the fast path; Y and Indices: the generic scan) and checks
/// both against max_pool_bits_reference byte for byte; false if the kernel does not fit.
bool check_max_pool_bits(const Tensor& x, const Pool& p) {
  Tensor want;
  if (!max_pool_bits_reference(x, p, &want)) return false;
  CAPTURE(x.describe());
  CAPTURE(runner::shape_string(p.kernel));
  CAPTURE(runner::shape_string(p.strides));
  CAPTURE(runner::shape_string(p.pads));
  CAPTURE(p.ceil_mode);
  const Tensor fast = run1({"MaxPool", 12, {x}, p.attrs()});
  check_same(fast, want);
  const Tensor generic = run_checked({"MaxPool", 12, {x}, p.attrs(), 2})[0];
  check_same(generic, want);
  return true;
}

TEST_CASE("MaxPool float32 fast path: bit-identical to the generic scan with ties, -inf and NaN") {
  std::vector<Pool> g2{
      // SPP blocks (stride 1, same-size output): the separable path.
      {{5, 5}, {1, 1}, {2, 2, 2, 2}, {}, "", 0},
      {{9, 9}, {1, 1}, {4, 4, 4, 4}, {}, "", 0},
      {{13, 13}, {1, 1}, {6, 6, 6, 6}, {}, "", 0},
      // Non-overlapping and strided windows: the direct path (1x2 and 2x2 at their own stride:
      // the paired path, whole vectors and the tail).
      {{2, 2}, {2, 2}, {}, {}, "", 0},
      {{2, 2}, {2, 2}, {}, {}, "", 1},
      {{1, 2}, {1, 2}, {}, {}, "", 0},
      {{3, 3}, {2, 2}, {1, 1, 1, 1}, {}, "", 1},
      {{3, 2}, {2, 1}, {1, 0, 1, 1}, {}, "", 0},
      // Stride larger than the kernel (rows and columns skipped).
      {{2, 2}, {3, 3}, {1, 1, 0, 0}, {}, "", 1},
      // Padding wider than the kernel's overlap: windows of padding only give -inf.
      {{2, 3}, {1, 1}, {3, 2, 3, 4}, {}, "", 0},
      {{3, 3}, {2, 2}, {0, 0, 2, 2}, {}, "", 1},
      // Kernel larger than the input.
      {{7, 6}, {1, 2}, {3, 3, 3, 3}, {}, "", 0},
      {{4, 4}, {1, 1}, {}, {}, "SAME_UPPER", 0},
      {{3, 4}, {2, 3}, {}, {}, "SAME_LOWER", 0},
  };
  const std::vector<std::vector<int64_t>> sizes{{1, 1}, {1, 5}, {6, 1}, {7, 9}, {13, 13}, {20, 37}, {5, 100}};
  int ran = 0;
  for (double nan_rate : {0.0, 0.05, 0.5})
    for (const Pool& p : g2)
      for (const auto& hw : sizes)
        if (check_max_pool_bits(tricky_floats({2, 3, hw[0], hw[1]}, nan_rate), p)) ++ran;
  CHECK(ran > 150);
  // 1-D pools run as 2-D ones of height 1.
  int ran1 = 0;
  for (const Pool& p : {Pool{{5}, {1}, {2, 2}, {}, "", 0}, Pool{{2}, {2}, {}, {}, "", 1}, Pool{{3}, {4}, {2, 1}, {}, "", 1}})
    for (int64_t len : {1, 6, 41})
      if (check_max_pool_bits(tricky_floats({2, 2, len}, 0.1), p)) ++ran1;
  CHECK(ran1 >= 7);
  // 3-D pools: slices pooled in 2-D, then combined over the depth window.
  int ran3 = 0;
  for (double nan_rate : {0.0, 0.1, 0.5})
    for (const Pool& p : {Pool{{3, 3, 3}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, {}, "", 0}, Pool{{2, 2, 2}, {2, 2, 2}, {}, {}, "", 1},
                          Pool{{3, 2, 3}, {2, 1, 2}, {1, 0, 1, 1, 1, 0}, {}, "", 1}, Pool{{1, 3, 3}, {1, 2, 2}, {0, 1, 1, 0, 1, 1}, {}, "", 0},
                          Pool{{4, 1, 2}, {3, 1, 1}, {2, 0, 0, 2, 0, 1}, {}, "", 0}})
      for (const std::vector<int64_t>& dhw : {std::vector<int64_t>{1, 1, 1}, {5, 4, 6}, {7, 9, 5}, {2, 13, 3}}) {
        const Tensor x = tricky_floats({2, 2, dhw[0], dhw[1], dhw[2]}, nan_rate);
        PoolResult fits;
        if (!pool_reference(x, p, PoolOp::kMax, &fits)) continue;
        CAPTURE(x.describe());
        CAPTURE(runner::shape_string(p.kernel));
        // Y alone takes the 3-D path, Y with Indices the generic scan: the same bytes.
        check_same(run1({"MaxPool", 12, {x}, p.attrs()}), run_checked({"MaxPool", 12, {x}, p.attrs(), 2})[0]);
        ++ran3;
      }
  CHECK(ran3 >= 40);
  // float16 planes take the float32 fast path: the same bytes as the generic scan.
  int ran16 = 0;
  for (const Pool& p : g2)
    for (const auto& hw : sizes) {
      const Tensor xf = tricky_floats({2, 3, hw[0], hw[1]}, 0.05);
      Tensor xh(DataType::kFloat16, xf.shape());
      for (int64_t i = 0; i < xf.size(); ++i) xh.mutable_data<uint16_t>()[i] = ir::float_to_half(xf.data<float>()[i]);
      Tensor want;
      if (!max_pool_bits_reference(xf, p, &want)) continue;
      CAPTURE(xh.describe());
      CAPTURE(runner::shape_string(p.kernel));
      const Tensor fast = run1({"MaxPool", 12, {xh}, p.attrs()});
      check_same(fast, run_checked({"MaxPool", 12, {xh}, p.attrs(), 2})[0]);
      ++ran16;
    }
  CHECK(ran16 > 50);
  // A NaN that starts a window wins it; one later in the window does not.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor y = run1({"MaxPool", 12, {floats({nan, 1, 2, 3, 4, nan}, {1, 1, 2, 3})}, {attr_ints("kernel_shape", {2, 2})}});
  CHECK(std::isnan(y.data<float>()[0]));
  CHECK(y.data<float>()[1] == 4.0f);
  // Of +0 and -0 the first in the window stays.
  const Tensor z = run1({"MaxPool", 12, {floats({-0.0f, 0.0f, 0.0f, -0.0f}, {1, 1, 1, 4})}, {attr_ints("kernel_shape", {1, 2})}});
  CHECK(std::signbit(z.data<float>()[0]));
  CHECK(!std::signbit(z.data<float>()[1]));
  CHECK(!std::signbit(z.data<float>()[2]));
  // A signaling NaN that starts a 2x2 window of stride 2 (the paired path, a whole vector of
  // windows and a tail) comes out quiet with its payload, as from the generic scan.
  std::vector<float> values(2 * 40, 1.0f);
  const uint32_t signaling = 0x7f800123u;
  std::memcpy(&values[0], &signaling, sizeof signaling);
  std::memcpy(&values[38], &signaling, sizeof signaling);
  const Tensor q = run1({"MaxPool", 12, {floats(values, {1, 1, 2, 40})}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})}});
  uint32_t first = 0, last = 0;
  std::memcpy(&first, q.data<float>(), sizeof first);
  std::memcpy(&last, q.data<float>() + 19, sizeof last);
  CHECK(first == 0x7fc00123u);
  CHECK(last == 0x7fc00123u);
  CHECK(q.data<float>()[1] == 1.0f);
}

TEST_CASE("AveragePool: count_include_pad 0 and 1 with pads, strides, ceil_mode, dilations") {
  int ran = 0;
  for (int64_t include : {0, 1}) {
    auto set_include = [include](Pool& p) { p.count_include_pad = include; };
    // Opset 11 has no dilations; opset 19 adds them.
    std::vector<Pool> no_dilation;
    for (const Pool& p : geometries_2d())
      if (p.dilations.empty()) no_dilation.push_back(p);
    ran += run_2d("AveragePool", 11, no_dilation, false, set_include);
    ran += run_2d("AveragePool", 19, geometries_2d(), false, set_include);
    ran += run_2d("AveragePool", 22, auto_pad_geometries_2d(), false, set_include);
  }
  CHECK(ran > 300);
  // A corner window of a padded 3x3 kernel over a plane of ones: 4 real elements of 9.
  const Tensor ones = floats(std::vector<float>(9, 1.0f), {1, 1, 3, 3});
  for (int64_t include : {0, 1}) {
    const Tensor y = run1({"AveragePool", 11, {ones}, {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1}),
                                                       attr_int("count_include_pad", include)}});
    REQUIRE(y.shape() == std::vector<int64_t>{1, 1, 3, 3});
    CHECK(y.data<float>()[0] == doctest::Approx(include ? 4.0 / 9 : 1.0));
    CHECK(y.data<float>()[4] == doctest::Approx(1.0));
  }
}

TEST_CASE("AveragePool 1-D and 3-D, double") {
  int ran = 0, turn = 0;
  for (int64_t include : {0, 1})
    for (const Pool& base : {Pool{{3}, {2}, {1, 1}, {}, "", 1}, Pool{{2}, {1}, {0, 1}, {}, "", 0}, Pool{{5}, {3}, {2, 2}, {}, "", 1}})
      for (int64_t len : {1, 7, 13, 127}) {
        Pool p = base;
        p.count_include_pad = include;
        const auto& nc = kBatches[static_cast<size_t>(turn++) % kBatches.size()];
        if (check_pool("AveragePool", 11, random_float({nc[0], nc[1], len}), p)) ++ran;
      }
  CHECK(ran > 15);
  Pool p3{{3, 2, 3}, {2, 1, 2}, {1, 0, 1, 1, 1, 0}, {}, "", 1, 1};
  CHECK(check_pool("AveragePool", 11, random_float({2, 3, 7, 5, 13}), p3));
  p3.count_include_pad = 0;
  CHECK(check_pool("AveragePool", 11, to_double(random_float({1, 5, 7, 7, 7})), p3));
}

TEST_CASE("LpPool p=1 and p=2: strides, pads, dilations and ceil_mode") {
  int ran = 0;
  for (int64_t p : {1, 2}) {
    auto set_p = [p](Pool& g) { g.p = p; };
    std::vector<Pool> no_ceil;
    for (const Pool& g : geometries_2d())
      if (!g.ceil_mode && g.dilations.empty()) no_ceil.push_back(g);
    // ceil_mode and dilations arrive in opset 18.
    ran += run_2d("LpPool", 11, no_ceil, false, set_p);
    ran += run_2d("LpPool", 18, geometries_2d(), false, set_p);
    ran += run_2d("LpPool", 18, auto_pad_geometries_2d(), false, set_p);
  }
  CHECK(ran > 200);
  int turn = 0;
  for (int64_t len : {1, 7, 13, 127}) {
    const auto& nc = kBatches[static_cast<size_t>(turn++) % kBatches.size()];
    CHECK(check_pool("LpPool", 18, random_float({nc[0], nc[1], len}), Pool{{1}, {}, {}, {}, "", 0, 0, 0, 2}));
    if (len > 1) CHECK(check_pool("LpPool", 18, random_float({nc[0], nc[1], len}), Pool{{2}, {2}, {1, 0}, {}, "", 1, 0, 0, 1}));
  }
}

TEST_CASE("GlobalAveragePool, GlobalMaxPool and GlobalLpPool over 1, 2 and 3 spatial dims") {
  const std::vector<std::vector<int64_t>> shapes{{1, 1, 1}, {2, 3, 7}, {3, 5, 13, 7}, {1, 3, 1, 13}, {2, 3, 7, 1, 13}, {1, 1, 127}};
  for (const auto& shape : shapes) {
    CAPTURE(shape.size());
    const Tensor x = random_float(shape);
    const int64_t planes = shape[0] * shape[1], len = x.size() / planes;
    std::vector<int64_t> out_shape(shape.size(), 1);
    out_shape[0] = shape[0];
    out_shape[1] = shape[1];
    std::vector<double> avg, mx, l1, l2;
    for (int64_t pl = 0; pl < planes; ++pl) {
      double s = 0, m = element(x, pl * len), a1 = 0, a2 = 0;
      for (int64_t i = 0; i < len; ++i) {
        const double v = element(x, pl * len + i);
        s += v;
        m = std::max(m, v);
        a1 += std::fabs(v);
        a2 += v * v;
      }
      avg.push_back(s / static_cast<double>(len));
      mx.push_back(m);
      l1.push_back(a1);
      l2.push_back(std::sqrt(a2));
    }
    for (int64_t opset : {1, 22}) {
      const Tensor ya = run1({"GlobalAveragePool", opset, {x}});
      REQUIRE(ya.shape() == out_shape);
      check_close(ya, avg, kFloatTol);
      const Tensor ym = run1({"GlobalMaxPool", opset, {x}});
      REQUIRE(ym.shape() == out_shape);
      check_exact(ym, mx);
    }
    const Tensor y1 = run1({"GlobalLpPool", 2, {x}, {attr_int("p", 1)}});
    REQUIRE(y1.shape() == out_shape);
    check_close(y1, l1, kFloatTol);
    const Tensor y2 = run1({"GlobalLpPool", 22, {x}});  // p defaults to 2
    check_close(y2, l2, kFloatTol);
    const Tensor yd = run1({"GlobalAveragePool", 22, {to_double(x)}});
    REQUIRE(yd.dtype() == DataType::kDouble);
    for (int64_t i = 0; i < yd.size(); ++i) CHECK(yd.data<double>()[i] == doctest::Approx(avg[static_cast<size_t>(i)]).epsilon(1e-12));
  }
}

TEST_CASE("Pooling rejects bad inputs") {
  check_fails(NodeCase("MaxPool", 12, {random_float({1, 1, 2, 2})}, {attr_ints("kernel_shape", {3, 3})}), "larger");
  check_fails(NodeCase("AveragePool", 11, {random_float({1, 1, 7, 7})}, {attr_ints("kernel_shape", {3})}), "kernel_shape");
  check_fails(NodeCase("MaxPool", 12, {random_float({1, 1, 7, 7})}, {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1})}),
              "pads");
  check_fails(NodeCase("LpPool", 18, {random_float({1, 1, 7, 7})}, {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {0, 1})}),
              "positive");
  check_fails(NodeCase("GlobalAveragePool", 1, {random_float({3, 7})}), "X must be");
}

TEST_CASE("BatchNormalization inference mode (opsets 9, 14, 15) at odd sizes") {
  const std::vector<std::vector<int64_t>> shapes{{1, 1}, {7, 3}, {3, 5, 7}, {2, 3, 7, 13}, {1, 5, 1, 13}, {2, 1, 13, 7}, {1, 3, 7, 1, 7}};
  for (const auto& shape : shapes)
    for (int64_t opset : {9, 14, 15})
      for (float eps : {1e-5f, 1e-2f}) {
        CAPTURE(shape.size());
        CAPTURE(opset);
        const int64_t c = shape[1];
        const Tensor x = random_float(shape), scale = random_float({c}, -2, 2), b = random_float({c}, -2, 2),
                     mean = random_float({c}, -2, 2), var = random_float({c}, 0.2f, 3);
        std::vector<Attr> attrs;
        if (eps != 1e-5f) attrs.push_back(attr_float("epsilon", eps));
        const Tensor y = run1({"BatchNormalization", opset, {x, scale, b, mean, var}, attrs});
        REQUIRE(y.shape() == shape);
        check_close(y, batch_norm_reference(x, scale, b, mean, var, eps), kFloatTol);
      }
  // double
  const Tensor x = random_float({2, 3, 7}), s = random_float({3}, -2, 2), b = random_float({3}, -2, 2),
               m = random_float({3}, -2, 2), v = random_float({3}, 0.2f, 3);
  const Tensor y = run1({"BatchNormalization", 15, {to_double(x), to_double(s), to_double(b), to_double(m), to_double(v)}});
  REQUIRE(y.dtype() == DataType::kDouble);
  const auto want = batch_norm_reference(x, s, b, m, v, 1e-5f);
  for (int64_t i = 0; i < y.size(); ++i) CHECK(y.data<double>()[i] == doctest::Approx(want[static_cast<size_t>(i)]).epsilon(1e-12));
}

TEST_CASE("BatchNormalization rejects parameters of the wrong length") {
  check_fails(NodeCase("BatchNormalization", 15,
                       {random_float({2, 3, 7}), random_float({2}), random_float({3}), random_float({3}), random_float({3}, 1, 2)}),
              "scale");
  check_fails(NodeCase("BatchNormalization", 15,
                       {random_float({2, 3, 7}), random_float({3}), random_float({3}), random_float({3}), random_float({5}, 1, 2)}),
              "input_var");
}

TEST_CASE("InstanceNormalization (opsets 6 and 22) at odd sizes") {
  const std::vector<std::vector<int64_t>> shapes{{1, 1, 1}, {2, 3, 7}, {3, 5, 13}, {2, 3, 7, 13}, {1, 5, 1, 7}, {2, 1, 3, 7, 5}, {1, 3, 127}};
  for (const auto& shape : shapes)
    for (int64_t opset : {6, 22})
      for (float eps : {1e-5f, 1e-3f}) {
        CAPTURE(shape.size());
        const int64_t c = shape[1];
        const Tensor x = random_float(shape), scale = random_float({c}, -2, 2), b = random_float({c}, -2, 2);
        std::vector<Attr> attrs;
        if (eps != 1e-5f) attrs.push_back(attr_float("epsilon", eps));
        const Tensor y = run1({"InstanceNormalization", opset, {x, scale, b}, attrs});
        REQUIRE(y.shape() == shape);
        // Each (sample, channel) pair is normalized over its spatial positions.
        const int64_t len = x.size() / (shape[0] * c);
        std::vector<double> want;
        for (int64_t row = 0; row < shape[0] * c; ++row) {
          double m = 0, v = 0;
          moments(x, row * len, len, &m, &v);
          for (int64_t k = 0; k < len; ++k)
            want.push_back((element(x, row * len + k) - m) / std::sqrt(v + eps) * element(scale, row % c) + element(b, row % c));
        }
        check_close(y, want, kFloatTol);
      }
  check_fails(NodeCase("InstanceNormalization", 6, {random_float({2, 3, 7}), random_float({2}), random_float({3})}), "scale");
}

TEST_CASE("LayerNormalization: axis -1 and inner axes, with and without bias, Mean and InvStdDev") {
  struct Case {
    std::vector<int64_t> shape;
    int64_t axis;
    size_t scale_dims;  // how many trailing dims of the normalized block Scale and B have
  };
  const std::vector<Case> cases{{{7}, -1, 1},          {{1, 1}, -1, 1},        {{3, 13}, -1, 1},      {{3, 13}, 0, 2},
                                {{2, 3, 7}, -1, 1},    {{2, 3, 7}, 1, 2},      {{2, 3, 7}, -2, 1},    {{2, 5, 1, 13}, 2, 2},
                                {{2, 5, 1, 13}, 1, 3}, {{3, 5, 7, 13}, -3, 1}, {{1, 3, 127}, -1, 1}, {{13, 7}, 1, 1}};
  for (const auto& c : cases)
    for (bool with_bias : {false, true}) {
      std::vector<float> y_alone;  // Y without Mean and InvStdDev (float32's own path): the same bits
      const std::vector<int64_t> param(c.shape.end() - static_cast<std::ptrdiff_t>(c.scale_dims), c.shape.end());
      const Tensor x = random_float(c.shape), scale = random_float(param, -2, 2), b = random_float(param, -2, 2);
      for (size_t outputs : {size_t{1}, size_t{3}}) {
        CAPTURE(c.shape.size());
        CAPTURE(c.axis);
        CAPTURE(with_bias);
        const int64_t axis = c.axis < 0 ? c.axis + static_cast<int64_t>(c.shape.size()) : c.axis;
        std::vector<Tensor> in{x, scale};
        if (with_bias) in.push_back(b);
        const float eps = with_bias ? 1e-5f : 1e-3f;
        std::vector<Attr> attrs{attr_int("axis", c.axis)};
        if (eps != 1e-5f) attrs.push_back(attr_float("epsilon", eps));
        const auto outs = run_checked({"LayerNormalization", 17, in, attrs, outputs});
        const auto want = layer_norm_reference(x, c.axis, scale, with_bias ? &b : nullptr, eps);
        REQUIRE(outs[0].shape() == c.shape);
        check_close(outs[0], want.y, kFloatTol);
        const std::vector<float> y(outs[0].data<float>(), outs[0].data<float>() + outs[0].size());
        if (outputs == 1) y_alone = y;
        else CHECK(std::memcmp(y.data(), y_alone.data(), y.size() * sizeof(float)) == 0);
        if (outputs == 3) {
          std::vector<int64_t> stat = c.shape;
          for (size_t d = static_cast<size_t>(axis); d < stat.size(); ++d) stat[d] = 1;
          REQUIRE(outs[1].dtype() == DataType::kFloat);
          REQUIRE(outs[1].shape() == stat);
          REQUIRE(outs[2].shape() == stat);
          check_close(outs[1], want.mean, kFloatTol);
          check_close(outs[2], want.inv_std_dev, kFloatTol);
        }
      }
    }
  // Scale and B broadcast to the normalized block [5, 7] from [1, 7] and [5, 1].
  {
    const Tensor x = random_float({3, 5, 7}), scale = random_float({1, 7}, -2, 2), b = random_float({5, 1}, -2, 2);
    const Tensor y = run1({"LayerNormalization", 17, {x, scale, b}, {attr_int("axis", 1)}});
    check_close(y, layer_norm_reference(x, 1, scale, &b, 1e-5f).y, kFloatTol);
  }
  check_fails(NodeCase("LayerNormalization", 17, {random_float({2, 3, 7}), random_float({5})}), "Scale");
  check_fails(NodeCase("LayerNormalization", 17, {random_float({2, 3, 7}), random_float({7}), random_float({3, 1})}), "B");
}

TEST_CASE("GroupNormalization: per-group parameters (opset 18) and per-channel (opset 21)") {
  struct Case {
    std::vector<int64_t> shape;
    int64_t groups;
  };
  const std::vector<Case> cases{{{1, 1, 7}, 1},     {{2, 3, 7}, 1},     {{2, 3, 7}, 3},      {{3, 5, 13}, 1},
                                {{3, 5, 13}, 5},    {{2, 6, 7, 13}, 2}, {{2, 6, 7, 13}, 3},  {{1, 4, 1}, 2},
                                {{2, 3, 1, 7, 5}, 3}, {{1, 6, 127}, 6}};
  for (const auto& c : cases)
    for (int64_t opset : {18, 21})
      for (float eps : {1e-5f, 1e-2f}) {
        CAPTURE(c.shape.size());
        CAPTURE(c.groups);
        CAPTURE(opset);
        const int64_t params = opset >= 21 ? c.shape[1] : c.groups;
        const Tensor x = random_float(c.shape), scale = random_float({params}, -2, 2),
                     b = random_float({params}, -2, 2);
        std::vector<Attr> attrs{attr_int("num_groups", c.groups)};
        if (eps != 1e-5f) attrs.push_back(attr_float("epsilon", eps));
        const Tensor y = run1({"GroupNormalization", opset, {x, scale, b}, attrs});
        REQUIRE(y.shape() == c.shape);
        check_close(y, group_norm_reference(x, c.groups, scale, b, eps, opset >= 21), kFloatTol);
      }
  check_fails(NodeCase("GroupNormalization", 21, {random_float({2, 5, 7}), random_float({5}), random_float({5})}, {attr_int("num_groups", 2)}),
              "num_groups");
  check_fails(NodeCase("GroupNormalization", 21, {random_float({2, 6, 7}), random_float({2}), random_float({2})}, {attr_int("num_groups", 2)}),
              "scale");
}

}  // TEST_SUITE

}  // namespace
}  // namespace onnxtool::nn_kernels_test
