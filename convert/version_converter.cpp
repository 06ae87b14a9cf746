// Opset version conversion of the default domain.
//
// Each node is moved from the model's opset to the target one version boundary at a time: the
// boundaries are the since_versions of the op's schemas. At each boundary crossed, an adapter
// rewrites what changed there (an attribute that became an input, a semantic change, a renamed
// op), and a generic rule handles the rest: going up, an attribute the new version no longer has
// must have been taken care of by an adapter; going down, an attribute or an input the older
// version does not have is dropped when it holds its default and is an error otherwise. The
// result is then checked: any error the checker finds in the converted model that the input did
// not have fails the conversion, naming the node.
#include "convert/version_converter.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <limits>

#include "checker/checker.h"
#include "ir/constant.h"
#include "ir/error.h"
#include "ir/op_schema.h"
#include "ir/shape_inference.h"
#include "passes/rewrite.h"

namespace onnxtool::convert {

namespace {

using ir::Attribute;
using ir::DataType;
using ir::Graph;
using ir::Node;
using ir::Value;

/// Raised by an adapter when the node has no equivalent at the target.
[[noreturn]] void no_equivalent(const Node& n, int64_t target, const std::string& why) {
  throw Error(ErrorKind::kFailed, n.describe() + ": no equivalent at opset " +
                                      std::to_string(target) + ": " + why);
}

/// Refuses an `axis` attribute outside [-rank, rank) when the rank is known (the model is
/// invalid: converting it would hide that or index past the input's dims).
void check_axis(const Node& n, int64_t axis, std::optional<size_t> rank) {
  if (!rank) return;
  const auto r = static_cast<int64_t>(*rank);
  if (axis < -r || axis >= r)
    throw Error(ErrorKind::kInput, n.describe() + ": axis " + std::to_string(axis) + " is out of range for an input of rank " +
                                       std::to_string(r));
}

/// The smallest IR version a model of this default-domain opset needs (from the ONNX releases:
/// opset 8 came with IR 3, 9 with IR 4, 10 with 5, 11 with 6, 12-14 with 7, 15-18 with 8, 19-20
/// with 9, 21-22 with 10, 23 and later with 11).
int64_t ir_version_for(int64_t opset) {
  if (opset <= 8) return 3;
  if (opset == 9) return 4;
  if (opset == 10) return 5;
  if (opset == 11) return 6;
  if (opset <= 14) return 7;
  if (opset <= 18) return 8;
  if (opset <= 20) return 9;
  if (opset <= 22) return 10;
  return 11;
}

class Converter {
 public:
  Converter(ir::Model& model, int64_t from, int64_t to, VersionReport& report)
      : model_(model), from_(from), to_(to), report_(report), registry_(ir::SchemaRegistry::instance()) {}

  void convert_graph(Graph& g) {
    std::vector<Node*> nodes;
    for (const auto& n : g.nodes()) nodes.push_back(n.get());
    for (Node* n : nodes) {
      for (Graph* sub : n->subgraphs()) convert_graph(*sub);
      if (ir::canonical_domain(n->domain).empty()) convert_node(g, n);
    }
  }

 private:
  // ---- constants and helpers

  /// The values of a constant input (a non-overridable initializer or a Constant node's output)
  /// in their own kind: integers as int64, floats as double, never one through the other.
  std::optional<ir::TypedValues> const_values(const Value* v) const {
    if (!v) return std::nullopt;
    if (const ir::Tensor* t = passes::constant_of(model_, v)) return ir::read_values(*t);
    const Node* p = v->producer();
    if (!p || !passes::is_op(p, "Constant") || p->attributes.size() != 1) return std::nullopt;
    const Attribute& a = p->attributes[0];
    ir::TypedValues out;
    if (a.name == "value" && a.t) return ir::read_values(*a.t);
    if (a.name == "value_int") out.ints = std::vector<int64_t>{a.i};
    if (a.name == "value_ints") out.ints = a.ints;
    if (a.name == "value_float") out.floats = std::vector<double>{a.f};
    if (a.name == "value_floats") out.floats = std::vector<double>(a.floats.begin(), a.floats.end());
    if (!out.ints && !out.floats) return std::nullopt;
    return out;
  }

  /// A constant input the older version needs as an ints attribute; fails naming the input
  /// otherwise.
  std::vector<int64_t> required_ints(const Node& n, size_t index, const std::string& what) const {
    auto v = const_values(n.input(index));
    if (!v) no_equivalent(n, to_, "its " + what + " input is not a constant");
    if (!v->ints) no_equivalent(n, to_, "its " + what + " input is not an integer tensor");
    return *v->ints;
  }
  /// A constant input the older version needs as a float attribute; fails naming the input
  /// otherwise (the older versions that take such attributes are defined for float types only).
  std::vector<double> required_floats(const Node& n, size_t index, const std::string& what) const {
    auto v = const_values(n.input(index));
    if (!v) no_equivalent(n, to_, "its " + what + " input is not a constant");
    if (!v->floats) no_equivalent(n, to_, "its " + what + " input is not a floating-point tensor");
    return *v->floats;
  }

