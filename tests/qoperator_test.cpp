// Tests of the QOperator format (quant/qoperator.cpp): a small classifier quantized statically in
// QDQ, then converted — op counts, checker, topological order, no dead nodes or initializers,
// outputs against the QDQ model (tolerance policy "requantized": the integer kernels round
// once where DQ -> op -> Q rounds the float result, so they differ by a step now and then) and
// against fp32; the groups that must stay in QDQ; idempotence; and onnxruntime's opinion of the
// result when onnxruntime-node is installed.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "checker/checker.h"
#include "ir/constant.h"
#include "ir/graph.h"
#include "ir/graph_util.h"
#include "ir/model_io.h"
#include "quant/quantize.h"
#include "runner/session.h"
#include "runner/tensor_io.h"
#include "tests/empty_model.h"
#include "tests/model_builder.h"
#include "tests/random_feed.h"
#include "tests/test_data.h"

namespace onnxtool::qoperator_test {
namespace {

using ir::DataType;
using testing::add_subgraph;
using runner::Tensor;
using runner::Value;
using Feeds = std::map<std::string, Value>;

/// Tolerance policy "requantized": QLinear kernels against DQ -> op -> Q, in output steps.
constexpr double kRequantizedSteps = 2;
/// Quantized against fp32: cosine similarity of the logits.
constexpr double kMinCosine = 0.99;

/// Builds a float model at opset 13; weights are uniform random with a fixed seed.
struct Builder {
  ir::Model m;
  ir::Graph* g;
  testing::Rng rng{42};

