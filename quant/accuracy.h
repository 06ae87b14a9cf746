// What quantization costs in accuracy, measured against fp32 on sample inputs, and the search
// that keeps layers in float until the outputs are accurate enough (--auto-exclude). Shared by
// the dynamic and the static quantizer.
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
/// target, binary-searches the fewest tensors to keep in float for the outputs to reach it, in
/// two orders: the graph's (the first layers) and the most harmful first (by the noise each
/// adds); the list whose producers do fewer multiply-accumulates wins. Throws Error(kFailed) when even every tensor in float does not
/// reach the target.
std::pair<std::unique_ptr<ir::Model>, QuantizeReport> quantize_with_exclusions(const QuantizeOptions& options,
                                                                               const Attempt& attempt);

}  // namespace onnxtool::quant
