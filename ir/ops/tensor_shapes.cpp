// Shape functions of tensor manipulation and shape computation ops (Shape, Reshape, Slice,
// Gather, Concat, Pad, ...), with the propagation of the values of small integer
// tensors that shape computations need. The other families have their own
// ir/ops/<family>_shapes.cpp (random, string, sequence, signal, vision, ...).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "ir/constant.h"
#include "ir/ops/shape_util.h"

namespace onnxtool::ir {
namespace {

using shape::all_axes;
using shape::checked_mul;
using shape::divide_dim;
using shape::dtype_attr;
using shape::input_numbers;
using shape::normalize_axes;
using shape::normalize_axis;
using shape::propagate_type;
using shape::propagate_type_and_shape;
using shape::rank_of;
using shape::same_dim;
using shape::scalar_dim;
using shape::scalar_int;
using shape::shape_of_dims;
using shape::unknown_shape;
using shape::vector_length;
using shape::vector_shape;

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
// Slice ends at or beyond this are read as "to the end" even when the dim is symbolic: exporters
// write INT32_MAX or INT64_MAX for an open end, and no real dim reaches 2^31 - 1.
constexpr int64_t kOpenEnd = std::numeric_limits<int32_t>::max();
// Values of tensors built here (ConstantOfShape, Range) are kept up to this many elements.
constexpr size_t kMaxValues = 64;

// ------------------------------------------------------------------ small helpers

DimValues to_values(const std::vector<int64_t>& ints) {
  DimValues out;
  out.reserve(ints.size());
  for (int64_t v : ints) out.push_back(Dim::of(v));
  return out;
}

/// a * b: a number when both are static, a derived symbol ("3*h") for a symbol times a positive
/// number, unknown otherwise (a product of two symbols has no canonical spelling).
Dim multiply_dim(const InferenceContext& ctx, const Dim& a, const Dim& b) {
  if (a.is_static() && b.is_static()) return Dim::of(checked_mul(ctx, a.value, b.value));
  if (a.is_static() && a.value == 0) return Dim::of(0);
  if (b.is_static() && b.value == 0) return Dim::of(0);
  if (a.is_static() && a.value >= 1) return shape::affine_dim(ctx, b, a.value, 0, 1);
  if (b.is_static() && b.value >= 1) return shape::affine_dim(ctx, a, b.value, 0, 1);
  return Dim{};
}


// ------------------------------------------------------------------ shape computations

// Shape-1/13: the dims as int64 values. Shape-15+: start/end select a range of axes.
void infer_shape(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  if (!in) {
    ctx.set_output_tensor(0, DataType::kInt64, unknown_shape(1));
    return;
  }
  const int64_t r = rank_of(*in);
  int64_t start = 0, end = r;
  if (ctx.opset() >= 15) {
    start = ctx.attr_int("start", 0);
    end = ctx.attr_int("end", r);
  }
  auto clamp_axis = [r](int64_t a) {
    if (a < 0) a = a < -r ? 0 : a + r;
    return std::min(a, r);
  };
  start = clamp_axis(start);
  end = clamp_axis(end);
  DimValues values;
  for (int64_t i = start; i < end; ++i) values.push_back(in->dims[static_cast<size_t>(i)]);
  // Declared dims keep only their size or symbol.
  for (Dim& d : values) {
    d.denotation.clear();
    d.unknown.clear();
    d.explicit_defaults = 0;
  }
  ctx.set_output_tensor(0, DataType::kInt64, shape::from_ints({static_cast<int64_t>(values.size())}));
  ctx.set_output_values(0, std::move(values));
}

void infer_size(InferenceContext& ctx) {
  ctx.set_output_tensor(0, DataType::kInt64, Shape{});
  const Shape* in = ctx.input_shape(0);
  if (!in) return;
  if (auto n = shape::static_product(ctx, in->dims)) ctx.set_output_values(0, {Dim::of(*n)});
}

// The size a -1 entry of Reshape stands for: the input's element count over the product of the
// other output dims, after cancelling dims copied by 0 and equal symbols on both sides.
Dim reshape_inferred_dim(const InferenceContext& ctx, const Shape& in, const std::vector<Dim>& out,
                         const std::vector<int64_t>& copied_from, size_t missing) {
  std::vector<bool> cancelled(in.rank(), false);
  for (size_t j = 0; j < out.size(); ++j)
    if (j != missing && copied_from[j] >= 0) cancelled[static_cast<size_t>(copied_from[j])] = true;
  bool symbolic = false;
  int64_t in_static = 1;
  std::multiset<std::string> in_symbols;
  for (size_t i = 0; i < in.rank(); ++i) {
    if (cancelled[i]) {
      symbolic = symbolic || !in.dims[i].is_static();
      continue;
    }
    const Dim& d = in.dims[i];
    if (d.is_static()) in_static = checked_mul(ctx, in_static, d.value);
    else if (d.kind == Dim::Kind::kParam) in_symbols.insert(d.param);
    else return Dim{};
    symbolic = symbolic || !d.is_static();
  }
  int64_t out_static = 1;
  for (size_t j = 0; j < out.size(); ++j) {
    if (j == missing || copied_from[j] >= 0) continue;
    const Dim& d = out[j];
    if (d.is_static()) {
      out_static = checked_mul(ctx, out_static, d.value);
    } else if (d.kind == Dim::Kind::kParam) {
      auto it = in_symbols.find(d.param);
      if (it == in_symbols.end()) return Dim{};
      in_symbols.erase(it);
      symbolic = true;
    } else {
      return Dim{};
    }
  }
  if (in_symbols.empty()) {
    if (out_static == 0) {
      // 0 * x == 0 for every x: the -1 is undetermined (or the reshape invalid).
      if (in_static != 0 && !symbolic)
        ctx.fail("shape.reshape", "cannot reshape " + std::to_string(in_static) +
                                      " elements into a shape with a zero dim and -1");
      return Dim{};
    }
    if (in_static % out_static != 0) {
      if (!symbolic)
        ctx.fail("shape.reshape", "cannot reshape " + in.to_string() + " (" + std::to_string(in_static) +
                                      " elements) with -1: not a multiple of " + std::to_string(out_static));
      return Dim{};
    }
    return Dim::of(in_static / out_static);
  }
  if (in_symbols.size() == 1 && out_static != 0 && in_static % out_static == 0)
    return shape::affine_dim(ctx, Dim::symbol(*in_symbols.begin()), in_static / out_static, 0, 1);
  return Dim{};
}

// Reshape-1: `shape` attribute; Reshape-5+: `shape` input (values may be symbols);
// Reshape-14+: allowzero.
void infer_reshape(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  std::optional<DimValues> target;
  if (ctx.opset() < 5) {
    if (auto a = ctx.attr_ints("shape")) target = to_values(*a);
  } else if (const DimValues* v = ctx.input_values(1)) {
    target = *v;
  }
  if (!target) {
    std::optional<Shape> out;
    if (ctx.opset() >= 5) {
      if (const auto len = vector_length(ctx, 1)) out = unknown_shape(static_cast<size_t>(*len));
    }
    propagate_type(ctx, 0, 0, std::move(out));
    return;
  }
  const bool allowzero = ctx.opset() >= 14 && ctx.attr_int("allowzero", 0) != 0;
  std::vector<Dim> out(target->size());
  std::vector<int64_t> copied_from(target->size(), -1);
  std::optional<size_t> missing;
  bool has_zero = false;
  for (size_t j = 0; j < target->size(); ++j) {
    const Dim& v = (*target)[j];
    if (!v.is_static()) {
      out[j] = v.kind == Dim::Kind::kParam ? Dim::symbol(v.param) : Dim{};
      continue;
    }
    if (v.value == -1) {
      if (missing) ctx.fail("shape.reshape", "shape has more than one -1");
      missing = j;
    } else if (v.value < -1) {
      ctx.fail("shape.reshape", "shape has the invalid value " + std::to_string(v.value));
    } else if (v.value == 0 && !allowzero) {
      if (in && j >= in->rank())
        ctx.fail("shape.reshape", "shape copies dim " + std::to_string(j) + " (0) of a rank-" +
                                      std::to_string(in->rank()) + " input");
      if (in) {
        out[j] = in->dims[j];
        copied_from[j] = static_cast<int64_t>(j);
      }
    } else {
      has_zero = has_zero || v.value == 0;
      out[j] = Dim::of(v.value);
    }
  }
  if (allowzero && has_zero && missing)
    ctx.fail("shape.reshape", "with allowzero=1 the shape cannot hold both 0 and -1");
  if (missing) {
    out[*missing] = in ? reshape_inferred_dim(ctx, *in, out, copied_from, *missing) : Dim{};
  } else if (in) {
    auto in_n = shape::static_product(ctx, in->dims);
    auto out_n = shape::static_product(ctx, out);
    if (in_n && out_n && *in_n != *out_n)
      ctx.fail("shape.reshape", "cannot reshape " + in->to_string() + " (" + std::to_string(*in_n) +
                                    " elements) to " + shape_of_dims(out).to_string() + " (" +
                                    std::to_string(*out_n) + " elements)");
  }
  for (Dim& d : out) d.denotation.clear();
  const size_t out_rank = out.size();
  propagate_type(ctx, 0, 0, shape_of_dims(std::move(out)));
  if (out_rank <= 1)
    if (const DimValues* v = ctx.input_values(0)) ctx.set_output_values(0, *v);
}

// Flatten-1/9: axis in [0, r]; Flatten-11+: negative axes too.
void infer_flatten(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  if (!in) {
    propagate_type(ctx, 0, 0, unknown_shape(2));
    return;
  }
  const int64_t r = rank_of(*in);
  int64_t axis = ctx.attr_int("axis", 1);
  if (axis < 0 && ctx.opset() >= 11) axis += r;
  if (axis < 0 || axis > r)
    ctx.fail("shape.axis", "axis " + std::to_string(ctx.attr_int("axis", 1)) +
                               " is out of range for rank " + std::to_string(r));
  Dim outer = Dim::of(1), inner = Dim::of(1);
  for (int64_t i = 0; i < r; ++i) {
    Dim& acc = i < axis ? outer : inner;
    acc = multiply_dim(ctx, acc, in->dims[static_cast<size_t>(i)]);
  }
  propagate_type(ctx, 0, 0, shape_of_dims({outer, inner}));
}

void infer_transpose(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  auto perm = ctx.attr_ints("perm");
  if (!in && !perm) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  const int64_t r = in ? rank_of(*in) : static_cast<int64_t>(perm->size());
  if (!perm) {
    perm.emplace();
    for (int64_t i = r - 1; i >= 0; --i) perm->push_back(i);
  }
  if (static_cast<int64_t>(perm->size()) != r)
    ctx.fail("shape.perm", "perm has " + std::to_string(perm->size()) + " entries for a rank-" +
                               std::to_string(r) + " input");
  std::vector<bool> seen(static_cast<size_t>(r), false);
  for (int64_t p : *perm) {
    if (p < 0 || p >= r || seen[static_cast<size_t>(p)])
      ctx.fail("shape.perm", "perm is not a permutation of 0.." + std::to_string(r - 1));
    seen[static_cast<size_t>(p)] = true;
  }
  Shape out = unknown_shape(static_cast<size_t>(r));
  if (in)
    for (int64_t i = 0; i < r; ++i) out.dims[static_cast<size_t>(i)] = in->dims[static_cast<size_t>((*perm)[static_cast<size_t>(i)])];
  propagate_type(ctx, 0, 0, std::move(out));
  if (r == 1)
    if (const DimValues* v = ctx.input_values(0)) ctx.set_output_values(0, *v);
}

// The element type of the first input that has one.
std::optional<DataType> first_elem_type(const InferenceContext& ctx) {
  for (size_t i = 0; i < ctx.input_count(); ++i)
    if (auto t = ctx.input_elem_type(i)) return t;
  return std::nullopt;
}

// Concat-1: axis defaults to 1; Concat-4+: axis required; Concat-11+: negative axes.
void infer_concat(InferenceContext& ctx) {
  const DataType et = first_elem_type(ctx).value_or(DataType::kUndefined);
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    auto t = ctx.input_elem_type(i);
    if (t && *t != et)
      ctx.fail("shape.input-type", "Concat inputs have different element types: " +
                                       std::string(data_type_name(et)) + " and " + std::string(data_type_name(*t)));
  }
  if (ctx.opset() >= 4 && !ctx.has_attr("axis")) {
    ctx.set_output_tensor(0, et, std::nullopt);
    return;
  }
  const int64_t raw_axis = ctx.attr_int("axis", 1);
  std::optional<int64_t> rank;
  bool all_known = true;
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    if (!ctx.has_input(i)) continue;
    const Shape* s = ctx.input_shape(i);
    if (!s) {
      all_known = false;
      continue;
    }
    if (rank && *rank != rank_of(*s))
      ctx.fail("shape.rank", "Concat inputs have ranks " + std::to_string(*rank) + " and " + std::to_string(s->rank()));
    rank = rank_of(*s);
  }
  if (!rank) {
    ctx.set_output_tensor(0, et, std::nullopt);
    return;
  }
  const int64_t axis = normalize_axis(ctx, raw_axis, *rank);
  Shape out = unknown_shape(static_cast<size_t>(*rank));
  // The axis dim: the static sizes added up, then the symbolic ones (a derived symbol).
  int64_t static_sum = 0;
  std::vector<Dim> dynamic;
  bool first = true;
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    const Shape* s = ctx.input_shape(i);
    if (!s) continue;
    for (int64_t d = 0; d < *rank; ++d) {
      if (d == axis) continue;
      const Dim& x = s->dims[static_cast<size_t>(d)];
      Dim& o = out.dims[static_cast<size_t>(d)];
      o = first ? x : shape::merge(ctx, o, x, "shape.concat", "Concat inputs differ in dim " + std::to_string(d));
    }
    const Dim& x = s->dims[static_cast<size_t>(axis)];
    if (!x.is_static()) dynamic.push_back(x);
    else if (__builtin_add_overflow(static_sum, x.value, &static_sum)) ctx.fail("shape.overflow", "Concat size overflows int64");
    first = false;
  }
  Dim total = Dim::of(static_sum);
  for (const Dim& d : dynamic) total = shape::sum_dims(ctx, total, d);
  out.dims[static_cast<size_t>(axis)] = all_known ? total : Dim{};
  for (Dim& d : out.dims) d.denotation.clear();
  ctx.set_output_tensor(0, et, std::move(out));
  if (*rank == 1) {
    DimValues values;
    for (size_t i = 0; i < ctx.input_count(); ++i) {
      const DimValues* v = ctx.input_values(i);
      if (!v) return;
      values.insert(values.end(), v->begin(), v->end());
    }
    ctx.set_output_values(0, std::move(values));
  }
}

