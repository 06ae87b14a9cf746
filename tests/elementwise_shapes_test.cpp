// Shape functions of per-element ops, reductions and quantization on small graphs built in code:
// symbolic dims, contradictions that must be reported with their rule id, and valid models
// (unknown ranks, symbols, old opsets) that must not be.
#include <doctest/doctest.h>

#include "tests/model_builder.h"

namespace onnxtool::elementwise_shapes_test {
namespace {

using ir::DataType;

using Net = testing::ShapeNet;
using testing::attr_int;
using testing::attr_ints;
using testing::attr_string;

}  // namespace

TEST_SUITE("elementwise_shapes") {
  TEST_CASE("binary broadcasting keeps symbols and static sizes") {
    Net n(21);
    auto* a = n.in("a", DataType::kFloat, "N,1,4");
    auto* b = n.in("b", DataType::kFloat, "3,1");
    auto* c = n.in("c", DataType::kFloat, "N,3,4");
    n.node("Add", {a, b}, {"y"});
    n.node("Equal", {n.v("y"), c}, {"eq"});
    n.node("Relu", {n.v("y")}, {"r"});
    n.node("Where", {n.v("eq"), n.v("r"), a}, {"w"});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("y") == "float[N,3,4]");
    CHECK(n.type("eq") == "bool[N,3,4]");
    CHECK(n.type("r") == "float[N,3,4]");
    CHECK(n.type("w") == "float[N,3,4]");
  }

  TEST_CASE("incompatible broadcast is reported") {
    Net n(17);
    n.node("Mul", {n.in("a", DataType::kFloat, "2,3"), n.in("b", DataType::kFloat, "4,3")}, {"y"});
    n.infer();
    CHECK(n.rules() == "shape.broadcast");
  }

  TEST_CASE("mismatched input element types are reported") {
    Net n(17);
    n.node("Add", {n.in("a", DataType::kFloat, "2"), n.in("b", DataType::kInt64, "2")}, {"y"});
    n.infer();
    CHECK(n.rules() == "shape.input-type");
  }

