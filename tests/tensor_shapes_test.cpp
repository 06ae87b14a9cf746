// Shape functions of the tensor manipulation family (ir/ops/tensor_shapes.cpp): symbolic dims
// carried through shape computations, contradictions that must fail with their rule id, and
// valid dynamic models that must not.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "ir/shape_inference.h"
#include "tests/model_builder.h"

namespace onnxtool::tensor_shapes_test {
namespace {

using ir::DataType;
using ir::Dim;
using ir::Shape;
using ir::TypeInfo;

Shape dims(std::vector<Dim> d) {
  Shape s;
  s.dims = std::move(d);
  return s;
}

Dim n(int64_t v) { return Dim::of(v); }
Dim sym(const std::string& name) { return Dim::symbol(name); }

/// A one-graph model at a given opset; nodes have one output and take ir::Attributes.
struct Builder : testing::ShapeNet {
  explicit Builder(int64_t opset = 21) : ShapeNet(opset) {}
  ir::Value* input(const std::string& name, DataType t, std::optional<Shape> s) { return in(name, t, std::move(s)); }
  template <class... Attrs>
  ir::Node* node(const std::string& op, const std::vector<ir::Value*>& in, const std::string& out,
                 Attrs... attrs) {
    ir::Node* nd = g->add_node(op, in, {out});
    (nd->set_attr(std::move(attrs)), ...);
    return nd;
  }
  ir::Value* out(ir::Node* nd, size_t i = 0) { return nd->output(i); }
  /// Runs inference; returns the diagnostics' rule ids.
  std::vector<std::string> infer() {
    ShapeNet::infer();
    std::vector<std::string> rules;
    for (const auto& d : sink.items()) rules.push_back(d.rule);
    return rules;
  }
};

std::string shape_str(const ir::Value* v) {
  return v->type.shape ? v->type.shape->to_string() : std::string("<unknown rank>");
}

}  // namespace

TEST_SUITE("tensor_shapes") {
  TEST_CASE("Shape -> Gather -> Concat -> Reshape keeps symbols") {
    Builder b;
    auto* x = b.input("x", DataType::kFloat, dims({sym("N"), n(3), sym("H"), sym("W")}));
    auto* s = b.out(b.node("Shape", {x}, "s"));
    auto* i0 = b.ints("i0", {0});
    auto* i23 = b.ints("i23", {2, 3});
    auto* batch = b.out(b.node("Gather", {s, i0}, "batch", ir::Attribute::make_int("axis", 0)));
    auto* hw = b.out(b.node("Gather", {s, i23}, "hw"));
    auto* m1 = b.ints("m1", {-1});
    auto* target = b.out(b.node("Concat", {batch, m1, hw}, "target", ir::Attribute::make_int("axis", 0)));
    auto* y = b.out(b.node("Reshape", {x, target}, "y"));
    CHECK(b.infer().empty());
    CHECK(shape_str(s) == "[4]");
    CHECK(shape_str(target) == "[4]");
    CHECK(shape_str(y) == "[N,3,H,W]");
  }

  TEST_CASE("Reshape with 0 copies and -1 over symbols") {
    Builder b;
    auto* x = b.input("x", DataType::kFloat, dims({sym("B"), n(4), n(6)}));
    auto* y = b.out(b.node("Reshape", {x, b.ints("t", {0, -1, 3})}, "y"));
    auto* z = b.out(b.node("Reshape", {x, b.ints("t2", {-1, 24})}, "z"));
    CHECK(b.infer().empty());
    CHECK(shape_str(y) == "[B,8,3]");
    CHECK(shape_str(z) == "[B,24]");
  }

  TEST_CASE("Slice of a shape, Unsqueeze, Expand and ConstantOfShape with symbols") {
    Builder b;
    auto* x = b.input("x", DataType::kFloat, dims({sym("N"), sym("T"), n(8)}));
    auto* s = b.out(b.node("Shape", {x}, "s"));
    auto* head = b.out(b.node("Slice", {s, b.ints("st", {0}), b.ints("en", {2})}, "head"));
    auto* e = b.out(b.node("Expand", {b.input("one", DataType::kFloat, dims({n(1), n(1), n(1)})),
                                      b.out(b.node("Concat", {head, b.ints("c8", {8})}, "es",
                                                   ir::Attribute::make_int("axis", 0)))},
                           "e"));
    auto* c = b.out(b.node("ConstantOfShape", {head}, "c"));
    auto* tail = b.out(b.node("Slice", {s, b.ints("st2", {-1}), b.ints("en2", {INT64_MAX})}, "tail"));
    auto* t = b.out(b.node("Range", {b.ints("r0", {0}, true), b.out(b.node("Squeeze", {b.out(b.node("Slice", {s, b.ints("st3", {1}), b.ints("en3", {2})}, "tl")), b.ints("ax0", {0})}, "tlen")), b.ints("r1", {1}, true)}, "t"));
    CHECK(b.infer().empty());
    CHECK(shape_str(head) == "[2]");
    CHECK(shape_str(e) == "[N,T,8]");
    CHECK(shape_str(c) == "[N,T]");
    CHECK(shape_str(tail) == "[1]");
    CHECK(shape_str(t) == "[T]");
  }

  TEST_CASE("Concat, Split, Pad, Tile, Transpose, Resize with symbolic batch") {
    Builder b;
    auto* x = b.input("x", DataType::kFloat, dims({sym("N"), n(4), n(6), n(6)}));
    auto* cat = b.out(b.node("Concat", {x, x}, "cat", ir::Attribute::make_int("axis", 1)));
    ir::Node* sp = b.g->add_node("Split", {x}, {"p0", "p1"});
    sp->set_attr(ir::Attribute::make_int("axis", 2));
    sp->set_attr(ir::Attribute::make_int("num_outputs", 2));
    auto* pad = b.out(b.node("Pad", {x, b.ints("pads", {0, 0, 1, 1, 0, 0, 1, 1})}, "pad"));
    auto* tile = b.out(b.node("Tile", {x, b.ints("rep", {1, 2, 1, 1})}, "tile"));
    auto* tr = b.out(b.node("Transpose", {x}, "tr", ir::Attribute::make_ints("perm", {0, 2, 3, 1})));
    auto* rs = b.out(b.node("Resize", {x, nullptr, b.floats("sc", {1, 1, 2, 0.5f})}, "rs"));
    CHECK(b.infer().empty());
    CHECK(shape_str(cat) == "[N,8,6,6]");
    CHECK(shape_str(sp->output(1)) == "[N,4,3,6]");
    CHECK(shape_str(pad) == "[N,4,8,8]");
    CHECK(shape_str(tile) == "[N,8,6,6]");
    CHECK(shape_str(tr) == "[N,6,6,4]");
    CHECK(shape_str(rs) == "[N,4,12,3]");
  }

  TEST_CASE("scales and block sizes on symbolic dims give derived symbols") {
    Builder b(11);
    auto* x = b.input("x", DataType::kFloat, dims({sym("N"), n(8), sym("H"), sym("W")}));
    auto* up = b.out(b.node("Resize", {x, b.floats("roi", {}), b.floats("sc", {1, 1, 2, 0.5f})}, "up"));
    auto* d2s = b.out(b.node("DepthToSpace", {x}, "d2s", ir::Attribute::make_int("blocksize", 2)));
    auto* fl = b.out(b.node("Flatten", {x}, "fl", ir::Attribute::make_int("axis", 2)));
    auto* third = b.out(b.node("Resize", {x, b.floats("roi2", {}), b.floats("sc2", {1, 1, 0.3f, 1})}, "third"));
    CHECK(b.infer().empty());
    CHECK(shape_str(up) == "[N,8,2*H,floor(W/2)]");
    CHECK(shape_str(d2s) == "[N,2,2*H,2*W]");
    CHECK(shape_str(fl) == "[8*N,?]");
    CHECK(shape_str(third) == "[N,8,?,W]");  // 0.3 is not exact in binary: no symbol
  }

  TEST_CASE("unknown ranks and unknown shape values do not fail") {
    Builder b;
    auto* x = b.input("x", DataType::kFloat, std::nullopt);
    auto* shp = b.input("shape", DataType::kInt64, dims({n(3)}));
    auto* y = b.out(b.node("Reshape", {x, shp}, "y"));
    auto* z = b.out(b.node("Concat", {x, y}, "z", ir::Attribute::make_int("axis", 1)));
    auto* w = b.out(b.node("Slice", {z, shp, shp}, "w"));
    auto* u = b.out(b.node("Unsqueeze", {w, b.ints("ax", {0})}, "u"));
    auto* e = b.out(b.node("Expand", {u, b.input("s2", DataType::kInt64, dims({n(2)}))}, "e"));
    CHECK(b.infer().empty());
    CHECK(shape_str(y) == "[?,?,?]");
    CHECK(shape_str(z) == "[?,?,?]");
    CHECK(shape_str(w) == "[?,?,?]");
    CHECK(shape_str(u) == "[1,?,?,?]");
    CHECK(shape_str(e) == "[1,?,?,?]");  // a 2-entry target leaves the leading 1
  }

  TEST_CASE("contradictions fail with their rule id") {
    auto run = [](auto build) {
      Builder b;
      build(b);
      return b.infer();
    };
    CHECK(run([](Builder& b) {
            auto* x = b.input("x", DataType::kFloat, dims({n(2), n(3)}));
            b.node("Reshape", {x, b.ints("t", {4, 2})}, "y");
          }) == std::vector<std::string>{"shape.reshape"});
    CHECK(run([](Builder& b) {
            auto* x = b.input("x", DataType::kFloat, dims({n(2), n(3)}));
            b.node("Reshape", {x, b.ints("t", {-1, 4})}, "y");
          }) == std::vector<std::string>{"shape.reshape"});
    CHECK(run([](Builder& b) {
            auto* x = b.input("x", DataType::kFloat, dims({n(2), n(3)}));
            b.node("Transpose", {x}, "y", ir::Attribute::make_ints("perm", {0, 0}));
          }) == std::vector<std::string>{"shape.perm"});
    CHECK(run([](Builder& b) {
            auto* x = b.input("x", DataType::kFloat, dims({n(2), n(3)}));
            auto* z = b.input("z", DataType::kFloat, dims({n(4), n(3)}));
            b.node("Concat", {x, z}, "y", ir::Attribute::make_int("axis", 1));
          }) == std::vector<std::string>{"shape.concat"});
    CHECK(run([](Builder& b) {
            auto* x = b.input("x", DataType::kFloat, dims({n(2), n(3)}));
            auto* z = b.input("z", DataType::kFloat, dims({n(3)}));
            b.node("Concat", {x, z}, "y", ir::Attribute::make_int("axis", 0));
          }) == std::vector<std::string>{"shape.rank"});
    CHECK(run([](Builder& b) {
            auto* x = b.input("x", DataType::kFloat, dims({n(2), n(3)}));
            b.node("Gather", {x, b.ints("i", {0})}, "y", ir::Attribute::make_int("axis", 2));
          }) == std::vector<std::string>{"shape.axis"});
    CHECK(run([](Builder& b) {
            auto* x = b.input("x", DataType::kFloat, dims({n(2), n(3)}));
            b.node("Squeeze", {x, b.ints("a", {1})}, "y");
          }) == std::vector<std::string>{"shape.squeeze"});
    CHECK(run([](Builder& b) {
            auto* x = b.input("x", DataType::kFloat, dims({n(2), n(3)}));
            b.node("Expand", {x, b.ints("s", {4, 3})}, "y");
          }) == std::vector<std::string>{"shape.broadcast"});
    CHECK(run([](Builder& b) {
            auto* x = b.input("x", DataType::kFloat, dims({n(2), n(6)}));
            b.node("Split", {x, b.ints("s", {2, 3})}, "y", ir::Attribute::make_int("axis", 1));
          }) == std::vector<std::string>{"shape.split"});
  }

  TEST_CASE("symbolic dims that might match never fail") {
    Builder b;
    auto* x = b.input("x", DataType::kFloat, dims({sym("N"), sym("C")}));
    auto* z = b.input("z", DataType::kFloat, dims({sym("M"), n(3)}));
    auto* cat = b.out(b.node("Concat", {x, z}, "cat", ir::Attribute::make_int("axis", 0)));
    auto* sq = b.out(b.node("Squeeze", {x, b.ints("a", {1})}, "sq"));
    auto* r = b.out(b.node("Reshape", {x, b.ints("t", {5, -1})}, "r"));
    auto* sl = b.out(b.node("Slice", {x, b.ints("s0", {0}), b.ints("e0", {INT64_MAX}), b.ints("a0", {1})}, "sl"));
    CHECK(b.infer().empty());
    CHECK(shape_str(cat) == "[N+M,3]");  // C must be 3; the sum is a derived symbol
    CHECK(shape_str(sq) == "[N]");
    CHECK(shape_str(r) == "[5,?]");
    CHECK(shape_str(sl) == "[N,C]");
  }

  TEST_CASE("extreme index values neither overflow nor fail") {
    Builder b;
    auto* x = b.input("x", DataType::kFloat, dims({n(10), n(0), n(7)}));
    auto* back = b.out(b.node("Slice", {x, b.ints("s", {INT64_MAX, INT64_MIN}), b.ints("e", {INT64_MIN, INT64_MAX}),
                                        b.ints("a", {0, 2}), b.ints("st", {INT64_MIN, INT64_MAX})}, "back"));
    auto* rev = b.out(b.node("Slice", {x, b.ints("s2", {-1}), b.ints("e2", {INT64_MIN}), b.ints("a2", {0}), b.ints("st2", {-3})}, "rev"));
    auto* r = b.out(b.node("Range", {b.ints("lo", {INT64_MIN}, true), b.ints("hi", {INT64_MAX}, true), b.ints("d", {1}, true)}, "r"));
    ir::Node* sp = b.g->add_node("Split", {x, b.input("sizes", DataType::kInt64, dims({n(2)}))}, {"p0", "p1"});
    sp->set_attr(ir::Attribute::make_int("axis", 1));
    CHECK(b.infer().empty());
    CHECK(shape_str(back) == "[1,0,1]");
    CHECK(shape_str(rev) == "[4,0,7]");
    CHECK(shape_str(r) == "[?]");
    CHECK(shape_str(sp->output(0)) == "[10,0,7]");  // parts of an empty axis are empty
  }

  TEST_CASE("old opsets: attributes instead of inputs") {
    Builder b(9);
    auto* x = b.input("x", DataType::kFloat, dims({n(2), n(3), n(4)}));
    auto* sq = b.out(b.node("Unsqueeze", {x}, "u", ir::Attribute::make_ints("axes", {0, 4})));
    auto* sl = b.out(b.node("Slice", {x}, "s", ir::Attribute::make_ints("starts", {1, -2}),
                                                 ir::Attribute::make_ints("ends", {100, -1}),
                                                 ir::Attribute::make_ints("axes", {1, 2})));
    auto* pd = b.out(b.node("Pad", {x}, "p", ir::Attribute::make_ints("pads", {1, 0, 0, 1, 0, 2})));
    auto* tk = b.out(b.node("TopK", {x}, "t", ir::Attribute::make_int("k", 2)));
    CHECK(b.infer().empty());
    CHECK(shape_str(sq) == "[1,2,3,4,1]");
    CHECK(shape_str(sl) == "[2,2,1]");
    CHECK(shape_str(pd) == "[4,3,6]");
    CHECK(shape_str(tk) == "[2,3,2]");
  }

  TEST_CASE("sequences carry element shapes") {
    Builder b(17);
    auto* x = b.input("x", DataType::kFloat, dims({n(2), n(3)}));
    auto* y = b.input("y", DataType::kFloat, dims({n(4), n(3)}));
    auto* seq = b.out(b.node("SequenceConstruct", {x, y}, "seq"));
    auto* at = b.out(b.node("SequenceAt", {seq, b.ints("i", {0}, true)}, "at"));
    auto* cat = b.out(b.node("ConcatFromSequence", {seq}, "cat", ir::Attribute::make_int("axis", 0)));
    auto* len = b.out(b.node("SequenceLength", {seq}, "len"));
    CHECK(b.infer().empty());
    CHECK(seq->type.to_string() == "seq(float[?,3])");
    CHECK(shape_str(at) == "[?,3]");
    CHECK(shape_str(cat) == "[?,3]");
    CHECK(len->type.to_string() == "int64[]");
  }
}

}  // namespace onnxtool::tensor_shapes_test
