// Planning and executing graphs: slots per value, kernels per node, frames for subgraphs.
#include "runner/session.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#ifdef _OPENMP
#endif

#include "ir/error.h"
#include "ir/op_schema.h"
#include "runner/buffer_pool.h"
#include "runner/cpu/epilogue.h"
#include "runner/cpu/kernels.h"
#include "runner/profile.h"
#include "runner/thread_pool.h"

namespace onnxtool::runner {

// ---------------------------------------------------------------- plan structures

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

namespace {

/// set_time_limit's bound: nanoseconds of the steady clock (0: none), and its name.
std::atomic<int64_t> g_time_limit_ns{0};
std::string g_time_limit_what;

int64_t steady_ns(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

void set_time_limit(double seconds, const std::string& what) {
  g_time_limit_what = what;
  g_time_limit_ns = seconds > 0 ? steady_ns(std::chrono::steady_clock::now()) + static_cast<int64_t>(seconds * 1e9) : 0;
}

bool time_limit_set() { return g_time_limit_ns.load() != 0; }

bool time_limit_passed() {
  const int64_t at = g_time_limit_ns.load();
  return at != 0 && steady_ns(std::chrono::steady_clock::now()) >= at;
}

void Executor::check_time(const GraphPlan& plan, const Frame& frame, const Step* step) const {
  const int64_t process = g_time_limit_ns.load();
  if (process == 0 && !deadline) return;
  const auto now = std::chrono::steady_clock::now();
  const std::string* what = nullptr;
  if (process != 0 && steady_ns(now) >= process) what = &g_time_limit_what;
  else if (deadline && now >= *deadline) what = &deadline_what;
  if (!what) return;
  std::string where = step ? " before " + step->node->describe() : "";
  for (const Frame* f = &frame; f->parent; f = f->parent)
    where += std::string(where.empty() ? " in" : ",") + " the subgraph '" + f->plan->graph->name + "'" +
             (f->owner ? " of " + f->owner->describe() : "");
  throw TimeLimitReached(*what + " ran out" + where, what == &deadline_what ? deadline_remedies : std::vector<std::string>{});
}

namespace {

/// A sparse initializer (COO: values and their indices, [NNZ] linear or [NNZ, rank]
/// coordinates) as the dense tensor it stands for, zeros elsewhere. Indices out of the shape
/// are an error naming the tensor (the checker reports them too).
Tensor densify(const ir::SparseTensor& sp) {
  const std::string where = "sparse initializer '" + sp.name() + "'";
  if (!sp.values || !sp.indices) throw_input_error(where + ": values or indices missing");
  const Tensor values = from_ir(*sp.values);
  const Tensor indices = from_ir(*sp.indices);
  if (values.dtype() == DataType::kString || ir::data_type_bits(values.dtype()) % 8 != 0)
    throw_input_error(where + ": " + std::string(ir::data_type_name(values.dtype())) + " values are not supported");
  if (indices.dtype() != DataType::kInt64) throw_input_error(where + ": indices must be int64");
  const int64_t nnz = values.size();
  const int64_t rank = static_cast<int64_t>(sp.dims.size());
  const bool linear = indices.shape().size() == 1;
  if (!(linear ? indices.size() == nnz : indices.shape().size() == 2 && indices.shape()[0] == nnz && indices.shape()[1] == rank))
    throw_input_error(where + ": indices of shape " + shape_string(indices.shape()) + " do not match " + std::to_string(nnz) + " values");
  Tensor out(values.dtype(), sp.dims);
  const size_t element = nnz > 0 ? values.bytes() / static_cast<size_t>(nnz) : 0;
  std::memset(out.mutable_raw(), 0, out.bytes());
  const int64_t* idx = indices.data<int64_t>();
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t at = 0;
    if (linear) {
      at = idx[k];
    } else {
      for (int64_t d = 0; d < rank; ++d) {
        const int64_t i = idx[k * rank + d];
        if (i < 0 || i >= sp.dims[static_cast<size_t>(d)]) at = -1;
        if (at >= 0) at = at * sp.dims[static_cast<size_t>(d)] + i;
      }
    }
    if (at < 0 || at >= out.size()) throw_input_error(where + ": index " + std::to_string(k) + " is outside its shape");
    std::memcpy(static_cast<uint8_t*>(out.mutable_raw()) + static_cast<size_t>(at) * element,
                static_cast<const uint8_t*>(values.raw()) + static_cast<size_t>(k) * element, element);
  }
  return out;
}

/// Refuses, before anything runs, a graph with a value whose static shape (declared, or inferred
/// by the caller) needs more bytes than the machine's physical memory.
void check_static_sizes(const ir::Graph& g, uint64_t memory) {
  for (const auto& n : g.nodes()) {
    for (const ir::Value* v : n->outputs()) {
      if (!v || v->type.kind != ir::TypeInfo::Kind::kTensor || !v->type.elem_type || !v->type.shape) continue;
      const ir::Shape& shape = *v->type.shape;
      if (!shape.is_static() || ir::data_type_bits(v->type.data_type()) == 0) continue;  // strings: no fixed size
      std::vector<int64_t> dims;
      for (const auto& d : shape.dims) dims.push_back(d.value);
      // A negative size (some exporters write -1 for "unknown") says nothing about memory.
      if (std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d < 0; })) continue;
      uint64_t count = 1;
      bool overflow = false;
      for (int64_t d : dims) {
        const auto u = static_cast<uint64_t>(d);
        if (u != 0 && count > UINT64_MAX / u) overflow = true;
        else count *= u;
      }
      const std::optional<uint64_t> bytes =
          overflow ? std::nullopt : ir::storage_bytes(v->type.data_type(), count);
      if (bytes && *bytes <= memory) continue;
      throw Error(ErrorKind::kFailed,
                  n->describe() + ": output '" + v->name() + "' has the static shape " + shape_string(dims) + " of " +
                      std::string(ir::data_type_name(v->type.data_type())) + ", " +
                      (bytes ? gigabytes(*bytes) : std::string("more bytes than 64 bits count")) +
                      ", more than this machine's " + gigabytes(memory) +
                      " of physical memory; the model cannot run here");
    }
    for (const ir::Graph* sub : n->subgraphs()) check_static_sizes(*sub, memory);
  }
}

int64_t opset_for(const ir::Model& model, const std::string& domain) {
  auto v = model.opset_version(domain);
  return v ? *v : 0;
}

class Planner {
 public:
  Planner(const ir::Model& model, const Backend* backend)
      : model_(model), kernels_(KernelRegistry::instance()), backend_(backend) {}

