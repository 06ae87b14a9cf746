// Tests of the opset version converter (convert/version_converter.cpp) on one-node models built
// here: the runner's outputs before and after a conversion must be equal, the node must take the
// target version's form, subgraphs convert too, and conversions without an equivalent fail with
// an Error naming the node. (The whole backend suite, up and down, is judged by onnxruntime in
// tests/cli/convert_opset.sh.)
#include <doctest/doctest.h>

#include <cstring>

#include "convert/version_converter.h"
#include "ir/error.h"
#include "runner/session.h"
#include "tests/kernel_test_util.h"

namespace onnxtool::version_converter_test {
namespace {

using namespace testing;  // NOLINT: the kernel-test harness

/// A model of one node whose inputs are graph inputs with their full static shapes.
ir::Model one_node(const std::string& op, int64_t opset, const std::vector<Tensor>& inputs,
                   const std::vector<Attr>& attrs, size_t outputs = 1) {
  ir::Model m = empty_model(opset, 8);
  ir::Graph& g = *m.graph;
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ir::Shape s;
    for (int64_t d : inputs[i].shape()) s.dims.push_back(ir::Dim::of(d));
    ins.push_back(g.add_input("in" + std::to_string(i), ir::TypeInfo::tensor(inputs[i].dtype(), s)).value);
  }
  std::vector<std::string> outs;
  for (size_t i = 0; i < outputs; ++i) outs.push_back("out" + std::to_string(i));
  ir::Node* n = g.add_node(op, ins, outs, "", "node");
  for (const auto& a : attrs) n->set_attr(a.make());
  for (size_t i = 0; i < outputs; ++i) g.add_output(n->output(i), std::nullopt);
  return m;
}

std::vector<Tensor> run(ir::Model& m, const std::vector<Tensor>& inputs) {
  std::map<std::string, Value> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) feeds["in" + std::to_string(i)] = Value::of(inputs[i]);
  runner::Session s(m);
  std::vector<Tensor> out;
  for (auto& v : s.run(feeds)) out.push_back(v.tensor.clone());
  return out;
}

/// Converts to `target` and checks the outputs did not change: bit for bit by default (the
/// rewrites move data around but compute the same arithmetic), within `tolerance` where the
/// kernel sums in another order (a softmax over a transposed axis).
ir::Model converts_equal(ir::Model m, const std::vector<Tensor>& inputs, int64_t target, double tolerance = 0) {
  const auto before = run(m, inputs);
  convert::convert_opset(m, target);
  CHECK(m.opset_version("").value_or(0) == target);
  const auto after = run(m, inputs);
  REQUIRE(before.size() == after.size());
  for (size_t i = 0; i < before.size(); ++i) {
    if (tolerance == 0) {
      check_same(after[i], before[i]);
      continue;
    }
    std::vector<double> want(static_cast<size_t>(before[i].size()));
    for (size_t k = 0; k < want.size(); ++k) want[k] = before[i].data<float>()[k];
    check_close(after[i], want, tolerance);
  }
  return m;
}

const ir::Node* find_op(const ir::Graph& g, const std::string& op) {
  for (const auto& n : g.nodes())
    if (n->op_type == op) return n.get();
  return nullptr;
}

