// float32 -> float16 guided by runs of the model.
#include "verify/fp16_guided.h"

#include <functional>
#include <set>
#include <tuple>

namespace onnxtool::verify {
namespace {

/// Integer and bool values do not change with float16: keeping them would only block nodes.
bool known_not_float(const ir::Value& v) {
  return v.type.is_tensor() && v.type.elem_type != 0 && v.type.data_type() != ir::DataType::kFloat;
}

bool kept(const convert::Fp16Options& o, const std::string& name) {
  return o.keep_float32_values.count(name) || o.keep_float32_for_accuracy.count(name);
}

/// What to keep in float32 next, given the first value where float16 departs: the value itself;
/// or, when it is kept already (computed in float32 from inputs float16 had already rounded: a
/// cancellation such as x - mean(x)), the nearest float values upstream of it that are not kept
/// yet, so each round moves the float32 region one step towards where the precision was lost.
/// Empty when there is nothing left to keep.
std::vector<std::string> next_values(const ir::Model& base, const convert::Fp16Options& o, const std::string& at) {
  if (at.empty()) return {};
  if (!kept(o, at)) return {at};
  std::vector<std::string> more;
  std::set<std::string> seen{at};
  std::vector<const ir::Value*> stack;
  if (const ir::Value* v = base.graph->find(at)) stack.push_back(v);
  while (!stack.empty()) {
    const ir::Value* v = stack.back();
    stack.pop_back();
    if (!v->producer()) continue;
    for (const ir::Value* in : v->producer()->inputs()) {
      if (!in || !seen.insert(in->name()).second) continue;
      if (known_not_float(*in)) continue;
      if (kept(o, in->name()))
        stack.push_back(in);
      else
        more.push_back(in->name());
    }
  }
  return more;
}

}  // namespace

GuidedFp16 to_fp16_guided(ir::Model& base, const std::function<ir::Model()>& prepare, convert::Fp16Options options,
                          const Reference& reference, const Tolerance& tolerance, const ir::Progress& progress) {
  GuidedFp16 g;
  g.model = prepare();
  for (const auto& [name, magnitude] : value_ranges(base, reference.feeds())) {
    if (magnitude >= convert::kFloat16RangeLimit) {
      if (options.keep_float32_values.insert(name).second) g.range_values.push_back(name);
    } else if (magnitude > g.largest_magnitude) {
      g.largest_magnitude = magnitude;
      g.largest_value = name;
    }
  }
  auto convert_round = [&](const convert::Fp16Options& with, const std::string& detail) {
    ir::report_progress(progress, kGuidedFp16Phase, 0, 0, "round " + std::to_string(g.rounds + 1) + detail);
    ir::Model m = g.rounds ? prepare() : std::move(g.model);
    convert::PrecisionReport report = convert::to_fp16(m, with);
    VerifyResult verified = reference.check(m, tolerance);
    return std::make_tuple(std::move(m), std::move(report), std::move(verified));
  };
  // Localized: the first value where float16 departs, one more per round.
  for (;;) {
    std::string detail;
    if (const size_t kept = g.accuracy_values.size())
      detail = ", " + std::to_string(kept) + (kept == 1 ? " value" : " values") + " kept in float32 so far";
    std::tie(g.model, g.report, g.verified) = convert_round(options, detail);
    if (g.verified.ok() || g.rounds == kLocalizedRounds) break;
    const auto more = next_values(base, options, reference.first_divergence(base, g.model, tolerance));
    if (more.empty()) break;
    for (const auto& name : more) {
      options.keep_float32_for_accuracy.insert(name);
      g.accuracy_values.push_back(name);
    }
    ++g.rounds;
  }
  if (g.verified.ok()) return g;
  // Not localized: float16's rounding adds a little error at every layer and the network
  // amplifies it (a detector whose map is a sigmoid of logits up to +-130: 0.4% error at every
  // layer moves a logit near 0 by 0.4, the map by 0.1). The shortest head of the graph, in node
  // order, kept whole in float32 that brings the result within tolerance, found by bisection:
  // the errors that start early travel through the most layers. A head of every node is the
  // float32 model, not worth writing.
  // The order of every graph's nodes as they run: a control-flow node's bodies just before the
  // node itself (Silero VAD's network is all inside an If).
  std::vector<const ir::Node*> nodes;
  const std::function<void(const ir::Graph&)> flatten = [&](const ir::Graph& graph) {
    for (const auto& n : graph.nodes()) {
      for (const ir::Graph* sub : n->subgraphs()) flatten(*sub);
      nodes.push_back(n.get());
    }
  };
  flatten(*base.graph);
  g.graph_nodes = nodes.size();
  auto head_options = [&](size_t count) {
    convert::Fp16Options o = options;
    for (size_t i = 0; i < count; ++i)
      for (const ir::Value* out : nodes[i]->outputs())
        if (out && !known_not_float(*out))
          o.keep_float32_for_accuracy.insert(out->name());
    return o;
  };
  size_t fail = 0, pass = nodes.size();  // a head of `fail` nodes fails; of `pass` passes (assumed for all)
  while (pass - fail > 1) {
    const size_t mid = fail + (pass - fail) / 2;
    ++g.rounds;
    auto [m, report, verified] =
        convert_round(head_options(mid), ", the first " + std::to_string(mid) + " of " +
                                             std::to_string(nodes.size()) + " nodes in float32");
    if (verified.ok()) {
      pass = mid;
      g.model = std::move(m);
      g.report = std::move(report);
      g.verified = std::move(verified);
    } else {
      fail = mid;
    }
  }
  if (g.verified.ok()) {
    g.head_nodes = pass;
    g.head_last = nodes[pass - 1]->describe();
  }
  return g;
}

}  // namespace onnxtool::verify
