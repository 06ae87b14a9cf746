// Element access in double for the kernels that compute in double and round once on store
// (vision.cpp, signal.cpp).
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "runner/cpu/elementwise_util.h"
#include "runner/cpu/kernels.h"
#include "runner/cpu/tensor_util.h"

namespace onnxtool::runner::cpu {

inline bool is_plain_float(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

inline void require_float(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (!is_plain_float(t.dtype())) ctx.fail(std::string(what) + " must be a float tensor, is " + type_name(t.dtype()));
}

/// Storage value -> double.
template <class T>
double to_double(T v) {
  return static_cast<double>(Num<T>::load(v));
}

/// double -> storage value; integers truncate toward zero and saturate (NaN gives 0), so no
/// out-of-range conversion is ever undefined.
template <class T>
T from_double(double v) {
  using C = calc_t<T>;
  if constexpr (std::is_floating_point_v<C>) {
    return Num<T>::store(static_cast<C>(v));
  } else if constexpr (std::is_same_v<C, bool>) {
    return Num<T>::store(v != 0);
  } else {
    if (std::isnan(v)) return T{0};
    const double lo = static_cast<double>(std::numeric_limits<C>::lowest());
    const double hi = static_cast<double>(std::numeric_limits<C>::max());
    v = std::trunc(v);
    if (v <= lo) return std::numeric_limits<C>::lowest();
    if (v >= hi) return std::numeric_limits<C>::max();
    return static_cast<C>(v);
  }
}

/// All elements of a numeric tensor as doubles.
inline std::vector<double> read_doubles(const KernelContext& ctx, const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.size()));
  visit_or_fail<kNumeric>(ctx, t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = to_double(p[i]);
  });
  return out;
}

/// An output of element type `type` filled from doubles.
inline void write_doubles(const KernelContext& ctx, Tensor& out, const std::vector<double>& v) {
  visit_or_fail<kNumeric>(ctx, out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out.mutable_data<T>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = from_double<T>(v[i]);
  });
}

}  // namespace onnxtool::runner::cpu
