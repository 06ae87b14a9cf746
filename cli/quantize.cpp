// `onnxtool quantize MODEL -o OUT --mode dynamic|static`: INT8 quantization.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <set>

#include "cli/common.h"
#include "cli/progress.h"
#include "cli/verify.h"
#include "cli/write_model.h"
#include "ir/command_files.h"
#include "ir/error.h"
#include "ir/model_io.h"
#include "ir/output_file.h"
#include "quant/quantize.h"

namespace onnxtool::cli {
namespace {

struct QuantizeCliOptions {
  std::string model;
  std::string output;
  std::string mode;
  std::string format = "qdq";
  std::string calib_data;
  std::string calib_method = "minmax";
  std::string device = "cpu";
  double percentile = 99.999;
  double moving_average = 0;
  int calib_samples = 0;
  bool per_channel = false;
  bool per_tensor = false;
  std::string weight_type = "int8";
  std::string activation_type = "uint8";
  bool symmetric_activations = false;
  bool reduce_range = false;
  std::vector<std::string> op_types;
  std::vector<std::string> exclude_nodes;
  std::vector<std::string> exclude_op_types;
  bool no_preprocess = false;
  bool auto_exclude = false;
  bool no_auto_exclude = false;
  double accuracy_target = 0.99;
  std::vector<std::string> accuracy_outputs;
  int error_samples = 8;
  double time_limit = 0;  ///< seconds the accuracy search may take (0: no limit)
  bool no_verify = false;  ///< without --calib-data: quantize unmeasured
  uint64_t seed = 0;                      ///< of the random samples (no --calib-data)
  std::vector<std::string> input_ranges;  ///< of the random samples
  int bits = 4;
  int64_t block_size = 32;
  double require_speedup = 0;
  std::string report;
  bool json = false;
  std::set<std::string> given;  ///< the options on the command line
};

quant::QuantType parse_type(const std::string& flag, const std::string& v) {
  if (v == "int8") return quant::QuantType::kInt8;
  if (v == "uint8") return quant::QuantType::kUInt8;
  throw_usage_error(flag + " must be int8 or uint8, not '" + v + "'");
}

/// A score or factor for a message: 8 significant digits (a cosine of 0.99999996 is not 1).
std::string number(double v) {
  std::ostringstream out;
  out << std::setprecision(8) << v;
  return out.str();
}

/// Why the model is written unchanged, in words naming the options that change the outcome.
std::string unchanged_text(const quant::QuantizeReport& r, const QuantizeCliOptions& o) {
  auto figure = [](double v, int digits = 6) {
    std::ostringstream out;
    out << std::setprecision(digits) << v;
    return out.str();
  };
  switch (r.unchanged) {
    case quant::Unchanged::kNo: return "";
    case quant::Unchanged::kLargerThanHalf:
      return "the float16 model's weights (" + std::to_string(r.half_weight_bytes) + " bytes) are smaller than the result's (" +
             std::to_string(r.result_weight_bytes) + " bytes: what stays float is float32)";
    case quant::Unchanged::kSlowerEstimate:
      return "the estimated speed-up with integer kernels, " + figure(r.estimated_speedup, 3) + "x, is below " +
             figure(quant::kWorthSpeedup) + "x: within the estimate's error, not worth the quantization's (--op-types forces it)";
    case quant::Unchanged::kTimedOut:
    case quant::Unchanged::kMissedTarget: {
      std::string why = r.timed_out_after ? "the time limit ran out after " + std::to_string(r.timed_out_after) +
                                                " attempts of the accuracy search, before a quantization reached --accuracy-target " +
                                                figure(o.accuracy_target)
                                          : "no quantization reaches --accuracy-target " + figure(o.accuracy_target);
      if (r.missed_target >= 0) why += " (the best with a node quantized: " + figure(r.missed_target) + ")";
      if (r.blocking_outputs.empty()) return why;
      std::string scores, others;
      for (const auto& [name, score] : r.blocking_outputs) scores += (scores.empty() ? "" : ", ") + name + " " + figure(score);
      for (const auto& name : r.reaching_outputs) others += (others.empty() ? "" : ",") + name;
      return why + "; with every layer quantized, outputs " + scores + " miss it where " + others +
             " reach it: if the model is used for " + others + " only, judge just those with --accuracy-outputs " + others;
    }
    case quant::Unchanged::kAllKeptFloat:
      return "every candidate stays float (" + std::to_string(r.kept_float.size()) + " nodes; --report lists why)";
    case quant::Unchanged::kNoCandidate:
      return o.mode == "static"        ? "no supported op with calibrated float inputs"
             : o.mode == "weight-only" ? "no MatMul with a constant 2-D float weight"
                                       : "no MatMul or Gemm with a constant float weight (Conv only with --op-types Conv)";
  }
  return "";
}

/// Why a node stays float, the options that decide it named as flags.
std::string float_reason(const quant::FloatNode& f) {
  return f.options.empty() ? f.reason : f.reason + " (" + flags_for("quantize", f.options) + ")";
}

nlohmann::json kept_float_json(const quant::QuantizeReport& r) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& f : r.kept_float)
    list.push_back({{"node", f.node}, {"op_type", f.op_type}, {"tensor", f.tensor}, {"reason", float_reason(f)}});
  return list;
}

