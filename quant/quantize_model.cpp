// quantize_model: the preprocessing before quantization, and samples read from folders.
#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "convert/precision.h"
#include "ir/error.h"
#include "ir/graph_util.h"
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

/// A float16/bfloat16 tensor as float32.
runner::Tensor widened(const runner::Tensor& t) {
  runner::Tensor out(ir::DataType::kFloat, t.shape());
  float* o = out.mutable_data<float>();
  const uint16_t* in = t.data<uint16_t>();
  const bool bf16 = t.dtype() == ir::DataType::kBFloat16;
  for (int64_t i = 0; i < t.size(); ++i) o[i] = bf16 ? ir::bfloat16_to_float(in[i]) : ir::half_to_float(in[i]);
  return out;
}

bool is_half(ir::DataType t) { return t == ir::DataType::kFloat16 || t == ir::DataType::kBFloat16; }

bool is_half_tensor(const std::optional<ir::TypeInfo>& t) { return t && t->is_tensor() && is_half(t->data_type()); }

/// True when the model holds float16 or bfloat16 weights or values (as converters ship them).
bool has_half_precision(ir::Model& model) {
  bool half = false;
  ir::for_each_graph(model, [&](ir::Graph& g) {
    for (const auto& t : g.initializers()) half |= is_half(static_cast<ir::DataType>(t->data_type));
    for (const auto* infos : {&g.inputs, &g.outputs, &g.value_info})
      for (const ir::ValueInfo& vi : *infos) half |= is_half_tensor(vi.type);
    for (const auto& n : g.nodes()) {
      if (n->op_type == "Cast") half |= is_half(static_cast<ir::DataType>(n->attr_int("to", 0)));
      if (const ir::Attribute* a = n->attr("value"); a && a->t) half |= is_half(static_cast<ir::DataType>(a->t->data_type));
    }
  });
  return half;
}

/// Bytes of the main graph's initializers and Constant values, as stored.
int64_t initializer_bytes(ir::Model& model) {
  int64_t bytes = 0;
  auto add = [&](const ir::Tensor& t) {
    int64_t n = 1;
    for (int64_t d : t.dims) n *= d;
    bytes += static_cast<int64_t>(ir::storage_bytes(static_cast<ir::DataType>(t.data_type), static_cast<uint64_t>(n)).value_or(0));
  };
  for (const auto& t : model.graph->initializers()) add(*t);
  for (const auto& n : model.graph->nodes())
    if (const ir::Attribute* a = n->op_type == "Constant" ? n->attr("value") : nullptr; a && a->t) add(*a->t);
  return bytes;
}

/// Gives the graph inputs and outputs that were float16/bfloat16 (`declared`: the types before
/// the model was widened) their type back, with a Cast at the boundary: the quantized model reads
/// and writes what the original did.
void restore_io_types(ir::Graph& g, const std::vector<std::optional<ir::TypeInfo>>& inputs,
                      const std::vector<std::optional<ir::TypeInfo>>& outputs) {
  auto cast = [&](ir::Value* x, const std::string& name, ir::DataType to, const ir::Node* before) {
    ir::Node* c = g.add_node("Cast", {x}, {name}, "", ir::unique_name(g, name + "_Cast"), before);
    c->set_attr(ir::Attribute::make_int("to", static_cast<int64_t>(to)));
    return c->output(0);
  };
  for (size_t i = 0; i < g.inputs.size() && i < inputs.size(); ++i) {
    if (!is_half_tensor(inputs[i])) continue;
    ir::Value* widened = g.inputs[i].value;
    const std::string name = widened->name();
    g.rename(widened, ir::unique_name(g, name + "_float"));
    ir::ValueInfo& half = g.add_input(name, inputs[i]);
    ir::Value* x = cast(half.value, ir::unique_name(g, name + "_to_float"), ir::DataType::kFloat,
                        g.nodes().empty() ? nullptr : g.nodes().front().get());
    x->type = widened->type;
    g.replace_all_uses(widened, x);
    for (size_t o = 0; o < g.outputs.size(); ++o)
      if (g.outputs[o].value == widened) g.set_output_value(o, x);
    g.remove_input(i);
    std::rotate(g.inputs.begin() + static_cast<std::ptrdiff_t>(i), g.inputs.end() - 1, g.inputs.end());
  }
  for (size_t i = 0; i < g.outputs.size() && i < outputs.size(); ++i) {
    if (!is_half_tensor(outputs[i])) continue;
    ir::Value* widened = g.outputs[i].value;
    const std::string name = widened->name();
    if (widened->is_graph_input()) continue;  // an input passed through: restored with the inputs
    g.rename(widened, ir::unique_name(g, name + "_float"));
    ir::Value* y = cast(widened, name, outputs[i]->data_type(), nullptr);
    y->type = *outputs[i];
    g.set_output_value(i, y);
    g.outputs[i].type = outputs[i];
  }
}


