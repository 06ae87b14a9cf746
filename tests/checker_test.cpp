// The checker's mutation suite: each case takes a valid model, applies one defect (through the
// IR, or through libprotobuf's ModelProto where the IR cannot express it), and asserts that
// check_file reports the expected rule as an error naming the culprit, while the unmutated model
// has no error. A companion case runs every mutation again, prints the detection count and asks
// the reference onnx.checker (python3-onnx) for a second opinion on the same files.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "checker/checker.h"
#include "ir/error.h"
#include "ir/model_io.h"
#include "onnx.pb.h"
#include "tests/test_data.h"

namespace onnxtool::checker_test {
namespace {

namespace fs = std::filesystem;
using ir::Attribute;
using ir::AttrType;
using ir::DataType;
using ir::Dim;
using ir::Graph;
using ir::Model;
using ir::Node;
using ir::Shape;
using ir::TypeInfo;
using ir::Value;

// ------------------------------------------------------------------ files and scratch space

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE_MESSAGE(out.good(), "cannot write " << path.string());
}

/// A fresh directory under the system temp dir, removed when the object goes away.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name)
      : path_(fs::temp_directory_path() / ("onnxtool_checker_test_" + std::to_string(::getpid())) / name) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    if (std::getenv("ONNXTOOL_CHECKER_TEST_KEEP")) return;  // for a look at the files afterwards
    std::error_code ec;
    fs::remove_all(path_, ec);
    fs::remove(path_.parent_path(), ec);  // only succeeds once empty
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// ------------------------------------------------------------------ valid models to start from

/// A valid model: its bytes, where it comes from, and side files (external data) that live next
/// to it. Empty bytes mean the data is not installed: the mutation is skipped.
struct Base {
  std::string label;
  std::string bytes;
  std::map<std::string, std::string> side_files;
};

onnx::ModelProto parse_proto(const std::string& bytes) {
  onnx::ModelProto p;
  REQUIRE_MESSAGE(p.ParseFromString(bytes), "libprotobuf cannot parse the model");
  return p;
}

Model parse_ir(const std::string& bytes) {
  return ir::parse_model(ir::Bytes::copy_of(bytes.data(), bytes.size()), "base", "");
}

Base from_file(std::string label, const fs::path& path) {
  Base b;
  b.label = std::move(label);
  if (fs::exists(path)) b.bytes = read_bytes(path);
  return b;
}

Base from_model(std::string label, const Model& m) {
  return Base{std::move(label), ir::serialize_model(m), {}};
}

/// Rewrites ir_version and the default-domain opset so that onnx 1.12 (IR <= 8, opset <= 17) can
/// give its opinion on the model and its mutants.
Base for_onnx_1_12(Base b, int64_t opset) {
  if (b.bytes.empty()) return b;
  onnx::ModelProto p = parse_proto(b.bytes);
  p.set_ir_version(8);
  for (auto& o : *p.mutable_opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") o.set_version(opset);
  b.bytes = p.SerializeAsString();
  b.label += " (IR 8, opset " + std::to_string(opset) + ")";
  return b;
}

/// testdata/tiny_cnn.onnx (Conv -> Relu -> MaxPool -> Flatten -> Gemm -> Softmax), as shipped
/// (IR 10, opset 21) or rewritten to IR 8 / opset 17.
Base tiny_cnn_as_shipped() {
  return from_file("tiny_cnn.onnx", testing::source_dir() / "testdata/tiny_cnn.onnx");
}
Base tiny_cnn() { return for_onnx_1_12(tiny_cnn_as_shipped(), 17); }
/// testdata/tiny_if.onnx (If whose branches read x and scale from the outer scope), at opset 16.
Base tiny_if() {
  return for_onnx_1_12(from_file("tiny_if.onnx", testing::source_dir() / "testdata/tiny_if.onnx"), 16);
}

Base backend(const std::string& test) {
  return from_file("backend " + test, testing::backend_data() / "node" / test / "model.onnx");
}

Base real(const std::string& file) { return from_file(file, testing::cache_dir() / "models" / file); }
Base paddle_det() { return real("ch_PP-OCRv4_det_infer.onnx"); }
Base paddle_rec() { return real("ch_PP-OCRv4_rec_infer.onnx"); }
Base paddle_cls() { return real("ch_ppocr_mobile_v2.0_cls_infer.onnx"); }
Base silero_v5() { return real("silero_vad_v5.onnx"); }
Base silero_legacy() { return real("silero_vad_legacy.onnx"); }

// Models built in code with the IR API, at IR 8 and opsets onnx 1.12 knows.

Shape static_shape(const std::vector<int64_t>& dims) {
  Shape s;
  for (int64_t d : dims) s.dims.push_back(Dim::of(d));
  return s;
}

TypeInfo tensor_type(DataType type, const std::vector<int64_t>& dims) {
  return TypeInfo::tensor(type, static_shape(dims));
}

Model new_model(int64_t opset) {
  Model m;
  m.ir_version = 8;
  m.set_opset_version("", opset);
  m.producer_name = "checker_test";
  m.graph = std::make_unique<Graph>();
  m.graph->name = "built";
  return m;
}

Value* add_int64_initializer(Graph& g, const std::string& name, const std::vector<int64_t>& dims,
                             const std::vector<int64_t>& data) {
  return g.add_initializer(ir::make_tensor(name, DataType::kInt64, dims, data.data(), data.size() * 8));
}

Value* add_float_initializer(Graph& g, const std::string& name, const std::vector<int64_t>& dims,
                             const std::vector<float>& data) {
  return g.add_initializer(ir::make_tensor(name, DataType::kFloat, dims, data.data(), data.size() * 4));
}

/// y = op(x), x and y of `type` and shape [2,3]; the node is named "n0".
Base unary_model(const std::string& op, DataType type, int64_t opset) {
  Model m = new_model(opset);
  Graph& g = *m.graph;
  Value* x = g.add_input("x", tensor_type(type, {2, 3})).value;
  Node* n = g.add_node(op, {x}, {"y"}, "", "n0");
  g.add_output(n->output(0), tensor_type(type, {2, 3}));
  return from_model(
      op + " on " + std::string(ir::data_type_name(type)) + " at opset " + std::to_string(opset), m);
}

/// y = op(a, b) with declared input and output shapes; the node is named "n0".
Base binary_model(const std::string& op, int64_t opset, const std::vector<int64_t>& a_dims,
                  const std::vector<int64_t>& b_dims, const std::vector<int64_t>& y_dims) {
  Model m = new_model(opset);
  Graph& g = *m.graph;
  Value* a = g.add_input("a", tensor_type(DataType::kFloat, a_dims)).value;
  Value* b = g.add_input("b", tensor_type(DataType::kFloat, b_dims)).value;
  Node* n = g.add_node(op, {a, b}, {"y"}, "", "n0");
  g.add_output(n->output(0), tensor_type(DataType::kFloat, y_dims));
  return from_model(op + " of two inputs at opset " + std::to_string(opset), m);
}

/// y = op(a, b), a and b of `type` and shape [2,3], y of `out` (bool for a comparison); the node
/// is named "n0".
Base typed_binary_model(const std::string& op, DataType type, DataType out, int64_t opset) {
  Model m = new_model(opset);
  Graph& g = *m.graph;
  Value* a = g.add_input("a", tensor_type(type, {2, 3})).value;
  Value* b = g.add_input("b", tensor_type(type, {2, 3})).value;
  Node* n = g.add_node(op, {a, b}, {"y"}, "", "n0");
  g.add_output(n->output(0), tensor_type(out, {2, 3}));
  return from_model(op + " of two " + std::string(ir::data_type_name(type)) + " inputs at opset " +
                        std::to_string(opset), m);
}

/// y = Gemm(a[2,3], b[3,4], c[4]) at opset 7 (C broadcast onto [2,4]); the node is named "n0".
Base gemm_model() {
  Model m = new_model(7);
  Graph& g = *m.graph;
  Value* a = g.add_input("a", tensor_type(DataType::kFloat, {2, 3})).value;
  Value* b = g.add_input("b", tensor_type(DataType::kFloat, {3, 4})).value;
  Value* c = g.add_input("c", tensor_type(DataType::kFloat, {4})).value;
  Node* n = g.add_node("Gemm", {a, b, c}, {"y"}, "", "n0");
  g.add_output(n->output(0), tensor_type(DataType::kFloat, {2, 4}));
  return from_model("Gemm with C [4] at opset 7", m);
}

/// y = Concat(a[2,3], b[2,3], axis 0).
Base concat_model() {
  Model m = new_model(17);
  Graph& g = *m.graph;
  Value* a = g.add_input("a", tensor_type(DataType::kFloat, {2, 3})).value;
  Value* b = g.add_input("b", tensor_type(DataType::kFloat, {2, 3})).value;
  Node* n = g.add_node("Concat", {a, b}, {"y"}, "", "concat");
  n->set_attr(Attribute::make_int("axis", 0));
  g.add_output(n->output(0), tensor_type(DataType::kFloat, {4, 3}));
  return from_model("Concat axis 0", m);
}

/// y = Reshape(x[2,3], shape = [3,2]).
Base reshape_model() {
  Model m = new_model(17);
  Graph& g = *m.graph;
  Value* x = g.add_input("x", tensor_type(DataType::kFloat, {2, 3})).value;
  Value* shape = add_int64_initializer(g, "shape", {2}, {3, 2});
  Node* n = g.add_node("Reshape", {x, shape}, {"y"}, "", "reshape");
  g.add_output(n->output(0), tensor_type(DataType::kFloat, {3, 2}));
  return from_model("Reshape [2,3] -> [3,2]", m);
}

/// y = Transpose(x[2,3], perm = [1,0]).
Base transpose_model() {
  Model m = new_model(17);
  Graph& g = *m.graph;
  Value* x = g.add_input("x", tensor_type(DataType::kFloat, {2, 3})).value;
  Node* n = g.add_node("Transpose", {x}, {"y"}, "", "transpose");
  n->set_attr(Attribute::make_ints("perm", {1, 0}));
  g.add_output(n->output(0), tensor_type(DataType::kFloat, {3, 2}));
  return from_model("Transpose [2,3]", m);
}

/// y = Gather(data[2,3], indices = [0,2], axis 1).
Base gather_model() {
  Model m = new_model(17);
  Graph& g = *m.graph;
  Value* data = g.add_input("data", tensor_type(DataType::kFloat, {2, 3})).value;
  Value* indices = add_int64_initializer(g, "indices", {2}, {0, 2});
  Node* n = g.add_node("Gather", {data, indices}, {"y"}, "", "gather");
  n->set_attr(Attribute::make_int("axis", 1));
  g.add_output(n->output(0), tensor_type(DataType::kFloat, {2, 2}));
  return from_model("Gather axis 1", m);
}

/// (values, indices) = TopK(x[5], k = [2]).
Base topk_model() {
  Model m = new_model(17);
  Graph& g = *m.graph;
  Value* x = g.add_input("x", tensor_type(DataType::kFloat, {5})).value;
  Value* k = add_int64_initializer(g, "k", {1}, {2});
  Node* n = g.add_node("TopK", {x, k}, {"values", "indices"}, "", "topk");
  g.add_output(n->output(0), tensor_type(DataType::kFloat, {2}));
  g.add_output(n->output(1), tensor_type(DataType::kInt64, {2}));
  return from_model("TopK", m);
}

/// y = QuantizeLinear(x[4], x_scale = 0.5, x_zero_point = 0 (uint8)) at opset 13.
Base quantize_model() {
  Model m = new_model(13);
  Graph& g = *m.graph;
  Value* x = g.add_input("x", tensor_type(DataType::kFloat, {4})).value;
  Value* scale = add_float_initializer(g, "x_scale", {}, {0.5f});
  const uint8_t zero = 0;
  Value* zp = g.add_initializer(ir::make_tensor("x_zero_point", DataType::kUInt8, {}, &zero, 1));
  Node* n = g.add_node("QuantizeLinear", {x, scale, zp}, {"y"}, "", "quantize");
  g.add_output(n->output(0), tensor_type(DataType::kUInt8, {4}));
  return from_model("QuantizeLinear", m);
}

/// y = local.Square(x), a model-local function Square(X) -> Y = Mul(X, X).
Base function_model() {
  Model m = new_model(17);
  m.set_opset_version("local", 1);
  ir::Function f;
  f.name = "Square";
  f.domain = "local";
  ir::OpsetId onnx_opset;
  onnx_opset.version = 17;
  f.opset_import.push_back(onnx_opset);
  Graph& body = *f.body;
  Value* x_formal = body.add_input("X", std::nullopt).value;
  Node* mul = body.add_node("Mul", {x_formal, x_formal}, {"Y"}, "", "square_mul");
  body.add_output(mul->output(0), std::nullopt);
  m.functions.push_back(std::move(f));
  Graph& g = *m.graph;
  Value* x = g.add_input("x", tensor_type(DataType::kFloat, {2})).value;
  Node* call = g.add_node("Square", {x}, {"y"}, "local", "call_square");
  g.add_output(call->output(0), tensor_type(DataType::kFloat, {2}));
  return from_model("model-local function Square", m);
}

/// y = Identity(x) beside sp, an (unused) sparse initializer of dense shape [3,4] with values at
/// flat indices 1 and 5. Unused, because onnx.checker types a sparse initializer as
/// sparse_tensor, which the standard ops do not accept.
Base sparse_model() {
  Model m = new_model(17);
  Graph& g = *m.graph;
  const std::vector<float> values = {1.5f, -2.0f};
  const std::vector<int64_t> indices = {1, 5};
  ir::SparseTensor s;
  s.values = ir::make_tensor("sp", DataType::kFloat, {2}, values.data(), 8);
  s.indices = ir::make_tensor("sp_indices", DataType::kInt64, {2}, indices.data(), 16);
  s.dims = {3, 4};
  g.add_sparse_initializer(std::move(s));
  Value* x = g.add_input("x", tensor_type(DataType::kFloat, {2})).value;
  Node* n = g.add_node("Identity", {x}, {"y"}, "", "identity");
  g.add_output(n->output(0), tensor_type(DataType::kFloat, {2}));
  return from_model("sparse initializer", m);
}

/// An edit of sparse_model(): its two indices replaced, stored as `type`.
template <typename T>
std::function<void(Model&)> sparse_indices(DataType type, std::vector<T> indices) {
  return [type, indices](Model& m) {
    m.graph->sparse_initializers[0].indices =
        ir::make_tensor("sp_indices", type, {2}, indices.data(), indices.size() * sizeof(T));
  };
}

/// y = x + W where W[2,3] lives in the external file weights.bin (offset 0, 24 bytes).
Base external_data_model() {
  Model m = new_model(17);
  Graph& g = *m.graph;
  Value* x = g.add_input("x", tensor_type(DataType::kFloat, {2, 3})).value;
  Value* w = add_float_initializer(g, "W", {2, 3}, {1, 2, 3, 4, 5, 6});
  Node* n = g.add_node("Add", {x, w}, {"y"}, "", "add");
  g.add_output(n->output(0), tensor_type(DataType::kFloat, {2, 3}));
  Base b = from_model("external data", m);
  onnx::ModelProto p = parse_proto(b.bytes);
  onnx::TensorProto& t = *p.mutable_graph()->mutable_initializer(0);
  b.side_files["weights.bin"] = t.raw_data();
  t.clear_raw_data();
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"location", "weights.bin"}, {"offset", "0"}, {"length", "24"}}) {
    auto* entry = t.add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }
  b.bytes = p.SerializeAsString();
  return b;
}