  std::unique_ptr<GraphPlan> plan(const ir::Graph& g, const GraphPlan* parent) {
    auto p = std::make_unique<GraphPlan>();
    p->graph = &g;
    p->parent = parent;
    auto slot_of = [&p](const ir::Value* v) {
      auto [it, fresh] = p->slots.emplace(v, p->n_slots);
      if (fresh) p->n_slots++;
      return it->second;
    };
    for (const auto& vi : g.inputs) p->input_slots.push_back(slot_of(vi.value));
    for (const auto& t : g.initializers()) {
      const ir::Value* v = g.find(t->name);
      if (!v) continue;
      const int s = slot_of(v);
      p->constants.resize(static_cast<size_t>(p->n_slots));
      if (p->constants[static_cast<size_t>(s)].kind == Value::Kind::kNone)
        p->constants[static_cast<size_t>(s)] = Value::of(from_ir(*t));
    }
    for (const auto& sp : g.sparse_initializers) {
      const ir::Value* v = g.find(sp.name());
      if (!v) continue;
      const int s = slot_of(v);
      p->constants.resize(static_cast<size_t>(p->n_slots));
      if (p->constants[static_cast<size_t>(s)].kind == Value::Kind::kNone) p->constants[static_cast<size_t>(s)] = Value::of(densify(sp));
    }
    // Node order: topological over the node list (valid models are sorted already).
    std::vector<const ir::Node*> order = sorted_nodes(g);
    for (const ir::Node* n : order) {
      Step st;
      st.node = n;
      const std::string domain(ir::canonical_domain(n->domain));
      st.opset = opset_for(model_, domain);
      st.fn = kernels_.find(domain, n->op_type, st.opset);
      if (!st.fn) {
        const std::string where = n->name.empty() ? "an unnamed node" : "node '" + n->name + "'";
        throw_input_error("no kernel for " + n->qualified_op() + " (opset " + std::to_string(st.opset) +
                          ") used by " + where + "; the runner cannot execute this model");
      }
      for (const ir::Value* v : n->inputs()) st.inputs.push_back(v ? resolve(*p, v) : SlotRef{});
      for (const ir::Value* v : n->outputs()) st.outputs.push_back(v ? slot_of(v) : -1);
      for (const ir::Graph* sub : n->subgraphs()) p->subplans[sub] = plan(*sub, p.get());
      st.constant = is_cacheable(*n) && std::all_of(st.inputs.begin(), st.inputs.end(), [&](const SlotRef& r) {
        return r.slot < 0 || is_constant_slot(*p, r);
      });
      if (st.constant)
        for (int s : st.outputs)
          if (s >= 0) mark_constant(*p, s);
      // Control flow runs on the CPU (its subgraphs' nodes are placed like the main graph's).
      if (backend_ && !st.constant && n->subgraphs().empty())
        st.device_fn = backend_->find(domain, n->op_type, st.opset);
      p->steps.push_back(std::move(st));
    }
    for (const auto& vi : g.outputs) p->output_slots.push_back(resolve(*p, vi.value));
    p->constants.resize(static_cast<size_t>(p->n_slots));
    if (!backend_) {
      plan_epilogues(*p);
      plan_quantized_convs(*p);
    }
    compute_lifetimes(*p);
    return p;
  }

 private:
  /// Deterministic ops without subgraphs (their results depend on their inputs only).
  static bool is_cacheable(const ir::Node& n) {
    static const std::set<std::string, std::less<>> random = {"RandomNormal", "RandomUniform", "RandomNormalLike",
                                                              "RandomUniformLike", "Bernoulli", "Multinomial", "Dropout"};
    return (n.domain.empty() || n.domain == "ai.onnx") && !random.count(n.op_type) && n.subgraphs().empty();
  }

  static void mark_constant(GraphPlan& p, int slot) {
    if (p.constant_slot.size() <= static_cast<size_t>(slot)) p.constant_slot.resize(static_cast<size_t>(slot) + 1, false);
    p.constant_slot[static_cast<size_t>(slot)] = true;
  }

  static bool is_constant_slot(const GraphPlan& p, SlotRef r) {
    const GraphPlan* q = &p;
    for (int i = 0; i < r.up && q; ++i) q = q->parent;
    if (!q) return false;
    const auto s = static_cast<size_t>(r.slot);
    if (s < q->constants.size() && q->constants[s].kind != Value::Kind::kNone) return true;
    return s < q->constant_slot.size() && q->constant_slot[s];
  }

  SlotRef resolve(GraphPlan& p, const ir::Value* v) {
    int up = 0;
    for (const GraphPlan* q = &p; q; q = q->parent, ++up) {
      auto it = q->slots.find(v);
      if (it != q->slots.end()) return {up, it->second};
    }
    // Not defined anywhere: a value of an enclosing graph not yet planned (produced later in the
    // parent), or an undefined name; give it a local slot that a producer may fill.
    if (v->graph() == p.graph || v->is_undefined()) {
      auto [it, fresh] = p.slots.emplace(v, p.n_slots);
      if (fresh) p.n_slots++;
      return {0, it->second};
    }
    up = 0;
    for (GraphPlan* q = &p; q; q = const_cast<GraphPlan*>(q->parent), ++up) {
      if (q->graph == v->graph()) {
        auto [it, fresh] = q->slots.emplace(v, q->n_slots);
        if (fresh) q->n_slots++;
        return {up, it->second};
      }
    }
    throw_input_error("value '" + v->name() + "' is not defined in scope");
  }

  static std::vector<const ir::Node*> sorted_nodes(const ir::Graph& g) {
    std::vector<const ir::Node*> order;
    for (size_t i : g.topological_order()) order.push_back(g.nodes()[i].get());
    return order;
  }

