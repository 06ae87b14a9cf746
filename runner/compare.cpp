// Numeric comparison of tensors.
#include "runner/compare.h"

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

namespace onnxtool::runner {

namespace {

bool is_float(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

constexpr size_t kNonFiniteShown = 8;

/// The distance between 1 and the next value of a float type with few mantissa bits (bfloat16:
/// 7 bits, 2^-7; float8 e4m3: 2^-3, e5m2: 2^-2, float4 e2m1: 2^-1, e8m0 powers of two: 1); 0 for
/// the others.
double relative_step(DataType t) {
  switch (t) {
    case DataType::kBFloat16: return 0x1p-7;
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ: return 0x1p-3;
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ: return 0x1p-2;
    case DataType::kFloat4E2M1: return 0x1p-1;
    case DataType::kFloat8E8M0: return 1;
    default: return 0;
  }
}

}  // namespace

double ErrorSums::cosine() const { return (aa == 0 && bb == 0) ? 1 : (aa == 0 || bb == 0) ? 0 : ab / std::sqrt(aa * bb); }

double ErrorSums::sqnr_db() const {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  return noise == 0 ? kInf : aa == 0 ? -kInf : 10 * std::log10(aa / noise);
}

double ErrorSums::relative_error() const { return aa == 0 ? (noise == 0 ? 0.0 : 1.0) : std::sqrt(noise / aa); }

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
  // Where both sides hold bfloat16 or float8 values, a relative tolerance below one step of the
  // type cannot tell two roundings of the same value apart (the ONNX suite's bfloat16 data
  // truncates, Cast rounds to nearest): the step of the coarser type bounds rtol from below.
  rtol = std::max(rtol, std::min(relative_step(a.dtype()), relative_step(b.dtype())));
  double sum_abs = 0;
  int64_t finite = 0;
  bool varies = false;  // the reference holds two different finite values
  double first = 0;
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
    d.sums.add(x, y);
    if (finite == 0) first = x;
    else varies = varies || x != first;
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
  d.cosine = d.sums.cosine();
  d.cosine_meaningful = varies;
  d.sqnr_db = d.sums.sqnr_db();
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

void SampleStats::add(const TensorDiff& d, int sample) {
  if (!d.problem.empty()) return;
  auto keep = [&](Worst& w, double v, bool worse) {
    if (w.sample < 0 || worse) w = {v, sample};
  };
  keep(max_abs_error, d.max_abs, d.max_abs > max_abs_error.value);
  keep(max_rel_error, d.max_rel, d.max_rel > max_rel_error.value);
  keep(lowest_cosine, d.cosine, d.cosine < lowest_cosine.value);
  keep(lowest_sqnr_db, d.sqnr_db, d.sqnr_db < lowest_sqnr_db.value);
  mean_abs_error = (mean_abs_error * samples + d.mean_abs) / (samples + 1);
  ++samples;
  one_element = one_element || d.elements < 2;
  cosine_meaningful = !one_element && (cosine_meaningful || d.cosine_meaningful);
  pooled += d.sums;
}

const char* gate_metric(Gate::Kind kind) {
  switch (kind) {
    case Gate::Kind::kMinCosine: return "cosine";
    case Gate::Kind::kMaxRelError: return "max_rel_error";
    case Gate::Kind::kMinSqnr: return "sqnr_db";
    case Gate::Kind::kMaxAbsError: return "max_abs_error";
  }
  return "";
}

GateResult judge_gate(const SampleStats& stats, const Gate& gate) {
  GateResult r;
  auto at_least = [&](double pooled) {
    r.measured = pooled;
    r.pass = pooled >= gate.threshold;  // NaN fails
  };
  auto at_most = [&](const SampleStats::Worst& w) {
    r.measured = w.value;
    r.sample = w.sample;
    r.pass = w.value <= gate.threshold;
  };
  switch (gate.kind) {
    case Gate::Kind::kMinCosine:
      if (stats.cosine_meaningful) {
        at_least(stats.cosine());
      } else {
        const double rel = stats.max_rel_error.value;
        r.by_rel_error = true;
        r.sample = stats.max_rel_error.sample;
        r.measured = std::isinf(rel) ? 0 : 1 / std::sqrt(1 + rel * rel);
        r.pass = r.measured >= gate.threshold;
      }
      break;
    case Gate::Kind::kMaxRelError: at_most(stats.max_rel_error); break;
    case Gate::Kind::kMinSqnr: at_least(stats.sqnr_db()); break;
    case Gate::Kind::kMaxAbsError: at_most(stats.max_abs_error); break;
  }
  return r;
}

namespace {

std::string three_digits(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

/// "[1,0,2]": the multi-index of flat element i.
std::string element_index(const std::vector<int64_t>& shape, int64_t i) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] > 0) {
      idx[d] = i % shape[d];
      i /= shape[d];
    }
  }
  return shape_string(idx);
}

