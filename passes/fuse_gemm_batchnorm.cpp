// Pass fuse_gemm_batchnorm: folds an inference BatchNormalization into the Gemm before it.
#include "ir/graph_util.h"
#include "passes/pass_list.h"
#include "passes/rewrite.h"

namespace onnxtool::passes {

/// Gemm(A, B, C) [M, N] -> BatchNormalization over N  =>  Gemm with B's output columns scaled
/// and C = C * s + t. B and C must be constants, C absent or of shape [N], beta 1 when C is
/// present (an absent C is created with beta set to 1).
PassStats fuse_gemm_batchnorm(ir::Model& model, const PassContext&) {
  PassStats stats;
  ir::for_each_node(model, [&](ir::Graph& g, ir::Node* bn) {
    if (!ir::is_op(bn, "BatchNormalization")) return;
    ir::Value* y = bn->input(0);
    ir::Node* gemm = y ? y->producer() : nullptr;
    if (!ir::is_op(gemm, "Gemm") || ir::single_consumer(y) != bn) return;
    if (gemm->input(2) && gemm->attr_float("beta", 1.0f) != 1.0f) return;
    if (model.onnx_opset() < 7) return;  // Gemm-6 needs the broadcast attribute for a [N] C
    const auto affine = batchnorm_affine(model, *bn);
    const size_t axis = gemm->attr_int("transB", 0) ? 0 : 1;
    if (!affine || !fold_channel_affine(model, g, *gemm, 1, axis, 2, affine->scale, affine->shift)) return;
    gemm->remove_attr("beta");
    if (fold_node_into(g, bn, y)) ++stats.fused;
  });
  return stats;
}

}  // namespace onnxtool::passes
