// `onnxtool compare A B`: runs two models on the same inputs and reports how their outputs (and,
// with --per-layer, their intermediate tensors) differ.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "cli/common.h"
#include "ir/error.h"
#include "ir/model_io.h"
#include "runner/compare.h"
#include "runner/feeds.h"
#include "runner/session.h"

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
};

/// Worst statistics of one tensor over the samples.
struct Worst {
  runner::TensorDiff diff;
  int sample = 0;
  bool set = false;
  void add(const runner::TensorDiff& d, int s) {
    if (!set || !d.problem.empty() || d.max_abs > diff.max_abs || d.beyond > diff.beyond || d.nonfinite_count > diff.nonfinite_count ||
        d.cosine < diff.cosine) {
      const int64_t top1_rows = diff.top1_rows + (set ? d.top1_rows : 0);
      const int64_t top1_agree = diff.top1_agree + (set ? d.top1_agree : 0);
      diff = d;
      if (set && d.top1_rows >= 0) {
        diff.top1_rows = top1_rows;
        diff.top1_agree = top1_agree;
      }
      sample = s;
    } else if (d.top1_rows >= 0) {
      diff.top1_rows += d.top1_rows;
      diff.top1_agree += d.top1_agree;
    }
    set = true;
  }
};

nlohmann::json to_json(const std::string& name, const Worst& w) {
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

std::string describe(const Worst& w) {
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

/// Checks that B takes the inputs A takes (names, element types); throws Error(kUsage) naming
/// the first that does not correspond.
void check_inputs(const runner::Session& a, const runner::Session& b, const std::string& name_a, const std::string& name_b) {
  for (const auto* va : a.inputs()) {
    if (va->value->is_initializer()) continue;
    const ir::ValueInfo* vb = nullptr;
    for (const auto* x : b.inputs())
      if (x->value->name() == va->value->name()) vb = x;
    if (!vb) throw_usage_error(name_b + " has no input '" + va->value->name() + "' (which " + name_a + " takes)");
    const ir::TypeInfo& ta = va->type ? *va->type : va->value->type;
    const ir::TypeInfo& tb = vb->type ? *vb->type : vb->value->type;
    if (ta.is_tensor() && tb.is_tensor() && ta.elem_type != tb.elem_type)
      throw_usage_error("input '" + va->value->name() + "' is " + ta.to_string() + " in " + name_a + " but " + tb.to_string() + " in " + name_b);
  }
  for (const auto* vb : b.inputs()) {
    if (vb->value->is_initializer()) continue;
    bool found = false;
    for (const auto* x : a.inputs()) found = found || x->value->name() == vb->value->name();
    if (!found) throw_usage_error(name_a + " has no input '" + vb->value->name() + "' (which " + name_b + " takes)");
  }
}

int run_compare(const CompareCliOptions& o) {
  if (o.samples < 1) throw_usage_error("--samples must be at least 1");
  if (o.samples > 1 && !o.random) throw_usage_error("--samples needs --random (files give one sample)");
  auto la = ir::load_model(o.a);
  auto lb = ir::load_model(o.b);
  refuse_unrunnable(la.model, o.a);
  refuse_unrunnable(lb.model, o.b);
  runner::Session sa(la.model), sb(lb.model);
  check_inputs(sa, sb, o.a, o.b);
  // Outputs correspond by name (every output of A must exist in B).
  std::vector<std::string> outputs;
  for (const auto* v : sa.outputs()) {
    bool found = false;
    for (const auto* w : sb.outputs()) found = found || w->value->name() == v->value->name();
    if (!found) throw_usage_error(o.b + " has no output '" + v->value->name() + "' (which " + o.a + " has)");
    outputs.push_back(v->value->name());
  }

  runner::FeedOptions feed;
  for (const auto& s : o.inputs) feed.files.push_back(parse_assignment(s, "--input"));
  feed.dir = o.inputs_dir;
  feed.random = o.random || (o.inputs.empty() && o.inputs_dir.empty());
  for (const auto& s : o.shapes) {
    auto [name, text] = parse_assignment(s, "--shape");
    feed.shapes[name] = parse_size_list("--shape", name, text);
  }

  std::map<std::string, Worst> worst;
  // Per layer: intermediate tensors of both runs, matched by value name, then by the name of
  // the producing node (output index kept) unless B's tensor of that node is itself matched by
  // name to another of A's (a Conv that absorbed a BatchNormalization produces the
  // BatchNormalization's tensor: A's pre-normalization tensor has no counterpart).
  std::vector<std::string> layer_order;
  std::map<std::string, Worst> layers;
  std::map<std::string, std::string> layer_node;
  for (int s = 0; s < o.samples; ++s) {
    feed.seed = o.seed + static_cast<uint64_t>(s);
    const auto feeds = runner::load_feeds(sa, feed);
    std::map<std::string, runner::Tensor> ta, tb_by_name;
    std::map<std::string, std::pair<std::string, runner::Tensor>> tb_by_node;  // node#k -> (name, tensor)
    std::vector<std::pair<std::string, std::string>> order;  // (value, node#index) of A
    if (o.per_layer) {
      sa.set_observer([&](const ir::Value& v, const runner::Value& produced) {
        if (!produced.is_tensor()) return;
        ta[v.name()] = produced.tensor;
        const std::string key = v.producer() ? v.producer()->name + "#" + std::to_string(v.producer_output()) : "";
        order.push_back({v.name(), key});
      });
      sb.set_observer([&](const ir::Value& v, const runner::Value& produced) {
        if (!produced.is_tensor()) return;
        tb_by_name[v.name()] = produced.tensor;
        if (v.producer() && !v.producer()->name.empty())
          tb_by_node[v.producer()->name + "#" + std::to_string(v.producer_output())] = {v.name(), produced.tensor};
      });
    }
    const auto ra = sa.run(feeds);
    const auto rb = sb.run(feeds, outputs);
    for (size_t i = 0; i < outputs.size(); ++i) {
      runner::TensorDiff d;
      if (!ra[i].is_tensor() || !rb[i].is_tensor()) d.problem = "not a tensor";
      else d = runner::compare_tensors(ra[i].tensor, rb[i].tensor, o.rtol, o.atol);
      worst[outputs[i]].add(d, s);
    }
    for (const auto& [name, node_key] : order) {
      const runner::Tensor* other = nullptr;
      if (auto it = tb_by_name.find(name); it != tb_by_name.end()) other = &it->second;
      else if (auto jt = tb_by_node.find(node_key);
               !node_key.empty() && node_key[0] != '#' && jt != tb_by_node.end() && !ta.count(jt->second.first))
        other = &jt->second.second;
      if (!other) continue;
      if (!layers.count(name)) {
        layer_order.push_back(name);
        layer_node[name] = node_key.substr(0, node_key.rfind('#'));
      }
      layers[name].add(runner::compare_tensors(ta.at(name), *other, o.rtol, o.atol), s);
    }
  }

  bool within = true;
  for (const auto& n : outputs) within = within && worst[n].diff.within();
  // The first layer (in A's order) beyond tolerance, and the worst ones by relative error.
  std::string first_bad;
  for (const auto& n : layer_order)
    if (!layers[n].diff.within()) {
      first_bad = n;
      break;
    }
  std::vector<std::string> ranked = layer_order;
  auto score = [&](const std::string& n) { return 1 - layers[n].diff.cosine + layers[n].diff.max_abs * 1e-9; };
  std::stable_sort(ranked.begin(), ranked.end(), [&](const auto& x, const auto& y) { return score(x) > score(y); });
  if (ranked.size() > 10) ranked.resize(10);

  if (o.json) {
    nlohmann::json outs = nlohmann::json::array();
    for (const auto& n : outputs) outs.push_back(to_json(n, worst[n]));
    nlohmann::json doc = {{"a", o.a}, {"b", o.b}, {"samples", o.samples}, {"rtol", o.rtol}, {"atol", o.atol},
                          {"within_tolerance", within}, {"outputs", outs}};
    if (o.per_layer) {
      nlohmann::json worst_layers = nlohmann::json::array();
      for (const auto& n : ranked) {
        auto j = to_json(n, layers[n]);
        j["node"] = layer_node[n];
        worst_layers.push_back(j);
      }
      doc["per_layer"] = {{"matched", layer_order.size()},
                          {"first_beyond_tolerance", first_bad.empty() ? nlohmann::json(nullptr) : nlohmann::json({{"tensor", first_bad}, {"node", layer_node[first_bad]}})},
                          {"worst", worst_layers}};
    }
    print_json(doc);
  } else {
    for (const auto& n : outputs) std::cout << "output " << n << ": " << describe(worst[n]) << "\n";
    if (o.per_layer) {
      std::cout << layer_order.size() << " intermediate tensors matched\n";
      if (!first_bad.empty())
        std::cout << "first beyond tolerance: tensor " << first_bad << " (node " << layer_node[first_bad] << "): " << describe(layers[first_bad]) << "\n";
      std::cout << "worst layers:\n";
      for (const auto& n : ranked) std::cout << "  " << n << " (node " << layer_node[n] << "): " << describe(layers[n]) << "\n";
    }
    std::cout << (within ? "within" : "beyond") << " tolerance (rtol " << o.rtol << ", atol " << o.atol << ")\n";
  }
  return within ? kExitOk : kExitFailed;
}

}  // namespace

void register_compare(CLI::App& app, Action& action) {
  auto o = std::make_shared<CompareCliOptions>();
  CLI::App* sub = app.add_subcommand("compare", "Run two models on the same inputs and compare outputs (exit 1 beyond tolerance)");
  sub->add_option("A", o->a, "reference model")->required();
  sub->add_option("B", o->b, "model to check")->required();
  sub->add_option("--input", o->inputs, "NAME=FILE (.npy or .pb); repeatable");
  sub->add_option("--inputs", o->inputs_dir, "folder of inputs");
  sub->add_flag("--random", o->random, "random inputs (the default when no input is given)");
  sub->add_option("--seed", o->seed, "seed of the first random sample (default 0)")->check(number_in(0, kMaxSeed));
  sub->add_option("--shape", o->shapes, "NAME=D1,D2,... sizes for symbolic dims of random inputs");
  sub->add_option("--samples", o->samples, "random samples to run (default 1)")->check(number_in(1, 1e6));
  sub->add_option("--atol", o->atol, "absolute tolerance (default 1e-5)")->check(number_in(0, 1e30));
  sub->add_option("--rtol", o->rtol, "relative tolerance (default 1e-3)")->check(number_in(0, 1e30));
  sub->add_flag("--per-layer", o->per_layer, "compare the intermediate tensors both models have");
  sub->add_flag("--json", o->json, "print one JSON document");
  sub->callback([&action, o] { action = [o] { return run_compare(*o); }; });
}

}  // namespace onnxtool::cli
