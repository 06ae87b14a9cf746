#include "runner/profile.h"

#include "runner/buffer_pool.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "runner/cpu/gemm.h"
#include "runner/thread_pool.h"

namespace onnxtool::runner {

void Profiler::begin_run() {
  reset_pooled_peak();
  run_held_ = pooled_usage().in_use;
  run_start_ = Clock::now();
}

void Profiler::end_run() {
  const int64_t start = since_origin(run_start_);
  runs_.push_back({start, since_origin(Clock::now()) - start, pooled_usage().peak - run_held_});
}

size_t Profiler::record(const ir::Node& node, bool on_device, Clock::time_point start, Clock::time_point end,
                        const std::string& op_type) {
  const int64_t s = since_origin(start);
  events_.push_back({&node, op_type.empty() ? node.op_type : op_type, static_cast<int>(runs_.size()), on_device, s,
                     since_origin(end) - s, -1});
  return events_.size() - 1;
}

std::map<const ir::Node*, std::string> node_display_names(const Profiler& profiler) {
  std::map<const ir::Node*, std::string> names;
  size_t position = 0;
  for (const auto& e : profiler.events()) {
    if (names.count(e.node)) continue;
    names[e.node] = e.node->name.empty() ? e.node->op_type + "#" + std::to_string(position) : e.node->name;
    ++position;
  }
  return names;
}

namespace {

void sort_rows(std::vector<ProfileSummary::Row>& rows) {
  std::sort(rows.begin(), rows.end(), [](const ProfileSummary::Row& a, const ProfileSummary::Row& b) {
    if (a.ms != b.ms) return a.ms > b.ms;
    return a.name < b.name;
  });
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

ProfileSummary summarize(const Profiler& profiler, const std::string& device_id) {
  ProfileSummary s;
  s.runs = static_cast<int>(profiler.runs().size());
  if (s.runs == 0) return s;
  for (const auto& r : profiler.runs()) s.tensor_peak_bytes = std::max(s.tensor_peak_bytes, r.tensor_peak_bytes);
  const auto names = node_display_names(profiler);
  std::unordered_map<const ir::Node*, ProfileSummary::Row> by_node;
  std::map<std::string, ProfileSummary::Row> by_type;
  const auto add = [](ProfileSummary::Row& r, const Profiler::Event& e) {
    ++r.count;
    r.ms += static_cast<double>(e.time_ns()) / 1e6;
    r.host_ms += static_cast<double>(e.duration_ns) / 1e6;
    r.device_timed = r.device_timed || e.device_ns >= 0;
  };
  double total = 0;
  for (const auto& e : profiler.events()) {
    auto& n = by_node[e.node];
    if (n.count == 0) {
      n.name = names.at(e.node);
      n.op_type = e.op_type;
      n.device = e.on_device ? device_id : "cpu";
    }
    add(n, e);
    auto& t = by_type[e.op_type];
    t.name = e.op_type;
    add(t, e);
    total += static_cast<double>(e.time_ns()) / 1e6;
  }
  double run_total = 0;
  for (const auto& r : profiler.runs()) run_total += static_cast<double>(r.duration_ns) / 1e6;
  s.run_ms = run_total / s.runs;
  s.nodes_ms = total / s.runs;
  const auto finish = [&](ProfileSummary::Row& r) {
    r.share = total > 0 ? r.ms / total : 0;
    r.ms /= s.runs;
    r.host_ms /= s.runs;
  };
  for (auto& [node, row] : by_node) {
    finish(row);
    s.nodes.push_back(row);
  }
  for (auto& [type, row] : by_type) {
    finish(row);
    s.op_types.push_back(row);
  }
  sort_rows(s.nodes);
  sort_rows(s.op_types);
  return s;
}

std::string chrome_trace(const Profiler& profiler, const std::string& device_id) {
  const auto names = node_display_names(profiler);
  const std::string provider = device_id == "cpu" ? "CPUExecutionProvider" : device_id;
  std::ostringstream out;
  out << "[\n";
  bool first = true;
  const auto event = [&](const std::string& cat, const std::string& name, int64_t start_ns, int64_t duration_ns,
                         const std::string& args) {
    out << (first ? "" : ",\n") << "{\"cat\":" << json_string(cat) << ",\"pid\":1,\"tid\":1,\"dur\":"
        << duration_ns / 1000 << ",\"ts\":" << start_ns / 1000 << ",\"ph\":\"X\",\"name\":" << json_string(name)
        << ",\"args\":{" << args << "}}";
    first = false;
  };
  for (size_t i = 0; i < profiler.runs().size(); ++i) {
    const auto& r = profiler.runs()[i];
    event("Session", "model_run", r.start_ns, r.duration_ns, "\"run\":" + std::to_string(i));
  }
  for (const auto& e : profiler.events())
    event("Node", names.at(e.node) + "_kernel_time", e.start_ns, e.duration_ns,
          "\"op_name\":" + json_string(e.op_type) +
              ",\"provider\":" + json_string(e.on_device ? provider : "CPUExecutionProvider") +
              ",\"run\":" + std::to_string(e.run) +
              (e.device_ns >= 0 ? ",\"device_dur\":" + std::to_string(e.device_ns / 1000) : std::string()));
  out << "\n]\n";
  return out.str();
}

GemmPeak measure_gemm_peak(int threads, double seconds, int64_t size) {
  ThreadScope scope(threads > 0 ? threads : default_threads());
  // On every thread the run may use, whatever the load: the nodes get as many or fewer (the
  // runner gives way to other processes), so a node above the peak is noise, not a peak taken
  // on fewer threads than the node had.
  struct AdaptationOff {
    bool before = load_adaptation();
    AdaptationOff() { set_load_adaptation(false); }
    ~AdaptationOff() { set_load_adaptation(before); }
  } adaptation_off;
  GemmPeak peak;
  peak.size = size;
  peak.threads = current_threads();
  const size_t elements = static_cast<size_t>(size * size);
  std::vector<float> a(elements), b(elements), c(elements);
  for (size_t i = 0; i < elements; ++i) {
    a[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
    b[i] = static_cast<float>(i % 5) * 0.5f - 1.0f;
  }
  const auto product = [&] { cpu::gemm_f32(size, size, size, a.data(), size, false, b.data(), size, false, c.data(), size, false); };
  product();  // warm-up: pages touched, threads started
  const double flops = 2.0 * static_cast<double>(size) * static_cast<double>(size) * static_cast<double>(size);
  const auto start = Profiler::Clock::now();
  double best = 0;
  do {
    const auto t0 = Profiler::Clock::now();
    product();
    const double s = std::chrono::duration<double>(Profiler::Clock::now() - t0).count();
    if (s > 0) best = std::max(best, flops / s / 1e9);
    ++peak.products;
  } while (std::chrono::duration<double>(Profiler::Clock::now() - start).count() < seconds);
  peak.gflops = best;
  return peak;
}

}  // namespace onnxtool::runner
