// Shape functions of neural-network and ai.onnx.ml ops on small graphs built in code: symbolic
// dims, contradictions that must be reported with their rule id, valid models (unknown ranks,
// symbols) that must not be, and the real models of .cache/models.
#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>
#include <functional>
#include <set>

#include "ir/model_io.h"
#include "ir/shape_inference.h"
#include "tests/model_builder.h"
#include "tests/test_data.h"

namespace onnxtool::nn_shapes_test {
namespace {

using ir::DataType;

using NnNet = testing::ShapeNet;
using testing::Attr;
using testing::attr_floats;
using testing::attr_int;
using testing::attr_ints;
using testing::attr_string;
using testing::attr_strings;

}  // namespace

TEST_SUITE("nn_shapes") {
  TEST_CASE("MatMul: 1-D promotion, batch broadcasting, symbols") {
    NnNet n(21);
    auto* a = n.in("a", DataType::kFloat, "B,1,S,64");
    auto* b = n.in("b", DataType::kFloat, "4,64,N");
    auto* v = n.in("v", DataType::kFloat, "64");
    auto* w = n.in("w", DataType::kFloat, "64,10");
    n.node("MatMul", {a, b}, {"y"});
    n.node("MatMul", {v, w}, {"row"});
    n.node("MatMul", {w, n.in("c", DataType::kFloat, "10")}, {"col"});
    n.node("MatMul", {v, v}, {"dot"});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("y") == "float[B,4,S,N]");
    CHECK(n.type("row") == "float[10]");
    CHECK(n.type("col") == "float[64]");
    CHECK(n.type("dot") == "float[]");
  }

  TEST_CASE("MatMul: inner dimension mismatch and scalars fail, unknowns do not") {
    NnNet n(13);
    n.node("MatMul", {n.in("a", DataType::kFloat, "2,3"), n.in("b", DataType::kFloat, "4,5")}, {"y"});
    n.infer();
    CHECK(n.rules() == "shape.matmul");

    NnNet s(13);
    s.node("MatMul", {s.in("a", DataType::kFloat, ""), s.in("b", DataType::kFloat, "4,5")}, {"y"});
    s.infer();
    CHECK(s.rules() == "shape.rank");

    NnNet ok(13);
    ok.node("MatMul", {ok.in("a", DataType::kFloat, "?,K"), ok.in("b", DataType::kFloat, "J,5")}, {"y"});
    ok.node("MatMul", {ok.in_unranked("c", DataType::kFloat), ok.in("d", DataType::kFloat, "4,5")}, {"z"});
    ok.infer();
    CHECK(ok.rules() == "");
    CHECK(ok.type("y") == "float[?,5]");
    CHECK(ok.type("z") == "float[...]");
  }

