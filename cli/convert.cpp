// `onnxtool convert MODEL -o OUT`: lossless re-save, external data out and in.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <map>
#include <optional>
#include <set>

#include "cli/common.h"
#include "cli/progress.h"
#include "cli/verify.h"
#include "cli/write_model.h"
#include "convert/convert_model.h"
#include "ir/error.h"
#include "ir/model_io.h"

namespace onnxtool::cli {
namespace {

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

/// "the largest float16 value on the verification inputs is 6.1 (at 'y'), 1.1e+04x below float16's
/// largest, 65504".
std::string headroom_line(const convert::GuidedFp16& g) {
  std::ostringstream s;
  s << "the largest value converted to float16 on the verification inputs is " << std::setprecision(3) << g.largest_magnitude;
  if (!g.largest_value.empty()) s << " (at '" << g.largest_value << "')";
  if (g.largest_magnitude > 0) s << ", " << convert::kFloat16Max / g.largest_magnitude << "x below float16's largest, 65504";
  return s.str();
}

nlohmann::json runtime_blocked_json(const std::vector<convert::RuntimeKept>& kept) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& k : kept)
    out.push_back({{"pattern", k.pattern}, {"runtime", k.runtime}, {"doc", k.doc}, {"nodes", k.nodes}});
  return out;
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

int run_convert(ConvertOptions& o) {
  // --in-place alone names the input as the output: the result goes through a temporary file
  // renamed over it, so the model is either the old one or the new one, never a mix.
  if (o.output.empty() && !o.in_place)
    throw_usage_error("no output: pass -o OUT, or --in-place to replace " + o.model + " with the result");
  if (o.output.empty()) o.output = o.model;
  if (o.external_data && o.inline_external)
    throw_usage_error("--external-data and --inline-external-data exclude each other");
  if (o.to_fp16 && o.to_fp32) throw_usage_error("--to-fp16 and --to-fp32 exclude each other");
  if ((o.keep_io_types || !o.block_ops.empty() || o.no_preprocess || o.allow_runtime_bugs) && !o.to_fp16)
    throw_usage_error("--keep-io-types, --block-ops, --no-preprocess and --allow-runtime-bugs go with --to-fp16");
  if (o.opset && (o.opset < convert::kMinConvertOpset || o.opset > convert::kMaxConvertOpset))
    throw_usage_error("--opset " + std::to_string(o.opset) + " is outside the supported range " +
                      std::to_string(convert::kMinConvertOpset) + "-" + std::to_string(convert::kMaxConvertOpset));
  // Flags that would be ignored, refused as --keep-io-types is without --to-fp16.
  if ((o.given.count("--size-threshold") || o.given.count("--data-file")) && o.inline_external)
    throw_usage_error(given_list(o.given, {"--size-threshold", "--data-file"}) + ": --inline-external-data writes no side file");
  if (o.given.count("--size-threshold") && !o.external_data)
    throw_usage_error("--size-threshold goes with --external-data (the weights it moves to the side file)");
  refuse_verify_flags_unused(o.check, o.given);
  if (const std::string named = given_list(o.given, o.check.names); !named.empty()) {
    if (!o.opset && !o.to_fp16 && !o.to_fp32)
      throw_usage_error(named + ": only --opset, --to-fp16 and --to-fp32 are verified; this conversion runs nothing");
  }
  if (o.given.count("--input-shape") && (o.given.count("--inputs") || o.given.count("--input")))
    throw_usage_error("--input-shape sizes random verification inputs; with " + given_list(o.given, {"--inputs", "--input"}) +
                      " there are none");
  if (ir::same_file(o.model, o.output) && !o.in_place)
    throw_usage_error(o.output + ": is the input model itself; pass --in-place to overwrite it");
  if (o.given.count("--data-file") && o.data_file.empty())
    throw_usage_error("--data-file: an empty name; leave the flag out for the default (OUT.data)");

  auto loaded = ir::load_model(o.model);
  // With another output, --in-place would only lift the checks that keep the input intact.
  if (o.in_place && !ir::same_file(o.model, o.output))
    throw_usage_error("--in-place: " + o.output + " is not the input model; leave out -o to replace " + o.model +
                      ", or --in-place to write " + o.output);
  ir::check_output_paths(loaded.info, o.output, o.data_file, o.in_place);

  convert::ConvertRequest request;
  request.opset = o.opset;
  request.precision = o.to_fp16   ? convert::Precision::kFloat16
                      : o.to_fp32 ? convert::Precision::kFloat32
                                  : convert::Precision::kKeep;
  request.fp16.keep_io_types = o.keep_io_types;
  request.fp16.block_ops = o.block_ops;
  request.fp16.allow_runtime_bugs = o.allow_runtime_bugs;
  request.preprocess = !o.no_preprocess;
  request.infer_shapes = o.infer_shapes;
  if (request.rewrites() && !o.check.no_verify) {
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const auto& s : o.input_shapes) {
      auto [name, text] = parse_assignment(s, "--input-shape");
      shapes[name] = parse_size_list("--input-shape", name, text);
    }
    request.verify = verify_inputs(o.check, shapes);
  }
  request.tolerance = tolerance(o.check, convert::default_tolerance(request));
  const runner::Tolerance& tol = request.tolerance;

