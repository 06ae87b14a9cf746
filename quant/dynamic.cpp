// Dynamic quantization: int8 weights now, activations quantized at run time with standard ops.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "ir/error.h"
#include "ir/graph_util.h"
#include "ir/shape_inference.h"
#include "passes/pass.h"
#include "passes/rewrite.h"
#include "quant/accuracy.h"
#include "quant/op_rules.h"
#include "quant/quantize.h"
#include "quant/speed.h"
#include "quant/weights.h"

namespace onnxtool::quant {

namespace {

/// Signal-to-quantization-noise ratio (dB) of a quantized weight against its float values.
double weight_sqnr(const std::vector<double>& values, const QuantizedWeight& w, int64_t inner, int64_t channels) {
  double signal = 0, noise = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const size_t c = w.axis >= 0 ? static_cast<size_t>(static_cast<int64_t>(i) / inner % channels) : 0;
    const double s = w.scales[c];
    const double q = std::clamp(round_half_even(values[i] / s) + w.zero_points[c], -128.0, 255.0);
    const double back = (q - w.zero_points[c]) * s;
    signal += values[i] * values[i];
    noise += (values[i] - back) * (values[i] - back);
  }
  if (noise == 0) return 200;
  return 10 * std::log10(signal / noise);
}

/// The output channels of a Conv's weight of static dims [M, C, k], else 0.
int64_t conv1d_channels(const ir::Node& n) {
  const ir::Value* w = n.inputs().size() >= 2 ? n.input(1) : nullptr;
  std::vector<int64_t> dims;
  if (w && w->is_initializer()) {
    dims = w->initializer()->dims;
  } else if (w && w->type.is_tensor() && w->type.shape) {
    for (const ir::Dim& d : w->type.shape->dims) dims.push_back(d.kind == ir::Dim::Kind::kValue ? d.value : 0);
  }
  if (dims.size() != 3) return 0;
  for (int64_t d : dims)
    if (d <= 0) return 0;
  return dims[0];
}

/// Whether dynamic mode runs this Conv as a MatMulInteger over its input windows (see
/// DynamicQuantizer::conv_windows): 1-D (a weight of static dims [M, C, k]), one group, 8 or
/// more input channels, explicit pads.
bool conv_by_windows(const ir::Node& n) {
  if (n.op_type != "Conv" || !(n.domain.empty() || n.domain == "ai.onnx") || conv1d_channels(n) == 0) return false;
  // Fewer than 8 input channels (raw audio: 1) make windows too short for integer products to
  // gain, as for the static mode's 3-channel Convs (slow_integer_conv).
  const ir::Value* w = n.input(1);
  const int64_t channels_in = w->is_initializer() ? w->initializer()->dims[1] : w->type.shape->dims[1].value;
  if (channels_in < 8) return false;
  const std::string pad = n.attr_string("auto_pad", "NOTSET");
  return n.attr_int("group", 1) == 1 && (pad == "NOTSET" || pad.empty()) && n.attr_ints("strides", {1}).size() == 1 &&
         n.attr_ints("dilations", {1}).size() == 1 && n.attr_ints("pads", {0, 0}).size() == 2;
}

/// The dynamic quantization of one activation, shared by all the nodes that read it.
struct DynamicInput {
  ir::Value* q;
  ir::Value* scale;
  ir::Value* zero_point;
};

class DynamicQuantizer {
 public:
  DynamicQuantizer(ir::Model& model, ir::Graph& graph, const QuantizeOptions& options, QuantizeReport& report)
      : model_(model), g_(graph), o_(options), report_(report) {}

  bool rewrite(ir::Node* n) {
    if (ir::is_op(n, "MatMul")) return matmul(n);
    if (ir::is_op(n, "Gemm")) return gemm(n);
    if (ir::is_op(n, "Conv")) return conv(n);
    if (ir::is_op(n, "LSTM") || ir::is_op(n, "GRU") || ir::is_op(n, "RNN")) return recurrent(n);
    return false;
  }

