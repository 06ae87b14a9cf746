// The ordered pipeline of passes and the optimizer driver.
#include <algorithm>
#include <unordered_map>

#include "ir/diagnostic.h"
#include "ir/error.h"
#include "ir/shape_inference.h"
#include "passes/pass.h"
#include "passes/pass_list.h"

namespace onnxtool::passes {

const std::vector<Pass>& pipeline() {
  // Order matters where noted: sorting first (later passes walk nodes in order); folding before
  // no-op elimination (folded shapes make Reshape/Expand no-ops visible); fusions after no-ops
  // (an Identity between Conv and BatchNormalization would hide the pair); dead code last (the
  // other passes leave unused constants behind).
  static const std::vector<Pass> passes = {
      {"sort_topologically", "order nodes so that every value is produced before it is used", sort_topologically},
      {"fold_constants", "compute nodes whose inputs are all constant (and Shape/Size of static shapes) into initializers", fold_constants},
      {"eliminate_noops", "remove Identity, inference Dropout, same-type Cast, identity Transpose/Reshape/Slice/Pad/Expand/Tile, x*1, x+0", eliminate_noops},
      {"eliminate_common_subexpressions", "merge identical initializers and nodes computing the same thing from the same inputs", eliminate_common_subexpressions},
      {"fuse_transposes", "merge consecutive Transposes (dropping identity results)", fuse_transposes},
      // Before the Conv input folds, which would take the 1/6 of a hard-swish feeding a Conv.
      {"fuse_hardswish", "x * Clip(x + 3, 0, 6) / 6 and x * HardSigmoid(x) -> HardSwish (opset >= 14)", fuse_hardswish},
      {"fuse_conv_batchnorm", "fold inference BatchNormalization into the preceding Conv's or ConvTranspose's weight and bias", fuse_conv_batchnorm},
      {"fuse_conv_add_mul", "fold per-channel constant Mul/Add after Conv or ConvTranspose into its weight and bias", fuse_conv_add_mul},
      {"fuse_conv_input_affine", "fold per-channel constant Mul (and Add, before an unpadded Conv) on a Conv's input into its weight and bias", fuse_conv_input_affine},
      {"fuse_pad_conv", "merge a zero constant Pad into the following Conv or AveragePool's pads", fuse_pad_conv},
      // MatMul+Add must precede the Gemm rewrites so that they see the new Gemms.
      {"fuse_matmul_add", "MatMul + Add of a bias on 2-D inputs -> Gemm", fuse_matmul_add},
      {"fuse_gemm_batchnorm", "fold inference BatchNormalization into the preceding Gemm", fuse_gemm_batchnorm},
      {"fuse_transpose_gemm", "absorb 2-D Transposes of Gemm inputs into transA/transB", fuse_transpose_gemm},
      {"fuse_relu_clip", "merge chains of Relu and Clip into one node", fuse_relu_clip},
      {"fuse_layernorm", "decomposed layer normalization -> LayerNormalization (opset >= 17)", fuse_layernorm},
      {"fuse_gelu", "decomposed erf GELU -> Gelu (opset >= 20)", fuse_gelu},
      {"eliminate_dead_code", "remove nodes, initializers, value_info and constant graph inputs nothing uses", eliminate_dead_code},
  };
  return passes;
}

const Pass* find_pass(std::string_view name) {
  for (const Pass& p : pipeline())
    if (name == p.name) return &p;
  return nullptr;
}

std::string pass_names() {
  std::string s;
  for (const Pass& p : pipeline()) s += (s.empty() ? "" : ", ") + std::string(p.name);
  return s;
}

ModelCounts count_model(const ir::Model& model) {
  ModelCounts c;
  ir::for_each_graph(const_cast<ir::Model&>(model), [&](ir::Graph& g) {
    c.nodes += static_cast<int64_t>(g.nodes().size());
    c.initializers += static_cast<int64_t>(g.initializers().size());
  });
  return c;
}

namespace {

/// Fixes the dims of graph inputs named by --input-shape (rank and static dims must agree).
void apply_input_shapes(ir::Model& model, const OptimizeOptions& options) {
  for (const auto& [name, dims] : options.input_shapes) {
    ir::ValueInfo* input = nullptr;
    for (auto& vi : model.graph->inputs)
      if (vi.value->name() == name) input = &vi;
    if (!input) throw_usage_error({"input_shape", ""}, "the model has no input '" + name + "'");
    ir::TypeInfo& t = input->value->type;
    if (!t.is_tensor()) throw_usage_error({"input_shape", ""}, "input '" + name + "' is not a tensor");
    if (t.shape && t.shape->rank() != dims.size())
      throw_usage_error({"input_shape", ""}, "input '" + name + "' has rank " + std::to_string(t.shape->rank()) + ", not " +
                        std::to_string(dims.size()));
    ir::Shape s;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] < 0) throw_usage_error({"input_shape", ""}, "input '" + name + "' has a negative dim");
      if (t.shape && t.shape->dims[i].kind == ir::Dim::Kind::kValue && t.shape->dims[i].value != dims[i])
        throw_usage_error({"input_shape", ""}, "input '" + name + "' dim " + std::to_string(i) + " is " +
                          std::to_string(t.shape->dims[i].value) + " in the model, not " + std::to_string(dims[i]));
      s.dims.push_back(ir::Dim::of(dims[i]));
    }
    t.shape = s;
    if (input->type) input->type->shape = s;
  }
}

}  // namespace

