// Static quantization: calibrate with observers, then insert QuantizeLinear/DequantizeLinear.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "convert/version_converter.h"
#include "ir/error.h"
#include "ir/graph_util.h"
#include "ir/model_io.h"
#include "ir/shape_inference.h"
#include "passes/pass.h"
#include "passes/rewrite.h"
#include "quant/accuracy.h"
#include "quant/op_rules.h"
#include "quant/quantize.h"
#include "quant/speed.h"
#include "quant/weights.h"
#include "runner/session.h"

namespace onnxtool::quant {

namespace {

bool is_float_tensor(const ir::Value* v) {
  return v && v->type.is_tensor() && v->type.data_type() == ir::DataType::kFloat;
}

/// The table row of an op static quantization handles (quant/op_rules.h), or nullptr.
const OpRule* static_rule(const ir::Node& n) {
  const OpRule* r = op_rule(n);
  return r && r->static_qdq ? r : nullptr;
}

/// The per-channel axis of the node's weight (-1: the op has no weight).
int64_t weight_axis(const ir::Node& n) {
  const OpRule* r = static_rule(n);
  return r && r->weight_input >= 0 ? r->weight_axis(n) : -1;
}

bool has_weight(const ir::Node& n) { return weight_axis(n) >= 0; }

/// Ops that a runtime turns into one integer kernel when their output is quantized too
/// (QLinearConv, QLinearMatMul, and Gemm's integer forms). ConvTranspose has no such standard op:
/// onnxruntime runs it in float between DequantizeLinear and QuantizeLinear.
bool has_integer_kernel(const ir::Node& n) {
  const OpRule* r = static_rule(n);
  return r && r->weight_input >= 0 && !r->integer_kernel.empty();
}

/// The input interval outside which a node's output stays constant, for the activations that
/// saturate; nullopt for the others.
std::optional<Range> saturation_interval(const ir::Node& n) {
  if (ir::is_op(&n, "HardSwish")) return Range{-3.0, std::numeric_limits<double>::infinity()};
  if (ir::is_op(&n, "HardSigmoid")) {
    const double alpha = n.attr_float("alpha", 0.2f), beta = n.attr_float("beta", 0.5f);
    if (!(alpha > 0)) return std::nullopt;
    return Range{-beta / alpha, (1.0 - beta) / alpha};
  }
  return std::nullopt;
}

bool is_qdq(const ir::Node* n) { return ir::is_op(n, "QuantizeLinear") || ir::is_op(n, "DequantizeLinear"); }

/// Ops whose output range is the input's clamped (they fold into the producer's output range).
bool is_clamp(const ir::Node* n) { return ir::is_op(n, "Relu") || ir::is_op(n, "Clip"); }

/// A Relu/Clip folded into its input's quantized range (what brings it back).
struct FoldedClamp {
  std::string op_type, name, output;
  std::vector<ir::Attribute> attributes;
  std::vector<ir::Value*> extra_inputs;   // Clip's min and max
};

/// A quantized weight or bias: the float value it stands for, and its bytes in the report.
struct WeightSource {
  ir::Value* value;
  int64_t float_bytes = 0, quantized_bytes = 0;
};

class StaticQuantizer {
 public:
  /// Quantizes `graph` of `model` (the main graph or a subgraph: If branches and Loop/Scan bodies
  /// are calibrated and quantized like the main graph; their values may come from outer scope).
  StaticQuantizer(ir::Model& model, ir::Graph& graph, const QuantizeOptions& o, const std::map<std::string, Range>& ranges,
                  const ElementCount& elements, QuantizeReport& report)
      : model_(model), g_(graph), o_(o), ranges_(ranges), report_(report), elements_(elements) {
    act_.symmetric = o.symmetric_activations;
    act_.reduce_range = false;
    wt_.reduce_range = o.reduce_range;
    per_axis_ = model.onnx_opset() >= 13;
  }

  void run() {
    float_cost_ = float_cost(model_, elements_);
    std::vector<ir::Node*> order;
    for (const auto& n : g_.nodes()) order.push_back(n.get());
    for (ir::Node* n : order) {
      if (removed_.count(n) || !static_rule(*n)) continue;
      if (!selected(*n, o_)) {
        keep_float(n, unselected_reason(*n, o_));
      } else if (std::string why = quantize_node(n); !why.empty()) {
        keep_float(n, {why, {}});
      }
    }
    report_.float_cost = float_cost_;
    drop_groups_without_gain();
    report_.estimated_speedup = estimated_speedup(float_cost_, report_.groups);
  }

 private:
  /// Records why a node of a quantized op type stays float (only ops with a weight: the ones
  /// whose float execution costs).
  void keep_float(const ir::Node* n, FloatReason why) {
    if (!has_weight(*n)) return;
    report_.kept_float.push_back({n->name, n->op_type, n->output(0) ? n->output(0)->name() : "", std::move(why.text),
                                  std::move(why.options)});
  }

  /// True when a runtime runs n in integers: an op static quantization handles (not
  /// ConvTranspose: no integer kernel) whose float inputs are all dequantized (weights included)
  /// and whose output is quantized (a MatMul may keep a float output: MatMulIntegerToFloat).
  bool runs_in_integers(const ir::Node& n) const {
    if (!static_rule(n) || ir::is_op(&n, "ConvTranspose")) return false;
    bool any = false;
    for (ir::Value* in : n.inputs()) {
      if (!in || !is_float_tensor(in)) continue;
      if (!source_.count(in) && !weight_source_.count(in)) return false;
      any = true;
    }
    return any && (dq_.count(n.output(0)) || ir::is_op(&n, "MatMul"));
  }

