// What quantization costs in accuracy, measured against fp32 on sample inputs, and the search
// that keeps layers in float until the outputs are accurate enough (--auto-exclude). Shared by
// the dynamic and the static quantizer.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "quant/quantize.h"
#include "runner/tensor.h"

namespace onnxtool::quant {

using Feeds = std::map<std::string, runner::Value>;

/// A copy of the model to rewrite, with the value types the quantizers select by inferred again
/// (a serialized model keeps only the declared ones; `infer` false: not inferred, a copy to give
/// back as it was). The copy shares the weights' bytes with `model` (which is left as it was:
/// its raw_data is set aside while the graph is serialized).
ir::Model copy_model(ir::Model& model, bool infer = true);

/// A subsample of a float tensor that its quantized counterpart is compared with: runs of
/// kRun consecutive elements, one run in every `stride` elements (consecutive elements: strided
/// single elements cost a cache miss each), or the whole tensor (stride == run == 1). Each run
/// starts at a fixed pseudo-random offset within its stride: at regular offsets the runs fell
/// on the same columns of every row of an image (its left edge and middle).
struct Reference {
  static constexpr int64_t kRun = 16;
  std::vector<float> values;
  int64_t stride = 1, run = 1, size = 0;
  /// Where run r starts.
  int64_t start(int64_t r) const {
    const int64_t base = r * stride, span = std::min(stride, size - base);
    if (span <= run) return base;
    const uint64_t mixed = (static_cast<uint64_t>(r) + 1) * 0x9E3779B97F4A7C15ull;  // Fibonacci hashing
    return base + static_cast<int64_t>((mixed >> 32) % static_cast<uint64_t>(span - run + 1));
  }
  /// Position in the tensor of values[k].
  int64_t position(int64_t k) const { return start(k / run) + k % run; }
};

/// The fp32 side of the error measurement, recorded once and compared against by every
/// quantization attempt: per sample, a subsample of every float tensor (2^14 elements, fewer
/// per sample when there are more than two samples: 2^15 over all of them, SQNR and cosine
/// within a few percent) and the float graph outputs (whole up to 2^18 elements, a subsample
/// beyond, 2^20 over all samples). Samples stop being recorded once they hold 1 GiB; the errors
/// are then measured on the ones recorded.
class References {
 public:
  /// `planned`: how many samples will be recorded (the elements kept per sample shrink as they
  /// grow in number).
  explicit References(size_t planned = 1) : planned_(planned) {}
  /// One sample: begin(), then add() every float tensor the fp32 run produces (an observer)
  /// and its float inputs, then end() with the run's outputs. Returns false from begin() when
  /// no more samples fit.
  bool begin();
  void add(const std::string& name, const runner::Tensor& t);
  void end(const std::vector<runner::Value>& outputs);
  size_t samples() const { return samples_.size(); }
  /// Elements per sample of each float tensor recorded (main graph), by name.
  std::map<std::string, double> sizes() const {
    std::map<std::string, double> out;
    for (const auto& [name, total] : elements_) out[name] = samples_.empty() ? 0 : total / static_cast<double>(samples_.size());
    return out;
  }

 private:
  friend void measure_errors(ir::Model&, ir::Model&, const References&, const SampleSource&, QuantizeReport&,
                             const std::vector<std::string>&, const ir::Progress&);
  struct Sample {
    std::map<std::string, Reference> tensors;
    std::vector<std::optional<Reference>> outputs;
  };
  std::vector<Sample> samples_;
  std::map<std::string, double> elements_;  // per float tensor, over the recorded samples
  size_t bytes_ = 0;
  size_t planned_ = 1;
};

/// Records the fp32 references of the first `count` samples by running the model on them,
/// reporting each run to `progress` ("reference runs").
References record_references(ir::Model& fp32, const SampleSource& samples, size_t count, const ir::Progress& progress = {});

/// The references of the first options.error_samples samples when there are samples (none
/// without), their number in report.samples. Throws Error(kUsage) when `samples` gives none.
References optional_references(ir::Model& fp32, const SampleSource& samples, const QuantizeOptions& options,
                               QuantizeReport& report);

/// Runs the quantized model on the first references.samples() samples, one at a time, and fills
/// each report entry's SQNR, cosine and added noise (entries with a `dequantized` tensor), and
/// the report's output scores, against the fp32 references of the same samples; the outputs
/// scored are `judged` (all float outputs when empty). Each run is reported to `progress`
/// ("error measurement").
void measure_errors(ir::Model& fp32, ir::Model& quantized, const References& references,
                    const SampleSource& samples, QuantizeReport& report, const std::vector<std::string>& judged = {},
                    const ir::Progress& progress = {});

/// One quantization of a copy of the model, keeping these tensors in float, measured, its error
/// measurement reported to `progress`.
using Attempt = std::function<std::pair<std::unique_ptr<ir::Model>, QuantizeReport>(const std::vector<std::string>& excluded,
                                                                                    const ir::Progress& progress)>;

/// The most attempts quantize_with_exclusions makes when the first one quantizes `candidates`
/// tensors: that one, the two orders' binary searches for the aim and then the target, and the
/// pruning of the list found.
int max_attempts(size_t candidates);

/// Quantizes with nothing excluded; with options.auto_exclude and an output score below the
/// target, binary-searches the fewest tensors to keep in float for the outputs to reach it, in
/// two orders: the graph's (the first layers) and the most harmful first (by the noise each
/// adds); the list whose producers do fewer multiply-accumulates wins. When no attempt with a
/// node quantized reaches the target, returns no model (nullptr) and a report with no quantized
/// node whose missed_target is the best score an attempt reached (and blocking_outputs the
/// outputs that kept it from the target). The first attempt reports its error measurement to
/// options.progress as it is; the later ones as steps of one phase, "accuracy search",
/// "attempt N of at most M". No attempt starts that would end past options.deadline, as long as
/// the longest attempt so far took: the best quantization that reached the target so far is
/// returned, else none, report.timed_out_after set.
std::pair<std::unique_ptr<ir::Model>, QuantizeReport> quantize_with_exclusions(const QuantizeOptions& options,
                                                                               const Attempt& attempt);

}  // namespace onnxtool::quant