  static std::optional<size_t> rank_of(const Value* v) {
    if (!v || !v->type.is_tensor() || !v->type.shape) return std::nullopt;
    return v->type.shape->dims.size();
  }
  static std::optional<int64_t> dim_of(const Value* v, size_t axis) {
    if (!v || !v->type.is_tensor() || !v->type.shape) return std::nullopt;
    const auto& dims = v->type.shape->dims;
    if (axis >= dims.size() || !dims[axis].is_static()) return std::nullopt;
    return dims[axis].value;
  }
  static DataType elem_type(const Value* v) {
    return v && v->type.is_tensor() ? v->type.data_type() : DataType::kUndefined;
  }

  Value* add_ints(Graph& g, const Node& n, const std::string& what, const std::vector<int64_t>& v, bool scalar = false) {
    ++report_.added_nodes;
    // Written directly: int64 values such as INT64_MAX do not survive a trip through double.
    const std::vector<int64_t> dims = scalar ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(v.size())};
    return g.add_initializer(ir::make_tensor(passes::unique_name(g, base(n) + "_" + what), DataType::kInt64, dims,
                                             v.data(), v.size() * sizeof(int64_t)));
  }
  Value* add_scalar(Graph& g, const Node& n, const std::string& what, DataType type, double v) {
    ++report_.added_nodes;
    return passes::add_constant(g, base(n) + "_" + what, type, {}, {v});
  }
  Value* add_floats(Graph& g, const Node& n, const std::string& what, const std::vector<double>& v) {
    ++report_.added_nodes;
    return passes::add_constant(g, base(n) + "_" + what, DataType::kFloat, {static_cast<int64_t>(v.size())}, v);
  }
  static std::string base(const Node& n) {
    if (!n.name.empty()) return n.name;
    return n.outputs().empty() || !n.output(0) ? n.op_type : n.output(0)->name();
  }

  /// Sets input `index` (appending empty inputs before it as needed).
  static void put_input(Node& n, size_t index, Value* v) {
    while (n.inputs().size() < index) n.append_input(nullptr);
    if (index < n.inputs().size())
      n.set_input(index, v);
    else
      n.append_input(v);
  }
  /// Drops trailing omitted inputs.
  static void trim_inputs(Node& n) {
    while (!n.inputs().empty() && !n.inputs().back()) n.remove_input(n.inputs().size() - 1);
  }

  /// Normalizes negative axes for opsets below 11, which do not accept them.
  int64_t non_negative_axis(const Node& n, int64_t axis, std::optional<size_t> rank) const {
    if (axis >= 0) return axis;
    if (!rank) no_equivalent(n, to_, "negative axis " + std::to_string(axis) + " needs opset 11 and the input rank is unknown");
    return axis + static_cast<int64_t>(*rank);
  }

  // ---- the walk over version boundaries

  void convert_node(Graph& g, Node* n) {
    const bool up = to_ > from_;
    int64_t cur = from_;
    if (!registry_.find("", n->op_type, from_)) return;  // unknown or invalid: the checker reports it
    const size_t before_inputs = n->inputs().size();
    const size_t before_attrs = n->attributes.size();
    const std::string before_op = n->op_type;
    bool changed = false;
    for (;;) {
      const auto* versions = registry_.versions("", n->op_type);
      if (!versions) break;
      std::optional<int> boundary;
      if (up) {
        for (const auto& s : *versions)
          if (s.since_version > cur && s.since_version <= to_) {
            boundary = s.since_version;
            break;
          }
      } else {
        for (auto it = versions->rbegin(); it != versions->rend(); ++it)
          if (it->since_version <= cur && it->since_version > to_) {
            boundary = it->since_version;
            break;
          }
      }
      if (!boundary) break;
      if (up)
        cross_up(g, *n, *boundary);
      else
        cross_down(g, *n, *boundary);
      changed = true;
      // An adapter may have renamed the op (Upsample -> Resize); the walk goes on from there.
      cur = up ? *boundary : *boundary - 1;
    }
    if (!registry_.find("", n->op_type, to_)) {
      const auto* versions = registry_.versions("", n->op_type);
      const int first = versions && !versions->empty() ? versions->front().since_version : 0;
      if (to_ < first) no_equivalent(*n, to_, "the operator was introduced in opset " + std::to_string(first));
      no_equivalent(*n, to_, "the operator is deprecated at that opset");
    }
    if (changed && (n->op_type != before_op || n->inputs().size() != before_inputs || n->attributes.size() != before_attrs))
      ++report_.rewritten_nodes;
  }

  /// Attributes of a schema by name.
  static bool has_attr(const ir::OpSchema* s, const std::string& name) { return s && s->attribute(name); }

  /// True when the attribute holds the spec's default of `spec`.
  static bool is_default(const Attribute& a, const ir::AttributeSpec& spec) {
    const std::string& d = spec.default_value;
    if (d.empty() || spec.required) return false;
    switch (a.attr_type()) {
      case ir::AttrType::kInt: return std::to_string(a.i) == d;
      case ir::AttrType::kFloat: {
        char* end = nullptr;
        const double v = std::strtod(d.c_str(), &end);
        return end && *end == '\0' && static_cast<float>(v) == a.f;
      }
      case ir::AttrType::kString: return a.s == d;
      default: return false;
    }
  }

