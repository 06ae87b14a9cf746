// The executor: runs a plan's steps in a frame of slots, on the session's device or the CPU,
// subgraphs in frames of their own. Internal to runner/.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "runner/plan.h"

namespace onnxtool::runner {

class Executor {
 public:
  Executor(int threads, const Observation* observation, Backend* backend)
      : threads_(threads), observation_(observation), backend_(backend) {}
  void execute(const GraphPlan& plan, Frame& frame);
  std::vector<Value> run_subgraph(Frame& caller, const ir::Graph& g, const std::vector<Value>& inputs,
                                  const ir::Node* owner = nullptr);

  /// The host value of a slot (of this frame or an enclosing one), downloaded from the device
  /// when it lives only there.
  const Value& host(Frame& frame, SlotRef ref);
  /// The device copy of a slot, uploaded when it lives only on the host (constants once).
  DeviceTensorPtr device(Frame& frame, SlotRef ref);

  /// Starts a run: clears the placement report.
  void begin_run() {
    placement = Placement();
    placed_.clear();
  }
  Placement placement;
  /// Times every node of the main graph when set (Session::set_profiler).
  Profiler* profiler = nullptr;
  /// SessionOptions::keep_constants.
  bool keep_constants = true;
  /// Session::set_deadline: this session's bound, if any.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  std::string deadline_what;
  std::vector<std::string> deadline_remedies;
  /// Slots of the main graph the caller of this run asked for by name (Session::run): computed
  /// and kept to the end of the run.
  std::vector<bool> requested;

 private:
  bool run_on_device(const Step& step, Frame& frame, std::vector<Value>& outputs,
                     std::vector<DeviceTensorPtr>& device_outputs);
  /// Runs a step's CPU kernel; with `epilogue`, the kernel may apply it (returns whether it did).
  bool run_on_cpu(const Step& step, Frame& frame, std::vector<Value>& outputs, const Epilogue* epilogue = nullptr);

  static Frame& frame_of(Frame& frame, SlotRef ref) {
    Frame* f = &frame;
    for (int i = 0; i < ref.up; ++i) f = f->parent;
    return *f;
  }
  /// Throws TimeLimitReached when the process's bound or this session's has passed, naming the
  /// node about to run (the first of a subgraph's plan when `step` is null).
  void check_time(const GraphPlan& plan, const Frame& frame, const Step* step) const;
  /// Counts a node in the placement report once per run (Loop bodies run it many times).
  bool first_placement(const Step& step) { return placed_.insert(step.node).second; }
  int threads_;
  const Observation* observation_;
  Backend* backend_;
  std::unordered_set<const ir::Node*> placed_;
};

}  // namespace onnxtool::runner
