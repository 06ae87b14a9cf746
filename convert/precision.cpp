// Precision conversion of whole models: float32 -> float16 (sensitive ops kept in float32 behind
// Casts) and float16/bfloat16 -> float32 (removing the Casts that become redundant).
//
// to_fp16 works in two steps so that every decision is taken on the unmodified model:
//  1. decide: each float32 value gets a target precision, and each node input slot reading a
//     float32 value a wanted precision. A node's slot is float16 when the node is not blocked
//     (a listed op, the first stage of a decomposed layer normalization, a node of a runtime
//     departure pattern, convert/runtime_departures.h, or one the caller's measurements keep)
//     and the schema's type constraint of that slot admits
//     tensor(float16); constants (initializers, Constant nodes) follow their readers; graph
//     inputs and outputs follow the graph's boundary precision (keep_io_types, or the owning
//     node being blocked).
//  2. apply: rewrite tensors, types and dtype attributes, then insert one Cast wherever a
//     slot's wanted precision differs from its value's target, and sort every graph.
#include "convert/precision.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "convert/runtime_departures.h"
#include "ir/diagnostic.h"
#include "ir/error.h"
#include "ir/graph_util.h"
#include "ir/op_schema.h"
#include "ir/shape_inference.h"
#include "passes/pass.h"
#include "passes/rewrite.h"
#include "runner/tensor.h"

