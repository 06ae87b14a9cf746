// `onnxtool quantize MODEL -o OUT --mode dynamic|static`: INT8 quantization.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <iostream>

#include "cli/common.h"
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
  std::string weight_type = "int8";
  std::string activation_type = "uint8";
  bool symmetric_activations = false;
  bool reduce_range = false;
  std::vector<std::string> op_types;
  std::vector<std::string> exclude_nodes;
  std::vector<std::string> exclude_op_types;
  bool no_preprocess = false;
  bool auto_exclude = false;
  double accuracy_target = 0.99;
  int error_samples = 8;
  std::string report;
  bool json = false;
};

quant::QuantType parse_type(const std::string& flag, const std::string& v) {
  if (v == "int8") return quant::QuantType::kInt8;
  if (v == "uint8") return quant::QuantType::kUInt8;
  throw_usage_error(flag + " must be int8 or uint8, not '" + v + "'");
}

/// The calibration sample folders: subfolders of DIR in name order (at most `limit` when > 0).
std::vector<std::string> sample_dirs(const std::string& dir, int limit) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw_usage_error("--calib-data " + dir + ": not a directory");
  std::vector<std::string> dirs;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.is_directory()) dirs.push_back(e.path().string());
  std::sort(dirs.begin(), dirs.end());
  if (dirs.empty()) throw_usage_error("--calib-data " + dir + ": no sample folders (one subfolder per sample, one .npy per input)");
  if (limit > 0 && static_cast<size_t>(limit) < dirs.size()) dirs.resize(static_cast<size_t>(limit));
  return dirs;
}

