// Verification of a rewritten model against its original on the runner: the check `optimize`,
// `convert`, `edit` and `extract` run before they write anything. The original runs once on
// fixed inputs (the user's, or seeded random ones); each candidate runs on the same inputs and
// every output is compared under a named tolerance policy.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runner/compare.h"
#include "runner/feeds.h"
#include "runner/session.h"

namespace onnxtool::verify {

/// How close a candidate's float outputs must be to the original's. Integer, bool and string
/// outputs always compare exactly. An element passes when
///   |a - b| <= atol * max(1, max|a|) + rtol * |a|
/// where max|a| is the largest finite magnitude of that output of the original: the absolute
/// part scales with the output, so that cancellation inside a large-valued output (a sum of
/// terms near 1e3 whose result is near 0) is not mistaken for a change. A NaN or infinity must
/// be matched exactly.
struct Tolerance {
  const char* name;
  double rtol;
  double atol;
};

/// Rewrites that reassociate float arithmetic (folded weights, fused ops, opset conversion).
/// The absolute part, 2e-4 of the output's scale, is float32's rounding noise in a deep network
/// with a margin: on PaddleOCR v4 det with real images (a sigmoid map) onnxruntime and onnxtool,
/// both running the original, differ by up to 4.5e-5, and optimize's correct rewrites by up to
/// 6.3e-5, which 1e-5 refused on 3 of 14 images. A wrong rewrite moves outputs by far more.
constexpr Tolerance kRewriteTolerance{"rewrite", 1e-4, 2e-4};
/// float32 -> float16 conversion: 11-bit mantissas, errors that grow with depth.
constexpr Tolerance kFp16Tolerance{"float16", 1e-2, 3e-2};
/// Surgery (extract, edit) moves no arithmetic: outputs must match bit for bit unless the
/// caller loosens it.
constexpr Tolerance kExactTolerance{"exact", 0, 0};

/// How long verification lets the original model run (each input size it tries) when no
/// --time-limit bounds the command: a model whose Loop never ends must not hang a writer.
constexpr int kVerifyOriginalSeconds = 300;

/// One output's comparison.
struct OutputCheck {
  std::string name;
  std::string type;  ///< the original's tensor description, e.g. "float32[1,3]"
  bool exact = false;  ///< integer/bool/string: compared exactly
  runner::TensorDiff diff;
  bool within = true;
  std::string why;  ///< when not within: the first problem, in words
};

struct VerifyResult {
  std::vector<OutputCheck> outputs;
  bool ok() const;
  /// "output 'y': max abs error 0.5 at element 3 (2 of 6 elements beyond rtol 1e-4, atol 1e-5)".
  std::string first_failure() const;
};

/// The inputs to verify on, described for the report: "random (seed 0; N=1)" or the folder.
struct VerifyInputs {
  runner::FeedOptions feeds;  ///< random when neither dir nor files is set
  /// Where every candidate runs. The original, the reference, always runs on the CPU runner: a
  /// device kernel that is wrong would be wrong on both sides and pass.
  runner::DeviceSpec device;
};

/// The original model run once on its verification inputs, to check candidates against.
class Reference {
 public:
  /// Runs `original` once (its outputs are kept; the model need not outlive this). Throws
  /// Error(kFailed) with a message starting "cannot verify:" when the original does not run on
  /// these inputs (a kernel missing, a symbolic dim of 1 that the model cannot take...), saying
  /// how to choose inputs or skip verification.
  Reference(ir::Model& original, const VerifyInputs& inputs);

  /// Runs the candidate on the same inputs and compares every output with the tolerance.
  /// Inputs whose float type changed (a float16 model's inputs) are converted. Throws
  /// Error(kFailed) "the result does not run: ..." when the candidate fails to run.
  VerifyResult check(ir::Model& candidate, const Tolerance& tolerance) const;

  /// Compares outputs computed elsewhere (another runtime's, by output name) with the
  /// original's; an output missing from `outputs` fails.
  VerifyResult compare(const std::map<std::string, runner::Tensor>& outputs, const Tolerance& tolerance) const;

  /// Where `candidate` first departs from `original` (a model with the same value names: the
  /// float32 model a float16 `candidate` was converted from): the first float value, in the
  /// order `original` computes its main graph, whose same-named value in `candidate` is beyond
  /// `tolerance` (scaled to that value's own magnitude, as for outputs). "" when none is.
  /// Both models run on these feeds; every float value of `candidate` is held meanwhile.
  std::string first_divergence(ir::Model& original, ir::Model& candidate, const Tolerance& tolerance) const;

  /// Bounds a session running a candidate (or the original beside it) on these feeds: 20 times
  /// the original's run plus 10 s, so that a rewrite that made a loop endless is reported, not
  /// waited on (TimeLimitReached).
  void bound(runner::Session& session) const;

  /// The feeds as `candidate` takes them: float inputs converted to its inputs' float types.
  std::map<std::string, runner::Value> feeds_for(ir::Model& candidate) const;

  const std::map<std::string, runner::Value>& feeds() const { return feeds_; }
  /// How the inputs were chosen, in words, and the shapes fed: "random (seed 0; floats uniform in
  /// [-1, 1), integers in [0, 9]): x=float32[1,3]", or the folder or "files" and the shapes.
  const std::string& inputs_description() const { return description_; }
  /// The inputs were made up (random), not given: the verification proves less than real data.
  bool random_inputs() const { return random_; }

 private:
  std::map<std::string, runner::Value> feeds_;
  std::vector<std::string> output_names_;
  std::vector<runner::Value> outputs_;
  std::string description_;
  bool random_ = false;
  runner::SessionOptions reference_options_;  ///< the original's runs: the CPU runner
  runner::SessionOptions options_;            ///< the candidates' runs: the device asked for
  double original_seconds_ = 0;       ///< the original's run on feeds_
};

/// Largest finite |v| of every float value `model` produces on `feeds`, subgraphs included, by
/// value name (graph inputs too): what a float16 conversion has to fit into.
std::map<std::string, double> value_ranges(ir::Model& model, const std::map<std::string, runner::Value>& feeds);

}  // namespace onnxtool::verify
