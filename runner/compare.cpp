// Numeric comparison of tensors.
#include "runner/compare.h"

#include <cmath>
#include <algorithm>
#include <cstring>
#include <limits>

namespace onnxtool::runner {

namespace {

bool is_float(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

constexpr size_t kNonFiniteShown = 8;

}  // namespace

TensorDiff compare_tensors(const Tensor& a, const Tensor& b, double rtol, double atol) {
  TensorDiff d;
  // Floating-point tensors of different precisions (a float16 conversion against its float32
  // original) compare by value; any other type difference is a mismatch.
  if (a.dtype() != b.dtype() && !(is_float(a.dtype()) && is_float(b.dtype()))) {
    d.problem = "type " + std::string(ir::data_type_name(a.dtype())) + " vs " + std::string(ir::data_type_name(b.dtype()));
    return d;
  }
  if (a.shape() != b.shape()) {
    d.problem = "shape " + shape_string(a.shape()) + " vs " + shape_string(b.shape());
    return d;
  }
  d.elements = a.size();
  if (a.dtype() == DataType::kString) {
    for (int64_t i = 0; i < a.size(); ++i) d.beyond += a.strings()[static_cast<size_t>(i)] != b.strings()[static_cast<size_t>(i)];
    return d;
  }
  const bool fp = is_float(a.dtype());
  double dot = 0, na = 0, nb = 0, sum_abs = 0;
  int64_t finite = 0;
  for (int64_t i = 0; i < a.size(); ++i) {
    const double x = element_as_double(a, i), y = element_as_double(b, i);
    if (fp && (!std::isfinite(x) || !std::isfinite(y))) {
      // Same NaN, or the same infinity, is agreement; anything else is a mismatch.
      const bool same = (std::isnan(x) && std::isnan(y)) || (std::isinf(x) && x == y);
      if (!same) {
        if (d.nonfinite.size() < kNonFiniteShown) d.nonfinite.push_back({i, x, y});
        ++d.nonfinite_count;
      }
      continue;
    }
    const double e = std::fabs(x - y);
    if (e > d.max_abs) {
      d.max_abs = e;
      d.max_abs_index = i;
    }
    if (x != 0) d.max_rel = std::max(d.max_rel, e / std::fabs(x));
    else if (e > 0) d.max_rel = std::max(d.max_rel, std::numeric_limits<double>::infinity());
    if (!(e <= atol + rtol * std::fabs(x))) ++d.beyond;
    sum_abs += e;
    dot += x * y;
    na += x * x;
    nb += y * y;
    ++finite;
  }
  if (!fp) {
    // Exactly, element by element on the stored bytes: through double, int64 values beyond 2^53
    // (INT64_MAX and its neighbours) would compare equal.
    d.beyond = 0;
    const size_t width = a.bytes() / static_cast<size_t>(std::max<int64_t>(1, a.size()));
    const auto* pa = static_cast<const unsigned char*>(a.raw());
    const auto* pb = static_cast<const unsigned char*>(b.raw());
    if (a.size() == 0)  // empty (the shapes matched): nothing to compare, and no buffers
      d.beyond = 0;
    else if (width == 0)  // packed 4-bit elements: whole buffers
      d.beyond = a.bytes() == b.bytes() && std::memcmp(pa, pb, a.bytes()) == 0 ? 0 : 1;
    else
      for (int64_t i = 0; i < a.size(); ++i)
        d.beyond += std::memcmp(pa + i * width, pb + i * width, width) != 0;
  }
  d.mean_abs = finite ? sum_abs / static_cast<double>(finite) : 0;
  d.cosine = (na == 0 && nb == 0) ? 1 : (na == 0 || nb == 0) ? 0 : dot / std::sqrt(na * nb);
  // Classifier-shaped: [..., C] with C > 1 and more than one element per row.
  if (fp && a.rank() >= 1 && a.shape().back() > 1) {
    const int64_t classes = a.shape().back();
    const int64_t rows = a.size() / classes;
    d.top1_rows = rows;
    d.top1_agree = 0;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t ia = 0, ib = 0;
      for (int64_t c = 1; c < classes; ++c) {
        if (element_as_double(a, r * classes + c) > element_as_double(a, r * classes + ia)) ia = c;
        if (element_as_double(b, r * classes + c) > element_as_double(b, r * classes + ib)) ib = c;
      }
      d.top1_agree += ia == ib;
    }
  }
  return d;
}

}  // namespace onnxtool::runner
