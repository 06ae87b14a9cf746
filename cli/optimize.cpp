// `onnxtool optimize MODEL -o OUT`: graph passes, verified numerically on the runner before writing.
#include <algorithm>
#include <iostream>
#include <set>

#include "cli/common.h"
#include "cli/flags.h"
#include "cli/progress.h"
#include "cli/write_model.h"
#include "cli/verify.h"
#include "ir/error.h"
#include "ir/model_io.h"
#include "verify/optimize.h"

namespace onnxtool::cli {
namespace {

/// What a pass changed, its nonzero counts only ("3 nodes removed, 1 fusion"); "" for nothing.
std::string pass_changes(const passes::PassStats& stats) {
  std::string line;
  auto add = [&line](int64_t n, const char* one, const char* many) {
    if (n) line += (line.empty() ? "" : ", ") + std::to_string(n) + " " + (n == 1 ? one : many);
  };
  add(stats.reordered, "node reordered", "nodes reordered");
  add(stats.removed, "node removed", "nodes removed");
  add(stats.fused, "fusion", "fusions");
  add(stats.folded, "node folded", "nodes folded");
  add(stats.initializers_removed, "initializer removed", "initializers removed");
  return line;
}

struct OptimizeCliOptions {
  std::string model;
  std::string output;
  std::vector<std::string> passes;
  std::vector<std::string> skip;
  bool list_passes = false;
  ModelDimsFlag fix_shapes;  ///< --fix-input-shape
  bool verify = false;  // the default; the flag stays for scripts written before it was
  VerifyFlags check;
  bool fixed_point = false;
  bool force = false;
  bool json = false;
  std::set<std::string> given;  ///< the options on the command line
};

/// Passes report as they finish, in text, unless --fixed-point adds their counts up over rounds.
bool streams_passes(const OptimizeCliOptions& o) { return !o.json && !o.fixed_point; }

int list_passes(bool json) {
  if (json) {
    nlohmann::json passes = nlohmann::json::array();
    for (const auto& p : passes::pipeline()) passes.push_back({{"name", p.name}, {"doc", p.doc}});
    print_json({{"passes", passes}});
    return kExitOk;
  }
  for (const auto& p : passes::pipeline()) std::cout << p.name << "  " << p.doc << "\n";
  return kExitOk;
}

/// The passes and their verification as the flags ask, checked before any work.
verify::VerifiedOptimizeOptions optimize_options(const OptimizeCliOptions& o) {
  verify::VerifiedOptimizeOptions options;
  options.optimize.only = o.passes;
  options.optimize.skip = o.skip;
  options.optimize.fixed_point = o.fixed_point;
  options.optimize.input_shapes = parse_shapes("--fix-input-shape", o.fix_shapes.values);
  passes::check_pass_names(options.optimize);  // a usage error before any work
  refuse_verify_flags_unused(o.check, o.given);
  if (o.verify) std::cerr << "onnxtool optimize: --verify is the default; the flag can be left out\n";
  options.require_valid = !o.force;
  if (!o.check.no_verify) options.verify = verify_inputs(o.check, options.optimize.input_shapes, "--fix-input-shape");
  options.tolerance = tolerance(o.check, verify::kRewriteTolerance);
  options.optimize.progress = progress();
  // One line per pass that changed something, printed as it finishes (--json has them all at
  // the end). With --fixed-point a pass's counts add up over the rounds: printed at the end.
  if (streams_passes(o))
    options.optimize.pass_finished = [](const std::string& pass, const passes::PassStats& stats) {
      if (stats.changed()) result_line(pass + ": " + pass_changes(stats));
    };
  return options;
}

/// Refuses (Error kFailed, nothing written) an invalid input or a result that departs from it.
void refuse_failed(const std::string& model, const verify::VerifiedOptimizeReport& r) {
  if (r.invalid)
    throw Error(ErrorKind::kFailed, model + ": invalid model (" + describe(*r.invalid) +
                                        "); run `onnxtool check` for all errors, or pass --force");
  if (!r.verified.ok()) {
    const std::string& pass = r.first_diverging_pass;
    throw Error(ErrorKind::kFailed, "verification failed: " + r.verified.first_failure() +
                                        (pass.empty() ? "" : "; first diverging pass: " + pass + " (--skip " + pass + ")") +
                                        "; nothing written (--no-verify writes it anyway)");
  }
}

nlohmann::json optimize_json(const OptimizeCliOptions& o, const verify::VerifiedOptimizeReport& r, const verify::Tolerance& tol,
                             uint64_t bytes_before, const WrittenModel& written) {
  const passes::OptimizeReport& report = r.report;
  nlohmann::json passes = nlohmann::json::array();
  for (const auto& p : report.passes)
    passes.push_back({{"name", p.name}, {"removed", p.stats.removed}, {"fused", p.stats.fused},
                      {"folded", p.stats.folded}, {"initializers_removed", p.stats.initializers_removed},
                      {"reordered", p.stats.reordered}});
  const bool changed = report.reordered ||
                       std::any_of(report.passes.begin(), report.passes.end(), [](const passes::PassReport& p) { return p.stats.changed(); });
  return {{"output", o.output},
          {"changed", changed},
          {"passes", passes},
          {"rounds", report.rounds},
          {"reordered", report.reordered},
          {"nodes", {{"before", report.before.nodes}, {"after", report.after.nodes}}},
          {"initializers", {{"before", report.before.initializers}, {"after", report.after.initializers}}},
          {"file_bytes", file_bytes_json(bytes_before, written.saved)},
          {"written", written_json(written)},
          {"verification", verify_json(r.reference, r.verified, tol, r.verify_seconds)}};
}

void print_optimized(const OptimizeCliOptions& o, const verify::VerifiedOptimizeReport& r, const verify::Tolerance& tol,
                     uint64_t bytes_before, const WrittenModel& written) {
  const passes::OptimizeReport& report = r.report;
  int unchanged = 0;
  for (const auto& p : report.passes) {
    if (!p.stats.changed()) ++unchanged;
    else if (!streams_passes(o)) std::cout << p.name << ": " << pass_changes(p.stats) << "\n";
  }
  if (report.reordered && std::none_of(report.passes.begin(), report.passes.end(),
                                       [](const passes::PassReport& p) { return p.name == "sort_topologically"; }))
    std::cout << "sorted: " << report.reordered << " nodes moved into topological order\n";
  if (unchanged == static_cast<int>(report.passes.size()))
    std::cout << "no pass changed anything\n";
  else if (unchanged)
    std::cout << unchanged << " other pass" << (unchanged == 1 ? "" : "es") << " changed nothing\n";
  std::cout << "nodes " << report.before.nodes << " -> " << report.after.nodes << ", initializers "
            << report.before.initializers << " -> " << report.after.initializers << ", file "
            << human_bytes(bytes_before) << " -> " << human_bytes(saved_bytes(written.saved)) << "\n";
  print_verification(r.reference, r.verified, tol, r.verify_seconds);
  std::cout << "wrote " << o.output << "\n";
}

int run_optimize(const OptimizeCliOptions& o) {
  if (o.list_passes) return list_passes(o.json);
  if (o.model.empty()) throw_usage_error("MODEL is required");
  if (o.output.empty()) throw_usage_error("-o OUT is required");
  refuse_overwriting_input(o.model, o.output);
  const verify::VerifiedOptimizeOptions options = optimize_options(o);

  auto loaded = ir::load_model(o.model);
  ir::check_output_paths(loaded.info, o.output, "", /*in_place=*/false);
  const uint64_t bytes_before = stored_bytes(loaded.info);
  const verify::VerifiedOptimizeReport r =
      verify::optimize_verified(loaded.model, options, [&o] { return ir::load_model(o.model).model; });
  refuse_failed(o.model, r);
  const WrittenModel written = write_model(loaded.model, o.output);
  if (o.json) print_json(optimize_json(o, r, options.tolerance, bytes_before, written));
  else print_optimized(o, r, options.tolerance, bytes_before, written);
  return kExitOk;
}

}  // namespace

void register_optimize(CLI::App& app, Action& action) {
  auto o = std::make_shared<OptimizeCliOptions>();
  CLI::App* sub = app.add_subcommand("optimize", "Rewrite the graph with optimization passes");
  sub->add_option("MODEL", o->model, "input model (not needed with --list-passes)");
  sub->add_option("-o,--output", o->output, "output model");
  sub->add_option("--passes", o->passes, "run only these passes (comma-separated)")->delimiter(',');
  sub->add_option("--skip", o->skip, "passes not to run (comma-separated)")->delimiter(',');
  sub->add_flag("--list-passes", o->list_passes, "list the passes in pipeline order and exit");
  add_model_dims_flag(sub, o->fix_shapes, "--fix-input-shape",
                      "NAME=D1,D2,... fix an input's dims in the written model (more folding); the verification "
                      "inputs take them too");
  add_verify_flags(sub, o->check, {verify::kRewriteTolerance});
  // Verifying is the default: the flag, hidden from help, stays accepted for old command lines.
  sub->add_flag("--verify", o->verify, "compare the result with the original before writing (the default)")->group("");
  o->check.names.push_back("--verify");  // says what the default does: refused with --no-verify
  sub->add_flag("--fixed-point", o->fixed_point, "repeat the pipeline until nothing changes");
  sub->add_flag("--force", o->force,
                "optimize even a model the checker finds invalid (the result must still pass check to be written)");
  sub->add_flag("--json", o->json, "print one JSON document");
  add_quiet_flag(sub);
  add_model_run_flags(sub);
  sub->callback([&action, o, sub] {
    o->given = given_options(*sub);
    action = [o] {
      take_old_dims("optimize", o->given, o->fix_shapes, "--fix-input-shape", "fixes");
      return run_optimize(*o);
    };
  });
}

}  // namespace onnxtool::cli
