// compare_models: both runs, the per-output and per-layer matching, the ranking.
#include "runner/compare_models.h"

#include <algorithm>
#include <map>

#include "ir/error.h"
#include "runner/session.h"

namespace onnxtool::runner {

void WorstDiff::add(const TensorDiff& d, int s) {
  if (!set || !d.problem.empty() || d.max_abs > diff.max_abs || d.beyond > diff.beyond ||
      d.nonfinite_count > diff.nonfinite_count || d.cosine < diff.cosine) {
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

namespace {

/// B must take the inputs A takes (names, element types), and no others.
void check_inputs(const Session& a, const Session& b, const std::string& name_a, const std::string& name_b) {
  for (const auto* va : a.inputs()) {
    if (va->value->is_initializer()) continue;
    const ir::ValueInfo* vb = nullptr;
    for (const auto* x : b.inputs())
      if (x->value->name() == va->value->name()) vb = x;
    if (!vb) throw_usage_error(name_b + " has no input '" + va->value->name() + "' (which " + name_a + " takes)");
    const ir::TypeInfo& ta = va->type ? *va->type : va->value->type;
    const ir::TypeInfo& tb = vb->type ? *vb->type : vb->value->type;
    if (ta.is_tensor() && tb.is_tensor() && ta.elem_type != tb.elem_type)
      throw_usage_error("input '" + va->value->name() + "' is " + ta.to_string() + " in " + name_a + " but " +
                        tb.to_string() + " in " + name_b);
  }
  for (const auto* vb : b.inputs()) {
    if (vb->value->is_initializer()) continue;
    bool found = false;
    for (const auto* x : a.inputs()) found = found || x->value->name() == vb->value->name();
    if (!found) throw_usage_error(name_a + " has no input '" + vb->value->name() + "' (which " + name_b + " takes)");
  }
}

}  // namespace

ModelComparison compare_models(ir::Model& a, ir::Model& b, const ModelComparisonOptions& options,
                               const std::string& label_a, const std::string& label_b) {
  SessionOptions oa, ob;
  oa.device = options.device_a;
  ob.device = options.device_b;
  Session sa(a, oa), sb(b, ob);
  check_inputs(sa, sb, label_a, label_b);
  ModelComparison result;
  for (const auto* v : sa.outputs()) {
    bool found = false;
    for (const auto* w : sb.outputs()) found = found || w->value->name() == v->value->name();
    if (!found) throw_usage_error(label_b + " has no output '" + v->value->name() + "' (which " + label_a + " has)");
    result.outputs.push_back(v->value->name());
  }
  result.output_diffs.resize(result.outputs.size());

  std::map<std::string, size_t> layer_index;  // A's value name -> index into result.layers
  FeedOptions feed = options.feeds;
  for (int s = 0; s < options.samples; ++s) {
    feed.seed = options.feeds.seed + static_cast<uint64_t>(s);
    const auto feeds = load_feeds(sa, feed);
    std::map<std::string, Tensor> ta, tb_by_name;
    std::map<std::string, std::pair<std::string, Tensor>> tb_by_node;  // node#k -> (name, tensor)
    std::vector<std::pair<std::string, std::string>> order;            // (value, node#index) of A
    if (options.per_layer) {
      sa.set_observer([&](const ir::Value& v, const Value& produced) {
        if (!produced.is_tensor()) return;
        ta[v.name()] = produced.tensor;
        const std::string key = v.producer() ? v.producer()->name + "#" + std::to_string(v.producer_output()) : "";
        order.push_back({v.name(), key});
      });
      sb.set_observer([&](const ir::Value& v, const Value& produced) {
        if (!produced.is_tensor()) return;
        tb_by_name[v.name()] = produced.tensor;
        if (v.producer() && !v.producer()->name.empty())
          tb_by_node[v.producer()->name + "#" + std::to_string(v.producer_output())] = {v.name(), produced.tensor};
      });
    }
    const auto ra = sa.run(feeds);
    const auto rb = sb.run(feeds, result.outputs);
    for (size_t i = 0; i < result.outputs.size(); ++i) {
      TensorDiff d;
      if (!ra[i].is_tensor() || !rb[i].is_tensor()) d.problem = "not a tensor";
      else d = compare_tensors(ra[i].tensor, rb[i].tensor, options.rtol, options.atol);
      result.output_diffs[i].add(d, s);
    }
    for (const auto& [name, node_key] : order) {
      const Tensor* other = nullptr;
      if (auto it = tb_by_name.find(name); it != tb_by_name.end()) other = &it->second;
      else if (auto jt = tb_by_node.find(node_key);
               !node_key.empty() && node_key[0] != '#' && jt != tb_by_node.end() && !ta.count(jt->second.first))
        other = &jt->second.second;
      if (!other) continue;
      auto [it, added] = layer_index.emplace(name, result.layers.size());
      if (added) result.layers.push_back({name, node_key.substr(0, node_key.rfind('#')), {}});
      result.layers[it->second].worst.add(compare_tensors(ta.at(name), *other, options.rtol, options.atol), s);
    }
  }

  if (sa.device()) result.placement_a = SidePlacement{*sa.device(), sa.placement()};
  if (sb.device()) result.placement_b = SidePlacement{*sb.device(), sb.placement()};
  for (const auto& d : result.output_diffs) result.within = result.within && d.diff.within();
  for (size_t i = 0; i < result.layers.size() && result.first_beyond < 0; ++i)
    if (!result.layers[i].worst.diff.within()) result.first_beyond = static_cast<int>(i);
  for (size_t i = 0; i < result.layers.size(); ++i) result.worst_layers.push_back(i);
  // Most departed first: lowest cosine, then (far below any cosine step) the largest error.
  auto score = [&](size_t i) { return 1 - result.layers[i].worst.diff.cosine + result.layers[i].worst.diff.max_abs * 1e-9; };
  std::stable_sort(result.worst_layers.begin(), result.worst_layers.end(),
                   [&](size_t x, size_t y) { return score(x) > score(y); });
  if (result.worst_layers.size() > options.worst_layers) result.worst_layers.resize(options.worst_layers);
  return result;
}

}  // namespace onnxtool::runner