  void cross_up(Graph& g, Node& n, int b) {
    const ir::OpSchema* old_schema = registry_.find("", n.op_type, b - 1);
    adapt_up(g, n, b);
    const ir::OpSchema* s = registry_.find("", n.op_type, b);
    if (!s) return;  // deprecated here: the caller reports it unless an adapter renamed the op
    for (const Attribute& a : n.attributes)
      if (!has_attr(s, a.name) && has_attr(old_schema, a.name))
        no_equivalent(n, b, "attribute '" + a.name + "' was removed in opset " + std::to_string(b));
  }

  void cross_down(Graph& g, Node& n, int b) {
    adapt_down(g, n, b);
    const ir::OpSchema* newer = registry_.find("", n.op_type, b);
    const ir::OpSchema* older = registry_.find("", n.op_type, b - 1);
    if (!older) return;  // introduced at b: the caller reports it unless an adapter renamed the op
    std::vector<std::string> drop;
    for (const Attribute& a : n.attributes) {
      if (has_attr(older, a.name)) continue;
      const ir::AttributeSpec* spec = newer ? newer->attribute(a.name) : nullptr;
      if (spec && is_default(a, *spec)) {
        drop.push_back(a.name);
        continue;
      }
      no_equivalent(n, b - 1, "attribute '" + a.name + "' was added in opset " + std::to_string(b) +
                                  " and is not at its default");
    }
    for (const auto& name : drop) n.remove_attr(name);
    trim_inputs(n);
    if (static_cast<int>(n.inputs().size()) > older->max_inputs)
      no_equivalent(n, b - 1, "input " + std::to_string(older->max_inputs) + " (" +
                                  (newer && static_cast<size_t>(older->max_inputs) < newer->inputs.size()
                                       ? newer->inputs[static_cast<size_t>(older->max_inputs)].name
                                       : std::string("extra")) +
                                  ") was added in opset " + std::to_string(b));
  }

  // ---- adapters: what changed at opset b, going up (b-1 -> b) and down (b -> b-1)

  static bool is_reduce(const std::string& op) {
    static const std::set<std::string> ops = {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
                                              "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare"};
    return ops.count(op) > 0;
  }
  static bool is_softmax(const std::string& op) { return op == "Softmax" || op == "LogSoftmax" || op == "Hardmax"; }

  /// Ops whose axis attributes may be negative only from opset 11 on.
  static bool has_axis_attr(const std::string& op) {
    static const std::set<std::string> ops = {"ArgMax", "ArgMin", "Concat", "Flatten", "Gather", "Softmax", "LogSoftmax",
                                              "Hardmax", "Split", "Squeeze", "Unsqueeze", "Compress", "OneHot"};
    return ops.count(op) > 0 || is_reduce(op);
  }

