// `onnxtool convert MODEL -o OUT`: lossless re-save, external data out and in.
#include "cli/common.h"
#include "cli/convert.h"
#include "cli/flags.h"
#include "cli/progress.h"
#include "ir/error.h"
#include "ir/model_io.h"

namespace onnxtool::cli {
namespace {

/// Flags that exclude each other, or that the conversion asked would ignore: refused as
/// --keep-io-types is without --to-fp16.
void refuse_flag_conflicts(const ConvertOptions& o) {
  if (o.external_data && o.inline_external)
    throw_usage_error("--external-data and --inline-external-data exclude each other");
  if (o.to_fp16 && o.to_fp32) throw_usage_error("--to-fp16 and --to-fp32 exclude each other");
  if ((o.keep_io_types || !o.block_ops.empty() || o.no_preprocess || o.allow_runtime_bugs) && !o.to_fp16)
    throw_usage_error("--keep-io-types, --block-ops, --no-preprocess and --allow-runtime-bugs go with --to-fp16");
  if (o.opset && (o.opset < convert::kMinConvertOpset || o.opset > convert::kMaxConvertOpset))
    throw_usage_error("--opset " + std::to_string(o.opset) + " is outside the supported range " +
                      std::to_string(convert::kMinConvertOpset) + "-" + std::to_string(convert::kMaxConvertOpset));
  if (const std::string named = given_list(o.given, {"--size-threshold", "--data-file"}); !named.empty() && o.inline_external)
    throw_usage_error(named + ": --inline-external-data writes no side file");
  if (o.given.count("--size-threshold") && !o.external_data)
    throw_usage_error("--size-threshold goes with --external-data (the weights it moves to the side file)");
  refuse_verify_flags_unused(o.check, o.given);
  if (const std::string named = given_list(o.given, o.check.names); !named.empty() && !o.opset && !o.to_fp16 && !o.to_fp32)
    throw_usage_error(named + ": only --opset, --to-fp16 and --to-fp32 are verified; this conversion runs nothing");
  if (o.given.count("--input-shape") && (o.given.count("--inputs") || o.given.count("--input")))
    throw_usage_error("--input-shape sizes random verification inputs; with " + given_list(o.given, {"--inputs", "--input"}) +
                      " there are none");
}

verify::ConvertRequest convert_request(const ConvertOptions& o) {
  verify::ConvertRequest request;
  request.opset = o.opset;
  request.precision = o.to_fp16   ? convert::Precision::kFloat16
                      : o.to_fp32 ? convert::Precision::kFloat32
                                  : convert::Precision::kKeep;
  request.fp16.keep_io_types = o.keep_io_types;
  request.fp16.block_ops = o.block_ops;
  request.fp16.allow_runtime_bugs = o.allow_runtime_bugs;
  request.preprocess = !o.no_preprocess;
  request.infer_shapes = o.infer_shapes;
  if (request.rewrites() && !o.check.no_verify) request.verify = verify_inputs(o.check, parse_shapes("--input-shape", o.input_shapes));
  request.tolerance = tolerance(o.check, verify::default_tolerance(request));
  request.progress = progress();
  return request;
}

ir::SaveOptions save_options(const ConvertOptions& o) {
  ir::SaveOptions save;
  save.size_threshold = o.size_threshold;
  save.data_file = o.data_file;
  if (o.external_data) save.external = ir::ExternalData::kExternalize;
  if (o.inline_external) save.external = ir::ExternalData::kInline;
  return save;
}

int run_convert(ConvertOptions& o) {
  o.output = output_or_in_place(o.model, o.output, o.in_place);
  refuse_flag_conflicts(o);
  refuse_overwriting_input(o.model, o.output, o.in_place);
  if (o.given.count("--data-file") && o.data_file.empty())
    throw_usage_error("--data-file: an empty name; leave the flag out for the default (OUT.data)");

  auto loaded = ir::load_model(o.model);
  refuse_in_place_elsewhere(o.model, o.output, o.in_place);
  ir::check_output_paths(loaded.info, o.output, o.data_file, o.in_place);
  const verify::ConvertRequest request = convert_request(o);
  verify::ConvertResult c = verify::convert_verified(loaded.model, request, [&o] { return ir::load_model(o.model).model; });
  if (c.unchanged) {
    // Nothing to do: say so, and leave no file behind that a user could mistake for a conversion.
    info("convert", "note: " + o.model + " is already at opset " + std::to_string(o.opset) + "; nothing written");
    return kExitOk;
  }
  refuse_unverified(o, c);
  if (c.inference_errors && !o.json)
    info("convert", "note: shape inference found " + std::to_string(c.inference_errors) + " contradiction(s); run `onnxtool check " +
                        o.model + "` for details");
  const WrittenModel written = write_model(c.output(loaded.model), o.output, save_options(o));
  print_converted(o, request, c, written);
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
  add_verify_flags(sub, o->check, {verify::kRewriteTolerance, verify::kFp16Tolerance});
  add_verify_option(sub, o->check, "--input-shape", o->input_shapes, "NAME=D1,D2,... dims of a random verification input");
  sub->callback([&action, o, sub] {
    o->given = given_options(*sub);
    action = [o] { return run_convert(*o); };
  });
}

}  // namespace onnxtool::cli
