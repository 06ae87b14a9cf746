// The attributes of RNN, GRU and LSTM that every device reads the same way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runner/kernel.h"

namespace onnxtool::runner {

enum class RecurrentCell { kRnn, kGru, kLstm };

/// The spec's activation functions, in the order of RecurrentActivation::kind (the Vulkan
/// shader's codes).
extern const char* const kRecurrentActivationNames[11];

/// One of the spec's activation functions with its alpha and beta.
struct RecurrentActivation {
  std::string name;  ///< "Sigmoid", "Tanh", "Relu", "Affine", "LeakyRelu", ...
  float alpha = 0, beta = 0;
  uint32_t kind = 0;  ///< its index in kRecurrentActivationNames
};

/// The activation list of a node with `dirs` directions (1 for RNN, 2 for GRU and 3 for LSTM
/// per direction; the spec's defaults when absent), alphas and betas taken in order by the
/// functions that have them. Fails on an unknown function or a list of the wrong length.
std::vector<RecurrentActivation> recurrent_activations(const NodeAttributes& node, RecurrentCell cell, int64_t dirs);

}  // namespace onnxtool::runner
