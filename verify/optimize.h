// Optimization as `onnxtool optimize` runs it: on a valid model only, checked against the
// original on the runner before the caller writes anything, and, when the result departs, the
// first pass responsible named.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "ir/diagnostic.h"
#include "ir/graph.h"
#include "passes/pass.h"
#include "verify/reference.h"

namespace onnxtool::verify {

struct VerifiedOptimizeOptions {
  passes::OptimizeOptions optimize;
  /// Refuse a model the checker finds invalid (shape-inference contradictions included).
  bool require_valid = true;
  /// The inputs to verify on; none: the result is not verified.
  std::optional<VerifyInputs> verify;
  Tolerance tolerance = kRewriteTolerance;
};

struct VerifiedOptimizeReport {
  /// The checker's first error when require_valid refused the model: nothing was done.
  std::optional<ir::Diagnostic> invalid;
  passes::OptimizeReport report;
  std::optional<Reference> reference;  ///< the original's run, when verified
  VerifyResult verified;
  /// When verification failed: the first pass whose own result is beyond tolerance; empty when
  /// no pass alone is (the divergence needs a later pass too).
  std::string first_diverging_pass;
  double verify_seconds = 0;  ///< running the original, checking the result, searching the pass
  bool ok() const { return !invalid && verified.ok(); }
};

/// Sorts every graph topologically (an unsorted but acyclic graph is not refused), applies the
/// validity gate, runs the original, optimizes `model` in place and checks the result. When the
/// check fails, `reload` gives a fresh copy of the original to replay the pipeline on pass by
/// pass. Throws as passes::optimize and Reference do.
VerifiedOptimizeReport optimize_verified(ir::Model& model, const VerifiedOptimizeOptions& options,
                                         const std::function<ir::Model()>& reload);

}  // namespace onnxtool::verify
