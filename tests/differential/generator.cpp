#include "tests/differential/generator.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <sstream>

#include "ir/tensor.h"

namespace onnxtool::differential {
namespace {

constexpr int64_t kSymbolic = -1;  // a dim fixed only when the model runs (batch N, sequence S)
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

/// splitmix64: the same numbers on every platform and standard library.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [lo, hi], both included.
  int64_t range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1)); }
  bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }
  float real(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(static_cast<double>(next() >> 40) * 0x1.0p-24); }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[next() % v.size()]; }

 private:
  uint64_t state_;
};

/// A float value being built on, with its dims (kSymbolic where only the run fixes them).
struct T {
  ir::Value* v = nullptr;
  std::vector<int64_t> dims;
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  bool static_at(int64_t i) const { return dims[static_cast<size_t>(i)] != kSymbolic; }
  int64_t last() const { return dims.back(); }
};

/// How the seed's exporter writes constants: as initializers, or as Constant nodes; and whether
/// its model is of IR 3, where every initializer is also a graph input.
struct ExporterStyle {
  bool constant_nodes = false;
  bool ir3 = false;
};

class Builder {
 public:
  Builder(ir::Model& model, int64_t opset, ExporterStyle style)
      : opset_(opset), style_(style), root_(model.graph.get()), g_(model.graph.get()) {}

  int64_t opset() const { return opset_; }
  ir::Graph* graph() const { return g_; }
  /// Builds into `g` (an If/Loop body) until leave() gets the graph enter() returned.
  ir::Graph* enter(ir::Graph* g) { std::swap(g, g_); return g; }
  void leave(ir::Graph* previous) { g_ = previous; }

  std::string fresh(const std::string& base) { return base + "_" + std::to_string(++counter_); }

  /// A constant as the seed's exporter writes it. Before opset 9 a Constant node holds
  /// floating-point tensors only; before IR 4 a subgraph's initializers would have to be its
  /// inputs, so there its constants are nodes.
  ir::Value* constant(ir::Tensor t) {
    const bool floating = t.type() == ir::DataType::kFloat;
    const bool as_node = (style_.constant_nodes || (style_.ir3 && g_ != root_)) && (floating || opset_ >= 9);
    if (!as_node) return g_->add_initializer(std::move(t));
    const std::string name = t.name;
    ir::Node* n = g_->add_node("Constant", {}, {name}, "", name + "_node");
    n->set_attr(ir::Attribute::make_tensor("value", std::move(t)));
    return n->output(0);
  }
  ir::Value* floats(const std::vector<int64_t>& dims, Rng& rng, float lo, float hi) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = rng.real(lo, hi);
    return constant(ir::make_tensor(fresh("w"), ir::DataType::kFloat, dims, v.data(), v.size() * sizeof(float)));
  }
  ir::Value* scalar(float v) { return constant(ir::make_tensor(fresh("c"), ir::DataType::kFloat, {}, &v, sizeof v)); }
  ir::Value* ints(const std::vector<int64_t>& v) {
    return constant(ir::make_tensor(fresh("i"), ir::DataType::kInt64, {static_cast<int64_t>(v.size())}, v.data(),
                                    v.size() * sizeof(int64_t)));
  }
  ir::Value* int_scalar(int64_t v) { return constant(ir::make_tensor(fresh("i"), ir::DataType::kInt64, {}, &v, sizeof v)); }
  ir::Value* bool_scalar(bool b) {
    const uint8_t v = b ? 1 : 0;
    return constant(ir::make_tensor(fresh("b"), ir::DataType::kBool, {}, &v, 1));
  }

  ir::Node* node(const std::string& op, std::vector<ir::Value*> inputs, size_t outputs = 1) {
    std::vector<std::string> names;
    const std::string base = fresh(lower(op));
    for (size_t i = 0; i < outputs; ++i) names.push_back(outputs == 1 ? base : base + "_" + std::to_string(i));
    return g_->add_node(op, std::move(inputs), names, "", base + "_node");
  }
  ir::Value* op(const std::string& op, std::vector<ir::Value*> inputs) { return node(op, std::move(inputs))->output(0); }
  ir::Value* op(const std::string& op, std::vector<ir::Value*> inputs, ir::Attribute a) {
    ir::Node* n = node(op, std::move(inputs));
    n->set_attr(std::move(a));
    return n->output(0);
  }

  // Ops whose form changed with the opset.
  ir::Value* unsqueeze(ir::Value* x, const std::vector<int64_t>& axes) {
    if (opset_ >= 13) return op("Unsqueeze", {x, ints(axes)});
    return op("Unsqueeze", {x}, ir::Attribute::make_ints("axes", axes));
  }
  ir::Value* squeeze(ir::Value* x, const std::vector<int64_t>& axes) {
    if (opset_ >= 13) return op("Squeeze", {x, ints(axes)});
    return op("Squeeze", {x}, ir::Attribute::make_ints("axes", axes));
  }
  ir::Value* reduce_mean(ir::Value* x, const std::vector<int64_t>& axes, bool keepdims) {
    ir::Node* n = node("ReduceMean", {x});
    if (!axes.empty()) n->set_attr(ir::Attribute::make_ints("axes", axes));
    n->set_attr(ir::Attribute::make_int("keepdims", keepdims ? 1 : 0));
    return n->output(0);
  }
  /// Slice; before opset 10 its attributes, where `steps` must be empty or all 1.
  ir::Value* slice(ir::Value* x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                   const std::vector<int64_t>& axes, const std::vector<int64_t>& steps) {
    if (opset_ < 10) {
      ir::Node* n = node("Slice", {x});
      n->set_attr(ir::Attribute::make_ints("starts", starts));
      n->set_attr(ir::Attribute::make_ints("ends", ends));
      if (!axes.empty()) n->set_attr(ir::Attribute::make_ints("axes", axes));
      return n->output(0);
    }
    std::vector<ir::Value*> in{x, ints(starts), ints(ends)};
    if (!axes.empty() || !steps.empty()) in.push_back(axes.empty() ? nullptr : ints(axes));
    if (!steps.empty()) in.push_back(ints(steps));
    return op("Slice", in);
  }
  ir::Value* clip(ir::Value* x, float lo, float hi) {
    if (opset_ >= 11) return op("Clip", {x, scalar(lo), scalar(hi)});
    ir::Node* n = node("Clip", {x});
    n->set_attr(ir::Attribute::make_float("min", lo));
    n->set_attr(ir::Attribute::make_float("max", hi));
    return n->output(0);
  }
  /// Constant-mode Pad; before opset 11 the pads are an attribute.
  ir::Value* pad(ir::Value* x, const std::vector<int64_t>& pads) {
    if (opset_ >= 11) return op("Pad", {x, ints(pads)});
    return op("Pad", {x}, ir::Attribute::make_ints("pads", pads));
  }
  /// An axis to write for dim `axis` of a rank-`rank` value: negative ones only from opset 11.
  int64_t axis(int64_t axis, int64_t rank) const { return opset_ < 11 && axis < 0 ? axis + rank : axis; }

 private:
  static std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  }

  int64_t opset_;
  ExporterStyle style_;
  ir::Graph* root_;
  ir::Graph* g_;
  int counter_ = 0;
};

/// The state the blocks build on: the current float value, extra outputs, intermediates.
struct State {
  Builder& b;
  T cur;
  std::vector<ir::Value*> int_outputs;    // shape arithmetic results, compared exactly
  std::vector<ir::Value*> intermediates;  // float values a block produced (candidates for extra outputs)
};

/// Broadcasting a constant of `cdims` (aligned to the right; 1 or equal to the current dims) onto x.
std::vector<int64_t> broadcast(const std::vector<int64_t>& x, const std::vector<int64_t>& c) {
  std::vector<int64_t> out = x;
  if (c.size() > x.size()) out.insert(out.begin(), c.size() - x.size(), 1);
  for (size_t i = 0; i < c.size(); ++i) {
    int64_t& o = out[out.size() - c.size() + i];
    if (c[i] != 1) o = c[i];
  }
  return out;
}

