// `onnxtool run`'s report: each output with its statistics, file and match, where the nodes
// ran, the timings of --benchmark and --profile, and the dump.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cli/printers.h"
#include "cli/progress.h"
#include "cli/run.h"
#include "runner/tensor_io.h"

namespace onnxtool::cli {
namespace {

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
  // The nodes' time is part of the run's: the rest is the run's own work (checking the feeds,
  // returning the outputs) and, on a device, waiting for its work (counted in its nodes' times,
  // which the device measures) and recording it.
  std::cout << "profile over " << p.runs << " run(s): " << ms(p.run_ms) << " ms per run: nodes " << ms(p.nodes_ms) << " ms"
            << (device ? " (device nodes: the device's time)" : "") << ", the rest " << ms(std::max(0.0, p.run_ms - p.nodes_ms))
            << " ms (" << (device ? "waiting for and recording device work, " : "") << "checking feeds, returning outputs)\n";
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
          {"trace", json_or_null(trace_file)}};
}

/// The q-quantile of the sorted --benchmark times (the nearest rank).
double quantile(const std::vector<double>& times, double q) {
  return times[std::min(times.size() - 1, static_cast<size_t>(q * static_cast<double>(times.size() - 1) + 0.5))];
}

nlohmann::json output_json(const std::string& name, const runner::Value& v, const std::string& file, const OutputMatch* match) {
  nlohmann::json j = {{"name", name}};
  if (v.is_tensor()) {
    j["dtype"] = std::string(ir::data_type_name(v.tensor.dtype()));
    j["shape"] = v.tensor.shape();
  } else {
    j["dtype"] = v.describe();
    j["shape"] = nullptr;
  }
  // The text's statistics (null where it shows none: no tensor, or not numeric).
  const runner::TensorStats st = v.is_tensor() ? runner::tensor_stats(v.tensor) : runner::TensorStats{};
  const bool finite = st.numeric && st.finite > 0;
  j["min"] = finite ? json_number(st.min) : nullptr;
  j["max"] = finite ? json_number(st.max) : nullptr;
  j["mean"] = finite ? json_number(st.mean) : nullptr;
  j["nan_count"] = st.numeric ? nlohmann::json(st.nan) : nlohmann::json(nullptr);
  j["inf_count"] = st.numeric ? nlohmann::json(st.inf) : nlohmann::json(nullptr);
  j["file"] = json_or_null(file);
  j["expect"] = match ? match_json(*match) : nlohmann::json(nullptr);
  return j;
}

bool differs(const OutputMatch& m) { return !m.match; }

}  // namespace

void print_run_json(const RunOptions& o, const ModelRun& run, const std::vector<std::string>& files,
                    const std::vector<OutputMatch>& matches) {
  nlohmann::json outs = nlohmann::json::array();
  for (size_t i = 0; i < run.results.size(); ++i)
    outs.push_back(output_json(run.names[i], run.results[i], files[i], matches.empty() ? nullptr : &matches[i]));
  const runner::Session& session = *run.session;
  nlohmann::json doc = {{"outputs", outs}, {"threads", session.threads()}, {"placement", placement_json(session.device(), session.placement())}};
  const std::vector<double>& times = run.times;
  if (!times.empty())
    doc["latency_ms"] = {{"median", quantile(times, 0.5)}, {"min", times.front()}, {"p90", quantile(times, 0.9)}, {"runs", times.size()}};
  if (o.profile) doc["profile"] = profile_json(run.profile, o.trace_file);
  if (const ValueDump* dump = run.dump.get())
    doc["dump"] = {{"dir", dump->dir()}, {"index", dump->index_path()}, {"written", dump->written()},
                   {"subgraph_files", dump->subgraph_files()}, {"skipped", dump->skipped()}};
  doc["expect"] = o.expect_dir.empty() ? nlohmann::json(nullptr)
                                       : nlohmann::json{{"dir", o.expect_dir}, {"rtol", o.rtol}, {"atol", o.atol},
                                                        {"match", std::none_of(matches.begin(), matches.end(), differs)}};
  print_json(doc);
}

void print_run(const RunOptions& o, const ModelRun& run, const std::vector<std::string>& files,
               const std::vector<OutputMatch>& matches) {
  for (size_t i = 0; i < run.results.size(); ++i) {
    const runner::Value& v = run.results[i];
    std::cout << run.names[i] << ": " << v.describe();
    if (v.is_tensor()) {
      const runner::TensorStats s = runner::tensor_stats(v.tensor);
      if (s.numeric && s.finite > 0) std::cout << "  min " << s.min << "  max " << s.max << "  mean " << s.mean;
      if (s.numeric && s.finite == 0) std::cout << "  no finite element";
      if (s.nan || s.inf) std::cout << "  (" << s.nan << " NaN, " << s.inf << " Inf: not in min/max/mean)";
    }
    if (!files[i].empty()) std::cout << "  -> " << files[i];
    std::cout << "\n";
  }
  if (!matches.empty()) {
    std::cout << "expect " << o.expect_dir << " (" << tolerance_text(o.rtol, o.atol) << "):\n";
    for (size_t i = 0; i < matches.size(); ++i) std::cout << "  " << run.names[i] << ": " << describe_match(matches[i]) << "\n";
  }
  const runner::Session& session = *run.session;
  if (const std::string line = placement_line(session.device(), session.placement()); !line.empty()) std::cout << line << "\n";
  const std::vector<double>& times = run.times;
  if (!times.empty())
    std::cout << "latency over " << times.size() << " runs: median " << quantile(times, 0.5) << " ms, min " << times.front()
              << " ms, p90 " << quantile(times, 0.9) << " ms\n";
  if (o.profile) print_profile(run.profile, o.trace_file);
  const ValueDump* dump = run.dump.get();
  if (dump && !dump->limited().empty())
    warning("run", "--dump-dir " + dump->dir() + ": " + dump->limited() + "; the values after it are listed in the index as skipped");
  if (dump)
    std::cout << "dumped " << dump->written() << " values to " << dump->dir() << " ("
              << (dump->subgraph_files() ? std::to_string(dump->subgraph_files()) + " of them runs of subgraph values; " : "")
              << dump->skipped() << " skipped; index " << dump->index_path() << ")\n";
}

int report_mismatch(const RunOptions& o, const ModelRun& run, const std::vector<OutputMatch>& matches) {
  const auto differing = std::find_if(matches.begin(), matches.end(), differs);
  if (differing == matches.end()) return kExitOk;
  const auto more = std::count_if(differing + 1, matches.end(), differs);
  std::cerr << "onnxtool run: output '" << run.names[static_cast<size_t>(differing - matches.begin())] << "' "
            << describe_match(*differing) << " (" << tolerance_text(o.rtol, o.atol) << ")"
            << (more ? " and " + std::to_string(more) + " more output(s) differ" : std::string()) << "\n";
  return kExitFailed;
}

}  // namespace onnxtool::cli