/// Why nothing was quantized, from what the quantizers and the checks after them found (the
/// size and speed checks have set theirs already).
Unchanged unchanged_reason(const QuantizeReport& r) {
  if (r.unchanged != Unchanged::kNo) return r.unchanged;
  if (r.timed_out_after) return Unchanged::kTimedOut;
  if (r.missed_target >= 0) return Unchanged::kMissedTarget;
  if (!r.kept_float.empty()) return Unchanged::kAllKeptFloat;
  return Unchanged::kNoCandidate;
}

/// The report of a model given back as it came: what the samples were and why nothing was
/// kept; the attempted nodes are float in it (what was measured of the attempts is not what
/// the caller writes).
QuantizeReport unchanged_report(QuantizeReport&& r) {
  QuantizeReport none;
  none.unchanged = unchanged_reason(r);
  none.kept_float = std::move(r.kept_float);
  for (const auto& n : r.nodes) none.kept_float.push_back({n.node, n.op_type, n.tensor, "the model is left as it came (see \"unchanged\")"});
  none.samples = r.samples;
  none.error_samples = r.error_samples;
  none.nan_values = r.nan_values;
  none.inf_values = r.inf_values;
  none.random_samples = std::move(r.random_samples);
  none.reference = std::move(r.reference);
  none.missed_target = r.missed_target;
  for (const auto& e : r.outputs)
    if (!r.blocking_outputs.empty() && std::none_of(r.blocking_outputs.begin(), r.blocking_outputs.end(),
                                                    [&](const auto& b) { return b.first == e.name; }))
      none.reaching_outputs.push_back(e.name);
  none.blocking_outputs = std::move(r.blocking_outputs);
  none.timed_out_after = r.timed_out_after;
  if (none.unchanged == Unchanged::kSlowerEstimate) none.estimated_speedup = r.estimated_speedup;  // the one rejected
  none.half_weight_bytes = r.half_weight_bytes;
  none.result_weight_bytes = r.result_weight_bytes;
  return none;
}

/// The preprocessing of quantize_model: static mode moves older models to
/// kStaticPreprocessOpset when the converter can, then the optimize pipeline.
void preprocess_model(ir::Model& model, const QuantizeOptions& options, QuantizeReport& moved) {
  ir::report_progress(options.progress, "preprocessing", 0, 1);
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
  ir::report_progress(options.progress, "preprocessing", 1, 1);
}

/// Whether dynamic or weight-only quantization without sample folders has something to
/// measure on random samples (a trial on a copy, sizes from the static shapes, quantizes a
/// node), and then the free dims of `random` at the first size the float model runs on (as
/// verification sizes them). Throws kFailed when it runs on none.
bool size_random_samples(ir::Model& model, const QuantizeOptions& checked, runner::FeedOptions& random) {
  ir::Model trial = copy_model(model);
  QuantizeOptions unmeasured = checked;
  unmeasured.auto_exclude = false;
  unmeasured.progress = {};
  const QuantizeReport tried =
      checked.mode == Mode::kDynamic ? quantize_dynamic(trial, unmeasured) : quantize_weight_only(trial, unmeasured);
  if (tried.quantized_nodes == 0) return false;
  runner::Session session(model);
  try {
    runner::feeds_that_run(session, random, [&](std::map<std::string, runner::Value>& f) { session.run(f); }, &random.free_dim);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInternal || e.kind() == ErrorKind::kUsage) throw;
    throw Error(ErrorKind::kFailed,
                std::string("cannot measure the accuracy: the model does not run on random inputs (") + e.what() +
                    "); give samples or value ranges, or quantize it unmeasured",
                Parameter{}, {"sample_dirs", "input_range", "no_verify"});
  }
  return true;
}

/// The bytes per element of the model's float initializers as stored (before a float16/bfloat16
/// model is widened to float32), and the size most of their elements have, for the report's
/// figure of the weights quantized.
void record_stored_element_bytes(ir::Model& model, QuantizeOptions& options) {
  std::map<int, uint64_t> elements_by_size;
  ir::for_each_graph(*model.graph, [&](ir::Graph& g) {
    for (const auto& t : g.initializers()) {
      const auto type = static_cast<ir::DataType>(t->data_type);
      const int size = type == ir::DataType::kFloat ? 4 : type == ir::DataType::kDouble ? 8 : is_half(type) ? 2 : 0;
      if (size == 0) continue;
      options.stored_element_bytes[t->name] = size;
      elements_by_size[size] += t->element_count().value_or(0);
    }
  });
  uint64_t most = 0;
  for (const auto& [size, elements] : elements_by_size)
    if (elements > most) {
      most = elements;
      options.default_stored_element_bytes = size;
    }
}

/// A float16/bfloat16 model's quantization is not kept when its weights come out larger: what
/// stays float is float32 now.
void judge_against_half(ir::Model& model, int64_t half_bytes, QuantizeReport& report) {
  const int64_t after = initializer_bytes(model);
  if (report.quantized_nodes == 0 || after <= half_bytes) return;
  report.unchanged = Unchanged::kLargerThanHalf;
  report.half_weight_bytes = half_bytes;
  report.result_weight_bytes = after;
  report.quantized_nodes = 0;
}