/// A constant shape that broadcasts onto `dims` without growing a symbolic dim: a scalar, the
/// last dim, per channel, the whole static shape, or one rank more.
std::vector<int64_t> constant_dims(const std::vector<int64_t>& dims, Rng& rng) {
  const auto fixed = [](int64_t d) { return d == kSymbolic ? 1 : d; };
  switch (rng.range(0, 5)) {
    case 0: return {};
    case 1: return {fixed(dims.back())};
    case 2:
      if (dims.size() >= 3) {
        std::vector<int64_t> c(dims.size() - 1, 1);
        c[0] = fixed(dims[1]);
        return c;
      }
      return {1};
    case 3: {
      std::vector<int64_t> c;
      for (size_t i = dims.size() > 1 ? 1 : 0; i < dims.size(); ++i) c.push_back(fixed(dims[i]));
      return c;
    }
    case 4: {
      std::vector<int64_t> c;
      for (int64_t d : dims) c.push_back(fixed(d));
      return c;
    }
    default: {  // one rank more: the output grows a leading 1
      std::vector<int64_t> c{1};
      for (int64_t d : dims) c.push_back(rng.chance(0.5) ? fixed(d) : 1);
      return c;
    }
  }
}

ir::Value* unary(Builder& b, ir::Value* x, Rng& rng) {
  switch (rng.range(0, 7)) {
    case 0: return b.op("Relu", {x});
    case 1: return b.op("Sigmoid", {x});
    case 2: return b.op("Tanh", {x});
    case 3: return b.op("Abs", {x});
    case 4: return b.op("Neg", {x});
    case 5: return b.op("LeakyRelu", {x}, ir::Attribute::make_float("alpha", rng.real(0.01f, 0.3f)));
    case 6: return b.opset() >= 9 ? b.op("Erf", {x}) : b.op("Softsign", {x});
    default: return b.op("Softplus", {x});
  }
}

// ------------------------------------------------------------------ blocks

void elementwise(State& s, Rng& rng) {
  Builder& b = s.b;
  const int64_t steps = rng.range(1, 4);
  for (int64_t k = 0; k < steps; ++k) {
    const int64_t kind = rng.range(0, 9);
    if (kind <= 1) {
      s.cur.v = unary(b, s.cur.v, rng);
      continue;
    }
    std::vector<int64_t> cd = constant_dims(s.cur.dims, rng);
    ir::Value* c = nullptr;
    std::string op;
    switch (kind) {
      case 2: op = "Add"; c = b.floats(cd, rng, -1, 1); break;
      case 3: op = "Sub"; c = b.floats(cd, rng, -1, 1); break;
      case 4: op = "Mul"; c = b.floats(cd, rng, -1.5f, 1.5f); break;
      case 5: op = "Div"; c = b.floats(cd, rng, 0.5f, 2); break;
      case 6: {
        op = rng.chance(0.5) ? "Max" : "Min";
        // Before opset 8 they take inputs of one shape: a constant of x's own shape, as the
        // exporters of the time wrote it (an Add where a dim is symbolic).
        if (b.opset() < 8) {
          if (std::find(s.cur.dims.begin(), s.cur.dims.end(), kSymbolic) != s.cur.dims.end()) op = "Add";
          else cd = s.cur.dims;
        }
        c = b.floats(cd, rng, -0.5f, 0.5f);
        break;
      }
      case 7: {  // a no-op constant (x + 0, x * 1) that may still broadcast the shape
        op = rng.chance(0.5) ? "Add" : "Mul";
        c = b.floats(cd, rng, op == "Add" ? 0.0f : 1.0f, op == "Add" ? 0.0f : 1.0f);
        break;
      }
      case 8: {  // constant arithmetic to fold: x + (c1 * c2)
        op = "Add";
        c = b.op("Mul", {b.floats(cd, rng, -1, 1), b.floats(cd, rng, -1, 1)});
        break;
      }
      default: op = "Pow"; c = b.scalar(2); cd.clear(); break;
    }
    s.cur.v = rng.chance(0.2) && op != "Pow" && op != "Div" && op != "Sub" ? b.op(op, {c, s.cur.v}) : b.op(op, {s.cur.v, c});
    s.cur.dims = broadcast(s.cur.dims, cd);
  }
}

/// Flattens to [N, -1] through the shape, optionally works there, and reshapes back to x.shape.
void shape_reshape(State& s, Rng& rng) {
  Builder& b = s.b;
  if (s.cur.rank() < 2) return;
  ir::Value* x = s.cur.v;
  ir::Value* shape = b.op("Shape", {x});
  ir::Value* target = nullptr;
  switch (rng.range(0, 4)) {
    case 0: target = b.op("Concat", {b.slice(shape, {0}, {1}, {}, {}), b.ints({-1})}, ir::Attribute::make_int("axis", 0)); break;
    case 4: {  // tf2onnx: each kept dim gathered and unsqueezed, then concatenated with -1
      std::vector<ir::Value*> parts;
      for (int64_t i = 0; i + 1 < s.cur.rank(); ++i)
        parts.push_back(b.unsqueeze(b.op("Gather", {shape, b.int_scalar(i)}, ir::Attribute::make_int("axis", 0)), {0}));
      parts.push_back(b.ints({-1}));
      target = b.op("Concat", parts, ir::Attribute::make_int("axis", 0));
      break;
    }
    case 1: {
      ir::Value* n = b.op("Gather", {shape, b.int_scalar(0)}, ir::Attribute::make_int("axis", 0));
      target = b.op("Concat", {b.unsqueeze(n, {0}), b.ints({-1})}, ir::Attribute::make_int("axis", 0));
      break;
    }
    case 2: target = b.ints({0, -1}); break;
    default: target = b.op("Concat", {b.op("Gather", {shape, b.ints({0})}), b.ints({-1})}, ir::Attribute::make_int("axis", 0)); break;
  }
  ir::Value* flat = b.op("Reshape", {x, target});
  if (rng.chance(0.6)) flat = unary(b, flat, rng);
  s.intermediates.push_back(flat);
  s.cur.v = b.op("Reshape", {flat, rng.chance(0.5) ? shape : b.op("Shape", {x})});
}

/// `x.shape[a:b:c]` with the ends exporters write (INT64_MAX for "to the end", INT64_MIN with a
/// negative step for "to the front"), as an int64 output.
void shape_slice_output(State& s, Rng& rng) {
  Builder& b = s.b;
  const int64_t r = s.cur.rank();
  ir::Value* shape = nullptr;
  if (b.opset() >= 15 && rng.chance(0.25)) {
    ir::Node* n = b.node("Shape", {s.cur.v});
    n->set_attr(ir::Attribute::make_int("start", rng.range(-r - 1, r)));
    if (rng.chance(0.5)) n->set_attr(ir::Attribute::make_int("end", rng.pick(std::vector<int64_t>{-1, r, r + 3, 1})));
    shape = n->output(0);
  } else {
    shape = b.op("Shape", {s.cur.v});
  }
  const std::vector<int64_t> starts{0, 1, -1, -r, r, kMin, kMax, -r - 5, 2};
  const std::vector<int64_t> ends{kMax, kMin, -1, r, 1, 0, kMax - 1, kMin + 1, r + 7};
  const int64_t step = b.opset() < 10 ? 1 : rng.pick(std::vector<int64_t>{1, 1, -1, 2, -2, kMax, kMin + 1});
  int64_t end = rng.pick(ends);
  // onnxruntime 1.30 reads an end of INT64_MAX with a negative step as "to the front" (x[2::-1]
  // of 3 elements: [x2, x1, x0]); the spec clamps it to dim - 1, which leaves nothing, and so does
  // onnxtool. Exporters write INT64_MIN for that end, so the generator does too.
  if (step < 0 && end == kMax) end = kMin;
  const int64_t start = rng.pick(starts);
  std::vector<int64_t> axes = rng.chance(0.5) ? std::vector<int64_t>{0} : std::vector<int64_t>{};
  const std::vector<int64_t> steps = step == 1 && rng.chance(0.5) ? std::vector<int64_t>{} : std::vector<int64_t>{step};
  // onnxruntime 1.30 removes a Slice from 0 to INT64_MAX without axes as a no-op, whatever its
  // step (x[0::2] of 4 elements gives all 4); with the axes given it takes every step-th, as
  // the spec and onnxtool do. The generator gives the axes there.
  if (start == 0 && end == kMax && step != 1) axes = {0};
  ir::Value* y = b.slice(shape, {start}, {end}, axes, steps);
  if (rng.chance(0.4)) {  // shape arithmetic on the result: concatenated with a constant, or Gathered
    // Gather's negative indices came with opset 11: before, the constant goes first.
    const bool last = b.opset() >= 11;
    y = rng.chance(0.5) ? b.op("Concat", {y, b.ints({7, -3})}, ir::Attribute::make_int("axis", 0))
                        : b.op("Gather", {b.op("Concat", last ? std::vector<ir::Value*>{y, b.ints({5})} : std::vector<ir::Value*>{b.ints({5}), y},
                                                ir::Attribute::make_int("axis", 0)),
                                          b.ints({last ? -1 : 0})});
  }
  s.int_outputs.push_back(y);
}

