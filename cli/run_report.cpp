// `onnxtool run`'s report: each output with its statistics, file and match, where the nodes
// ran, the timings of --benchmark and --profile (with each node's achieved GFLOP/s against this
// runner's GEMM), and the dump; as text, JSON, or --report's HTML page of the profile.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "cli/html_report.h"
#include "cli/printers.h"
#include "cli/progress.h"
#include "cli/run.h"
#include "ir/output_file.h"
#include "runner/tensor_io.h"

namespace onnxtool::cli {
namespace {

/// A node's achieved rate: its FLOPs over its time per run (GFLOP/s), or -1 when either is unknown.
double achieved_gflops(const ModelRun& run, const runner::ProfileSummary::Row& r) {
  const auto it = run.node_flops.find(r.name);
  if (it == run.node_flops.end() || !(r.ms > 0)) return -1;
  return static_cast<double>(it->second) / (r.ms * 1e6);
}

/// The measured peak in words, for the text and the page.
std::string peak_text(const runner::GemmPeak& peak) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "measured peak of this runner's GEMM (float32, %lldx%lld, %d thread%s, best of %d): %.1f GFLOP/s",
                static_cast<long long>(peak.size), static_cast<long long>(peak.size), peak.threads, peak.threads == 1 ? "" : "s",
                peak.products, peak.gflops);
  return buf;
}

/// The profile as text: the run, every op type, the slowest nodes with their achieved rates.
void print_profile(const ModelRun& run, const std::string& trace_file) {
  const runner::ProfileSummary& p = run.profile;
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
  const bool peak = run.gemm_peak.gflops > 0;
  std::cout << "  slowest " << shown << " of " << p.nodes.size() << " nodes (GFLOP/s: the node's FLOPs, as inspect --cost counts "
            << "them on this run's input shapes, over its time" << (peak ? "; of peak: of the measured peak below" : "") << "):\n";
  for (size_t i = 0; i < shown; ++i) {
    const auto& r = p.nodes[i];
    const double rate = achieved_gflops(run, r);
    char figures[64] = "";
    if (rate >= 0) std::snprintf(figures, sizeof figures, " %9.2f GFLOP/s", rate);
    if (rate >= 0 && peak)
      std::snprintf(figures + std::strlen(figures), sizeof figures - std::strlen(figures), " %6s",
                    pct(rate / run.gemm_peak.gflops).c_str());
    char line[400];
    std::snprintf(line, sizeof line, "  %-40s %-18s %-9s %9s %7s%s", r.name.c_str(), r.op_type.c_str(),
                  r.device.c_str(), ms(r.ms).c_str(), pct(r.share).c_str(), figures);
    std::cout << line << host(r) << "\n";
  }
  if (peak) std::cout << "  " << peak_text(run.gemm_peak) << "\n";
  if (!run.cost_unknown.empty()) std::cout << "  FLOPs not known: " << run.cost_unknown << "\n";
  if (!trace_file.empty()) std::cout << "  trace: " << trace_file << " (Chrome trace format; opens in Perfetto)\n";
}

nlohmann::json profile_json(const ModelRun& run, const std::string& trace_file) {
  const runner::ProfileSummary& p = run.profile;
  const double peak = run.gemm_peak.gflops;
  const auto rows = [&p, &run, peak](const std::vector<runner::ProfileSummary::Row>& rows, bool nodes) {
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
        const auto flops = run.node_flops.find(r.name);
        const double rate = achieved_gflops(run, r);
        j["flops"] = flops == run.node_flops.end() ? nlohmann::json(nullptr) : nlohmann::json(flops->second);
        j["gflop_per_s"] = rate >= 0 ? nlohmann::json(rate) : nlohmann::json(nullptr);
        j["peak_fraction"] = rate >= 0 && peak > 0 ? nlohmann::json(rate / peak) : nlohmann::json(nullptr);
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
          {"gemm_peak", peak > 0 ? nlohmann::json{{"gflop_per_s", peak}, {"size", run.gemm_peak.size}, {"threads", run.gemm_peak.threads},
                                                 {"products", run.gemm_peak.products}, {"what", peak_text(run.gemm_peak)}}
                                 : nlohmann::json(nullptr)},
          {"cost_unknown", json_or_null(run.cost_unknown)},
          {"trace", json_or_null(trace_file)}};
}

