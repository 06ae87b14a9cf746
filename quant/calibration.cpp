// Calibration statistics and calibrators (minmax, entropy, percentile).
#include "quant/calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace onnxtool::quant {

namespace {

bool is_float(ir::DataType t) {
  return t == ir::DataType::kFloat || t == ir::DataType::kDouble || t == ir::DataType::kFloat16 ||
         t == ir::DataType::kBFloat16;
}

}  // namespace

void TensorStats::widen(double limit) {
  // Grow the covered magnitude by powers of two so that old bins merge exactly (2 -> 1).
  if (bins_.empty()) {
    bins_.assign(kBins, 0.0);
    // Not below kMinLimit: kBins / limit_ must stay finite (0 x inf is NaN, and a NaN bin index
    // is undefined behaviour). The zeros counted before the first nonzero value go to bin 0.
    limit_ = std::max(limit, kMinLimit);
    bins_[0] = static_cast<double>(zeros_);
    return;
  }
  // Doubling stops before it overflows: a limit of infinity would put every value in bin 0 and
  // make every threshold infinite.
  while (limit_ < limit && limit_ <= std::numeric_limits<double>::max() / 2) {
    std::vector<double> merged(kBins, 0.0);
    for (int i = 0; i < kBins; ++i) merged[static_cast<size_t>(i / 2)] += bins_[static_cast<size_t>(i)];
    bins_ = std::move(merged);
    limit_ *= 2;
  }
}

void TensorStats::observe(const runner::Tensor& t, double averaging_constant) {
  if (!is_float(t.dtype())) return;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, absmax = 0;
  int64_t finite = 0;
  for (int64_t i = 0; i < t.size(); ++i) {
    const double v = runner::element_as_double(t, i);
    if (std::isnan(v)) {
      ++nan_;
      continue;
    }
    if (std::isinf(v)) {
      ++inf_;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    absmax = std::max(absmax, std::fabs(v));
    ++finite;
  }
  ++samples_;
  if (!finite) return;
  if (first_) {
    min_ = moving_min_ = lo;
    max_ = moving_max_ = hi;
    first_ = false;
  } else {
    min_ = std::min(min_, lo);
    max_ = std::max(max_, hi);
    if (averaging_constant > 0) {
      moving_min_ += averaging_constant * (lo - moving_min_);
      moving_max_ += averaging_constant * (hi - moving_max_);
    }
  }
  values_ += finite;
  if (absmax == 0 && bins_.empty()) {
    // All zeros so far (a recurrent state's usual first value): the histogram waits for a
    // magnitude to cover.
    zeros_ += finite;
    return;
  }
  widen(absmax);
  const double per_bin = static_cast<double>(kBins) / limit_;
  for (int64_t i = 0; i < t.size(); ++i) {
    const double v = runner::element_as_double(t, i);
    if (!std::isfinite(v)) continue;
    // Compared as a double before the conversion: a magnitude beyond the top bin (possible
    // only when the limit stopped doubling) must not overflow int.
    const double scaled = std::fabs(v) * per_bin;
    const int b = scaled >= kBins - 1 ? kBins - 1 : static_cast<int>(scaled);
    bins_[static_cast<size_t>(b)] += 1;
  }
}

double TensorStats::percentile_threshold(double percentile) const {
  if (bins_.empty()) return 0;
  const double want = static_cast<double>(values_) * std::clamp(percentile, 0.0, 100.0) / 100.0;
  double seen = 0;
  for (int i = 0; i < kBins; ++i) {
    seen += bins_[static_cast<size_t>(i)];
    if (seen >= want) return limit_ * (i + 1) / kBins;
  }
  return limit_;
}

// The threshold T minimizing the KL divergence between the |x| distribution clipped at T and its
// quantization to `quantized_bins` levels (the TensorRT entropy calibration).
double TensorStats::entropy_threshold(int quantized_bins) const {
  if (bins_.empty()) return 0;
  int last = kBins - 1;
  while (last > 0 && bins_[static_cast<size_t>(last)] == 0) --last;
  if (last + 1 <= quantized_bins) return limit_ * (last + 1) / kBins;
  double best_kl = std::numeric_limits<double>::infinity();
  int best = last + 1;
  std::vector<double> p, q;
  for (int i = quantized_bins; i <= last + 1; ++i) {
    // Reference distribution: the first i bins, the clipped outliers folded into the last one.
    p.assign(bins_.begin(), bins_.begin() + i);
    double outliers = 0;
    for (int k = i; k < kBins; ++k) outliers += bins_[static_cast<size_t>(k)];
    p.back() += outliers;
    // Candidate: the first i bins merged into quantized_bins levels, then spread back uniformly
    // over the non-empty bins of each level.
    q.assign(static_cast<size_t>(i), 0.0);
    const double width = static_cast<double>(i) / quantized_bins;
    for (int j = 0; j < quantized_bins; ++j) {
      const int start = static_cast<int>(std::floor(j * width));
      const int stop = j == quantized_bins - 1 ? i : static_cast<int>(std::floor((j + 1) * width));
      double sum = 0;
      int nonzero = 0;
      for (int k = start; k < stop; ++k) {
        sum += bins_[static_cast<size_t>(k)];
        nonzero += bins_[static_cast<size_t>(k)] != 0;
      }
      for (int k = start; k < stop; ++k)
        if (bins_[static_cast<size_t>(k)] != 0) q[static_cast<size_t>(k)] = sum / nonzero;
    }
    double psum = 0, qsum = 0;
    for (int k = 0; k < i; ++k) {
      psum += p[static_cast<size_t>(k)];
      qsum += q[static_cast<size_t>(k)];
    }
    if (psum <= 0 || qsum <= 0) continue;
    double kl = 0;
    for (int k = 0; k < i; ++k) {
      const double pk = p[static_cast<size_t>(k)] / psum;
      if (pk == 0) continue;
      const double qk = q[static_cast<size_t>(k)] / qsum;
      kl += qk == 0 ? pk * 20 : pk * std::log(pk / qk);  // a q of 0 where p is not: a large penalty
    }
    if (kl < best_kl) {
      best_kl = kl;
      best = i;
    }
  }
  return limit_ * best / kBins;
}

Range calibrated_range(const TensorStats& s, const CalibrationOptions& o) {
  Range r;
  if (s.empty()) return r;
  switch (o.method) {
    case CalibrationMethod::kMinMax:
      r.min = o.moving_average > 0 ? s.moving_min() : s.min();
      r.max = o.moving_average > 0 ? s.moving_max() : s.max();
      break;
    case CalibrationMethod::kEntropy:
    case CalibrationMethod::kPercentile: {
      const double t = o.method == CalibrationMethod::kEntropy ? s.entropy_threshold(o.quantized_bins)
                                                                : s.percentile_threshold(o.percentile);
      r.min = std::max(s.min(), -t);
      r.max = std::min(s.max(), t);
      break;
    }
  }
  r.min = std::min(r.min, 0.0);
  r.max = std::max(r.max, 0.0);
  return r;
}

}  // namespace onnxtool::quant
