// Random small models built from the patterns exporters emit (PyTorch, tf2onnx, paddle2onnx):
// shape arithmetic with the extreme Slice ends of `x.shape[1:]` and `x[::-1]`, Reshape with 0/-1,
// Squeeze/Unsqueeze, Expand, ConstantOfShape, Range, Where; broadcasting elementwise chains with
// constants; Conv/BatchNormalization/activation stacks; MatMul+Add; Transpose chains; decomposed
// LayerNorm and Gelu; If and Loop bodies reading outer-scope values; a symbolic batch dim. Models
// are at opsets 7-17, each op in the form of its opset, with the idioms of older exporters:
// Constant nodes for constants, IR 3 initializers listed as graph inputs, Upsample, zero Pads,
// Dropout in inference graphs, Flatten+Gemm classifier heads, NHWC Transpose sandwiches. The
// same seed always gives the same model, bit for bit.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnxtool::differential {

/// The pattern families the generator draws blocks from.
const std::vector<std::string>& block_kinds();

struct Generated {
  ir::Model model;
  int64_t opset = 0;
  /// The blocks, in graph order ("conv_stack", "shape_slice_output", ...): each one is drawn
  /// from its own random stream, so a block can be left out (minimization) without changing
  /// the others' parameters.
  std::vector<std::string> blocks;
  /// The concrete shape to feed each input (symbolic dims chosen by the seed).
  std::map<std::string, std::vector<int64_t>> input_shapes;
  /// "seed 17, opset 13, x float[N,3,5,6] (N=2): conv_stack shape_reshape gelu".
  std::string description;
};

/// The model of `seed`. `keep`, when not empty, says which of the seed's blocks to build (the
/// others are left out).
Generated generate(uint64_t seed, const std::vector<bool>& keep = {});

}  // namespace onnxtool::differential
