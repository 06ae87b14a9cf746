// Subcommands of DESIGN.md whose engines are not built yet: their flags are declared (so --help
// documents the contract) and running them says so in one line with exit 2.
#include <iostream>

#include "cli/common.h"

namespace onnxtool::cli {
namespace {

struct Pending {
  const char* name;
  const char* description;
  const char* issue;
};

CLI::App* add_pending(CLI::App& app, Action& action, const Pending& p) {
  CLI::App* sub = app.add_subcommand(p.name, p.description);
  const std::string name = p.name;
  const std::string issue = p.issue;
  sub->callback([&action, name, issue] {
    action = [name, issue] {
      std::cerr << "onnxtool " << name << ": not built yet in this version (planned in issue "
                << issue << ")\n";
      return kExitUsage;
    };
  });
  return sub;
}

}  // namespace

void register_pending(CLI::App& app, Action& action) {
  static std::string model, model_b, out, dir, text;
  static std::vector<std::string> list;
  static bool flag = false;
  static double number = 0;

  auto* compare = add_pending(app, action, {"compare", "Run two models on the same inputs and compare outputs", "#7"});
  compare->add_option("A", model, "first model")->required();
  compare->add_option("B", model_b, "second model")->required();
  compare->add_option("--inputs", dir, "input folder");
  compare->add_option("--atol", number, "absolute tolerance");
  compare->add_option("--rtol", number, "relative tolerance");
  compare->add_flag("--per-layer", flag, "compare intermediate tensors");
  compare->add_flag("--json", flag, "print one JSON document");

  auto* diff = add_pending(app, action, {"diff", "Semantic diff of two models (exit 1 when they differ)", "#7"});
  diff->add_option("A", model, "first model")->required();
  diff->add_option("B", model_b, "second model")->required();
  diff->add_flag("--json", flag, "print one JSON document");
}

}  // namespace onnxtool::cli
