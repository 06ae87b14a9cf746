// Activations fused into a float32 Conv's output: the session's planner hands a Conv the
// elementwise nodes that only read its output (BatchNormalization in inference mode, Relu,
// LeakyRelu, Sigmoid, HardSigmoid, HardSwish, Clip, Add, Sub, Mul and Div of a per-channel
// constant, and a Mul of the output by a chain of these that starts from it: SiLU as Sigmoid +
// Mul, HardSwish written out as Add, Clip, Mul), and the Conv applies them to each block of its
// output while the block is still in cache, instead of one more pass over memory per node.
//
// Every op computes what its own kernel computes, in the same float operations: the fused
// output is the same bytes as the unfused one.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"
#include "runner/tensor.h"

namespace onnxtool::runner {

struct EpilogueOp {
  enum class Kind {
    kAffine,     ///< BatchNormalization: y * scale[c] + shift[c]
    kRelu,       ///< y < 0 ? 0 : y
    kLeakyRelu,  ///< y < 0 ? y * alpha : y
    kSigmoid,    ///< 1 / (1 + exp(-y)), runner/cpu/elementwise_util.h's
    kHardSigmoid,///< NaN stays, else max(0, min(1, alpha * y + beta))
    kHardSwish,  ///< y * max(0, min(1, y / 6 + 0.5))
    kClip,       ///< min(max(y, lo), hi) as two comparisons: NaN stays
    kMul,        ///< y * scale[c] (scale[c] * y when swapped)
    kAdd,        ///< y + scale[c] (scale[c] + y when swapped)
    kSub,        ///< y - scale[c] (scale[c] - y when swapped)
    kDiv,        ///< y / scale[c] (scale[c] / y when swapped)
    kGate,       ///< y * g (g * y when swapped), g = the `gate` ops applied to y: a Mul of y by
                 ///< a chain that starts from y (SiLU: Sigmoid; HardSwish written out: Add, Clip)
  };
  Kind kind = Kind::kRelu;
  float alpha = 0, beta = 0;        // LeakyRelu, HardSigmoid; Clip's bounds
  bool swapped = false;             // kMul, kAdd, kSub, kDiv: the constant is the first operand;
                                    // kGate: the chain's value is the Mul's first operand
  std::vector<float> scale, shift;  // kAffine; kMul, kAdd, kSub and kDiv (scale), per channel
  std::vector<EpilogueOp> gate;     // kGate
};

/// The ops fused into one Conv, in order.
struct Epilogue {
  std::vector<EpilogueOp> ops;

  /// Whether the ops apply to an output of `channels` channels (BatchNormalization's parameters
  /// have one value per channel; otherwise the nodes run unfused and fail as they would).
  bool fits(int64_t channels) const;
  /// Applies the ops to n consecutive elements of one channel, in place.
  void apply(float* y, int64_t channel, int64_t n) const;
  /// Applies the ops to a whole output [N, channels, inner...], in parallel.
  void apply_all(float* y, int64_t images, int64_t channels, int64_t inner) const;
};

/// The epilogue op a node reading the Conv output as its input `data` would become (its other
/// inputs given as constants, nullptr when not constant), or nullopt when it cannot be fused.
/// `rank` and `channels` are the Conv output's (-1: unknown; then no Mul or Add, whose constant
/// must not broadcast the output to another shape). Sigmoid + Mul is recognized by the planner
/// itself (it spans several nodes).
std::optional<EpilogueOp> epilogue_op(const ir::Node& node, int64_t opset, size_t data,
                                      const std::vector<const Tensor*>& constants, int64_t rank, int64_t channels);

namespace cpu {

/// BatchNormalization's per-channel factors in float: y = x * a[c] + b[c], with
/// s = scale / sqrt(var + eps) and b = bias - mean * s computed in double.
void batch_norm_factors(const Tensor& scale, const Tensor& bias, const std::vector<double>& mean,
                        const std::vector<double>& var, double eps, std::vector<float>& a, std::vector<float>& b);

}  // namespace cpu
}  // namespace onnxtool::runner
