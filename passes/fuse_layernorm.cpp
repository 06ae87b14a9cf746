// Pass fuse_layernorm: the decomposed layer normalization of exporters becomes
// LayerNormalization (opset 17 and later).
#include <algorithm>
#include <cmath>

#include "ir/graph_util.h"
#include "passes/pass_list.h"
#include "passes/rewrite.h"

namespace onnxtool::passes {

namespace {

/// Normalized axes of a ReduceMean with keepdims=1 over the trailing dims of a rank-`rank`
/// input: returns the first axis, or -1.
int64_t trailing_axis(const ir::Model& m, const ir::Node& r, int64_t rank) {
  if (r.attr_int("keepdims", 1) != 1) return -1;
  const auto axes = ir::ints_input_or_attr(m, r, 1, "axes");
  if (!axes || axes->empty()) return -1;
  std::vector<int64_t> a;
  for (int64_t x : *axes) a.push_back(x < 0 ? x + rank : x);
  std::sort(a.begin(), a.end());
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != rank - static_cast<int64_t>(a.size()) + static_cast<int64_t>(i)) return -1;
  return a.front();
}

}  // namespace

/// mean = ReduceMean(x, trailing axes); d = x - mean; var = ReduceMean(d^2 (Pow 2 or d*d));
/// y = d / Sqrt(var + eps) [* gamma] [+ beta]  =>  LayerNormalization(x, gamma, beta, axis, eps).
/// Every intermediate must feed only the pattern (d feeds exactly its square and the Div), eps,
/// gamma and beta must be constants, gamma and beta of the normalized shape. The last node's
/// output name survives.
PassStats fuse_layernorm(ir::Model& model, const PassContext&) {
  PassStats stats;
  if (model.onnx_opset() < 17) return stats;
  ir::for_each_node(model, [&](ir::Graph& g, ir::Node* r1) {
    if (!ir::is_op(r1, "ReduceMean")) return;
    ir::Value* x = r1->input(0);
    if (!x || !x->type.is_tensor() || !x->type.shape) return;
    const auto& xdims = x->type.shape->dims;
    const int64_t rank = static_cast<int64_t>(xdims.size());
    const int64_t axis = trailing_axis(model, *r1, rank);
    if (axis < 0) return;
    const auto norm = match_decomposed_norm(model, r1);
    if (!norm || trailing_axis(model, *norm->variance, rank) != axis) return;
    ir::Node* div = norm->div;

    // Optional affine tail: * gamma, + beta (constants of the normalized shape).
    std::vector<int64_t> norm_shape;
    for (int64_t i = axis; i < rank; ++i)
      if (xdims[static_cast<size_t>(i)].kind == ir::Dim::Kind::kValue) norm_shape.push_back(xdims[static_cast<size_t>(i)].value);
    if (norm_shape.size() != static_cast<size_t>(rank - axis)) return;  // normalized dims must be known
    auto fits = [&](const ir::Value* v) {
      const auto c = ir::float_constant(model, v);
      if (!c || c->type != x->type.data_type()) return false;
      std::vector<int64_t> dims = c->dims;
      while (!dims.empty() && dims.front() == 1 && dims.size() > norm_shape.size()) dims.erase(dims.begin());
      return dims == norm_shape;
    };
    std::vector<ir::Node*> chain = norm->nodes();
    ir::Node* last = div;
    ir::Value* gamma = nullptr;
    ir::Value* beta = nullptr;
    if (ir::Node* mul = ir::single_consumer(div->output(0)); ir::is_op(mul, "Mul")) {
      ir::Value* gv = ir::other_input(*mul, div->output(0));
      if (gv && fits(gv)) {
        gamma = gv;
        chain.push_back(mul);
        last = mul;
        if (ir::Node* add = ir::single_consumer(mul->output(0)); ir::is_op(add, "Add")) {
          ir::Value* bv = ir::other_input(*add, mul->output(0));
          if (bv && fits(bv)) {
            beta = bv;
            chain.push_back(add);
            last = add;
          }
        }
      }
    }
    const ir::DataType type = x->type.data_type();
    if (type != ir::DataType::kFloat && type != ir::DataType::kDouble && type != ir::DataType::kFloat16 &&
        type != ir::DataType::kBFloat16)
      return;
    const std::string base = r1->name.empty() ? "layernorm" : r1->name;
    auto flat = [&](ir::Value* v, double fill) {
      int64_t n = 1;
      for (int64_t s : norm_shape) n *= s;
      if (v) {
        const auto c = ir::float_constant(model, v);
        if (c->dims == norm_shape) return v;
        return ir::add_constant(g, base + "_reshaped", type, norm_shape, c->values);
      }
      return ir::add_constant(g, base + (fill == 1 ? "_scale" : "_bias"), type, norm_shape, std::vector<double>(static_cast<size_t>(n), fill));
    };
    ir::Value* scale = flat(gamma, 1);
    ir::Value* bias = beta ? flat(beta, 0) : nullptr;
    std::vector<ir::Value*> ins{x, scale};
    if (bias) ins.push_back(bias);
    ir::Node* ln = g.add_node("LayerNormalization", ins, {ir::unique_name(g, last->output(0)->name() + "_ln")}, "",
                              r1->name, last);
    ln->set_attr(ir::Attribute::make_int("axis", axis));
    ln->set_attr(ir::Attribute::make_float("epsilon", static_cast<float>(norm->eps)));
    if (replace_chain(g, chain, ln)) ++stats.fused;
  });
  return stats;
}

}  // namespace onnxtool::passes
