// The cost model of `inspect --cost`: MACs and FLOPs per op from the static shapes of its values,
// weights and activation bytes, and the peak of activation memory along the runner's plan.
#include "runner/cost.h"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>

#include "ir/edit.h"
#include "ir/error.h"
#include "ir/shape_inference.h"
#include "runner/plan.h"

namespace onnxtool::runner {
namespace {

/// The index of an input an op does not have (Node::input gives nullptr).
constexpr size_t kNoInput = SIZE_MAX;

/// Thrown while costing a node whose shapes are not all static: why, for NodeCost::unknown.
struct Unknown {
  std::string why;
};

struct Work {
  uint64_t macs = 0;
  uint64_t flops = 0;
};

uint64_t product(const std::vector<int64_t>& dims, size_t from = 0) {
  uint64_t n = 1;
  for (size_t i = from; i < dims.size(); ++i) n *= static_cast<uint64_t>(dims[i]);
  return n;
}

/// Static dims of a tensor value (an initializer's own dims when its type says nothing).
std::optional<std::vector<int64_t>> static_dims(const ir::Value* v) {
  if (!v) return std::nullopt;
  if (v->type.is_tensor() && v->type.shape && v->type.shape->is_static()) {
    std::vector<int64_t> dims;
    for (const auto& d : v->type.shape->dims) {
      if (d.value < 0) return std::nullopt;
      dims.push_back(d.value);
    }
    return dims;
  }
  if (v->is_initializer()) return v->initializer()->dims;
  return std::nullopt;
}

/// Elements of a weight (0 when its size is not known).
uint64_t elements(const ir::Value* v) {
  const auto dims = static_dims(v);
  return dims ? product(*dims) : 0;
}

std::optional<uint64_t> value_bytes(const ir::Value* v) {
  const auto dims = static_dims(v);
  if (!dims || !v->type.is_tensor() || v->type.elem_type == 0) return std::nullopt;
  return ir::storage_bytes(v->type.data_type(), product(*dims));
}

/// A weight: an initializer or a Constant node's output.
bool is_constant(const ir::Value* v) {
  return v && (v->is_initializer() || (v->producer() && v->producer()->op_type == "Constant" && v->producer()->domain.empty()));
}

/// What an op's cost function sees: the static dims of the node's values, or Unknown.
class Shapes {
 public:
  explicit Shapes(const ir::Node& n) : node(n) {}
  std::vector<int64_t> in(size_t i) const { return need(node.input(i), "input " + std::to_string(i)); }
  std::vector<int64_t> out(size_t i = 0) const { return need(node.output(i), "output " + std::to_string(i)); }
  uint64_t in_count(size_t i) const { return product(in(i)); }
  uint64_t out_count(size_t i = 0) const { return product(out(i)); }
  bool has(size_t i) const { return node.input(i) != nullptr; }
  const ir::Node& node;