  /// Fuses into each float Conv the chain of activations that alone read its output
  /// (runner/cpu/epilogue.h): BatchNormalization with constant parameters, Relu, LeakyRelu,
  /// Sigmoid, HardSigmoid, HardSwish, Clip with constant bounds, Add, Sub, Mul and Div of a
  /// per-channel constant, and a Mul of the value by a chain of these that starts from it (SiLU:
  /// Sigmoid + Mul; HardSwish written out: Add, Clip, Mul). No value of the chain but its last
  /// may be a graph output or read by a subgraph.
  static void plan_epilogues(GraphPlan& p) {
    std::vector<std::vector<size_t>> readers(static_cast<size_t>(p.n_slots));
    for (size_t i = 0; i < p.steps.size(); ++i)
      for (const auto& r : p.steps[i].inputs)
        if (r.up == 0 && r.slot >= 0) {
          auto& list = readers[static_cast<size_t>(r.slot)];
          if (list.empty() || list.back() != i) list.push_back(i);
        }
    const std::vector<bool> pinned = pinned_slots(p);
    const auto local = [&](const Step& st, size_t i) { return i < st.inputs.size() && st.inputs[i].up == 0 ? st.inputs[i].slot : -1; };
    // Constant values known now: initializers, and Constant nodes' `value` tensors (exporters
    // such as Paddle's write BatchNormalization's parameters as Constant nodes).
    std::vector<int> constant_node(static_cast<size_t>(p.n_slots), -1);
    for (size_t i = 0; i < p.steps.size(); ++i) {
      const Step& st = p.steps[i];
      if (st.constant && st.node->op_type == "Constant" && st.outputs.size() == 1 && st.outputs[0] >= 0 &&
          st.node->attr("value"))
        constant_node[static_cast<size_t>(st.outputs[0])] = static_cast<int>(i);
    }
    std::map<int, Tensor> decoded;
    const auto constant_value = [&](int slot) -> const Tensor* {
      if (slot < 0) return nullptr;
      const auto s = static_cast<size_t>(slot);
      if (p.constants[s].is_tensor()) return &p.constants[s].tensor;
      if (constant_node[s] < 0) return nullptr;
      auto it = decoded.find(slot);
      if (it == decoded.end()) {
        const ir::Attribute* value = p.steps[static_cast<size_t>(constant_node[s])].node->attr("value");
        if (!value->t) return nullptr;
        try {
          it = decoded.emplace(slot, from_ir(*value->t)).first;
        } catch (const Error&) {
          return nullptr;  // the Constant node reports its own error when it runs
        }
      }
      return &it->second;
    };
    const auto op = [](const Step& st, const char* type) {
      return st.node->op_type == type && (st.node->domain.empty() || st.node->domain == "ai.onnx");
    };
    for (size_t ci = 0; ci < p.steps.size(); ++ci) {
      Step& conv = p.steps[ci];
      if (!op(conv, "Conv") || conv.constant || conv.outputs.size() != 1 || conv.outputs[0] < 0) continue;
      auto ep = std::make_shared<Epilogue>();
      std::vector<size_t> absorbed;
      int slot = conv.outputs[0];
      // The output's rank and channels, from a constant weight (Mul and Add need them).
      int64_t rank = -1, channels = -1;
      if (const Tensor* w = constant_value(local(conv, 1))) {
        const Tensor& weight = *w;
        if (weight.rank() >= 3) {
          rank = static_cast<int64_t>(weight.rank());
          channels = weight.dim(0);
        }
      }
      // The epilogue op of step `si` reading `from` (its only input that does), or nullopt.
      const auto as_op = [&](size_t si, int from) -> std::optional<EpilogueOp> {
        const Step& st = p.steps[si];
        if (st.constant || st.outputs.size() != 1 || st.outputs[0] < 0) return std::nullopt;
        std::vector<const Tensor*> constants;
        size_t data = st.inputs.size(), reads = 0;
        for (size_t i = 0; i < st.inputs.size(); ++i) {
          const int c = local(st, i);
          if (c == from) {
            data = i;
            ++reads;
          }
          constants.push_back(c != from ? constant_value(c) : nullptr);
        }
        if (reads != 1) return std::nullopt;
        return epilogue_op(*st.node, st.opset, data, constants, rank, channels);
      };
      for (;;) {
        const auto s = static_cast<size_t>(slot);
        if (pinned[s] || readers[s].empty() || readers[s].size() > 2) break;
        if (readers[s].size() == 1) {
          auto e = as_op(readers[s][0], slot);
          if (!e) break;
          ep->ops.push_back(std::move(*e));
          absorbed.push_back(readers[s][0]);
          slot = p.steps[readers[s][0]].outputs[0];
          continue;
        }
        // A gate: one reader is a Mul of the value by the end of a chain of up to four ops that
        // the other reader starts (SiLU: Sigmoid; HardSwish written out: Add, Clip), each
        // value of the chain read only by the next.
        bool fused = false;
        for (int k = 0; k < 2 && !fused; ++k) {
          const size_t mul_i = readers[s][static_cast<size_t>(k)], start = readers[s][static_cast<size_t>(1 - k)];
          const Step& mul = p.steps[mul_i];
          if (!op(mul, "Mul") || mul.constant || mul.inputs.size() != 2 || mul.outputs.size() != 1 || mul.outputs[0] < 0)
            continue;
          EpilogueOp gate;
          gate.kind = EpilogueOp::Kind::kGate;
          std::vector<size_t> chain;
          int at = slot;
          size_t step_i = start;
          bool ok = false;
          while (chain.size() < 4) {
            auto e = as_op(step_i, at);
            if (!e) break;
            gate.gate.push_back(std::move(*e));
            chain.push_back(step_i);
            at = p.steps[step_i].outputs[0];
            const auto& next = readers[static_cast<size_t>(at)];
            if (pinned[static_cast<size_t>(at)] || next.size() != 1) break;
            if (next[0] == mul_i) {
              ok = true;
              break;
            }
            step_i = next[0];
          }
          if (!ok) continue;
          const int a = local(mul, 0), b = local(mul, 1);
          if (a == slot && b == at) gate.swapped = false;
          else if (a == at && b == slot) gate.swapped = true;
          else continue;
          ep->ops.push_back(std::move(gate));
          absorbed.insert(absorbed.end(), chain.begin(), chain.end());
          absorbed.push_back(mul_i);
          slot = mul.outputs[0];
          fused = true;
        }
        if (!fused) break;
      }
      if (absorbed.empty()) continue;
      conv.epilogue = std::move(ep);
      conv.absorbed = std::move(absorbed);
      conv.fused_output = slot;
      conv.fused_op_type = conv.node->op_type;
      for (size_t a : conv.absorbed) conv.fused_op_type += "+" + p.steps[a].node->op_type;
    }
  }

  /// Slots whose values must exist as they are: graph outputs and values subgraphs read.
  static std::vector<bool> pinned_slots(const GraphPlan& p) {
    std::vector<bool> pinned(static_cast<size_t>(p.n_slots), false);
    for (const auto& r : p.output_slots)
      if (r.up == 0 && r.slot >= 0) pinned[static_cast<size_t>(r.slot)] = true;
    for (const auto& [g, sub] : p.subplans) mark_outer_uses(*sub, 1, pinned);
    return pinned;
  }

