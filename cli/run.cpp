// `onnxtool run MODEL ...`: execute a model on the reference runner.
#include "cli/common.h"
#include "cli/flags.h"
#include "cli/html_report.h"
#include "cli/run.h"
#include "cli/verify.h"
#include "ir/error.h"
#include "ir/output_file.h"

namespace onnxtool::cli {
namespace {

/// Flags the others would leave unused, and folders that cannot be written: refused before any
/// work.
void refuse_unusable_flags(const RunOptions& o) {
  if (o.benchmark < 0) throw_usage_error("--benchmark must be >= 0");
  refuse_unused(o.given, {
      // --seed and --input-shape concern random inputs only: without --random they would be ignored.
      {{"--seed", "--input-shape", "--shape", "--input-range"}, o.feed.random, "for random inputs only; add --random"},
      {{"--output-format"}, !o.output_dir.empty(), "add --output-dir"},
      {{"--max-dump-files", "--max-dump-bytes"}, !o.dump_dir.empty(), "the bounds of --dump-dir; add --dump-dir DIR"},
      {{"--rtol", "--atol"}, !o.expect_dir.empty(), "the tolerance of --expect; add --expect DIR"},
      {{"--report"}, o.profile, "the profile's page; add --profile"},
  });
  if (!o.report.empty() && !html::is_html_path(o.report))
    throw_usage_error("--report " + o.report + ": the profile report is an HTML page (FILE.html; --json prints the JSON)");
  // onnxruntime runs the whole model in one call: there are no nodes of ours to time.
  if (o.profile && o.device.rfind("onnxruntime", 0) == 0)
    throw_usage_error("--profile times the reference runner's nodes, and onnxruntime's are not seen one by one; "
                      "use --benchmark N for the time of whole runs");
  if (!o.output_dir.empty()) check_output_dir(o.output_dir);
  refuse_shared_folders(o);
}

int run_command(const RunOptions& o) {
  refuse_unusable_flags(o);
  ModelRun run;
  run_model_once(o, run);
  const std::vector<std::string> files = write_outputs(o, run);
  // The trace after the outputs, whose names were claimed first: a trace named like one of them
  // is refused before either is written.
  if (o.profile && !o.trace_file.empty())
    ir::write_file(o.trace_file, runner::chrome_trace(run.profiler, run.device_id), "--profile " + o.trace_file);
  const std::vector<OutputMatch> matches = o.expect_dir.empty() ? std::vector<OutputMatch>{} : match_outputs(o, run);
  if (!o.report.empty() || o.json) {
    const nlohmann::json doc = run_json(o, run, files, matches);
    if (!o.report.empty()) write_run_report(o.report, doc);
    if (o.json) print_json(doc);
  }
  if (!o.json) print_run(o, run, files, matches);
  return report_mismatch(o, run, matches);
}

}  // namespace

void register_run(CLI::App& app, Action& action) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand("run", "Execute a model on the reference runner (CPU or a Vulkan device), or in onnxruntime");
  sub->add_option("MODEL", o->model, "model file")->required();
  sub->add_option("--input", o->feed.inputs, "NAME=FILE (.npy, or a TensorProto, SequenceProto or OptionalProto .pb as the model declares NAME); repeatable");
  sub->add_option("--inputs", o->feed.inputs_dir, "folder of <name>.npy/.pb files, or a test_data_set_N folder");
  sub->add_flag("--random", o->feed.random, "fill inputs not given with deterministic random data");
  sub->add_option("--seed", o->feed.seed, "seed for --random (default 0)")->check(number_in(0, kMaxSeed));
  sub->add_option("--input-shape", o->feed.shapes, "NAME=D1,D2,... sizes for symbolic dims of random inputs (formerly --shape)");
  add_old_name(sub, "--shape", o->feed.old_shapes);
  add_input_range_option(sub, o->feed.input_ranges);
  sub->add_option("--output-dir", o->output_dir, "write each output to DIR/<name>.npy (or .pb: see --output-format)");
  sub->add_option("--output-format", o->output_format,
                  "npy (default: tensors as .npy; bfloat16, float8 and int4 refused) or pb (TensorProto); "
                  "sequences and optionals are always .pb (SequenceProto, OptionalProto)")
      ->check(CLI::IsMember({"npy", "pb"}));
  sub->add_option("--expect", o->expect_dir,
                  "compare the outputs with DIR's: a test_data_set_N folder (output_K.pb) or what --output-dir "
                  "wrote (<name>.npy/.pb); exit 1 when any differs");
  sub->add_option("--rtol", o->rtol, "relative tolerance of --expect (default 1e-3)")->check(number_in(0, 1e6));
  sub->add_option("--atol", o->atol, "absolute tolerance of --expect (default 1e-5)")->check(number_in(0, 1e300));
  sub->add_option("--outputs", o->outputs, "names of the values to return, of the main graph or of a subgraph run once (default: graph outputs)")->delimiter(',');
  sub->add_option("--dump-dir", o->dump_dir, "write every value computed to DIR/<name>.npy (.pb; a subgraph's: <name>.<run>.npy), with DIR/index.json");
  sub->add_option("--max-dump-files", o->dump_limits.max_files,
                  "--dump-dir writes at most N files; the values past them are listed in index.json as skipped (default 10000)")
      ->check(number_in(1, 1e8));
  sub->add_option("--max-dump-bytes", o->dump_limits.max_bytes,
                  "--dump-dir writes at most B bytes of tensors (default 4294967296, 4 GiB)")
      ->check(number_in(1, 0x1p50));
  sub->add_option("--device", o->device,
                  "cpu (default), vulkan or vulkan:N, optionally :fp32-arithmetic (`onnxtool devices` lists them), or "
                  "onnxruntime[:LEVEL] (LEVEL: disabled, the default, basic, extended or all)");
  sub->add_option("--benchmark", o->benchmark, "time N runs after one warm-up run")->check(number_in(0, 1e7));
  CLI::Option* profile =
      sub->add_option("--profile", o->trace_file,
                      "time every node of the --benchmark runs (or of one run after the first): per op type and "
                      "per node; with FILE, also a Chrome trace of every node there")
          ->expected(0, 1);
  sub->add_option("--report", o->report,
                  "with --profile: write the profile as an HTML page with charts (FILE.html): time per op type and "
                  "per node, and each node's FLOPs against its time");
  sub->add_flag("--json", o->json, "print one JSON document");
  add_quiet_flag(sub);
  add_model_run_flags(sub);
  sub->callback([&action, o, profile, sub] {
    o->profile = profile->count() > 0;
    o->given = given_options(*sub);
    o->feed.shapes.insert(o->feed.shapes.begin(), o->feed.old_shapes.begin(), o->feed.old_shapes.end());
    action = [o] {
      note_renamed("run", o->given, {{"--shape", "--input-shape", ""}});
      return run_command(*o);
    };
  });
}

}  // namespace onnxtool::cli
