// Tests of the tensor manipulation and indexing kernels (runner/cpu/tensor_ops.cpp, indexing.cpp):
// each kernel, run as a one-node model, against a plain reference loop at odd sizes (1, 7, 13,
// 127) with broadcast, strided and reversed variants; one thread and several threads must give
// identical bytes; invalid inputs must fail with an Error naming the node.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>

#include "ir/error.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "runner/session.h"
#include "tests/kernel_test_util.h"

namespace onnxtool::tensor_kernels_test {
namespace {

using namespace testing;  // NOLINT: the kernel-test harness

const std::vector<int64_t> kOdd{1, 7, 13, 127};

// ---------------------------------------------------------------- layout copies

void check_transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  std::vector<int64_t> shape;
  for (int64_t p : perm) shape.push_back(x.dim(static_cast<size_t>(p)));
  const auto st = strides(x.shape());
  const Tensor want = gather_reference(x, shape, [&](const std::vector<int64_t>& c) {
    int64_t off = 0;
    for (size_t i = 0; i < perm.size(); ++i) off += c[i] * st[static_cast<size_t>(perm[i])];
    return off;
  });
  check_same(run1({"Transpose", 13, {x}, {attr_ints("perm", perm)}}), want);
}

TEST_SUITE("tensor_kernels") {
  TEST_CASE("Transpose matches the reference for every permutation at odd sizes") {
    for (int64_t a : kOdd)
      for (int64_t b : kOdd) {
        CAPTURE(a);
        CAPTURE(b);
        check_transpose(random_float({a, b}), {1, 0});
        check_transpose(random_ints(DataType::kInt64, {2, a, b}, -5, 5), {0, 2, 1});
        check_transpose(random_ints(DataType::kUInt8, {3, a, b}, 0, 255), {2, 0, 1});
      }
    // The NCHW <-> NHWC fast paths and every 4-D permutation on a small odd shape.
    const Tensor nchw = random_float({2, 7, 13, 5});
    check_transpose(nchw, {0, 2, 3, 1});
    check_transpose(random_float({2, 13, 5, 7}), {0, 3, 1, 2});
    check_transpose(random_float({1, 127, 127, 3}), {0, 3, 1, 2});
    std::vector<int64_t> p{0, 1, 2, 3};
    do {
      check_transpose(nchw, p);
    } while (std::next_permutation(p.begin(), p.end()));
    check_transpose(strings_of({3, 7, 2}), {2, 0, 1});
    Tensor halfs(DataType::kFloat16, {7, 13});
    for (int64_t i = 0; i < halfs.size(); ++i) halfs.mutable_data<uint16_t>()[i] = static_cast<uint16_t>(i * 31);
    check_transpose(halfs, {1, 0});
    // Default perm reverses the axes.
    const Tensor x = random_float({3, 1, 7});
    check_same(run1({"Transpose", 13, {x}, {}}), run1({"Transpose", 13, {x}, {attr_ints("perm", {2, 1, 0})}}));
  }

  TEST_CASE("Transpose of int4 keeps the packed codes") {
    Tensor x(DataType::kInt4, {3, 5});
    auto* p = static_cast<uint8_t*>(x.mutable_raw());
    for (size_t i = 0; i < x.bytes(); ++i) p[i] = static_cast<uint8_t>(i * 37 + 11);
    const Tensor y = run1({"Transpose", 21, {x}, {attr_ints("perm", {1, 0})}});
    auto code = [](const Tensor& t, int64_t i) { return (static_cast<const uint8_t*>(t.raw())[i / 2] >> (4 * (i % 2))) & 15; };
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 5; ++j) CHECK(code(y, j * 3 + i) == code(x, i * 5 + j));
  }

  TEST_CASE("Slice with negative steps, clamping and omitted axes matches the reference") {
    for (int64_t n : kOdd) {
      CAPTURE(n);
      const Tensor x = random_float({3, n, 5});
      struct S {
        std::vector<int64_t> starts, ends, axes, steps;
      };
      const std::vector<S> cases{
          {{0, 1}, {3, 1000}, {0, 1}, {1, 2}},
          {{-1, 100}, {-1000, -1000}, {1, 2}, {-1, -2}},
          {{2, -3}, {0, INT64_MAX}, {0, -2}, {-1, 3}},
          {{1}, {-1}, {}, {}},
      };
      for (const S& s : cases) {
        // Reference: numpy-style per-axis index lists.
        std::vector<std::vector<int64_t>> picks(3);
        for (int64_t d = 0; d < 3; ++d)
          for (int64_t i = 0; i < x.dim(static_cast<size_t>(d)); ++i) picks[static_cast<size_t>(d)].push_back(i);
        for (size_t i = 0; i < s.starts.size(); ++i) {
          int64_t a = s.axes.empty() ? static_cast<int64_t>(i) : s.axes[i];
          if (a < 0) a += 3;
          const int64_t dim = x.dim(static_cast<size_t>(a));
          const int64_t step = s.steps.empty() ? 1 : s.steps[i];
          int64_t b = s.starts[i] < 0 ? s.starts[i] + dim : s.starts[i];
          int64_t e = s.ends[i] < 0 && s.ends[i] != INT64_MAX ? s.ends[i] + dim : s.ends[i];
          std::vector<int64_t> v;
          if (step > 0) {
            b = std::clamp<int64_t>(b, 0, dim);
            e = std::clamp<int64_t>(e, 0, dim);
            for (int64_t k = b; k < e; k += step) v.push_back(k);
          } else {
            b = std::clamp<int64_t>(b, 0, dim - 1);
            e = std::clamp<int64_t>(e, -1, dim - 1);
            for (int64_t k = b; k > e; k += step) v.push_back(k);
          }
          picks[static_cast<size_t>(a)] = v;
        }
        std::vector<int64_t> shape;
        for (const auto& p : picks) shape.push_back(static_cast<int64_t>(p.size()));
        const auto st = strides(x.shape());
        const Tensor want = gather_reference(x, shape, [&](const std::vector<int64_t>& c) {
          int64_t off = 0;
          for (size_t d = 0; d < 3; ++d) off += picks[d][static_cast<size_t>(c[d])] * st[d];
          return off;
        });
        NodeCase c{"Slice", 13, {x, ints(s.starts), ints(s.ends)}, {}};
        if (!s.axes.empty()) c.inputs.push_back(ints(s.axes));
        if (!s.steps.empty()) {
          if (s.axes.empty()) c.inputs.push_back(Tensor());
          c.inputs.push_back(ints(s.steps));
        }
        check_same(run1(c), want);
        if (s.steps.empty()) {
          std::vector<Attr> attrs{attr_ints("starts", s.starts), attr_ints("ends", s.ends)};
          if (!s.axes.empty()) attrs.push_back(attr_ints("axes", s.axes));
          check_same(run1({"Slice", 1, {x}, attrs}), want);
        }
      }
    }
  }

