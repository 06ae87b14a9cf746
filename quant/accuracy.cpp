// Accuracy of quantized models against fp32, and the auto-exclude search.
#include "quant/accuracy.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "ir/error.h"
#include "ir/graph_util.h"
#include "ir/model_io.h"
#include "ir/shape_inference.h"
#include "quant/op_rules.h"
#include "runner/compare.h"
#include "runner/session.h"

namespace onnxtool::quant {

namespace {

/// Intermediate tensors keep at most 2^14 elements per sample in their references, and 2^15 over
/// all samples (at least 2^11 per sample): the reference of a whole sample's activations need
/// not fit in memory (PaddleOCR det at 512x512 held 600 MiB of them), the references of all
/// samples are kept for all attempts, and what decides the precision of an SQNR or a cosine is
/// how many values it sums, not how many samples they come from.
constexpr int64_t kComparedElements = int64_t{1} << 14, kComparedOverall = int64_t{1} << 15, kComparedLeast = int64_t{1} << 11;
constexpr size_t kReferenceBudget = size_t{1} << 30;
/// Graph outputs are compared whole up to 2^18 elements (1 MiB), larger ones on 2^18 of them,
/// and on 2^20 over all samples (at least 2^16 per sample): ISNet's twelve outputs, up to
/// 64x512x512 each, held 12 MB per sample, and 124 MB when they were compared whole.
constexpr int64_t kOutputElements = int64_t{1} << 18, kOutputOverall = int64_t{1} << 20, kOutputLeast = int64_t{1} << 16;

/// Elements per sample of a budget of `overall` shared by `samples` samples, within [least, most].
int64_t per_sample(int64_t overall, size_t samples, int64_t least, int64_t most) {
  return std::clamp(overall / static_cast<int64_t>(std::max<size_t>(samples, 1)), least, most);
}

Reference sample_of(const runner::Tensor& t, int64_t limit) {
  Reference r;
  r.size = t.size();
  const float* a = t.data<float>();
  if (r.size <= limit) {
    r.values.assign(a, a + r.size);
    return r;
  }
  r.run = Reference::kRun;
  const int64_t runs = limit / Reference::kRun;
  r.stride = (r.size + runs - 1) / runs;  // >= kRun, as size > limit
  r.values.reserve(static_cast<size_t>(limit));
  for (int64_t k = 0; k * r.stride < r.size; ++k) {
    const int64_t start = r.start(k);
    r.values.insert(r.values.end(), a + start, a + std::min(start + r.run, r.size));
  }
  return r;
}

/// Sums that give SQNR and cosine similarity of a quantized tensor against fp32, over the
/// subsample a Reference keeps.
struct ReferenceSums : runner::ErrorSums {
  /// Adds ref against q, ref clamped to [lo, hi] first (where the readers saturate).
  void add(const Reference& ref, const runner::Tensor& q, double lo = -INFINITY, double hi = INFINITY) {
    const float* b = q.data<float>();
    add(ref, q.size(), [b](int64_t i) { return b[i]; }, lo, hi);
  }
  /// The same with q's elements given by `at` (position -> float).
  template <class At>
  void add(const Reference& ref, int64_t size, const At& at, double lo = -INFINITY, double hi = INFINITY) {
    if (ref.size != size) return;
    for (size_t k = 0; k < ref.values.size(); ++k) {
      const float a = ref.values[k], bq = at(ref.position(static_cast<int64_t>(k)));
      if (std::isfinite(a) && std::isfinite(bq)) ErrorSums::add(std::clamp(double{a}, lo, hi), bq);
    }
  }
  /// SQNR within +-200 dB (equal: 200), a finite figure for the report and its JSON.
  double bounded_sqnr_db() const { return std::clamp(sqnr_db(), -200.0, 200.0); }
};

}  // namespace

bool References::begin() {
  if (bytes_ >= kReferenceBudget) return false;
  samples_.emplace_back();
  return true;
}

void References::add(const std::string& name, const runner::Tensor& t) {
  if (t.dtype() != ir::DataType::kFloat) return;
  // A copy: the runner reuses the buffer.
  Reference r = sample_of(t, per_sample(kComparedOverall, planned_, kComparedLeast, kComparedElements));
  bytes_ += r.values.size() * sizeof(float);
  elements_[name] += static_cast<double>(t.size());
  samples_.back().tensors[name] = std::move(r);
}

void References::end(const std::vector<runner::Value>& outputs) {
  for (const auto& v : outputs) {
    std::optional<Reference> r;
    if (v.is_tensor() && v.tensor.dtype() == ir::DataType::kFloat) {
      r = sample_of(v.tensor, per_sample(kOutputOverall, planned_, kOutputLeast, kOutputElements));
      bytes_ += r->values.size() * sizeof(float);
    }
    samples_.back().outputs.push_back(std::move(r));
  }
}

References record_references(ir::Model& fp32, const SampleSource& samples, size_t count, const ir::Progress& progress) {
  References refs(count);
  runner::Session session(fp32);
  session.set_observer([&](const ir::Value& v, const runner::Value& produced) {
    if (produced.is_tensor()) refs.add(v.name(), produced.tensor);
  });
  Feeds feeds;
  const auto total = static_cast<int64_t>(count);
  ir::report_progress(progress, "reference runs", 0, total);
  for (size_t s = 0; s < count && samples(s, feeds); ++s, feeds.clear()) {
    if (!refs.begin()) break;
    for (const auto& [name, value] : feeds)
      if (value.is_tensor()) refs.add(name, value.tensor);
    refs.end(session.run(feeds));
    ir::report_progress(progress, "reference runs", static_cast<int64_t>(s) + 1, total);
  }
  return refs;
}

References optional_references(ir::Model& fp32, const SampleSource& samples, const QuantizeOptions& options,
                               QuantizeReport& report) {
  if (!samples) return References();
  // The progress counts the samples there are, when fewer than error_samples.
  int64_t count = options.error_samples;
  if (options.sample_count > 0) count = std::min(count, options.sample_count);
  References references = record_references(fp32, samples, static_cast<size_t>(std::max<int64_t>(count, 0)), options.progress);
  if (!references.samples()) throw_usage_error({"sample_dirs", ""}, "no samples");
  report.samples = static_cast<int64_t>(references.samples());
  return references;
}

namespace {

/// The fp32 tensor a quantized (dequantized) tensor stands for, and the interval its values are
/// clamped to before comparing (where the tensor's readers saturate).
struct Compared {
  std::string name;
  double min, max;
};

/// An 8-bit tensor watched in place of the DequantizeLinear that reads it.
struct Dequantize {
  Compared compared;
  float scale;
  int32_t zero_point;
};

/// What error measurement watches in the quantized model, by tensor name.
struct Watched {
  std::map<std::string, Compared> dequantized;
  std::map<std::string, Dequantize> quantized;
  bool contains(const std::string& name) const { return dequantized.count(name) > 0 || quantized.count(name) > 0; }
};

/// The fp32 name an entry is compared with: the node output (dynamic) or the tensor (static).
const std::string& fp32_name(const NodeReport& n) { return n.output.empty() ? n.tensor : n.output; }

Watched watched_tensors(ir::Model& quantized, const QuantizeReport& report) {
  Watched watched;
  for (const auto& n : report.nodes)
    if (!n.dequantized.empty()) watched.dequantized[n.dequantized] = Compared{fp32_name(n), n.reference_min, n.reference_max};
  // Where a DequantizeLinear has one constant scale and zero point, its 8-bit input is watched
  // instead and only the compared elements are dequantized (as its kernel does): the runner
  // need not compute the dequantized tensor when only integer convolutions read it.
  for (const auto& node : quantized.graph->nodes()) {
    if (node->op_type != "DequantizeLinear" || !node->domain.empty() || node->inputs().size() < 2 || !node->output(0)) continue;
    const auto it = watched.dequantized.find(node->output(0)->name());
    if (it == watched.dequantized.end() || !node->input(0)) continue;
    const ir::Tensor* scale = ir::constant_of(quantized, node->input(1));
    const ir::Tensor* zero = node->inputs().size() > 2 && node->input(2) ? ir::constant_of(quantized, node->input(2)) : nullptr;
    if (!scale || scale->type() != ir::DataType::kFloat || scale->element_count() != 1u) continue;
    if (node->inputs().size() > 2 && node->input(2) && (!zero || zero->element_count() != 1u)) continue;
    if (watched.quantized.count(node->input(0)->name())) continue;  // read by several: each watched as it is
    const runner::Tensor s = runner::from_ir(*scale);
    int32_t z = 0;
    if (zero) {
      const runner::Tensor zt = runner::from_ir(*zero);
      if (zt.dtype() == ir::DataType::kUInt8) z = zt.data<uint8_t>()[0];
      else if (zt.dtype() == ir::DataType::kInt8) z = zt.data<int8_t>()[0];
      else continue;
    }
    watched.quantized[node->input(0)->name()] = Dequantize{it->second, s.data<float>()[0], z};
    watched.dequantized.erase(it);
  }
  return watched;
}

/// Adds what the quantized model produced for a watched tensor to the sums of its fp32 tensor.
void add_watched(const Watched& watched, const std::map<std::string, Reference>& reference, const ir::Value& v,
                 const runner::Tensor& t, std::map<std::string, ReferenceSums>& sums) {
  if (auto q = watched.quantized.find(v.name()); q != watched.quantized.end()) {
    const Compared& want = q->second.compared;
    auto r = reference.find(want.name);
    if (r == reference.end()) return;
    const float scale = q->second.scale;
    const int32_t zero = q->second.zero_point;
    auto add = [&](const auto* data) {  // uint8 or int8
      sums[want.name].add(r->second, t.size(), [&](int64_t i) { return static_cast<float>(data[i] - zero) * scale; },
                          want.min, want.max);
    };
    if (t.dtype() == ir::DataType::kUInt8) add(t.data<uint8_t>());
    else if (t.dtype() == ir::DataType::kInt8) add(t.data<int8_t>());
    return;
  }
  auto it = watched.dequantized.find(v.name());
  if (it == watched.dequantized.end() || t.dtype() != ir::DataType::kFloat) return;
  const Compared& want = it->second;
  auto r = reference.find(want.name);
  if (r != reference.end()) sums[want.name].add(r->second, t, want.min, want.max);
}

/// The least accurate quantized tensor upstream of `producer`, walking back through unquantized
/// nodes (200 dB, no noise, when nothing quantized feeds it).
double upstream_sqnr(const ir::Node* producer, const std::map<std::string, double>& sqnr,
                     const std::map<std::string, const ir::Node*>& producer_of) {
  double inputs = 200;
  std::vector<const ir::Node*> stack = {producer};
  std::set<const ir::Node*> seen;
  while (!stack.empty()) {
    const ir::Node* node = stack.back();
    stack.pop_back();
    if (!seen.insert(node).second) continue;
    for (const ir::Value* in : node->inputs()) {
      if (!in) continue;
      if (auto s = sqnr.find(in->name()); s != sqnr.end()) {
        inputs = std::min(inputs, s->second);
      } else if (auto q = producer_of.find(in->name()); q != producer_of.end() && seen.size() < 64) {
        stack.push_back(q->second);
      }
    }
  }
  return inputs;
}

/// Per entry: its accuracy, and what it loses against the entries feeding its producer.
void attribute_noise(ir::Model& fp32, const std::map<std::string, ReferenceSums>& sums,
                     const std::map<std::string, double>& elements, QuantizeReport& report) {
  std::map<std::string, double> sqnr;
  for (auto& n : report.nodes) {
    const auto it = sums.find(fp32_name(n));
    if (n.dequantized.empty() || it == sums.end()) continue;
    n.sqnr_db = it->second.bounded_sqnr_db();
    n.cosine = it->second.cosine();
    sqnr[fp32_name(n)] = n.sqnr_db;
  }
  std::map<std::string, const ir::Node*> producer_of;
  for (const auto& node : fp32.graph->nodes())
    for (const ir::Value* out : node->outputs())
      if (out) producer_of[out->name()] = node.get();
  for (auto& n : report.nodes) {
    if (n.dequantized.empty() || !sums.count(fp32_name(n))) continue;
    const auto p = producer_of.find(fp32_name(n));
    double inputs = 200;  // a graph input: nothing upstream
    if (p != producer_of.end()) {
      const auto e = elements.find(fp32_name(n));
      n.producer_macs = (e == elements.end() ? 0.0 : e->second) * reduction_size(fp32, *p->second);
      inputs = upstream_sqnr(p->second, sqnr, producer_of);
    }
    // Noise powers relative to the signal add up along the way: what this tensor adds is the
    // difference between its noise-to-signal ratio and its inputs' (a drop from 46 to 30 dB
    // adds far less than one from 15 to 8 dB).
    const double added = std::pow(10.0, -n.sqnr_db / 10) - std::pow(10.0, -inputs / 10);
    n.added_noise_db = 10 * std::log10(std::max(added, 1e-20));
  }
}

/// The report's output figures: a cosine for large outputs, a relative error for small ones.
void report_outputs(ir::Model& fp32, const std::map<size_t, ReferenceSums>& output_sums,
                    const std::set<size_t>& large_output, QuantizeReport& report) {
  report.output_cosine = report.output_rel_error = -1;
  report.outputs.clear();
  for (const auto& [index, e] : output_sums) {
    OutputError out{fp32.graph->outputs[index].value->name(), -1, -1};
    if (large_output.count(index)) {
      // Floored at 0: an output pointing away from fp32's misses any target as far as an
      // unrelated one, and a negative figure here means "not measured" (a cosine of -0.18 once
      // skipped the accuracy search and wrote the model fully quantized).
      out.cosine = std::max(e.cosine(), 0.0);
      report.output_cosine = report.output_cosine < 0 ? out.cosine : std::min(report.output_cosine, out.cosine);
    } else {
      out.rel_error = e.relative_error();
      report.output_rel_error = std::max(report.output_rel_error, out.rel_error);
    }
    report.outputs.push_back(std::move(out));
  }
}

}  // namespace

void measure_errors(ir::Model& fp32, ir::Model& quantized, const References& references,
                    const SampleSource& samples, QuantizeReport& report, const std::vector<std::string>& judged,
                    const ir::Progress& progress) {
  const Watched watched = watched_tensors(quantized, report);
  // Graph outputs by position (both models keep their outputs in order); the float ones are
  // compared (the references hold those, whatever the file declares).
  std::vector<size_t> outputs;
  for (size_t i = 0; i < fp32.graph->outputs.size(); ++i) {
    const ir::Value* v = fp32.graph->outputs[i].value;
    if (v && (judged.empty() || std::find(judged.begin(), judged.end(), v->name()) != judged.end())) outputs.push_back(i);
  }

  std::map<std::string, ReferenceSums> sums;  // by float tensor name
  std::map<size_t, ReferenceSums> output_sums;
  std::set<size_t> large_output;  // outputs of more than kSmallOutput elements in some sample
  // The quantized model's dequantized weights are computed again in each run rather than held
  // (as much memory as the float weights, for a few percent of a run).
  runner::SessionOptions q_options;
  q_options.keep_constants = false;
  runner::Session q_session(quantized, q_options);
  Feeds feeds;
  size_t count = 0;
  const auto total = static_cast<int64_t>(references.samples_.size());
  ir::report_progress(progress, "error measurement", 0, total);
  for (size_t s = 0; s < references.samples_.size() && samples(s, feeds); ++s) {
    ++count;
    const References::Sample& ref = references.samples_[s];
    q_session.set_observer(
        [&](const ir::Value& v, const runner::Value& produced) {
          if (produced.is_tensor()) add_watched(watched, ref.tensors, v, produced.tensor, sums);
        },
        false, [&](const ir::Value& v) { return watched.contains(v.name()); });
    const auto q_out = q_session.run(feeds);
    feeds.clear();
    for (size_t i : outputs)
      if (i < ref.outputs.size() && i < q_out.size() && ref.outputs[i] && q_out[i].is_tensor() &&
          q_out[i].tensor.dtype() == ir::DataType::kFloat) {
        output_sums[i].add(*ref.outputs[i], q_out[i].tensor);
        if (q_out[i].tensor.size() > kSmallOutput) large_output.insert(i);
      }
    ir::report_progress(progress, "error measurement", static_cast<int64_t>(count), total);
  }
  attribute_noise(fp32, sums, references.elements_, report);
  report_outputs(fp32, output_sums, large_output, report);
  report.error_samples = static_cast<int64_t>(count);
}

ir::Model copy_model(ir::Model& model, bool infer) {
  // Bytes are immutable and shared: the copy takes the graph through a serialized round trip
  // with the large raw_data left out, then shares those bytes with the original (a 176 MB model
  // was copied whole for every attempt, and a quantized copy kept the whole buffer alive for
  // its few float tensors).
  constexpr size_t kShared = 4096;
  std::vector<std::pair<size_t, ir::Bytes>> shared;  // position in the tensor walk, bytes
  size_t position = 0;
  for_each_tensor(model, [&](ir::Tensor& t, const std::string&) {
    if (t.raw_data && t.raw_data->size() >= kShared) {
      shared.emplace_back(position, std::move(*t.raw_data));
      t.raw_data = ir::Bytes();
    }
    ++position;
  });
  auto restore = [&] {
    size_t p = 0, next = 0;
    for_each_tensor(model, [&](ir::Tensor& t, const std::string&) {
      if (next < shared.size() && shared[next].first == p++) t.raw_data = shared[next++].second;
    });
  };
  std::string bytes;
  try {
    bytes = ir::serialize_model(model);
  } catch (...) {
    restore();
    throw;
  }
  restore();
  ir::LoadOptions load;
  load.validate_tensors = false;  // the shared bytes are not there yet (the original was valid)
  ir::Model copy = ir::parse_model(ir::Bytes::copy_of(bytes.data(), bytes.size()), "model", "", load);
  bytes.clear();
  size_t p = 0, next = 0;
  for_each_tensor(copy, [&](ir::Tensor& t, const std::string&) {
    if (next < shared.size() && shared[next].first == p++) {
      if (!t.raw_data || !t.raw_data->empty())
        throw Error(ErrorKind::kInternal, "copy_model: tensor '" + t.name + "' moved in the copy");
      t.raw_data = shared[next++].second;
    }
  });
  if (next != shared.size()) throw Error(ErrorKind::kInternal, "copy_model: the copy has fewer tensors");
  if (infer) {
    ir::DiagnosticSink sink;
    ir::infer_shapes(copy, sink);
  }
  return copy;
}


namespace {

/// Binary searches for a prefix of n: at most ceil(log2 n) + 1 attempts (the last: the whole list).
int prefix_attempts(size_t n) {
  int bits = 0;
  while ((size_t{1} << bits) < n) ++bits;
  return bits + 1;
}

/// Up to this many tensors of the list found are tried quantized again.
constexpr size_t kPruneAttempts = 8;

using Result = std::pair<std::unique_ptr<ir::Model>, QuantizeReport>;

/// The shortest prefix of `order` (tensors to keep in float) whose quantization reaches the
/// target, by binary search; nullopt when even the whole list does not (its cosine then in
/// `whole`). Invariant: excluding the first `lo` fails (lo = 0 is known to), excluding the first
/// `hi` reaches the target.
std::optional<std::pair<size_t, Result>> shortest_prefix(const std::vector<std::string>& order, double target,
                                                         const Attempt& attempt, double& whole) {
  size_t lo = 0, hi = order.size();
  std::optional<Result> found;
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    auto a = attempt(std::vector<std::string>(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(mid)), {});
    if (a.first && a.second.output_score() >= target) {
      hi = mid;
      found = std::move(a);
    } else {
      lo = mid;
    }
  }
  if (!found) {
    auto a = attempt(order, {});
    whole = a.first ? a.second.output_score() : -1;
    if (whole < target) return std::nullopt;
    found = std::move(a);
  }
  return std::make_pair(hi, std::move(*found));
}

/// An output's score as output_score() judges it: its cosine, or the cosine its relative error
/// amounts to.
double score_of(const OutputError& e) {
  return e.cosine >= 0 ? e.cosine : 1 / std::sqrt(1 + e.rel_error * e.rel_error);
}

/// A list of tensors kept in float that reaches a goal: the attempt's model and report, the
/// order it is a prefix of, its length and its producers' multiply-accumulates.
struct Winner {
  Result result;
  const std::vector<const NodeReport*>* order;
  size_t kept;
  double macs;
};

/// The attempts of one auto-exclude search: counted for the progress line, the best missed score
/// kept for a failure's report, and none made that would end past the deadline.
class ExclusionSearch {
 public:
  ExclusionSearch(const QuantizeOptions& options, const Attempt& quantize) : options_(options), quantize_(quantize) {}