namespace onnxtool::convert {
namespace {

using ir::DataType;

// ---------------------------------------------------------------- element and tensor conversion

/// Largest finite float16.
constexpr float kHalfMax = 65504.0f;

/// Smallest positive float16 (a subnormal, 2^-24).
constexpr float kHalfMinPositive = 5.9604645e-8f;

/// float16 bits of `x`, rounded to nearest even. Finite values beyond the float16 range are
/// clamped to +-65504 instead of becoming infinities (a large weight stays large, not inf), and
/// nonzero values below its smallest magnitude to +-2^-24 instead of zero: an epsilon of 1e-12
/// that became 0 would turn the x / sqrt(var + eps) of a normalization into 0 / 0.
uint16_t to_half_saturated(float x) {
  if (std::isfinite(x)) x = std::clamp(x, -kHalfMax, kHalfMax);
  if (x != 0 && std::fabs(x) < kHalfMinPositive) x = std::copysign(kHalfMinPositive, x);
  return runner::float_to_half(x);
}

float load_float(DataType type, const uint8_t* p) {
  if (type == DataType::kFloat) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return type == DataType::kFloat16 ? runner::half_to_float(h) : runner::bfloat16_to_float(h);
}

void store_float(DataType type, float f, uint8_t* p) {
  if (type == DataType::kFloat) {
    std::memcpy(p, &f, 4);
    return;
  }
  const uint16_t h = to_half_saturated(f);
  std::memcpy(p, &h, 2);
}

/// Rewrites the data of a float32/float16/bfloat16 tensor as `to` (float32 or float16), stored
/// as raw_data. Typed fields are cleared and external data is inlined: the converted bytes
/// exist only in memory, so the tensor can no longer point at the original file.
void retype_tensor(ir::Tensor& t, DataType to) {
  const DataType from = t.type();
  const ir::Bytes src = t.raw_bytes();
  const size_t in_size = static_cast<size_t>(ir::data_type_bits(from) / 8);
  const size_t out_size = static_cast<size_t>(ir::data_type_bits(to) / 8);
  const size_t count = src.size() / in_size;
  std::vector<uint8_t> out(count * out_size);
  for (size_t i = 0; i < count; ++i)
    store_float(to, load_float(from, src.data() + i * in_size), out.data() + i * out_size);
  t.float_data.clear();
  t.int32_data.clear();
  t.external_data.clear();
  t.data_location = 0;
  t.external_bytes.reset();
  t.raw_data = ir::Bytes::owned(std::move(out));
  t.data_type = static_cast<int32_t>(to);
}

bool is_float_tensor(const ir::TypeInfo& type, DataType elem) {
  return type.is_tensor() && type.data_type() == elem;
}

bool is_half_type(int32_t elem) {
  return elem == static_cast<int32_t>(DataType::kFloat16) || elem == static_cast<int32_t>(DataType::kBFloat16);
}

/// True when a sequence, optional or map type holds float32 somewhere inside.
bool nests_float32(const ir::TypeInfo& type) {
  if (type.is_tensor() || type.kind == ir::TypeInfo::Kind::kSparseTensor) return false;
  const ir::TypeInfo* inner = type.elem.get();
  while (inner) {
    if (inner->kind != ir::TypeInfo::Kind::kMap && inner->elem_type == static_cast<int32_t>(DataType::kFloat))
      return true;
    inner = inner->elem.get();
  }
  return false;
}

/// Rewrites float16/bfloat16 element types to float32 anywhere in a type (tensors inside
/// sequences and optionals included). Returns true when something changed.
bool widen_type(ir::TypeInfo& type) {
  bool changed = false;
  for (ir::TypeInfo* t = &type; t; t = t->elem.get()) {
    if (t->kind != ir::TypeInfo::Kind::kMap && is_half_type(t->elem_type)) {
      t->elem_type = static_cast<int32_t>(DataType::kFloat);
      changed = true;
    }
  }
  return changed;
}

// ---------------------------------------------------------------- shared graph helpers

/// Every graph of the main graph's tree (functions are left alone: calls to them are not
/// converted, so their bodies must keep their types).
std::vector<ir::Graph*> graph_tree(ir::Model& model) {
  std::vector<ir::Graph*> graphs;
  ir::for_each_graph(*model.graph, [&](ir::Graph& g) { graphs.push_back(&g); });
  return graphs;
}

/// Sorts every graph, then runs type inference so that every value's Value::type is known
/// (inference walks nodes in order, so an unsorted model would leave types unknown).
/// Inference diagnostics do not matter here: the caller only needs the types.
std::vector<ir::Graph*> sort_and_infer(ir::Model& model) {
  if (!model.graph) throw_usage_error("nothing to convert: the model has no graph");
  std::vector<ir::Graph*> graphs = graph_tree(model);
  for (ir::Graph* g : graphs) g->topological_sort();
  ir::DiagnosticSink ignored;
  ir::infer_shapes(model, ignored);
  return graphs;
}

/// Values a graph defines: inputs, initializers and node outputs (each once).
std::vector<ir::Value*> defined_values(const ir::Graph& g) {
  std::vector<ir::Value*> out;
  std::unordered_set<const ir::Value*> seen;
  auto add = [&](ir::Value* v) {
    if (v && seen.insert(v).second) out.push_back(v);
  };
  for (const auto& vi : g.inputs) add(vi.value);
  for (const auto& t : g.initializers()) add(g.find(t->name));
  for (const auto& n : g.nodes())
    for (ir::Value* v : n->outputs()) add(v);
  return out;
}

std::string graph_label(const ir::Model& model) {
  return model.graph->name.empty() ? std::string("the main graph") : "graph '" + model.graph->name + "'";
}

/// Ops whose `dtype` attribute selects their float output type; `float_by_default`: absent
/// means float32 (for the others absent means "the input's type", which follows the input).
struct DtypeOp {
  const char* op;
  bool float_by_default;
};
constexpr DtypeOp kDtypeOps[] = {{"RandomNormal", true},      {"RandomUniform", true}, {"RandomNormalLike", false},
                                 {"RandomUniformLike", false}, {"EyeLike", false},      {"Bernoulli", false}};

const DtypeOp* dtype_op(const ir::Node& n) {
  for (const DtypeOp& d : kDtypeOps)
    if (ir::is_op(&n, d.op)) return &d;
  return nullptr;
}

/// Ops kept in float32 whatever their schema allows.
constexpr const char* kBuiltinBlockedOps[] = {
    "Range",              // the element count is computed from start/limit/delta: float16 rounding changes it
    "TopK",               // float16 rounding creates ties that change which indices are selected
    "NonMaxSuppression",  // IoU compared against thresholds; boxes are float32 by schema anyway
    "RoiAlign",           // pixel coordinates above 2048 lose their fraction in float16
    "CumSum",             // long running sums overflow or lose precision in float16
};

// ---------------------------------------------------------------- float32 -> float16

enum class Precision { kHalf, kFull };

DataType data_type_of(Precision p) { return p == Precision::kHalf ? DataType::kFloat16 : DataType::kFloat; }

class HalfConverter {
 public:
  HalfConverter(ir::Model& model, const Fp16Options& options)
      : model_(model), names_(model), keep_io_types_(options.keep_io_types), allow_runtime_bugs_(options.allow_runtime_bugs),
        keep_values_(options.keep_float32_values), accuracy_values_(options.keep_float32_for_accuracy) {
    blocked_ops_.insert(std::begin(kBuiltinBlockedOps), std::end(kBuiltinBlockedOps));
    blocked_ops_.insert(options.block_ops.begin(), options.block_ops.end());
  }

