// optimize_verified: the validity gate, the verification, and the search for the diverging pass.
#include "verify/optimize.h"

#include <chrono>

#include "checker/checker.h"
#include "ir/error.h"

namespace onnxtool::verify {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

/// Replays the pipeline on a fresh copy of the original, checking after every pass that changed
/// something; the first pass whose result is beyond tolerance (a result that no longer runs
/// counts as beyond).
std::string first_diverging_pass(ir::Model copy, passes::OptimizeOptions options, const Reference& reference,
                                 const Tolerance& tolerance) {
  // passes::optimize sorts the copy first, as it sorted the original.
  options.pass_finished = nullptr;  // the replay is not the optimization the caller reports
  options.progress = nullptr;
  std::string first;
  options.after_pass = [&](const std::string& pass, ir::Model& m) {
    if (!first.empty()) return;
    try {
      if (!reference.check(m, tolerance).ok()) first = pass;
    } catch (const Error&) {
      first = pass;
    }
  };
  passes::optimize(copy, options);
  return first;
}

}  // namespace

VerifiedOptimizeReport optimize_verified(ir::Model& model, const VerifiedOptimizeOptions& options,
                                         const std::function<ir::Model()>& reload) {
  VerifiedOptimizeReport r;
  const int64_t moved = ir::sort_graphs(model);  // before the checker: order is optimize's to fix
  if (options.require_valid) {
    ir::DiagnosticSink sink;
    checker::check_model(model, sink);
    for (const auto& d : sink.items())
      if (d.severity == ir::Severity::kError) {
        r.invalid = d;
        return r;
      }
  }
  // The original runs first, on the model as given: the same object is then optimized in place.
  const ir::Progress& progress = options.optimize.progress;
  const auto start = Clock::now();
  if (options.verify) {
    ir::report_progress(progress, "verification: running the original", 0, 1);
    r.reference.emplace(model, *options.verify);
    ir::report_progress(progress, "verification: running the original", 1, 1);
  }
  r.verify_seconds = seconds_since(start);

  passes::OptimizeOptions optimize_options = options.optimize;
  if (optimize_options.pass_finished) {
    // The nodes sorted above count as the topological sort's, as in the report.
    optimize_options.pass_finished = [moved, inner = options.optimize.pass_finished](const std::string& pass,
                                                                                      passes::PassStats stats) {
      if (pass == "sort_topologically") stats.reordered += moved;
      inner(pass, stats);
    };
  }
  r.report = passes::optimize(model, optimize_options);
  passes::add_reordered(r.report, moved);

  if (r.reference) {
    const auto check_start = Clock::now();
    ir::report_progress(progress, "verification: running the result", 0, 1);
    r.verified = r.reference->check(model, options.tolerance);
    ir::report_progress(progress, "verification: running the result", 1, 1);
    if (!r.verified.ok()) {
      ir::report_progress(progress, "verification: replaying the passes one by one", 0, 1);
      r.first_diverging_pass = first_diverging_pass(reload(), options.optimize, *r.reference, options.tolerance);
      ir::report_progress(progress, "verification: replaying the passes one by one", 1, 1);
    }
    r.verify_seconds += seconds_since(check_start);
  }
  return r;
}

}  // namespace onnxtool::verify