  /// Runs each float Conv of a QDQ model whose data and weight are DequantizeLinear outputs (8-bit
  /// data with one scale; constant 8-bit weights with one scale or one per output channel) as
  /// an integer convolution of the quantized tensors (cpu::conv_from_quantized, the sums exact).
  /// The DequantizeLinear outputs nothing else reads are then not computed (Step::unread).
  static void plan_quantized_convs(GraphPlan& p) {
    std::vector<int> producer(static_cast<size_t>(p.n_slots), -1);
    for (size_t i = 0; i < p.steps.size(); ++i)
      for (int o : p.steps[i].outputs)
        if (o >= 0) producer[static_cast<size_t>(o)] = static_cast<int>(i);
    const auto local = [](const Step& st, size_t i) {
      return i < st.inputs.size() && st.inputs[i].up == 0 ? st.inputs[i].slot : -1;
    };
    const auto initializer = [&](const Step& st, size_t i) -> const Tensor* {
      const int slot = local(st, i);
      return slot >= 0 && p.constants[static_cast<size_t>(slot)].is_tensor() ? &p.constants[static_cast<size_t>(slot)].tensor
                                                                              : nullptr;
    };
    const auto given = [](const Step& st, size_t i) { return i < st.inputs.size() && st.inputs[i].slot >= 0; };
    const auto is_op = [](const Step& st, const char* type) {
      return st.node->op_type == type && (st.node->domain.empty() || st.node->domain == "ai.onnx");
    };
    // The DequantizeLinear (one scale per tensor or per axis, not blocked) producing input i.
    const auto dequantized = [&](const Step& st, size_t i) -> Step* {
      const int slot = local(st, i);
      if (slot < 0 || producer[static_cast<size_t>(slot)] < 0) return nullptr;
      Step& d = p.steps[static_cast<size_t>(producer[static_cast<size_t>(slot)])];
      if (!is_op(d, "DequantizeLinear") || d.outputs.size() != 1 || d.inputs.size() < 2) return nullptr;
      if (const ir::Attribute* b = d.node->attr("block_size"); b && b->i != 0) return nullptr;
      return &d;
    };
    const auto is_8bit = [](DataType t) { return t == DataType::kUInt8 || t == DataType::kInt8; };
    std::vector<size_t> rewired;  // the DequantizeLinear steps some Conv no longer reads
    for (Step& conv : p.steps) {
      if (!is_op(conv, "Conv") || conv.constant || conv.inputs.size() < 2 || conv.outputs.size() != 1) continue;
      Step* dx = dequantized(conv, 0);
      Step* dw = dequantized(conv, 1);
      if (!dx || !dw || dx->constant || !dw->constant) continue;
      // x: 8-bit (its zero point's type, which the spec makes x's, or its declared type).
      const Tensor* xs = initializer(*dx, 1);
      const Tensor* xz = initializer(*dx, 2);
      if (!xs || xs->dtype() != DataType::kFloat || xs->size() != 1 || (given(*dx, 2) && !xz)) continue;
      const ir::Value* xq = dx->node->input(0);
      const DataType xt = xz ? xz->dtype() : xq && xq->type.is_tensor() ? xq->type.data_type() : DataType::kUndefined;
      if (!is_8bit(xt)) continue;
      // w: constant, 8-bit, rank 3 or more; one scale, or one per output channel (axis 0).
      const Tensor* wq = initializer(*dw, 0);
      const Tensor* ws = initializer(*dw, 1);
      const Tensor* wz = initializer(*dw, 2);
      if (!wq || !is_8bit(wq->dtype()) || wq->rank() < 3 || !ws || ws->dtype() != DataType::kFloat) continue;
      if (given(*dw, 2) && (!wz || wz->dtype() != wq->dtype() || wz->size() != ws->size())) continue;
      const int64_t m = wq->dim(0);
      if (ws->size() != 1) {
        int64_t axis = 1;
        if (const ir::Attribute* a = dw->node->attr("axis")) axis = a->i;
        if (axis < 0) axis += static_cast<int64_t>(wq->rank());
        if (ws->size() != m || axis != 0) continue;
      }
      // Exact int32 sums: each term is at most 255^2 in magnitude.
      if (wq->size() / std::max<int64_t>(m, 1) > (int64_t{1} << 31) / (255 * 255)) continue;
      const SlotRef none;
      conv.inputs = {dx->inputs[0], dx->inputs[1], given(*dx, 2) ? dx->inputs[2] : none,
                     dw->inputs[0], dw->inputs[1], given(*dw, 2) ? dw->inputs[2] : none,
                     given(conv, 2) ? conv.inputs[2] : none};
      conv.fn = cpu::conv_from_quantized;
      conv.label = "Conv(int8)";
      if (!conv.fused_op_type.empty()) conv.fused_op_type.replace(0, 4, conv.label);
      rewired.push_back(static_cast<size_t>(dx - p.steps.data()));
      rewired.push_back(static_cast<size_t>(dw - p.steps.data()));
    }
    if (rewired.empty()) return;
    std::vector<bool> read = pinned_slots(p);
    for (const Step& st : p.steps)
      for (const SlotRef& r : st.inputs)
        if (r.up == 0 && r.slot >= 0) read[static_cast<size_t>(r.slot)] = true;
    for (size_t i : rewired) {
      Step& d = p.steps[i];
      if (d.outputs[0] >= 0 && !read[static_cast<size_t>(d.outputs[0])]) d.unread = true;
    }
  }

  static void compute_lifetimes(GraphPlan& p) {
    p.keep.assign(static_cast<size_t>(p.n_slots), false);
    for (int s : p.input_slots) p.keep[static_cast<size_t>(s)] = true;
    for (const auto& r : p.output_slots)
      if (r.up == 0 && r.slot >= 0) p.keep[static_cast<size_t>(r.slot)] = true;
    for (size_t s = 0; s < p.constants.size(); ++s)
      if (p.constants[s].kind != Value::Kind::kNone) p.keep[s] = true;
    // Values used by subgraphs are read through the frame chain: keep them for the whole run.
    std::vector<bool> used_by_sub(static_cast<size_t>(p.n_slots), false);
    for (const auto& [g, sub] : p.subplans) mark_outer_uses(*sub, 1, used_by_sub);
    std::vector<int> last_use(static_cast<size_t>(p.n_slots), -1);
    for (size_t i = 0; i < p.steps.size(); ++i)
      for (const auto& r : p.steps[i].inputs)
        if (r.up == 0 && r.slot >= 0) last_use[static_cast<size_t>(r.slot)] = static_cast<int>(i);
    for (size_t s = 0; s < last_use.size(); ++s) {
      if (last_use[s] < 0 || p.keep[s] || used_by_sub[s]) continue;
      p.steps[static_cast<size_t>(last_use[s])].release_after.push_back(static_cast<int>(s));
    }
  }

