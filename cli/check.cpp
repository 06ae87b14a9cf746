// `onnxtool check MODEL [--json] [--strict] [--no-shapes] [--max-errors N]`.
#include <iostream>

#include "checker/checker.h"
#include "cli/common.h"

namespace onnxtool::cli {
namespace {

struct CheckCliOptions {
  std::string model;
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

int run_check(const CheckCliOptions& o) {
  checker::CheckOptions options;
  options.strict = o.strict;
  options.infer_shapes = !o.no_shapes;
  const checker::CheckResult r = checker::check_file(o.model, options);
  const bool valid = r.valid(o.strict);
  if (o.json) {
    nlohmann::json errors = nlohmann::json::array(), warnings = nlohmann::json::array();
    for (const auto& d : r.diagnostics) {
      auto& list = d.severity == ir::Severity::kError ? errors : warnings;
      if (d.severity == ir::Severity::kError && o.max_errors >= 0 &&
          static_cast<long>(errors.size()) >= o.max_errors)
        continue;
      list.push_back(to_json(d));
    }
    print_json({{"model", o.model}, {"valid", valid}, {"error_count", r.errors},
                {"warning_count", r.warnings}, {"errors", errors}, {"warnings", warnings}});
  } else {
    long shown = 0;
    for (const auto& d : r.diagnostics) {
      const bool is_error = d.severity == ir::Severity::kError;
      if (is_error && o.max_errors >= 0 && shown >= o.max_errors) continue;
      shown += is_error;
      std::cout << (is_error ? "error " : "warning ") << d.rule << " " << location(d) << ": "
                << d.message << "\n";
    }
    std::cout << o.model << ": " << (valid ? "valid" : "invalid") << " (" << r.errors << " error"
              << (r.errors == 1 ? "" : "s") << ", " << r.warnings << " warning"
              << (r.warnings == 1 ? "" : "s") << ")\n";
  }
  return valid ? kExitOk : kExitFailed;
}

}  // namespace

void register_check(CLI::App& app, Action& action) {
  auto o = std::make_shared<CheckCliOptions>();
  CLI::App* sub = app.add_subcommand("check", "Validate a model against the ONNX spec (exit 1 on errors)");
  sub->add_option("MODEL", o->model, "model file")->required();
  sub->add_flag("--json", o->json, "print one JSON document");
  sub->add_flag("--strict", o->strict, "warnings (e.g. unchecked custom ops) count as errors");
  sub->add_flag("--no-shapes", o->no_shapes, "skip shape and type inference");
  sub->add_option("--max-errors", o->max_errors, "print at most N errors")->check(number_in(-1, 1e12));
  sub->callback([&action, o] { action = [o] { return run_check(*o); }; });
}

}  // namespace onnxtool::cli
