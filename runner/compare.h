// Numeric comparison of two runs' tensors: error statistics, cosine similarity, top-1 agreement
// and NaN/Inf mismatches, for `onnxtool compare`, `optimize --verify` and quantization reports.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runner/tensor.h"

namespace onnxtool::runner {

/// One element where a NaN or an infinity appears on one side only, or with another sign.
struct NonFiniteMismatch {
  int64_t index;
  double a, b;
};

struct TensorDiff {
  std::string problem;  ///< non-empty when the tensors cannot be compared (type, shape)
  int64_t elements = 0;
  double max_abs = 0;
  double max_rel = 0;
  double mean_abs = 0;
  int64_t max_abs_index = -1;
  double cosine = 1;
  /// Rows whose arg-max agrees, for outputs shaped [..., classes] with classes > 1 (else -1).
  int64_t top1_rows = -1, top1_agree = -1;
  std::vector<NonFiniteMismatch> nonfinite;  ///< the first few
  int64_t nonfinite_count = 0;
  /// Elements beyond |a - b| <= atol + rtol * |a|.
  int64_t beyond = 0;
  /// True when every element is within the tolerance given to compare_tensors and no NaN or
  /// infinity differs.
  bool within() const { return problem.empty() && beyond == 0 && nonfinite_count == 0; }
};

/// Compares b against the reference a. Integer, bool and string tensors compare exactly (any
/// difference counts as beyond tolerance).
TensorDiff compare_tensors(const Tensor& a, const Tensor& b, double rtol, double atol);

}  // namespace onnxtool::runner
