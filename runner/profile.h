// Per-node timing of a session's runs (`onnxtool run --profile`): where the time of a model goes.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace onnxtool::ir {
class Node;
}

namespace onnxtool::runner {

/// Collects one event per node of the main graph per run while attached to a session
/// (Session::set_profiler). Control-flow nodes (If, Loop, Scan) include their subgraphs' time;
/// constant subgraphs, computed once and cached, are not timed. On a Vulkan device a node's time
/// is the host's: recording its dispatches, plus waiting when its result is needed on the host.
class Profiler {
 public:
  using Clock = std::chrono::steady_clock;

  struct Event {
    const ir::Node* node;
    /// The node's op type, or for a Conv with activations fused into it the ops it ran
    /// ("Conv+BatchNormalization+Relu"; the fused nodes have no events of their own).
    std::string op_type;
    int run;              ///< 0-based index of the run
    bool on_device;       ///< the node's kernel ran on the session's device
    int64_t start_ns;     ///< since the profiler's creation
    int64_t duration_ns;  ///< on the host: the node's kernel, or recording its device work
    int64_t device_ns;    ///< the device's own time for its work (timestamps); -1 when not timed
    /// The node's time: the device's where it timed the work, else the host's.
    int64_t time_ns() const { return device_ns >= 0 ? device_ns : duration_ns; }
  };
  struct Run {
    int64_t start_ns;
    int64_t duration_ns;
    /// The most memory the run's own tensors of a megabyte and more (activations and outputs,
    /// not the inputs or constants held before it) held at once: the buffer pool's buffers in
    /// use beyond those at its start (runner/buffer_pool.h).
    size_t tensor_peak_bytes;
  };

  Profiler() : origin_(Clock::now()) {}
  void begin_run();
  void end_run();
  /// Adds a node's event (`op_type`: what ran, when not the node's op type alone); returns its
  /// index for set_device_time.
  size_t record(const ir::Node& node, bool on_device, Clock::time_point start, Clock::time_point end,
                const std::string& op_type = {});
  void set_device_time(size_t event, int64_t ns) { events_[event].device_ns = ns; }

  const std::vector<Event>& events() const { return events_; }
  const std::vector<Run>& runs() const { return runs_; }

 private:
  int64_t since_origin(Clock::time_point t) const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t - origin_).count();
  }
  Clock::time_point origin_;
  Clock::time_point run_start_;
  size_t run_held_ = 0;  // pooled bytes in use when the run began
  std::vector<Event> events_;
  std::vector<Run> runs_;
};

/// The profile averaged over runs, per op type and per node, each sorted by time (descending;
/// ties by name, so that equal profiles print identically). A node's time is the device's own
/// (timestamps) where it ran on a device that times its work, else the host's.
struct ProfileSummary {
  struct Row {
    std::string name;     ///< op type, or node name
    std::string op_type;  ///< for nodes
    std::string device;   ///< for nodes: "cpu", or the device's id
    int64_t count = 0;    ///< executions over all runs
    double ms = 0;        ///< time per run
    double host_ms = 0;   ///< the host's time per run (for device nodes: recording their work)
    double share = 0;     ///< of the nodes' time, 0..1
    bool device_timed = false;  ///< ms includes device timestamps
  };
  int runs = 0;
  double run_ms = 0;    ///< wall time of a run, feeds to outputs
  double nodes_ms = 0;  ///< the nodes' time per run
  size_t tensor_peak_bytes = 0;  ///< the largest Run::tensor_peak_bytes
  std::vector<Row> op_types;
  std::vector<Row> nodes;
};

ProfileSummary summarize(const Profiler& profiler, const std::string& device_id);

/// The name each profiled node is shown by (ProfileSummary::Row::name): its own, or (unnamed) its
/// op type and its position in the run ("Conv#3").
std::map<const ir::Node*, std::string> node_display_names(const Profiler& profiler);

/// The float32 GEMM rate this runner reaches on this machine: square products of `size` through
/// the CPU kernels' own GEMM (runner/cpu/gemm.h) on `threads` threads (0: the default), one
/// warm-up then repeated for about `seconds`. A yardstick for the nodes' achieved rates, not the
/// hardware's peak: the best product's rate.
struct GemmPeak {
  int64_t size = 0;
  int threads = 0;   ///< the threads the products ran on (current_threads() in their scope)
  int products = 0;  ///< timed
  double gflops = 0;
};
GemmPeak measure_gemm_peak(int threads, double seconds = 0.2, int64_t size = 1024);

/// The events as a Chrome trace (the JSON array format onnxruntime's profiler writes; opens in
/// Perfetto and chrome://tracing): one "model_run" event per run and one per node, with the op
/// type and the provider (CPU or the device) in its args.
std::string chrome_trace(const Profiler& profiler, const std::string& device_id);

}  // namespace onnxtool::runner
