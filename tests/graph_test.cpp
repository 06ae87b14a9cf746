// Unit tests of the graph editing API (ir/graph.h): value links, renaming, fresh names,
// topological order, subgraph walks and outer-scope lookup; and ir/graph_util.h's fresh value names.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <doctest/doctest.h>

#include "ir/error.h"
#include "ir/graph.h"
#include "ir/graph_util.h"
#include "ir/model_io.h"
#include "onnx.pb.h"

namespace onnxtool::graph_test {
namespace {

using ir::Graph;
using ir::Model;
using ir::Node;
using ir::Value;

ir::TypeInfo float_type() { return ir::TypeInfo::tensor(ir::DataType::kFloat); }

std::unique_ptr<Model> empty_model(const std::string& graph_name = "main") {
  auto m = std::make_unique<Model>();
  m->ir_version = 8;
  m->set_opset_version("", 17);
  m->graph = std::make_unique<Graph>();
  m->graph->name = graph_name;
  return m;
}

/// Adds a graph-valued attribute holding a new subgraph of `owner`'s graph; returns it.
Graph* add_subgraph(Node* owner, const std::string& attr_name, const std::string& graph_name) {
  ir::Attribute a;
  a.name = attr_name;
  a.type = static_cast<int32_t>(ir::AttrType::kGraph);
  a.g = std::make_unique<Graph>(owner->graph());
  a.g->name = graph_name;
  Graph* sub = a.g.get();
  owner->set_attr(std::move(a));
  return sub;
}

size_t count_uses(const Value* v, const Node* n, size_t index) {
  return static_cast<size_t>(std::count_if(v->uses().begin(), v->uses().end(), [&](const ir::Use& u) {
    return u.node == n && u.index == index;
  }));
}

bool contains_node(const Graph& g, const Node* n) {
  for (const auto& p : g.nodes())
    if (p.get() == n) return true;
  return false;
}

/// Checks the invariants that link nodes and values, in `g` and all its subgraphs: every input
/// slot has exactly one matching use, every use points back at a live node's input slot, and
/// every output's producer is its node.
void check_links(Graph& root) {
  ir::for_each_graph(root, [](Graph& g) {
    for (const auto& p : g.nodes()) {
      const Node* n = p.get();
      CHECK(n->graph() == &g);
      for (size_t i = 0; i < n->inputs().size(); ++i) {
        const Value* v = n->input(i);
        if (!v) continue;
        CHECK_MESSAGE(count_uses(v, n, i) == 1, n->describe() << " input " << i << " ('" << v->name()
                                                              << "') has no single matching use");
        for (const ir::Use& u : v->uses()) {
          REQUIRE(u.node != nullptr);
          CHECK(u.node->input(u.index) == v);
          CHECK(contains_node(*u.node->graph(), u.node));
        }
      }
      for (size_t i = 0; i < n->outputs().size(); ++i) {
        const Value* v = n->output(i);
        if (!v) continue;
        CHECK(v->producer() == n);
        CHECK(v->producer_output() == i);
      }
    }
  });
}

std::vector<std::string> node_names(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& n : g.nodes()) out.push_back(n->name);
  return out;
}

onnx::ModelProto to_proto(const Model& m) {
  onnx::ModelProto p;
  REQUIRE(p.ParseFromString(ir::serialize_model(m)));
  return p;
}

TEST_SUITE("graph") {

TEST_CASE("add_node and remove_node keep producers and uses consistent") {
  auto m = empty_model();
  Graph& g = *m->graph;
  Value* x = g.add_input("x", float_type()).value;
  Node* relu = g.add_node("Relu", {x}, {"a"}, "", "relu");
  Value* a = relu->output(0);
  Node* add = g.add_node("Add", {a, x}, {"b"}, "", "add");
  Node* neg = g.add_node("Neg", {x}, {"c"}, "", "neg", relu);  // inserted before relu

  CHECK(node_names(g) == std::vector<std::string>{"neg", "relu", "add"});
  CHECK(a->producer() == relu);
  CHECK(a->uses().size() == 1);
  CHECK(count_uses(a, add, 0) == 1);
  CHECK(x->uses().size() == 3);
  CHECK(count_uses(x, relu, 0) == 1);
  CHECK(count_uses(x, add, 1) == 1);
  CHECK(count_uses(x, neg, 0) == 1);
  CHECK(g.find("b")->producer() == add);
  check_links(g);

  g.remove_node(relu);
  CHECK(node_names(g) == std::vector<std::string>{"neg", "add"});
  CHECK(x->uses().size() == 2);
  CHECK(count_uses(x, relu, 0) == 0);
  CHECK(a->producer() == nullptr);
  CHECK(a->is_undefined());
  CHECK(add->input(0) == a);  // consumers keep pointing at the now-undefined value
  check_links(g);

  g.remove_node(add);
  CHECK(a->uses().empty());
  CHECK(x->uses().size() == 1);
  CHECK(g.find("b")->producer() == nullptr);
  check_links(g);

  g.remove_nodes_if([](const Node& n) { return n.op_type == "Neg"; });
  CHECK(g.nodes().empty());
  CHECK(x->uses().empty());
}

TEST_CASE("replace_all_uses moves every use, in subgraphs too, and leaves graph outputs alone") {
  auto m = empty_model();
  Graph& g = *m->graph;
  Value* x = g.add_input("x", float_type()).value;
  Value* z = g.add_input("z", float_type()).value;
  Value* cond = g.add_input("cond", ir::TypeInfo::tensor(ir::DataType::kBool)).value;
  Value* a = g.add_node("Relu", {x}, {"a"}, "", "relu")->output(0);
  Node* twice = g.add_node("Add", {a, a}, {"b"}, "", "twice");
  Node* mul = g.add_node("Mul", {a, x}, {"c"}, "", "mul");
  Node* branch = g.add_node("If", {cond}, {"d"}, "", "if");
  Graph* then_g = add_subgraph(branch, "then_branch", "then");
  Node* inner = then_g->add_node("Identity", {then_g->resolve("a")}, {"t"}, "", "inner");
  then_g->add_output(inner->output(0), float_type());
  g.add_output(a, float_type());

  REQUIRE(inner->input(0) == a);
  CHECK(a->uses().size() == 4);
  g.replace_all_uses(a, z);
  CHECK(a->uses().empty());
  CHECK(twice->input(0) == z);
  CHECK(twice->input(1) == z);
  CHECK(mul->input(0) == z);
  CHECK(mul->input(1) == x);
  CHECK(inner->input(0) == z);
  CHECK(z->uses().size() == 4);
  CHECK(g.outputs[0].value == a);
  CHECK(a->is_graph_output());
  check_links(g);
}

TEST_CASE("rename follows uses, graph I/O, initializers, value_info and subgraph uses") {
  auto m = empty_model();
  Graph& g = *m->graph;
  Value* x = g.add_input("x", float_type()).value;
  const float wdata[4] = {1, 2, 3, 4};
  Value* w = g.add_initializer(ir::make_tensor("w", ir::DataType::kFloat, {2, 2}, wdata, sizeof wdata));
  g.add_input("w", float_type());
  Value* cond = g.add_input("cond", ir::TypeInfo::tensor(ir::DataType::kBool)).value;
  Value* h = g.add_node("MatMul", {x, w}, {"h"}, "", "matmul")->output(0);
  Value* y = g.add_node("Relu", {h}, {"y"}, "", "relu")->output(0);
  Node* branch = g.add_node("If", {cond}, {"d"}, "", "if");
  Graph* then_g = add_subgraph(branch, "then_branch", "then");
  Node* inner = then_g->add_node("Identity", {then_g->resolve("h")}, {"t"}, "", "inner");
  then_g->add_output(inner->output(0), float_type());
  g.add_output(y, float_type());
  ir::ValueInfo vi;
  vi.value = h;
  vi.type = float_type();
  g.value_info.push_back(vi);

  g.rename(x, "input0");
  g.rename(w, "weight0");
  g.rename(h, "hidden");
  g.rename(y, "out");

  CHECK(g.find("x") == nullptr);
  CHECK(g.find("h") == nullptr);
  CHECK(g.find("hidden") == h);
  CHECK(g.find("weight0") == w);
  CHECK(w->initializer()->name == "weight0");
  check_links(g);

  const onnx::ModelProto p = to_proto(*m);
  const onnx::GraphProto& pg = p.graph();
  REQUIRE(pg.input_size() == 3);
  CHECK(pg.input(0).name() == "input0");
  CHECK(pg.input(1).name() == "weight0");
  REQUIRE(pg.initializer_size() == 1);
  CHECK(pg.initializer(0).name() == "weight0");
  REQUIRE(pg.node_size() == 3);
  CHECK(pg.node(0).input(0) == "input0");
  CHECK(pg.node(0).input(1) == "weight0");
  CHECK(pg.node(0).output(0) == "hidden");
  CHECK(pg.node(1).input(0) == "hidden");
  CHECK(pg.node(1).output(0) == "out");
  REQUIRE(pg.node(2).attribute_size() == 1);
  CHECK(pg.node(2).attribute(0).g().node(0).input(0) == "hidden");
  REQUIRE(pg.output_size() == 1);
  CHECK(pg.output(0).name() == "out");
  REQUIRE(pg.value_info_size() == 1);
  CHECK(pg.value_info(0).name() == "hidden");

  SUBCASE("renaming onto a name in use throws and changes nothing") {
    try {
      g.rename(h, "out");
      FAIL("rename onto an existing name did not throw");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::kUsage);
    }
    CHECK(h->name() == "hidden");
    CHECK(g.find("hidden") == h);
    CHECK(g.find("out") == y);
    CHECK_THROWS_AS(g.rename(x, "weight0"), Error);
    CHECK(w->initializer()->name == "weight0");
    CHECK(x->name() == "input0");
  }
}

TEST_CASE("Node::remove_input shifts the indices of the later uses") {
  auto m = empty_model();
  Graph& g = *m->graph;
  Value* a = g.add_input("a", float_type()).value;
  Value* b = g.add_input("b", float_type()).value;
  Value* c = g.add_input("c", float_type()).value;
  Node* n = g.add_node("Concat", {a, b, c, b}, {"y"}, "", "concat");

  n->remove_input(1);
  REQUIRE(n->inputs().size() == 3);
  CHECK(n->input(0) == a);
  CHECK(n->input(1) == c);
  CHECK(n->input(2) == b);
  CHECK(b->uses().size() == 1);
  CHECK(count_uses(b, n, 2) == 1);
  CHECK(count_uses(c, n, 1) == 1);
  CHECK(count_uses(a, n, 0) == 1);
  check_links(g);

  SUBCASE("the same value in every slot") {
    Node* s = g.add_node("Sum", {a, a, a}, {"s"}, "", "sum");
    s->remove_input(1);
    REQUIRE(s->inputs().size() == 2);
    CHECK(count_uses(a, s, 0) == 1);
    CHECK(count_uses(a, s, 1) == 1);
    CHECK(count_uses(a, s, 2) == 0);
    s->remove_input(0);
    CHECK(count_uses(a, s, 0) == 1);
    CHECK(count_uses(a, s, 1) == 0);
    check_links(g);
  }
  SUBCASE("omitted optional inputs in between") {
    Node* r = g.add_node("Resize", {a, nullptr, nullptr, c}, {"r"}, "", "resize");
    r->remove_input(0);
    REQUIRE(r->inputs().size() == 3);
    CHECK(r->input(0) == nullptr);
    CHECK(count_uses(c, r, 2) == 1);
    CHECK(count_uses(a, r, 0) == 0);
    check_links(g);
  }
}

TEST_CASE("NameGenerator avoids every name in subgraphs and function bodies, deterministically") {
  auto m = empty_model();
  Graph& g = *m->graph;
  Value* x = g.add_input("x", float_type()).value;
  Value* cond = g.add_input("cond", ir::TypeInfo::tensor(ir::DataType::kBool)).value;
  g.add_node("Relu", {x}, {"x_1"}, "", "top_relu");
  Node* branch = g.add_node("If", {cond}, {"d"}, "", "if");
  Graph* then_g = add_subgraph(branch, "then_branch", "then");
  Node* inner = then_g->add_node("Relu", {then_g->resolve("x")}, {"inner"}, "", "inner_node");
  then_g->add_output(inner->output(0), float_type());
  Graph* else_g = add_subgraph(branch, "else_branch", "else");
  const float one = 1;
  else_g->add_initializer(ir::make_tensor("else_const", ir::DataType::kFloat, {}, &one, 4));
  else_g->add_output(else_g->find("else_const"), float_type());

  ir::Function f;
  f.name = "MyFn";
  f.domain = "custom";
  Value* fx = f.body->add_input("fx", std::nullopt).value;
  Node* fn_node = f.body->add_node("Relu", {fx}, {"fy"}, "", "fnode");
  f.body->add_output(fn_node->output(0), std::nullopt);
  m->functions.push_back(std::move(f));

  ir::NameGenerator gen(*m);
  CHECK(gen.fresh("inner") == "inner_1");
  CHECK(gen.fresh("inner_node") == "inner_node_1");
  CHECK(gen.fresh("else_const") == "else_const_1");
  CHECK(gen.fresh("fx") == "fx_1");
  CHECK(gen.fresh("fy") == "fy_1");
  CHECK(gen.fresh("fnode") == "fnode_1");
  CHECK(gen.fresh("x") == "x_2");  // x and x_1 are both taken
  CHECK(gen.fresh("new") == "new");
  CHECK(gen.fresh("new") == "new_1");  // reserved by the previous call
  CHECK(gen.fresh("") != "");

  // The same model and requests give the same names.
  ir::NameGenerator a(*m), b(*m);
  for (const char* base : {"inner", "x", "q", "q", "fy", "if"}) CHECK(a.fresh(base) == b.fresh(base));

  // Starting from a subgraph, the names of the whole main graph are avoided.
  ir::NameGenerator from_sub(*then_g);
  CHECK(from_sub.fresh("top_relu") == "top_relu_1");
  CHECK(from_sub.fresh("else_const") == "else_const_1");
  CHECK(from_sub.fresh("d") == "d_1");
}

TEST_CASE("unique_name avoids enclosing and nested graphs, not those beside, as NameGenerator names") {
  auto m = empty_model();
  Graph& g = *m->graph;
  Value* x = g.add_input("x", float_type()).value;
  Value* cond = g.add_input("cond", ir::TypeInfo::tensor(ir::DataType::kBool)).value;
  Node* branch = g.add_node("If", {cond}, {"d"}, "", "if");
  Graph* then_g = add_subgraph(branch, "then_branch", "then");
  Node* inner = then_g->add_node("Relu", {then_g->resolve("x")}, {"inner"});
  then_g->add_output(inner->output(0), float_type());
  Node* loop = then_g->add_node("Loop", {}, {"l"}, "", "loop");
  Graph* body = add_subgraph(loop, "body", "body");
  body->add_node("Neg", {body->resolve("inner")}, {"deep"});
  Graph* else_g = add_subgraph(branch, "else_branch", "else");
  const float one = 1;
  else_g->add_initializer(ir::make_tensor("else_const", ir::DataType::kFloat, {}, &one, 4));

  CHECK(ir::unique_name(g, "new") == "new");
  CHECK(ir::unique_name(g, "x") == "x_1");
  CHECK(ir::unique_name(g, "inner") == "inner_1");  // a subgraph would see the new value
  CHECK(ir::unique_name(g, "deep") == "deep_1");    // two levels down
  CHECK(ir::unique_name(*then_g, "x") == "x_1");    // the new value would shadow the outer one
  CHECK(ir::unique_name(*then_g, "deep") == "deep_1");
  CHECK(ir::unique_name(*then_g, "else_const") == "else_const");  // the else branch never sees it
  CHECK(ir::unique_name(*body, "d") == "d_1");

  // One scheme: the same names as NameGenerator where both see the same names taken.
  g.add_node("Relu", {x}, {"x_1"});
  CHECK(ir::unique_name(g, "x") == "x_2");
  CHECK(ir::NameGenerator(*m).fresh("x") == "x_2");
  CHECK(ir::unique_name(g, "") == "_1");
  CHECK(ir::NameGenerator(*m).fresh("") == "_1");

  // A subgraph goes with its node.
  g.remove_node(branch);
  CHECK(ir::unique_name(g, "inner") == "inner");
  CHECK_FALSE(g.defined_below("deep"));
}

TEST_CASE("a subgraph that outlives its parent graph is left without a parent") {
  std::unique_ptr<Graph> kept;
  {
    auto m = empty_model();
    Node* loop = m->graph->add_node("Loop", {}, {"l"}, "", "loop");
    Graph* body = add_subgraph(loop, "body", "body");
    body->add_node("Neg", {body->resolve("x")}, {"y"});
    CHECK(m->graph->defined_below("y"));
    kept = std::move(loop->attr("body")->g);
    CHECK(kept->parent() == m->graph.get());
  }
  CHECK(kept->parent() == nullptr);  // not a dangling pointer: its destructor would follow it
  Graph adopter;
  kept->set_parent(&adopter);
  CHECK(adopter.defined_below("y"));
  kept->set_parent(nullptr);
  CHECK_FALSE(adopter.defined_below("y"));
}

TEST_CASE("unique_name on a graph without subgraphs scans no node list") {
  // Quantizing calls it per node of graphs of many thousand nodes, between insertions: it must not
  // walk (and so compact) the node list each time.
  auto rebuilds_for = [](int length) {
    auto m = empty_model();
    Graph& g = *m->graph;
    Value* v = g.add_input("x", float_type()).value;
    std::vector<Node*> nodes;
    for (int i = 0; i < length; ++i) {
      nodes.push_back(g.add_node("Relu", {v}, {"v" + std::to_string(i)}));
      v = nodes.back()->output(0);
    }
    const size_t start = g.position_rebuilds();
    for (Node* n : nodes) g.add_node("Identity", {n->input(0)}, {ir::unique_name(g, n->output(0)->name())}, "", "", n);
    CHECK(g.find("v0_1") != nullptr);
    return g.position_rebuilds() - start;
  };
  CHECK(rebuilds_for(400) == 0);
  CHECK(rebuilds_for(40000) == 0);
}

/// Position of every node in the graph's current order.
std::unordered_map<const Node*, size_t> positions(const Graph& g) {
  std::unordered_map<const Node*, size_t> pos;
  for (size_t i = 0; i < g.nodes().size(); ++i) pos[g.nodes()[i].get()] = i;
  return pos;
}

/// Every producer (in this graph) of a node's inputs, or of values its subgraphs use, comes first.
void check_topological(const Graph& g) {
  const auto pos = positions(g);
  for (const auto& n : g.nodes()) {
    std::vector<Value*> deps(n->inputs().begin(), n->inputs().end());
    for (Value* v : g.implicit_inputs(n.get())) deps.push_back(v);
    for (const Value* v : deps) {
      if (!v || !v->producer()) continue;
      auto it = pos.find(v->producer());
      if (it == pos.end()) continue;
      CHECK_MESSAGE(it->second < pos.at(n.get()),
                    n->describe() << " comes before the producer of '" << v->name() << "'");
    }
  }
}

TEST_CASE("topological_sort orders a shuffled graph and keeps a sorted one unchanged") {
  constexpr int kNodes = 400;
  std::mt19937 rng(20240611);
  // A random DAG: node i reads one to three values among x and the outputs of nodes < i.
  std::vector<std::vector<std::string>> inputs(kNodes);
  for (int i = 0; i < kNodes; ++i) {
    const int k = 1 + static_cast<int>(rng() % 3);
    for (int j = 0; j < k; ++j) {
      const int from = static_cast<int>(rng() % static_cast<unsigned>(i + 1)) - 1;
      inputs[i].push_back(from < 0 ? "x" : "v" + std::to_string(from));
    }
  }
  auto build = [&](const std::vector<int>& order) {
    auto m = empty_model();
    Graph& g = *m->graph;
    g.add_input("x", float_type());
    for (int i : order) {
      std::vector<Value*> in;
      for (const auto& name : inputs[i]) in.push_back(g.value(name));
      g.add_node("Sum", in, {"v" + std::to_string(i)}, "", "n" + std::to_string(i));
    }
    g.add_output(g.find("v" + std::to_string(kNodes - 1)), float_type());
    return m;
  };

  std::vector<int> sorted_order(kNodes);
  for (int i = 0; i < kNodes; ++i) sorted_order[i] = i;

  SUBCASE("shuffled") {
    std::vector<int> shuffled = sorted_order;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    auto m = build(shuffled);
    Graph& g = *m->graph;
    std::set<const Node*> before;
    for (const auto& n : g.nodes()) before.insert(n.get());
    check_links(g);
    g.topological_sort();
    std::set<const Node*> after;
    for (const auto& n : g.nodes()) after.insert(n.get());
    CHECK(before == after);
    CHECK(g.nodes().size() == static_cast<size_t>(kNodes));
    check_topological(g);
    check_links(g);
    // Sorting again changes nothing.
    const auto once = node_names(g);
    g.topological_sort();
    CHECK(node_names(g) == once);
  }
  SUBCASE("already sorted") {
    auto m = build(sorted_order);
    Graph& g = *m->graph;
    std::vector<const Node*> before;
    for (const auto& n : g.nodes()) before.push_back(n.get());
    g.topological_sort();
    std::vector<const Node*> after;
    for (const auto& n : g.nodes()) after.push_back(n.get());
    CHECK(before == after);
  }
  SUBCASE("already sorted with independent nodes in an arbitrary order") {
    auto m = empty_model();
    Graph& g = *m->graph;
    Value* x = g.add_input("x", float_type()).value;
    for (const char* name : {"p", "c", "k", "a", "z", "m"}) g.add_node("Relu", {x}, {name}, "", name);
    const auto before = node_names(g);
    g.topological_sort();
    CHECK(node_names(g) == before);
  }
  SUBCASE("one misplaced consumer moves after its producers only") {
    auto m = empty_model();
    Graph& g = *m->graph;
    Value* x = g.add_input("x", float_type()).value;
    g.add_node("Neg", {g.value("b")}, {"c"}, "", "C");
    g.add_node("Relu", {x}, {"a"}, "", "A");
    g.add_node("Abs", {g.find("a")}, {"b"}, "", "B");
    g.add_node("Exp", {x}, {"d"}, "", "D");
    g.topological_sort();
    CHECK(node_names(g) == std::vector<std::string>{"A", "B", "C", "D"});
  }
}

TEST_CASE("topological_sort sees values that subgraphs take from the outer graph") {
  auto m = empty_model();
  Graph& g = *m->graph;
  Value* x = g.add_input("x", float_type()).value;
  Value* cond = g.add_input("cond", ir::TypeInfo::tensor(ir::DataType::kBool)).value;
  Value* late = g.value("late");  // used by the If's subgraphs before its producer is added
  Node* branch = g.add_node("If", {cond}, {"out"}, "", "branch");
  Graph* then_g = add_subgraph(branch, "then_branch", "then");
  Node* use = then_g->add_node("Identity", {then_g->resolve("late")}, {"t"}, "", "use_late");
  then_g->add_output(use->output(0), float_type());
  Graph* else_g = add_subgraph(branch, "else_branch", "else");
  // Two levels down: an If inside the else branch reads another late value.
  Value* later = g.value("later");
  Node* nested_if = else_g->add_node("If", {else_g->resolve("cond")}, {"e"}, "", "nested_if");
  Graph* deep = add_subgraph(nested_if, "then_branch", "deep");
  Node* deep_use = deep->add_node("Identity", {deep->resolve("later")}, {"dd"}, "", "deep_use");
  deep->add_output(deep_use->output(0), float_type());
  else_g->add_output(nested_if->output(0), float_type());
  Node* producer = g.add_node("Relu", {x}, {"late"}, "", "make_late");
  Node* producer2 = g.add_node("Abs", {x}, {"later"}, "", "make_later");
  g.add_output(branch->output(0), float_type());

  REQUIRE(use->input(0) == late);
  REQUIRE(deep_use->input(0) == later);
  REQUIRE(late->producer() == producer);
  const auto implicit = g.implicit_inputs(branch);
  CHECK(std::find(implicit.begin(), implicit.end(), late) != implicit.end());
  CHECK(std::find(implicit.begin(), implicit.end(), later) != implicit.end());

  g.topological_sort();
  const auto pos = positions(g);
  CHECK(pos.at(producer) < pos.at(branch));
  CHECK(pos.at(producer2) < pos.at(branch));
  check_topological(g);
  check_links(g);
}

TEST_CASE("topological_sort reports a cycle as kFailed naming a node") {
  auto m = empty_model();
  Graph& g = *m->graph;
  Value* x = g.add_input("x", float_type()).value;
  g.add_node("Relu", {x}, {"ok"}, "", "fine");
  g.add_node("Add", {g.value("q"), x}, {"p"}, "", "cycle_p");
  g.add_node("Neg", {g.find("p")}, {"q"}, "", "cycle_q");
  try {
    g.topological_sort();
    FAIL("a cycle was not reported");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kFailed);
    const std::string what = e.what();
    CHECK_MESSAGE((what.find("cycle_p") != std::string::npos || what.find("cycle_q") != std::string::npos),
                  what);
    CHECK(what.find("'fine'") == std::string::npos);
  }
  CHECK(g.nodes().size() == 3);
  check_links(g);
}

