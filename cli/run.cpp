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
#include "ir/output_file.h"
#include "ir/shape_inference.h"
#include "runner/feeds.h"
#include "runner/profile.h"
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
  bool profile = false;
  std::string trace_file;  ///< --profile FILE: the Chrome trace
  bool json = false;
  std::set<std::string> given;  ///< the options on the command line
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

/// The profile as text: the run, every op type, the slowest nodes.
void print_profile(const runner::ProfileSummary& p, const std::string& trace_file) {
  const auto pct = [](double share) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.1f%%", 100 * share);
    return std::string(buf);
  };
  const auto ms = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", v);
    return std::string(buf);
  };
  // On a device, a node's time is the device's (timestamps); the host's, recording its work, is
  // the last column.
  const bool device = std::any_of(p.nodes.begin(), p.nodes.end(), [](const auto& r) { return r.device_timed; });
  const auto host = [&](const runner::ProfileSummary::Row& r) {
    return device ? "  " + (r.device_timed ? ms(r.host_ms) : std::string("-")) : std::string();
  };
  std::cout << "profile over " << p.runs << " run(s): " << ms(p.run_ms) << " ms per run, of which nodes "
            << ms(p.nodes_ms) << " ms" << (device ? " (device nodes: the device's time)" : "") << "\n";
  std::cout << "  the run's tensors of 1 MiB and more held at most " << ms(static_cast<double>(p.tensor_peak_bytes) / (1 << 20))
            << " MiB at once\n";
  std::cout << "  op type                      count/run    ms/run   share" << (device ? "  host ms/run" : "") << "\n";
  for (const auto& r : p.op_types) {
    char line[200];
    std::snprintf(line, sizeof line, "  %-28s %9.1f %9s %7s", r.name.c_str(), static_cast<double>(r.count) / p.runs,
                  ms(r.ms).c_str(), pct(r.share).c_str());
    std::cout << line << host(r) << "\n";
  }
  const size_t shown = std::min<size_t>(p.nodes.size(), 15);
  std::cout << "  slowest " << shown << " of " << p.nodes.size() << " nodes:\n";
  for (size_t i = 0; i < shown; ++i) {
    const auto& r = p.nodes[i];
    char line[400];
    std::snprintf(line, sizeof line, "  %-40s %-18s %-9s %9s %7s", r.name.c_str(), r.op_type.c_str(),
                  r.device.c_str(), ms(r.ms).c_str(), pct(r.share).c_str());
    std::cout << line << host(r) << "\n";
  }
  if (!trace_file.empty()) std::cout << "  trace: " << trace_file << " (Chrome trace format; opens in Perfetto)\n";
}

nlohmann::json profile_json(const runner::ProfileSummary& p, const std::string& trace_file) {
  const auto rows = [&p](const std::vector<runner::ProfileSummary::Row>& rows, bool nodes) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : rows) {
      nlohmann::json j = {{nodes ? "name" : "op_type", r.name},
                          {"count_per_run", static_cast<double>(r.count) / p.runs},
                          {"ms_per_run", r.ms},
                          {"host_ms_per_run", r.host_ms},
                          {"device_timed", r.device_timed},
                          {"share", r.share}};
      if (nodes) {
        j["op_type"] = r.op_type;
        j["device"] = r.device;
      }
      out.push_back(j);
    }
    return out;
  };
  return {{"runs", p.runs},
          {"run_ms", p.run_ms},
          {"nodes_ms", p.nodes_ms},
          {"tensor_peak_bytes", p.tensor_peak_bytes},
          {"op_types", rows(p.op_types, false)},
          {"nodes", rows(p.nodes, true)},
          {"trace", trace_file.empty() ? nlohmann::json(nullptr) : nlohmann::json(trace_file)}};
}

void make_output_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw_usage_error("--output-dir " + dir + ": cannot create it (" + ec.message() + ")");
}

int run_model(const RunOptions& o) {
  if (o.threads < 0 || o.threads > 1024) throw_usage_error("--threads must be between 0 and 1024");
  if (o.benchmark < 0) throw_usage_error("--benchmark must be >= 0");
  // --seed and --shape concern random inputs only: without --random they would be ignored.
  if (const std::string named = given_list(o.given, {"--seed", "--shape"}); !named.empty() && !o.random)
    throw_usage_error(named + ": for random inputs only; add --random");
  if (!o.output_dir.empty()) check_output_dir(o.output_dir);
  auto loaded = ir::load_model(o.model);
  refuse_unrunnable(loaded.model, o.model);
  if (!o.trace_file.empty()) ir::check_not_input(loaded.info, o.trace_file, "--profile " + o.trace_file);
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
  feed.flags = {"--input", "--inputs", "--random", "--shape"};
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

  // --profile times the --benchmark runs, or one run after the first (whose one-time work, such
  // as constants computed and weights packed, it leaves out).
  runner::Profiler profiler;
  if (o.profile) {
    session.set_profiler(&profiler);
    if (o.benchmark == 0) session.run(feeds, o.outputs);
  }
  std::vector<double> times;
  if (o.benchmark > 0) {
    for (int i = 0; i < o.benchmark; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      session.run(feeds, o.outputs);
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
  }
  session.set_profiler(nullptr);
  const std::string device_id = session.device() ? session.device()->id : "cpu";
  runner::ProfileSummary profile;
  if (o.profile) {
    profile = runner::summarize(profiler, device_id);
    if (!o.trace_file.empty()) ir::write_file(o.trace_file, runner::chrome_trace(profiler, device_id), "--profile");
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
    if (o.profile) doc["profile"] = profile_json(profile, o.trace_file);
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
  if (o.profile) print_profile(profile, o.trace_file);
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
  sub->add_option("--device", o->device, "cpu (default), vulkan or vulkan:N, optionally :fp32-arithmetic (`onnxtool devices` lists them)");
  sub->add_option("--benchmark", o->benchmark, "time N runs after one warm-up run")->check(number_in(0, 1e7));
  CLI::Option* profile =
      sub->add_option("--profile", o->trace_file,
                      "time every node of the --benchmark runs (or of one run after the first): per op type and "
                      "per node; with FILE, also a Chrome trace of every node there")
          ->expected(0, 1);
  sub->add_flag("--json", o->json, "print one JSON document");
  sub->callback([&action, o, profile, sub] {
    o->profile = profile->count() > 0;
    o->given = given_options(*sub);
    action = [o] { return run_model(*o); };
  });
}

}  // namespace onnxtool::cli