// Split-1: `split` attribute or second input; Split-2/11: attribute; Split-13+: input;
// Split-18+: num_outputs (the last part may be smaller).
void infer_split(InferenceContext& ctx) {
  const size_t n = ctx.output_count();
  const Shape* in = ctx.input_shape(0);
  std::optional<std::vector<int64_t>> split;
  bool split_unknown = false;
  if (ctx.opset() < 13) split = ctx.attr_ints("split");
  if (!split && (ctx.opset() < 2 || ctx.opset() >= 13) && ctx.has_input(1)) {
    split = ctx.input_ints(1);
    split_unknown = !split;
  }
  if (split && split->empty() && ctx.opset() < 13) split.reset();  // an empty attribute: equal parts
  for (size_t o = 0; o < n; ++o) propagate_type(ctx, 0, o, std::nullopt);
  if (split) {
    if (split->size() != n)
      ctx.fail("shape.split", "split has " + std::to_string(split->size()) + " entries for " +
                                  std::to_string(n) + " outputs");
    for (int64_t s : *split)
      if (s < 0) ctx.fail("shape.split", "split has the negative size " + std::to_string(s));
  }
  if (!in) return;
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), rank_of(*in));
  const Dim& dim = in->dims[static_cast<size_t>(axis)];
  std::vector<Dim> sizes(n);
  if (split) {
    int64_t sum = 0;
    for (size_t o = 0; o < n; ++o) {
      sizes[o] = Dim::of((*split)[o]);
      if (__builtin_add_overflow(sum, (*split)[o], &sum)) ctx.fail("shape.overflow", "split sizes overflow int64");
    }
    if (dim.is_static() && sum != dim.value)
      ctx.fail("shape.split", "split sizes add up to " + std::to_string(sum) + ", the axis has " +
                                  std::to_string(dim.value));
  } else if (n == 1) {
    sizes[0] = dim;
  } else if (dim.is_static() && dim.value == 0) {
    // Non-negative parts of an empty axis are all empty, whatever the split says.
    for (size_t o = 0; o < n; ++o) sizes[o] = Dim::of(0);
  } else if (!split_unknown && dim.is_static()) {
    const bool by_count = ctx.opset() >= 18 && ctx.has_attr("num_outputs");
    if (by_count) {
      const int64_t parts = ctx.attr_int("num_outputs", 0);
      if (parts < 1 || static_cast<size_t>(parts) != n)
        ctx.fail("shape.split", "num_outputs is " + std::to_string(parts) + " for " + std::to_string(n) + " outputs");
      const int64_t chunk = dim.value / parts + (dim.value % parts != 0);
      const int64_t last = dim.value - chunk * (parts - 1);
      if (last >= 0) {
        for (size_t o = 0; o < n; ++o) sizes[o] = Dim::of(o + 1 < n ? chunk : last);
      }
    } else if (dim.value % static_cast<int64_t>(n) == 0) {
      for (size_t o = 0; o < n; ++o) sizes[o] = Dim::of(dim.value / static_cast<int64_t>(n));
    } else if (ctx.opset() < 18) {
      ctx.fail("shape.split", "axis of size " + std::to_string(dim.value) + " cannot be split into " +
                                  std::to_string(n) + " equal parts");
    }
  }
  for (size_t o = 0; o < n; ++o) {
    Shape s = *in;
    s.dims[static_cast<size_t>(axis)] = sizes[o];
    propagate_type(ctx, 0, o, std::move(s));
  }
  // Parts of a known 1-D value.
  const DimValues* v = ctx.input_values(0);
  if (v && in->rank() == 1) {
    size_t pos = 0;
    for (size_t o = 0; o < n; ++o) {
      if (!sizes[o].is_static()) return;
      const size_t len = static_cast<size_t>(sizes[o].value);
      if (pos + len > v->size()) return;
      ctx.set_output_values(o, DimValues(v->begin() + static_cast<long>(pos), v->begin() + static_cast<long>(pos + len)));
      pos += len;
    }
  }
}