  void adapt_up(Graph& g, Node& n, int b) {
    const std::string& op = n.op_type;
    // Attribute -> input moves.
    if (op == "Upsample" && b == 9) {
      if (const Attribute* a = n.attr("scales")) {
        std::vector<double> s(a->floats.begin(), a->floats.end());
        n.remove_attr("scales");
        put_input(n, 1, add_floats(g, n, "scales", s));
      }
    } else if (op == "Upsample" && b == 10) {
      n.op_type = "Resize";  // Resize-10 is Upsample-9 under a new name
    } else if (op == "Resize" && b == 11) {
      // Resize-10 samples like Upsample: asymmetric coordinates, nearest rounds down.
      Value* scales = n.input(1);
      put_input(n, 1, add_floats(g, n, "roi", {}));
      put_input(n, 2, scales);
      n.set_attr(Attribute::make_string("coordinate_transformation_mode", "asymmetric"));
      if (n.attr_string("mode", "nearest") == "nearest") n.set_attr(Attribute::make_string("nearest_mode", "floor"));
    } else if (op == "Slice" && b == 10) {
      const auto starts = n.attr_ints("starts"), ends = n.attr_ints("ends");
      const Attribute* axes = n.attr("axes");
      put_input(n, 1, add_ints(g, n, "starts", starts));
      put_input(n, 2, add_ints(g, n, "ends", ends));
      if (axes) put_input(n, 3, add_ints(g, n, "axes", axes->ints));
      n.remove_attr("starts");
      n.remove_attr("ends");
      n.remove_attr("axes");
    } else if (op == "TopK" && b == 10) {
      put_input(n, 1, add_ints(g, n, "k", {n.attr_int("k", 0)}));
      n.remove_attr("k");
    } else if (op == "Clip" && b == 11) {
      const DataType t = elem_type(n.input(0)) == DataType::kUndefined ? DataType::kFloat : elem_type(n.input(0));
      const Attribute* lo = n.attr("min");
      const Attribute* hi = n.attr("max");
      if (lo) put_input(n, 1, add_scalar(g, n, "min", t, lo->f));
      if (hi) put_input(n, 2, add_scalar(g, n, "max", t, hi->f));
      n.remove_attr("min");
      n.remove_attr("max");
    } else if (op == "Pad" && b == 11) {
      put_input(n, 1, add_ints(g, n, "pads", n.attr_ints("pads")));
      if (const Attribute* v = n.attr("value"); v && v->f != 0.0f) {
        const DataType t = elem_type(n.input(0)) == DataType::kUndefined ? DataType::kFloat : elem_type(n.input(0));
        put_input(n, 2, add_scalar(g, n, "constant_value", t, v->f));
      }
      n.remove_attr("pads");
      n.remove_attr("value");
    } else if ((op == "ReduceSum" && b == 13) || (is_reduce(op) && op != "ReduceSum" && b == 18)) {
      if (const Attribute* a = n.attr("axes")) {
        put_input(n, 1, add_ints(g, n, "axes", a->ints));
        n.remove_attr("axes");
      }
    } else if ((op == "Squeeze" || op == "Unsqueeze") && b == 13) {
      if (const Attribute* a = n.attr("axes")) {
        put_input(n, 1, add_ints(g, n, "axes", a->ints));
        n.remove_attr("axes");
      }
    } else if (op == "Split" && b == 13) {
      if (const Attribute* a = n.attr("split")) {
        put_input(n, 1, add_ints(g, n, "split", a->ints));
        n.remove_attr("split");
      }
    } else if (op == "Split" && b == 18) {
      // Split-18 needs either the split input or num_outputs.
      if (!n.input(1)) n.set_attr(Attribute::make_int("num_outputs", static_cast<int64_t>(n.outputs().size())));
    } else if (op == "Dropout" && b == 10) {
      if (n.outputs().size() > 1 && n.output(1) && !n.output(1)->uses().empty())
        no_equivalent(n, b, "its mask output changes type from T to bool at opset 10 and is used");
    } else if (op == "Dropout" && b == 12) {
      // Inference: ratio does not matter; without training_mode Dropout-12 is the identity too.
      n.remove_attr("ratio");
    } else if (op == "BatchNormalization" && b == 9) {
      if (n.attr_int("spatial", 1) != 1) no_equivalent(n, b, "spatial=0 (per-activation statistics) was removed in opset 9");
      n.remove_attr("spatial");
    } else if (op == "BatchNormalization" && b == 14) {
      for (size_t i = 1; i < n.outputs().size(); ++i)
        if (n.output(i) && !n.output(i)->uses().empty())
          no_equivalent(n, b, "its training outputs (mean, var, saved_mean, saved_var) are used");
    } else if (is_softmax(op) && b == 13) {
      softmax_up(g, n);
    } else if (op == "Scatter" && b == 11) {
      n.op_type = "ScatterElements";  // same inputs, attributes and semantics
    } else if (op == "Scan" && b == 9) {
      no_equivalent(n, b, "Scan-8 (batched, with sequence_lens) has no direct Scan-9 form");
    } else if (op == "RoiAlign" && b == 16) {
      // Before 16 RoiAlign did not shift by half a pixel; 16's default does.
      n.set_attr(Attribute::make_string("coordinate_transformation_mode", "output_half_pixel"));
    } else if (op == "GridSample" && b == 20) {
      if (const Attribute* a = n.attr("mode")) {
        if (a->s == "bilinear") n.set_attr(Attribute::make_string("mode", "linear"));
        if (a->s == "bicubic") n.set_attr(Attribute::make_string("mode", "cubic"));
      }
    } else if (op == "DFT" && b == 20) {
      const int64_t axis = n.attr_int("axis", 1);
      if (!n.input(1)) put_input(n, 1, nullptr);
      put_input(n, 2, add_ints(g, n, "axis", {axis}, true));
      n.remove_attr("axis");
    }
  }