  static void mark_outer_uses(const GraphPlan& sub, int depth, std::vector<bool>& used) {
    for (const auto& st : sub.steps)
      for (const auto& r : st.inputs)
        if (r.up == depth && r.slot >= 0 && static_cast<size_t>(r.slot) < used.size())
          used[static_cast<size_t>(r.slot)] = true;
    for (const auto& r : sub.output_slots)
      if (r.up == depth && r.slot >= 0 && static_cast<size_t>(r.slot) < used.size())
        used[static_cast<size_t>(r.slot)] = true;
    for (const auto& [g, s] : sub.subplans) mark_outer_uses(*s, depth + 1, used);
  }

  const ir::Model& model_;
  const KernelRegistry& kernels_;
  const Backend* backend_;
};

}  // namespace

// ---------------------------------------------------------------- Executor

namespace {

/// Rethrows a kernel's error with the node named (kernel failures mostly name it already).
[[noreturn]] void rethrow_naming(const Step& step, const Error& e) {
  const std::string msg = e.what();
  if (msg.find("node '") == 0 || msg.find("node #") == 0 || msg.find(" node ") != std::string::npos) throw e;
  throw Error(e.kind(), step.node->describe() + ": " + msg);
}

/// The inputs of a device step, resolved through the executor on first use.
class FrameInputs : public DeviceKernelContext::Inputs {
 public:
  FrameInputs(Executor& exec, Frame& frame, const Step& step) : exec_(exec), frame_(frame), step_(step) {}
  size_t count() const override { return step_.inputs.size(); }
  bool present(size_t i) const override {
    if (i >= step_.inputs.size() || step_.inputs[i].slot < 0) return false;
    const auto [f, s] = at(i);
    return f.slots[s].kind != Value::Kind::kNone || f.device[s];
  }
  DeviceTensorPtr device(size_t i) override { return exec_.device(frame_, step_.inputs[i]); }
  const Tensor& host(size_t i) override {
    const Value& v = exec_.host(frame_, step_.inputs[i]);
    if (!v.is_tensor()) throw DeviceDeclined("input " + std::to_string(i) + " is " + v.describe());
    return v.tensor;
  }
  DataType dtype(size_t i) const override {
    const auto [f, s] = at(i);
    if (const auto& d = f.device[s]) return d->dtype();
    return host_tensor(i).dtype();
  }
  const std::vector<int64_t>& shape(size_t i) const override {
    const auto [f, s] = at(i);
    if (const auto& d = f.device[s]) return d->shape();
    return host_tensor(i).shape();
  }

 private:
  std::pair<Frame&, size_t> at(size_t i) const {
    const SlotRef r = step_.inputs[i];
    Frame* f = &frame_;
    for (int k = 0; k < r.up; ++k) f = f->parent;
    return {*f, static_cast<size_t>(r.slot)};
  }
  const Tensor& host_tensor(size_t i) const {
    const auto [f, s] = at(i);
    const Value& v = f.slots[s];
    if (!v.is_tensor()) throw DeviceDeclined("input " + std::to_string(i) + " is " + v.describe());
    return v.tensor;
  }
  Executor& exec_;
  Frame& frame_;
  const Step& step_;
};

}  // namespace

const Value& Executor::host(Frame& at, SlotRef ref) {
  Frame& frame = frame_of(at, ref);
  const auto s = static_cast<size_t>(ref.slot);
  Value& v = frame.slots[s];
  if (v.kind == Value::Kind::kNone && !frame.device.empty() && frame.device[s])
    v = Value::of(backend_->download(*frame.device[s]));
  return v;
}

DeviceTensorPtr Executor::device(Frame& at, SlotRef ref) {
  Frame& frame = frame_of(at, ref);
  const auto s = static_cast<size_t>(ref.slot);
  if (frame.device[s]) return frame.device[s];
  const Value& v = frame.slots[s];
  if (!v.is_tensor()) throw DeviceDeclined("an input is " + v.describe());
  const GraphPlan& plan = *frame.plan;
  const bool constant = (s < plan.constants.size() && plan.constants[s].kind != Value::Kind::kNone) ||
                        (s < plan.constant_slot.size() && plan.constant_slot[s]);
  if (constant) {
    if (plan.device_constants.size() < plan.constants.size()) plan.device_constants.resize(plan.constants.size());
    if (!plan.device_constants[s]) plan.device_constants[s] = backend_->upload(v.tensor);
    frame.device[s] = plan.device_constants[s];
  } else {
    frame.device[s] = backend_->upload(v.tensor);
  }
  return frame.device[s];
}

bool Executor::run_on_device(const Step& step, Frame& frame, std::vector<Value>& outputs,
                             std::vector<DeviceTensorPtr>& device_outputs) {
  FrameInputs inputs(*this, frame, step);
  device_outputs.assign(step.outputs.size(), nullptr);
  try {
    DeviceKernelContext ctx(*backend_, *step.node, step.opset, inputs, device_outputs, outputs);
    step.device_fn(ctx);
    return true;
  } catch (const DeviceDeclined& declined) {
    placement.cpu_nodes.push_back({step.node, declined.what()});
    device_outputs.assign(step.outputs.size(), nullptr);
    outputs.assign(step.outputs.size(), Value());
    return false;
  }
}