TEST_CASE("topological_sort handles a 100,000-node chain and a 100,000-node cycle iteratively") {
  constexpr int kLength = 100000;
  auto name = [](int i) { return "v" + std::to_string(i); };
  SUBCASE("reversed chain") {
    auto m = empty_model();
    Graph& g = *m->graph;
    g.add_input("x", float_type());
    for (int i = kLength - 1; i >= 0; --i)
      g.add_node("Relu", {g.value(i == 0 ? "x" : name(i - 1))}, {name(i)}, "", "n" + std::to_string(i));
    g.add_output(g.find(name(kLength - 1)), float_type());
    g.topological_sort();
    REQUIRE(g.nodes().size() == static_cast<size_t>(kLength));
    bool ordered = true;
    for (int i = 0; i < kLength && ordered; ++i)
      ordered = g.nodes()[static_cast<size_t>(i)]->name == "n" + std::to_string(i);
    CHECK(ordered);
  }
  SUBCASE("cycle") {
    auto m = empty_model();
    Graph& g = *m->graph;
    for (int i = 0; i < kLength; ++i)
      g.add_node("Relu", {g.value(name((i + kLength - 1) % kLength))}, {name(i)}, "", "c" + std::to_string(i));
    try {
      g.topological_sort();
      FAIL("a cycle was not reported");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::kFailed);
      CHECK_MESSAGE(std::string(e.what()).find("node 'c") != std::string::npos, e.what());
    }
  }
}

