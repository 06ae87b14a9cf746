// Reduction kernels: Reduce* (axes as attribute or input), ArgMax/ArgMin and CumSum/CumProd.
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "runner/cpu/elementwise_util.h"
#include "runner/cpu/kernels.h"

namespace onnxtool::runner::cpu {
namespace {

// ---------------------------------------------------------------- reduction geometry

/// The input seen as groups of kept and reduced dims: outer x red x inner when the reduced dims
/// form one block (after dropping size-1 dims and merging neighbours), else a general layout
/// given by the offsets of the reduced elements and of each output's first element.
struct ReduceLayout {
  int64_t outputs = 1;  // number of output elements
  int64_t red = 1;      // elements reduced into each output
  bool block = false;
  int64_t outer = 1, inner = 1;        // block layout: in[(o * red + r) * inner + i]
  std::vector<int64_t> red_offsets;    // general layout
  std::vector<int64_t> kept_dims, kept_strides;
};

ReduceLayout make_layout(const std::vector<int64_t>& shape, const std::vector<bool>& reduced) {
  ReduceLayout l;
  for (size_t d = 0; d < shape.size(); ++d) (reduced[d] ? l.red : l.outputs) *= shape[d];
  const ReduceGroups groups = merge_reduce_dims(shape, reduced);
  const std::vector<int64_t>& dims = groups.dims;
  const std::vector<bool>& flags = groups.reduced;
  size_t red_groups = 0;
  for (bool f : flags) red_groups += f;
  if (red_groups <= 1) {
    l.block = true;
    bool seen = false;
    for (size_t g = 0; g < dims.size(); ++g) {
      if (flags[g]) seen = true;
      else if (!seen) l.outer *= dims[g];
      else l.inner *= dims[g];
    }
    return l;
  }
  // General: strides of every group, then the offsets of all reduced elements.
  const std::vector<int64_t> strides = strides_of(dims);
  l.red_offsets.push_back(0);
  for (size_t g = dims.size(); g-- > 0;) {
    if (!flags[g]) continue;
    std::vector<int64_t> next;
    next.reserve(l.red_offsets.size() * static_cast<size_t>(dims[g]));
    for (int64_t k = 0; k < dims[g]; ++k)
      for (int64_t o : l.red_offsets) next.push_back(o + k * strides[g]);
    l.red_offsets = std::move(next);
  }
  // Reorder so that offsets ascend in the order of the reduced multi-index (row-major).
  std::sort(l.red_offsets.begin(), l.red_offsets.end());
  for (size_t g = 0; g < dims.size(); ++g) {
    if (flags[g]) continue;
    l.kept_dims.push_back(dims[g]);
    l.kept_strides.push_back(strides[g]);
  }
  return l;
}

/// Offset in the input of output element o's first reduced element (general layout).
inline int64_t kept_offset(const ReduceLayout& l, int64_t o) {
  int64_t off = 0;
  for (size_t d = l.kept_dims.size(); d-- > 0;) {
    off += (o % l.kept_dims[d]) * l.kept_strides[d];
    o /= l.kept_dims[d];
  }
  return off;
}

// ---------------------------------------------------------------- reducers

enum class Red { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

/// Accumulation for element type T: in double for floats; for integers in uint64 (wrapping
/// sum/product, like arithmetic in the element type) or in T itself for max/min.
template <Red kOp, class T>
struct Reducer {
  static constexpr bool kFloat = is_float_v<T>;
  static constexpr bool kMinMax = kOp == Red::kMax || kOp == Red::kMin;
  using C = calc_t<T>;
  using Acc = std::conditional_t<kFloat, double, std::conditional_t<kMinMax, C, uint64_t>>;