  /// An attempt, whatever the time; each after the first is a step of the one phase "accuracy
  /// search".
  Result attempt(const std::vector<std::string>& excluded) {
    const auto start = std::chrono::steady_clock::now();
    const int made = ++made_;
    ir::Progress progress = options_.progress;
    if (progress && made > 1)
      progress = [this, made](const ir::ProgressStep& s) {
        options_.progress(ir::ProgressStep{"accuracy search", made - 1, most_ - 1,
                                           "attempt " + std::to_string(made - 1) + " of at most " + std::to_string(most_ - 1) +
                                               ", " + s.phase + " " + std::to_string(s.done) + "/" + std::to_string(s.total)});
      };
    auto a = quantize_(excluded, progress);
    const double score = a.second.output_score();
    if (a.second.quantized_nodes > 0 && score < options_.accuracy_target) missed_ = std::max(missed_, score);
    longest_ = std::max(longest_, std::chrono::steady_clock::now() - start);
    return a;
  }

  /// An attempt that would end past the deadline, as long as the longest one so far took, is not
  /// made: it reports a score no goal accepts.
  Result bounded(const std::vector<std::string>& excluded) {
    if (out_of_time_ || options_.deadline - std::chrono::steady_clock::now() <= longest_) {
      out_of_time_ = true;
      return Result{nullptr, QuantizeReport{}};
    }
    return attempt(excluded);
  }

