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

/// Sums over pairs of elements, a the reference and b the value compared with it: sum a^2,
/// sum b^2, sum ab and sum (a - b)^2. Cosine similarity, SQNR and relative error come from
/// them, and several tensors or samples pool into one figure by adding their sums.
struct ErrorSums {
  double aa = 0, bb = 0, ab = 0, noise = 0;
  void add(double a, double b) {
    aa += a * a;
    bb += b * b;
    ab += a * b;
    noise += (a - b) * (a - b);
  }
  ErrorSums& operator+=(const ErrorSums& o) {
    aa += o.aa;
    bb += o.bb;
    ab += o.ab;
    noise += o.noise;
    return *this;
  }
  /// 1 when both sides are all zeros, 0 when one side is.
  double cosine() const;
  /// 10 log10(sum a^2 / sum (a - b)^2): +inf when equal, -inf when a is all zeros and b not.
  double sqnr_db() const;
  /// sqrt(sum (a - b)^2 / sum a^2): 0 when equal, 1 when a is all zeros and b not.
  double relative_error() const;
};

struct TensorDiff {
  std::string problem;  ///< non-empty when the tensors cannot be compared (type, shape)
  int64_t elements = 0;
  double max_abs = 0;
  double max_rel = 0;
  double mean_abs = 0;
  int64_t max_abs_index = -1;
  double cosine = 1;
  /// False when the reference has fewer than two elements or all of them are equal: a cosine
  /// then says nothing about the error (one element: always 1 or -1).
  bool cosine_meaningful = true;
  /// 10 log10(sum a^2 / sum (a - b)^2): +inf when equal, -inf when a is all zeros and b not.
  double sqnr_db = 0;
  /// The sums cosine and SQNR come from (finite elements), so that several samples pool into
  /// one figure (SampleStats).
  ErrorSums sums;
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

/// Per-output figures over several samples. The largest errors are those of the worst sample
/// (and name it); cosine and SQNR are over every sample's elements together (one vector of all
/// samples: a sample whose output is near zero, such as a detector's map of an image without
/// detections, weighs as little as its signal, as quantize's --accuracy-target judges), with
/// the lowest single sample's figures beside them.
struct SampleStats {
  struct Worst {
    double value = 0;
    int sample = -1;  ///< -1 until a sample sets it
  };
  Worst max_abs_error, max_rel_error;        ///< largest over the samples
  Worst lowest_cosine, lowest_sqnr_db;       ///< of the single sample where each is lowest
  double mean_abs_error = 0;  ///< the mean over the samples of each sample's mean abs error
  int samples = 0;
  /// False when a sample has fewer than two elements, or no sample's reference varies.
  bool cosine_meaningful = false;
  bool one_element = false;  ///< some sample has fewer than two elements
  ErrorSums pooled;  ///< over every sample's elements together
  void add(const TensorDiff& d, int sample);
  double cosine() const { return pooled.cosine(); }
  double sqnr_db() const { return pooled.sqnr_db(); }
};

/// A pass/fail threshold on SampleStats (`compare --min-cosine` and the others).
struct Gate {
  enum class Kind { kMinCosine, kMaxRelError, kMinSqnr, kMaxAbsError };
  Kind kind;
  double threshold;
};

/// The metric a gate reads ("cosine").
const char* gate_metric(Gate::Kind kind);

struct GateResult {
  bool pass = true;
  double measured = 0;  ///< the value compared with the threshold
  int sample = -1;      ///< the sample it was measured on; -1 for a figure over every sample
  /// --min-cosine on an output whose cosine is not meaningful: judged by the cosine that its
  /// max_rel_error r amounts to, 1 / sqrt(1 + r^2) (as quantize judges small outputs).
  bool by_rel_error = false;
};

GateResult judge_gate(const SampleStats& stats, const Gate& gate);

/// Compares b against the reference a. Integer, bool and string tensors compare exactly (any
/// difference counts as beyond tolerance).
TensorDiff compare_tensors(const Tensor& a, const Tensor& b, double rtol, double atol);

/// A computed value against its reference, whatever its kind (run --expect and compare --expect).
struct ValueMatch {
  /// The tensor's figures (compare_tensors); for a sequence its items' pooled: counts summed,
  /// the largest errors of any item, cosine and SQNR over every element. `problem` is set when
  /// the kinds, element types, shapes or lengths differ.
  TensorDiff diff;
  /// Where the value differs most ("element [0,1]: 3 vs expected 2 (abs 1)", "item 2 ..."), or
  /// what differs ("int64 vs expected float"); empty when every element is within tolerance.
  std::string worst;
  int tensors = 0;  ///< the tensors compared (a sequence's items)
  bool within() const { return worst.empty(); }
};

/// Sequences compare item by item, optionals by presence then value (an optional holding a
/// tensor also matches the bare tensor, as the ONNX test data stores some); floats within
/// rtol/atol, everything else exactly.
ValueMatch match_value(const Value& want, const Value& got, double rtol, double atol);

}  // namespace onnxtool::runner
