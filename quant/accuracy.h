// What quantization costs in accuracy, measured against fp32 on sample inputs, and the search
// that keeps the most harmful layers in float (--auto-exclude). Shared by the dynamic and the
// static quantizer.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "quant/quantize.h"
#include "runner/tensor.h"

namespace onnxtool::quant {

using Feeds = std::map<std::string, runner::Value>;

/// A copy of the model to rewrite, with the value types the quantizers select by inferred again
/// (a serialized model keeps only the declared ones).
ir::Model copy_model(const ir::Model& model);

/// Runs the fp32 and the quantized model on the samples, one sample at a time, and fills each
/// report entry's SQNR, cosine and added noise (entries with a `dequantized` tensor), and the
/// report's output cosine.
void measure_errors(ir::Model& fp32, ir::Model& quantized, const std::vector<Feeds>& samples, QuantizeReport& report);

/// One quantization of a copy of the model, keeping these tensors in float, measured.
using Attempt = std::function<std::pair<std::unique_ptr<ir::Model>, QuantizeReport>(const std::vector<std::string>& excluded)>;

/// Quantizes with nothing excluded; with options.auto_exclude and an output cosine below the
/// target, ranks the quantized tensors by the noise they add and binary-searches the smallest
/// number of the worst ones to keep in float for the outputs to reach it. Throws Error(kFailed)
/// when even every tensor in float does not.
std::pair<std::unique_ptr<ir::Model>, QuantizeReport> quantize_with_exclusions(const QuantizeOptions& options,
                                                                               const Attempt& attempt);

}  // namespace onnxtool::quant
