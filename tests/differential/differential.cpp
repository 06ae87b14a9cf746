// Differential testing of onnxtool's rewrites: every generated model (tests/differential/
// generator.h), or every given model, goes through each command path that changes a model:
//
//   optimize    the default pipeline (what `onnxtool optimize` runs)
//   opset_down  convert to a lower opset (drawn by the seed, 7 and up)
//   opset_up    convert to a higher opset (up to 21)
//   fp16        float16 with range guard and preprocessing, as `onnxtool convert --to-fp16` does
//               (--keep-io-types on even seeds, --block-ops Sigmoid on every third)
//   fp16_fp32   that float16 model converted back to float32 (judged against the float16
//               model, as `onnxtool convert --to-fp32` verifies it)
//   quantize    static QDQ quantization as `onnxtool quantize --mode static --calib-data` runs
//               it (preprocessing, the accuracy search, group dropping, folded Relu/Clip), every
//               op type it handles named by --op-types so that the speed estimate keeps these
//               small models' groups; calibrated on 4 random samples of other seeds. Judged by
//               cosine on the first calibration sample (where quantize measured its accuracy
//               target; on new inputs the ranges of a few dozen values fall short, which says
//               nothing of the rewrite): each output of 2 or more elements at >= 0.9 to the
//               original in onnxtool's runner, and onnxruntime on the quantized model (its graph
//               optimizations off: the same QDQ graph) at >= 0.99 to onnxtool's runner on it. A
//               model nothing is quantized in is counted as refused.
//
// Each result must pass the checker and agree with the original, on the same seeded inputs, in
// onnxtool's runner and in onnxruntime (all models of a run go through one onnxruntime-node
// process, tests/ort/ort_run.js --batch, at its "extended" optimization level: the "all" level
// adds layout transformations that crash onnxruntime 1.30 (SIGSEGV) on a float16 Transpose ->
// MatMul -> Add model and lose accuracy on a float16 Conv -> LayerNorm one; --ort-level changes
// it). The original itself must agree between the two
// runtimes. A conversion onnxtool refuses (a node with no equivalent at the target opset) is
// counted, not failed; a model onnxruntime has no kernel for is counted, not failed.
//
//   onnxtool_differential --seeds FIRST-LAST [--ort ORT_RUN_JS] [--work DIR] [--minimize DIR]
//   onnxtool_differential --models FILE... [--ort ORT_RUN_JS] [--work DIR]
//
// --generate DIR only writes the models of --seeds to DIR (seed_<seed>.onnx, the input shapes in
// their metadata) and runs nothing: models for other tests (tests/cli/writers_check.sh).
// --save DIR writes each generated original to DIR (seed_<seed>.onnx). --keep leaves every case's
// files (each path's model, inputs, outputs, the calibration samples) in the work directory.
// --minimize DIR: a failing seed is shrunk (its blocks left out one by one while the failure
// stays) and written to DIR as seed_<seed>_<path>.onnx, the input shapes in its metadata, ready
// to go to testdata/regressions/. --allow-runtime-bugs converts to float16 the node patterns
// convert/runtime_departures.h keeps in float32, to see what onnxruntime gets wrong without them.
// --report-blocks B,... adds the tally of the models holding any of those blocks. Exit 0 when
// nothing disagrees, 1 otherwise, 2 for bad usage.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checker/checker.h"
#include "convert/precision.h"
#include "convert/version_converter.h"
#include "ir/error.h"
#include "ir/model_io.h"
#include "passes/pass.h"
#include "quant/quantize.h"
#include "runner/feeds.h"
#include "runner/session.h"
#include "runner/tensor_io.h"
#include "tests/differential/generator.h"
#include "verify/fp16_guided.h"
#include "verify/reference.h"

namespace fs = std::filesystem;
using namespace onnxtool;