std::string element_text(const Tensor& t, int64_t i) {
  if (t.dtype() == DataType::kString) {
    const std::string& s = t.strings()[static_cast<size_t>(i)];
    return "\"" + (s.size() > 40 ? s.substr(0, 40) + "..." : s) + "\"";
  }
  if (!is_plain_numeric(t.dtype())) return "(packed bits)";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", element_as_double(t, i));
  return buf;
}

/// Where a tensor that is not within tolerance differs most: the first NaN or infinity that
/// differs, else the largest difference; strings and packed types have no distance, so the
/// first element that reads differently.
std::string worst_element(const Tensor& want, const Tensor& got, const TensorDiff& d) {
  int64_t i = d.nonfinite_count ? d.nonfinite.front().index : d.max_abs_index;
  for (int64_t k = 0; i < 0 && k < got.size(); ++k)
    if (element_text(got, k) != element_text(want, k)) i = k;
  if (i < 0) return "elements differ";
  std::string err;
  if (is_plain_numeric(got.dtype()))
    err = " (abs " + three_digits(std::fabs(element_as_double(got, i) - element_as_double(want, i))) + ")";
  return "element " + element_index(got.shape(), i) + ": " + element_text(got, i) + " vs expected " + element_text(want, i) + err;
}

/// Adds one item's figures to a sequence's.
void pool(TensorDiff& into, const TensorDiff& d) {
  if (into.problem.empty()) into.problem = d.problem;
  if (d.elements > 0)
    into.mean_abs = (into.mean_abs * static_cast<double>(into.elements) + d.mean_abs * static_cast<double>(d.elements)) /
                    static_cast<double>(into.elements + d.elements);
  into.elements += d.elements;
  if (d.max_abs > into.max_abs) {
    into.max_abs = d.max_abs;
    into.max_abs_index = -1;  // an index into one item, not into the sequence
  }
  into.max_rel = std::max(into.max_rel, d.max_rel);
  into.sums += d.sums;
  into.cosine = into.sums.cosine();
  into.sqnr_db = into.sums.sqnr_db();
  into.cosine_meaningful = into.cosine_meaningful && d.cosine_meaningful;
  into.beyond += d.beyond;
  into.nonfinite_count += d.nonfinite_count;
  into.top1_rows = into.top1_agree = -1;
}

void match_into(const Value& want, const Value& got, double rtol, double atol, ValueMatch& m, const std::string& where) {
  using Kind = Value::Kind;
  auto differ = [&](const std::string& why) {
    if (m.worst.empty()) m.worst = where + why;
  };
  if (want.kind == Kind::kOptional && got.kind != Kind::kOptional && want.optional)
    return match_into(*want.optional, got, rtol, atol, m, where);
  if (got.kind == Kind::kOptional && want.kind != Kind::kOptional && got.optional)
    return match_into(want, *got.optional, rtol, atol, m, where);
  const std::string kinds = got.describe() + " vs expected " + want.describe();
  if (want.kind != got.kind) {
    m.diff.problem = kinds;
    return differ(kinds);
  }
  if (want.kind == Kind::kOptional) {
    if (!want.optional != !got.optional) {
      m.diff.problem = kinds;
      return differ(kinds);
    }
    if (want.optional) match_into(*want.optional, *got.optional, rtol, atol, m, where);
    return;
  }
  if (want.kind == Kind::kSequence) {
    if (want.sequence->size() != got.sequence->size()) {
      m.diff.problem = kinds;
      return differ(kinds);
    }
    for (size_t k = 0; k < want.sequence->size(); ++k)
      match_into(Value::of((*want.sequence)[k]), Value::of((*got.sequence)[k]), rtol, atol, m,
                 where + "item " + std::to_string(k) + " ");
    return;
  }
  TensorDiff d;
  if (want.tensor.dtype() != got.tensor.dtype())
    d.problem = std::string(data_type_name(got.tensor.dtype())) + " vs expected " + std::string(data_type_name(want.tensor.dtype()));
  else
    d = compare_tensors(want.tensor, got.tensor, rtol, atol);
  if (!d.problem.empty() && want.tensor.dtype() == got.tensor.dtype())
    d.problem = shape_string(got.tensor.shape()) + " vs expected " + shape_string(want.tensor.shape());
  if (!d.problem.empty()) differ(d.problem);
  else if (!d.within()) differ(worst_element(want.tensor, got.tensor, d));
  if (m.tensors++ == 0) m.diff = d;
  else pool(m.diff, d);
}

}  // namespace

ValueMatch match_value(const Value& want, const Value& got, double rtol, double atol) {
  ValueMatch m;
  match_into(want, got, rtol, atol, m, "");
  return m;
}

}  // namespace onnxtool::runner