  void adapt_down(Graph& g, Node& n, int b) {
    const std::string& op = n.op_type;
    // Negative axes do not exist below 11.
    if (b == 11 && has_axis_attr(op)) {
      const auto in_rank = rank_of(n.input(0));
      if (Attribute* a = n.attr("axis"); a && a->i < 0) a->i = non_negative_axis(n, a->i, in_rank);
      if (Attribute* a = n.attr("axes")) {
        std::optional<size_t> r = in_rank;
        if (op == "Unsqueeze") r = rank_of(n.output(0));
        for (int64_t& x : a->ints) x = non_negative_axis(n, x, r);
      }
    }
    if (op == "Resize" && b == 10) {
      n.op_type = "Upsample";
    } else if (op == "Resize" && b == 11) {
      resize_down_to_10(g, n);
    } else if (op == "Resize" && b == 13) {
      // roi and scales are required inputs of Resize-11 (they may be empty tensors).
      if (!n.input(1)) put_input(n, 1, add_floats(g, n, "roi", {}));
      if (!n.input(2)) put_input(n, 2, add_floats(g, n, "scales", {}));
    } else if (op == "Resize" && b == 19) {
      if (n.attr_string("coordinate_transformation_mode", "") == "half_pixel_symmetric")
        no_equivalent(n, b - 1, "coordinate_transformation_mode half_pixel_symmetric was added in opset 19");
    } else if (op == "Upsample" && b == 9) {
      const auto s = required_floats(n, 1, "scales");
      n.set_attr(Attribute::make_floats("scales", std::vector<float>(s.begin(), s.end())));
      n.remove_input(1);
    } else if (op == "Slice" && b == 10) {
      if (n.input(4)) {
        for (int64_t s : required_ints(n, 4, "steps"))
          if (s != 1) no_equivalent(n, b - 1, "steps other than 1 need opset 10");
      }
      n.set_attr(Attribute::make_ints("starts", required_ints(n, 1, "starts")));
      n.set_attr(Attribute::make_ints("ends", required_ints(n, 2, "ends")));
      if (n.input(3)) {
        auto axes = required_ints(n, 3, "axes");
        for (int64_t& x : axes) x = non_negative_axis(n, x, rank_of(n.input(0)));
        n.set_attr(Attribute::make_ints("axes", axes));
      }
      while (n.inputs().size() > 1) n.remove_input(n.inputs().size() - 1);
    } else if (op == "TopK" && b == 10) {
      const auto k = required_ints(n, 1, "K");
      if (k.size() != 1) no_equivalent(n, b - 1, "K must hold one value");
      n.set_attr(Attribute::make_int("k", k[0]));
      n.remove_input(1);
    } else if (op == "Clip" && b == 11) {
      if (n.input(1)) n.set_attr(Attribute::make_float("min", static_cast<float>(required_floats(n, 1, "min").at(0))));
      if (n.input(2)) n.set_attr(Attribute::make_float("max", static_cast<float>(required_floats(n, 2, "max").at(0))));
      while (n.inputs().size() > 1) n.remove_input(n.inputs().size() - 1);
    } else if (op == "Pad" && b == 11) {
      n.set_attr(Attribute::make_ints("pads", required_ints(n, 1, "pads")));
      if (n.input(2)) {
        const auto v = required_floats(n, 2, "constant_value");
        if (!v.empty() && v[0] != 0) n.set_attr(Attribute::make_float("value", static_cast<float>(v[0])));
      }
      while (n.inputs().size() > 1) n.remove_input(n.inputs().size() - 1);
    } else if (op == "Pad" && b == 18) {
      if (n.input(3)) pad_axes_down(n);
    } else if (op == "Pad" && b == 19) {
      if (n.attr_string("mode", "constant") == "wrap") no_equivalent(n, b - 1, "mode 'wrap' was added in opset 19");
    } else if ((op == "ReduceSum" && b == 13) || (is_reduce(op) && op != "ReduceSum" && b == 18)) {
      const bool noop = n.attr_int("noop_with_empty_axes", 0) != 0;
      std::vector<int64_t> axes;
      if (n.input(1)) axes = required_ints(n, 1, "axes");
      if (noop && axes.empty()) no_equivalent(n, b - 1, "noop_with_empty_axes=1 with no axes");
      n.remove_attr("noop_with_empty_axes");
      if (!axes.empty()) n.set_attr(Attribute::make_ints("axes", axes));
      while (n.inputs().size() > 1) n.remove_input(n.inputs().size() - 1);
    } else if ((op == "Squeeze" || op == "Unsqueeze") && b == 13) {
      if (n.input(1)) n.set_attr(Attribute::make_ints("axes", required_ints(n, 1, "axes")));
      while (n.inputs().size() > 1) n.remove_input(n.inputs().size() - 1);
    } else if (op == "Split" && b == 13) {
      if (n.input(1)) n.set_attr(Attribute::make_ints("split", required_ints(n, 1, "split")));
      while (n.inputs().size() > 1) n.remove_input(n.inputs().size() - 1);
    } else if (op == "Split" && b == 18) {
      split_num_outputs_down(g, n);
    } else if (op == "Dropout" && b == 12) {
      if (n.input(2)) {
        const auto t = const_values(n.input(2));
        if (!t || (t->size() > 0 && !t->all_equal(0))) no_equivalent(n, b - 1, "training_mode must be a constant false");
      }
      if (n.input(1)) {
        const auto r = required_floats(n, 1, "ratio");
        if (!r.empty()) n.set_attr(Attribute::make_float("ratio", static_cast<float>(r[0])));
      }
      while (n.inputs().size() > 1) n.remove_input(n.inputs().size() - 1);
      n.remove_attr("seed");  // random dropout only happens in training mode, which is not allowed here
      // From 12 on the inference-mode mask is all true; before, runtimes differ on what it holds.
      if (n.outputs().size() > 1 && n.output(1) && (!n.output(1)->uses().empty() || n.output(1)->is_graph_output()))
        no_equivalent(n, b - 1, "its mask output is used, and before opset 12 its inference-mode value is not defined as all true");
    } else if (op == "Dropout" && b == 10) {
      if (n.outputs().size() > 1 && n.output(1) && !n.output(1)->uses().empty())
        no_equivalent(n, b - 1, "its mask output is bool from opset 10 on and is used");
    } else if (op == "BatchNormalization" && b == 14) {
      if (n.attr_int("training_mode", 0) != 0) no_equivalent(n, b - 1, "training_mode=1");
    } else if (is_softmax(op) && b == 13) {
      softmax_down(g, n);
    } else if (op == "ScatterElements" && b == 11) {
      n.op_type = "Scatter";
    } else if (op == "Scan" && b == 9) {
      no_equivalent(n, b - 1, "Scan-9 has no Scan-8 form (batched, with sequence_lens)");
    } else if (op == "RoiAlign" && b == 16) {
      if (n.attr_string("coordinate_transformation_mode", "half_pixel") != "output_half_pixel")
        no_equivalent(n, b - 1, "coordinate_transformation_mode half_pixel needs opset 16");
      n.remove_attr("coordinate_transformation_mode");
    } else if (op == "GridSample" && b == 20) {
      if (rank_of(n.input(0)).value_or(4) != 4) no_equivalent(n, b - 1, "GridSample below opset 20 is 2-D only");
      const std::string mode = n.attr_string("mode", "linear");
      if (mode == "linear") n.set_attr(Attribute::make_string("mode", "bilinear"));
      if (mode == "cubic") n.set_attr(Attribute::make_string("mode", "bicubic"));
    } else if (op == "DFT" && b == 20) {
      if (n.input(2)) {
        const auto axis = required_ints(n, 2, "axis");
        if (axis.size() != 1) no_equivalent(n, b - 1, "axis must hold one value");
        int64_t a = axis[0];
        if (a < 0) {
          const auto r = rank_of(n.input(0));
          if (!r) no_equivalent(n, b - 1, "a negative axis needs a known input rank");
          a += static_cast<int64_t>(*r);
        }
        n.set_attr(Attribute::make_int("axis", a));
        n.remove_input(2);
      } else {
        n.set_attr(Attribute::make_int("axis", -2 + static_cast<int64_t>(rank_of(n.input(0)).value_or(3))));
      }
    } else if (op == "Gemm" && b == 11) {
      if (!n.input(2)) {
        const DataType t = elem_type(n.input(0)) == DataType::kUndefined ? DataType::kFloat : elem_type(n.input(0));
        put_input(n, 2, add_scalar(g, n, "C", t, 0));
      }
    } else if (op == "Constant" && b == 12) {
      constant_down(n);
    } else if (op == "Shape" && b == 15) {
      shape_down(g, n);
    } else if ((op == "QuantizeLinear" || op == "DequantizeLinear") && b == 13) {
      const Value* scale = n.input(1);
      if (scale && scale->type.shape && !scale->type.shape->dims.empty())
        no_equivalent(n, b - 1, "per-axis scales need opset 13");
    } else if (op == "OptionalHasElement" && b == 18) {
      if (!n.input(0)) no_equivalent(n, b - 1, "an omitted input needs opset 18");
    }
  }

