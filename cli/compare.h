// `onnxtool compare`: its options, the comparison and its verdicts, and their report
// (compare_report.cpp).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/common.h"
#include "ir/model_io.h"
#include "ir/output_file.h"
#include "runner/compare_models.h"

namespace onnxtool::cli {

struct CompareCliOptions {
  std::string a, b;
  FeedFlags feed;  ///< --input, --inputs (one sample, or a folder of sample folders), --random, ...
  std::vector<std::string> outputs;  ///< --outputs: judge only these
  int samples = 1;
  double atol = 1e-5;
  double rtol = 1e-3;
  std::string expect_dir;
  std::vector<runner::Gate> gates;  ///< in the order of the flags below
  bool per_layer = false;
  std::string report;  ///< --report FILE: .html (a page with charts) or .json
  bool json = false;
  std::string device = "cpu", device_a, device_b;
  std::set<std::string> given;  ///< the options on the command line
};

/// One gate judged on one output.
struct GateVerdict {
  size_t output;
  runner::Gate gate;
  runner::GateResult result;
  std::string problem;  ///< why the output cannot be judged (type, shape, NaN/Inf mismatches)
};

/// A comparison and the verdicts on it.
struct Comparison {
  ir::LoadedModel a;
  std::optional<ir::LoadedModel> b;  ///< outlives `result`: its placement (on a device) points at B's nodes
  runner::ModelComparisonOptions options;
  runner::ModelComparison result;
  bool random = false;  ///< random inputs (all or some)
  /// Folder names, the random samples' seeds, or the one folder or set of files given.
  std::vector<std::string> sample_names;
  /// With gates, atol/rtol judge only when given: the default atol would fail (or pass) what the
  /// gates were chosen to decide.
  bool tolerance_applies = true;
  std::vector<GateVerdict> verdicts;
  size_t failed_gates = 0;
  bool ok() const { return (!tolerance_applies || result.within) && failed_gates == 0; }
};

/// The report on stdout, --json or text.
void print_comparison(const CompareCliOptions& o, const Comparison& c);

/// --report FILE (when given): the --json document, with every matched layer under "layers"
/// (--per-layer), as JSON or as an HTML page (FILE ending in .html).
void write_comparison_report(const CompareCliOptions& o, const Comparison& c);

/// One line on stderr for CI logs: the first failure and the count of the others.
void print_failures(const CompareCliOptions& o, const Comparison& c);

}  // namespace onnxtool::cli
