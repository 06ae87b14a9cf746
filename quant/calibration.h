// Calibration: statistics of activations collected sample by sample (bounded memory, whatever
// the number of samples), and the calibrators that turn them into ranges.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runner/backend.h"
#include "runner/tensor.h"

namespace onnxtool::quant {

enum class CalibrationMethod { kMinMax, kEntropy, kPercentile };

/// Running statistics of one tensor over the calibration samples: extremes, a moving average of
/// per-sample extremes, and a histogram of |x| that widens (merging bins) as larger values show
/// up, so that its size never grows.
class TensorStats {
 public:
  static constexpr int kBins = 2048;

  /// Adds one sample's values (float types only; NaN and Inf are counted and skipped). Without
  /// `histogram` only the extremes and counts are kept (all minmax calibration needs).
  void observe(const runner::Tensor& t, double averaging_constant, bool histogram = true);

  double min() const { return min_; }
  double max() const { return max_; }
  double moving_min() const { return moving_min_; }
  double moving_max() const { return moving_max_; }
  int64_t samples() const { return samples_; }
  int64_t values() const { return values_; }
  int64_t nan_count() const { return nan_; }
  int64_t inf_count() const { return inf_; }
  bool empty() const { return values_ == 0; }

  /// Range choices of the calibrators (each includes 0 when the data does; clipped to min/max).
  /// The entropy and percentile thresholds are symmetric magnitudes applied to both signs.
  double percentile_threshold(double percentile) const;
  double entropy_threshold(int quantized_bins) const;

 private:
  /// The smallest magnitude the histogram covers: kBins / kMinLimit is finite.
  static constexpr double kMinLimit = 1e-300;
  void widen(double limit);
  double min_ = 0, max_ = 0, moving_min_ = 0, moving_max_ = 0;
  bool first_ = true;
  int64_t samples_ = 0, values_ = 0, nan_ = 0, inf_ = 0;
  int64_t zeros_ = 0;  // zeros observed before the histogram existed (all samples zero so far)
  double limit_ = 0;  // the histogram covers |x| in [0, limit_]
  std::vector<double> bins_;
};

struct CalibrationOptions {
  CalibrationMethod method = CalibrationMethod::kMinMax;
  /// minmax: 0 keeps the extremes over all samples; in (0, 1] a moving average of per-sample
  /// extremes with this constant (as onnxruntime's averaging_constant).
  double moving_average = 0;
  /// percentile: the share of |x| values kept inside the range (e.g. 99.999).
  double percentile = 99.999;
  /// entropy: the number of quantized levels the KL divergence is measured against.
  int quantized_bins = 128;
  /// Where the calibration runs (each observed value comes back to the host).
  runner::DeviceSpec device;
};

/// A calibrated range of one tensor.
struct Range {
  double min = 0, max = 0;
};

/// The range the chosen method gives for one tensor's statistics.
Range calibrated_range(const TensorStats& stats, const CalibrationOptions& options);

/// Statistics of many tensors, fed by a runner observer.
class Collector {
 public:
  /// `histograms`: whether the calibrator needs them (entropy, percentile).
  explicit Collector(double moving_average = 0, bool histograms = true)
      : moving_average_(moving_average), histograms_(histograms) {}
  void observe(const std::string& name, const runner::Tensor& t) {
    stats_[name].observe(t, moving_average_, histograms_);
  }
  const std::map<std::string, TensorStats>& stats() const { return stats_; }

 private:
  double moving_average_;
  bool histograms_;
  std::map<std::string, TensorStats> stats_;
};

}  // namespace onnxtool::quant
