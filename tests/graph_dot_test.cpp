// ir::graph_dot (`inspect --graph`) on small hand-built graphs: node labels with op, name, key
// attributes and weights, typed edges, graph inputs and outputs, DOT escaping of awkward names,
// clusters by name prefix, summarized subgraphs, and the same bytes for the same model.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <unistd.h>

#include "ir/graph_dot.h"
#include "ir/shape_inference.h"
#include "tests/model_builder.h"

namespace onnxtool::testing::graph_dot_test {
namespace {

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

/// DOT's quoting holds: every quoted string ends on its line, and none is left open.
void check_quoting(const std::string& text) {
  bool quoted = false;
  size_t broken = 0;  // newlines inside quotes
  for (size_t i = 0; i < text.size(); ++i) {
    if (quoted && text[i] == '\\') {
      ++i;
      REQUIRE(i < text.size());
      broken += text[i] == '\n';
      continue;
    }
    if (text[i] == '"') quoted = !quoted;
    broken += quoted && text[i] == '\n';
  }
  CHECK(broken == 0);
  CHECK_FALSE(quoted);
}

/// When Graphviz's dot is installed, it reads the text (exit 0); `dot -Tplain` gives a line per
/// node and edge.
void check_with_dot(const std::string& text, size_t nodes, size_t edges) {
  if (std::system("command -v dot >/dev/null 2>&1") != 0) return;  // tests/cli/graph.sh needs it
  char path[] = "/tmp/onnxtool_graph_dot_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  std::ofstream(path) << text;
  const std::string plain = std::string(path) + ".plain";
  const int rc = std::system(("dot -Tplain " + std::string(path) + " > " + plain + " 2>&1").c_str());
  std::ifstream in(plain);
  std::string line, all;
  size_t node_lines = 0, edge_lines = 0;
  while (std::getline(in, line)) {
    all += line + "\n";
    node_lines += line.rfind("node ", 0) == 0;
    edge_lines += line.rfind("edge ", 0) == 0;
  }
  std::remove(plain.c_str());
  std::remove(path);
  ::close(fd);
  CHECK_MESSAGE(rc == 0, all);
  CHECK(node_lines == nodes);
  CHECK(edge_lines == edges);
}

/// x[1,3,16,16] -> Conv (8x3x3x3, stride 2, pads 1) -> Relu -> Transpose -> Cast -> y.
ModelBuilder small_cnn() {
  ModelBuilder b(17);
  ir::Value* x = b.input("image", ir::DataType::kFloat, {1, 3, 16, 16});
  ir::Value* c = b.op("Conv", {x, b.weight("conv.w", {8, 3, 3, 3}), b.weight("conv.b", {8})}, "c",
                      {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1}),
                       attr_int("group", 1)});
  ir::Value* r = b.op("Relu", {c}, "r");
  ir::Value* t = b.op("Transpose", {r}, "t", {attr_ints("perm", {0, 2, 3, 1})});
  ir::Value* y = b.op("Cast", {t}, "y", {attr_int("to", static_cast<int64_t>(ir::DataType::kFloat16))});
  b.output(y, ir::DataType::kFloat16);
  ir::DiagnosticSink sink;
  ir::infer_shapes(b.m, sink);
  return b;
}

/// `layers` x `per_layer` Relu nodes in a chain named "/enc/layer.K/act/Relu_J", then "/head/Relu".
ModelBuilder layered(int layers, int per_layer) {
  ModelBuilder b(17);
  ir::Value* v = b.input("x", ir::DataType::kFloat, {1, 4});
  for (int k = 0; k < layers; ++k)
    for (int j = 0; j < per_layer; ++j) {
      const std::string out = "v" + std::to_string(k) + "_" + std::to_string(j);
      ir::Node* n = b.node("Relu", {v}, out);
      n->name = "/enc/layer." + std::to_string(k) + "/act/Relu_" + std::to_string(j);
      v = n->output(0);
    }
  ir::Node* head = b.node("Relu", {v}, "y");
  head->name = "/head/Relu";
  b.output(head->output(0), ir::DataType::kFloat);
  return b;
}

}  // namespace

