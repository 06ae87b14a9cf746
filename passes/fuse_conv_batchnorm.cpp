// Pass fuse_conv_batchnorm: folds an inference BatchNormalization into the Conv or ConvTranspose
// before it.
#include "ir/graph_util.h"
#include "passes/pass_list.h"
#include "passes/rewrite.h"

namespace onnxtool::passes {

/// Conv(x, W, B) -> BatchNormalization  =>  Conv(x, W * s, B * s + t) with s = gamma/sqrt(var+eps),
/// t = beta - mean * s per output channel (ConvTranspose alike, its weight scaled along axis 1).
/// Only when the Conv's output feeds nothing else, its weight and the BatchNormalization's
/// parameters are constants, and BatchNormalization is in inference mode. The Conv keeps its
/// name; the BatchNormalization's output name survives.
PassStats fuse_conv_batchnorm(ir::Model& model, const PassContext&) {
  PassStats stats;
  ir::for_each_node(model, [&](ir::Graph& g, ir::Node* bn) {
    if (fold_batchnorm_into_producer(model, g, bn)) ++stats.fused;
  });
  return stats;
}

}  // namespace onnxtool::passes