/// The nodes kept float, grouped by reason (one line per reason, a few node names each).
void print_kept_float(const quant::QuantizeReport& r) {
  if (r.kept_float.empty()) return;
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (const auto& f : r.kept_float) {
    const std::string reason = float_reason(f);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == reason; });
    if (it == groups.end()) it = groups.insert(groups.end(), {reason, {}});
    it->second.push_back(f.node.empty() ? f.tensor : f.node);
  }
  std::cout << "kept float: " << r.kept_float.size() << " nodes\n";
  for (const auto& [reason, names] : groups) {
    std::cout << "  " << names.size() << " (";
    for (size_t i = 0; i < names.size() && i < 3; ++i) std::cout << (i ? ", " : "") << names[i];
    if (names.size() > 3) std::cout << ", ...";
    std::cout << "): " << reason << "\n";
  }
}

/// The report into `file`, opened before the model was written: a report that cannot be
/// written (a directory, a missing folder, a file the command read) stops the command before
/// the model replaces anything.
void write_report(ir::OutputFile& file, const std::string& path, const quant::QuantizeReport& r, const nlohmann::json& doc) {
  const bool markdown = path.size() > 3 && path.substr(path.size() - 3) == ".md";
  std::ostringstream out;
  {
    if (!markdown) {
      out << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      out << "# onnxtool quantize report\n\n";
      out << "Quantized nodes: " << r.quantized_nodes << "; weights " << r.float_weight_bytes << " -> "
          << r.quantized_weight_bytes << " bytes; calibration samples: " << r.samples << " (NaN " << r.nan_values
          << ", Inf " << r.inf_values << ").\n\n";
      if (r.output_cosine >= 0)
        out << "Output cosine similarity to the reference (" << r.reference << "; lowest over the outputs, " << r.error_samples
            << " calibration samples): " << r.output_cosine << ".\n\n";
      if (!r.auto_excluded.empty()) {
        out << "Kept in float by --auto-exclude:\n\n";
        for (const auto& e : r.auto_excluded) out << "- " << e << "\n";
        out << "\n";
      }
      if (!r.kept_float.empty()) {
        out << "Nodes left float, and why:\n\n| node | op | output | reason |\n| --- | --- | --- | --- |\n";
        for (const auto& f : r.kept_float) out << "| " << f.node << " | " << f.op_type << " | " << f.tensor << " | " << float_reason(f) << " |\n";
        out << "\n";
      }
      out << "SQNR and cosine compare each quantized tensor with the reference (the error accumulated up to it); "
             "added noise is the noise-to-signal ratio it adds to that of the quantized tensors feeding it.\n\n";
      out << "| node | op | tensor | min | max | scale | zero point | SQNR (dB) | cosine | added noise (dB) |\n"
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
      for (const auto& n : r.nodes)
        out << "| " << n.node << " | " << n.op_type << " | " << n.tensor << " | " << n.range_min << " | " << n.range_max
            << " | " << n.scale << " | " << n.zero_point << " | " << n.sqnr_db << " | " << n.cosine << " | " << n.added_noise_db
            << " |\n";
    }
  }
  // Through the safe writer: no fixed temporary name to plant a symlink at, a full disk is an
  // error, and nothing is replaced until the whole report is written.
  file.write(out.str());
  file.commit();
}

