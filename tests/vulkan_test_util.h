// Running one model on the CPU runner and on the first Vulkan device, for the Vulkan kernel tests.
#pragma once

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "runner/backend.h"
#include "runner/session.h"
#include "tests/test_data.h"

namespace onnxtool::testing {

/// Whether a Vulkan device exists; without one the run is marked skipped (CI fails on skips:
/// scripts/build.sh installs Mesa's lavapipe). Turns the validation layer on for the process, so
/// that any message it prints fails the run that caused it, unless ONNXTOOL_VULKAN_VALIDATION is
/// set already (the sanitizer stage of scripts/test.sh sets it to 0).
inline bool vulkan_available() {
  static const bool available = [] {
    setenv("ONNXTOOL_VULKAN_VALIDATION", "1", 0);
    std::string why;
    const auto devices = runner::list_devices(&why);
    return devices.size() > 1;
  }();
  if (!available)
    skip_run("a Vulkan device (scripts/build.sh installs Mesa's lavapipe: mesa-vulkan-drivers, vulkan-validationlayers)");
  return available;
}

/// Tolerance of device results against the CPU runner: |got - want| <= rtol * (|want| + rms), rms
/// the root mean square of the CPU output (elements near zero after cancellation in long sums
/// are judged against the output's scale, not their own).
struct DeviceTolerance {
  double f32 = 1e-4;  ///< float32: summation order and the device's exp/log/div precision
  double f16 = 2e-3;  ///< float16: both sides round to float16 (ulp 2^-11); two ulps
};

/// Whether two tensors hold the same bytes (an empty tensor may have no storage at all).
inline bool same_bytes(const runner::Tensor& a, const runner::Tensor& b) {
  return a.bytes() == b.bytes() && (a.bytes() == 0 || std::memcmp(a.raw(), b.raw(), a.bytes()) == 0);
}

/// "" when `got` matches `want` within the tolerance (integers and bool exactly), else the first
/// differing element.
inline std::string compare_device_tensor(const runner::Tensor& got, const runner::Tensor& want,
                                         const DeviceTolerance& tol = {}) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return got.describe() + " vs CPU " + want.describe();
  const bool f16 = want.dtype() == ir::DataType::kFloat16;
  if (want.dtype() != ir::DataType::kFloat && !f16) {
    if (!same_bytes(got, want)) return "values differ (exact comparison)";
    return "";
  }
  double sum2 = 0;
  int64_t finite = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    const double b = runner::element_as_double(want, i);
    if (std::isfinite(b)) sum2 += b * b, ++finite;
  }
  const double rms = finite ? std::sqrt(sum2 / static_cast<double>(finite)) : 0;
  const double rtol = f16 ? tol.f16 : tol.f32;
  for (int64_t i = 0; i < want.size(); ++i) {
    const double a = runner::element_as_double(got, i), b = runner::element_as_double(want, i);
    if (a == b || (std::isnan(a) && std::isnan(b))) continue;
    if (!(std::fabs(a - b) <= rtol * (std::fabs(b) + rms)))
      return "element " + std::to_string(i) + ": " + std::to_string(a) + " vs CPU " + std::to_string(b) +
             " (rtol " + std::to_string(rtol) + ")";
  }
  return "";
}

/// One case in `stride` of a sweep under the sanitizers, every case in Release. The sanitizer
/// build is there for memory errors on the host's code paths, which a sample of each sweep
/// reaches (every op stays covered: strides are chosen against each sweep's shape); it runs four
/// times slower, and the Release build compares every case.
class SanitizerSample {
 public:
  explicit SanitizerSample(int stride) {
#if defined(__SANITIZE_ADDRESS__)
    stride_ = stride;
#else
    (void)stride;
#endif
  }
  /// Whether the next case of the sweep is left out.
  bool skip() { return (next_++ % stride_) != 0; }

 private:
  int stride_ = 1;
  int next_ = 0;
};

struct DeviceRun {
  std::string mismatch;  ///< "" when every output matches and the device runs are identical
  runner::Placement placement;
};

/// The device of the kernel tests: vulkan:0 computing float16 tensors in float32 as the CPU runner
/// does, so that a difference is the kernel's (float16 arithmetic has tests of its own).
inline const char* const kKernelTestDevice = "vulkan:0:fp32-arithmetic";

/// Runs `model` on the CPU and twice on `device` with the same feeds; compares each output with
/// the CPU's and the two device runs byte for byte.
inline DeviceRun run_on_both(ir::Model& model, const std::map<std::string, runner::Value>& feeds,
                             const DeviceTolerance& tol = {}, const std::string& device = kKernelTestDevice) {
  DeviceRun out;
  runner::Session cpu(model);
  const auto want = cpu.run(feeds);
  runner::SessionOptions options;
  options.device = runner::DeviceSpec::parse(device);
  runner::Session gpu(model, options);
  const auto got = gpu.run(feeds);
  out.placement = gpu.placement();
  const auto again = gpu.run(feeds);
  for (size_t i = 0; i < want.size(); ++i) {
    const std::string name = cpu.outputs()[i]->value->name();
    if (!want[i].is_tensor()) continue;
    if (!got[i].is_tensor()) {
      out.mismatch = "output '" + name + "' is " + got[i].describe();
      return out;
    }
    if (std::string why = compare_device_tensor(got[i].tensor, want[i].tensor, tol); !why.empty()) {
      out.mismatch = "output '" + name + "': " + why;
      return out;
    }
    if (!same_bytes(got[i].tensor, again[i].tensor)) {
      out.mismatch = "output '" + name + "' differs between two runs on the device";
      return out;
    }
  }
  return out;
}

}  // namespace onnxtool::testing