  /// The shortest prefix of either order that reaches `goal`, the faster model by the estimate
  /// (quant/speed.h) winning; on a tie the fewer MACs in float, then the shorter list.
  std::optional<Winner> search(double goal, const std::vector<const NodeReport*>& graph_order,
                               const std::vector<const NodeReport*>& ranked) {
    std::optional<Winner> found;
    const Attempt bounded_attempt = [this](const std::vector<std::string>& excluded, const ir::Progress&) {
      return bounded(excluded);
    };
    for (const auto* candidates : {&graph_order, &ranked}) {
      std::vector<std::string> order;
      for (const NodeReport* n : *candidates) order.push_back(fp32_name(*n));
      double whole = 0;
      auto r = shortest_prefix(order, goal, bounded_attempt, whole);
      if (!r || !r->second.first || r->second.second.quantized_nodes == 0) continue;
      double macs = 0;
      for (size_t i = 0; i < r->first; ++i) macs += (*candidates)[i]->producer_macs;
      const double speed = r->second.second.estimated_speedup;
      if (found) {
        const double kept_speed = found->result.second.estimated_speedup;
        if (speed < kept_speed - 1e-9) continue;
        if (speed <= kept_speed + 1e-9 && (macs > found->macs || (macs == found->macs && r->first >= found->kept))) continue;
      }
      found = Winner{std::move(r->second), candidates, r->first, macs};
    }
    return found;
  }

