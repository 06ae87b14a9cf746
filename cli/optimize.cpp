// `onnxtool optimize MODEL -o OUT`: graph passes, optionally verified numerically by the runner.
#include <cmath>
#include <cstring>
#include <iostream>

#include "checker/checker.h"
#include "cli/common.h"
#include "ir/error.h"
#include "ir/model_io.h"
#include "passes/pass.h"
#include "runner/feeds.h"
#include "runner/session.h"

namespace onnxtool::cli {
namespace {

struct OptimizeCliOptions {
  std::string model;
  std::string output;
  std::vector<std::string> passes;
  std::vector<std::string> skip;
  bool list_passes = false;
  std::vector<std::string> input_shapes;
  bool verify = false;
  std::string inputs_dir;
  double rtol = 1e-4;
  double atol = 1e-5;
  bool fixed_point = false;
  bool force = false;
  bool json = false;
};

double element(const runner::Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case ir::DataType::kFloat: return t.data<float>()[i];
    case ir::DataType::kDouble: return t.data<double>()[i];
    case ir::DataType::kFloat16: return runner::half_to_float(t.data<uint16_t>()[i]);
    case ir::DataType::kBFloat16: return runner::bfloat16_to_float(t.data<uint16_t>()[i]);
    default: return 0;
  }
}

/// Empty when `b` matches `a` within tolerance (floats) or exactly (others); else why not.
std::string mismatch(const runner::Value& a, const runner::Value& b, double rtol, double atol) {
  if (!a.is_tensor() || !b.is_tensor()) return a.describe() == b.describe() ? "" : "values differ";
  const runner::Tensor& x = a.tensor;
  const runner::Tensor& y = b.tensor;
  if (x.dtype() != y.dtype() || x.shape() != y.shape()) return x.describe() + " became " + y.describe();
  const auto dt = x.dtype();
  if (dt == ir::DataType::kFloat || dt == ir::DataType::kDouble || dt == ir::DataType::kFloat16 ||
      dt == ir::DataType::kBFloat16) {
    for (int64_t i = 0; i < x.size(); ++i) {
      const double p = element(x, i), q = element(y, i);
      if (p == q || (std::isnan(p) && std::isnan(q))) continue;
      if (!(std::fabs(p - q) <= atol + rtol * std::fabs(p)))
        return "element " + std::to_string(i) + " was " + std::to_string(p) + ", now " + std::to_string(q);
    }
    return "";
  }
  if (dt == ir::DataType::kString) return x.strings() == y.strings() ? "" : "strings differ";
  return x.bytes() == y.bytes() && std::memcmp(x.raw(), y.raw(), x.bytes()) == 0 ? "" : "values differ";
}

/// Runs the original and the optimized model on the same inputs; throws Error(kFailed) naming the
/// first output beyond tolerance.
void verify(ir::Model& original, ir::Model& optimized, const OptimizeCliOptions& o,
            const std::map<std::string, std::vector<int64_t>>& shapes) {
  runner::Session before(original);
  runner::Session after(optimized);
  runner::FeedOptions feed;
  feed.dir = o.inputs_dir;
  feed.random = o.inputs_dir.empty();
  feed.shapes = shapes;
  const auto feeds = runner::load_feeds(before, feed);
  const auto a = before.run(feeds);
  const auto b = after.run(feeds);
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string why = mismatch(a[i], b[i], o.rtol, o.atol);
    if (!why.empty())
      throw Error(ErrorKind::kFailed, "--verify: output '" + before.outputs()[i]->value->name() +
                                          "' changed beyond tolerance: " + why + "; nothing written");
  }
}

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

