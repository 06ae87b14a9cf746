// Random test data from seeded generators: tensors of uniform or normal values, random float
// initializers, and feeds for a model's inputs. Every element is one draw, in element order,
// tensor after tensor: a test that keeps its seed and the order of its calls keeps its data bit
// for bit (some expected values depend on it).
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "runner/tensor.h"

namespace onnxtool::testing {

/// The tests' generator.
using Rng = std::mt19937;

/// `type`[shape] of values uniform in [lo, hi): drawn as Real, stored as
/// runner::set_element_from_double stores a double (float16 rounded, integers truncated).
template <class Real = float>
inline runner::Tensor uniform_tensor(Rng& rng, std::vector<int64_t> shape, double lo, double hi,
                                     ir::DataType type = ir::DataType::kFloat) {
  runner::Tensor t(type, std::move(shape));
  std::uniform_real_distribution<Real> d(static_cast<Real>(lo), static_cast<Real>(hi));
  if (type == ir::DataType::kFloat) {  // most data, and tensors of millions: no call per element
    float* p = t.mutable_data<float>();
    for (int64_t i = 0; i < t.size(); ++i) p[i] = static_cast<float>(d(rng));
  } else {
    for (int64_t i = 0; i < t.size(); ++i) runner::set_element_from_double(t, i, d(rng));
  }
  return t;
}

/// float[shape] of normal values.
inline runner::Tensor normal_tensor(Rng& rng, std::vector<int64_t> shape, float mean, float stddev) {
  runner::Tensor t(ir::DataType::kFloat, std::move(shape));
  std::normal_distribution<float> d(mean, stddev);
  for (int64_t i = 0; i < t.size(); ++i) t.mutable_data<float>()[i] = d(rng);
  return t;
}

/// Adds to `g` the float initializer `name`[dims] of values uniform in [lo, hi).
inline ir::Value* uniform_initializer(ir::Graph& g, Rng& rng, const std::string& name, std::vector<int64_t> dims,
                                      float lo, float hi) {
  const runner::Tensor t = uniform_tensor(rng, dims, lo, hi);
  return g.add_initializer(ir::make_tensor(name, ir::DataType::kFloat, std::move(dims), t.raw(), t.bytes()));
}

/// Feeds for the float inputs of `m` that are not initializers (inputs of other types are the
/// caller's): values uniform in [lo, hi) from a generator seeded with `seed`, input after input,
/// shaped by the declared dims; a dim that is not static takes dynamic_dims at its position.
inline std::map<std::string, runner::Value> random_feeds(const ir::Model& m, uint32_t seed, float lo, float hi,
                                                         const std::vector<int64_t>& dynamic_dims = {}) {
  Rng rng(seed);
  std::map<std::string, runner::Value> feeds;
  for (const auto& vi : m.graph->inputs) {
    if (vi.value->is_initializer() || vi.value->type.data_type() != ir::DataType::kFloat) continue;
    std::vector<int64_t> shape;
    const auto& dims = vi.value->type.shape->dims;
    for (size_t i = 0; i < dims.size(); ++i) shape.push_back(dims[i].is_static() ? dims[i].value : dynamic_dims.at(i));
    feeds[vi.value->name()] = runner::Value::of(uniform_tensor(rng, std::move(shape), lo, hi));
  }
  return feeds;
}

// ---------------------------------------------------------------- the kernel tests' stream

/// The generator the kernel tests share: one stream through a run, whatever the case.
inline Rng& rng() {
  static Rng g(1234);
  return g;
}

/// float[shape] of values uniform in [lo, hi), from rng().
inline runner::Tensor random_float(std::vector<int64_t> shape, float lo = -10, float hi = 10) {
  return uniform_tensor(rng(), std::move(shape), lo, hi);
}

/// `type`[shape] of integers uniform in [lo, hi], from rng().
inline runner::Tensor random_ints(ir::DataType type, std::vector<int64_t> shape, int64_t lo, int64_t hi) {
  runner::Tensor t(type, std::move(shape));
  std::uniform_int_distribution<int64_t> d(lo, hi);
  for (int64_t i = 0; i < t.size(); ++i) runner::set_element_from_double(t, i, static_cast<double>(d(rng())));
  return t;
}

}  // namespace onnxtool::testing