  /// Resize-11 -> Resize-10: only the asymmetric sampling of Resize-10 has an equivalent.
  void resize_down_to_10(Graph& g, Node& n) {
    const std::string mode = n.attr_string("mode", "nearest");
    if (mode == "cubic") no_equivalent(n, 10, "cubic mode needs opset 11");
    if (n.attr_string("coordinate_transformation_mode", "half_pixel") != "asymmetric")
      no_equivalent(n, 10, "Resize-10 samples with asymmetric coordinates only");
    if (mode == "nearest" && n.attr_string("nearest_mode", "round_prefer_floor") != "floor")
      no_equivalent(n, 10, "Resize-10 rounds nearest down (nearest_mode floor) only");
    if (n.attr_int("exclude_outside", 0) != 0) no_equivalent(n, 10, "exclude_outside needs opset 11");
    std::vector<double> scales;
    if (n.input(2) && !required_floats(n, 2, "scales").empty()) {
      scales = required_floats(n, 2, "scales");
    } else {
      const auto sizes = required_ints(n, 3, "sizes");
      for (size_t i = 0; i < sizes.size(); ++i) {
        const auto d = dim_of(n.input(0), i);
        if (!d || *d == 0) no_equivalent(n, 10, "sizes given and the input shape is unknown");
        scales.push_back(static_cast<double>(sizes[i]) / static_cast<double>(*d));
      }
    }
    for (const char* a : {"coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
                          "extrapolation_value"})
      n.remove_attr(a);
    Value* x = n.input(0);
    while (n.inputs().size() > 1) n.remove_input(n.inputs().size() - 1);
    n.set_input(0, x);
    put_input(n, 1, add_floats(g, n, "scales", scales));
  }

  /// Pad-18's axes input folded into a full pads list.
  void pad_axes_down(Node& n) {
    const auto r = rank_of(n.input(0));
    if (!r) no_equivalent(n, 17, "the axes input needs a known input rank");
    auto axes = required_ints(n, 3, "axes");
    const auto pads = required_ints(n, 1, "pads");
    if (pads.size() != 2 * axes.size()) no_equivalent(n, 17, "pads does not match axes");
    std::vector<int64_t> full(2 * *r, 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      check_axis(n, axes[i], r);
      const int64_t a = axes[i] < 0 ? axes[i] + static_cast<int64_t>(*r) : axes[i];
      full[static_cast<size_t>(a)] = pads[i];
      full[static_cast<size_t>(a) + *r] = pads[i + axes.size()];
    }
    Graph& g = *n.graph();
    n.set_input(1, add_ints(g, n, "pads", full));
    n.remove_input(3);
    trim_inputs(n);
  }

  void split_num_outputs_down(Graph& g, Node& n) {
    const Attribute* a = n.attr("num_outputs");
    if (!a) return;
    const int64_t parts = a->i;
    n.remove_attr("num_outputs");
    const auto r = rank_of(n.input(0));
    int64_t axis = n.attr_int("axis", 0);
    if (axis < 0 && r) axis += static_cast<int64_t>(*r);
    const auto d = axis >= 0 ? dim_of(n.input(0), static_cast<size_t>(axis)) : std::nullopt;
    if (d && *d % parts == 0) return;  // equal parts: Split-13 without split does the same
    if (!d) no_equivalent(n, 17, "num_outputs with an unknown split dimension");
    // Uneven: every part ceil(d / parts), the last one what remains.
    const int64_t chunk = (*d + parts - 1) / parts;
    std::vector<int64_t> split;
    for (int64_t left = *d; left > 0; left -= chunk) split.push_back(std::min(chunk, left));
    put_input(n, 1, add_ints(g, n, "split", split));
  }