int run_optimize(const OptimizeCliOptions& o) {
  if (o.list_passes) return list_passes(o.json);
  if (o.model.empty()) throw_usage_error("MODEL is required");
  if (o.output.empty()) throw_usage_error("-o OUT is required");
  if (ir::same_file(o.model, o.output)) throw_usage_error(o.output + ": is the input model itself; choose another output");

  passes::OptimizeOptions options;
  options.only = o.passes;
  options.skip = o.skip;
  options.fixed_point = o.fixed_point;
  for (const auto& s : o.input_shapes) {
    auto [name, text] = parse_assignment(s, "--input-shape");
    options.input_shapes[name] = parse_size_list("--input-shape", name, text);
  }
  // Unknown pass names are usage errors before any work.
  for (const auto* list : {&options.only, &options.skip})
    for (const auto& n : *list)
      if (!passes::find_pass(n)) throw_usage_error("unknown pass '" + n + "' (passes: " + passes::pass_names() + ")");

  auto loaded = ir::load_model(o.model);
  // An unsorted but acyclic graph is sorted, not refused (sorting names the nodes of a cycle).
  ir::for_each_graph(loaded.model, [](ir::Graph& g) { g.topological_sort(); });
  if (!o.force) {
    ir::DiagnosticSink sink;
    checker::CheckOptions check;
    checker::check_model(loaded.model, sink, check);
    for (const auto& d : sink.items())
      if (d.severity == ir::Severity::kError)
        throw Error(ErrorKind::kFailed, o.model + ": invalid model (" + d.rule + " " +
                                            (d.node.empty() ? d.tensor : d.node) + ": " + d.message +
                                            "); run `onnxtool check` for all errors, or pass --force");
  }
  const uint64_t bytes_before = loaded.info.file_size;
  const passes::OptimizeReport report = passes::optimize(loaded.model, options);
  if (o.verify) {
    auto original = ir::load_model(o.model);
    verify(original.model, loaded.model, o, options.input_shapes);
  }
  const ir::SaveReport saved = ir::save_model(loaded.model, o.output);

  if (o.json) {
    nlohmann::json passes = nlohmann::json::array();
    for (const auto& p : report.passes)
      passes.push_back({{"name", p.name}, {"removed", p.stats.removed}, {"fused", p.stats.fused},
                        {"folded", p.stats.folded}, {"initializers_removed", p.stats.initializers_removed}});
    print_json({{"output", o.output},
                {"passes", passes},
                {"rounds", report.rounds},
                {"nodes", {{"before", report.before.nodes}, {"after", report.after.nodes}}},
                {"initializers", {{"before", report.before.initializers}, {"after", report.after.initializers}}},
                {"file_bytes", {{"before", bytes_before}, {"after", saved.model_bytes + saved.data_bytes}}},
                {"verified", o.verify}});
    return kExitOk;
  }
  for (const auto& p : report.passes)
    std::cout << p.name << ": " << p.stats.removed << " removed, " << p.stats.fused << " fused, " << p.stats.folded
              << " folded, " << p.stats.initializers_removed << " initializers removed\n";
  std::cout << "nodes " << report.before.nodes << " -> " << report.after.nodes << ", initializers "
            << report.before.initializers << " -> " << report.after.initializers << ", file "
            << human_bytes(bytes_before) << " -> " << human_bytes(saved.model_bytes + saved.data_bytes) << "\n";
  if (o.verify) std::cout << "verified: outputs equal within rtol " << o.rtol << ", atol " << o.atol << "\n";
  std::cout << "wrote " << o.output << "\n";
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
  sub->add_option("--input-shape", o->input_shapes, "NAME=D1,D2,... fix an input's dims (more folding)");
  sub->add_flag("--verify", o->verify, "run both models on the same inputs; exit 1, writing nothing, beyond tolerance");
  sub->add_option("--inputs", o->inputs_dir, "input folder for --verify (default: random inputs)");
  sub->add_option("--rtol", o->rtol, "relative tolerance of --verify (default 1e-4)");
  sub->add_option("--atol", o->atol, "absolute tolerance of --verify (default 1e-5)");
  sub->add_flag("--fixed-point", o->fixed_point, "repeat the pipeline until nothing changes");
  sub->add_flag("--force", o->force, "optimize even a model the checker finds invalid");
  sub->add_flag("--json", o->json, "print one JSON document");
  sub->callback([&action, o] { action = [o] { return run_optimize(*o); }; });
}

}  // namespace onnxtool::cli
