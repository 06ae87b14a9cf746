// Pass eliminate_noops: removes nodes that compute their input unchanged.
#include <algorithm>

#include "ir/constant.h"
#include "ir/graph_util.h"
#include "passes/pass_list.h"
#include "passes/rewrite.h"

namespace onnxtool::passes {

namespace {

/// The static dims of a value, or nullopt.
std::optional<std::vector<int64_t>> static_dims(const ir::Value* v) {
  if (!v || !v->type.is_tensor() || !v->type.shape) return std::nullopt;
  std::vector<int64_t> dims;
  for (const ir::Dim& d : v->type.shape->dims) {
    if (d.kind != ir::Dim::Kind::kValue) return std::nullopt;
    dims.push_back(d.value);
  }
  return dims;
}

bool same_static_shape(const ir::Value* a, const ir::Value* b) {
  const auto da = static_dims(a), db = static_dims(b);
  return da && db && *da == *db;
}

bool same_elem_type(const ir::Value* a, const ir::Value* b) {
  return a && b && a->type.is_tensor() && b->type.is_tensor() && a->type.elem_type != 0 &&
         a->type.elem_type == b->type.elem_type;
}

/// Constant input i in its own kind (integers as int64, floats as double), or nullopt.
std::optional<ir::TypedValues> const_input(const ir::Model& m, const ir::Node& n, size_t i) {
  const ir::Tensor* t = ir::constant_of(m, n.input(i));
  if (!t) return std::nullopt;
  return ir::read_values(*t);
}

bool all_equal(const std::optional<ir::TypedValues>& v, int64_t x) { return v && v->all_equal(x); }

/// The value a no-op node passes through unchanged, or nullptr.
ir::Value* passthrough(const ir::Model& m, const ir::Node& n) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return nullptr;
  const std::string& op = n.op_type;
  ir::Value* x = n.input(0);
  ir::Value* y = n.output(0);
  if (!x || !y) return nullptr;
  // Every output but the first must be unused (Dropout's mask, TopK...).
  for (size_t i = 1; i < n.outputs().size(); ++i)
    if (n.output(i) && (n.output(i)->is_graph_output() || !n.output(i)->uses().empty())) return nullptr;
  if (op == "Identity") return x;
  if (op == "Dropout") {
    if (n.attr_int("is_test", 0) == 0 && m.opset_version("").value_or(0) < 7) return nullptr;  // opsets 1-6: training unless is_test
    if (n.input(2)) {
      const auto training = const_input(m, n, 2);
      if (!all_equal(training, 0)) return nullptr;
    }
    return x;
  }
  if (op == "Cast" || op == "CastLike") {
    const ir::Value* like = op == "CastLike" ? n.input(1) : nullptr;
    const int64_t to = like ? (like->type.is_tensor() ? like->type.elem_type : 0) : n.attr_int("to", 0);
    return x->type.is_tensor() && to != 0 && x->type.elem_type == to ? x : nullptr;
  }
  // x * 1, x / 1, x + 0, x - 0 (and 1 * x, 0 + x) whose output has x's shape and type.
  const bool mul = op == "Mul", add = op == "Add";
  if (mul || add || op == "Div" || op == "Sub") {
    const int64_t identity = (mul || op == "Div") ? 1 : 0;
    if (all_equal(const_input(m, n, 1), identity) && same_elem_type(x, y) && same_static_shape(x, y)) return x;
    ir::Value* b = n.input(1);
    if ((mul || add) && all_equal(const_input(m, n, 0), identity) && same_elem_type(b, y) && same_static_shape(b, y))
      return b;
    return nullptr;
  }
  if (op == "Slice") {
    // Starts 0, ends past any dim (INT_MAX or more, as exporters write "to the end"), steps 1:
    // the whole tensor, whatever its shape.
    const bool attrs = m.opset_version("").value_or(0) < 10;
    const auto starts = ir::ints_input_or_attr(m, n, 1, attrs ? "starts" : "");
    const auto ends = ir::ints_input_or_attr(m, n, 2, attrs ? "ends" : "");
    const auto steps = n.input(4) ? ir::ints_input_or_attr(m, n, 4, "") : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
    if (starts && ends && steps && std::all_of(starts->begin(), starts->end(), [](int64_t v) { return v == 0; }) &&
        std::all_of(ends->begin(), ends->end(), [](int64_t v) { return v >= 2147483647; }) &&
        std::all_of(steps->begin(), steps->end(), [](int64_t v) { return v == 1; }))
      return x;
  }
  if (!same_elem_type(x, y) || !same_static_shape(x, y)) return nullptr;
  // Shape-preserving ops whose output shape equals the input's move no element.
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" || op == "Expand" || op == "Tile")
    return x;
  if (op == "Slice") {
    // With positive steps an output as long as the input along every axis can only be the whole
    // input; a negative step of the same length reverses it.
    if (!n.input(4)) return x;
    const auto steps = ir::constant_ints(m, n.input(4));
    return steps && std::all_of(steps->begin(), steps->end(), [](int64_t v) { return v > 0; }) ? x : nullptr;
  }
  if (op == "Transpose") {
    const auto perm = n.attr_ints("perm");
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != static_cast<int64_t>(i)) return nullptr;
    return x;
  }
  if (op == "Pad") {
    // Pads all zero (attribute before opset 11, input after).
    if (n.input(1)) return all_equal(const_input(m, n, 1), 0) ? x : nullptr;
    const auto pads = n.attr_ints("pads");
    return std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; }) ? x : nullptr;
  }
  return nullptr;
}

