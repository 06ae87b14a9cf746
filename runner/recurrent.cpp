#include "runner/recurrent.h"

namespace onnxtool::runner {

const char* const kRecurrentActivationNames[11] = {"Sigmoid",    "Tanh",        "Relu", "Affine",   "LeakyRelu", "ThresholdedRelu",
                                                   "ScaledTanh", "HardSigmoid", "Elu",  "Softsign", "Softplus"};

std::vector<RecurrentActivation> recurrent_activations(const NodeAttributes& node, RecurrentCell cell, int64_t dirs) {
  std::vector<std::string> names;
  if (const ir::Attribute* a = node.node().attr("activations")) names = a->strings;
  const std::vector<std::string> defaults = cell == RecurrentCell::kLstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                            : cell == RecurrentCell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                                          : std::vector<std::string>{"Tanh"};
  const size_t per_dir = defaults.size();
  if (names.empty())
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() != per_dir * static_cast<size_t>(dirs))
    node.fail("activations must list " + std::to_string(per_dir * static_cast<size_t>(dirs)) + " functions");
  const auto alphas = node.attr_floats("activation_alpha");
  const auto betas = node.attr_floats("activation_beta");
  std::vector<RecurrentActivation> out;
  size_t ai = 0, bi = 0;
  for (const auto& n : names) {
    uint32_t kind = 0;
    while (kind < 11 && n != kRecurrentActivationNames[kind]) ++kind;
    if (kind == 11) node.fail("unknown activation '" + n + "'");
    RecurrentActivation a{n};
    a.kind = kind;
    const bool uses_alpha = n == "Affine" || n == "LeakyRelu" || n == "ThresholdedRelu" || n == "ScaledTanh" ||
                            n == "HardSigmoid" || n == "Elu";
    const bool uses_beta = n == "Affine" || n == "ScaledTanh" || n == "HardSigmoid";
    const float default_alpha = n == "LeakyRelu" ? 0.01f : n == "HardSigmoid" ? 0.2f : 1.0f;
    const float default_beta = n == "HardSigmoid" ? 0.5f : n == "ScaledTanh" ? 1.0f : 0.0f;
    a.alpha = uses_alpha ? (ai < alphas.size() ? alphas[ai++] : default_alpha) : 0;
    a.beta = uses_beta ? (bi < betas.size() ? betas[bi++] : default_beta) : 0;
    out.push_back(a);
  }
  return out;
}

}  // namespace onnxtool::runner