namespace {

constexpr const char* kShapeKey = "onnxtool.differential.input_shape.";  // metadata: NAME -> "2,3,4"
// metadata: the seed a generated model came from; a kept model is run with that seed's inputs and
// opset targets.
constexpr const char* kSeedKey = "onnxtool.differential.seed";
constexpr int64_t kLowestDown = 7;
constexpr int64_t kHighestUp = 21;

const std::vector<std::string>& path_names() {
  static const std::vector<std::string> names{"optimize", "opset_down", "opset_up", "fp16", "fp16_fp32", "quantize"};
  return names;
}

ir::Model clone(const ir::Model& m) {
  const std::string bytes = ir::serialize_model(m);
  return ir::parse_model(ir::Bytes::copy_of(bytes.data(), bytes.size()), "clone", "");
}

/// The conversions of one opset path to one target opset.
struct TargetTally {
  int64_t agreed = 0, ort_agreed = 0;
  std::map<std::string, int64_t> refused;  ///< by reason: the op and why, names left out
};

/// What happened to one case, or to many added up.
struct Tally {
  std::map<std::string, int64_t> agreed, refused, ort_unsupported, ort_agreed;
  std::map<std::pair<std::string, int64_t>, TargetTally> targets;  ///< by (path, target opset)
  int64_t cases = 0;
  int64_t accuracy_kept = 0;  ///< float16 conversions that kept values in float32 for accuracy
  std::vector<std::string> failures;
  std::map<std::string, int64_t> blocks;

