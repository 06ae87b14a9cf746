// `onnxtool diff A B [--json]`: a semantic diff of two models; exit 1 when they differ.
#include <iostream>

#include "cli/common.h"
#include "ir/model_diff.h"
#include "ir/model_io.h"

namespace onnxtool::cli {
namespace {

struct DiffCliOptions {
  std::string a, b;
  bool json = false;
};

int run_diff(const DiffCliOptions& o) {
  const auto la = ir::load_model(o.a);
  const auto lb = ir::load_model(o.b);
  const ir::ModelDiff d = ir::diff_models(la.model, lb.model);
  if (o.json) {
    nlohmann::json items = nlohmann::json::array();
    for (const auto& x : d.differences) items.push_back({{"kind", x.kind}, {"subject", x.subject}, {"detail", x.detail}});
    print_json({{"a", o.a},
                {"b", o.b},
                {"equal", d.equal()},
                {"nodes", {{"a", d.nodes_a}, {"b", d.nodes_b}, {"matched_by_name", d.matched_by_name}, {"matched_by_structure", d.matched_by_structure},
                           {"reordered", d.reordered}}},
                {"differences", items}});
  } else {
    for (const auto& x : d.differences) std::cout << x.kind << " " << x.subject << ": " << x.detail << "\n";
    std::cout << (d.equal() ? "equal" : std::to_string(d.differences.size()) + " differences") << " (nodes " << d.nodes_a << " -> "
              << d.nodes_b << ", " << d.matched_by_name << " matched by name, " << d.matched_by_structure << " by structure)"
              << (d.reordered ? "; " + std::to_string(d.reordered) + " nodes listed in another order" : "") << "\n";
  }
  return d.equal() ? kExitOk : kExitFailed;
}

}  // namespace

void register_diff(CLI::App& app, Action& action) {
  auto o = std::make_shared<DiffCliOptions>();
  CLI::App* sub = app.add_subcommand("diff", "Semantic diff of two models (exit 1 when they differ)");
  sub->add_option("A", o->a, "first model")->required();
  sub->add_option("B", o->b, "second model")->required();
  sub->add_flag("--json", o->json, "print one JSON document");
  sub->callback([&action, o] { action = [o] { return run_diff(*o); }; });
}

}  // namespace onnxtool::cli