TEST_SUITE("graph_dot") {
  TEST_CASE("nodes carry op, name, key attributes and weights; edges the inferred types") {
    ModelBuilder b = small_cnn();
    const ir::DotGraph d = ir::graph_dot(b.m);
    const std::string& s = d.text;
    CHECK(d.nodes == 4);
    CHECK(d.edges == 5);  // image->Conv->Relu->Transpose->Cast->y
    CHECK(count(s, " -> ") == 5);
    CHECK(s.find("\"Conv\\nc_node\\nW 8x3x3x3\\nB 8\\nkernel_shape=[3,3]\\nstrides=[2,2]\\npads=[1,1,1,1]\\ngroup=1\"") !=
          std::string::npos);
    CHECK(s.find("perm=[0,2,3,1]") != std::string::npos);
    CHECK(s.find("to=float16") != std::string::npos);
    // Weights are in labels, never nodes or edges of their own.
    CHECK(s.find("conv.w") == std::string::npos);
    CHECK(s.find("in0 [shape=invhouse") != std::string::npos);
    CHECK(s.find("\"image\\nfloat[1,3,16,16]\"") != std::string::npos);
    CHECK(s.find("out0 [shape=house") != std::string::npos);
    CHECK(s.find("in0 -> n0 [label=\"float[1,3,16,16]\"") != std::string::npos);
    CHECK(s.find("n0 -> n1 [label=\"float[1,8,8,8]\"") != std::string::npos);
    CHECK(s.find("n2 -> n3 [label=\"float[1,8,8,8]\"") != std::string::npos);  // Transpose of [1,8,8,8]
    CHECK(s.find("n3 -> out0 [label=\"float16[1,8,8,8]\"") != std::string::npos);
    CHECK(s.find("subgraph") == std::string::npos);  // 4 nodes: no clusters
    check_quoting(s);
    check_with_dot(s, 6, 5);
  }

  TEST_CASE("edges: one per input read, a value read twice twice, graph outputs included") {
    ModelBuilder b(17);
    ir::Value* x = b.input("x", ir::DataType::kFloat, {2});
    ir::Value* sq = b.op("Mul", {x, x}, "sq");
    b.output(sq, ir::DataType::kFloat);
    b.output(x, ir::DataType::kFloat);  // an input passed through
    const ir::DotGraph d = ir::graph_dot(b.m);
    CHECK(d.edges == 4);
    CHECK(count(d.text, "in0 -> n0 ") == 2);
    CHECK(count(d.text, "in0 -> out1 ") == 1);
    check_with_dot(d.text, 4, 4);
  }

  TEST_CASE("long lists and many attributes are cut") {
    ModelBuilder b(17);
    ir::Value* x = b.input("x", ir::DataType::kFloat, {1, 1, 1, 1, 1, 1, 1, 2});
    ir::Value* t = b.op("Transpose", {x}, "t", {attr_ints("perm", {7, 6, 5, 4, 3, 2, 1, 0})});
    b.output(t, ir::DataType::kFloat);
    const std::string s = ir::graph_dot(b.m).text;
    CHECK(s.find("perm=[7,6,5,4,3,2,... 8 in all]") != std::string::npos);

    ModelBuilder many(17);
    ir::Value* y = many.op("Relu", {many.input("x", ir::DataType::kFloat, {1})}, "y",
                           {attr_int("a1", 1), attr_int("a2", 2), attr_int("a3", 3), attr_int("a4", 4), attr_int("a5", 5),
                            attr_int("a6", 6), attr_int("a7", 7)});
    many.output(y, ir::DataType::kFloat);
    const std::string m = ir::graph_dot(many.m).text;
    CHECK(m.find("a5=5\\n+2 more attributes") != std::string::npos);
    CHECK(m.find("a6=") == std::string::npos);
  }

  TEST_CASE("escaping: quotes, backslashes, newlines, entities, non-ASCII and invalid UTF-8") {
    CHECK(ir::dot_quote("plain") == "\"plain\"");
    CHECK(ir::dot_quote("a\"b") == "\"a\\\"b\"");
    CHECK(ir::dot_quote("a\\nb") == "\"a\\\\nb\"");  // a backslash and n, not a line break
    CHECK(ir::dot_quote("a\nb") == "\"a\\\\nb\"");   // a newline shows as \n
    CHECK(ir::dot_quote("x&lt;y") == "\"x&amp;lt;y\"");
    CHECK(ir::dot_quote("t\x01\x7f") == "\"t??\"");
    CHECK(ir::dot_quote("caf\xc3\xa9 \xe5\x9b\xbe") == "\"caf\xc3\xa9 \xe5\x9b\xbe\"");
    CHECK(ir::dot_quote("bad\xff\xc3") == "\"bad??\"");
    CHECK(ir::dot_quote("\xed\xa0\x80") == "\"???\"");  // a surrogate is not UTF-8

    ModelBuilder b(17);
    ir::Value* x = b.input("0 input \"quoted\"", ir::DataType::kFloat, {2});
    ir::Node* n = b.node("Relu", {x}, "1st\\out");
    n->name = "2 nodes {a; b} -> c\n\xce\xb1\xce\xb2";
    b.output(n->output(0), ir::DataType::kFloat);
    ir::DiagnosticSink sink;
    ir::infer_shapes(b.m, sink);
    const std::string s = ir::graph_dot(b.m).text;
    CHECK(s.find("\"0 input \\\"quoted\\\"\\nfloat[2]\"") != std::string::npos);
    CHECK(s.find("\"Relu\\n2 nodes {a; b} -> c\\\\n\xce\xb1\xce\xb2\"") != std::string::npos);
    CHECK(s.find("tooltip=\"1st\\\\out\"") != std::string::npos);
    check_quoting(s);
    check_with_dot(s, 3, 2);
  }

  TEST_CASE("name prefixes") {
    using V = std::vector<std::string>;
    CHECK(ir::dot_name_prefix("/encoder/layer.0/attention/self/MatMul", 3) == V{"encoder", "layer", "0"});
    CHECK(ir::dot_name_prefix("/encoder/layer.0/attention/self/MatMul", 10) == V{"encoder", "layer", "0", "attention", "self"});
    CHECK(ir::dot_name_prefix("Relu_3", 3).empty());
    CHECK(ir::dot_name_prefix("a//b.c", 3) == V{"a", "b"});
    CHECK(ir::dot_name_prefix("", 3).empty());
    CHECK(ir::dot_name_prefix("a/b/c/d", -1) == V{"a", "b", "c"});
    CHECK(ir::dot_name_prefix("p2o.Conv.58", 3, "Conv") == V{"p2o"});  // the op is no place
  }

  TEST_CASE("large graphs are clustered by name prefix") {
    ModelBuilder b = layered(7, 30);  // 211 nodes
    const ir::DotGraph d = ir::graph_dot(b.m);
    // enc > layer (one box, "enc/layer") holds a box per layer; the lone head node needs none.
    CHECK(d.nodes == 211);
    CHECK(d.clusters == 8);
    CHECK(count(d.text, "subgraph cluster_") == 8);
    CHECK(d.text.find("label=\"enc/layer\"") != std::string::npos);
    for (int k = 0; k < 7; ++k) CHECK(d.text.find("label=\"enc/layer/" + std::to_string(k) + "\"") != std::string::npos);
    CHECK(d.text.find("label=\"head\"") == std::string::npos);
    // The nodes of layer 3 are inside its cluster: between its opening and the next cluster's.
    const size_t open = d.text.find("label=\"enc/layer/3\"");
    const size_t next = d.text.find("label=\"enc/layer/4\"");
    CHECK(open < d.text.find("n90 ["));
    CHECK(d.text.find("n119 [") < next);
    check_quoting(d.text);

    ir::DotOptions one;
    one.cluster_depth = 1;
    CHECK(ir::graph_dot(b.m, one).clusters == 1);  // enc; head alone
    ir::DotOptions none;
    none.cluster_depth = 0;
    CHECK(ir::graph_dot(b.m, none).text.find("subgraph") == std::string::npos);

    // Under a prefix every name shares, the levels count from where names differ.
    ModelBuilder under = layered(7, 30);
    for (const auto& n : under.g->nodes()) n->name = "/bert" + n->name;
    const ir::DotGraph bert = ir::graph_dot(under.m);
    CHECK(bert.clusters == 8);
    CHECK(bert.text.find("label=\"bert/enc/layer\"") != std::string::npos);
    CHECK(bert.text.find("label=\"bert/enc/layer/6\"") != std::string::npos);

    ModelBuilder small = layered(2, 30);  // 61 nodes: below the threshold
    CHECK(ir::graph_dot(small.m).clusters == 0);
    ir::DotOptions asked;
    asked.cluster_depth = 3;
    CHECK(ir::graph_dot(small.m, asked).clusters == 3);
  }

  TEST_CASE("subgraphs are summarized in their node; outer values they read enter by dashed edges") {
    ModelBuilder b(17);
    ir::Value* x = b.input("x", ir::DataType::kFloat, {2});
    ir::Value* cond = b.input("cond", ir::DataType::kBool, {});
    ir::Node* n = b.g->add_node("If", {cond}, {"y"}, "", "branch");
    ir::Graph* then_g = add_subgraph(n, "then_branch");
    ir::Node* inner = then_g->add_node("Identity", {x}, {"t"}, "", "");
    then_g->add_output(inner->output(0), ir::TypeInfo::tensor(ir::DataType::kFloat));
    ir::Graph* else_g = add_subgraph(n, "else_branch");
    ir::Node* neg = else_g->add_node("Neg", {x}, {"e"}, "", "");
    ir::Node* abs = else_g->add_node("Abs", {neg->output(0)}, {"e2"}, "", "");
    else_g->add_output(abs->output(0), ir::TypeInfo::tensor(ir::DataType::kFloat));
    b.output(n->output(0), ir::DataType::kFloat);
    const ir::DotGraph d = ir::graph_dot(b.m);
    CHECK(d.text.find("then_branch: 1 node (Identity)") != std::string::npos);
    CHECK(d.text.find("else_branch: 2 nodes (Neg, Abs)") != std::string::npos);
    CHECK(d.text.find("in0 -> n0 [label=\"float[2]\", tooltip=\"x\", style=dashed]") != std::string::npos);
    CHECK(d.edges == 3);  // cond, x (dashed), y
    check_with_dot(d.text, 4, 3);
  }

  TEST_CASE("the same model gives the same bytes") {
    ModelBuilder a = layered(7, 30), b = layered(7, 30);
    const std::string first = ir::graph_dot(a.m).text;
    CHECK(first == ir::graph_dot(a.m).text);
    CHECK(first == ir::graph_dot(b.m).text);
    ModelBuilder c1 = small_cnn(), c2 = small_cnn();
    CHECK(ir::graph_dot(c1.m).text == ir::graph_dot(c2.m).text);
  }
}

}  // namespace onnxtool::testing::graph_dot_test
