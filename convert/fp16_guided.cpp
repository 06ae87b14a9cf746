// float32 -> float16 guided by runs of the model.
#include "convert/fp16_guided.h"

#include <set>

#include "passes/pass.h"

namespace onnxtool::convert {
namespace {

bool kept(const Fp16Options& o, const std::string& name) {
  return o.keep_float32_values.count(name) || o.keep_float32_for_accuracy.count(name);
}

/// What to keep in float32 next, given the first value where float16 departs: the value itself;
/// or, when it is kept already (computed in float32 from inputs float16 had already rounded: a
/// cancellation such as x - mean(x)), the nearest float values upstream of it that are not kept
/// yet, so each round moves the float32 region one step towards where the precision was lost.
/// Empty when there is nothing left to keep.
std::vector<std::string> next_values(const ir::Model& base, const Fp16Options& o, const std::string& at) {
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
      // Integer and bool inputs do not change with float16: keeping them would only block nodes.
      if (in->type.is_tensor() && in->type.elem_type != 0 && in->type.data_type() != ir::DataType::kFloat) continue;
      if (kept(o, in->name()))
        stack.push_back(in);
      else
        more.push_back(in->name());
    }
  }
  return more;
}

}  // namespace

void preprocess_for_fp16(ir::Model& model) {
  passes::OptimizeOptions pre;
  pre.skip = {"fuse_conv_input_affine"};
  passes::optimize(model, pre);
}

GuidedFp16 to_fp16_guided(ir::Model& base, const std::function<ir::Model()>& prepare, Fp16Options options,
                          const runner::Reference& reference, const runner::Tolerance& tolerance,
                          const ir::Progress& progress) {
  GuidedFp16 g{prepare(), {}, {}, {}, {}, 0};
  for (const auto& [name, magnitude] : runner::value_ranges(base, reference.feeds()))
    if (magnitude >= kFloat16RangeLimit && options.keep_float32_values.insert(name).second)
      g.range_values.push_back(name);
  for (;;) {
    std::string detail = "round " + std::to_string(g.rounds + 1);
    if (const size_t kept = g.accuracy_values.size())
      detail += ", " + std::to_string(kept) + (kept == 1 ? " value" : " values") + " kept in float32 so far";
    ir::report_progress(progress, kGuidedFp16Phase, 0, 0, detail);
    g.report = to_fp16(g.model, options);
    g.verified = reference.check(g.model, tolerance);
    if (g.verified.ok() || g.rounds == kMaxAccuracyRounds) break;
    const auto more = next_values(base, options, reference.first_divergence(base, g.model, tolerance));
    if (more.empty()) break;
    for (const auto& name : more) {
      options.keep_float32_for_accuracy.insert(name);
      g.accuracy_values.push_back(name);
    }
    ++g.rounds;
    g.model = prepare();
  }
  return g;
}

}  // namespace onnxtool::convert