  Builder() {
    m = testing::empty_model(13);
    g = m.graph.get();
    g->name = "qoperator";
  }
  ir::Value* input(const std::string& name, const std::vector<int64_t>& dims) {
    ir::Shape s;
    for (int64_t d : dims) s.dims.push_back(ir::Dim::of(d));
    return g->add_input(name, ir::TypeInfo::tensor(DataType::kFloat, s)).value;
  }
  ir::Value* weight(const std::string& name, const std::vector<int64_t>& dims, float range) {
    return testing::uniform_initializer(*g, rng, name, dims, -range, range);
  }
  ir::Node* node(const std::string& op, const std::vector<ir::Value*>& in, const std::string& out) {
    return g->add_node(op, in, {out}, "", out + "_node");
  }
  ir::Node* conv(ir::Value* x, ir::Value* w, ir::Value* b, const std::string& out) {
    std::vector<ir::Value*> in = {x, w};
    if (b) in.push_back(b);
    ir::Node* n = node("Conv", in, out);
    n->set_attr(ir::Attribute::make_ints("pads", {1, 1, 1, 1}));
    n->set_attr(ir::Attribute::make_ints("kernel_shape", {3, 3}));
    return n;
  }
  void output(ir::Value* v) { g->add_output(v, ir::TypeInfo::tensor(DataType::kFloat)); }
};

/// x[1,3,16,16] -> Conv(8, 3x3, bias) -> Relu -> Conv(4, 3x3) -> Flatten -> MatMul([1024,10])
/// -> logits -> Softmax -> probs.
ir::Model classifier() {
  Builder b;
  ir::Value* x = b.input("x", {1, 3, 16, 16});
  ir::Value* c1 = b.conv(x, b.weight("w1", {8, 3, 3, 3}, 0.5f), b.weight("b1", {8}, 0.2f), "c1")->output(0);
  ir::Value* r1 = b.node("Relu", {c1}, "r1")->output(0);
  ir::Value* c2 = b.conv(r1, b.weight("w2", {4, 8, 3, 3}, 0.3f), nullptr, "c2")->output(0);
  ir::Value* f = b.node("Flatten", {c2}, "f")->output(0);
  ir::Value* logits = b.node("MatMul", {f, b.weight("wm", {1024, 10}, 0.1f)}, "logits")->output(0);
  b.output(b.node("Softmax", {logits}, "probs")->output(0));
  return std::move(b.m);
}

/// Static QDQ quantization calibrated on 8 random samples.
void quantize_qdq(ir::Model& m, quant::QuantizeOptions o) {
  o.mode = quant::Mode::kStatic;
  o.format = quant::Format::kQdq;
  quant::quantize_static(m, o, [&](size_t sample, Feeds& feeds) {
    if (sample == 8) return false;
    feeds = testing::random_feeds(m, 100 + static_cast<uint32_t>(sample), -1, 1);
    return true;
  });
}

/// Conv forced (--op-types Conv): the speed estimate alone keeps a Conv of 3 input channels float.
quant::QuantizeOptions conv_only() {
  quant::QuantizeOptions o;
  o.op_types = {"Conv"};
  return o;
}

/// Per-tensor weights (the library's default is per channel).
quant::QuantizeOptions per_tensor() {
  quant::QuantizeOptions o;
  o.per_channel = false;
  return o;
}

ir::Model quantized_classifier(const quant::QuantizeOptions& o) {
  ir::Model m = classifier();
  quantize_qdq(m, o);
  return m;
}

int64_t count_op(const ir::Model& m, const std::string& op) {
  int64_t n = 0;
  for (const auto& node : m.graph->nodes()) n += node->op_type == op;
  return n;
}

/// The checker's error count (each error is printed).
size_t checker_errors(ir::Model& m) {
  ir::DiagnosticSink sink;
  checker::check_model(m, sink);
  for (const auto& d : sink.items())
    if (d.severity == ir::Severity::kError) MESSAGE(d.rule << " " << d.node << ": " << d.message);
  return sink.error_count();
}

/// Every node reads only graph inputs, initializers and outputs of earlier nodes.
bool topologically_sorted(const ir::Graph& g) {
  std::set<const ir::Value*> defined;
  for (const auto& n : g.nodes()) {
    for (const ir::Value* v : n->inputs())
      if (v && v->producer() && !defined.count(v)) return false;
    for (const ir::Value* v : n->outputs()) defined.insert(v);
  }
  return true;
}

/// Nodes whose outputs nothing reads, plus initializers nothing reads.
int64_t unused_nodes_and_initializers(const ir::Graph& g) {
  int64_t dead = 0;
  for (const auto& n : g.nodes()) {
    bool used = false;
    for (const ir::Value* v : n->outputs()) used = used || (v && (v->is_graph_output() || !v->uses().empty()));
    dead += !used;
  }
  for (const auto& t : g.initializers()) {
    const ir::Value* v = g.find(t->name);
    dead += v->uses().empty() && !v->is_graph_output();
  }
  return dead;
}

/// The elements of a float tensor.
std::vector<float> values(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.size()); }

/// The logits (the value the Softmax reads, the DequantizeLinear output in quantized models) of
/// one run, copied as the runner produces them.
std::vector<float> run_logits(ir::Model& m, const Feeds& feeds) {
  const ir::Value* logits = nullptr;
  for (const auto& n : m.graph->nodes())
    if (n->op_type == "Softmax") logits = n->input(0);
  REQUIRE(logits);
  std::vector<float> out;
  runner::Session s(m, runner::SessionOptions{1});
  s.set_observer([&](const ir::Value& v, const Value& produced) {
    if (&v == logits) out = values(produced.tensor);
  });
  s.run(feeds);
  REQUIRE(!out.empty());
  return out;
}

/// Every 8-bit tensor of one run by name: the quantized activations (QuantizeLinear outputs in
/// QDQ; in QOperator, the QLinear ops' outputs, which keep those names).
std::map<std::string, std::vector<int>> run_quantized(ir::Model& m, const Feeds& feeds) {
  std::map<std::string, std::vector<int>> out;
  runner::Session s(m, runner::SessionOptions{1});
  s.set_observer([&](const ir::Value& v, const Value& produced) {
    const Tensor& t = produced.tensor;
    if (t.dtype() == DataType::kUInt8) out[v.name()].assign(t.data<uint8_t>(), t.data<uint8_t>() + t.size());
    if (t.dtype() == DataType::kInt8) out[v.name()].assign(t.data<int8_t>(), t.data<int8_t>() + t.size());
  });
  s.run(feeds);
  return out;
}

/// The scale of the quantized logits: the DequantizeLinear the Softmax reads.
double logits_scale(const ir::Model& m) {
  for (const auto& n : m.graph->nodes())
    if (n->op_type == "Softmax") {
      const ir::Node* dq = n->input(0)->producer();
      REQUIRE(ir::is_op(dq, "DequantizeLinear"));
      return ir::scalar_constant(m, dq->input(1)).value();
    }
  FAIL("no Softmax");
  return 0;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - b[i]));
  return d;
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

