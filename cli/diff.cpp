// `onnxtool diff A B [--summary] [--json]`: a semantic diff of two models; exit 1 when they
// differ. --summary counts the differences by kind (nodes by op type, initializers with their
// bytes) instead of listing each.
#include <algorithm>
#include <iostream>

#include "cli/common.h"
#include "ir/model_diff.h"
#include "ir/model_io.h"

namespace onnxtool::cli {
namespace {

struct DiffCliOptions {
  std::string a, b;
  bool json = false;
  bool summary = false;
};

/// "Mul 106, Add 53, Cast 53, ConvInteger 53, DynamicQuantizeLinear 53, Reshape 53 and 1 more type":
/// the most frequent first (ties by name).
std::string by_op_type(const std::map<std::string, size_t>& counts) {
  std::vector<std::pair<std::string, size_t>> rows(counts.begin(), counts.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  constexpr size_t kShown = 6;
  std::string out;
  for (size_t i = 0; i < rows.size() && i < kShown; ++i) out += (i ? ", " : "") + rows[i].first + " " + std::to_string(rows[i].second);
  if (rows.size() > kShown) out += " and " + std::to_string(rows.size() - kShown) + " more type" + (rows.size() - kShown == 1 ? "" : "s");
  return out;
}

std::string nodes_line(const char* what, const ir::DiffSummary::Nodes& n) {
  return std::to_string(n.count) + " " + what + (n.count ? " (" + by_op_type(n.by_op_type) + ")" : "");
}

/// The other kinds of one subject ("input", "output", "metadata"): "1 added, 2 changed" or "same".
std::string io_line(const ir::DiffSummary& s, const std::string& subject) {
  std::string out;
  for (const char* change : {"added", "removed", "changed"})
    if (const auto it = s.other.find(subject + "_" + change); it != s.other.end())
      out += (out.empty() ? "" : ", ") + std::to_string(it->second) + " " + change;
  return out.empty() ? "same" : out;
}

void print_summary(const ir::ModelDiff& d, const ir::DiffSummary& s) {
  std::cout << "nodes " << d.nodes_a << " -> " << d.nodes_b << ": " << nodes_line("added", s.nodes_added) << "; "
            << nodes_line("removed", s.nodes_removed) << "; " << nodes_line("changed", s.nodes_changed) << "\n";
  const auto& ia = s.initializers_added;
  const auto& rm = s.initializers_removed;
  const auto& ic = s.initializers_changed;
  std::cout << "initializers: " << ia.count << " added (" << human_bytes(static_cast<uint64_t>(ia.bytes_b)) << "), " << rm.count
            << " removed (" << human_bytes(static_cast<uint64_t>(rm.bytes_a)) << "), " << ic.count << " changed";
  if (ic.count) std::cout << " (" << human_bytes(static_cast<uint64_t>(ic.bytes_a)) << " -> " << human_bytes(static_cast<uint64_t>(ic.bytes_b)) << ")";
  std::cout << "\n";
  std::cout << "inputs: " << io_line(s, "input") << "; outputs: " << io_line(s, "output") << "; metadata: " << io_line(s, "metadata") << "\n";
  std::string opsets;
  for (const auto& [domain, change] : s.opsets) opsets += (opsets.empty() ? "" : ", ") + domain + " " + change;
  std::string others;
  for (const auto& [kind, count] : s.other)
    if (kind.rfind("input_", 0) != 0 && kind.rfind("output_", 0) != 0 && kind.rfind("metadata_", 0) != 0)
      others += (others.empty() ? "" : ", ") + kind + (count > 1 ? " (" + std::to_string(count) + ")" : "");
  std::cout << "opset: " << (opsets.empty() ? "same" : opsets) << (others.empty() ? "" : "; also changed: " + others) << "\n";
}

nlohmann::json summary_json(const ir::DiffSummary& s) {
  const auto nodes = [](const ir::DiffSummary::Nodes& n) {
    nlohmann::json types = nlohmann::json::object();
    for (const auto& [op, count] : n.by_op_type) types[op] = count;
    return nlohmann::json{{"count", n.count}, {"by_op_type", types}};
  };
  const auto inits = [](const ir::DiffSummary::Initializers& i) {
    return nlohmann::json{{"count", i.count}, {"bytes_a", i.bytes_a}, {"bytes_b", i.bytes_b}};
  };
  const auto kinds = [&s](const std::string& subject) {
    nlohmann::json out = nlohmann::json::object();
    for (const char* change : {"added", "removed", "changed"}) {
      const auto it = s.other.find(subject + "_" + change);
      out[change] = it == s.other.end() ? 0 : it->second;
    }
    return out;
  };
  nlohmann::json opsets = nlohmann::json::array();
  for (const auto& [domain, change] : s.opsets) opsets.push_back({{"domain", domain}, {"change", change}});
  nlohmann::json other = nlohmann::json::object();
  for (const auto& [kind, count] : s.other)
    if (kind.rfind("input_", 0) != 0 && kind.rfind("output_", 0) != 0 && kind.rfind("metadata_", 0) != 0) other[kind] = count;
  return {{"nodes_added", nodes(s.nodes_added)},
          {"nodes_removed", nodes(s.nodes_removed)},
          {"nodes_changed", nodes(s.nodes_changed)},
          {"initializers_added", inits(s.initializers_added)},
          {"initializers_removed", inits(s.initializers_removed)},
          {"initializers_changed", inits(s.initializers_changed)},
          {"inputs", kinds("input")},
          {"outputs", kinds("output")},
          {"metadata", kinds("metadata")},
          {"opsets", opsets},
          {"other", other}};
}

int run_diff(const DiffCliOptions& o) {
  const auto la = ir::load_model(o.a);
  const auto lb = ir::load_model(o.b);
  const ir::ModelDiff d = ir::diff_models(la.model, lb.model);
  if (o.json) {
    nlohmann::json doc = {{"a", o.a},
                          {"b", o.b},
                          {"equal", d.equal()},
                          {"nodes", {{"a", d.nodes_a}, {"b", d.nodes_b}, {"matched_by_name", d.matched_by_name},
                                     {"matched_by_structure", d.matched_by_structure}, {"reordered", d.reordered}}}};
    if (o.summary) {
      doc["summary"] = summary_json(ir::summarize_diff(d));
      doc["difference_count"] = d.differences.size();
    } else {
      nlohmann::json items = nlohmann::json::array();
      for (const auto& x : d.differences) items.push_back({{"kind", x.kind}, {"subject", x.subject}, {"detail", x.detail}});
      doc["differences"] = items;
    }
    print_json(doc);
  } else {
    if (o.summary) print_summary(d, ir::summarize_diff(d));
    else
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
  CLI::App* sub = app.add_subcommand("diff", "Semantic diff of two models (exit 1 when they differ; --summary: counts only)");
  sub->add_option("A", o->a, "first model")->required();
  sub->add_option("B", o->b, "second model")->required();
  sub->add_flag("--summary", o->summary,
                "a few lines of counts instead of every difference: nodes added, removed and changed by op type, "
                "initializers with their bytes, inputs, outputs, metadata, opsets");
  sub->add_flag("--json", o->json, "print one JSON document");
  sub->callback([&action, o] { action = [o] { return run_diff(*o); }; });
}

}  // namespace onnxtool::cli
