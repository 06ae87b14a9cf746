// Tests of the verification library's float16 search (verify/fp16_guided.h): tiny models whose
// float16 conversion departs beyond tolerance, converted with the guide of verification runs
// against the float32 original until the result is within it.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "convert/precision.h"
#include "ir/graph.h"
#include "ir/progress.h"
#include "tests/model_builder.h"
#include "verify/fp16_guided.h"
#include "verify/reference.h"

namespace onnxtool::verify_test {
namespace {

using ir::DataType;
using testing::add_subgraph;
using testing::ModelBuilder;

/// The declared type of the test models' outputs.
ir::TypeInfo float_4x8() {
  ir::Shape s;
  for (int64_t d : {4, 8}) s.dims.push_back(ir::Dim::of(d));
  return ir::TypeInfo::tensor(DataType::kFloat, s);
}

TEST_SUITE("verify") {
  TEST_CASE("the guided conversion reports each round to its progress listener") {
    // y = ((x + 1000) - 1000) * x: float16 holds x + 1000 to a step of 0.5, so the guide keeps
    // values in float32 over more than one round.
    auto model = [] {
      ModelBuilder b(13);
      ir::Value* x = b.input("x", DataType::kFloat, {int64_t{4}, int64_t{8}});
      ir::Value* c = b.scalar("c", 1000);
      ir::Node* add = b.g->add_node("Add", {x, c}, {"a"}, "", "add_offset");
      ir::Node* sub = b.g->add_node("Sub", {add->output(0), c}, {"d"}, "", "sub_offset");
      ir::Node* mul = b.g->add_node("Mul", {sub->output(0), x}, {"y"}, "", "square");
      b.g->add_output(mul->output(0), float_4x8());
      return std::move(b.m);
    };
    ir::Model base = model();
    const verify::Reference reference(base, verify::VerifyInputs{});
    std::vector<std::string> details;
    const verify::GuidedFp16 g = verify::to_fp16_guided(
        base, model, {}, reference, verify::kFp16Tolerance, [&details](const ir::ProgressStep& step) {
          CHECK(step.phase == verify::kGuidedFp16Phase);
          details.push_back(step.detail);
        });
    CHECK(g.verified.ok());
    REQUIRE(g.rounds >= 1);
    REQUIRE(details.size() == static_cast<size_t>(g.rounds + 1));
    CHECK(details[0] == "round 1");
    CHECK(details[1].rfind("round 2, ", 0) == 0);
    CHECK(details[1].find("kept in float32 so far") != std::string::npos);
  }

  // y = x * 1.2 * 1.2 ... (kChain times) - x * 1.2^kChain in `g` (`prefix` names its values): zero
  // in exact arithmetic; float16 rounds every product a little (each within tolerance), and the
  // difference of the two paths keeps all of it (beyond 1e-3 where float32 leaves 1e-5).
  // Keeping one more value per round cannot reach the start of the chain in the localized
  // rounds: the head kept in float32 is searched instead.
  constexpr int kChain = 24;
  const verify::Tolerance kChainTolerance{"test", 1e-2, 1e-3};
  ir::Value* add_rounding_chain(ModelBuilder& b, ir::Graph& g, ir::Value* x, const std::string& prefix) {
    ir::Value* z = x;
    for (int i = 0; i < kChain; ++i) {
      const std::string n = prefix + std::to_string(i);
      z = g.add_node("Mul", {z, b.scalar("c" + n, 1.2f)}, {"z" + n})->output(0);
    }
    ir::Value* direct =
        g.add_node("Mul", {x, b.scalar(prefix + "c_all", std::pow(1.2f, static_cast<float>(kChain)))}, {prefix + "direct"})->output(0);
    return g.add_node("Sub", {z, direct}, {prefix + "y"})->output(0);
  }

  /// After the head: a second output, of its own input, that float16 computes well enough.
  void add_float16_output(ModelBuilder& b) {
    ir::Value* w = b.input("w", DataType::kFloat, {int64_t{4}, int64_t{8}});
    ir::Node* twice = b.g->add_node("Mul", {w, b.scalar("two", 2)}, {"twice"});
    b.g->add_output(twice->output(0), float_4x8());
  }

  TEST_CASE("the guided conversion keeps a head of the graph in float32 where no few values suffice") {
    auto model = [] {
      ModelBuilder b(13);
      ir::Value* x = b.input("x", DataType::kFloat, {int64_t{4}, int64_t{8}});
      b.g->add_output(add_rounding_chain(b, *b.g, x, ""), float_4x8());
      add_float16_output(b);
      return std::move(b.m);
    };
    ir::Model base = model();
    const verify::Reference reference(base, verify::VerifyInputs{});
    const verify::Tolerance& tight = kChainTolerance;
    std::vector<std::string> details;
    const verify::GuidedFp16 g = verify::to_fp16_guided(base, model, {}, reference, tight, [&details](const ir::ProgressStep& step) {
      details.push_back(step.detail);
    });
    CHECK(g.verified.ok());
    CHECK(g.graph_nodes == kChain + 3);
    REQUIRE(g.head_nodes > 0);
    CHECK(g.head_nodes < g.graph_nodes);
    CHECK(g.rounds > verify::kLocalizedRounds);
    CHECK(g.head_last.find("node") != std::string::npos);
    CHECK(details.back().find("nodes in float32") != std::string::npos);
    // The head found is the shortest that passes: one node fewer fails.
    convert::Fp16Options fewer;
    for (size_t i = 0; i + 1 < g.head_nodes; ++i)
      for (const ir::Value* out : base.graph->nodes()[i]->outputs()) fewer.keep_float32_for_accuracy.insert(out->name());
    for (const auto& v : g.accuracy_values) fewer.keep_float32_for_accuracy.insert(v);
    ir::Model shorter = model();
    convert::to_fp16(shorter, fewer);
    CHECK_FALSE(reference.check(shorter, tight).ok());
    // After the head, float16: the second output's Mul and its constant.
    CHECK(g.report.converted_initializers > 0);
  }

  TEST_CASE("the head kept in float32 reaches into If branches") {
    // The chain in both branches of an If, the main graph holding only the If and the second
    // output: the head runs over the branches' nodes, each before its If.
    auto model = [] {
      ModelBuilder b(13);
      ir::Value* x = b.input("x", DataType::kFloat, {int64_t{4}, int64_t{8}});
      ir::Node* branch = b.g->add_node("If", {b.input("cond", DataType::kBool, {})}, {"y"}, "", "if");
      for (const char* attr : {"then_branch", "else_branch"}) {
        ir::Graph* sub = add_subgraph(branch, attr);
        sub->add_output(add_rounding_chain(b, *sub, x, attr[0] == 't' ? "t" : "e"), float_4x8());
      }
      b.g->add_output(branch->output(0), float_4x8());
      add_float16_output(b);
      return std::move(b.m);
    };
    ir::Model base = model();
    const verify::Reference reference(base, verify::VerifyInputs{});
    const verify::GuidedFp16 g = verify::to_fp16_guided(base, model, {}, reference, kChainTolerance);
    CHECK(g.verified.ok());
    CHECK(g.graph_nodes == 2 * (kChain + 2) + 2);
    CHECK(g.head_nodes > 0);
    CHECK(g.head_nodes < g.graph_nodes);
    CHECK(g.report.converted_initializers > 0);
  }
}

}  // namespace
}  // namespace onnxtool::verify_test