void constant_of_shape(State& s, Rng& rng) {
  Builder& b = s.b;
  if (s.cur.rank() < 2) return;
  ir::Value* tail = b.slice(b.op("Shape", {s.cur.v}), {1}, {kMax}, {}, {});
  const float k = rng.real(-1, 1);
  ir::Value* c = b.op("ConstantOfShape", {tail},
                      ir::Attribute::make_tensor("value", ir::make_tensor("value", ir::DataType::kFloat, {1}, &k, sizeof k)));
  s.cur.v = b.op("Add", {s.cur.v, c});
}

void expand(State& s, Rng& rng) {
  Builder& b = s.b;
  std::vector<int64_t> cd = constant_dims(s.cur.dims, rng);
  if (cd.size() > s.cur.dims.size()) cd.erase(cd.begin());  // Expand to x.shape: no rank growth
  ir::Value* e = b.op("Expand", {b.floats(cd, rng, 0.5f, 1.5f), b.op("Shape", {s.cur.v})});
  s.cur.v = b.op("Mul", {s.cur.v, e});
}

void range(State& s, Rng& rng) {
  Builder& b = s.b;
  ir::Value* limit = b.op("Gather", {b.op("Shape", {s.cur.v}), b.int_scalar(-1)}, ir::Attribute::make_int("axis", 0));
  ir::Value* r = b.op("Range", {b.int_scalar(0), limit, b.int_scalar(1)});
  ir::Value* f = b.op("Cast", {r}, ir::Attribute::make_int("to", static_cast<int64_t>(ir::DataType::kFloat)));
  s.cur.v = b.op("Add", {s.cur.v, b.op("Mul", {f, b.scalar(rng.real(0.05f, 0.3f))})});
}

/// A piecewise-linear activation through Where: x beyond the threshold t, else t + (x - t) * k.
/// Continuous at t, so that rounding (float16) that moves an element across t moves its result
/// by no more than the rounding.
void where(State& s, Rng& rng) {
  Builder& b = s.b;
  const float t = rng.real(-0.3f, 0.3f);
  ir::Value* cond = b.op(rng.chance(0.5) ? "Greater" : "Less", {s.cur.v, b.scalar(t)});
  ir::Value* other = b.op("Add", {b.op("Mul", {b.op("Sub", {s.cur.v, b.scalar(t)}), b.scalar(rng.real(-0.5f, 0.5f))}), b.scalar(t)});
  s.cur.v = b.op("Where", {cond, s.cur.v, other});
}

void squeeze_unsqueeze(State& s, Rng& rng) {
  Builder& b = s.b;
  const int64_t r = s.cur.rank();
  const int64_t axis = b.axis(rng.range(-r - 1, r), r + 1);
  ir::Value* u = b.unsqueeze(s.cur.v, {axis});
  if (rng.chance(0.5)) u = unary(b, u, rng);
  s.intermediates.push_back(u);
  s.cur.v = b.squeeze(u, {axis});
}

void conv_stack(State& s, Rng& rng) {
  Builder& b = s.b;
  T& x = s.cur;
  if (x.rank() != 4 || !x.static_at(1) || !x.static_at(2) || !x.static_at(3)) return;
  int64_t c = x.dims[1], h = x.dims[2], w = x.dims[3];
  if (rng.chance(0.3)) {  // explicit zero padding before the convolution (fuse_pad_conv)
    const int64_t ph = rng.range(0, 2), pw = rng.range(0, 2);
    x.v = b.pad(x.v, {0, 0, ph, pw, 0, 0, ph, pw});
    h += 2 * ph;
    w += 2 * pw;
  }
  const int64_t k = std::min({rng.pick(std::vector<int64_t>{1, 3}), h, w});
  const int64_t stride = rng.range(1, 2);
  const int64_t pad = rng.chance(0.5) ? k / 2 : 0;
  const bool depthwise = c > 1 && rng.chance(0.3);
  const int64_t co = depthwise ? c : rng.range(1, 8);
  const int64_t group = depthwise ? c : 1;
  const float scale = 1.0f / std::sqrt(static_cast<float>(c / group * k * k));
  std::vector<ir::Value*> in{x.v, b.floats({co, c / group, k, k}, rng, -scale, scale)};
  if (rng.chance(0.6)) in.push_back(b.floats({co}, rng, -0.5f, 0.5f));
  ir::Node* conv = b.node("Conv", in);
  conv->set_attr(ir::Attribute::make_ints("kernel_shape", {k, k}));
  conv->set_attr(ir::Attribute::make_ints("strides", {stride, stride}));
  conv->set_attr(ir::Attribute::make_ints("pads", {pad, pad, pad, pad}));
  if (group > 1) conv->set_attr(ir::Attribute::make_int("group", group));
  ir::Value* y = conv->output(0);
  h = (h + 2 * pad - k) / stride + 1;
  w = (w + 2 * pad - k) / stride + 1;
  if (rng.chance(0.6)) {
    ir::Node* bn = b.node("BatchNormalization", {y, b.floats({co}, rng, 0.5f, 1.5f), b.floats({co}, rng, -0.5f, 0.5f),
                                                 b.floats({co}, rng, -0.5f, 0.5f), b.floats({co}, rng, 0.2f, 2)});
    bn->set_attr(ir::Attribute::make_float("epsilon", 1e-5f));
    y = bn->output(0);
  }
  switch (rng.range(0, 6)) {
    case 0: y = b.op("Relu", {y}); break;
    case 1: y = b.clip(y, 0, 6); break;
    case 2:
      y = b.opset() >= 14 ? b.op("HardSwish", {y})
                          : b.op("Mul", {y, b.op("HardSigmoid", {y}, ir::Attribute::make_float("alpha", 1.0f / 6))});
      break;
    case 3:  // HardSwish as exported from x * relu6(x + 3) / 6
      y = b.op("Div", {b.op("Mul", {y, b.clip(b.op("Add", {y, b.scalar(3)}), 0, 6)}), b.scalar(6)});
      break;
    case 4: y = b.op("Mul", {y, b.op("Sigmoid", {y})}); break;
    case 5: y = b.op("LeakyRelu", {y}, ir::Attribute::make_float("alpha", 0.1f)); break;
    default: break;
  }
  if (rng.chance(0.4)) y = b.op(rng.chance(0.5) ? "Mul" : "Add", {y, b.floats({co, 1, 1}, rng, 0.5f, 1.5f)});
  s.intermediates.push_back(y);
  x.v = y;
  x.dims = {x.dims[0], co, h, w};
}