/// DequantizeLinear nodes of weights or biases (their data is an initializer).
int64_t weight_dequantizers(const ir::Model& m) {
  int64_t n = 0;
  for (const auto& node : m.graph->nodes())
    n += node->op_type == "DequantizeLinear" && node->input(0)->is_initializer();
  return n;
}

/// Converts, checks the model's invariants, the logits against the QDQ model and fp32 on a fresh
/// input, every quantized tensor against the QDQ model's in integer steps, and that a second
/// conversion changes nothing.
void check_conversion(const quant::QuantizeOptions& o, int64_t convs, int64_t matmuls) {
  ir::Model fp32 = classifier();
  ir::Model qdq = quantized_classifier(o);
  ir::Model qop = quantized_classifier(o);
  CHECK(quant::qdq_to_qoperator(qop) == convs + matmuls);
  CHECK(count_op(qop, "QLinearConv") == convs);
  CHECK(count_op(qop, "Conv") == 2 - convs);
  CHECK(count_op(qop, "QLinearMatMul") == matmuls);
  CHECK(count_op(qop, "MatMul") == 1 - matmuls);
  CHECK(checker_errors(qop) == 0);
  CHECK(topologically_sorted(*qop.graph));
  CHECK(unused_nodes_and_initializers(*qop.graph) == 0);

  const Feeds feeds = testing::random_feeds(fp32, 7, -1, 1);
  const auto ref = run_logits(fp32, feeds);
  const auto dq = run_logits(qdq, feeds);
  const auto op = run_logits(qop, feeds);
  const double step = logits_scale(qop);
  CHECK(step == logits_scale(qdq));
  CHECK(max_abs_diff(op, dq) <= kRequantizedSteps * step);
  MESSAGE("cosine to fp32: qdq " << cosine(dq, ref) << ", qoperator " << cosine(op, ref) << "; max |qoperator - qdq| "
                                  << max_abs_diff(op, dq) << " (step " << step << ")");
  CHECK(cosine(op, ref) >= kMinCosine);

  // Tensor by tensor, in integer steps: the QLinear kernels round once where the float op rounds
  // after its own float arithmetic, so an element near a half step may land on the other side.
  const auto qdq_steps = run_quantized(qdq, feeds);
  const auto qop_steps = run_quantized(qop, feeds);
  CHECK(qop_steps.size() == qdq_steps.size());
  int64_t elements = 0, differing = 0;
  for (const auto& [name, q] : qop_steps) {
    CAPTURE(name);
    const auto it = qdq_steps.find(name);
    REQUIRE(it != qdq_steps.end());
    REQUIRE(it->second.size() == q.size());
    int max_steps = 0;
    for (size_t i = 0; i < q.size(); ++i) {
      max_steps = std::max(max_steps, std::abs(q[i] - it->second[i]));
      differing += q[i] != it->second[i];
    }
    CHECK(max_steps <= kRequantizedSteps);
    elements += static_cast<int64_t>(q.size());
  }
  MESSAGE(differing << " of " << elements << " quantized elements differ between QDQ and QOperator");

  const size_t nodes = qop.graph->nodes().size();
  CHECK(quant::qdq_to_qoperator(qop) == 0);
  CHECK(qop.graph->nodes().size() == nodes);
}

/// The node producing `name`.
ir::Node* producer_of(const ir::Model& m, const std::string& name) {
  const ir::Value* v = m.graph->find(name);
  REQUIRE(v);
  return v->producer();
}

}  // namespace