 private:
  static std::vector<int64_t> need(const ir::Value* v, const std::string& which) {
    if (!v) throw Unknown{which + " is missing"};
    if (auto dims = static_dims(v)) return *dims;
    const ir::TypeInfo& t = v->type;
    throw Unknown{"'" + v->name() + "' has " + (t.is_tensor() && t.shape ? "the shape " + t.shape->to_string() + ", not static" : "no inferred shape")};
  }
};

using CostFn = std::function<Work(const Shapes&)>;

/// Dim i of a shape the op expects to have it (a shape function that let a wrong rank through
/// leaves the cost unknown rather than reading past the end).
uint64_t dim(const std::vector<int64_t>& dims, size_t i) {
  if (i >= dims.size()) throw Unknown{"an input of rank " + std::to_string(dims.size()) + " where the op needs more"};
  return static_cast<uint64_t>(dims[i]);
}

/// FLOPs per element of the softmax of a row: max, subtract, exp, sum, divide.
constexpr uint64_t kSoftmaxFlops = kTranscendentalFlops + 4;

/// Conv and its integer forms: each output element sums weight-count / out-channels products;
/// the bias adds one FLOP per output element.
CostFn conv(size_t weight, size_t bias) {
  return [weight, bias](const Shapes& s) {
    const auto w = s.in(weight);
    if (w.empty() || w[0] == 0) return Work{};
    const uint64_t out = s.out_count();
    const uint64_t macs = out * (product(w) / static_cast<uint64_t>(w[0]));
    return Work{macs, 2 * macs + (s.has(bias) ? out : 0)};
  };
}

/// ConvTranspose: every input pixel of every channel scatters its row of the weight
/// (C x M/group x kernel).
Work conv_transpose(const Shapes& s) {
  const auto x = s.in(0);
  const uint64_t macs = (x.empty() ? 0 : static_cast<uint64_t>(x[0])) * product(x, 2) * s.in_count(1);
  return {macs, 2 * macs + (s.has(2) ? s.out_count() : 0)};
}

Work gemm(const Shapes& s) {
  const uint64_t k = dim(s.in(0), s.node.attr_int("transA", 0) ? 0 : 1);
  const uint64_t out = s.out_count();
  return {out * k, 2 * out * k + (s.has(2) ? out : 0)};
}

/// MatMul and its integer forms: each output element (batch dims broadcast) is a dot product
/// over A's last dim.
Work matmul(const Shapes& s) {
  const auto a = s.in(0);
  const uint64_t k = a.empty() ? 1 : static_cast<uint64_t>(a.back());
  const uint64_t macs = s.out_count() * k;
  return {macs, 2 * macs};
}

/// Attention (opset 23): Q·Kᵀ and the weights times V per head, the softmax, the scale and the
/// mask over the S x L scores; past keys lengthen L.
Work attention(const Shapes& s) {
  const auto q = s.in(0), k = s.in(1);
  uint64_t heads, seq, head_size, keys;
  if (q.size() == 4) {
    heads = dim(q, 1), seq = dim(q, 2), head_size = dim(q, 3), keys = dim(k, 2);
  } else {
    heads = static_cast<uint64_t>(std::max<int64_t>(s.node.attr_int("q_num_heads", 1), 1));
    seq = dim(q, 1), head_size = dim(q, 2) / heads, keys = dim(k, 1);
  }
  if (s.has(4)) keys += dim(s.in(4), 2);
  const uint64_t batch = dim(q, 0);
  const uint64_t scores = batch * heads * seq * keys;
  const uint64_t macs = scores * head_size + s.out_count() * keys;
  return {macs, 2 * macs + scores * (kSoftmaxFlops + 1 + (s.has(3) ? 1 : 0))};
}

/// com.microsoft Attention: the QKV projection, then attention over the projected heads.
Work ms_attention(const Shapes& s) {
  const auto x = s.in(0), w = s.in(1);
  const uint64_t batch = dim(x, 0), seq = dim(x, 1), columns = dim(w, 1);
  const uint64_t heads = static_cast<uint64_t>(std::max<int64_t>(s.node.attr_int("num_heads", 1), 1));
  uint64_t dq = columns / 3, dv = columns / 3;
  if (const auto sizes = s.node.attr_ints("qkv_hidden_sizes"); sizes.size() == 3)
    dq = static_cast<uint64_t>(sizes[0]), dv = static_cast<uint64_t>(sizes[2]);
  uint64_t keys = seq;
  if (s.has(4)) keys += dim(s.in(4), 3);
  const uint64_t macs = batch * seq * dim(x, 2) * columns + batch * seq * keys * (dq + dv);
  const uint64_t scores = batch * heads * seq * keys;
  return {macs, 2 * macs + (s.has(2) ? batch * seq * columns : 0) + scores * (kSoftmaxFlops + 1)};
}

/// RNN, GRU, LSTM: per direction, step and batch row, X·Wᵀ and H·Rᵀ for every gate; then the
/// biases and per hidden unit the gates' activations and state updates (`unit_flops`).
CostFn recurrent(uint64_t unit_flops) {
  return [unit_flops](const Shapes& s) {
    const auto x = s.in(0), w = s.in(1), r = s.in(2);
    const bool batch_first = s.node.attr_int("layout", 0) == 1;
    const uint64_t seq = dim(x, batch_first ? 1 : 0), batch = dim(x, batch_first ? 0 : 1);
    const uint64_t rows = dim(w, 0) * seq * batch;  // directions x steps x batch
    const uint64_t gates = dim(w, 1), hidden = dim(r, 2);
    const uint64_t macs = rows * gates * (dim(w, 2) + hidden);
    uint64_t flops = 2 * macs + rows * hidden * unit_flops;
    if (s.has(3)) flops += rows * 2 * gates;
    if (s.has(7)) flops += rows * hidden * 6;  // LSTM peepholes: three products and sums
    return Work{macs, flops};
  };
}

/// Windowed pooling: the window's elements per output element.
Work pool(const Shapes& s) {
  const auto kernel = s.node.attr_ints("kernel_shape");
  return {0, s.out_count() * product(kernel)};
}

/// `flops` per output element (elementwise ops, normalizations: documented constants).
CostFn per_output(uint64_t flops) {
  return [flops](const Shapes& s) { return Work{0, flops * s.out_count()}; };
}

/// `flops` per element of input 0 (reductions, global pooling).
CostFn per_input(uint64_t flops) {
  return [flops](const Shapes& s) { return Work{0, flops * s.in_count(0)}; };
}

/// Normalizations: the statistics and the normalization per element (`base`), one more each for
/// the scale and the bias when given (inputs `scale`, `bias`).
CostFn normalization(uint64_t base, size_t scale, size_t bias) {
  return [=](const Shapes& s) {
    return Work{0, s.out_count() * (base + (s.has(scale) ? 1 : 0) + (s.has(bias) ? 1 : 0))};
  };
}

/// Sum, Max, Min, Mean of n inputs: n-1 operations per output element (Mean one more).
Work variadic(const Shapes& s) {
  const uint64_t n = s.node.inputs().size();
  return {0, s.out_count() * (std::max<uint64_t>(n, 2) - 1 + (s.node.op_type == "Mean" ? 1 : 0))};
}

/// Resize: nearest moves data; linear makes 2^d - 1 one-dimensional interpolations (3 FLOPs
/// each) per output element, cubic (4^d - 1) / 3 of 8 FLOPs, d the axes whose size changes.
Work resize(const Shapes& s) {
  const std::string mode = s.node.attr_string("mode", "nearest");
  if (mode == "nearest") return {};
  const auto x = s.in(0), y = s.out();
  uint64_t axes = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) axes += x[i] != y[i];
  const uint64_t lerps = mode == "cubic" ? ((uint64_t{1} << (2 * axes)) - 1) / 3 * 8 : ((uint64_t{1} << axes) - 1) * 3;
  return {0, s.out_count() * lerps};
}

Work nothing(const Shapes&) { return {}; }

const std::unordered_map<std::string, CostFn>& cost_table() {
  static const std::unordered_map<std::string, CostFn> table = [] {
    std::unordered_map<std::string, CostFn> t;
    t["Conv"] = conv(1, 2);
    t["ConvInteger"] = conv(1, kNoInput);
    t["QLinearConv"] = conv(3, 8);
    t["com.microsoft::FusedConv"] = conv(1, 2);
    t["ConvTranspose"] = conv_transpose;
    t["Gemm"] = gemm;
    for (const char* op : {"MatMul", "MatMulInteger", "QLinearMatMul"}) t[op] = matmul;
    t["Attention"] = attention;
    t["com.microsoft::Attention"] = ms_attention;
    t["RNN"] = recurrent(kTranscendentalFlops);
    t["GRU"] = recurrent(3 * kTranscendentalFlops + 5);
    t["LSTM"] = recurrent(5 * kTranscendentalFlops + 4);
    for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) t[op] = pool;
    for (const char* op : {"GlobalMaxPool", "GlobalAveragePool", "GlobalLpPool"}) t[op] = per_input(1);
    // Inference-mode batch normalization: one multiply-add per element (scale and shift folded).
    t["BatchNormalization"] = per_output(2);
    // Mean, centre, square and sum, scale by 1/sigma: 5 per element (RMS: square and sum, scale).
    t["LayerNormalization"] = normalization(5, 1, 2);
    t["InstanceNormalization"] = normalization(5, 1, 2);
    t["GroupNormalization"] = normalization(5, 1, 2);
    t["RMSNormalization"] = normalization(3, 1, kNoInput);
    t["MeanVarianceNormalization"] = per_output(5);
    t["LpNormalization"] = per_output(3);
    t["Softmax"] = t["LogSoftmax"] = per_output(kSoftmaxFlops);
    for (const char* op : {"Sum", "Max", "Min", "Mean"}) t[op] = variadic;
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Neg", "Abs", "Relu", "Sign", "Floor", "Ceil", "Round", "Reciprocal",
                           "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Not", "Mod",
                           "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "IsNaN", "IsInf", "Where",
                           "ThresholdedRelu", "Hardmax"})
      t[op] = per_output(1);
    for (const char* op : {"LeakyRelu", "PRelu", "Clip", "Shrink", "DequantizeLinear"}) t[op] = per_output(2);
    t["HardSigmoid"] = t["Softsign"] = t["QuantizeLinear"] = per_output(3);
    t["HardSwish"] = per_output(4);
    for (const char* op : {"Exp", "Log", "Sqrt", "Tanh", "Sigmoid", "Erf", "Pow", "Sin", "Cos", "Tan", "Asin", "Acos",
                           "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softplus"})
      t[op] = per_output(kTranscendentalFlops);
    for (const char* op : {"Elu", "Selu", "Celu", "Swish"}) t[op] = per_output(kTranscendentalFlops + 2);
    t["Gelu"] = t["com.microsoft::Gelu"] = per_output(kTranscendentalFlops + 4);
    t["Mish"] = per_output(2 * kTranscendentalFlops + 1);
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceLogSum", "ArgMax",
                           "ArgMin"})
      t[op] = per_input(1);
    for (const char* op : {"ReduceL1", "ReduceL2", "ReduceSumSquare"}) t[op] = per_input(2);
    t["ReduceLogSumExp"] = per_input(kTranscendentalFlops + 1);
    t["Resize"] = t["Upsample"] = resize;
    // Data movement and control flow: no arithmetic (a subgraph's nodes are costed apart).
    for (const char* op : {"Reshape", "Transpose", "Concat", "Split", "Slice", "Gather", "GatherElements", "GatherND",
                           "Squeeze", "Unsqueeze", "Flatten", "Expand", "Tile", "Pad", "Identity", "Shape", "Size",
                           "Cast", "CastLike", "Constant", "ConstantOfShape", "DepthToSpace", "SpaceToDepth",
                           "ScatterND", "ScatterElements", "Scatter", "Dropout", "EyeLike", "Range", "NonZero",
                           "OneHot", "Compress", "ReverseSequence", "Trilu", "If", "Loop", "Scan"})
      t[op] = nothing;
    return t;
  }();
  return table;
}

}  // namespace