void matmul_add(State& s, Rng& rng) {
  Builder& b = s.b;
  T& x = s.cur;
  if (!x.static_at(x.rank() - 1)) return;
  const int64_t d = x.last(), d2 = rng.range(1, 8);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  if (x.rank() == 2 && rng.chance(0.4)) {  // Gemm with a transposed weight, as tf2onnx writes it
    ir::Node* n = b.node("Gemm", {x.v, b.floats({d2, d}, rng, -scale, scale), b.floats({d2}, rng, -0.5f, 0.5f)});
    n->set_attr(ir::Attribute::make_int("transB", 1));
    x.v = n->output(0);
  } else {
    x.v = b.op("MatMul", {x.v, b.floats({d, d2}, rng, -scale, scale)});
    if (rng.chance(0.8)) x.v = b.op("Add", {x.v, b.floats({d2}, rng, -0.5f, 0.5f)});
  }
  x.dims.back() = d2;
  if (rng.chance(0.5)) x.v = b.op("Relu", {x.v});
  s.intermediates.push_back(x.v);
}

std::vector<int64_t> permutation(int64_t r, Rng& rng) {
  std::vector<int64_t> p(static_cast<size_t>(r));
  std::iota(p.begin(), p.end(), 0);
  for (int64_t i = r - 1; i > 0; --i) std::swap(p[static_cast<size_t>(i)], p[static_cast<size_t>(rng.range(0, i))]);
  return p;
}

void transpose_chain(State& s, Rng& rng) {
  Builder& b = s.b;
  T& x = s.cur;
  const auto apply = [&](const std::vector<int64_t>& perm) {
    x.v = b.op("Transpose", {x.v}, ir::Attribute::make_ints("perm", perm));
    std::vector<int64_t> d;
    for (int64_t p : perm) d.push_back(x.dims[static_cast<size_t>(p)]);
    x.dims = d;
  };
  const std::vector<int64_t> first = permutation(x.rank(), rng);
  apply(first);
  if (rng.chance(0.3)) x.v = unary(b, x.v, rng);
  if (rng.chance(0.6)) {  // back to the original order
    std::vector<int64_t> inverse(first.size());
    for (size_t i = 0; i < first.size(); ++i) inverse[static_cast<size_t>(first[i])] = static_cast<int64_t>(i);
    apply(inverse);
  } else {
    apply(permutation(x.rank(), rng));
  }
}

/// LayerNorm over the last axis, decomposed as PyTorch < 1.13 and tf2onnx export it.
void layernorm(State& s, Rng& rng) {
  Builder& b = s.b;
  T& x = s.cur;
  // Normalizing a handful of values, or a row of equal ones (zero padding through a convolution),
  // is ill-conditioned: d / sqrt(d^2 + eps) turns the float32 rounding of the mean into noise of
  // the output's own size, different in every runtime. As in real models, a linear layer of 8-16
  // features comes first.
  {
    const int64_t d = x.static_at(x.rank() - 1) ? x.last() : 1, d2 = rng.range(8, 16);
    if (!x.static_at(x.rank() - 1)) x.v = b.op("ReduceMean", {x.v}, ir::Attribute::make_ints("axes", {b.axis(-1, x.rank())}));
    x.v = b.op("MatMul", {x.v, b.floats({d, d2}, rng, -1, 1)});
    x.dims.back() = d2;
  }
  ir::Value* mean = b.reduce_mean(x.v, {b.axis(-1, x.rank())}, true);
  ir::Value* d = b.op("Sub", {x.v, mean});
  ir::Value* sq = rng.chance(0.5) ? b.op("Pow", {d, b.scalar(2)}) : b.op("Mul", {d, d});
  ir::Value* var = b.reduce_mean(sq, {b.axis(-1, x.rank())}, true);
  ir::Value* den = b.op("Sqrt", {b.op("Add", {var, b.scalar(rng.pick(std::vector<float>{1e-5f, 1e-6f, 1e-12f}))})});
  ir::Value* n = b.op("Div", {d, den});
  const std::vector<int64_t> pd = x.static_at(x.rank() - 1) ? std::vector<int64_t>{x.last()} : std::vector<int64_t>{};
  if (rng.chance(0.8)) n = b.op("Mul", {n, b.floats(pd, rng, 0.5f, 1.5f)});
  if (rng.chance(0.8)) n = b.op("Add", {n, b.floats(pd, rng, -0.5f, 0.5f)});
  x.v = n;
}

void gelu(State& s, Rng& rng) {
  Builder& b = s.b;
  ir::Value* x = s.cur.v;
  if (rng.chance(0.6) && b.opset() >= 9) {  // 0.5 * x * (1 + erf(x / sqrt(2)))
    ir::Value* e = b.op("Erf", {rng.chance(0.5) ? b.op("Div", {x, b.scalar(1.4142135f)}) : b.op("Mul", {x, b.scalar(0.70710678f)})});
    ir::Value* one = b.op("Add", {e, b.scalar(1)});
    s.cur.v = rng.chance(0.5) ? b.op("Mul", {b.op("Mul", {x, one}), b.scalar(0.5f)}) : b.op("Mul", {b.op("Mul", {x, b.scalar(0.5f)}), one});
  } else {  // the tanh approximation
    ir::Value* cube = b.op("Pow", {x, b.scalar(3)});
    ir::Value* inner = b.op("Mul", {b.op("Add", {x, b.op("Mul", {cube, b.scalar(0.044715f)})}), b.scalar(0.7978846f)});
    s.cur.v = b.op("Mul", {b.op("Mul", {x, b.scalar(0.5f)}), b.op("Add", {b.op("Tanh", {inner}), b.scalar(1)})});
  }
}

/// Nearest upsampling by 2 of the spatial dims as each opset writes it: Upsample with a scales
/// attribute (7-8) or input (9), Resize-10, and Resize-11 on with the sampling of Resize-10.
void upsample(State& s, Rng& rng) {
  Builder& b = s.b;
  T& x = s.cur;
  if (x.rank() != 4) return;
  const float sh = rng.chance(0.7) ? 2 : 1, sw = 2;
  const std::vector<float> scales{1, 1, sh, sw};
  const auto scales_input = [&] {
    return b.constant(ir::make_tensor(b.fresh("scales"), ir::DataType::kFloat, {4}, scales.data(), scales.size() * sizeof(float)));
  };
  if (b.opset() < 9) {
    x.v = b.op("Upsample", {x.v}, ir::Attribute::make_floats("scales", scales));
  } else if (b.opset() == 9) {
    x.v = b.op("Upsample", {x.v, scales_input()});
  } else if (b.opset() == 10) {
    x.v = b.op("Resize", {x.v, scales_input()});
  } else {
    const std::vector<float> none;
    ir::Node* n = b.node("Resize", {x.v, b.constant(ir::make_tensor(b.fresh("roi"), ir::DataType::kFloat, {0}, none.data(), 0)), scales_input()});
    n->set_attr(ir::Attribute::make_string("coordinate_transformation_mode", "asymmetric"));
    n->set_attr(ir::Attribute::make_string("nearest_mode", "floor"));
    x.v = n->output(0);
  }
  for (size_t i = 2; i < 4; ++i)
    if (x.dims[i] != kSymbolic) x.dims[i] *= static_cast<int64_t>(scales[i]);
  if (x.dims[2] == kSymbolic || x.dims[3] == kSymbolic) x.dims[2] = x.dims[3] = kSymbolic;
}

/// A Pad of zeros on every side: exporters write one for a padding that works out to nothing.
void zero_pad(State& s, Rng&) { s.cur.v = s.b.pad(s.cur.v, std::vector<int64_t>(2 * static_cast<size_t>(s.cur.rank()), 0)); }

/// Dropout left in an inference graph, sometimes with its (unused) mask output.
void dropout(State& s, Rng& rng) {
  Builder& b = s.b;
  const float ratio = rng.real(0.1f, 0.5f);
  std::vector<ir::Value*> in{s.cur.v};
  if (b.opset() >= 12 && rng.chance(0.5)) in.push_back(b.scalar(ratio));
  ir::Node* n = b.node("Dropout", in, rng.chance(0.3) ? 2 : 1);
  if (b.opset() < 12) n->set_attr(ir::Attribute::make_float("ratio", ratio));
  s.cur.v = n->output(0);
}

