// convert's report: what the conversion changed, kept in float32, and how it was verified.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli/common.h"
#include "cli/convert.h"
#include "cli/printers.h"
#include "cli/progress.h"

namespace onnxtool::cli {
namespace {

/// "the largest float16 value on the verification inputs is 6.1 (at 'y'), 10700x below float16's
/// largest, 65504".
std::string headroom_line(const verify::GuidedFp16& g) {
  std::ostringstream s;
  s << "the largest value converted to float16 on the verification inputs is " << std::setprecision(3) << g.largest_magnitude;
  if (!g.largest_value.empty()) s << " (at '" << g.largest_value << "')";
  if (g.largest_magnitude > 0) s << ", " << ratio_text(convert::kFloat16Max / g.largest_magnitude) << "x below float16's largest, 65504";
  return s.str();
}

nlohmann::json runtime_blocked_json(const std::vector<convert::RuntimeKept>& kept) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& k : kept)
    out.push_back({{"pattern", k.pattern}, {"runtime", k.runtime}, {"doc", k.doc}, {"nodes", k.nodes}});
  return out;
}

nlohmann::json precision_json(const ConvertOptions& o, const verify::ConvertResult& c) {
  if (!o.to_fp16 && !o.to_fp32) return nullptr;
  const convert::PrecisionReport& precision = c.precision;
  const std::optional<verify::GuidedFp16>& guided = c.guided;
  return {{"to", o.to_fp16 ? "float16" : "float32"},
          {"converted_initializers", precision.converted_initializers},
          {"converted_values", precision.converted_values},
          {"casts_added", precision.casts_added},
          {"casts_removed", precision.casts_removed},
          {"blocked_nodes", precision.blocked_nodes},
          {"range_blocked", precision.range_blocked},
          {"accuracy_blocked", precision.accuracy_blocked},
          {"runtime_blocked", runtime_blocked_json(precision.runtime_blocked)},
          {"range_values", guided ? guided->range_values : std::vector<std::string>{}},
          {"accuracy_values", guided ? guided->accuracy_values : std::vector<std::string>{}},
          {"accuracy_rounds", guided ? guided->rounds : 0},
          {"accuracy_head_nodes", guided ? guided->head_nodes : 0},
          {"headroom", guided ? nlohmann::json{{"largest_magnitude", guided->largest_magnitude},
                                               {"value", guided->largest_value},
                                               {"float16_max", convert::kFloat16Max}}
                              : nlohmann::json(nullptr)}};
}

nlohmann::json convert_json(const ConvertOptions& o, const verify::ConvertResult& c, const verify::Tolerance& tol,
                            const WrittenModel& written) {
  const ir::SaveReport& r = written.saved;
  const convert::VersionReport& version = c.version;
  return {{"output", o.output},
          {"written", written_json(written)},
          {"model_bytes", r.model_bytes},
          {"data_file", json_or_null(r.data_path)},
          {"data_bytes", r.data_bytes},
          {"external_tensors", r.external_tensors},
          {"auto_external", r.auto_external},
          {"value_info_added", c.inferred},
          {"opset", o.opset ? nlohmann::json{{"from", version.from}, {"to", version.to},
                                             {"rewritten_nodes", version.rewritten_nodes},
                                             {"added", version.added_nodes}}
                            : nlohmann::json(nullptr)},
          {"precision", precision_json(o, c)},
          {"verification", verify_json(c.reference, c.verified, tol, c.verify_seconds)}};
}

/// "kept in float32 for onnxruntime 1.30: 5 nodes (pattern peak_picking: ...; see ...)", one line
/// per runtime.
void print_runtime_blocked(const std::vector<convert::RuntimeKept>& kept) {
  std::vector<std::string> runtimes;
  for (const auto& k : kept)
    if (std::find(runtimes.begin(), runtimes.end(), k.runtime) == runtimes.end()) runtimes.push_back(k.runtime);
  for (const auto& runtime : runtimes) {
    size_t count = 0;
    std::string patterns;
    for (const auto& k : kept) {
      if (k.runtime != runtime) continue;
      count += k.nodes.size();
      patterns += (patterns.empty() ? "" : "; ") + std::string("pattern ") + k.pattern + ":";
      for (const auto& n : k.nodes) patterns += " " + n;
      patterns += ", see " + k.doc;
    }
    std::cout << "kept in float32 for " << runtime << ": " << count << (count == 1 ? " node (" : " nodes (") << patterns
              << "; --allow-runtime-bugs converts them)\n";
  }
}