// Slice-1: starts/ends/axes attributes; Slice-10+: starts, ends, axes, steps inputs.
void infer_slice(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  std::optional<DimValues> starts, ends;
  std::optional<std::vector<int64_t>> axes, steps;
  bool axes_unknown = false, steps_unknown = false;
  std::optional<int64_t> count;
  if (ctx.opset() < 10) {
    if (auto a = ctx.attr_ints("starts")) starts = to_values(*a);
    if (auto a = ctx.attr_ints("ends")) ends = to_values(*a);
    axes = ctx.attr_ints("axes");
  } else {
    if (const DimValues* v = ctx.input_values(1)) starts = *v;
    if (const DimValues* v = ctx.input_values(2)) ends = *v;
    if (ctx.has_input(3)) {
      axes = ctx.input_ints(3);
      axes_unknown = !axes;
    }
    if (ctx.has_input(4)) {
      steps = ctx.input_ints(4);
      steps_unknown = !steps;
    }
    count = vector_length(ctx, 1);
    if (!count) count = vector_length(ctx, 2);
  }
  if (starts) count = static_cast<int64_t>(starts->size());
  if (starts && ends && starts->size() != ends->size())
    ctx.fail("shape.slice", "starts has " + std::to_string(starts->size()) + " entries, ends " +
                                std::to_string(ends->size()));
  if (!count && ends) count = static_cast<int64_t>(ends->size());
  if (!count && axes) count = static_cast<int64_t>(axes->size());
  if (count && axes && static_cast<int64_t>(axes->size()) != *count)
    ctx.fail("shape.slice", "axes has " + std::to_string(axes->size()) + " entries, starts " + std::to_string(*count));
  if (count && steps && static_cast<int64_t>(steps->size()) != *count)
    ctx.fail("shape.slice", "steps has " + std::to_string(steps->size()) + " entries, starts " + std::to_string(*count));
  if (steps)
    for (int64_t s : *steps)
      if (s == 0) ctx.fail("shape.slice", "a step is 0");
  if (!in) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  const int64_t r = rank_of(*in);
  Shape out = *in;
  for (Dim& d : out.dims) d.denotation.clear();
  if (axes_unknown || (!axes && !count)) {
    propagate_type(ctx, 0, 0, unknown_shape(in->rank()));
    return;
  }
  std::vector<int64_t> ax;
  if (axes) {
    ax = normalize_axes(ctx, *axes, r);
  } else {
    if (*count > r)
      ctx.fail("shape.slice", "starts has " + std::to_string(*count) + " entries for a rank-" + std::to_string(r) + " input");
    ax = all_axes(*count);
  }
  for (size_t k = 0; k < ax.size(); ++k) {
    const size_t a = static_cast<size_t>(ax[k]);
    const Dim dim = in->dims[a];
    Dim& o = out.dims[a];
    if (!starts || !ends || steps_unknown) {
      o = Dim{};
      continue;
    }
    const int64_t step = steps ? (*steps)[k] : 1;
    const Dim& s = (*starts)[k];
    const Dim& e = (*ends)[k];
    if (dim.is_static() && s.is_static() && e.is_static()) {
      o = Dim::of(shape::slice_range(s.value, e.value, step, dim.value).count);
    } else if (s.is_static() && s.value == 0 && step == 1 &&
               ((e.is_static() && e.value >= kOpenEnd) || same_dim(e, dim))) {
      o = dim;  // the whole axis
    } else {
      o = Dim{};
    }
  }
  propagate_type(ctx, 0, 0, out);
  // Values of a sliced 1-D vector.
  const DimValues* v = ctx.input_values(0);
  if (v && r == 1 && starts && ends && !steps_unknown && ax.size() == 1) {
    const Dim& s = (*starts)[0];
    const Dim& e = (*ends)[0];
    if (!s.is_static() || !e.is_static()) return;
    const int64_t step = steps ? (*steps)[0] : 1;
    const shape::SliceRange range = shape::slice_range(s.value, e.value, step, static_cast<int64_t>(v->size()));
    DimValues values;
    for (int64_t i = 0; i < range.count; ++i) values.push_back((*v)[static_cast<size_t>(range.first + i * step)]);
    ctx.set_output_values(0, std::move(values));
  }
}