  /// What quantizing a group saves per sample (quant/speed.h): its integer products' MACs at
  /// int8 speed, less the QuantizeLinear of each tensor a float op (or the graph input)
  /// produces and the DequantizeLinear of each tensor a float op reads.
  GroupEstimate estimate(const std::vector<ir::Node*>& integer, const std::vector<ir::Value*>& pairs) const {
    const CostModel& c = default_cost_model();
    GroupEstimate e;
    for (const ir::Node* n : integer) {
      const ir::Value* weight = weight_source_.at(n->input(1)).value;
      const double macs = node_macs(model_, *n, elements_, weight);
      e.nodes.push_back(n->name.empty() ? n->output(0)->name() : n->name);
      e.int8_macs += macs;
      // Its input and output are dequantized tensors now: sized by what they stand for.
      const bool slow = slow_integer_conv(model_, *n, weight);
      e.slow_convs += slow;
      e.gain += static_gain(macs, elements_(source_.at(n->input(0))) + elements_(n->output(0)), slow, c);
    }
    for (ir::Value* d : pairs) {
      const ir::Value* x = source_.at(d);
      const double size = elements_(x);
      if (!x->producer() || !runs_in_integers(*x->producer())) {
        e.border_elements += size;
        ++e.border_nodes;
      }
      for (const ir::Use& u : d->uses())
        if (!is_qdq(u.node) && !runs_in_integers(*u.node)) {
          e.border_elements += size;
          ++e.border_nodes;
          break;
        }
    }
    e.gain -= e.border_elements * c.qdq_element + e.border_nodes * c.node_fixed;
    return e;
  }

  /// Removes the Q/DQ pairs of every group of quantized tensors that gains nothing: no integer
  /// kernel reads or writes them (a graph input quantized for a Reshape whose reader stays float;
  /// a ConvTranspose between float ops), or the estimate (quant/speed.h) says the QuantizeLinear
  /// and DequantizeLinear passes at its borders cost more than its int8 products save (a few
  /// depthwise or 3-channel Convs at high resolution). The estimate does not drop groups when
  /// --op-types names the ops. A group is the tensors linked by the ops that read or write them.
  /// Weights of the ops in a dropped group go back to float, and the Relu/Clip folded into a
  /// dropped tensor's range come back. The groups kept are the report's.
  void drop_groups_without_gain() {
    std::map<ir::Value*, ir::Value*> parent;  // union-find over the pairs, by DQ output
    std::function<ir::Value*(ir::Value*)> find = [&](ir::Value* v) {
      ir::Value*& p = parent.try_emplace(v, v).first->second;
      if (p != v) p = find(p);
      return p;
    };
    std::vector<std::pair<ir::Node*, ir::Value*>> integer;  // each op with an integer kernel, and a pair of it
    for (const auto& node : g_.nodes()) {
      if (!node || is_qdq(node.get())) continue;
      std::vector<ir::Value*> pairs;
      for (ir::Value* in : node->inputs())
        if (in && source_.count(in)) pairs.push_back(in);
      for (ir::Value* out : node->outputs())
        if (auto it = dq_.find(out); out && it != dq_.end()) pairs.push_back(it->second);
      for (size_t i = 1; i < pairs.size(); ++i) parent[find(pairs[i])] = find(pairs[0]);
      if (!pairs.empty() && has_integer_kernel(*node) && node->input(1) && weight_source_.count(node->input(1)) &&
          runs_in_integers(*node))
        integer.emplace_back(node.get(), pairs[0]);
    }
    // The maps above are keyed by address, which is the allocator's order: groups, pairs and
    // readers are taken in graph order and by name instead, so that the sums of an estimate,
    // the names of restored nodes and the report do not depend on where values were allocated.
    std::vector<ir::Value*> roots;  // groups with an integer kernel, in graph order
    std::map<ir::Value*, std::vector<ir::Node*>> integer_of;  // by group root
    for (const auto& [n, pair] : integer) {
      std::vector<ir::Node*>& nodes = integer_of[find(pair)];
      if (nodes.empty()) roots.push_back(find(pair));
      nodes.push_back(n);
    }
    std::vector<ir::Value*> dq_outputs;  // by name
    for (const auto& [x, d] : dq_) dq_outputs.push_back(d);
    std::sort(dq_outputs.begin(), dq_outputs.end(), [](const ir::Value* a, const ir::Value* b) { return a->name() < b->name(); });
    std::map<ir::Value*, std::vector<ir::Value*>> pairs_of;
    for (ir::Value* d : dq_outputs) pairs_of[find(d)].push_back(d);
    std::map<ir::Value*, GroupEstimate> slower;  // groups the estimate drops, by root
    for (ir::Value* root : roots) {
      GroupEstimate e = estimate(integer_of[root], pairs_of[root]);
      if (e.gain <= 0 && o_.op_types.empty())
        slower[root] = std::move(e);
      else
        report_.groups.push_back(std::move(e));
    }
    std::vector<ir::Value*> dropped;  // by name
    for (ir::Value* d : dq_outputs)
      if (!integer_of.count(find(d)) || slower.count(find(d))) dropped.push_back(d);
    if (dropped.empty()) return;
    const std::set<ir::Value*> is_dropped(dropped.begin(), dropped.end());
    std::vector<std::pair<ir::Node*, ir::Value*>> readers;  // nodes that read a dropped pair, and its group's root
    std::set<ir::Node*> listed;
    for (ir::Value* d : dropped) {
      ir::Value* x = source_.at(d);
      for (const ir::Use& u : d->uses())
        if (!is_qdq(u.node) && listed.insert(u.node).second) readers.emplace_back(u.node, find(d));
      ir::Value* restored = x;
      if (auto f = folded_.find(d); f != folded_.end()) restored = unfold(x, f->second);
      g_.replace_all_uses(d, restored);
      report_.nodes.erase(std::remove_if(report_.nodes.begin(), report_.nodes.end(),
                                         [&](const NodeReport& r) { return r.dequantized == d->name(); }),
                          report_.nodes.end());
    }
    // The readers kept float are reported in graph order (those of subgraphs last).
    std::map<const ir::Node*, size_t> position;
    for (const auto& node : g_.nodes()) position.emplace(node.get(), position.size());
    const auto at = [&](const ir::Node* n) { auto it = position.find(n); return it == position.end() ? position.size() : it->second; };
    std::stable_sort(readers.begin(), readers.end(), [&](const auto& a, const auto& b) { return at(a.first) < at(b.first); });
    for (auto [n, group] : readers) {
      bool quantized = false;
      for (size_t i = 0; i < n->inputs().size(); ++i) {
        ir::Value* in = n->input(i);
        if (auto w = weight_source_.find(in); in && w != weight_source_.end()) {
          n->set_input(i, w->second.value);
          report_.float_weight_bytes -= w->second.float_bytes;
          report_.quantized_weight_bytes -= w->second.quantized_bytes;
        } else if (in && source_.count(in) && !is_dropped.count(in)) {
          quantized = true;
        }
      }
      if (quantized || !counted_.erase(n)) continue;  // still quantized, or never counted (a float reader)
      --report_.quantized_nodes;
      FloatReason why;
      if (auto e = slower.find(group); e != slower.end()) {
        std::ostringstream s;
        s << "estimated slower quantized: its group's int8 products (" << e->second.int8_macs << " MACs";
        if (e->second.slow_convs)
          s << "; " << e->second.slow_convs << " of its Convs depthwise, grouped or of fewer than 8 input channels, "
            << "which onnxruntime runs slower in int8";
        s << ") save less than the " << e->second.border_nodes << " QuantizeLinear/DequantizeLinear at its borders cost ("
          << e->second.border_elements << " elements); asking for its op type forces it";
        why = {s.str(), {"op_types"}};
      } else {
        why.text = has_integer_kernel(*n) ? "its input or output cannot be quantized, so no integer kernel would run it"
                                          : "no integer kernel would read or write its 8-bit tensors (" + n->op_type +
                                                " has none): the QuantizeLinear/DequantizeLinear pairs would only add work and error";
      }
      keep_float(n, why);
    }
  }

