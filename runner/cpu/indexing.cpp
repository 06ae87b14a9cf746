// Indexing kernels: Gather, GatherElements, GatherND, Scatter, ScatterElements, ScatterND,
// OneHot, NonZero, TopK, Unique, Compress and ReverseSequence.
// Pure element moves are written once per element size (tensor_util.h); kernels that compare or
// combine values dispatch on the element type.
#include <cmath>
#include <limits>
#include <numeric>

#include "runner/cpu/kernels.h"
#include "runner/cpu/tensor_util.h"

namespace onnxtool::runner::cpu {
namespace {

// ---------------------------------------------------------------- helpers

/// Reads an index tensor (int32/int64) with every value checked against `dim` and made
/// non-negative.
std::vector<int64_t> read_indices(const KernelContext& ctx, const Tensor& t, int64_t dim) {
  std::vector<int64_t> idx = read_int_list(ctx, t, "indices");
  for (int64_t& i : idx) i = checked_index(ctx, i, dim, "index");
  return idx;
}

/// out[o, j, i] = x[o, idx[j], i] over the split [outer, dim(axis), inner] of `x`.
Tensor take_along(const KernelContext& ctx, const Tensor& x, size_t axis, const std::vector<int64_t>& idx,
                  std::vector<int64_t> out_shape) {
  Tensor out(x.dtype(), std::move(out_shape));
  const int64_t outer = dims_product(x.shape(), 0, axis);
  const int64_t dim = x.dim(axis);
  const int64_t inner = dims_product(x.shape(), axis + 1, x.rank());
  const int64_t n = static_cast<int64_t>(idx.size());
  visit_storage_or_fail(ctx, x.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E* in = elements<E>(x);
    E* o = mutable_elements<E>(out);
    parallel_ranges(outer * n, std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t oi = t / n, j = t % n;
        copy_elements(o + t * inner, in + (oi * dim + idx[static_cast<size_t>(j)]) * inner, inner);
      }
    });
  });
  return out;
}

/// A total order on computed values: NaN after every number, NaNs equal.
template <class C>
bool value_less(const C& a, const C& b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

// ---------------------------------------------------------------- gathers

void gather(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  if (data.rank() == 0) ctx.fail("Gather needs data of rank >= 1");
  const size_t axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", 0), static_cast<int64_t>(data.rank())));
  const auto idx = read_indices(ctx, indices, data.dim(axis));
  std::vector<int64_t> shape(data.shape().begin(), data.shape().begin() + static_cast<int64_t>(axis));
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), data.shape().begin() + static_cast<int64_t>(axis) + 1, data.shape().end());
  ctx.set_output(0, take_along(ctx, data, axis, idx, shape));
}

void gather_elements(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const size_t r = data.rank();
  if (r == 0 || indices.rank() != r) ctx.fail("GatherElements needs data and indices of the same rank >= 1");
  const size_t axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", 0), static_cast<int64_t>(r)));
  for (size_t d = 0; d < r; ++d)
    if (d != axis && indices.dim(d) > data.dim(d))
      ctx.fail("indices " + shape_string(indices.shape()) + " exceed data " + shape_string(data.shape()) + " outside the axis");
  const auto idx = read_indices(ctx, indices, data.dim(axis));
  const auto strides = strides_of(data.shape());
  Tensor out(data.dtype(), indices.shape());
  visit_storage_or_fail(ctx, data.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E* in = elements<E>(data);
    E* o = mutable_elements<E>(out);
    parallel_ranges(out.size(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      std::vector<int64_t> c(r);
      for (int64_t i = b; i < e; ++i) {
        unravel(i, indices.shape(), c.data());
        c[axis] = idx[static_cast<size_t>(i)];
        int64_t off = 0;
        for (size_t d = 0; d < r; ++d) off += c[d] * strides[d];
        o[i] = in[off];
      }
    });
  });
  ctx.set_output(0, out);
}

/// Where GatherND/ScatterND index tuples land: for each tuple (over batches), the element offset
/// of its slice in `data`, and the slice length.
struct NdIndex {
  std::vector<int64_t> offsets;  // per tuple, batch-major
  int64_t slice = 1;
  int64_t tuples_per_batch = 0;
};