// Gather: data[:axis] + indices + data[axis+1:].
void infer_gather(InferenceContext& ctx) {
  const Shape* data = ctx.input_shape(0);
  const Shape* idx = ctx.input_shape(1);
  if (!data || !idx) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  const int64_t r = rank_of(*data);
  if (r < 1) ctx.fail("shape.rank", "Gather data must have rank >= 1");
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), r);
  Shape out;
  for (int64_t i = 0; i < axis; ++i) out.dims.push_back(data->dims[static_cast<size_t>(i)]);
  for (const Dim& d : idx->dims) out.dims.push_back(d);
  for (int64_t i = axis + 1; i < r; ++i) out.dims.push_back(data->dims[static_cast<size_t>(i)]);
  for (Dim& d : out.dims) d.denotation.clear();
  propagate_type(ctx, 0, 0, std::move(out));
  // Values: picking elements of a known 1-D vector (e.g. a dim out of Shape).
  const DimValues* v = ctx.input_values(0);
  auto indices = ctx.input_ints(1);
  if (v && r == 1 && indices && idx->rank() <= 1) {
    const int64_t n = static_cast<int64_t>(v->size());
    DimValues values;
    for (int64_t i : *indices) {
      if (i < -n || i >= n) return;  // out of range: the runtime reports it
      values.push_back((*v)[static_cast<size_t>(i < 0 ? i + n : i)]);
    }
    ctx.set_output_values(0, std::move(values));
  }
}