NodeCost node_cost(const ir::Node& node) {
  NodeCost c;
  c.node = &node;
  uint64_t in_bytes = 0, out_bytes = 0;
  bool in_known = true, out_known = true;
  for (const ir::Value* v : node.inputs()) {
    if (!v) continue;
    const auto bytes = value_bytes(v);
    if (is_constant(v)) {
      c.params += elements(v);
      c.param_bytes += bytes.value_or(0);
    } else if (bytes) {
      in_bytes += *bytes;
    } else {
      in_known = false;
    }
  }
  for (const ir::Value* v : node.outputs()) {
    if (!v) continue;
    const auto bytes = value_bytes(v);
    if (bytes) out_bytes += *bytes;
    else out_known = false;
  }
  if (in_known) c.input_bytes = in_bytes;
  if (out_known) c.output_bytes = out_bytes;

  const auto& table = cost_table();
  const auto it = table.find(node.domain.empty() || node.domain == "ai.onnx" ? node.op_type : node.qualified_op());
  if (it == table.end()) {
    c.unknown = "no cost model for " + node.qualified_op();
    return c;
  }
  try {
    const Work w = it->second(Shapes(node));
    c.macs = w.macs;
    c.flops = w.flops;
  } catch (const Unknown& u) {
    c.unknown = u.why;
  }
  return c;
}

