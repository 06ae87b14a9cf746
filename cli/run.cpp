// `onnxtool run MODEL ...`: execute a model on the reference runner.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <set>

#include "cli/common.h"
#include "ir/diagnostic.h"
#include "ir/error.h"
#include "ir/model_io.h"
#include "ir/shape_inference.h"
#include "runner/feeds.h"
#include "runner/session.h"
#include "runner/tensor_io.h"

namespace onnxtool::cli {
namespace {

struct RunOptions {
  std::string model;
  std::vector<std::string> inputs;
  std::string inputs_dir;
  bool random = false;
  uint64_t seed = 0;
  std::vector<std::string> shapes;
  std::string output_dir;
  std::vector<std::string> outputs;
  int threads = 0;
  std::string device = "cpu";
  int benchmark = 0;
  bool json = false;
};

// --output-dir must be a directory or a path where one can be made; checked before running so
// that a bad path costs no run and leaves nothing behind.
void check_output_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(dir);
  if (fs::exists(p, ec)) {
    if (!fs::is_directory(p, ec)) throw_usage_error("--output-dir " + dir + ": exists and is not a directory");
    return;
  }
  // The nearest existing ancestor must be a directory.
  for (fs::path q = p.parent_path(); !q.empty(); q = q.parent_path()) {
    if (fs::exists(q, ec)) {
      if (!fs::is_directory(q, ec))
        throw_usage_error("--output-dir " + dir + ": " + q.string() + " is not a directory");
      return;
    }
    if (q == q.parent_path()) break;
  }
}

void make_output_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw_usage_error("--output-dir " + dir + ": cannot create it (" + ec.message() + ")");
}