  /// A prefix keeps in float whatever comes before its last harmful tensor (Moonshine: the first
  /// of its two front-end convolutions does no harm, the second all of it). Each kept tensor is
  /// tried quantized again, the most multiply-accumulates first, and stays quantized where the
  /// goal still holds: up to kPruneAttempts more attempts. Returns the tensors still excluded.
  std::vector<const NodeReport*> prune(Winner& winner, double goal) {
    std::vector<const NodeReport*> excluded(winner.order->begin(), winner.order->begin() + static_cast<std::ptrdiff_t>(winner.kept));
    std::vector<const NodeReport*> tries = excluded;
    std::stable_sort(tries.begin(), tries.end(),
                     [](const NodeReport* a, const NodeReport* b) { return a->producer_macs > b->producer_macs; });
    if (tries.size() > kPruneAttempts) tries.resize(kPruneAttempts);
    for (const NodeReport* t : tries) {
      if (excluded.size() < 2) break;  // one tensor: the prefix search tried none
      std::vector<std::string> names;
      for (const NodeReport* n : excluded)
        if (n != t) names.push_back(fp32_name(*n));
      auto a = bounded(names);
      if (!a.first || a.second.quantized_nodes == 0 || a.second.output_score() < goal) continue;
      winner.result = std::move(a);
      excluded.erase(std::find(excluded.begin(), excluded.end(), t));
    }
    return excluded;
  }

