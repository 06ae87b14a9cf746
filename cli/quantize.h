// `onnxtool quantize`: its options, and the report of a quantization (quantize_report.cpp).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/write_model.h"
#include "ir/output_file.h"
#include "quant/quantize.h"

namespace onnxtool::cli {

struct QuantizeCliOptions {
  std::string model;
  std::string output;
  std::string mode;
  std::string format = "qdq";
  std::string calib_data;      ///< --inputs: the folder of samples
  std::string old_calib_data;  ///< --calib-data, its former name
  std::vector<std::string> input_shapes;  ///< --input-shape: dims of the random samples
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
  bool no_verify = false;  ///< without --inputs: quantize unmeasured
  uint64_t seed = 0;                      ///< of the random samples (no --inputs)
  std::vector<std::string> input_ranges;  ///< of the random samples
  int bits = 4;
  int64_t block_size = 32;
  double require_speedup = 0;
  std::string report;
  bool json = false;
  std::set<std::string> given;  ///< the options on the command line
};


/// Why the model is written unchanged, in words naming the options that change the outcome; ""
/// when it was quantized.
std::string unchanged_text(const quant::QuantizeReport& r, const QuantizeCliOptions& o);

/// The --json document, which --report FILE writes too. `unchanged`: unchanged_text's;
/// `file_bytes`: the input's size.
nlohmann::json quantize_json(const QuantizeCliOptions& o, const quant::QuantizeReport& report, const std::string& unchanged,
                             uint64_t file_bytes, const WrittenModel& written);

/// The report into `file`, opened before the model was written: a report that cannot be
/// written (a directory, a missing folder, a file the command read) stops the command before
/// the model replaces anything. JSON (`doc`), markdown when `path` ends in .md, or an HTML page
/// of `doc` with charts when it ends in .html, its nodes ordered by `graph_order` (node name ->
/// position in the quantized model).
void write_report(ir::OutputFile& file, const std::string& path, const quant::QuantizeReport& r, const nlohmann::json& doc,
                  const std::map<std::string, size_t>& graph_order);

/// The text report: what was quantized (or why nothing was), the accuracy and what measured it,
/// the nodes kept float.
void print_quantized(const QuantizeCliOptions& o, const quant::QuantizeReport& report, const std::string& unchanged,
                     uint64_t file_bytes, const WrittenModel& written);

}  // namespace onnxtool::cli