  PrecisionReport run() {
    graphs_ = sort_and_infer(model_);
    decide();
    if (target_.empty()) throw_usage_error("nothing to convert: " + graph_label(model_) + " has no float32 tensors");
    rewrite_values();
    rewrite_attributes();
    insert_input_casts();
    cast_graph_outputs();
    for (ir::Graph* g : graphs_) g->topological_sort();
    return report_;
  }

 private:
  // ---- decide

  void decide() {
    boundary_[model_.graph.get()] = keep_io_types_ ? Precision::kFull : Precision::kHalf;
    // LayerNormalization computes its mean and variance in float32 for float16 data (stash_type);
    // written out, they would be float16's: the variance of rows near 0 falls among float16's
    // subnormals, and an epsilon of 1e-12 must become 2^-24, 60000 times larger (differential
    // seed 2761: a row of deviations near 1e-3 normalized 4% short). Kept float32 as the fused op
    // computes them, the epsilon with them; the scale and shift after the Div stay float16.
    for (ir::Graph* g : graphs_)
      for (const auto& n : g->nodes())
        if (const auto norm = passes::match_decomposed_norm(model_, n.get()))
          for (const ir::Node* stage : norm->nodes()) normalization_.insert(stage);
    const std::unordered_map<const ir::Node*, size_t> departures = runtime_departure_rows();
    for (ir::Graph* g : graphs_) {
      for (const auto& n : g->nodes()) {
        const ir::Node* node = n.get();
        bool blocked = is_blocked(*node);
        if (auto row = departures.find(node); !blocked && row != departures.end()) {
          blocked = true;
          report_runtime_kept(row->second, *node);
        } else if (!blocked && touches(*node, keep_values_)) {
          blocked = true;
          report_.range_blocked.push_back(node->describe());
        } else if (!blocked && touches(*node, accuracy_values_)) {
          blocked = true;
          report_.accuracy_blocked.push_back(node->describe());
        }
        if (blocked) blocked_.insert(node);
        // A blocked control-flow node runs its bodies' boundary in float32 too, so that its
        // own inputs and outputs (float32) bind to the same types inside.
        for (ir::Graph* sub : node->subgraphs()) boundary_[sub] = blocked ? Precision::kFull : Precision::kHalf;
      }
    }
    block_integer_arithmetic();
    // graphs_ lists parents before their subgraphs, so the outer-scope values a subgraph node
    // reads have their target when the node is counted.
    for (ir::Graph* g : graphs_) {
      for (ir::Value* v : defined_values(*g))
        if (is_float_tensor(v->type, DataType::kFloat)) target_[v] = value_precision(*v);
      for (const auto& n : g->nodes()) {
        if (!blocked_.count(n.get())) continue;
        const auto touches = [&](ir::Value* v) { return v && target_.count(v); };
        if (std::any_of(n->inputs().begin(), n->inputs().end(), touches) ||
            std::any_of(n->outputs().begin(), n->outputs().end(), touches))
          ++report_.blocked_nodes;
      }
    }
  }