  TEST_CASE("Expand and Tile broadcast like the reference") {
    for (int64_t n : kOdd) {
      CAPTURE(n);
      const Tensor col = random_float({n, 1});
      const std::vector<int64_t> shape{2, n, 7};
      const Tensor want = gather_reference(col, shape, [&](const std::vector<int64_t>& c) { return c[1]; });
      check_same(run1({"Expand", 13, {col, ints({2, 1, 7})}}), want);
      const Tensor row = strings_of({1, n});
      const Tensor want_row = gather_reference(row, {3, n}, [&](const std::vector<int64_t>& c) { return c[1]; });
      check_same(run1({"Expand", 13, {row, ints({3, 1})}}), want_row);

      const Tensor x = random_ints(DataType::kInt32, {3, n}, -100, 100);
      const Tensor tiled = gather_reference(x, {6, 2 * n}, [&](const std::vector<int64_t>& c) { return (c[0] % 3) * n + c[1] % n; });
      check_same(run1({"Tile", 13, {x, ints({2, 2})}}), tiled);
    }
    const Tensor x = random_float({2, 3});
    const Tensor want = gather_reference(x, {2, 9}, [](const std::vector<int64_t>& c) { return c[0] * 3 + c[1] % 3; });
    check_same(run1({"Tile", 1, {x, ints({3}, {1}), ints({1}, {1})}}), want);
  }

  TEST_CASE("Pad matches numpy.pad for every mode at odd sizes") {
    auto ref_index = [](int64_t p, int64_t n, const std::string& mode) -> int64_t {
      if (p >= 0 && p < n) return p;
      if (mode == "constant") return -1;
      if (mode == "edge") return p < 0 ? 0 : n - 1;
      if (mode == "wrap") return ((p % n) + n) % n;
      // reflect: bounce between 0 and n-1
      if (n == 1) return 0;
      while (p < 0 || p >= n) p = p < 0 ? -p : 2 * (n - 1) - p;
      return p;
    };
    for (int64_t n : kOdd)
      for (const std::string mode : {"constant", "reflect", "edge", "wrap"}) {
        CAPTURE(n);
        CAPTURE(mode);
        const Tensor x = random_float({2, n, 3});
        const std::vector<int64_t> pads{1, 3, 0, 0, std::min<int64_t>(n + 2, 20), 2};
        std::vector<int64_t> shape{3, n + 3 + std::min<int64_t>(n + 2, 20), 5};
        const Tensor want = gather_reference(
            x, shape,
            [&](const std::vector<int64_t>& c) {
              int64_t off = 0;
              const int64_t dims[3] = {2, n, 3};
              const int64_t st[3] = {n * 3, 3, 1};
              for (int d = 0; d < 3; ++d) {
                const int64_t s = ref_index(c[static_cast<size_t>(d)] - pads[static_cast<size_t>(d)], dims[d], mode);
                if (s < 0) return int64_t{-1};
                off += s * st[d];
              }
              return off;
            },
            2.5);
        check_same(run1({"Pad", 19, {x, ints(pads), floats({2.5f}, {1})}, {attr_string("mode", mode)}}), want);
      }
    // Negative pads crop; axes (18) select the padded axes; Pad-2 reads attributes.
    const Tensor x = random_float({4, 5});
    const Tensor crop = gather_reference(x, {4, 2}, [](const std::vector<int64_t>& c) { return c[0] * 5 + c[1] + 2; });
    check_same(run1({"Pad", 13, {x, ints({0, -2, 0, -1})}}), crop);
    check_same(run1({"Pad", 18, {x, ints({-2, -1}), Tensor(), ints({-1})}}), crop);
    check_same(run1({"Pad", 2, {x}, {attr_ints("pads", {0, -2, 0, -1})}}), crop);
  }

