// Cutting a model down to the part between named tensors of its main graph (`onnxtool extract`).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnxtool::ir {

struct ExtractReport {
  size_t nodes_before = 0;
  size_t nodes_after = 0;
  size_t initializers_before = 0;
  size_t initializers_after = 0;
};

/// Turns `model` into the subgraph that computes `outputs` from `inputs`: the nodes needed to
/// compute the outputs, walking back from them and stopping at the named inputs and at
/// initializers; the named inputs become the graph inputs (with the type shape inference gives
/// them) and the named outputs its outputs; initializers, value_info and quantization
/// annotations are kept only where the remaining nodes use them. Function bodies and the
/// metadata stay as they are.
///
/// Throws Error(kUsage), one line, and leaves the model unchanged when a name is not a tensor of
/// the main graph (a tensor of a subgraph is named as such), when an output needs a graph input
/// that is not among `inputs` (the line names it), or when a named input is not on any path to
/// the outputs (it would not cut the graph).
ExtractReport extract_subgraph(Model& model, const std::vector<std::string>& inputs, const std::vector<std::string>& outputs);

/// Where a name that is not a value of the main graph is defined in one of its subgraphs:
/// "the subgraph 'body' of node 'loop' (Loop)", or "" when nowhere.
std::string subgraph_holding(Model& model, const std::string& name);

}  // namespace onnxtool::ir
