// `onnxtool check MODEL... [--json] [--strict] [--no-shapes] [--max-errors N]`.
#include <algorithm>
#include <iostream>
#include <map>

#include "checker/checker.h"
#include "cli/common.h"
#include "cli/flags.h"
#include "cli/progress.h"
#include "ir/error.h"

namespace onnxtool::cli {
namespace {

struct CheckCliOptions {
  std::vector<std::string> models;
  bool json = false;
  bool strict = false;
  bool no_shapes = false;
  long max_errors = -1;
};

std::string location(const ir::Diagnostic& d) {
  std::string loc = d.graph.empty() ? std::string("model") : d.graph;
  if (d.node_index >= 0) {
    loc += " node #" + std::to_string(d.node_index);
    if (!d.node.empty()) loc += " '" + d.node + "'";
    if (!d.op_type.empty()) loc += " (" + d.op_type + ")";
  }
  if (!d.tensor.empty()) loc += " tensor '" + d.tensor + "'";
  return loc;
}

nlohmann::json to_json(const ir::Diagnostic& d) {
  return {{"rule", d.rule},
          {"severity", d.severity == ir::Severity::kError ? "error" : "warning"},
          {"graph", d.graph},
          {"node", d.node},
          {"node_index", d.node_index},
          {"op_type", d.op_type},
          {"tensor", d.tensor},
          {"message", d.message}};
}

/// What a diagnostic says beyond the place it names (its message's last clause): diagnostics
/// of one rule with the same cause are one finding (a missing external-data file: one error
/// per tensor).
std::string cause(const ir::Diagnostic& d) {
  const size_t colon = d.message.rfind(": ");
  return d.rule + (d.severity == ir::Severity::kError ? " error " : " warning ") +
         (colon == std::string::npos ? d.message : d.message.substr(colon + 2));
}

/// The text listing: each diagnostic, but one line for the rest of a group sharing a cause, and
/// at most kPerRule lines of one rule unless --max-errors asks for more (79 nodes out of order
/// are one fact); errors beyond --max-errors left out. --json lists every diagnostic.
void print_grouped(const std::vector<ir::Diagnostic>& diagnostics, long max_errors) {
  constexpr long kPerRule = 10;
  std::map<std::string, std::vector<const ir::Diagnostic*>> groups;
  std::vector<std::string> order;
  std::map<std::string, long> per_rule;
  for (const auto& d : diagnostics) {
    auto& g = groups[cause(d)];
    if (g.empty()) order.push_back(cause(d));
    g.push_back(&d);
  }
  long shown = 0;
  std::map<std::string, long> hidden;  // by rule: findings not printed by the per-rule cap
  for (const std::string& key : order) {
    const auto& g = groups[key];
    const ir::Diagnostic& d = *g.front();
    const bool is_error = d.severity == ir::Severity::kError;
    if (is_error && max_errors >= 0 && shown >= max_errors) continue;
    if (max_errors < 0 && ++per_rule[d.rule] > kPerRule) {
      hidden[d.rule] += static_cast<long>(g.size());
      continue;
    }
    shown += is_error;
    const char* kind = is_error ? "error " : "warning ";
    std::cout << kind << d.rule << " " << location(d) << ": " << d.message << "\n";
    if (g.size() < 2) continue;
    std::string names;
    for (size_t i = 1; i < g.size() && i <= 5; ++i) {
      const std::string& name = !g[i]->tensor.empty() ? g[i]->tensor : g[i]->node;
      names += (i > 1 ? ", " : "") + (name.empty() ? "#" + std::to_string(g[i]->node_index) : "'" + name + "'");
    }
    std::cout << kind << d.rule << ": the same for " << g.size() - 1 << " more (" << names << (g.size() > 6 ? ", ..." : "")
              << ")\n";
  }
  for (const auto& [rule, n] : hidden)
    std::cout << "... and " << n << " more " << rule << " (--max-errors N or --json lists them)\n";
}

/// Checks one model: its listing on stdout (or its JSON document in `doc`); returns the exit code.
int check_one(const CheckCliOptions& o, const std::string& model, nlohmann::json* doc) {
  checker::CheckOptions options;
  options.strict = o.strict;
  options.infer_shapes = !o.no_shapes;
  // Several models: each phase names its model ("b.onnx: checking nodes 4096/1000000").
  options.progress = progress();
  if (o.models.size() > 1)
    options.progress = [whole = options.progress, model](const ir::ProgressStep& step) {
      whole({model + ": " + step.phase, step.done, step.total, step.detail});
    };
  const checker::CheckResult r = checker::check_file(model, options);
  const bool valid = r.valid(o.strict);
  if (doc) {
    nlohmann::json errors = nlohmann::json::array(), warnings = nlohmann::json::array();
    for (const auto& d : r.diagnostics) {
      auto& list = d.severity == ir::Severity::kError ? errors : warnings;
      if (d.severity == ir::Severity::kError && o.max_errors >= 0 &&
          static_cast<long>(errors.size()) >= o.max_errors)
        continue;
      list.push_back(to_json(d));
    }
    *doc = {{"model", model}, {"valid", valid}, {"error_count", r.errors},
            {"warning_count", r.warnings}, {"errors", errors}, {"warnings", warnings}};
  } else {
    print_grouped(r.diagnostics, o.max_errors);
    const auto has = [&r](const char* rule) {
      return std::any_of(r.diagnostics.begin(), r.diagnostics.end(), [rule](const ir::Diagnostic& d) { return d.rule == rule; });
    };
    if (has("graph.topological-order") && !has("graph.cycle"))
      std::cout << "hint: nodes are listed before the producers of their inputs; `onnxtool optimize " << model
                << " -o OUT --passes sort_topologically` puts them in order\n";
    std::cout << model << ": " << (valid ? "valid" : "invalid") << " (" << r.errors << " error"
              << (r.errors == 1 ? "" : "s") << ", " << r.warnings << " warning"
              << (r.warnings == 1 ? "" : "s") << ")\n";
  }
  return valid ? kExitOk : kExitFailed;
}

/// One model: as check_one, a file that cannot be read an error (exit 2). Several (a CI step
/// checking every model of a release): each checked whatever the others gave, a file that
/// cannot be read reported in its place; the exit code is the worst of them, and --json prints
/// {"models": [each model's document, or {"model", "error", "exit_code"}], "valid", "exit_code"}.
int run_check(const CheckCliOptions& o) {
  if (o.models.size() == 1) {
    nlohmann::json doc;
    const int code = check_one(o, o.models.front(), o.json ? &doc : nullptr);
    if (o.json) print_json(doc);
    return code;
  }
  int worst = kExitOk;
  nlohmann::json docs = nlohmann::json::array();
  for (const std::string& model : o.models) {
    int code;
    nlohmann::json doc;
    try {
      code = check_one(o, model, o.json ? &doc : nullptr);
    } catch (const Error& e) {
      code = e.kind() == ErrorKind::kFailed ? kExitFailed : kExitUsage;
      error_line("check", error_text("check", e));
      doc = {{"model", model}, {"error", error_text("check", e)}, {"exit_code", code}};
    }
    worst = std::max(worst, code);
    if (o.json) docs.push_back(std::move(doc));
  }
  if (o.json) print_json({{"models", docs}, {"valid", worst == kExitOk}, {"exit_code", worst}});
  else std::cout << o.models.size() << " models: " << (worst == kExitOk ? "all valid" : "not all valid") << "\n";
  return worst;
}

}  // namespace

void register_check(CLI::App& app, Action& action) {
  auto o = std::make_shared<CheckCliOptions>();
  CLI::App* sub = app.add_subcommand("check", "Validate a model against the ONNX spec (exit 1 on errors)");
  sub->add_option("MODEL", o->models, "model file(s): several are each checked, the exit code the worst")->required();
  sub->add_flag("--json", o->json, "print one JSON document");
  add_quiet_flag(sub);
  sub->add_flag("--strict", o->strict, "warnings (e.g. unchecked custom ops) count as errors");
  sub->add_flag("--no-shapes", o->no_shapes, "skip shape and type inference");
  sub->add_option("--max-errors", o->max_errors, "print at most N errors (default: all, at most 10 lines of one rule)")
      ->check(number_in(0, 1e12));
  sub->callback([&action, o] { action = [o] { return run_check(*o); }; });
}

}  // namespace onnxtool::cli
