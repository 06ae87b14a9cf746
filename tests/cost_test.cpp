// runner::model_cost against hand-computed MACs, FLOPs, weights and activation bytes per op, an
// unknown cost for a symbolic dim, weights shared by two nodes counted once, and the peak of
// activation memory along the plan.
#include <doctest/doctest.h>

#include "runner/cost.h"
#include "tests/model_builder.h"

namespace onnxtool::testing::cost_test {
namespace {

/// A model made by `build` (which returns its output) and its cost; the model lives as long as
/// the cost that points into it.
struct Costed {
  ModelBuilder b{23};
  runner::ModelCost cost;
  template <class Build>
  explicit Costed(Build build, const runner::CostOptions& options = {}) {
    b.output(build(b), ir::DataType::kFloat);
    cost = runner::model_cost(b.m, options);
  }
};

/// The cost of the node producing `out`.
const runner::NodeCost& cost_of(const Costed& c, const std::string& out) {
  for (const auto& n : c.cost.nodes)
    if (n.node->output(0) && n.node->output(0)->name() == out) return n;
  FAIL("no node makes " << out);
  return c.cost.nodes.front();
}

void check(const runner::NodeCost& c, uint64_t macs, uint64_t flops) {
  REQUIRE(c.macs);
  CHECK(*c.macs == macs);
  CHECK(*c.flops == flops);
  CHECK(c.unknown.empty());
}

}  // namespace

TEST_SUITE("cost") {
  TEST_CASE("Conv: grouped, dilated, strided, with bias; weights and activation bytes") {
    const Costed c([](ModelBuilder& b) {
      // [1,8,10,10] * [16,4,3,3], group 2, dilation 2 (a 5-wide window), stride 2: [1,16,3,3].
      return b.op("Conv", {b.input("x", ir::DataType::kFloat, {1, 8, 10, 10}), b.weight("w", {16, 4, 3, 3}), b.weight("b", {16})},
                  "y", {attr_int("group", 2), attr_ints("dilations", {2, 2}), attr_ints("strides", {2, 2})});
    });
    const auto& y = cost_of(c, "y");
    check(y, 144 * 4 * 9, 2 * 5184 + 144);  // 36 products per output element, a bias add each
    CHECK(y.params == 16 * 4 * 9 + 16);
    CHECK(y.param_bytes == 592 * 4);
    CHECK(*y.input_bytes == 800 * 4);
    CHECK(*y.output_bytes == 144 * 4);
    CHECK(c.cost.macs == 5184);
    CHECK(c.cost.params == 592);
  }

  TEST_CASE("Conv of one and of three spatial dims") {
    const Costed c([](ModelBuilder& b) {
      ir::Value* y1 = b.op("Conv", {b.input("x1", ir::DataType::kFloat, {2, 3, 20}), b.weight("w1", {5, 3, 4})}, "y1");
      b.output(y1, ir::DataType::kFloat);
      return b.op("Conv", {b.input("x3", ir::DataType::kFloat, {1, 2, 4, 6, 6}), b.weight("w3", {3, 2, 3, 3, 3})}, "y3",
                  {attr_ints("pads", {1, 1, 1, 1, 1, 1})});
    });
    check(cost_of(c, "y1"), 2 * 5 * 17 * 12, 2 * 2040);      // [2,5,17], 3x4 products each
    check(cost_of(c, "y3"), 3 * 4 * 6 * 6 * 54, 2 * 23328);  // [1,3,4,6,6], 2x3x3x3 each
  }

  TEST_CASE("ConvTranspose: every input pixel scatters its weights") {
    const Costed c([](ModelBuilder& b) {
      // [1,4,5,5] with W [4,6,3,3], stride 2: [1,6,11,11].
      return b.op("ConvTranspose", {b.input("x", ir::DataType::kFloat, {1, 4, 5, 5}), b.weight("w", {4, 6, 3, 3}), b.weight("b", {6})},
                  "y", {attr_ints("strides", {2, 2})});
    });
    check(cost_of(c, "y"), 25 * 216, 2 * 5400 + 6 * 121);
  }

  TEST_CASE("Gemm with transB and a bias") {
    const Costed c([](ModelBuilder& b) {
      return b.op("Gemm", {b.input("a", ir::DataType::kFloat, {3, 5}), b.weight("w", {7, 5}), b.weight("c", {7})}, "y",
                  {attr_int("transB", 1)});
    });
    check(cost_of(c, "y"), 3 * 7 * 5, 2 * 105 + 21);
    CHECK(cost_of(c, "y").params == 42);
  }

  TEST_CASE("MatMul of broadcast batch dims") {
    const Costed c([](ModelBuilder& b) {
      // [2,1,4,6] x [3,6,5]: [2,3,4,5], 6 products each.
      return b.op("MatMul", {b.input("a", ir::DataType::kFloat, {2, 1, 4, 6}), b.weight("w", {3, 6, 5})}, "y");
    });
    check(cost_of(c, "y"), 120 * 6, 2 * 720);
  }

  TEST_CASE("LSTM, bidirectional: per direction, step and row, the four gates' products") {
    const Costed c([](ModelBuilder& b) {
      ir::Value* x = b.input("x", ir::DataType::kFloat, {7, 2, 3});  // 7 steps, batch 2, 3 features
      return b.op("LSTM", {x, b.weight("w", {2, 20, 3}), b.weight("r", {2, 20, 5}), b.weight("bias", {2, 40})}, "y",
                  {attr_int("hidden_size", 5), attr_string("direction", "bidirectional")});
    });
    const uint64_t rows = 2 * 7 * 2;  // directions x steps x batch
    const uint64_t macs = rows * 20 * (3 + 5);
    // Gate activations (3 sigmoids, 2 tanh) and the state update (4) per hidden unit, both biases.
    check(cost_of(c, "y"), macs, 2 * macs + rows * 5 * (5 * runner::kTranscendentalFlops + 4) + rows * 2 * 20);
  }

  TEST_CASE("GRU, forward, without biases: three gates, batch first") {
    const Costed c([](ModelBuilder& b) {
      ir::Value* x = b.input("x", ir::DataType::kFloat, {1, 4, 3});  // batch 1, 4 steps, 3 features
      return b.op("GRU", {x, b.weight("w", {1, 9, 3}), b.weight("r", {1, 9, 3})}, "y", {attr_int("hidden_size", 3), attr_int("layout", 1)});
    });
    const uint64_t macs = 4 * 9 * (3 + 3);
    check(cost_of(c, "y"), macs, 2 * macs + 4 * 3 * (3 * runner::kTranscendentalFlops + 5));
  }

  TEST_CASE("Attention (opset 23): the scores and the weighted values per head, the softmax over the scores") {
    const Costed c([](ModelBuilder& b) {
      // 2 heads, 3 queries of 4, 5 keys, values of 6: 30 scores.
      return b.op("Attention", {b.input("q", ir::DataType::kFloat, {1, 2, 3, 4}), b.input("k", ir::DataType::kFloat, {1, 2, 5, 4}),
                                b.input("v", ir::DataType::kFloat, {1, 2, 5, 6})}, "y");
    });
    const uint64_t macs = 30 * 4 + 2 * 3 * 6 * 5;
    check(cost_of(c, "y"), macs, 2 * macs + 30 * (runner::kTranscendentalFlops + 4 + 1));
  }

  TEST_CASE("pooling: the window per output element; global pooling every input element") {
    const Costed c([](ModelBuilder& b) {
      ir::Value* x = b.input("x", ir::DataType::kFloat, {1, 3, 8, 8});
      b.output(b.op("GlobalAveragePool", {x}, "g"), ir::DataType::kFloat);
      return b.op("MaxPool", {x}, "y", {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})});
    });
    check(cost_of(c, "y"), 0, 3 * 4 * 4 * 9);
    check(cost_of(c, "g"), 0, 3 * 8 * 8);
  }

  TEST_CASE("elementwise Add broadcast: one FLOP per output element") {
    const Costed c([](ModelBuilder& b) { return b.op("Add", {b.input("a", ir::DataType::kFloat, {2, 3, 4}), b.weight("w", {4})}, "y"); });
    check(cost_of(c, "y"), 0, 24);
    CHECK(cost_of(c, "y").params == 4);
  }

  TEST_CASE("LayerNormalization: statistics and normalization, then scale and bias") {
    const Costed c([](ModelBuilder& b) {
      return b.op("LayerNormalization", {b.input("x", ir::DataType::kFloat, {2, 5, 8}), b.weight("s", {8}), b.weight("b", {8})}, "y");
    });
    check(cost_of(c, "y"), 0, 80 * 7);
  }

  TEST_CASE("a symbolic dim makes the cost unknown, said and counted; --input-shape fixes it") {
    const auto build = [](ModelBuilder& b) {
      return b.op("Conv", {b.input("x", ir::DataType::kFloat, {std::string("N"), 3, 8, 8}), b.weight("w", {4, 3, 1, 1})}, "y");
    };
    const Costed unknown(build);
    const auto& y = cost_of(unknown, "y");
    CHECK(!y.macs);
    CHECK(y.unknown.find("[N,4,8,8]") != std::string::npos);
    CHECK(!y.input_bytes);
    CHECK(unknown.cost.unknown_nodes == 1);
    CHECK(unknown.cost.macs == 0);
    runner::CostOptions options;
    options.input_shapes["x"] = {2, 3, 8, 8};
    check(cost_of(Costed(build, options), "y"), 2 * 4 * 64 * 3, 2 * 1536);
  }

  TEST_CASE("an op without a cost model is unknown, not zero") {
    const Costed c([](ModelBuilder& b) {
      return b.op("Einsum", {b.input("a", ir::DataType::kFloat, {2, 3}), b.input("b", ir::DataType::kFloat, {3, 4})}, "y",
                  {attr_string("equation", "ij,jk->ik")});
    });
    CHECK(cost_of(c, "y").unknown == "no cost model for Einsum");
    CHECK(c.cost.unknown_nodes == 1);
  }

  TEST_CASE("a weight two nodes read is counted once in the totals") {
    const Costed c([](ModelBuilder& b) {
      ir::Value* w = b.weight("w", {6, 6});
      ir::Value* h = b.op("MatMul", {b.input("x", ir::DataType::kFloat, {1, 6}), w}, "h");
      return b.op("MatMul", {h, w}, "y");
    });
    CHECK(cost_of(c, "h").params == 36);
    CHECK(cost_of(c, "y").params == 36);
    CHECK(c.cost.params == 36);
    CHECK(c.cost.param_bytes == 144);
  }

  TEST_CASE("peak memory: the values alive at once along the plan, inputs left out") {
    const Costed c([](ModelBuilder& b) {
      ir::Value* a = b.op("Relu", {b.input("x", ir::DataType::kFloat, {1000})}, "a");  // 4000 B
      ir::Value* cat = b.op("Concat", {a, a}, "cat", {attr_int("axis", 0)});         // 8000 B; a dies here
      return b.op("Relu", {cat}, "y");                                                // 8000 B with cat
    });
    REQUIRE(c.cost.peak_bytes);
    CHECK(*c.cost.peak_bytes == 16000);
    CHECK(c.cost.peak_node->output(0)->name() == "y");
    CHECK(c.cost.peak_unsized == 0);
  }
}

}  // namespace onnxtool::testing::cost_test
