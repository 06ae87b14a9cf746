// The reference runner's Session: load -> plan (order, kernels, value slots, lifetimes) -> run.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runner/backend.h"
#include "runner/kernel.h"
#include "runner/tensor.h"

namespace onnxtool::runner {

struct SessionOptions {
  /// Threads for kernels (runner/thread_pool.h); 0: default_threads().
  int threads = 0;
  /// Where nodes run: the CPU, or a Vulkan device with the CPU for the nodes it has no kernel for.
  DeviceSpec device;
  /// Keep the results of constant nodes (up to 64 MiB each) for the following runs, as the
  /// default does; off, they are computed again in every run, and their memory is not held
  /// between runs (the dequantized weights of a QDQ model: as much as the float model).
  bool keep_constants = true;
};

/// Where the nodes of the main graph ran in the last run of a device session.
struct Placement {
  struct CpuNode {
    const ir::Node* node;
    std::string reason;  ///< "no Vulkan kernel", or why the device kernel declined the node
  };
  size_t device_nodes = 0;    ///< nodes whose kernel ran on the device
  size_t constant_nodes = 0;  ///< nodes of constant inputs only, computed once on the CPU
  std::vector<CpuNode> cpu_nodes;  ///< every other node, in execution order
};

/// Called with every value a node of the main graph produces (calibration, per-layer compare),
/// and of the subgraphs too when asked (each run of a Loop body calls it again).
using Observer = std::function<void(const ir::Value& value, const Value& produced)>;
/// Which values an observer needs (by default all): the others may be fused away or never
/// computed (the dequantized tensors only integer convolutions read).
using ObserverFilter = std::function<bool(const ir::Value& value)>;

/// An observer as the session holds it.
struct Observation {
  Observer observer;
  bool subgraphs = false;
  ObserverFilter wants;
  bool active() const { return static_cast<bool>(observer); }
  bool wanted(const ir::Value& v) const { return observer && (!wants || wants(v)); }
};

struct GraphPlan;
class Profiler;
namespace ort {
class ModelSession;
}

/// Plans a model once and runs it many times. The model must outlive the session; planning sorts
/// its nodes topologically when they are not (the model is otherwise untouched).
/// Bounds every run of every session of this process (the CLI's --time-limit and
/// ONNXTOOL_TIME_LIMIT): `seconds` from now, `what` naming the bound in the error ("--time-limit
/// 5"). Checked before every node, and so at every iteration of a Loop or Scan body; past it a
/// run throws TimeLimitReached naming the node. 0 removes the bound.
void set_time_limit(double seconds, const std::string& what);
/// True once the bound of set_time_limit has passed.
bool time_limit_passed();
/// True while set_time_limit's bound is in force.
bool time_limit_set();

class Session {
 public:
  /// Throws Error(kInput) naming the op and node when a node has no kernel, and for invalid graphs;
  /// for a device that does not exist or cannot be opened, the errors of open_vulkan_backend.
  Session(ir::Model& model, SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// The inputs a caller must or may feed (graph inputs that are not initializers come first;
  /// initializer-backed inputs are optional overrides).
  const std::vector<const ir::ValueInfo*>& inputs() const { return inputs_; }
  const std::vector<const ir::ValueInfo*>& outputs() const { return outputs_; }

  /// Runs with the given feeds (by input name). Checks names, element types and ranks/static dims
  /// against the model; throws Error(kUsage) naming the input otherwise. Returns the graph
  /// outputs in order, or those named in `output_names`.
  std::vector<Value> run(const std::map<std::string, Value>& feeds,
                         const std::vector<std::string>& output_names = {});

  /// Bounds this session's runs as set_time_limit bounds the process's, until `at`; `what` names
  /// the bound in the error ("verification's bound of 12 s: 20 times the original's run plus
  /// 10 s"), `remedies` the parameters that would change it (TimeLimitReached::remedies).
  void set_deadline(std::chrono::steady_clock::time_point at, const std::string& what,
                    std::vector<std::string> remedies = {});

  /// The threads its runs use (the default 0 resolved when the session was made).
  int threads() const { return options_.threads; }

  /// The device the session runs on ("cpu", "vulkan:0", "onnxruntime:all").
  const DeviceInfo* device() const { return ort_device_ ? ort_device_.get() : backend_ ? &backend_->info() : nullptr; }
  /// Where the last run placed each node (empty for CPU sessions).
  const Placement& placement() const;

  /// Times the nodes of every following run into `profiler` (nullptr stops it); the profiler
  /// must outlive its use.
  void set_profiler(Profiler* profiler);

  /// Calls `observer` with each value `wants` accepts (nullptr: all of them) as it is produced;
  /// an empty observer stops it.
  void set_observer(Observer observer, bool subgraphs = false, ObserverFilter wants = nullptr) {
    observation_ = Observation{std::move(observer), subgraphs, std::move(wants)};
  }

 private:
  ir::Model& model_;
  SessionOptions options_;
  std::unique_ptr<Backend> backend_;  // declared before the plan: cached device tensors go first
  std::unique_ptr<GraphPlan> plan_;
  std::unique_ptr<Executor> executor_;
  std::vector<const ir::ValueInfo*> inputs_;
  std::vector<const ir::ValueInfo*> outputs_;
  Observation observation_;
  // The onnxruntime device: the model as written, and made on first need, a copy of it whose
  // intermediate values are graph outputs too (observers, --outputs of intermediate values).
  std::unique_ptr<DeviceInfo> ort_device_;
  std::unique_ptr<ort::ModelSession> ort_plain_, ort_wide_;
  std::vector<std::string> ort_wide_names_;  ///< the values ort_wide_ returns, in node order

  std::vector<Value> run_onnxruntime(const std::map<std::string, Value>& feeds,
                                     const std::vector<std::string>& output_names);
};

/// Converts a stored tensor (initializer, Constant, test data) to a runtime tensor; raw and
/// external data are views, typed fields are converted.
Tensor from_ir(const ir::Tensor& tensor);
/// Converts a runtime tensor to a storable one (raw_data, or string_data for strings).
ir::Tensor to_ir(const Tensor& tensor, const std::string& name);

}  // namespace onnxtool::runner