  /// The nodes runtime_departures()' patterns match, each with its row.
  std::unordered_map<const ir::Node*, size_t> runtime_departure_rows() const {
    std::unordered_map<const ir::Node*, size_t> rows;
    if (allow_runtime_bugs_) return rows;
    const auto& table = runtime_departures();
    for (ir::Graph* g : graphs_)
      for (size_t r = 0; r < table.size(); ++r)
        for (const ir::Node* n : table[r].match(*g)) rows.emplace(n, r);
    return rows;
  }

  void report_runtime_kept(size_t row, const ir::Node& node) {
    const RuntimeDeparture& d = runtime_departures()[row];
    auto it = std::find_if(report_.runtime_blocked.begin(), report_.runtime_blocked.end(),
                           [&](const RuntimeKept& k) { return k.pattern == d.pattern; });
    if (it == report_.runtime_blocked.end()) it = report_.runtime_blocked.insert(report_.runtime_blocked.end(), {d.pattern, d.runtime, d.doc, {}});
    it->nodes.push_back(node.describe());
  }

  static bool is_integer_cast(const ir::Node& n) {
    const ir::Value* in = n.input(0);
    return ir::is_op(&n, "Cast") && in && in->type.is_tensor() && in->type.elem_type != 0 &&
           !ir::is_float_type(in->type.data_type());
  }

  bool is_constant(const ir::Value* v) const {
    return ir::constant_of(model_, v) || (v->producer() && ir::is_op(v->producer(), "Constant"));
  }

  /// A scalar or 1-D float32 value: the shape of the values shape computations work on.
  static bool is_small_float(const ir::Value* v) {
    return v && is_float_tensor(v->type, DataType::kFloat) && v->type.shape && v->type.shape->rank() <= 1;
  }

  /// Float arithmetic on integers in shape computations (Shape -> Cast -> Mul -> Floor -> Cast)
  /// stays float32: float16 holds integers exactly only up to 2048, so a computed size of 2050
  /// would come out as 2048 or 2052. A node is such arithmetic when its float32 outputs (if
  /// any: a Cast back to int64 has none) are scalars or 1-D, and every float32 input is a
  /// constant or a scalar/1-D value computed from integers (a Cast from a non-float type, or
  /// earlier such arithmetic), at least one being the latter. The rank limit keeps real data
  /// out: an image Cast from uint8 is not a shape.
  void block_integer_arithmetic() {
    for (ir::Graph* g : graphs_) {
      for (const auto& n : g->nodes()) {
        if (blocked_.count(n.get()) || !n->subgraphs().empty()) continue;
        const auto float_out = [](const ir::Value* v) { return v && is_float_tensor(v->type, DataType::kFloat); };
        const auto& outs = n->outputs();
        const auto small_or_other = [&](const ir::Value* v) { return !float_out(v) || is_small_float(v); };
        if (!std::all_of(outs.begin(), outs.end(), small_or_other)) continue;
        if (!is_integer_cast(*n)) {
          bool derived = false;
          for (const ir::Value* in : n->inputs()) {
            if (!in || !is_float_tensor(in->type, DataType::kFloat)) continue;
            if (!from_integers_.count(in) && !is_constant(in)) {
              derived = false;
              break;
            }
            derived |= from_integers_.count(in) > 0;
          }
          if (!derived) continue;
          blocked_.insert(n.get());
        }
        for (const ir::Value* out : outs)
          if (float_out(out)) from_integers_.insert(out);
      }
    }
  }

  const ir::OpSchema* schema_of(const ir::Node& n) const {
    const auto version = model_.opset_version(n.domain);
    if (!version) return nullptr;
    return ir::SchemaRegistry::instance().find(n.domain, n.op_type, *version);
  }