/// Unsqueeze(axes) then Squeeze(same axes): the Squeeze's output is the Unsqueeze's input.
ir::Value* squeeze_pair(const ir::Model& m, const ir::Node& n) {
  if (n.op_type != "Squeeze" || !n.domain.empty()) return nullptr;
  const ir::Value* mid = n.input(0);
  const ir::Node* u = mid ? mid->producer() : nullptr;
  if (!u || u->op_type != "Unsqueeze" || !u->domain.empty()) return nullptr;
  auto axes_of = [&](const ir::Node& k) -> std::optional<std::vector<int64_t>> {
    if (k.input(1)) return ir::constant_ints(m, k.input(1));
    return k.attr_ints("axes");
  };
  const auto a = axes_of(*u), b = axes_of(n);
  if (!a || !b || a->empty() || *a != *b) return nullptr;
  // Negative axes refer to different ranks before and after; accept only non-negative ones.
  if (std::any_of(a->begin(), a->end(), [](int64_t v) { return v < 0; })) return nullptr;
  return u->input(0);
}

/// Reshape(Reshape(x, s1), s2) -> Reshape(x, s2) when s2 is constant without 0 (copy) entries.
bool merge_reshapes(const ir::Model& m, ir::Graph& g, ir::Node& n) {
  if (n.op_type != "Reshape" || !n.domain.empty() || !n.input(1)) return false;
  ir::Value* mid = n.input(0);
  ir::Node* first = mid ? mid->producer() : nullptr;
  if (!first || first->op_type != "Reshape" || !first->domain.empty() || !ir::has_single_use(mid)) return false;
  const auto s2 = ir::constant_ints(m, n.input(1));
  if (!s2 || std::any_of(s2->begin(), s2->end(), [](int64_t v) { return v == 0; })) return false;
  n.set_input(0, first->input(0));
  g.remove_node(first);  // its only reader was n; it precedes n, so the caller has passed it
  return true;
}

}  // namespace

/// Removes Identity, inference-mode Dropout, Cast/CastLike to the same type, Reshape, Flatten,
/// Squeeze, Unsqueeze, Expand, Tile and Slice whose output shape equals the input's, identity
/// Transposes, zero Pads, Unsqueeze+Squeeze pairs over the same axes, x*1, x/1, x+0, x-0; merges
/// chains of Reshape. Needs shapes (from shape inference) for the shape-based cases. A graph
/// output keeps its name: when it cannot, the node stays.
PassStats eliminate_noops(ir::Model& model, const PassContext&) {
  PassStats stats;
  ir::for_each_node(model, [&](ir::Graph& g, ir::Node* n) {
    if (merge_reshapes(model, g, *n)) ++stats.removed;
    ir::Value* through = passthrough(model, *n);
    if (!through) through = squeeze_pair(model, *n);
    if (through && bypass_node(g, n, through)) ++stats.removed;
  });
  return stats;
}

}  // namespace onnxtool::passes