TEST_CASE("node positions are cached: per-node describe, node_index, insertion and removal never rescan") {
  // A loop doing one of these per node must stay linear: a million unnamed nodes are labelled
  // "node #i" in messages, and passes insert and remove nodes one by one. The graph counts every
  // walk over its whole node list; the count must not grow with the number of nodes.
  auto walks_for = [](int length) {
    auto m = empty_model();
    Graph& g = *m->graph;
    Value* v = g.add_input("x", float_type()).value;
    for (int i = 0; i < length; ++i) v = g.add_node("Relu", {v}, {"v" + std::to_string(i)})->output(0);
    g.add_output(v, float_type());
    const size_t start = g.position_rebuilds();
    std::vector<Node*> nodes;
    for (const auto& n : g.nodes()) nodes.push_back(n.get());
    // Labels and positions of every node.
    for (size_t i = 0; i < nodes.size(); ++i) {
      REQUIRE(g.node_index(nodes[i]) == i);
      REQUIRE(nodes[i]->describe() == "node #" + std::to_string(i) + " (Relu)");
    }
    // Insert an Identity before every 4th node, remove every 4th original node (uses go with
    // it), then read positions again: one walk drops the removed slots.
    std::vector<Node*> inserted;
    for (size_t i = 0; i < nodes.size(); i += 4)
      inserted.push_back(g.add_node("Identity", {nodes[i]->input(0)}, {}, "", "", nodes[i]));
    for (size_t i = 1; i < nodes.size(); i += 4) g.remove_node(nodes[i]);
    size_t kept = 0;
    for (const auto& n : g.nodes()) {
      REQUIRE(g.node_index(n.get()) == kept);
      ++kept;
    }
    CHECK(kept == nodes.size() + (nodes.size() + 3) / 4 - (nodes.size() + 2) / 4);
    for (size_t j = 0; j < inserted.size(); ++j)  // each right before the node it was inserted before
      REQUIRE(g.node_index(inserted[j]) + 1 == g.node_index(nodes[4 * j]));
    return g.position_rebuilds() - start;
  };
  const size_t small = walks_for(400);
  const size_t large = walks_for(40000);
  CHECK(small <= 2);
  CHECK(large == small);
}

