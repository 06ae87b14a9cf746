// make_large_model: writes a synthetic MLP-shaped ONNX model of about a requested size, for the
// memory benchmark (bench/memory.sh).
//
//   make_large_model OUT.onnx [--mb N] [--hidden H] [--seed S] [--opset V] [--typed]
//
// The model is X[batch,H] -> (MatMul W_i -> Add b_i -> Relu) x layers -> Y[batch,H], with every
// weight a float32 initializer stored in raw_data (or, with --typed, in the repeated float_data
// field, as some exporters write it). The layer count is picked so that the file comes out at
// about N MiB (1 MiB = 1048576 bytes).
//
// The generator stays small in memory: the numbers come from one pool of 2*H*H floats filled by a
// tiny LCG, and every raw_data initializer is an ir::Bytes view into that pool at a layer-dependent
// offset (so consecutive layers do not hold identical bytes). --typed needs a copy per tensor, so
// the generator then holds the whole model. Same arguments, same file, byte for byte.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/model_io.h"

namespace ir = onnxtool::ir;

namespace {

constexpr uint64_t kMiB = 1024 * 1024;

struct Args {
  std::string out;
  double mb = 100;
  int64_t hidden = 1024;
  uint64_t seed = 1;
  bool typed = false;
  int64_t opset = 21;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "make_large_model: " << why << "\n"
            << "usage: make_large_model OUT.onnx [--mb N] [--hidden H] [--seed S] [--typed]\n"
            << "  --mb N      approximate file size in MiB (default 100)\n"
            << "  --hidden H  width of every layer (default 1024; a layer holds 4*H*(H+1) bytes)\n"
            << "  --seed S    seed of the weight generator (default 1)\n"
            << "  --typed     store weights in float_data instead of raw_data\n";
  std::exit(2);
}

double parse_number(const std::string& flag, const char* text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !(v > 0) || !std::isfinite(v))
    usage(flag + " wants a positive number, got '" + text + "'");
  return v;
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--mb") {
      a.mb = parse_number(arg, value());
    } else if (arg == "--hidden") {
      const double h = parse_number(arg, value());
      if (h != std::floor(h) || h > 16384) usage("--hidden wants a whole number up to 16384");
      a.hidden = static_cast<int64_t>(h);
    } else if (arg == "--seed") {
      const double s = parse_number(arg, value());
      if (s != std::floor(s) || s > 1e18) usage("--seed wants a whole number");
      a.seed = static_cast<uint64_t>(s);
    } else if (arg == "--opset") {
      const double o = parse_number(arg, value());
      if (o != std::floor(o) || o < 7 || o > 28) usage("--opset wants a whole number from 7 to 28");
      a.opset = static_cast<int64_t>(o);
    } else if (arg == "--typed") {
      a.typed = true;
    } else if (arg == "-h" || arg == "--help") {
      usage("writes a synthetic MLP model");
    } else if (!arg.empty() && arg[0] == '-') {
      usage("unknown option " + arg);
    } else if (a.out.empty()) {
      a.out = arg;
    } else {
      usage("only one output file, got '" + a.out + "' and '" + arg + "'");
    }
  }
  if (a.out.empty()) usage("no output file");
  return a;
}

/// A 64-bit linear congruential generator (Knuth's MMIX constants); the top 24 bits of the state
/// give a float in [0, 1).
class Lcg {
 public:
  explicit Lcg(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ULL + 1) {}
  float next_unit() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<float>(state_ >> 40) * (1.0f / 16777216.0f);
  }

 private:
  uint64_t state_;
};

/// A pool of `count` floats in [-scale, scale), owned by the returned Bytes.
ir::Bytes make_pool(size_t count, float scale, uint64_t seed) {
  std::vector<uint8_t> buffer(count * sizeof(float));
  Lcg rng(seed);
  for (size_t i = 0; i < count; ++i) {
    const float v = (2.0f * rng.next_unit() - 1.0f) * scale;
    std::memcpy(buffer.data() + i * sizeof(float), &v, sizeof v);
  }
  return ir::Bytes::owned(std::move(buffer));
}