  /// A Relu/Clip that quantize_node folded into the range of a tensor whose pair is dropped,
  /// computed again on `x`; returns its output.
  ir::Value* unfold(ir::Value* x, const FoldedClamp& f) {
    std::vector<ir::Value*> inputs = {x};
    inputs.insert(inputs.end(), f.extra_inputs.begin(), f.extra_inputs.end());
    const ir::Node* at = nullptr;
    if (x->producer() && x->producer()->graph() == &g_) {
      const size_t i = g_.node_index(x->producer());
      at = i + 1 < g_.nodes().size() ? g_.nodes()[i + 1].get() : nullptr;
    }
    ir::Node* c = g_.add_node(f.op_type, inputs, {ir::unique_name(g_, f.output)}, "", ir::unique_name(g_, f.name), at);
    for (const ir::Attribute& a : f.attributes) c->set_attr(ir::copy_attribute(a));
    c->output(0)->type = x->type;
    return c->output(0);
  }

  /// The interval outside which every reader of v is constant (HardSwish below -3, HardSigmoid
  /// outside [-beta/alpha, (1-beta)/alpha]); nullopt when a reader does not saturate or v is a
  /// graph output.
  std::optional<Range> readers_interval(const ir::Value* v) const {
    if (v->uses().empty() || v->is_graph_output()) return std::nullopt;
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const ir::Use& u : v->uses()) {
      const auto s = saturation_interval(*u.node);
      if (!s) return std::nullopt;
      lo = std::min(lo, s->min);
      hi = std::max(hi, s->max);
    }
    if (lo > 0 || hi < 0) return std::nullopt;  // ranges include zero, which must stay exact
    return Range{lo, hi};
  }

  /// The calibrated range of a tensor, narrowed to `readers` (readers_interval): levels beyond it
  /// would be wasted, and QuantizeLinear's saturation there changes nothing the readers compute.
  std::optional<Range> range_of(const ir::Value* v, const std::optional<Range>& readers) const {
    auto it = ranges_.find(v->name());
    if (it == ranges_.end()) return std::nullopt;
    Range r = it->second;
    if (readers) r = Range{std::max(r.min, readers->min), std::min(r.max, readers->max)};
    return r;
  }