/// A classifier head: Flatten, Gemm with a transposed weight, sometimes Softmax.
void classifier_head(State& s, Rng& rng) {
  Builder& b = s.b;
  T& x = s.cur;
  int64_t features = 1;
  for (int64_t i = 1; i < x.rank(); ++i) {
    if (!x.static_at(i)) return;
    features *= x.dims[static_cast<size_t>(i)];
  }
  if (x.rank() < 2 || features > 512) return;
  const int64_t classes = rng.range(2, 10);
  const float scale = 1.0f / std::sqrt(static_cast<float>(features));
  ir::Value* flat = b.op("Flatten", {x.v}, ir::Attribute::make_int("axis", 1));
  ir::Node* gemm = b.node("Gemm", {flat, b.floats({classes, features}, rng, -scale, scale), b.floats({classes}, rng, -0.5f, 0.5f)});
  gemm->set_attr(ir::Attribute::make_int("transB", 1));
  x.v = gemm->output(0);
  x.dims = {x.dims[0], classes};
  s.intermediates.push_back(x.v);
  if (rng.chance(0.5)) x.v = b.op("Softmax", {x.v}, ir::Attribute::make_int("axis", 1));
}

/// tf2onnx's layout sandwich: to NHWC, per-channel elementwise work on the last axis, back to NCHW.
void nhwc_sandwich(State& s, Rng& rng) {
  Builder& b = s.b;
  T& x = s.cur;
  if (x.rank() != 4 || !x.static_at(1)) return;
  ir::Value* y = b.op("Transpose", {x.v}, ir::Attribute::make_ints("perm", {0, 2, 3, 1}));
  y = b.op("Mul", {y, b.floats({x.dims[1]}, rng, 0.5f, 1.5f)});
  y = b.op("Add", {y, b.floats({x.dims[1]}, rng, -0.5f, 0.5f)});
  if (rng.chance(0.5)) y = unary(b, y, rng);
  x.v = b.op("Transpose", {y}, ir::Attribute::make_ints("perm", {0, 3, 1, 2}));
}

ir::Graph* add_body(ir::Node* owner, const std::string& attr, const std::string& name) {
  ir::Attribute a;
  a.name = attr;
  a.type = static_cast<int32_t>(ir::AttrType::kGraph);
  a.g = std::make_unique<ir::Graph>(owner->graph());
  a.g->name = name;
  ir::Graph* body = a.g.get();
  owner->set_attr(std::move(a));
  return body;
}

/// If on a data-dependent (or constant) condition; both branches read x from the outer scope.
void if_outer(State& s, Rng& rng) {
  Builder& b = s.b;
  ir::Value* x = s.cur.v;
  ir::Value* cond = rng.chance(0.3) ? b.bool_scalar(rng.chance(0.5))
                                    : b.op("Greater", {b.reduce_mean(x, {}, false), b.scalar(rng.real(-0.2f, 0.2f))});
  std::vector<int64_t> cd = constant_dims(s.cur.dims, rng);
  if (cd.size() > s.cur.dims.size()) cd.erase(cd.begin());  // both branches keep x's shape
  ir::Value* outer_c = b.floats(cd, rng, -1.5f, 1.5f);
  ir::Node* n = b.node("If", {cond});
  for (const char* branch : {"then_branch", "else_branch"}) {
    ir::Graph* previous = b.enter(add_body(n, branch, b.fresh(branch)));
    ir::Value* y = std::string(branch) == "then_branch" ? b.op("Mul", {x, outer_c}) : unary(b, b.op("Add", {x, b.scalar(rng.real(-1, 1))}), rng);
    b.graph()->add_output(y, ir::TypeInfo::tensor(ir::DataType::kFloat));
    b.leave(previous);
  }
  s.cur.v = n->output(0);
}

/// Loop of 1-3 iterations: v = v * c + x, x read from the outer scope.
void loop_outer(State& s, Rng& rng) {
  Builder& b = s.b;
  ir::Value* x = s.cur.v;
  ir::Value* c = b.scalar(rng.real(0.2f, 0.7f));
  ir::Node* n = b.node("Loop", {b.int_scalar(rng.range(1, 3)), b.bool_scalar(true), x});
  ir::Graph* previous = b.enter(add_body(n, "body", b.fresh("loop_body")));
  ir::Graph* body = b.graph();
  ir::Shape scalar_shape;
  body->add_input(b.fresh("iter"), ir::TypeInfo::tensor(ir::DataType::kInt64, scalar_shape));
  ir::Value* cond_in = body->add_input(b.fresh("cond_in"), ir::TypeInfo::tensor(ir::DataType::kBool, scalar_shape)).value;
  ir::Value* v = body->add_input(b.fresh("v_in"), ir::TypeInfo::tensor(ir::DataType::kFloat)).value;
  ir::Value* cond_out = b.op("Identity", {cond_in});
  ir::Value* v_out = b.op("Add", {b.op("Mul", {v, c}), x});
  body->add_output(cond_out, ir::TypeInfo::tensor(ir::DataType::kBool, scalar_shape));
  body->add_output(v_out, ir::TypeInfo::tensor(ir::DataType::kFloat));
  b.leave(previous);
  s.cur.v = n->output(0);
}

// ------------------------------------------------------------------ detector and classifier heads
// What detectors (CenterNet, MoveNet, BlazeFace-like heads, from tf2onnx and PyTorch) and
// classification heads end with: pooling, Resize, peak picking, reductions, and the Reshape or
// Flatten of pooled outputs.

/// An [N,C,H,W] value whose C, H and W are fixed: what the window blocks work on.
bool is_image(const T& x) { return x.rank() == 4 && x.static_at(1) && x.static_at(2) && x.static_at(3); }

ir::Value* float_list(Builder& b, const std::vector<float>& v) {
  return b.graph()->add_initializer(ir::make_tensor(b.fresh("f"), ir::DataType::kFloat, {static_cast<int64_t>(v.size())},
                                                    v.data(), v.size() * sizeof(float)));
}