  TEST_CASE("MatMulInteger and QLinearMatMul output types") {
    NnNet n(21);
    n.node("MatMulInteger", {n.in("a", DataType::kUInt8, "N,3"), n.in("b", DataType::kInt8, "3,2")}, {"y"});
    auto* sc = n.in("s", DataType::kFloat, "");
    auto* zp = n.in("z", DataType::kUInt8, "");
    n.node("QLinearMatMul", {n.in("qa", DataType::kUInt8, "2,N,4"), sc, zp, n.in("qb", DataType::kUInt8, "4,3"), sc,
                             zp, sc, zp},
           {"q"});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("y") == "int32[N,2]");
    CHECK(n.type("q") == "uint8[2,N,3]");
  }

  TEST_CASE("Gemm: transposes, C broadcast, mismatches") {
    NnNet n(13);
    n.node("Gemm", {n.in("a", DataType::kFloat, "K,M"), n.in("b", DataType::kFloat, "N,K"), n.in("c", DataType::kFloat, "1,N")},
           {"y"}, {attr_int("transA", 1), attr_int("transB", 1)});
    n.node("Gemm", {n.in("a2", DataType::kFloat, "M,4"), n.in("b2", DataType::kFloat, "4,?"), n.in("c2", DataType::kFloat, "7")},
           {"y2"});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("y") == "float[M,N]");
    CHECK(n.type("y2") == "float[M,7]");

    NnNet bad(13);
    bad.node("Gemm", {bad.in("a", DataType::kFloat, "2,3"), bad.in("b", DataType::kFloat, "3,4"), bad.in("c", DataType::kFloat, "5")},
             {"y"});
    bad.infer();
    CHECK(bad.rules() == "shape.broadcast");

    NnNet inner(13);
    inner.node("Gemm", {inner.in("a", DataType::kFloat, "2,3"), inner.in("b", DataType::kFloat, "4,4")}, {"y"});
    inner.infer();
    CHECK(inner.rules() == "shape.matmul");
  }

  TEST_CASE("Gemm before opset 7: C broadcasts only with broadcast=1") {
    NnNet n(6);
    auto* a = n.in("a", DataType::kFloat, "M,3");
    auto* b = n.in("b", DataType::kFloat, "3,4");
    n.node("Gemm", {a, b, n.in("c", DataType::kFloat, "4")}, {"y"}, {attr_int("broadcast", 1)});
    n.node("Gemm", {a, b, n.in("full", DataType::kFloat, "2,4")}, {"y_full"});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("y") == "float[M,4]");
    CHECK(n.type("y_full") == "float[2,4]");

    NnNet bad(6);
    auto* ba = bad.in("a", DataType::kFloat, "2,3");
    auto* bb = bad.in("b", DataType::kFloat, "3,4");
    bad.node("Gemm", {ba, bb, bad.in("c", DataType::kFloat, "4")}, {"row"});
    bad.node("Gemm", {ba, bb, bad.in("c1", DataType::kFloat, "1,4")}, {"one_row"});
    bad.infer();
    CHECK(bad.rules() == "shape.broadcast shape.broadcast");

    NnNet seven(7);
    seven.node("Gemm", {seven.in("a", DataType::kFloat, "2,3"), seven.in("b", DataType::kFloat, "3,4"),
                        seven.in("c", DataType::kFloat, "4")}, {"y"});
    seven.infer();
    CHECK(seven.rules() == "");
  }

  TEST_CASE("Conv keeps symbols where the size is unchanged and derives them for strides") {
    NnNet n(11);
    auto* x = n.in("x", DataType::kFloat, "N,3,H,W");
    n.node("Conv", {x, n.in("w", DataType::kFloat, "16,3,3,3")}, {"same"}, {attr_ints("pads", {1, 1, 1, 1})});
    n.node("Conv", {x, n.in("w2", DataType::kFloat, "8,3,3,3")}, {"down"},
           {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})});
    n.node("Conv", {x, n.in("w3", DataType::kFloat, "8,1,3,3")}, {"auto"},
           {attr_string("auto_pad", "SAME_UPPER"), attr_ints("strides", {2, 2}), attr_int("group", 3)});
    n.node("Conv", {n.in("s", DataType::kFloat, "1,3,224,224"), n.in("w4", DataType::kFloat, "8,3,7,7")}, {"static"},
           {attr_ints("pads", {3, 3, 3, 3}), attr_ints("strides", {2, 2})});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("same") == "float[N,16,H,W]");
    CHECK(n.type("down") == "float[N,8,floor((H+1)/2),floor((W+1)/2)]");
    CHECK(n.type("auto") == "float[N,8,floor((H+1)/2),floor((W+1)/2)]");
    CHECK(n.type("static") == "float[1,8,112,112]");
  }

  TEST_CASE("derived symbols stay flat and canonical through chains of strides") {
    NnNet n(11);
    auto* x = n.in("x", DataType::kFloat, "N,1,H,W");
    auto* w = n.in("w", DataType::kFloat, "1,1,3,3");
    auto* up = n.in("up", DataType::kFloat, "1,1,2,2");
    const std::vector<Attr> down = {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})};
    n.node("Conv", {x, w}, {"d1"}, down);
    n.node("Conv", {n.g->find("d1"), w}, {"d2"}, down);
    n.node("ConvTranspose", {n.g->find("d2"), up}, {"u1"}, {attr_ints("strides", {2, 2})});
    n.node("ConvTranspose", {n.g->find("u1"), up}, {"u2"}, {attr_ints("strides", {2, 2})});
    n.node("AveragePool", {n.g->find("d2"), }, {"p"}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("d2") == "float[N,1,floor((H+3)/4),floor((W+3)/4)]");
    CHECK(n.type("u2") == "float[N,1,4*floor((H+3)/4),4*floor((W+3)/4)]");
    CHECK(n.type("p") == "float[N,1,floor((H+3)/8),floor((W+3)/8)]");
  }

  TEST_CASE("Conv: kernel rank and channel mismatches fail only when static") {
    NnNet rank(11);
    rank.node("Conv", {rank.in("x", DataType::kFloat, "1,3,8,8"), rank.in("w", DataType::kFloat, "4,3,3")}, {"y"});
    rank.infer();
    CHECK(rank.rules() == "shape.conv");

    NnNet ks(11);
    ks.node("Conv", {ks.in("x", DataType::kFloat, "1,3,8,8"), ks.in_unranked("w", DataType::kFloat)}, {"y"},
            {attr_ints("kernel_shape", {3, 3, 3})});
    ks.infer();
    CHECK(ks.rules() == "shape.conv");

    NnNet ch(11);
    ch.node("Conv", {ch.in("x", DataType::kFloat, "1,4,8,8"), ch.in("w", DataType::kFloat, "4,3,3,3")}, {"y"});
    ch.infer();
    CHECK(ch.rules() == "shape.conv");

    NnNet grouped(11);
    grouped.node("Conv", {grouped.in("x", DataType::kFloat, "1,6,8,8"), grouped.in("w", DataType::kFloat, "4,3,3,3")},
                 {"y"}, {attr_int("group", 3)});
    grouped.infer();
    CHECK(grouped.rules() == "shape.conv");

    NnNet sym(11);
    sym.node("Conv", {sym.in("x", DataType::kFloat, "N,C,H,W"), sym.in("w", DataType::kFloat, "M,?,3,3")}, {"y"},
             {attr_int("group", 2)});
    sym.node("Conv", {sym.in_unranked("u", DataType::kFloat), sym.in("w2", DataType::kFloat, "4,3,3,3")}, {"z"});
    sym.infer();
    CHECK(sym.rules() == "");
    CHECK(sym.type("y") == "float[N,M,H-2,W-2]");
    CHECK(sym.type("z") == "float[?,4,?,?]");

    NnNet big(11);
    big.node("Conv", {big.in("x", DataType::kFloat, "1,3,2,2"), big.in("w", DataType::kFloat, "4,3,3,3")}, {"y"});
    big.infer();
    CHECK(big.rules() == "shape.conv");
  }

  TEST_CASE("ConvTranspose: output_shape, output_padding, auto_pad") {
    NnNet n(11);
    auto* x = n.in("x", DataType::kFloat, "N,4,H,5");
    auto* w = n.in("w", DataType::kFloat, "4,2,3,3");
    n.node("ConvTranspose", {x, w}, {"plain"}, {attr_ints("strides", {2, 2}), attr_ints("output_padding", {1, 1})});
    n.node("ConvTranspose", {x, w}, {"same"}, {attr_ints("strides", {2, 2}), attr_string("auto_pad", "SAME_LOWER"), attr_int("group", 2)});
    n.node("ConvTranspose", {x, w}, {"given"}, {attr_ints("strides", {3, 2}), attr_ints("output_shape", {10, 8})});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("plain") == "float[N,2,2*H+2,12]");
    CHECK(n.type("same") == "float[N,4,2*H,10]");
    CHECK(n.type("given") == "float[N,2,10,8]");

    NnNet bad(11);
    bad.node("ConvTranspose", {bad.in("x", DataType::kFloat, "1,3,5,5"), bad.in("w", DataType::kFloat, "4,2,3,3")}, {"y"});
    bad.infer();
    CHECK(bad.rules() == "shape.conv");
  }

  TEST_CASE("Pooling: ceil mode, dilations, indices, global pools") {
    NnNet n(12);
    auto* x = n.in("x", DataType::kFloat, "N,C,H,W");
    n.node("MaxPool", {x}, {"p", "idx"}, {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_int("ceil_mode", 1)});
    n.node("MaxPool", {n.in("s", DataType::kFloat, "1,1,5,5")}, {"c"},
           {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1}), attr_int("ceil_mode", 1)});
    n.node("AveragePool", {x}, {"a"}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})});
    n.node("GlobalAveragePool", {x}, {"g"});
    n.node("LpPool", {n.in_unranked("u", DataType::kFloat)}, {"lp"}, {attr_ints("kernel_shape", {2})});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("p") == "float[N,C,floor(H/2),floor(W/2)]");
    CHECK(n.type("idx") == "int64[N,C,floor(H/2),floor(W/2)]");
    CHECK(n.type("c") == "float[1,1,3,3]");
    CHECK(n.type("a") == "float[N,C,floor(H/2),floor(W/2)]");
    CHECK(n.type("g") == "float[N,C,1,1]");
    CHECK(n.type("lp") == "float[?,?,?]");

    NnNet bad(12);
    bad.node("MaxPool", {bad.in("x", DataType::kFloat, "1,1,8,8")}, {"y"}, {attr_ints("kernel_shape", {2, 2, 2})});
    bad.infer();
    CHECK(bad.rules() == "shape.pool");
  }

  TEST_CASE("MaxUnpool without and with output_shape") {
    NnNet n(11);
    auto* x = n.in("x", DataType::kFloat, "N,C,H,4");
    auto* i = n.in("i", DataType::kInt64, "N,C,H,4");
    n.node("MaxUnpool", {x, i}, {"y"}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})});
    n.node("MaxUnpool", {x, i, n.ints("os", {1, 2, 9, 9})}, {"z"}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("y") == "float[N,C,2*H,8]");
    CHECK(n.type("z") == "float[1,2,9,9]");
  }

  TEST_CASE("Normalizations: training outputs, LayerNormalization statistics") {
    NnNet n(17);
    auto* x = n.in("x", DataType::kFloat16, "N,3,H,W");
    auto* c = n.in("c", DataType::kFloat, "3");
    n.node("BatchNormalization", {x, c, c, c, c}, {"y", "rm", "rv"}, {attr_int("training_mode", 1)});
    n.node("LayerNormalization", {x, n.in("sc", DataType::kFloat16, "W")}, {"ln", "mean", "inv"}, {attr_int("axis", -2)});
    n.node("InstanceNormalization", {x, c, c}, {"in"});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("y") == "float16[N,3,H,W]");
    CHECK(n.type("rm") == "float[3]");
    CHECK(n.type("rv") == "float[3]");
    CHECK(n.type("ln") == "float16[N,3,H,W]");
    CHECK(n.type("mean") == "float[N,3,1,1]");
    CHECK(n.type("in") == "float16[N,3,H,W]");

    NnNet old(7);
    auto* ox = old.in("x", DataType::kFloat, "N,C,8");
    auto* oc = old.in("c", DataType::kFloat, "C");
    old.node("BatchNormalization", {ox, oc, oc, oc, oc}, {"y", "m", "v", "sm", "sv"});
    old.infer();
    CHECK(old.rules() == "");
    CHECK(old.type("sv") == "float[C]");

    NnNet bad(15);
    auto* bx = bad.in("x", DataType::kFloat, "2,3,4");
    auto* bc = bad.in("c", DataType::kFloat, "4");
    bad.node("BatchNormalization", {bx, bc, bc, bc, bc}, {"y", "rm"}, {attr_int("training_mode", 1)});
    bad.infer();
    CHECK(bad.rules() == "shape.channels");

    NnNet axis(17);
    axis.node("LayerNormalization", {axis.in("x", DataType::kFloat, "2,3"), axis.in("s", DataType::kFloat, "3")}, {"y"},
              {attr_int("axis", 2)});
    axis.infer();
    CHECK(axis.rules() == "shape.axis");
  }

  TEST_CASE("Einsum: explicit, implicit and ellipsis equations") {
    NnNet n(12);
    auto* a = n.in("a", DataType::kFloat, "B,I,J");
    auto* b = n.in("b", DataType::kFloat, "B,J,K");
    n.node("Einsum", {a, b}, {"mm"}, {attr_string("equation", "bij, bjk -> bik")});
    n.node("Einsum", {a, b}, {"implicit"}, {attr_string("equation", "bij,bjk")});
    n.node("Einsum", {n.in("e", DataType::kFloat, "2,7,5,5")}, {"diag"}, {attr_string("equation", "...ii->...i")});
    n.node("Einsum", {n.in("v", DataType::kFloat, "5"), n.in("w", DataType::kFloat, "5")}, {"dot"}, {attr_string("equation", "i,i")});
    n.node("Einsum", {n.in_unranked("u", DataType::kFloat)}, {"unk"}, {attr_string("equation", "...i->...")});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("mm") == "float[B,I,K]");
    CHECK(n.type("implicit") == "float[I,K]");
    CHECK(n.type("diag") == "float[2,7,5]");
    CHECK(n.type("dot") == "float[]");
    CHECK(n.type("unk") == "float[...]");

    NnNet bad(12);
    bad.node("Einsum", {bad.in("a", DataType::kFloat, "2,3"), bad.in("b", DataType::kFloat, "4,5")}, {"y"},
             {attr_string("equation", "ij,jk->ik")});
    bad.infer();
    CHECK(bad.rules() == "shape.broadcast");

    NnNet rank(12);
    rank.node("Einsum", {rank.in("a", DataType::kFloat, "2,3,4")}, {"y"}, {attr_string("equation", "ij->ji")});
    rank.infer();
    CHECK(rank.rules() == "shape.rank");
  }

  TEST_CASE("RNN/GRU/LSTM: layouts, directions, optional outputs") {
    NnNet n(14);
    auto* x = n.in("x", DataType::kFloat, "S,B,10");
    n.node("LSTM", {x, n.in("w", DataType::kFloat, "2,32,10"), n.in("r", DataType::kFloat, "2,32,8")}, {"y", "yh", "yc"},
           {attr_int("hidden_size", 8), attr_string("direction", "bidirectional")});
    n.node("GRU", {n.in("xb", DataType::kFloat, "B,S,10"), n.in("gw", DataType::kFloat, "1,24,10"),
                   n.in("gr", DataType::kFloat, "1,24,8")},
           {"", "gh"}, {attr_int("hidden_size", 8), attr_int("layout", 1)});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("y") == "float[S,2,B,8]");
    CHECK(n.type("yh") == "float[2,B,8]");
    CHECK(n.type("yc") == "float[2,B,8]");
    CHECK(n.type("gh") == "float[B,1,8]");

    NnNet bad(14);
    bad.node("RNN", {bad.in("x", DataType::kFloat, "S,B,10"), bad.in("w", DataType::kFloat, "1,8,12"),
                     bad.in("r", DataType::kFloat, "1,8,8")},
             {"y"}, {attr_int("hidden_size", 8)});
    bad.infer();
    CHECK(bad.rules() == "shape.rnn");
  }

  TEST_CASE("Attention: 4-D and 3-D inputs with a KV cache") {
    NnNet n(23);
    auto* q = n.in("q", DataType::kFloat, "B,8,S,64");
    auto* k = n.in("k", DataType::kFloat, "B,2,L,64");
    auto* v = n.in("v", DataType::kFloat, "B,2,L,32");
    auto* pk = n.in("pk", DataType::kFloat, "B,2,P,64");
    auto* pv = n.in("pv", DataType::kFloat, "B,2,P,32");
    n.node("Attention", {q, k, v, n.in("m", DataType::kBool, "S,?"), pk, pv}, {"y", "key", "value", "qk"});
    n.node("Attention", {n.in("q3", DataType::kFloat, "B,S,512"), n.in("k3", DataType::kFloat, "B,L,128"),
                         n.in("v3", DataType::kFloat, "B,L,64")},
           {"y3"}, {attr_int("q_num_heads", 8), attr_int("kv_num_heads", 2)});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("y") == "float[B,8,S,32]");
    CHECK(n.type("key") == "float[B,2,P+L,64]");
    CHECK(n.type("value") == "float[B,2,P+L,32]");
    CHECK(n.type("qk") == "float[B,8,S,P+L]");
    CHECK(n.type("y3") == "float[B,S,256]");

    NnNet bad(23);
    bad.node("Attention", {bad.in("q", DataType::kFloat, "1,8,4,64"), bad.in("k", DataType::kFloat, "1,8,6,32"),
                           bad.in("v", DataType::kFloat, "1,8,6,32")},
             {"y"});
    bad.infer();
    CHECK(bad.rules() == "shape.attention");
  }

  TEST_CASE("Images: Col2Im, GridSample, CenterCropPad, RotaryEmbedding, RMSNormalization") {
    NnNet n(23);
    n.node("Col2Im", {n.in("c", DataType::kFloat, "N,12,L"), n.ints("img", {5, 5}), n.ints("blk", {2, 2})}, {"im"});
    n.node("GridSample", {n.in("x", DataType::kFloat, "N,3,D,H,W"), n.in("grid", DataType::kFloat, "N,4,5,6,3")}, {"gs"});
    n.node("CenterCropPad", {n.in("ccp", DataType::kFloat, "N,20,10,3"), n.ints("sz", {16, 16})}, {"cc"},
           {attr_ints("axes", {1, 2})});
    n.node("RotaryEmbedding", {n.in("r", DataType::kFloat, "B,S,64"), n.in("cos", DataType::kFloat, "S,16"),
                               n.in("sin", DataType::kFloat, "S,16")},
           {"rot"}, {attr_int("num_heads", 2)});
    n.node("RMSNormalization", {n.in("rx", DataType::kFloat16, "B,S,64"), n.in("rs", DataType::kFloat, "64")}, {"rms"});
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("im") == "float[N,3,5,5]");
    CHECK(n.type("gs") == "float[N,3,4,5,6]");
    CHECK(n.type("cc") == "float[N,16,16,3]");
    CHECK(n.type("rot") == "float[B,S,64]");
    CHECK(n.type("rms") == "float[B,S,64]");
  }

  TEST_CASE("ai.onnx.ml: classifiers, encoders, ZipMap") {
    NnNet n(17, 3);
    auto* x = n.in("x", DataType::kFloat, "N,4");
    n.node("LinearClassifier", {x}, {"label", "scores"},
           {attr_strings("classlabels_strings", {"a", "b", "c"}), attr_floats("coefficients", std::vector<float>(12, 1.f))},
           "ai.onnx.ml");
    n.node("TreeEnsembleClassifier", {x}, {"tl", "tp"}, {attr_ints("classlabels_int64s", {0, 1})}, "ai.onnx.ml");
    n.node("TreeEnsembleRegressor", {x}, {"tr"}, {attr_int("n_targets", 3)}, "ai.onnx.ml");
    n.node("ZipMap", {n.g->find("tp")}, {"zm"}, {attr_ints("classlabels_int64s", {0, 1})}, "ai.onnx.ml");
    n.node("OneHotEncoder", {n.in("cat", DataType::kString, "N,1")}, {"oh"}, {attr_strings("cats_strings", {"x", "y", "z"})},
           "ai.onnx.ml");
    n.node("LabelEncoder", {n.in("le", DataType::kString, "N")}, {"lo"},
           {attr_strings("keys_strings", {"a"}), attr_ints("values_int64s", {1})}, "ai.onnx.ml");
    n.node("Scaler", {n.in("si", DataType::kInt64, "N,4")}, {"so"}, {}, "ai.onnx.ml");
    n.node("FeatureVectorizer", {x, n.in("x2", DataType::kFloat, "N,2")}, {"fv"}, {attr_ints("inputdimensions", {4, 2})},
           "ai.onnx.ml");
    n.node("SVMRegressor", {x}, {"svr"}, {}, "ai.onnx.ml");
    n.node("ArrayFeatureExtractor", {x, n.ints("idx", {0, 2})}, {"afe"}, {}, "ai.onnx.ml");
    n.infer();
    CHECK(n.rules() == "");
    CHECK(n.type("label") == "string[N]");
    CHECK(n.type("scores") == "float[N,3]");
    CHECK(n.type("tl") == "int64[N]");
    CHECK(n.type("tp") == "float[N,2]");
    CHECK(n.type("tr") == "float[N,3]");
    CHECK(n.type("zm") == "seq(map(int64,float[...]))");
    CHECK(n.type("oh") == "float[N,1,3]");
    CHECK(n.type("lo") == "int64[N]");
    CHECK(n.type("so") == "float[N,4]");
    CHECK(n.type("fv") == "float[N,6]");
    CHECK(n.type("svr") == "float[N,1]");
    CHECK(n.type("afe") == "float[N,2]");
  }

  TEST_CASE("real models: no diagnostics from this family, symbolic conv outputs") {
    static const std::set<std::string> family = {
        "MatMul", "Gemm", "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool",
        "GlobalMaxPool", "BatchNormalization", "InstanceNormalization", "LayerNormalization", "LSTM",
        "GRU", "RNN", "LRN", "Einsum"};
    for (const auto& path : testing::installed_real_models()) {
      ir::LoadedModel loaded = ir::load_model(path.string());
      ir::DiagnosticSink sink;
      ir::infer_shapes(loaded.model, sink);
      for (const auto& d : sink.items()) {
        INFO(path.filename().string() << ": " << d.op_type << " " << d.node << " " << d.rule << " " << d.message);
        CHECK(family.count(d.op_type) == 0);
      }
      if (path.filename() == "ch_PP-OCRv4_det_infer.onnx") {
        // The stem: a stride-2 3x3 convolution over a symbolic image keeps a derived symbol.
        const ir::Graph& g = *loaded.model.graph;
        const ir::Node* first_conv = nullptr;
        for (const auto& node : g.nodes())
          if (node->op_type == "Conv") {
            first_conv = node.get();
            break;
          }
        REQUIRE(first_conv != nullptr);
        const ir::TypeInfo& t = first_conv->output(0)->type;
        REQUIRE(t.shape);
        CHECK(t.shape->rank() == 4);
        CHECK(t.shape->dims[2].kind == ir::Dim::Kind::kParam);
        CHECK(t.shape->dims[3].kind == ir::Dim::Kind::kParam);
      }
    }
  }
}

}  // namespace onnxtool::nn_shapes_test