  TEST_CASE("Concat and Split are inverse at odd sizes") {
    for (int64_t n : kOdd) {
      CAPTURE(n);
      const Tensor a = random_float({3, n, 2});
      const Tensor b = random_float({3, 1, 2});
      const Tensor c = random_float({3, 7, 2});
      const Tensor cat = run1({"Concat", 13, {a, b, c}, {attr_int("axis", -2)}});
      REQUIRE(cat.shape() == std::vector<int64_t>{3, n + 8, 2});
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < n + 8; ++j)
          for (int64_t k = 0; k < 2; ++k) {
            const float v = j < n ? a.data<float>()[(i * n + j) * 2 + k]
                            : j == n ? b.data<float>()[i * 2 + k]
                                     : c.data<float>()[(i * 7 + j - n - 1) * 2 + k];
            CHECK(cat.data<float>()[(i * (n + 8) + j) * 2 + k] == v);
          }
      const auto parts = run_checked({"Split", 13, {cat, ints({n, 1, 7})}, {attr_int("axis", 1)}, 3});
      check_same(parts[0], a);
      check_same(parts[1], b);
      check_same(parts[2], c);
      const auto uneven = run_checked({"Split", 18, {floats({1, 2, 3, 4, 5, 6, 7})}, {attr_int("num_outputs", 4)}, 4});
      CHECK((uneven[0].size() == 2 && uneven[2].size() == 2 && uneven[3].size() == 1));
      CHECK(uneven[3].data<float>()[0] == 7);
      const auto halves = run_checked({"Split", 18, {random_float({n, 2})}, {attr_int("num_outputs", 3)}, 3});
      const int64_t chunk = (n + 2) / 3;
      CHECK(halves[0].dim(0) == std::min(chunk, n));
      CHECK(halves[0].dim(0) + halves[1].dim(0) + halves[2].dim(0) == n);
    }
  }

  TEST_CASE("Reshape, Flatten, Squeeze, Unsqueeze and Shape follow the spec's special values") {
    const Tensor x = random_float({2, 3, 4});
    CHECK(run1({"Reshape", 14, {x, ints({0, -1})}}).shape() == std::vector<int64_t>{2, 12});
    CHECK(run1({"Reshape", 14, {random_float({0, 3}), ints({3, 0})}, {attr_int("allowzero", 1)}}).shape() ==
          std::vector<int64_t>{3, 0});
    CHECK(run1({"Reshape", 1, {x}, {attr_ints("shape", {4, -1})}}).shape() == std::vector<int64_t>{4, 6});
    CHECK(run1({"Flatten", 13, {x}, {attr_int("axis", -1)}}).shape() == std::vector<int64_t>{6, 4});
    CHECK(run1({"Flatten", 13, {x}, {attr_int("axis", 0)}}).shape() == std::vector<int64_t>{1, 24});
    const Tensor y = random_float({1, 3, 1});
    CHECK(run1({"Squeeze", 13, {y}}).shape() == std::vector<int64_t>{3});
    CHECK(run1({"Squeeze", 11, {y}, {attr_ints("axes", {-1})}}).shape() == std::vector<int64_t>{1, 3});
    CHECK(run1({"Unsqueeze", 13, {y, ints({0, -1})}}).shape() == std::vector<int64_t>{1, 1, 3, 1, 1});
    CHECK(run1({"Unsqueeze", 11, {y}, {attr_ints("axes", {1})}}).shape() == std::vector<int64_t>{1, 1, 3, 1});
    const Tensor s = run1({"Shape", 15, {x}, {attr_int("start", -2), attr_int("end", 100)}});
    CHECK(std::vector<int64_t>(s.data<int64_t>(), s.data<int64_t>() + s.size()) == std::vector<int64_t>{3, 4});
    CHECK(run1({"Size", 13, {x}}).data<int64_t>()[0] == 24);
  }

  TEST_CASE("DepthToSpace and SpaceToDepth match the reference and invert each other") {
    for (int64_t n : {1, 7}) {
      const int64_t b = 2;
      const Tensor x = random_float({2, 4 * 3, n, 5});
      for (const std::string mode : {"DCR", "CRD"}) {
        const Tensor y = run1({"DepthToSpace", 13, {x}, {attr_int("blocksize", b), attr_string("mode", mode)}});
        const Tensor want = gather_reference(x, {2, 3, n * b, 5 * b}, [&](const std::vector<int64_t>& c) {
          const int64_t i = c[2] % b, j = c[3] % b;
          const int64_t ch = mode == "DCR" ? (i * b + j) * 3 + c[1] : c[1] * b * b + i * b + j;
          return ((c[0] * 12 + ch) * n + c[2] / b) * 5 + c[3] / b;
        });
        check_same(y, want);
        if (mode == "DCR") check_same(run1({"SpaceToDepth", 13, {y}, {attr_int("blocksize", b)}}), x);
      }
    }
  }

  // ---------------------------------------------------------------- indexing

  TEST_CASE("Gather, GatherElements and GatherND match the reference") {
    for (int64_t n : kOdd) {
      CAPTURE(n);
      const Tensor x = random_float({3, n, 4});
      const Tensor idx = random_ints(DataType::kInt64, {2, 5}, -n, n - 1);
      const Tensor g = run1({"Gather", 13, {x, idx}, {attr_int("axis", 1)}});
      const Tensor want = gather_reference(x, {3, 2, 5, 4}, [&](const std::vector<int64_t>& c) {
        int64_t j = idx.data<int64_t>()[c[1] * 5 + c[2]];
        if (j < 0) j += n;
        return (c[0] * n + j) * 4 + c[3];
      });
      check_same(g, want);

      const Tensor ei = random_ints(DataType::kInt32, {3, n, 2}, -4, 3);
      const Tensor ge = run1({"GatherElements", 13, {x, ei}, {attr_int("axis", 2)}});
      const Tensor want_e = gather_reference(x, {3, n, 2}, [&](const std::vector<int64_t>& c) {
        int64_t j = ei.data<int32_t>()[(c[0] * n + c[1]) * 2 + c[2]];
        if (j < 0) j += 4;
        return (c[0] * n + c[1]) * 4 + j;
      });
      check_same(ge, want_e);

      // batch_dims = 1: indices [3, 2, 1] pick rows of each batch.
      const Tensor ni = random_ints(DataType::kInt64, {3, 2, 1}, 0, n - 1);
      const Tensor gn = run1({"GatherND", 13, {x, ni}, {attr_int("batch_dims", 1)}});
      const Tensor want_n = gather_reference(x, {3, 2, 4}, [&](const std::vector<int64_t>& c) {
        return (c[0] * n + ni.data<int64_t>()[c[0] * 2 + c[1]]) * 4 + c[2];
      });
      check_same(gn, want_n);
    }
  }

  TEST_CASE("ScatterElements and ScatterND apply duplicates in index order") {
    const Tensor data = floats({1, 2, 3, 4, 5}, {1, 5});
    const Tensor idx = ints({1, 1, 3}, {1, 3});
    const Tensor upd = floats({10, 20, 30}, {1, 3});
    const Tensor add = run1({"ScatterElements", 16, {data, idx, upd}, {attr_int("axis", 1), attr_string("reduction", "add")}});
    CHECK(std::vector<float>(add.data<float>(), add.data<float>() + 5) == std::vector<float>{1, 32, 3, 34, 5});
    const Tensor mx = run1({"ScatterElements", 18, {data, idx, upd}, {attr_int("axis", 1), attr_string("reduction", "max")}});
    CHECK(std::vector<float>(mx.data<float>(), mx.data<float>() + 5) == std::vector<float>{1, 20, 3, 30, 5});
    const Tensor nd = run1({"ScatterND", 16, {random_float({4, 3}) , ints({1, 1, -1}, {3, 1}), floats({1, 1, 1, 2, 2, 2, 3, 3, 3}, {3, 3})},
                            {attr_string("reduction", "mul")}});
    CHECK(nd.shape() == std::vector<int64_t>{4, 3});
    const Tensor base = floats({0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3}, {4, 3});
    const Tensor nd2 = run1({"ScatterND", 16, {base, ints({1, 1, -1}, {3, 1}), floats({1, 1, 1, 2, 2, 2, 3, 3, 3}, {3, 3})},
                             {attr_string("reduction", "mul")}});
    CHECK(std::vector<float>(nd2.data<float>(), nd2.data<float>() + 12) == std::vector<float>{0, 0, 0, 2, 2, 2, 2, 2, 2, 9, 9, 9});
  }

  TEST_CASE("TopK breaks ties by the lower index and honours largest/smallest") {
    const Tensor x = floats({3, 1, 3, 2, 1, 3, 0}, {1, 7});
    const auto out = run_checked({"TopK", 11, {x, ints({4}, {1})}, {}, 2});
    CHECK(std::vector<float>(out[0].data<float>(), out[0].data<float>() + 4) == std::vector<float>{3, 3, 3, 2});
    CHECK(std::vector<int64_t>(out[1].data<int64_t>(), out[1].data<int64_t>() + 4) == std::vector<int64_t>{0, 2, 5, 3});
    const auto small = run_checked({"TopK", 11, {x, ints({3}, {1})}, {attr_int("largest", 0)}, 2});
    CHECK(std::vector<int64_t>(small[1].data<int64_t>(), small[1].data<int64_t>() + 3) == std::vector<int64_t>{6, 1, 4});
    // Along a middle axis at odd sizes: values are the sorted prefix of each column.
    for (int64_t n : kOdd) {
      const Tensor y = random_ints(DataType::kInt32, {2, n, 3}, -3, 3);
      const int64_t k = std::min<int64_t>(n, 5);
      const auto r = run_checked({"TopK", 11, {y, ints({k}, {1})}, {attr_int("axis", 1)}, 2});
      for (int64_t a = 0; a < 2; ++a)
        for (int64_t c = 0; c < 3; ++c) {
          std::vector<std::pair<int32_t, int64_t>> col;
          for (int64_t j = 0; j < n; ++j) col.push_back({y.data<int32_t>()[(a * n + j) * 3 + c], j});
          std::stable_sort(col.begin(), col.end(), [](auto p, auto q) { return p.first > q.first; });
          for (int64_t j = 0; j < k; ++j) {
            CHECK(r[0].data<int32_t>()[(a * k + j) * 3 + c] == col[static_cast<size_t>(j)].first);
            CHECK(r[1].data<int64_t>()[(a * k + j) * 3 + c] == col[static_cast<size_t>(j)].second);
          }
        }
    }
  }

  TEST_CASE("Unique, NonZero, Compress, OneHot and ReverseSequence") {
    const auto u = run_checked({"Unique", 11, {floats({2, 1, 1, 3, 4, 3})}, {attr_int("sorted", 0)}, 4});
    CHECK(std::vector<float>(u[0].data<float>(), u[0].data<float>() + 4) == std::vector<float>{2, 1, 3, 4});
    CHECK(std::vector<int64_t>(u[2].data<int64_t>(), u[2].data<int64_t>() + 6) == std::vector<int64_t>{0, 1, 1, 2, 3, 2});
    const auto ua = run_checked({"Unique", 11, {floats({1, 0, 0, 1, 0, 0, 2, 3, 4}, {3, 3})}, {attr_int("axis", 0)}, 4});
    CHECK(ua[0].shape() == std::vector<int64_t>{2, 3});
    CHECK(std::vector<int64_t>(ua[3].data<int64_t>(), ua[3].data<int64_t>() + 2) == std::vector<int64_t>{2, 1});

    const Tensor nz = run1({"NonZero", 13, {floats({0, 1, 0, 2}, {2, 2})}});
    CHECK(nz.shape() == std::vector<int64_t>{2, 2});
    CHECK(std::vector<int64_t>(nz.data<int64_t>(), nz.data<int64_t>() + 4) == std::vector<int64_t>{0, 1, 1, 1});

    Tensor cond(DataType::kBool, {2});
    cond.mutable_data<uint8_t>()[0] = 0;
    cond.mutable_data<uint8_t>()[1] = 1;
    const Tensor cx = run1({"Compress", 11, {floats({1, 2, 3, 4, 5, 6}, {3, 2}), cond}, {attr_int("axis", 0)}});
    CHECK(std::vector<float>(cx.data<float>(), cx.data<float>() + 2) == std::vector<float>{3, 4});

    const Tensor oh = run1({"OneHot", 11, {ints({1, -1, 5}), ints({3}, {1}), floats({0, 1})}, {attr_int("axis", 0)}});
    CHECK(std::vector<float>(oh.data<float>(), oh.data<float>() + 9) == std::vector<float>{0, 0, 0, 1, 0, 0, 0, 1, 0});

    const Tensor rs = run1({"ReverseSequence", 10,
                            {floats({0, 1, 2, 3, 4, 5, 6, 7}, {2, 4}), ints({2, 4})},
                            {attr_int("batch_axis", 0), attr_int("time_axis", 1)}});
    CHECK(std::vector<float>(rs.data<float>(), rs.data<float>() + 8) == std::vector<float>{1, 0, 2, 3, 7, 6, 5, 4});
  }

  // ---------------------------------------------------------------- generators, sequences

  TEST_CASE("Range, ConstantOfShape, EyeLike and Trilu") {
    const Tensor r = run1({"Range", 11, {floats({1}, {}), floats({2}, {}), floats({0.25f}, {})}});
    CHECK(std::vector<float>(r.data<float>(), r.data<float>() + r.size()) == std::vector<float>{1, 1.25f, 1.5f, 1.75f});
    const Tensor ri = run1({"Range", 11, {ints({10}, {}), ints({4}, {}), ints({-3}, {})}});
    CHECK(std::vector<int64_t>(ri.data<int64_t>(), ri.data<int64_t>() + ri.size()) == std::vector<int64_t>{10, 7});
    const Tensor z = run1({"ConstantOfShape", 9, {ints({2, 3})}});
    CHECK(z.dtype() == DataType::kFloat);
    CHECK(z.shape() == std::vector<int64_t>{2, 3});
    const Tensor e = run1({"EyeLike", 9, {random_float({3, 4})}, {attr_int("k", 1), attr_int("dtype", 7)}});
    CHECK(std::vector<int64_t>(e.data<int64_t>(), e.data<int64_t>() + 12) ==
          std::vector<int64_t>{0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
    for (int64_t n : kOdd)
      for (int64_t k : {-2, 0, 3}) {
        const Tensor x = random_float({2, n, 5});
        for (int64_t upper : {0, 1}) {
          const Tensor t = run1({"Trilu", 14, {x, ints({k}, {})}, {attr_int("upper", upper)}});
          for (int64_t i = 0; i < x.size(); ++i) {
            const auto c = unravel(i, x.shape());
            const bool keep = upper ? c[2] - c[1] >= k : c[2] - c[1] <= k;
            CHECK(t.data<float>()[i] == (keep ? x.data<float>()[i] : 0.0f));
          }
        }
      }
  }

  TEST_CASE("Sequence ops inside a graph") {
    ir::Model m = empty_model(17);
    ir::Graph& g = *m.graph;
    ir::Value* x = g.add_input("x", ir::TypeInfo::tensor(DataType::kFloat)).value;
    ir::Node* split = g.add_node("SplitToSequence", {x}, {"seq"}, "", "split");
    split->set_attr(Attribute::make_int("axis", 1));
    ir::Value* pos = g.add_initializer(ir::make_tensor("pos", DataType::kInt64, {}, std::vector<int64_t>{0}.data(), 8));
    ir::Node* erase = g.add_node("SequenceErase", {split->output(0), pos}, {"seq2"}, "", "erase");
    ir::Node* len = g.add_node("SequenceLength", {erase->output(0)}, {"len"}, "", "len");
    ir::Node* cat = g.add_node("ConcatFromSequence", {erase->output(0)}, {"y"}, "", "cat");
    cat->set_attr(Attribute::make_int("axis", 1));
    cat->set_attr(Attribute::make_int("new_axis", 1));
    g.add_output(cat->output(0), std::nullopt);
    g.add_output(len->output(0), std::nullopt);
    runner::Session s(m, runner::SessionOptions{1});
    const Tensor in = random_float({2, 3});
    auto out = s.run({{"x", Value::of(in)}});
    REQUIRE(out[0].is_tensor());
    CHECK(out[0].tensor.shape() == std::vector<int64_t>{2, 2, 1});
    CHECK(out[0].tensor.data<float>()[0] == in.data<float>()[1]);
    CHECK(out[0].tensor.data<float>()[3] == in.data<float>()[5]);
    CHECK(out[1].tensor.data<int64_t>()[0] == 2);
  }

  // ---------------------------------------------------------------- Resize

  TEST_CASE("Resize nearest asymmetric floor (PaddleOCR det) matches the reference at odd sizes") {
    for (int64_t h : kOdd)
      for (float s : {2.0f, 4.0f, 0.5f, 1.5f}) {
        CAPTURE(h);
        CAPTURE(s);
        const Tensor x = random_float({1, 3, h, 7});
        const int64_t oh = static_cast<int64_t>(std::floor(h * static_cast<double>(s)));
        const int64_t ow = static_cast<int64_t>(std::floor(7 * static_cast<double>(s)));
        const Tensor y = run1({"Resize", 11, {x, floats({}, {0}), floats({1, 1, s, s})},
                               {attr_string("mode", "nearest"), attr_string("coordinate_transformation_mode", "asymmetric"),
                                attr_string("nearest_mode", "floor")}});
        const Tensor want = gather_reference(x, {1, 3, oh, ow}, [&](const std::vector<int64_t>& c) {
          const int64_t iy = std::min<int64_t>(h - 1, static_cast<int64_t>(std::floor(c[2] / static_cast<double>(s))));
          const int64_t ix = std::min<int64_t>(6, static_cast<int64_t>(std::floor(c[3] / static_cast<double>(s))));
          return (c[1] * h + iy) * 7 + ix;
        });
        check_same(y, want);
      }
  }

  TEST_CASE("Resize linear and cubic match a double-precision reference") {
    // Separable reference: 1-D weights per output coordinate from the textbook formulas.
    auto linear_1d = [](double x, int64_t n, std::vector<std::pair<int64_t, double>>& taps) {
      x = std::clamp(x, 0.0, static_cast<double>(n - 1));
      const int64_t i0 = static_cast<int64_t>(std::floor(x));
      const int64_t i1 = std::min(i0 + 1, n - 1);
      taps = {{i0, 1 - (x - i0)}, {i1, x - i0}};
    };
    auto cubic_1d = [](double x, int64_t n, std::vector<std::pair<int64_t, double>>& taps) {
      const double a = -0.75;
      auto k = [a](double s) {
        s = std::fabs(s);
        if (s <= 1) return (a + 2) * s * s * s - (a + 3) * s * s + 1;
        if (s < 2) return a * s * s * s - 5 * a * s * s + 8 * a * s - 4 * a;
        return 0.0;
      };
      const int64_t f = static_cast<int64_t>(std::floor(x));
      taps.clear();
      for (int64_t p = f - 1; p <= f + 2; ++p) taps.push_back({std::clamp<int64_t>(p, 0, n - 1), k(p - x)});
    };
    for (const std::string mode : {"linear", "cubic"})
      for (int64_t h : kOdd) {
        CAPTURE(mode);
        CAPTURE(h);
        const int64_t w = 13;
        const Tensor x = random_float({2, h, w});
        const int64_t oh = h * 2 + 1, ow = 5;  // upscale one axis, downscale the other
        const Tensor y = run1({"Resize", 13, {x, Tensor(), Tensor(), ints({2, oh, ow})}, {attr_string("mode", mode)}});
        std::vector<double> want;
        std::vector<std::pair<int64_t, double>> ty, tx;
        for (int64_t b = 0; b < 2; ++b)
          for (int64_t i = 0; i < oh; ++i)
            for (int64_t j = 0; j < ow; ++j) {
              const double sy = static_cast<double>(oh) / h, sx = static_cast<double>(ow) / w;
              const double yy = (i + 0.5) / sy - 0.5, xx = (j + 0.5) / sx - 0.5;
              if (mode == "linear") {
                linear_1d(yy, h, ty);
                linear_1d(xx, w, tx);
              } else {
                cubic_1d(yy, h, ty);
                cubic_1d(xx, w, tx);
              }
              double acc = 0;
              for (auto [iy, wy] : ty)
                for (auto [ix, wx] : tx) acc += wy * wx * x.data<float>()[(b * h + iy) * w + ix];
              want.push_back(acc);
            }
        check_close(y, want, 1e-5);
        // The double path (generic weighted loop) against the same reference.
        Tensor xd(DataType::kDouble, x.shape());
        for (int64_t i = 0; i < x.size(); ++i) xd.mutable_data<double>()[i] = x.data<float>()[i];
        const Tensor yd = run1({"Resize", 13, {xd, Tensor(), Tensor(), ints({2, oh, ow})}, {attr_string("mode", mode)}});
        for (int64_t i = 0; i < yd.size(); ++i) CHECK(std::fabs(yd.data<double>()[i] - want[static_cast<size_t>(i)]) < 1e-9);
      }
  }

  TEST_CASE("Resize antialias, axes, keep_aspect_ratio_policy and tf_crop_and_resize") {
    // Antialiased linear downscale by 4 of a 1-D ramp: a normalized triangle of half-width 4.
    std::vector<float> ramp(16);
    for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<float>(i * i);
    const Tensor x = floats(ramp, {1, 16});
    const Tensor y = run1({"Resize", 18, {x, Tensor(), floats({0.25f}, {1})},
                           {attr_string("mode", "linear"), attr_int("antialias", 1), attr_ints("axes", {1})}});
    REQUIRE(y.shape() == std::vector<int64_t>{1, 4});
    std::vector<double> want;
    for (int64_t o = 0; o < 4; ++o) {
      const double c = (o + 0.5) / 0.25 - 0.5;
      double acc = 0, sum = 0;
      for (int64_t p = static_cast<int64_t>(std::floor(c)) - 3; p <= static_cast<int64_t>(std::floor(c)) + 4; ++p) {
        const double wt = std::max(0.0, 1 - std::fabs((p - c) * 0.25));
        acc += wt * ramp[static_cast<size_t>(std::clamp<int64_t>(p, 0, 15))];
        sum += wt;
      }
      want.push_back(acc / sum);
    }
    check_close(y, want, 1e-5);

    const Tensor img = random_float({1, 1, 4, 8});
    const Tensor kept = run1({"Resize", 18, {img, Tensor(), Tensor(), ints({4, 4})},
                              {attr_ints("axes", {2, 3}), attr_string("keep_aspect_ratio_policy", "not_larger")}});
    CHECK(kept.shape() == std::vector<int64_t>{1, 1, 2, 4});
    const Tensor bigger = run1({"Resize", 18, {img, Tensor(), Tensor(), ints({4, 4})},
                                {attr_ints("axes", {2, 3}), attr_string("keep_aspect_ratio_policy", "not_smaller")}});
    CHECK(bigger.shape() == std::vector<int64_t>{1, 1, 4, 8});

    // Crop box partly outside: outside samples take extrapolation_value.
    const Tensor crop = run1({"Resize", 13,
                              {floats({1, 2, 3, 4}, {1, 4}), floats({0, 0.5f, 1, 1.5f}), Tensor(), ints({1, 3})},
                              {attr_string("mode", "linear"), attr_string("coordinate_transformation_mode", "tf_crop_and_resize"),
                               attr_float("extrapolation_value", -7)}});
    CHECK(std::vector<float>(crop.data<float>(), crop.data<float>() + 3) == std::vector<float>{2.5f, 4, -7});
  }

  TEST_CASE("Resize opset 18/19 attributes reproduce the spec's documented examples") {
    std::vector<float> v16(16);
    std::iota(v16.begin(), v16.end(), 1.0f);
    const Tensor x16 = floats(v16, {1, 1, 4, 4});
    const Tensor x8 = floats({1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 2, 4});
    const Tensor none;
    const Tensor down = floats({1, 1, 0.6f, 0.6f});
    check_close(run1({"Resize", 18, {x16, none, down}, {attr_string("mode", "cubic"), attr_int("antialias", 1)}}),
                {2.5180721, 4.2858863, 9.589329, 11.357142}, 1e-5);
    check_close(run1({"Resize", 18, {x16, none, down}, {attr_string("mode", "linear"), attr_int("antialias", 1)}}),
                {2.875, 4.5, 9.375, 11.0}, 1e-5);
    check_close(run1({"Resize", 18, {x16, none, none, ints({1, 1, 3, 3})}, {attr_string("mode", "cubic"), attr_int("antialias", 1)}}),
                {1.7750092, 3.1200073, 4.4650054, 7.1550016, 8.5, 9.844998, 12.534994, 13.8799925, 15.224991}, 1e-5);
    check_close(run1({"Resize", 18, {x16, none, none, ints({1, 1, 3, 3})}, {attr_string("mode", "linear"), attr_int("antialias", 1)}}),
                {2.3636363, 3.590909, 4.818182, 7.2727275, 8.5, 9.727273, 12.181818, 13.409091, 14.636364}, 1e-5);
    check_close(run1({"Resize", 19, {floats({1, 2, 3, 4}, {1, 1, 1, 4}), none, floats({1, 1, 1, 0.6f})},
                      {attr_string("mode", "linear"), attr_string("coordinate_transformation_mode", "half_pixel_symmetric")}}),
                {1.6666667, 3.3333333}, 1e-5);
    check_close(run1({"Resize", 19, {floats({1, 2, 3, 4}, {1, 1, 2, 2}), none, floats({1, 1, 2.3f, 2.94f})},
                      {attr_string("mode", "linear"), attr_string("coordinate_transformation_mode", "half_pixel_symmetric")}}),
                {1, 1.15986395, 1.5, 1.84013605, 2, 1.56521738, 1.72508133, 2.06521738, 2.40535343, 2.56521738,
                 2.43478262, 2.59464657, 2.93478262, 3.27491867, 3.43478262, 3, 3.15986395, 3.5, 3.84013605, 4},
                1e-5);
    const Tensor nl = run1({"Resize", 18, {x8, none, none, ints({1, 3})},
                            {attr_ints("axes", {2, 3}), attr_string("keep_aspect_ratio_policy", "not_larger")}});
    CHECK(nl.shape() == std::vector<int64_t>{1, 1, 1, 2});
    check_close(nl, {1, 3}, 0);
    const Tensor ns = run1({"Resize", 18, {x8, none, none, ints({1, 3})},
                            {attr_ints("axes", {2, 3}), attr_string("keep_aspect_ratio_policy", "not_smaller")}});
    CHECK(ns.shape() == std::vector<int64_t>{1, 1, 2, 3});
    check_close(ns, {1, 2, 4, 5, 6, 8}, 0);
    check_close(run1({"Resize", 18, {x16, floats({0.6f, 0.4f, 0.8f, 0.6f}), none, ints({3, 3})},
                      {attr_string("mode", "linear"), attr_string("coordinate_transformation_mode", "tf_crop_and_resize"),
                       attr_ints("axes", {3, 2})}}),
                {7.6000004, 7.9, 8.2, 8.8, 9.1, 9.400001, 10, 10.3, 10.6}, 1e-5);
    check_close(run1({"Resize", 13, {x16, floats({0, 0, 0.4f, 0.6f, 1, 1, 1.2f, 1.7f}), none, ints({1, 1, 3, 3})},
                      {attr_string("mode", "linear"), attr_string("coordinate_transformation_mode", "tf_crop_and_resize"),
                       attr_float("extrapolation_value", 10)}}),
                {7.6000004, 10, 10, 12.400001, 10, 10, 10, 10, 10}, 1e-5);
  }

  TEST_CASE("Upsample nearest repeats elements") {
    const Tensor x = floats({1, 2, 3, 4}, {1, 1, 2, 2});
    const Tensor y = run1({"Upsample", 9, {x, floats({1, 1, 2, 3})}});
    REQUIRE(y.shape() == std::vector<int64_t>{1, 1, 4, 6});
    CHECK(std::vector<float>(y.data<float>(), y.data<float>() + 6) == std::vector<float>{1, 1, 1, 2, 2, 2});
    const Tensor z = run1({"Upsample", 7, {x}, {attr_floats("scales", {1, 1, 2, 2})}});
    CHECK(z.shape() == std::vector<int64_t>{1, 1, 4, 4});
  }

  // ---------------------------------------------------------------- invalid inputs

  TEST_CASE("invalid inputs fail cleanly naming the node") {
    const Tensor x = random_float({2, 3});
    check_fails({"Reshape", 14, {x, ints({4, 2})}}, "cannot reshape");
    check_fails({"Reshape", 14, {x, ints({-1, -1})}}, "more than one -1");
    check_fails({"Transpose", 13, {x}, {attr_ints("perm", {0, 0})}}, "repeated");
    check_fails({"Concat", 13, {x, random_float({3, 3})}, {attr_int("axis", 1)}}, "differ outside the axis");
    check_fails({"Concat", 13, {x, x}}, "axis");
    check_fails({"Split", 13, {x, ints({1, 1})}, {attr_int("axis", 1)}, 2}, "sum to");
    check_fails({"Slice", 13, {x, ints({0}), ints({1}), ints({0}), ints({0})}}, "cannot be 0");
    check_fails({"Expand", 13, {x, ints({4, 3})}}, "do not broadcast");
    check_fails({"Gather", 13, {x, ints({3})}, {attr_int("axis", 0)}}, "out of range");
    check_fails({"GatherElements", 13, {x, ints({0, 5}, {1, 2})}, {attr_int("axis", 1)}}, "out of range");
    check_fails({"GatherND", 13, {x, ints({0, 0, 0}, {1, 3})}}, "last dim of indices");
    check_fails({"ScatterND", 13, {x, ints({2}, {1, 1}), random_float({1, 3})}}, "out of range");
    check_fails({"ScatterElements", 13, {x, ints({0}, {1, 1}), random_float({1, 2})}}, "same shape");
    check_fails({"TopK", 11, {x, ints({4}, {1})}, {}, 2}, "out of range");
    check_fails({"Pad", 13, {x, ints({0, -4, 0, 0})}}, "pads remove");
    check_fails({"Pad", 13, {x, ints({0, 1})}}, "pads has");
    check_fails({"Squeeze", 13, {x, ints({0})}}, "size is not 1");
    check_fails({"Unsqueeze", 13, {x, ints({5})}}, "out of range");
    check_fails({"Tile", 13, {x, ints({2})}}, "repeats");
    check_fails({"DepthToSpace", 13, {random_float({1, 3, 2, 2})}, {attr_int("blocksize", 2)}}, "multiple");
    check_fails({"Range", 11, {ints({0}, {}), ints({5}, {}), ints({0}, {})}}, "delta");
    check_fails({"Resize", 13, {x, Tensor(), floats({1, 2}), ints({2, 6})}}, "exactly one");
    check_fails({"Resize", 13, {x, Tensor(), floats({1, 2, 3})}}, "scales has");
    check_fails({"OneHot", 11, {ints({0}), ints({0}, {1}), floats({0, 1})}}, "depth");
    check_fails({"ReverseSequence", 10, {x, ints({3, 1, 1})}, {attr_int("batch_axis", 1), attr_int("time_axis", 0)}},
                "out of range");
    check_fails({"Compress", 11, {x, ints({1})}, {attr_int("axis", 0)}}, "bool");
  }
}

}  // namespace
}  // namespace onnxtool::tensor_kernels_test
