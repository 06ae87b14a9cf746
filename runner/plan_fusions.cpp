// Fusions of a CPU plan: activation chains run inside their Conv (plan_epilogues), and Convs of
// a QDQ model run on the quantized tensors (plan_quantized_convs). The steps they absorb stay in
// the plan, skipped unless an observer wants their values.
#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "ir/error.h"
#include "runner/cpu/epilogue.h"
#include "runner/cpu/kernels.h"
#include "runner/plan.h"

namespace onnxtool::runner {

namespace {

/// What plan_epilogues knows of a plan: each slot's readers, the slots that must stay, and the
/// constant values (initializers, and Constant nodes' `value` tensors: exporters such as
/// Paddle's write BatchNormalization's parameters as Constant nodes).
class EpilogueFuser {
 public:
  explicit EpilogueFuser(GraphPlan& p)
      : p_(p), readers_(static_cast<size_t>(p.n_slots)), pinned_(pinned_slots(p)),
        constant_node_(static_cast<size_t>(p.n_slots), -1) {
    for (size_t i = 0; i < p.steps.size(); ++i)
      for (const auto& r : p.steps[i].inputs)
        if (r.up == 0 && r.slot >= 0) {
          auto& list = readers_[static_cast<size_t>(r.slot)];
          if (list.empty() || list.back() != i) list.push_back(i);
        }
    for (size_t i = 0; i < p.steps.size(); ++i) {
      const Step& st = p.steps[i];
      if (st.constant && st.node->op_type == "Constant" && st.outputs.size() == 1 && st.outputs[0] >= 0 &&
          st.node->attr("value"))
        constant_node_[static_cast<size_t>(st.outputs[0])] = static_cast<int>(i);
    }
  }

  /// The chain that alone reads Conv step `ci`'s output, applied to it.
  void fuse(size_t ci) {
    Step& conv = p_.steps[ci];
    if (!op(conv, "Conv") || conv.constant || conv.outputs.size() != 1 || conv.outputs[0] < 0) return;
    auto ep = std::make_shared<Epilogue>();
    std::vector<size_t> absorbed;
    int slot = conv.outputs[0];
    // The output's rank and channels, from a constant weight (Mul and Add need them).
    rank_ = channels_ = -1;
    if (const Tensor* w = constant_value(local(conv, 1)); w && w->rank() >= 3) {
      rank_ = static_cast<int64_t>(w->rank());
      channels_ = w->dim(0);
    }
    for (;;) {
      const auto s = static_cast<size_t>(slot);
      if (pinned_[s] || readers_[s].empty() || readers_[s].size() > 2) break;
      if (readers_[s].size() == 1) {
        auto e = as_op(readers_[s][0], slot);
        if (!e) break;
        ep->ops.push_back(std::move(*e));
        absorbed.push_back(readers_[s][0]);
        slot = p_.steps[readers_[s][0]].outputs[0];
        continue;
      }
      if (!fuse_gate(slot, *ep, absorbed)) break;
    }
    if (absorbed.empty()) return;
    conv.epilogue = std::move(ep);
    conv.absorbed = std::move(absorbed);
    conv.fused_output = slot;
    conv.fused_op_type = conv.node->op_type;
    for (size_t a : conv.absorbed) conv.fused_op_type += "+" + p_.steps[a].node->op_type;
  }

 private:
  static bool op(const Step& st, const char* type) {
    return st.node->op_type == type && (st.node->domain.empty() || st.node->domain == "ai.onnx");
  }

  static int local(const Step& st, size_t i) { return i < st.inputs.size() && st.inputs[i].up == 0 ? st.inputs[i].slot : -1; }

  const Tensor* constant_value(int slot) {
    if (slot < 0) return nullptr;
    const auto s = static_cast<size_t>(slot);
    if (p_.constants[s].is_tensor()) return &p_.constants[s].tensor;
    if (constant_node_[s] < 0) return nullptr;
    auto it = decoded_.find(slot);
    if (it == decoded_.end()) {
      const ir::Attribute* value = p_.steps[static_cast<size_t>(constant_node_[s])].node->attr("value");
      if (!value->t) return nullptr;
      try {
        it = decoded_.emplace(slot, from_ir(*value->t)).first;
      } catch (const Error&) {
        return nullptr;  // the Constant node reports its own error when it runs
      }
    }
    return &it->second;
  }

  /// The epilogue op of step `si` reading `from` (its only input that does), or nullopt.
  std::optional<EpilogueOp> as_op(size_t si, int from) {
    const Step& st = p_.steps[si];
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
    return epilogue_op(*st.node, st.opset, data, constants, rank_, channels_);
  }

  /// A gate on the two readers of `slot`: one is a Mul of the value by the end of a chain of up
  /// to four ops that the other starts (SiLU: Sigmoid; HardSwish written out: Add, Clip), each
  /// value of the chain read only by the next. Appends it and moves `slot` to the Mul's output.
  bool fuse_gate(int& slot, Epilogue& ep, std::vector<size_t>& absorbed) {
    const auto s = static_cast<size_t>(slot);
    for (int k = 0; k < 2; ++k) {
      const size_t mul_i = readers_[s][static_cast<size_t>(k)], start = readers_[s][static_cast<size_t>(1 - k)];
      const Step& mul = p_.steps[mul_i];
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
        at = p_.steps[step_i].outputs[0];
        const auto& next = readers_[static_cast<size_t>(at)];
        if (pinned_[static_cast<size_t>(at)] || next.size() != 1) break;
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
      ep.ops.push_back(std::move(gate));
      absorbed.insert(absorbed.end(), chain.begin(), chain.end());
      absorbed.push_back(mul_i);
      slot = mul.outputs[0];
      return true;
    }
    return false;
  }

  GraphPlan& p_;
  std::vector<std::vector<size_t>> readers_;
  std::vector<bool> pinned_;
  std::vector<int> constant_node_;
  std::map<int, Tensor> decoded_;
  int64_t rank_ = -1, channels_ = -1;  ///< of the Conv being fused
};

}  // namespace

/// Fuses into each float Conv the chain of activations that alone read its output
/// (runner/cpu/epilogue.h): BatchNormalization with constant parameters, Relu, LeakyRelu,
/// Sigmoid, HardSigmoid, HardSwish, Clip with constant bounds, Add, Sub, Mul and Div of a
/// per-channel constant, and a Mul of the value by a chain of these that starts from it (SiLU:
/// Sigmoid + Mul; HardSwish written out: Add, Clip, Mul). No value of the chain but its last
/// may be a graph output or read by a subgraph.
void plan_epilogues(GraphPlan& p) {
  EpilogueFuser fuser(p);
  for (size_t ci = 0; ci < p.steps.size(); ++ci) fuser.fuse(ci);
}

/// Slots whose values must exist as they are: graph outputs and values subgraphs read.
std::vector<bool> pinned_slots(const GraphPlan& p) {
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
void plan_quantized_convs(GraphPlan& p) {
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

}  // namespace onnxtool::runner
