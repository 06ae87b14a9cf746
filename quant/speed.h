// What quantization is expected to gain in a runtime that runs quantized groups as integer
// kernels (onnxruntime's CPU provider fuses DequantizeLinear -> Conv/MatMul/Gemm -> QuantizeLinear
// into QLinearConv/QLinearMatMul/QGemm, and DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul
// into one dynamic kernel): multiply-accumulates moved to int8 against the QuantizeLinear and
// DequantizeLinear passes left at the groups' borders, at each tensor's size.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnxtool::quant {

/// Costs in units of one float multiply-accumulate of a dense Conv (about 7 ps), from single-op
/// models in onnxruntime-node 1.30 at 2 threads: float and in the QDQ form quantize writes, timed
/// per kernel by its profiler (bench/quant_op_costs.py prints the measurements). A Conv's time is
/// not its MACs alone: a 1x1 Conv moves more memory per MAC than a 3x3, hence the per-element
/// terms. bench/quantize_models.sh checks the estimate against whole models, which decided
/// between single-op readings: the MAC and element terms are those of 64-channel Convs at 80x80;
/// a least-squares fit over all of quant_op_costs.py's shapes gives smaller element terms and
/// made the estimate refuse the PaddleOCR v4 detector, which quantized runs 1.13x faster than its
/// rewritten float model.
struct CostModel {
  /// An int8 MAC of a Conv/MatMul/Gemm run as an integer kernel (QLinearConv: 0.31-0.51 of the
  /// float Conv's time on dense Convs with 8 or more input channels at up to 80x80).
  double int8_mac = 0.27;
  /// Each input and output element of a float Conv/MatMul/Gemm (a 1x1 64-channel Conv at 80x80
  /// runs at a third of a 3x3's MAC rate), and of an integer one (a quarter of the bytes).
  double float_element = 95;
  double int8_element = 50;
  /// Depthwise and grouped Convs, and Convs of fewer than 8 input channels (a 3-channel stem):
  /// onnxruntime's integer kernels for them are slower than its float ones (1.0-3.2x the float
  /// time over 10 shapes; about the median).
  double slow_conv_factor = 1.4;
  /// One element through a QuantizeLinear or DequantizeLinear that stays an op of its own.
  double qdq_element = 30;
  /// What any kernel costs besides its elements (0.27-0.40 us on 8-element tensors).
  double node_fixed = 45000;
  /// One output element of any other op (what the model costs besides its products).
  double other_element = 40;
  /// Dynamic MatMul/Gemm: an int8 MAC of MatMulInteger, and each input element (its
  /// DynamicQuantizeLinear: a min/max pass, then the quantization) and output element (the
  /// int32 product rescaled to float).
  double dynamic_mac = 0.33;
  double dynamic_element = 30;
  /// Dynamic Conv: onnxruntime runs ConvInteger without the fused kernels MatMulInteger gets,
  /// slower than its float Conv (PaddleOCR rec 0.22x): an int8 MAC costs two float ones.
  double dynamic_conv_mac = 2.0;
};

const CostModel& default_cost_model();

/// One group of quantized tensors (static: tensors linked by the ops that read or write them in
/// integers; dynamic: one node) and what it is expected to save.
struct GroupEstimate {
  std::vector<std::string> nodes;  ///< its Conv/MatMul/Gemm nodes
  double int8_macs = 0;            ///< per sample
  int slow_convs = 0;              ///< its Convs whose integer kernel is slower (slow_integer_conv)
  double border_elements = 0;      ///< through standalone QuantizeLinear/DequantizeLinear, per sample
  int border_nodes = 0;            ///< those standalone QuantizeLinear/DequantizeLinear
  double gain = 0;                 ///< float-MAC units per sample (negative: slower)
};

/// Element counts per sample of a graph's tensors (0 when unknown).
using ElementCount = std::function<double(const ir::Value* v)>;

/// The elements per sample of v: `sizes` (by name: counted while the samples ran), else its
/// static shape's, else those of the Relu/Clip that is its one reader (a Conv output fused with
/// its Relu is not observed); 0 when unknown.
double element_count(const std::map<std::string, double>& sizes, const ir::Value* v);

/// The float cost of a model (every node of every graph: multiply-accumulates of ops with a
/// constant weight, output elements of the others, and each kernel's fixed cost), float-MAC
/// units per sample.
double float_cost(const ir::Model& model, const ElementCount& elements, const CostModel& costs = default_cost_model());

/// Multiply-accumulates of node (given its weight value; the node's own when null) per sample.
double node_macs(const ir::Model& model, const ir::Node& node, const ElementCount& elements, const ir::Value* weight = nullptr);

/// The elements a node with a weight reads (its first input) and writes, per sample.
double node_elements(const ir::Node& node, const ElementCount& elements);

/// True when onnxruntime's integer kernel for node is slower than its float one: a Conv that is
/// grouped (depthwise included) or has fewer than 8 input channels (given its weight value; the
/// node's own when null).
bool slow_integer_conv(const ir::Model& model, const ir::Node& node, const ir::Value* weight = nullptr);

/// What running one Conv/MatMul/Gemm as a static integer kernel saves per sample (negative for
/// a slow_integer_conv), and as a dynamic one (quantizing its input at run time), in float-MAC
/// units.
double static_gain(double macs, double elements, bool slow, const CostModel& costs = default_cost_model());
double dynamic_gain(double macs, double elements, bool conv, const CostModel& costs = default_cost_model());

/// The estimated speed-up of the whole model: float cost over float cost minus the gains.
double estimated_speedup(double float_cost, const std::vector<GroupEstimate>& groups);

}  // namespace onnxtool::quant