TEST_CASE("insertions before the same node keep their order; pending nodes can be edited at once") {
  auto m = empty_model();
  Graph& g = *m->graph;
  Value* x = g.add_input("x", float_type()).value;
  Node* last = g.add_node("Relu", {x}, {"y"}, "", "last");
  g.add_node("Neg", {x}, {"a"}, "", "a", last);
  Node* b = g.add_node("Neg", {x}, {"b"}, "", "b", last);
  g.add_node("Neg", {x}, {"c"}, "", "c", b);  // before a node that is itself pending
  Node* d = g.add_node("Neg", {x}, {"d"}, "", "d", last);
  g.add_node("Abs", {x}, {"e"}, "", "e");  // appended
  g.remove_node(d);  // removed while pending
  CHECK(node_names(g) == std::vector<std::string>{"a", "c", "b", "last", "e"});
  CHECK(g.find("d")->producer() == nullptr);
  check_links(g);
  auto other = empty_model("other");
  Node* stranger = other->graph->add_node("Relu", {other->graph->add_input("x", float_type()).value}, {"z"});
  CHECK_THROWS_AS(g.remove_node(stranger), Error);  // not this graph's: refused, nothing freed
  CHECK_THROWS_AS(g.add_node("Neg", {x}, {"f"}, "", "f", stranger), Error);
  CHECK(node_names(g) == std::vector<std::string>{"a", "c", "b", "last", "e"});
}