/// Flags the mode or the other flags would leave unused: refused (exit 2, one line), as convert
/// refuses --keep-io-types without --to-fp16, rather than quietly doing something else than asked.
void refuse_ignored_flags(const QuantizeCliOptions& o) {
  // The modes using each flag: dynamic mode quantizes activations at run time (nothing to
  // calibrate, always uint8 asymmetric, MatMulInteger rather than QDQ or QLinear ops), and
  // weight-only mode keeps activations float and weights in int4/int8 blocks of its own.
  enum : unsigned { kDynamic = 1, kStatic = 2, kWeightOnly = 4 };
  static const std::pair<const char*, unsigned> kModeFlags[] = {
      {"--format", kStatic},           {"--calib-method", kStatic},
      {"--percentile", kStatic},       {"--moving-average", kStatic},
      {"--device", kStatic},           {"--activation-type", kStatic},
      {"--symmetric-activations", kStatic},
      {"--weight-type", kDynamic | kStatic},     {"--per-channel", kDynamic | kStatic},
      {"--per-tensor", kDynamic | kStatic},      {"--reduce-range", kDynamic | kStatic},
      {"--accuracy-target", kDynamic | kStatic}, {"--no-auto-exclude", kDynamic | kStatic},
      {"--bits", kWeightOnly},         {"--block-size", kWeightOnly},
  };
  const unsigned mode = o.mode == "dynamic" ? kDynamic : o.mode == "static" ? kStatic : kWeightOnly;
  for (const auto& [flag, modes] : kModeFlags) {
    if (!o.given.count(flag) || (modes & mode)) continue;
    const char* used_in = modes == kStatic ? "static" : modes == kWeightOnly ? "weight-only" : "dynamic or static";
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
  if (o.mode != "static" && o.calib_data.empty()) {
    const std::string named = given_list(o.given, {"--calib-samples", "--error-samples"});
    if (!named.empty()) throw_usage_error(named + ": without --calib-data the accuracy is measured on " +
                                          std::to_string(quant::QuantizeOptions{}.random_samples) + " random samples");
  }
  if (!o.calib_data.empty() || o.mode == "static") {
    const std::string named = given_list(o.given, {"--seed", "--input-range", "--no-verify"});
    if (!named.empty()) throw_usage_error(named + ": for the random samples dynamic and weight-only modes are measured on without --calib-data");
  }
  if (o.no_verify) {
    const std::string named = given_list(o.given, {"--seed", "--input-range", "--accuracy-target", "--accuracy-outputs",
                                                   "--auto-exclude", "--no-auto-exclude", "--time-limit"});
    if (!named.empty()) throw_usage_error(named + ": they choose how the accuracy is measured; --no-verify measures nothing");
  }
}

int run_quantize(const QuantizeCliOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  if (o.mode != "dynamic" && o.mode != "static" && o.mode != "weight-only")
    throw_usage_error("--mode must be dynamic, static or weight-only");
  refuse_ignored_flags(o);
  if (o.format != "qdq" && o.format != "qoperator") throw_usage_error("--format must be qdq or qoperator");
  if (ir::same_file(o.model, o.output)) throw_usage_error(o.output + ": is the input model itself; choose another output");
  quant::QuantizeOptions q;
  q.mode = o.mode == "static" ? quant::Mode::kStatic : o.mode == "weight-only" ? quant::Mode::kWeightOnly : quant::Mode::kDynamic;
  q.bits = o.bits;
  q.block_size = o.block_size;
  q.format = o.format == "qoperator" ? quant::Format::kQOperator : quant::Format::kQdq;
  if (o.calib_method == "minmax") q.calibration.method = quant::CalibrationMethod::kMinMax;
  else if (o.calib_method == "entropy") q.calibration.method = quant::CalibrationMethod::kEntropy;
  else if (o.calib_method == "percentile") q.calibration.method = quant::CalibrationMethod::kPercentile;
  else throw_usage_error("--calib-method must be minmax, entropy or percentile");
  if (!(o.percentile > 0 && o.percentile <= 100)) throw_usage_error("--percentile must be in (0, 100]");
  q.calibration.percentile = o.percentile;
  q.calibration.moving_average = o.moving_average;
  q.calibration.device = runner::DeviceSpec::parse(o.device);
  if (o.per_channel && o.per_tensor) throw_usage_error("--per-channel and --per-tensor exclude each other");
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
  q.accuracy_outputs = o.accuracy_outputs;
  q.accuracy_target = o.accuracy_target;
  if (o.error_samples < 1) throw_usage_error("--error-samples must be at least 1");
  q.error_samples = o.error_samples;
  if (q.mode == quant::Mode::kStatic && o.calib_data.empty()) throw_usage_error("--mode static needs --calib-data DIR");
  const auto samples = o.calib_data.empty() ? std::vector<std::string>{} : sample_dirs("--calib-data", o.calib_data, o.calib_samples);

  auto loaded = ir::load_model(o.model);
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
  q.progress = progress();
  quant::QuantizeReport report = quant::quantize_model(loaded.model, q, !o.no_preprocess, samples);
  // Nothing worth quantizing: refused when asked for explicitly (--auto-exclude), otherwise the
  // model is written as it came (quantize_model gave it back), with the reason.
  const std::string unchanged = unchanged_text(report, o);
  if (!unchanged.empty() && o.auto_exclude) throw Error(ErrorKind::kFailed, o.model + ": --auto-exclude: " + unchanged);
  // --require-speedup: a CI gate on the estimate, checked before anything is written.
  if (o.require_speedup > 0) {
    const double estimate = unchanged.empty() ? report.estimated_speedup : 1.0;
    if (estimate < 0)
      throw Error(ErrorKind::kFailed, o.model + ": --require-speedup: no speed-up estimate (it needs --calib-data, or static shapes)");
    if (estimate < o.require_speedup)
      throw Error(ErrorKind::kFailed, o.model + ": --require-speedup " + number(o.require_speedup) + ": the estimated speed-up is " +
                                          number(estimate) + "x" + (unchanged.empty() ? "" : " (nothing quantized: " + unchanged + ")"));
  }
  auto optional = [](double v) { return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v); };
  nlohmann::json outputs = nlohmann::json::array();
  // A small output's relative error r = |a - b| / |a| (norms over the samples) as an SQNR, the
  // metric compare and optimize report too: -20 log10 r.
  auto sqnr = [&](double rel) { return rel < 0 ? nlohmann::json(nullptr) : json_number(-20 * std::log10(rel)); };
  for (const auto& e : report.outputs)
    outputs.push_back({{"name", e.name}, {"cosine", optional(e.cosine)}, {"sqnr_db", sqnr(e.rel_error)}});
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : report.groups)
    groups.push_back({{"nodes", g.nodes}, {"int8_macs", g.int8_macs}, {"border_elements", g.border_elements},
                      {"border_nodes", g.border_nodes}, {"slow_convs", g.slow_convs},
                      {"gain", report.float_cost > 0 ? g.gain / report.float_cost : 0.0}});
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : report.nodes)
    nodes.push_back({{"node", n.node}, {"op_type", n.op_type}, {"tensor", n.tensor}, {"min", n.range_min}, {"max", n.range_max},
                     {"scale", n.scale}, {"zero_point", n.zero_point}, {"sqnr_db", n.sqnr_db}, {"cosine", n.cosine},
                     {"added_noise_db", n.added_noise_db}});
  std::unique_ptr<ir::OutputFile> report_file;
  if (!o.report.empty()) report_file = std::make_unique<ir::OutputFile>(o.report, "--report " + o.report);
  WrittenModel written = write_model(loaded.model, o.output);
  if (!unchanged.empty()) written.sorted_nodes += sorted_on_load;  // the file's order, sorted on loading
  const ir::SaveReport& saved = written.saved;
  nlohmann::json doc = {{"output", o.output},
                        {"mode", o.mode},
                        {"format", o.format},
                        {"reference", report.reference},
                        {"quantized_nodes", report.quantized_nodes},
                        {"changed", unchanged.empty()},
                        {"unchanged", unchanged.empty() ? nlohmann::json(nullptr) : nlohmann::json(unchanged)},
                        {"timed_out_after_attempts", report.timed_out_after},
                        {"weight_bytes", {{"float", report.float_weight_bytes}, {"quantized", report.quantized_weight_bytes}}},
                        {"file_bytes", {{"before", loaded.info.file_size}, {"after", saved.model_bytes + saved.data_bytes}}},
                        {"written", written_json(written)},
                        {"calibration", {{"samples", report.samples}, {"nan", report.nan_values}, {"inf", report.inf_values},
                                         {"method", o.calib_method}, {"fell_back_to_minmax", report.calibration_fallback},
                                         {"method_score", optional(report.calibration_scores.first)},
                                         {"minmax_score", optional(report.calibration_scores.second)}}},
                        {"opset", report.opset_to ? nlohmann::json{{"from", report.opset_from}, {"to", report.opset_to}}
                                                  : nlohmann::json(nullptr)},
                        {"cosine", optional(report.output_cosine)},
                        {"sqnr_db", sqnr(report.output_rel_error)},
                        {"error_samples", report.error_samples},
                        {"random_samples", report.random_samples.empty() ? nlohmann::json(nullptr) : nlohmann::json(report.random_samples)},
                        {"note", report.random_samples.empty() ? nlohmann::json(nullptr) : nlohmann::json(random_inputs_note("--calib-data DIR"))},
                        {"auto_excluded", report.auto_excluded},
                        {"aimed_target", optional(report.aimed_target)},
                        {"kept_float", kept_float_json(report)},
                        {"outputs", outputs},
                        {"estimated_speedup", optional(unchanged.empty() ? report.estimated_speedup : -1)},
                        {"groups", groups},
                        {"nodes", nodes}};
  if (report_file) write_report(*report_file, o.report, report, doc);
  if (o.json) {
    print_json(doc);
    return kExitOk;
  }
  if (!unchanged.empty()) {
    std::cout << "nothing quantized: " << unchanged << "\n";
    warning("quantize", o.output + " is written unchanged: " + unchanged);
    print_kept_float(report);
    if (const std::string sorted = sorted_line(written); !sorted.empty()) std::cout << sorted << "\n";
    std::cout << "wrote " << o.output << " unchanged\n";
    return kExitOk;
  }
  std::cout << "quantized " << report.quantized_nodes << " nodes (" << o.mode << ", " << o.format << ")";
  if (report.float_weight_bytes)
    std::cout << "; weights " << human_bytes(static_cast<uint64_t>(report.float_weight_bytes)) << " -> "
              << human_bytes(static_cast<uint64_t>(report.quantized_weight_bytes)) << " ("
              << static_cast<double>(report.quantized_weight_bytes) / static_cast<double>(report.float_weight_bytes) << "x)";
  std::cout << "\n";
  if (report.opset_to) std::cout << "moved the model from opset " << report.opset_from << " to " << report.opset_to << "\n";
  const std::string measured_on = std::to_string(report.error_samples) +
                                  (report.random_samples.empty() ? " calibration samples" : " samples, " + report.random_samples);
  if (report.output_cosine >= 0)
    std::cout << "output cosine similarity to " << report.reference << " on " << measured_on << ": " << report.output_cosine
              << " (--accuracy-target " << q.accuracy_target << ")\n";
  if (report.output_rel_error >= 0)
    std::cout << "largest relative error of a small output (at most " << quant::kSmallOutput << " elements): " << report.output_rel_error
              << "\n";
  if (const double score = report.output_score(); report.aimed_target > 0 && score >= 0 && score < report.aimed_target)
    std::cout << "reached --accuracy-target " << q.accuracy_target << " but not the " << report.aimed_target
              << " aimed at beyond it with any layers kept float: new inputs may score below the target\n";
  print_kept_float(report);
  if (report.calibration_fallback)
    std::cout << "--calib-method " << o.calib_method << " ranges scored " << report.calibration_scores.first
              << " against the extremes' " << report.calibration_scores.second << ": used minmax ranges instead\n";
  if (unchanged.empty() && report.estimated_speedup >= 0)
    std::cout << "estimated speed-up with integer kernels (onnxruntime CPU): " << std::setprecision(3) << report.estimated_speedup
              << "x over " << report.groups.size() << " quantized group" << (report.groups.size() == 1 ? "" : "s") << "\n"
              << std::setprecision(6);
  if (!report.random_samples.empty())
    std::cout << "measured on " << report.samples << " samples, " << report.random_samples << "\nnote: " << random_inputs_note("--calib-data DIR")
              << "\n";
  else if (report.samples && q.mode != quant::Mode::kStatic)
    std::cout << "measured on " << report.samples << " samples\n";
  else if (o.no_verify)
    std::cout << "accuracy not measured (--no-verify): nothing says how far the result departs from the float model\n";
  else if (report.samples)
    std::cout << "calibrated on " << report.samples << " samples" << (report.nan_values || report.inf_values
                                                                          ? " (ignored " + std::to_string(report.nan_values) + " NaN, " +
                                                                                std::to_string(report.inf_values) + " Inf values)"
                                                                          : std::string())
              << "\n";
  std::cout << "file " << human_bytes(loaded.info.file_size) << " -> " << human_bytes(saved.model_bytes + saved.data_bytes)
            << "\nwrote " << o.output << "\n";
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
  sub->add_option("--format", o->format, "qdq (default) | qoperator");
  sub->add_option("--calib-data", o->calib_data,
                  "folder of samples: one subfolder per sample, one .npy per input (or test_data_set_N of input_K.pb); "
                  "static: calibration; both modes: the per-node errors and --auto-exclude");
  sub->add_option("--calib-method", o->calib_method, "minmax (default) | entropy | percentile");
  sub->add_option("--device", o->device, "run the calibration on cpu (default), vulkan or vulkan:N");
  sub->add_option("--percentile", o->percentile, "percentile of |x| kept by --calib-method percentile (default 99.999)")
      ->check(number_in(0, 100, /*open_low=*/true));
  sub->add_option("--moving-average", o->moving_average, "minmax: moving-average constant in (0, 1] (default: off)")
      ->check(number_in(0, 1, /*open_low=*/true));
  sub->add_option("--calib-samples", o->calib_samples, "use at most N samples")->check(number_in(1, 1e9));
  sub->add_flag("--per-channel", o->per_channel, "per-channel weight scales (the default)");
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
                "--accuracy-target is reached on the samples, or on random ones without --calib-data)");
  sub->add_flag("--auto-exclude", o->auto_exclude,
                "require --accuracy-target: fail (exit 1) when no quantization reaches it; by default layers are "
                "kept float until it is reached and a model where nothing can be is written unchanged");
  sub->add_option("--error-samples", o->error_samples,
                  "how many --calib-data samples measure the per-node errors and --auto-exclude (default 8)")
      ->check(number_in(1, 1e6));
  sub->add_option("--accuracy-target", o->accuracy_target,
                  "output cosine similarity to fp32 on the samples, or on random ones without --calib-data (default 0.99)")
      ->check(number_in(0, 1, /*open_low=*/true));
  sub->add_option("--require-speedup", o->require_speedup,
                  "fail (exit 1, nothing written) when the estimated speed-up with integer kernels is below X")
      ->check(number_in(0, 1e6, /*open_low=*/true));
  sub->add_option("--accuracy-outputs", o->accuracy_outputs,
                  "the outputs --accuracy-target judges (default: every float output; e.g. not the training-only "
                  "feature maps some exports keep)")
      ->delimiter(',');
  sub->add_option("--seed", o->seed, "without --calib-data: seed of the first random sample the accuracy is measured on (default 0)")
      ->check(number_in(0, kMaxSeed));
  add_input_range_option(sub, o->input_ranges);
  sub->add_flag("--no-verify", o->no_verify,
                "without --calib-data: quantize without measuring the accuracy on random samples (nothing then says "
                "how far the result departs from the float model)");
  sub->add_option("--time-limit", o->time_limit,
                  "seconds after which the accuracy search starts no further attempt: the best quantization that reached "
                  "--accuracy-target so far is written, else the model unchanged, saying so (default: no limit)")
      ->check(number_in(0, 1e9, /*open_low=*/true));
  sub->add_option("--report", o->report, "per-node ranges and errors: JSON, or markdown when FILE ends in .md");
  sub->add_flag("--json", o->json, "print one JSON document");
  add_quiet_flag(sub);
  add_threads_flag(sub);
  sub->callback([&action, o, sub] {
    o->given = given_options(*sub);
    action = [o] { return run_quantize(*o); };
  });
}

}  // namespace onnxtool::cli
