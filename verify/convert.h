// One conversion as `onnxtool convert` runs it: the opset change, the precision change (float16
// guided by runs of the model when verified), the check of the result against the original,
// and optionally the inferred shapes stored in the model.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "convert/precision.h"
#include "convert/version_converter.h"
#include "ir/graph.h"
#include "ir/progress.h"
#include "verify/fp16_guided.h"
#include "verify/reference.h"

namespace onnxtool::verify {

struct ConvertRequest {
  int64_t opset = 0;  ///< target opset of the default domain; 0 keeps it
  convert::Precision precision = convert::Precision::kKeep;
  convert::Fp16Options fp16;  ///< with Precision::kFloat16
  bool preprocess = true;     ///< with Precision::kFloat16: convert::preprocess_for_fp16 first
  /// The inputs to verify an opset or precision change on; none: not verified.
  std::optional<VerifyInputs> verify;
  Tolerance tolerance = kRewriteTolerance;  ///< see default_tolerance
  bool infer_shapes = false;  ///< store inferred types and shapes as value_info
  /// Receives the progress of the verification runs (empty: nothing reported).
  ir::Progress progress;
  /// An opset or precision change: what changes what runs, and so what is verified.
  bool rewrites() const { return opset || precision != convert::Precision::kKeep; }
};

/// The tolerance policy of a request: float16's for a precision change, else the rewrite one.
Tolerance default_tolerance(const ConvertRequest& request);

struct ConvertResult {
  /// The model is already at the requested opset and nothing else was asked: nothing to write.
  bool unchanged = false;
  convert::VersionReport version;
  convert::PrecisionReport precision;
  std::optional<GuidedFp16> guided;    ///< the guided float16 conversion, when verified
  std::optional<Reference> reference;  ///< the original's run, when verified
  VerifyResult verified;               ///< the result against the original
  double verify_seconds = 0;
  size_t inferred = 0;          ///< value_info entries added by infer_shapes
  size_t inference_errors = 0;  ///< contradictions shape inference found (check reports them)
  /// The model to write: `model` converted in place, or the guided float16 model.
  ir::Model& output(ir::Model& model) { return guided ? guided->model : model; }
};

/// Converts `model` in place (or into result.guided). `reload` gives a fresh copy of the
/// original, for each round of the guided float16 conversion. When verification fails, the
/// result says so (verified.ok() is false) and shapes are not inferred: the caller must not
/// write it. Throws as convert::convert_opset and Reference do.
ConvertResult convert_verified(ir::Model& model, const ConvertRequest& request, const std::function<ir::Model()>& reload);

}  // namespace onnxtool::verify