/// The HTML page of run --profile: the time per op type, the slowest nodes, and each node's
/// FLOPs against its time (its achieved rate), from `doc` (run_json's).
std::string profile_page(const nlohmann::json& doc) {
  const nlohmann::json& p = doc["profile"];
  html::Page page("onnxtool run --profile");
  page.heading("Summary");
  page.summary(p);
  page.paragraph("Times are per run, averaged over " + html::text_of(p["runs"]) + " run(s), on " + html::text_of(doc["threads"]) +
                 " thread(s) (0: the default); they vary from run to run.");
  page.heading("Time per op type");
  std::vector<html::Bar> op_bars;
  for (const auto& r : p["op_types"])
    op_bars.push_back({r["op_type"].get<std::string>(), r["ms_per_run"], "(" + html::text_of(r["count_per_run"]) + " per run)"});
  page.bar_chart("Time per op type (ms per run)", "ms", op_bars);
  page.heading("Slowest nodes");
  constexpr size_t kSlowest = 30;
  std::vector<html::Bar> node_bars;
  std::vector<std::vector<html::Cell>> rows;
  for (const auto& r : p["nodes"]) {
    if (node_bars.size() < kSlowest) node_bars.push_back({r["name"].get<std::string>(), r["ms_per_run"], r["op_type"].get<std::string>()});
    rows.push_back({html::Cell{r["name"].get<std::string>()}, html::Cell{r["op_type"].get<std::string>()}, html::Cell{r["device"].get<std::string>()},
                    html::figure(r["ms_per_run"]), html::figure(r["share"]), html::figure(r["flops"]), html::figure(r["gflop_per_s"]),
                    html::figure(r["peak_fraction"])});
  }
  page.bar_chart("The slowest nodes (ms per run)", "ms", node_bars, kSlowest);
  page.table({"node", "op", "device", "ms per run", "share", "FLOPs", "GFLOP/s", "of peak"}, rows, kSlowest);
  page.heading("FLOPs against time");
  page.paragraph("Each node's FLOPs (as inspect --cost counts them, on this run's input shapes) against its time: its achieved rate. " +
                 (p["gemm_peak"].is_null() ? std::string("No GEMM peak was measured (not a CPU run).")
                                           : p["gemm_peak"]["what"].get<std::string>() + ": a yardstick, not the hardware's peak.") +
                 (p["cost_unknown"].is_null() ? std::string() : " FLOPs not known: " + p["cost_unknown"].get<std::string>()));
  html::Scatter cost{"FLOPs against time per node (log scales)", "ms per run", "FLOPs", {}, true, true};
  html::Scatter rate{"Achieved GFLOP/s against time per node", "ms per run", "GFLOP/s", {}, true, true};
  for (const auto& r : p["nodes"]) {
    cost.points.push_back({r["name"].get<std::string>() + " (" + r["op_type"].get<std::string>() + ")", r["ms_per_run"], r["flops"]});
    rate.points.push_back({r["name"].get<std::string>() + " (" + r["op_type"].get<std::string>() + ")", r["ms_per_run"], r["gflop_per_s"]});
  }
  page.scatter(cost);
  page.scatter(rate);
  return page.finish(doc);
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

nlohmann::json run_json(const RunOptions& o, const ModelRun& run, const std::vector<std::string>& files,
                        const std::vector<OutputMatch>& matches) {
  nlohmann::json outs = nlohmann::json::array();
  for (size_t i = 0; i < run.results.size(); ++i)
    outs.push_back(output_json(run.names[i], run.results[i], files[i], matches.empty() ? nullptr : &matches[i]));
  const runner::Session& session = *run.session;
  nlohmann::json doc = {{"outputs", outs}, {"threads", session.threads()}, {"placement", placement_json(session.device(), session.placement())}};
  const std::vector<double>& times = run.times;
  if (!times.empty())
    doc["latency_ms"] = {{"median", quantile(times, 0.5)}, {"min", times.front()}, {"p90", quantile(times, 0.9)}, {"runs", times.size()}};
  if (o.profile) doc["profile"] = profile_json(run, o.trace_file);
  if (const ValueDump* dump = run.dump.get())
    doc["dump"] = {{"dir", dump->dir()}, {"index", dump->index_path()}, {"written", dump->written()},
                   {"subgraph_files", dump->subgraph_files()}, {"skipped", dump->skipped()}};
  doc["expect"] = o.expect_dir.empty() ? nlohmann::json(nullptr)
                                       : nlohmann::json{{"dir", o.expect_dir}, {"rtol", o.rtol}, {"atol", o.atol},
                                                        {"match", std::none_of(matches.begin(), matches.end(), differs)}};
  return doc;
}

void write_run_report(const std::string& path, const nlohmann::json& doc) {
  ir::OutputFile file(path, "--report " + path);
  file.write(profile_page(doc));
  file.commit();
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
  if (o.profile) print_profile(run, o.trace_file);
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
