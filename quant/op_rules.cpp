// The quantizer's per-operator table (quant/op_rules.h).
#include "quant/op_rules.h"

#include <algorithm>

#include "ir/graph_util.h"

namespace onnxtool::quant {

namespace {

/// Product of the kernel's spatial dims (weight dims from 2 on).
double kernel_size(const std::vector<int64_t>& d) {
  double k = 1;
  for (size_t i = 2; i < d.size(); ++i) k *= static_cast<double>(d[i]);
  return k;
}

int64_t conv_axis(const ir::Node&) { return 0; }                 // W [M, C/group, k...]
int64_t conv_transpose_axis(const ir::Node&) { return 1; }       // W [C, M/group, k...]
int64_t gemm_axis(const ir::Node& n) { return n.attr_int("transB", 0) ? 0 : 1; }
int64_t matmul_axis(const ir::Node&) { return 1; }               // B [K, N]
int64_t recurrent_axis(const ir::Node&) { return 1; }            // W [directions, gates * hidden, input]

double conv_macs(const ir::Node&, const std::vector<int64_t>& d) {
  return d.size() >= 2 ? static_cast<double>(d[1]) * kernel_size(d) : 0;
}
double conv_transpose_macs(const ir::Node& n, const std::vector<int64_t>& d) {
  if (d.size() < 2) return 0;
  return static_cast<double>(d[0]) / static_cast<double>(std::max<int64_t>(1, n.attr_int("group", 1))) * kernel_size(d);
}
double gemm_macs(const ir::Node& n, const std::vector<int64_t>& d) {
  return d.size() == 2 ? static_cast<double>(n.attr_int("transB", 0) ? d[1] : d[0]) : 0;
}
double matmul_macs(const ir::Node&, const std::vector<int64_t>& d) {
  return d.size() >= 2 ? static_cast<double>(d[d.size() - 2]) : 0;
}
double no_macs(const ir::Node&, const std::vector<int64_t>&) { return 0; }

}  // namespace

const std::vector<OpRule>& op_rules() {
  // op, static, dynamic, dynamic by default, weight, bias, integer kernel, weight axis, macs
  static const std::vector<OpRule> rules = {
      {"Conv", true, true, false, 1, 2, "QLinearConv", conv_axis, conv_macs},
      {"ConvTranspose", true, false, false, 1, 2, "", conv_transpose_axis, conv_transpose_macs},
      {"Gemm", true, true, true, 1, 2, "com.microsoft::QGemm", gemm_axis, gemm_macs},
      {"MatMul", true, true, true, 1, -1, "QLinearMatMul", matmul_axis, matmul_macs},
      {"Add", true, false, false, -1, -1, "", nullptr, no_macs},
      {"Mul", true, false, false, -1, -1, "", nullptr, no_macs},
      {"Concat", true, false, false, -1, -1, "", nullptr, no_macs},
      {"MaxPool", true, false, false, -1, -1, "", nullptr, no_macs},
      {"AveragePool", true, false, false, -1, -1, "", nullptr, no_macs},
      {"GlobalAveragePool", true, false, false, -1, -1, "", nullptr, no_macs},
      {"Resize", true, false, false, -1, -1, "", nullptr, no_macs},
      {"Reshape", true, false, false, -1, -1, "", nullptr, no_macs},
      {"Transpose", true, false, false, -1, -1, "", nullptr, no_macs},
      {"Squeeze", true, false, false, -1, -1, "", nullptr, no_macs},
      {"Unsqueeze", true, false, false, -1, -1, "", nullptr, no_macs},
      {"Flatten", true, false, false, -1, -1, "", nullptr, no_macs},
      // Weight-only: the integer recurrence runs with dequantized weights (onnxruntime's
      // DynamicQuantizeLSTM is a contrib op, not standard).
      {"LSTM", false, true, false, 1, -1, "", recurrent_axis, no_macs},
      {"GRU", false, true, false, 1, -1, "", recurrent_axis, no_macs},
      {"RNN", false, true, false, 1, -1, "", recurrent_axis, no_macs},
  };
  return rules;
}

const OpRule* op_rule(const ir::Node& node) {
  if (!node.domain.empty() && node.domain != "ai.onnx") return nullptr;
  for (const OpRule& r : op_rules())
    if (r.op_type == node.op_type) return &r;
  return nullptr;
}

const std::vector<int64_t>* weight_dims(const ir::Model& model, const ir::Node& node, const ir::Value* weight) {
  const OpRule* rule = op_rule(node);
  if (!rule || rule->weight_input < 0 || !node.domain.empty()) return nullptr;
  if (!weight) weight = node.input(static_cast<size_t>(rule->weight_input));
  const ir::Tensor* w = weight ? ir::constant_of(model, weight) : nullptr;  // its dims; the values stay encoded
  return w ? &w->dims : nullptr;
}

double reduction_size(const ir::Model& model, const ir::Node& node, const ir::Value* weight) {
  const std::vector<int64_t>* dims = weight_dims(model, node, weight);
  if (!dims || dims->empty()) return 0;
  return op_rule(node)->macs(node, *dims);
}

}  // namespace onnxtool::quant