NdIndex nd_offsets(const KernelContext& ctx, const Tensor& data, const Tensor& indices, int64_t batch_dims) {
  const int64_t r = static_cast<int64_t>(data.rank()), q = static_cast<int64_t>(indices.rank());
  if (r < 1 || q < 1) ctx.fail("data and indices must have rank >= 1");
  if (batch_dims < 0 || batch_dims >= std::min(r, q)) ctx.fail("batch_dims must be in [0, min(rank(data), rank(indices)))");
  const int64_t k = indices.dim(static_cast<size_t>(q - 1));
  if (k < 1 || k > r - batch_dims) ctx.fail("the last dim of indices (" + std::to_string(k) + ") must be in [1, rank(data) - batch_dims]");
  for (int64_t d = 0; d < batch_dims; ++d)
    if (indices.dim(static_cast<size_t>(d)) != data.dim(static_cast<size_t>(d)))
      ctx.fail("batch dims of data " + shape_string(data.shape()) + " and indices " + shape_string(indices.shape()) + " differ");
  const auto raw = read_int_list(ctx, indices, "indices");
  const auto strides = strides_of(data.shape());
  NdIndex nd;
  nd.slice = dims_product(data.shape(), static_cast<size_t>(batch_dims + k), data.rank());
  const int64_t batches = dims_product(data.shape(), 0, static_cast<size_t>(batch_dims));
  const int64_t tuples = static_cast<int64_t>(raw.size()) / k;
  nd.tuples_per_batch = batches ? tuples / batches : 0;
  const int64_t batch_stride = batch_dims ? strides[static_cast<size_t>(batch_dims - 1)] : 0;
  nd.offsets.resize(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = nd.tuples_per_batch ? (t / nd.tuples_per_batch) * batch_stride : 0;
    for (int64_t j = 0; j < k; ++j) {
      const size_t d = static_cast<size_t>(batch_dims + j);
      off += checked_index(ctx, raw[static_cast<size_t>(t * k + j)], data.dim(d), "index") * strides[d];
    }
    nd.offsets[static_cast<size_t>(t)] = off;
  }
  return nd;
}

void gather_nd(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const int64_t b = ctx.opset() >= 12 ? ctx.attr_int("batch_dims", 0) : 0;
  const NdIndex nd = nd_offsets(ctx, data, indices, b);
  const int64_t k = indices.dim(indices.rank() - 1);
  std::vector<int64_t> shape(indices.shape().begin(), indices.shape().end() - 1);
  shape.insert(shape.end(), data.shape().begin() + b + k, data.shape().end());
  Tensor out(data.dtype(), shape);
  visit_storage_or_fail(ctx, data.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E* in = elements<E>(data);
    E* o = mutable_elements<E>(out);
    const int64_t n = static_cast<int64_t>(nd.offsets.size());
    parallel_ranges(n, std::max<int64_t>(1, 16384 / nd.slice), [&](int64_t s, int64_t e) {
      for (int64_t t = s; t < e; ++t) copy_elements(o + t * nd.slice, in + nd.offsets[static_cast<size_t>(t)], nd.slice);
    });
  });
  ctx.set_output(0, out);
}

// ---------------------------------------------------------------- scatters

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Reduction read_reduction(const KernelContext& ctx, int add_since, int max_since) {
  const std::string s = ctx.opset() >= add_since ? ctx.attr_string("reduction", "none") : "none";
  if (s == "none") return Reduction::kNone;
  if (s == "add") return Reduction::kAdd;
  if (s == "mul") return Reduction::kMul;
  if (ctx.opset() >= max_since && s == "max") return Reduction::kMax;
  if (ctx.opset() >= max_since && s == "min") return Reduction::kMin;
  ctx.fail("unsupported reduction '" + s + "'");
}

