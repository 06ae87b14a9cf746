// `onnxtool compare A B`: runs two models on the same inputs and reports how their outputs (and,
// with --per-layer, their intermediate tensors) differ.
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>

#include "cli/common.h"
#include "cli/progress.h"
#include "cli/verify.h"
#include "ir/error.h"
#include "ir/model_io.h"
#include "runner/compare_models.h"

namespace onnxtool::cli {
namespace {

/// The flag that sets a gate.
const char* gate_flag(runner::Gate::Kind kind) {
  switch (kind) {
    case runner::Gate::Kind::kMinCosine: return "--min-cosine";
    case runner::Gate::Kind::kMaxRelError: return "--max-rel-error";
    case runner::Gate::Kind::kMinSqnr: return "--min-sqnr";
    case runner::Gate::Kind::kMaxAbsError: return "--max-abs-error";
  }
  return "";
}


struct CompareCliOptions {
  std::string a, b;
  std::vector<std::string> inputs;
  std::string inputs_dir;
  bool random = false;
  uint64_t seed = 0;
  std::vector<std::string> shapes;
  std::vector<std::string> input_ranges;  ///< --input-range
  std::vector<std::string> outputs;  ///< --outputs: judge only these
  int samples = 1;
  double atol = 1e-5;
  double rtol = 1e-3;
  std::string expect_dir;
  std::vector<runner::Gate> gates;  ///< in the order of the flags below
  bool per_layer = false;
  bool json = false;
  std::string device = "cpu", device_a, device_b;
  std::set<std::string> given;  ///< the options on the command line
};

nlohmann::json to_json(const std::string& name, const runner::WorstDiff& w) {
  const auto& d = w.diff;
  nlohmann::json j = {{"name", name}};
  if (!d.problem.empty()) {
    j["problem"] = d.problem;
    return j;
  }
  const runner::SampleStats& st = w.stats;
  j["elements"] = d.elements;
  j["max_abs_error"] = st.max_abs_error.value;
  j["max_rel_error"] = json_number(st.max_rel_error.value);
  j["mean_abs_error"] = st.mean_abs_error;
  j["cosine"] = st.cosine_meaningful ? nlohmann::json(st.cosine()) : nlohmann::json(nullptr);
  j["sqnr_db"] = json_number(st.sqnr_db());
  j["lowest_sample"] = {{"cosine", st.cosine_meaningful ? nlohmann::json(st.lowest_cosine.value) : nlohmann::json(nullptr)},
                        {"sqnr_db", json_number(st.lowest_sqnr_db.value)}};
  j["worst_samples"] = {{"max_abs_error", st.max_abs_error.sample}, {"max_rel_error", st.max_rel_error.sample},
                        {"cosine", st.lowest_cosine.sample}, {"sqnr_db", st.lowest_sqnr_db.sample}};
  j["beyond_tolerance"] = d.beyond;
  if (d.top1_rows >= 0) j["top1_agreement"] = d.top1_rows ? static_cast<double>(d.top1_agree) / static_cast<double>(d.top1_rows) : 1.0;
  nlohmann::json nf = nlohmann::json::array();
  for (const auto& m : d.nonfinite) nf.push_back({{"index", m.index}, {"a", std::to_string(m.a)}, {"b", std::to_string(m.b)}});
  j["nonfinite_mismatches"] = {{"count", d.nonfinite_count}, {"first", nf}};
  j["worst_sample"] = w.sample;
  return j;
}

/// The figures of one tensor; over several samples (named by `sample_names`) cosine and SQNR
/// are followed by the lowest single sample's.
std::string describe_worst(const runner::WorstDiff& w, const std::vector<std::string>& sample_names) {
  const auto& d = w.diff;
  if (!d.problem.empty()) return d.problem;
  const runner::SampleStats& st = w.stats;
  auto lowest = [&](const runner::SampleStats::Worst& x) {
    std::ostringstream s;
    if (st.samples > 1 && x.sample >= 0 && static_cast<size_t>(x.sample) < sample_names.size())
      s << " (lowest " << x.value << " on " << sample_names[static_cast<size_t>(x.sample)] << ")";
    return s.str();
  };
  std::ostringstream s;
  s << std::setprecision(3) << "max abs " << st.max_abs_error.value << ", max rel " << st.max_rel_error.value << ", mean abs "
    << st.mean_abs_error << ", cosine ";
  if (st.cosine_meaningful) s << std::setprecision(6) << st.cosine() << lowest(st.lowest_cosine);
  else s << "n/a (" << (d.elements < 2 ? "one element" : "constant reference") << ")";
  s << ", SQNR " << std::setprecision(3) << st.sqnr_db() << " dB" << lowest(st.lowest_sqnr_db);
  if (d.top1_rows > 0) s << ", top-1 " << d.top1_agree << "/" << d.top1_rows;
  if (d.nonfinite_count) {
    s << ", " << d.nonfinite_count << " NaN/Inf mismatches (first at " << d.nonfinite[0].index << ": " << d.nonfinite[0].a << " vs "
      << d.nonfinite[0].b << ")";
  }
  if (d.beyond) s << ", " << d.beyond << " of " << d.elements << " elements beyond tolerance";
  return s.str();
}

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

/// One gate judged on one output.
struct GateVerdict {
  size_t output;
  runner::Gate gate;
  runner::GateResult result;
  std::string problem;  ///< why the output cannot be judged (type, shape, NaN/Inf mismatches)
};

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

std::string number_text(double v) {
  std::ostringstream s;
  s << std::setprecision(6) << v;
  return s.str();
}

/// "--min-cosine 0.999: cosine 0.9981 on sample s2" (what a gate measured, for both outcomes).
std::string describe_gate(const GateVerdict& v, const std::vector<std::string>& sample_names) {
  std::string line = std::string(gate_flag(v.gate.kind)) + " " + number_text(v.gate.threshold) + ": ";
  if (!v.problem.empty()) return line + v.problem;
  line += v.result.by_rel_error ? "cosine not meaningful (one element or a constant reference), judged by max_rel_error as cosine "
                                : std::string(runner::gate_metric(v.gate.kind)) + " ";
  line += number_text(v.result.measured);
  if (v.result.sample >= 0) line += " on sample " + sample_names[static_cast<size_t>(v.result.sample)];
  return line;
}

int run_compare(const CompareCliOptions& o) {
  if (o.samples < 1) throw_usage_error("--samples must be at least 1");
  // Random inputs are the default without files; with files, only --random adds them.
  const bool random = o.random || (o.inputs.empty() && o.inputs_dir.empty());
  std::vector<std::string> folders;  // --inputs DIR of sample folders
  if (!o.inputs_dir.empty() && holds_sample_folders(o.inputs_dir)) folders = sample_dirs("--inputs", o.inputs_dir);
  if (o.samples > 1 && !random)
    throw_usage_error("--samples needs --random (files give one sample, a folder of sample folders one per folder)");
  if (o.samples > 1 && !folders.empty()) throw_usage_error("--samples: the sample folders of --inputs " + o.inputs_dir + " are the samples");
  if (const std::string named = given_list(o.given, {"--seed", "--shape", "--input-range"}); !named.empty() && !random)
    throw_usage_error(named + ": the inputs come from " + given_list(o.given, {"--input", "--inputs"}) +
                      "; add --random to fill the inputs they leave out with random data");
  const bool expect = !o.expect_dir.empty();
  if (expect) {
    if (!o.b.empty()) throw_usage_error("--expect compares MODEL with stored outputs: give one model, not two");
    if (const std::string named = given_list(o.given, {"--device-a", "--device-b"}); !named.empty())
      throw_usage_error(named + ": --expect runs one model (use --device)");
    if (o.per_layer) throw_usage_error("--per-layer needs two models: --expect holds outputs only");
    if (o.samples > 1) throw_usage_error("--expect: random samples have no stored outputs (use --inputs DIR of sample folders)");
  } else if (o.given.count("--device") && o.given.count("--device-a") && o.given.count("--device-b")) {
    throw_usage_error("--device would be unused: --device-a and --device-b name both devices");
  }
  runner::ModelComparisonOptions c;
  c.device_a = runner::DeviceSpec::parse(o.device_a.empty() ? o.device : o.device_a);
  c.device_b = runner::DeviceSpec::parse(o.device_b.empty() ? o.device : o.device_b);
  // One model: the same file on two devices.
  const std::string b_path = o.b.empty() ? o.a : o.b;
  if (!expect && o.b.empty() && c.device_a.to_string() == c.device_b.to_string())
    throw_usage_error("compare takes two models, one model with --device-a and --device-b naming two devices, or one model with --expect DIR");
  auto la = ir::load_model(o.a);
  refuse_unrunnable(la.model, o.a);
  for (const auto& s : o.inputs) c.feeds.files.push_back(parse_assignment(s, "--input"));
  c.feeds.dir = folders.empty() ? o.inputs_dir : "";
  c.sample_dirs = folders;
  c.feeds.random = random;
  c.feeds.flags = {"--input", "--inputs", "--random", "--shape"};
  c.feeds.seed = o.seed;
  for (const auto& s : o.shapes) {
    auto [name, text] = parse_assignment(s, "--shape");
    c.feeds.shapes[name] = parse_size_list("--shape", name, text);
  }
  for (const auto& r : o.input_ranges) runner::add_input_range(c.feeds, r, "--input-range");
  c.samples = folders.empty() ? o.samples : static_cast<int>(folders.size());
  c.rtol = o.rtol;
  c.atol = o.atol;
  c.per_layer = o.per_layer;
  c.outputs = o.outputs;
  c.progress = progress();
  // Folder names, the random samples' seeds, or the one folder or set of files given.
  std::vector<std::string> sample_names;
  const std::string given_sample = o.inputs_dir.empty() ? "--input files" : folder_name(o.inputs_dir);
  for (int s = 0; s < c.samples; ++s)
    sample_names.push_back(!folders.empty() ? std::filesystem::path(folders[static_cast<size_t>(s)]).filename().string()
                           : random         ? "seed " + std::to_string(o.seed + static_cast<uint64_t>(s))
                                            : given_sample);
  runner::ModelComparison r;
  // B outlives the comparison: its placement (on a device) points at B's nodes.
  std::optional<ir::LoadedModel> lb;
  if (expect) {
    // With sample folders, sample S's outputs are in EXPECT/S (run --output-dir EXPECT/S writes them).
    std::vector<std::string> expect_dirs;
    for (const auto& f : folders) expect_dirs.push_back((std::filesystem::path(o.expect_dir) / std::filesystem::path(f).filename()).string());
    if (folders.empty()) expect_dirs.push_back(o.expect_dir);
    r = runner::compare_with_expected(la.model, c, expect_dirs);
  } else {
    lb.emplace(ir::load_model(b_path));
    refuse_unrunnable(lb->model, b_path);
    const std::string label_a = o.b.empty() ? o.a + " on " + c.device_a.to_string() : o.a;
    const std::string label_b = o.b.empty() ? b_path + " on " + c.device_b.to_string() : b_path;
    r = runner::compare_models(la.model, lb->model, c, label_a, label_b);
  }
  // With gates, atol/rtol judge only when given: the default atol would fail (or pass) what the
  // gates were chosen to decide.
  const bool tolerance_applies = o.gates.empty() || o.given.count("--atol") || o.given.count("--rtol");
  const std::vector<GateVerdict> verdicts = judge_gates(r, o.gates);
  std::vector<const GateVerdict*> failed;
  for (const auto& v : verdicts)
    if (!v.result.pass) failed.push_back(&v);
  const bool ok = (!tolerance_applies || r.within) && failed.empty();
  auto side_json = [](const std::optional<runner::SidePlacement>& s) {
    return s ? placement_json(&s->device, s->placement) : nlohmann::json(nullptr);
  };
  const runner::LayerDiff* first_bad = r.first_beyond < 0 ? nullptr : &r.layers[static_cast<size_t>(r.first_beyond)];

  if (o.json) {
    nlohmann::json outs = nlohmann::json::array();
    for (size_t i = 0; i < r.outputs.size(); ++i) {
      auto j = to_json(r.outputs[i], r.output_diffs[i]);
      nlohmann::json gates = nlohmann::json::array();
      for (const auto& v : verdicts) {
        if (v.output != i) continue;
        // Pooled figures (cosine, SQNR over every sample together) were measured on no one sample.
        const bool measured = v.problem.empty();
        const bool one_sample = measured && v.result.sample >= 0;
        gates.push_back({{"gate", gate_flag(v.gate.kind)},
                         {"metric", v.result.by_rel_error ? "max_rel_error" : runner::gate_metric(v.gate.kind)},
                         {"threshold", v.gate.threshold},
                         {"measured", measured ? json_number(v.result.measured) : nlohmann::json(nullptr)},
                         {"sample", one_sample ? nlohmann::json(sample_names[static_cast<size_t>(v.result.sample)]) : nlohmann::json(nullptr)},
                         {"pass", v.result.pass},
                         {"problem", v.problem.empty() ? nlohmann::json(nullptr) : nlohmann::json(v.problem)}});
      }
      j["gates"] = gates;
      outs.push_back(j);
    }
    nlohmann::json doc = {{"a", o.a}, {"b", expect ? nlohmann::json(nullptr) : nlohmann::json(b_path)},
                          {"expect", expect ? nlohmann::json(o.expect_dir) : nlohmann::json(nullptr)},
                          {"device_a", c.device_a.to_string()},
                          {"device_b", expect ? nlohmann::json(nullptr) : nlohmann::json(c.device_b.to_string())},
                          {"samples", c.samples}, {"sample_names", sample_names}, {"rtol", o.rtol}, {"atol", o.atol},
                          {"tolerance_applied", tolerance_applies},
                          {"within_tolerance", r.within}, {"gates_passed", o.gates.empty() ? nlohmann::json(nullptr) : nlohmann::json(failed.empty())},
                          {"ok", ok}, {"notes", r.notes}, {"outputs", outs},
                          {"random_inputs", random},
                          {"note", random ? nlohmann::json(random_inputs_note()) : nlohmann::json(nullptr)},
                          {"placement_a", side_json(r.placement_a)}, {"placement_b", side_json(r.placement_b)}};
    if (o.per_layer) {
      nlohmann::json worst_layers = nlohmann::json::array();
      for (size_t i : r.worst_layers) {
        auto j = to_json(r.layers[i].tensor, r.layers[i].worst);
        j["node"] = r.layers[i].node;
        worst_layers.push_back(j);
      }
      doc["per_layer"] = {{"matched", r.layers.size()},
                          {"first_beyond_tolerance", first_bad ? nlohmann::json({{"tensor", first_bad->tensor}, {"node", first_bad->node}})
                                                               : nlohmann::json(nullptr)},
                          {"worst", worst_layers}};
    }
    print_json(doc);
  } else {
    for (const auto& n : r.notes) std::cout << n << "\n";
    if (random)
      std::cout << "inputs: " << runner::random_inputs_description(c.feeds)
                << (c.samples > 1 ? ", the seed counting up per sample" : "") << "\nnote: " << random_inputs_note() << "\n";
    if (c.samples > 1) std::cout << c.samples << " samples; max errors of the worst sample, cosine and SQNR over all samples together, mean abs error averaged\n";
    for (size_t i = 0; i < r.outputs.size(); ++i) {
      std::cout << "output " << r.outputs[i] << ": " << describe_worst(r.output_diffs[i], sample_names) << "\n";
      for (const auto& v : verdicts)
        if (v.output == i) std::cout << "  " << (v.result.pass ? "pass " : "FAIL ") << describe_gate(v, sample_names) << "\n";
    }
    if (o.per_layer) {
      std::cout << r.layers.size() << " intermediate tensors matched\n";
      if (first_bad)
        std::cout << "first beyond tolerance: tensor " << first_bad->tensor << " (node " << first_bad->node
                  << "): " << describe_worst(first_bad->worst, sample_names) << "\n";
      std::cout << "worst layers:\n";
      for (size_t i : r.worst_layers)
        std::cout << "  " << r.layers[i].tensor << " (node " << r.layers[i].node << "): " << describe_worst(r.layers[i].worst, sample_names) << "\n";
    }
    if (r.placement_a) std::cout << "A: " << placement_line(&r.placement_a->device, r.placement_a->placement) << "\n";
    if (r.placement_b) std::cout << "B: " << placement_line(&r.placement_b->device, r.placement_b->placement) << "\n";
    if (tolerance_applies)
      std::cout << (r.within ? "within" : "beyond") << " tolerance (rtol " << o.rtol << ", atol " << o.atol << ")\n";
    else
      std::cout << "tolerance not applied: gates decide (give --atol or --rtol to apply it too)\n";
    if (!o.gates.empty())
      std::cout << (failed.empty() ? "gates passed" : "gates failed") << " (" << verdicts.size() - failed.size() << " of "
                << verdicts.size() << ")\n";
  }
  // One line on stderr for CI logs: the first failure and the count of the others.
  std::vector<std::string> failures;
  for (const auto* v : failed) failures.push_back("output " + r.outputs[v->output] + ": " + describe_gate(*v, sample_names) + " fails");
  for (size_t i = 0; tolerance_applies && i < r.outputs.size(); ++i)
    if (const runner::WorstDiff& w = r.output_diffs[i]; !w.diff.within())
      failures.push_back("output " + r.outputs[i] + ": beyond tolerance (rtol " + number_text(o.rtol) + ", atol " + number_text(o.atol) +
                         ") on sample " + sample_names[static_cast<size_t>(w.sample)] + ": " + describe_worst(w, sample_names));
  if (!failures.empty()) {
    std::cerr << failures[0];
    if (failures.size() > 1)
      std::cerr << " (and " << failures.size() - 1 << " more failure" << (failures.size() > 2 ? "s" : "") << ")";
    std::cerr << "\n";
  }
  return ok ? kExitOk : kExitFailed;
}

}  // namespace

void register_compare(CLI::App& app, Action& action) {
  auto o = std::make_shared<CompareCliOptions>();
  CLI::App* sub = app.add_subcommand("compare", "Run two models on the same inputs and compare outputs (exit 1 beyond tolerance)");
  sub->add_option("A", o->a, "reference model")->required();
  sub->add_option("B", o->b, "model to check (omit it to compare MODEL on --device-a and --device-b)");
  sub->add_option("--input", o->inputs, "NAME=FILE (.npy or .pb); repeatable");
  sub->add_option("--inputs", o->inputs_dir, "folder of one sample's inputs, or a folder of sample folders (each is one sample)");
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
  sub->add_flag("--random", o->random, "random inputs (the default when no input is given)");
  sub->add_option("--seed", o->seed, "seed of the first random sample (default 0)")->check(number_in(0, kMaxSeed));
  sub->add_option("--shape", o->shapes, "NAME=D1,D2,... sizes for symbolic dims of random inputs");
  add_input_range_option(sub, o->input_ranges);
  sub->add_option("--outputs", o->outputs, "compare and judge only these outputs of A (comma-separated; default all)")->delimiter(',');
  sub->add_option("--samples", o->samples, "random samples to run (default 1)")->check(number_in(1, 1e6));
  sub->add_option("--atol", o->atol, "absolute tolerance (default 1e-5; with gates, applied only when given)")->check(number_in(0, 1e30));
  sub->add_option("--rtol", o->rtol, "relative tolerance (default 1e-3)")->check(number_in(0, 1e30));
  sub->add_flag("--per-layer", o->per_layer, "compare the intermediate tensors both models have");
  sub->add_option("--device", o->device, "device both models run on: cpu (default), vulkan or vulkan:N");
  sub->add_option("--device-a", o->device_a, "device of A (default: --device)");
  sub->add_option("--device-b", o->device_b, "device of B (default: --device)");
  sub->add_flag("--json", o->json, "print one JSON document");
  add_quiet_flag(sub);
  add_model_run_flags(sub);
  sub->callback([&action, o, sub] {
    o->given = given_options(*sub);
    action = [o] { return run_compare(*o); };
  });
}

}  // namespace onnxtool::cli
