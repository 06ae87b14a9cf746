// compare_models: both runs, the per-output and per-layer matching, the ranking.
#include "runner/compare_models.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "ir/error.h"
#include "runner/layer_compare.h"
#include "runner/session.h"
#include "runner/tensor_io.h"

namespace onnxtool::runner {

void WorstDiff::add(const TensorDiff& d, int s) {
  stats.add(d, s);
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

bool float_precision(ir::DataType t) {
  return t == ir::DataType::kFloat || t == ir::DataType::kDouble || t == ir::DataType::kFloat16 || t == ir::DataType::kBFloat16;
}

/// The feeds of sample s: its folder's files when there are sample folders, else feeds.dir and
/// the seed of sample s, free dims of random inputs sized `free_dim`. Errors name the sample
/// folder.
std::map<std::string, Value> sample_feeds(const Session& session, const ModelComparisonOptions& options, int s,
                                          int64_t free_dim) {
  FeedOptions feed = options.feeds;
  feed.seed = options.feeds.seed + static_cast<uint64_t>(s);
  feed.free_dim = free_dim;
  if (options.sample_dirs.empty()) return load_feeds(session, feed);
  feed.dir = options.sample_dirs[static_cast<size_t>(s)];
  feed.flags = {};  // the hint then names the file the folder lacks
  try {
    return load_feeds(session, feed);
  } catch (const Error& e) {
    throw Error(e.kind(), e.what(), Parameter{"sample_dirs", "sample " + feed.dir});
  }
}

/// The indices into `session`'s outputs of the ones `wanted` names (all when empty), in the
/// session's order. Error(kUsage) for a name that is not an output.
std::vector<size_t> selected_outputs(const Session& session, const std::vector<std::string>& wanted) {
  std::vector<size_t> picked;
  std::string all;
  for (size_t i = 0; i < session.outputs().size(); ++i) {
    const std::string& name = session.outputs()[i]->value->name();
    all += (all.empty() ? "" : ", ") + name;
    if (wanted.empty() || std::count(wanted.begin(), wanted.end(), name)) picked.push_back(i);
  }
  for (const auto& w : wanted)
    if (std::none_of(picked.begin(), picked.end(), [&](size_t i) { return session.outputs()[i]->value->name() == w; }))
      throw_usage_error("no output '" + w + "' to compare (outputs: " + all + ")");
  return picked;
}


/// B must take the inputs A takes (names, element types), and no others. Float inputs may differ
/// in precision: returns B's type for each such input, to cast A's feeds to.
std::map<std::string, ir::DataType> check_inputs(const Session& a, const Session& b, const std::string& name_a,
                                                 const std::string& name_b) {
  std::map<std::string, ir::DataType> casts;
  for (const auto* va : a.inputs()) {
    if (va->value->is_initializer()) continue;
    const ir::ValueInfo* vb = nullptr;
    for (const auto* x : b.inputs())
      if (x->value->name() == va->value->name()) vb = x;
    if (!vb) throw_usage_error(name_b + " has no input '" + va->value->name() + "' (which " + name_a + " takes)");
    const ir::TypeInfo& ta = va->type ? *va->type : va->value->type;
    const ir::TypeInfo& tb = vb->type ? *vb->type : vb->value->type;
    if (ta.is_tensor() && tb.is_tensor() && ta.elem_type != tb.elem_type && float_precision(ta.data_type()) &&
        float_precision(tb.data_type()))
      casts[va->value->name()] = tb.data_type();
    else if (ta.is_tensor() && tb.is_tensor() && ta.elem_type != tb.elem_type)
      throw_usage_error("input '" + va->value->name() + "' is " + ta.to_string() + " in " + name_a + " but " +
                        tb.to_string() + " in " + name_b);
  }
  for (const auto* vb : b.inputs()) {
    if (vb->value->is_initializer()) continue;
    bool found = false;
    for (const auto* x : a.inputs()) found = found || x->value->name() == vb->value->name();
    if (!found) throw_usage_error(name_a + " has no input '" + vb->value->name() + "' (which " + name_b + " takes)");
  }
  return casts;
}

/// "inputs cast to float16 for B" per target type, or nothing.
std::vector<std::string> cast_notes(const std::map<std::string, ir::DataType>& casts) {
  std::map<std::string, std::vector<std::string>> by_type;
  for (const auto& [name, type] : casts) by_type[std::string(ir::data_type_name(type))].push_back(name);
  std::vector<std::string> notes;
  for (const auto& [type, names] : by_type) {
    std::string line = "inputs cast to " + type + " for B (";
    for (size_t i = 0; i < names.size(); ++i) line += (i ? ", " : "") + names[i];
    notes.push_back(line + ")");
  }
  return notes;
}

}  // namespace

ModelComparison compare_models(ir::Model& a, ir::Model& b, const ModelComparisonOptions& options,
                               const std::string& label_a, const std::string& label_b) {
  SessionOptions oa, ob;
  oa.device = options.device_a;
  ob.device = options.device_b;
  Session sa(a, oa), sb(b, ob);
  const auto casts = check_inputs(sa, sb, label_a, label_b);
  ModelComparison result;
  result.notes = cast_notes(casts);
  for (size_t k : selected_outputs(sa, options.outputs)) {
    const auto* v = sa.outputs()[k];
    bool found = false;
    for (const auto* w : sb.outputs()) found = found || w->value->name() == v->value->name();
    if (!found) throw_usage_error(label_b + " has no output '" + v->value->name() + "' (which " + label_a + " has)");
    result.outputs.push_back(v->value->name());
  }
  result.output_diffs.resize(result.outputs.size());

  std::map<std::string, size_t> layer_index;  // A's value name -> index into result.layers
  std::set<std::string> unmatched_shapes;       // A's values whose namesake in B has another shape
  // Progress: per sample, or per value each model produces with --per-layer.
  auto outputs_of = [](const ir::Graph& g) {
    int64_t n = 0;
    for (const auto& node : g.nodes())
      for (const ir::Value* v : node ? node->outputs() : std::vector<ir::Value*>{}) n += v != nullptr;
    return n;
  };
  const int64_t values_a = options.per_layer ? outputs_of(*a.graph) : 0, values_b = options.per_layer ? outputs_of(*b.graph) : 0;
  const int64_t steps = options.per_layer ? options.samples * (values_a + values_b) : options.samples;
  const char* phase = options.per_layer ? "per-layer comparison" : "comparison";
  int64_t step = 0;
  std::string detail;
  auto advance = [&] {  // one value observed: never the phase's end before the last sample is done
    if (options.progress && step + 1 < steps) ir::report_progress(options.progress, phase, ++step, steps, detail);
  };
  ir::report_progress(options.progress, phase, 0, steps);
  // Random inputs with free dims: sized as verification sizes them (1, then 64, then 512), the
  // first size A runs on.
  int64_t free_dim = options.feeds.free_dim;
  if (options.sample_dirs.empty() && options.feeds.random && has_free_dims(sa, options.feeds))
    feeds_that_run(sa, options.feeds, [&sa](std::map<std::string, Value>& f) { sa.run(f); }, &free_dim);
  std::unique_ptr<LayerComparer> layers;
  if (options.per_layer) {
    layers = std::make_unique<LayerComparer>(*b.graph, options.rtol, options.atol);
    sa.set_observer([&, observe = layers->observer_a()](const ir::Value& v, const Value& produced) {
      observe(v, produced);
      advance();
    });
    sb.set_observer([&, observe = layers->observer_b()](const ir::Value& v, const Value& produced) {
      observe(v, produced);
      advance();
    });
  }
  for (int s = 0; s < options.samples; ++s) {
    const auto feeds = sample_feeds(sa, options, s, free_dim);
    auto feeds_b = feeds;
    for (auto& [name, value] : feeds_b)
      if (auto c = casts.find(name); c != casts.end() && value.is_tensor() && value.tensor.dtype() != c->second)
        value = Value::of(cast_float(value.tensor, c->second));
    const std::string sample = options.samples > 1 ? "sample " + std::to_string(s + 1) + "/" + std::to_string(options.samples) + ", " : "";
    detail = sample + "running A";
    ir::report_progress(options.progress, phase, step, steps, detail);
    const auto ra = sa.run(feeds, result.outputs);
    detail = sample + (layers ? "running B and comparing" : "running B");
    ir::report_progress(options.progress, phase, step, steps, detail);
    const auto rb = sb.run(feeds_b, result.outputs);
    for (size_t i = 0; i < result.outputs.size(); ++i) {
      // Tensors of two float types compare by value (a float16 B against a float32 A); other
      // kinds item by item.
      const TensorDiff d = ra[i].is_tensor() && rb[i].is_tensor()
                               ? compare_tensors(ra[i].tensor, rb[i].tensor, options.rtol, options.atol)
                               : match_value(ra[i], rb[i], options.rtol, options.atol).diff;
      result.output_diffs[i].add(d, s);
    }
    if (layers)
      for (const auto& m : layers->end_sample()) {
        // The same name on values of different shapes (B's rewrite reused a name for a value of
        // another layout, [1,207,1] for [1,1,207]): not the same value, so not a divergence.
        if (m.diff.problem.rfind("shape ", 0) == 0) {
          unmatched_shapes.insert(m.tensor);
          continue;
        }
        auto [it, added] = layer_index.emplace(m.tensor, result.layers.size());
        if (added) result.layers.push_back({m.tensor, m.node, {}});
        result.layers[it->second].worst.add(m.diff, s);
      }
    if (!layers) advance();
  }
  ir::report_progress(options.progress, phase, steps, steps);
  if (!unmatched_shapes.empty())
    result.notes.push_back(std::to_string(unmatched_shapes.size()) +
                           " intermediate value(s) share a name with a value of B of another shape, not compared (first: " +
                           *unmatched_shapes.begin() + ")");

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

ModelComparison compare_with_expected(ir::Model& model, const ModelComparisonOptions& options,
                                      const std::vector<std::string>& expect_dirs) {
  SessionOptions so;
  so.device = options.device_a;
  Session session(model, so);
  ModelComparison result;
  const std::vector<size_t> picked = selected_outputs(session, options.outputs);
  for (size_t k : picked) result.outputs.push_back(session.outputs()[k]->value->name());
  result.output_diffs.resize(result.outputs.size());
  // Every expected file is found before anything runs: a missing one is the folder's fault.
  // The stems are claimed over every output, as run --output-dir claimed them.
  std::vector<std::string> stems;
  FileStems taken;
  for (const auto* v : session.outputs()) stems.push_back(taken.claim(v->value->name()));
  std::vector<std::vector<std::string>> files(expect_dirs.size());
  for (size_t s = 0; s < expect_dirs.size(); ++s) {
    const std::string& dir = expect_dirs[s];
    if (!std::filesystem::is_directory(dir)) throw Error(ErrorKind::kInput, "not a directory", Parameter{"expect", dir});
    for (size_t j = 0; j < picked.size(); ++j) {
      const size_t k = picked[j];
      const ReferenceFile ref = find_reference_file(dir, stems[k], k);
      if (ref.path.empty())
        throw Error(ErrorKind::kInput, "no " + ref.looked_for + " (output '" + result.outputs[j] + "')", Parameter{"expect", dir});
      files[s].push_back(ref.path);
    }
  }
  for (int s = 0; s < options.samples; ++s) {
    const auto out = session.run(sample_feeds(session, options, s, options.feeds.free_dim), result.outputs);
    for (size_t i = 0; i < result.outputs.size(); ++i) {
      const Value want = read_value_file(files[static_cast<size_t>(s)][i], session.outputs()[picked[i]]->value->type);
      result.output_diffs[i].add(match_value(want, out[i], options.rtol, options.atol).diff, s);
    }
  }
  if (session.device()) result.placement_a = SidePlacement{*session.device(), session.placement()};
  for (const auto& d : result.output_diffs) result.within = result.within && d.diff.within();
  return result;
}

}  // namespace onnxtool::runner