  void set_most(int most) { most_ = most; }
  /// The best score of an attempt that quantized something and missed the target.
  double missed() const { return missed_; }
  int made() const { return made_; }
  bool out_of_time() const { return out_of_time_; }

 private:
  const QuantizeOptions& options_;
  const Attempt& quantize_;
  double missed_ = -1;
  int made_ = 0, most_ = 1;
  bool out_of_time_ = false;
  std::chrono::steady_clock::duration longest_{};
};

}  // namespace

int max_attempts(size_t candidates) {
  return 1 + 4 * prefix_attempts(candidates) + static_cast<int>(std::min(candidates, kPruneAttempts));
}

std::pair<std::unique_ptr<ir::Model>, QuantizeReport> quantize_with_exclusions(const QuantizeOptions& options,
                                                                               const Attempt& quantize) {
  ExclusionSearch attempts(options, quantize);
  // The search aims beyond the target, at half its distance to 1 (0.995 for 0.99): the ranges were
  // measured on the very samples that judge them, and new inputs score lower (PaddleOCR ch v3 rec:
  // 0.994 on its calibration lines, 0.982 on a new one). Where only the target itself is
  // reachable, that is taken, and the report says so.
  const double aim = std::max(options.accuracy_target, 1 - (1 - options.accuracy_target) / 2);
  auto best = attempts.attempt({});
  best.second.aimed_target = aim;
  const double first = best.second.output_score();
  if (!options.auto_exclude || first < 0 || first >= aim) return best;
  // The judged outputs that miss the target with everything quantized, when others reach it:
  // what a failure names.
  std::vector<std::pair<std::string, double>> below;
  for (const auto& e : best.second.outputs)
    if (score_of(e) < options.accuracy_target) below.emplace_back(e.name, score_of(e));
  if (below.size() == best.second.outputs.size()) below.clear();
  // Two orders to keep tensors in float by, each searched for its shortest prefix that reaches
  // the goal; the one whose float tensors' producers do fewer multiply-accumulates wins (what
  // it gives up in integer kernels; on a tie, the shorter list):
  // (Where the speed is estimated, the faster model wins first.)
  //  - the graph order: the first layers. Noise that enters early passes through every later
  //    layer, and the early layers are where integer kernels gain least (few channels, high
  //    resolution: a Q/DQ pair costs more than the int8 convolution saves).
  //  - the most harmful first, by the noise each tensor adds with everything quantized (what
  //    helps where a few layers in the middle of the model do the damage).
  std::vector<const NodeReport*> graph_order;
  for (const auto& n : best.second.nodes)
    if (n.op_type != "input" && !n.dequantized.empty()) graph_order.push_back(&n);
  attempts.set_most(max_attempts(graph_order.size()));
  std::vector<const NodeReport*> ranked = graph_order;
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const NodeReport* a, const NodeReport* b) { return a->added_noise_db > b->added_noise_db; });
  double goal = aim;
  std::optional<Winner> found = attempts.search(aim, graph_order, ranked);
  if (!found && first >= options.accuracy_target) return best;  // the target without exclusions, the aim with none
  if (!found && aim > options.accuracy_target) found = attempts.search(goal = options.accuracy_target, graph_order, ranked);
  if (!found) {
    // Nothing quantized reaches the target: the model stays float, the report says how close
    // the attempts came.
    QuantizeReport none = best.second;
    none.nodes.clear();
    none.quantized_nodes = none.float_weight_bytes = none.quantized_weight_bytes = 0;
    none.missed_target = attempts.missed();
    none.blocking_outputs = below;
    if (attempts.out_of_time()) none.timed_out_after = attempts.made();
    return {nullptr, std::move(none)};
  }
  const std::vector<const NodeReport*> excluded = attempts.prune(*found, goal);
  QuantizeReport& report = found->result.second;
  report.aimed_target = aim;
  if (attempts.out_of_time()) report.timed_out_after = attempts.made();
  for (const NodeReport* n : excluded)
    report.auto_excluded.push_back(fp32_name(*n) + (n->node.empty() ? "" : " (" + n->node + ", " + n->op_type + ")"));
  return std::move(found->result);
}

}  // namespace onnxtool::quant
