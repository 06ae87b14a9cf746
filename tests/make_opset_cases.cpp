// Writes one-node models of the operators added or changed in opsets 18-28 (newer than the ONNX
// backend suite's opset 17), with inputs, so that tests/cli/ort_new_opsets.sh can run each through
// onnxtool and onnxruntime and compare the outputs.
//
// Usage: make_opset_cases OUT_DIR
// Writes OUT_DIR/<case>/model.onnx and OUT_DIR/<case>/inputs/<input>.npy, one folder per case,
// and OUT_DIR/cases.txt (one case name per line). Inputs come from a fixed-seed generator, so the
// output is the same on every run.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "ir/diagnostic.h"
#include "ir/error.h"
#include "ir/graph.h"
#include "ir/model_io.h"
#include "ir/shape_inference.h"
#include "runner/session.h"
#include "runner/tensor_io.h"

namespace {

using onnxtool::ir::Attribute;
using onnxtool::ir::DataType;
using onnxtool::runner::Tensor;

/// A 64-bit LCG (Knuth's MMIX constants); top bits only.
class Lcg {
 public:
  explicit Lcg(uint64_t seed) : state_(seed) {}
  double next_unit() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state_ >> 40) / 16777216.0;
  }

 private:
  uint64_t state_;
};

/// One input of a case: random values in [lo, hi) (integers rounded down), or fixed values.
struct Input {
  std::string name;
  DataType type;
  std::vector<int64_t> shape;
  double lo = -2, hi = 2;
  std::vector<double> values;  // fixed values when not empty
  bool initializer = false;    // stored in the model (inputs that must be constant)
  bool omitted = false;        // an optional input left out (name "")
};

struct Case {
  std::string name;
  std::string op;
  std::string domain;
  int opset;
  std::vector<Input> inputs;
  std::vector<std::function<Attribute()>> attrs;
  int outputs = 1;
};

Tensor make_values(const Input& in, Lcg& rng) {
  Tensor t(in.type, in.shape);
  const bool fixed = !in.values.empty();
  if (fixed && static_cast<int64_t>(in.values.size()) != t.size())
    throw std::runtime_error("input " + in.name + ": " + std::to_string(in.values.size()) + " values for " +
                             std::to_string(t.size()) + " elements");
  for (int64_t i = 0; i < t.size(); ++i) {
    const double r = in.lo + (in.hi - in.lo) * rng.next_unit();
    const double v = fixed ? in.values[static_cast<size_t>(i)] : r;
    switch (in.type) {
      case DataType::kFloat: t.mutable_data<float>()[i] = static_cast<float>(v); break;
      case DataType::kDouble: t.mutable_data<double>()[i] = v; break;
      case DataType::kFloat16: t.mutable_data<uint16_t>()[i] = onnxtool::runner::float_to_half(static_cast<float>(v)); break;
      case DataType::kInt64: t.mutable_data<int64_t>()[i] = static_cast<int64_t>(std::floor(v)); break;
      case DataType::kInt32: t.mutable_data<int32_t>()[i] = static_cast<int32_t>(std::floor(v)); break;
      case DataType::kInt8: t.mutable_data<int8_t>()[i] = static_cast<int8_t>(std::floor(v)); break;
      case DataType::kUInt8: t.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(std::floor(v)); break;
      case DataType::kBool: t.mutable_data<uint8_t>()[i] = v >= 0 ? 1 : 0; break;
      default: throw std::runtime_error("input " + in.name + ": unsupported type");
    }
  }
  return t;
}

Input f32(std::string name, std::vector<int64_t> shape, double lo = -2, double hi = 2) {
  return {std::move(name), DataType::kFloat, std::move(shape), lo, hi, {}, false, false};
}
Input f16(std::string name, std::vector<int64_t> shape) {
  return {std::move(name), DataType::kFloat16, std::move(shape), -2, 2, {}, false, false};
}
Input typed(std::string name, DataType t, std::vector<int64_t> shape, double lo, double hi) {
  return {std::move(name), t, std::move(shape), lo, hi, {}, false, false};
}
/// A constant input (stored as an initializer): shapes, axes, pads, scales...
Input constant(std::string name, DataType t, std::vector<int64_t> shape, std::vector<double> values) {
  return {std::move(name), t, std::move(shape), 0, 0, std::move(values), true, false};
}
Input ints(std::string name, std::vector<double> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return constant(std::move(name), DataType::kInt64, {n}, std::move(values));
}
Input none() { return {"", DataType::kFloat, {}, 0, 0, {}, false, true}; }