/// x + W at IR 3 (opset 7), where the initializer W must also be a graph input.
Base ir3_model() {
  Model m = new_model(7);
  m.ir_version = 3;
  Graph& g = *m.graph;
  Value* x = g.add_input("x", tensor_type(DataType::kFloat, {2})).value;
  g.add_input("W", tensor_type(DataType::kFloat, {2}));
  Value* w = add_float_initializer(g, "W", {2}, {1, 2});
  Node* n = g.add_node("Add", {x, w}, {"y"}, "", "add");
  g.add_output(n->output(0), tensor_type(DataType::kFloat, {2}));
  return from_model("IR 3 model", m);
}

Attribute graph_attr(const std::string& name, std::unique_ptr<Graph> g) {
  Attribute a;
  a.name = name;
  a.type = static_cast<int32_t>(AttrType::kGraph);
  a.g = std::move(g);
  return a;
}

/// Fills `branch` with `levels` nested If nodes: each then branch holds the next If, each else
/// branch (and the innermost then branch) returns Identity(x) of the main graph's x. Every If
/// reads the main graph's cond. Linear in `levels` (only then branches nest).
void fill_nested_ifs(Graph& branch, int levels, const std::string& prefix) {
  if (levels == 0) {
    Node* n = branch.add_node("Identity", {branch.resolve("x")}, {prefix + "_y"}, "", prefix + "_id");
    branch.add_output(n->output(0), std::nullopt);
    return;
  }
  Node* n = branch.add_node("If", {branch.resolve("cond")}, {prefix + "_y"}, "", prefix + "_if");
  for (const char* side : {"then_branch", "else_branch"}) {
    auto sub = std::make_unique<Graph>(&branch);
    sub->name = prefix + "_" + side;
    const bool then_side = side[0] == 't';
    fill_nested_ifs(*sub, then_side ? levels - 1 : 0, prefix + (then_side ? "t" : "e"));
    n->set_attr(graph_attr(side, std::move(sub)));
  }
  branch.add_output(n->output(0), std::nullopt);
}

/// y = If(cond) nested four levels deep (each then branch again an If), at opset 16.
Base nested_if_model() {
  Model m = new_model(16);
  Graph& g = *m.graph;
  g.add_input("x", tensor_type(DataType::kFloat, {2}));
  g.add_input("cond", tensor_type(DataType::kBool, {}));
  fill_nested_ifs(g, 4, "l");
  g.outputs.back().type = tensor_type(DataType::kFloat, {2});
  g.outputs.back().value->type = tensor_type(DataType::kFloat, {2});
  return from_model("nested If", m);
}

// ------------------------------------------------------------------ IR and proto editing helpers

Node* node_named(Graph& g, const std::string& name) {
  for (const auto& n : g.nodes())
    if (n->name == name) return n.get();
  FAIL("no node named '" << name << "'");
  return nullptr;
}

Node* first_node_of(Graph& g, const std::string& op_type) {
  for (const auto& n : g.nodes())
    if (n->op_type == op_type) return n.get();
  FAIL("no " << op_type << " node");
  return nullptr;
}

ir::ValueInfo& input_info(Graph& g, const std::string& name) {
  for (auto& vi : g.inputs)
    if (vi.value->name() == name) return vi;
  FAIL("no graph input '" << name << "'");
  return g.inputs.front();
}

ir::ValueInfo& output_info(Graph& g, const std::string& name) {
  for (auto& vi : g.outputs)
    if (vi.value->name() == name) return vi;
  FAIL("no graph output '" << name << "'");
  return g.outputs.front();
}

/// Sets the declared type of a graph input (what the file says and what inference starts from).
void declare_input(Graph& g, const std::string& name, TypeInfo type) {
  ir::ValueInfo& vi = input_info(g, name);
  vi.type = type;
  vi.value->type = std::move(type);
}

Graph& subgraph(Node& n, const std::string& attr_name) {
  Attribute* a = n.attr(attr_name);
  REQUIRE_MESSAGE((a && a->g), "node has no graph attribute '" << attr_name << "'");
  return *a->g;
}

onnx::NodeProto& proto_node_named(onnx::GraphProto& g, const std::string& name) {
  for (auto& n : *g.mutable_node())
    if (n.name() == name) return n;
  FAIL("no node named '" << name << "'");
  return *g.mutable_node(0);
}