  void add(const Tally& o) {
    for (auto [into, from] : {std::pair{&agreed, &o.agreed}, {&refused, &o.refused}, {&ort_unsupported, &o.ort_unsupported},
                              {&ort_agreed, &o.ort_agreed}, {&blocks, &o.blocks}})
      for (const auto& [k, n] : *from) (*into)[k] += n;
    for (const auto& [key, t] : o.targets) {
      TargetTally& into = targets[key];
      into.agreed += t.agreed;
      into.ort_agreed += t.ort_agreed;
      for (const auto& [why, n] : t.refused) into.refused[why] += n;
    }
    cases += o.cases;
    accuracy_kept += o.accuracy_kept;
    failures.insert(failures.end(), o.failures.begin(), o.failures.end());
  }
};

/// One model under test: the original, how to feed it, and the results of each path.
struct Case {
  std::string label;  ///< "seed 17" or the file name
  std::string dir;    ///< its folder under the work directory
  uint64_t seed = 0;
  std::string description;
  std::vector<std::string> blocks;  ///< the generator's blocks (generated cases)
  ir::Model original;
  std::map<std::string, std::vector<int64_t>> shapes;
  std::unique_ptr<verify::Reference> reference;
  /// The float16 result run on the same inputs: what fp16_fp32 must reproduce, as `onnxtool
  /// convert --to-fp32` verifies it (the original's float32 values are not there to recover).
  std::unique_ptr<verify::Reference> fp16_reference;
  /// The quantized model run in onnxtool's runner: what onnxruntime's run of it is judged against.
  std::unique_ptr<verify::Reference> quantized_reference;
  /// float16 beyond tolerance fails instead of counting as refused (the kept regression models
  /// all convert).
  bool fp16_must_pass = false;
  Tally tally;  ///< its results, in onnxtool's runner and in onnxruntime
};

struct OrtJob {
  Case* c;
  const verify::Reference* judge;
  std::string path;  ///< "original" or a path name
  verify::Tolerance tolerance;
  std::string model, output_dir;
  std::map<std::string, std::string> inputs;
  double min_cosine = -1;  ///< judged by cosine (outputs of 2 or more elements) instead of tolerance
  std::string level;       ///< onnxruntime's optimization level for this job ("": the run's)
  int64_t target = 0;      ///< the opset an opset path converted to
};

constexpr double kQuantizedCosine = 0.9;    // quantized against the original, onnxtool's runner
constexpr double kQuantizedAgreement = 0.99;  // onnxruntime against onnxtool's runner, same QDQ graph

/// "" when every float output of 2 or more elements has cosine >= min_cosine (and none is
/// missing, misshapen or has NaN/Inf where the other has not); else the first problem.
std::string cosine_failure(const verify::VerifyResult& r, double min_cosine) {
  for (const auto& o : r.outputs) {
    if (o.exact) {
      if (!o.within) return "output '" + o.name + "': " + o.why;
      continue;
    }
    if (!o.diff.problem.empty()) return "output '" + o.name + "': " + o.diff.problem;
    if (o.diff.nonfinite_count) return "output '" + o.name + "': NaN/Inf differ";
    if (o.diff.elements >= 2 && !(o.diff.cosine >= min_cosine))
      return "output '" + o.name + "': cosine " + std::to_string(o.diff.cosine) + " < " + std::to_string(min_cosine);
  }
  return "";
}

int64_t down_target(const Case& c, int64_t opset) {
  return opset <= kLowestDown ? 0 : kLowestDown + static_cast<int64_t>((c.seed * 7 + 3) % static_cast<uint64_t>(opset - kLowestDown));
}
int64_t up_target(const Case& c, int64_t opset) {
  return opset >= kHighestUp ? 0 : opset + 1 + static_cast<int64_t>((c.seed * 13 + 5) % static_cast<uint64_t>(kHighestUp - opset));
}
/// The target of an opset path for the case (0 for the other paths, or when there is none).
int64_t target_of(const Case& c, const std::string& path) {
  const int64_t opset = c.original.opset_version("").value_or(0);
  if (path == "opset_down") return down_target(c, opset);
  if (path == "opset_up") return up_target(c, opset);
  return 0;
}

/// A refusal as a reason to count: "Op: why", the node's and values' names and the shapes left
/// out ("node 'add_3' (Max): no equivalent at opset 7: input 1 [N,1] ..." -> "Max: input 1 [] ...").
std::string refusal_reason(const std::string& message) {
  std::string op = "?";
  const size_t open = message.find(" ("), close = message.find("): ");
  if (open != std::string::npos && close != std::string::npos && close > open) op = message.substr(open + 2, close - open - 2);
  const std::string marker = "no equivalent at opset ";
  size_t why = message.find(marker);
  why = why == std::string::npos ? 0 : message.find(": ", why) + 2;
  std::string out;
  char skip_to = 0;
  for (size_t i = why; i < message.size(); ++i) {
    const char ch = message[i];
    if (skip_to) {
      if (ch == skip_to) skip_to = 0;
      continue;
    }
    // A name is quoted after a space or a parenthesis ("output's" is not a quote).
    const bool name_quote = ch == '\'' && (i == why || message[i - 1] == ' ' || message[i - 1] == '(');
    if (name_quote || ch == '[') {
      out += ch == '[' ? "[]" : "''";
      skip_to = ch == '[' ? ']' : '\'';
      continue;
    }
    out += ch;
  }
  return op + ": " + out;
}

std::map<std::string, std::string> write_feeds(const std::map<std::string, runner::Value>& feeds, const std::string& dir);

bool allow_runtime_bugs = false;  // --allow-runtime-bugs

/// Applies a path to a copy of the original. nullopt with `refused` set when onnxtool declined.
/// `accuracy_kept` is set when a float16 conversion kept values in float32 for accuracy.
std::optional<ir::Model> apply(const Case& c, const std::string& path, const ir::Model* fp16, std::string* refused,
                               bool* accuracy_kept) {
  ir::Model m = path == "fp16_fp32" ? clone(*fp16) : clone(c.original);
  const int64_t opset = c.original.opset_version("").value_or(0);
  if (path == "optimize") {
    passes::optimize(m, passes::OptimizeOptions{});
  } else if (path == "opset_down" || path == "opset_up") {
    const int64_t target = path == "opset_down" ? down_target(c, opset) : up_target(c, opset);
    if (target == 0) {
      *refused = "no opset to go to";
      return std::nullopt;
    }
    try {
      convert::convert_opset(m, target);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kFailed) throw;
      *refused = e.what();
      return std::nullopt;
    }
  } else if (path == "fp16") {
    // As `onnxtool convert --to-fp16` does it: fold first, keep in float32 what overflows, then
    // where float16 departs beyond tolerance.
    const auto prepare = [&c] {
      ir::Model fresh = clone(c.original);
      convert::preprocess_for_fp16(fresh);
      return fresh;
    };
    ir::Model base = prepare();
    convert::Fp16Options f;
    f.keep_io_types = c.seed % 2 == 0;
    // Every third seed keeps Sigmoid in float32, as a conversion that keeps a detector's Sigmoid
    // for accuracy (or asked to, --block-ops) writes it: its float16 readers then read a Cast.
    if (c.seed % 3 == 0) f.block_ops = {"Sigmoid"};
    f.allow_runtime_bugs = allow_runtime_bugs;
    verify::GuidedFp16 g = verify::to_fp16_guided(base, prepare, f, *c.reference, verify::kFp16Tolerance);
    *accuracy_kept = !g.accuracy_values.empty();
    return std::move(g.model);
  } else if (path == "fp16_fp32") {
    try {
      convert::to_fp32(m);
    } catch (const Error& e) {
      // The accuracy guide kept every value in float32 (float16 picks other peaks on these
      // inputs): nothing to widen, as `onnxtool convert --to-fp32` would say.
      if (e.kind() != ErrorKind::kUsage) throw;
      *refused = e.what();
      return std::nullopt;
    }
  } else if (path == "quantize") {
    std::set<std::string> present;  // the op types static quantization handles, in every graph
    ir::for_each_graph(m, [&present](ir::Graph& g) {
      for (const auto& n : g.nodes())
        if (n && n->domain.empty()) present.insert(n->op_type);
    });
    quant::QuantizeOptions q;
    q.mode = quant::Mode::kStatic;
    q.auto_exclude = true;  // the accuracy target holds, as the command's default with --calib-data
    for (const std::string& op : quant::op_types_of(quant::Mode::kStatic))
      if (present.count(op)) q.op_types.push_back(op);
    if (q.op_types.empty()) {
      *refused = "no op static quantization handles";
      return std::nullopt;
    }
    // Calibration samples: random inputs of other seeds, as sample folders.
    std::vector<std::string> dirs;
    ir::Model probe_model = clone(c.original);
    runner::Session probe(probe_model);
    for (uint64_t k = 0; k < 4; ++k) {
      runner::FeedOptions f;
      f.random = true;
      f.seed = c.seed * 1000 + 101 + k;
      f.shapes = c.shapes;
      dirs.push_back(c.dir + "/calib/s" + std::to_string(k));
      write_feeds(runner::load_feeds(probe, f), dirs.back());
    }
    try {
      const quant::QuantizeReport r = quant::quantize_model(m, q, /*preprocess=*/true, dirs);
      if (r.quantized_nodes == 0) {
        *refused = "nothing quantized";
        return std::nullopt;
      }
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kFailed) throw;
      *refused = e.what();
      return std::nullopt;
    }
  }
  return m;
}