std::function<Attribute()> ai(std::string n, int64_t v) { return [=] { return Attribute::make_int(n, v); }; }
std::function<Attribute()> af(std::string n, float v) { return [=] { return Attribute::make_float(n, v); }; }
std::function<Attribute()> as(std::string n, std::string v) { return [=] { return Attribute::make_string(n, v); }; }
std::function<Attribute()> ais(std::string n, std::vector<int64_t> v) { return [=] { return Attribute::make_ints(n, v); }; }

std::vector<Case> cases() {
  using D = DataType;
  std::vector<Case> c;
  // --- opset 18
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"})
    c.push_back({std::string(op) + "_18", op, "", 18,
                 {typed("A", D::kInt32, {3, 4}, -100, 100), typed("B", D::kInt32, {4}, -100, 100)}, {}});
  c.push_back({"BitwiseNot_18", "BitwiseNot", "", 18, {typed("X", D::kUInt8, {3, 5}, 0, 255)}, {}});
  c.push_back({"CenterCropPad_18", "CenterCropPad", "", 18, {f32("X", {5, 7, 3}), ints("shape", {4, 9})},
               {ais("axes", {0, 1})}});
  c.push_back({"Col2Im_18", "Col2Im", "", 18,
               {f32("X", {1, 5, 5}), ints("image_shape", {5, 5}), ints("block_shape", {1, 5})}, {}});
  c.push_back({"LpPool_18", "LpPool", "", 18, {f32("X", {1, 2, 7, 7})},
               {ais("kernel_shape", {3, 3}), ais("dilations", {2, 1}), ai("ceil_mode", 1), ais("strides", {2, 2})}});
  c.push_back({"Mish_18", "Mish", "", 18, {f32("X", {3, 7}, -5, 5)}, {}});
  c.push_back({"Pad_18_axes", "Pad", "", 18, {f32("X", {3, 4}), ints("pads", {1, 2}), none(), ints("axes", {1})},
               {as("mode", "reflect")}});
  for (const char* op : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
                         "ReduceMin", "ReduceProd", "ReduceSumSquare"})
    c.push_back({std::string(op) + "_18", op, "", 18, {f32("X", {3, 4, 5}, 0.1, 2), ints("axes", {0, 2})},
                 {ai("keepdims", 0)}});
  c.push_back({"ReduceMean_18_noop", "ReduceMean", "", 18, {f32("X", {3, 4}), ints("axes", {})},
               {ai("noop_with_empty_axes", 1)}});
  c.push_back({"Resize_18_antialias", "Resize", "", 18,
               {f32("X", {1, 1, 8, 8}), none(), constant("scales", D::kFloat, {4}, {1, 1, 0.6, 0.5})},
               {as("mode", "linear"), ai("antialias", 1)}});
  c.push_back({"Resize_18_axes_policy", "Resize", "", 18,
               {f32("X", {1, 1, 4, 6}), none(), none(), ints("sizes", {3, 3})},
               {ais("axes", {2, 3}), as("keep_aspect_ratio_policy", "not_larger")}});
  c.push_back({"ScatterElements_18_max", "ScatterElements", "", 18,
               {f32("data", {3, 3}), ints("indices", {1, 0, 2, 0, 2, 1}), f32("updates", {6})},
               {ai("axis", 0), as("reduction", "max")}});
  c.back().inputs[1] = constant("indices", D::kInt64, {2, 3}, {1, 0, 2, 0, 2, 1});
  c.back().inputs[2] = f32("updates", {2, 3});
  c.push_back({"ScatterND_18_min", "ScatterND", "", 18,
               {f32("data", {4, 3}), constant("indices", D::kInt64, {2, 1}, {2, 0}), f32("updates", {2, 3})},
               {as("reduction", "min")}});
  c.push_back({"Split_18_num_outputs", "Split", "", 18, {f32("X", {7, 2})}, {ai("num_outputs", 3)}, 3});
  // --- opset 19
  c.push_back({"AveragePool_19_dilations", "AveragePool", "", 19, {f32("X", {1, 2, 8, 8})},
               {ais("kernel_shape", {2, 2}), ais("dilations", {2, 2}), ais("strides", {1, 1})}});
  c.push_back({"Cast_19_float8", "Cast", "", 19, {f32("X", {4, 5}, -500, 500)},
               {ai("to", 17 /* FLOAT8E4M3FN */)}});
  c.push_back({"DeformConv_19", "DeformConv", "", 19,
               {f32("X", {1, 2, 5, 5}), f32("W", {3, 2, 3, 3}), f32("offset", {1, 18, 3, 3}, -1, 1), f32("B", {3})},
               {ais("kernel_shape", {3, 3})}});
  c.push_back({"DequantizeLinear_19_f16", "DequantizeLinear", "", 19,
               {typed("x", D::kUInt8, {3, 4}, 0, 255), constant("x_scale", D::kFloat16, {}, {0.5}),
                constant("x_zero_point", D::kUInt8, {}, {128})},
               {}});
  c.push_back({"Pad_19_wrap", "Pad", "", 19, {f32("X", {3, 4}), ints("pads", {1, 2, 1, 1})}, {as("mode", "wrap")}});
  c.push_back({"QuantizeLinear_19_f16", "QuantizeLinear", "", 19,
               {f16("x", {3, 4}), constant("y_scale", D::kFloat16, {}, {0.02}), constant("y_zero_point", D::kInt8, {}, {3})},
               {}});
  c.push_back({"Resize_19_half_pixel_symmetric", "Resize", "", 19,
               {f32("X", {1, 1, 3, 4}), none(), constant("scales", D::kFloat, {4}, {1, 1, 2.3, 0.6})},
               {as("mode", "linear"), as("coordinate_transformation_mode", "half_pixel_symmetric")}});
  // --- opset 20
  c.push_back({"AffineGrid_20", "AffineGrid", "", 20, {f32("theta", {2, 2, 3}, -1, 1), ints("size", {2, 3, 4, 5})},
               {ai("align_corners", 0)}});
  c.push_back({"DFT_20_axis_input", "DFT", "", 20,
               {f32("X", {2, 8, 1}), none(), constant("axis", D::kInt64, {}, {1})}, {ai("onesided", 1)}});
  c.push_back({"Gelu_20_tanh", "Gelu", "", 20, {f32("X", {4, 6}, -4, 4)}, {as("approximate", "tanh")}});
  c.push_back({"Gelu_20", "Gelu", "", 20, {f32("X", {4, 6}, -4, 4)}, {}});
  // Cubic with zero padding, and linear with border padding: onnxruntime clamps each cubic tap
  // under border padding where the spec's reference clamps the sample coordinate first.
  c.push_back({"GridSample_20_cubic", "GridSample", "", 20, {f32("X", {1, 2, 4, 5}), f32("grid", {1, 3, 3, 2}, -1.1, 1.1)},
               {as("mode", "cubic"), as("padding_mode", "zeros")}});
  c.push_back({"GridSample_20_linear_border", "GridSample", "", 20, {f32("X", {1, 2, 4, 5}), f32("grid", {1, 3, 3, 2}, -1.1, 1.1)},
               {as("mode", "linear"), as("padding_mode", "border")}});
  c.push_back({"IsNaN_20", "IsNaN", "", 20, {f32("X", {2, 3})}, {}});
  c.push_back({"ReduceMax_20_bool", "ReduceMax", "", 20, {typed("X", D::kBool, {3, 4}, -1, 1), ints("axes", {1})}, {}});
  // --- opset 21
  c.push_back({"DequantizeLinear_21_blocked", "DequantizeLinear", "", 21,
               {typed("x", D::kInt8, {4, 6}, -128, 127), constant("x_scale", D::kFloat, {4, 2}, {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8})},
               {ai("axis", 1), ai("block_size", 3)}});
  c.push_back({"QuantizeLinear_21_blocked", "QuantizeLinear", "", 21,
               {f32("x", {4, 6}, -10, 10), constant("y_scale", D::kFloat, {2, 6}, {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2}),
                constant("y_zero_point", D::kInt8, {2, 6}, {0, 1, 2, 3, 4, 5, -1, -2, -3, -4, -5, -6})},
               {ai("axis", 0), ai("block_size", 2)}});
  c.push_back({"GroupNormalization_21", "GroupNormalization", "", 21,
               {f32("X", {2, 4, 3, 3}), f32("scale", {4}), f32("bias", {4})}, {ai("num_groups", 2)}});
  c.push_back({"QLinearMatMul_21", "QLinearMatMul", "", 21,
               {typed("a", D::kUInt8, {3, 4}, 0, 255), constant("a_scale", D::kFloat, {}, {0.05}),
                constant("a_zero_point", D::kUInt8, {}, {120}), typed("b", D::kUInt8, {4, 5}, 0, 255),
                constant("b_scale", D::kFloat, {}, {0.03}), constant("b_zero_point", D::kUInt8, {}, {130}),
                constant("y_scale", D::kFloat, {}, {0.2}), constant("y_zero_point", D::kUInt8, {}, {128})},
               {}});
  // --- opset 22 (bfloat16 added to many ops; semantics unchanged): a few representatives
  c.push_back({"Conv_22", "Conv", "", 22, {f32("X", {1, 3, 7, 7}), f32("W", {4, 3, 3, 3}), f32("B", {4})},
               {ais("pads", {1, 1, 1, 1}), ais("strides", {2, 2})}});
  c.push_back({"EyeLike_22", "EyeLike", "", 22, {f32("X", {3, 5})}, {ai("k", 1)}});
  c.push_back({"Round_22", "Round", "", 22, {f32("X", {3, 5}, -5, 5)}, {}});
  c.push_back({"LpNormalization_22", "LpNormalization", "", 22, {f32("X", {3, 5})}, {ai("p", 1)}});
  // --- opset 23
  c.push_back({"RMSNormalization_23", "RMSNormalization", "", 23, {f32("X", {2, 3, 8}), f32("scale", {8})},
               {ai("axis", -1)}});
  c.push_back({"RotaryEmbedding_23", "RotaryEmbedding", "", 23,
               {f32("X", {1, 2, 3, 8}), f32("cos_cache", {4, 4}, -1, 1), f32("sin_cache", {4, 4}, -1, 1),
                constant("position_ids", D::kInt64, {1, 3}, {0, 2, 3})},
               {}});
  c.push_back({"Attention_23", "Attention", "", 23,
               {f32("Q", {1, 2, 3, 4}), f32("K", {1, 2, 5, 4}), f32("V", {1, 2, 5, 4})}, {}});
  c.push_back({"Attention_23_causal_gqa", "Attention", "", 23,
               {f32("Q", {1, 4, 3, 4}), f32("K", {1, 2, 3, 4}), f32("V", {1, 2, 3, 4})}, {ai("is_causal", 1)}});
  // --- opset 24
  c.push_back({"Swish_24", "Swish", "", 24, {f32("X", {3, 5}, -4, 4)}, {af("alpha", 1.5f)}});
  c.push_back({"TopK_24", "TopK", "", 24, {f32("X", {3, 6}), ints("K", {2})}, {}, 2});
  return c;
}

