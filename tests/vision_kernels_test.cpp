// Tests of the vision kernels (runner/cpu/vision.cpp): GridSample, RoiAlign and NonMaxSuppression,
// each run as a one-node model against a plain reference loop at odd sizes; one thread and several
// threads must give identical bytes; invalid inputs must fail with an Error naming the node.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "tests/kernel_test_util.h"

namespace onnxtool::vision_kernels_test {
namespace {

using namespace testing;  // NOLINT: the kernel-test harness

// ---------------------------------------------------------------- GridSample references

/// Bilinear (or nearest) sampling of one 2-D plane at normalized (gx, gy), written the
/// PyTorch way: unnormalize, then read pixels with zero or border padding.
double sample2d(const float* plane, int64_t h, int64_t w, double gx, double gy, bool align, bool nearest, bool border) {
  auto unnorm = [&](double g, int64_t len) { return align ? (g + 1) / 2 * (len - 1) : ((g + 1) * len - 1) / 2; };
  double x = unnorm(gx, w), y = unnorm(gy, h);
  if (border) {
    x = std::min<double>(w - 1, std::max(0.0, x));
    y = std::min<double>(h - 1, std::max(0.0, y));
  }
  auto px = [&](int64_t yi, int64_t xi) -> double {
    if (border) {
      xi = std::min(w - 1, std::max<int64_t>(0, xi));
      yi = std::min(h - 1, std::max<int64_t>(0, yi));
    }
    return yi >= 0 && yi < h && xi >= 0 && xi < w ? plane[yi * w + xi] : 0.0;
  };
  if (nearest) return px(static_cast<int64_t>(std::nearbyint(y)), static_cast<int64_t>(std::nearbyint(x)));
  const double x0 = std::floor(x), y0 = std::floor(y), tx = x - x0, ty = y - y0;
  const auto xi = static_cast<int64_t>(x0), yi = static_cast<int64_t>(y0);
  return (1 - ty) * ((1 - tx) * px(yi, xi) + tx * px(yi, xi + 1)) + ty * ((1 - tx) * px(yi + 1, xi) + tx * px(yi + 1, xi + 1));
}

void check_grid_sample_2d(int64_t h, int64_t w, int64_t oh, int64_t ow, bool align, const std::string& mode,
                          const std::string& padding, int64_t opset) {
  const int64_t n = 2, c = 3;
  const Tensor x = random_float({n, c, h, w});
  const Tensor grid = random_float({n, oh, ow, 2}, -1.3f, 1.3f);
  const Tensor y = run1({"GridSample", opset, {x, grid},
                         {attr_string("mode", mode), attr_string("padding_mode", padding), attr_int("align_corners", align)}});
  REQUIRE(y.shape() == std::vector<int64_t>{n, c, oh, ow});
  std::vector<double> want;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < oh * ow; ++i) {
        const float* g = grid.data<float>() + (b * oh * ow + i) * 2;
        want.push_back(sample2d(x.data<float>() + (b * c + ch) * h * w, h, w, g[0], g[1], align, mode == "nearest",
                                padding == "border"));
      }
  check_close(y, want, 1e-5);
}

TEST_SUITE("vision_kernels") {
  TEST_CASE("GridSample bilinear and nearest with zeros and border padding at odd sizes") {
    for (int64_t s : {1, 7, 13})
      for (bool align : {false, true})
        for (const char* padding : {"zeros", "border"}) {
          CAPTURE(s);
          CAPTURE(align);
          CAPTURE(padding);
          check_grid_sample_2d(s, s + 2, 5, 3, align, "bilinear", padding, 16);
          check_grid_sample_2d(s + 1, s, 3, 7, align, "linear", padding, 20);
          check_grid_sample_2d(s, s + 1, 4, 5, align, "nearest", padding, 22);
        }
  }

  TEST_CASE("GridSample reflection, cubic on a constant image, 3-D linear and integer inputs") {
    // Reflection of x = -3.5 with align_corners=1 on a width of 3 (borders 0 and 2) lands on 0.5.
    const Tensor row = floats({10, 20, 30}, {1, 1, 1, 3});
    // Normalized g with (g + 1) / 2 * 2 = -3.5: g = -4.5.
    Tensor y = run1({"GridSample", 16, {row, floats({-4.5f, 0}, {1, 1, 1, 2})},
                     {attr_string("padding_mode", "reflection"), attr_int("align_corners", 1)}});
    check_close(y, {15}, 1e-6);
    // Cubic weights sum to one: a constant image stays constant under border padding.
    Tensor flat(DataType::kFloat, {1, 2, 5, 4});
    for (int64_t i = 0; i < flat.size(); ++i) flat.mutable_data<float>()[i] = 2.5f;
    for (const char* padding : {"border", "reflection"}) {
      y = run1({"GridSample", 16, {flat, random_float({1, 3, 7, 2}, -1.5f, 1.5f)},
                {attr_string("mode", "bicubic"), attr_string("padding_mode", padding)}});
      check_close(y, std::vector<double>(42, 2.5), 1e-5);
    }
    // Trilinear sampling of the linear function f(z, y, x) = x + 10 y + 100 z inside the volume
    // (align_corners=1, points within [-1, 1]) reproduces the function.
    const int64_t d = 3, h = 4, w = 5;
    Tensor vol(DataType::kFloat, {1, 1, d, h, w});
    for (int64_t z = 0; z < d; ++z)
      for (int64_t yy = 0; yy < h; ++yy)
        for (int64_t xx = 0; xx < w; ++xx) vol.mutable_data<float>()[(z * h + yy) * w + xx] = static_cast<float>(xx + 10 * yy + 100 * z);
    const Tensor grid = random_float({1, 2, 3, 7, 3}, -1, 1);
    y = run1({"GridSample", 20, {vol, grid}, {attr_int("align_corners", 1)}});
    REQUIRE(y.shape() == std::vector<int64_t>{1, 1, 2, 3, 7});
    std::vector<double> want;
    for (int64_t i = 0; i < 42; ++i) {
      const float* g = grid.data<float>() + i * 3;
      want.push_back((g[0] + 1) / 2 * (w - 1) + 10 * (g[1] + 1) / 2 * (h - 1) + 100 * (g[2] + 1) / 2 * (d - 1));
    }
    check_close(y, want, 1e-5);
    // Integer input, nearest: plain pixel picks.
    const Tensor img = random_ints(DataType::kInt32, {1, 1, 3, 3}, -100, 100);
    const Tensor yi = run1({"GridSample", 20, {img, floats({-1, -1, 1, 1, 0, 0}, {1, 1, 3, 2})},
                            {attr_string("mode", "nearest"), attr_int("align_corners", 1)}});
    CHECK(yi.data<int32_t>()[0] == img.data<int32_t>()[0]);
    CHECK(yi.data<int32_t>()[1] == img.data<int32_t>()[8]);
    CHECK(yi.data<int32_t>()[2] == img.data<int32_t>()[4]);
  }

  TEST_CASE("GridSample rejects bad shapes and modes") {
    check_fails({"GridSample", 16, {random_float({1, 1, 3, 3}), random_float({1, 2, 2, 3})}}, "grid");
    check_fails({"GridSample", 16, {random_float({1, 1, 3, 3, 3}), random_float({1, 2, 2, 2, 3})}}, "4-D");
    check_fails({"GridSample", 20, {random_float({1, 1, 3, 3}), random_float({1, 2, 2, 2})}, {attr_string("mode", "area")}},
                "mode");
  }

  // ---------------------------------------------------------------- RoiAlign

  TEST_CASE("RoiAlign avg with a fixed sampling ratio matches a bilinear reference") {
    const int64_t n = 2, c = 3, h = 7, w = 9, oh = 3, ow = 2, ratio = 2;
    const Tensor x = random_float({n, c, h, w});
    const Tensor rois = floats({0.5f, 1.0f, 6.0f, 5.5f, 2.0f, 0.0f, 8.5f, 6.5f, 1.0f, 1.0f, 3.0f, 2.0f}, {3, 4});
    const Tensor batch = ints({1, 0, 1});
    for (bool half : {false, true}) {
      const Tensor y = run1({"RoiAlign", 16, {x, rois, batch},
                             {attr_int("output_height", oh), attr_int("output_width", ow), attr_int("sampling_ratio", ratio),
                              attr_float("spatial_scale", 1.0f),
                              attr_string("coordinate_transformation_mode", half ? "half_pixel" : "output_half_pixel")}});
      std::vector<double> want;
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t ch = 0; ch < c; ++ch) {
          const float* plane = x.data<float>() + (batch.data<int64_t>()[r] * c + ch) * h * w;
          const float* b = rois.data<float>() + r * 4;
          const double off = half ? 0.5 : 0;
          const double x0 = b[0] - off, y0 = b[1] - off;
          double rw = b[2] - b[0], rh = b[3] - b[1];
          if (!half) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
          for (int64_t ph = 0; ph < oh; ++ph)
            for (int64_t pw = 0; pw < ow; ++pw) {
              double sum = 0;
              for (int64_t iy = 0; iy < ratio; ++iy)
                for (int64_t ix = 0; ix < ratio; ++ix) {
                  double yy = y0 + (ph + (iy + 0.5) / ratio) * rh / oh, xx = x0 + (pw + (ix + 0.5) / ratio) * rw / ow;
                  if (yy < -1 || yy > h || xx < -1 || xx > w) continue;
                  yy = std::min<double>(std::max(yy, 0.0), h - 1);
                  xx = std::min<double>(std::max(xx, 0.0), w - 1);
                  const auto yl = static_cast<int64_t>(yy), xl = static_cast<int64_t>(xx);
                  const int64_t yh = std::min(yl + 1, h - 1), xh = std::min(xl + 1, w - 1);
                  const double ly = yy - yl, lx = xx - xl;
                  sum += (1 - ly) * (1 - lx) * plane[yl * w + xl] + (1 - ly) * lx * plane[yl * w + xh] +
                         ly * (1 - lx) * plane[yh * w + xl] + ly * lx * plane[yh * w + xh];
                }
              want.push_back(sum / (ratio * ratio));
            }
        }
      check_close(y, want, 1e-5);
    }
  }