  /// Constant-12's value_* attributes as a value tensor.
  void constant_down(Node& n) {
    if (n.attributes.size() != 1) return;
    const Attribute& a = n.attributes[0];
    ir::Tensor t;
    if (a.name == "value_float") {
      t = ir::make_tensor("", DataType::kFloat, {}, &a.f, sizeof(float));
    } else if (a.name == "value_floats") {
      t = ir::make_tensor("", DataType::kFloat, {static_cast<int64_t>(a.floats.size())}, a.floats.data(),
                          a.floats.size() * sizeof(float));
    } else if (a.name == "value_int") {
      t = ir::make_tensor("", DataType::kInt64, {}, &a.i, sizeof(int64_t));
    } else if (a.name == "value_ints") {
      t = ir::make_tensor("", DataType::kInt64, {static_cast<int64_t>(a.ints.size())}, a.ints.data(),
                          a.ints.size() * sizeof(int64_t));
    } else if (a.name == "value_string" || a.name == "value_strings") {
      no_equivalent(n, 11, "string constants need opset 12");
    } else {
      return;
    }
    n.attributes.clear();  // `a` dangles from here on
    n.set_attr(Attribute::make_tensor("value", std::move(t)));
  }

  /// Shape-15's start/end as a Slice of the full shape.
  void shape_down(Graph& g, Node& n) {
    const Attribute* s = n.attr("start");
    const Attribute* e = n.attr("end");
    if (!s && !e) return;
    const int64_t start = s ? s->i : 0;
    const int64_t end = e ? e->i : std::numeric_limits<int64_t>::max();
    n.remove_attr("start");
    n.remove_attr("end");
    Value* out = n.output(0);
    const std::string name = out->name();
    g.rename(out, passes::unique_name(g, name + "_full"));
    out->type = ir::TypeInfo{};  // now the full shape
    const Node* next = next_node(g, n);
    std::vector<Value*> inputs = {out};
    Node* slice = nullptr;
    if (to_ >= 10) {
      inputs.push_back(add_ints(g, n, "start", {start}));
      inputs.push_back(add_ints(g, n, "end", {end}));
      inputs.push_back(add_ints(g, n, "axes", {0}));
      slice = g.add_node("Slice", inputs, {name}, "", passes::unique_name(g, base(n) + "_Slice"), next);
    } else {
      if (start < 0 || end < 0) no_equivalent(n, to_, "negative start/end need Slice with inputs (opset 10)");
      slice = g.add_node("Slice", inputs, {name}, "", passes::unique_name(g, base(n) + "_Slice"), next);
      slice->set_attr(Attribute::make_ints("starts", {start}));
      slice->set_attr(Attribute::make_ints("ends", {end}));
      slice->set_attr(Attribute::make_ints("axes", {0}));
    }
    // The graph output (if any) follows the name.
    for (size_t i = 0; i < g.outputs.size(); ++i)
      if (g.outputs[i].value == out) g.set_output_value(i, slice->output(0));
    g.replace_all_uses(out, slice->output(0));
    slice->set_input(0, out);
    ++report_.added_nodes;
  }

  static const Node* next_node(const Graph& g, const Node& n) {
    const size_t i = g.node_index(&n);
    return i + 1 < g.nodes().size() ? g.nodes()[i + 1].get() : nullptr;
  }

  /// Softmax before 13 flattens the input to 2-D at `axis`; from 13 on it works along one axis.
  void softmax_up(Graph& g, Node& n) {
    const auto r = rank_of(n.input(0));
    int64_t axis = n.attr_int("axis", 1);
    check_axis(n, axis, r);
    if (r && axis < 0) axis += static_cast<int64_t>(*r);
    if (r && axis == static_cast<int64_t>(*r) - 1) {
      n.set_attr(Attribute::make_int("axis", -1));
      return;
    }
    // Flatten to [outer, inner], normalize the last axis, reshape back to the input's shape.
    Value* x = n.input(0);
    Value* y = n.output(0);
    const std::string name = y->name();
    const std::string b = base(n);
    Node* shape = g.add_node("Shape", {x}, {passes::unique_name(g, b + "_shape")}, "", passes::unique_name(g, b + "_Shape"), &n);
    Node* flat = g.add_node("Flatten", {x}, {passes::unique_name(g, b + "_flat")}, "", passes::unique_name(g, b + "_Flatten"), &n);
    flat->set_attr(Attribute::make_int("axis", n.attr_int("axis", 1)));
    n.set_input(0, flat->output(0));
    n.set_attr(Attribute::make_int("axis", -1));
    g.rename(y, passes::unique_name(g, name + "_2d"));
    y->type = ir::TypeInfo{};  // now the 2-D result; inference sets its type
    Node* reshape = g.add_node("Reshape", {y, shape->output(0)}, {name}, "", passes::unique_name(g, b + "_Reshape"), next_node(g, n));
    for (size_t i = 0; i < g.outputs.size(); ++i)
      if (g.outputs[i].value == y) g.set_output_value(i, reshape->output(0));
    g.replace_all_uses(y, reshape->output(0));
    reshape->set_input(0, y);
    report_.added_nodes += 3;
  }