int proto_node_index(const onnx::GraphProto& g, const std::string& name) {
  for (int i = 0; i < g.node_size(); ++i)
    if (g.node(i).name() == name) return i;
  FAIL("no node named '" << name << "'");
  return -1;
}

onnx::TensorProto& proto_initializer(onnx::GraphProto& g, const std::string& name) {
  for (auto& t : *g.mutable_initializer())
    if (t.name() == name) return t;
  FAIL("no initializer '" << name << "'");
  return *g.mutable_initializer(0);
}

onnx::GraphProto& proto_subgraph(onnx::NodeProto& n, const std::string& attr_name) {
  for (auto& a : *n.mutable_attribute())
    if (a.name() == attr_name && a.has_g()) return *a.mutable_g();
  FAIL("no graph attribute '" << attr_name << "'");
  return *n.mutable_attribute(0)->mutable_g();
}

void set_external_entry(onnx::TensorProto& t, const std::string& key, const std::string& value) {
  for (auto& e : *t.mutable_external_data())
    if (e.key() == key) {
      e.set_value(value);
      return;
    }
  auto* e = t.add_external_data();
  e->set_key(key);
  e->set_value(value);
}

/// Replaces the single float value of a scalar initializer.
void set_scalar(Graph& g, const std::string& name, float value) {
  Value* v = g.find(name);
  REQUIRE_MESSAGE((v && v->initializer()), "no initializer '" << name << "'");
  *v->initializer() = ir::make_tensor(name, DataType::kFloat, {}, &value, 4);
}

// ------------------------------------------------------------------ one mutation

/// A mutation in progress: the base, the defect applied to it, and what the checker must report.
class Case {
 public:
  void from(Base base) {
    base_ = std::move(base);
    mutant_ = base_.bytes;
  }
  /// Applies an edit through the IR (the model is parsed from and serialized back to bytes).
  void ir(const std::function<void(Model&)>& edit) {
    if (skipped()) return;
    Model m = parse_ir(mutant_);
    edit(m);
    mutant_ = ir::serialize_model(m);
  }
  /// Applies an edit to the libprotobuf ModelProto, for what the IR cannot say.
  void proto(const std::function<void(onnx::ModelProto&)>& edit) {
    if (skipped()) return;
    onnx::ModelProto p = parse_proto(mutant_);
    edit(p);
    mutant_ = p.SerializeAsString();
  }
  /// The rule that must be reported as an error by a diagnostic naming every culprit (in its
  /// node, tensor or message fields; "#N" stands for node index N).
  void expect(std::string rule, std::vector<std::string> culprits) {
    rule_ = std::move(rule);
    culprits_ = std::move(culprits);
  }
  /// Adds a file next to the mutant only (the base's side files are next to both).
  void side_file(const std::string& name, std::string content) { extra_files_[name] = std::move(content); }
  /// Checks with CheckOptions::strict.
  void strict() { strict_ = true; }
  /// Why onnx.checker 1.12 accepts this defect, when it does (shown in the disagreement table).
  void onnx_note(std::string why) { onnx_note_ = std::move(why); }

  bool skipped() const { return base_.bytes.empty(); }
  const Base& base() const { return base_; }
  const std::string& mutant() const { return mutant_; }
  /// Every file next to the mutant: the base's side files and the mutation's own.
  std::map<std::string, std::string> mutant_files() const {
    std::map<std::string, std::string> files = base_.side_files;
    for (const auto& [name, content] : extra_files_) files[name] = content;
    return files;
  }
  const std::string& rule() const { return rule_; }
  const std::vector<std::string>& culprits() const { return culprits_; }
  bool is_strict() const { return strict_; }
  const std::string& note() const { return onnx_note_; }

 private:
  Base base_;
  std::string mutant_;
  std::map<std::string, std::string> extra_files_;
  std::string rule_;
  std::vector<std::string> culprits_;
  bool strict_ = false;
  std::string onnx_note_;
};

using MutationFn = void (*)(Case&);

/// What a mutation's test expects of the checker today.
enum class Expect {
  kDetected,      ///< reported now
  kShapePending,  ///< a shape rule whose shape function is still being written (may_fail)
  kCheckerGap,    ///< a known checker gap, reported for a fix (may_fail until then)
};

struct Mutation {
  const char* id;
  MutationFn build;
  Expect expect;
  bool may_fail() const { return expect != Expect::kDetected; }
};

/// Every mutation, in definition order. Filled by the MUTATION macros below (one list shared by
/// the per-mutation test cases and the summary case).
std::vector<Mutation>& mutations() {
  static std::vector<Mutation> list;
  return list;
}

bool register_mutation(const char* id, MutationFn build, Expect expect) {
  mutations().push_back({id, build, expect});
  return true;
}

/// What check_file said of one file.
struct Verdict {
  bool readable = true;  ///< false when check_file threw (the file is not a model at all)
  std::string thrown;
  size_t errors = 0;
  std::vector<ir::Diagnostic> diagnostics;
  bool rejected() const { return !readable || errors > 0; }
};

Verdict check_at(const fs::path& model, bool strict) {
  Verdict v;
  checker::CheckOptions options;
  options.strict = strict;
  try {
    checker::CheckResult r = checker::check_file(model.string(), options);
    v.errors =
        static_cast<size_t>(std::count_if(r.diagnostics.begin(), r.diagnostics.end(),
                                          [](const auto& d) { return d.severity == ir::Severity::kError; }));
    v.diagnostics = std::move(r.diagnostics);
  } catch (const Error& e) {
    v.readable = false;
    v.thrown = e.what();
  }
  return v;
}

bool names(const ir::Diagnostic& d, const std::string& culprit) {
  if (culprit.size() > 1 && culprit[0] == '#') return d.node_index == std::atol(culprit.c_str() + 1);
  return d.node == culprit || d.tensor == culprit || d.message.find(culprit) != std::string::npos;
}

/// The expected rule is reported as an error (rule_hit) by a diagnostic naming every culprit.
struct Detection {
  bool rule_hit = false;
  bool culprit_named = false;
};

Detection detect(const Verdict& v, const Case& c) {
  Detection out;
  for (const auto& d : v.diagnostics) {
    if (d.severity != ir::Severity::kError || d.rule != c.rule()) continue;
    out.rule_hit = true;
    bool all = true;
    for (const auto& culprit : c.culprits()) all = all && names(d, culprit);
    out.culprit_named = out.culprit_named || all;
  }
  return out;
}

std::string render(const Verdict& v) {
  if (!v.readable) return "  check_file threw: " + v.thrown + "\n";
  std::ostringstream out;
  size_t shown = 0;
  for (const auto& d : v.diagnostics) {
    if (++shown > 25) {
      out << "  ... " << v.diagnostics.size() - 25 << " more\n";
      break;
    }
    out << "  " << (d.severity == ir::Severity::kError ? "error " : "warning ") << d.rule << " [" << d.graph;
    if (d.node_index >= 0) out << " node #" << d.node_index << " '" << d.node << "' (" << d.op_type << ")";
    if (!d.tensor.empty()) out << " tensor '" << d.tensor << "'";
    out << "]: " << d.message << "\n";
  }
  if (v.diagnostics.empty()) out << "  (no diagnostics)\n";
  return out.str();
}

void write_model(const fs::path& dir, const std::string& bytes,
                 const std::map<std::string, std::string>& files) {
  write_bytes(dir / "model.onnx", bytes);
  for (const auto& [name, content] : files) write_bytes(dir / name, content);
}

/// Checks a base model once per process (several mutations share each base).
const Verdict& base_verdict(const Case& c, const fs::path& dir) {
  static std::map<std::tuple<std::string, size_t, bool>, Verdict> cache;
  const auto key = std::make_tuple(c.base().label, std::hash<std::string>{}(c.base().bytes), c.is_strict());
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  write_model(dir, c.base().bytes, c.base().side_files);
  return cache[key] = check_at(dir / "model.onnx", c.is_strict());
}

void run_mutation(const char* id, MutationFn build) {
  Case c;
  build(c);
  if (c.skipped()) {
    testing::skip_missing_data(std::string("mutation ") + id + ": its base model " + c.base().label);
    return;
  }
  REQUIRE_MESSAGE(!c.rule().empty(), id << " sets no expectation");
  ScratchDir dir(id);
  const Verdict& base = base_verdict(c, dir.path() / "base");
  CHECK_MESSAGE(base.errors == 0, id << ": the base " << c.base().label << " is not valid:\n"
                                     << render(base));
  CHECK_MESSAGE(base.readable, id << ": the base " << c.base().label << " cannot be read: " << base.thrown);
  write_model(dir.path() / "mutant", c.mutant(), c.mutant_files());
  const Verdict v = check_at(dir.path() / "mutant" / "model.onnx", c.is_strict());
  const Detection d = detect(v, c);
  std::string culprits;
  for (const auto& s : c.culprits()) culprits += (culprits.empty() ? "'" : ", '") + s + "'";
  if (std::getenv("ONNXTOOL_CHECKER_TEST_VERBOSE"))
    std::cout << id << " (" << c.base().label << "):\n" << render(v);
  CHECK_MESSAGE(d.rule_hit, id << ": expected an error " << c.rule() << "; the checker said:\n" << render(v));
  CHECK_MESSAGE(d.culprit_named, id << ": no " << c.rule() << " error names " << culprits
                                    << "; the checker said:\n"
                                    << render(v));
}

}  // namespace