/// out[dst[i]] = f(out[dst[i]], updates[i]) in index order (sequential: later duplicates see
/// earlier ones, so the result does not depend on threads).
void scatter_into(const KernelContext& ctx, Tensor& out, const Tensor& updates, const std::vector<int64_t>& dst,
                  int64_t run, Reduction red) {
  if (updates.dtype() != out.dtype()) ctx.fail("updates type differs from the data type");
  if (red == Reduction::kNone) {
    visit_storage_or_fail(ctx, out.dtype(), [&](auto tag) {
      using E = typename decltype(tag)::type;
      const E* u = elements<E>(updates);
      E* o = mutable_elements<E>(out);
      for (size_t i = 0; i < dst.size(); ++i) copy_elements(o + dst[i], u + static_cast<int64_t>(i) * run, run);
    });
    return;
  }
  visit_or_fail<kAllPlain>(ctx, out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = calc_t<T>;
    const T* u = updates.data<T>();
    T* o = out.mutable_data<T>();
    for (size_t i = 0; i < dst.size(); ++i)
      for (int64_t j = 0; j < run; ++j) {
        T& slot = o[dst[i] + j];
        const C a = Num<T>::load(slot), b = Num<T>::load(u[static_cast<int64_t>(i) * run + j]);
        C v;
        if constexpr (std::is_same_v<C, bool>) {
          v = red == Reduction::kAdd || red == Reduction::kMax ? (a || b) : (a && b);
        } else {
          switch (red) {
            case Reduction::kAdd: v = static_cast<C>(a + b); break;
            case Reduction::kMul: v = static_cast<C>(a * b); break;
            case Reduction::kMax: v = value_less(a, b) ? b : a; break;
            default: v = value_less(b, a) ? b : a; break;
          }
        }
        slot = Num<T>::store(v);
      }
  });
}

void scatter_elements_with(KernelContext& ctx, Reduction red) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  const size_t r = data.rank();
  if (r == 0 || indices.rank() != r || updates.shape() != indices.shape())
    ctx.fail("data, indices and updates must have the same rank >= 1, indices and updates the same shape");
  const size_t axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", 0), static_cast<int64_t>(r)));
  for (size_t d = 0; d < r; ++d)
    if (d != axis && indices.dim(d) > data.dim(d))
      ctx.fail("indices " + shape_string(indices.shape()) + " exceed data " + shape_string(data.shape()) + " outside the axis");
  const auto idx = read_indices(ctx, indices, data.dim(axis));
  const auto strides = strides_of(data.shape());
  std::vector<int64_t> dst(idx.size());
  std::vector<int64_t> c(r);
  for (size_t i = 0; i < idx.size(); ++i) {
    unravel(static_cast<int64_t>(i), indices.shape(), c.data());
    c[axis] = idx[i];
    int64_t off = 0;
    for (size_t d = 0; d < r; ++d) off += c[d] * strides[d];
    dst[i] = off;
  }
  Tensor out = data.clone();
  scatter_into(ctx, out, updates, dst, 1, red);
  ctx.set_output(0, out);
}

void scatter_elements(KernelContext& ctx) { scatter_elements_with(ctx, read_reduction(ctx, 16, 18)); }
// Scatter-9/10: ScatterElements without reduction.
void scatter(KernelContext& ctx) { scatter_elements_with(ctx, Reduction::kNone); }

void scatter_nd(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  const NdIndex nd = nd_offsets(ctx, data, indices, 0);
  const int64_t k = indices.dim(indices.rank() - 1);
  std::vector<int64_t> want(indices.shape().begin(), indices.shape().end() - 1);
  want.insert(want.end(), data.shape().begin() + k, data.shape().end());
  if (updates.shape() != want)
    ctx.fail("updates shape " + shape_string(updates.shape()) + " should be " + shape_string(want));
  Tensor out = data.clone();
  scatter_into(ctx, out, updates, nd.offsets, nd.slice, read_reduction(ctx, 16, 18));
  ctx.set_output(0, out);
}

// ---------------------------------------------------------------- OneHot, NonZero, Compress

/// The values of a numeric tensor as int64 (floats truncated).
std::vector<int64_t> read_as_int64(const KernelContext& ctx, const Tensor& t, const char* what) {
  std::vector<int64_t> out(static_cast<size_t>(t.size()));
  if (!visit<kNumeric>(t.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* p = t.data<T>();
        for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int64_t>(Num<T>::load(p[i]));
      }))
    ctx.fail(std::string(what) + " must be numeric, is " + type_name(t.dtype()));
  return out;
}

