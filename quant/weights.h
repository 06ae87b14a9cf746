// Weight quantization: float constants to int8/uint8 initializers with their scales and zero
// points, per tensor or per channel.
#pragma once

#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/graph_util.h"
#include "quant/quant_params.h"

namespace onnxtool::quant {

/// A quantized constant as initializers added to a graph.
struct QuantizedWeight {
  ir::Value* data = nullptr;        ///< int8/uint8, the weight's dims
  ir::Value* scale = nullptr;       ///< float: [] per tensor, [channels] per channel
  ir::Value* zero_point = nullptr;  ///< weight type, same shape as scale
  std::vector<float> scales;
  std::vector<int32_t> zero_points;
  int64_t axis = -1;  ///< the channel axis, -1 per tensor
};

/// Quantizes a float constant (values, dims) into new initializers named after `base` (fresh
/// names), per tensor (axis -1) or per channel along `axis`, with symmetric ranges (zero point 0
/// for int8, 128 for uint8) as weights want. `values` must not be empty: callers leave an op with
/// an empty weight in float (its channel dim may be any size at all).
QuantizedWeight quantize_weight(ir::Graph& graph, const std::string& base, const std::vector<double>& values,
                                const std::vector<int64_t>& dims, int64_t axis, QuantType type, const ParamOptions& options);

/// The values of `v` when it is a float32 constant a weight can be quantized from: not empty
/// (an empty weight stays float: its channel dim may be any size at all), rank within
/// [min_rank, max_rank]; otherwise nullopt.
std::optional<ir::FloatConstant> quantizable_weight(const ir::Model& model, const ir::Value* v, size_t min_rank = 0,
                                                        size_t max_rank = std::numeric_limits<size_t>::max());

/// Adds a float initializer.
ir::Value* add_float(ir::Graph& graph, const std::string& base, std::vector<int64_t> dims, const std::vector<float>& values);
/// Adds an int32 initializer.
ir::Value* add_int32(ir::Graph& graph, const std::string& base, std::vector<int64_t> dims, const std::vector<int32_t>& values);

}  // namespace onnxtool::quant