  static Acc init() {
    if constexpr (kOp == Red::kProd) return Acc(1);
    else if constexpr (kOp == Red::kMax) return kFloat ? Acc(-std::numeric_limits<double>::infinity()) : std::numeric_limits<Acc>::lowest();
    else if constexpr (kOp == Red::kMin) return kFloat ? Acc(std::numeric_limits<double>::infinity()) : std::numeric_limits<Acc>::max();
    else return Acc(0);
  }
  static Acc step(Acc acc, T raw) {
    const C v = Num<T>::load(raw);
    if constexpr (kOp == Red::kMax || kOp == Red::kMin) {
      if constexpr (kFloat) {
        if (std::isnan(acc)) return acc;
        if (std::isnan(v)) return static_cast<Acc>(v);
      }
      if constexpr (kOp == Red::kMax) return static_cast<Acc>(v) > acc ? static_cast<Acc>(v) : acc;
      else return static_cast<Acc>(v) < acc ? static_cast<Acc>(v) : acc;
    } else if constexpr (kOp == Red::kProd) {
      return acc * static_cast<Acc>(v);
    } else if constexpr (kOp == Red::kL1) {
      if constexpr (kFloat) return acc + std::fabs(static_cast<double>(v));
      else if constexpr (std::is_unsigned_v<C>) return acc + static_cast<Acc>(v);
      else return acc + (v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v));
    } else if constexpr (kOp == Red::kL2 || kOp == Red::kSumSquare) {
      return acc + static_cast<Acc>(v) * static_cast<Acc>(v);
    } else if constexpr (kOp == Red::kLogSumExp) {
      return acc + std::exp(static_cast<double>(v));
    } else {
      return acc + static_cast<Acc>(v);
    }
  }
  static T finish(Acc acc, int64_t count) {
    if constexpr (kFloat) {
      double r = acc;
      if constexpr (kOp == Red::kMean) r = acc / static_cast<double>(count);
      else if constexpr (kOp == Red::kL2) r = std::sqrt(acc);
      else if constexpr (kOp == Red::kLogSum || kOp == Red::kLogSumExp) r = std::log(acc);
      return Num<T>::store(static_cast<C>(r));
    } else if constexpr (kMinMax) {
      return acc;
    } else {
      // Interpret the wrapped sum in T's signedness.
      const int64_t s = static_cast<int64_t>(acc);
      if constexpr (kOp == Red::kMean) {
        if (count == 0) return 0;
        if constexpr (std::is_signed_v<C>) return static_cast<T>(s / count);
        else return static_cast<T>(acc / static_cast<uint64_t>(count));
      } else if constexpr (kOp == Red::kL2) {
        return static_cast<T>(std::sqrt(static_cast<double>(std::is_signed_v<C> ? static_cast<double>(s) : static_cast<double>(acc))));
      } else if constexpr (kOp == Red::kLogSum || kOp == Red::kLogSumExp) {
        return static_cast<T>(std::log(std::is_signed_v<C> ? static_cast<double>(s) : static_cast<double>(acc)));
      } else {
        return static_cast<T>(acc);
      }
    }
  }
};

/// Reduces a contiguous row; plain sums use 8 independent accumulators (a fixed order, so the
/// result does not depend on threads) to let the compiler vectorize.
template <Red kOp, class T>
T reduce_row(const T* p, int64_t n) {
  using R = Reducer<kOp, T>;
  constexpr bool kLanes = std::is_same_v<T, float> &&
                          (kOp == Red::kSum || kOp == Red::kMean || kOp == Red::kL2 || kOp == Red::kSumSquare ||
                           kOp == Red::kL1 || kOp == Red::kLogSum);
  if constexpr (kLanes) {
    double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
      for (int l = 0; l < 8; ++l) lanes[l] = R::step(lanes[l], p[j + l]);
    double acc = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    for (; j < n; ++j) acc = R::step(acc, p[j]);
    return R::finish(acc, n);
  } else {
    if constexpr (std::is_same_v<T, float> && (kOp == Red::kMax || kOp == Red::kMin)) {
      // Sixteen lanes of maxima (minima); the value is the same in any order, but the element
      // the scalar scan keeps is not: a row with a NaN (the first one wins) or a zero result
      // (+0 or -0: the first one wins) takes the scan below.
      constexpr int64_t kLanesMinMax = 16;
      using V = float __attribute__((vector_size(64)));
      using M = int32_t __attribute__((vector_size(64)));
      V acc = V{} + (kOp == Red::kMax ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity());
      M nans = M{};
      int64_t j = 0;
      for (; j + kLanesMinMax <= n; j += kLanesMinMax) {
        V v;
        std::memcpy(&v, p + j, sizeof v);
        nans |= v != v;
        if constexpr (kOp == Red::kMax) acc = v > acc ? v : acc;
        else acc = v < acc ? v : acc;
      }
      float lanes[kLanesMinMax];
      std::memcpy(lanes, &acc, sizeof lanes);
      bool nan = false;
      for (int64_t l = 0; l < kLanesMinMax; ++l) nan |= nans[l] != 0;
      float r = lanes[0];
      for (int64_t l = 1; l < kLanesMinMax; ++l) {
        if constexpr (kOp == Red::kMax) r = lanes[l] > r ? lanes[l] : r;
        else r = lanes[l] < r ? lanes[l] : r;
      }
      for (; j < n; ++j) {
        const float v = p[j];
        nan |= v != v;
        if constexpr (kOp == Red::kMax) r = v > r ? v : r;
        else r = v < r ? v : r;
      }
      if (!nan && r != 0.0f) return R::finish(static_cast<double>(r), n);
    }
    auto acc = R::init();
    for (int64_t j = 0; j < n; ++j) acc = R::step(acc, p[j]);
    return R::finish(acc, n);
  }
}

/// LogSumExp of n elements read by `at(k)`, shifted by the maximum for range.
template <class T, class At>
T log_sum_exp(int64_t n, At at) {
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t k = 0; k < n; ++k) mx = std::max(mx, static_cast<double>(Num<T>::load(at(k))));
  if (!std::isfinite(mx)) {  // empty, all -inf, or an inf/NaN that decides the result
    double s = 0;
    for (int64_t k = 0; k < n; ++k) s += std::exp(static_cast<double>(Num<T>::load(at(k))));
    return Num<T>::store(static_cast<calc_t<T>>(std::log(s)));
  }
  double s = 0;
  for (int64_t k = 0; k < n; ++k) s += std::exp(static_cast<double>(Num<T>::load(at(k))) - mx);
  return Num<T>::store(static_cast<calc_t<T>>(mx + std::log(s)));
}

template <Red kOp, class T>
void reduce_typed(const Tensor& x, const ReduceLayout& l, Tensor& y) {
  using R = Reducer<kOp, T>;
  const T* in = x.data<T>();
  T* out = y.mutable_data<T>();
  const int64_t red = l.red;
  if (l.block && l.inner == 1) {
    // Contiguous rows (reduce over the last axes).
    parallel_ranges(l.outputs, std::max<int64_t>(1, 16384 / std::max<int64_t>(red, 1)), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* p = in + o * red;
        if constexpr (kOp == Red::kLogSumExp) out[o] = log_sum_exp<T>(red, [p](int64_t k) { return p[k]; });
        else out[o] = reduce_row<kOp, T>(p, red);
      }
    });
    return;
  }
  if (l.block) {
    // outer x red x inner: accumulate whole rows of `inner` outputs, in reduction order.
    const int64_t inner = l.inner;
    constexpr int64_t kTile = 1024;
    const int64_t tiles = (inner + kTile - 1) / kTile;
    parallel_ranges(l.outer * tiles, 1, [&](int64_t b, int64_t e) {
      std::vector<typename R::Acc> acc(static_cast<size_t>(std::min(inner, kTile)));
      for (int64_t task = b; task < e; ++task) {
        const int64_t o = task / tiles, i0 = (task % tiles) * kTile, i1 = std::min(inner, i0 + kTile);
        const T* base = in + o * red * inner;
        T* po = out + o * inner;
        if constexpr (kOp == Red::kLogSumExp) {
          for (int64_t i = i0; i < i1; ++i)
            po[i] = log_sum_exp<T>(red, [base, inner, i](int64_t k) { return base[k * inner + i]; });
        } else {
          for (int64_t i = i0; i < i1; ++i) acc[static_cast<size_t>(i - i0)] = R::init();
          for (int64_t r = 0; r < red; ++r) {
            const T* row = base + r * inner;
            for (int64_t i = i0; i < i1; ++i) acc[static_cast<size_t>(i - i0)] = R::step(acc[static_cast<size_t>(i - i0)], row[i]);
          }
          for (int64_t i = i0; i < i1; ++i) po[i] = R::finish(acc[static_cast<size_t>(i - i0)], red);
        }
      }
    });
    return;
  }
  const auto& roff = l.red_offsets;
  parallel_ranges(l.outputs, std::max<int64_t>(1, 16384 / std::max<int64_t>(red, 1)), [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      const T* p = in + kept_offset(l, o);
      if constexpr (kOp == Red::kLogSumExp) {
        out[o] = log_sum_exp<T>(red, [p, &roff](int64_t k) { return p[roff[static_cast<size_t>(k)]]; });
      } else {
        auto acc = R::init();
        for (int64_t off : roff) acc = R::step(acc, p[off]);
        out[o] = R::finish(acc, red);
      }
    }
  });
}

