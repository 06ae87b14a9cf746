// `onnxtool compare A B`: runs two models on the same inputs and reports how their outputs (and,
// with --per-layer, their intermediate tensors) differ.
#include <filesystem>

#include "cli/compare.h"
#include "cli/flags.h"
#include "cli/html_report.h"
#include "cli/progress.h"
#include "cli/verify.h"
#include "ir/command_files.h"
#include "ir/error.h"

namespace onnxtool::cli {
namespace {

/// True when DIR holds sample folders (subfolders and no tensor file of its own) rather than the
/// files of one sample (NAME.npy/.pb or input_K.pb).
bool holds_sample_folders(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  bool folders = false;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".npy" || ext == ".pb")) return false;
    folders = folders || e.is_directory();
  }
  return folders;
}


/// The last component of a folder path, with or without a trailing '/'.
std::string folder_name(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return std::filesystem::path(dir).filename().string();
}


/// Every gate on every output. An output that cannot be compared, or has NaN/Inf mismatches
/// (which no statistic counts), fails them all.
std::vector<GateVerdict> judge_gates(const runner::ModelComparison& r, const std::vector<runner::Gate>& gates) {
  std::vector<GateVerdict> verdicts;
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    const runner::TensorDiff& d = r.output_diffs[i].diff;
    for (const auto& g : gates) {
      GateVerdict v{i, g, runner::judge_gate(r.output_diffs[i].stats, g), ""};
      if (!d.problem.empty()) v.problem = d.problem;
      else if (d.nonfinite_count) v.problem = std::to_string(d.nonfinite_count) + " NaN/Inf mismatches";
      if (!v.problem.empty()) v.result.pass = false;
      verdicts.push_back(v);
    }
  }
  return verdicts;
}


/// Flags that exclude each other, or that the others would leave unused. `random`: random
/// inputs, the default without files; `folders`: the sample folders of --inputs.
void refuse_conflicts(const CompareCliOptions& o, bool random, const std::vector<std::string>& folders) {
  if (o.samples > 1 && !random)
    throw_usage_error("--samples needs --random (files give one sample, a folder of sample folders one per folder)");
  if (o.samples > 1 && !folders.empty()) throw_usage_error("--samples: the sample folders of --inputs " + o.feed.inputs_dir + " are the samples");
  if (const std::string named = given_list(o.given, {"--seed", "--input-shape", "--shape", "--input-range"}); !named.empty() && !random)
    throw_usage_error(named + ": the inputs come from " + given_list(o.given, {"--input", "--inputs"}) +
                      "; add --random to fill the inputs they leave out with random data");
  if (!o.expect_dir.empty()) {
    if (!o.b.empty()) throw_usage_error("--expect compares MODEL with stored outputs: give one model, not two");
    if (const std::string named = given_list(o.given, {"--device-a", "--device-b"}); !named.empty())
      throw_usage_error(named + ": --expect runs one model (use --device)");
    if (o.per_layer) throw_usage_error("--per-layer needs two models: --expect holds outputs only");
    if (o.samples > 1) throw_usage_error("--expect: random samples have no stored outputs (use --inputs DIR of sample folders)");
  } else if (o.given.count("--device") && o.given.count("--device-a") && o.given.count("--device-b")) {
    throw_usage_error("--device would be unused: --device-a and --device-b name both devices");
  }
}

/// The devices of A and B, checked before any model is loaded.
runner::ModelComparisonOptions comparison_devices(const CompareCliOptions& o) {
  runner::ModelComparisonOptions c;
  c.device_a = runner::DeviceSpec::parse(o.device_a.empty() ? o.device : o.device_a);
  c.device_b = runner::DeviceSpec::parse(o.device_b.empty() ? o.device : o.device_b);
  // One model: the same file on two devices.
  if (o.expect_dir.empty() && o.b.empty() && c.device_a.to_string() == c.device_b.to_string())
    throw_usage_error("compare takes two models, one model with --device-a and --device-b naming two devices, or one model with --expect DIR");
  return c;
}