  /// Q -> DQ on activation `x` (shared by every quantized reader); returns the DQ output. With
  /// `all_readers`, every reader of x reads the DQ output (the output of a quantized node is a
  /// quantized tensor for everyone, which lets runtimes fuse DQ -> op -> Q into integer kernels);
  /// graph outputs keep the float value.
  ir::Value* qdq(ir::Value* x, const ir::Node* before, bool all_readers = false,
                 std::optional<Range> range = std::nullopt, const std::string& stands_for = "") {
    if (auto it = dq_.find(x); it != dq_.end()) return it->second;
    if (source_.count(x)) return x;  // already a dequantized tensor
    if (std::find(o_.exclude_tensors.begin(), o_.exclude_tensors.end(), x->name()) != o_.exclude_tensors.end()) return nullptr;
    const auto reference = range ? std::nullopt : readers_interval(x);  // before the readers move
    const auto r = range ? range : range_of(x, reference);
    if (!r) return nullptr;
    const QuantParams p = compute_params(r->min, r->max, o_.activation_type, act_);
    const std::string b = x->name();
    ir::Value* scale = add_float(g_, b + "_scale", {}, {p.scale});
    const ir::DataType dt = data_type_of(o_.activation_type);
    const uint8_t z = o_.activation_type == QuantType::kInt8 ? static_cast<uint8_t>(static_cast<int8_t>(p.zero_point))
                                                             : static_cast<uint8_t>(p.zero_point);
    ir::Value* zp = g_.add_initializer(ir::make_tensor(ir::unique_name(g_, b + "_zero_point"), dt, {}, &z, 1));
    // Place the pair right after the producer (or first, for graph inputs), so every reader sees it.
    const ir::Node* at = before;
    if (x->producer() && x->producer()->graph() == &g_) {
      const size_t i = g_.node_index(x->producer());
      at = i + 1 < g_.nodes().size() ? g_.nodes()[i + 1].get() : nullptr;
    } else if (!g_.nodes().empty()) {
      at = g_.nodes().front().get();
    }
    ir::Node* q = g_.add_node("QuantizeLinear", {x, scale, zp}, {ir::unique_name(g_, b + "_quantized")}, "",
                              ir::unique_name(g_, b + "_QuantizeLinear"), at);
    ir::Node* dq = g_.add_node("DequantizeLinear", {q->output(0), scale, zp}, {ir::unique_name(g_, b + "_dequantized")}, "",
                               ir::unique_name(g_, b + "_DequantizeLinear"), at);
    dq->output(0)->type = x->type;
    dq_[x] = dq->output(0);
    source_[dq->output(0)] = x;
    act_params_[dq->output(0)] = p;
    if (all_readers) {
      g_.replace_all_uses(x, dq->output(0));
      q->set_input(0, x);
    }
    NodeReport nr;
    nr.node = x->producer() ? x->producer()->name : "";
    nr.op_type = x->producer() ? x->producer()->op_type : "input";
    nr.tensor = stands_for.empty() ? x->name() : stands_for;
    nr.range_min = r->min;
    nr.range_max = r->max;
    nr.scale = p.scale;
    nr.zero_point = p.zero_point;
    nr.dequantized = dq->output(0)->name();
    if (reference) {
      nr.reference_min = reference->min;
      nr.reference_max = reference->max;
    }
    report_.nodes.push_back(nr);
    act_params_[x] = p;
    return dq->output(0);
  }

  /// A constant weight as int8 + DequantizeLinear (per channel on `axis` when asked and allowed).
  ir::Value* dq_weight(ir::Node* n, size_t index, int64_t axis, QuantizedWeight* out) {
    const auto w = quantizable_weight(model_, n->input(index));
    if (!w) return nullptr;
    const int64_t a = o_.per_channel && per_axis_ && axis >= 0 && axis < static_cast<int64_t>(w->dims.size()) ? axis : -1;
    QuantizedWeight qw = quantize_weight(g_, n->input(index)->name(), w->values, w->dims, a, o_.weight_type, wt_);
    // Read for the last time in this attempt: a mapped file's pages of it go back to the kernel.
    if (const ir::Tensor* t = n->input(index)->initializer(); t && t->raw_data) ir::release_pages(t->raw_data->data(), t->raw_data->size());
    ir::Node* dq = g_.add_node("DequantizeLinear", {qw.data, qw.scale, qw.zero_point},
                               {ir::unique_name(g_, n->input(index)->name() + "_dequantized")}, "",
                               ir::unique_name(g_, n->input(index)->name() + "_DequantizeLinear"), n);
    if (a >= 0) dq->set_attr(ir::Attribute::make_int("axis", a));
    const WeightSource source{n->input(index), stored_float_bytes(o_, n->input(index)->name(), w->values.size()),
                              static_cast<int64_t>(w->values.size() + qw.scales.size() * 5)};
    weight_source_[dq->output(0)] = source;
    report_.float_weight_bytes += source.float_bytes;
    report_.quantized_weight_bytes += source.quantized_bytes;
    if (out) *out = qw;
    return dq->output(0);
  }