  request.progress = progress();
  convert::ConvertResult c = convert::convert_model(loaded.model, request, [&o] { return ir::load_model(o.model).model; });
  if (c.unchanged) {
    // Nothing to do: say so, and leave no file behind that a user could mistake for a conversion.
    info("convert", "note: " + o.model + " is already at opset " + std::to_string(o.opset) + "; nothing written");
    return kExitOk;
  }
  const std::optional<convert::GuidedFp16>& guided = c.guided;
  if (!c.verified.ok())
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
  if (c.inference_errors && !o.json)
    info("convert", "note: shape inference found " + std::to_string(c.inference_errors) + " contradiction(s); run `onnxtool check " +
                        o.model + "` for details");
  const convert::VersionReport& version = c.version;
  const convert::PrecisionReport& precision = c.precision;
  const size_t inferred = c.inferred;

  ir::SaveOptions save;
  save.size_threshold = o.size_threshold;
  save.data_file = o.data_file;
  if (o.external_data) save.external = ir::ExternalData::kExternalize;
  if (o.inline_external) save.external = ir::ExternalData::kInline;

  const WrittenModel written = write_model(c.output(loaded.model), o.output, save);
  const ir::SaveReport& r = written.saved;
  // Random inputs far inside float16's range say nothing of real ones: warned, --quiet or not
  // (--json has the figures in precision.headroom and verification.note).
  if (guided && c.reference && c.reference->random_inputs() && !o.json)
    warning("convert", "float16 verified on random inputs only: " + headroom_line(*guided) +
                           "; real inputs may reach values these did not and overflow float16 (65504); give real "
                           "samples with --inputs DIR");
  if (o.json) {
    print_json({{"output", o.output},
                {"written", written_json(written)},
                {"model_bytes", r.model_bytes},
                {"data_file", r.data_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.data_path)},
                {"data_bytes", r.data_bytes},
                {"external_tensors", r.external_tensors},
                {"auto_external", r.auto_external},
                {"value_info_added", inferred},
                {"opset", o.opset ? nlohmann::json{{"from", version.from}, {"to", version.to},
                                                   {"rewritten_nodes", version.rewritten_nodes},
                                                   {"added", version.added_nodes}}
                                  : nlohmann::json(nullptr)},
                {"precision", o.to_fp16 || o.to_fp32
                                  ? nlohmann::json{{"to", o.to_fp16 ? "float16" : "float32"},
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
                                                                       : nlohmann::json(nullptr)}}
                                  : nlohmann::json(nullptr)},
                {"verification", c.reference ? verify_json(*c.reference, c.verified, tol, c.verify_seconds) : nlohmann::json(nullptr)}});
  } else {
    std::cout << "wrote " << o.output << " (" << human_bytes(r.model_bytes) << ")";
    if (!r.data_path.empty())
      std::cout << " and " << r.data_path << " (" << human_bytes(r.data_bytes) << ", "
                << r.external_tensors << " tensors)";
    std::cout << "\n";
    if (const std::string sorted = sorted_line(written); !sorted.empty()) std::cout << sorted << "\n";
    if (o.opset)
      std::cout << "opset " << version.from << " -> " << version.to << ": " << version.rewritten_nodes
                << " nodes rewritten, " << version.added_nodes << " nodes/constants added\n";
    if (o.to_fp16 || o.to_fp32)
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
    if (c.reference) {
      std::cout << verify_summary(*c.reference, c.verified, tol, c.verify_seconds) << "\n";
      if (guided) std::cout << headroom_line(*guided) << "\n";
    } else if (request.rewrites()) {
      std::cout << "not verified (--no-verify)\n";
    }
    if (o.infer_shapes) std::cout << "added " << inferred << " inferred value_info entries\n";
    if (r.auto_external)
      std::cout << "note: the model passed 2 GB, so its weights were saved as external data\n";
  }
  return kExitOk;
}

}  // namespace