/// Output size of a pooling window along one axis, as the spec computes it for explicit pads
/// (with ceil_mode, a last window that would start in the trailing pad is dropped).
int64_t pooled_size(int64_t in, int64_t k, int64_t stride, int64_t pad_begin, int64_t pad_end, bool ceil_mode) {
  const int64_t room = in + pad_begin + pad_end - k;
  int64_t out = (ceil_mode ? (room + stride - 1) / stride : room / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

/// Flattens a pooled [N,C,h,w] value as heads do before a classifier or a list of scores:
/// Flatten, Reshape to [N,-1] or to [N,C,-1].
void flatten_pooled(State& s, Rng& rng) {
  Builder& b = s.b;
  T& x = s.cur;
  const int64_t c = x.dims[1], hw = x.dims[2] * x.dims[3];
  switch (rng.range(0, 2)) {
    case 0:
      x.v = b.op("Flatten", {x.v}, ir::Attribute::make_int("axis", 1));
      x.dims = {x.dims[0], c * hw};
      break;
    case 1:
      x.v = b.op("Reshape", {x.v, b.ints({0, -1})});
      x.dims = {x.dims[0], c * hw};
      break;
    default:
      x.v = b.op("Reshape", {x.v, b.ints({0, c, -1})});
      x.dims = {x.dims[0], c, hw};
      break;
  }
  s.intermediates.push_back(x.v);
}

/// MaxPool or AveragePool with the windows exporters write: kernels of 1-5 (square or not),
/// strides 1-2, pads of k/2 on each side, none, tf2onnx's SAME as explicit asymmetric pads or as
/// auto_pad SAME_UPPER, VALID, ceil_mode; AveragePool counting the pads or not. Sometimes
/// flattened after.
void pool(State& s, Rng& rng) {
  Builder& b = s.b;
  T& x = s.cur;
  if (!is_image(x)) return;
  const bool max = rng.chance(0.5);
  ir::Node* n = b.node(max ? "MaxPool" : "AveragePool", {x.v});
  const int64_t mode = rng.range(0, 4);  // 0 k/2 pads, 1 none, 2 SAME as pads, 3 auto_pad SAME_UPPER, 4 auto_pad VALID
  bool ceil_mode = mode <= 2 && rng.chance(0.25);
  std::vector<int64_t> kernel, strides, pads_begin, pads_end, out;
  const int64_t square = rng.pick(std::vector<int64_t>{1, 2, 3, 3, 5});
  const int64_t stride = rng.pick(std::vector<int64_t>{1, 1, 2});
  for (int64_t axis = 2; axis < 4; ++axis) {
    const int64_t in = x.dims[static_cast<size_t>(axis)];
    int64_t k = rng.chance(0.2) ? rng.range(1, 3) : square;
    // VALID and no-pad windows must fit the input; padded ones may reach into the pads.
    if (mode == 1 || mode == 4) k = std::min(k, in);
    if (mode == 0) k = std::min(k, 2 * in - 1);
    // auto_pad SAME with a window narrower than the stride would pad by a negative amount:
    // onnxruntime 1.30 refuses it ("padding values must be non-negative"); no exporter writes it.
    if (mode == 3) k = std::max(k, stride);
    int64_t begin = 0, end = 0;
    if (mode == 0) begin = end = k / 2;
    if (mode == 2 || mode == 3) {
      const int64_t total = std::max<int64_t>(((in + stride - 1) / stride - 1) * stride + k - in, 0);
      begin = total / 2;
      end = total - begin;
    }
    kernel.push_back(k);
    strides.push_back(stride);
    pads_begin.push_back(begin);
    pads_end.push_back(end);
    out.push_back(mode == 3 ? (in + stride - 1) / stride : pooled_size(in, k, stride, begin, end, ceil_mode));
  }
  // Where ceil_mode's last window would start past the input and its leading pad, the spec drops
  // it and onnxruntime 1.30 does not (AveragePool 15 -> 8 or 9 wide): not drawn.
  const auto undropped = [&](size_t i) {
    return (x.dims[i + 2] + pads_begin[i] + pads_end[i] - kernel[i] + stride - 1) / stride + 1;
  };
  if (ceil_mode && (out[0] != undropped(0) || out[1] != undropped(1))) {
    ceil_mode = false;
    for (size_t i = 0; i < 2; ++i) out[i] = pooled_size(x.dims[i + 2], kernel[i], stride, pads_begin[i], pads_end[i], false);
  }
  n->set_attr(ir::Attribute::make_ints("kernel_shape", kernel));
  if (stride != 1 || rng.chance(0.5)) n->set_attr(ir::Attribute::make_ints("strides", strides));
  if (mode == 3) n->set_attr(ir::Attribute::make_string("auto_pad", "SAME_UPPER"));
  if (mode == 4) n->set_attr(ir::Attribute::make_string("auto_pad", "VALID"));
  if (mode <= 2) n->set_attr(ir::Attribute::make_ints("pads", {pads_begin[0], pads_begin[1], pads_end[0], pads_end[1]}));
  if (ceil_mode) n->set_attr(ir::Attribute::make_int("ceil_mode", 1));
  if (!max && rng.chance(0.5)) n->set_attr(ir::Attribute::make_int("count_include_pad", 1));
  x.v = n->output(0);
  x.dims = {x.dims[0], x.dims[1], out[0], out[1]};
  s.intermediates.push_back(x.v);
  if (rng.chance(0.3)) flatten_pooled(s, rng);
}

/// GlobalAveragePool or GlobalMaxPool, then what heads do with [N,C,1,1]: squeeze-and-excite
/// (x * sigmoid(w * pooled)), a classifier after Flatten, Reshape or Squeeze, or nothing.
void global_pool(State& s, Rng& rng) {
  Builder& b = s.b;
  T& x = s.cur;
  if (!is_image(x)) return;
  const int64_t c = x.dims[1];
  ir::Value* pooled = b.op(rng.chance(0.6) ? "GlobalAveragePool" : "GlobalMaxPool", {x.v});
  s.intermediates.push_back(pooled);
  switch (rng.range(0, 4)) {
    case 0: {
      ir::Value* gate = b.op("Sigmoid", {b.op("Mul", {pooled, b.floats({c, 1, 1}, rng, -2, 2)})});
      x.v = b.op("Mul", {x.v, gate});
      return;
    }
    case 1: x.v = b.op("Flatten", {pooled}, ir::Attribute::make_int("axis", 1)); break;
    case 2: x.v = b.op("Reshape", {pooled, rng.chance(0.5) ? b.ints({0, -1}) : b.ints({-1, c})}); break;
    case 3: x.v = b.squeeze(pooled, {2, 3}); break;
    default:
      x.v = pooled;
      x.dims = {x.dims[0], c, 1, 1};
      return;
  }
  x.dims = {x.dims[0], c};
  if (rng.chance(0.6)) {  // the classifier
    const int64_t classes = rng.range(1, 8);
    const float scale = 1.0f / std::sqrt(static_cast<float>(c));
    x.v = b.op("Add", {b.op("MatMul", {x.v, b.floats({c, classes}, rng, -scale, scale)}), b.floats({classes}, rng, -0.5f, 0.5f)});
    x.dims.back() = classes;
  }
}

/// Resize of an image as exporters write it: nearest (asymmetric + floor from PyTorch and
/// tf2onnx, half_pixel + round_prefer_floor, align_corners) or linear (half_pixel,
/// pytorch_half_pixel, align_corners, asymmetric), by constant scales or by sizes computed from
/// Shape(x) (the batch dim is symbolic).
void resize(State& s, Rng& rng) {
  Builder& b = s.b;
  T& x = s.cur;
  if (!is_image(x)) return;
  const bool nearest = rng.chance(0.5);
  const bool by_scales = rng.chance(0.5);
  const int64_t nearest_kind = rng.range(0, 2);
  const std::string mode = nearest ? std::vector<std::string>{"asymmetric", "half_pixel", "align_corners"}[static_cast<size_t>(nearest_kind)]
                                   : rng.pick(std::vector<std::string>{"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"});
  // onnxtool and onnxruntime 1.30 disagree in float32 on align_corners where the input size times
  // the scale is no integer, and on align_corners and pytorch_half_pixel resizing to 1 element;
  // exporters write neither, so neither is drawn.
  const bool integral = mode == "align_corners";
  const int64_t least = mode == "align_corners" || mode == "pytorch_half_pixel" ? 2 : 1;
  const int64_t h = x.dims[2], w = x.dims[3];
  std::vector<int64_t> out;
  std::vector<float> scales{1, 1};
  for (int64_t in : {h, w}) {
    float scale = rng.pick(integral ? std::vector<float>{2, 3} : std::vector<float>{2, 2, 0.5f, 1.5f, 3});
    if (std::floor(static_cast<float>(in) * scale) < static_cast<float>(least)) scale = 2;
    scales.push_back(scale);
    out.push_back(by_scales ? static_cast<int64_t>(std::floor(static_cast<float>(in) * scale)) : rng.range(least, 12));
  }
  ir::Value* sizes = nullptr;
  ir::Value* scale_input = nullptr;
  if (by_scales) {
    scale_input = float_list(b, scales);
  } else {
    ir::Value* batch_channels = b.slice(b.op("Shape", {x.v}), {0}, {2}, {}, {});
    sizes = b.op("Concat", {batch_channels, b.ints(out)}, ir::Attribute::make_int("axis", 0));
  }
  // Opsets 11-12 require roi and scales, empty when unused; 13 and later leave them out.
  std::vector<ir::Value*> in{x.v};
  if (b.opset() < 13) {
    in.push_back(float_list(b, {}));
    in.push_back(scale_input ? scale_input : float_list(b, {}));
  } else {
    in.push_back(nullptr);
    in.push_back(scale_input);
  }
  if (sizes) in.push_back(sizes);
  ir::Node* n = b.node("Resize", in);
  n->set_attr(ir::Attribute::make_string("coordinate_transformation_mode", mode));
  if (nearest)
    n->set_attr(ir::Attribute::make_string("nearest_mode", std::vector<std::string>{"floor", "round_prefer_floor", "round_prefer_ceil"}[static_cast<size_t>(nearest_kind)]));
  else
    n->set_attr(ir::Attribute::make_string("mode", "linear"));
  x.v = n->output(0);
  x.dims = {x.dims[0], x.dims[1], out[0], out[1]};
  s.intermediates.push_back(x.v);
}

/// Peak picking as CenterNet-style heads keep local maxima of a heatmap: heat = sigmoid(x + b),
/// a score survives where it equals the maximum of its 3x3 (or 5x5) window, or of its channels
/// (ReduceMax over C); compared as they are, or both flattened first (tf2onnx's [N,-1] or
/// [N,C,-1], Flatten) or both transposed to NHWC; by Equal or, at opset 12 and later,
/// GreaterOrEqual; kept by Cast and Mul, by Where, or as the Cast mask itself.
void peak_pick(State& s, Rng& rng) {
  Builder& b = s.b;
  T& x = s.cur;
  if (!is_image(x)) return;
  // A bias of its own at every position, as a head's last convolution gives: the values before
  // (a MaxPool's plateaus, a Relu's zeros) may hold exact ties, whose peaks any rounding or
  // rewrite would pick differently.
  ir::Value* logits = b.op("Add", {x.v, b.floats({x.dims[1], x.dims[2], x.dims[3]}, rng, -2, 2)});
  ir::Value* heat = rng.chance(0.8) ? b.op("Sigmoid", {logits}) : logits;
  ir::Value* peak = nullptr;
  const bool over_channels = rng.chance(0.2);
  if (over_channels) {
    peak = b.op("ReduceMax", {heat}, ir::Attribute::make_ints("axes", {1}));
  } else {
    const int64_t k = rng.chance(0.8) ? 3 : 5;
    ir::Node* n = b.node("MaxPool", {heat});
    n->set_attr(ir::Attribute::make_ints("kernel_shape", {k, k}));
    n->set_attr(ir::Attribute::make_ints("pads", {k / 2, k / 2, k / 2, k / 2}));
    if (rng.chance(0.5)) n->set_attr(ir::Attribute::make_ints("strides", {1, 1}));
    peak = n->output(0);
  }
  s.intermediates.push_back(peak);
  const int64_t c = x.dims[1], hw = x.dims[2] * x.dims[3];
  std::vector<int64_t> dims = x.dims;
  switch (rng.range(0, 3)) {
    case 0: break;
    case 1: {  // Reshape both: [N,-1] (not with the channel maximum, which broadcasts over C) or [N,C,-1]
      const bool per_channel = over_channels || rng.chance(0.5);
      heat = b.op("Reshape", {heat, per_channel ? b.ints({0, c, -1}) : b.ints({0, -1})});
      peak = b.op("Reshape", {peak, per_channel ? b.ints({0, over_channels ? 1 : c, -1}) : b.ints({0, -1})});
      dims = per_channel ? std::vector<int64_t>{x.dims[0], c, hw} : std::vector<int64_t>{x.dims[0], c * hw};
      break;
    }
    case 2:
      if (over_channels) break;
      heat = b.op("Flatten", {heat}, ir::Attribute::make_int("axis", 1));
      peak = b.op("Flatten", {peak}, ir::Attribute::make_int("axis", 1));
      dims = {x.dims[0], c * hw};
      break;
    default:
      heat = b.op("Transpose", {heat}, ir::Attribute::make_ints("perm", {0, 2, 3, 1}));
      peak = b.op("Transpose", {peak}, ir::Attribute::make_ints("perm", {0, 2, 3, 1}));
      dims = {x.dims[0], x.dims[2], x.dims[3], c};
      break;
  }
  ir::Value* keep = b.op(b.opset() >= 12 && rng.chance(0.25) ? "GreaterOrEqual" : "Equal", {heat, peak});
  switch (rng.range(0, 3)) {
    case 0:
    case 1:
      x.v = b.op("Mul", {b.op("Cast", {keep}, ir::Attribute::make_int("to", static_cast<int64_t>(ir::DataType::kFloat))), heat});
      break;
    case 2: x.v = b.op("Where", {keep, heat, b.scalar(0)}); break;
    default: x.v = b.op("Cast", {keep}, ir::Attribute::make_int("to", static_cast<int64_t>(ir::DataType::kFloat))); break;
  }
  x.dims = dims;
}

/// ReduceMax, ReduceSum, ReduceMean or ArgMax over some of the axes after the batch, keeping
/// the dims or not; an ArgMax is an exact output, or (as keypoint heads decode a heatmap) its
/// index scaled and added to the maximum.
void reduce(State& s, Rng& rng) {
  Builder& b = s.b;
  T& x = s.cur;
  if (x.rank() < 2) return;
  const bool keepdims = rng.chance(0.5);
  std::vector<int64_t> axes;
  for (int64_t a = 1; a < x.rank(); ++a)
    if (rng.chance(0.5)) axes.push_back(rng.chance(0.3) ? a - x.rank() : a);
  if (axes.empty()) axes.push_back(x.rank() - 1);
  const auto reduced = [&](const std::vector<int64_t>& over) {
    std::vector<int64_t> d;
    for (int64_t a = 0; a < x.rank(); ++a) {
      const bool hit = std::any_of(over.begin(), over.end(), [&](int64_t r) { return r == a || r + x.rank() == a; });
      if (!hit) d.push_back(x.dims[static_cast<size_t>(a)]);
      else if (keepdims) d.push_back(1);
    }
    return d;
  };
  const int64_t axis = axes.front() < 0 ? axes.front() + x.rank() : axes.front();
  const int64_t kind = x.static_at(axis) ? rng.range(0, 3) : rng.range(0, 2);
  if (kind == 3) {  // ArgMax along one axis
    // The index is judged exactly, or decoded into a float output where another index is a jump,
    // so the winner must lead by more than any path's rounding moves a score. Scores drawn near
    // each other do not: float16 (0.0005 apart near 1) and 8-bit steps (about a percent of the
    // range) legitimately turn a near-tie into the other index (seeds 4742 and 11942 in float16,
    // margins of 8e-5 and 1.5e-4; 8823 and 10226 quantized). So the scores are Sigmoid(x), in
    // (0, 1), plus a rung of a ladder 1.5 apart, in an order of its own for every lane along the
    // axis: the top rung leads by 0.5 at least, and the index is the ladder's.
    const int64_t size = x.dims[static_cast<size_t>(axis)];
    std::vector<int64_t> ladder_dims = {size};
    int64_t lanes = 1;
    for (int64_t a = axis + 1; a < x.rank(); ++a) {
      ladder_dims.push_back(x.static_at(a) ? x.dims[static_cast<size_t>(a)] : 1);
      lanes *= ladder_dims.back();
    }
    std::vector<float> ladder(static_cast<size_t>(size * lanes));
    for (int64_t lane = 0; lane < lanes; ++lane) {
      const std::vector<int64_t> order = permutation(size, rng);
      for (int64_t i = 0; i < size; ++i) ladder[static_cast<size_t>(i * lanes + lane)] = 1.5f * static_cast<float>(order[static_cast<size_t>(i)]);
    }
    ir::Value* rungs = b.constant(ir::make_tensor(b.fresh("w"), ir::DataType::kFloat, ladder_dims, ladder.data(), ladder.size() * sizeof(float)));
    ir::Node* n = b.node("ArgMax", {b.op("Add", {b.op("Sigmoid", {x.v}), rungs})});
    n->set_attr(ir::Attribute::make_int("axis", axes.front()));
    n->set_attr(ir::Attribute::make_int("keepdims", keepdims ? 1 : 0));
    ir::Value* index = n->output(0);
    if (rng.chance(0.4)) {
      s.int_outputs.push_back(index);
      return;
    }
    ir::Node* m = b.node("ReduceMax", {x.v});
    m->set_attr(ir::Attribute::make_ints("axes", {axes.front()}));
    m->set_attr(ir::Attribute::make_int("keepdims", keepdims ? 1 : 0));
    ir::Value* position = b.op("Cast", {index}, ir::Attribute::make_int("to", static_cast<int64_t>(ir::DataType::kFloat)));
    x.v = b.op("Add", {m->output(0), b.op("Mul", {position, b.scalar(rng.real(0.05f, 0.3f))})});
    x.dims = reduced({axis});
    return;
  }
  ir::Node* n = nullptr;
  if (kind == 1 && b.opset() >= 13) {  // ReduceSum's axes became an input at 13
    n = b.node("ReduceSum", {x.v, b.ints(axes)});
  } else {
    n = b.node(kind == 0 ? "ReduceMax" : kind == 1 ? "ReduceSum" : "ReduceMean", {x.v});
    n->set_attr(ir::Attribute::make_ints("axes", axes));
  }
  n->set_attr(ir::Attribute::make_int("keepdims", keepdims ? 1 : 0));
  x.v = n->output(0);
  x.dims = reduced(axes);
  s.intermediates.push_back(x.v);
}

using BlockFn = void (*)(State&, Rng&);
struct Block {
  const char* name;
  BlockFn fn;
  bool image_only;
  int64_t min_opset;  ///< the opset its ops need (Expand 8, ConstantOfShape and Where 9, Range 11)
};

const std::vector<Block>& blocks() {
  static const std::vector<Block> all = {
      {"elementwise", elementwise, false, 7},         {"shape_reshape", shape_reshape, false, 7},
      {"shape_slice_output", shape_slice_output, false, 7}, {"constant_of_shape", constant_of_shape, false, 9},
      {"expand", expand, false, 8},                   {"range", range, false, 11},
      {"where", where, false, 9},                     {"squeeze_unsqueeze", squeeze_unsqueeze, false, 7},
      {"conv_stack", conv_stack, true, 7},            {"matmul_add", matmul_add, false, 7},
      {"transpose_chain", transpose_chain, false, 7}, {"layernorm", layernorm, false, 7},
      {"gelu", gelu, false, 7},                       {"if_outer", if_outer, false, 7},
      {"loop_outer", loop_outer, false, 7},           {"upsample", upsample, true, 7},
      {"zero_pad", zero_pad, false, 7},               {"dropout", dropout, false, 7},
      {"classifier_head", classifier_head, false, 7}, {"nhwc_sandwich", nhwc_sandwich, true, 7},
      {"pool", pool, true, 10},                       {"global_pool", global_pool, true, 7},
      {"resize", resize, true, 11},                   {"peak_pick", peak_pick, true, 11},
      {"reduce", reduce, false, 11},
  };
  return all;
}

std::string dims_text(const std::vector<int64_t>& dims, const std::vector<std::string>& symbols) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? "," : "") + (dims[i] == kSymbolic ? symbols[i] : std::to_string(dims[i]));
  return out + "]";
}

}  // namespace

