// Builds the small demo models shipped in testdata/ (tiny_cnn.onnx, tiny_if.onnx) with the IR API.
//
// Usage: make_demo_models OUT_DIR          writes the models into OUT_DIR
//        make_demo_models --check DIR      exit 1 unless the models in DIR are what this program
//                                          would write now (byte for byte)
//
// The output is deterministic: weights come from a fixed-seed LCG written here (std::random
// distributions are not specified bit-exactly and differ between standard libraries), and the
// serializer emits everything in IR order.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/error.h"
#include "ir/graph.h"
#include "ir/model_io.h"

namespace {

using onnxtool::ir::Attribute;
using onnxtool::ir::AttrType;
using onnxtool::ir::DataType;
using onnxtool::ir::Dim;
using onnxtool::ir::Graph;
using onnxtool::ir::Model;
using onnxtool::ir::Node;
using onnxtool::ir::Shape;
using onnxtool::ir::TypeInfo;
using onnxtool::ir::Value;

constexpr int64_t kIrVersion = 10;
constexpr int64_t kOpset = 21;

/// A 64-bit linear congruential generator (Knuth's MMIX constants). Only the top bits are used:
/// the low bits of a power-of-two-modulus LCG have short periods.
class Lcg {
 public:
  explicit Lcg(uint64_t seed) : state_(seed) {}

  /// Uniform in [0, 1) with 24 bits of resolution, so that every value is an exact float.
  float next_unit() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<float>(state_ >> 40) / 16777216.0f;
  }

  /// Uniform in [-limit, limit).
  float next_symmetric(float limit) { return (2.0f * next_unit() - 1.0f) * limit; }

 private:
  uint64_t state_;
};

std::vector<float> random_floats(Lcg& rng, size_t count, float limit) {
  std::vector<float> v(count);
  for (float& x : v) x = rng.next_symmetric(limit);
  return v;
}

/// A float initializer. raw_data is little-endian by spec; the hosts onnxtool builds on are too.
Value* add_float_initializer(Graph& graph, const std::string& name, std::vector<int64_t> dims,
                             const std::vector<float>& data) {
  return graph.add_initializer(onnxtool::ir::make_tensor(name, DataType::kFloat, std::move(dims),
                                                         data.data(), data.size() * sizeof(float)));
}

onnxtool::ir::StringPair entry(std::string key, std::string value) {
  onnxtool::ir::StringPair p;
  p.key = std::move(key);
  p.value = std::move(value);
  return p;
}

void set_doc(onnxtool::ir::ValueInfo& info, std::string doc) { info.doc_string = std::move(doc); }

Shape shape_of(std::vector<Dim> dims) {
  Shape s;
  s.dims = std::move(dims);
  return s;
}

TypeInfo float_tensor(std::vector<Dim> dims) {
  return TypeInfo::tensor(DataType::kFloat, shape_of(std::move(dims)));
}

Attribute graph_attribute(std::string name, std::unique_ptr<Graph> graph) {
  Attribute a;
  a.name = std::move(name);
  a.type = static_cast<int32_t>(AttrType::kGraph);
  a.g = std::move(graph);
  return a;
}

Model new_model(const std::string& doc) {
  Model m;
  m.ir_version = kIrVersion;
  m.set_opset_version("", kOpset);
  m.producer_name = "onnxtool-demo";
  m.producer_version = "1";
  m.doc_string = doc;
  m.graph = std::make_unique<Graph>();
  return m;
}

