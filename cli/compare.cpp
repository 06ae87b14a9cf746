// `onnxtool compare A B`: runs two models on the same inputs and reports how their outputs (and,
// with --per-layer, their intermediate tensors) differ.
#include <cmath>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "cli/common.h"
#include "ir/error.h"
#include "ir/model_io.h"
#include "runner/compare_models.h"

namespace onnxtool::cli {
namespace {

struct CompareCliOptions {
  std::string a, b;
  std::vector<std::string> inputs;
  std::string inputs_dir;
  bool random = false;
  uint64_t seed = 0;
  std::vector<std::string> shapes;
  int samples = 1;
  double atol = 1e-5;
  double rtol = 1e-3;
  bool per_layer = false;
  bool json = false;
  std::string device = "cpu", device_a, device_b;
  std::set<std::string> given;  ///< the options on the command line
};

nlohmann::json to_json(const std::string& name, const runner::WorstDiff& w) {
  const auto& d = w.diff;
  nlohmann::json j = {{"name", name}};
  if (!d.problem.empty()) {
    j["problem"] = d.problem;
    return j;
  }
  j["elements"] = d.elements;
  j["max_abs_error"] = d.max_abs;
  j["max_rel_error"] = std::isfinite(d.max_rel) ? nlohmann::json(d.max_rel) : nlohmann::json("inf");
  j["mean_abs_error"] = d.mean_abs;
  j["cosine_similarity"] = d.cosine;
  j["beyond_tolerance"] = d.beyond;
  if (d.top1_rows >= 0) j["top1_agreement"] = d.top1_rows ? static_cast<double>(d.top1_agree) / static_cast<double>(d.top1_rows) : 1.0;
  nlohmann::json nf = nlohmann::json::array();
  for (const auto& m : d.nonfinite) nf.push_back({{"index", m.index}, {"a", std::to_string(m.a)}, {"b", std::to_string(m.b)}});
  j["nonfinite_mismatches"] = {{"count", d.nonfinite_count}, {"first", nf}};
  j["worst_sample"] = w.sample;
  return j;
}

std::string describe_worst(const runner::WorstDiff& w) {
  const auto& d = w.diff;
  if (!d.problem.empty()) return d.problem;
  std::ostringstream s;
  s << std::setprecision(3) << "max abs " << d.max_abs << ", max rel " << d.max_rel << ", mean abs " << d.mean_abs << ", cosine "
    << std::setprecision(6) << d.cosine;
  if (d.top1_rows > 0) s << ", top-1 " << d.top1_agree << "/" << d.top1_rows;
  if (d.nonfinite_count) {
    s << ", " << d.nonfinite_count << " NaN/Inf mismatches (first at " << d.nonfinite[0].index << ": " << d.nonfinite[0].a << " vs "
      << d.nonfinite[0].b << ")";
  }
  if (d.beyond) s << ", " << d.beyond << " of " << d.elements << " elements beyond tolerance";
  return s.str();
}

int run_compare(const CompareCliOptions& o) {
  if (o.samples < 1) throw_usage_error("--samples must be at least 1");
  // Random inputs are the default without files; with files, only --random adds them.
  const bool random = o.random || (o.inputs.empty() && o.inputs_dir.empty());
  if (o.samples > 1 && !random) throw_usage_error("--samples needs --random (files give one sample)");
  if (const std::string named = given_list(o.given, {"--seed", "--shape"}); !named.empty() && !random)
    throw_usage_error(named + ": the inputs come from " + given_list(o.given, {"--input", "--inputs"}) +
                      "; add --random to fill the inputs they leave out with random data");
  if (o.given.count("--device") && o.given.count("--device-a") && o.given.count("--device-b"))
    throw_usage_error("--device would be unused: --device-a and --device-b name both devices");
  runner::ModelComparisonOptions c;
  c.device_a = runner::DeviceSpec::parse(o.device_a.empty() ? o.device : o.device_a);
  c.device_b = runner::DeviceSpec::parse(o.device_b.empty() ? o.device : o.device_b);
  // One model: the same file on two devices.
  const std::string b_path = o.b.empty() ? o.a : o.b;
  if (o.b.empty() && c.device_a.to_string() == c.device_b.to_string())
    throw_usage_error("compare takes two models, or one model with --device-a and --device-b naming two devices");
  auto la = ir::load_model(o.a);
  auto lb = ir::load_model(b_path);
  refuse_unrunnable(la.model, o.a);
  refuse_unrunnable(lb.model, b_path);
  for (const auto& s : o.inputs) c.feeds.files.push_back(parse_assignment(s, "--input"));
  c.feeds.dir = o.inputs_dir;
  c.feeds.random = random;
  c.feeds.flags = {"--input", "--inputs", "--random", "--shape"};
  c.feeds.seed = o.seed;
  for (const auto& s : o.shapes) {
    auto [name, text] = parse_assignment(s, "--shape");
    c.feeds.shapes[name] = parse_size_list("--shape", name, text);
  }
  c.samples = o.samples;
  c.rtol = o.rtol;
  c.atol = o.atol;
  c.per_layer = o.per_layer;
  const std::string label_a = o.b.empty() ? o.a + " on " + c.device_a.to_string() : o.a;
  const std::string label_b = o.b.empty() ? b_path + " on " + c.device_b.to_string() : b_path;
  const runner::ModelComparison r = runner::compare_models(la.model, lb.model, c, label_a, label_b);
  auto side_json = [](const std::optional<runner::SidePlacement>& s) {
    return s ? placement_json(&s->device, s->placement) : nlohmann::json(nullptr);
  };
  const runner::LayerDiff* first_bad = r.first_beyond < 0 ? nullptr : &r.layers[static_cast<size_t>(r.first_beyond)];

  if (o.json) {
    nlohmann::json outs = nlohmann::json::array();
    for (size_t i = 0; i < r.outputs.size(); ++i) outs.push_back(to_json(r.outputs[i], r.output_diffs[i]));
    nlohmann::json doc = {{"a", o.a}, {"b", b_path}, {"device_a", c.device_a.to_string()},
                          {"device_b", c.device_b.to_string()}, {"samples", o.samples}, {"rtol", o.rtol},
                          {"atol", o.atol}, {"within_tolerance", r.within}, {"outputs", outs},
                          {"placement_a", side_json(r.placement_a)}, {"placement_b", side_json(r.placement_b)}};
    if (o.per_layer) {
      nlohmann::json worst_layers = nlohmann::json::array();
      for (size_t i : r.worst_layers) {
        auto j = to_json(r.layers[i].tensor, r.layers[i].worst);
        j["node"] = r.layers[i].node;
        worst_layers.push_back(j);
      }
      doc["per_layer"] = {{"matched", r.layers.size()},
                          {"first_beyond_tolerance", first_bad ? nlohmann::json({{"tensor", first_bad->tensor}, {"node", first_bad->node}})
                                                               : nlohmann::json(nullptr)},
                          {"worst", worst_layers}};
    }
    print_json(doc);
  } else {
    for (size_t i = 0; i < r.outputs.size(); ++i) std::cout << "output " << r.outputs[i] << ": " << describe_worst(r.output_diffs[i]) << "\n";
    if (o.per_layer) {
      std::cout << r.layers.size() << " intermediate tensors matched\n";
      if (first_bad)
        std::cout << "first beyond tolerance: tensor " << first_bad->tensor << " (node " << first_bad->node
                  << "): " << describe_worst(first_bad->worst) << "\n";
      std::cout << "worst layers:\n";
      for (size_t i : r.worst_layers)
        std::cout << "  " << r.layers[i].tensor << " (node " << r.layers[i].node << "): " << describe_worst(r.layers[i].worst) << "\n";
    }
    if (r.placement_a) std::cout << "A: " << placement_line(&r.placement_a->device, r.placement_a->placement) << "\n";
    if (r.placement_b) std::cout << "B: " << placement_line(&r.placement_b->device, r.placement_b->placement) << "\n";
    std::cout << (r.within ? "within" : "beyond") << " tolerance (rtol " << o.rtol << ", atol " << o.atol << ")\n";
  }
  return r.within ? kExitOk : kExitFailed;
}

}  // namespace

void register_compare(CLI::App& app, Action& action) {
  auto o = std::make_shared<CompareCliOptions>();
  CLI::App* sub = app.add_subcommand("compare", "Run two models on the same inputs and compare outputs (exit 1 beyond tolerance)");
  sub->add_option("A", o->a, "reference model")->required();
  sub->add_option("B", o->b, "model to check (omit it to compare MODEL on --device-a and --device-b)");
  sub->add_option("--input", o->inputs, "NAME=FILE (.npy or .pb); repeatable");
  sub->add_option("--inputs", o->inputs_dir, "folder of inputs");
  sub->add_flag("--random", o->random, "random inputs (the default when no input is given)");
  sub->add_option("--seed", o->seed, "seed of the first random sample (default 0)")->check(number_in(0, kMaxSeed));
  sub->add_option("--shape", o->shapes, "NAME=D1,D2,... sizes for symbolic dims of random inputs");
  sub->add_option("--samples", o->samples, "random samples to run (default 1)")->check(number_in(1, 1e6));
  sub->add_option("--atol", o->atol, "absolute tolerance (default 1e-5)")->check(number_in(0, 1e30));
  sub->add_option("--rtol", o->rtol, "relative tolerance (default 1e-3)")->check(number_in(0, 1e30));
  sub->add_flag("--per-layer", o->per_layer, "compare the intermediate tensors both models have");
  sub->add_option("--device", o->device, "device both models run on: cpu (default), vulkan or vulkan:N");
  sub->add_option("--device-a", o->device_a, "device of A (default: --device)");
  sub->add_option("--device-b", o->device_b, "device of B (default: --device)");
  sub->add_flag("--json", o->json, "print one JSON document");
  sub->callback([&action, o, sub] {
    o->given = given_options(*sub);
    action = [o] { return run_compare(*o); };
  });
}

}  // namespace onnxtool::cli