/// A float32 initializer holding `pool`'s floats from `offset_floats` on: its raw_data is a view
/// of the pool (no copy), or with `typed` its float_data a copy.
ir::Tensor pool_tensor(std::string name, std::vector<int64_t> dims, const ir::Bytes& pool,
                       size_t offset_floats, bool typed) {
  ir::Tensor t;
  t.name = std::move(name);
  t.data_type = static_cast<int32_t>(ir::DataType::kFloat);
  size_t count = 1;
  for (int64_t d : dims) count *= static_cast<size_t>(d);
  t.dims = std::move(dims);
  const ir::Bytes bytes = pool.slice(offset_floats * sizeof(float), count * sizeof(float));
  if (typed) {
    t.float_data.resize(count);
    std::memcpy(t.float_data.data(), bytes.data(), bytes.size());
  } else {
    t.raw_data = bytes;
  }
  return t;
}

ir::TypeInfo activation_type(int64_t hidden) {
  ir::Shape shape;
  shape.dims = {ir::Dim::symbol("batch"), ir::Dim::of(hidden)};
  return ir::TypeInfo::tensor(ir::DataType::kFloat, shape);
}

int run(const Args& a) {
  const int64_t h = a.hidden;
  const size_t weight_floats = static_cast<size_t>(h) * static_cast<size_t>(h);
  const uint64_t layer_bytes = (weight_floats + static_cast<uint64_t>(h)) * sizeof(float);
  const auto target = static_cast<uint64_t>(a.mb * static_cast<double>(kMiB));
  const uint64_t layers = std::max<uint64_t>(1, (target + layer_bytes / 2) / layer_bytes);

  // Twice a weight matrix, so that a view of weight_floats fits at any offset below weight_floats.
  const ir::Bytes pool = make_pool(2 * weight_floats, 1.0f / std::sqrt(static_cast<float>(h)), a.seed);

  ir::Model model;
  // IR version to go with the opset (onnx 1.12, the python checker benchmarked against, reads IR 8).
  model.ir_version = a.opset <= 17 ? 8 : 10;
  model.producer_name = "onnxtool-bench";
  model.producer_version = "make_large_model";
  model.doc_string = "synthetic MLP for the memory benchmark";
  model.set_opset_version("", a.opset);
  model.graph = std::make_unique<ir::Graph>();
  ir::Graph& g = *model.graph;
  g.name = "large_mlp";

  ir::Value* x = g.add_input("X", activation_type(h)).value;
  for (uint64_t i = 0; i < layers; ++i) {
    const std::string id = std::to_string(i);
    // Offsets step by a prime number of floats so that no two layers share the same bytes.
    const size_t offset = static_cast<size_t>((i * 7919u) % weight_floats);
    ir::Value* w = g.add_initializer(pool_tensor("W" + id, {h, h}, pool, offset, a.typed));
    ir::Value* b =
        g.add_initializer(pool_tensor("B" + id, {h}, pool, (offset + 31) % weight_floats, a.typed));
    ir::Node* mm = g.add_node("MatMul", {x, w}, {"mm" + id}, "", "matmul_" + id);
    ir::Node* add = g.add_node("Add", {mm->output(0), b}, {"add" + id}, "", "add_" + id);
    if (i + 1 < layers) {
      x = g.add_node("Relu", {add->output(0)}, {"relu" + id}, "", "relu_" + id)->output(0);
    } else {
      x = add->output(0);
    }
  }
  // The last Add's output is the graph output Y.
  g.rename(x, "Y");
  g.add_output(x, activation_type(h));

  const ir::SaveReport r = ir::save_model(model, a.out);
  std::cout << "wrote " << a.out << ": " << layers << " layers of " << h << "x" << h
            << (a.typed ? " (float_data)" : " (raw_data)") << ", "
            << r.model_bytes << " bytes (" << static_cast<double>(r.model_bytes) / kMiB << " MiB)";
  if (!r.data_path.empty()) std::cout << " + " << r.data_path << " (" << r.data_bytes << " bytes)";
  std::cout << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  try {
    return run(args);
  } catch (const std::exception& e) {
    std::cerr << "make_large_model: " << args.out << ": " << e.what() << "\n";
    return 1;
  }
}
