// INT8 quantization of a model: dynamic (weights now, activations at run time with standard
// ops) and static (activation ranges from calibration, QDQ or QOperator format).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/progress.h"
#include "quant/calibration.h"
#include "quant/quant_params.h"
#include "quant/speed.h"
#include "runner/feeds.h"
#include "runner/tensor.h"

namespace onnxtool::quant {

enum class Mode { kDynamic, kStatic, kWeightOnly };
/// kQdq: QuantizeLinear/DequantizeLinear pairs (static, dynamic) or a blocked DequantizeLinear
/// before the float MatMul (weight-only); kQOperator: QLinearConv/QLinearMatMul (static);
/// kMatMulNBits: onnxruntime's com.microsoft MatMulNBits with the packed weight (weight-only).
enum class Format { kQdq, kQOperator, kMatMulNBits };

struct QuantizeOptions {
  Mode mode = Mode::kDynamic;
  Format format = Format::kQdq;
  CalibrationOptions calibration;
  /// Weights scaled per output channel (Conv, ConvTranspose, Gemm, MatMul columns): BatchNorm-
  /// folded convolutions have channels of very different magnitudes (PaddleOCR rec: cosine 0.98
  /// per channel, 0.67 per tensor).
  bool per_channel = true;
  QuantType weight_type = QuantType::kInt8;
  QuantType activation_type = QuantType::kUInt8;
  bool symmetric_activations = false;
  bool reduce_range = false;
  /// Only these op types (empty: every supported one).
  std::vector<std::string> op_types;
  std::vector<std::string> exclude_nodes;
  std::vector<std::string> exclude_op_types;
  /// Static: keep the most harmful nodes in float until the outputs' cosine similarity to fp32
  /// (over the error samples) reaches accuracy_target (aiming at half its distance to 1 beyond
  /// it: quantize_with_exclusions).
  bool auto_exclude = false;
  double accuracy_target = 0.99;
  /// The outputs the accuracy target judges (empty: every float output). Models exported with
  /// training outputs (ISNet's six deep-supervision feature maps) are judged on what is used.
  std::vector<std::string> accuracy_outputs;
  /// Static: how many of the first calibration samples are kept to measure per-node errors.
  int error_samples = 8;
  /// Float tensors never quantized (what auto-exclude keeps in float: the tensor, hence its
  /// producer's output and the readers that only have it as activation).
  std::vector<std::string> exclude_tensors;
  /// Weight-only: bits per weight (4 or 8) and the rows of a weight column that share a scale.
  int bits = 4;
  int64_t block_size = 32;
  /// Why some of exclude_tensors stay float (what the report says of their producers).
  std::map<std::string, std::string> float_reasons;
  /// Set by quantize_model, which checks op_types, exclude_op_types and exclude_nodes
  /// against the model as given: its preprocessing may fold or fuse the nodes they name away
  /// (a Transpose into a Gemm), which is no reason to refuse them.
  bool selection_checked = false;
  /// Receives the progress of the long phases: calibration runs, reference runs, error
  /// measurement, the accuracy search (empty: nothing reported).
  ir::Progress progress;
  /// Set by quantize_model for a float16/bfloat16 model, which is quantized widened to float32:
  /// the bytes per element of each float initializer as the model stored it, and those of most
  /// of its float weights (for weights its preprocessing derived), so that the report's
  /// float_weight_bytes are the bytes the model held, not float32's. Empty: 4 bytes each.
  std::map<std::string, int> stored_element_bytes;
  int default_stored_element_bytes = 4;
  /// How many samples the source holds, when known (for progress only; 0: unknown).
  int64_t sample_count = 0;
  /// quantize_model without sample folders (dynamic, weight-only): the accuracy is measured on
  /// this many random samples instead (0: not measured, quantize --no-verify), drawn as these feed options say (seed
  /// of the first sample, value ranges, sizes of free dims; the free dims otherwise sized as
  /// verification sizes them).
  int random_samples = 4;
  runner::FeedOptions random_feeds;
  /// Set by quantize_model when there are no sample folders (the accuracy measured on random
  /// samples, or not at all): rewrites whose error depends on the input's dynamic range, which
  /// random data does not have (a 1-D Conv as a MatMulInteger over its windows, its input
  /// quantized per tensor at run time), are then not made by default.
  bool samples_random = false;
  /// No accuracy-search attempt starts after this (quantize --time-limit); the default never.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

/// What quantization did to one node.
struct NodeReport {
  std::string node;
  std::string op_type;
  std::string tensor;  ///< the activation quantized (static), or the weight (dynamic)
  double range_min = 0, range_max = 0;
  float scale = 0;
  int32_t zero_point = 0;
  /// Signal-to-quantization-noise ratio (dB) of the weight (dynamic) or of the quantized
  /// activation against fp32 on the error samples (static: the error accumulated up to here).
  double sqnr_db = 0;
  /// Static: cosine similarity of the quantized activation to fp32 on the error samples.
  double cosine = 0;
  /// Static: the noise quantizing this tensor adds, relative to the signal (dB; -30 is a
  /// thousandth of the signal power): its noise-to-signal ratio minus that of the least accurate
  /// quantized tensor feeding it. Auto-exclude keeps the highest ones in float.
  double added_noise_db = 0;
  /// Static: the multiply-accumulates of its producer over the error samples (Conv,
  /// ConvTranspose, Gemm, MatMul with a constant weight; 0 for other ops): what keeping the
  /// tensor in float gives up in integer kernels. Auto-exclude keeps the cheaper list in float.
  double producer_macs = 0;
  /// Static: the fp32 values are compared clamped to this interval, where the tensor's readers
  /// saturate outside it (a Conv output read only by HardSwish is quantized from -3 up).
  double reference_min = -std::numeric_limits<double>::infinity();
  double reference_max = std::numeric_limits<double>::infinity();
  /// The float tensor of the quantized model that stands for the fp32 one (static: the
  /// DequantizeLinear output of `tensor`; dynamic: the rescaled integer result of the node).
  std::string dequantized;
  /// Dynamic: the node's fp32 output `dequantized` is compared with (static: `tensor`).
  std::string output;
};

/// A node of an op type the mode quantizes that stays float, and why.
struct FloatNode {
  std::string node;
  std::string op_type;
  std::string tensor;  ///< its output
  std::string reason;
  /// The options that decide it or would change it, by QuantizeOptions field name ("op_types"),
  /// for the caller to name.
  std::vector<std::string> options;
};

/// Why a node stays float: FloatNode's reason and options.
struct FloatReason {
  std::string text;
  std::vector<std::string> options;
};

/// The error of one judged output: cosine for large outputs, relative error (RMS) for small ones
/// (the other -1). The cosine is floored at 0: -1 means "not measured".
struct OutputError {
  std::string name;
  double cosine = -1, rel_error = -1;
};

/// Outputs of at most this many elements per sample are judged by relative error, not cosine
/// (the cosine of a probability or of a pair of logits says little).
constexpr int64_t kSmallOutput = 4;

/// The estimated speed-up below which a static or dynamic quantization is not worth its error
/// (the model is written unchanged unless --op-types names the ops): the estimate is off by 20%
/// on the median model, and what the PaddleOCR recognizers and Silero VAD v5 reached under it
/// (1.00-1.03x estimated) measured 0.98-1.05x over their rewritten float models.
constexpr double kWorthSpeedup = 1.05;

/// Why quantize_model leaves a model as it came, in the order it decides them.
enum class Unchanged {
  kNo,              ///< quantized
  kLargerThanHalf,  ///< a float16/bfloat16 model whose int8 result (float32 elsewhere) is larger
  kSlowerEstimate,  ///< the estimated speed-up with integer kernels is below kWorthSpeedup
  kTimedOut,        ///< the accuracy search reached its deadline before a quantization met the target
  kMissedTarget,    ///< no quantization with a node quantized meets the accuracy target
  kAllKeptFloat,    ///< every candidate node stays float (kept_float says why for each)
  kNoCandidate,     ///< the model has no node the mode quantizes
};

struct QuantizeReport {
  std::vector<NodeReport> nodes;
  /// Nodes left float, each with its reason (static: every node of a quantized op type; dynamic:
  /// the MatMul/Gemm/Conv/recurrent nodes).
  std::vector<FloatNode> kept_float;
  int64_t quantized_nodes = 0;
  int64_t float_weight_bytes = 0;      ///< stored bytes of the weights that were quantized, as the model held them
  int64_t quantized_weight_bytes = 0;  ///< their int8 bytes plus scales and zero points
  int64_t nan_values = 0, inf_values = 0;  ///< seen in calibration data
  int64_t samples = 0;
  int64_t opset_from = 0, opset_to = 0;  ///< when the model had to be moved to a newer opset
  /// The lowest cosine similarity of a float model output to fp32 on the error samples, over the
  /// outputs of more than kSmallOutput elements, floored at 0 (-1 when not measured or none).
  double output_cosine = -1;
  /// The largest relative error (RMS of the error over RMS of fp32) of a float output of at most
  /// kSmallOutput elements per sample (-1 when not measured or none).
  double output_rel_error = -1;
  /// Per judged output (measured runs only).
  std::vector<OutputError> outputs;
  /// What --accuracy-target is compared with: the lowest of output_cosine and the cosine a large
  /// output with small outputs' relative error would have, 1 / sqrt(1 + error^2) (error
  /// orthogonal to the signal: a target of 0.99 allows a relative error of 0.142) (-1 when not
  /// measured).
  double output_score() const {
    if (output_cosine < 0 && output_rel_error < 0) return -1;
    double s = output_cosine < 0 ? 1 : output_cosine;
    if (output_rel_error >= 0) s = std::min(s, 1 / std::sqrt(1 + output_rel_error * output_rel_error));
    return s;
  }
  /// Static with auto_exclude: the tensors kept in float (with their producer), in the order
  /// they were excluded.
  std::vector<std::string> auto_excluded;
  int64_t error_samples = 0;
  /// The groups of quantized tensors kept, with what each is expected to save (quant/speed.h).
  std::vector<GroupEstimate> groups;
  /// The model's float cost per sample (float-MAC units) and the estimated speed-up of the
  /// quantized model in a runtime with integer kernels (-1: not estimated).
  double float_cost = 0;
  double estimated_speedup = -1;
  /// Entropy/percentile calibration: the output score with its ranges and with the extremes
  /// (minmax), and whether the extremes were used because they scored higher.
  std::pair<double, double> calibration_scores{-1, -1};
  bool calibration_fallback = false;
  /// What the errors are measured against: the model's own float32, or a float16/bfloat16 model's
  /// values widened to float32 (quantize_model).
  std::string reference = "float32";
  /// The samples were random (quantize_model without sample folders), not real data: how they
  /// were drawn ("random (seed 0; ...)"); empty for samples from folders.
  std::string random_samples;
  /// With auto_exclude, when no quantization reaches the target (the model is left float): the
  /// best output score an attempt with some node quantized reached (-1: none was measured).
  double missed_target = -1;
  /// The output score the search for layers to keep float aimed at on the calibration samples:
  /// beyond the target, halfway to 1 (output_score() below it: only the target was reachable);
  /// -1 when there was no search.
  double aimed_target = -1;
  /// With missed_target: the judged outputs below the target with everything quantized, when
  /// other judged outputs reached it (a model's side outputs, which --accuracy-outputs can leave
  /// out), each with its score.
  std::vector<std::pair<std::string, double>> blocking_outputs;
  /// With blocking_outputs: the judged outputs that reached the target.
  std::vector<std::string> reaching_outputs;
  /// The accuracy search stopped at options.deadline after this many attempts (0: it did not).
  int timed_out_after = 0;
  /// Why quantize_model left the model as it came (kNo: it is quantized). The figures each
  /// reason rests on are the fields above (missed_target, blocking_outputs, timed_out_after,
  /// kept_float, estimated_speedup) and the two below.
  Unchanged unchanged = Unchanged::kNo;
  /// kLargerThanHalf: the float16/bfloat16 model's weight bytes and the result's.
  int64_t half_weight_bytes = 0, result_weight_bytes = 0;
  bool changed() const { return unchanged == Unchanged::kNo; }
};

/// The op types a mode handles (quantized by default or when --op-types names them).
const std::vector<std::string>& op_types_of(Mode mode);

/// Dynamic quantization: the constant weights of MatMul and Gemm (and Conv when options.op_types
/// names it) become int8/uint8 (per output channel, or per tensor); activations are quantized at
/// run time with DynamicQuantizeLinear, MatMulInteger / ConvInteger, Cast, Mul and Add.
/// LSTM/GRU/RNN weights, when options.op_types names them, are stored as int8 behind
/// DequantizeLinear (weight-only: no standard integer kernel). Throws Error(kUsage)
/// for an --op-types / --exclude name that matches nothing the model has.
/// With `samples` (optional), the first options.error_samples of them measure each node's error
/// and the outputs' cosine against fp32, and drive options.auto_exclude.
/// A source of calibration samples: loads sample `index` (from 0) into `feeds`, one sample at a
/// time so that memory stays bounded whatever their number, and again when asked again (the
/// error measurement reads its samples once more); returns false past the last one.
using SampleSource = std::function<bool(size_t index, std::map<std::string, runner::Value>& feeds)>;

QuantizeReport quantize_dynamic(ir::Model& model, const QuantizeOptions& options, const SampleSource& samples = {});

/// Static quantization: runs the model over the samples with an observer (no graph rewrite),
/// turns the statistics into ranges (options.calibration), and inserts QuantizeLinear /
/// DequantizeLinear pairs around the selected nodes (QDQ): activations at their calibrated
/// ranges, weights as int8 initializers behind DequantizeLinear (per channel when asked), biases
/// as int32 with scale input_scale x weight_scale. Relu and Clip after a quantized node fold
/// into its output range (asymmetric activations only). QOperator format then turns
/// DequantizeLinear -> Conv/MatMul -> QuantizeLinear groups into QLinearConv / QLinearMatMul.
/// Throws Error(kUsage) for no samples, and Error(kInput) naming the tensor when calibration saw
/// only NaN/Inf for a tensor it must quantize.
QuantizeReport quantize_static(ir::Model& model, const QuantizeOptions& options, const SampleSource& samples);

/// Weight-only quantization (options.bits, options.block_size): every selected MatMul's constant
/// 2-D weight [K, N] becomes int4/int8, symmetric, one float scale per block of block_size rows
/// of each column, behind a blocked DequantizeLinear (axis 0; the model moves to opset 21); the
/// arithmetic stays float. With `samples`, the outputs' errors are measured (not searched).
QuantizeReport quantize_weight_only(ir::Model& model, const QuantizeOptions& options, const SampleSource& samples = {});

/// QOperator format: turns each DequantizeLinear -> Conv / MatMul -> QuantizeLinear group of a
/// QDQ model (activation and weight from DequantizeLinear, output read only by one
/// QuantizeLinear) into QLinearConv / QLinearMatMul; groups that do not fit stay in QDQ.
/// Returns the number of nodes converted.
int64_t qdq_to_qoperator(ir::Model& model);

/// The opset static quantization moves older models to before preprocessing (HardSwish).
constexpr int64_t kStaticPreprocessOpset = 14;

/// Moves the model to opset `minimum` when it is older (the quantized ops need it), recording
/// the change in the report. Throws what convert_opset throws.
void ensure_opset(ir::Model& model, int64_t minimum, QuantizeReport& report);

/// What `onnxtool quantize` runs. With `preprocess`, static quantization first moves a model
/// older than kStaticPreprocessOpset there (best effort: a model the converter cannot move keeps
/// its opset), then the optimize pipeline runs. Then quantize_dynamic or quantize_static with
/// the samples of `sample_dirs` (one folder per sample, read by runner::load_feeds, checked
/// against the model's inputs); dynamic and weight-only modes need none, and are then measured
/// (and, with options.auto_exclude, kept float where needed) on options.random_samples random
/// samples. The report counts the opset change. When nothing is worth keeping (report.unchanged
/// says why), `model` is given back as it came (preprocessing and attempts undone) and the
/// report describes that model: what was attempted is listed in kept_float, nodes is empty.
QuantizeReport quantize_model(ir::Model& model, const QuantizeOptions& options, bool preprocess,
                              const std::vector<std::string>& sample_dirs);

/// Node selection shared by the modes: true when `node` is to be quantized in options.mode (its
/// op is one the mode handles, by default or named by --op-types, and nothing excludes it).
bool selected(const ir::Node& node, const QuantizeOptions& options);

/// Why selected() leaves a node of a quantized op type float (the report's words).
FloatReason unselected_reason(const ir::Node& node, const QuantizeOptions& options);

/// Checks --op-types / --exclude-nodes / --exclude-op-types name things the model has, and
/// --op-types only op types of options.mode.
void validate_selection(const ir::Model& model, const QuantizeOptions& options);

/// The bytes the model as given stored for the float weight `name` of `elements` elements
/// (QuantizeOptions::stored_element_bytes).
inline int64_t stored_float_bytes(const QuantizeOptions& o, const std::string& name, size_t elements) {
  const auto it = o.stored_element_bytes.find(name);
  return static_cast<int64_t>(elements) * (it != o.stored_element_bytes.end() ? it->second : o.default_stored_element_bytes);
}

}  // namespace onnxtool::quant
