// quantize_model: the preprocessing before quantization, and samples read from folders.
#include <algorithm>
#include <filesystem>

#include "ir/error.h"
#include "passes/pass.h"
#include "quant/accuracy.h"
#include "quant/quantize.h"
#include "runner/feeds.h"
#include "runner/session.h"

namespace onnxtool::quant {

namespace {

/// A model with the graph inputs of `model` and nothing else (initializer-backed inputs keep
/// their initializers, whose bytes are shared, not copied): what samples are checked against.
/// A whole copy of a 176 MB model held 320 MB for the whole quantization (the copy, and the
/// session's aligned copies of its weights).
ir::Model inputs_only(const ir::Model& model) {
  ir::Model m;
  m.ir_version = model.ir_version;
  m.opset_import = model.opset_import;
  m.graph = std::make_unique<ir::Graph>();
  ir::Graph& g = *m.graph;
  for (const auto& vi : model.graph->inputs) {
    if (const ir::Tensor* t = vi.value->initializer()) g.add_initializer(*t);
    ir::ValueInfo& in = g.add_input(vi.value->name(), vi.type);
    if (!vi.type) in.value->type = vi.value->type;
  }
  if (!g.inputs.empty()) g.add_output(g.inputs.front().value, std::nullopt);
  return m;
}

}  // namespace

QuantizeReport quantize_model(ir::Model& model, const QuantizeOptions& options, bool preprocess,
                              const std::vector<std::string>& sample_dirs, const SampleProgress& progress) {
  QuantizeReport moved;  // the opset change made before preprocessing, if any
  if (preprocess) {
    // Static QDQ keeps the ops it does not quantize in float between DequantizeLinear and
    // QuantizeLinear: a decomposed hard-swish (Add, Clip, Mul, Div) would cost four float ops and
    // three extra roundings where HardSwish (opset 14) costs one op and none. The quantizer
    // itself needs only opset 10, or 13 per channel.
    if (options.mode == Mode::kStatic && model.onnx_opset() < kStaticPreprocessOpset) {
      ir::Model copy = copy_model(model);
      try {
        ensure_opset(copy, kStaticPreprocessOpset, moved);
        model = std::move(copy);
      } catch (const Error&) {
        moved = QuantizeReport{};
      }
    }
    passes::optimize(model, passes::OptimizeOptions{});
  }
  // Samples are checked against the model's inputs by a session of their own (the quantizers
  // rewrite the model while they read samples).
  ir::Model probe_model = inputs_only(model);
  runner::Session probe(probe_model);
  size_t read = 0;  // samples read so far (the progress counts each once)
  SampleSource source = [&](size_t index, std::map<std::string, runner::Value>& feeds) {
    if (index >= sample_dirs.size()) return false;
    runner::FeedOptions f;
    f.dir = sample_dirs[index];
    try {
      feeds = runner::load_feeds(probe, f);
    } catch (const Error& e) {
      throw Error(e.kind(), "--calib-data sample " + std::filesystem::path(f.dir).filename().string() + ": " + e.what());
    }
    if (index >= read) {
      read = index + 1;
      if (progress) progress(read, sample_dirs.size());
    }
    return true;
  };
  QuantizeReport report = options.mode == Mode::kDynamic
                              ? quantize_dynamic(model, options, sample_dirs.empty() ? SampleSource{} : source)
                              : quantize_static(model, options, source);
  if (moved.opset_to) {
    report.opset_from = moved.opset_from;
    report.opset_to = std::max(report.opset_to, moved.opset_to);
  }
  return report;
}

}  // namespace onnxtool::quant