std::string first_error(const checker::CheckResult& r) {
  for (const auto& d : r.diagnostics)
    if (d.severity == ir::Severity::kError) return d.rule + " " + d.node + ": " + d.message;
  return "?";
}

/// Writes the feeds as DIR/<safe name>.npy; returns their files by input name.
std::map<std::string, std::string> write_feeds(const std::map<std::string, runner::Value>& feeds, const std::string& dir) {
  fs::create_directories(dir);
  std::map<std::string, std::string> files;
  for (const auto& [name, v] : feeds) {
    const std::string file = dir + "/" + runner::safe_file_name(name) + ".npy";
    runner::write_npy(file, v.tensor);
    files[name] = file;
  }
  return files;
}

/// Runs every path of one case in onnxtool's runner; queues the models for onnxruntime. Returns
/// the failures ("seed 17 fp16: ...").
std::vector<std::string> run_case(Case& c, std::vector<OrtJob>* jobs, const std::string& only_path = "") {
  Tally& tally = c.tally;
  std::vector<std::string>& failures = tally.failures;
  fs::create_directories(c.dir);
  try {
    verify::VerifyInputs in;
    in.feeds.random = true;
    in.feeds.seed = c.seed;
    in.feeds.shapes = c.shapes;
    c.reference = std::make_unique<verify::Reference>(c.original, in);
  } catch (const Error& e) {
    failures.push_back(c.label + " original: " + e.what());
    return failures;
  }
  const auto queue = [&](const std::string& path, ir::Model& m, const verify::Tolerance& tol, const verify::Reference& judge) {
    if (!jobs) return;
    OrtJob job{&c, &judge, path, tol, c.dir + "/" + path + ".onnx", c.dir + "/" + path + "_out", {}};
    ir::save_model(m, job.model);
    job.inputs = write_feeds(c.reference->feeds_for(m), c.dir + "/" + path + "_in");
    jobs->push_back(std::move(job));
  };
  if (only_path.empty() || only_path == "original") queue("original", c.original, verify::kRewriteTolerance, *c.reference);

  std::optional<ir::Model> fp16;
  for (const auto& path : path_names()) {
    if (!only_path.empty() && path != only_path && !(only_path == "fp16_fp32" && path == "fp16")) continue;
    if (path == "fp16_fp32" && !fp16) continue;
    const verify::Tolerance tol = path.rfind("fp16", 0) == 0 ? verify::kFp16Tolerance : verify::kRewriteTolerance;
    std::string refused;
    std::optional<ir::Model> m;
    try {
      bool accuracy_kept = false;
      m = apply(c, path, fp16 ? &*fp16 : nullptr, &refused, &accuracy_kept);
      tally.accuracy_kept += accuracy_kept;
    } catch (const Error& e) {
      failures.push_back(c.label + " " + path + ": onnxtool failed: " + e.what());
      continue;
    }
    const int64_t target = target_of(c, path);
    if (!m) {
      tally.refused[path]++;
      if (target) tally.targets[{path, target}].refused[refusal_reason(refused)]++;
      continue;
    }
    const std::string file = c.dir + "/" + path + ".onnx";
    ir::save_model(*m, file);
    const checker::CheckResult checked = checker::check_file(file);
    if (checked.errors) {
      failures.push_back(c.label + " " + path + ": the result does not pass check: " + first_error(checked));
      continue;
    }
    const verify::Reference& judge = path == "fp16_fp32" ? *c.fp16_reference : *c.reference;
    if (path == "quantize") {
      // Judged by cosine in onnxtool's runner; onnxruntime then runs the same QDQ graph
      // against onnxtool's runner on it.
      try {
        // On a calibration sample: where quantize measured its accuracy target (on new random
        // inputs, 4 samples of a few elements leave ranges short, a check of calibration, not
        // of the rewrite).
        verify::VerifyInputs in;
        in.feeds.dir = c.dir + "/calib/s0";
        ir::Model original = clone(c.original);
        const verify::Reference on_calibration(original, in);
        const std::string why = cosine_failure(on_calibration.check(*m, tol), kQuantizedCosine);
        if (!why.empty()) {
          failures.push_back(c.label + " " + path + ": onnxtool's runner: " + why);
          continue;
        }
        in.feeds.dir = c.dir + "/quantize_in";
        const auto files = write_feeds(on_calibration.feeds_for(*m), in.feeds.dir);
        c.quantized_reference = std::make_unique<verify::Reference>(*m, in);
        if (jobs) {
          OrtJob job{&c, c.quantized_reference.get(), path, tol, c.dir + "/quantize.onnx", c.dir + "/quantize_out", files,
                     kQuantizedAgreement, "disabled"};
          jobs->push_back(std::move(job));
        }
      } catch (const Error& e) {
        failures.push_back(c.label + " " + path + ": " + e.what());
        continue;
      }
      tally.agreed[path]++;
      continue;
    }
    try {
      const verify::VerifyResult r = judge.check(*m, tol);
      if (!r.ok() && path == "fp16" && !c.fp16_must_pass) {
        // float16 loses more than its tolerance here: `onnxtool convert --to-fp16` runs this very
        // check and refuses to write (exit 1, "keep more in float32"). Refused, not silent.
        tally.refused[path]++;
        continue;
      }
      if (!r.ok()) {
        failures.push_back(c.label + " " + path + ": onnxtool's runner: " + r.first_failure());
        continue;
      }
    } catch (const Error& e) {
      failures.push_back(c.label + " " + path + ": " + e.what());
      continue;
    }
    tally.agreed[path]++;
    if (target) tally.targets[{path, target}].agreed++;
    queue(path, *m, tol, judge);
    if (jobs && target) jobs->back().target = target;
    if (path == "fp16") {
      // Its inputs as queue wrote them for onnxruntime (written here when onnxruntime is not run).
      verify::VerifyInputs in;
      in.feeds.dir = c.dir + "/fp16_in";
      if (!jobs) write_feeds(c.reference->feeds_for(*m), in.feeds.dir);
      c.fp16_reference = std::make_unique<verify::Reference>(*m, in);
      fp16 = std::move(m);
    }
  }
  return failures;
}