  /// Reads or writes a value listed in `values`.
  static bool touches(const ir::Node& n, const std::set<std::string>& values) {
    if (values.empty()) return false;
    const auto listed = [&](const ir::Value* v) { return v && values.count(v->name()); };
    return std::any_of(n.inputs().begin(), n.inputs().end(), listed) ||
           std::any_of(n.outputs().begin(), n.outputs().end(), listed);
  }

  /// Whole node kept in float32: a listed op, a node of a decomposed layer normalization's first
  /// stage, an op without a known schema (custom domains, model functions: nothing says they
  /// accept float16), or one that carries float32 inside sequences or optionals (those types are
  /// not rewritten, so the node must stay float32).
  bool is_blocked(const ir::Node& n) const {
    if (blocked_ops_.count(n.qualified_op()) || normalization_.count(&n)) return true;
    if (!schema_of(n)) return true;
    const auto nested = [](const ir::Value* v) { return v && nests_float32(v->type); };
    return std::any_of(n.inputs().begin(), n.inputs().end(), nested) ||
           std::any_of(n.outputs().begin(), n.outputs().end(), nested);
  }

  /// The precision a node computes a float32 input or output slot in.
  Precision slot_precision(const ir::Node& n, bool output, size_t index) const {
    if (blocked_.count(&n)) return Precision::kFull;
    const ir::OpSchema* schema = schema_of(n);
    const auto& params = output ? schema->outputs : schema->inputs;
    const ir::FormalParam* param = nullptr;
    if (index < params.size()) param = &params[index];
    else if (!params.empty() && params.back().option == ir::ParamOption::kVariadic) param = &params.back();
    if (!param) return Precision::kFull;
    if (const ir::TypeConstraint* c = schema->constraint(param->type)) {
      const bool half_ok = std::find(c->allowed.begin(), c->allowed.end(), "tensor(float16)") != c->allowed.end();
      return half_ok ? Precision::kHalf : Precision::kFull;
    }
    // A fixed type such as Resize's scales "tensor(float)".
    return param->type == "tensor(float16)" ? Precision::kHalf : Precision::kFull;
  }

  static bool is_convertible_constant(const ir::Node& n) {
    if (!ir::is_op(&n, "Constant")) return false;
    if (const ir::Attribute* a = n.attr("value"); a && a->t) return a->t->type() == DataType::kFloat;
    return n.attr("value_float") || n.attr("value_floats");
  }

  /// Stored constants go float16 when a reader computes in float16 (or nobody reads them), and
  /// stay float32 when every reader keeps float32. A constant that is also a graph output must
  /// match the graph's boundary, as its name cannot move to a Cast.
  Precision constant_precision(const ir::Value& v) const {
    if (v.is_graph_output()) return boundary_.at(v.graph());
    if (v.uses().empty()) return Precision::kHalf;
    for (const ir::Use& u : v.uses())
      if (slot_precision(*u.node, false, u.index) == Precision::kHalf) return Precision::kHalf;
    return Precision::kFull;
  }

  Precision value_precision(const ir::Value& v) const {
    if (v.is_graph_input()) return boundary_.at(v.graph());
    if (v.is_initializer()) return constant_precision(v);
    // No producer: a value of an invalid model (read but never defined, or output by a second
    // node after its first producer went). Nothing proves float16 is safe for it.
    if (!v.producer()) return Precision::kFull;
    const ir::Node& producer = *v.producer();
    if (ir::is_op(&producer, "Constant") && !blocked_.count(&producer))
      return is_convertible_constant(producer) ? constant_precision(v) : Precision::kFull;
    if (is_integer_cast(producer) && !blocked_.count(&producer)) return integer_cast_precision(v);
    return slot_precision(producer, true, v.producer_output());
  }