/// The inputs and what is judged, after A is loaded.
void set_inputs(const CompareCliOptions& o, bool random, const std::vector<std::string>& folders, runner::ModelComparisonOptions& c) {
  c.feeds = feed_options(o.feed, folders.empty() ? o.feed.inputs_dir : "", random);
  c.sample_dirs = folders;
  c.samples = folders.empty() ? o.samples : static_cast<int>(folders.size());
  c.rtol = o.rtol;
  c.atol = o.atol;
  c.per_layer = o.per_layer;
  c.outputs = o.outputs;
  c.progress = progress();
}

/// What names each sample in the report.
std::vector<std::string> name_samples(const CompareCliOptions& o, const Comparison& c, const std::vector<std::string>& folders) {
  std::vector<std::string> names;
  const std::string given_sample = o.feed.inputs_dir.empty() ? "--input files" : folder_name(o.feed.inputs_dir);
  for (int s = 0; s < c.options.samples; ++s)
    names.push_back(!folders.empty() ? std::filesystem::path(folders[static_cast<size_t>(s)]).filename().string()
                    : c.random       ? "seed " + std::to_string(o.feed.seed + static_cast<uint64_t>(s))
                                     : given_sample);
  return names;
}

/// Runs the models (or MODEL against --expect's outputs) and judges the outputs.
void compare(const CompareCliOptions& o, const std::vector<std::string>& folders, Comparison& c) {
  if (!o.expect_dir.empty()) {
    // With sample folders, sample S's outputs are in EXPECT/S (run --output-dir EXPECT/S writes them).
    std::vector<std::string> expect_dirs;
    for (const auto& f : folders) expect_dirs.push_back((std::filesystem::path(o.expect_dir) / std::filesystem::path(f).filename()).string());
    if (folders.empty()) expect_dirs.push_back(o.expect_dir);
    c.result = runner::compare_with_expected(c.a.model, c.options, expect_dirs);
  } else {
    const std::string b_path = o.b.empty() ? o.a : o.b;
    c.b.emplace(ir::load_model(b_path));
    refuse_unrunnable(c.b->model, b_path);
    const std::string label_a = o.b.empty() ? o.a + " on " + c.options.device_a.to_string() : o.a;
    const std::string label_b = o.b.empty() ? b_path + " on " + c.options.device_b.to_string() : b_path;
    c.result = runner::compare_models(c.a.model, c.b->model, c.options, label_a, label_b);
  }
  c.tolerance_applies = o.gates.empty() || o.given.count("--atol") || o.given.count("--rtol");
  c.verdicts = judge_gates(c.result, o.gates);
  for (const auto& v : c.verdicts) c.failed_gates += !v.result.pass;
}

int run_compare(const CompareCliOptions& o) {
  if (o.samples < 1) throw_usage_error("--samples must be at least 1");
  Comparison c;
  // Random inputs are the default without files; with files, only --random adds them.
  c.random = o.feed.random || (o.feed.inputs.empty() && o.feed.inputs_dir.empty());
  std::vector<std::string> folders;  // --inputs DIR of sample folders
  if (!o.feed.inputs_dir.empty() && holds_sample_folders(o.feed.inputs_dir)) folders = sample_dirs("--inputs", o.feed.inputs_dir);
  refuse_conflicts(o, c.random, folders);
  c.options = comparison_devices(o);
  if (!o.report.empty()) {
    if (!html::is_html_path(o.report) && !(o.report.size() > 5 && o.report.compare(o.report.size() - 5, 5, ".json") == 0))
      throw_usage_error("--report " + o.report + ": the report is an HTML page (FILE.html) or JSON (FILE.json)");
    ir::claim_output(o.report, "--report " + o.report);
  }
  c.a = ir::load_model(o.a);
  refuse_unrunnable(c.a.model, o.a);
  if (!o.report.empty()) ir::check_not_input(c.a.info, o.report, "--report " + o.report);
  set_inputs(o, c.random, folders, c.options);
  c.sample_names = name_samples(o, c, folders);
  compare(o, folders, c);
  // The report after both runs: written through the safe writer, which refuses the files the
  // command read (B's too), and replaces FILE only once the whole page is written.
  write_comparison_report(o, c);
  print_comparison(o, c);
  print_failures(o, c);
  return c.ok() ? kExitOk : kExitFailed;
}

}  // namespace