 private:
  std::string base(const ir::Node* n) const { return n->name.empty() ? n->op_type : n->name; }

  DynamicInput quantize_input(ir::Value* x, const ir::Node* before) {
    auto it = inputs_.find(x);
    if (it != inputs_.end()) return it->second;
    const std::string b = x->name();
    ir::Node* dq = g_.add_node("DynamicQuantizeLinear", {x},
                               {ir::unique_name(g_, b + "_quantized"), ir::unique_name(g_, b + "_scale"),
                                ir::unique_name(g_, b + "_zero_point")},
                               "", ir::unique_name(g_, b + "_DynamicQuantizeLinear"), before);
    DynamicInput d{dq->output(0), dq->output(1), dq->output(2)};
    inputs_[x] = d;
    return d;
  }

  /// Integer product -> float: Cast(int32 -> float) * (x_scale * w_scale).
  ir::Value* dequantize(ir::Value* product, ir::Value* x_scale, ir::Value* w_scale, const std::string& b,
                        const ir::Node* before, const std::vector<int64_t>& scale_shape) {
    ir::Node* cast = g_.add_node("Cast", {product}, {ir::unique_name(g_, b + "_float")}, "", b + "_cast", before);
    cast->set_attr(ir::Attribute::make_int("to", static_cast<int64_t>(ir::DataType::kFloat)));
    ir::Value* ws = w_scale;
    if (!scale_shape.empty()) {
      std::vector<int64_t> shape = scale_shape;
      ws = ir::add_int64_constant(g_, b + "_scale_shape", {static_cast<int64_t>(shape.size())}, shape);
      ws = g_.add_node("Reshape", {w_scale, ws}, {ir::unique_name(g_, b + "_weight_scale")}, "", b + "_scale_reshape", before)->output(0);
    }
    ir::Value* scale = g_.add_node("Mul", {x_scale, ws}, {ir::unique_name(g_, b + "_output_scale")}, "", b + "_scale_mul", before)->output(0);
    return g_.add_node("Mul", {cast->output(0), scale}, {ir::unique_name(g_, b + "_dequantized")}, "", b + "_dequantize", before)->output(0);
  }

  void account(const ir::Node* n, const QuantizedWeight& w, const std::vector<double>& values, int64_t inner, int64_t channels) {
    report_.float_weight_bytes += stored_float_bytes(o_, n->input(1)->name(), values.size());
    report_.quantized_weight_bytes += static_cast<int64_t>(values.size() + w.scales.size() * 5);
    NodeReport r;
    r.node = n->name;
    r.op_type = n->op_type;
    r.tensor = n->input(1)->name();
    r.scale = *std::max_element(w.scales.begin(), w.scales.end());
    r.zero_point = w.zero_points.front();
    r.range_min = *std::min_element(values.begin(), values.end());
    r.range_max = *std::max_element(values.begin(), values.end());
    r.sqnr_db = weight_sqnr(values, w, inner, channels);
    report_.nodes.push_back(r);
    ++report_.quantized_nodes;
  }

  /// Replaces node n (output 0) by `result`; a graph output keeps its name. The report entry
  /// (the last one, from account()) learns which tensor stands for the node's output.
  bool finish(ir::Node* n, ir::Value* result) {
    const std::string output = n->output(0)->name();
    // The result stands for the output: readers selected later check its type.
    result->type = n->output(0)->type;
    const bool done = passes::bypass_node(g_, n, result);
    if (!report_.nodes.empty()) {
      report_.nodes.back().output = output;
      report_.nodes.back().dequantized = result->name();
    }
    return done;
  }