/// The `axes` of a reduction: an attribute before `axes_input_since`, optional input 1 after.
std::vector<int64_t> reduce_axes_arg(const KernelContext& ctx, int axes_input_since) {
  if (ctx.opset() < axes_input_since) return ctx.attr_ints("axes");
  if (!ctx.has_input(1)) return {};
  return read_int_list(ctx, ctx.input(1), "axes");
}

template <Red kOp, int kAxesInputSince>
void reduce_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  const bool noop = ctx.opset() >= kAxesInputSince && ctx.attr_int("noop_with_empty_axes", 0) != 0;
  const ReduceAxes axes = resolve_reduce_axes(ctx, x.shape(), reduce_axes_arg(ctx, kAxesInputSince), keepdims, noop);
  constexpr unsigned kSet = (kOp == Red::kMax || kOp == Red::kMin) ? unsigned(kNumeric | kBools) : unsigned(kNumeric);
  visit_or_fail<kSet>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (axes.noop) {
      ctx.set_output(0, x);
      return;
    }
    Tensor& y = ctx.output(0, x.dtype(), axes.out_shape);
    if (y.size() == 0) return;
    if constexpr (std::is_same_v<T, Bool8>) {
      // bool max/min are any/all.
      const ReduceLayout l = make_layout(x.shape(), axes.reduced);
      reduce_typed<kOp, uint8_t>(x, l, y);
    } else {
      reduce_typed<kOp, T>(x, make_layout(x.shape(), axes.reduced), y);
    }
  });
}

