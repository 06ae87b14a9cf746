// Calibration statistics and calibrators (minmax, entropy, percentile).
#include "quant/calibration.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "runner/thread_pool.h"

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

namespace {

/// What one pass over a run of values finds: extremes of the finite ones, their largest
/// magnitude, and the counts of finite, NaN and infinite values.
struct Summary {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity(), absmax = 0;
  int64_t finite = 0, nan = 0, inf = 0;
  void merge(const Summary& o) {
    lo = std::min(lo, o.lo);
    hi = std::max(hi, o.hi);
    absmax = std::max(absmax, o.absmax);
    finite += o.finite;
    nan += o.nan;
    inf += o.inf;
  }
};

/// float32 values are summarized and binned in chunks of this many, in parallel: the extremes
/// and the (integer) counts come out the same whatever the thread count.
constexpr int64_t kChunk = int64_t{1} << 15;

Summary summarize_floats(const float* p, int64_t n) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<Summary> parts(static_cast<size_t>(chunks));
  runner::parallel_chunks(chunks, [&](int64_t c) {
    const float* q = p + c * kChunk;
    const int64_t m = std::min(kChunk, n - c * kChunk);
    // Branch-free so that it vectorizes: NaN and Inf are counted, and the extremes skip them.
    // Sixteen lanes at a time (GCC's vector types: one AVX-512 register, or several narrower
    // ones), 32-bit counts (a chunk is 2^15 elements), then the lanes and the tail.
    using V = float __attribute__((vector_size(64)));
    using I = int32_t __attribute__((vector_size(64)));
    constexpr int kLanes = 16;
    const float inf_f = std::numeric_limits<float>::infinity();
    V vlo = V{} + inf_f, vhi = V{} - inf_f, vabs = V{};
    I vnan = I{}, vinf = I{};
    int64_t i = 0;
    for (; i + kLanes <= m; i += kLanes) {
      V v;
      std::memcpy(&v, q + i, sizeof v);
      const V a = (V)((I)v & 0x7fffffff);
      const I is_nan = v != v, is_inf = a == inf_f;
      vnan -= is_nan;  // masks are -1 where true
      vinf -= is_inf;
      const I finite = ~(is_nan | is_inf);
      vlo = (finite & (v < vlo)) ? v : vlo;
      vhi = (finite & (v > vhi)) ? v : vhi;
      vabs = (finite & (a > vabs)) ? a : vabs;
    }
    float lo = inf_f, hi = -inf_f, absmax = 0;
    int32_t nan = 0, inf = 0;
    for (int l = 0; l < kLanes; ++l) {
      lo = vlo[l] < lo ? vlo[l] : lo;
      hi = vhi[l] > hi ? vhi[l] : hi;
      absmax = vabs[l] > absmax ? vabs[l] : absmax;
      nan += vnan[l];
      inf += vinf[l];
    }
    for (; i < m; ++i) {
      const float v = q[i];
      const float a = std::fabs(v);
      const bool is_nan = v != v, is_inf = a == inf_f;
      nan += is_nan;
      inf += is_inf;
      const bool finite = !is_nan && !is_inf;
      lo = finite && v < lo ? v : lo;
      hi = finite && v > hi ? v : hi;
      absmax = finite && a > absmax ? a : absmax;
    }
    Summary& s = parts[static_cast<size_t>(c)];
    s.nan = nan;
    s.inf = inf;
    s.finite = m - nan - inf;
    if (s.finite) {
      s.lo = lo;
      s.hi = hi;
      s.absmax = absmax;
    }
  });
  Summary all;
  for (const Summary& s : parts) all.merge(s);
  return all;
}

}  // namespace

void TensorStats::observe(const runner::Tensor& t, double averaging_constant, bool histogram) {
  if (!is_float(t.dtype())) return;
  const bool f32 = t.dtype() == ir::DataType::kFloat;
  Summary sum;
  if (f32) {
    sum = summarize_floats(t.data<float>(), t.size());
  } else {
    for (int64_t i = 0; i < t.size(); ++i) {
      const double v = runner::element_as_double(t, i);
      if (std::isnan(v)) {
        ++sum.nan;
      } else if (std::isinf(v)) {
        ++sum.inf;
      } else {
        sum.lo = std::min(sum.lo, v);
        sum.hi = std::max(sum.hi, v);
        sum.absmax = std::max(sum.absmax, std::fabs(v));
        ++sum.finite;
      }
    }
  }
  nan_ += sum.nan;
  inf_ += sum.inf;
  ++samples_;
  if (!sum.finite) return;
  const double lo = sum.lo, hi = sum.hi;
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
  values_ += sum.finite;
  if (!histogram) return;
  if (sum.absmax == 0 && bins_.empty()) {
    // All zeros so far (a recurrent state's usual first value): the histogram waits for a
    // magnitude to cover.
    zeros_ += sum.finite;
    return;
  }
  widen(sum.absmax);
  const double per_bin = static_cast<double>(kBins) / limit_;
  // Compared as a double before the conversion: a magnitude beyond the top bin (possible only
  // when the limit stopped doubling) must not overflow int.
  auto bin_of = [per_bin](double v) {
    const double scaled = std::fabs(v) * per_bin;
    return scaled >= kBins - 1 ? kBins - 1 : static_cast<int>(scaled);
  };
  if (!f32) {
    for (int64_t i = 0; i < t.size(); ++i) {
      const double v = runner::element_as_double(t, i);
      if (std::isfinite(v)) bins_[static_cast<size_t>(bin_of(v))] += 1;
    }
    return;
  }
  // Counts per part of the tensor, added up: whole numbers, so the sums do not depend on the
  // order or the split.
  const float* p = t.data<float>();
  const int64_t n = t.size(), chunks = (n + kChunk - 1) / kChunk;
  const int64_t parts = std::min<int64_t>(chunks, runner::current_threads());
  std::vector<std::vector<double>> local(static_cast<size_t>(parts));
  runner::parallel_chunks(parts, [&](int64_t part) {
    std::vector<double>& counts = local[static_cast<size_t>(part)];
    counts.assign(kBins, 0.0);
    for (int64_t c = part * chunks / parts; c < (part + 1) * chunks / parts; ++c) {
      const int64_t end = std::min(n, (c + 1) * kChunk);
      for (int64_t i = c * kChunk; i < end; ++i)
        if (std::isfinite(p[i])) counts[static_cast<size_t>(bin_of(p[i]))] += 1;
    }
  });
  for (const auto& counts : local)
    for (size_t b = 0; b < counts.size(); ++b) bins_[b] += counts[b];
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
