// Tests of the signal kernels (runner/cpu/signal.cpp): DFT, STFT, the window functions and
// MelWeightMatrix, each run as a one-node model against a plain reference loop at odd sizes; one
// thread and several threads must give identical bytes; invalid inputs must fail with an Error
// naming the node.
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <vector>

#include "tests/kernel_test_util.h"

namespace onnxtool::signal_kernels_test {
namespace {

using namespace testing;  // NOLINT: the kernel-test harness

const double kPi = std::acos(-1.0);

std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.size(); ++i) v.push_back(t.data<float>()[i]);
  return v;
}

TEST_SUITE("signal_kernels") {
  std::vector<std::complex<double>> naive_dft(const std::vector<std::complex<double>>& in, int64_t n, bool inverse) {
    std::vector<std::complex<double>> out(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
      std::complex<double> acc = 0;
      for (int64_t j = 0; j < n && j < static_cast<int64_t>(in.size()); ++j)
        acc += in[static_cast<size_t>(j)] * std::polar(1.0, (inverse ? 2 : -2) * kPi * static_cast<double>(j * k % n) / n);
      out[static_cast<size_t>(k)] = inverse ? acc / static_cast<double>(n) : acc;
    }
    return out;
  }

  TEST_CASE("DFT forward, inverse and one-sided match the direct sum at odd and power-of-two lengths") {
    for (int64_t len : {1, 7, 13, 16, 64, 127, 400}) {
      CAPTURE(len);
      const int64_t batch = 3;
      const Tensor x = random_float({batch, len, 2});
      for (bool inverse : {false, true})
        for (int64_t n : {len, len + 3}) {
          const Tensor y = run1({"DFT", 20, {x, ints({n}, {}), Tensor()}, {attr_int("inverse", inverse)}});
          REQUIRE(y.shape() == std::vector<int64_t>{batch, n, 2});
          std::vector<double> want;
          for (int64_t b = 0; b < batch; ++b) {
            std::vector<std::complex<double>> in;
            for (int64_t j = 0; j < len; ++j)
              in.emplace_back(x.data<float>()[(b * len + j) * 2], x.data<float>()[(b * len + j) * 2 + 1]);
            for (const auto& v : naive_dft(in, n, inverse)) want.insert(want.end(), {v.real(), v.imag()});
          }
          check_close(y, want, 1e-4);
        }
      // Real input, one-sided forward along axis 1 of a [2, len, 3, 1] tensor (opset 17 attribute).
      const Tensor r = random_float({2, len, 3, 1});
      const Tensor y = run1({"DFT", 17, {r}, {attr_int("onesided", 1), attr_int("axis", 1)}});
      REQUIRE(y.shape() == std::vector<int64_t>{2, len / 2 + 1, 3, 2});
      std::vector<double> want(static_cast<size_t>(y.size()));
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t i = 0; i < 3; ++i) {
          std::vector<std::complex<double>> in;
          for (int64_t j = 0; j < len; ++j) in.emplace_back(r.data<float>()[(b * len + j) * 3 + i], 0);
          const auto f = naive_dft(in, len, false);
          for (int64_t k = 0; k <= len / 2; ++k) {
            want[static_cast<size_t>(((b * (len / 2 + 1) + k) * 3 + i) * 2)] = f[static_cast<size_t>(k)].real();
            want[static_cast<size_t>(((b * (len / 2 + 1) + k) * 3 + i) * 2 + 1)] = f[static_cast<size_t>(k)].imag();
          }
        }
      check_close(y, want, 1e-4);
      // IRFFT of that spectrum restores the signal when the length is given.
      const Tensor back = run1({"DFT", 20, {y, ints({len}, {}), ints({1}, {})}, {attr_int("onesided", 1), attr_int("inverse", 1)}});
      REQUIRE(back.shape() == r.shape());
      check_close(back, as_doubles(r), 1e-4);
    }
  }

  TEST_CASE("DFT rejects the complex axis and bad lengths") {
    const Tensor x = random_float({2, 5, 2});
    check_fails({"DFT", 17, {x}, {attr_int("axis", 2)}}, "axis");
    check_fails({"DFT", 20, {x, ints({0}, {}), Tensor()}}, "dft_length");
    check_fails({"DFT", 20, {random_float({2, 5, 3})}}, "input");
  }

  TEST_CASE("STFT frames, windows and transforms the signal") {
    const int64_t batch = 2, len = 37, step = 5;
    for (int64_t frame : {8, 9}) {
      CAPTURE(frame);
      const Tensor s = random_float({batch, len, 1});
      Tensor win(DataType::kFloat, {frame});
      for (int64_t i = 0; i < frame; ++i) win.mutable_data<float>()[i] = static_cast<float>(0.5 - 0.5 * std::cos(2 * kPi * i / frame));
      for (bool onesided : {false, true}) {
        const Tensor y = run1({"STFT", 17, {s, ints({step}, {}), win, ints({frame}, {})}, {attr_int("onesided", onesided)}});
        const int64_t frames = 1 + (len - frame) / step, bins = onesided ? frame / 2 + 1 : frame;
        REQUIRE(y.shape() == std::vector<int64_t>{batch, frames, bins, 2});
        std::vector<double> want;
        for (int64_t b = 0; b < batch; ++b)
          for (int64_t f = 0; f < frames; ++f) {
            std::vector<std::complex<double>> in;
            for (int64_t j = 0; j < frame; ++j) in.emplace_back(s.data<float>()[b * len + f * step + j] * win.data<float>()[j], 0);
            const auto spec = naive_dft(in, frame, false);
            for (int64_t k = 0; k < bins; ++k) want.insert(want.end(), {spec[static_cast<size_t>(k)].real(), spec[static_cast<size_t>(k)].imag()});
          }
        check_close(y, want, 1e-4);
      }
    }
    check_fails({"STFT", 17, {random_float({1, 10, 1}), ints({0}, {}), Tensor(), ints({4}, {})}}, "frame_step");
    check_fails({"STFT", 17, {random_float({1, 10, 1}), ints({2}, {}), Tensor(), ints({11}, {})}}, "frame_length");
  }

  // ---------------------------------------------------------------- windows, mel weights

  TEST_CASE("Hann, Hamming and Blackman windows, periodic and symmetric, in several types") {
    for (int64_t size : {1, 7, 10}) {
      CAPTURE(size);
      for (int64_t periodic : {0, 1}) {
        const double denom = periodic ? size : size - 1;
        std::vector<double> hann, hamming, blackman;
        for (int64_t i = 0; i < size; ++i) {
          const double a = denom > 0 ? 2 * kPi * i / denom : 0;
          hann.push_back(denom > 0 ? std::pow(std::sin(a / 2), 2) : 1);
          hamming.push_back(denom > 0 ? 0.54347826 - 0.45652174 * std::cos(a) : 1);
          blackman.push_back(denom > 0 ? 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a) : 1);
        }
        check_close(run1({"HannWindow", 17, {ints({size}, {})}, {attr_int("periodic", periodic)}}), hann, 1e-6);
        check_close(run1({"HammingWindow", 17, {ints({size}, {})}, {attr_int("periodic", periodic)}}), hamming, 1e-6);
        check_close(run1({"BlackmanWindow", 17, {ints({size}, {})}, {attr_int("periodic", periodic)}}), blackman, 1e-6);
      }
    }
    const Tensor d = run1({"HannWindow", 17, {ints({4}, {})}, {attr_int("output_datatype", 11)}});
    REQUIRE(d.dtype() == DataType::kDouble);
    CHECK(d.data<double>()[2] == doctest::Approx(1.0));
    check_fails({"HannWindow", 17, {ints({4}, {})}, {attr_int("output_datatype", 8)}}, "output_datatype");
    check_fails({"HammingWindow", 17, {ints({-1}, {})}}, "size");
  }

  TEST_CASE("MelWeightMatrix builds unit-peak triangles") {
    const Tensor y = run1({"MelWeightMatrix", 17, {ints({8}, {}), ints({64}, {}), ints({16000}, {}), floats({0}, {}), floats({8000}, {})}});
    REQUIRE(y.shape() == std::vector<int64_t>{33, 8});
    for (int64_t m = 0; m < 8; ++m) {
      double peak = 0;
      for (int64_t k = 0; k < 33; ++k) {
        const double v = y.data<float>()[k * 8 + m];
        CHECK(v >= 0);
        CHECK(v <= 1);
        peak = std::max(peak, v);
      }
      CHECK(peak == 1.0);
    }
    check_fails({"MelWeightMatrix", 17, {ints({0}, {}), ints({64}, {}), ints({16000}, {}), floats({0}, {}), floats({8000}, {})}},
                "positive");
  }
}

}  // namespace
}  // namespace onnxtool::signal_kernels_test
