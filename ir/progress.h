// Progress of long work (calibration, per-layer comparison, verification runs): libraries report
// it through a callback their caller passes in, and never print it themselves.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

namespace onnxtool::ir {

/// Where a phase of long work stands: `done` of `total` steps of `phase` (total 0: unknown). A
/// phase ends when done reaches total, or when another phase begins.
struct ProgressStep {
  std::string phase;   ///< what is being done, e.g. "calibration"
  int64_t done = 0;
  int64_t total = 0;
  std::string detail;  ///< optional words on the step, e.g. "attempt 3"
};

/// Receives the steps; an empty one means nobody listens. The receiver decides what to show and
/// how often, so a library may report every step, however small.
using Progress = std::function<void(const ProgressStep& step)>;

/// Calls `progress` when someone listens.
inline void report_progress(const Progress& progress, std::string phase, int64_t done, int64_t total,
                            std::string detail = {}) {
  if (progress) progress(ProgressStep{std::move(phase), done, total, std::move(detail)});
}

}  // namespace onnxtool::ir