/// Runs the jobs in one onnxruntime-node process; returns the failures (each also in its case's
/// tally). Models onnxruntime has no kernel for are tallied, not failed; a model it rejects
/// otherwise is a failure. Should the process die on a model, that model is a failure and the
/// rest go to a new process.
std::string ort_level = "extended";  // --ort-level

std::vector<std::string> run_ort(const std::string& ort_run, const std::string& work, std::vector<OrtJob>& jobs) {
  std::vector<std::string> failures;
  const auto fail = [&failures](Case& c, const std::string& why) {
    failures.push_back(why);
    c.tally.failures.push_back(why);
  };
  size_t next = 0;
  while (next < jobs.size()) {
    nlohmann::json list = nlohmann::json::array();
    for (size_t j = next; j < jobs.size(); ++j) {
      list.push_back({{"model", jobs[j].model}, {"inputs", jobs[j].inputs}, {"output_dir", jobs[j].output_dir}});
      if (!jobs[j].level.empty()) list.back()["level"] = jobs[j].level;
    }
    const std::string jobs_file = work + "/jobs.json", results = work + "/results.jsonl", errors = work + "/ort.stderr";
    std::ofstream(jobs_file) << list.dump();
    const std::string command = "node '" + ort_run + "' --batch '" + jobs_file + "' --threads 1 --level " + ort_level + " > '" + results + "' 2> '" + errors + "'";
    const bool clean_exit = std::system(command.c_str()) == 0;
    std::ifstream in(results);
    std::string line;
    while (next < jobs.size() && std::getline(in, line)) {
      if (line.empty() || line[0] != '{') continue;
      OrtJob& job = jobs[next++];
      Tally& tally = job.c->tally;
      const auto r = nlohmann::json::parse(line);
      const std::string label = job.c->label + " " + job.path;
      if (!r.value("ok", false)) {
        const std::string error = r.value("error", "");
        if (error.find("NOT_IMPLEMENTED") != std::string::npos || error.find("Could not find an implementation") != std::string::npos)
          tally.ort_unsupported[job.path]++;
        else
          fail(*job.c, label + ": onnxruntime cannot run it: " + error.substr(0, 300));
        continue;
      }
      std::map<std::string, runner::Tensor> outputs;
      for (const auto& o : r["outputs"]) outputs.emplace(o["name"].get<std::string>(), runner::read_npy(o["file"].get<std::string>()));
      const verify::VerifyResult v = job.judge->compare(outputs, job.tolerance);
      const std::string why = job.min_cosine >= 0 ? cosine_failure(v, job.min_cosine) : (v.ok() ? "" : v.first_failure());
      if (!why.empty())
        fail(*job.c, label + ": onnxruntime: " + why);
      else
        tally.ort_agreed[job.path]++;
      if (why.empty() && job.target) tally.targets[{job.path, job.target}].ort_agreed++;
    }
    if (next < jobs.size()) {
      std::ifstream err(errors);
      std::string text((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
      const size_t cut = text.find_last_of('\n', text.size() > 1 ? text.size() - 2 : 0);
      fail(*jobs[next].c, jobs[next].c->label + " " + jobs[next].path + ": onnxruntime-node " + (clean_exit ? "stopped" : "died") +
                              " on it: " + (cut == std::string::npos ? text : text.substr(cut + 1)));
      ++next;
    }
  }
  return failures;
}

Case make_case(uint64_t seed, const std::vector<bool>& keep, const std::string& work) {
  differential::Generated g = differential::generate(seed, keep);
  Case c;
  c.label = "seed " + std::to_string(seed);
  c.dir = work + "/seed_" + std::to_string(seed);
  c.seed = seed;
  c.description = g.description;
  c.blocks = g.blocks;
  c.shapes = g.input_shapes;
  c.original = clone(g.model);  // as read back from bytes, like a model from a file
  for (const auto& [name, dims] : g.input_shapes) {
    std::string text;
    for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
    c.original.metadata_props.push_back({kShapeKey + name, text, 0, ""});
  }
  c.original.metadata_props.push_back({kSeedKey, std::to_string(seed), 0, ""});
  return c;
}

Case load_case(const std::string& file, uint64_t index, const std::string& work) {
  Case c;
  c.label = fs::path(file).filename().string();
  c.dir = work + "/model_" + std::to_string(index);
  c.seed = index;
  c.original = ir::load_model(file).model;
  for (const auto& p : c.original.metadata_props) {
    if (p.key == kSeedKey) c.seed = std::stoull(p.value);
    if (p.key.rfind(kShapeKey, 0) != 0) continue;
    std::vector<int64_t> dims;
    std::stringstream in(p.value);
    for (std::string d; std::getline(in, d, ',');) dims.push_back(std::stoll(d));
    c.shapes[p.key.substr(std::string(kShapeKey).size())] = dims;
  }
  c.description = c.label;
  c.fp16_must_pass = true;
  return c;
}

/// The path a failure line names ("seed 17 fp16: ..." -> "fp16").
std::string failing_path(const std::string& failure) {
  for (const auto& p : path_names())
    if (failure.find(" " + p + ":") != std::string::npos) return p;
  return failure.find(" original:") != std::string::npos ? "original" : "";
}

/// Shrinks a failing seed: leaves blocks out one at a time while the same path still fails (in
/// the runner or in onnxruntime); writes the smallest model found.
void minimize(uint64_t seed, const std::string& path, const std::string& ort_run, const std::string& work, const std::string& out_dir) {
  const size_t n = differential::generate(seed).blocks.size();
  std::vector<bool> keep(n, true);
  const auto fails = [&](const std::vector<bool>& k) {
    Case c = make_case(seed, k, work + "/minimize");
    std::vector<OrtJob> jobs;
    auto f = run_case(c, ort_run.empty() ? nullptr : &jobs, path);
    if (f.empty() && !ort_run.empty()) {
      jobs.erase(std::remove_if(jobs.begin(), jobs.end(), [&](const OrtJob& j) { return j.path != path; }), jobs.end());
      f = run_ort(ort_run, work + "/minimize", jobs);
    }
    return !f.empty();
  };
  for (size_t i = 0; i < n; ++i) {
    keep[i] = false;
    if (!fails(keep)) keep[i] = true;
  }
  Case c = make_case(seed, keep, work);
  fs::create_directories(out_dir);
  const std::string file = out_dir + "/seed_" + std::to_string(seed) + "_" + path + ".onnx";
  c.original.doc_string = "differential regression: " + path + "; " + c.description;
  ir::save_model(c.original, file);
  std::cout << "minimized: " << file << " (" << std::count(keep.begin(), keep.end(), true) << " of " << n << " blocks)\n";
}

/// One line per path of the tally: agreed in each runtime, refused.
void print_paths(Tally& t, bool ort, const std::string& indent) {
  for (const auto& p : path_names())
    std::cout << indent << p << ": " << t.agreed[p] << " agree in onnxtool's runner"
              << (!ort ? "" : ", " + std::to_string(t.ort_agreed[p]) + " in onnxruntime (" + std::to_string(t.ort_unsupported[p]) + " without an onnxruntime kernel)")
              << ", " << t.refused[p] << " refused by onnxtool" << (p == "fp16" ? " (a node with no equivalent, or beyond tolerance in verification), " +
                                   std::to_string(t.accuracy_kept) + " kept values in float32 for accuracy"
                             : p == "fp16_fp32" ? " (nothing left in float16)"
                             : p == "quantize"  ? " (nothing quantized, or no quantization reaches the accuracy target)"
                                                : " (a node with no equivalent at the target)") << "\n";
  for (const auto& [key, target] : t.targets) {
    int64_t refused = 0;
    for (const auto& r : target.refused) refused += r.second;
    std::cout << indent << key.first << " to opset " << key.second << ": " << target.agreed << " converted and agree in onnxtool's runner"
              << (!ort ? "" : ", " + std::to_string(target.ort_agreed) + " in onnxruntime") << ", " << refused << " refused\n";
    for (const auto& [why, n] : target.refused) std::cout << indent << "    " << n << " x " << why << "\n";
  }
  if (ort)
    std::cout << indent << "original: " << t.ort_agreed["original"] << " agree between onnxtool's runner and onnxruntime ("
              << t.ort_unsupported["original"] << " without an onnxruntime kernel)\n";
}

[[noreturn]] void usage(const std::string& problem) {
  std::cerr << "onnxtool_differential: " << problem
            << "\nusage: onnxtool_differential (--seeds FIRST-LAST | --models FILE...) [--ort ORT_RUN_JS] [--ort-level L] [--work DIR] [--minimize DIR] [--save DIR] [--keep] [--allow-runtime-bugs] [--report-blocks B,...]\n"
            << "       onnxtool_differential --seeds FIRST-LAST --generate DIR\n";
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t first = 0, last = 0;
  bool seeds = false;
  std::vector<std::string> models;
  std::string ort_run, work, minimize_dir, save_dir, generate_dir;
  std::set<std::string> report_blocks;
  bool keep_files = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--seeds") {
      const std::string v = value();
      const auto dash = v.find('-');
      try {
        first = std::stoull(v.substr(0, dash));
        last = dash == std::string::npos ? first : std::stoull(v.substr(dash + 1));
      } catch (const std::exception&) {
        usage("--seeds takes FIRST-LAST, not '" + v + "'");
      }
      if (last < first) usage("--seeds: " + v + " is empty");
      seeds = true;
    } else if (a == "--models") {
      while (i + 1 < argc && argv[i + 1][0] != '-') models.push_back(argv[++i]);
    } else if (a == "--ort") {
      ort_run = value();
    } else if (a == "--work") {
      work = value();
    } else if (a == "--ort-level") {
      ort_level = value();
    } else if (a == "--generate") {
      generate_dir = value();
    } else if (a == "--save") {
      save_dir = value();
    } else if (a == "--minimize") {
      minimize_dir = value();
    } else if (a == "--keep") {
      keep_files = true;
    } else if (a == "--allow-runtime-bugs") {
      allow_runtime_bugs = true;
    } else if (a == "--report-blocks") {
      std::stringstream list(value());
      for (std::string b; std::getline(list, b, ',');) {
        if (std::find(differential::block_kinds().begin(), differential::block_kinds().end(), b) == differential::block_kinds().end())
          usage("--report-blocks: no block '" + b + "'");
        report_blocks.insert(b);
      }
    } else {
      usage("unknown argument '" + a + "'");
    }
  }
  if (seeds == !models.empty()) usage("give --seeds or --models");
  if (!generate_dir.empty()) {
    if (!seeds) usage("--generate takes --seeds");
    fs::create_directories(generate_dir);
    for (uint64_t seed = first; seed <= last; ++seed)
      ir::save_model(make_case(seed, {}, generate_dir).original, generate_dir + "/seed_" + std::to_string(seed) + ".onnx");
    std::cout << "generated " << last - first + 1 << " models in " << generate_dir << "\n";
    return 0;
  }
  const bool own_work = work.empty();
  if (own_work) {
    char tmpl[] = "/tmp/onnxtool_differential.XXXXXX";
    if (!mkdtemp(tmpl)) usage("cannot make a work directory");
    work = tmpl;
  }

  const auto start = std::chrono::steady_clock::now();
  Tally tally, focus;  // every case; the cases holding a block of --report-blocks
  std::vector<std::string> failures;
  // Batches of cases: one onnxruntime process per batch, the batch's files removed after it.
  constexpr uint64_t kBatch = 500;
  const uint64_t total = seeds ? last - first + 1 : models.size();
  for (uint64_t begin = 0; begin < total; begin += kBatch) {
    const uint64_t end = std::min(total, begin + kBatch);
    std::vector<std::unique_ptr<Case>> cases;
    std::vector<OrtJob> jobs;
    for (uint64_t k = begin; k < end; ++k) {
      cases.push_back(std::make_unique<Case>(seeds ? make_case(first + k, {}, work) : load_case(models[k], k, work)));
      Case& c = *cases.back();
      c.tally.cases = 1;
      if (!save_dir.empty()) {
        fs::create_directories(save_dir);
        ir::save_model(c.original, save_dir + "/" + fs::path(c.dir).filename().string() + ".onnx");
      }
      for (const auto& b : c.blocks) c.tally.blocks[b]++;
      for (auto& f : run_case(c, ort_run.empty() ? nullptr : &jobs)) failures.push_back(f + "  [" + c.description + "]");
    }
    for (auto& f : run_ort(ort_run, work, jobs)) failures.push_back(f);
    for (const auto& c : cases) {
      tally.add(c->tally);
      if (std::any_of(c->blocks.begin(), c->blocks.end(), [&](const std::string& b) { return report_blocks.count(b) > 0; }))
        focus.add(c->tally);
    }
    if (!keep_files)
      for (const auto& c : cases) fs::remove_all(c->dir);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  for (const auto& f : failures) std::cout << "FAIL " << f << "\n";
  std::cout << "differential: " << tally.cases << (seeds ? " generated models (seeds " + std::to_string(first) + "-" + std::to_string(last) + ")" : " models")
            << ", " << (ort_run.empty() ? "onnxtool's runner only" : "onnxtool's runner and onnxruntime") << ", " << failures.size()
            << " disagreements, " << static_cast<int64_t>(seconds) << " s\n";
  print_paths(tally, !ort_run.empty(), "  ");
  if (!report_blocks.empty()) {
    std::string names;
    for (const auto& b : report_blocks) names += (names.empty() ? "" : ", ") + b;
    std::cout << "  models holding " << names << ": " << focus.cases << ", " << focus.failures.size() << " disagreements\n";
    print_paths(focus, !ort_run.empty(), "    ");
  }
  if (seeds) {
    std::cout << "  blocks:";
    for (const auto& [b, n] : tally.blocks) std::cout << " " << b << " " << n;
    std::cout << "\n";
  }
  if (!minimize_dir.empty() && seeds) {
    std::map<std::pair<uint64_t, std::string>, bool> done;
    for (const auto& f : failures) {
      if (f.rfind("seed ", 0) != 0) continue;
      const uint64_t seed = std::stoull(f.substr(5));
      const std::string path = failing_path(f);
      if (path.empty() || done[{seed, path}]) continue;
      done[{seed, path}] = true;
      minimize(seed, path, ort_run, work, minimize_dir);
    }
  }
  if (own_work && !keep_files) fs::remove_all(work);
  return failures.empty() ? 0 : 1;
}