  /// int32 bias with scale x_scale * w_scale (per channel), zero point 0. The weight scale is
  /// never widened here: biases stay far inside int32 for the ranges onnxtool produces; a bias
  /// that would not fit is left in float.
  ir::Value* dq_bias(ir::Node* n, size_t index, const QuantParams& x, const QuantizedWeight& w) {
    const auto b = ir::float_constant(model_, n->input(index));
    if (!b || b->type != ir::DataType::kFloat || b->dims.size() != 1) return nullptr;
    const size_t m = b->values.size();
    if (w.scales.size() != 1 && w.scales.size() != m) return nullptr;
    std::vector<int32_t> q(m);
    std::vector<float> scales(w.scales.size());
    for (size_t c = 0; c < w.scales.size(); ++c) scales[c] = x.scale * w.scales[c];
    for (size_t c = 0; c < m; ++c) {
      const double s = scales[w.scales.size() == 1 ? 0 : c];
      const double v = round_half_even(b->values[c] / s);
      if (!(std::fabs(v) < 2147483647.0)) return nullptr;
      q[c] = static_cast<int32_t>(v);
    }
    const std::string base = n->input(index)->name();
    const std::vector<int64_t> sdims = scales.size() == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(m)};
    ir::Value* data = add_int32(g_, base + "_quantized", {static_cast<int64_t>(m)}, q);
    ir::Value* scale = add_float(g_, base + "_scale", sdims, scales);
    ir::Value* zp = add_int32(g_, base + "_zero_point", sdims, std::vector<int32_t>(scales.size(), 0));
    ir::Node* dq = g_.add_node("DequantizeLinear", {data, scale, zp}, {ir::unique_name(g_, base + "_dequantized")}, "",
                               ir::unique_name(g_, base + "_DequantizeLinear"), n);
    if (scales.size() > 1) dq->set_attr(ir::Attribute::make_int("axis", 0));
    weight_source_[dq->output(0)] = WeightSource{n->input(index)};
    return dq->output(0);
  }

  /// True when a reader of v is a node this quantization rewrites (so it reads v quantized).
  bool has_quantized_reader(const ir::Value* v) const {
    for (const ir::Use& u : v->uses())
      if (selected(*u.node, o_)) return true;
    return false;
  }

  /// Quantizes node n; returns why it stays float ("" when quantized).
  std::string quantize_node(ir::Node* n) {
    // Activation inputs (the data inputs; shape-like integer inputs stay as they are).
    const size_t data_inputs = n->op_type == "Resize" || n->op_type == "Reshape" || n->op_type == "Slice" ||
                                       n->op_type == "Squeeze" || n->op_type == "Unsqueeze"
                                   ? 1
                                   : n->inputs().size();
    ir::Value* x0 = n->input(0);
    bool any = source_.count(x0) > 0;
    std::vector<size_t> constants;
    for (size_t i = 0; i < data_inputs && i < n->inputs().size(); ++i) {
      ir::Value* v = n->input(i);
      if (!is_float_tensor(v)) continue;
      if (has_weight(*n) && i >= 1) continue;  // weights and biases below
      if (ir::constant_of(model_, v)) {
        if (ranges_.count(v->name())) constants.push_back(i);
        continue;
      }
      if (ir::Value* d = qdq(v, n)) {
        n->set_input(i, d);
        any = true;
      }
    }
    // A constant operand of Add/Mul/Concat: quantized like an activation at its own range, when
    // another operand is quantized (else no integer kernel could read it, and a runtime's fusion
    // of the float op with its constant, a LayerNormalization's scale and shift, would break).
    for (size_t i : any ? constants : std::vector<size_t>{})
      if (ir::Value* d = qdq(n->input(i), n)) n->set_input(i, d);
    if (has_weight(*n)) {
      if (!n->input(0) || !source_.count(n->input(0))) {
        // Its input stays float because that tensor is kept float: say why.
        const ir::Value* x = n->input(0);
        if (x && std::count(o_.exclude_tensors.begin(), o_.exclude_tensors.end(), x->name())) {
          const auto why = o_.float_reasons.find(x->name());
          return "its input '" + x->name() + "' is kept float (" +
                 (why != o_.float_reasons.end() ? why->second : std::string("to reach the accuracy target")) + ")";
        }
        return "its input has no calibrated float range (kept float, or not a float tensor)";
      }
      QuantizedWeight w;
      ir::Value* wd = dq_weight(n, 1, weight_axis(*n), &w);
      if (!wd) return "its weight is not a constant float tensor";
      n->set_input(1, wd);
      if (n->input(2) && static_rule(*n)->bias_input == 2) {
        const auto xp = act_params_.find(n->input(0));
        if (xp != act_params_.end())
          if (ir::Value* bd = dq_bias(n, 2, xp->second, w)) n->set_input(2, bd);
      }
      any = true;
    }
    if (!any) return "no input has a calibrated float range";
    ++report_.quantized_nodes;
    counted_.insert(n);
    // The output: fold a single Relu/Clip reader into the range (asymmetric only), then Q/DQ.
    // The output of an op without an integer kernel that only float ops read (an Add, or the
    // ConvTranspose, before the Sigmoid producing the model's output) stays float: quantizing it
    // would add error and no integer kernel would use it. Conv/MatMul/Gemm outputs are always
    // quantized, which lets runtimes run the whole group as one integer kernel (QLinearConv...).
    ir::Value* y = n->output(0);
    if (!is_float_tensor(y)) return "";
    ir::Node* clamp = ir::single_consumer(y);
    if (!has_integer_kernel(*n) && !has_quantized_reader(is_clamp(clamp) ? clamp->output(0) : y)) return "";
    if (!o_.symmetric_activations) {
      if (is_clamp(clamp) && ranges_.count(clamp->output(0)->name())) {
        ir::Value* clamped = clamp->output(0);
        const Range r = ranges_.at(clamped->name());
        const std::string clamped_name = clamped->name();
        FoldedClamp fold{clamp->op_type, clamp->name, clamped_name, {}, {}};
        for (const ir::Attribute& a : clamp->attributes) fold.attributes.push_back(ir::copy_attribute(a));
        for (size_t i = 1; i < clamp->inputs().size(); ++i) fold.extra_inputs.push_back(clamp->input(i));
        removed_.insert(clamp);  // freed by the bypass: run() must not visit it
        if (r.min >= 0 && passes::bypass_node(g_, clamp, y)) {
          // y is quantized at the clamp's range: Q saturates below its min and above its max,
          // which is what the clamp did (up to the calibrated max).
          if (ir::Value* d = qdq(y, nullptr, true, r, clamped_name)) folded_[d] = std::move(fold);
          return "";
        }
      }
    }
    qdq(y, nullptr, true);
    return "";
  }