  /// An integer converted to float is exact in float32: it stays float32 when any reader
  /// computes in float32 (integer arithmetic), and float16 readers get a Cast, which rounds
  /// exactly as a direct Cast to float16 would.
  Precision integer_cast_precision(const ir::Value& v) const {
    if (v.is_graph_output()) return boundary_.at(v.graph());
    for (const ir::Use& u : v.uses())
      if (slot_precision(*u.node, false, u.index) == Precision::kFull) return Precision::kFull;
    return Precision::kHalf;
  }

  // ---- apply

  /// Value types, declared input and value_info types, initializers and Constant values.
  void rewrite_values() {
    for (auto& [v, p] : target_) {
      if (p != Precision::kHalf) continue;
      v->type.elem_type = static_cast<int32_t>(DataType::kFloat16);
      if (v->is_initializer()) {
        retype_tensor(*v->initializer(), DataType::kFloat16);
        ++report_.converted_initializers;
      } else if (v->producer() && ir::is_op(v->producer(), "Constant")) {
        constant_to_half(*v->producer());
        ++report_.converted_initializers;
      }
    }
    for (ir::Graph* g : graphs_) {
      for (auto* infos : {&g->inputs, &g->value_info})
        for (ir::ValueInfo& vi : *infos) {
          auto it = target_.find(vi.value);
          if (it == target_.end() || it->second != Precision::kHalf) continue;
          if (vi.type && is_float_tensor(*vi.type, DataType::kFloat)) {
            vi.type->elem_type = static_cast<int32_t>(DataType::kFloat16);
            ++report_.converted_values;
          }
        }
    }
  }

  static ir::Tensor half_tensor(std::vector<int64_t> dims, const std::vector<float>& values) {
    std::vector<uint16_t> bits(values.size());
    std::transform(values.begin(), values.end(), bits.begin(), to_half_saturated);
    return ir::make_tensor("", DataType::kFloat16, std::move(dims), bits.data(), bits.size() * 2);
  }

  static void constant_to_half(ir::Node& n) {
    if (ir::Attribute* a = n.attr("value"); a && a->t) {
      retype_tensor(*a->t, DataType::kFloat16);
    } else if (const ir::Attribute* f = n.attr("value_float")) {
      ir::Tensor t = half_tensor({}, {f->f});
      n.remove_attr("value_float");
      n.set_attr(ir::Attribute::make_tensor("value", std::move(t)));
    } else {
      const std::vector<float> values = n.attr("value_floats")->floats;
      ir::Tensor t = half_tensor({static_cast<int64_t>(values.size())}, values);
      n.remove_attr("value_floats");
      n.set_attr(ir::Attribute::make_tensor("value", std::move(t)));
    }
  }

  /// Attributes that choose a float32 output type, on nodes whose output becomes float16.
  void rewrite_attributes() {
    constexpr auto kFloat = static_cast<int64_t>(DataType::kFloat);
    constexpr auto kHalf = static_cast<int64_t>(DataType::kFloat16);
    for (ir::Graph* g : graphs_) {
      for (const auto& n : g->nodes()) {
        ir::Value* out = n->output(0);
        auto it = target_.find(out);
        if (blocked_.count(n.get()) || it == target_.end() || it->second != Precision::kHalf) continue;
        if (ir::is_op(n.get(), "Cast")) {
          if (n->attr_int("to", 0) == kFloat) n->set_attr(ir::Attribute::make_int("to", kHalf));
        } else if (ir::is_op(n.get(), "ConstantOfShape")) {
          // The default value is a float32 zero; a float16 output needs an explicit one.
          if (ir::Attribute* a = n->attr("value"); a && a->t) retype_tensor(*a->t, DataType::kFloat16);
          else n->set_attr(ir::Attribute::make_tensor("value", half_tensor({1}, {0.0f})));
        } else if (const DtypeOp* d = dtype_op(*n)) {
          const ir::Attribute* a = n->attr("dtype");
          if ((a && a->i == kFloat) || (!a && d->float_by_default))
            n->set_attr(ir::Attribute::make_int("dtype", kHalf));
        }
      }
    }
  }