/// What --to-fp16 or --to-fp32 converted, and what stayed float32 and why.
void print_precision(const ConvertOptions& o, const verify::ConvertResult& c) {
  const convert::PrecisionReport& precision = c.precision;
  const std::optional<verify::GuidedFp16>& guided = c.guided;
  std::cout << (o.to_fp16 ? "float32 -> float16: " : "float16 -> float32: ") << precision.converted_initializers
            << " initializers, " << precision.converted_values << " values, " << precision.casts_added
            << " casts added, " << precision.casts_removed << " removed, " << precision.blocked_nodes
            << " nodes kept in float32\n";
  print_runtime_blocked(precision.runtime_blocked);
  if (!precision.range_blocked.empty()) {
    std::cout << "kept in float32 for range (beyond " << convert::kFloat16RangeLimit << " on the verification inputs):";
    for (const auto& n : precision.range_blocked) std::cout << " " << n;
    std::cout << "\n";
  }
  if (guided && guided->head_nodes) {
    std::cout << "kept in float32 for accuracy: the first " << guided->head_nodes << " of " << guided->graph_nodes
              << " nodes, up to " << guided->head_last << ", found in " << guided->rounds
              << " more rounds: float16's error grows over many layers, not at a few values; a looser --atol keeps "
                 "more in float16\n";
  } else if (!precision.accuracy_blocked.empty()) {
    std::cout << "kept in float32 for accuracy (float16 departed beyond tolerance at " << guided->accuracy_values.size()
              << " values, found in " << guided->rounds << " more rounds):";
    for (const auto& n : precision.accuracy_blocked) std::cout << " " << n;
    std::cout << "\n";
  }
}

void print_conversion(const ConvertOptions& o, const verify::ConvertRequest& request, const verify::ConvertResult& c,
                const WrittenModel& written) {
  const ir::SaveReport& r = written.saved;
  std::cout << "wrote " << o.output << " (" << human_bytes(r.model_bytes) << ")";
  if (!r.data_path.empty())
    std::cout << " and " << r.data_path << " (" << human_bytes(r.data_bytes) << ", " << r.external_tensors << " tensors)";
  std::cout << "\n";
  print_sorted(written);
  if (o.opset)
    std::cout << "opset " << c.version.from << " -> " << c.version.to << ": " << c.version.rewritten_nodes
              << " nodes rewritten, " << c.version.added_nodes << " nodes/constants added\n";
  if (o.to_fp16 || o.to_fp32) print_precision(o, c);
  if (c.reference || request.rewrites()) print_verification(c.reference, c.verified, request.tolerance, c.verify_seconds);
  if (c.reference && c.guided) std::cout << headroom_line(*c.guided) << "\n";
  if (o.infer_shapes) std::cout << "added " << c.inferred << " inferred value_info entries\n";
  if (r.auto_external) std::cout << "note: the model passed 2 GB, so its weights were saved as external data\n";
}

}  // namespace

void refuse_unverified(const ConvertOptions& o, const verify::ConvertResult& c) {
  if (c.verified.ok()) return;
  const std::optional<verify::GuidedFp16>& guided = c.guided;
  throw Error(ErrorKind::kFailed, "verification failed: " + c.verified.first_failure() +
                                      (!o.to_fp16 ? ""
                                       : guided && guided->graph_nodes
                                           ? "; no head of the graph short of all " + std::to_string(guided->graph_nodes) +
                                                 " nodes kept in float32 brought it within tolerance (" +
                                                 (o.keep_io_types ? std::string("")
                                                                  : "the float16 inputs and outputs alone may be beyond it: --keep-io-types; ") +
                                                 "a looser --atol or --rtol accepts float16's error)"
                                       : guided && !guided->accuracy_values.empty()
                                           ? "; " + std::to_string(guided->accuracy_values.size()) +
                                                 " values kept in float32 for accuracy did not suffice; keep more (--block-ops)"
                                           : std::string("; keep more in float32 (--block-ops)")) +
                                      "; nothing written (--no-verify writes it anyway)");
}

void print_converted(const ConvertOptions& o, const verify::ConvertRequest& request, const verify::ConvertResult& c,
                     const WrittenModel& written) {
  // Random inputs far inside float16's range say nothing of real ones: warned, --quiet or not
  // (--json has the figures in precision.headroom and verification.note).
  if (c.guided && c.reference && c.reference->random_inputs() && !o.json)
    warning("convert", "float16 verified on random inputs only: " + headroom_line(*c.guided) +
                           "; real inputs may reach values these did not and overflow float16 (65504); give real "
                           "samples with --inputs DIR");
  if (o.json) print_json(convert_json(o, c, request.tolerance, written));
  else print_conversion(o, request, c, written);
}

}  // namespace onnxtool::cli