onnxtool::ir::Shape static_shape(const std::vector<int64_t>& dims) {
  onnxtool::ir::Shape s;
  for (int64_t d : dims) s.dims.push_back(onnxtool::ir::Dim::of(d));
  return s;
}

void write_case(const Case& k, const std::filesystem::path& dir, Lcg& rng) {
  namespace ir = onnxtool::ir;
  ir::Model m;
  m.ir_version = 10;
  m.set_opset_version(k.domain, k.opset);
  m.producer_name = "onnxtool-tests";
  m.graph = std::make_unique<ir::Graph>();
  ir::Graph& g = *m.graph;
  g.name = k.name;
  std::filesystem::create_directories(dir / "inputs");
  std::vector<ir::Value*> ins;
  for (const Input& in : k.inputs) {
    if (in.omitted) {
      ins.push_back(nullptr);
      continue;
    }
    const Tensor t = make_values(in, rng);
    if (in.initializer) {
      ins.push_back(g.add_initializer(onnxtool::runner::to_ir(t, in.name)));
    } else {
      ins.push_back(g.add_input(in.name, ir::TypeInfo::tensor(in.type, static_shape(in.shape))).value);
      onnxtool::runner::write_npy((dir / "inputs" / (in.name + ".npy")).string(), t);
    }
  }
  std::vector<std::string> outs;
  for (int i = 0; i < k.outputs; ++i) outs.push_back("Y" + std::to_string(i));
  ir::Node* n = g.add_node(k.op, ins, outs, k.domain, "node");
  for (const auto& a : k.attrs) n->set_attr(a());
  // Output types from shape inference (onnxruntime wants typed graph outputs).
  for (int i = 0; i < k.outputs; ++i) g.add_output(n->output(static_cast<size_t>(i)), std::nullopt);
  ir::DiagnosticSink sink;
  ir::infer_shapes(m, sink);
  for (auto& o : g.outputs)
    if (!o.type && o.value->type.kind != ir::TypeInfo::Kind::kUnset) o.type = o.value->type;
  ir::save_model(m, (dir / "model.onnx").string());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_opset_cases OUT_DIR\n";
    return 2;
  }
  try {
    const std::filesystem::path out = argv[1];
    std::filesystem::create_directories(out);
    std::ofstream list(out / "cases.txt");
    Lcg rng(20261122);
    for (const Case& k : cases()) {
      write_case(k, out / k.name, rng);
      list << k.name << "\n";
    }
  } catch (const onnxtool::Error& e) {
    std::cerr << "make_opset_cases: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "make_opset_cases: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