void register_compare(CLI::App& app, Action& action) {
  auto o = std::make_shared<CompareCliOptions>();
  CLI::App* sub = app.add_subcommand("compare", "Run two models on the same inputs and compare outputs (exit 1 beyond tolerance)");
  sub->add_option("A", o->a, "reference model")->required();
  sub->add_option("B", o->b, "model to check (omit it to compare MODEL on --device-a and --device-b)");
  sub->add_option("--input", o->feed.inputs, "NAME=FILE (.npy or .pb); repeatable");
  sub->add_option("--inputs", o->feed.inputs_dir, "folder of one sample's inputs, or a folder of sample folders (each is one sample)");
  sub->add_option("--expect", o->expect_dir,
                  "compare MODEL's outputs with the ones stored here (NAME.npy/.pb or output_K.pb; with sample folders, DIR/SAMPLE/)");
  // Gates: thresholds on the figures over the samples (SampleStats); each is reported per output.
  auto gate = [&](const char* flag, runner::Gate::Kind kind, double hi, const char* help) {
    sub->add_option_function<double>(flag, [o, kind](double v) { o->gates.push_back({kind, v}); }, help)->check(number_in(0, hi));
  };
  gate("--min-cosine", runner::Gate::Kind::kMinCosine, 1,
       "fail below this cosine (outputs of one element or a constant reference: judged by max rel error as a cosine)");
  gate("--max-rel-error", runner::Gate::Kind::kMaxRelError, 1e30, "fail above this largest relative error");
  gate("--min-sqnr", runner::Gate::Kind::kMinSqnr, 1000, "fail below this signal-to-quantization-noise ratio (dB)");
  gate("--max-abs-error", runner::Gate::Kind::kMaxAbsError, 1e30, "fail above this largest absolute error");
  sub->add_flag("--random", o->feed.random, "random inputs (the default when no input is given)");
  sub->add_option("--seed", o->feed.seed, "seed of the first random sample (default 0)")->check(number_in(0, kMaxSeed));
  sub->add_option("--input-shape", o->feed.shapes, "NAME=D1,D2,... sizes for symbolic dims of random inputs (formerly --shape)");
  add_old_name(sub, "--shape", o->feed.old_shapes);
  add_input_range_option(sub, o->feed.input_ranges);
  sub->add_option("--outputs", o->outputs, "compare and judge only these outputs of A (comma-separated; default all)")->delimiter(',');
  sub->add_option("--samples", o->samples, "random samples to run (default 1)")->check(number_in(1, 1e6));
  sub->add_option("--atol", o->atol, "absolute tolerance (default 1e-5; with gates, applied only when given)")->check(number_in(0, 1e30));
  sub->add_option("--rtol", o->rtol, "relative tolerance (default 1e-3)")->check(number_in(0, 1e30));
  sub->add_flag("--per-layer", o->per_layer, "compare the intermediate tensors both models have");
  sub->add_option("--device", o->device,
                  "device both models run on: cpu (default), vulkan or vulkan:N, or onnxruntime[:LEVEL] (LEVEL: "
                  "disabled, the default, basic, extended or all)");
  sub->add_option("--device-a", o->device_a, "device of A (default: --device)");
  sub->add_option("--device-b", o->device_b, "device of B (default: --device)");
  sub->add_flag("--json", o->json, "print one JSON document");
  sub->add_option("--report", o->report,
                  "also write the report to FILE: an HTML page with charts (FILE.html; with --per-layer, the error along "
                  "the graph) or the --json document (FILE.json); with --per-layer both hold every layer");
  add_quiet_flag(sub);
  add_model_run_flags(sub);
  sub->callback([&action, o, sub] {
    o->given = given_options(*sub);
    o->feed.shapes.insert(o->feed.shapes.begin(), o->feed.old_shapes.begin(), o->feed.old_shapes.end());
    action = [o] {
      note_renamed("compare", o->given, {{"--shape", "--input-shape", ""}});
      return run_compare(*o);
    };
  });
}

}  // namespace onnxtool::cli
