// `onnxtool quantize MODEL -o OUT --mode dynamic|static|weight-only`: INT8 (and int4 weight-only)
// quantization.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>

#include "cli/common.h"
#include "cli/flags.h"
#include "cli/printers.h"
#include "cli/progress.h"
#include "cli/quantize.h"
#include "cli/verify.h"
#include "ir/command_files.h"
#include "ir/error.h"
#include "ir/model_io.h"

namespace onnxtool::cli {
namespace {

quant::QuantType parse_type(const std::string& flag, const std::string& v) {
  if (v == "int8") return quant::QuantType::kInt8;
  if (v == "uint8") return quant::QuantType::kUInt8;
  throw_usage_error(flag + " must be int8 or uint8, not '" + v + "'");
}

/// Flags the mode or the other flags would leave unused: refused (exit 2, one line), as convert
/// refuses --keep-io-types without --to-fp16, rather than quietly doing something else than asked.
void refuse_ignored_flags(const QuantizeCliOptions& o) {
  // The modes using each flag: dynamic mode quantizes activations at run time (nothing to
  // calibrate, always uint8 asymmetric, MatMulInteger rather than QDQ or QLinear ops), and
  // weight-only mode keeps activations float and weights in int4/int8 blocks of its own.
  enum : unsigned { kDynamic = 1, kStatic = 2, kWeightOnly = 4 };
  static const std::pair<const char*, unsigned> kModeFlags[] = {
      {"--format", kStatic | kWeightOnly}, {"--calib-method", kStatic},
      {"--percentile", kStatic},       {"--moving-average", kStatic},
      {"--device", kStatic},           {"--activation-type", kStatic},
      {"--symmetric-activations", kStatic},
      {"--weight-type", kDynamic | kStatic},     {"--per-channel", kDynamic | kStatic},
      {"--per-tensor", kDynamic | kStatic},      {"--reduce-range", kDynamic | kStatic},
      {"--bits", kWeightOnly},         {"--block-size", kWeightOnly},
  };
  const unsigned mode = o.mode == "dynamic" ? kDynamic : o.mode == "static" ? kStatic : kWeightOnly;
  for (const auto& [flag, modes] : kModeFlags) {
    if (!o.given.count(flag) || (modes & mode)) continue;
    const char* used_in = modes == kStatic ? "static" : modes == kWeightOnly ? "weight-only"
                          : modes == (kStatic | kWeightOnly) ? "static or weight-only" : "dynamic or static";
    throw_usage_error(std::string(flag) + " is for --mode " + used_in + "; --mode " + o.mode + " would ignore it");
  }
  if (o.calib_method != "minmax" && o.calib_method != "entropy" && o.calib_method != "percentile")
    throw_usage_error("--calib-method must be minmax, entropy or percentile");
  if (o.given.count("--percentile") && o.calib_method != "percentile")
    throw_usage_error("--percentile goes with --calib-method percentile, not " + o.calib_method);
  if (o.given.count("--moving-average") && o.calib_method != "minmax")
    throw_usage_error("--moving-average averages minmax ranges; --calib-method " + o.calib_method + " would ignore it");
  // Static mode refuses to run without samples (below); the other modes measure their errors on
  // the samples when given, else on random ones, which these flags shape.
  const bool random_samples = o.mode != "static" && o.calib_data.empty();
  refuse_unused(o.given, {
      {{"--calib-samples", "--error-samples"}, !random_samples,
       "without --inputs the accuracy is measured on " + std::to_string(quant::QuantizeOptions{}.random_samples) + " random samples"},
      {{"--seed", "--input-range", "--input-shape", "--no-verify"}, random_samples,
       "for the random samples dynamic and weight-only modes are measured on without --inputs"},
      {{"--seed", "--input-range", "--input-shape", "--accuracy-target", "--accuracy-outputs", "--auto-exclude", "--no-auto-exclude",
        "--time-limit"},
       !o.no_verify, "they choose how the accuracy is measured; --no-verify measures nothing"},
  });
}

/// The quantization the flags ask, checked; `start` is the command's, which --time-limit counts from.
quant::QuantizeOptions quantize_options(const QuantizeCliOptions& o, std::chrono::steady_clock::time_point start) {
  quant::QuantizeOptions q;
  q.mode = o.mode == "static" ? quant::Mode::kStatic : o.mode == "weight-only" ? quant::Mode::kWeightOnly : quant::Mode::kDynamic;
  q.bits = o.bits;
  q.block_size = o.block_size;
  q.format = o.format == "qoperator" ? quant::Format::kQOperator : o.format == "matmulnbits" ? quant::Format::kMatMulNBits : quant::Format::kQdq;
  if (o.calib_method == "minmax") q.calibration.method = quant::CalibrationMethod::kMinMax;
  else if (o.calib_method == "entropy") q.calibration.method = quant::CalibrationMethod::kEntropy;
  else if (o.calib_method == "percentile") q.calibration.method = quant::CalibrationMethod::kPercentile;
  else throw_usage_error("--calib-method must be minmax, entropy or percentile");
  if (!(o.percentile > 0 && o.percentile <= 100)) throw_usage_error("--percentile must be in (0, 100]");
  q.calibration.percentile = o.percentile;
  q.calibration.moving_average = o.moving_average;
  q.calibration.device = runner::DeviceSpec::parse(o.device);
  // Calibration observes the reference runner's values node by node, kernels as they fuse them.
  if (q.calibration.device.kind == runner::DeviceSpec::Kind::kOnnxruntime)
    throw_usage_error("--device " + o.device + ": calibration runs on cpu or vulkan; onnxruntime is a device of run and compare only");
  if (o.per_channel && o.per_tensor) throw_usage_error("--per-channel and --per-tensor exclude each other");
  if (o.per_channel) std::cerr << "onnxtool quantize: --per-channel is the default; the flag can be left out\n";
  q.per_channel = !o.per_tensor;
  q.weight_type = parse_type("--weight-type", o.weight_type);
  q.activation_type = parse_type("--activation-type", o.activation_type);
  q.symmetric_activations = o.symmetric_activations;
  q.reduce_range = o.reduce_range;
  q.op_types = o.op_types;
  q.exclude_nodes = o.exclude_nodes;
  q.exclude_op_types = o.exclude_op_types;
  if (o.auto_exclude && o.no_auto_exclude) throw_usage_error("--auto-exclude and --no-auto-exclude exclude each other");
  if (!(o.accuracy_target > 0 && o.accuracy_target <= 1)) throw_usage_error("--accuracy-target must be in (0, 1]");
  // The accuracy target holds by default, measured on the samples or on random ones
  // (--no-auto-exclude: every supported node quantized, whatever the accuracy, which is reported).
  q.auto_exclude = !o.no_auto_exclude;
  q.random_feeds.seed = o.seed;
  if (o.no_verify) q.random_samples = 0;
  // The search ends by 95% of the limit: the rest is for writing the result (ISNet, 176 MB:
  // the search's end at the limit itself left the command 0.3 s past it).
  if (o.time_limit > 0)
    q.deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::chrono::duration<double>(0.95 * o.time_limit));
  for (const auto& r : o.input_ranges) runner::add_input_range(q.random_feeds, r, "--input-range");
  q.random_feeds.shapes = parse_shapes("--input-shape", o.input_shapes);
  q.random_feeds.flags = {"", "--inputs", "", "--input-shape"};
  q.accuracy_outputs = o.accuracy_outputs;
  q.accuracy_target = o.accuracy_target;
  if (o.error_samples < 1) throw_usage_error("--error-samples must be at least 1");
  q.error_samples = o.error_samples;
  if (q.mode == quant::Mode::kStatic && o.calib_data.empty()) throw_usage_error("--mode static needs --inputs DIR, a folder of calibration samples");
  return q;
}

/// The model loaded and runnable, and every file the command writes claimed; returns the nodes
/// the load sorted.
int64_t load_for_quantize(const QuantizeCliOptions& o, ir::LoadedModel& loaded) {
  loaded = ir::load_model(o.model);
  const int64_t sorted_on_load = refuse_unrunnable(loaded.model, o.model);
  ir::check_output_paths(loaded.info, o.output, "", /*in_place=*/false);
  for (const auto& name : o.accuracy_outputs) {
    const auto& outs = loaded.model.graph->outputs;
    if (std::none_of(outs.begin(), outs.end(), [&](const ir::ValueInfo& vi) { return vi.value && vi.value->name() == name; }))
      throw_usage_error("--accuracy-outputs: the model has no output named '" + name + "'");
  }
  if (!o.report.empty()) {
    ir::check_not_input(loaded.info, o.report, "--report " + o.report);
    ir::claim_output(o.report, "--report " + o.report);
  }
  return sorted_on_load;
}

/// Refuses (Error kFailed, nothing written) what the flags made a requirement: a quantization
/// (--auto-exclude), or an estimated speed-up (--require-speedup, a CI gate).
void refuse_unmet(const QuantizeCliOptions& o, const quant::QuantizeReport& report, const std::string& unchanged) {
  // Nothing worth quantizing: refused when asked for explicitly (--auto-exclude), otherwise the
  // model is written as it came (quantize_model gave it back), with the reason.
  if (!unchanged.empty() && o.auto_exclude) throw Error(ErrorKind::kFailed, o.model + ": --auto-exclude: " + unchanged);
  if (o.require_speedup <= 0) return;
  const double estimate = unchanged.empty() ? report.estimated_speedup : 1.0;
  if (estimate < 0)
    throw Error(ErrorKind::kFailed, o.model + ": --require-speedup: no speed-up estimate (it needs --inputs, or static shapes)");
  if (estimate < o.require_speedup)
    throw Error(ErrorKind::kFailed, o.model + ": --require-speedup " + significant(o.require_speedup, 8) + ": the estimated speed-up is " +
                                        significant(estimate, 8) + "x" + (unchanged.empty() ? "" : " (nothing quantized: " + unchanged + ")"));
}

int run_quantize(const QuantizeCliOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  if (o.mode != "dynamic" && o.mode != "static" && o.mode != "weight-only")
    throw_usage_error("--mode must be dynamic, static or weight-only");
  refuse_ignored_flags(o);
  if (o.mode == "weight-only" && o.format != "qdq" && o.format != "matmulnbits")
    throw_usage_error("--format must be qdq or matmulnbits with --mode weight-only, not '" + o.format + "'");
  if (o.mode != "weight-only" && o.format != "qdq" && o.format != "qoperator")
    throw_usage_error("--format must be qdq or qoperator with --mode static, not '" + o.format + "'");
  refuse_overwriting_input(o.model, o.output);
  quant::QuantizeOptions q = quantize_options(o, start);
  const auto samples = o.calib_data.empty() ? std::vector<std::string>{} : sample_dirs("--inputs", o.calib_data, o.calib_samples);
  ir::LoadedModel loaded;
  const int64_t sorted_on_load = load_for_quantize(o, loaded);
  q.progress = progress();
  const quant::QuantizeReport report = quant::quantize_model(loaded.model, q, !o.no_preprocess, samples);
  const std::string unchanged = unchanged_text(report, o);
  refuse_unmet(o, report, unchanged);
  std::unique_ptr<ir::OutputFile> report_file;
  if (!o.report.empty()) report_file = std::make_unique<ir::OutputFile>(o.report, "--report " + o.report);
  WrittenModel written = write_model(loaded.model, o.output);
  if (!unchanged.empty()) written.sorted_nodes += sorted_on_load;  // the file's order, sorted on loading
  const nlohmann::json doc = quantize_json(o, report, unchanged, stored_bytes(loaded.info), written);
  if (report_file) {
    std::map<std::string, size_t> graph_order;
    for (const auto& node : loaded.model.graph->nodes())
      if (!node->name.empty()) graph_order.emplace(node->name, graph_order.size());
    write_report(*report_file, o.report, report, doc, graph_order);
  }
  if (o.json) print_json(doc);
  else print_quantized(o, report, unchanged, stored_bytes(loaded.info), written);
  return kExitOk;
}

}  // namespace