  bool matmul(ir::Node* n) {
    const auto w = quantizable_weight(model_, n->input(1), 2, 2);
    ir::Value* a = n->input(0);
    if (!w || !a || !a->type.is_tensor() || a->type.data_type() != ir::DataType::kFloat)
      return false;
    const int64_t cols = w->dims[1];
    ParamOptions po;
    po.reduce_range = o_.reduce_range;
    const QuantizedWeight qw = quantize_weight(g_, n->input(1)->name(), w->values, w->dims, o_.per_channel ? 1 : -1, o_.weight_type, po);
    const DynamicInput x = quantize_input(a, n);
    const std::string b = base(n);
    ir::Value* zp = scalar_zero_point(qw, b);
    ir::Node* mm = g_.add_node("MatMulInteger", {x.q, qw.data, x.zero_point, zp}, {ir::unique_name(g_, b + "_int32")}, "",
                               b + "_MatMulInteger", n);
    ir::Value* y = dequantize(mm->output(0), x.scale, qw.scale, b, n, {});
    account(n, qw, w->values, 1, cols);
    return finish(n, y);
  }

  /// The weight zero point as a scalar (symmetric weights have one value for every channel).
  ir::Value* scalar_zero_point(const QuantizedWeight& w, const std::string& b) {
    if (w.zero_points.size() == 1) return w.zero_point;
    const ir::DataType dt = data_type_of(o_.weight_type);
    const uint8_t z = o_.weight_type == QuantType::kInt8 ? static_cast<uint8_t>(static_cast<int8_t>(w.zero_points[0]))
                                                         : static_cast<uint8_t>(w.zero_points[0]);
    return g_.add_initializer(ir::make_tensor(ir::unique_name(g_, b + "_weight_zero_point"), dt, {}, &z, 1));
  }

  bool gemm(ir::Node* n) {
    if (n->attr_int("transA", 0)) return false;
    const auto w = quantizable_weight(model_, n->input(1), 2, 2);
    ir::Value* a = n->input(0);
    if (!w || !a || !a->type.is_tensor() || a->type.data_type() != ir::DataType::kFloat)
      return false;
    std::vector<double> values = w->values;
    std::vector<int64_t> dims = w->dims;
    if (n->attr_int("transB", 0)) {  // store B as [K, N] for MatMulInteger
      const int64_t rows = dims[0], cols = dims[1];
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) values[static_cast<size_t>(c * rows + r)] = w->values[static_cast<size_t>(r * cols + c)];
      dims = {cols, rows};
    }
    const double alpha = n->attr_float("alpha", 1.0f), beta = n->attr_float("beta", 1.0f);
    for (double& v : values) v *= alpha;
    ParamOptions po;
    po.reduce_range = o_.reduce_range;
    const QuantizedWeight qw = quantize_weight(g_, n->input(1)->name(), values, dims, o_.per_channel ? 1 : -1, o_.weight_type, po);
    const DynamicInput x = quantize_input(a, n);
    const std::string b = base(n);
    ir::Node* mm = g_.add_node("MatMulInteger", {x.q, qw.data, x.zero_point, scalar_zero_point(qw, b)},
                               {ir::unique_name(g_, b + "_int32")}, "", b + "_MatMulInteger", n);
    ir::Value* y = dequantize(mm->output(0), x.scale, qw.scale, b, n, {});
    if (ir::Value* c = n->input(2); c && beta != 0) {
      ir::Value* bias = c;
      if (beta != 1) {
        const auto cv = ir::float_constant(model_, c);
        if (cv) {
          std::vector<double> scaled = cv->values;
          for (double& v : scaled) v *= beta;
          bias = ir::add_constant(g_, c->name() + "_beta", cv->type, cv->dims, scaled);
        } else {
          bias = g_.add_node("Mul", {c, ir::add_constant(g_, b + "_beta", ir::DataType::kFloat, {}, {beta})},
                             {ir::unique_name(g_, b + "_bias")}, "", b + "_beta_mul", n)->output(0);
        }
      }
      y = g_.add_node("Add", {y, bias}, {ir::unique_name(g_, b + "_biased")}, "", b + "_bias_add", n)->output(0);
    }
    account(n, qw, values, 1, dims[1]);
    return finish(n, y);
  }

