// Two models run on the same inputs, output by output and, optionally, layer by layer: what
// `onnxtool compare` reports. The models need the same inputs; outputs correspond by name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/progress.h"
#include "runner/compare.h"
#include "runner/feeds.h"
#include "runner/session.h"

namespace onnxtool::runner {

/// The worst statistics of one tensor over several samples (top-1 agreement summed over them).
struct WorstDiff {
  TensorDiff diff;
  int sample = 0;  ///< the sample the worst statistics come from
  bool set = false;
  SampleStats stats;  ///< each figure's worst over the samples
  void add(const TensorDiff& d, int sample);
};

/// One intermediate tensor both models compute.
struct LayerDiff {
  std::string tensor;  ///< A's value name
  std::string node;    ///< the node of A that produces it
  WorstDiff worst;
};

struct ModelComparisonOptions {
  FeedOptions feeds;  ///< sample s uses feeds.seed + s for its random inputs
  /// Sample folders (`--inputs DIR` of sample folders): sample s reads its files from
  /// sample_dirs[s] instead of feeds.dir; `samples` must then be their number.
  std::vector<std::string> sample_dirs;
  int samples = 1;
  double rtol = 1e-3;
  double atol = 1e-5;
  bool per_layer = false;
  /// Compare and judge only these outputs of A (empty: every output), in A's order.
  std::vector<std::string> outputs;
  size_t worst_layers = 10;  ///< how many layers the ranking keeps
  DeviceSpec device_a, device_b;  ///< where each model runs
  /// Receives the comparison's progress (per sample; with per_layer, per value observed).
  ir::Progress progress;
};

/// Where one side of a comparison ran its nodes (device sessions only).
struct SidePlacement {
  DeviceInfo device;
  Placement placement;
};

struct ModelComparison {
  std::vector<std::string> outputs;  ///< A's outputs compared, in A's order
  std::vector<WorstDiff> output_diffs;
  bool within = true;  ///< every output within tolerance
  /// Per layer, in the order A computes them: A's values matched in B by name, or else by the
  /// producing node's name and output index, unless B's tensor of that node is itself matched
  /// by name to another of A's (a Conv that absorbed a BatchNormalization produces the
  /// BatchNormalization's tensor: A's pre-normalization tensor has no counterpart).
  std::vector<LayerDiff> layers;
  int first_beyond = -1;             ///< index into layers of the first beyond tolerance
  std::vector<size_t> worst_layers;  ///< indices into layers, most departed (lowest cosine) first
  std::optional<SidePlacement> placement_a, placement_b;  ///< of the last sample
  /// Float inputs whose precision differs between the models, cast to each model's own type:
  /// "inputs cast to float16 for B" (one line each).
  std::vector<std::string> notes;
};

/// Runs `a` and `b` on the same feeds. Throws Error(kUsage) naming `label_a`/`label_b` when their
/// inputs (names, element types) or A's outputs have no counterpart in B.
ModelComparison compare_models(ir::Model& a, ir::Model& b, const ModelComparisonOptions& options,
                               const std::string& label_a, const std::string& label_b);

/// Runs `model` on each sample and compares its outputs (b) with the reference tensors of
/// expect_dirs[s] (a): per output, `<safe name>.npy` or `.pb` (as `run --output-dir` writes them),
/// else `output_K.pb` (K: the output's position, the ONNX test_data_set layout). Throws
/// Error(kInput) naming the folder and the output when one is missing. No per-layer comparison.
ModelComparison compare_with_expected(ir::Model& model, const ModelComparisonOptions& options,
                                      const std::vector<std::string>& expect_dirs);

}  // namespace onnxtool::runner
