// Pass fuse_relu_clip: chains of Relu and Clip become one node.
#include <algorithm>
#include <limits>

#include "ir/graph_util.h"
#include "passes/pass_list.h"

namespace onnxtool::passes {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Bounds {
  double lo = -kInf, hi = kInf;
};

/// The clamp range of a Relu or Clip (attribute bounds before opset 11, constant inputs after).
std::optional<Bounds> bounds_of(const ir::Model& m, const ir::Node& n) {
  if (ir::is_op(&n, "Relu")) return Bounds{0, kInf};
  if (!ir::is_op(&n, "Clip")) return std::nullopt;
  Bounds b;
  if (m.onnx_opset() < 11) {
    b.lo = n.attr_float("min", -std::numeric_limits<float>::max());
    b.hi = n.attr_float("max", std::numeric_limits<float>::max());
    return b;
  }
  for (size_t i = 1; i < 3; ++i) {
    if (!n.input(i)) continue;
    const auto c = ir::float_constant(m, n.input(i));
    if (!c || c->values.size() != 1) return std::nullopt;
    (i == 1 ? b.lo : b.hi) = c->values[0];
  }
  return b;
}

}  // namespace

/// Relu/Clip -> Relu/Clip  =>  one Clip (or Relu) whose range is the intersection, when the
/// first feeds only the second and bounds are constants. The second node survives with its
/// name and output; Clip-11+ bounds become new initializers of the input's type.
PassStats fuse_relu_clip(ir::Model& model, const PassContext&) {
  PassStats stats;
  ir::for_each_node(model, [&](ir::Graph& g, ir::Node* second) {
    const auto b2 = bounds_of(model, *second);
    if (!b2) return;
    ir::Value* mid = second->input(0);
    ir::Node* first = mid ? mid->producer() : nullptr;
    const auto b1 = first ? bounds_of(model, *first) : std::nullopt;
    if (!b1 || ir::single_consumer(mid) != second) return;
    const Bounds b{std::max(b1->lo, b2->lo), std::min(b1->hi, b2->hi)};
    if (ir::is_op(second, "Clip")) {
      if (model.onnx_opset() < 11) {
        second->set_attr(ir::Attribute::make_float("min", static_cast<float>(b.lo)));
        second->set_attr(ir::Attribute::make_float("max", static_cast<float>(b.hi)));
      } else {
        const ir::Value* x = first->input(0);
        if (!x || !x->type.is_tensor()) return;
        const ir::DataType t = x->type.data_type();
        if (t != ir::DataType::kFloat && t != ir::DataType::kDouble && t != ir::DataType::kFloat16) return;
        const std::string base = second->name.empty() ? "clip" : second->name;
        while (second->inputs().size() < 3) second->append_input(nullptr);
        if (b.lo > -kInf) second->set_input(1, ir::add_constant(g, base + "_min", t, {}, {b.lo}));
        if (b.hi < kInf) second->set_input(2, ir::add_constant(g, base + "_max", t, {}, {b.hi}));
      }
    } else if (!ir::is_op(first, "Relu")) {
      return;  // Clip -> Relu: the merged range needs a Clip; left for a Clip-first rewrite
    }
    second->set_input(0, first->input(0));
    g.remove_node(first);
    ++stats.fused;
  });
  return stats;
}

}  // namespace onnxtool::passes