int run_model(const RunOptions& o) {
  if (o.threads < 0 || o.threads > 1024) throw_usage_error("--threads must be between 0 and 1024");
  if (o.benchmark < 0) throw_usage_error("--benchmark must be >= 0");
  if (!o.output_dir.empty()) check_output_dir(o.output_dir);
  auto loaded = ir::load_model(o.model);
  refuse_unrunnable(loaded.model, o.model);
  {
    // Static shapes let the session refuse, before running, a model whose tensors cannot fit in
    // memory. Contradictions are `onnxtool check`'s business, not a reason to refuse a run.
    ir::DiagnosticSink sink;
    ir::infer_shapes(loaded.model, sink);
  }
  runner::SessionOptions options;
  options.threads = o.threads;
  options.device = runner::DeviceSpec::parse(o.device);
  runner::Session session(loaded.model, options);

  runner::FeedOptions feed;
  for (const auto& s : o.inputs) feed.files.push_back(parse_assignment(s, "--input"));
  feed.dir = o.inputs_dir;
  feed.random = o.random;
  feed.seed = o.seed;
  for (const auto& s : o.shapes) {
    auto [name, text] = parse_assignment(s, "--shape");
    feed.shapes[name] = parse_size_list("--shape", name, text);
  }
  auto feeds = runner::load_feeds(session, feed);

  std::vector<std::string> names = o.outputs;
  auto results = session.run(feeds, names);
  if (names.empty())
    for (const auto* vi : session.outputs()) names.push_back(vi->value->name());

  std::vector<double> times;
  if (o.benchmark > 0) {
    for (int i = 0; i < o.benchmark; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      session.run(feeds, o.outputs);
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
  }

  std::vector<std::string> files(results.size());
  if (!o.output_dir.empty()) {
    for (size_t i = 0; i < results.size(); ++i)
      if (!results[i].is_tensor())
        throw_usage_error("output '" + names[i] + "' is " + results[i].describe() +
                          ", not a tensor; cannot write .npy");
    // Names that sanitize to the same file ("a/b" and "a_b") must not overwrite each other:
    // the later ones get their output index appended, and the listing says which file is which.
    std::set<std::string> taken;
    for (size_t i = 0; i < results.size(); ++i) {
      std::string stem = runner::safe_file_name(names[i]);
      if (taken.count(stem)) {
        const std::string base = stem;
        for (size_t k = i; taken.count(stem); ++k) stem = base + "_" + std::to_string(k);
      }
      taken.insert(stem);
      files[i] = (std::filesystem::path(o.output_dir) / (stem + ".npy")).string();
      ir::check_not_input(loaded.info, files[i], "--output-dir " + o.output_dir + ": " + files[i]);
    }
    make_output_dir(o.output_dir);
    for (size_t i = 0; i < results.size(); ++i) runner::write_npy(files[i], results[i].tensor);
  }
  auto pct = [&times](double q) { return times[std::min(times.size() - 1, static_cast<size_t>(q * static_cast<double>(times.size() - 1) + 0.5))]; };
  if (o.json) {
    nlohmann::json outs = nlohmann::json::array();
    for (size_t i = 0; i < results.size(); ++i) {
      nlohmann::json j = {{"name", names[i]}};
      if (results[i].is_tensor()) {
        j["dtype"] = std::string(ir::data_type_name(results[i].tensor.dtype()));
        j["shape"] = results[i].tensor.shape();
      } else {
        j["dtype"] = results[i].describe();
        j["shape"] = nullptr;
      }
      j["file"] = files[i].empty() ? nlohmann::json(nullptr) : nlohmann::json(files[i]);
      outs.push_back(j);
    }
    nlohmann::json doc = {{"outputs", outs}, {"threads", o.threads}, {"placement", placement_json(session.device(), session.placement())}};
    if (!times.empty()) doc["latency_ms"] = {{"median", pct(0.5)}, {"min", times.front()}, {"p90", pct(0.9)}, {"runs", times.size()}};
    print_json(doc);
    return kExitOk;
  }
  for (size_t i = 0; i < results.size(); ++i) {
    std::cout << names[i] << ": " << results[i].describe();
    if (results[i].is_tensor()) {
      const runner::TensorStats s = runner::tensor_stats(results[i].tensor);
      if (s.numeric) std::cout << "  min " << s.min << "  max " << s.max << "  mean " << s.mean;
    }
    if (!files[i].empty()) std::cout << "  -> " << files[i];
    std::cout << "\n";
  }
  if (const std::string line = placement_line(session.device(), session.placement()); !line.empty()) std::cout << line << "\n";
  if (!times.empty())
    std::cout << "latency over " << times.size() << " runs: median " << pct(0.5) << " ms, min " << times.front()
              << " ms, p90 " << pct(0.9) << " ms\n";
  return kExitOk;
}

}  // namespace

void register_run(CLI::App& app, Action& action) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand("run", "Execute a model on the reference runner (CPU or a Vulkan device)");
  sub->add_option("MODEL", o->model, "model file")->required();
  sub->add_option("--input", o->inputs, "NAME=FILE (.npy or TensorProto .pb); repeatable");
  sub->add_option("--inputs", o->inputs_dir, "folder of <name>.npy/.pb files, or a test_data_set_N folder");
  sub->add_flag("--random", o->random, "fill inputs not given with deterministic random data");
  sub->add_option("--seed", o->seed, "seed for --random (default 0)")->check(number_in(0, kMaxSeed));
  sub->add_option("--shape", o->shapes, "NAME=D1,D2,... sizes for symbolic dims of random inputs");
  sub->add_option("--output-dir", o->output_dir, "write each output to DIR/<name>.npy");
  sub->add_option("--outputs", o->outputs, "names of the values to return (default: graph outputs)")->delimiter(',');
  sub->add_option("--threads", o->threads, "threads (default: all cores)")->check(number_in(0, 1024));
  sub->add_option("--device", o->device, "cpu (default), vulkan or vulkan:N (`onnxtool devices` lists them)");
  sub->add_option("--benchmark", o->benchmark, "time N runs after one warm-up run")->check(number_in(0, 1e7));
  sub->add_flag("--json", o->json, "print one JSON document");
  sub->callback([&action, o] { action = [o] { return run_model(*o); }; });
}

}  // namespace onnxtool::cli
