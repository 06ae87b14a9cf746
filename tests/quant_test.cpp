// Tests of quant/: scale and zero point rules (zero always representable, exact symmetric zero
// points, no degenerate scale), calibration statistics (bounded memory, NaN/Inf counted), the
// calibrators against hand-computed ranges, and the dynamic and static rewrites on tiny models
// run through the runner against float (tolerance policy "quantized": a few quantization steps).
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "ir/error.h"
#include "ir/graph.h"
#include "ir/graph_util.h"
#include "ir/tensor.h"
#include "quant/accuracy.h"
#include "quant/calibration.h"
#include "quant/quant_params.h"
#include "quant/quantize.h"
#include "runner/session.h"
#include "tests/empty_model.h"
#include "tests/random_feed.h"

namespace onnxtool::quant_test {
namespace {

using quant::QuantType;
using runner::Tensor;

/// A small float model under construction: a graph input "x" of `dims`, uniform(-1, 1) weights
/// from a seeded generator, and nodes named after their one output.
struct TinyModel {
  ir::Model m = testing::empty_model(14);
  ir::Graph& g = *m.graph;
  testing::Rng rng;
  ir::Value* x;
  TinyModel(std::vector<int64_t> dims, uint32_t seed) : rng(seed) {
    ir::Shape shape;
    for (int64_t d : dims) shape.dims.push_back(ir::Dim::of(d));
    x = g.add_input("x", ir::TypeInfo::tensor(ir::DataType::kFloat, shape)).value;
  }
  ir::Value* constant(const std::string& name, std::vector<int64_t> dims) {
    return testing::uniform_initializer(g, rng, name, std::move(dims), -1, 1);
  }
  ir::Node* node(const std::string& op, std::vector<ir::Value*> in, const std::string& out) {
    return g.add_node(op, in, {out}, "", out + "_node");
  }
};

/// A model at opset 14: Conv -> HardSwish -> Conv -> "h", and Conv -> HardSigmoid, whose output
/// multiplies that Conv's output itself -> "s" (a reader that does not saturate). Conv outputs
/// reach well below -3 and above 3.
ir::Model saturating_readers_model() {
  TinyModel t({1, 2, 6, 6}, 3);
  auto node = [&](const std::string& op, std::vector<ir::Value*> in, const std::string& out) { return t.node(op, in, out)->output(0); };
  ir::Value* y = node("Conv", {t.x, t.constant("w1", {2, 2, 1, 1})}, "y");
  ir::Value* h = node("HardSwish", {y}, "hs");
  t.g.add_output(node("Conv", {h, t.constant("w2", {2, 2, 1, 1})}, "h"), std::nullopt);
  ir::Value* y2 = node("Conv", {t.x, t.constant("w3", {2, 2, 1, 1})}, "y2");
  t.g.add_output(node("Mul", {y2, node("HardSigmoid", {y2}, "gate")}, "s"), std::nullopt);
  return std::move(t.m);
}

/// A model at opset 14 with nothing static quantization can gain from:
///  - x -> Conv -> Unsqueeze -> Pow(2) -> "p": the Conv's output only reaches a Pow through an op
///    that moves values, so it stays float (and the Conv with it);
///  - x -> MatMul(constant) -> Clip(0, 10) -> Log -> "l": the MatMul's clipped output is a Log's
///    input;
///  - x -> Add(constant) -> Relu -> MaxPool -> Sigmoid -> "a": Add and MaxPool have no integer
///    kernel; quantized, the Add's output range would fold the Relu in, and their Q/DQ pairs
///    would feed nothing integer.
ir::Model nothing_to_gain_model() {
  TinyModel t({1, 2, 4, 4}, 4);
  ir::Graph& g = t.g;
  auto scalar = [&](const std::string& name, float v) {
    return g.add_initializer(ir::make_tensor(name, ir::DataType::kFloat, {}, &v, 4));
  };
  auto node = [&](const std::string& op, std::vector<ir::Value*> in, const std::string& out) { return t.node(op, in, out); };
  const int64_t axis = 0;
  ir::Value* axes = g.add_initializer(ir::make_tensor("axes", ir::DataType::kInt64, {1}, &axis, 8));
  ir::Value* c = node("Conv", {t.x, t.constant("w", {2, 2, 1, 1})}, "c")->output(0);
  ir::Value* u = node("Unsqueeze", {c, axes}, "u")->output(0);
  g.add_output(node("Pow", {u, scalar("two", 2)}, "p")->output(0), std::nullopt);
  ir::Value* mm = node("MatMul", {t.x, t.constant("b", {4, 4})}, "mm")->output(0);
  ir::Value* clipped = node("Clip", {mm, scalar("lo", 1e-3f), scalar("hi", 10)}, "clipped")->output(0);
  g.add_output(node("Log", {clipped}, "l")->output(0), std::nullopt);
  ir::Value* sum = node("Add", {t.x, t.constant("bias", {1, 2, 1, 1})}, "sum")->output(0);
  ir::Value* relu = node("Relu", {sum}, "relu")->output(0);
  ir::Node* pool = node("MaxPool", {relu}, "pool");
  pool->set_attr(ir::Attribute::make_ints("kernel_shape", {1, 1}));  // negative sums reach the output
  g.add_output(node("Sigmoid", {pool->output(0)}, "a")->output(0), std::nullopt);
  return std::move(t.m);
}

/// The smallest value the QuantizeLinear reading `name` represents.
double quantized_min(const ir::Model& m, const std::string& name) {
  for (const auto& n : m.graph->nodes()) {
    if (n->op_type != "QuantizeLinear" || n->input(0)->name() != name) continue;
    const double scale = ir::scalar_constant(m, n->input(1)).value();
    const auto zero_point = static_cast<double>(ir::constant_ints(m, n->input(2)).value().at(0));
    return -zero_point * scale;
  }
  FAIL("no QuantizeLinear reads " << name);
  return 0;
}

Tensor floats(std::vector<float> v) {
  Tensor t(ir::DataType::kFloat, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.mutable_data<float>());
  return t;
}

/// Five quantized tensors a..e in graph order, the most harmful last (the ranked order is e..a),
/// with these producer MACs; the output cosine of an attempt is 0.95 plus each excluded
/// tensor's gain, and every attempt's exclusion list is recorded.
struct FakeSearch {
  std::map<std::string, double> macs, gain;
  std::vector<std::vector<std::string>> attempts;

