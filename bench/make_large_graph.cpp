// make_large_graph: writes a model with a very large number of tiny nodes, for the node-count
// scaling benchmark (bench/large_graph.sh). Where make_large_model makes few nodes with large
// weights, this makes the opposite: every per-node cost of onnxtool shows, and one that is not
// constant per node (a scan of the node list for each node) turns 100k nodes into minutes.
//
//   make_large_graph OUT.onnx --nodes N [--shape chain|named|wide] [--opset V]
//
// Shapes (X and every intermediate value are float32 [1, 8]):
//   chain  X -> Relu -> Relu -> ... -> Y, N Relu nodes without names (exporters often leave
//          nodes unnamed, and then messages call them "node #i (Relu)")
//   named  the same chain, the nodes named relu_0 ... relu_{N-1}
//   wide   N-2 unnamed Relu branches all reading X, joined by one Sum (output S, [1, 8]) and one
//          Concat along axis 0 (output C, [N-2, 8]): a value with N-2 readers and two nodes with
//          N-2 inputs each
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/model_io.h"

namespace ir = onnxtool::ir;

namespace {

struct Args {
  std::string out;
  int64_t nodes = 0;
  std::string shape = "chain";
  int64_t opset = 17;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "make_large_graph: " << why << "\n"
            << "usage: make_large_graph OUT.onnx --nodes N [--shape chain|named|wide] [--opset V]\n"
            << "  --nodes N    number of nodes (wide: at least 3)\n"
            << "  --shape S    chain (unnamed Relu chain, the default), named (named Relu chain),\n"
            << "               wide (N-2 parallel Relus joined by a Sum and a Concat)\n"
            << "  --opset V    default-domain opset, 7 to 28 (default 17)\n";
  std::exit(2);
}

int64_t parse_count(const std::string& flag, const char* text, int64_t lo, int64_t hi) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || v != std::floor(v) || v < static_cast<double>(lo) ||
      v > static_cast<double>(hi))
    usage(flag + " wants a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got '" +
          text + "'");
  return static_cast<int64_t>(v);
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--nodes") {
      a.nodes = parse_count(arg, value(), 1, 100000000);
    } else if (arg == "--shape") {
      a.shape = value();
      if (a.shape != "chain" && a.shape != "named" && a.shape != "wide") usage("unknown --shape " + a.shape);
    } else if (arg == "--opset") {
      a.opset = parse_count(arg, value(), 7, 28);
    } else if (arg == "-h" || arg == "--help") {
      usage("writes a model with many tiny nodes");
    } else if (!arg.empty() && arg[0] == '-') {
      usage("unknown option " + arg);
    } else if (a.out.empty()) {
      a.out = arg;
    } else {
      usage("only one output file, got '" + a.out + "' and '" + arg + "'");
    }
  }
  if (a.out.empty()) usage("no output file");
  if (a.nodes == 0) usage("--nodes is required");
  if (a.shape == "wide" && a.nodes < 3) usage("--shape wide needs at least 3 nodes");
  return a;
}

ir::TypeInfo float_type(int64_t rows) {
  ir::Shape shape;
  shape.dims = {ir::Dim::of(rows), ir::Dim::of(8)};
  return ir::TypeInfo::tensor(ir::DataType::kFloat, shape);
}

void build_chain(ir::Graph& g, int64_t nodes, bool named) {
  ir::Value* x = g.add_input("X", float_type(1)).value;
  for (int64_t i = 0; i < nodes; ++i) {
    const std::string id = std::to_string(i);
    const std::string out = i + 1 == nodes ? "Y" : "t" + id;
    x = g.add_node("Relu", {x}, {out}, "", named ? "relu_" + id : "")->output(0);
  }
  g.add_output(x, float_type(1));
}

void build_wide(ir::Graph& g, int64_t nodes) {
  ir::Value* x = g.add_input("X", float_type(1)).value;
  const int64_t branches = nodes - 2;
  std::vector<ir::Value*> tips;
  tips.reserve(static_cast<size_t>(branches));
  for (int64_t i = 0; i < branches; ++i)
    tips.push_back(g.add_node("Relu", {x}, {"b" + std::to_string(i)})->output(0));
  g.add_output(g.add_node("Sum", tips, {"S"})->output(0), float_type(1));
  ir::Node* concat = g.add_node("Concat", tips, {"C"});
  concat->set_attr(ir::Attribute::make_int("axis", 0));
  g.add_output(concat->output(0), float_type(branches));
}

int run(const Args& a) {
  ir::Model model;
  // The IR version the opset came with (the checker reports an opset newer than its IR version).
  const int64_t v = a.opset;
  model.ir_version = v <= 8 ? 3 : v <= 11 ? v - 5 : v <= 14 ? 7 : v <= 18 ? 8 : v <= 20 ? 9 : v <= 22 ? 10 : 11;
  model.producer_name = "onnxtool-bench";
  model.producer_version = "make_large_graph";
  model.set_opset_version("", a.opset);
  model.graph = std::make_unique<ir::Graph>();
  model.graph->name = "large_" + a.shape;
  if (a.shape == "wide") build_wide(*model.graph, a.nodes);
  else build_chain(*model.graph, a.nodes, a.shape == "named");

  const ir::SaveReport r = ir::save_model(model, a.out);
  std::cout << "wrote " << a.out << ": " << a.nodes << " nodes (" << a.shape << "), " << r.model_bytes
            << " bytes\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  try {
    return run(args);
  } catch (const std::exception& e) {
    std::cerr << "make_large_graph: " << args.out << ": " << e.what() << "\n";
    return 1;
  }
}