void register_quantize(CLI::App& app, Action& action) {
  auto o = std::make_shared<QuantizeCliOptions>();
  CLI::App* sub = app.add_subcommand("quantize", "Quantize a model to INT8 (dynamic or static)");
  sub->add_option("MODEL", o->model, "input model")->required();
  sub->add_option("-o,--output", o->output, "output model")->required();
  sub->add_option("--mode", o->mode, "dynamic | static | weight-only (MatMul weights in int4/int8 blocks, float arithmetic)")
      ->required();
  sub->add_option("--bits", o->bits, "weight-only: 4 (default) or 8 bits per weight");
  sub->add_option("--block-size", o->block_size, "weight-only: rows of a weight column that share a scale (default 32)");
  sub->add_option("--format", o->format,
                  "qdq (default) | qoperator (static: QLinearConv/QLinearMatMul) | matmulnbits (weight-only: "
                  "onnxruntime's com.microsoft MatMulNBits)");
  sub->add_option("--inputs", o->calib_data,
                  "folder of samples: one subfolder per sample, one .npy per input (or test_data_set_N of input_K.pb); "
                  "static: calibration; both modes: the per-node errors and --auto-exclude (formerly --calib-data)");
  add_old_name(sub, "--calib-data", o->old_calib_data);
  sub->add_option("--calib-method", o->calib_method, "minmax (default) | entropy | percentile");
  sub->add_option("--device", o->device, "run the calibration on cpu (default), vulkan or vulkan:N (not onnxruntime)");
  sub->add_option("--percentile", o->percentile, "percentile of |x| kept by --calib-method percentile (default 99.999)")
      ->check(number_in(0, 100, /*open_low=*/true));
  sub->add_option("--moving-average", o->moving_average, "minmax: moving-average constant in (0, 1] (default: off)")
      ->check(number_in(0, 1, /*open_low=*/true));
  sub->add_option("--calib-samples", o->calib_samples, "use at most N samples")->check(number_in(1, 1e9));
  // Per-channel is the default: the flag, hidden from help, stays accepted for old command lines.
  sub->add_flag("--per-channel", o->per_channel, "per-channel weight scales (the default)")->group("");
  sub->add_flag("--per-tensor", o->per_tensor, "one scale per weight tensor instead of per channel");
  sub->add_option("--weight-type", o->weight_type, "int8 (default) | uint8");
  sub->add_option("--activation-type", o->activation_type, "uint8 (default) | int8");
  sub->add_flag("--symmetric-activations", o->symmetric_activations, "activation ranges symmetric around 0");
  sub->add_flag("--reduce-range", o->reduce_range, "7-bit weights (for CPUs without VNNI)");
  sub->add_option("--op-types", o->op_types, "quantize only these op types")->delimiter(',');
  sub->add_option("--exclude-nodes", o->exclude_nodes, "keep these nodes in float")->delimiter(',');
  sub->add_option("--exclude-op-types", o->exclude_op_types, "keep these op types in float")->delimiter(',');
  sub->add_flag("--no-preprocess", o->no_preprocess, "do not run `optimize` first");
  sub->add_flag("--no-auto-exclude", o->no_auto_exclude,
                "quantize every supported node whatever the accuracy (the default keeps layers float until "
                "--accuracy-target is reached on the samples, or on random ones without --inputs)");
  sub->add_flag("--auto-exclude", o->auto_exclude,
                "require --accuracy-target: fail (exit 1) when no quantization reaches it; by default layers are "
                "kept float until it is reached and a model where nothing can be is written unchanged");
  sub->add_option("--error-samples", o->error_samples,
                  "how many --inputs samples measure the per-node errors and --auto-exclude (default 8)")
      ->check(number_in(1, 1e6));
  sub->add_option("--accuracy-target", o->accuracy_target,
                  "output cosine similarity to fp32 on the samples, or on random ones without --inputs (default 0.99)")
      ->check(number_in(0, 1, /*open_low=*/true));
  sub->add_option("--require-speedup", o->require_speedup,
                  "fail (exit 1, nothing written) when the estimated speed-up with integer kernels is below X")
      ->check(number_in(0, 1e6, /*open_low=*/true));
  sub->add_option("--accuracy-outputs", o->accuracy_outputs,
                  "the outputs --accuracy-target judges (default: every float output; e.g. not the training-only "
                  "feature maps some exports keep)")
      ->delimiter(',');
  sub->add_option("--seed", o->seed, "without --inputs: seed of the first random sample the accuracy is measured on (default 0)")
      ->check(number_in(0, kMaxSeed));
  add_input_range_option(sub, o->input_ranges);
  sub->add_option("--input-shape", o->input_shapes,
                  "NAME=D1,D2,... without --inputs: sizes of the random samples' symbolic dims (default: as verification "
                  "sizes them, 1, else 64 or 512)");
  sub->add_flag("--no-verify", o->no_verify,
                "without --inputs: quantize without measuring the accuracy on random samples (nothing then says "
                "how far the result departs from the float model)");
  sub->add_option("--time-limit", o->time_limit,
                  "seconds after which the accuracy search starts no further attempt: the best quantization that reached "
                  "--accuracy-target so far is written, else the model unchanged, saying so (default: no limit)")
      ->check(number_in(0, 1e9, /*open_low=*/true));
  sub->add_option("--report", o->report,
                  "per-node ranges and errors: JSON, markdown when FILE ends in .md, or an HTML page with charts when it ends in .html");
  sub->add_flag("--json", o->json, "print one JSON document");
  add_quiet_flag(sub);
  add_threads_flag(sub);
  sub->callback([&action, o, sub] {
    o->given = given_options(*sub);
    action = [o] {
      if (o->given.count("--calib-data")) {
        if (o->given.count("--inputs") && o->calib_data != o->old_calib_data)
          throw_usage_error("--calib-data and --inputs: two names of one flag, given two folders; give --inputs alone");
        o->calib_data = o->old_calib_data;
      }
      note_renamed("quantize", o->given, {{"--calib-data", "--inputs", ""}});
      return run_quantize(*o);
    };
  });
}

}  // namespace onnxtool::cli
