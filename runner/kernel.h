// The kernel interface of the CPU runner: what a kernel sees of one node, and the registry
// that maps (domain, op_type, opset range) to kernels.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/op_schema.h"
#include "runner/tensor.h"

namespace onnxtool::runner {

using ir::kMaxOpset;

/// The Reduce* ops every device registers, once: X(op type, accumulation, the opset from which
/// axes is an input rather than an attribute: ReduceSum's 13, the others' 18). The accumulation
/// names an enumerator of each device's reductions (kSum, kMean, ...).
#define ONNXTOOL_REDUCE_OPS(X)                                                                      \
  X(ReduceSum, Sum, 13) X(ReduceMean, Mean, 18) X(ReduceMax, Max, 18) X(ReduceMin, Min, 18)         \
  X(ReduceProd, Prod, 18) X(ReduceL1, L1, 18) X(ReduceL2, L2, 18) X(ReduceLogSum, LogSum, 18)       \
  X(ReduceLogSumExp, LogSumExp, 18) X(ReduceSumSquare, SumSquare, 18)

class Executor;
struct Frame;
struct Step;
struct Epilogue;
class KernelContext;

/// A kernel: runs one node.
using KernelFn = void (*)(KernelContext&);

/// A node's attributes with the spec's defaults, for the kernels of every device.
class NodeAttributes {
 public:
  explicit NodeAttributes(const ir::Node& node) : node_(node) {}
  const ir::Node& node() const { return node_; }

  // Attributes with defaults (the spec's default when absent).
  int64_t attr_int(std::string_view name, int64_t fallback) const;
  float attr_float(std::string_view name, float fallback) const;
  std::string attr_string(std::string_view name, std::string fallback) const;
  std::vector<int64_t> attr_ints(std::string_view name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attr_floats(std::string_view name, std::vector<float> fallback = {}) const;
  bool has_attr(std::string_view name) const { return node_.attr(name) != nullptr; }
  const ir::Tensor* attr_tensor(std::string_view name) const;
  const ir::Graph* attr_graph(std::string_view name) const;

  /// Fails the run with one line naming the node.
  [[noreturn]] void fail(const std::string& message) const;

 protected:
  const ir::Node& node_;
};

/// One node's execution: its inputs, attributes and outputs.
class KernelContext : public NodeAttributes {
 public:
  int64_t opset() const { return opset_; }
  int threads() const { return threads_; }

  size_t input_count() const { return inputs_.size(); }
  /// True when input i is given (not omitted).
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const Value& input_value(size_t i) const;
  /// Input i as a tensor; fails naming the node when it is missing or not a tensor.
  const Tensor& input(size_t i) const;

  size_t output_count() const { return outputs_.size(); }
  /// True when output i has a name (is wanted).
  bool has_output(size_t i) const;
  /// Allocates output i.
  Tensor& output(size_t i, DataType type, std::vector<int64_t> shape);
  void set_output(size_t i, Value value);
  void set_output(size_t i, Tensor tensor) { set_output(i, Value::of(std::move(tensor))); }
  /// Output i as this node's kernel has set it so far (output() or set_output()), for a kernel
  /// that finishes another kernel's output in place (the com.microsoft fused ops,
  /// runner/cpu/contrib.cpp); fails naming the node when it is not a tensor yet.
  Tensor& written_output(size_t i);

  /// Runs a subgraph of this node (If branch, Loop/Scan body) with the given inputs; outer-scope
  /// values resolve through the calling frame.
  std::vector<Value> run_subgraph(const ir::Graph& graph, const std::vector<Value>& inputs);

  /// Runs the kernel `fn` of another op on other inputs and returns its `outputs` outputs: how a
  /// kernel reuses another's (com.microsoft.nchwc's run Conv and the pools on unblocked copies
  /// of their tensors). `node` holds the attributes `fn` reads (this node, or one built for the
  /// purpose; failures name it), `opset` is the version `fn` runs as. `fn` keeps no state
  /// between runs and sees no fused activations.
  std::vector<Value> delegate(KernelFn fn, const ir::Node& node, int64_t opset, std::vector<const Value*> inputs,
                              size_t outputs);

  /// The activations the planner fused into this node (runner/cpu/epilogue.h), or nullptr. A
  /// kernel that applied them to its output says so with epilogue_applied(); otherwise the
  /// fused nodes run on their own after it.
  const Epilogue* epilogue() const { return epilogue_; }
  void epilogue_applied() { epilogue_applied_ = true; }

  /// Per-node state a kernel may keep between runs (e.g. packed weights), created on first use.
  template <class T>
  T& state() {
    if (!*state_) *state_ = std::make_shared<T>();
    return *std::static_pointer_cast<T>(*state_);
  }

 private:
  friend class Executor;
  KernelContext(Executor& exec, Frame& frame, const ir::Node& node, int64_t opset, int threads,
                std::vector<const Value*> inputs, std::vector<Value>& outputs,
                std::shared_ptr<void>* state)
      : NodeAttributes(node), exec_(exec), frame_(frame), opset_(opset), threads_(threads),
        inputs_(std::move(inputs)), outputs_(outputs), state_(state) {}
  Executor& exec_;
  Frame& frame_;
  int64_t opset_;
  int threads_;
  std::vector<const Value*> inputs_;
  std::vector<Value>& outputs_;
  std::shared_ptr<void>* state_;
  const Epilogue* epilogue_ = nullptr;
  bool epilogue_applied_ = false;
};

/// Kernels keyed by domain and op_type, each with the opset range it implements.
class KernelRegistry {
 public:
  static const KernelRegistry& instance();
  /// Registers `fn` for opset versions [from, to] of an op (inclusive).
  void add(std::string_view domain, std::string_view op_type, int from, int to, KernelFn fn);
  /// Registers `fn` for every version of the ai.onnx op `op_type` (from its first schema).
  void add(std::string_view op_type, KernelFn fn);
  KernelFn find(std::string_view domain, std::string_view op_type, int64_t opset) const;
  /// Every registered (domain, op) with its version ranges, for coverage reports.
  struct Entry {
    int from, to;
    KernelFn fn;
    std::string_view family;  ///< the op family of the registering file (ir/ops/families.h)
    std::string_view file;    ///< the registering file, "runner/cpu/conv.cpp"
  };
  const std::map<std::string, std::vector<Entry>, std::less<>>& entries() const { return ops_; }
  /// The family and file that the following add() calls register from (strings that outlive
  /// the registry), recorded for the op index and its coverage test.
  void begin_file(std::string_view family, std::string_view file) {
    family_ = family;
    file_ = file;
  }

 private:
  std::string_view family_, file_;
  std::map<std::string, std::vector<Entry>, std::less<>> ops_;  // key "domain::op"
};

/// One file of kernels for a device's table (KernelRegistry, vulkan::KernelTable): its op family
/// (ir/ops/families.h), its path, and the function that registers its kernels.
template <class Table>
struct KernelFile {
  std::string_view family;
  std::string_view file;
  void (*register_kernels)(Table& table);
};

/// Registers each file's kernels, recording its family and path with them (Table::begin_file).
template <class Table, size_t N>
void register_kernel_files(Table& table, const KernelFile<Table> (&files)[N]) {
  for (const KernelFile<Table>& f : files) {
    table.begin_file(f.family, f.file);
    f.register_kernels(table);
  }
  table.begin_file("", "");
}

/// Registers every CPU kernel family (explicit registration, runner/cpu/register.cpp).
void register_cpu_kernels(KernelRegistry& registry);

}  // namespace onnxtool::runner