// One mutation = one test case (and one entry of mutations() for the summary case). The macro
// declares the mutation's build function, registers it, defines the test case, then opens the
// function's body.
#define ONNXTOOL_MUTATION(id, decorators, expect)                                                       \
  void mutation_##id(Case& c);                                                                          \
  [[maybe_unused]] const bool mutation_registered_##id = register_mutation(#id, mutation_##id, expect); \
  TEST_CASE("mutation " #id decorators) { run_mutation(#id, mutation_##id); }                           \
  void mutation_##id(Case& c)
#define MUTATION(id) ONNXTOOL_MUTATION(id, , Expect::kDetected)
/// For shape rules whose shape function is still being written.
#define MUTATION_MAY_FAIL(id) ONNXTOOL_MUTATION(id, *doctest::may_fail(), Expect::kShapePending)
/// For defects the checker misses today (each reported with a suggested fix).
#define MUTATION_CHECKER_GAP(id) ONNXTOOL_MUTATION(id, *doctest::may_fail(), Expect::kCheckerGap)

TEST_SUITE("checker") {
  // ================================================================ model.*

  MUTATION(ir_version_missing) {
    c.from(tiny_cnn());
    c.proto([](onnx::ModelProto& p) { p.clear_ir_version(); });
    c.expect("model.ir-version", {"ir_version"});
  }

  MUTATION(ir_version_zero) {
    c.from(paddle_cls());
    c.proto([](onnx::ModelProto& p) { p.set_ir_version(0); });
    c.expect("model.ir-version", {"ir_version"});
  }

  MUTATION(ir_version_negative) {
    c.from(tiny_cnn());
    c.ir([](Model& m) { m.ir_version = -3; });
    c.expect("model.ir-version", {"ir_version -3"});
  }

  MUTATION(ir_version_too_new) {
    c.from(tiny_cnn_as_shipped());
    c.ir([](Model& m) { m.ir_version = checker::kMaxIrVersion + 1; });
    c.expect("model.ir-version", {std::to_string(checker::kMaxIrVersion + 1)});
  }

  MUTATION(opset_import_empty) {
    c.from(tiny_cnn());
    c.ir([](Model& m) { m.opset_import.clear(); });
    c.expect("model.opset-missing", {"opset_import"});
  }

  MUTATION(opset_domain_twice) {
    c.from(paddle_det());
    c.ir([](Model& m) { m.opset_import.push_back(m.opset_import.front()); });
    c.expect("model.opset-duplicate", {"ai.onnx"});
    c.onnx_note("onnx.checker 1.12 keeps the last import of a domain without complaint");
  }

  MUTATION(opset_domain_twice_by_alias) {
    c.from(tiny_cnn());
    c.ir([](Model& m) {
      ir::OpsetId alias;
      alias.domain = "ai.onnx";
      alias.version = 17;
      m.opset_import.push_back(alias);
    });
    c.expect("model.opset-duplicate", {"ai.onnx"});
    c.onnx_note("onnx.checker 1.12 keeps the last import of a domain without complaint");
  }

  MUTATION(opset_version_zero) {
    c.from(tiny_cnn());
    c.ir([](Model& m) { m.set_opset_version("", 0); });
    c.expect("model.opset-version", {"opset 0"});
  }

  MUTATION(opset_version_29) {
    c.from(silero_v5());
    c.ir([](Model& m) { m.set_opset_version("", 29); });
    c.expect("model.opset-version", {"opset 29"});
    c.onnx_note("onnx 1.12 knows opsets up to 17 and does not bound the imported version");
  }

  MUTATION(opset_ml_version_6) {
    c.from(silero_legacy());
    c.ir([](Model& m) { m.set_opset_version("ai.onnx.ml", 6); });
    c.expect("model.opset-version", {"ai.onnx.ml", "opset 6"});
    c.onnx_note("onnx 1.12 does not bound the imported ai.onnx.ml version (it knows up to 3)");
  }

  MUTATION(functions_need_ir_8) {
    c.from(function_model());
    c.ir([](Model& m) { m.ir_version = 7; });
    c.expect("model.ir-feature", {"functions"});
    c.onnx_note(
        "onnx.checker 1.12 only looks at model-local functions from IR 8 on, it does not "
        "reject them before");
  }

  MUTATION(sparse_initializers_need_ir_6) {
    c.from(sparse_model());
    c.ir([](Model& m) { m.ir_version = 5; });
    c.expect("model.ir-feature", {"sparse"});
    c.onnx_note("onnx.checker 1.12 does not tie sparse_initializer to IR >= 6");
  }

  MUTATION(domain_not_imported) {
    c.from(tiny_cnn());
    c.ir([](Model& m) { node_named(*m.graph, "relu1")->domain = "com.example"; });
    c.expect("model.domain-not-imported", {"relu1", "com.example"});
  }

  MUTATION(function_domain_not_imported) {
    c.from(function_model());
    c.ir([](Model& m) {
      auto& o = m.opset_import;
      o.erase(std::remove_if(o.begin(), o.end(), [](const ir::OpsetId& i) { return i.domain == "local"; }),
              o.end());
    });
    c.expect("model.domain-not-imported", {"call_square", "local"});
  }

  // ================================================================ node.*

  MUTATION(unknown_op) {
    c.from(tiny_cnn());
    c.ir([](Model& m) { node_named(*m.graph, "relu1")->op_type = "Rectify"; });
    c.expect("node.unknown-op", {"relu1", "Rectify"});
  }

  MUTATION(unknown_op_in_subgraph) {
    c.from(silero_v5());
    // Node #0 of the If's then branch (an unnamed Constant) becomes an op ONNX does not have.
    c.proto([](onnx::ModelProto& p) {
      onnx::GraphProto& then_g = proto_subgraph(proto_node_named(*p.mutable_graph(), "If_0"), "then_branch");
      then_g.mutable_node(0)->set_op_type("ConstantOfNothing");
    });
    c.expect("node.unknown-op", {"#0", "ConstantOfNothing"});
  }

  MUTATION(op_before_its_introduction) {
    c.from(unary_model("Relu", DataType::kFloat, 19));
    c.ir([](Model& m) { node_named(*m.graph, "n0")->op_type = "Gelu"; });
    c.expect("node.unknown-op", {"n0", "introduced at 20"});
  }

  MUTATION(deprecated_op) {
    c.from(backend("test_upsample_nearest"));  // Upsample at opset 9
    c.ir([](Model& m) { m.set_opset_version("", 10); });
    c.expect("node.unknown-op", {"#0", "deprecated"});
  }

  MUTATION(too_many_inputs) {
    c.from(tiny_cnn());
    c.ir([](Model& m) {
      Graph& g = *m.graph;
      node_named(g, "relu1")->append_input(g.find("conv1.bias"));
    });
    c.expect("node.input-count", {"relu1"});
  }

  MUTATION(too_few_inputs) {
    c.from(tiny_cnn());
    c.ir([](Model& m) {
      Node* conv = node_named(*m.graph, "conv1");
      conv->remove_input(2);
      conv->remove_input(1);
    });
    c.expect("node.input-count", {"conv1"});
  }

  MUTATION(too_many_outputs) {
    c.from(paddle_cls());
    c.ir([](Model& m) {
      Graph& g = *m.graph;
      g.add_node_output(node_named(g, "p2o.Softmax.0"), "softmax_extra");
    });
    c.expect("node.output-count", {"p2o.Softmax.0"});
  }

  MUTATION(too_few_outputs) {
    c.from(topk_model());
    c.proto([](onnx::ModelProto& p) {
      p.mutable_graph()->mutable_node(0)->mutable_output()->RemoveLast();
      p.mutable_graph()->mutable_output()->RemoveLast();
    });
    c.expect("node.output-count", {"topk"});
  }

  MUTATION(required_input_empty) {
    c.from(tiny_cnn());
    c.ir([](Model& m) { node_named(*m.graph, "conv1")->set_input(1, nullptr); });
    c.expect("node.input-missing", {"conv1", "W"});
  }

  MUTATION(unknown_attribute) {
    c.from(tiny_cnn());
    c.ir([](Model& m) { node_named(*m.graph, "relu1")->set_attr(Attribute::make_float("alpha", 0.1f)); });
    c.expect("node.attribute-unknown", {"relu1", "alpha"});
  }

  MUTATION(attribute_of_wrong_type) {
    c.from(paddle_det());
    c.ir([](Model& m) {
      node_named(*m.graph, "p2o.Conv.0")->set_attr(Attribute::make_floats("strides", {2.0f, 2.0f}));
    });
    c.expect("node.attribute-type", {"p2o.Conv.0", "strides"});
  }

  MUTATION(required_attribute_missing) {
    c.from(paddle_rec());
    std::string culprit;  // the first Cast's name, found while editing
    c.ir([&culprit](Model& m) {
      Node* cast = first_node_of(*m.graph, "Cast");
      culprit = cast->name;
      cast->remove_attr("to");
    });
    c.expect("node.attribute-missing", {culprit, "'to'"});
  }

  MUTATION(attribute_twice) {
    c.from(tiny_cnn());
    c.ir([](Model& m) {
      node_named(*m.graph, "conv1")->attributes.push_back(Attribute::make_ints("strides", {1, 1}));
    });
    c.expect("node.attribute-duplicate", {"conv1", "strides"});
  }

  MUTATION(attribute_without_type) {
    c.from(tiny_cnn());
    c.ir([](Model& m) { node_named(*m.graph, "softmax")->attr("axis")->type = 0; });
    c.expect("node.attribute-type", {"softmax", "axis", "no type"});
  }

  MUTATION(attribute_type_out_of_range) {
    c.from(tiny_cnn());
    c.ir([](Model& m) { node_named(*m.graph, "flatten")->attr("axis")->type = 99; });
    c.expect("node.attribute-type", {"flatten", "axis"});
  }

  MUTATION(attribute_without_name) {
    c.from(tiny_cnn());
    c.ir([](Model& m) { node_named(*m.graph, "softmax")->attributes.push_back(Attribute::make_int("", 1)); });
    c.expect("node.attribute-name", {"softmax"});
  }

  MUTATION(ref_attr_name_outside_function) {
    c.from(tiny_cnn());
    c.ir([](Model& m) { node_named(*m.graph, "softmax")->attr("axis")->ref_attr_name = "axis"; });
    c.expect("node.attribute-ref", {"softmax", "axis"});
    c.onnx_note("onnx.checker 1.12 does not check ref_attr_name outside functions");
  }

  MUTATION(op_type_empty) {
    c.from(tiny_cnn());
    c.ir([](Model& m) { node_named(*m.graph, "relu1")->op_type.clear(); });
    c.expect("node.op-type-empty", {"relu1"});
  }

  MUTATION(custom_domain_when_strict) {
    c.from(tiny_cnn());
    c.ir([](Model& m) {
      m.set_opset_version("com.example", 1);
      node_named(*m.graph, "relu1")->domain = "com.example";
    });
    c.strict();
    c.expect("node.custom-domain", {"relu1", "com.example"});
    c.onnx_note("onnx.checker skips nodes of domains it has no schemas for (a custom op is legal)");
  }

  MUTATION(microsoft_undocumented_op_when_strict) {
    c.from(tiny_cnn());
    c.ir([](Model& m) {
      m.set_opset_version("com.microsoft", 1);
      node_named(*m.graph, "relu1")->domain = "com.microsoft";
      node_named(*m.graph, "relu1")->op_type = "NotAContribOp";
    });
    c.strict();
    c.expect("node.undocumented-op", {"relu1", "NotAContribOp", "com.microsoft"});
    c.onnx_note("onnx.checker has no com.microsoft schemas and skips the domain");
  }

  MUTATION(microsoft_op_attribute_of_wrong_type) {
    c.from(tiny_cnn());
    c.ir([](Model& m) {
      m.set_opset_version("com.microsoft", 1);
      Node* n = node_named(*m.graph, "relu1");
      n->domain = "com.microsoft";
      n->op_type = "QuickGelu";
      n->attributes.push_back(Attribute::make_int("alpha", 2));
    });
    c.expect("node.attribute-type", {"relu1", "alpha", "float"});
    c.onnx_note("onnx.checker has no com.microsoft schemas and skips the domain");
  }

  MUTATION(microsoft_op_missing_required_attribute) {
    c.from(tiny_cnn());
    c.ir([](Model& m) {
      m.set_opset_version("com.microsoft", 1);
      Node* n = node_named(*m.graph, "relu1");
      n->domain = "com.microsoft";
      n->op_type = "Attention";  // num_heads is required
    });
    c.expect("node.attribute-missing", {"relu1", "num_heads"});
    c.onnx_note("onnx.checker has no com.microsoft schemas and skips the domain");
  }

  MUTATION(relu_on_int32_at_opset_13) {
    c.from(unary_model("Relu", DataType::kFloat, 13));
    c.ir([](Model& m) {
      declare_input(*m.graph, "x", tensor_type(DataType::kInt32, {2, 3}));
      output_info(*m.graph, "y").type = tensor_type(DataType::kInt32, {2, 3});
    });
    c.expect("node.type-constraint", {"n0", "x"});
  }

  MUTATION(add_float_and_double) {
    c.from(binary_model("Add", 17, {2, 3}, {2, 3}, {2, 3}));
    c.ir([](Model& m) { declare_input(*m.graph, "b", tensor_type(DataType::kDouble, {2, 3})); });
    c.expect("node.type-constraint", {"n0", "b"});
  }

  MUTATION(reshape_shape_not_int64) {
    c.from(reshape_model());
    c.ir([](Model& m) {
      const std::vector<float> dims = {3, 2};
      *m.graph->find("shape")->initializer() =
          ir::make_tensor("shape", DataType::kFloat, {2}, dims.data(), 8);
    });
    c.expect("node.type-constraint", {"reshape", "shape"});
  }

  MUTATION(if_condition_not_bool) {
    c.from(tiny_if());
    c.ir([](Model& m) { declare_input(*m.graph, "cond", tensor_type(DataType::kFloat, {})); });
    c.expect("node.type-constraint", {"select", "cond"});
  }

  // ================================================================ graph.*

  MUTATION(two_nodes_write_one_name) {
    c.from(paddle_det());
    c.proto([](onnx::ModelProto& p) {
      proto_node_named(*p.mutable_graph(), "p2o.Add.2").set_output(0, "p2o.Mul.1");
    });
    c.expect("graph.ssa", {"p2o.Mul.1", "p2o.Add.2"});
  }

  MUTATION(node_output_named_like_initializer) {
    c.from(tiny_cnn());
    c.ir([](Model& m) {
      Graph& g = *m.graph;
      g.add_node("Identity", {g.find("image")}, {"fc.bias"}, "", "shadow_bias", node_named(g, "conv1"));
    });
    c.expect("graph.ssa", {"fc.bias", "shadow_bias"});
  }

  MUTATION(graph_input_twice) {
    c.from(tiny_cnn());
    c.ir([](Model& m) { m.graph->add_input("image", m.graph->inputs.front().type); });
    c.expect("graph.duplicate-input", {"image"});
  }

  MUTATION(initializer_twice) {
    c.from(tiny_cnn());
    c.ir([](Model& m) {
      Graph& g = *m.graph;
      g.add_initializer(*g.find("conv1.bias")->initializer());
    });
    c.expect("graph.duplicate-initializer", {"conv1.bias"});
  }

  MUTATION(undefined_value) {
    c.from(paddle_cls());
    c.ir([](Model& m) {
      Graph& g = *m.graph;
      node_named(g, "p2o.MatMul.0")->set_input(1, g.value("fc_0.w_missing"));
    });
    c.expect("graph.undefined-value", {"p2o.MatMul.0", "fc_0.w_missing"});
  }

  MUTATION(undefined_value_in_subgraph) {
    c.from(tiny_if());
    c.ir([](Model& m) {
      Graph& then_g = subgraph(*node_named(*m.graph, "select"), "then_branch");
      Node* mul = first_node_of(then_g, "Mul");
      mul->set_input(1, then_g.value("scale_typo"));
    });
    c.expect("graph.undefined-value", {"then_branch_Mul", "scale_typo"});
  }

  MUTATION(graph_output_not_produced) {
    c.from(tiny_cnn());
    c.ir([](Model& m) { m.graph->add_output(m.graph->value("ghost"), tensor_type(DataType::kFloat, {1})); });
    c.expect("graph.output-undefined", {"ghost"});
    c.onnx_note("onnx.checker 1.12 checks node inputs but not that graph outputs are defined");
  }

  MUTATION(nodes_out_of_order) {
    c.from(paddle_det());
    // p2o.Conv.0 produces conv2d_450.tmp_0 for p2o.BatchNormalization.0, the node after it.
    c.proto([](onnx::ModelProto& p) {
      onnx::GraphProto& g = *p.mutable_graph();
      const int conv = proto_node_index(g, "p2o.Conv.0");
      g.mutable_node()->SwapElements(conv, proto_node_index(g, "p2o.BatchNormalization.0"));
    });
    c.expect("graph.topological-order", {"p2o.BatchNormalization.0", "conv2d_450.tmp_0", "p2o.Conv.0"});
  }

  MUTATION(nodes_out_of_order_in_subgraph) {
    c.from(silero_v5());
    // In the then branch, move the last node (which consumes earlier results) to the front.
    c.proto([](onnx::ModelProto& p) {
      onnx::GraphProto& then_g = proto_subgraph(proto_node_named(*p.mutable_graph(), "If_0"), "then_branch");
      for (int i = then_g.node_size() - 1; i > 0; --i) then_g.mutable_node()->SwapElements(i, i - 1);
    });
    c.expect("graph.topological-order", {"#0"});
  }

  MUTATION(cycle) {
    c.from(tiny_cnn());
    // conv1 now reads the Softmax output, which depends on conv1.
    c.ir([](Model& m) {
      Graph& g = *m.graph;
      node_named(g, "conv1")->set_input(0, g.find("probs"));
    });
    c.expect("graph.cycle", {"conv1"});
  }

  MUTATION(subgraph_shadows_outer_name) {
    c.from(tiny_if());
    c.ir([](Model& m) {
      Graph& then_g = subgraph(*node_named(*m.graph, "select"), "then_branch");
      then_g.rename(then_g.find("then_y"), "cond");
    });
    c.expect("graph.shadowing", {"cond"});
  }

  MUTATION(if_branches_output_counts_differ) {
    c.from(tiny_if());
    c.ir([](Model& m) {
      Graph& else_g = subgraph(*node_named(*m.graph, "select"), "else_branch");
      Node* extra = else_g.add_node("Identity", {else_g.find("else_y")}, {"else_extra"}, "", "else_extra");
      else_g.add_output(extra->output(0), tensor_type(DataType::kFloat, {3}));
    });
    c.expect("graph.subgraph-arity", {"select"});
  }

  MUTATION(loop_body_arity) {
    c.from(backend("test_loop11"));
    c.ir([](Model& m) {
      Graph& body = subgraph(*first_node_of(*m.graph, "Loop"), "body");
      body.add_input("unexpected_state", tensor_type(DataType::kFloat, {1}));
    });
    c.expect("graph.subgraph-arity", {"#0", "Loop body"});
  }

  MUTATION(subgraph_input_is_initializer) {
    c.from(backend("test_loop11"));
    c.ir([](Model& m) {
      Graph& body = subgraph(*first_node_of(*m.graph, "Loop"), "body");
      add_float_initializer(body, "y_in", {1}, {0.0f});
    });
    c.expect("graph.initializer-input", {"y_in"});
  }

  MUTATION(initializer_not_input_before_ir4) {
    c.from(ir3_model());
    c.ir([](Model& m) { m.graph->remove_input(1); });
    c.expect("graph.initializer-not-input", {"W"});
  }

  MUTATION(graph_input_without_name) {
    c.from(tiny_cnn());
    c.ir([](Model& m) { m.graph->add_input("", tensor_type(DataType::kFloat, {1})); });
    c.expect("graph.empty-name", {"input"});
  }

  MUTATION(initializer_without_name) {
    c.from(tiny_cnn());
    c.ir([](Model& m) { add_float_initializer(*m.graph, "", {1}, {1.0f}); });
    c.expect("graph.empty-name", {"an initializer"});
  }

  // ================================================================ value.*

  MUTATION(graph_input_without_type) {
    c.from(tiny_cnn());
    c.ir([](Model& m) {
      ir::ValueInfo& vi = input_info(*m.graph, "image");
      vi.type.reset();
      vi.value->type = TypeInfo{};
    });
    c.expect("value.type-missing", {"image"});
  }

  MUTATION(graph_output_without_type) {
    c.from(paddle_cls());
    c.ir([](Model& m) { output_info(*m.graph, "softmax_0.tmp_0").type.reset(); });
    c.expect("value.type-missing", {"softmax_0.tmp_0"});
  }

  MUTATION(value_info_invalid_element_type) {
    c.from(tiny_cnn());
    c.ir([](Model& m) {
      ir::ValueInfo vi;
      vi.value = m.graph->find("relu1_out");
      TypeInfo t;
      t.kind = TypeInfo::Kind::kTensor;
      t.elem_type = 99;
      vi.type = t;
      m.graph->value_info.push_back(std::move(vi));
    });
    c.expect("value.elem-type", {"relu1_out", "99"});
  }

  MUTATION(value_info_without_element_type) {
    c.from(tiny_cnn());
    c.ir([](Model& m) {
      ir::ValueInfo vi;
      vi.value = m.graph->find("pool1_out");
      TypeInfo t;
      t.kind = TypeInfo::Kind::kTensor;
      vi.type = t;
      m.graph->value_info.push_back(std::move(vi));
    });
    c.expect("value.elem-type", {"pool1_out"});
    c.onnx_note("onnx.checker 1.12 does not check value_info entries (only graph inputs and outputs)");
  }

  MUTATION(negative_dim_in_type) {
    c.from(tiny_cnn());
    c.ir([](Model& m) {
      TypeInfo t = *input_info(*m.graph, "image").type;
      t.shape->dims[2] = Dim::of(-32);
      declare_input(*m.graph, "image", t);
    });
    c.strict();  // a warning by default: read as a free dim, as onnxruntime does
    c.expect("value.negative-dim", {"image", "-32"});
    c.onnx_note("onnx.checker 1.12 does not check dim_value signs in types");
  }

  // ================================================================ tensor.*

  MUTATION(tensor_invalid_data_type) {
    c.from(tiny_cnn());
    c.proto(
        [](onnx::ModelProto& p) { proto_initializer(*p.mutable_graph(), "conv1.bias").set_data_type(99); });
    c.expect("tensor.data-type", {"conv1.bias", "99"});
  }

  MUTATION(tensor_without_data_type) {
    c.from(tiny_cnn());
    c.proto([](onnx::ModelProto& p) { proto_initializer(*p.mutable_graph(), "fc.bias").clear_data_type(); });
    c.expect("tensor.data-type", {"fc.bias"});
  }

  MUTATION(tensor_negative_dims) {
    c.from(tiny_cnn());
    c.proto([](onnx::ModelProto& p) { proto_initializer(*p.mutable_graph(), "conv1.bias").set_dims(0, -8); });
    c.expect("tensor.dims", {"conv1.bias", "-8"});
    c.onnx_note(
        "onnx.checker 1.12 neither rejects negative tensor dims nor compares raw_data with "
        "them");
  }

  MUTATION(raw_data_size_mismatch) {
    c.from(tiny_cnn());
    c.proto([](onnx::ModelProto& p) {
      onnx::TensorProto& t = proto_initializer(*p.mutable_graph(), "conv1.weight");
      t.set_raw_data(t.raw_data().substr(0, t.raw_data().size() - 4));
    });
    c.expect("tensor.data-size", {"conv1.weight"});
    c.onnx_note("onnx.checker 1.12 does not compare a dense tensor's data size with its dims");
  }

  MUTATION(typed_data_count_mismatch) {
    c.from(tiny_cnn());
    // fc.bias has 10 elements; store 9 of them in float_data.
    c.proto([](onnx::ModelProto& p) {
      onnx::TensorProto& t = proto_initializer(*p.mutable_graph(), "fc.bias");
      std::vector<float> values(t.raw_data().size() / 4);
      std::memcpy(values.data(), t.raw_data().data(), values.size() * 4);
      t.clear_raw_data();
      for (size_t i = 0; i + 1 < values.size(); ++i) t.add_float_data(values[i]);
    });
    c.expect("tensor.data-size", {"fc.bias"});
    c.onnx_note("onnx.checker 1.12 does not compare a dense tensor's data size with its dims");
  }

  MUTATION(constant_tensor_size_mismatch_in_real_model) {
    c.from(silero_v5());
    // The main graph's first Constant holds the sample rate compared by Equal.
    c.proto([](onnx::ModelProto& p) {
      onnx::NodeProto& n = proto_node_named(*p.mutable_graph(), "Constant_0");
      onnx::TensorProto& t = *n.mutable_attribute(0)->mutable_t();
      t.add_dims(2);
    });
    c.expect("tensor.data-size", {"Constant_0"});
    c.onnx_note("onnx.checker 1.12 does not compare a dense tensor's data size with its dims");
  }

  MUTATION(external_data_absolute_path) {
    c.from(external_data_model());
    c.proto([](onnx::ModelProto& p) {
      set_external_entry(*p.mutable_graph()->mutable_initializer(0), "location", "/tmp/weights.bin");
    });
    c.expect("tensor.external-data", {"W", "/tmp/weights.bin"});
  }

  MUTATION(external_data_parent_dir) {
    c.from(external_data_model());
    // The path leads back to the real file; what is wrong is the ".." in it.
    c.side_file("sub/README", "a directory for the path to step out of\n");
    c.proto([](onnx::ModelProto& p) {
      set_external_entry(*p.mutable_graph()->mutable_initializer(0), "location", "sub/../weights.bin");
    });
    c.expect("tensor.external-data", {"W", "sub/../weights.bin"});
    c.onnx_note(
        "onnx 1.12 accepts '..' in external data paths (rejected from 1.13 on, "
        "CVE-2022-25882)");
  }

  MUTATION(external_data_missing_file) {
    c.from(external_data_model());
    c.proto([](onnx::ModelProto& p) {
      set_external_entry(*p.mutable_graph()->mutable_initializer(0), "location", "no_such_weights.bin");
    });
    c.expect("tensor.external-data", {"W", "no_such_weights.bin"});
  }

  MUTATION(external_data_offset_past_end) {
    c.from(external_data_model());
    c.proto([](onnx::ModelProto& p) {
      set_external_entry(*p.mutable_graph()->mutable_initializer(0), "offset", "4096");
    });
    c.expect("tensor.external-data", {"W", "4096"});
    c.onnx_note("onnx.checker 1.12 checks that the external file exists, not offset/length");
  }

  MUTATION(external_data_length_past_end) {
    c.from(external_data_model());
    c.proto([](onnx::ModelProto& p) {
      onnx::TensorProto& t = *p.mutable_graph()->mutable_initializer(0);
      set_external_entry(t, "offset", "8");
      set_external_entry(t, "length", "24");
    });
    c.expect("tensor.external-data", {"W", "past the end"});
    c.onnx_note("onnx.checker 1.12 checks that the external file exists, not offset/length");
  }

  MUTATION(external_data_without_location) {
    c.from(external_data_model());
    c.proto([](onnx::ModelProto& p) {
      auto& entries = *p.mutable_graph()->mutable_initializer(0)->mutable_external_data();
      for (int i = 0; i < entries.size(); ++i)
        if (entries.Get(i).key() == "location") entries.DeleteSubrange(i, 1);
    });
    c.expect("tensor.external-data", {"W", "location"});
  }

  MUTATION(sparse_index_out_of_range) {
    c.from(sparse_model());
    c.ir(sparse_indices<int64_t>(DataType::kInt64, {1, 12}));
    c.expect("tensor.sparse", {"sp", "12"});
  }

  MUTATION(sparse_indices_unsorted) {
    c.from(sparse_model());
    c.ir(sparse_indices<int64_t>(DataType::kInt64, {5, 1}));
    c.expect("tensor.sparse", {"sp", "sorted"});
  }

  MUTATION(sparse_indices_not_int64) {
    c.from(sparse_model());
    c.ir(sparse_indices<int32_t>(DataType::kInt32, {1, 5}));
    c.expect("tensor.sparse", {"sp", "int64"});
  }

  MUTATION(sparse_values_not_1d) {
    c.from(sparse_model());
    c.ir([](Model& m) { m.graph->sparse_initializers[0].values->dims = {2, 1}; });
    c.expect("tensor.sparse", {"sp", "1-D"});
  }

  MUTATION(quantize_scale_zero) {
    c.from(quantize_model());
    c.ir([](Model& m) { set_scalar(*m.graph, "x_scale", 0.0f); });
    c.expect("tensor.quant-scale", {"quantize", "x_scale"});
    c.onnx_note("onnx.checker does not look at initializer values");
  }

  MUTATION(quantize_scale_negative) {
    c.from(quantize_model());
    c.ir([](Model& m) { set_scalar(*m.graph, "x_scale", -0.25f); });
    c.expect("tensor.quant-scale", {"quantize", "x_scale"});
    c.onnx_note("onnx.checker does not look at initializer values");
  }

  MUTATION(quantize_scale_nan) {
    c.from(quantize_model());
    c.ir([](Model& m) { set_scalar(*m.graph, "x_scale", std::numeric_limits<float>::quiet_NaN()); });
    c.expect("tensor.quant-scale", {"quantize", "x_scale"});
    c.onnx_note("onnx.checker does not look at initializer values");
  }

  MUTATION(quantize_scale_infinite) {
    c.from(quantize_model());
    c.ir([](Model& m) { set_scalar(*m.graph, "x_scale", std::numeric_limits<float>::infinity()); });
    c.expect("tensor.quant-scale", {"quantize", "x_scale"});
    c.onnx_note("onnx.checker does not look at initializer values");
  }

  // ================================================================ function.*

  MUTATION(function_defined_twice) {
    c.from(function_model());
    c.ir([](Model& m) {
      Model copy = parse_ir(ir::serialize_model(m));  // a deep copy of the function
      m.functions.push_back(std::move(copy.functions.front()));
    });
    c.expect("function.duplicate", {"Square"});
    c.onnx_note("onnx.checker 1.12 does not look for duplicate model-local functions");
  }

  MUTATION(function_calls_itself) {
    c.from(function_model());
    c.ir([](Model& m) {
      Node* mul = node_named(*m.functions.front().body, "square_mul");
      mul->op_type = "Square";
      mul->domain = "local";
      mul->remove_input(1);
      m.functions.front().opset_import.push_back(m.opset_import.back());  // imports "local"
    });
    c.expect("function.recursion", {"Square"});
  }

  MUTATION(function_body_undefined_name) {
    c.from(function_model());
    c.ir([](Model& m) {
      Graph& body = *m.functions.front().body;
      node_named(body, "square_mul")->set_input(1, body.value("Z"));
    });
    c.expect("graph.undefined-value", {"square_mul", "Z"});
  }

  MUTATION(function_opset_version_zero) {
    c.from(function_model());
    c.ir([](Model& m) { m.functions.front().opset_import.front().version = 0; });
    c.expect("model.opset-version", {"Square", "opset 0"});
  }

  // ================================================================ shape.* (inference)

  MUTATION(broadcast_incompatible) {
    c.from(binary_model("Add", 17, {2, 3}, {1, 3}, {2, 3}));
    c.ir([](Model& m) { declare_input(*m.graph, "b", tensor_type(DataType::kFloat, {4, 3})); });
    c.expect("shape.broadcast", {"n0"});
  }

  MUTATION(matmul_inner_dims) {
    c.from(binary_model("MatMul", 17, {2, 3}, {3, 4}, {2, 4}));
    c.ir([](Model& m) { declare_input(*m.graph, "b", tensor_type(DataType::kFloat, {5, 4})); });
    c.expect("shape.matmul", {"n0"});
  }

  // ---- the broadcasting and types of the op version the model imports: each base is valid at
  // its opset, the mutation lowers the opset below the version that allowed it.

  MUTATION(max_broadcast_before_opset_8) {
    c.from(binary_model("Max", 8, {2, 3}, {1, 3}, {2, 3}));
    c.ir([](Model& m) { m.set_opset_version("", 7); });
    c.expect("shape.broadcast", {"n0"});
    c.onnx_note("onnx 1.12 infers Max-6 from the first input and never compares the others");
  }

  MUTATION(min_broadcast_before_opset_8) {
    c.from(binary_model("Min", 8, {2, 3}, {3}, {2, 3}));
    c.ir([](Model& m) { m.set_opset_version("", 7); });
    c.expect("shape.broadcast", {"n0"});
    c.onnx_note("onnx 1.12 infers Min-6 from the first input and never compares the others");
  }

  MUTATION(sum_broadcast_before_opset_8) {
    c.from(binary_model("Sum", 8, {2, 1}, {2, 3}, {2, 3}));
    c.ir([](Model& m) { m.set_opset_version("", 7); });
    c.expect("shape.broadcast", {"n0"});
    c.onnx_note("onnx 1.12 infers Sum-6 from the first input and never compares the others");
  }

  MUTATION(mean_broadcast_before_opset_8) {
    c.from(binary_model("Mean", 8, {2, 3}, {}, {2, 3}));
    c.ir([](Model& m) { m.set_opset_version("", 7); });
    c.expect("shape.broadcast", {"n0"});
    c.onnx_note("onnx 1.12 infers Mean-6 from the first input and never compares the others");
  }

  MUTATION(legacy_add_expands_an_inner_dim_of_b) {
    c.from(binary_model("Add", 6, {2, 3, 4, 5}, {2, 3, 4, 5}, {2, 3, 4, 5}));
    c.ir([](Model& m) {
      m.graph->nodes().front()->set_attr(Attribute::make_int("broadcast", 1));
      declare_input(*m.graph, "b", tensor_type(DataType::kFloat, {3, 1, 5}));
    });
    c.expect("shape.broadcast", {"n0"});
    c.onnx_note("onnx 1.12 gives Add-6 the first input's shape without looking at B");
  }

  MUTATION(legacy_add_broadcast_without_attribute) {
    c.from(binary_model("Add", 6, {2, 3}, {2, 3}, {2, 3}));
    c.ir([](Model& m) { declare_input(*m.graph, "b", tensor_type(DataType::kFloat, {3})); });
    c.expect("shape.broadcast", {"n0"});
    c.onnx_note("onnx 1.12 gives Add-6 the first input's shape without looking at B");
  }

  MUTATION(gemm_c_broadcast_before_opset_7) {
    c.from(gemm_model());
    c.ir([](Model& m) { m.set_opset_version("", 6); });
    c.expect("shape.broadcast", {"n0"});
    c.onnx_note("onnx 1.12 does not compare Gemm-6's C with (M, N)");
  }

  MUTATION(prelu_slope_broadcast_before_opset_7) {
    c.from(binary_model("PRelu", 7, {2, 3, 4, 4}, {3, 1, 1}, {2, 3, 4, 4}));
    c.ir([](Model& m) { m.set_opset_version("", 6); });
    c.expect("shape.broadcast", {"n0"});
    c.onnx_note("onnx 1.12 gives PRelu-6 X's shape without looking at the slope");
  }

  MUTATION(equal_on_float_before_opset_11) {
    c.from(typed_binary_model("Equal", DataType::kFloat, DataType::kBool, 11));
    c.ir([](Model& m) { m.set_opset_version("", 10); });
    c.expect("node.type-constraint", {"n0", "a"});
  }

  MUTATION(greater_on_int32_before_opset_9) {
    c.from(typed_binary_model("Greater", DataType::kInt32, DataType::kBool, 9));
    c.ir([](Model& m) { m.set_opset_version("", 8); });
    c.expect("node.type-constraint", {"n0", "a"});
  }

  MUTATION(less_on_int64_before_opset_9) {
    c.from(typed_binary_model("Less", DataType::kInt64, DataType::kBool, 9));
    c.ir([](Model& m) { m.set_opset_version("", 7); });
    c.expect("node.type-constraint", {"n0", "a"});
  }

  MUTATION(max_on_int32_before_opset_12) {
    c.from(typed_binary_model("Max", DataType::kInt32, DataType::kInt32, 12));
    c.ir([](Model& m) { m.set_opset_version("", 11); });
    c.expect("node.type-constraint", {"n0", "a"});
  }

  MUTATION(min_on_uint8_before_opset_12) {
    c.from(typed_binary_model("Min", DataType::kUInt8, DataType::kUInt8, 12));
    c.ir([](Model& m) { m.set_opset_version("", 8); });
    c.expect("node.type-constraint", {"n0", "a"});
  }

  MUTATION(clip_on_int32_before_opset_12) {
    c.from(unary_model("Clip", DataType::kInt32, 12));
    c.ir([](Model& m) { m.set_opset_version("", 11); });
    c.expect("node.type-constraint", {"n0", "x"});
  }

  MUTATION(conv_channel_mismatch) {
    c.from(paddle_det());
    // The first Conv's weight expects 3 input channels.
    c.ir([](Model& m) {
      TypeInfo t = *input_info(*m.graph, "x").type;
      t.shape->dims[1] = Dim::of(4);
      declare_input(*m.graph, "x", t);
    });
    c.expect("shape.conv", {"p2o.Conv.0"});
    c.onnx_note("onnx 1.12's Conv shape inference does not compare X's channels with W's");
  }

  MUTATION(concat_rank_mismatch) {
    c.from(concat_model());
    c.ir([](Model& m) { declare_input(*m.graph, "b", tensor_type(DataType::kFloat, {2, 3, 1})); });
    c.expect("shape.rank", {"concat"});
  }

  MUTATION(reshape_element_count) {
    c.from(reshape_model());
    c.ir([](Model& m) {
      const std::vector<int64_t> dims = {4, 2};
      *m.graph->find("shape")->initializer() =
          ir::make_tensor("shape", DataType::kInt64, {2}, dims.data(), 16);
    });
    c.expect("shape.reshape", {"reshape"});
  }

  MUTATION(transpose_perm_not_permutation) {
    c.from(transpose_model());
    c.ir([](Model& m) { node_named(*m.graph, "transpose")->set_attr(Attribute::make_ints("perm", {0, 0})); });
    c.expect("shape.perm", {"transpose"});
  }

  MUTATION(gather_axis_out_of_range) {
    c.from(gather_model());
    c.ir([](Model& m) { node_named(*m.graph, "gather")->set_attr(Attribute::make_int("axis", 2)); });
    c.expect("shape.axis", {"gather"});
  }

  MUTATION(value_info_contradicts_inference) {
    c.from(tiny_cnn());
    // relu1_out is [N,8,32,32]; declare it [N,8,16,16].
    c.ir([](Model& m) {
      ir::ValueInfo vi;
      vi.value = m.graph->find("relu1_out");
      Shape s = static_shape({1, 8, 16, 16});
      s.dims[0] = Dim::symbol("N");
      vi.type = TypeInfo::tensor(DataType::kFloat, s);
      vi.value->type = *vi.type;
      m.graph->value_info.push_back(std::move(vi));
    });
    c.expect("shape.declared-mismatch", {"relu1_out"});
  }

  MUTATION(graph_output_wrong_element_type) {
    c.from(tiny_cnn());
    c.ir([](Model& m) {
      ir::ValueInfo& vi = output_info(*m.graph, "probs");
      vi.type->elem_type = static_cast<int32_t>(DataType::kInt64);
      vi.value->type = *vi.type;
    });
    c.expect("shape.declared-mismatch", {"probs", "int64"});
  }

  // ================================================================ found by the second opinion
  // Defects onnx.checker rejected while onnxtool's checker missed them, until the rules below
  // were added (node.output-missing, node.attribute-value, tensor.data-fields, function.name,
  // coordinate-order sparse indices, sequences without element type).

  MUTATION(sparse_coordinate_indices_unsorted) {
    c.from(sparse_model());
    // [NNZ, rank] indices must be in lexicographic order, as the linear form must be sorted.
    c.ir([](Model& m) {
      const std::vector<int64_t> indices = {1, 1, 0, 1};  // (1,1) before (0,1)
      m.graph->sparse_initializers[0].indices =
          ir::make_tensor("sp_indices", DataType::kInt64, {2, 2}, indices.data(), 32);
    });
    c.expect("tensor.sparse", {"sp", "sorted"});
  }

  MUTATION(required_output_empty) {
    c.from(topk_model());
    // TopK's Indices output is required (not optional); it is given as "".
    c.proto([](onnx::ModelProto& p) {
      p.mutable_graph()->mutable_node(0)->set_output(1, "");
      p.mutable_graph()->mutable_output()->RemoveLast();
    });
    c.expect("node.output-missing", {"topk"});
  }

  MUTATION(attribute_with_two_value_fields) {
    c.from(tiny_cnn());
    // Softmax's axis is an INT attribute; it carries a float value as well.
    c.ir([](Model& m) { node_named(*m.graph, "softmax")->attr("axis")->f = 2.5f; });
    c.expect("node.attribute-value", {"softmax", "axis"});
  }

  MUTATION(tensor_with_raw_and_typed_data) {
    c.from(tiny_cnn());
    // fc.bias keeps its raw_data and gets float_data too: which one holds the values?
    c.proto([](onnx::ModelProto& p) {
      onnx::TensorProto& t = proto_initializer(*p.mutable_graph(), "fc.bias");
      for (int i = 0; i < 10; ++i) t.add_float_data(0.0f);
    });
    c.expect("tensor.data-fields", {"fc.bias"});
  }

  MUTATION(sequence_input_without_element_type) {
    c.from(tiny_cnn());
    c.ir([](Model& m) {
      TypeInfo t;
      t.kind = TypeInfo::Kind::kSequence;
      m.graph->add_input("unused_sequence", t);
    });
    c.expect("value.elem-type", {"unused_sequence"});
  }

  MUTATION(function_without_name) {
    c.from(function_model());
    // A second, unused copy of the function without a name.
    c.ir([](Model& m) {
      Model copy = parse_ir(ir::serialize_model(m));
      copy.functions.front().name.clear();
      m.functions.push_back(std::move(copy.functions.front()));
    });
    c.expect("function.name", {"name"});
  }
}

TEST_SUITE("checker") {
  // Not a file mutation: a model file cannot hold subgraphs deep enough for graph.nesting, since
  // each level costs three nested messages (GraphProto > NodeProto > AttributeProto) and the
  // parser, like libprotobuf, stops at 100. The rule guards models built in memory.
  TEST_CASE("graph.nesting: reported in memory; too deep for a file, which is refused as input") {
    Base base = nested_if_model();
    auto deepen = [](Model& m, int levels) {
      Graph* g = m.graph.get();
      while (g->nodes().front()->op_type == "If") g = &subgraph(*g->nodes().front(), "then_branch");
      while (!g->outputs.empty()) g->remove_output(0);
      g->remove_node(g->nodes().front().get());
      g->prune_values();
      fill_nested_ifs(*g, levels, "deep");
    };
    Model m = parse_ir(base.bytes);
    deepen(m, 70);
    ir::DiagnosticSink sink;
    checker::check_model(m, sink);
    bool reported = false;
    for (const auto& d : sink.items())
      reported = reported || (d.rule == "graph.nesting" && d.severity == ir::Severity::kError);
    CHECK_MESSAGE(reported, "no graph.nesting error for 74 levels of If");

    ScratchDir dir("nesting");
    write_bytes(dir.path() / "model.onnx", ir::serialize_model(m));
    try {
      checker::check_file((dir.path() / "model.onnx").string());
      FAIL("a model nested 74 levels deep was read");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::kInput);
      CHECK(std::string(e.what()).find("nested") != std::string::npos);
    }
  }
}

