// Tests of the optimization passes (passes/): each pass on a tiny model built here with a fixed
// seed — the op counts after the pass, the runner's outputs before and after (tolerance policy
// "fused": float rounding of a few reassociated operations), idempotence (a second run changes
// nothing) — and the negative cases where the pass must leave the graph alone.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "ir/error.h"
#include "ir/graph.h"
#include "ir/model_io.h"
#include "passes/pass.h"
#include "runner/session.h"
#include "tests/kernel_test_util.h"
#include "tests/model_builder.h"

namespace onnxtool::passes_test {
namespace {

using ir::DataType;
using runner::Tensor;
using runner::Value;

/// Tolerance policy "fused": folding weights reassociates a few float operations.
constexpr double kFusedRel = 1e-4;
constexpr double kFusedAbs = 1e-5;

/// The shared model builder with float inputs of static dims.
struct Builder : testing::ModelBuilder {
  explicit Builder(int64_t opset) : ModelBuilder(opset, 9) {}
  ir::Value* input(const std::string& name, const std::vector<int64_t>& dims) {
    return ModelBuilder::input(name, DataType::kFloat, std::vector<testing::DimSpec>(dims.begin(), dims.end()));
  }
};

int64_t count_op_in(const ir::Graph& g, const std::string& op) {
  int64_t n = 0;
  for (const auto& node : g.nodes()) n += node->op_type == op;
  return n;
}

int64_t count_op(const ir::Model& m, const std::string& op) {
  int64_t n = 0;
  for (const auto& node : m.graph->nodes()) n += node->op_type == op;
  return n;
}

std::vector<Value> run(ir::Model& m, const std::map<std::string, Value>& feeds) {
  runner::Session s(m, runner::SessionOptions{1});
  return s.run(feeds);
}

void check_close(const std::vector<Value>& a, const std::vector<Value>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const Tensor& x = a[i].tensor;
    const Tensor& y = b[i].tensor;
    REQUIRE(x.shape() == y.shape());
    REQUIRE(x.dtype() == y.dtype());
    for (int64_t k = 0; k < x.size(); ++k) {
      const double p = x.data<float>()[k], q = y.data<float>()[k];
      if (std::fabs(p - q) > kFusedAbs + kFusedRel * std::fabs(p)) {
        FAIL_CHECK("output " << i << " element " << k << ": " << p << " became " << q);
        return;
      }
    }
  }
}

/// Runs `passes` on a copy made by `make`, checks the outputs against the original, that a
/// second run changes nothing, and returns the optimized model.
ir::Model optimize_checked(const std::function<ir::Model()>& make, std::vector<std::string> passes) {
  ir::Model before = make();
  ir::Model after = make();
  passes::OptimizeOptions o;
  o.only = std::move(passes);
  passes::optimize(after, o);
  const auto feeds = testing::random_feeds(before, 7, -2, 2);
  check_close(run(before, feeds), run(after, feeds));
  // Idempotent: optimizing again writes the same bytes.
  const std::string once = ir::serialize_model(after);
  passes::optimize(after, o);
  CHECK(ir::serialize_model(after) == once);
  return after;
}

testing::Attr ints_attr(const std::string& n, std::vector<int64_t> v) { return testing::attr_ints(n, std::move(v)); }

ir::Model conv_bn_model() {
  Builder b(13);
  ir::Value* x = b.input("x", {1, 3, 8, 8});
  ir::Node* conv = b.node("Conv", {x, b.weight("w", {4, 3, 3, 3}), b.weight("bias", {4})}, "c", {ints_attr("pads", {1, 1, 1, 1})});
  ir::Node* bn = b.node("BatchNormalization", {conv->output(0), b.weight("gamma", {4}), b.weight("beta", {4}),
                                               b.weight("mean", {4}), b.weight("var", {4}, 0.5, 2)}, "y");
  b.output(bn->output(0));
  return std::move(b.m);
}

}  // namespace