void register_convert(CLI::App& app, Action& action) {
  auto o = std::make_shared<ConvertOptions>();
  CLI::App* sub = app.add_subcommand("convert", "Re-save a model: external data, opset, precision");
  sub->add_option("MODEL", o->model, "input model")->required();
  sub->add_option("-o,--output", o->output, "output model (required unless --in-place)");
  sub->add_flag("--external-data", o->external_data,
                "move weights of at least --size-threshold bytes into one side file next to OUT");
  sub->add_option("--size-threshold", o->size_threshold, "bytes (default 1024)")->check(number_in(0, 0x1p62));
  sub->add_option("--data-file", o->data_file, "side file name (default OUT.data)");
  sub->add_flag("--inline-external-data", o->inline_external, "bring external weights into the model file");
  sub->add_flag("--in-place", o->in_place, "replace the input model with the result (-o may then be left out)");
  sub->add_flag("--json", o->json, "print one JSON document");
  add_quiet_flag(sub);
  add_model_run_flags(sub);
  sub->add_flag("--infer-shapes", o->infer_shapes, "store inferred types and shapes as value_info");
  sub->add_option("--opset", o->opset, "target opset of the default domain (7-28, up or down)")->check(number_in(1, 1e6));
  sub->add_flag("--to-fp16", o->to_fp16, "float32 to float16; numerically sensitive ops stay float32 behind Casts");
  sub->add_flag("--keep-io-types", o->keep_io_types, "with --to-fp16: graph inputs and outputs stay float32");
  sub->add_option("--block-ops", o->block_ops, "with --to-fp16: op types kept in float32 (comma separated)")
      ->delimiter(',');
  sub->add_flag("--to-fp32", o->to_fp32, "float16/bfloat16 to float32, removing redundant Casts");
  sub->add_flag("--no-preprocess", o->no_preprocess, "with --to-fp16: do not run `optimize` first");
  sub->add_flag("--allow-runtime-bugs", o->allow_runtime_bugs,
                "with --to-fp16: convert the node patterns where onnxruntime departs from the spec in float16 too "
                "(kept in float32 by default; docs/runtime_departures.md)");
  add_verify_flags(sub, o->check, {runner::kRewriteTolerance, runner::kFp16Tolerance});
  add_verify_option(sub, o->check, "--input-shape", o->input_shapes, "NAME=D1,D2,... dims of a random verification input");
  sub->callback([&action, o, sub] {
    o->given = given_options(*sub);
    action = [o] { return run_convert(*o); };
  });
}

}  // namespace onnxtool::cli
