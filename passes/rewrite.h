// Shared rewrites of the passes: safe node removal and replacement, and the fusions more than one
// pass makes. The graph helpers they build on (constants, matching, fresh names) are ir/graph_util.h.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"
#include "ir/graph_util.h"

namespace onnxtool::passes {

/// Removes `node` (one output) and lets every user of its output read `replacement` instead.
/// A graph output keeps its name: when the output is a graph output, `replacement` is renamed
/// to it if that is safe (produced by a node of the same graph, not itself a graph output or
/// input); otherwise nothing changes and false is returned.
bool bypass_node(ir::Graph& graph, ir::Node* node, ir::Value* replacement);

/// bypass_node for a node folded into the producer of `replacement` (BatchNormalization into
/// Conv, Add/Mul into Conv): the replacement now holds what the node's output held, so it also
/// takes that name (when it is a plain node output of this graph), which keeps tensor names
/// meaningful for `compare --per-layer` and `diff` against the unoptimized model.
bool fold_node_into(ir::Graph& graph, ir::Node* node, ir::Value* replacement);

/// Replaces a matched chain of single-output nodes (in graph order; the last one gives the result)
/// by `fused`, a node already added before the last one and computing the same: the last node is
/// folded into it (fold_node_into: fused's output takes over its name and readers) and the rest
/// of the chain is removed (for_each_node then skips the removed nodes). When the output cannot
/// be handed over, removes `fused` instead, leaves the chain, and returns false.
bool replace_chain(ir::Graph& graph, const std::vector<ir::Node*>& chain, ir::Node* fused);

/// True when `value` is within a relative 1e-4 of `want` (absolute 1e-6 when want is 0).
bool near_value(std::optional<double> value, double want);

/// A decomposed layer normalization's first stage, as exporters write it before
/// LayerNormalization (opset 17): mean = ReduceMean(x); d = Sub(x, mean); var = ReduceMean(d^2)
/// (Pow(d, 2) or Mul(d, d)); y = Div(d, Sqrt(Add(var, eps))), eps a scalar constant. Every
/// intermediate feeds only the pattern (d exactly its square and the Div; y may go anywhere).
/// The reductions' axes are the caller's to check.
struct DecomposedNorm {
  ir::Node* mean = nullptr;
  ir::Node* sub = nullptr;
  ir::Node* square = nullptr;
  ir::Node* variance = nullptr;
  ir::Node* add_eps = nullptr;
  ir::Node* sqrt = nullptr;
  ir::Node* div = nullptr;
  double eps = 0;
  /// The nodes in the order they compute, mean to div.
  std::vector<ir::Node*> nodes() const { return {mean, sub, square, variance, add_eps, sqrt, div}; }
};
/// The normalization whose first ReduceMean is `mean`, or nullopt.
std::optional<DecomposedNorm> match_decomposed_norm(const ir::Model& model, ir::Node* mean);

/// Where a Conv or ConvTranspose keeps its output channels: the weight axis (Conv 0,
/// ConvTranspose 1) and their number. nullopt for other nodes, a non-constant weight, and a
/// grouped ConvTranspose (its output channels span groups along that axis).
struct OutputChannels {
  size_t weight_axis = 0;
  int64_t channels = 0;
  size_t weight_rank = 0;
};
std::optional<OutputChannels> conv_output_channels(const ir::Model& model, const ir::Node& node);

/// Folds an inference BatchNormalization into the Conv or ConvTranspose producing its input (see
/// conv_output_channels), when that output feeds nothing else and the parameters are constants:
/// s = gamma / sqrt(var + eps) scales the weight and bias, beta - mean * s is added to the bias,
/// and the BatchNormalization's output name survives (fold_node_into). True when folded.
bool fold_batchnorm_into_producer(const ir::Model& model, ir::Graph& graph, ir::Node* bn);

/// Folds y' = y * scale[c] + shift[c] (c: output channel) into a node's weight and bias inputs:
/// the weight input `weight_index` is scaled along `weight_axis`, the bias input `bias_index`
/// (created when absent) becomes bias * scale + shift. Weight and bias must be float constants;
/// new initializers are added (the old ones may be shared). Returns false, changing nothing,
/// when the inputs are not suitable.
bool fold_channel_affine(const ir::Model& model, ir::Graph& graph, ir::Node& node, size_t weight_index,
                         size_t weight_axis, size_t bias_index, const std::vector<double>& scale,
                         const std::vector<double>& shift);

/// Per-channel values of a constant that broadcasts against an output of rank `rank` along axis
/// `axis` only (scalar, [C], [C,1,1], [1,C,1,1]...), expanded to `channels`; nullopt otherwise.
std::optional<std::vector<double>> channel_vector(const ir::FloatConstant& c, size_t rank, size_t axis, int64_t channels);

/// An inference-mode BatchNormalization with constant parameters as y = x * scale[c] + shift[c]
/// (scale = gamma / sqrt(var + eps), shift = beta - mean * scale); nullopt when the node is in
/// training mode, has used extra outputs, or non-constant parameters.
struct ChannelAffine {
  std::vector<double> scale, shift;
};
std::optional<ChannelAffine> batchnorm_affine(const ir::Model& model, const ir::Node& bn);

}  // namespace onnxtool::passes