// ------------------------------------------------------------------ summary and second opinion

namespace {

bool python_has_onnx() { return std::system("/usr/bin/python3 -c 'import onnx' >/dev/null 2>&1") == 0; }

/// onnx.checker's verdict per file (path relative to the folder it was run on).
struct Opinion {
  bool ok = false;
  std::string message;
};

std::map<std::string, Opinion> onnx_checker_opinions(const fs::path& folder) {
  const fs::path script = testing::source_dir() / "tests" / "onnx_checker_opinion.py";
  const fs::path out = folder / "opinions.tsv";
  const std::string command =
      "/usr/bin/python3 '" + script.string() + "' '" + folder.string() + "' > '" + out.string() + "' 2>&1";
  const int status = std::system(command.c_str());
  REQUIRE_MESSAGE(status == 0, "onnx_checker_opinion.py failed:\n" << read_bytes(out));
  std::map<std::string, Opinion> opinions;
  std::istringstream lines(read_bytes(out));
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> fields;
    std::istringstream split(line);
    for (std::string f; std::getline(split, f, '\t');) fields.push_back(f);
    if (fields.size() < 2) continue;
    Opinion o;
    o.ok = fields[1] == "ok";
    if (fields.size() >= 4) o.message = fields[2] + ": " + fields[3];
    opinions[fields[0]] = o;
  }
  return opinions;
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.resize(width, ' ');
  return s;
}

}  // namespace