TEST_SUITE("version_converter") {
  TEST_CASE("Softmax on a middle axis: opset 11 coerces to 2-D, 13 gets Flatten/Reshape around it") {
    const Tensor x = random_float({2, 3, 4});
    auto m = converts_equal(one_node("Softmax", 11, {x}, {attr_int("axis", 1)}), {x}, 13);
    CHECK(find_op(*m.graph, "Flatten"));
    CHECK(find_op(*m.graph, "Reshape"));
  }

  TEST_CASE("Softmax-13 on axis 0 goes down to 11 through Transposes; the last axis needs none") {
    const Tensor x = random_float({3, 2, 5});
    auto m = converts_equal(one_node("Softmax", 13, {x}, {attr_int("axis", 0)}), {x}, 11, 1e-6);
    CHECK(find_op(*m.graph, "Transpose"));
    auto last = converts_equal(one_node("LogSoftmax", 13, {x}, {attr_int("axis", -1)}), {x}, 11);
    CHECK(last.graph->nodes().size() == 1);
  }

  TEST_CASE("attributes that became inputs, up and back down") {
    const Tensor x = random_float({2, 6, 4});
    auto up = converts_equal(one_node("ReduceMean", 11, {x}, {attr_ints("axes", {-1}), attr_int("keepdims", 0)}), {x}, 18);
    CHECK(find_op(*up.graph, "ReduceMean")->inputs().size() == 2);
    auto down = converts_equal(std::move(up), {x}, 9);  // below 11: the negative axis is normalized
    CHECK(find_op(*down.graph, "ReduceMean")->attr_ints("axes") == std::vector<int64_t>{2});
    converts_equal(one_node("Slice", 9, {x}, {attr_ints("starts", {1}), attr_ints("ends", {5}), attr_ints("axes", {1})}), {x}, 13);
    converts_equal(one_node("Clip", 9, {x}, {attr_float("min", -0.5f), attr_float("max", 0.25f)}), {x}, 13);
    converts_equal(one_node("Pad", 9, {x}, {attr_ints("pads", {0, 1, 0, 0, 2, 1}), attr_float("value", 1.5f)}), {x}, 19);
    converts_equal(one_node("Unsqueeze", 9, {x}, {attr_ints("axes", {0, 4})}), {x}, 21);
    converts_equal(one_node("TopK", 9, {x}, {attr_int("k", 2), attr_int("axis", 1)}, 2), {x}, 11);
    converts_equal(one_node("Upsample", 9, {random_float({1, 1, 2, 3}), floats({1, 1, 2, 3}, {4})}, {}), {random_float({1, 1, 2, 3}), floats({1, 1, 2, 3}, {4})}, 13);
  }

  TEST_CASE("Split-18 with num_outputs over an uneven dimension goes down with explicit sizes") {
    const Tensor x = random_float({7, 2});
    auto m = converts_equal(one_node("Split", 18, {x}, {attr_int("num_outputs", 3)}, 3), {x}, 13);
    const ir::Node* split = find_op(*m.graph, "Split");
    REQUIRE(split->inputs().size() == 2);
    CHECK(!split->attr("num_outputs"));
  }

  TEST_CASE("Shape-15 start/end become a Slice below 15") {
    const Tensor x = random_float({2, 3, 4, 5});
    auto m = converts_equal(one_node("Shape", 15, {x}, {attr_int("start", 1), attr_int("end", -1)}), {x}, 13);
    CHECK(find_op(*m.graph, "Slice"));
  }

  TEST_CASE("subgraphs are converted with the main graph") {
    const Tensor x = random_float({3, 4});
    ir::Model m = one_node("Identity", 11, {x}, {});
    ir::Graph& g = *m.graph;
    ir::Value* cond = g.add_initializer(ir::make_tensor("cond", DataType::kBool, {}, "\x01", 1));
    ir::Node* if_node = g.add_node("If", {cond}, {"if_out"}, "", "if");
    for (const char* branch : {"then_branch", "else_branch"}) {
      auto sub = std::make_unique<ir::Graph>(&g);
      sub->name = branch;
      ir::Node* u = sub->add_node("Unsqueeze", {g.find("in0")}, {std::string(branch) + "_y"}, "", branch + std::string("_unsqueeze"));
      u->set_attr(ir::Attribute::make_ints("axes", {0}));
      sub->add_output(u->output(0), std::nullopt);
      ir::Attribute a;
      a.name = branch;
      a.type = static_cast<int32_t>(ir::AttrType::kGraph);
      a.g = std::move(sub);
      if_node->set_attr(std::move(a));
    }
    g.add_output(if_node->output(0), std::nullopt);
    auto converted = converts_equal(std::move(m), {x}, 13);
    for (ir::Graph* sub : find_op(*converted.graph, "If")->subgraphs())
      CHECK(find_op(*sub, "Unsqueeze")->inputs().size() == 2);  // axes is an input from 13 on
  }

  TEST_CASE("Dropout's unread mask output changes type at 10 (T to bool) in both directions") {
    const Tensor x = random_float({2, 3});
    ir::Model m = one_node("Dropout", 9, {x}, {}, 2);
    m.graph->remove_output(1);
    auto up = converts_equal(std::move(m), {x}, 10);
    CHECK(find_op(*up.graph, "Dropout")->output(1)->type.data_type() == DataType::kBool);
    auto down = converts_equal(std::move(up), {x}, 9);
    CHECK(find_op(*down.graph, "Dropout")->output(1)->type.data_type() == DataType::kFloat);
  }

  TEST_CASE("Max, Min, Sum and Mean down to 7 broadcast their inputs explicitly (Unsqueeze, Tile)") {
    const Tensor x = random_float({2, 3, 4}), row = random_float({3, 1}), col = random_float({2, 1, 1});
    auto max = converts_equal(one_node("Max", 13, {x, row}, {}), {x, row}, 7);
    CHECK(find_op(*max.graph, "Unsqueeze"));
    CHECK(find_op(*max.graph, "Tile"));
    converts_equal(one_node("Sum", 13, {row, col, x}, {}), {row, col, x}, 7);
    converts_equal(one_node("Mean", 8, {col, row}, {}), {col, row}, 7);
    auto same = converts_equal(one_node("Min", 13, {x, x}, {}), {x, x}, 7);
    CHECK(!find_op(*same.graph, "Tile"));

    // A symbolic batch: the repeats come from the shape of the input that has the output's shape.
    const Tensor batch = random_float({5, 3}), per_column = random_float({3});
    ir::Model dynamic = one_node("Max", 13, {batch, per_column}, {});
    dynamic.graph->inputs[0].type->shape->dims[0] = ir::Dim::symbol("N");
    dynamic.graph->inputs[0].value->type = *dynamic.graph->inputs[0].type;
    auto tiled = converts_equal(std::move(dynamic), {batch, per_column}, 7);
    CHECK(find_op(*tiled.graph, "Shape"));
    CHECK(find_op(*tiled.graph, "Div"));
    // The constant has the higher rank: the batch input, given its leading 1, has the output's shape.
    const Tensor higher = random_float({1, 1, 3});
    ir::Model ranks = one_node("Min", 13, {batch, higher}, {});
    ranks.graph->inputs[0].type->shape->dims[0] = ir::Dim::symbol("N");
    ranks.graph->inputs[0].value->type = *ranks.graph->inputs[0].type;
    converts_equal(std::move(ranks), {batch, higher}, 7);

    // Neither input has the output's shape [N, M]: refused, naming the node.
    ir::Model both = one_node("Min", 13, {random_float({2, 1}), random_float({1, 3})}, {});
    both.graph->inputs[0].type->shape->dims[0] = ir::Dim::symbol("N");
    both.graph->inputs[0].value->type = *both.graph->inputs[0].type;
    both.graph->inputs[1].type->shape->dims[1] = ir::Dim::symbol("M");
    both.graph->inputs[1].value->type = *both.graph->inputs[1].type;
    try {
      convert::convert_opset(both, 7);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("node 'node' (Min): no equivalent at opset 7") != std::string::npos);
    }
  }

  TEST_CASE("integers below the versions that added them: through double when exact, else refused") {
    const Tensor a = random_ints(DataType::kInt32, {2, 3}, -1000000, 1000000);
    const Tensor b = random_ints(DataType::kInt32, {3}, -1000000, 1000000);
    auto max = converts_equal(one_node("Max", 13, {a, b}, {}), {a, b}, 7);  // through double, then broadcast
    CHECK(find_op(*max.graph, "Cast"));
    converts_equal(one_node("Min", 12, {a, a}, {}), {a, a}, 11);
    converts_equal(one_node("Greater", 13, {a, b}, {}), {a, b}, 8);
    converts_equal(one_node("Relu", 14, {a}, {}), {a}, 13);
    const Tensor small = random_ints(DataType::kUInt8, {4}, 0, 255);
    converts_equal(one_node("Equal", 13, {small, small}, {}), {small, small}, 7);

    // Clip's bounds are constants of the input's type: written in double for Clip-11, then as
    // Clip-6's float attributes.
    ir::Model clip = one_node("Clip", 13, {a}, {});
    const int32_t lo = -300000, hi = 500000;
    clip.graph->nodes().front()->append_input(clip.graph->add_initializer(ir::make_tensor("lo", DataType::kInt32, {}, &lo, 4)));
    clip.graph->nodes().front()->append_input(clip.graph->add_initializer(ir::make_tensor("hi", DataType::kInt32, {}, &hi, 4)));
    auto clipped = converts_equal(std::move(clip), {a}, 9);
    CHECK(find_op(*clipped.graph, "Clip")->attr("min"));

    const Tensor wide = random_ints(DataType::kInt64, {3}, -5, 5);
    auto less = one_node("Less", 9, {wide, wide}, {});
    try {
      convert::convert_opset(less, 8);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("node 'node' (Less): no equivalent at opset 8: int64 inputs need opset 9") !=
            std::string::npos);
    }
    const Tensor f = floats({1, 2, 3});
    auto equal = one_node("Equal", 11, {f, f}, {});
    try {
      convert::convert_opset(equal, 10);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("node 'node' (Equal): no equivalent at opset 10") != std::string::npos);
    }
  }

  TEST_CASE("a non-float Constant below opset 9 becomes an initializer; IR 3 lists it as a graph input") {
    const Tensor x = random_float({2, 3});
    ir::Model m = one_node("Reshape", 13, {x}, {});
    m.ir_version = 3;
    ir::Graph& g = *m.graph;
    ir::Node* shape = g.add_node("Constant", {}, {"shape"}, "", "shape_constant", g.nodes().front().get());
    const std::vector<int64_t> dims{3, 2};
    shape->set_attr(ir::Attribute::make_tensor("value", ir::make_tensor("", DataType::kInt64, {2}, dims.data(), 16)));
    g.nodes().back()->append_input(shape->output(0));
    auto down = converts_equal(std::move(m), {x}, 8);
    CHECK(!find_op(*down.graph, "Constant"));
    CHECK(down.graph->inputs.size() == 2);  // x, and the initializer that holds the shape
    auto up = converts_equal(std::move(down), {x}, 13);
    CHECK(up.ir_version == 7);
    CHECK(up.graph->inputs.size() == 1);  // from IR 4 on a listed initializer could be overridden
  }

  TEST_CASE("conversions without an equivalent fail naming the node; bad targets are usage errors") {
    const Tensor x = random_float({2, 3});
    auto wrap = one_node("Pad", 19, {x, ints({0, 1, 0, 1}, {4})}, {attr_string("mode", "wrap")});
    try {
      convert::convert_opset(wrap, 18);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::kFailed);
      CHECK(std::string(e.what()).find("node 'node' (Pad)") != std::string::npos);
      CHECK(std::string(e.what()).find("wrap") != std::string::npos);
    }
    auto gelu = one_node("Gelu", 20, {x}, {});
    try {
      convert::convert_opset(gelu, 17);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("introduced in opset 20") != std::string::npos);
    }
    for (const float scale : {0.5f, 2.0f}) {  // Upsample-9 only enlarges
      auto shrink = one_node("Resize", 10, {random_float({1, 1, 4, 4})}, {});
      const std::vector<float> scales{1, 1, scale, scale};
      ir::Graph& g = *shrink.graph;
      ir::Node* n = g.nodes().front().get();
      n->append_input(g.add_initializer(ir::make_tensor("scales", ir::DataType::kFloat, {4}, scales.data(), 16)));
      if (scale < 1) {
        CHECK_THROWS_WITH_AS(convert::convert_opset(shrink, 9), doctest::Contains("scales must be >= 1"), Error);
      } else {
        convert::convert_opset(shrink, 9);
        CHECK(g.nodes().front()->op_type == "Upsample");
      }
    }
    auto relu = one_node("Relu", 13, {x}, {});
    CHECK_THROWS_AS(convert::convert_opset(relu, 6), Error);
    CHECK_THROWS_AS(convert::convert_opset(relu, 29), Error);
  }
}

}  // namespace
}  // namespace onnxtool::version_converter_test