TEST_CASE("prune_values keeps a value that a second node still outputs after its producer went") {
  // Found by fuzz/convert.cpp: two nodes output "v" (an SSA violation convert does not refuse);
  // removing the first left the value without a producer, prune_values freed it, and the second
  // node's output pointed at freed memory.
  auto m = empty_model();
  Graph& g = *m->graph;
  Value* x = g.add_input("x", float_type()).value;
  Node* first = g.add_node("Relu", {x}, {"v"}, "", "first");
  Node* second = g.add_node("Neg", {x}, {"v"}, "", "second");
  g.add_output(g.add_node("Abs", {x}, {"y"})->output(0), float_type());
  g.remove_node(first);
  g.prune_values();
  REQUIRE(g.find("v") != nullptr);
  CHECK(second->output(0) == g.find("v"));
  CHECK(ir::NameGenerator(*m).fresh("v") != "v");  // reads every node's outputs: no use after free
}

TEST_CASE("for_each_graph visits every nested subgraph once, parents first") {
  auto m = empty_model();
  Graph& g = *m->graph;
  Value* cond = g.add_input("cond", ir::TypeInfo::tensor(ir::DataType::kBool)).value;
  Node* branch = g.add_node("If", {cond}, {"o"}, "", "if");
  Graph* then_g = add_subgraph(branch, "then_branch", "then");
  Graph* else_g = add_subgraph(branch, "else_branch", "else");
  Node* loop = then_g->add_node("Loop", {}, {"l"}, "", "loop");
  Graph* body = add_subgraph(loop, "body", "body");
  Node* deep_if = body->add_node("If", {body->resolve("cond")}, {"di"}, "", "deep_if");
  Graph* deep = add_subgraph(deep_if, "then_branch", "deep");
  Node* multi = else_g->add_node("Custom", {}, {"mm"}, "custom", "multi");
  ir::Attribute list;
  list.name = "branches";
  list.type = static_cast<int32_t>(ir::AttrType::kGraphs);
  for (int i = 0; i < 2; ++i) {
    list.graphs.push_back(std::make_unique<Graph>(else_g));
    list.graphs.back()->name = "alt" + std::to_string(i);
  }
  Graph* alt0 = list.graphs[0].get();
  Graph* alt1 = list.graphs[1].get();
  multi->set_attr(std::move(list));

  std::vector<Graph*> visited;
  ir::for_each_graph(g, [&](Graph& sub) { visited.push_back(&sub); });
  const std::set<Graph*> want{&g, then_g, else_g, body, deep, alt0, alt1};
  CHECK(visited.size() == want.size());
  CHECK(std::set<Graph*>(visited.begin(), visited.end()) == want);
  REQUIRE_FALSE(visited.empty());
  CHECK(visited.front() == &g);
  std::map<Graph*, size_t> pos;
  for (size_t i = 0; i < visited.size(); ++i) pos[visited[i]] = i;
  for (Graph* sub : visited)
    if (sub->parent()) CHECK(pos.at(sub->parent()) < pos.at(sub));
  CHECK(deep->depth() == 3);

  // The model overload also walks function bodies.
  ir::Function f;
  f.name = "F";
  Graph* fbody = f.body.get();
  m->functions.push_back(std::move(f));
  size_t count = 0;
  bool saw_body = false;
  ir::for_each_graph(*m, [&](Graph& sub) {
    ++count;
    saw_body = saw_body || &sub == fbody;
  });
  CHECK(count == want.size() + 1);
  CHECK(saw_body);
}