TEST_SUITE("passes") {
  TEST_CASE("the pipeline lists every pass once, with a doc line; unknown names are usage errors") {
    std::set<std::string> names;
    for (const auto& p : passes::pipeline()) {
      CHECK(names.insert(p.name).second);
      CHECK(std::string(p.doc).size() > 10);
    }
    CHECK(names.size() >= 15);
    ir::Model m = conv_bn_model();
    passes::OptimizeOptions o;
    o.only = {"no_such_pass"};
    try {
      passes::optimize(m, o);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::kUsage);
      CHECK(std::string(e.what()).find("fuse_conv_batchnorm") != std::string::npos);  // lists the valid ones
    }
  }

  TEST_CASE("fuse_conv_batchnorm folds BatchNormalization into Conv; the output keeps its name") {
    ir::Model m = optimize_checked(conv_bn_model, {"fuse_conv_batchnorm", "eliminate_dead_code"});
    CHECK(count_op(m, "BatchNormalization") == 0);
    CHECK(count_op(m, "Conv") == 1);
    CHECK(m.graph->outputs[0].value->name() == "y");
    CHECK(m.graph->initializers().size() == 2);  // fused weight and bias only
  }

  TEST_CASE("ConvTranspose takes in a following bias Add and BatchNormalization (group 1 only)") {
    // ConvTranspose (weight [C_in, C_out / group, kH, kW]) -> Add(bias [C_out, 1, 1]) -> BatchNormalization,
    // the head of PaddleOCR's detector.
    auto make = [](int64_t group) {
      return [group] {
        Builder b(13);
        ir::Value* x = b.input("x", {1, 4, 3, 5});
        ir::Node* ct = b.node("ConvTranspose", {x, b.weight("w", {4, 6 / group, 2, 2})}, "ct",
                              {testing::attr_ints("strides", {2, 2}), testing::attr_int("group", group)});
        ir::Node* add = b.node("Add", {ct->output(0), b.weight("bias", {6, 1, 1})}, "a");
        ir::Node* bn = b.node("BatchNormalization", {add->output(0), b.weight("g", {6}), b.weight("beta", {6}),
                                                     b.weight("mean", {6}), b.weight("var", {6}, 0.5f, 2.0f)}, "y");
        b.output(bn->output(0));
        return std::move(b.m);
      };
    };
    ir::Model m = optimize_checked(make(1), {"fuse_conv_add_mul", "fuse_conv_batchnorm", "eliminate_dead_code"});
    CHECK(count_op(m, "ConvTranspose") == 1);
    CHECK(m.graph->nodes().size() == 1);
    CHECK(m.graph->outputs[0].value->name() == "y");
    ir::Model grouped = optimize_checked(make(2), {"fuse_conv_add_mul", "fuse_conv_batchnorm"});
    CHECK(grouped.graph->nodes().size() == 3);
  }

  TEST_CASE("fuse_conv_input_affine folds Mul, and Add only where no padding reads it") {
    // form 0: (x * m + a) -> 1x1 Conv, m and a scalars (PP-LCNetV3's learnable affine): both fold.
    // 1: (x * m + a) -> padded depthwise 3x3 Conv, per-channel m, a: nothing (the Add is in the way).
    // 2: x + a -> padded Conv: nothing. 3: x[1,1,..] * m[1,3,1,1] -> Conv: m broadcasts x, nothing.
    // 4: as 0 with x * m also a graph output: nothing.
    auto make = [](int form) {
      return [form] {
        Builder b(13);
        const bool dw = form == 1 || form == 2;
        ir::Value* x = b.input("x", {1, form == 3 ? 1 : 3, 6, 7});
        ir::Value* v = x;
        ir::Node* mul = nullptr;
        if (form != 2) {
          mul = b.node("Mul", {b.weight("m", form == 1 || form == 3 ? std::vector<int64_t>{1, 3, 1, 1} : std::vector<int64_t>{}, 0.5f, 2), v}, "xm");
          v = mul->output(0);
        }
        if (form != 3) v = b.node("Add", {v, b.weight("a", form == 1 ? std::vector<int64_t>{3, 1, 1} : std::vector<int64_t>{})}, "xa")->output(0);
        std::vector<testing::Attr> attrs;
        if (dw) attrs = {testing::attr_int("group", 3), testing::attr_ints("pads", {1, 1, 1, 1})};
        ir::Node* conv = b.node("Conv", {v, b.weight("w", dw ? std::vector<int64_t>{3, 1, 3, 3} : std::vector<int64_t>{4, 3, 1, 1}), b.weight("bias", {dw ? 3 : 4})}, "y", attrs);
        b.output(conv->output(0));
        if (form == 4) b.output(mul->output(0));
        return std::move(b.m);
      };
    };
    const std::vector<std::string> p = {"fuse_conv_input_affine", "eliminate_dead_code"};
    ir::Model both = optimize_checked(make(0), p);
    CHECK(both.graph->nodes().size() == 1);
    CHECK(optimize_checked(make(1), p).graph->nodes().size() == 3);
    CHECK(optimize_checked(make(2), p).graph->nodes().size() == 2);
    CHECK(optimize_checked(make(3), p).graph->nodes().size() == 2);
    CHECK(count_op(optimize_checked(make(4), p), "Mul") == 1);
  }

  TEST_CASE("fuse_conv_batchnorm leaves a Conv whose output has another reader") {
    auto make = [] {
      ir::Model m = conv_bn_model();
      m.graph->add_output(m.graph->find("c"), std::nullopt);
      return m;
    };
    ir::Model m = optimize_checked(make, {"fuse_conv_batchnorm"});
    CHECK(count_op(m, "BatchNormalization") == 1);
  }

  TEST_CASE("fuse_conv_add_mul folds per-channel Mul and Add, not a spatially varying one") {
    auto make = [](bool spatial) {
      return [spatial] {
        Builder b(13);
        ir::Value* x = b.input("x", {1, 2, 5, 5});
        ir::Node* conv = b.node("Conv", {x, b.weight("w", {3, 2, 1, 1})}, "c");
        ir::Node* mul = b.node("Mul", {conv->output(0), b.weight("s", spatial ? std::vector<int64_t>{1, 5, 5} : std::vector<int64_t>{3, 1, 1})}, "m");
        ir::Node* add = b.node("Add", {b.weight("t", {1, 3, 1, 1}), mul->output(0)}, "y");
        b.output(add->output(0));
        return std::move(b.m);
      };
    };
    ir::Model fused = optimize_checked(make(false), {"fuse_conv_add_mul"});
    CHECK(count_op(fused, "Mul") == 0);
    CHECK(count_op(fused, "Add") == 0);
    ir::Model kept = optimize_checked(make(true), {"fuse_conv_add_mul"});
    CHECK(count_op(kept, "Mul") == 1);
    CHECK(count_op(kept, "Add") == 1);  // the Add after the (unfused) Mul has no Conv before it
  }

  TEST_CASE("fuse_matmul_add makes a Gemm of 2-D MatMul + bias; fuse_transpose_gemm absorbs transposes") {
    auto make = [] {
      Builder b(13);
      ir::Value* x = b.input("x", {4, 6});
      ir::Node* t = b.node("Transpose", {b.weight("w", {5, 6})}, "wt", {ints_attr("perm", {1, 0})});
      ir::Node* mm = b.node("MatMul", {x, t->output(0)}, "mm");
      ir::Node* add = b.node("Add", {mm->output(0), b.weight("bias", {5})}, "y");
      b.output(add->output(0));
      return std::move(b.m);
    };
    ir::Model m = optimize_checked(make, {"fold_constants", "fuse_matmul_add", "fuse_transpose_gemm", "eliminate_dead_code"});
    CHECK(count_op(m, "Gemm") == 1);
    CHECK(m.graph->nodes().size() == 1);
    ir::Model unfolded = optimize_checked(make, {"fuse_matmul_add", "fuse_transpose_gemm"});
    CHECK(count_op(unfolded, "Transpose") == 0);
    CHECK(unfolded.graph->nodes().front()->attr_int("transB", 0) == 1);
  }

  TEST_CASE("fuse_matmul_add leaves 3-D MatMuls and widening biases alone") {
    auto make = [] {
      Builder b(13);
      ir::Value* x = b.input("x", {2, 4, 6});
      ir::Node* mm = b.node("MatMul", {x, b.weight("w", {6, 5})}, "mm");
      ir::Node* add = b.node("Add", {mm->output(0), b.weight("bias", {5})}, "y");
      b.output(add->output(0));
      return std::move(b.m);
    };
    CHECK(count_op(optimize_checked(make, {"fuse_matmul_add"}), "Gemm") == 0);
  }

  TEST_CASE("fuse_gemm_batchnorm folds BatchNormalization after Gemm (transB both ways)") {
    for (int64_t trans : {0, 1}) {
      auto make = [trans] {
        Builder b(13);
        ir::Value* x = b.input("x", {3, 6});
        ir::Node* gemm = b.node("Gemm", {x, b.weight("w", trans ? std::vector<int64_t>{5, 6} : std::vector<int64_t>{6, 5}), b.weight("c", {5})}, "g",
                                {testing::attr_int("transB", trans)});
        ir::Node* bn = b.node("BatchNormalization", {gemm->output(0), b.weight("gamma", {5}), b.weight("beta", {5}),
                                                     b.weight("mean", {5}), b.weight("var", {5}, 0.5, 2)}, "y");
        b.output(bn->output(0));
        return std::move(b.m);
      };
      CHECK(count_op(optimize_checked(make, {"fuse_gemm_batchnorm"}), "BatchNormalization") == 0);
    }
  }

  TEST_CASE("fuse_transposes composes permutations and drops identities") {
    auto make = [](std::vector<int64_t> p2) {
      return [p2] {
        Builder b(13);
        ir::Value* x = b.input("x", {2, 3, 4});
        ir::Node* t1 = b.node("Transpose", {x}, "t1", {ints_attr("perm", {1, 2, 0})});
        ir::Node* t2 = b.node("Transpose", {t1->output(0)}, "t2", {ints_attr("perm", p2)});
        ir::Node* r = b.node("Relu", {t2->output(0)}, "y");
        b.output(r->output(0));
        return std::move(b.m);
      };
    };
    CHECK(count_op(optimize_checked(make({0, 2, 1}), {"fuse_transposes"}), "Transpose") == 1);
    CHECK(count_op(optimize_checked(make({2, 0, 1}), {"fuse_transposes"}), "Transpose") == 0);
  }

  TEST_CASE("fuse_pad_conv moves spatial zero padding into Conv, not padding of channels") {
    auto make = [](std::vector<int64_t> pads) {
      return [pads] {
        Builder b(13);
        ir::Value* x = b.input("x", {1, 2, 6, 6});
        ir::Node* pad = b.node("Pad", {x, b.ints("pads", pads)}, "p");
        ir::Node* conv = b.node("Conv", {pad->output(0), b.weight("w", {3, pads[1] + pads[5] + 2, 3, 3})}, "y",
                                {ints_attr("pads", {1, 0, 0, 1})});
        b.output(conv->output(0));
        return std::move(b.m);
      };
    };
    ir::Model m = optimize_checked(make({0, 0, 1, 2, 0, 0, 1, 0}), {"fuse_pad_conv"});
    CHECK(count_op(m, "Pad") == 0);
    CHECK(m.graph->nodes().front()->attr_ints("pads") == std::vector<int64_t>{2, 2, 1, 1});
    CHECK(count_op(optimize_checked(make({0, 1, 0, 0, 0, 0, 0, 0}), {"fuse_pad_conv"}), "Pad") == 1);
  }

  TEST_CASE("fuse_relu_clip merges Relu and Clip chains") {
    auto make = [] {
      Builder b(13);
      ir::Value* x = b.input("x", {3, 7});
      ir::Node* r = b.node("Relu", {x}, "r");
      ir::Node* c1 = b.node("Clip", {r->output(0), b.scalar("lo", -1), b.scalar("hi", 6)}, "c1");
      ir::Node* c2 = b.node("Clip", {c1->output(0), b.scalar("lo2", 0.5f), b.scalar("hi2", 8)}, "y");
      b.output(c2->output(0));
      return std::move(b.m);
    };
    ir::Model m = optimize_checked(make, {"fuse_relu_clip"});
    CHECK(m.graph->nodes().size() == 1);
    CHECK(count_op(m, "Clip") == 1);
  }

  TEST_CASE("fuse_layernorm recognizes the exporters' decomposition (opset 17), not at opset 13") {
    auto make = [](int64_t opset) {
      return [opset] {
        Builder b(opset);
        ir::Value* x = b.input("x", {2, 3, 8});
        auto reduce = [&](ir::Value* in, const std::string& out) {
          if (opset >= 18) return b.node("ReduceMean", {in, b.ints(out + "_axes", {-1})}, out);
          return b.node("ReduceMean", {in}, out, {ints_attr("axes", {-1})});
        };
        ir::Node* mean = reduce(x, "mean");
        ir::Node* d = b.node("Sub", {x, mean->output(0)}, "d");
        ir::Node* sq = b.node("Pow", {d->output(0), b.scalar("two", 2)}, "sq");
        ir::Node* var = reduce(sq->output(0), "var");
        ir::Node* e = b.node("Add", {var->output(0), b.scalar("eps", 1e-5f)}, "e");
        ir::Node* s = b.node("Sqrt", {e->output(0)}, "s");
        ir::Node* n = b.node("Div", {d->output(0), s->output(0)}, "n");
        ir::Node* g = b.node("Mul", {n->output(0), b.weight("gamma", {8})}, "gm");
        ir::Node* y = b.node("Add", {g->output(0), b.weight("beta", {8})}, "y");
        b.output(y->output(0));
        return std::move(b.m);
      };
    };
    ir::Model m = optimize_checked(make(17), {"fuse_layernorm"});
    CHECK(count_op(m, "LayerNormalization") == 1);
    CHECK(m.graph->nodes().size() == 1);
    CHECK(count_op(optimize_checked(make(13), {"fuse_layernorm"}), "LayerNormalization") == 0);
  }

  TEST_CASE("fuse_gelu recognizes the erf form in its three orders (opset 20)") {
    for (int order = 0; order < 3; ++order) {
      auto make = [order] {
        Builder b(20);
        ir::Value* x = b.input("x", {4, 5});
        ir::Node* div = b.node("Div", {x, b.scalar("sqrt2", 1.4142135f)}, "div");
        ir::Node* erf = b.node("Erf", {div->output(0)}, "erf");
        ir::Node* add = b.node("Add", {erf->output(0), b.scalar("one", 1)}, "add");
        ir::Node* last;
        if (order == 0) {
          ir::Node* m1 = b.node("Mul", {x, add->output(0)}, "m1");
          last = b.node("Mul", {m1->output(0), b.scalar("half", 0.5f)}, "y");
        } else if (order == 1) {
          ir::Node* m1 = b.node("Mul", {add->output(0), b.scalar("half", 0.5f)}, "m1");
          last = b.node("Mul", {m1->output(0), x}, "y");
        } else {
          ir::Node* h = b.node("Mul", {x, b.scalar("half", 0.5f)}, "h");
          last = b.node("Mul", {h->output(0), add->output(0)}, "y");
        }
        b.output(last->output(0));
        return std::move(b.m);
      };
      ir::Model m = optimize_checked(make, {"fuse_gelu"});
      CHECK_MESSAGE(count_op(m, "Gelu") == 1, "order " << order);
      CHECK(m.graph->nodes().size() == 1);
    }
  }

  TEST_CASE("fuse_hardswish recognizes the Clip and HardSigmoid forms (opset 14), and only them") {
    // form 0: (x * Clip(x + 3, 0, 6)) / 6; 1: x * (Clip(x + 3, 0, 6) * (1/6)); 2: x * HardSigmoid(x);
    // 3: as 0 but adding 4 (not a hard-swish); 4: as 0 with the Clip also read elsewhere.
    auto make = [](int form, int64_t opset) {
      return [form, opset] {
        Builder b(opset);
        ir::Value* in = b.input("in", {2, 3, 5});
        // Scaled so that both ends of the clip are reached.
        ir::Value* x = b.node("Mul", {in, b.scalar("four", 4)}, "x")->output(0);
        ir::Node* last;
        ir::Node* clip = nullptr;
        if (form == 2) {
          ir::Node* hs = b.node("HardSigmoid", {x}, "hs", {testing::attr_float("alpha", 1.0f / 6), testing::attr_float("beta", 0.5f)});
          last = b.node("Mul", {hs->output(0), x}, "y");
        } else {
          ir::Node* add = b.node("Add", {x, b.scalar("three", form == 3 ? 4 : 3)}, "add");
          clip = b.node("Clip", {add->output(0), b.scalar("zero", 0), b.scalar("six", 6)}, "clip");
          if (form == 1) {
            ir::Node* d = b.node("Mul", {clip->output(0), b.scalar("sixth", 1.0f / 6)}, "d");
            last = b.node("Mul", {x, d->output(0)}, "y");
          } else {
            ir::Node* m = b.node("Mul", {x, clip->output(0)}, "m");
            last = b.node("Div", {m->output(0), b.scalar("six_", 6)}, "y");
          }
        }
        b.output(last->output(0));
        if (form == 4) b.output(clip->output(0));
        return std::move(b.m);
      };
    };
    for (int form = 0; form < 3; ++form) {
      ir::Model m = optimize_checked(make(form, 14), {"fuse_hardswish", "eliminate_dead_code"});
      CHECK_MESSAGE(count_op(m, "HardSwish") == 1, "form " << form);
      CHECK_MESSAGE(m.graph->nodes().size() == 2, "form " << form);  // the scaling Mul and HardSwish
      CHECK(m.graph->outputs[0].value->name() == "y");                // the output keeps its name
    }
    CHECK(count_op(optimize_checked(make(3, 14), {"fuse_hardswish"}), "HardSwish") == 0);
    CHECK(count_op(optimize_checked(make(4, 14), {"fuse_hardswish"}), "HardSwish") == 0);
    CHECK(count_op(optimize_checked(make(0, 13), {"fuse_hardswish"}), "HardSwish") == 0);
  }

  TEST_CASE("fold_constants evaluates constant subgraphs and static Shape, respecting the size cap") {
    auto make = [] {
      Builder b(13);
      ir::Value* x = b.input("x", {2, 3});
      ir::Node* shape = b.node("Shape", {x}, "shape");
      ir::Node* w2 = b.node("Mul", {b.weight("w", {3}), b.scalar("two", 2)}, "w2");
      ir::Node* r = b.node("Reshape", {b.node("Add", {x, w2->output(0)}, "a")->output(0), shape->output(0)}, "y");
      b.output(r->output(0));
      return std::move(b.m);
    };
    ir::Model m = optimize_checked(make, {"fold_constants", "eliminate_noops", "eliminate_dead_code"});
    CHECK(count_op(m, "Shape") == 0);
    CHECK(count_op(m, "Mul") == 0);
    CHECK(count_op(m, "Reshape") == 0);  // reshape to its own shape is a no-op once the shape is known
    CHECK(count_op(m, "Add") == 1);
    // A cap of 0 bytes folds nothing.
    ir::Model capped = make();
    passes::OptimizeOptions o;
    o.only = {"fold_constants"};
    o.fold_max_bytes = 0;
    passes::optimize(capped, o);
    CHECK(count_op(capped, "Mul") == 1);
  }

  TEST_CASE("fold_constants puts what both branches derive from an outer weight in the outer graph, once") {
    // y = If(cond, then: MatMul(x, Transpose(w)), else: MatMul(x, Transpose(w)) + 1), w in the
    // main graph: folded in each branch, Transpose(w) would be two copies of w's size.
    auto make = [] {
      Builder b(13);
      ir::Value* x = b.input("x", {2, 4});
      ir::Value* cond = b.g->add_input("cond", ir::TypeInfo::tensor(DataType::kBool, ir::Shape{})).value;
      ir::Value* w = b.weight("w", {4, 4});
      ir::Node* branch = b.g->add_node("If", {cond}, {"y"}, "", "if");
      for (const char* side : {"then_branch", "else_branch"}) {
        ir::Graph* sub = testing::add_subgraph(branch, side);
        const std::string p = side;
        ir::Value* wt = sub->add_node("Transpose", {w}, {p + "_wt"}, "", p + "_transpose")->output(0);
        ir::Value* out = sub->add_node("MatMul", {x, wt}, {p + "_mm"}, "", p + "_matmul")->output(0);
        if (p == "else_branch") {
          const float one = 1;
          ir::Value* c = sub->add_initializer(ir::make_tensor(p + "_one", DataType::kFloat, {}, &one, 4));
          out = sub->add_node("Add", {out, c}, {p + "_y"}, "", p + "_add")->output(0);
        }
        sub->add_output(out, ir::TypeInfo::tensor(DataType::kFloat));
      }
      b.output(branch->output(0));
      return std::move(b.m);
    };
    ir::Model m = make();
    passes::OptimizeOptions o;
    o.only = {"fold_constants", "eliminate_dead_code"};
    passes::optimize(m, o);
    const std::string once = ir::serialize_model(m);
    passes::optimize(m, o);
    CHECK(ir::serialize_model(m) == once);  // idempotent
    REQUIRE(m.graph->initializers().size() == 1);  // Transpose(w) once; w itself no longer read
    CHECK(m.graph->initializers()[0]->name == "then_branch_wt_hoisted");
    const ir::Node* branch = m.graph->nodes()[0].get();
    for (const char* side : {"then_branch", "else_branch"}) {
      const ir::Graph& sub = *branch->attr(side)->g;
      CHECK(count_op_in(sub, "Transpose") == 0);
      for (const auto& n : sub.nodes())
        if (n->op_type == "MatMul") CHECK(n->input(1)->name() == "then_branch_wt_hoisted");
    }
    // Both branches against the original.
    for (const bool c : {true, false}) {
      ir::Model before = make();
      std::map<std::string, runner::Value> feeds = testing::random_feeds(before, 7, -2, 2);
      Tensor flag(DataType::kBool, {});
      flag.mutable_data<uint8_t>()[0] = c;
      feeds["cond"] = runner::Value::of(flag);
      check_close(run(before, feeds), run(m, feeds));
    }
  }

  TEST_CASE("optimize keeps quantized weights quantized: no DequantizeLinear of a constant is folded") {
    auto make = [] {
      Builder b(13);
      ir::Value* x = b.input("x", {2, 3});
      const std::vector<int8_t> q = {-127, -5, 0, 3, 64, 127, 1, -1, 9, -9, 100, -100};
      ir::Value* w = b.g->add_initializer(ir::make_tensor("w_quantized", DataType::kInt8, {3, 4}, q.data(), q.size()));
      const int8_t zero = 0;
      ir::Value* z = b.g->add_initializer(ir::make_tensor("w_zero_point", DataType::kInt8, {}, &zero, 1));
      ir::Node* dq = b.node("DequantizeLinear", {w, b.scalar("w_scale", 0.01f), z}, "w_dequantized");
      b.output(b.node("MatMul", {x, dq->output(0)}, "y")->output(0));
      return std::move(b.m);
    };
    ir::Model m = optimize_checked(make, {});  // every default pass
    CHECK(count_op(m, "DequantizeLinear") == 1);
    const ir::Value* w = m.graph->find("w_quantized");
    REQUIRE(w);
    CHECK(w->initializer()->type() == DataType::kInt8);
  }

  TEST_CASE("eliminate_noops removes identities but keeps graph output names") {
    auto make = [] {
      Builder b(13);
      ir::Value* x = b.input("x", {2, 3});
      ir::Node* r = b.node("Relu", {x}, "r");
      ir::Node* id = b.node("Identity", {r->output(0)}, "id");
      ir::Node* mul = b.node("Mul", {id->output(0), b.scalar("one", 1)}, "m");
      ir::Node* t = b.node("Transpose", {mul->output(0)}, "t", {ints_attr("perm", {0, 1})});
      ir::Node* y = b.node("Dropout", {t->output(0)}, "y");
      b.output(y->output(0));
      ir::Node* passthrough = b.node("Identity", {x}, "x_copy");  // input -> output: must stay
      b.output(passthrough->output(0));
      return std::move(b.m);
    };
    ir::Model m = optimize_checked(make, {"fold_constants", "eliminate_noops"});
    CHECK(m.graph->nodes().size() == 2);
    CHECK(m.graph->outputs[0].value->name() == "y");
    CHECK(m.graph->outputs[0].value->producer()->op_type == "Relu");
    CHECK(m.graph->outputs[1].value->name() == "x_copy");
  }

  TEST_CASE("eliminate_common_subexpressions merges equal initializers and nodes") {
    auto make = [] {
      Builder b(13);
      ir::Value* x = b.input("x", {2, 3});
      ir::Value* c1 = b.scalar("c1", 3);
      ir::Value* c2 = b.scalar("c2", 3);
      ir::Node* a1 = b.node("Add", {x, c1}, "a1");
      ir::Node* a2 = b.node("Add", {x, c2}, "a2");
      ir::Node* y = b.node("Mul", {a1->output(0), a2->output(0)}, "y");
      b.output(y->output(0));
      return std::move(b.m);
    };
    ir::Model m = optimize_checked(make, {"eliminate_common_subexpressions"});
    CHECK(count_op(m, "Add") == 1);
    CHECK(m.graph->initializers().size() == 1);

    // Before IR 4 the merged constant was also a graph input: the entry goes with it.
    ir::Model ir3 = make();
    ir3.ir_version = 3;
    ir::fit_initializer_inputs(ir3, 3);
    REQUIRE(ir3.graph->inputs.size() == 3);
    passes::OptimizeOptions o;
    o.only = {"eliminate_common_subexpressions"};
    passes::optimize(ir3, o);
    CHECK(ir3.graph->initializers().size() == 1);
    REQUIRE(ir3.graph->inputs.size() == 2);
    CHECK(ir3.graph->inputs[1].value->is_initializer());
  }

  TEST_CASE("eliminate_dead_code removes unused nodes and initializers, never outputs") {
    auto make = [] {
      Builder b(13);
      ir::Value* x = b.input("x", {2, 3});
      b.node("Exp", {b.node("Neg", {x}, "dead1")->output(0)}, "dead2");
      b.weight("unused", {100});
      b.output(b.node("Relu", {x}, "y")->output(0));
      return std::move(b.m);
    };
    ir::Model m = optimize_checked(make, {"eliminate_dead_code"});
    CHECK(m.graph->nodes().size() == 1);
    CHECK(m.graph->initializers().empty());
  }

  TEST_CASE("sort_topologically orders an unsorted graph and keeps a sorted one as it is") {
    auto make = [] {
      Builder b(13);
      ir::Value* x = b.input("x", {2, 3});
      // y = Neg(t) listed before t = Relu(x).
      b.g->add_node("Neg", {b.g->value("t")}, {"y"}, "", "N");
      b.g->add_node("Relu", {x}, {"t"}, "", "R");
      b.output(b.g->find("y"));
      return std::move(b.m);
    };
    ir::Model m = make();
    passes::OptimizeOptions o;
    o.only = {"sort_topologically"};
    passes::optimize(m, o);
    REQUIRE(m.graph->nodes().size() == 2);
    CHECK(m.graph->nodes()[0]->op_type == "Relu");
    CHECK(m.graph->nodes()[1]->op_type == "Neg");
    const std::string once = ir::serialize_model(m);
    passes::optimize(m, o);
    CHECK(ir::serialize_model(m) == once);
  }

  TEST_CASE("a cyclic graph is refused naming the cycle") {
    Builder b(13);
    ir::Value* x = b.input("x", {2});
    ir::Node* a = b.g->add_node("Add", {x, b.g->value("b_out")}, {"a_out"}, "", "A");
    b.g->add_node("Relu", {a->output(0)}, {"b_out"}, "", "B");
    b.output(a->output(0));
    try {
      passes::optimize(b.m, {});
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::kFailed);
      CHECK(std::string(e.what()).find("cycle") != std::string::npos);
    }
  }

  TEST_CASE("--input-shape fixes symbolic dims and refuses contradictions") {
    Builder b(13);
    ir::Shape s;
    s.dims = {ir::Dim::symbol("N"), ir::Dim::of(3)};
    ir::Value* x = b.g->add_input("x", ir::TypeInfo::tensor(DataType::kFloat, s)).value;
    b.output(b.node("Relu", {x}, "y")->output(0));
    passes::OptimizeOptions o;
    o.input_shapes["x"] = {2, 4};
    CHECK_THROWS_AS(passes::optimize(b.m, o), Error);
    o.input_shapes["x"] = {5, 3};
    passes::optimize(b.m, o);
    CHECK(x->type.shape->dims[0].value == 5);
    o.input_shapes.clear();
    o.input_shapes["nope"] = {1};
    CHECK_THROWS_AS(passes::optimize(b.m, o), Error);
  }
}

}  // namespace onnxtool::passes_test