void check_pass_names(const OptimizeOptions& options) {
  for (const auto* list : {&options.only, &options.skip})
    for (const auto& n : *list)
      if (!find_pass(n)) throw_usage_error("unknown pass '" + n + "' (passes: " + pass_names() + ")");
}

void add_reordered(OptimizeReport& report, int64_t moved) {
  report.reordered += moved;
  for (auto& p : report.passes)
    if (p.name == "sort_topologically") p.stats.reordered += moved;
}

OptimizeReport optimize(ir::Model& model, const OptimizeOptions& options) {
  if (!model.graph) throw_usage_error("the model has no graph");
  check_pass_names(options);
  apply_input_shapes(model, options);

  std::vector<const Pass*> selected;
  for (const Pass& p : pipeline()) {
    const bool wanted = options.only.empty() || std::count(options.only.begin(), options.only.end(), p.name);
    const bool skipped = std::count(options.skip.begin(), options.skip.end(), p.name) > 0;
    if (wanted && !skipped) selected.push_back(&p);
  }
  OptimizeReport report;
  report.before = count_model(model);
  for (const Pass* p : selected) report.passes.push_back({p->name, {}});
  const PassContext context{options};
  // The graph must be acyclic whatever passes were chosen: sorting names the cycle. Then types
  // and shapes, which the shape-based rewrites read.
  add_reordered(report, ir::sort_graphs(model));
  ir::DiagnosticSink sink;
  ir::infer_shapes(model, sink);
  const int max_rounds = options.fixed_point ? 8 : 1;
  const auto passes = static_cast<int64_t>(selected.size());
  for (int round = 0; round < max_rounds; ++round) {
    bool changed = false;
    const std::string phase = round == 0 ? "passes" : "passes, round " + std::to_string(round + 1);
    for (size_t i = 0; i < selected.size(); ++i) {
      ir::report_progress(options.progress, phase, static_cast<int64_t>(i), passes, selected[i]->name);
      const PassStats s = selected[i]->run(model, context);
      report.passes[i].stats += s;
      changed = changed || s.changed();
      if (options.pass_finished) options.pass_finished(selected[i]->name, report.passes[i].stats);
      if (s.changed() && options.after_pass) options.after_pass(selected[i]->name, model);
    }
    ir::report_progress(options.progress, phase, passes, passes);
    report.rounds = round + 1;
    if (!changed) break;
  }
  // With fixed input dims the inferred shapes are worth keeping: store them as value_info.
  if (!options.input_shapes.empty()) {
    ir::DiagnosticSink after;
    ir::infer_shapes(model, after);
    ir::store_inferred_value_info(model);
  }
  ir::fit_initializer_inputs(model, model.ir_version);  // the folded and fused weights
  report.after = count_model(model);
  return report;
}

}  // namespace onnxtool::passes