void infer_gather_elements(InferenceContext& ctx) {
  const Shape* data = ctx.input_shape(0);
  const Shape* idx = ctx.input_shape(1);
  if (data && idx && data->rank() != idx->rank())
    ctx.fail("shape.rank", "GatherElements data has rank " + std::to_string(data->rank()) +
                               ", indices rank " + std::to_string(idx->rank()));
  if (data) normalize_axis(ctx, ctx.attr_int("axis", 0), rank_of(*data));
  if (idx) propagate_type(ctx, 0, 0, *idx);
  else propagate_type(ctx, 0, 0, data ? std::optional<Shape>(unknown_shape(data->rank())) : std::nullopt);
}

// GatherND (batch_dims at 12+): indices.shape[:-1] + data.shape[batch_dims + k:].
void infer_gather_nd(InferenceContext& ctx) {
  const Shape* data = ctx.input_shape(0);
  const Shape* idx = ctx.input_shape(1);
  const int64_t b = ctx.opset() >= 12 ? ctx.attr_int("batch_dims", 0) : 0;
  if (!data || !idx) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  const int64_t r = rank_of(*data), q = rank_of(*idx);
  if (r < 1 || q < 1) ctx.fail("shape.rank", "GatherND data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(r, q))
    ctx.fail("shape.attribute", "batch_dims " + std::to_string(b) + " must be less than both ranks");
  const Dim& last = idx->dims[static_cast<size_t>(q - 1)];
  if (!last.is_static()) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  const int64_t k = last.value;
  if (k < 1 || k > r - b)
    ctx.fail("shape.rank", "GatherND index tuples of length " + std::to_string(k) + " for data of rank " +
                               std::to_string(r) + " with batch_dims " + std::to_string(b));
  Shape out;
  for (int64_t i = 0; i < q - 1; ++i) {
    Dim d = idx->dims[static_cast<size_t>(i)];
    if (i < b) d = shape::merge(ctx, d, data->dims[static_cast<size_t>(i)], "shape.gathernd", "batch dim " + std::to_string(i));
    out.dims.push_back(d);
  }
  for (int64_t i = b + k; i < r; ++i) out.dims.push_back(data->dims[static_cast<size_t>(i)]);
  for (Dim& d : out.dims) d.denotation.clear();
  propagate_type(ctx, 0, 0, std::move(out));
}

// Scatter, ScatterElements, ScatterND, TensorScatter: the output is the data input.
void infer_scatter(InferenceContext& ctx) { propagate_type_and_shape(ctx, 0, 0); }

void infer_scatter_elements(InferenceContext& ctx) {
  const Shape* data = ctx.input_shape(0);
  const Shape* idx = ctx.input_shape(1);
  const Shape* upd = ctx.input_shape(2);
  if (data && idx && data->rank() != idx->rank())
    ctx.fail("shape.rank", "scatter data has rank " + std::to_string(data->rank()) + ", indices rank " +
                               std::to_string(idx->rank()));
  if (idx && upd && idx->rank() != upd->rank())
    ctx.fail("shape.rank", "scatter indices have rank " + std::to_string(idx->rank()) + ", updates rank " +
                               std::to_string(upd->rank()));
  propagate_type_and_shape(ctx, 0, 0);
}

// Squeeze-1/11: axes attribute; Squeeze-13+: axes input.
void infer_squeeze(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  std::optional<std::vector<int64_t>> axes;
  bool axes_unknown = false;
  if (ctx.opset() < 13) {
    axes = ctx.attr_ints("axes");
  } else if (ctx.has_input(1)) {
    axes = ctx.input_ints(1);
    axes_unknown = !axes;
  }
  if (!in) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  if (axes_unknown) {
    auto len = vector_length(ctx, 1);
    propagate_type(ctx, 0, 0, len && *len <= rank_of(*in) ? std::optional<Shape>(unknown_shape(in->rank() - static_cast<size_t>(*len))) : std::nullopt);
    return;
  }
  Shape out;
  if (axes) {
    const auto ax = normalize_axes(ctx, *axes, rank_of(*in));
    std::vector<bool> drop(in->rank(), false);
    for (int64_t a : ax) {
      const Dim& d = in->dims[static_cast<size_t>(a)];
      if (d.is_static() && d.value != 1)
        ctx.fail("shape.squeeze", "cannot squeeze axis " + std::to_string(a) + " of size " + std::to_string(d.value));
      drop[static_cast<size_t>(a)] = true;
    }
    for (size_t i = 0; i < in->rank(); ++i)
      if (!drop[i]) out.dims.push_back(in->dims[i]);
  } else {
    // Without axes every size-1 dim goes: a non-static dim might be 1, so the rank is unknown.
    for (const Dim& d : in->dims) {
      if (!d.is_static()) {
        propagate_type(ctx, 0, 0, std::nullopt);
        return;
      }
      if (d.value != 1) out.dims.push_back(d);
    }
  }
  propagate_type(ctx, 0, 0, std::move(out));
  if (const DimValues* v = ctx.input_values(0)) ctx.set_output_values(0, *v);
}

// Unsqueeze-1/11: axes attribute; Unsqueeze-13+: axes input.
void infer_unsqueeze(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  std::optional<std::vector<int64_t>> axes;
  if (ctx.opset() < 13) axes = ctx.attr_ints("axes");
  else if (ctx.has_input(1)) axes = ctx.input_ints(1);
  if (!in) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  if (!axes) {
    auto len = ctx.opset() >= 13 ? vector_length(ctx, 1) : std::nullopt;
    propagate_type(ctx, 0, 0, len ? std::optional<Shape>(unknown_shape(in->rank() + static_cast<size_t>(*len))) : std::nullopt);
    return;
  }
  const int64_t out_rank = rank_of(*in) + static_cast<int64_t>(axes->size());
  const auto ax = normalize_axes(ctx, *axes, out_rank);
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : ax) inserted[static_cast<size_t>(a)] = true;
  Shape out;
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i)
    out.dims.push_back(inserted[static_cast<size_t>(i)] ? Dim::of(1) : in->dims[next++]);
  propagate_type(ctx, 0, 0, std::move(out));
  if (out_rank <= 1)
    if (const DimValues* v = ctx.input_values(0)) ctx.set_output_values(0, *v);
}