/// Nor a quantization estimated at less than kWorthSpeedup, unless op types were named (they
/// force it whatever the estimate); weight-only mode is for size, not speed.
void judge_speed(const QuantizeOptions& options, QuantizeReport& report) {
  if (report.quantized_nodes > 0 && options.op_types.empty() && options.mode != Mode::kWeightOnly &&
      report.estimated_speedup > 0 && report.estimated_speedup < kWorthSpeedup) {
    report.unchanged = Unchanged::kSlowerEstimate;
    report.quantized_nodes = 0;
  }
}

}  // namespace

QuantizeReport quantize_model(ir::Model& model, const QuantizeOptions& options, bool preprocess,
                              const std::vector<std::string>& sample_dirs) {
  // The selection is checked against the model as given, before preprocessing rewrites it.
  validate_selection(model, options);
  // Given back when nothing is worth keeping (its bytes are shared with the model, not copied).
  ir::Model original = copy_model(model, /*infer=*/false);
  QuantizeOptions checked = options;
  checked.selection_checked = true;
  checked.sample_count = static_cast<int64_t>(sample_dirs.size());
  QuantizeReport moved;  // the opset change made before preprocessing, if any
  // Samples are checked against the model's inputs as the file declares them, by a session of
  // their own (the quantizers rewrite the model while they read samples).
  ir::Model probe_model = inputs_only(model);
  runner::Session probe(probe_model);
  // float16/bfloat16 models are quantized from their values widened to float32 (the weights'
  // values exactly; the arithmetic then in float32), their float16 inputs and outputs restored.
  std::vector<std::optional<ir::TypeInfo>> input_types, output_types;
  for (const auto& vi : model.graph->inputs) input_types.push_back(vi.type ? vi.type : std::optional<ir::TypeInfo>(vi.value->type));
  for (const auto& vi : model.graph->outputs) output_types.push_back(vi.type ? vi.type : std::optional<ir::TypeInfo>(vi.value->type));
  const bool half = has_half_precision(model);
  const int64_t half_bytes = half ? initializer_bytes(model) : 0;
  if (half) {
    record_stored_element_bytes(model, checked);
    convert::to_fp32(model);
  }
  if (preprocess) preprocess_model(model, options, moved);
  SampleSource source = [&](size_t index, std::map<std::string, runner::Value>& feeds) {
    if (index >= sample_dirs.size()) return false;
    runner::FeedOptions f;
    f.dir = sample_dirs[index];
    try {
      feeds = runner::load_feeds(probe, f);
    } catch (const Error& e) {
      throw Error(e.kind(), e.what(), Parameter{"sample_dirs", "sample " + std::filesystem::path(f.dir).filename().string()});
    }
    if (half)
      for (auto& [name, value] : feeds)
        if (value.is_tensor() && is_half(value.tensor.dtype())) value = runner::Value::of(widened(value.tensor));
    return true;
  };
  // Without folders, dynamic and weight-only quantization are measured on random samples, when
  // there is something to measure: a trial on a copy (sizes from the static shapes) tells. The
  // float model must run on them: their free dims sized as verification sizes them, the first
  // size it runs on.
  runner::FeedOptions random = options.random_feeds;
  random.random = true;
  checked.samples_random = sample_dirs.empty();  // measured on random samples, or not at all
  const bool use_random = sample_dirs.empty() && options.mode != Mode::kStatic && options.random_samples > 0 &&
                          size_random_samples(model, checked, random);
  if (use_random) checked.sample_count = options.random_samples;
  SampleSource random_source = [&](size_t index, std::map<std::string, runner::Value>& feeds) {
    if (index >= static_cast<size_t>(options.random_samples)) return false;
    runner::FeedOptions f = random;
    f.seed = random.seed + index;
    feeds = runner::load_feeds(probe, f);
    // Drawn for the model as given: a float16 input's values widened, as the samples' are.
    if (half)
      for (auto& [name, value] : feeds)
        if (value.is_tensor() && is_half(value.tensor.dtype())) value = runner::Value::of(widened(value.tensor));
    return true;
  };
  const SampleSource optional_source = !sample_dirs.empty() ? source : use_random ? random_source : SampleSource{};
  if (!optional_source && options.mode != Mode::kStatic) checked.auto_exclude = false;  // nothing to measure on
  QuantizeReport report = options.mode == Mode::kDynamic      ? quantize_dynamic(model, checked, optional_source)
                          : options.mode == Mode::kWeightOnly ? quantize_weight_only(model, checked, optional_source)
                                                              : quantize_static(model, checked, source);
  if (use_random) report.random_samples = runner::random_inputs_description(random);
  if (half) {
    report.reference = "float16/bfloat16 weights computed in float32";
    judge_against_half(model, half_bytes, report);
    if (report.quantized_nodes > 0) restore_io_types(*model.graph, input_types, output_types);
  }
  judge_speed(options, report);
  if (moved.opset_to) {
    report.opset_from = moved.opset_from;
    report.opset_to = std::max(report.opset_to, moved.opset_to);
  }
  if (report.quantized_nodes == 0) {
    model = std::move(original);
    return unchanged_report(std::move(report));
  }
  ir::fit_initializer_inputs(model, model.ir_version);  // scales, zero points, quantized weights
  return report;
}

}  // namespace onnxtool::quant