  /// Softmax-13 along one axis: the last axis is the same before 13; another axis is moved last.
  void softmax_down(Graph& g, Node& n) {
    const auto r = rank_of(n.input(0));
    int64_t axis = n.attr_int("axis", -1);
    check_axis(n, axis, r);
    if (axis < 0 && r) axis += static_cast<int64_t>(*r);
    if (axis < 0) {
      // axis -1 of unknown rank: coercing at -1 to 2-D is the same as the last axis (opset 11+).
      if (to_ >= 11) {
        n.set_attr(Attribute::make_int("axis", -1));
        return;
      }
      no_equivalent(n, to_, "a negative axis needs opset 11 and the input rank is unknown");
    }
    if (!r) no_equivalent(n, 12, "axis " + std::to_string(axis) + " with an unknown input rank");
    const int64_t last = static_cast<int64_t>(*r) - 1;
    n.set_attr(Attribute::make_int("axis", last));
    if (axis == last) return;
    std::vector<int64_t> perm(*r);
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
    std::swap(perm[static_cast<size_t>(axis)], perm[static_cast<size_t>(last)]);
    const std::string b = base(n);
    Node* t1 = g.add_node("Transpose", {n.input(0)}, {passes::unique_name(g, b + "_moved")}, "", passes::unique_name(g, b + "_Transpose"), &n);
    t1->set_attr(Attribute::make_ints("perm", perm));
    n.set_input(0, t1->output(0));
    Value* y = n.output(0);
    const std::string name = y->name();
    g.rename(y, passes::unique_name(g, name + "_moved"));
    y->type = ir::TypeInfo{};  // now the transposed result
    Node* t2 = g.add_node("Transpose", {y}, {name}, "", passes::unique_name(g, b + "_Transpose_back"), next_node(g, n));
    t2->set_attr(Attribute::make_ints("perm", perm));
    for (size_t i = 0; i < g.outputs.size(); ++i)
      if (g.outputs[i].value == y) g.set_output_value(i, t2->output(0));
    g.replace_all_uses(y, t2->output(0));
    t2->set_input(0, y);
    report_.added_nodes += 2;
  }

  ir::Model& model_;
  int64_t from_, to_;
  VersionReport& report_;
  const ir::SchemaRegistry& registry_;
};

/// Error diagnostics as (rule, graph, node, message) keys, to tell new errors from old ones.
std::set<std::string> error_keys(ir::Model& model) {
  ir::DiagnosticSink sink;
  checker::check_model(model, sink);
  std::set<std::string> keys;
  for (const auto& d : sink.items())
    if (d.severity == ir::Severity::kError) keys.insert(d.rule + "|" + d.graph + "|" + d.node + "|" + d.op_type);
  return keys;
}

}  // namespace

VersionReport convert_opset(ir::Model& model, int64_t target) {
  if (target < kMinConvertOpset || target > kMaxConvertOpset)
    throw_usage_error("--opset " + std::to_string(target) + " is outside the supported range " +
                      std::to_string(kMinConvertOpset) + "-" + std::to_string(kMaxConvertOpset));
  const int64_t from = passes::default_opset(model);
  if (from == 0) throw_usage_error("the model does not import the default ONNX domain; nothing to convert");
  if (from < kMinConvertOpset)
    throw_usage_error("the model is at opset " + std::to_string(from) + "; conversion starts at opset " +
                      std::to_string(kMinConvertOpset));
  VersionReport report;
  report.from = from;
  report.to = target;
  if (from == target) return report;

  // Ranks and shapes help the adapters that depend on them (Softmax axes, negative axes).
  ir::DiagnosticSink inference;
  ir::infer_shapes(model, inference);
  const std::set<std::string> before = error_keys(model);

  Converter c(model, from, target, report);
  c.convert_graph(*model.graph);
  for (auto& f : model.functions) {
    bool imports_default = false;
    for (auto& o : f.opset_import)
      if (ir::canonical_domain(o.domain).empty() && o.version == from) {
        imports_default = true;
        o.version = target;
      }
    if (imports_default) c.convert_graph(*f.body);
  }
  model.set_opset_version("", target);
  // Going up may need a newer IR version; going down keeps it (the IR version says which file
  // features the model uses, which a lower opset does not change), so a round trip is lossless.
  model.ir_version = std::max(model.ir_version, ir_version_for(target));

  // Whatever the adapters missed shows up as a new checker error: the conversion fails on it.
  ir::DiagnosticSink after;
  checker::check_model(model, after);
  for (const auto& d : after.items()) {
    if (d.severity != ir::Severity::kError) continue;
    if (before.count(d.rule + "|" + d.graph + "|" + d.node + "|" + d.op_type)) continue;
    // The checker's message starts with the node it is about ("node #3 (Constant): ...") when
    // the node has no name; lead with it either way.
    std::string where = d.node.empty() ? "graph " + d.graph : "node '" + d.node + "' (" + d.op_type + ")";
    std::string why = d.message;
    if (d.node.empty() && why.rfind("node ", 0) == 0 && why.find(": ") != std::string::npos) {
      where = why.substr(0, why.find(": "));
      why = why.substr(why.find(": ") + 2);
    }
    throw Error(ErrorKind::kFailed, where + ": no equivalent at opset " + std::to_string(target) + ": " + why);
  }
  return report;
}

}  // namespace onnxtool::convert