TEST_SUITE("checker") {
  TEST_CASE("every mutation: detection count and the onnx.checker second opinion") {
    ScratchDir root("all");
    struct Row {
      const Mutation* mutation;
      Case c;
      std::string base_dir;  // relative to root
      Verdict verdict;
      Detection detection;
    };
    std::vector<Row> rows;
    std::map<std::pair<std::string, size_t>, std::string> base_dirs;
    size_t skipped = 0;
    for (const Mutation& m : mutations()) {
      Row row{&m, Case{}, "", Verdict{}, Detection{}};
      m.build(row.c);
      if (row.c.skipped()) {
        ++skipped;
        continue;
      }
      const auto key = std::make_pair(row.c.base().label, std::hash<std::string>{}(row.c.base().bytes));
      auto it = base_dirs.find(key);
      if (it == base_dirs.end()) {
        const std::string dir = "bases/b" + std::to_string(base_dirs.size());
        write_model(root.path() / dir, row.c.base().bytes, row.c.base().side_files);
        it = base_dirs.emplace(key, dir).first;
      }
      row.base_dir = it->second;
      const fs::path dir = root.path() / "mutants" / m.id;
      write_model(dir, row.c.mutant(), row.c.mutant_files());
      row.verdict = check_at(dir / "model.onnx", row.c.is_strict());
      row.detection = detect(row.verdict, row.c);
      rows.push_back(std::move(row));
    }

    size_t detected = 0, rejected = 0;
    std::string missed;
    for (const Row& r : rows) {
      const bool hit = r.detection.rule_hit && r.detection.culprit_named;
      detected += hit;
      rejected += r.verdict.rejected();
      if (!hit)
        missed += std::string("  ") + r.mutation->id + " (" + r.c.rule() + ")" +
                  (r.mutation->expect == Expect::kShapePending ? " [may_fail: shape function pending]"
                   : r.mutation->expect == Expect::kCheckerGap ? " [may_fail: known checker gap]"
                                                               : "") +
                  "\n";
    }
    std::cout << "checker mutations: " << mutations().size() << " defined, " << rows.size() << " run ("
              << skipped << " skipped for missing data), " << detected << " detected with rule and culprit, "
              << rejected << " rejected\n";
    if (!missed.empty()) std::cout << "not detected:\n" << missed;
    if (skipped > 0) testing::skip_missing_data("the base models of " + std::to_string(skipped) + " mutations");
    CHECK(mutations().size() >= 70);

    if (!python_has_onnx()) {
      testing::skip_missing_data("python3-onnx for /usr/bin/python3: onnx.checker's second opinion");
      return;
    }
    const auto opinions = onnx_checker_opinions(root.path());
    auto opinion_of = [&](const std::string& rel) {
      auto it = opinions.find(rel);
      REQUIRE_MESSAGE(it != opinions.end(), "onnx_checker_opinion.py said nothing about " << rel);
      return it->second;
    };
    size_t onnx_rejects = 0, both = 0, base_refused = 0;
    std::ostringstream table;
    for (const Row& r : rows) {
      const Opinion base = opinion_of(r.base_dir + "/model.onnx");
      const Opinion mutant = opinion_of(std::string("mutants/") + r.mutation->id + "/model.onnx");
      if (!base.ok) ++base_refused;
      if (mutant.message.rfind("crash", 0) == 0)
        std::cout << "onnx.checker crashed on " << r.mutation->id << " (" << mutant.message << ")\n";
      if (!mutant.ok) {
        ++onnx_rejects;
        both += r.verdict.rejected();
        if (r.mutation->may_fail() && !r.verdict.rejected()) {
          std::cout << "onnx.checker rejects " << r.mutation->id << " (" << mutant.message
                    << "), onnxtool not yet (may_fail)\n";
        } else {
          CHECK_MESSAGE(r.verdict.rejected(), r.mutation->id << ": onnx.checker rejects it ("
                                                             << mutant.message
                                                             << ") but onnxtool accepts it");
        }
      } else if (r.verdict.rejected()) {
        const std::string why = !base.ok ? "n/a: onnx 1.12 already rejects the base (" + base.message + ")"
                                : r.c.note().empty() ? "(no explanation recorded)"
                                                     : r.c.note();
        table << "  " << pad(r.mutation->id, 44) << pad(r.c.rule(), 28) << why << "\n";
      }
    }
    std::cout << "onnx.checker 1.12 (full_check) rejects " << onnx_rejects << " of " << rows.size()
              << " mutants, onnxtool rejects " << both << " of those; " << base_refused
              << " mutant(s) start from a base that onnx 1.12 itself refuses (no opinion there)\n"
              << "onnxtool rejects, onnx.checker accepts:\n"
              << table.str();
  }
}

}  // namespace onnxtool::checker_test
