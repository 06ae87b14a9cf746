// QOperator format: DequantizeLinear -> Conv / MatMul -> QuantizeLinear groups of a QDQ model
// become QLinearConv / QLinearMatMul.
//
// A group is converted only when the QLinear op computes what the QDQ group computes (up to the
// rounding of the integer kernel) and the result satisfies the ONNX spec and onnxruntime's CPU
// kernels; any other group stays in QDQ, which every runtime runs.
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/constant.h"
#include "ir/graph_util.h"
#include "passes/pass.h"
#include "quant/quantize.h"

namespace onnxtool::quant {

namespace {

/// The inputs of a QuantizeLinear or DequantizeLinear node: the data, and its scale and zero
/// point, which must be constants (their values and shapes decide whether a group converts).
struct QuantInputs {
  ir::Value* data = nullptr;
  ir::Value* scale = nullptr;
  ir::Value* zero_point = nullptr;  ///< nullptr when omitted
  std::vector<double> scales;
  std::vector<int64_t> zero_points;  ///< empty when the zero point is omitted
  ir::DataType type = ir::DataType::kUndefined;  ///< the zero point's type
  /// The quantization axis of the data (normalized), or -1 for a per-tensor scale.
  int64_t axis = -1;

  bool per_tensor() const { return scales.size() == 1; }
};

bool is_8bit(ir::DataType t) { return t == ir::DataType::kInt8 || t == ir::DataType::kUInt8; }

/// An attribute naming a data type is unset (0) or float: the node computes in float.
bool unset_or_float(const ir::Node& n, std::string_view attr) {
  const int64_t t = n.attr_int(attr, 0);
  return t == 0 || t == static_cast<int64_t>(ir::DataType::kFloat);
}

/// The inputs of `n` when it is a QuantizeLinear / DequantizeLinear (`op_type`) with a constant
/// float scale of rank 0 or 1 and, when present, a constant zero point of the same shape.
/// Blocked quantization (block_size) has no QLinear equivalent and is refused.
std::optional<QuantInputs> quant_inputs(const ir::Model& model, const ir::Node* n, std::string_view op_type) {
  if (!ir::is_op(n, op_type) || n->attr_int("block_size", 0) != 0) return std::nullopt;
  const ir::Tensor* s = ir::constant_of(model, n->input(1));
  if (!s || s->type() != ir::DataType::kFloat || s->dims.size() > 1) return std::nullopt;
  QuantInputs q;
  q.data = n->input(0);
  q.scale = n->input(1);
  q.scales = ir::read_floats(*s).value_or(std::vector<double>{});
  if (q.scales.empty()) return std::nullopt;
  if ((q.zero_point = n->input(2))) {
    const ir::Tensor* z = ir::constant_of(model, q.zero_point);
    if (!z || z->dims != s->dims) return std::nullopt;
    q.type = z->type();
    q.zero_points = ir::read_ints(*z).value_or(std::vector<int64_t>{});
    if (q.zero_points.size() != q.scales.size()) return std::nullopt;
  }
  if (!q.per_tensor()) {
    // Per-axis: the axis (default 1) must name a dimension of the data as large as the scale.
    const ir::Tensor* data = ir::constant_of(model, q.data);
    if (!data) return std::nullopt;
    const auto rank = static_cast<int64_t>(data->dims.size());
    int64_t axis = n->attr_int("axis", 1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank || data->dims[static_cast<size_t>(axis)] != static_cast<int64_t>(q.scales.size()))
      return std::nullopt;
    q.axis = axis;
  }
  return q;
}

/// The DequantizeLinear producing `v`, read as quantized inputs; its output must be float.
std::optional<QuantInputs> dequantized(const ir::Model& model, const ir::Value* v) {
  const ir::Node* dq = v ? v->producer() : nullptr;
  if (!dq || !unset_or_float(*dq, "output_dtype")) return std::nullopt;
  return quant_inputs(model, dq, "DequantizeLinear");
}

/// An activation input: DequantizeLinear with a per-tensor 8-bit scale and zero point (QLinear
/// ops take no per-tensor default, so the zero point must be there).
std::optional<QuantInputs> dequantized_activation(const ir::Model& model, const ir::Value* v) {
  auto q = dequantized(model, v);
  if (!q || !q->zero_point || !is_8bit(q->type) || !q->per_tensor()) return std::nullopt;
  return q;
}

/// A weight input: DequantizeLinear of a constant 8-bit tensor, per tensor or per axis.
std::optional<QuantInputs> dequantized_weight(const ir::Model& model, const ir::Value* v) {
  auto q = dequantized(model, v);
  if (!q || !q->zero_point || !is_8bit(q->type)) return std::nullopt;
  const ir::Tensor* data = ir::constant_of(model, q->data);
  if (!data || data->type() != q->type) return std::nullopt;
  return q;
}

/// The QuantizeLinear that is the only reader of an op's output (no graph output, no other node,
/// no subgraph use), computing in float.
ir::Node* output_quantize(const ir::Node& op) {
  ir::Node* q = ir::single_consumer(op.output(0));
  if (!q || q->input(0) != op.output(0) || !unset_or_float(*q, "precision")) return nullptr;
  return q;
}

/// The element of a per-tensor (one value) or per-channel list for channel `c`.
double at(const std::vector<double>& v, size_t c) { return v.size() == 1 ? v[0] : v[c]; }

/// QLinearConv's bias B: an int32 vector of the weight's output channels, quantized with scale
/// x_scale * w_scale and zero point 0 (the spec's definition of B). `bias` must be the output of
/// a DequantizeLinear of such a constant; returns its int32 input, or nullptr when it is not.
ir::Value* quantized_bias(const ir::Model& model, const ir::Value* bias, const QuantInputs& x, const QuantInputs& w,
                          int64_t channels) {
  const auto b = dequantized(model, bias);
  if (!b) return nullptr;
  const ir::Tensor* data = ir::constant_of(model, b->data);
  if (!data || data->type() != ir::DataType::kInt32 || data->dims != std::vector<int64_t>{channels}) return nullptr;
  for (int64_t z : b->zero_points)
    if (z != 0) return nullptr;
  // A per-axis scale has `channels` entries: quant_inputs checked it against the data's dims.
  for (size_t c = 0; c < static_cast<size_t>(channels); ++c) {
    // The product in float, as a quantizer computes it; the tolerance admits one computed in
    // double and rounded, and changes the bias by far less than one output step.
    const double expected = static_cast<float>(x.scales[0]) * static_cast<float>(at(w.scales, c));
    if (std::fabs(at(b->scales, c) - expected) > 1e-5 * std::fabs(expected)) return nullptr;
  }
  return b->data;
}

/// A matched group: the float op, the QuantizeLinear of its output, the quantized activation,
/// weight and output, and QLinearConv's int32 bias (nullptr when none).
struct Group {
  ir::Node* op = nullptr;
  ir::Node* quantize = nullptr;
  QuantInputs x, w, y;
  ir::Value* bias = nullptr;
};

/// The common part of Conv and MatMul groups: activation and weight from DequantizeLinear, output
/// read only by a QuantizeLinear with a per-tensor 8-bit scale and zero point, and types
/// onnxruntime's kernels accept. The spec lets x, w and y be int8 or uint8 independently, but
/// onnxruntime binds y's type to x's and has no kernel for an int8 x with a uint8 w; those
/// groups stay in QDQ, which it runs.
std::optional<Group> match_common(const ir::Model& model, ir::Node* op) {
  Group g;
  g.op = op;
  g.quantize = output_quantize(*op);
  auto x = dequantized_activation(model, op->input(0));
  auto w = dequantized_weight(model, op->input(1));
  if (!x || !w || !g.quantize) return std::nullopt;
  auto y = quant_inputs(model, g.quantize, "QuantizeLinear");
  if (!y || !y->zero_point || !is_8bit(y->type) || !y->per_tensor()) return std::nullopt;
  if (y->type != x->type || (x->type == ir::DataType::kInt8 && w->type != ir::DataType::kInt8)) return std::nullopt;
  g.x = std::move(*x);
  g.w = std::move(*w);
  g.y = std::move(*y);
  return g;
}

/// Conv -> QLinearConv: weight per tensor or per output channel (axis 0), optional int32 bias.
std::optional<Group> match_conv(const ir::Model& model, ir::Node* conv) {
  auto g = match_common(model, conv);
  if (!g) return std::nullopt;
  const std::vector<int64_t>& wdims = ir::constant_of(model, g->w.data)->dims;
  if (wdims.size() < 3 || (!g->w.per_tensor() && g->w.axis != 0)) return std::nullopt;
  // onnxruntime refuses per-channel weight zero points that differ ("zero point of per-channel
  // filter must be same"); symmetric weights, which quantizers produce, always agree.
  for (int64_t z : g->w.zero_points)
    if (z != g->w.zero_points[0]) return std::nullopt;
  if (const ir::Value* bias = conv->input(2)) {
    g->bias = quantized_bias(model, bias, g->x, g->w, wdims[0]);
    if (!g->bias) return std::nullopt;
  }
  return g;
}

/// MatMul -> QLinearMatMul: per-tensor weight only. The spec describes per-column b scales
/// ambiguously (it names K elements for per column, and [..., 1, K] shapes for N-D inputs), so
/// per-channel MatMul groups stay in QDQ rather than guess the layout a runtime expects.
std::optional<Group> match_matmul(const ir::Model& model, ir::Node* matmul) {
  auto g = match_common(model, matmul);
  if (!g || !g->w.per_tensor()) return std::nullopt;
  return g;
}

/// Replaces the group's op and QuantizeLinear by one `qop` node named like the op, inserted at
/// the QuantizeLinear's place (every input is defined before it). The new node's output takes
/// the QuantizeLinear output's name, graph output entries and value_info, so its readers (the
/// DequantizeLinear nodes of the next ops) and the model's outputs are unchanged.
void rewrite(ir::Graph& g, const Group& group, const std::string& qop) {
  ir::Value* out = group.quantize->output(0);
  const std::string name = out->name();
  std::vector<ir::Value*> inputs = {group.x.data, group.x.scale, group.x.zero_point,
                                    group.w.data, group.w.scale, group.w.zero_point,
                                    group.y.scale, group.y.zero_point};
  if (group.bias) inputs.push_back(group.bias);
  ir::Node* fused = g.add_node(qop, inputs, {ir::unique_name(g, name + "_" + qop)}, "", group.op->name,
                               group.quantize);
  // QLinearConv has exactly Conv's attributes; MatMul has none.
  fused->attributes = std::move(group.op->attributes);
  ir::Value* y = fused->output(0);
  y->type = out->type;
  g.replace_all_uses(out, y);
  for (size_t i = 0; i < g.outputs.size(); ++i)
    if (g.outputs[i].value == out) g.set_output_value(i, y);
  for (auto& vi : g.value_info)
    if (vi.value == out) vi.value = y;
  g.remove_node(group.quantize);
  g.remove_node(group.op);
  g.prune_values();  // drops `out`, which nothing refers to any more, freeing its name
  g.rename(y, name);
}

}  // namespace

int64_t qdq_to_qoperator(ir::Model& model) {
  ir::Graph& g = *model.graph;
  // Candidates first: rewriting removes nodes. Each group is matched just before its rewrite, so
  // it sees the values earlier rewrites created.
  std::vector<ir::Node*> candidates;
  for (const auto& n : g.nodes())
    if (ir::is_op(n.get(), "Conv") || ir::is_op(n.get(), "MatMul")) candidates.push_back(n.get());
  int64_t converted = 0;
  for (ir::Node* n : candidates) {
    const bool conv = n->op_type == "Conv";
    const auto group = conv ? match_conv(model, n) : match_matmul(model, n);
    if (!group) continue;
    rewrite(g, *group, conv ? "QLinearConv" : "QLinearMatMul");
    ++converted;
  }
  if (converted) {
    // DequantizeLinear nodes (and their initializers) that only the converted ops read go; those
    // with other readers stay.
    passes::OptimizeOptions cleanup;
    cleanup.only = {"sort_topologically", "eliminate_dead_code"};
    passes::optimize(model, cleanup);
  }
  return converted;
}

}  // namespace onnxtool::quant