void one_hot(KernelContext& ctx) {
  const Tensor& indices = ctx.input(0);
  const Tensor& depth_t = ctx.input(1);
  const Tensor& values = ctx.input(2);
  if (depth_t.size() != 1) ctx.fail("depth must hold one element");
  if (values.size() != 2) ctx.fail("values must hold two elements [off, on]");
  const int64_t depth = read_as_int64(ctx, depth_t, "depth")[0];
  if (depth < 1) ctx.fail("depth must be positive, is " + std::to_string(depth));
  const int64_t r = static_cast<int64_t>(indices.rank());
  const size_t axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", -1), r, true));
  const auto idx = read_as_int64(ctx, indices, "indices");
  std::vector<int64_t> shape = indices.shape();
  shape.insert(shape.begin() + static_cast<int64_t>(axis), depth);
  const int64_t outer = dims_product(indices.shape(), 0, axis);
  const int64_t inner = dims_product(indices.shape(), axis, indices.rank());
  const bool negative_ok = ctx.opset() >= 11;
  Tensor out(values.dtype(), shape);
  visit_storage_or_fail(ctx, values.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E off = elements<E>(values)[0], on = elements<E>(values)[1];
    E* o = mutable_elements<E>(out);
    fill_elements(o, off, out.size());
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t v = idx[static_cast<size_t>(a * inner + i)];
        if (v < 0 && negative_ok) v += depth;
        if (v < 0 || v >= depth) continue;
        o[(a * depth + v) * inner + i] = on;
      }
  });
  ctx.set_output(0, out);
}

void non_zero(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> hits;
  const bool ok = visit<kAllPlain>(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = x.data<T>();
    for (int64_t i = 0; i < x.size(); ++i)
      if (Num<T>::load(p[i]) != calc_t<T>(0)) hits.push_back(i);
  });
  if (!ok && x.dtype() == DataType::kString) {
    for (int64_t i = 0; i < x.size(); ++i)
      if (!x.strings()[static_cast<size_t>(i)].empty()) hits.push_back(i);
  } else if (!ok) {
    ctx.fail("NonZero does not support element type " + type_name(x.dtype()));
  }
  // A scalar counts as a one-element vector (as numpy.nonzero does).
  const std::vector<int64_t> shape = x.rank() ? x.shape() : std::vector<int64_t>{1};
  const int64_t n = static_cast<int64_t>(hits.size());
  Tensor& out = ctx.output(0, DataType::kInt64, {static_cast<int64_t>(shape.size()), n});
  int64_t* o = out.mutable_data<int64_t>();
  std::vector<int64_t> c(shape.size());
  for (int64_t j = 0; j < n; ++j) {
    unravel(hits[static_cast<size_t>(j)], shape, c.data());
    for (size_t d = 0; d < shape.size(); ++d) o[static_cast<int64_t>(d) * n + j] = c[d];
  }
}

void compress(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& cond = ctx.input(1);
  if (cond.dtype() != DataType::kBool) ctx.fail("condition must be bool");
  if (cond.rank() != 1) ctx.fail("condition must be 1-D, is " + cond.describe());
  const bool has_axis = ctx.has_attr("axis");
  const Tensor src = has_axis ? x : x.reshaped({x.size()});
  if (src.rank() == 0) ctx.fail("Compress needs an input of rank >= 1");
  const size_t axis = has_axis ? static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", 0), static_cast<int64_t>(x.rank()))) : 0;
  std::vector<int64_t> idx;
  const int64_t n = std::min(cond.size(), src.dim(axis));
  for (int64_t i = 0; i < n; ++i)
    if (cond.data<uint8_t>()[i]) idx.push_back(i);
  std::vector<int64_t> shape = src.shape();
  shape[axis] = static_cast<int64_t>(idx.size());
  ctx.set_output(0, take_along(ctx, src, axis, idx, shape));
}