  ir::Model& model_;
  ir::Graph& g_;
  const QuantizeOptions& o_;
  const std::map<std::string, Range>& ranges_;
  QuantizeReport& report_;
  ParamOptions act_, wt_;
  bool per_axis_ = false;
  std::map<ir::Value*, ir::Value*> dq_;      // float tensor -> its DQ output
  std::map<ir::Value*, ir::Value*> source_;  // DQ output -> the float tensor
  std::map<ir::Value*, QuantParams> act_params_;
  std::set<const ir::Node*> removed_;  // nodes a fold removed (their memory is gone)
  std::map<ir::Value*, WeightSource> weight_source_;  // DQ output of a weight or bias -> its float value
  std::map<ir::Value*, FoldedClamp> folded_;          // DQ output -> the Relu/Clip folded into its range
  ElementCount elements_;
  double float_cost_ = 0;
  std::set<const ir::Node*> counted_;  // the nodes quantized_nodes counts
};

/// Ops whose output holds values of their first input, moved, selected or clamped.
bool moves_values(const ir::Node& n) {
  for (const char* op : {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Slice", "Expand", "Relu", "Clip"})
    if (ir::is_op(&n, op)) return true;
  return false;
}

/// Tensors whose readers turn 8-bit rounding into large errors, each with the reason: the
/// inputs of Log, Sqrt, Reciprocal and Exp, the base of Pow, the divisor of Div, what a Sub
/// takes its own ReduceMean from (a mel spectrogram's power before its Log; a decomposed
/// LayerNormalization's input, deviation and variance: normalized, a rounding step of the
/// input is one of the output's whenever its rows vary little), and both sides of an Equal,
/// GreaterOrEqual or LessOrEqual of two computed tensors (peak picking, Equal(x, MaxPool(x))).
/// They stay float, and so do their producers.
std::map<std::string, std::string> float_by_readers(ir::Model& model) {
  std::map<std::string, std::string> reasons;
  std::vector<const ir::Node*> nodes;
  ir::for_each_graph(model, [&](ir::Graph& g) {
    for (const auto& n : g.nodes()) nodes.push_back(n.get());
  });
  for (const ir::Node* node : nodes) {
    // A normalization's output (divided by a Sqrt, or times a Reciprocal) and its scaling by
    // constants, up to the last of them: onnxruntime runs a decomposed LayerNormalization
    // (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add) as one float kernel, which
    // quantized tensors inside would break. Its output, what the next layer reads, may be quantized.
    const ir::Node* divisor = ir::is_op(node, "Div") && node->input(1) ? node->input(1)->producer() : nullptr;
    if (ir::is_op(divisor, "Sqrt") ||
        (ir::is_op(node, "Mul") && node->inputs().size() == 2 &&
         (ir::is_op(node->input(0) ? node->input(0)->producer() : nullptr, "Reciprocal") ||
          ir::is_op(node->input(1) ? node->input(1)->producer() : nullptr, "Reciprocal")))) {
      const std::string reason = "inside a normalization ('" + node->name +
                                 "' and its constant scale/shift): onnxruntime fuses a decomposed LayerNormalization into "
                                 "one float kernel, which 8-bit tensors inside would break";
      for (const ir::Value* v = node->output(0); v;) {
        const ir::Node* next = ir::single_consumer(v);
        const bool scales = (ir::is_op(next, "Mul") || ir::is_op(next, "Add")) && next->inputs().size() == 2 &&
                            (ir::constant_of(model, next->input(0)) || ir::constant_of(model, next->input(1)));
        if (!scales) break;
        reasons.emplace(v->name(), reason);
        v = next->output(0);
      }
    }
    std::vector<size_t> inputs = {0};
    const char* why = nullptr;
    if (ir::is_op(node, "Log")) {
      why = "the logarithm turns the rounding of small values into large errors";
    } else if (ir::is_op(node, "Sqrt") || ir::is_op(node, "Reciprocal")) {
      why = "the rounding of small values becomes a large error of the result";
    } else if (ir::is_op(node, "Exp")) {
      why = "the rounding becomes a relative error of the result";
    } else if (ir::is_op(node, "Pow")) {
      why = "the power multiplies the relative rounding error";
    } else if (ir::is_op(node, "Div")) {
      inputs = {1};
      why = "the rounding of a small divisor becomes a large error of the quotient";
    } else if (const ir::Node* mean = ir::is_op(node, "Sub") && node->input(1) ? node->input(1)->producer() : nullptr;
               ir::is_op(mean, "ReduceMean") && mean->input(0) == node->input(0)) {
      why = "minus its own mean (a normalization): the rounding is large against what is left";
    } else if ((ir::is_op(node, "Equal") || ir::is_op(node, "GreaterOrEqual") || ir::is_op(node, "LessOrEqual")) &&
               node->inputs().size() == 2 && node->input(0) && node->input(1) && !ir::constant_of(model, node->input(0)) &&
               !ir::constant_of(model, node->input(1))) {
      // Not against a constant (a threshold moves a few elements near it): two computed sides
      // are equal only where both round alike, and MaxPool's output, at a range of its own or
      // read beside an unquantized x, rounds otherwise than x (a peak mask lost every peak).
      inputs = {0, 1};
      why = "two tensors compared for equality: 8-bit rounding decides which elements are equal";
    }
    for (size_t input : why ? inputs : std::vector<size_t>{}) {
      const ir::Value* x = node->input(input);
      const std::string reason = std::string("read by ") + node->op_type + (node->name.empty() ? "" : " '" + node->name + "'") +
                                 (ir::is_op(node, "Div") ? " as divisor" : "") + ": " + why;
      // Back through the ops that only move or clamp values (a Conv's output unsqueezed before a
      // Pow, a MatMul's clipped before a Log):
      // their inputs carry the same values.
      while (x && !(x->type.is_tensor() && x->type.data_type() != ir::DataType::kFloat) && !ir::constant_of(model, x) &&
             reasons.emplace(x->name(), reason).second) {
        const ir::Node* p = x->producer();
        x = p && moves_values(*p) ? p->input(0) : nullptr;
      }
    }
  }
  return reasons;
}

}  // namespace

void ensure_opset(ir::Model& model, int64_t minimum, QuantizeReport& report) {
  const int64_t from = model.onnx_opset();
  if (from >= minimum) return;
  convert::convert_opset(model, minimum);
  report.opset_from = from;
  report.opset_to = minimum;
}


/// Calibration: every float value of the main graph, observed as it is produced. For the first
/// error_samples samples the fp32 references the errors are measured against are recorded in
/// the same run (on the CPU: the quantized model runs there too; a calibration on another device
/// leaves them to a CPU run afterwards). Counts the samples in `report`.
void calibrate(ir::Model& model, const QuantizeOptions& options, const SampleSource& samples, Collector& collector,
               References& references, QuantizeReport& report) {
  // A Conv output whose one reader is a Relu needs no range of its own: quantizing the Conv
  // folds the Relu into its output's range (quantize_node, asymmetric activations), which is
  // the Relu output's. Unwatched, the runner fuses the pair as in an inference (the Relu a pass
  // over the tensor less, and one less tensor to reduce to statistics).
  std::set<const ir::Value*> unwatched;
  if (!options.symmetric_activations)
    for (const auto& node : model.graph->nodes()) {
      const ir::Value* y = ir::is_op(node.get(), "Conv") ? node->output(0) : nullptr;
      if (y && !y->is_graph_output() && ir::is_op(ir::single_consumer(y), "Relu")) unwatched.insert(y);
    }
  runner::SessionOptions session_options;
  session_options.device = options.calibration.device;
  runner::Session session(model, session_options);
  const bool on_cpu = options.calibration.device.kind == runner::DeviceSpec::Kind::kCpu;
  bool recording = false;
  session.set_observer(
      [&](const ir::Value& v, const runner::Value& produced) {
        if (!produced.is_tensor() || produced.tensor.dtype() != ir::DataType::kFloat) return;
        collector.observe(v.name(), produced.tensor);
        if (recording) references.add(v.name(), produced.tensor);
      },
      /*subgraphs=*/true, [&](const ir::Value& v) { return !unwatched.count(&v); });
  Feeds feeds;
  ir::report_progress(options.progress, "calibration", 0, options.sample_count);
  for (size_t s = 0; samples(s, feeds); ++s, feeds.clear()) {
    recording = on_cpu && static_cast<int>(s) < options.error_samples && references.begin();
    for (const auto& [name, value] : feeds) {
      if (!value.is_tensor() || value.tensor.dtype() != ir::DataType::kFloat) continue;
      collector.observe(name, value.tensor);
      if (recording) references.add(name, value.tensor);
    }
    auto outputs = session.run(feeds);
    ++report.samples;
    if (recording) references.end(outputs);
    ir::report_progress(options.progress, "calibration", report.samples, options.sample_count,
                        options.sample_count > 0 ? "" : std::to_string(report.samples) + " samples");
  }
}

/// The chosen calibrator's ranges and the extremes (minmax) it falls back to where it hurts, by
/// tensor name; constant operands get their exact range in both.
std::pair<std::map<std::string, Range>, std::map<std::string, Range>> calibrated_ranges(ir::Model& model,
                                                                                      const Collector& collector,
                                                                                      const QuantizeOptions& options,
                                                                                      QuantizeReport& report) {
  // Graph inputs keep their extremes whatever the method: clipping what the model is given
  // (an entropy range took a network input from [0, 11.8] to [0, 3.95], cosine 0.61) is never
  // what a calibrator is for.
  std::map<std::string, Range> ranges, extremes;
  CalibrationOptions minmax = options.calibration;
  minmax.method = CalibrationMethod::kMinMax;
  for (const auto& [name, stats] : collector.stats()) {
    report.nan_values += stats.nan_count();
    report.inf_values += stats.inf_count();
    const ir::Value* v = model.graph->find(name);
    if (stats.empty()) {
      // A model input that never held a finite value cannot be calibrated at all.
      if (v && v->is_graph_input())
        throw Error(ErrorKind::kInput, "input '" + name + "' holds only NaN/Inf values in every sample", Parameter{"sample_dirs", ""});
      continue;  // an intermediate tensor that is only NaN/Inf stays in float
    }
    extremes[name] = calibrated_range(stats, minmax);
    ranges[name] = v && v->is_graph_input() ? extremes[name] : calibrated_range(stats, options.calibration);
  }
  // Constant operands of Add/Mul/Concat get their exact range (not the weights and biases of
  // the ops that quantize them on their own: decoding them all touched every page of the model).
  std::set<const ir::Value*> operands;
  for (const auto& node : model.graph->nodes()) {
    const OpRule* rule = static_rule(*node);
    for (size_t i = 0; i < node->inputs().size(); ++i) {
      const int k = static_cast<int>(i);
      if (rule && (k == rule->weight_input || k == rule->bias_input)) continue;
      if (const ir::Value* in = node->input(i); in && in->is_initializer()) operands.insert(in);
    }
  }
  for (const auto& t : model.graph->initializers()) {
    const ir::Value* v = model.graph->find(t->name);
    if (!operands.count(v)) continue;
    const auto c = ir::float_constant(model, v);
    if (!c || c->type != ir::DataType::kFloat || c->values.empty()) continue;
    const auto [lo, hi] = std::minmax_element(c->values.begin(), c->values.end());
    ranges[t->name] = extremes[t->name] = Range{std::min(*lo, 0.0), std::max(*hi, 0.0)};
  }
  return {std::move(ranges), std::move(extremes)};
}

QuantizeReport quantize_static(ir::Model& model, const QuantizeOptions& options, const SampleSource& samples) {
  validate_selection(model, options);
  QuantizeReport report;
  // QuantizeLinear is opset 10; per-axis scales are opset 13.
  ensure_opset(model, options.per_channel ? 13 : 10, report);
  // The error measurement reads the samples whose references calibration recorded again.
  Collector collector(options.calibration.moving_average, options.calibration.method != CalibrationMethod::kMinMax);
  References references(static_cast<size_t>(std::max(options.error_samples, 0)));
  calibrate(model, options, samples, collector, references, report);
  if (options.calibration.device.kind != runner::DeviceSpec::Kind::kCpu && report.samples)
    references = record_references(model, samples, static_cast<size_t>(std::min<int64_t>(options.error_samples, report.samples)),
                                   options.progress);
  if (!report.samples) throw_usage_error("no calibration samples");
  auto [ranges, extremes] = calibrated_ranges(model, collector, options, report);
  // Per-sample element counts of the calibrated tensors: the sizes the speed estimate weighs.
  std::map<std::string, double> sizes;
  for (const auto& [name, stats] : collector.stats())
    sizes[name] = static_cast<double>(stats.values() + stats.nan_count() + stats.inf_count()) / static_cast<double>(report.samples);
  const ElementCount elements = [&sizes](const ir::Value* v) { return element_count(sizes, v); };
  // Quantize a copy of the fp32 model and measure it (auto-exclude: several times).
  QuantizeOptions base = options;
  for (auto& [tensor, why] : float_by_readers(model)) {
    base.exclude_tensors.push_back(tensor);
    base.float_reasons.emplace(tensor, std::move(why));
  }
  const std::map<std::string, Range>* chosen = &ranges;
  auto attempt = [&](const std::vector<std::string>& excluded, const ir::Progress& progress) {
    QuantizeOptions o = base;
    o.exclude_tensors.insert(o.exclude_tensors.end(), excluded.begin(), excluded.end());
    auto work = std::make_unique<ir::Model>(copy_model(model));
    QuantizeReport r = report;
    r.nodes.clear();
    r.quantized_nodes = r.float_weight_bytes = r.quantized_weight_bytes = 0;
    ir::for_each_graph(*work, [&](ir::Graph& g) { StaticQuantizer(*work, g, o, *chosen, elements, r).run(); });
    passes::OptimizeOptions cleanup;
    cleanup.only = {"sort_topologically", "eliminate_dead_code"};
    passes::optimize(*work, cleanup);
    if (references.samples())
      measure_errors(model, *work, references, samples, r, o.accuracy_outputs, progress);
    return std::make_pair(std::move(work), std::move(r));
  };
  // Entropy and percentile ranges clip outliers; where that costs the outputs more than the
  // extremes' coarser steps do, the extremes win (said in the report).
  if (options.calibration.method != CalibrationMethod::kMinMax && references.samples()) {
    const double clipped = attempt({}, options.progress).second.output_score();
    chosen = &extremes;
    const double full = attempt({}, options.progress).second.output_score();
    report.calibration_scores = {clipped, full};
    if (clipped >= full) chosen = &ranges;
    report.calibration_fallback = chosen == &extremes;
  }
  auto best = quantize_with_exclusions(options, attempt);
  best.second.calibration_scores = report.calibration_scores;
  best.second.calibration_fallback = report.calibration_fallback;
  if (!best.first) return best.second;  // nothing reached the target: the model stays as it was
  if (options.format == Format::kQOperator) qdq_to_qoperator(*best.first);
  model = std::move(*best.first);
  return best.second;
}

}  // namespace onnxtool::quant