// ---------------------------------------------------------------- ArgMax, ArgMin

template <bool kMax>
void arg_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), std::max<int64_t>(rank, 1));
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  const bool last = ctx.attr_int("select_last_index", 0) != 0;
  const auto& s = x.shape();
  const size_t a = static_cast<size_t>(axis);
  const int64_t n = rank == 0 ? 1 : s[a];
  const int64_t outer = dims_product(s, 0, a), inner = dims_product(s, a + 1, s.size());
  std::vector<int64_t> out_shape;
  for (size_t d = 0; d < s.size(); ++d) {
    if (d != a) out_shape.push_back(s[d]);
    else if (keepdims) out_shape.push_back(1);
  }
  visit_or_fail<kNumeric | kBools>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor& y = ctx.output(0, DataType::kInt64, out_shape);
    if (y.size() == 0) return;
    if (n == 0) ctx.fail("cannot take ArgMax/ArgMin over an empty axis");
    const T* in = x.data<T>();
    int64_t* out = y.mutable_data<int64_t>();
    parallel_ranges(outer * inner, std::max<int64_t>(1, 16384 / n), [&](int64_t b, int64_t e) {
      for (int64_t g = b; g < e; ++g) {
        const int64_t o = g / inner, i = g % inner;
        const T* p = in + o * n * inner + i;
        auto best = Num<T>::load(p[0]);
        int64_t arg = 0;
        for (int64_t k = 1; k < n; ++k) {
          const auto v = Num<T>::load(p[k * inner]);
          bool better;
          if constexpr (is_float_v<T>) {
            // NaN wins, like numpy (the first one, or the last one with select_last_index).
            if (std::isnan(best)) better = last && std::isnan(v);
            else if (std::isnan(v)) better = true;
            else better = kMax ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
          } else {
            better = kMax ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
          }
          if (better) {
            best = v;
            arg = k;
          }
        }
        out[g] = arg;
      }
    });
  });
}

// ---------------------------------------------------------------- CumSum, CumProd

template <bool kProd>
void cumulative_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> av = read_int_list(ctx, ctx.input(1), "axis");
  if (av.size() != 1) ctx.fail("axis must hold one value");
  const int64_t rank = static_cast<int64_t>(x.rank());
  if (rank == 0) ctx.fail("input must have rank >= 1");
  const int64_t axis = normalize_axis(ctx, av[0], rank);
  const bool exclusive = ctx.attr_int("exclusive", 0) != 0;
  const bool reverse = ctx.attr_int("reverse", 0) != 0;
  const auto& s = x.shape();
  const int64_t n = s[static_cast<size_t>(axis)];
  const int64_t outer = dims_product(s, 0, static_cast<size_t>(axis));
  const int64_t inner = dims_product(s, static_cast<size_t>(axis) + 1, s.size());
  visit_or_fail<kNumeric>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = std::conditional_t<is_float_v<T>, double, uint64_t>;
    Tensor& y = ctx.output(0, x.dtype(), x.shape());
    const T* in = x.data<T>();
    T* out = y.mutable_data<T>();
    parallel_ranges(outer * inner, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      for (int64_t g = b; g < e; ++g) {
        const int64_t o = g / inner, i = g % inner;
        Acc acc = kProd ? Acc(1) : Acc(0);
        for (int64_t t = 0; t < n; ++t) {
          const int64_t k = reverse ? n - 1 - t : t;
          const int64_t idx = (o * n + k) * inner + i;
          const Acc v = static_cast<Acc>(Num<T>::load(in[idx]));
          if (!exclusive) acc = kProd ? acc * v : acc + v;
          out[idx] = Num<T>::store(static_cast<calc_t<T>>(acc));
          if (exclusive) acc = kProd ? acc * v : acc + v;
        }
      }
    });
  });
}

}  // namespace

void register_reduce_kernels(KernelRegistry& r) {
#define ONNXTOOL_ADD_REDUCE(op, acc, axes_input) r.add("", #op, 1, kMaxOpset, reduce_kernel<Red::k##acc, axes_input>);
  ONNXTOOL_REDUCE_OPS(ONNXTOOL_ADD_REDUCE)
#undef ONNXTOOL_ADD_REDUCE
  r.add("ArgMax", arg_kernel<true>);
  r.add("ArgMin", arg_kernel<false>);
  r.add("CumSum", cumulative_kernel<false>);
  r.add("CumProd", cumulative_kernel<true>);
}

}  // namespace onnxtool::runner::cpu