TEST_SUITE("qoperator") {
  TEST_CASE("per-tensor weights: both Convs and the MatMul become QLinear ops") {
    check_conversion(per_tensor(), 2, 1);
    // Every weight and bias moved into a QLinear op: no DequantizeLinear of an initializer is left.
    ir::Model qop = quantized_classifier(per_tensor());
    quant::qdq_to_qoperator(qop);
    CHECK(weight_dequantizers(qop) == 0);
    // The fused node keeps the Conv's name and attributes, and its output the QuantizeLinear's name.
    const ir::Model qdq = quantized_classifier(per_tensor());
    const ir::Node* q = ir::single_consumer(producer_of(qdq, "c1")->output(0));
    REQUIRE(ir::is_op(q, "QuantizeLinear"));
    const ir::Node* fused = producer_of(qop, q->output(0)->name());
    REQUIRE(fused);
    CHECK(fused->op_type == "QLinearConv");
    CHECK(fused->name == "c1_node");
    CHECK(fused->attr_ints("pads") == std::vector<int64_t>{1, 1, 1, 1});
    CHECK(fused->inputs().size() == 9);  // with the int32 bias
  }

  TEST_CASE("per-channel weights: the Convs convert, the per-column MatMul stays in QDQ") {
    quant::QuantizeOptions o;
    o.per_channel = true;
    check_conversion(o, 2, 0);
  }

  TEST_CASE("int8 activations: int8 weights convert, uint8 weights stay in QDQ") {
    quant::QuantizeOptions o = per_tensor();
    o.activation_type = quant::QuantType::kInt8;
    check_conversion(o, 2, 1);
    o.weight_type = quant::QuantType::kUInt8;
    ir::Model m = quantized_classifier(o);
    CHECK(quant::qdq_to_qoperator(m) == 0);
  }

  TEST_CASE("a Conv output that is also a graph output stays in QDQ") {
    Builder b;
    ir::Value* x = b.input("x", {1, 3, 8, 8});
    ir::Value* c = b.conv(x, b.weight("w", {4, 3, 3, 3}, 0.5f), b.weight("bias", {4}, 0.2f), "c")->output(0);
    b.output(c);
    b.output(b.node("Sigmoid", {c}, "s")->output(0));
    quantize_qdq(b.m, conv_only());
    REQUIRE(count_op(b.m, "QuantizeLinear") >= 2);
    CHECK(quant::qdq_to_qoperator(b.m) == 0);
    CHECK(count_op(b.m, "Conv") == 1);
    CHECK(checker_errors(b.m) == 0);
  }

  TEST_CASE("a Conv output with a second reader stays in QDQ; the other groups convert") {
    ir::Model m = quantized_classifier(per_tensor());
    ir::Value* c2 = m.graph->find("c2");
    REQUIRE(c2);
    ir::Node* sigmoid = m.graph->add_node("Sigmoid", {c2}, {"c2_sigmoid"});
    m.graph->add_output(sigmoid->output(0), ir::TypeInfo::tensor(DataType::kFloat));
    CHECK(quant::qdq_to_qoperator(m) == 2);
    CHECK(count_op(m, "Conv") == 1);
    CHECK(producer_of(m, "c2")->op_type == "Conv");
    CHECK(checker_errors(m) == 0);
    CHECK(unused_nodes_and_initializers(*m.graph) == 0);
  }

  TEST_CASE("a bias quantized with another scale than x_scale * w_scale stays in QDQ") {
    ir::Model m = quantized_classifier(per_tensor());
    ir::Node* bias_dq = producer_of(m, "c1")->input(2)->producer();
    REQUIRE(ir::is_op(bias_dq, "DequantizeLinear"));
    const ir::Tensor* scale = ir::constant_of(m, bias_dq->input(1));
    const float doubled = static_cast<float>(ir::read_floats(*scale)->at(0) * 2);
    bias_dq->set_input(1, m.graph->add_initializer(ir::make_tensor("bias_scale_doubled", DataType::kFloat, scale->dims,
                                                                   &doubled, sizeof doubled)));
    CHECK(quant::qdq_to_qoperator(m) == 2);
    CHECK(producer_of(m, "c1")->op_type == "Conv");
    CHECK(checker_errors(m) == 0);
  }

  TEST_CASE("groups QLinearConv cannot express, or onnxruntime cannot run, stay in QDQ") {
    quant::QuantizeOptions o;
    o.per_channel = true;  // c1 and c2 convert, the MatMul stays
    ir::Model m = quantized_classifier(o);
    ir::Node* c1 = producer_of(m, "c1");
    SUBCASE("per-channel weight zero points that differ") {
      ir::Node* w_dq = c1->input(1)->producer();
      REQUIRE(ir::is_op(w_dq, "DequantizeLinear"));
      const ir::Tensor* zp = ir::constant_of(m, w_dq->input(2));
      REQUIRE(zp->type() == DataType::kInt8);
      std::vector<int8_t> z(8, 0);
      z[3] = 1;
      w_dq->set_input(2, m.graph->add_initializer(
                             ir::make_tensor("w1_zero_points_differ", DataType::kInt8, zp->dims, z.data(), z.size())));
    }
    SUBCASE("an activation DequantizeLinear without zero point") {
      ir::Node* x_dq = c1->input(0)->producer();
      REQUIRE(ir::is_op(x_dq, "DequantizeLinear"));
      x_dq->remove_input(2);
    }
    CHECK(quant::qdq_to_qoperator(m) == 1);
    CHECK(producer_of(m, "c1")->op_type == "Conv");
    CHECK(checker_errors(m) == 0);
  }

  TEST_CASE("a DequantizeLinear with other readers stays") {
    Builder b;
    ir::Value* x = b.input("x", {1, 3, 8, 8});
    ir::Value* c = b.conv(x, b.weight("w", {4, 3, 3, 3}, 0.5f), b.weight("bias", {4}, 0.2f), "c")->output(0);
    b.output(b.node("Sigmoid", {c}, "s")->output(0));
    b.output(b.node("Flatten", {x}, "f")->output(0));  // Flatten reads x's DequantizeLinear too
    quant::QuantizeOptions o = conv_only();
    o.op_types.push_back("Flatten");
    quantize_qdq(b.m, o);
    CHECK(quant::qdq_to_qoperator(b.m) == 1);
    CHECK(count_op(b.m, "QLinearConv") == 1);
    const ir::Node* flatten = producer_of(b.m, "f");
    REQUIRE(flatten);
    CHECK(ir::is_op(flatten->input(0)->producer(), "DequantizeLinear"));
    CHECK(checker_errors(b.m) == 0);
    CHECK(unused_nodes_and_initializers(*b.m.graph) == 0);
    runner::Session s(b.m, runner::SessionOptions{1});
    CHECK(s.run(testing::random_feeds(b.m, 3, -1, 1)).size() == 2);
  }

  TEST_CASE("subgraphs are left alone, and what they read from the main graph stays") {
    ir::Model m = quantized_classifier(per_tensor());
    ir::Graph& g = *m.graph;
    ir::Node* c1 = producer_of(m, "c1");
    ir::Node* q1 = ir::single_consumer(c1->output(0));
    REQUIRE(ir::is_op(q1, "QuantizeLinear"));
    const std::string q1_name = q1->output(0)->name();
    const ir::TypeInfo u8 = ir::TypeInfo::tensor(DataType::kUInt8);
    // The QuantizeLinear output is also a graph output: the QLinearConv takes the entry over.
    g.add_output(q1->output(0), u8);
    // If(true): the then branch repeats c1's group on the main graph's DequantizeLinear outputs;
    // the else branch reads the QuantizeLinear output from the outer scope.
    const bool yes = true;
    ir::Node* branch = g.add_node("If", {g.add_initializer(ir::make_tensor("cond", DataType::kBool, {}, &yes, 1))},
                                  {"branch_out"}, "", "branch");
    ir::Graph* then_g = add_subgraph(branch, "then_branch");
    ir::Node* conv = then_g->add_node("Conv", {c1->input(0), c1->input(1), c1->input(2)}, {"sub_c"}, "", "sub_conv");
    conv->set_attr(ir::Attribute::make_ints("pads", {1, 1, 1, 1}));
    conv->set_attr(ir::Attribute::make_ints("kernel_shape", {3, 3}));
    ir::Node* q = then_g->add_node("QuantizeLinear", {conv->output(0), q1->input(1), q1->input(2)}, {"sub_q"}, "",
                                   "sub_quantize");
    then_g->add_output(q->output(0), u8);
    ir::Graph* else_g = add_subgraph(branch, "else_branch");
    ir::Node* identity = else_g->add_node("Identity", {q1->output(0)}, {"else_q"}, "", "else_identity");
    else_g->add_output(identity->output(0), u8);
    g.add_output(branch->output(0), u8);

    CHECK(quant::qdq_to_qoperator(m) == 3);
    std::vector<std::string> inner;
    for (const auto& n : then_g->nodes()) inner.push_back(n->op_type);
    CHECK(inner == std::vector<std::string>{"Conv", "QuantizeLinear"});
    const ir::Node* fused = producer_of(m, q1_name);
    REQUIRE(fused);
    CHECK(fused->op_type == "QLinearConv");
    CHECK(identity->input(0)->producer() == fused);
    CHECK(g.outputs[1].value->producer() == fused);
    // The then branch still reads c1's weight and bias DequantizeLinear nodes.
    CHECK(weight_dequantizers(m) == 2);
    CHECK(checker_errors(m) == 0);
    CHECK(unused_nodes_and_initializers(g) == 0);
    runner::Session s(m, runner::SessionOptions{1});
    const auto out = s.run(testing::random_feeds(m, 5, -1, 1));
    REQUIRE(out.size() == 3);
    const Tensor& ours = out[1].tensor;
    const Tensor& branch_q = out[2].tensor;
    REQUIRE(ours.shape() == branch_q.shape());
    int max_steps = 0;
    for (int64_t i = 0; i < ours.size(); ++i)
      max_steps = std::max(max_steps, std::abs(int{ours.data<uint8_t>()[i]} - int{branch_q.data<uint8_t>()[i]}));
    CHECK(max_steps <= kRequantizedSteps);
  }

  TEST_CASE("onnxruntime runs the QOperator models as onnxtool does") {
    namespace fs = std::filesystem;
    const fs::path ort = testing::cache_dir() / "ort";
    if (!fs::exists(ort / "node_modules" / "onnxruntime-node" / "package.json") ||
        std::system("node --version > /dev/null 2>&1") != 0) {
      testing::skip_missing_data("node or onnxruntime-node (in " + ort.string() + ")");
      return;
    }
    quant::QuantizeOptions tensor = per_tensor(), channel, int8 = per_tensor();
    int8.activation_type = quant::QuantType::kInt8;
    for (const auto* o : {&tensor, &channel, &int8}) {
      CAPTURE(o->per_channel);
      CAPTURE(quant::name_of(o->activation_type));
      ir::Model m = quantized_classifier(*o);
      REQUIRE(quant::qdq_to_qoperator(m) > 0);
      // The logits as a second output, to compare them in output steps.
      const ir::Value* logits = nullptr;
      for (const auto& n : m.graph->nodes())
        if (n->op_type == "Softmax") logits = n->input(0);
      REQUIRE(logits);
      m.graph->add_output(const_cast<ir::Value*>(logits), ir::TypeInfo::tensor(DataType::kFloat));
      const double step = logits_scale(m);

      std::string pattern = (fs::temp_directory_path() / "onnxtool_qoperator_XXXXXX").string();
      REQUIRE(::mkdtemp(pattern.data()) != nullptr);
      const fs::path dir = pattern;
      ir::save_model(m, (dir / "model.onnx").string());
      const Feeds feeds = testing::random_feeds(m, 7, -1, 1);
      runner::write_npy((dir / "x.npy").string(), feeds.at("x").tensor);
      const fs::path script = testing::source_dir() / "tests" / "ort" / "ort_run.js";
      const std::string command = "ONNXTOOL_ORT_DIR='" + ort.string() + "' node '" + script.string() + "' '" +
                                  (dir / "model.onnx").string() + "' --input x='" + (dir / "x.npy").string() +
                                  "' --output-dir '" + (dir / "out").string() + "' > '" + (dir / "log").string() +
                                  "' 2>&1";
      if (std::system(command.c_str()) != 0) {
        std::ifstream log(dir / "log");
        FAIL_CHECK("ort_run.js failed: " << std::string(std::istreambuf_iterator<char>(log), {}));
      } else {
        runner::Session s(m, runner::SessionOptions{1});
        const std::vector<Value> ours = s.run(feeds);
        const fs::path theirs_file = dir / "out" / (runner::safe_file_name(logits->name()) + ".npy");
        const Tensor theirs = runner::read_npy(theirs_file.string());
        CHECK(max_abs_diff(values(theirs), values(ours[1].tensor)) <= kRequantizedSteps * step);
      }
      fs::remove_all(dir);
    }
  }
}

}  // namespace onnxtool::qoperator_test