  /// The value `v` cast to `p` for readers in graph `g` (one Cast per value, precision and graph).
  ir::Value* cast_of(ir::Graph& g, ir::Value* v, Precision p, const ir::Node* before) {
    const auto key = std::make_tuple(&g, v, p);
    if (auto it = casts_.find(key); it != casts_.end()) return it->second;
    const std::string base = v->name() + (p == Precision::kHalf ? "_fp16" : "_fp32");
    ir::Value* out = add_cast(g, v, p, names_.fresh(base), base, before);
    casts_[key] = out;
    return out;
  }

  ir::Value* add_cast(ir::Graph& g, ir::Value* v, Precision p, const std::string& output_name,
                      const std::string& base, const ir::Node* before) {
    ir::Node* cast = g.add_node("Cast", {v}, {output_name}, "", names_.fresh(base + "_cast"), before);
    cast->set_attr(ir::Attribute::make_int("to", static_cast<int64_t>(data_type_of(p))));
    ir::Value* out = cast->output(0);
    out->type = v->type;
    out->type.elem_type = static_cast<int32_t>(data_type_of(p));
    ++report_.casts_added;
    return out;
  }

  void insert_input_casts() {
    for (ir::Graph* g : graphs_) {
      std::vector<ir::Node*> nodes;
      for (const auto& n : g->nodes()) nodes.push_back(n.get());
      for (ir::Node* n : nodes) {
        for (size_t i = 0; i < n->inputs().size(); ++i) {
          ir::Value* v = n->input(i);
          auto it = target_.find(v);
          if (it == target_.end()) continue;
          const Precision want = slot_precision(*n, false, i);
          if (want != it->second) n->set_input(i, cast_of(*g, v, want, n));
        }
      }
    }
  }

  /// Makes every graph output match its graph's boundary precision. A mismatched output keeps
  /// its name: the producer's value is renamed and the Cast produces the original name.
  void cast_graph_outputs() {
    for (ir::Graph* g : graphs_) {
      const Precision boundary = boundary_.at(g);
      std::unordered_map<ir::Value*, ir::Value*> cast_outputs;
      for (size_t i = 0; i < g->outputs.size(); ++i) {
        ir::ValueInfo& info = g->outputs[i];
        ir::Value* v = info.value;
        auto it = target_.find(v);
        if (it == target_.end()) continue;
        if (boundary == Precision::kHalf && info.type && is_float_tensor(*info.type, DataType::kFloat)) {
          info.type->elem_type = static_cast<int32_t>(DataType::kFloat16);
          ++report_.converted_values;
        }
        if (it->second == boundary) continue;
        ir::Value*& cast = cast_outputs[v];
        if (!cast) {
          const std::string name = v->name();
          const std::string base = name + (boundary == Precision::kHalf ? "_fp16" : "_fp32");
          if (v->producer() && v->graph() == g && !v->is_graph_input()) {
            g->rename(v, names_.fresh(name + (it->second == Precision::kHalf ? "_fp16" : "_fp32")));
            cast = add_cast(*g, v, boundary, name, base, nullptr);
          } else {
            // Only in subgraphs (outputs bind by position): an outer-scope value.
            cast = add_cast(*g, v, boundary, names_.fresh(base), base, nullptr);
          }
        }
        g->set_output_value(i, cast);
      }
    }
  }

