// `onnxtool convert`: its options, and the report of a conversion (convert_report.cpp).
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/verify.h"
#include "cli/write_model.h"
#include "verify/convert.h"

namespace onnxtool::cli {

struct ConvertOptions {
  std::string model;
  std::string output;
  bool external_data = false;
  uint64_t size_threshold = 1024;
  std::string data_file;
  bool inline_external = false;
  bool in_place = false;
  bool json = false;
  int opset = 0;
  bool to_fp16 = false;
  bool to_fp32 = false;
  bool keep_io_types = false;
  bool no_preprocess = false;
  bool allow_runtime_bugs = false;
  std::vector<std::string> block_ops;
  bool infer_shapes = false;
  std::vector<std::string> input_shapes;
  VerifyFlags check;
  std::set<std::string> given;  ///< the options on the command line
};

/// Refuses (Error kFailed, nothing written) a result that failed verification, saying what
/// would bring float16 within tolerance.
void refuse_unverified(const ConvertOptions& o, const verify::ConvertResult& c);

/// The report, --json or text, after the warning that float16 was verified on random inputs only.
void print_converted(const ConvertOptions& o, const verify::ConvertRequest& request, const verify::ConvertResult& c,
                     const WrittenModel& written);

}  // namespace onnxtool::cli
