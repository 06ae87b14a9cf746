// Unit tests of model surgery: extract_subgraph (ir/extract.h), edit_model and parse_dims
// (ir/edit.h), and their verification runs (verify/surgery.h).
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "ir/edit.h"
#include "ir/error.h"
#include "ir/extract.h"
#include "ir/model_io.h"
#include "tests/model_builder.h"
#include "verify/surgery.h"

namespace onnxtool::surgery_test {
namespace {

using testing::ModelBuilder;

/// x[N,3] -> Relu a -> Add(w) b -> Neg c -> Exp d (output); x * u -> e (output).
ModelBuilder chain_model() {
  ModelBuilder b(17);
  ir::Value* x = b.input("x", ir::DataType::kFloat, {std::string("N"), int64_t{3}});
  ir::Value* a = b.op("Relu", {x}, "a");
  ir::Value* s = b.op("Add", {a, b.weight("w", {3})}, "b");
  ir::Value* c = b.op("Neg", {s}, "c");
  b.output(b.op("Exp", {c}, "d"), ir::DataType::kFloat);
  b.output(b.op("Mul", {x, b.weight("u", {3})}, "e"), ir::DataType::kFloat);
  return b;
}

/// The message of the usage error `fn` throws ("" when it throws none).
template <class Fn>
std::string usage_error(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kUsage);
    return e.what();
  }
  return "";
}

ir::Bytes reparse_bytes(const ir::Model& m) {
  const std::string bytes = ir::serialize_model(m);
  return ir::Bytes::copy_of(bytes.data(), bytes.size());
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// Adds an If reading `x` from the outer scope in both branches: then Identity(x), else Neg(x).
ir::Node* add_if(ModelBuilder& b, ir::Value* cond, ir::Value* x) {
  ir::Node* n = b.g->add_node("If", {cond}, {"branch_out"}, "", "choose");
  for (const char* branch : {"then_branch", "else_branch"}) {
    ir::Attribute a;
    a.name = branch;
    a.type = static_cast<int32_t>(ir::AttrType::kGraph);
    a.g = std::make_unique<ir::Graph>(b.g);
    a.g->name = branch;
    const std::string out = std::string(branch) + "_out";
    ir::Node* inner = a.g->add_node(std::string(branch) == "then_branch" ? "Identity" : "Neg", {x}, {out});
    a.g->add_output(inner->output(0), ir::TypeInfo::tensor(ir::DataType::kFloat));
    n->set_attr(std::move(a));
  }
  return n;
}

}  // namespace