  bool side_output = false;  ///< two judged outputs: "main" scoring 2 (beyond any target), "side" the score

  std::pair<std::unique_ptr<ir::Model>, quant::QuantizeReport> operator()(const std::vector<std::string>& excluded,
                                                                          const ir::Progress&) {
    attempts.push_back(excluded);
    quant::QuantizeReport r;
    double noise = 0;
    for (const std::string t : {"a", "b", "c", "d", "e"}) {
      quant::NodeReport n;
      n.node = "node_" + t;
      n.op_type = "Conv";
      n.tensor = t;
      n.dequantized = t + "_dq";
      n.added_noise_db = noise++;
      n.producer_macs = macs[t];
      r.nodes.push_back(n);
    }
    r.output_cosine = 0.95;
    r.quantized_nodes = 5 - static_cast<int64_t>(excluded.size());
    for (const auto& t : excluded) r.output_cosine += gain[t];
    if (side_output) r.outputs = {{"main", 2.0, -1}, {"side", r.output_cosine, -1}};
    return {std::make_unique<ir::Model>(), r};
  }
};

std::vector<std::string> excluded_tensors(const quant::QuantizeReport& r) {
  std::vector<std::string> out;
  for (const auto& label : r.auto_excluded) out.push_back(label.substr(0, label.find(' ')));
  return out;
}

}  // namespace

TEST_SUITE("quant") {
  TEST_CASE("auto-exclude keeps whichever shortest list, first layers or most harmful, costs fewer MACs") {
    quant::QuantizeOptions o;
    o.auto_exclude = true;
    o.accuracy_target = 0.98;  // the search aims at 0.99, halfway to 1
    // {a, b} (the first two layers) or {e, d, c} (the three most harmful) reach 0.99.
    FakeSearch f;
    f.gain = {{"a", 0.02}, {"b", 0.02}, {"c", 0.015}, {"d", 0.015}, {"e", 0.015}};
    SUBCASE("the first layers are cheaper in float") {
      f.macs = {{"a", 1}, {"b", 1}, {"c", 10}, {"d", 10}, {"e", 10}};
      const auto r = quant::quantize_with_exclusions(o, std::ref(f));
      CHECK(excluded_tensors(r.second) == std::vector<std::string>{"a", "b"});
      CHECK(r.second.output_cosine >= 0.99);
      CHECK(r.second.auto_excluded.front() == "a (node_a, Conv)");
    }
    SUBCASE("the most harmful are cheaper, though more of them") {
      f.macs = {{"a", 10}, {"b", 10}, {"c", 1}, {"d", 1}, {"e", 1}};
      const auto r = quant::quantize_with_exclusions(o, std::ref(f));
      CHECK(excluded_tensors(r.second) == std::vector<std::string>{"e", "d", "c"});
    }
    SUBCASE("equal MACs: the shorter list") {
      // {a, b, c} or {e, d} reach 0.99, both at 3 MACs.
      f.gain = {{"a", 0.014}, {"b", 0.014}, {"c", 0.014}, {"d", 0.021}, {"e", 0.021}};
      f.macs = {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1.5}, {"e", 1.5}};
      const auto r = quant::quantize_with_exclusions(o, std::ref(f));
      CHECK(excluded_tensors(r.second) == std::vector<std::string>{"e", "d"});
    }
    SUBCASE("the aim out of reach, the target not: the target's list, the aim reported") {
      // Four tensors in float give 0.974 at most (a, b, c, d); the aim is 0.985, the target 0.97.
      f.gain = {{"a", 0.021}, {"b", 0.001}, {"c", 0.001}, {"d", 0.001}, {"e", 0.001}};
      o.accuracy_target = 0.97;
      const auto r = quant::quantize_with_exclusions(o, std::ref(f));
      CHECK(excluded_tensors(r.second) == std::vector<std::string>{"a"});
      CHECK(r.second.aimed_target == doctest::Approx(0.985));
      CHECK(r.second.output_score() < r.second.aimed_target);
    }
    SUBCASE("a harmless tensor the prefix took along is quantized again") {
      // The first layers' shortest prefix is {a, b}, all of it b's doing; a is tried quantized
      // again (one more attempt) and stays so.
      f.gain = {{"a", 0.0}, {"b", 0.05}, {"c", 0.0}, {"d", 0.0}, {"e", 0.0}};
      f.macs = {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}, {"e", 1}};
      const auto r = quant::quantize_with_exclusions(o, std::ref(f));
      CHECK(excluded_tensors(r.second) == std::vector<std::string>{"b"});
      CHECK(r.second.output_cosine >= 0.99);
      CHECK(f.attempts.back() == std::vector<std::string>{"b"});
    }
    SUBCASE("accurate enough already: one attempt, nothing excluded") {
      o.accuracy_target = 0.9;  // aimed at 0.95: what nothing excluded gives
      const auto r = quant::quantize_with_exclusions(o, std::ref(f));
      CHECK(f.attempts.size() == 1);
      CHECK(r.second.auto_excluded.empty());
    }
    SUBCASE("reached only with every tensor in float: no model, the best score of a quantized attempt") {
      o.accuracy_target = 1.03;  // all five excluded give 1.035; four at most 1.02 (a, b, c, d)
      const auto r = quant::quantize_with_exclusions(o, std::ref(f));
      CHECK(r.first == nullptr);
      CHECK(r.second.quantized_nodes == 0);
      CHECK(r.second.nodes.empty());
      CHECK(r.second.missed_target == doctest::Approx(1.02));
    }
    SUBCASE("unreachable even all in float: no model either") {
      o.accuracy_target = 1.5;
      const auto r = quant::quantize_with_exclusions(o, std::ref(f));
      CHECK(r.first == nullptr);
      CHECK(r.second.missed_target == doctest::Approx(1.02));
      CHECK(r.second.blocking_outputs.empty());  // one judged output: nothing to single out
    }
    SUBCASE("a side output that blocks the target is named with its score") {
      f.side_output = true;
      o.accuracy_target = 1.03;
      const auto r = quant::quantize_with_exclusions(o, std::ref(f));
      CHECK(r.first == nullptr);
      REQUIRE(r.second.blocking_outputs.size() == 1);
      CHECK(r.second.blocking_outputs[0].first == "side");
      CHECK(r.second.blocking_outputs[0].second == doctest::Approx(0.95));
    }
    SUBCASE("never more attempts than max_attempts says") {
      for (double target : {0.96, 0.98, 1.0, 1.03, 1.5}) {
        FakeSearch g = f;
        o.accuracy_target = target;
        quant::quantize_with_exclusions(o, std::ref(g));
        CHECK(static_cast<int>(g.attempts.size()) <= quant::max_attempts(5));
      }
    }
    SUBCASE("past the deadline no attempt after the first: unchanged, and how many were made") {
      o.deadline = std::chrono::steady_clock::now();
      o.accuracy_target = 0.98;
      const auto r = quant::quantize_with_exclusions(o, std::ref(f));
      CHECK(f.attempts.size() == 1);
      CHECK(r.first == nullptr);
      CHECK(r.second.timed_out_after == 1);
    }
  }

  TEST_CASE("an output pointing away from fp32's scores 0, not the -1 of an output not measured") {
    // fp32 y = Identity(x) against y = Neg(x): cosine -1 on every sample. Read as "not measured",
    // a negative cosine skipped the accuracy search and the model was written fully quantized.
    TinyModel f({1, 8}, 1), q({1, 8}, 1);
    f.g.add_output(f.node("Identity", {f.x}, "y")->output(0), std::nullopt);
    q.g.add_output(q.node("Neg", {q.x}, "y")->output(0), std::nullopt);
    auto samples = [](size_t sample, std::map<std::string, runner::Value>& feeds) {
      if (sample == 2) return false;
      Tensor x(ir::DataType::kFloat, {1, 8});
      for (int64_t i = 0; i < x.size(); ++i) x.mutable_data<float>()[i] = static_cast<float>(i + sample) - 3.5f;
      feeds["x"] = runner::Value::of(x);
      return true;
    };
    const quant::References references = quant::record_references(f.m, samples, 2);
    quant::QuantizeReport r;
    quant::measure_errors(f.m, q.m, references, samples, r);
    REQUIRE(r.outputs.size() == 1);
    CHECK(r.outputs[0].cosine == 0);
    CHECK(r.output_cosine == 0);
    CHECK(r.output_score() == 0);
  }

  TEST_CASE("parameters include zero, keep symmetric zero points exact and never degenerate") {
    const quant::ParamOptions asym, sym{true, false}, reduced{false, true};
    // [1, 3] widens to [0, 3]: zero is representable exactly.
    const auto p = quant::compute_params(1, 3, QuantType::kUInt8, asym);
    CHECK(p.zero_point == 0);
    CHECK(p.scale == doctest::Approx(3.0 / 255));
    const auto q = quant::compute_params(-1, 3, QuantType::kUInt8, asym);
    CHECK(q.zero_point == 64);  // round(0 - (-1) / (4/255)) = round(63.75)
    CHECK(quant::compute_params(-2, 5, QuantType::kInt8, sym).zero_point == 0);
    CHECK(quant::compute_params(-2, 5, QuantType::kInt8, sym).scale == doctest::Approx(5.0 / 127));
    CHECK(quant::compute_params(-2, 5, QuantType::kUInt8, sym).zero_point == 128);
    const auto z = quant::compute_params(0, 0, QuantType::kInt8, asym);
    CHECK(z.scale == 1.0f);
    CHECK(z.zero_point == 0);
    const auto tiny = quant::compute_params(0, 1e-42, QuantType::kUInt8, asym);
    CHECK(tiny.scale == 1.0f);
    CHECK(quant::compute_params(-1, 1, QuantType::kUInt8, reduced).scale == doctest::Approx(2.0 / 127));
    // round half to even
    CHECK(quant::round_half_even(2.5) == 2);
    CHECK(quant::round_half_even(3.5) == 4);
    CHECK(quant::round_half_even(-2.5) == -2);
    CHECK_THROWS(quant::compute_params(0, std::numeric_limits<double>::infinity(), QuantType::kUInt8, asym));
  }

  TEST_CASE("statistics count NaN and Inf, skip them, and keep a fixed-size histogram") {
    quant::TensorStats s;
    s.observe(floats({1, -2, std::nanf(""), INFINITY, 0.5f}), 0);
    CHECK(s.min() == -2);
    CHECK(s.max() == 1);
    CHECK(s.nan_count() == 1);
    CHECK(s.inf_count() == 1);
    CHECK(s.values() == 3);
    s.observe(floats({100, -50}), 0);  // widens the histogram
    CHECK(s.max() == 100);
    quant::TensorStats only_nan;
    only_nan.observe(floats({NAN, NAN}), 0);
    CHECK(only_nan.empty());
    CHECK(quant::calibrated_range(only_nan, {}).max == 0);
  }

  TEST_CASE("float32 statistics, summarized in parallel chunks, equal those of the same values as double") {
    // Several chunks of 2^15 and a partial one; NaN and Inf scattered; values over 12 octaves.
    testing::Rng rng(7);
    const int64_t n = 3 * 32768 + 1001;
    Tensor f = testing::uniform_tensor(rng, {n}, -1, 1), d(ir::DataType::kDouble, {n});
    for (int64_t i = 0; i < n; ++i) {
      float& v = f.mutable_data<float>()[i];
      v *= std::ldexp(1.0f, static_cast<int>(i % 12));
      if (i % 977 == 5) v = NAN;
      if (i % 1231 == 7) v = i % 2 ? INFINITY : -INFINITY;
      d.mutable_data<double>()[i] = v;
    }
    quant::TensorStats a, b, minmax_only;
    for (int k = 0; k < 2; ++k) {
      a.observe(f, 0.5);
      b.observe(d, 0.5);
      minmax_only.observe(f, 0.5, false);
    }
    for (const quant::TensorStats* s : {&a, &minmax_only}) {
      CHECK(s->min() == b.min());
      CHECK(s->max() == b.max());
      CHECK(s->moving_min() == b.moving_min());
      CHECK(s->moving_max() == b.moving_max());
      CHECK(s->nan_count() == b.nan_count());
      CHECK(s->inf_count() == b.inf_count());
      CHECK(s->values() == b.values());
    }
    CHECK(a.percentile_threshold(99.9) == b.percentile_threshold(99.9));
    CHECK(a.entropy_threshold(128) == b.entropy_threshold(128));
  }

  TEST_CASE("copy_model shares the weights' bytes with the original and leaves it as it was") {
    ir::Model m = testing::empty_model(17);
    ir::Graph& g = *m.graph;
    ir::Value* x = g.add_input("x", ir::TypeInfo::tensor(ir::DataType::kFloat)).value;
    std::vector<float> big(4096, 0.25f), small{1, 2};
    ir::Value* w = g.add_initializer(ir::make_tensor("w", ir::DataType::kFloat, {64, 64}, big.data(), big.size() * 4));
    ir::Value* b = g.add_initializer(ir::make_tensor("b", ir::DataType::kFloat, {2}, small.data(), small.size() * 4));
    ir::Node* mm = g.add_node("MatMul", {x, w}, {"y"}, "", "mm");
    ir::Node* add = g.add_node("Add", {mm->output(0), b}, {"z"}, "", "add");
    g.add_output(add->output(0), std::nullopt);
    const uint8_t* weight_bytes = w->initializer()->raw_bytes().data();
    ir::Model copy = quant::copy_model(m);
    // The original keeps its bytes; the copy views the same ones for the large tensor, and has
    // its own for the small one.
    CHECK(w->initializer()->raw_bytes().data() == weight_bytes);
    CHECK(w->initializer()->raw_bytes().size() == big.size() * 4);
    const ir::Value* cw = copy.graph->find("w");
    REQUIRE(cw);
    REQUIRE(cw->initializer());
    CHECK(cw->initializer()->raw_bytes().data() == weight_bytes);
    const ir::Value* cb = copy.graph->find("b");
    REQUIRE(cb);
    CHECK(cb->initializer()->raw_bytes().data() != b->initializer()->raw_bytes().data());
    CHECK(std::memcmp(cb->initializer()->raw_bytes().data(), small.data(), 8) == 0);
    CHECK(copy.graph->nodes().size() == 2);
  }

  TEST_CASE("every calibrator takes all-zero, constant, NaN, Inf and huge samples at any position") {
    // Silero VAD's usual all-zero initial state as the first sample crashed the histogram (its
    // bins per unit became infinite, 0 x inf = NaN indexed it).
    const float big = std::numeric_limits<float>::max();
    const std::vector<std::vector<float>> odd{{0, 0, 0, 0}, {2.5f, 2.5f, 2.5f}, {NAN, NAN}, {INFINITY, -INFINITY},
                                              {NAN, 0, INFINITY}, {1e-45f, -1e-45f}, {big, -big, 0}};
    const std::vector<float> normal{-1.5f, 0.25f, 3.0f, -0.75f, 1.0f};
    for (size_t k = 0; k < odd.size(); ++k) {
      for (int position = 0; position < 3; ++position) {
        CAPTURE(k);
        CAPTURE(position);
        quant::TensorStats s;
        // The odd sample first, between normal ones, or last; and alone.
        std::vector<std::vector<float>> samples;
        if (position == 0) samples = {odd[k], normal, normal};
        if (position == 1) samples = {normal, odd[k], normal};
        if (position == 2) samples = {normal, normal, odd[k]};
        for (const auto& v : samples) s.observe(floats(v), 0.1);
        quant::TensorStats alone;
        alone.observe(floats(odd[k]), 0.1);
        alone.observe(floats(odd[k]), 0.1);
        for (const auto method : {quant::CalibrationMethod::kMinMax, quant::CalibrationMethod::kEntropy,
                                  quant::CalibrationMethod::kPercentile}) {
          for (const double average : {0.0, 0.1}) {
            quant::CalibrationOptions o;
            o.method = method;
            o.moving_average = average;
            for (const quant::TensorStats* stats : {&s, &alone}) {
              const quant::Range r = quant::calibrated_range(*stats, o);
              CHECK(std::isfinite(r.min));
              CHECK(std::isfinite(r.max));
              CHECK(r.min <= 0);
              CHECK(r.max >= 0);
            }
            // The normal samples' range survives the odd one (huge values widen minmax only).
            const quant::Range r = quant::calibrated_range(s, o);
            if (method == quant::CalibrationMethod::kMinMax && average == 0) {
              CHECK(r.max >= 3.0);
              CHECK(r.min <= -1.5);
            }
          }
        }
      }
    }
    quant::TensorStats zeros;
    zeros.observe(floats({0, 0}), 0);
    zeros.observe(floats({0, 4, -2}), 0);
    CHECK(zeros.values() == 5);
    quant::CalibrationOptions p;
    p.method = quant::CalibrationMethod::kPercentile;
    p.percentile = 50;  // 3 of the 5 values are zero: the median is in the first bin
    CHECK(quant::calibrated_range(zeros, p).max < 0.01);
  }

  TEST_CASE("static: a tensor whose readers all saturate is quantized only where they do not") {
    ir::Model m = saturating_readers_model();
    quant::QuantizeOptions o;
    o.mode = quant::Mode::kStatic;
    o.op_types = {"Conv", "Mul"};  // 2-channel Convs: the speed estimate alone would keep them float
    o.error_samples = 2;
    const auto report = quant::quantize_static(m, o, [&](size_t sample, std::map<std::string, runner::Value>& feeds) {
      if (sample == 4) return false;
      testing::Rng rng(5 + static_cast<uint32_t>(sample));
      feeds["x"] = runner::Value::of(testing::uniform_tensor(rng, {1, 2, 6, 6}, -10, 10));
      return true;
    });
    // y is read only by HardSwish (constant below -3): its range starts at -3 (within the step
    // that rounding the zero point moves it by; the range is about 18 wide, 255 steps).
    CHECK(std::fabs(quantized_min(m, "y") + 3.0) < 0.08);
    // y2 is also read by Mul: its whole calibrated range stays.
    CHECK(quantized_min(m, "y2") < -5.0);
    // The report compares y with fp32 clamped alike, so its SQNR is that of the rounding alone.
    for (const auto& n : report.nodes) {
      if (n.tensor == "y") {
        CHECK(n.reference_min == -3.0);
        CHECK(n.sqnr_db > 30);
      }
      if (n.tensor == "y2") CHECK(std::isinf(n.reference_min));
    }
  }

  TEST_CASE("static: nothing is quantized where no integer kernel gains, and the report says why") {
    ir::Model m = nothing_to_gain_model();
    ir::Model original = quant::copy_model(m);
    quant::QuantizeOptions o;
    o.mode = quant::Mode::kStatic;
    o.error_samples = 2;
    auto samples = [&](size_t sample, std::map<std::string, runner::Value>& feeds) {
      if (sample == 4) return false;
      testing::Rng rng(7 + static_cast<uint32_t>(sample));
      feeds["x"] = runner::Value::of(testing::uniform_tensor(rng, {1, 2, 4, 4}, -3, 3));
      return true;
    };
    const auto report = quant::quantize_static(m, o, samples);
    CHECK(report.quantized_nodes == 0);
    CHECK(report.nodes.empty());
    std::map<std::string, std::string> why;
    for (const auto& f : report.kept_float) why[f.node] = f.reason;
    CHECK(why["c_node"].find("read by Pow 'p_node'") == 0);
    CHECK(why["mm_node"].find("read by Log 'l_node'") == 0);
    // No QuantizeLinear is left, and the Relu that the Add's range would have folded is back:
    // the model computes exactly what fp32 does.
    int64_t q = 0;
    for (const auto& n : m.graph->nodes()) q += n->op_type == "QuantizeLinear" || n->op_type == "DequantizeLinear";
    CHECK(q == 0);
    std::map<std::string, runner::Value> feeds;
    samples(0, feeds);
    runner::Session a(original), b(m);
    const auto want = a.run(feeds), got = b.run(feeds);
    REQUIRE(want.size() == got.size());
    for (size_t i = 0; i < want.size(); ++i) {
      const Tensor& x = want[i].tensor;
      const Tensor& y = got[i].tensor;
      REQUIRE(x.size() == y.size());
      CHECK(std::memcmp(x.data<float>(), y.data<float>(), static_cast<size_t>(x.size()) * 4) == 0);
    }
  }

  TEST_CASE("static: a decomposed LayerNormalization between two MatMuls stays float inside") {
    // x [1, 8, 64] -> MatMul -> a -> ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div -> n -> Mul(gamma)
    // -> g -> Add(beta) -> o -> MatMul -> y. onnxruntime fuses a..o into one LayerNormalization:
    // n, g and the constants gamma and beta get no QuantizeLinear, nor does a (normalized, a
    // rounding step of a is one of the output wherever a row varies little); o, what the second
    // MatMul reads, does.
    TinyModel t({1, 8, 64}, 12);
    auto node = [&](const std::string& op, std::vector<ir::Value*> in, const std::string& out) { return t.node(op, in, out); };
    auto scalar = [&](const std::string& name, float v) { return t.g.add_initializer(ir::make_tensor(name, ir::DataType::kFloat, {}, &v, 4)); };
    ir::Value* a = node("MatMul", {t.x, t.constant("w1", {64, 64})}, "a")->output(0);
    ir::Node* mean = node("ReduceMean", {a}, "mean");
    mean->set_attr(ir::Attribute::make_ints("axes", {-1}));
    ir::Value* d = node("Sub", {a, mean->output(0)}, "d")->output(0);
    ir::Node* var = node("ReduceMean", {node("Pow", {d, scalar("two", 2)}, "p")->output(0)}, "var");
    var->set_attr(ir::Attribute::make_ints("axes", {-1}));
    ir::Value* sd = node("Sqrt", {node("Add", {var->output(0), scalar("eps", 1e-5f)}, "ve")->output(0)}, "sd")->output(0);
    ir::Value* n = node("Div", {d, sd}, "n")->output(0);
    ir::Value* g = node("Mul", {n, t.constant("gamma", {64})}, "g")->output(0);
    ir::Value* o = node("Add", {g, t.constant("beta", {64})}, "o")->output(0);
    t.g.add_output(node("MatMul", {o, t.constant("w2", {64, 64})}, "y")->output(0), std::nullopt);
    quant::QuantizeOptions o_;
    o_.mode = quant::Mode::kStatic;
    o_.op_types = {"MatMul", "Mul", "Add"};  // a small model: the speed estimate alone would keep it float
    o_.error_samples = 2;
    quant::quantize_static(t.m, o_, [&](size_t sample, std::map<std::string, runner::Value>& feeds) {
      if (sample == 4) return false;
      testing::Rng rng(3 + static_cast<uint32_t>(sample));
      feeds["x"] = runner::Value::of(testing::normal_tensor(rng, {1, 8, 64}, 0, 1));
      return true;
    });
    std::set<std::string> quantized;  // what QuantizeLinear nodes read
    for (const auto& node_ : t.m.graph->nodes())
      if (node_->op_type == "QuantizeLinear") quantized.insert(node_->input(0)->name());
    CHECK(quantized.count("o"));
    for (const char* inside : {"a", "n", "g", "gamma", "beta", "d", "sd"}) {
      CAPTURE(inside);
      CHECK_FALSE(quantized.count(inside));
    }
  }

  TEST_CASE("static: both sides of a peak mask, Equal(x, MaxPool(x)) through Reshapes, stay float") {
    // x -> Conv -> a -> Conv -> y; scores = Cast(Equal(flat(y), flat(MaxPool3x3(y)))) * flat(y),
    // as tf2onnx writes a detector's peak picking. MaxPool's output, quantized at a range of its
    // own for the Reshape that reads it, no longer equals the y it came from: every peak was lost.
    TinyModel t({1, 4, 8, 8}, 21);
    auto node = [&](const std::string& op, std::vector<ir::Value*> in, const std::string& out) { return t.node(op, in, out); };
    ir::Value* a = node("Conv", {t.x, t.constant("w1", {8, 4, 1, 1})}, "a")->output(0);
    ir::Value* y = node("Conv", {a, t.constant("w2", {4, 8, 1, 1})}, "y")->output(0);
    ir::Node* pool = node("MaxPool", {y}, "p");
    pool->set_attr(ir::Attribute::make_ints("kernel_shape", {3, 3}));
    pool->set_attr(ir::Attribute::make_ints("pads", {1, 1, 1, 1}));
    const std::vector<int64_t> flat_dims = {1, -1};
    ir::Value* flat = t.g.add_initializer(ir::make_tensor("flat", ir::DataType::kInt64, {2}, flat_dims.data(), 16));
    ir::Value* yf = node("Reshape", {y, flat}, "yf")->output(0);
    ir::Value* pf = node("Reshape", {pool->output(0), flat}, "pf")->output(0);
    ir::Node* mask = node("Cast", {node("Equal", {yf, pf}, "peak")->output(0)}, "mask");
    mask->set_attr(ir::Attribute::make_int("to", static_cast<int64_t>(ir::DataType::kFloat)));
    t.g.add_output(node("Mul", {mask->output(0), yf}, "scores")->output(0), std::nullopt);
    ir::Model original = quant::copy_model(t.m);
    quant::QuantizeOptions o;
    o.mode = quant::Mode::kStatic;
    o.op_types = {"Conv", "MaxPool", "Reshape", "Mul"};  // a small model: the speed estimate alone would keep it float
    o.error_samples = 2;
    auto samples = [&](size_t sample, std::map<std::string, runner::Value>& feeds) {
      if (sample == 4) return false;
      testing::Rng rng(9 + static_cast<uint32_t>(sample));
      feeds["x"] = runner::Value::of(testing::uniform_tensor(rng, {1, 4, 8, 8}, -1, 1));
      return true;
    };
    const auto report = quant::quantize_static(t.m, o, samples);
    CHECK(report.quantized_nodes > 0);  // the first Conv
    for (const auto& n : t.m.graph->nodes())
      if (n->op_type == "QuantizeLinear") CHECK(n->input(0)->name() != "y");
    const ir::Node* equal = nullptr;
    for (const auto& n : t.m.graph->nodes())
      if (n->op_type == "Equal") equal = n.get();
    REQUIRE(equal);
    for (const ir::Value* side : equal->inputs()) {
      // Each side a Reshape of float y or of MaxPool(y), no DequantizeLinear on the way.
      const ir::Node* reshape = side->producer();
      REQUIRE(reshape);
      const ir::Node* before = reshape->input(0)->producer();
      CHECK((before->op_type == "Conv" || before->op_type == "MaxPool"));
      if (before->op_type == "MaxPool") CHECK(before->input(0)->producer()->op_type == "Conv");
    }
    // Nearly every peak is kept (the first Conv's 8-bit output moves a few).
    std::map<std::string, runner::Value> feeds;
    samples(0, feeds);
    runner::Session fp32(original), int8(t.m);
    const Tensor want = fp32.run(feeds)[0].tensor, got = int8.run(feeds)[0].tensor;
    int64_t peaks = 0, kept = 0;
    for (int64_t i = 0; i < want.size(); ++i) {
      peaks += want.data<float>()[i] != 0;
      kept += want.data<float>()[i] != 0 && got.data<float>()[i] != 0;
    }
    CHECK(peaks > 10);
    CHECK(kept >= peaks * 9 / 10);
  }

  TEST_CASE("dynamic: a 1-D Conv becomes MatMulInteger over its windows; 2-D, grouped and few-channel ones stay") {
    // x [2, 128, 200] -> Conv 128->96 (k 5, stride 2, dilation 2, pads 3/1, bias) -> y, and beside it
    // a 1-D Conv of 4 input channels (its windows too short) and a grouped one, both kept float.
    TinyModel t({2, 128, 200}, 21);
    ir::Node* conv = t.node("Conv", {t.x, t.constant("w", {96, 128, 5}), t.constant("b", {96})}, "y");
    conv->set_attr(ir::Attribute::make_ints("strides", {2}));
    conv->set_attr(ir::Attribute::make_ints("dilations", {2}));
    conv->set_attr(ir::Attribute::make_ints("pads", {3, 1}));
    t.g.add_output(conv->output(0), std::nullopt);
    ir::Value* narrow = t.node("Slice", {t.x, ir::add_int64_constant(t.g, "from", {1}, {0}),
                                         ir::add_int64_constant(t.g, "to", {1}, {4}),
                                         ir::add_int64_constant(t.g, "axis", {1}, {1})}, "narrow")->output(0);
    t.g.add_output(t.node("Conv", {narrow, t.constant("w4", {8, 4, 3})}, "few")->output(0), std::nullopt);
    ir::Node* grouped = t.node("Conv", {t.x, t.constant("wg", {16, 32, 3})}, "grouped");
    grouped->set_attr(ir::Attribute::make_int("group", 4));
    t.g.add_output(grouped->output(0), std::nullopt);
    ir::Model reference = quant::copy_model(t.m);

    const quant::QuantizeReport report = quant::quantize_dynamic(t.m, quant::QuantizeOptions{});
    CHECK(report.quantized_nodes == 1);
    std::map<std::string, int> ops;
    for (const auto& n : t.m.graph->nodes()) ++ops[n->op_type];
    CHECK(ops["MatMulInteger"] == 1);
    CHECK(ops["Gather"] >= 1);
    CHECK(ops["ConvInteger"] == 0);
    CHECK(ops["Conv"] == 2);
    REQUIRE(report.kept_float.size() == 2);
    for (const auto& f : report.kept_float) {
      CHECK(f.reason.find("only when its op type is asked for") != std::string::npos);
      CHECK(f.options == std::vector<std::string>{"op_types"});
    }

    // The windows are the Conv's: y within a few quantization steps of float, on inputs of
    // every sign.
    testing::Rng rng(5);
    const Tensor x = testing::uniform_tensor(rng, {2, 128, 200}, -1, 1);
    runner::Session a(reference), b(t.m);
    const Tensor want = a.run({{"x", runner::Value::of(x)}}, {"y"})[0].tensor;
    const Tensor got = b.run({{"x", runner::Value::of(x)}}, {"y"})[0].tensor;
    REQUIRE(got.shape() == std::vector<int64_t>{2, 96, 98});
    REQUIRE(want.shape() == got.shape());
    double dot = 0, aa = 0, bb = 0, worst = 0, peak = 0;
    for (int64_t i = 0; i < want.size(); ++i) {
      const double p = want.data<float>()[i], q = got.data<float>()[i];
      dot += p * q;
      aa += p * p;
      bb += q * q;
      worst = std::max(worst, std::abs(p - q));
      peak = std::max(peak, std::abs(p));
    }
    CHECK(dot / std::sqrt(aa * bb) > 0.999);
    CHECK(worst < 0.03 * peak);
  }

  TEST_CASE("static: depthwise and 3-channel Convs are estimated slower in int8 and stay float") {
    // x [1, 3, 32, 32] -> Conv 3->16 (a stem) -> Relu -> depthwise Conv 3x3 (group 16) -> y: both
    // run slower as onnxruntime's integer kernels than as its float ones (bench/quant_op_costs.py).
    TinyModel t({1, 3, 32, 32}, 13);
    ir::Node* stem = t.node("Conv", {t.x, t.constant("w1", {16, 3, 3, 3})}, "s");
    stem->set_attr(ir::Attribute::make_ints("pads", {1, 1, 1, 1}));
    ir::Value* r = t.node("Relu", {stem->output(0)}, "r")->output(0);
    ir::Node* dw = t.node("Conv", {r, t.constant("w2", {16, 1, 3, 3})}, "y");
    dw->set_attr(ir::Attribute::make_int("group", 16));
    dw->set_attr(ir::Attribute::make_ints("pads", {1, 1, 1, 1}));
    t.g.add_output(dw->output(0), std::nullopt);
    ir::Model forced = quant::copy_model(t.m);
    auto samples = [&](size_t sample, std::map<std::string, runner::Value>& feeds) {
      if (sample == 2) return false;
      testing::Rng rng(9 + static_cast<uint32_t>(sample));
      feeds["x"] = runner::Value::of(testing::uniform_tensor(rng, {1, 3, 32, 32}, 0, 1));
      return true;
    };
    quant::QuantizeOptions o;
    o.mode = quant::Mode::kStatic;
    const auto report = quant::quantize_static(t.m, o, samples);
    CHECK(report.quantized_nodes == 0);
    REQUIRE(report.kept_float.size() == 2);
    for (const auto& f : report.kept_float) {
      CAPTURE(f.node);
      CHECK(f.reason.find("estimated slower quantized") == 0);
      CHECK(f.reason.find("2 of its Convs depthwise, grouped or of fewer than 8 input channels") != std::string::npos);
    }
    // Named by --op-types, they are quantized all the same.
    o.op_types = {"Conv"};
    CHECK(quant::quantize_static(forced, o, samples).quantized_nodes == 2);
  }

  TEST_CASE("static: entropy ranges that clip what the outputs need fall back to the extremes; inputs keep theirs") {
    // x -> Conv -> y -> Conv -> z (1x1, identity weights): the output is y passed on, whose one
    // large value per sample (40 among 127 of N(0, 1)) carries most of its energy. Entropy clips
    // y there.
    TinyModel t({1, 2, 8, 8}, 6);
    const std::vector<float> identity = {1, 0, 0, 1};
    ir::Value* w = t.g.add_initializer(ir::make_tensor("w", ir::DataType::kFloat, {2, 2, 1, 1}, identity.data(), 16));
    ir::Value* y = t.node("Conv", {t.x, w}, "y")->output(0);
    t.g.add_output(t.node("Conv", {y, w}, "z")->output(0), std::nullopt);
    quant::QuantizeOptions o;
    o.mode = quant::Mode::kStatic;
    o.calibration.method = quant::CalibrationMethod::kEntropy;
    o.op_types = {"Conv"};  // 2-channel Convs: the speed estimate alone would keep them float
    o.error_samples = 4;
    const auto report = quant::quantize_static(t.m, o, [&](size_t sample, std::map<std::string, runner::Value>& feeds) {
      if (sample == 8) return false;
      testing::Rng rng(11 + static_cast<uint32_t>(sample));
      Tensor x = testing::normal_tensor(rng, {1, 2, 8, 8}, 0, 1);
      x.mutable_data<float>()[sample] = 40;  // one outlier per sample
      feeds["x"] = runner::Value::of(x);
      return true;
    });
    CHECK(report.calibration_fallback);
    CHECK(report.calibration_scores.second > report.calibration_scores.first);
    CHECK(report.output_cosine > 0.99);
    // The input's range is its extremes whatever the method.
    for (const auto& n : report.nodes)
      if (n.tensor == "x") CHECK(n.range_max == 40);
  }

  TEST_CASE("weight-only: MatMul weights in int4/int8 blocks behind a blocked DequantizeLinear") {
    for (const int bits : {4, 8}) {
      CAPTURE(bits);
      // x [1, 4, 64] -> MatMul(w [64, 24]) -> y; a product of two activations stays float.
      TinyModel t({1, 4, 64}, 9);
      ir::Value* y = t.node("MatMul", {t.x, t.constant("w", {64, 24})}, "y")->output(0);
      ir::Node* transpose = t.node("Transpose", {t.x}, "xt");
      transpose->set_attr(ir::Attribute::make_ints("perm", {0, 2, 1}));
      ir::Value* xt = transpose->output(0);
      t.g.add_output(y, std::nullopt);
      t.g.add_output(t.node("MatMul", {t.x, xt}, "gram")->output(0), std::nullopt);
      ir::Model original = quant::copy_model(t.m);
      quant::QuantizeOptions o;
      o.mode = quant::Mode::kWeightOnly;
      o.bits = bits;
      o.block_size = 16;
      const auto report = quant::quantize_weight_only(t.m, o);
      CHECK(report.quantized_nodes == 1);
      REQUIRE(report.kept_float.size() == 1);
      CHECK(report.kept_float[0].node == "gram_node");
      CHECK(t.m.onnx_opset() == 21);
      const ir::Node* dq = t.m.graph->find("y")->producer()->input(1)->producer();
      REQUIRE(ir::is_op(dq, "DequantizeLinear"));
      CHECK(dq->attr_int("block_size", 0) == 16);
      CHECK(dq->attr_int("axis", 1) == 0);
      const ir::Tensor* data = dq->input(0)->initializer();
      REQUIRE(data);
      CHECK(data->data_type == static_cast<int32_t>(bits == 4 ? ir::DataType::kInt4 : ir::DataType::kInt8));
      CHECK(ir::constant_of(t.m, dq->input(1))->dims == std::vector<int64_t>{4, 24});  // 64 rows in blocks of 16
      // 4 bits: 0.5 byte per weight and a float scale per 16: 0.1875x of float.
      CHECK(static_cast<double>(report.quantized_weight_bytes) / static_cast<double>(report.float_weight_bytes) ==
            doctest::Approx(bits == 4 ? 0.1875 : 0.3125));
      // The runner reads the packed weights back: y close to float (per-block steps only).
      std::map<std::string, runner::Value> feeds;
      testing::Rng rng(1);
      feeds["x"] = runner::Value::of(testing::uniform_tensor(rng, {1, 4, 64}, -1, 1));
      runner::Session a(original), b(t.m);
      const auto want = a.run(feeds), got = b.run(feeds);
      double dot = 0, aa = 0, bb = 0;
      for (int64_t i = 0; i < want[0].tensor.size(); ++i) {
        const double p = want[0].tensor.data<float>()[i], q = got[0].tensor.data<float>()[i];
        dot += p * q;
        aa += p * p;
        bb += q * q;
      }
      CHECK(dot / std::sqrt(aa * bb) > (bits == 4 ? 0.99 : 0.9999));
      CHECK(std::memcmp(want[1].tensor.data<float>(), got[1].tensor.data<float>(), 16 * 4) == 0);  // gram untouched
    }
  }

  TEST_CASE("minmax, moving average, percentile and entropy ranges") {
    quant::TensorStats s;
    testing::Rng rng(3);
    for (int k = 0; k < 20; ++k) {
      Tensor x = testing::normal_tensor(rng, {4096}, 0, 1);
      if (k == 7) x.mutable_data<float>()[0] = 60;  // one outlier
      s.observe(x, 0.01);
    }
    quant::CalibrationOptions o;
    const auto mm = quant::calibrated_range(s, o);
    CHECK(mm.max == 60);
    o.moving_average = 0.01;
    CHECK(quant::calibrated_range(s, o).max < 10);  // the outlier sample moves the average a little
    o.moving_average = 0;
    o.method = quant::CalibrationMethod::kPercentile;
    o.percentile = 99.9;
    const auto pr = quant::calibrated_range(s, o);
    CHECK(pr.max > 2.5);
    CHECK(pr.max < 5);  // the 99.9th percentile of |N(0,1)| is about 3.3
    CHECK(pr.min == doctest::Approx(-pr.max).epsilon(0.01));
    o.method = quant::CalibrationMethod::kEntropy;
    const auto en = quant::calibrated_range(s, o);
    CHECK(en.max > 1.5);
    CHECK(en.max < 20);  // the outlier is clipped
  }
}

}  // namespace onnxtool::quant_test