  TEST_CASE("RoiAlign max mode, adaptive sampling and failures") {
    Tensor x(DataType::kFloat, {1, 1, 4, 4});
    for (int64_t i = 0; i < 16; ++i) x.mutable_data<float>()[i] = static_cast<float>(i);
    // One sample per bin at integer-aligned points: values read exactly.
    Tensor y = run1({"RoiAlign", 10, {x, floats({0, 0, 2, 2}, {1, 4}), ints({0})},
                     {attr_int("output_height", 2), attr_int("output_width", 2), attr_string("mode", "max")}});
    // Bin centers at 0.5, 1.5: each bin's single sample is a bilinear mix; max of weighted corners.
    REQUIRE(y.shape() == std::vector<int64_t>{1, 1, 2, 2});
    CHECK(y.data<float>()[0] == doctest::Approx(0.25 * 5));
    check_fails({"RoiAlign", 16, {x, floats({0, 0, 2, 2}, {1, 4}), ints({1})}}, "batch index");
    check_fails({"RoiAlign", 16, {x, floats({0, 0, 2}, {1, 3}), ints({0})}}, "rois");
    check_fails({"RoiAlign", 16, {x, floats({0, 0, 2, 2}, {1, 4}), ints({0})}, {attr_string("mode", "sum")}}, "mode");
  }