  TEST_CASE("unknown ranks and symbols are not errors") {
    Net n(17);
    auto* a = n.in_unranked("a", DataType::kFloat);
    auto* b = n.in("b", DataType::kFloat, "M,?");
    auto* c = n.in("c", DataType::kFloat, "K,5");
    n.node("Sub", {a, b}, {"y"});
    n.node("Max", {b, c, b}, {"m"});
    n.node("Softmax", {a}, {"s"});
    n.node("ReduceMean", {b}, {"rm"}, {attr_ints("axes", {-1}), attr_int("keepdims", 0)});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("y") == "float[...]");
    CHECK(n.type("m") == "float[?,5]");  // M vs K: unknown, not an error
    CHECK(n.type("s") == "float[...]");
    CHECK(n.type("rm") == "float[M]");
  }

  TEST_CASE("opset 6 broadcast attribute: B aligned at axis, output has A's shape") {
    Net n(6);
    auto* a = n.in("a", DataType::kFloat, "2,3,4,5");
    n.node("Add", {a, n.in("b", DataType::kFloat, "3,4")}, {"y"}, {attr_int("broadcast", 1), attr_int("axis", 1)});
    n.node("Mul", {a, n.in("c", DataType::kFloat, "5")}, {"z"}, {attr_int("broadcast", 1)});
    n.node("Sub", {a, n.in("d", DataType::kFloat, "4,5")}, {"bad"}, {attr_int("broadcast", 1), attr_int("axis", 0)});
    n.infer();
    CHECK(n.type("y") == "float[2,3,4,5]");
    CHECK(n.type("z") == "float[2,3,4,5]");
    CHECK(n.rules() == "shape.broadcast");
  }

  TEST_CASE("opset 6 broadcast attribute: B of one element, or A's dims from axis; only B's outer 1s expand") {
    Net n(6);
    auto* a = n.in("a", DataType::kFloat, "2,3,4,5");
    n.node("Add", {a, n.in("one", DataType::kFloat, "1,1")}, {"y_one"}, {attr_int("broadcast", 1)});
    n.node("Add", {a, n.in("outer_ones", DataType::kFloat, "1,4,1")}, {"y_outer"}, {attr_int("broadcast", 1)});
    n.node("Mul", {a, n.in("sym", DataType::kFloat, "K")}, {"y_sym"}, {attr_int("broadcast", 1)});
    n.node("Div", {a, n.in("maybe_one", DataType::kFloat, "M,1")}, {"y_maybe"}, {attr_int("broadcast", 1)});
    n.node("Sub", {a, n.in("same", DataType::kFloat, "2,3,4,5")}, {"y_same"});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("y_one") == "float[2,3,4,5]");
    CHECK(n.type("y_sym") == "float[2,3,4,5]");
    CHECK(n.type("y_maybe") == "float[2,3,4,5]");

    Net bad(6);
    auto* ba = bad.in("a", DataType::kFloat, "2,3,4,5");
    bad.node("Add", {ba, bad.in("inner_one", DataType::kFloat, "3,1,5")}, {"y1"}, {attr_int("broadcast", 1), attr_int("axis", 1)});
    bad.node("Mul", {ba, bad.in("higher", DataType::kFloat, "1,1,1,1,1")}, {"y2"}, {attr_int("broadcast", 1)});
    bad.node("Sub", {ba, bad.in("no_attr", DataType::kFloat, "5")}, {"y3"});
    bad.node("Pow", {ba, bad.in("axis_1", DataType::kFloat, "3,5")}, {"y4"}, {attr_int("broadcast", 1), attr_int("axis", 1)});
    bad.infer();
    CHECK(bad.rules() == "shape.broadcast shape.broadcast shape.broadcast shape.broadcast");
  }

  TEST_CASE("Max, Min, Sum, Mean before opset 8: inputs of one shape; from 8 on they broadcast") {
    Net n(7);
    auto* a = n.in("a", DataType::kFloat, "2,3");
    auto* s = n.in("s", DataType::kFloat, "N,3");
    n.node("Max", {a, s}, {"max"});
    n.node("Sum", {a, a, s}, {"sum"});
    n.node("Mean", {s, n.in_unranked("u", DataType::kFloat)}, {"mean"});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("max") == "float[2,3]");
    CHECK(n.type("sum") == "float[2,3]");
    CHECK(n.type("mean") == "float[N,3]");

    Net bad(7);
    auto* ba = bad.in("a", DataType::kFloat, "2,3");
    bad.node("Max", {ba, bad.in("row", DataType::kFloat, "1,3")}, {"y1"});
    bad.node("Min", {ba, bad.in("vec", DataType::kFloat, "3")}, {"y2"});
    bad.node("Sum", {ba, ba, bad.in("scalar", DataType::kFloat, "")}, {"y3"});
    bad.node("Mean", {ba, bad.in("other", DataType::kFloat, "2,4")}, {"y4"});
    bad.infer();
    CHECK(bad.rules() == "shape.broadcast shape.broadcast shape.broadcast shape.broadcast");

    Net eight(8);
    auto* ea = eight.in("a", DataType::kFloat, "2,3");
    eight.node("Max", {ea, eight.in("row", DataType::kFloat, "1,3")}, {"y1"});
    eight.node("Sum", {ea, eight.in("scalar", DataType::kFloat, ""), eight.in("col", DataType::kFloat, "2,1")}, {"y2"});
    eight.infer();
    CHECK(eight.rules() == "");
    CHECK(eight.type("y1") == "float[2,3]");
    CHECK(eight.type("y2") == "float[2,3]");
  }

  TEST_CASE("PRelu slope broadcasts onto X only") {
    Net n(16);
    auto* x = n.in("x", DataType::kFloat, "N,3,H,W");
    n.node("PRelu", {x, n.in("s", DataType::kFloat, "3,1,1")}, {"y"});
    n.node("PRelu", {n.in("x1", DataType::kFloat, "2,1"), n.in("s1", DataType::kFloat, "4")}, {"bad"});
    n.infer();
    CHECK(n.type("y") == "float[N,3,H,W]");
    CHECK(n.rules() == "shape.broadcast");

    // Before opset 7: one value, one per element or one per channel (X's dim 1).
    Net old(6);
    auto* ox = old.in("x", DataType::kFloat, "N,3,4,4");
    old.node("PRelu", {ox, old.in("one", DataType::kFloat, "1")}, {"y_one"});
    old.node("PRelu", {ox, old.in("channel", DataType::kFloat, "3")}, {"y_channel"});
    old.node("PRelu", {ox, old.in("each", DataType::kFloat, "2,3,4,4")}, {"y_each"});
    old.node("PRelu", {ox, old.in("unsqueezed", DataType::kFloat, "3,1,1")}, {"bad"});
    old.infer();
    CHECK(old.type("y_channel") == "float[N,3,4,4]");
    CHECK(old.rules() == "shape.broadcast");
  }

  TEST_CASE("Softmax axis out of range is reported") {
    Net n(13);
    n.node("Softmax", {n.in("x", DataType::kFloat, "2,3")}, {"y"}, {attr_int("axis", 2)});
    n.infer();
    CHECK(n.rules() == "shape.axis");
  }

  TEST_CASE("Cast, CastLike, Cast-1 string type, Dropout mask by version") {
    Net n(15);
    auto* x = n.in("x", DataType::kFloat, "N,2");
    n.node("Cast", {x}, {"c"}, {attr_int("to", static_cast<int64_t>(DataType::kInt32))});
    n.node("CastLike", {x, n.in("like", DataType::kFloat16, "")}, {"cl"});
    n.node("Dropout", {x}, {"d", "mask"});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("c") == "int32[N,2]");
    CHECK(n.type("cl") == "float16[N,2]");
    CHECK(n.type("d") == "float[N,2]");
    CHECK(n.type("mask") == "bool[N,2]");

    Net old(5);
    auto* y = old.in("y", DataType::kDouble, "3");
    old.node("Cast", {y}, {"c"}, {attr_string("to", "INT64")});
    old.node("Dropout", {y}, {"d", "mask"});
    old.infer();
    CHECK(old.type("c") == "int64[3]");
    CHECK(old.type("mask") == "double[3]");
  }

  TEST_CASE("reductions: attribute axes, input axes, keepdims, noop_with_empty_axes") {
    Net n(18);
    auto* x = n.in("x", DataType::kFloat, "N,3,4");
    n.node("ReduceSum", {x, n.ints("ax1", {1})}, {"s"}, {attr_int("keepdims", 0)});
    n.node("ReduceMax", {x, n.ints("ax2", {-1, 0})}, {"m"});
    n.node("ReduceL2", {x}, {"all"}, {attr_int("keepdims", 0)});
    n.node("ReduceMean", {x, n.ints("empty", {})}, {"noop"}, {attr_int("noop_with_empty_axes", 1)});
    n.node("ReduceProd", {x, n.in("dyn", DataType::kInt64, "2")}, {"dk"});
    n.node("ReduceProd", {x, n.v("dyn")}, {"dn"}, {attr_int("keepdims", 0)});
    n.node("ArgMax", {x}, {"am"}, {attr_int("axis", -2), attr_int("keepdims", 0), attr_int("select_last_index", 1)});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("s") == "float[N,4]");
    CHECK(n.type("m") == "float[1,3,1]");
    CHECK(n.type("all") == "float[]");
    CHECK(n.type("noop") == "float[N,3,4]");
    CHECK(n.type("dk") == "float[?,?,?]");
    CHECK(n.type("dn") == "float[?]");
    CHECK(n.type("am") == "int64[N,4]");

    Net old(13);
    old.node("ReduceMean", {old.in("x", DataType::kFloat, "2,3")}, {"y"}, {attr_ints("axes", {0})});
    old.node("ReduceMin", {old.v("x")}, {"bad"}, {attr_ints("axes", {2})});
    old.infer();
    CHECK(old.type("y") == "float[1,3]");
    CHECK(old.rules() == "shape.axis");
  }

  TEST_CASE("integer values flow through arithmetic into a consumer") {
    // axes = Max(Sub(Mul([2], [1]), [1]), [0]) * 1 = [1], given to ReduceSum as its axes input.
    Net n(18);
    auto* x = n.in("x", DataType::kFloat, "2,3,4");
    n.node("Mul", {n.ints("two", {2}), n.ints("one", {1})}, {"p"});
    n.node("Sub", {n.v("p"), n.v("one")}, {"q"});
    n.node("Max", {n.v("q"), n.ints("zero", {0})}, {"r"});
    n.node("Cast", {n.v("r")}, {"c"}, {attr_int("to", static_cast<int64_t>(DataType::kInt32))});
    n.node("Cast", {n.v("c")}, {"axes"}, {attr_int("to", static_cast<int64_t>(DataType::kInt64))});
    n.node("ReduceSum", {x, n.v("axes")}, {"y"}, {attr_int("keepdims", 0)});
    // Equal/Where pick the other branch: Where([1] == [2], [0], [2]) = [2].
    n.node("Equal", {n.v("one"), n.v("two")}, {"e"});
    n.node("Where", {n.v("e"), n.v("zero"), n.v("two")}, {"w"});
    n.node("CumSum", {x, n.v("w")}, {"cs"});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("y") == "float[2,4]");
    CHECK(n.type("cs") == "float[2,3,4]");

    Net bad(18);
    bad.node("Add", {bad.ints("a", {2}), bad.ints("b", {1})}, {"ax"});
    bad.node("CumSum", {bad.in("x", DataType::kFloat, "2,3"), bad.v("ax")}, {"y"});
    bad.infer();
    CHECK(bad.rules() == "shape.axis");
  }

  TEST_CASE("symbols survive identity arithmetic in a Shape -> Gather -> Mul -> Concat -> Reshape chain") {
    Net n(17);
    auto* x = n.in("x", DataType::kFloat, "N,3,H,W");
    auto* flat = n.in_unranked("flat", DataType::kFloat);
    n.node("Shape", {x}, {"shape"});
    n.node("Gather", {n.v("shape"), n.ints("i0", {0})}, {"n"}, {attr_int("axis", 0)});
    n.node("Gather", {n.v("shape"), n.ints("i2", {2})}, {"h"}, {attr_int("axis", 0)});
    n.node("Gather", {n.v("shape"), n.ints("i3", {3})}, {"w"}, {attr_int("axis", 0)});
    n.node("Mul", {n.v("h"), n.ints("one", {1})}, {"h1"});
    n.node("Add", {n.v("h1"), n.ints("zero", {0})}, {"h2"});
    n.node("Max", {n.v("w"), n.v("zero")}, {"w1"});
    n.node("Abs", {n.v("w1")}, {"w2"});
    n.node("Concat", {n.v("n"), n.ints("three", {3}), n.v("h2"), n.v("w2")}, {"target"}, {attr_int("axis", 0)});
    n.node("Reshape", {flat, n.v("target")}, {"y"});
    // The usual exporter pattern: Where(Equal(t, -1), 1, t); a dimension never equals -1.
    n.node("Equal", {n.v("target"), n.ints("minus1", {-1})}, {"is_neg"});
    n.node("Where", {n.v("is_neg"), n.v("one"), n.v("target")}, {"target2"});
    n.node("Reshape", {flat, n.v("target2")}, {"y2"});
    // Sub of a symbol from itself is 0; Mul by 2 gives a derived symbol.
    n.node("Sub", {n.v("h"), n.v("h")}, {"z"});
    n.node("Mul", {n.v("h"), n.ints("two", {2})}, {"h_twice"});
    n.node("Concat", {n.v("n"), n.v("z"), n.v("h_twice")}, {"t3"}, {attr_int("axis", 0)});
    n.node("Reshape", {n.in("e", DataType::kFloat, "N,0,?"), n.v("t3")}, {"y3"}, {attr_int("allowzero", 1)});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("y") == "float[N,3,H,W]");
    CHECK(n.type("y2") == "float[N,3,H,W]");
    CHECK(n.type("y3") == "float[N,0,2*H]");
  }

  TEST_CASE("QuantizeLinear and DequantizeLinear types and scale shapes") {
    Net n(21);
    auto* x = n.in("x", DataType::kFloat, "N,4,6");
    auto* s1 = n.in("s1", DataType::kFloat, "");
    auto* s_axis = n.in("s_axis", DataType::kFloat, "4");
    auto* s_block = n.in("s_block", DataType::kFloat, "N,4,2");
    auto* zp = n.in("zp", DataType::kInt8, "");
    n.node("QuantizeLinear", {x, s1}, {"q_default"});
    n.node("QuantizeLinear", {x, s1, zp}, {"q_zp"});
    n.node("QuantizeLinear", {x, s_axis}, {"q_int4"}, {attr_int("output_dtype", static_cast<int64_t>(DataType::kInt4))});
    n.node("QuantizeLinear", {x, s_block}, {"q_block"}, {attr_int("axis", 2), attr_int("block_size", 3)});
    auto* h = n.in("h", DataType::kFloat16, "4");
    n.node("DequantizeLinear", {n.v("q_zp"), h, n.in("zp4", DataType::kInt8, "4")}, {"dq"});
    n.node("DynamicQuantizeLinear", {x}, {"dy", "dy_scale", "dy_zp"});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("q_default") == "uint8[N,4,6]");
    CHECK(n.type("q_zp") == "int8[N,4,6]");
    CHECK(n.type("q_int4") == "int4[N,4,6]");
    CHECK(n.type("q_block") == "uint8[N,4,6]");
    CHECK(n.type("dq") == "float16[N,4,6]");
    CHECK(n.type("dy") == "uint8[N,4,6]");
    CHECK(n.type("dy_scale") == "float[]");
    CHECK(n.type("dy_zp") == "uint8[]");

    Net bad(21);
    auto* bx = bad.in("x", DataType::kFloat, "2,4,6");
    bad.node("QuantizeLinear", {bx, bad.in("s", DataType::kFloat, "3")}, {"per_axis"});
    bad.node("QuantizeLinear", {bx, bad.in("sb", DataType::kFloat, "2,4,3"), bad.in("zb", DataType::kUInt8, "2,4,3")},
             {"blocked"}, {attr_int("axis", -1), attr_int("block_size", 3)});
    bad.node("QuantizeLinear", {bx, bad.in("s0", DataType::kFloat, ""), bad.in("z0", DataType::kUInt8, "")},
             {"dtype"}, {attr_int("output_dtype", static_cast<int64_t>(DataType::kInt8))});
    bad.infer();
    CHECK(bad.rules() == "shape.quantize shape.quantize shape.attribute");
  }
}

}  // namespace onnxtool::elementwise_shapes_test