namespace {

/// The main graph's nodes in the plan's order, and the peak of the activations alive along it:
/// a step's outputs come to life when it runs and die after their last reader (the plan's
/// release_after), as the executor frees them; steps fused into a Conv leave only the chain's
/// last value; graph inputs and constants are not counted.
std::vector<const ir::Node*> plan_peak(const ir::Model& model, ModelCost& cost) {
  std::unique_ptr<GraphPlan> plan;
  try {
    plan = plan_graph(model, *model.graph, nullptr);
  } catch (const Error& e) {
    cost.peak_unknown = e.what();
    std::vector<const ir::Node*> order;
    for (size_t i : model.graph->topological_order()) order.push_back(model.graph->nodes()[i].get());
    return order;
  }
  std::vector<const ir::Value*> slot_value(static_cast<size_t>(plan->n_slots), nullptr);
  for (const auto& [v, s] : plan->slots) slot_value[static_cast<size_t>(s)] = v;
  std::vector<uint64_t> live_bytes(slot_value.size(), 0);
  std::vector<bool> skipped(plan->steps.size(), false);
  std::vector<const ir::Node*> order;
  uint64_t live = 0, peak = 0;
  for (size_t i = 0; i < plan->steps.size(); ++i) {
    const Step& step = plan->steps[i];
    order.push_back(step.node);
    if (skipped[i] || step.constant || step.unread) continue;
    std::vector<int> made = step.outputs;
    if (step.epilogue) {
      for (size_t a : step.absorbed) skipped[a] = true;
      made = {step.fused_output};
    }
    for (int s : made) {
      if (s < 0 || live_bytes[static_cast<size_t>(s)]) continue;
      const auto bytes = value_bytes(slot_value[static_cast<size_t>(s)]);
      if (!bytes) ++cost.peak_unsized;
      live_bytes[static_cast<size_t>(s)] = bytes.value_or(0);
      live += bytes.value_or(0);
    }
    if (live > peak) peak = live, cost.peak_node = step.node;
    for (int s : step.release_after) {
      live -= live_bytes[static_cast<size_t>(s)];
      live_bytes[static_cast<size_t>(s)] = 0;
    }
  }
  cost.peak_bytes = peak;
  return order;
}

}  // namespace