  // ---------------------------------------------------------------- NonMaxSuppression

  TEST_CASE("NonMaxSuppression selects by score and suppresses by IoU") {
    // The ONNX example: six boxes in one class.
    const Tensor boxes = floats({0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, -0.1f, 1, 0.9f, 0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100, 1, 101},
                                {1, 6, 4});
    const Tensor scores = floats({0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f}, {1, 1, 6});
    Tensor y = run1({"NonMaxSuppression", 11, {boxes, scores, ints({3}, {1}), floats({0.5f}, {1}), floats({0.0f}, {1})}});
    REQUIRE(y.shape() == std::vector<int64_t>{3, 3});
    const std::vector<int64_t> want{0, 0, 3, 0, 0, 0, 0, 0, 5};
    CHECK(std::vector<int64_t>(y.data<int64_t>(), y.data<int64_t>() + 9) == want);
    // Score threshold 0.4 drops box 5; the limit of 2 keeps two.
    y = run1({"NonMaxSuppression", 10, {boxes, scores, ints({2}, {1}), floats({0.5f}, {1}), floats({0.4f}, {1})}});
    REQUIRE(y.shape() == std::vector<int64_t>{2, 3});
    CHECK(y.data<int64_t>()[5] == 0);
    // Center-point format of the same boxes gives the same selection.
    Tensor centered(DataType::kFloat, {1, 6, 4});
    for (int64_t i = 0; i < 6; ++i) {
      const float* b = boxes.data<float>() + i * 4;
      float* o = centered.mutable_data<float>() + i * 4;
      o[0] = (b[1] + b[3]) / 2, o[1] = (b[0] + b[2]) / 2, o[2] = b[3] - b[1], o[3] = b[2] - b[0];
    }
    y = run1({"NonMaxSuppression", 11, {centered, scores, ints({3}, {1}), floats({0.5f}, {1}), floats({0.0f}, {1})},
              {attr_int("center_point_box", 1)}});
    CHECK(std::vector<int64_t>(y.data<int64_t>(), y.data<int64_t>() + 9) == want);
    // No max_output_boxes_per_class: nothing selected.
    y = run1({"NonMaxSuppression", 11, {boxes, scores}});
    CHECK(y.shape() == std::vector<int64_t>{0, 3});
    check_fails({"NonMaxSuppression", 11, {boxes, floats({1, 2}, {1, 1, 2})}}, "scores");
    check_fails({"NonMaxSuppression", 11, {boxes, scores}, {attr_int("center_point_box", 2)}}, "center_point_box");
  }
}

}  // namespace
}  // namespace onnxtool::vision_kernels_test
