// Tests of the image-layout kernels (runner/cpu/image.cpp): Col2Im, CenterCropPad, AffineGrid,
// DeformConv and BitCast, against the spec's examples and plain reference loops at odd sizes;
// one and three threads must give identical bytes; bad inputs fail naming the node.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "tests/kernel_test_util.h"

namespace onnxtool::image_kernels_test {
namespace {

using namespace testing;  // NOLINT: the kernel-test harness

double at(const Tensor& t, int64_t i) { return t.data<float>()[i]; }

/// Bilinear sample of a plane at pixel coordinates, zeros outside.
double bilinear(const Tensor& x, int64_t plane, int64_t h, int64_t w, double y, double xx) {
  const double y0 = std::floor(y), x0 = std::floor(xx);
  double v = 0;
  for (int dy = 0; dy < 2; ++dy)
    for (int dx = 0; dx < 2; ++dx) {
      const auto yi = static_cast<int64_t>(y0) + dy, xi = static_cast<int64_t>(x0) + dx;
      const double wgt = (dy ? y - y0 : 1 - (y - y0)) * (dx ? xx - x0 : 1 - (xx - x0));
      if (yi >= 0 && yi < h && xi >= 0 && xi < w) v += wgt * at(x, plane * h * w + yi * w + xi);
    }
  return v;
}

TEST_SUITE("image_kernels") {
  TEST_CASE("Col2Im: the spec's example") {
    const Tensor in = floats({1, 6, 11, 16, 21, 2, 7, 12, 17, 22, 3, 8, 13, 18, 23, 4, 9, 14, 19, 24, 5, 0, 15, 20, 25},
                             {1, 5, 5});
    const Tensor y = run1({"Col2Im", 18, {in, ints({5, 5}), ints({1, 5})}});
    REQUIRE(y.shape() == std::vector<int64_t>{1, 1, 5, 5});
    check_close(y, {1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25}, 0);
  }

  TEST_CASE("Col2Im with strides, pads and dilations against a fold loop") {
    const int64_t n = 2, c = 3, ih = 7, iw = 6, bh = 2, bw = 3, sh = 2, sw = 1, dh = 2, dw = 1;
    const int64_t pt = 1, pl = 0, pb = 2, pr = 1;
    const int64_t nh = (ih + pt + pb - (dh * (bh - 1) + 1)) / sh + 1, nw = (iw + pl + pr - (dw * (bw - 1) + 1)) / sw + 1;
    const Tensor in = random_float({n, c * bh * bw, nh * nw}, -1, 1);
    const Tensor y = run1({"Col2Im", 18, {in, ints({ih, iw}), ints({bh, bw})},
                           {attr_ints("strides", {sh, sw}), attr_ints("dilations", {dh, dw}), attr_ints("pads", {pt, pl, pb, pr})}});
    std::vector<double> want(static_cast<size_t>(n * c * ih * iw), 0.0);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t ky = 0; ky < bh; ++ky)
          for (int64_t kx = 0; kx < bw; ++kx)
            for (int64_t ly = 0; ly < nh; ++ly)
              for (int64_t lx = 0; lx < nw; ++lx) {
                const int64_t yy = ly * sh - pt + ky * dh, xx = lx * sw - pl + kx * dw;
                if (yy < 0 || yy >= ih || xx < 0 || xx >= iw) continue;
                want[static_cast<size_t>(((b * c + ch) * ih + yy) * iw + xx)] +=
                    at(in, ((b * c * bh * bw) + (ch * bh + ky) * bw + kx) * nh * nw + ly * nw + lx);
              }
    check_close(y, want, 1e-6);
    check_fails({"Col2Im", 18, {random_float({1, 6, 5}, -1, 1), ints({5, 5}), ints({2, 3})}}, "blocks");
  }

  TEST_CASE("CenterCropPad: crop, pad, both, with axes, on strings") {
    const Tensor x = random_float({20, 10, 3}, -1, 1);
    const Tensor y = run1({"CenterCropPad", 18, {x, ints({10, 7, 3})}});
    check_same(y, gather_reference(x, {10, 7, 3}, [](const std::vector<int64_t>& i) {
                 return ((i[0] + 5) * 10 + i[1] + 1) * 3 + i[2];
               }));
    const Tensor x2 = random_float({10, 7, 3}, -1, 1);
    const Tensor y2 = run1({"CenterCropPad", 18, {x2, ints({20, 10})}, {attr_ints("axes", {0, -2})}});
    check_same(y2, gather_reference(x2, {20, 10, 3}, [](const std::vector<int64_t>& i) -> int64_t {
                 const int64_t a = i[0] - 5, b = i[1] - 1;
                 return a < 0 || a >= 10 || b < 0 || b >= 7 ? -1 : (a * 7 + b) * 3 + i[2];
               }));
    const Tensor s = strings_of({3, 4});
    const Tensor ys = run1({"CenterCropPad", 18, {s, ints({6, 1})}});
    check_same(ys, gather_reference(s, {6, 1}, [](const std::vector<int64_t>& i) -> int64_t {
                 const int64_t a = i[0] - 1;
                 return a < 0 || a >= 3 ? -1 : a * 4 + 1;
               }));
    check_fails({"CenterCropPad", 18, {x, ints({10, 7})}}, "axes");
  }

