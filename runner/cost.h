// What a model costs to run for given input dims (`onnxtool inspect --cost`): per node the
// multiply-accumulates, FLOPs, weights and activation bytes, their totals, and the peak of
// activation memory along the runner's plan. docs/commands/inspect.md states the conventions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnxtool::runner {

/// FLOPs counted per element for a transcendental function (Exp, Tanh, Sigmoid, Erf, Sqrt...).
constexpr uint64_t kTranscendentalFlops = 4;

/// One node's cost. MACs and FLOPs are absent when the shapes they need are not static (a
/// symbolic dim no --input-shape fixed) or the op has no cost model; `unknown` says which.
struct NodeCost {
  const ir::Node* node = nullptr;  ///< its graph: node->graph()
  std::optional<uint64_t> macs;
  std::optional<uint64_t> flops;
  std::string unknown;
  uint64_t params = 0;       ///< elements of the constant inputs (initializers, Constant nodes)
  uint64_t param_bytes = 0;
  /// Bytes of the non-constant inputs and of the outputs; absent when a size is not static.
  std::optional<uint64_t> input_bytes;
  std::optional<uint64_t> output_bytes;
};

/// The cost of one node, from the static shapes of its values (Value::type, inferred).
NodeCost node_cost(const ir::Node& node);

struct OpTypeCost {
  size_t nodes = 0;
  size_t unknown = 0;  ///< nodes of unknown MACs/FLOPs
  uint64_t macs = 0;
  uint64_t flops = 0;
};

struct ModelCost {
  std::vector<NodeCost> nodes;  ///< the main graph in the runner's order, then each subgraph once
  uint64_t macs = 0;            ///< over the nodes of known cost
  uint64_t flops = 0;
  uint64_t params = 0;  ///< every constant tensor read by some node, counted once
  uint64_t param_bytes = 0;
  size_t unknown_nodes = 0;
  size_t subgraph_nodes = 0;  ///< nodes of If/Loop/Scan bodies, each counted once
  std::map<std::string, OpTypeCost> by_op;  ///< by Node::qualified_op
  /// Peak bytes of the activations alive at once in the runner's plan of the main graph;
  /// absent when the runner cannot plan the model (`peak_unknown` says why).
  std::optional<uint64_t> peak_bytes;
  std::string peak_unknown;
  const ir::Node* peak_node = nullptr;  ///< the step at which the peak is reached
  size_t peak_unsized = 0;              ///< values of the plan whose size is not static, left out
};

struct CostOptions {
  /// Dims of graph inputs (--input-shape NAME=D1,D2,...), set before shape inference.
  std::map<std::string, std::vector<int64_t>> input_shapes;
};

/// Sets the input dims, infers shapes (Error kInput when inference finds the model contradicts
/// itself or the dims), plans the main graph as the runner does and costs every node.
ModelCost model_cost(ir::Model& model, const CostOptions& options = {});

}  // namespace onnxtool::runner
