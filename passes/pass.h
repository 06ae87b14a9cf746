// Graph optimization passes: the pass interface, the ordered pipeline and the optimizer driver.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/progress.h"

namespace onnxtool::passes {

/// What one pass did: nodes removed (no-ops, dead code, duplicates), fused into another node, or
/// folded into initializers; initializers removed or merged.
struct PassStats {
  int64_t removed = 0;
  int64_t fused = 0;
  int64_t folded = 0;
  int64_t initializers_removed = 0;
  int64_t reordered = 0;  ///< nodes moved to another place in their graph's list

  bool changed() const { return removed || fused || folded || initializers_removed || reordered; }
  PassStats& operator+=(const PassStats& o) {
    removed += o.removed;
    fused += o.fused;
    folded += o.folded;
    initializers_removed += o.initializers_removed;
    reordered += o.reordered;
    return *this;
  }
};

struct OptimizeOptions {
  /// Passes to run (--passes), in pipeline order; empty: every pass of the pipeline.
  std::vector<std::string> only;
  /// Passes not to run (--skip).
  std::vector<std::string> skip;
  /// Repeats the pipeline until no pass changes anything (at most 8 rounds).
  bool fixed_point = false;
  /// Constant folding never creates a tensor larger than this (bytes).
  int64_t fold_max_bytes = int64_t{4} << 20;
  /// --input-shape: fixed dims for graph inputs, applied before the passes.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  /// Called after every pass that changed the model, with the pass's name: verification uses it
  /// to find the first pass whose result diverges from the original.
  std::function<void(const std::string& pass, ir::Model& model)> after_pass;
  /// Called after every pass run, with what the pass did so far (its stats of all rounds): a
  /// caller can show each pass as it finishes rather than all at the end.
  std::function<void(const std::string& pass, const PassStats& stats)> pass_finished;
  /// Receives the pipeline's progress: one step per pass ("passes", the pass about to run).
  ir::Progress progress;
};

struct PassContext {
  const OptimizeOptions& options;
};

/// One pass: a name (verb_noun), one line of doc for --list-passes, and the function.
struct Pass {
  const char* name;
  const char* doc;
  PassStats (*run)(ir::Model& model, const PassContext& context);
};

/// Every pass, in the order the optimizer runs them.
const std::vector<Pass>& pipeline();
/// The pass of that name, or nullptr.
const Pass* find_pass(std::string_view name);
/// "a, b, c": the pass names, for error messages.
std::string pass_names();

struct PassReport {
  std::string name;
  PassStats stats;
};

struct ModelCounts {
  int64_t nodes = 0;         ///< in every graph, subgraphs included
  int64_t initializers = 0;  ///< in every graph
};
ModelCounts count_model(const ir::Model& model);

struct OptimizeReport {
  std::vector<PassReport> passes;  ///< totals per pass over all rounds, pipeline order
  ModelCounts before, after;
  int rounds = 0;
  /// Nodes the topological sort every optimize starts with moved (also sort_topologically's
  /// `reordered` when that pass is selected): a model listed out of order is sorted whatever
  /// the passes.
  int64_t reordered = 0;
};

/// Counts `moved` nodes in the report's `reordered` and in sort_topologically's when selected.
void add_reordered(OptimizeReport& report, int64_t moved);

/// Throws Error(kUsage) naming the first pass of options.only or options.skip that does not exist.
void check_pass_names(const OptimizeOptions& options);

/// Runs the selected passes over the model (every graph, subgraphs included). Throws Error(kUsage)
/// for an unknown pass name or an input shape that names no input or contradicts the model, and
/// Error(kFailed) for a cyclic graph.
OptimizeReport optimize(ir::Model& model, const OptimizeOptions& options);

}  // namespace onnxtool::passes
