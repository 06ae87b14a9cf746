// What the planner makes of a graph and the executor runs: steps, slots and frames. Internal to
// runner/ (session.cpp, planner.cpp, plan_fusions.cpp, executor.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "runner/backend.h"
#include "runner/cpu/epilogue.h"
#include "runner/session.h"

namespace onnxtool::runner {

/// Where a node finds a value: `up` frames above the current one, slot index there.
struct SlotRef {
  int up = 0;
  int slot = -1;
};

struct Step {
  const ir::Node* node = nullptr;
  KernelFn fn = nullptr;
  int64_t opset = 0;
  std::vector<SlotRef> inputs;      // slot -1 for omitted inputs
  std::vector<int> outputs;         // -1 for unnamed outputs
  std::vector<int> release_after;   // local slots whose last use is this step
  std::shared_ptr<void> state;
  /// The session device's kernel (main graph only), or nullptr: the node runs on the CPU.
  DeviceKernelFn device_fn = nullptr;
  /// Every input is a constant (initializer, or the output of another constant step) and the op
  /// is deterministic: computed on the first run, then reused (the same kernel, the same bytes).
  bool constant = false;
  mutable bool computed = false;
  mutable std::vector<Value> cached;
  /// A Conv with activations fused into it (CPU sessions): the ops, the steps they came from
  /// (skipped when the Conv applied them) and the slot of the chain's last output.
  std::shared_ptr<const Epilogue> epilogue;
  std::vector<size_t> absorbed;
  int fused_output = -1;
  std::string fused_op_type;  ///< "Conv+Relu"... for the profile
  /// What the profile calls the step when it is not the node's op type ("Conv(int8)").
  std::string label;
  /// A DequantizeLinear whose output nothing reads since its readers run on its quantized input
  /// (plan_quantized_convs): skipped unless an observer wants the value.
  bool unread = false;
};

struct GraphPlan {
  const ir::Graph* graph = nullptr;
  const GraphPlan* parent = nullptr;
  std::unordered_map<const ir::Value*, int> slots;
  std::vector<Value> constants;  // per slot: initializer values (kind kNone otherwise)
  std::vector<Step> steps;
  std::vector<int> input_slots;
  std::vector<SlotRef> output_slots;
  std::unordered_map<const ir::Graph*, std::unique_ptr<GraphPlan>> subplans;
  std::vector<bool> keep;  // slots never released (outputs, inputs, constants)
  std::vector<bool> constant_slot;  // initializers and outputs of constant steps
  int n_slots = 0;
  /// Device copies of constant slots, uploaded on first use (weights once per session).
  mutable std::vector<DeviceTensorPtr> device_constants;
};

struct Frame {
  const GraphPlan* plan;
  Frame* parent;
  std::vector<Value> slots;
  /// The node whose subgraph this frame runs (a Loop, If or Scan); null for the main graph.
  const ir::Node* owner = nullptr;
  /// Device copies per slot (device sessions); a slot may live on the host, the device or both.
  std::vector<DeviceTensorPtr> device;
};

/// Plans `g` (and its subgraphs) for `model`'s opsets: a step per node in topological order
/// with the backend's kernel where it has one, slots for values, constant steps, the CPU plan's
/// fusions and each slot's last use.
std::unique_ptr<GraphPlan> plan_graph(const ir::Model& model, const ir::Graph& g, const Backend* backend);

/// Refuses (Error kFailed), before anything runs, a graph with a value whose static shape
/// needs more bytes than `memory`.
void check_static_sizes(const ir::Graph& g, uint64_t memory);

/// Marks in `used` the slots of the plan `depth` levels above `sub` that `sub` (or a subgraph
/// of it) reads.
void mark_outer_uses(const GraphPlan& sub, int depth, std::vector<bool>& used);

/// Slots whose values must exist as they are: graph outputs and values subgraphs read.
std::vector<bool> pinned_slots(const GraphPlan& p);

/// Fuses into each float Conv the chain of activations that alone read its output (CPU plans).
void plan_epilogues(GraphPlan& p);

/// Runs the Convs of a QDQ model on their quantized data and weights (CPU plans).
void plan_quantized_convs(GraphPlan& p);

}  // namespace onnxtool::runner