const std::vector<std::string>& block_kinds() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& b : blocks()) n.push_back(b.name);
    return n;
  }();
  return names;
}

Generated generate(uint64_t seed, const std::vector<bool>& keep) {
  Rng rng(seed * 0x2545F4914F6CDD1DULL + 1);
  Generated out;
  out.opset = rng.range(7, 17);
  // Older exporters: Constant nodes for constants, and before opset 9 often IR 3, where every
  // initializer is also listed as a graph input.
  ExporterStyle style;
  style.constant_nodes = rng.chance(0.3);
  style.ir3 = out.opset < 9 && rng.chance(0.6);
  out.model.ir_version = style.ir3 ? 3 : 8;
  out.model.producer_name = "onnxtool-differential";
  out.model.set_opset_version("", out.opset);
  out.model.graph = std::make_unique<ir::Graph>();
  out.model.graph->name = "seed_" + std::to_string(seed);
  Builder b(out.model, out.opset, style);

  // The input: an image [N,C,H,W], a sequence [N,S,D] (S symbolic or not) or a batch of vectors.
  const int64_t layout = rng.range(0, 5);
  std::vector<int64_t> dims;
  std::vector<std::string> symbols;
  std::vector<int64_t> feed;
  const int64_t batch = rng.range(1, 3);
  if (layout <= 2) {
    dims = {kSymbolic, rng.pick(std::vector<int64_t>{1, 2, 3, 4, 6, 8}), rng.range(1, 9), rng.range(1, 9)};
    symbols = {"N", "", "", ""};
  } else if (layout <= 4) {
    dims = {kSymbolic, rng.chance(0.5) ? kSymbolic : rng.range(1, 6), rng.range(2, 8)};
    symbols = {"N", "S", ""};
  } else {
    dims = {kSymbolic, rng.range(2, 10)};
    symbols = {"N", ""};
  }
  ir::Shape shape;
  for (size_t i = 0; i < dims.size(); ++i) {
    shape.dims.push_back(dims[i] == kSymbolic ? ir::Dim::symbol(symbols[i]) : ir::Dim::of(dims[i]));
    feed.push_back(dims[i] != kSymbolic ? dims[i] : i == 0 ? batch : rng.range(1, 5));
  }
  ir::Value* x = out.model.graph->add_input("x", ir::TypeInfo::tensor(ir::DataType::kFloat, shape)).value;
  out.input_shapes["x"] = feed;

  // The blocks: each drawn from its own stream, so that leaving one out keeps the others.
  const int64_t count = rng.range(1, 5);
  std::vector<size_t> chosen;
  for (int64_t i = 0; i < count; ++i) {
    size_t k = static_cast<size_t>(rng.range(0, static_cast<int64_t>(blocks().size()) - 1));
    if ((blocks()[k].image_only && dims.size() != 4) || blocks()[k].min_opset > out.opset) k = 0;
    chosen.push_back(k);
  }
  if (layout <= 2 && rng.chance(0.5)) {  // most image models start with a convolution
    const auto conv = std::find(block_kinds().begin(), block_kinds().end(), "conv_stack") - block_kinds().begin();
    chosen.insert(chosen.begin(), static_cast<size_t>(conv));
  }

  State state{b, T{x, dims}, {}, {}};
  std::ostringstream what;
  what << "seed " << seed << ", opset " << out.opset << (style.ir3 ? ", IR 3" : "")
       << (style.constant_nodes ? ", Constant nodes" : "") << ", x float" << dims_text(dims, symbols) << " fed as "
       << dims_text(feed, std::vector<std::string>(feed.size())) << ":";
  for (size_t i = 0; i < chosen.size(); ++i) {
    out.blocks.push_back(blocks()[chosen[i]].name);
    if (!keep.empty() && (i >= keep.size() || !keep[i])) continue;
    Rng block_rng(seed * 0x9E3779B97F4A7C15ULL + i * 0xD1B54A32D192ED03ULL + chosen[i]);
    blocks()[chosen[i]].fn(state, block_rng);
    what << " " << blocks()[chosen[i]].name;
  }
  if (state.cur.v == x) state.cur.v = b.op("Relu", {x});  // every block left out

  ir::Graph& g = *out.model.graph;
  g.add_output(state.cur.v, ir::TypeInfo::tensor(ir::DataType::kFloat));
  for (ir::Value* v : state.int_outputs) g.add_output(v, ir::TypeInfo::tensor(ir::DataType::kInt64));
  // An intermediate that is also a graph output: a fusion must keep it.
  Rng tail(seed ^ 0xA5A5A5A5ULL);
  if (!state.intermediates.empty() && tail.chance(0.3)) {
    ir::Value* v = state.intermediates[tail.next() % state.intermediates.size()];
    if (!v->is_graph_output()) g.add_output(v, ir::TypeInfo::tensor(ir::DataType::kFloat));
  }
  if (style.ir3)
    for (const auto& t : g.initializers()) {
      ir::Shape dims;
      for (int64_t d : t->dims) dims.dims.push_back(ir::Dim::of(d));
      g.add_input(t->name, ir::TypeInfo::tensor(t->type(), dims));
    }
  out.description = what.str();
  return out;
}

}  // namespace onnxtool::differential