void reverse_sequence(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& lens_t = ctx.input(1);
  if (x.rank() < 2) ctx.fail("ReverseSequence needs rank >= 2, got " + x.describe());
  const int64_t batch_axis = ctx.attr_int("batch_axis", 1), time_axis = ctx.attr_int("time_axis", 0);
  if (!((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0)))
    ctx.fail("batch_axis and time_axis must be 0 and 1 in some order");
  const int64_t batch = x.dim(static_cast<size_t>(batch_axis)), steps = x.dim(static_cast<size_t>(time_axis));
  const auto lens = read_int_list(ctx, lens_t, "sequence_lens");
  if (static_cast<int64_t>(lens.size()) != batch)
    ctx.fail("sequence_lens has " + std::to_string(lens.size()) + " values for a batch of " + std::to_string(batch));
  for (int64_t l : lens)
    if (l < 0 || l > steps) ctx.fail("sequence length " + std::to_string(l) + " is out of range [0, " + std::to_string(steps) + "]");
  const int64_t inner = dims_product(x.shape(), 2, x.rank());
  auto offset = [&](int64_t b, int64_t t) { return (time_axis == 0 ? t * batch + b : b * steps + t) * inner; };
  Tensor out(x.dtype(), x.shape());
  visit_storage_or_fail(ctx, x.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E* in = elements<E>(x);
    E* o = mutable_elements<E>(out);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < steps; ++t) {
        const int64_t len = lens[static_cast<size_t>(b)];
        const int64_t from = t < len ? len - 1 - t : t;
        copy_elements(o + offset(b, t), in + offset(b, from), inner);
      }
  });
  ctx.set_output(0, out);
}

// ---------------------------------------------------------------- TopK

void top_k(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() == 0) ctx.fail("TopK needs rank >= 1");
  const size_t axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", -1), static_cast<int64_t>(x.rank())));
  const int64_t k = ctx.opset() < 10 ? ctx.attr_int("k", -1) : read_int_scalar(ctx, ctx.input(1), "K");
  const int64_t dim = x.dim(axis);
  if (k < 0 || k > dim) ctx.fail("k = " + std::to_string(k) + " is out of range for an axis of " + std::to_string(dim));
  const bool largest = ctx.opset() < 11 || ctx.attr_int("largest", 1) != 0;
  // sorted=0 leaves the order unspecified; the sorted order is returned either way.
  std::vector<int64_t> shape = x.shape();
  shape[axis] = k;
  Tensor& values = ctx.output(0, x.dtype(), shape);
  Tensor& indices = ctx.output(1, DataType::kInt64, shape);
  const int64_t outer = dims_product(x.shape(), 0, axis);
  const int64_t inner = dims_product(x.shape(), axis + 1, x.rank());
  visit_or_fail<kNumeric>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = calc_t<T>;
    const T* in = x.data<T>();
    T* vo = values.mutable_data<T>();
    int64_t* io = indices.mutable_data<int64_t>();
    parallel_ranges(outer * inner, std::max<int64_t>(1, 4096 / std::max<int64_t>(dim, 1)), [&](int64_t b, int64_t e) {
      std::vector<std::pair<C, int64_t>> row(static_cast<size_t>(dim));
      // Ties keep the lower index first.
      auto before = [largest](const std::pair<C, int64_t>& p, const std::pair<C, int64_t>& q) {
        if (value_less(p.first, q.first)) return !largest;
        if (value_less(q.first, p.first)) return largest;
        return p.second < q.second;
      };
      for (int64_t s = b; s < e; ++s) {
        const int64_t o = s / inner, i = s % inner;
        const T* src = in + o * dim * inner + i;
        for (int64_t j = 0; j < dim; ++j) row[static_cast<size_t>(j)] = {Num<T>::load(src[j * inner]), j};
        std::partial_sort(row.begin(), row.begin() + k, row.end(), before);
        for (int64_t j = 0; j < k; ++j) {
          const int64_t at = (o * k + j) * inner + i;
          vo[at] = in[o * dim * inner + row[static_cast<size_t>(j)].second * inner + i];
          io[at] = row[static_cast<size_t>(j)].second;
        }
      }
    });
  });
}

// ---------------------------------------------------------------- Unique

/// Unique over `n` slices of `len` elements; slice s holds keys[slice_elem(s, j)], j < len.
/// Returns the slices' order of output (first occurrences), the group of every slice, counts.
struct UniqueGroups {
  std::vector<int64_t> first;    // per output slot: index of the first occurrence
  std::vector<int64_t> inverse;  // per input slice: output slot
  std::vector<int64_t> counts;   // per output slot
};