void Executor::execute(const GraphPlan& plan, Frame& frame) {
  for (size_t s = 0; s < plan.constants.size(); ++s)
    if (plan.constants[s].kind != Value::Kind::kNone && frame.slots[s].kind == Value::Kind::kNone)
      frame.slots[s] = plan.constants[s];
  const bool on_device = backend_ != nullptr;
  if (on_device && frame.device.size() != frame.slots.size()) frame.device.assign(frame.slots.size(), nullptr);
  static const Value kNone;
  const bool timed = profiler != nullptr && frame.parent == nullptr;
  const Observation& observation = *observation_;
  const bool observing = observation.active() && (frame.parent == nullptr || observation.subgraphs);
  const auto wanted = [&](const ir::Value* v) { return observing && v && observation.wanted(*v); };
  std::vector<bool> skipped;  // steps whose work a fused Conv did in this run
  check_time(plan, frame, nullptr);  // a Loop body of no nodes comes here at every iteration
  for (size_t si = 0; si < plan.steps.size(); ++si) {
    const Step& step = plan.steps[si];
    check_time(plan, frame, &step);
    const auto kept = [&](int slot) {
      return frame.parent == nullptr && slot >= 0 && static_cast<size_t>(slot) < requested.size() && requested[static_cast<size_t>(slot)];
    };
    const bool requested_here = step.unread && kept(step.outputs[0]);
    if ((!skipped.empty() && skipped[si]) || (step.unread && !requested_here && !wanted(step.node->output(0)))) {
      for (int s : step.release_after)
        if (!kept(s)) frame.slots[static_cast<size_t>(s)] = kNone;
      continue;
    }
    // Fused activations run only where nothing watches the values between them (calibration
    // observes every tensor) and the nodes run on the CPU.
    const Epilogue* epilogue = nullptr;
    const ir::Value* fused_value = nullptr;  // the chain's last value
    if (!on_device && step.epilogue) {
      bool watched = wanted(step.node->output(0)) || kept(step.outputs[0]);
      for (size_t a : step.absorbed) {
        const Step& link = plan.steps[a];
        if (link.outputs[0] == step.fused_output) fused_value = link.node->output(0);
        else watched = watched || wanted(link.node->output(0)) || kept(link.outputs[0]);
      }
      if (!watched) epilogue = step.epilogue.get();
    }
    std::vector<Value> outputs(step.outputs.size());
    std::vector<DeviceTensorPtr> device_outputs;
    const auto start = timed ? Profiler::Clock::now() : Profiler::Clock::time_point();
    const bool device_timed = timed && on_device && step.device_fn && !step.constant && backend_->begin_timed();
    bool ran = false;
    try {
      if (on_device && step.device_fn) ran = run_on_device(step, frame, outputs, device_outputs);
      if (ran && first_placement(step)) ++placement.device_nodes;
    } catch (const Error& e) {
      rethrow_naming(step, e);
    }
    if (on_device && !ran && first_placement(step)) {
      if (step.constant) ++placement.constant_nodes;
      else if (!step.node->subgraphs().empty())
        placement.cpu_nodes.push_back({step.node, "control flow; its subgraphs' nodes are placed one by one"});
      else if (!step.device_fn)
        placement.cpu_nodes.push_back({step.node, std::string("no ") + backend_->api_name() + " kernel"});
    }
    bool fused = false;
    if (!ran) fused = run_on_cpu(step, frame, outputs, epilogue);
    if (fused) {
      // The Conv's output is the chain's last value; the chain's own steps are done.
      if (skipped.empty()) skipped.assign(plan.steps.size(), false);
      for (size_t a : step.absorbed) skipped[a] = true;
      frame.slots[static_cast<size_t>(step.fused_output)] = std::move(outputs[0]);
      outputs[0] = Value();
      if (wanted(fused_value))
        observation.observer(*fused_value, frame.slots[static_cast<size_t>(step.fused_output)]);
    }
    if (timed && !step.constant) {
      const size_t event =
          profiler->record(*step.node, ran, start, Profiler::Clock::now(), fused ? step.fused_op_type : step.label);
      if (device_timed && ran)
        backend_->end_timed([profiler = profiler, event](int64_t ns) { profiler->set_device_time(event, ns); });
    }
    for (size_t i = 0; i < step.outputs.size() && !fused; ++i) {
      if (step.outputs[i] < 0) continue;
      const auto slot = static_cast<size_t>(step.outputs[i]);
      frame.slots[slot] = std::move(outputs[i]);
      if (on_device) frame.device[slot] = ran ? device_outputs[i] : nullptr;
      if (wanted(step.node->output(i))) observation.observer(*step.node->output(i), host(frame, SlotRef{0, static_cast<int>(slot)}));
    }
    // An unread value was computed for the observer: nothing else holds on to it.
    if (step.unread && !requested_here && step.outputs[0] >= 0) frame.slots[static_cast<size_t>(step.outputs[0])] = kNone;
    for (int s : step.release_after) {
      if (kept(s)) continue;
      frame.slots[static_cast<size_t>(s)] = kNone;
      if (on_device) frame.device[static_cast<size_t>(s)] = nullptr;
    }
  }
}

bool Executor::run_on_cpu(const Step& step, Frame& frame, std::vector<Value>& outputs, const Epilogue* epilogue) {
  if (step.computed) {
    outputs = step.cached;
    return false;
  }
  std::vector<const Value*> inputs;
  inputs.reserve(step.inputs.size());
  for (const auto& r : step.inputs) {
    if (r.slot < 0) {
      inputs.push_back(nullptr);
      continue;
    }
    // Device sessions: the CPU kernel reads its inputs on the host.
    const Value& v = backend_ ? host(frame, r) : frame_of(frame, r).slots[static_cast<size_t>(r.slot)];
    inputs.push_back(v.kind == Value::Kind::kNone ? nullptr : &v);
  }
  KernelContext ctx(*this, frame, *step.node, step.opset, threads_, std::move(inputs), outputs,
                    const_cast<std::shared_ptr<void>*>(&step.state));
  ctx.epilogue_ = epilogue;
  try {
    step.fn(ctx);
  } catch (const Error& e) {
    rethrow_naming(step, e);
  } catch (const std::bad_alloc&) {
    // A tensor whose size is known only now (Expand, Tile, Resize... of runtime values) and
    // that the allocator refuses: name the node rather than dying or printing a bare message.
    throw Error(ErrorKind::kFailed,
                step.node->describe() + ": out of memory (physical memory " + gigabytes(physical_memory()) + ")");
  }
  if (step.constant && keep_constants) {
    // Keep constant results (up to a size that is worth holding between runs).
    size_t bytes = 0;
    for (const auto& v : outputs) bytes += v.is_tensor() ? v.tensor.bytes() : 0;
    if (bytes <= (size_t{64} << 20)) {
      step.cached = outputs;
      step.computed = true;
    }
  }
  return ctx.epilogue_applied_;
}

