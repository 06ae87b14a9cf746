// The ONNX model checker: every rule of the spec over the IR, collected as diagnostics.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/diagnostic.h"
#include "ir/graph.h"
#include "ir/progress.h"

namespace onnxtool::checker {

struct CheckOptions {
  /// Nodes of unknown (custom) domains become errors instead of warnings.
  bool strict = false;
  /// Run shape and type inference and report its contradictions.
  bool infer_shapes = true;
  /// Hears the phases of long checks: reading (check_file), the main graph's nodes, inference.
  ir::Progress progress;
};

struct CheckResult {
  std::vector<ir::Diagnostic> diagnostics;  ///< in discovery order
  size_t errors = 0;
  size_t warnings = 0;
  /// Valid: no errors (and, when strict, no warnings).
  bool valid(bool strict) const { return errors == 0 && (!strict || warnings == 0); }
};

/// Loads and checks a model file. Tensor data and external-data problems become diagnostics;
/// only a file that is not an ONNX model at all throws Error(kInput).
CheckResult check_file(const std::string& path, const CheckOptions& options = {});

/// Checks a model in memory, leaving it unchanged (inferred types go to a side table);
/// diagnostics are appended to `sink`.
void check_model(const ir::Model& model, ir::DiagnosticSink& sink, const CheckOptions& options = {});

/// The first error, among the rules a run relies on (names defined once and before use, no
/// cycle, distinct and existing outputs, one well-formed data field per tensor), or nullopt.
/// `run`, `compare` and `quantize` refuse a model that breaks one, with the rule's message.
std::optional<ir::Diagnostic> runner_error(const ir::Model& model);

/// What the check of a model about to be written found (check_for_writing).
struct WriteCheck {
  int64_t sorted_nodes = 0;  ///< nodes moved into topological order before the check
  CheckResult result;        ///< the checker's findings on the sorted model
};

/// The gate of every model onnxtool writes: sorts every graph topologically (a model is never
/// written out of order, whatever order its input was stored in), then checks it as
/// `onnxtool check` does, shape inference included. The caller writes the model only when
/// result.errors is 0. A graph with a cycle is left as it was; the check reports the cycle.
WriteCheck check_for_writing(ir::Model& model);

/// The newest IR version this checker knows.
constexpr int64_t kMaxIrVersion = 14;

}  // namespace onnxtool::checker