TEST_SUITE("surgery") {
  TEST_CASE("extract keeps the nodes between the cut and the initializers they read") {
    ModelBuilder b = chain_model();
    const ir::ExtractReport r = ir::extract_subgraph(b.m, {"a"}, {"c"});
    CHECK(r.nodes_before == 5);
    CHECK(r.nodes_after == 2);
    CHECK(r.initializers_before == 2);
    CHECK(r.initializers_after == 1);
    const ir::Graph& g = *b.g;
    REQUIRE(g.inputs.size() == 1);
    CHECK(g.inputs[0].value->name() == "a");
    REQUIRE(g.inputs[0].type);
    CHECK(g.inputs[0].type->to_string() == "float[N,3]");  // inferred from x through Relu
    REQUIRE(g.outputs.size() == 1);
    CHECK(g.outputs[0].value->name() == "c");
    CHECK(g.find("u") == nullptr);
    CHECK(g.find("w")->is_initializer());
    // The result survives a save and load, and runs to the original's values.
    ir::Model reloaded = ir::parse_model(reparse_bytes(b.m), "extracted", "");
    CHECK(reloaded.graph->nodes().size() == 2);
    ModelBuilder original = chain_model();
    verify::VerifyInputs in;
    in.feeds.random = true;
    const verify::SurgeryCheck check = verify::verify_extracted(original.m, reloaded, in, verify::kExactTolerance);
    REQUIRE(check.result.outputs.size() == 1);
    CHECK(check.result.ok());
    CHECK(check.result.outputs[0].diff.max_abs == 0);
  }

  TEST_CASE("extract refuses unknown names, unreachable outputs and inputs that do not cut") {
    ModelBuilder b = chain_model();
    CHECK(contains(usage_error([&] { ir::extract_subgraph(b.m, {"nope"}, {"c"}); }), "'nope' is no tensor of the model"));
    CHECK(contains(usage_error([&] { ir::extract_subgraph(b.m, {"b"}, {"e"}); }), "needs the graph input 'x'"));
    CHECK(contains(usage_error([&] { ir::extract_subgraph(b.m, {"x", "a"}, {"c"}); }), "'x' does not cut the graph"));
    CHECK(contains(usage_error([&] { ir::extract_subgraph(b.m, {"a", "a"}, {"c"}); }), "named twice"));
    CHECK(b.g->nodes().size() == 5);  // refusals leave the model alone
  }

  TEST_CASE("extract names the subgraph that holds a value") {
    ModelBuilder b(17);
    ir::Value* x = b.input("x", ir::DataType::kFloat, {int64_t{3}});
    ir::Value* cond = b.input("cond", ir::DataType::kBool, {});
    b.output(add_if(b, cond, x)->output(0), ir::DataType::kFloat);
    const std::string e = usage_error([&] { ir::extract_subgraph(b.m, {"x"}, {"then_branch_out"}); });
    CHECK(contains(e, "a tensor of the subgraph 'then_branch' of node 'choose' (If)"));
  }

  TEST_CASE("renaming an input renames its uses in subgraphs and refuses a clash") {
    ModelBuilder b(17);
    ir::Value* x = b.input("x", ir::DataType::kFloat, {int64_t{3}});
    ir::Value* cond = b.input("cond", ir::DataType::kBool, {});
    ir::Node* n = add_if(b, cond, x);
    b.output(n->output(0), ir::DataType::kFloat);
    ir::EditRequest clash;
    clash.rename_inputs = {{"x", "else_branch_out"}};  // a name inside a branch: it would shadow
    CHECK(contains(usage_error([&] { ir::edit_model(b.m, clash); }), "already a tensor name"));
    ir::EditRequest req;
    req.rename_inputs = {{"x", "pixels"}};
    req.rename_outputs = {{"branch_out", "score"}};
    CHECK(ir::edit_model(b.m, req).renamed == 2);
    ir::Model reloaded = ir::parse_model(reparse_bytes(b.m), "edited", "");
    const ir::Graph& g = *reloaded.graph;
    CHECK(g.inputs[0].value->name() == "pixels");
    CHECK(g.outputs[0].value->name() == "score");
    for (ir::Graph* sub : g.nodes()[0]->subgraphs()) CHECK(sub->nodes()[0]->input(0)->name() == "pixels");
    ir::EditRequest missing;
    missing.rename_inputs = {{"nope", "y"}};
    CHECK(contains(usage_error([&] { ir::edit_model(b.m, missing); }), "'nope' is not a graph input (inputs: pixels, cond)"));
  }

  TEST_CASE("a renamed model computes the same outputs") {
    ModelBuilder original = chain_model(), edited = chain_model();
    ir::EditRequest req;
    req.rename_inputs = {{"x", "features"}};
    req.rename_outputs = {{"d", "probability"}};
    req.set_metadata = {{"author", "me"}};
    ir::edit_model(edited.m, req);
    verify::VerifyInputs in;
    in.feeds.random = true;
    const verify::SurgeryCheck check =
        verify::verify_edited(original.m, edited.m, {{"x", "features"}}, in, verify::kExactTolerance);
    CHECK(check.result.outputs.size() == 2);
    CHECK(check.result.ok());
  }

  TEST_CASE("new input dims are re-inferred into stale declarations") {
    ModelBuilder b(17);
    ir::Value* x = b.input("x", ir::DataType::kFloat, {std::string("N"), int64_t{3}});
    ir::Value* y = b.op("Relu", {x}, "y");
    ir::ValueInfo stale;
    stale.value = y;
    stale.type = ir::TypeInfo::tensor(ir::DataType::kFloat, testing::parse_shape("N,3"));
    b.g->value_info.push_back(stale);
    b.g->add_output(b.op("Neg", {y}, "z"), ir::TypeInfo::tensor(ir::DataType::kFloat, testing::parse_shape("N,3")));
    ir::EditRequest req;
    req.input_shapes = {{"x", ir::parse_dims("x", "4,3")}};
    const ir::EditReport r = ir::edit_model(b.m, req);
    CHECK(r.shapes_set == 1);
    CHECK(r.declarations_updated == 2);
    CHECK(b.g->inputs[0].type->to_string() == "float[4,3]");
    CHECK(b.g->value_info[0].type->to_string() == "float[4,3]");
    CHECK(b.g->outputs[0].type->to_string() == "float[4,3]");
    // And back to a free batch.
    req.input_shapes = {{"x", ir::parse_dims("x", "batch,3")}};
    ir::edit_model(b.m, req);
    CHECK(b.g->outputs[0].type->to_string() == "float[batch,3]");
    // Another rank, where the nodes take it, mends a stale declaration.
    req.input_shapes = {{"x", ir::parse_dims("x", "4,3,1")}};
    ir::edit_model(b.m, req);
    CHECK(b.g->inputs[0].type->to_string() == "float[4,3,1]");
    CHECK(b.g->outputs[0].type->to_string() == "float[4,3,1]");
  }

  TEST_CASE("a fixed dim a Reshape target contradicts is refused") {
    ModelBuilder b(17);
    ir::Value* x = b.input("x", ir::DataType::kFloat, {std::string("N"), int64_t{6}});
    b.output(b.op("Reshape", {x, b.ints("target", {2, 3})}, "r"), ir::DataType::kFloat);
    ir::EditRequest req;
    req.input_shapes = {{"x", ir::parse_dims("x", "4,6")}};
    CHECK(contains(usage_error([&] { ir::edit_model(b.m, req); }), "the model contradicts the new shape"));
    req.input_shapes = {{"x", ir::parse_dims("x", "12")}};  // another rank, of 12 elements
    CHECK(contains(usage_error([&] { ir::edit_model(b.m, req); }), "the model contradicts the new shape"));
  }

  TEST_CASE("dims parse as sizes, symbols or ?") {
    const std::vector<ir::Dim> d = ir::parse_dims("s", "N,3,?,h_1");
    REQUIRE(d.size() == 4);
    CHECK(d[0].param == "N");
    CHECK(d[1].value == 3);
    CHECK(d[2].kind == ir::Dim::Kind::kUnknown);
    CHECK(d[3].param == "h_1");
    CHECK(contains(usage_error([] { ir::parse_dims("s", "1,,3"); }), "dim 2 is empty"));
    CHECK(contains(usage_error([] { ir::parse_dims("s", "-1,3"); }), "neither a size nor a symbol"));
    CHECK(contains(usage_error([] { ir::parse_dims("s", "3x"); }), "not a number"));
  }

  TEST_CASE("metadata is set, replaced and removed") {
    ModelBuilder b = chain_model();
    ir::EditRequest req;
    req.set_metadata = {{"k", "1"}, {"k", "2"}, {"other", "x"}};
    req.remove_metadata = {"other"};
    req.producer_name = "me";
    ir::edit_model(b.m, req);
    REQUIRE(b.m.metadata_props.size() == 1);
    CHECK(b.m.metadata_props[0].value == "2");
    CHECK(b.m.producer_name == "me");
    ir::EditRequest gone;
    gone.remove_metadata = {"absent"};
    CHECK(contains(usage_error([&] { ir::edit_model(b.m, gone); }), "no such key (keys: k)"));
  }
}

}  // namespace onnxtool::surgery_test