ModelCost model_cost(ir::Model& model, const CostOptions& options) {
  if (!model.graph) throw_input_error("the model has no graph");
  if (!options.input_shapes.empty()) {
    ir::EditRequest request;
    for (const auto& [name, dims] : options.input_shapes) {
      std::vector<ir::Dim> d;
      for (int64_t x : dims) d.push_back(ir::Dim::of(x));
      request.input_shapes.emplace_back(name, d);
    }
    ir::edit_model(model, request);
  } else {
    ir::DiagnosticSink sink;
    ir::ShapeInferenceOptions inference;
    inference.check_declared = false;
    ir::infer_shapes(model, sink, inference);
    for (const auto& d : sink.items())
      if (d.severity == ir::Severity::kError)
        throw_input_error("shapes cannot be inferred: " + ir::diagnostic_line(d) + "; `onnxtool check` lists every error");
  }

  ModelCost cost;
  std::set<const ir::Value*> weights;
  const auto add = [&](const ir::Node* n) {
    NodeCost c = node_cost(*n);
    for (const ir::Value* v : n->inputs())
      if (is_constant(v) && weights.insert(v).second) {
        cost.params += elements(v);
        cost.param_bytes += value_bytes(v).value_or(0);
      }
    OpTypeCost& op = cost.by_op[n->qualified_op()];
    ++op.nodes;
    if (c.macs) {
      op.macs += *c.macs, op.flops += *c.flops;
      cost.macs += *c.macs, cost.flops += *c.flops;
    } else {
      ++op.unknown, ++cost.unknown_nodes;
    }
    cost.nodes.push_back(std::move(c));
  };
  std::vector<const ir::Graph*> subgraphs;
  for (const ir::Node* n : plan_peak(model, cost)) {
    add(n);
    for (const ir::Graph* g : n->subgraphs()) subgraphs.push_back(g);
  }
  // Each body once: a Loop's trip count and which If branch runs are not known statically.
  for (size_t i = 0; i < subgraphs.size(); ++i) {
    const ir::Graph* g = subgraphs[i];
    for (size_t k : g->topological_order()) {
      const ir::Node* n = g->nodes()[k].get();
      add(n);
      ++cost.subgraph_nodes;
      for (const ir::Graph* sub : n->subgraphs()) subgraphs.push_back(sub);
    }
  }
  return cost;
}

}  // namespace onnxtool::runner