  bool conv(ir::Node* n) {
    const auto w = quantizable_weight(model_, n->input(1), 3);
    ir::Value* x = n->input(0);
    if (!w || !x || !x->type.is_tensor() || x->type.data_type() != ir::DataType::kFloat)
      return false;
    if (conv_by_windows(*n)) return conv_windows(n, *w);
    ParamOptions po;
    po.reduce_range = o_.reduce_range;
    const QuantizedWeight qw = quantize_weight(g_, n->input(1)->name(), w->values, w->dims, o_.per_channel ? 0 : -1, o_.weight_type, po);
    const DynamicInput xq = quantize_input(x, n);
    const std::string b = base(n);
    ir::Node* ci = g_.add_node("ConvInteger", {xq.q, qw.data, xq.zero_point, scalar_zero_point(qw, b)},
                               {ir::unique_name(g_, b + "_int32")}, "", b + "_ConvInteger", n);
    for (const char* a : {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
      if (const ir::Attribute* at = n->attr(a)) ci->set_attr(ir::copy_attribute(*at));
    const int64_t m = w->dims[0];
    std::vector<int64_t> channel_shape(w->dims.size(), 1);
    channel_shape[1] = m;
    ir::Value* y = dequantize(ci->output(0), xq.scale, qw.scale, b, n, o_.per_channel ? channel_shape : std::vector<int64_t>{});
    if (ir::Value* bias = n->input(2)) {
      const auto bv = ir::float_constant(model_, bias);
      ir::Value* shaped = bv ? ir::add_constant(g_, bias->name() + "_channels", bv->type, channel_shape, bv->values) : nullptr;
      if (!shaped) {
        ir::Value* s = ir::add_int64_constant(g_, b + "_bias_shape", {static_cast<int64_t>(channel_shape.size())},
                                                  channel_shape);
        shaped = g_.add_node("Reshape", {bias, s}, {ir::unique_name(g_, b + "_bias")}, "", b + "_bias_reshape", n)->output(0);
      }
      y = g_.add_node("Add", {y, shaped}, {ir::unique_name(g_, b + "_biased")}, "", b + "_bias_add", n)->output(0);
    }
    int64_t inner = 1;
    for (size_t i = 1; i < w->dims.size(); ++i) inner *= w->dims[i];
    account(n, qw, w->values, inner, m);
    return finish(n, y);
  }

  /// A 1-D Conv of one group as MatMulInteger over its input windows, which onnxruntime runs as
  /// fast as any MatMul (its ConvInteger is slower than float Conv). X [N, C, T] is padded,
  /// quantized once (DynamicQuantizeLinear, shared with other readers), moved to [N, T, C] and
  /// its windows gathered as uint8: R [N, F, k*C] with R[n, f, j*C + c] = X[n, c, f*s + j*d];
  /// then Y = Transpose(R * W' + B) with W'[j*C + c, m] = W[m, c, j]. The windows repeat input
  /// elements exactly, so their quantization is that of X.
  bool conv_windows(ir::Node* n, const ir::FloatConstant& w) {
    const int64_t m = w.dims[0], c = w.dims[1], k = w.dims[2];
    const int64_t stride = n->attr_ints("strides", {1}).at(0), dilation = n->attr_ints("dilations", {1}).at(0);
    const std::vector<int64_t> pads = n->attr_ints("pads", {0, 0});
    std::vector<double> values(w.values.size());
    for (int64_t o = 0; o < m; ++o)
      for (int64_t i = 0; i < c; ++i)
        for (int64_t j = 0; j < k; ++j)
          values[static_cast<size_t>((j * c + i) * m + o)] = w.values[static_cast<size_t>((o * c + i) * k + j)];
    ParamOptions po;
    po.reduce_range = o_.reduce_range;
    const QuantizedWeight qw =
        quantize_weight(g_, n->input(1)->name(), values, {k * c, m}, o_.per_channel ? 1 : -1, o_.weight_type, po);
    const std::string b = base(n);
    const auto op = [&](const std::string& type, const std::vector<ir::Value*>& in, const std::string& what) {
      return g_.add_node(type, in, {ir::unique_name(g_, b + "_" + what)}, "", ir::unique_name(g_, b + "_" + what), n);
    };
    const auto ints = [&](const std::string& what, std::vector<int64_t> dims, std::vector<int64_t> v) {
      return ir::add_int64_constant(g_, b + "_" + what, std::move(dims), std::move(v));
    };
    ir::Value* x = n->input(0);
    if (pads[0] != 0 || pads[1] != 0)
      x = op("Pad", {x, ints("pads", {6}, {0, 0, pads[0], 0, 0, pads[1]})}, "padded")->output(0);
    const DynamicInput xq = quantize_input(x, n);
    // F = (T - span) / s + 1 windows, starting at f*s: index [F, k] = f*s + j*d.
    ir::Value* t = op("Gather", {op("Shape", {x}, "shape")->output(0), ints("time_axis", {}, {2})}, "length")->output(0);
    ir::Value* one = ints("one", {}, {1});
    ir::Value* s = ints("stride", {}, {stride});
    ir::Value* f = op("Sub", {t, ints("span", {}, {(k - 1) * dilation + 1})}, "tail")->output(0);
    f = op("Add", {op("Div", {f, s}, "steps")->output(0), one}, "windows")->output(0);
    ir::Value* starts = op("Mul", {op("Range", {ints("zero", {}, {0}), f, one}, "window")->output(0), s}, "starts")->output(0);
    starts = op("Reshape", {starts, ints("column", {2}, {-1, 1})}, "start_column")->output(0);
    std::vector<int64_t> taps(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) taps[static_cast<size_t>(j)] = j * dilation;
    ir::Value* index = op("Add", {starts, ints("taps", {k}, taps)}, "window_index")->output(0);
    ir::Node* nt = op("Transpose", {xq.q}, "time_major");
    nt->set_attr(ir::Attribute::make_ints("perm", {0, 2, 1}));
    ir::Node* gather = op("Gather", {nt->output(0), index}, "window_values");
    gather->set_attr(ir::Attribute::make_int("axis", 1));
    ir::Value* rows = op("Reshape", {gather->output(0), ints("rows", {3}, {0, 0, -1})}, "windows_flat")->output(0);
    ir::Node* mm = g_.add_node("MatMulInteger", {rows, qw.data, xq.zero_point, scalar_zero_point(qw, b)},
                               {ir::unique_name(g_, b + "_int32")}, "", b + "_MatMulInteger", n);
    ir::Value* y = dequantize(mm->output(0), xq.scale, qw.scale, b, n, {});
    if (ir::Value* bias = n->input(2)) y = op("Add", {y, bias}, "biased")->output(0);
    ir::Node* back = op("Transpose", {y}, "channels_first");
    back->set_attr(ir::Attribute::make_ints("perm", {0, 2, 1}));
    account(n, qw, values, 1, m);
    return finish(n, back->output(0));
  }

  /// LSTM/GRU/RNN (when --op-types names them): no integer kernel in the standard ops, so only
  /// their weights W and R are stored as int8 behind DequantizeLinear (per output row with
  /// --per-channel from opset 13): the file shrinks, the arithmetic stays float.
  bool recurrent(ir::Node* n) {
    bool any = false;
    ParamOptions po;
    po.reduce_range = o_.reduce_range;
    const bool per_axis = o_.per_channel && model_.onnx_opset() >= 13;
    for (size_t index : {size_t{1}, size_t{2}}) {
      const auto w = quantizable_weight(model_, n->input(index), 3, 3);
      if (!w) continue;
      const std::string name = n->input(index)->name();
      const QuantizedWeight qw = quantize_weight(g_, name, w->values, w->dims, per_axis ? 1 : -1, o_.weight_type, po);
      ir::Node* dq = g_.add_node("DequantizeLinear", {qw.data, qw.scale, qw.zero_point},
                                 {ir::unique_name(g_, name + "_dequantized")}, "",
                                 ir::unique_name(g_, name + "_DequantizeLinear"), n);
      if (per_axis) dq->set_attr(ir::Attribute::make_int("axis", 1));
      dq->output(0)->type = n->input(index)->type;
      n->set_input(index, dq->output(0));
      report_.float_weight_bytes += stored_float_bytes(o_, name, w->values.size());
      report_.quantized_weight_bytes += static_cast<int64_t>(w->values.size() + qw.scales.size() * 5);
      NodeReport r;
      r.node = n->name;
      r.op_type = n->op_type;
      r.tensor = name;
      r.scale = *std::max_element(qw.scales.begin(), qw.scales.end());
      r.zero_point = qw.zero_points.front();
      r.range_min = *std::min_element(w->values.begin(), w->values.end());
      r.range_max = *std::max_element(w->values.begin(), w->values.end());
      r.sqnr_db = weight_sqnr(w->values, qw, per_axis ? w->dims[2] : 1, per_axis ? w->dims[1] : 1);
      report_.nodes.push_back(r);
      any = true;
    }
    if (any) ++report_.quantized_nodes;
    return any;
  }

  ir::Model& model_;
  ir::Graph& g_;
  const QuantizeOptions& o_;
  QuantizeReport& report_;
  std::map<ir::Value*, DynamicInput> inputs_;
};

}  // namespace

namespace {

bool handles(const OpRule& rule, Mode mode) {
  switch (mode) {
    case Mode::kStatic: return rule.static_qdq;
    case Mode::kDynamic: return rule.dynamic;
    case Mode::kWeightOnly: return rule.op_type == "MatMul";
  }
  return false;
}

}  // namespace

const std::vector<std::string>& op_types_of(Mode mode) {
  static const std::map<Mode, std::vector<std::string>> lists = [] {
    std::map<Mode, std::vector<std::string>> m;
    for (Mode mode : {Mode::kDynamic, Mode::kStatic, Mode::kWeightOnly})
      for (const OpRule& r : op_rules())
        if (handles(r, mode)) m[mode].emplace_back(r.op_type);
    return m;
  }();
  return lists.at(mode);
}

bool selected(const ir::Node& n, const QuantizeOptions& o) {
  const OpRule* rule = op_rule(n);
  if (!rule || !handles(*rule, o.mode)) return false;
  if (!o.op_types.empty()) {
    if (std::find(o.op_types.begin(), o.op_types.end(), n.op_type) == o.op_types.end()) return false;
  } else if (o.mode == Mode::kDynamic && !rule->dynamic_default && !conv_by_windows(n)) {
    return false;  // opt-in (OpRule::dynamic_default)
  }
  if (std::find(o.exclude_op_types.begin(), o.exclude_op_types.end(), n.op_type) != o.exclude_op_types.end()) return false;
  if (n.output(0) && std::find(o.exclude_tensors.begin(), o.exclude_tensors.end(), n.output(0)->name()) != o.exclude_tensors.end())
    return false;
  return std::find(o.exclude_nodes.begin(), o.exclude_nodes.end(), n.name) == o.exclude_nodes.end();
}

FloatReason unselected_reason(const ir::Node& n, const QuantizeOptions& o) {
  auto named = [](const std::vector<std::string>& list, const std::string& s) {
    return std::find(list.begin(), list.end(), s) != list.end();
  };
  const OpRule* rule = op_rule(n);
  if (!o.op_types.empty() && !named(o.op_types, n.op_type)) return {"not among the op types asked for", {"op_types"}};
  if (o.op_types.empty() && o.mode == Mode::kDynamic && rule && !rule->dynamic_default && !conv_by_windows(n))
    return {n.op_type == "Conv" ? "dynamic mode quantizes this Conv only when its op type is asked for (onnxruntime runs "
                                  "ConvInteger slower than its float Conv; a 1-D Conv of one group, 8 or more input "
                                  "channels, explicit pads and a weight of static dims becomes a MatMulInteger over its "
                                  "windows)"
                                : "weight-only int8 (no integer kernel): only when its op type, " + n.op_type + ", is asked for",
            {"op_types"}};
  if (named(o.exclude_op_types, n.op_type)) return {"its op type is excluded", {"exclude_op_types"}};
  if (named(o.exclude_nodes, n.name)) return {"the node is excluded", {"exclude_nodes"}};
  if (const ir::Value* y = n.output(0)) {
    if (auto it = o.float_reasons.find(y->name()); it != o.float_reasons.end()) return {it->second, {}};
    if (named(o.exclude_tensors, y->name())) return {"kept float to reach the accuracy target", {"auto_exclude", "accuracy_target"}};
  }
  return {"not selected", {}};
}

void validate_selection(const ir::Model& model, const QuantizeOptions& o) {
  if (o.selection_checked) return;
  const std::vector<std::string>& supported = op_types_of(o.mode);
  std::map<std::string, bool> ops, names;
  ir::for_each_graph(const_cast<ir::Model&>(model), [&](ir::Graph& g) {
    for (const auto& n : g.nodes()) {
      ops[n->op_type] = true;
      names[n->name] = true;
    }
  });
  for (const auto& t : o.op_types) {
    if (std::find(supported.begin(), supported.end(), t) == supported.end()) {
      std::string list;
      for (const auto& s : supported) list += (list.empty() ? "" : ", ") + s;
      throw_usage_error({"op_types", ""}, t + " is not an op type this mode quantizes (" + list + ")");
    }
    if (!ops.count(t)) throw_usage_error({"op_types", ""}, "the model has no " + t + " node");
  }
  for (const auto& t : o.exclude_op_types)
    if (!ops.count(t)) throw_usage_error({"exclude_op_types", ""}, "the model has no " + t + " node");
  for (const auto& n : o.exclude_nodes)
    if (!names.count(n)) throw_usage_error({"exclude_nodes", ""}, "the model has no node named '" + n + "'");
}

namespace {

/// Quantizes every graph of the model, subgraphs included (Silero keeps its convolutions in If
/// branches); a DynamicQuantizeLinear is shared by the readers of one activation within a graph.
void rewrite_dynamic(ir::Model& model, const QuantizeOptions& options, QuantizeReport& report, const ElementCount& elements) {
  report.float_cost = float_cost(model, elements);
  bool estimated = true;  // every quantized node's sizes known
  ir::for_each_graph(*model.graph, [&](ir::Graph& g) {
    DynamicQuantizer q(model, g, options, report);
    std::vector<ir::Node*> order;
    for (const auto& n : g.nodes()) order.push_back(n.get());
    for (ir::Node* n : order) {
      const OpRule* rule = op_rule(*n);
      if (!rule || !rule->dynamic) continue;
      FloatReason why;
      // What the integer product would save (quant/speed.h), before the node is rewritten.
      GroupEstimate e;
      e.nodes.push_back(n->name.empty() ? n->op_type : n->name);  // now: a rewrite frees the node
      const bool products = reduction_size(model, *n) > 0;  // MatMul/Gemm/Conv with a constant weight
      e.int8_macs = node_macs(model, *n, elements);
      const bool sized = e.int8_macs > 0;
      // A 1-D Conv runs as a MatMul over its windows, gathered as uint8: int8_macs / M of them.
      const bool windows = conv_by_windows(*n);
      const double moved =
          node_elements(*n, elements) + (windows && sized ? e.int8_macs / static_cast<double>(conv1d_channels(*n)) : 0.0);
      if (sized) e.gain = dynamic_gain(e.int8_macs, moved, ir::is_op(n, "Conv") && !windows);
      if (!selected(*n, options)) {
        why = unselected_reason(*n, options);
      } else if (windows && options.samples_random && options.op_types.empty()) {
        // A polyphase STFT front end (tests/make_stft_front_end.py) quantized so: cosine 0.99998 on
        // random inputs, 0.9929 in onnxruntime on speech, whose quiet frames lose their bits to
        // the loud ones.
        why = {"a 1-D Conv becomes a MatMulInteger over its windows by default only when measured on real samples: "
               "its input is quantized per tensor at run time, so its accuracy depends on the input's dynamic range, "
               "which random inputs do not have; asking for Conv by op type forces it",
               {"sample_dirs", "op_types"}};
      } else if (windows && !sized && options.op_types.empty()) {
        why = {"a 1-D Conv is quantized by default only where its sizes are known (from the samples or static "
               "shapes), to estimate what it gains; asking for its op type forces it",
               {"op_types"}};
      } else if (sized && e.gain <= 0 && options.op_types.empty()) {
        std::ostringstream s;
        s << "estimated slower quantized: " << e.int8_macs << " MACs in int8 save less than quantizing its "
          << moved << (windows ? " input, window and output" : " input and output")
          << " elements at run time costs; asking for its op type forces it";
        why = {s.str(), {"op_types"}};
      } else if (!q.rewrite(n)) {
        why.text = "its weight is not a constant float tensor" +
                   std::string(ir::is_op(n, "MatMul") ? " (a product of two activations, such as attention scores)" : "");
      } else if (products) {
        estimated = estimated && sized;  // sizes unknown (no samples, dynamic shapes): no estimate
        if (sized) report.groups.push_back(std::move(e));
      }
      // (n is still there: only a successful rewrite removes it)
      if (!why.text.empty())
        report.kept_float.push_back({n->name, n->op_type, n->output(0) ? n->output(0)->name() : "", why.text, why.options});
    }
  });
  report.estimated_speedup = estimated ? estimated_speedup(report.float_cost, report.groups) : -1;
  // The float weights the rewrites replaced are now unused.
  passes::OptimizeOptions cleanup;
  cleanup.only = {"eliminate_dead_code"};
  passes::optimize(model, cleanup);
}

}  // namespace

QuantizeReport quantize_dynamic(ir::Model& model, const QuantizeOptions& options,
                                const SampleSource& samples) {
  validate_selection(model, options);
  QuantizeReport report;
  ensure_opset(model, 11, report);  // DynamicQuantizeLinear is opset 11
  // The fp32 references of the first error_samples samples, recorded once for every attempt.
  if (!samples && options.auto_exclude)
    throw Error(ErrorKind::kUsage, "needs samples to measure the accuracy on", Parameter{"auto_exclude", ""}, {"sample_dirs"});
  const References references = optional_references(model, samples, options, report);
  const bool measured = references.samples() > 0;
  // Sizes for the speed estimate: as the samples ran, else the static shapes.
  const std::map<std::string, double> sizes = references.sizes();
  const ElementCount elements = [&sizes](const ir::Value* v) { return element_count(sizes, v); };
  auto attempt = [&](const std::vector<std::string>& excluded, const ir::Progress& progress) {
    QuantizeOptions o = options;
    o.exclude_tensors.insert(o.exclude_tensors.end(), excluded.begin(), excluded.end());
    auto work = std::make_unique<ir::Model>(!measured ? std::move(model) : copy_model(model));
    QuantizeReport r = report;
    if (!measured) {
      ir::DiagnosticSink sink;
      ir::infer_shapes(*work, sink);  // the static sizes (copy_model infers them too)
    }
    rewrite_dynamic(*work, o, r, elements);
    if (measured)
      measure_errors(model, *work, references, samples, r, o.accuracy_outputs, progress);
    return std::make_pair(std::move(work), std::move(r));
  };
  auto best = quantize_with_exclusions(options, attempt);
  if (!best.first) return best.second;  // nothing reached the target: the model stays as it was
  model = std::move(*best.first);
  return best.second;
}

}  // namespace onnxtool::quant