std::vector<Value> Executor::run_subgraph(Frame& caller, const ir::Graph& g,
                                          const std::vector<Value>& inputs, const ir::Node* owner) {
  auto it = caller.plan->subplans.find(&g);
  if (it == caller.plan->subplans.end())
    throw Error(ErrorKind::kInternal, "subgraph '" + g.name + "' was not planned");
  const GraphPlan& plan = *it->second;
  Frame frame{&plan, &caller, std::vector<Value>(static_cast<size_t>(plan.n_slots))};
  frame.owner = owner;
  if (inputs.size() != plan.input_slots.size())
    throw Error(ErrorKind::kFailed, "subgraph '" + g.name + "' takes " + std::to_string(plan.input_slots.size()) +
                                        " inputs, got " + std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) frame.slots[static_cast<size_t>(plan.input_slots[i])] = inputs[i];
  execute(plan, frame);
  std::vector<Value> out;
  for (const auto& r : plan.output_slots) out.push_back(backend_ ? host(frame, r) : frame_of(frame, r).slots[static_cast<size_t>(r.slot)]);
  return out;
}

// ---------------------------------------------------------------- KernelContext

const Value& KernelContext::input_value(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is missing");
  return *inputs_[i];
}

const Tensor& KernelContext::input(size_t i) const {
  const Value& v = input_value(i);
  if (!v.is_tensor()) fail("input " + std::to_string(i) + " is " + v.describe() + ", not a tensor");
  return v.tensor;
}

bool KernelContext::has_output(size_t i) const { return i < outputs_.size() && node_.output(i) != nullptr; }

Tensor& KernelContext::output(size_t i, DataType type, std::vector<int64_t> shape) {
  if (i >= outputs_.size()) fail("output " + std::to_string(i) + " does not exist");
  // Shapes computed while running (ConstantOfShape, Expand, Resize... of runtime values): refuse
  // a tensor the machine cannot hold before allocating it.
  if (const uint64_t memory = physical_memory(); memory && ir::data_type_bits(type) > 0) {
    const auto bytes = ir::storage_bytes(type, static_cast<uint64_t>(shape_size(shape)));
    if (!bytes || *bytes > memory)
      fail("output " + std::to_string(i) + " " + std::string(ir::data_type_name(type)) + shape_string(shape) +
           " needs " + (bytes ? gigabytes(*bytes) : std::string("more bytes than 64 bits count")) +
           ", more than this machine's " + gigabytes(memory) + " of physical memory");
  }
  outputs_[i] = Value::of(Tensor(type, std::move(shape)));
  return outputs_[i].tensor;
}

void KernelContext::set_output(size_t i, Value value) {
  if (i >= outputs_.size()) fail("output " + std::to_string(i) + " does not exist");
  outputs_[i] = std::move(value);
}

int64_t NodeAttributes::attr_int(std::string_view name, int64_t fallback) const {
  const ir::Attribute* a = node_.attr(name);
  return a ? a->i : fallback;
}
float NodeAttributes::attr_float(std::string_view name, float fallback) const {
  const ir::Attribute* a = node_.attr(name);
  return a ? a->f : fallback;
}
std::string NodeAttributes::attr_string(std::string_view name, std::string fallback) const {
  const ir::Attribute* a = node_.attr(name);
  return a ? a->s : fallback;
}
std::vector<int64_t> NodeAttributes::attr_ints(std::string_view name, std::vector<int64_t> fallback) const {
  const ir::Attribute* a = node_.attr(name);
  return a ? a->ints : fallback;
}
std::vector<float> NodeAttributes::attr_floats(std::string_view name, std::vector<float> fallback) const {
  const ir::Attribute* a = node_.attr(name);
  return a ? a->floats : fallback;
}
const ir::Tensor* NodeAttributes::attr_tensor(std::string_view name) const {
  const ir::Attribute* a = node_.attr(name);
  return a && a->t ? &*a->t : nullptr;
}
const ir::Graph* NodeAttributes::attr_graph(std::string_view name) const {
  const ir::Attribute* a = node_.attr(name);
  return a ? a->g.get() : nullptr;
}

std::vector<Value> KernelContext::run_subgraph(const ir::Graph& graph, const std::vector<Value>& inputs) {
  return exec_.run_subgraph(frame_, graph, inputs, &node_);
}

void NodeAttributes::fail(const std::string& message) const {
  throw Error(ErrorKind::kFailed, node_.describe() + ": " + message);
}

// ---------------------------------------------------------------- KernelRegistry

const KernelRegistry& KernelRegistry::instance() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    register_cpu_kernels(r);
    return r;
  }();
  return registry;
}

void KernelRegistry::add(std::string_view domain, std::string_view op_type, int from, int to, KernelFn fn) {
  const std::string key = std::string(ir::canonical_domain(domain)) + "::" + std::string(op_type);
  ops_[key].push_back({from, to, fn});
}

KernelFn KernelRegistry::find(std::string_view domain, std::string_view op_type, int64_t opset) const {
  const std::string key = std::string(ir::canonical_domain(domain)) + "::" + std::string(op_type);
  auto it = ops_.find(key);
  if (it == ops_.end()) return nullptr;
  for (const auto& e : it->second)
    if (opset >= e.from && opset <= e.to) return e.fn;
  return nullptr;
}

// ---------------------------------------------------------------- Session

Session::Session(ir::Model& model, SessionOptions options) : model_(model), options_(options) {
  // Tensors of a megabyte and more come from the buffer pool (runner/buffer_pool.h); the
  // heap keeps the smaller ones' memory rather than returning it to the kernel after every run.
  static const bool tuned = [] {
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    return true;
  }();
  (void)tuned;
  if (!model.graph) throw_input_error("the model has no graph");
  if (const uint64_t memory = physical_memory()) check_static_sizes(*model.graph, memory);
  if (options_.device.kind == DeviceSpec::Kind::kVulkan) backend_ = open_vulkan_backend(options_.device);
  Planner planner(model, backend_.get());
  plan_ = planner.plan(*model.graph, nullptr);
  if (backend_) {
    // The weights live on the device for the whole session: refuse up front a model whose
    // constants alone exceed the device's memory.
    uint64_t constant_bytes = 0;
    for (const Value& v : plan_->constants)
      if (v.is_tensor()) constant_bytes += v.tensor.bytes();
    const DeviceInfo& d = backend_->info();
    if (d.memory_bytes && constant_bytes > d.memory_bytes)
      throw Error(ErrorKind::kFailed, "the model's weights need " + gigabytes(constant_bytes) + ", more than " + d.id +
                                          " (" + d.name + ") has (" + gigabytes(d.memory_bytes) +
                                          " of device memory); run it on the CPU");
  }
  const int threads = options_.threads > 0 ? options_.threads : default_threads();
  options_.threads = threads;
  executor_ = std::make_unique<Executor>(threads, &observation_, backend_.get());
  executor_->keep_constants = options_.keep_constants;
  for (const auto& vi : model.graph->inputs)
    if (!vi.value->is_initializer()) inputs_.push_back(&vi);
  for (const auto& vi : model.graph->inputs)
    if (vi.value->is_initializer()) inputs_.push_back(&vi);
  for (const auto& vi : model.graph->outputs) outputs_.push_back(&vi);
}

