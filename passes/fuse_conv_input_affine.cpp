// Pass fuse_conv_input_affine: folds a per-channel constant Mul (and Add, where exact) on a Conv's
// input into the Conv's weight and bias.
#include <algorithm>

#include "passes/pass_list.h"
#include "passes/rewrite.h"

namespace onnxtool::passes {

namespace {

/// True when the Conv reads no padding: zero `pads` and auto_pad NOTSET or VALID.
bool unpadded(const ir::Node& conv) {
  const std::string auto_pad = conv.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") return false;
  const auto pads = conv.attr_ints("pads", {});
  return std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
}

/// The Conv's data input x = other * c, or x = other + c, with c a constant of the weight's type
/// varying at most along the input channels: c per input channel, and the node. nullopt otherwise.
struct InputAffine {
  ir::Node* node;
  ir::Value* data;
  std::vector<double> per_channel;
};
std::optional<InputAffine> input_affine(const ir::Model& m, const ir::Value* x, std::string_view op,
                                        const FloatConstant& w, int64_t channels) {
  ir::Node* n = x ? x->producer() : nullptr;
  if (!is_op(n, op) || n->inputs().size() != 2 || !has_single_use(x)) return std::nullopt;
  for (size_t side = 0; side < 2; ++side) {
    const auto c = float_constant(m, n->input(1 - side));
    if (!c || c->type != w.type || !n->input(side)) continue;
    // The data side must already have the Conv input's rank and channels: the constant must not
    // broadcast it (removing the node would change what the Conv reads).
    const ir::Value* data = n->input(side);
    const auto& shape = data->type.is_tensor() ? data->type.shape : std::nullopt;
    if (!shape || shape->rank() != w.dims.size()) continue;
    const ir::Dim& cd = shape->dims[1];
    if (cd.kind != ir::Dim::Kind::kValue || cd.value != channels) continue;
    if (auto v = channel_vector(*c, w.dims.size(), 1, channels)) return InputAffine{n, n->input(side), *v};
  }
  return std::nullopt;
}

}  // namespace

/// Conv(x * m) => Conv(x) with W[o, c', ...] * m[c] (c the input channel that c' is in o's
/// group): exact, since zero padding stays zero. Conv(x + a) => Conv(x) with
/// B[o] + sum over c', k of W[o, c', k] * a[c]: only for a Conv that reads no padding (a padded
/// border would hold a, not 0). m and a are constants that vary at most along the channels; the
/// values between them and the Conv feed nothing else. Not done: moving a Mul past an Add before
/// a padded Conv ((x * m) + a = (x + a / m) * m), exact in real numbers but, with m small, it
/// offsets the Conv's input far from zero and costs float16 and int8 their precision.
PassStats fuse_conv_input_affine(ir::Model& model, const PassContext&) {
  PassStats stats;
  ir::for_each_graph(model, [&](ir::Graph& g) {
    std::vector<ir::Node*> order;
    for (const auto& n : g.nodes()) order.push_back(n.get());
    for (ir::Node* conv : order) {
      if (!is_op(conv, "Conv") || conv->inputs().size() < 2) continue;
      const auto w0 = float_constant(model, conv->input(1));
      if (!w0 || w0->dims.size() < 3 || w0->dims[0] <= 0) continue;
      const int64_t group = conv->attr_int("group", 1);
      const int64_t cin_g = w0->dims[1], cout = w0->dims[0];
      if (group < 1 || cout % group != 0) continue;
      const int64_t channels = cin_g * group;
      int64_t inner = 1;  // kernel elements per (o, c')
      for (size_t i = 2; i < w0->dims.size(); ++i) inner *= w0->dims[i];
      const auto in_channel = [&](int64_t o, int64_t ci) { return (o / (cout / group)) * cin_g + ci; };
      // Each fold replaces the Conv's weight and bias; the loop sees the new ones.
      for (bool changed = true; changed;) {
        changed = false;
        const auto w = float_constant(model, conv->input(1));
        std::vector<double> bias(static_cast<size_t>(cout), 0.0);
        if (conv->input(2)) {
          const auto b = float_constant(model, conv->input(2));
          if (!b || b->type != w->type || b->values.size() != bias.size()) break;
          bias = b->values;
        }
        std::vector<double> weights = w->values;
        auto mul = input_affine(model, conv->input(0), "Mul", *w, channels);
        auto add = mul ? std::nullopt : input_affine(model, conv->input(0), "Add", *w, channels);
        ir::Node* to_remove = nullptr;
        ir::Value* new_input = nullptr;
        if (mul) {
          for (size_t i = 0; i < weights.size(); ++i) {
            const int64_t o = static_cast<int64_t>(i) / (cin_g * inner), ci = (static_cast<int64_t>(i) / inner) % cin_g;
            weights[i] *= mul->per_channel[static_cast<size_t>(in_channel(o, ci))];
          }
          to_remove = mul->node;
          new_input = mul->data;
        } else if (add && unpadded(*conv)) {
          for (size_t i = 0; i < weights.size(); ++i) {
            const int64_t o = static_cast<int64_t>(i) / (cin_g * inner), ci = (static_cast<int64_t>(i) / inner) % cin_g;
            bias[static_cast<size_t>(o)] += weights[i] * add->per_channel[static_cast<size_t>(in_channel(o, ci))];
          }
          to_remove = add->node;
          new_input = add->data;
        } else {
          break;
        }
        const std::string base = conv->name.empty() ? "Conv" : conv->name;
        conv->set_input(1, add_constant(g, base + "_weight_fused", w->type, w->dims, weights));
        while (conv->inputs().size() < 3) conv->append_input(nullptr);
        conv->set_input(2, add_constant(g, base + "_bias_fused", w->type, {cout}, bias));
        if (to_remove) {
          conv->set_input(0, new_input);
          g.remove_node(to_remove);
          std::replace(order.begin(), order.end(), to_remove, static_cast<ir::Node*>(nullptr));
          changed = true;
        }
        ++stats.fused;
      }
    }
  });
  return stats;
}

}  // namespace onnxtool::passes