template <class K, class Elem>
UniqueGroups unique_groups(int64_t n, int64_t len, Elem elem, bool sorted) {
  auto cmp = [&](int64_t a, int64_t b) {
    for (int64_t j = 0; j < len; ++j) {
      const K& x = elem(a, j);
      const K& y = elem(b, j);
      if (value_less(x, y)) return -1;
      if (value_less(y, x)) return 1;
    }
    return 0;
  };
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
  // Groups in sorted order; each group's first member is its first occurrence (stable sort).
  std::vector<int64_t> group_of(static_cast<size_t>(n));
  std::vector<int64_t> firsts, counts;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || cmp(order[i - 1], order[i]) != 0) {
      firsts.push_back(order[i]);
      counts.push_back(0);
    }
    group_of[static_cast<size_t>(order[i])] = static_cast<int64_t>(firsts.size() - 1);
    counts.back()++;
  }
  std::vector<int64_t> slot(firsts.size());
  std::iota(slot.begin(), slot.end(), 0);
  if (!sorted)
    std::sort(slot.begin(), slot.end(), [&](int64_t a, int64_t b) { return firsts[static_cast<size_t>(a)] < firsts[static_cast<size_t>(b)]; });
  // slot[p] = group at output position p; rank maps group -> position.
  std::vector<int64_t> rank(slot.size());
  for (size_t p = 0; p < slot.size(); ++p) rank[static_cast<size_t>(slot[p])] = static_cast<int64_t>(p);
  UniqueGroups g;
  for (int64_t s : slot) {
    g.first.push_back(firsts[static_cast<size_t>(s)]);
    g.counts.push_back(counts[static_cast<size_t>(s)]);
  }
  for (int64_t i = 0; i < n; ++i) g.inverse.push_back(rank[static_cast<size_t>(group_of[static_cast<size_t>(i)])]);
  return g;
}

void unique(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool sorted = ctx.attr_int("sorted", 1) != 0;
  const bool has_axis = ctx.has_attr("axis");
  const Tensor src = has_axis ? x : x.reshaped({x.size()});
  const size_t axis = has_axis ? static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", 0), static_cast<int64_t>(x.rank()))) : 0;
  const int64_t outer = dims_product(src.shape(), 0, axis);
  const int64_t n = src.dim(axis);
  const int64_t inner = dims_product(src.shape(), axis + 1, src.rank());
  // Element j of slice s, in row-major order of the remaining dims.
  auto at = [&](int64_t s, int64_t j) { return ((j / inner) * n + s) * inner + j % inner; };
  UniqueGroups g;
  const bool ok = visit<kAllPlain>(src.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    // bool keys as bytes: std::vector<bool> has no element references.
    using C = std::conditional_t<std::is_same_v<calc_t<T>, bool>, uint8_t, calc_t<T>>;
    std::vector<C> keys(static_cast<size_t>(src.size()));
    for (size_t i = 0; i < keys.size(); ++i) keys[i] = Num<T>::load(src.data<T>()[i]);
    g = unique_groups<C>(n, outer * inner, [&](int64_t s, int64_t j) -> const C& { return keys[static_cast<size_t>(at(s, j))]; }, sorted);
  });
  if (!ok && src.dtype() == DataType::kString) {
    const auto& keys = src.strings();
    g = unique_groups<std::string>(n, outer * inner, [&](int64_t s, int64_t j) -> const std::string& { return keys[static_cast<size_t>(at(s, j))]; }, sorted);
  } else if (!ok) {
    ctx.fail("Unique does not support element type " + type_name(src.dtype()));
  }
  std::vector<int64_t> shape = src.shape();
  shape[axis] = static_cast<int64_t>(g.first.size());
  ctx.set_output(0, take_along(ctx, src, axis, g.first, shape));
  auto put = [&](size_t i, const std::vector<int64_t>& v) {
    if (!ctx.has_output(i)) return;
    Tensor& t = ctx.output(i, DataType::kInt64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.mutable_data<int64_t>());
  };
  put(1, g.first);
  put(2, g.inverse);
  put(3, g.counts);
}

}  // namespace

void register_indexing_kernels(KernelRegistry& r) {
  r.add("Gather", gather);
  r.add("GatherElements", gather_elements);
  r.add("GatherND", gather_nd);
  r.add("", "Scatter", 9, 10, scatter);
  r.add("ScatterElements", scatter_elements);
  r.add("ScatterND", scatter_nd);
  r.add("OneHot", one_hot);
  r.add("NonZero", non_zero);
  r.add("Compress", compress);
  r.add("ReverseSequence", reverse_sequence);
  r.add("TopK", top_k);
  r.add("Unique", unique);
}

}  // namespace onnxtool::runner::cpu