  TEST_CASE("AffineGrid 2-D and 3-D with and without align_corners") {
    for (int align : {0, 1}) {
      const int64_t n = 2, h = 4, w = 5, d = 3;
      auto base = [&](int64_t i, int64_t len) {
        if (align) return len > 1 ? -1.0 + 2.0 * i / (len - 1) : -1.0;
        return (2.0 * i + 1) / len - 1;
      };
      const Tensor th2 = random_float({n, 2, 3}, -1, 1);
      const Tensor g2 = run1({"AffineGrid", 20, {th2, ints({n, 3, h, w})}, {attr_int("align_corners", align)}});
      REQUIRE(g2.shape() == std::vector<int64_t>{n, h, w, 2});
      std::vector<double> want;
      for (int64_t b = 0; b < n; ++b)
        for (int64_t y = 0; y < h; ++y)
          for (int64_t x = 0; x < w; ++x)
            for (int r = 0; r < 2; ++r)
              want.push_back(at(th2, b * 6 + r * 3) * base(x, w) + at(th2, b * 6 + r * 3 + 1) * base(y, h) +
                             at(th2, b * 6 + r * 3 + 2));
      check_close(g2, want, 1e-6);
      const Tensor th3 = random_float({n, 3, 4}, -1, 1);
      const Tensor g3 = run1({"AffineGrid", 20, {th3, ints({n, 1, d, h, w})}, {attr_int("align_corners", align)}});
      REQUIRE(g3.shape() == std::vector<int64_t>{n, d, h, w, 3});
      want.clear();
      for (int64_t b = 0; b < n; ++b)
        for (int64_t z = 0; z < d; ++z)
          for (int64_t y = 0; y < h; ++y)
            for (int64_t x = 0; x < w; ++x)
              for (int r = 0; r < 3; ++r)
                want.push_back(at(th3, b * 12 + r * 4) * base(x, w) + at(th3, b * 12 + r * 4 + 1) * base(y, h) +
                               at(th3, b * 12 + r * 4 + 2) * base(z, d) + at(th3, b * 12 + r * 4 + 3));
      check_close(g3, want, 1e-6);
    }
    check_fails({"AffineGrid", 20, {random_float({2, 2, 3}, -1, 1), ints({2, 3, 4})}}, "size");
  }

  TEST_CASE("DeformConv: bilinear taps with offsets, mask, groups and offset groups") {
    const int64_t n = 2, ic = 4, ih = 6, iw = 5, oc = 6, group = 2, og = 2, kh = 2, kw = 3;
    const int64_t sh = 1, sw = 2, ph = 1, pw = 1, dh = 2, dw = 1;
    const int64_t oh = (ih + 2 * ph - (dh * (kh - 1) + 1)) / sh + 1, ow = (iw + 2 * pw - (dw * (kw - 1) + 1)) / sw + 1;
    const Tensor x = random_float({n, ic, ih, iw}, -1, 1), w = random_float({oc, ic / group, kh, kw}, -1, 1),
                 b = random_float({oc}, -1, 1);
    const Tensor off = random_float({n, og * kh * kw * 2, oh, ow}, -1.5f, 1.5f),
                 mask = random_float({n, og * kh * kw, oh, ow}, 0, 1);
    for (bool with_mask : {false, true}) {
      std::vector<Tensor> in = {x, w, off, b};
      if (with_mask) in.push_back(mask);
      const Tensor y = run1({"DeformConv", 22, in,
                             {attr_int("group", group), attr_int("offset_group", og), attr_ints("strides", {sh, sw}),
                              attr_ints("pads", {ph, pw, ph, pw}), attr_ints("dilations", {dh, dw})}});
      REQUIRE(y.shape() == std::vector<int64_t>{n, oc, oh, ow});
      std::vector<double> want;
      for (int64_t bb = 0; bb < n; ++bb)
        for (int64_t m = 0; m < oc; ++m)
          for (int64_t i = 0; i < oh; ++i)
            for (int64_t j = 0; j < ow; ++j) {
              double acc = at(b, m);
              const int64_t g = m / (oc / group);
              for (int64_t cg = 0; cg < ic / group; ++cg) {
                const int64_t c = g * (ic / group) + cg, o = c / (ic / og);
                for (int64_t a = 0; a < kh; ++a)
                  for (int64_t e = 0; e < kw; ++e) {
                    const int64_t tap = (o * kh + a) * kw + e;
                    const double oy = at(off, ((bb * og * kh * kw * 2) + tap * 2) * oh * ow + i * ow + j);
                    const double ox = at(off, ((bb * og * kh * kw * 2) + tap * 2 + 1) * oh * ow + i * ow + j);
                    const double mk = with_mask ? at(mask, (bb * og * kh * kw + tap) * oh * ow + i * ow + j) : 1.0;
                    const double v = bilinear(x, bb * ic + c, ih, iw, i * sh - ph + a * dh + oy, j * sw - pw + e * dw + ox);
                    acc += at(w, ((m * (ic / group) + cg) * kh + a) * kw + e) * v * mk;
                  }
              }
              want.push_back(acc);
            }
      check_close(y, want, 1e-5);
    }
    check_fails({"DeformConv", 19, {x, w, random_float({n, 3, oh, ow}, -1, 1)}, {attr_int("group", group)}}, "offset");
  }

  TEST_CASE("BitCast keeps the bits and checks the widths") {
    const Tensor f = floats({1.0f, -2.5f, 0.0f});
    const Tensor y = run1({"BitCast", 26, {f}, {attr_int("to", static_cast<int64_t>(DataType::kInt32))}});
    REQUIRE(y.dtype() == DataType::kInt32);
    for (int64_t i = 0; i < 3; ++i) {
      int32_t bits;
      std::memcpy(&bits, f.data<float>() + i, 4);
      CHECK(y.data<int32_t>()[i] == bits);
    }
    check_fails({"BitCast", 26, {f}, {attr_int("to", static_cast<int64_t>(DataType::kInt64))}}, "bits");
  }
}

}  // namespace
}  // namespace onnxtool::image_kernels_test