/// image[N,3,32,32] -> Conv 3x3 (8 filters, pads 1) + bias -> Relu -> MaxPool 2x2 -> Flatten ->
/// Gemm (2048 -> 10, transB) -> Softmax -> probs[N,10].
Model make_tiny_cnn() {
  constexpr int64_t kChannels = 3, kSize = 32, kFilters = 8, kClasses = 10;
  constexpr int64_t kFlat = kFilters * (kSize / 2) * (kSize / 2);

  Model m = new_model("A tiny image classifier with synthetic weights, for onnxtool demos and tests.");
  m.metadata_props.push_back(entry("generator", "testdata/make_demo_models.cpp"));
  m.metadata_props.push_back(entry("weights", "synthetic, fixed-seed LCG; not trained"));

  Graph& g = *m.graph;
  g.name = "tiny_cnn";
  g.doc_string = "Conv -> Relu -> MaxPool -> Flatten -> Gemm -> Softmax over 32x32 RGB images.";

  set_doc(g.add_input("image", float_tensor({Dim::symbol("N"), Dim::of(kChannels),
                                                  Dim::of(kSize), Dim::of(kSize)})),
               "RGB image batch, NCHW, values in [0, 1]");

  // Uniform limits in the spirit of He initialization: sqrt(6 / fan_in).
  Lcg rng(20240521);
  Value* conv_w = add_float_initializer(
      g, "conv1.weight", {kFilters, kChannels, 3, 3},
      random_floats(rng, kFilters * kChannels * 3 * 3, 0.47f));
  Value* conv_b = add_float_initializer(g, "conv1.bias", {kFilters},
                                        random_floats(rng, kFilters, 0.1f));
  Value* fc_w = add_float_initializer(g, "fc.weight", {kClasses, kFlat},
                                      random_floats(rng, kClasses * kFlat, 0.054f));
  Value* fc_b = add_float_initializer(g, "fc.bias", {kClasses}, random_floats(rng, kClasses, 0.1f));

  Node* conv = g.add_node("Conv", {g.find("image"), conv_w, conv_b}, {"conv1_out"}, "", "conv1");
  conv->set_attr(Attribute::make_ints("kernel_shape", {3, 3}));
  conv->set_attr(Attribute::make_ints("pads", {1, 1, 1, 1}));
  conv->set_attr(Attribute::make_ints("strides", {1, 1}));

  Node* relu = g.add_node("Relu", {conv->output(0)}, {"relu1_out"}, "", "relu1");

  Node* pool = g.add_node("MaxPool", {relu->output(0)}, {"pool1_out"}, "", "pool1");
  pool->set_attr(Attribute::make_ints("kernel_shape", {2, 2}));
  pool->set_attr(Attribute::make_ints("strides", {2, 2}));

  Node* flatten = g.add_node("Flatten", {pool->output(0)}, {"flat"}, "", "flatten");
  flatten->set_attr(Attribute::make_int("axis", 1));

  Node* fc = g.add_node("Gemm", {flatten->output(0), fc_w, fc_b}, {"logits"}, "", "fc");
  fc->set_attr(Attribute::make_int("transB", 1));
  fc->doc_string = "fc.weight is stored [out, in] as in PyTorch, hence transB";

  Node* softmax = g.add_node("Softmax", {fc->output(0)}, {"probs"}, "", "softmax");
  softmax->set_attr(Attribute::make_int("axis", -1));

  set_doc(g.add_output(softmax->output(0), float_tensor({Dim::symbol("N"), Dim::of(kClasses)})),
               "class probabilities; each row sums to 1");
  return m;
}

/// y = If(cond) then x * scale else x + scale, where x and scale live in the main graph and the
/// branches read them from the outer scope.
Model make_tiny_if() {
  Model m = new_model("An If node whose branches compute with outer-scope values.");
  m.metadata_props.push_back(entry("generator", "testdata/make_demo_models.cpp"));

  Graph& g = *m.graph;
  g.name = "tiny_if";
  g.doc_string = "y = cond ? x * scale : x + scale";

  g.add_input("x", float_tensor({Dim::of(3)}));
  Value* cond = g.add_input("cond", TypeInfo::tensor(DataType::kBool, Shape{})).value;
  add_float_initializer(g, "scale", {3}, {2.0f, 0.5f, -1.0f});

  // Each branch resolves x and scale through its parent: they are not branch inputs (If
  // branches take none) but outer-scope references, which is what this model exercises.
  auto make_branch = [&g](const std::string& name, const std::string& op, const std::string& out) {
    auto branch = std::make_unique<Graph>(&g);
    branch->name = name;
    branch->doc_string = op + "(x, scale) with x and scale from the outer scope";
    Node* n = branch->add_node(op, {branch->resolve("x"), branch->resolve("scale")}, {out}, "",
                               name + "_" + op);
    branch->add_output(n->output(0), float_tensor({Dim::of(3)}));
    return branch;
  };

  Node* if_node = g.add_node("If", {cond}, {"y"}, "", "select");
  if_node->set_attr(graph_attribute("then_branch", make_branch("then_branch", "Mul", "then_y")));
  if_node->set_attr(graph_attribute("else_branch", make_branch("else_branch", "Add", "else_y")));

  g.add_output(if_node->output(0), float_tensor({Dim::of(3)}));
  return m;
}

struct DemoModel {
  const char* file;
  Model (*make)();
};

const DemoModel kDemoModels[] = {
    {"tiny_cnn.onnx", make_tiny_cnn},
    {"tiny_if.onnx", make_tiny_if},
};

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int write_all(const std::string& dir) {
  for (const DemoModel& d : kDemoModels) {
    const std::string path = dir + "/" + d.file;
    const auto report = onnxtool::ir::save_model(d.make(), path);
    std::cout << "wrote " << path << " (" << report.model_bytes << " bytes)\n";
  }
  return 0;
}

int check_all(const std::string& dir) {
  int stale = 0;
  for (const DemoModel& d : kDemoModels) {
    const std::string path = dir + "/" + d.file;
    const auto on_disk = read_file(path);
    if (!on_disk) {
      std::cerr << path << ": missing; run make_demo_models " << dir << "\n";
      ++stale;
    } else if (*on_disk != onnxtool::ir::serialize_model(d.make())) {
      std::cerr << path << ": differs from what make_demo_models generates; run make_demo_models "
                << dir << "\n";
      ++stale;
    }
  }
  if (stale == 0) std::cout << "demo models in " << dir << " are up to date\n";
  return stale == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 1 && args[0] != "--check" && args[0].rfind("-", 0) != 0) return write_all(args[0]);
    if (args.size() == 2 && args[0] == "--check") return check_all(args[1]);
  } catch (const std::exception& e) {
    std::cerr << "make_demo_models: " << e.what() << "\n";
    return 2;
  }
  std::cerr << "usage: make_demo_models OUT_DIR | make_demo_models --check DIR\n";
  return 2;
}