// Expand: numpy broadcasting of the input with the `shape` input's values.
void infer_expand(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  Shape target;
  if (const DimValues* v = ctx.input_values(1)) {
    // A negative entry is outside the spec; it is left to the checker and the runtime.
    for (const Dim& d : *v)
      target.dims.push_back(d.kind == Dim::Kind::kParam ? Dim::symbol(d.param) : d.is_static() && d.value >= 0 ? Dim::of(d.value) : Dim{});
  } else if (auto len = vector_length(ctx, 1)) {
    target = unknown_shape(static_cast<size_t>(*len));
  } else {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  if (!in) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  Shape out = shape::broadcast(ctx, {in, &target});
  for (Dim& d : out.dims) d.denotation.clear();
  propagate_type(ctx, 0, 0, std::move(out));
}

// Tile-1: (input, tiles, axis); Tile-6+: (input, repeats) with one repeat per axis.
void infer_tile(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  if (!in) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  Shape out = *in;
  for (Dim& d : out.dims) d.denotation.clear();
  if (ctx.opset() < 6) {
    auto tiles = scalar_dim(ctx, 1);
    auto axis = scalar_int(ctx, 2);
    if (!axis) {
      propagate_type(ctx, 0, 0, unknown_shape(in->rank()));
      return;
    }
    const size_t a = static_cast<size_t>(normalize_axis(ctx, *axis, rank_of(*in)));
    out.dims[a] = tiles ? multiply_dim(ctx, in->dims[a], *tiles) : Dim{};
    propagate_type(ctx, 0, 0, std::move(out));
    return;
  }
  const DimValues* rep = ctx.input_values(1);
  auto len = vector_length(ctx, 1);
  if (len && *len != rank_of(*in))
    ctx.fail("shape.rank", "Tile repeats has " + std::to_string(*len) + " entries for a rank-" +
                               std::to_string(in->rank()) + " input");
  for (size_t i = 0; i < out.rank(); ++i) {
    if (!rep) {
      out.dims[i] = Dim{};
      continue;
    }
    const Dim& r = (*rep)[i];
    if (r.is_static() && r.value < 0)
      ctx.fail("shape.negative-dim", "Tile repeats has the negative value " + std::to_string(r.value));
    out.dims[i] = multiply_dim(ctx, in->dims[i], r);
  }
  propagate_type(ctx, 0, 0, std::move(out));
}

// Pad-1: `paddings` attribute; Pad-2: `pads` attribute; Pad-11+: `pads` input; Pad-18+: `axes`.
void infer_pad(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  std::optional<DimValues> pads;
  if (ctx.opset() < 11) {
    if (auto a = ctx.attr_ints(ctx.opset() < 2 ? "paddings" : "pads")) pads = to_values(*a);
  } else if (const DimValues* v = ctx.input_values(1)) {
    pads = *v;
  }
  if (!in) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  const int64_t r = rank_of(*in);
  std::vector<int64_t> axes;
  if (ctx.opset() >= 18 && ctx.has_input(3)) {
    auto a = ctx.input_ints(3);
    if (!a) {
      propagate_type(ctx, 0, 0, unknown_shape(in->rank()));
      return;
    }
    axes = normalize_axes(ctx, *a, r);
  } else {
    axes = all_axes(r);
  }
  Shape out = *in;
  for (Dim& d : out.dims) d.denotation.clear();
  if (!pads) {
    for (int64_t a : axes) out.dims[static_cast<size_t>(a)] = Dim{};
    propagate_type(ctx, 0, 0, std::move(out));
    return;
  }
  if (pads->size() != 2 * axes.size())
    ctx.fail("shape.pad", "pads has " + std::to_string(pads->size()) + " entries for " +
                              std::to_string(axes.size()) + " axes");
  for (size_t k = 0; k < axes.size(); ++k) {
    Dim& o = out.dims[static_cast<size_t>(axes[k])];
    const Dim& begin = (*pads)[k];
    const Dim& end = (*pads)[k + axes.size()];
    if (!begin.is_static() || !end.is_static()) {
      o = Dim{};
      continue;
    }
    int64_t both;
    if (__builtin_add_overflow(begin.value, end.value, &both)) ctx.fail("shape.overflow", "pads overflow int64");
    o = o.is_static() ? shape::add(ctx, o, Dim::of(both)) : shape::affine_dim(ctx, o, 1, both, 1);
    if (o.is_static() && o.value < 0)
      ctx.fail("shape.pad", "axis " + std::to_string(axes[k]) + " of size " + in->dims[static_cast<size_t>(axes[k])].to_string() +
                                " padded by " + std::to_string(begin.value) + " and " + std::to_string(end.value) +
                                " is negative");
  }
  propagate_type(ctx, 0, 0, std::move(out));
}

// ConstantOfShape: the shape input's values are the output dims.
void infer_constant_of_shape(InferenceContext& ctx) {
  const Tensor* value = ctx.attr_tensor("value");
  const DataType et = value ? value->type() : DataType::kFloat;
  const DimValues* v = ctx.input_values(0);
  if (!v) {
    auto len = vector_length(ctx, 0);
    ctx.set_output_tensor(0, et, len ? std::optional<Shape>(unknown_shape(static_cast<size_t>(*len))) : std::nullopt);
    return;
  }
  Shape out;
  for (const Dim& d : *v) {
    if (d.is_static() && d.value < 0)
      ctx.fail("shape.negative-dim", "ConstantOfShape shape has the negative value " + std::to_string(d.value));
    out.dims.push_back(d.kind == Dim::Kind::kParam ? Dim::symbol(d.param) : d.is_static() ? Dim::of(d.value) : Dim{});
  }
  const size_t out_rank = out.rank();
  auto count = shape::static_product(ctx, out.dims);
  ctx.set_output_tensor(0, et, std::move(out));
  if (out_rank <= 1 && count && static_cast<uint64_t>(*count) <= kMaxValues) {
    std::optional<std::vector<int64_t>> fill;
    if (!value) fill = std::vector<int64_t>{0};
    else if (is_integer_type(value->type())) fill = shape::tensor_ints(*value, 1);
    if (fill && fill->size() == 1) ctx.set_output_values(0, DimValues(static_cast<size_t>(*count), Dim::of((*fill)[0])));
  }
}

// Range: ceil((limit - start) / delta) elements, clamped at 0.
void infer_range(InferenceContext& ctx) {
  const DataType et = first_elem_type(ctx).value_or(DataType::kUndefined);
  for (size_t i = 0; i < 3; ++i) {
    const Shape* s = ctx.input_shape(i);
    if (s && !(s->rank() == 0 || (s->rank() == 1 && s->dims[0].is_static() && s->dims[0].value == 1)))
      ctx.fail("shape.rank", "Range inputs must be scalars, input " + std::to_string(i) + " is " + s->to_string());
  }
  Dim length;
  auto start = scalar_dim(ctx, 0), limit = scalar_dim(ctx, 1), delta = scalar_dim(ctx, 2);
  std::vector<int64_t> values;
  bool have_values = false;
  if (start && limit && delta && start->is_static() && limit->is_static() && delta->is_static()) {
    const int64_t s = start->value, l = limit->value, d = delta->value;
    if (d != 0) {
      int64_t diff = 0;
      if (!__builtin_sub_overflow(l, s, &diff) && !(diff == kInt64Min && d == -1)) {
        int64_t n = diff / d;
        if (diff % d != 0 && ((diff < 0) == (d < 0))) ++n;
        n = std::max<int64_t>(n, 0);
        length = Dim::of(n);
        if (static_cast<uint64_t>(n) <= kMaxValues) {
          for (int64_t i = 0; i < n; ++i) values.push_back(s + i * d);
          have_values = true;
        }
      }
    }
  } else if (start && delta && start->is_static() && start->value == 0 && delta->is_static() &&
             delta->value == 1 && limit && limit->kind == Dim::Kind::kParam) {
    length = Dim::symbol(limit->param);  // Range(0, n, 1) has n elements
  } else {
    auto s = input_numbers(ctx, 0), l = input_numbers(ctx, 1), d = input_numbers(ctx, 2);
    if (s && l && d && s->size() == 1 && l->size() == 1 && d->size() == 1 && (*d)[0] != 0) {
      const double n = std::ceil(((*l)[0] - (*s)[0]) / (*d)[0]);
      if (std::isfinite(n) && n < 9.0e18) length = Dim::of(n > 0 ? static_cast<int64_t>(n) : 0);
    }
  }
  ctx.set_output_tensor(0, et, vector_shape(length));
  if (have_values && is_integer_type(et)) ctx.set_output_values(0, to_values(values));
}

// OneHot: indices' shape with the depth inserted at `axis`.
void infer_one_hot(InferenceContext& ctx) {
  const auto vt = ctx.input_elem_type(2);
  const Shape* idx = ctx.input_shape(0);
  if (!idx) {
    ctx.set_output_tensor(0, vt.value_or(DataType::kUndefined), std::nullopt);
    return;
  }
  const int64_t out_rank = rank_of(*idx) + 1;
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", -1), out_rank);
  Dim depth;
  if (auto d = input_numbers(ctx, 1); d && d->size() == 1 && std::isfinite((*d)[0]) && (*d)[0] >= 1 && (*d)[0] < 9.0e18)
    depth = Dim::of(static_cast<int64_t>((*d)[0]));
  else if (auto sd = scalar_dim(ctx, 1); sd && sd->kind == Dim::Kind::kParam)
    depth = *sd;
  Shape out;
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) out.dims.push_back(i == axis ? depth : idx->dims[next++]);
  ctx.set_output_tensor(0, vt.value_or(DataType::kUndefined), std::move(out));
}