Session::~Session() {
  plan_.reset();
  release_pooled_buffers();  // what this session's runs kept for the next run
}

void Session::set_profiler(Profiler* profiler) { executor_->profiler = profiler; }

void Session::set_deadline(std::chrono::steady_clock::time_point at, const std::string& what,
                           std::vector<std::string> remedies) {
  executor_->deadline = at;
  executor_->deadline_what = what;
  executor_->deadline_remedies = std::move(remedies);
}

const Placement& Session::placement() const { return executor_->placement; }

namespace {

void check_feed(const ir::ValueInfo& vi, const Value& v) {
  const std::string& name = vi.value->name();
  const ir::TypeInfo& t = vi.type ? *vi.type : vi.value->type;
  if (t.kind != ir::TypeInfo::Kind::kTensor) return;
  if (!v.is_tensor()) throw_usage_error("input '" + name + "' expects a tensor, got " + v.describe());
  const Tensor& x = v.tensor;
  if (t.elem_type && static_cast<int32_t>(x.dtype()) != t.elem_type)
    throw_usage_error("input '" + name + "' expects element type " +
                      std::string(ir::data_type_name(t.data_type())) + ", got " +
                      std::string(ir::data_type_name(x.dtype())));
  if (!t.shape) return;
  if (t.shape->rank() != x.rank())
    throw_usage_error("input '" + name + "' expects rank " + std::to_string(t.shape->rank()) + " " +
                      t.shape->to_string() + ", got " + shape_string(x.shape()));
  for (size_t i = 0; i < x.rank(); ++i) {
    const ir::Dim& d = t.shape->dims[i];
    if (d.is_static() && d.value != x.dim(i))
      throw_usage_error("input '" + name + "' expects shape " + t.shape->to_string() + ", got " +
                        shape_string(x.shape()) + " (dim " + std::to_string(i) + ")");
  }
}

}  // namespace

std::vector<Value> Session::run(const std::map<std::string, Value>& feeds,
                                const std::vector<std::string>& output_names) {
  // Held until the frame's device tensors are gone (declared first, released last).
  std::unique_lock<std::mutex> device_lock;
  if (backend_) device_lock = backend_->lock_for_run();
  // The run's wall time for the profiler, feeds to outputs (also when the run fails).
  struct RunTimer {
    Profiler* profiler;
    explicit RunTimer(Profiler* p) : profiler(p) {
      if (profiler) profiler->begin_run();
    }
    ~RunTimer() {
      if (profiler) profiler->end_run();
    }
  } timer(executor_->profiler);
  Frame frame{plan_.get(), nullptr, std::vector<Value>(static_cast<size_t>(plan_->n_slots))};
  const ir::Graph& g = *model_.graph;
  std::map<std::string, const ir::ValueInfo*> by_name;
  for (const auto& vi : g.inputs) by_name[vi.value->name()] = &vi;
  for (const auto& [name, value] : feeds) {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      std::string known;
      for (const auto* vi : inputs_) known += (known.empty() ? "" : ", ") + vi->value->name();
      throw_usage_error("the model has no input '" + name + "' (inputs: " + known + ")");
    }
    check_feed(*it->second, value);
    frame.slots[static_cast<size_t>(plan_->slots.at(it->second->value))] = value;
  }
  for (const auto* vi : inputs_)
    if (!vi->value->is_initializer() && !feeds.count(vi->value->name()))
      throw_usage_error("input '" + vi->value->name() + "' is not given");
  // This run's thread count, the caller's back afterwards (a one-thread session, such as
  // constant folding's, leaves later sessions theirs).
  const ThreadScope thread_scope(options_.threads);
  executor_->begin_run();
  executor_->requested.assign(output_names.empty() ? 0 : static_cast<size_t>(plan_->n_slots), false);
  for (const auto& name : output_names)
    if (const ir::Value* v = g.find(name))
      if (auto it = plan_->slots.find(v); it != plan_->slots.end()) executor_->requested[static_cast<size_t>(it->second)] = true;
  executor_->execute(*plan_, frame);
  std::vector<Value> out;
  if (output_names.empty()) {
    for (size_t i = 0; i < plan_->output_slots.size(); ++i) {
      const SlotRef r = plan_->output_slots[i];
      out.push_back(r.slot < 0 ? Value() : executor_->host(frame, r));
    }
    if (backend_) backend_->finish();
    return out;
  }
  for (const auto& name : output_names) {
    const ir::Value* v = g.find(name);
    auto it = v ? plan_->slots.find(v) : plan_->slots.end();
    if (it == plan_->slots.end()) throw_usage_error("the model has no value '" + name + "'");
    const Value& val = executor_->host(frame, SlotRef{0, it->second});
    if (val.kind == Value::Kind::kNone)
      throw_usage_error("value '" + name + "' was not computed (a value of a branch not taken, or an output no node fills)");
    out.push_back(val);
  }
  if (backend_) backend_->finish();
  return out;
}

// ---------------------------------------------------------------- conversions

Tensor from_ir(const ir::Tensor& t) {
  const DataType dt = t.type();
  if (dt == DataType::kString) {
    Tensor out(dt, t.dims);
    if (static_cast<int64_t>(t.string_data.size()) != out.size())
      throw_input_error("tensor '" + t.name + "' has " + std::to_string(t.string_data.size()) +
                        " strings for shape " + shape_string(t.dims));
    out.mutable_strings() = t.string_data;
    return out;
  }
  return Tensor::view(dt, t.dims, t.raw_bytes());
}

ir::Tensor to_ir(const Tensor& tensor, const std::string& name) {
  ir::Tensor t;
  t.name = name;
  t.dims = tensor.shape();
  t.data_type = static_cast<int32_t>(tensor.dtype());
  if (tensor.dtype() == DataType::kString) {
    t.string_data = tensor.strings();
  } else {
    t.raw_data = ir::Bytes::copy_of(tensor.raw(), tensor.bytes());
  }
  return t;
}

}  // namespace onnxtool::runner