void write_report(const std::string& path, const quant::QuantizeReport& r, const nlohmann::json& doc) {
  const bool markdown = path.size() > 3 && path.substr(path.size() - 3) == ".md";
  std::ostringstream out;
  {
    if (!markdown) {
      out << doc.dump(2) << "\n";
    } else {
      out << "# onnxtool quantize report\n\n";
      out << "Quantized nodes: " << r.quantized_nodes << "; weights " << r.float_weight_bytes << " -> "
          << r.quantized_weight_bytes << " bytes; calibration samples: " << r.samples << " (NaN " << r.nan_values
          << ", Inf " << r.inf_values << ").\n\n";
      if (r.output_cosine >= 0)
        out << "Output cosine similarity to fp32 (lowest over the outputs, " << r.error_samples
            << " calibration samples): " << r.output_cosine << ".\n\n";
      if (!r.auto_excluded.empty()) {
        out << "Kept in float by --auto-exclude:\n\n";
        for (const auto& e : r.auto_excluded) out << "- " << e << "\n";
        out << "\n";
      }
      out << "SQNR and cosine compare each quantized tensor with fp32 (the error accumulated up to it); "
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
  ir::write_file(path, out.str(), "--report " + path);
}

int run_quantize(const QuantizeCliOptions& o) {
  if (o.mode != "dynamic" && o.mode != "static") throw_usage_error("--mode must be dynamic or static");
  if (o.format != "qdq" && o.format != "qoperator") throw_usage_error("--format must be qdq or qoperator");
  if (ir::same_file(o.model, o.output)) throw_usage_error(o.output + ": is the input model itself; choose another output");
  quant::QuantizeOptions q;
  q.mode = o.mode == "static" ? quant::Mode::kStatic : quant::Mode::kDynamic;
  q.format = o.format == "qoperator" ? quant::Format::kQOperator : quant::Format::kQdq;
  if (o.calib_method == "minmax") q.calibration.method = quant::CalibrationMethod::kMinMax;
  else if (o.calib_method == "entropy") q.calibration.method = quant::CalibrationMethod::kEntropy;
  else if (o.calib_method == "percentile") q.calibration.method = quant::CalibrationMethod::kPercentile;
  else throw_usage_error("--calib-method must be minmax, entropy or percentile");
  if (!(o.percentile > 0 && o.percentile <= 100)) throw_usage_error("--percentile must be in (0, 100]");
  q.calibration.percentile = o.percentile;
  q.calibration.moving_average = o.moving_average;
  q.calibration.device = runner::DeviceSpec::parse(o.device);
  q.per_channel = o.per_channel;
  q.weight_type = parse_type("--weight-type", o.weight_type);
  q.activation_type = parse_type("--activation-type", o.activation_type);
  q.symmetric_activations = o.symmetric_activations;
  q.reduce_range = o.reduce_range;
  q.op_types = o.op_types;
  q.exclude_nodes = o.exclude_nodes;
  q.exclude_op_types = o.exclude_op_types;
  if (o.auto_exclude && o.calib_data.empty())
    throw_usage_error("--auto-exclude needs --calib-data DIR (the samples the accuracy is measured on)");
  if (!(o.accuracy_target > 0 && o.accuracy_target <= 1)) throw_usage_error("--accuracy-target must be in (0, 1]");
  q.auto_exclude = o.auto_exclude;
  q.accuracy_target = o.accuracy_target;
  if (o.error_samples < 1) throw_usage_error("--error-samples must be at least 1");
  q.error_samples = o.error_samples;
  if (q.mode == quant::Mode::kStatic && o.calib_data.empty()) throw_usage_error("--mode static needs --calib-data DIR");
  const auto samples = o.calib_data.empty() ? std::vector<std::string>{} : sample_dirs(o.calib_data, o.calib_samples);

  auto loaded = ir::load_model(o.model);
  refuse_unrunnable(loaded.model, o.model);
  ir::check_output_paths(loaded.info, o.output, "", /*in_place=*/false);
  if (!o.report.empty()) ir::check_not_input(loaded.info, o.report, "--report " + o.report);
  const bool bar = isatty(STDERR_FILENO) && !o.json;
  size_t read = 0;
  const quant::QuantizeReport report =
      quant::quantize_model(loaded.model, q, !o.no_preprocess, samples, [&](size_t n, size_t total) {
        read = n;
        if (bar) std::cerr << "\rreading samples " << n << "/" << total << std::flush;
      });
  if (bar && read) std::cerr << "\n";
  if (report.quantized_nodes == 0) throw Error(ErrorKind::kFailed, o.model + ": no node was quantized (no " +
                                                                     std::string(q.mode == quant::Mode::kStatic ? "supported op with calibrated float inputs" : "MatMul, Gemm or Conv with a constant float weight") + ")");
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : report.nodes)
    nodes.push_back({{"node", n.node}, {"op_type", n.op_type}, {"tensor", n.tensor}, {"min", n.range_min}, {"max", n.range_max},
                     {"scale", n.scale}, {"zero_point", n.zero_point}, {"sqnr_db", n.sqnr_db}, {"cosine", n.cosine},
                     {"added_noise_db", n.added_noise_db}});
  const ir::SaveReport saved = ir::save_model(loaded.model, o.output);
  nlohmann::json doc = {{"output", o.output},
                        {"mode", o.mode},
                        {"format", o.format},
                        {"quantized_nodes", report.quantized_nodes},
                        {"weight_bytes", {{"float", report.float_weight_bytes}, {"quantized", report.quantized_weight_bytes}}},
                        {"file_bytes", {{"before", loaded.info.file_size}, {"after", saved.model_bytes + saved.data_bytes}}},
                        {"calibration", {{"samples", report.samples}, {"nan", report.nan_values}, {"inf", report.inf_values}}},
                        {"opset", report.opset_to ? nlohmann::json{{"from", report.opset_from}, {"to", report.opset_to}}
                                                  : nlohmann::json(nullptr)},
                        {"output_cosine", report.output_cosine < 0 ? nlohmann::json(nullptr) : nlohmann::json(report.output_cosine)},
                        {"error_samples", report.error_samples},
                        {"auto_excluded", report.auto_excluded},
                        {"nodes", nodes}};
  if (!o.report.empty()) write_report(o.report, report, doc);
  if (o.json) {
    print_json(doc);
    return kExitOk;
  }
  std::cout << "quantized " << report.quantized_nodes << " nodes (" << o.mode << ", " << o.format << ")";
  if (report.float_weight_bytes)
    std::cout << "; weights " << human_bytes(static_cast<uint64_t>(report.float_weight_bytes)) << " -> "
              << human_bytes(static_cast<uint64_t>(report.quantized_weight_bytes)) << " ("
              << static_cast<double>(report.quantized_weight_bytes) / static_cast<double>(report.float_weight_bytes) << "x)";
  std::cout << "\n";
  if (report.opset_to) std::cout << "moved the model from opset " << report.opset_from << " to " << report.opset_to << "\n";
  if (report.output_cosine >= 0)
    std::cout << "output cosine similarity to fp32 on " << report.error_samples << " calibration samples: " << report.output_cosine
              << "\n";
  if (!report.auto_excluded.empty()) {
    std::cout << "kept in float by --auto-exclude (" << report.auto_excluded.size() << "):";
    for (const auto& e : report.auto_excluded) std::cout << " " << e << ";";
    std::cout << "\n";
  }
  if (report.samples && q.mode == quant::Mode::kDynamic)
    std::cout << "measured on " << report.samples << " samples\n";
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
  sub->add_option("--mode", o->mode, "dynamic|static")->required();
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
  sub->add_flag("--per-channel", o->per_channel, "per-channel weight scales");
  sub->add_option("--weight-type", o->weight_type, "int8 (default) | uint8");
  sub->add_option("--activation-type", o->activation_type, "uint8 (default) | int8");
  sub->add_flag("--symmetric-activations", o->symmetric_activations, "activation ranges symmetric around 0");
  sub->add_flag("--reduce-range", o->reduce_range, "7-bit weights (for CPUs without VNNI)");
  sub->add_option("--op-types", o->op_types, "quantize only these op types")->delimiter(',');
  sub->add_option("--exclude-nodes", o->exclude_nodes, "keep these nodes in float")->delimiter(',');
  sub->add_option("--exclude-op-types", o->exclude_op_types, "keep these op types in float")->delimiter(',');
  sub->add_flag("--no-preprocess", o->no_preprocess, "do not run `optimize` first");
  sub->add_flag("--auto-exclude", o->auto_exclude,
                "keep the most harmful layers in float until --accuracy-target is reached (needs --calib-data)");
  sub->add_option("--error-samples", o->error_samples,
                  "how many --calib-data samples measure the per-node errors and --auto-exclude (default 8)")
      ->check(number_in(1, 1e6));
  sub->add_option("--accuracy-target", o->accuracy_target,
                  "output cosine similarity to fp32 on the calibration samples (default 0.99)")
      ->check(number_in(0, 1, /*open_low=*/true));
  sub->add_option("--report", o->report, "per-node ranges and errors: JSON, or markdown when FILE ends in .md");
  sub->add_flag("--json", o->json, "print one JSON document");
  sub->callback([&action, o] { action = [o] { return run_quantize(*o); }; });
}

}  // namespace onnxtool::cli