void infer_non_zero(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  ctx.set_output_tensor(0, DataType::kInt64, shape_of_dims({in ? Dim::of(rank_of(*in)) : Dim{}, Dim{}}));
}

// TopK-1: k attribute; TopK-10+: k input. Values and int64 indices with dim `axis` = k.
void infer_top_k(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  std::optional<Dim> k;
  if (ctx.opset() < 10) {
    if (ctx.has_attr("k")) k = Dim::of(ctx.attr_int("k", 0));
  } else {
    k = scalar_dim(ctx, 1);
    auto len = vector_length(ctx, 1);
    if (len && *len != 1) ctx.fail("shape.rank", "TopK k must hold one value, has " + std::to_string(*len));
  }
  if (k && k->is_static() && k->value < 0)
    ctx.fail("shape.attribute", "TopK k is negative (" + std::to_string(k->value) + ")");
  std::optional<Shape> out;
  if (in) {
    out = *in;
    const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", -1), rank_of(*in));
    out->dims[static_cast<size_t>(axis)] = k ? (k->kind == Dim::Kind::kParam ? Dim::symbol(k->param) : k->is_static() ? Dim::of(k->value) : Dim{}) : Dim{};
    for (Dim& d : out->dims) d.denotation.clear();
  }
  propagate_type(ctx, 0, 0, out);
  ctx.set_output_tensor(1, DataType::kInt64, out);
}

void infer_unique(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  const bool has_axis = ctx.has_attr("axis");
  std::optional<Shape> y;
  Dim inverse;
  if (in && has_axis) {
    const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), rank_of(*in));
    y = *in;
    y->dims[static_cast<size_t>(axis)] = Dim{};
    inverse = in->dims[static_cast<size_t>(axis)];
  } else if (!has_axis) {
    y = unknown_shape(1);
    if (in) {
      Dim n = Dim::of(1);
      for (const Dim& d : in->dims) n = shape::mul(ctx, n, d);
      inverse = n;
    }
  }
  propagate_type(ctx, 0, 0, y);
  ctx.set_output_tensor(1, DataType::kInt64, unknown_shape(1));
  ctx.set_output_tensor(2, DataType::kInt64, vector_shape(inverse));
  ctx.set_output_tensor(3, DataType::kInt64, unknown_shape(1));
}