TEST_CASE("a subgraph resolves outer-scope names to the parent's values") {
  SUBCASE("built with the API") {
    auto m = empty_model();
    Graph& g = *m->graph;
    Value* x = g.add_input("x", float_type()).value;
    Graph sub(&g);
    Graph subsub(&sub);
    CHECK(sub.find("x") == nullptr);
    CHECK(sub.lookup("x") == x);
    CHECK(subsub.lookup("x") == x);
    CHECK(sub.resolve("x") == x);
    CHECK(sub.find("x") == nullptr);  // resolve did not create a local copy
    Value* fresh = sub.resolve("nowhere");
    CHECK(fresh->graph() == &sub);
    CHECK(fresh->is_undefined());
    CHECK(g.find("nowhere") == nullptr);
    // A local definition shadows the outer one.
    Value* local = sub.add_input("x", float_type()).value;
    CHECK(local != x);
    CHECK(sub.lookup("x") == local);
    CHECK(subsub.lookup("x") == local);
    CHECK(g.lookup("x") == x);
  }
  SUBCASE("loaded from a file") {
    onnx::ModelProto p;
    p.set_ir_version(8);
    p.add_opset_import()->set_version(17);
    onnx::GraphProto* pg = p.mutable_graph();
    pg->set_name("main");
    for (const char* in : {"x", "cond"}) pg->add_input()->set_name(in);
    auto* node = pg->add_node();
    node->set_op_type("If");
    node->set_name("if");
    node->add_input("cond");
    node->add_output("y");
    auto* attr = node->add_attribute();
    attr->set_name("then_branch");
    attr->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* then_g = attr->mutable_g();
    then_g->set_name("then");
    auto* inner = then_g->add_node();
    inner->set_op_type("If");
    inner->set_name("inner_if");
    inner->add_input("cond");
    inner->add_output("t");
    auto* inner_attr = inner->add_attribute();
    inner_attr->set_name("then_branch");
    inner_attr->set_type(onnx::AttributeProto::GRAPH);
    auto* deep = inner_attr->mutable_g();
    deep->set_name("deep");
    auto* id = deep->add_node();
    id->set_op_type("Identity");
    id->set_name("deep_identity");
    id->add_input("x");
    id->add_output("dx");
    deep->add_output()->set_name("dx");
    then_g->add_output()->set_name("t");
    pg->add_output()->set_name("y");
    const std::string bytes = p.SerializeAsString();

    Model m = ir::parse_model(ir::Bytes::copy_of(bytes.data(), bytes.size()), "scoped", "");
    Graph& g = *m.graph;
    Value* x = g.find("x");
    Value* cond = g.find("cond");
    REQUIRE(x);
    REQUIRE(cond);
    Node* outer_if = g.nodes().at(0).get();
    Graph* then_ir = outer_if->subgraphs().at(0);
    CHECK(then_ir->parent() == &g);
    Node* inner_if = then_ir->nodes().at(0).get();
    CHECK(inner_if->input(0) == cond);
    Graph* deep_ir = inner_if->subgraphs().at(0);
    CHECK(deep_ir->parent() == then_ir);
    Node* deep_id = deep_ir->nodes().at(0).get();
    CHECK(deep_id->input(0) == x);
    CHECK(x->graph() == &g);
    CHECK(deep_ir->find("x") == nullptr);
    CHECK(deep_ir->lookup("x") == x);
    CHECK(count_uses(x, deep_id, 0) == 1);
    CHECK(count_uses(cond, inner_if, 0) == 1);
    const auto implicit = g.implicit_inputs(outer_if);
    CHECK(std::find(implicit.begin(), implicit.end(), x) != implicit.end());
    check_links(g);
  }
}

}  // TEST_SUITE

}  // namespace
}  // namespace onnxtool::graph_test
