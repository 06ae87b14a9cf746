// What the quantizer knows about each operator it quantizes, in one table: the modes that
// quantize it, its weight and bias inputs, the weight's per-channel axis, the integer kernel a
// runtime fuses it into, and its multiply-accumulate count (what --auto-exclude weighs).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace onnxtool::quant {

struct OpRule {
  std::string_view op_type;  ///< default domain
  bool static_qdq;           ///< quantized by static mode (its float inputs, and its weight)
  bool dynamic;              ///< quantized by dynamic mode (its weight; inputs at run time)
  /// Dynamic mode quantizes it without --op-types naming it. Conv is opt-in: onnxruntime runs
  /// ConvInteger far slower than a float Conv (PaddleOCR rec 0.22x), and recurrent ops have no
  /// integer kernel at all (weight-only; Silero v6's state cosine 0.990 -> 0.987).
  bool dynamic_default;
  int weight_input;          ///< the constant weight input (-1: none)
  int bias_input;            ///< the bias input, quantized to int32 with the weight (-1: none)
  /// The integer operator a runtime fuses the quantized op into, "domain::op" outside the
  /// default domain ("": none; the op then runs in float between DequantizeLinear and
  /// QuantizeLinear).
  std::string_view integer_kernel;
  /// The weight's per-channel axis (its output channels); only for rules with a weight.
  int64_t (*weight_axis)(const ir::Node& node);
  /// Multiply-accumulates per output element given the weight's dims (0 when they do not fit).
  double (*macs)(const ir::Node& node, const std::vector<int64_t>& weight_dims);
};

/// Every rule, in the order the quantizer lists the op types.
const std::vector<OpRule>& op_rules();
/// The rule of a node's op (default domain only), or nullptr.
const OpRule* op_rule(const ir::Node& node);

/// The dims of a node's constant weight (`weight`, by default its rule's weight input; the values
/// stay encoded), or nullptr when its op has no rule with a weight or the weight is not constant.
const std::vector<int64_t>* weight_dims(const ir::Model& model, const ir::Node& node, const ir::Value* weight = nullptr);

/// Multiply-accumulates per output element of a node whose rule has a weight, from the dims of
/// its constant weight (`weight`, by default the node's weight input; its values stay encoded);
/// 0 for anything else.
double reduction_size(const ir::Model& model, const ir::Node& node, const ir::Value* weight = nullptr);

}  // namespace onnxtool::quant