// How many of the first `limit` entries of a constant condition are true.
std::optional<int64_t> count_true(const Tensor& t, int64_t limit) {
  if (t.type() != DataType::kBool && !is_integer_type(t.type())) return std::nullopt;
  auto n = t.element_count();
  if (!n || *n > 1u << 20) return std::nullopt;
  if (t.type() != DataType::kBool) {
    auto ints = shape::tensor_ints(t, static_cast<size_t>(*n));
    if (!ints) return std::nullopt;
    int64_t c = 0;
    for (size_t i = 0; i < ints->size() && static_cast<int64_t>(i) < limit; ++i) c += (*ints)[i] != 0;
    return c;
  }
  const auto bytes = t.raw_bytes_if_valid();
  if (!bytes) return std::nullopt;
  const Bytes& raw = *bytes;
  int64_t c = 0;
  for (size_t i = 0; i < raw.size() && static_cast<int64_t>(i) < limit; ++i) c += raw.data()[i] != 0;
  return c;
}

// Compress: along `axis` (rank kept, that dim data-dependent), or over the flattened input.
void infer_compress(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  const Tensor* cond = ctx.input_tensor(1);
  if (!ctx.has_attr("axis")) {
    Dim n;
    if (in && cond)
      if (auto total = shape::static_product(ctx, in->dims))
        if (auto c = count_true(*cond, *total)) n = Dim::of(*c);
    propagate_type(ctx, 0, 0, vector_shape(n));
    return;
  }
  if (!in) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), rank_of(*in));
  Shape out = *in;
  Dim& d = out.dims[static_cast<size_t>(axis)];
  if (cond && d.is_static()) {
    auto c = count_true(*cond, d.value);
    d = c ? Dim::of(*c) : Dim{};
  } else {
    d = Dim{};
  }
  propagate_type(ctx, 0, 0, std::move(out));
}

int64_t block_size(const InferenceContext& ctx) {
  const int64_t b = ctx.attr_int("blocksize", 0);
  if (b < 1) ctx.fail("shape.attribute", "blocksize must be positive, is " + std::to_string(b));
  return b;
}

const Shape* rank4_input(const InferenceContext& ctx, const char* op) {
  const Shape* in = ctx.input_shape(0);
  if (in && in->rank() != 4)
    ctx.fail("shape.rank", std::string(op) + " needs a rank-4 input, got " + in->to_string());
  return in;
}

void infer_depth_to_space(InferenceContext& ctx) {
  const int64_t b = block_size(ctx);
  const Shape* in = rank4_input(ctx, "DepthToSpace");
  if (!in) {
    propagate_type(ctx, 0, 0, unknown_shape(4));
    return;
  }
  const Dim bd = Dim::of(b);
  propagate_type(ctx, 0, 0, shape_of_dims({in->dims[0], divide_dim(ctx, in->dims[1], checked_mul(ctx, b, b), "channels"),
                                           multiply_dim(ctx, in->dims[2], bd), multiply_dim(ctx, in->dims[3], bd)}));
}

void infer_space_to_depth(InferenceContext& ctx) {
  const int64_t b = block_size(ctx);
  const Shape* in = rank4_input(ctx, "SpaceToDepth");
  if (!in) {
    propagate_type(ctx, 0, 0, unknown_shape(4));
    return;
  }
  propagate_type(ctx, 0, 0, shape_of_dims({in->dims[0], multiply_dim(ctx, in->dims[1], Dim::of(checked_mul(ctx, b, b))),
                                           divide_dim(ctx, in->dims[2], b, "height"),
                                           divide_dim(ctx, in->dims[3], b, "width")}));
}

void infer_eye_like(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  if (in && in->rank() != 2) ctx.fail("shape.rank", "EyeLike needs a rank-2 input, got " + in->to_string());
  const DataType et = ctx.has_attr("dtype") ? dtype_attr(ctx, "dtype", DataType::kFloat)
                                            : ctx.input_elem_type(0).value_or(DataType::kUndefined);
  ctx.set_output_tensor(0, et, in ? std::optional<Shape>(*in) : unknown_shape(2));
}

void infer_same_shape(InferenceContext& ctx) { propagate_type_and_shape(ctx, 0, 0); }

}  // namespace

void register_tensor_shapes(SchemaRegistry& r) {
  // Shape computations.
  r.set_shape_fn("Shape", infer_shape);
  r.set_shape_fn("Size", infer_size);
  r.set_shape_fn("Reshape", infer_reshape);
  r.set_shape_fn("Flatten", infer_flatten);
  r.set_shape_fn("Transpose", infer_transpose);
  r.set_shape_fn("Concat", infer_concat);
  r.set_shape_fn("Split", infer_split);
  r.set_shape_fn("Slice", infer_slice);
  r.set_shape_fn("Gather", infer_gather);
  r.set_shape_fn("GatherElements", infer_gather_elements);
  r.set_shape_fn("GatherND", infer_gather_nd);
  r.set_shape_fn("Scatter", infer_scatter_elements);
  r.set_shape_fn("ScatterElements", infer_scatter_elements);
  r.set_shape_fn("ScatterND", infer_scatter);
  r.set_shape_fn("TensorScatter", infer_scatter);
  r.set_shape_fn("Squeeze", infer_squeeze);
  r.set_shape_fn("Unsqueeze", infer_unsqueeze);
  r.set_shape_fn("Expand", infer_expand);
  r.set_shape_fn("Tile", infer_tile);
  r.set_shape_fn("Pad", infer_pad);
  r.set_shape_fn("ConstantOfShape", infer_constant_of_shape);
  r.set_shape_fn("Range", infer_range);
  r.set_shape_fn("OneHot", infer_one_hot);
  r.set_shape_fn("NonZero", infer_non_zero);
  r.set_shape_fn("TopK", infer_top_k);
  r.set_shape_fn("Unique", infer_unique);
  r.set_shape_fn("Compress", infer_compress);
  r.set_shape_fn("DepthToSpace", infer_depth_to_space);
  r.set_shape_fn("SpaceToDepth", infer_space_to_depth);
  r.set_shape_fn("EyeLike", infer_eye_like);
  r.set_shape_fn("Trilu", infer_same_shape);
  r.set_shape_fn("ReverseSequence", infer_same_shape);
}

}  // namespace onnxtool::ir
