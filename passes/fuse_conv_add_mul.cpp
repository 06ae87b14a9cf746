// Pass fuse_conv_add_mul: folds a per-channel constant Mul or Add after a Conv or ConvTranspose into
// its weights.
#include "ir/graph_util.h"
#include "passes/pass_list.h"
#include "passes/rewrite.h"

namespace onnxtool::passes {

/// Conv -> Mul(c) => Conv with W and B scaled by c; Conv -> Add(c) => Conv with B + c; c a float
/// constant that varies at most along the output channels (scalar, [C,1,1], [1,C,1,1]...), of the
/// Conv's type, and the Conv's output read by nothing else. ConvTranspose (group 1) alike. An
/// inference BatchNormalization met after such a fold is folded too (Conv -> Add -> BatchNormalization
/// collapses in one run; fuse_conv_batchnorm, which runs first, only sees it right after the Conv).
PassStats fuse_conv_add_mul(ir::Model& model, const PassContext&) {
  PassStats stats;
  ir::for_each_node(model, [&](ir::Graph& g, ir::Node* op) {
    const bool mul = ir::is_op(op, "Mul");
    if (ir::is_op(op, "BatchNormalization")) {
      if (fold_batchnorm_into_producer(model, g, op)) ++stats.fused;
      return;
    }
    if (!mul && !ir::is_op(op, "Add")) return;
    for (size_t side = 0; side < 2; ++side) {
      ir::Value* y = op->input(side);
      ir::Node* conv = y ? y->producer() : nullptr;
      const auto out = conv ? conv_output_channels(model, *conv) : std::nullopt;
      if (!out || ir::single_consumer(y) != op) continue;
      const auto c = ir::float_constant(model, op->input(1 - side));
      const auto w = ir::float_constant(model, conv->input(1));
      if (!c || !w || c->type != w->type) continue;
      const auto v = channel_vector(*c, out->weight_rank, 1, out->channels);
      if (!v) continue;
      const std::vector<double> ones(v->size(), 1.0), zeros(v->size(), 0.0);
      if (!fold_channel_affine(model, g, *conv, 1, out->weight_axis, 2, mul ? *v : ones, mul ? zeros : *v)) continue;
      if (fold_node_into(g, op, y)) ++stats.fused;
      break;
    }
  });
  return stats;
}

}  // namespace onnxtool::passes