  ir::Model& model_;
  ir::NameGenerator names_;
  bool keep_io_types_ = false;
  bool allow_runtime_bugs_ = false;
  std::unordered_set<std::string> blocked_ops_;
  const std::set<std::string>& keep_values_;
  const std::set<std::string>& accuracy_values_;
  std::vector<ir::Graph*> graphs_;
  std::unordered_map<const ir::Graph*, Precision> boundary_;
  std::unordered_set<const ir::Node*> blocked_;
  std::unordered_set<const ir::Node*> normalization_;  ///< first stages of decomposed layer normalizations
  std::unordered_set<const ir::Value*> from_integers_;  ///< float32 results of integer arithmetic
  std::unordered_map<ir::Value*, Precision> target_;  ///< every float32 tensor value
  std::map<std::tuple<ir::Graph*, ir::Value*, Precision>, ir::Value*> casts_;
  PrecisionReport report_;
};

// ---------------------------------------------------------------- float16/bfloat16 -> float32

/// Widens a float16/bfloat16 tensor; returns true when it was one.
bool widen_tensor(ir::Tensor& t) {
  if (!is_half_type(t.data_type)) return false;
  retype_tensor(t, DataType::kFloat);
  return true;
}

/// Cast `to` and `dtype` attributes naming float16/bfloat16 become float32.
bool widen_dtype_attributes(ir::Node& n) {
  const char* attr = ir::is_op(&n, "Cast") ? "to" : dtype_op(n) ? "dtype" : nullptr;
  if (!attr) return false;
  const ir::Attribute* a = n.attr(attr);
  if (!a || !is_half_type(static_cast<int32_t>(a->i))) return false;
  n.set_attr(ir::Attribute::make_int(attr, static_cast<int64_t>(DataType::kFloat)));
  return true;
}

/// Removes Casts to float32 whose input is float32 (after widening); a Cast whose output is a
/// graph output stays when its input cannot take the output's name (see passes::bypass_node).
int64_t remove_redundant_casts(ir::Graph& g) {
  int64_t removed = 0;
  std::vector<ir::Node*> casts;
  for (const auto& n : g.nodes())
    if (ir::is_op(n.get(), "Cast")) casts.push_back(n.get());
  for (ir::Node* n : casts) {
    ir::Value* in = n->input(0);
    const bool to_float = n->attr_int("to", 0) == static_cast<int64_t>(DataType::kFloat);
    if (!to_float || !in || !is_float_tensor(in->type, DataType::kFloat)) continue;
    removed += passes::bypass_node(g, n, in);
  }
  return removed;
}

}  // namespace

PrecisionReport to_fp16(ir::Model& model, const Fp16Options& options) {
  PrecisionReport report = HalfConverter(model, options).run();
  ir::fit_initializer_inputs(model, model.ir_version);  // the float16 weights
  return report;
}

PrecisionReport to_fp32(ir::Model& model) {
  const std::vector<ir::Graph*> graphs = sort_and_infer(model);
  PrecisionReport report;
  bool widened_any = false;
  for (ir::Graph* g : graphs) {
    for (ir::Value* v : defined_values(*g)) widened_any |= widen_type(v->type);
    for (auto* infos : {&g->inputs, &g->outputs, &g->value_info})
      for (ir::ValueInfo& vi : *infos)
        if (vi.type && widen_type(*vi.type)) ++report.converted_values;
    for (const auto& t : g->initializers()) report.converted_initializers += widen_tensor(*t);
    for (const auto& n : g->nodes()) {
      widened_any |= widen_dtype_attributes(*n);
      if (ir::is_op(n.get(), "Constant") || ir::is_op(n.get(), "ConstantOfShape"))
        if (ir::Attribute* a = n->attr("value"); a && a->t) report.converted_initializers += widen_tensor(*a->t);
    }
  }
  if (!widened_any && report.converted_values == 0 && report.converted_initializers == 0)
    throw_usage_error("nothing to convert: " + graph_label(model) + " has no float16 or bfloat16 tensors");
  for (ir::Graph* g : graphs) {
    report.casts_removed += remove_redundant_casts(*g);
    g->topological_sort();
  }
  ir::fit_initializer_inputs(model, model.ir_version);
  return report;
}

void preprocess_for_fp16(ir::Model& model) {
  passes::OptimizeOptions pre;
  pre.skip = {"fuse_conv_input_affine"};
  passes::optimize(model, pre);
}

}  // namespace onnxtool::convert
