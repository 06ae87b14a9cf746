// Pass fuse_conv_input_affine: folds a per-channel constant Mul (and Add, where exact) on a Conv's
// input into the Conv's weight and bias.
#include <algorithm>

#include "ir/graph_util.h"
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
                                        const ir::FloatConstant& w, int64_t channels) {
  ir::Node* n = x ? x->producer() : nullptr;
  if (!ir::is_op(n, op) || n->inputs().size() != 2 || !ir::has_single_use(x)) return std::nullopt;
  for (size_t side = 0; side < 2; ++side) {
    const auto c = ir::float_constant(m, n->input(1 - side));
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
  ir::for_each_node(model, [&](ir::Graph& g, ir::Node* conv) {
    if (!ir::is_op(conv, "Conv") || conv->inputs().size() < 2) return;
    const auto w0 = ir::float_constant(model, conv->input(1));
    // An empty weight has nothing to fold into, and its other dims may be any size at all
    // (channel vectors of that size were allocated).
    if (!w0 || w0->dims.size() < 3 || w0->values.empty()) return;
    const int64_t group = conv->attr_int("group", 1);
    const int64_t cin_g = w0->dims[1], cout = w0->dims[0];
    if (group < 1 || cout % group != 0) return;
    const int64_t channels = cin_g * group;
    if (conv->input(2)) {  // a bias, when there is one, must be a constant the folds can rewrite
      const auto b = ir::float_constant(model, conv->input(2));
      if (!b || b->type != w0->type || b->values.size() != static_cast<size_t>(cout)) return;
    }
    int64_t inner = 1;  // kernel elements per (o, c')
    for (size_t i = 2; i < w0->dims.size(); ++i) inner *= w0->dims[i];
    // The input channel weight element i reads: its output channel's group, then its column.
    const auto in_channel = [&](size_t i) {
      const int64_t o = static_cast<int64_t>(i) / (cin_g * inner), column = (static_cast<int64_t>(i) / inner) % cin_g;
      return static_cast<size_t>((o / (cout / group)) * cin_g + column);
    };
    const std::string base = conv->name.empty() ? "Conv" : conv->name;
    // Each fold replaces the Conv's weight or bias; the next round reads the new ones.
    for (;;) {
      const auto w = ir::float_constant(model, conv->input(1));
      if (auto mul = input_affine(model, conv->input(0), "Mul", *w, channels)) {
        std::vector<double> weights = w->values;
        for (size_t i = 0; i < weights.size(); ++i) weights[i] *= mul->per_channel[in_channel(i)];
        conv->set_input(1, ir::add_constant(g, base + "_weight_fused", w->type, w->dims, weights));
        conv->set_input(0, mul->data);
        g.remove_node(mul->node);
        ++stats.fused;
        continue;
      }
      auto add = input_affine(model, conv->input(0), "Add", *w, channels);
      if (!add || !unpadded(*conv)) break;
      std::vector<double> bias(static_cast<size_t>(cout), 0.0);
      if (conv->input(2)) bias = ir::float_constant(model, conv->input(2))->values;
      for (size_t i = 0; i < w->values.size(); ++i)
        bias[static_cast<size_t>(static_cast<int64_t>(i) / (cin_g * inner))] += w->values[i] * add->per_channel[in_channel(i)];
      while (conv->inputs().size() < 3) conv->append_input(nullptr);
      conv->set_input(2, ir::add_constant(g, base + "_bias_fused", w->type, {cout}, bias));
      conv->set_input(0, add->data);
      g.remove_node(add->node);
      ++stats.fused;
    }
  });
  return stats;
}

}  // namespace onnxtool::passes
