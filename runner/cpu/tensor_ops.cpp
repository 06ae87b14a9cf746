// Tensor manipulation kernels: shape queries and views (Shape, Size, Reshape, Flatten, Squeeze,
// Unsqueeze), layout copies (Transpose, Concat, Split, Slice, Expand, Tile, Pad, DepthToSpace,
// SpaceToDepth), generators (ConstantOfShape, Range, EyeLike, Trilu) and TensorScatter (the
// KV-cache update).
// Element moves are written once per element size (tensor_util.h); strings go through the same
// templates with std::string elements.
#include <cmath>
#include <limits>

#include "ir/ops/shape_util.h"
#include "runner/cpu/kernels.h"
#include "runner/cpu/tensor_util.h"

namespace onnxtool::runner::cpu {
namespace {

// ---------------------------------------------------------------- helpers

/// Writes `v` converted to the element type of `t` at element `i` (numeric and bool types).
void store_number(const KernelContext& ctx, Tensor& t, int64_t i, double v) {
  visit_or_fail<kAllPlain>(ctx, t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = calc_t<T>;
    if constexpr (std::is_same_v<C, bool>) t.mutable_data<T>()[i] = Num<T>::store(v != 0);
    else t.mutable_data<T>()[i] = Num<T>::store(static_cast<C>(v));
  });
}

/// A one-element tensor of `type` holding `v`.
Tensor scalar_of(const KernelContext& ctx, DataType type, double v) {
  Tensor t(type, {});
  if (type == DataType::kString) return t;
  store_number(ctx, t, 0, v);
  return t;
}

/// Fills `out` with copies of the single element of `value` (same type, not sub-byte).
void fill_with(const KernelContext& ctx, Tensor& out, const Tensor& value) {
  visit_storage_or_fail(ctx, out.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E v = elements<E>(value)[0];
    E* dst = mutable_elements<E>(out);
    parallel_ranges(out.size(), kElementwiseGrain, [&](int64_t b, int64_t e) { fill_elements(dst + b, v, e - b); });
  });
}

/// Attribute-or-input lists: the value of attribute `name` before opset `input_since`, of input
/// `input_index` (when given) from then on.
std::vector<int64_t> ints_by_version(const KernelContext& ctx, const char* name, int input_since, size_t input_index,
                                     bool* present) {
  if (ctx.opset() < input_since) {
    *present = ctx.has_attr(name);
    return ctx.attr_ints(name);
  }
  *present = ctx.has_input(input_index);
  return *present ? read_int_list(ctx, ctx.input(input_index), name) : std::vector<int64_t>{};
}

// ---------------------------------------------------------------- shape queries and views

void shape_op(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t r = static_cast<int64_t>(x.rank());
  auto clamp_axis = [r](int64_t a) { return std::clamp(a < 0 ? a + r : a, int64_t{0}, r); };
  const int64_t start = clamp_axis(ctx.attr_int("start", 0));
  const int64_t end = ctx.has_attr("end") ? clamp_axis(ctx.attr_int("end", r)) : r;
  const int64_t n = std::max<int64_t>(0, end - start);
  Tensor& out = ctx.output(0, DataType::kInt64, {n});
  for (int64_t i = 0; i < n; ++i) out.mutable_data<int64_t>()[i] = x.dim(static_cast<size_t>(start + i));
}

void size_op(KernelContext& ctx) { ctx.set_output(0, Tensor::scalar_int64(ctx.input(0).size())); }

void reshape(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> spec;
  if (ctx.opset() < 5) spec = ctx.attr_ints("shape");
  else spec = read_int_list(ctx, ctx.input(1), "shape");
  const bool allowzero = ctx.opset() >= 14 && ctx.attr_int("allowzero", 0) != 0;
  ctx.set_output(0, x.reshaped(reshape_target(ctx, x.dtype(), x.shape(), spec, allowzero)));
}

void flatten(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t r = static_cast<int64_t>(x.rank());
  // Accepted range [-r, r]; a negative axis counts from r (not r + 1).
  int64_t axis = ctx.attr_int("axis", 1);
  if (axis < -r || axis > r) ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  if (axis < 0) axis += r;
  const int64_t outer = dims_product(x.shape(), 0, static_cast<size_t>(axis));
  ctx.set_output(0, x.reshaped({outer, dims_product(x.shape(), static_cast<size_t>(axis), x.rank())}));
}

void squeeze(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  bool given = false;
  const auto axes_in = ints_by_version(ctx, "axes", 13, 1, &given);
  ctx.set_output(0, x.reshaped(squeeze_shape(ctx, x.dtype(), x.shape(), axes_in, given)));
}

void unsqueeze(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  bool given = false;
  const auto axes_in = ints_by_version(ctx, "axes", 13, 1, &given);
  if (!given) ctx.fail("Unsqueeze needs axes");
  ctx.set_output(0, x.reshaped(unsqueeze_shape(ctx, x.shape(), axes_in)));
}

// ---------------------------------------------------------------- layout copies

void transpose(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const size_t r = x.rank();
  std::vector<int64_t> perm = ctx.attr_ints("perm");
  if (perm.empty())
    for (size_t i = r; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  if (perm.size() != r) ctx.fail("perm has " + std::to_string(perm.size()) + " entries for " + x.describe());
  perm = normalize_axes(ctx, perm, static_cast<int64_t>(r));
  const auto strides = strides_of(x.shape());
  std::vector<int64_t> shape(r), in_strides(r);
  for (size_t i = 0; i < r; ++i) {
    shape[i] = x.dim(static_cast<size_t>(perm[i]));
    in_strides[i] = strides[static_cast<size_t>(perm[i])];
  }
  ctx.set_output(0, with_unpacked(x, [&](const Tensor& t) { return strided_tensor(ctx, t, shape, in_strides, 0, shape); }));
}

void concat(KernelContext& ctx) {
  if (ctx.input_count() == 0) ctx.fail("Concat needs at least one input");
  const Tensor& first = ctx.input(0);
  if (first.rank() == 0) ctx.fail("Concat inputs must have rank >= 1");
  if (ctx.opset() >= 4 && !ctx.has_attr("axis")) ctx.fail("Concat needs the axis attribute");
  const int64_t r = static_cast<int64_t>(first.rank());
  const size_t axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", 1), r));
  std::vector<int64_t> shape = first.shape();
  shape[axis] = 0;
  std::vector<const Tensor*> parts;
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    const Tensor& t = ctx.input(i);
    if (t.dtype() != first.dtype()) ctx.fail("Concat inputs have different types: " + t.describe() + " vs " + first.describe());
    if (t.rank() != first.rank()) ctx.fail("Concat inputs have different ranks: " + t.describe() + " vs " + first.describe());
    for (size_t d = 0; d < t.rank(); ++d)
      if (d != axis && t.dim(d) != first.dim(d))
        ctx.fail("Concat inputs differ outside the axis: " + t.describe() + " vs " + first.describe());
    shape[axis] += t.dim(axis);
    parts.push_back(&t);
  }
  const int64_t outer = dims_product(shape, 0, axis);
  const int64_t inner = dims_product(shape, axis + 1, shape.size());
  auto run = [&](const std::vector<const Tensor*>& in, DataType type) {
    Tensor out(type, shape);
    visit_storage_or_fail(ctx, type, [&](auto tag) {
      using E = typename decltype(tag)::type;
      E* dst = mutable_elements<E>(out);
      const int64_t row = shape[axis] * inner;
      parallel_ranges(outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(row, 1)), [&](int64_t o0, int64_t o1) {
        for (int64_t o = o0; o < o1; ++o) {
          E* d = dst + o * row;
          for (const Tensor* t : in) {
            const int64_t block = t->dim(axis) * inner;
            copy_elements(d, elements<E>(*t) + o * block, block);
            d += block;
          }
        }
      });
    });
    return out;
  };
  if (!is_sub_byte(first.dtype())) {
    ctx.set_output(0, run(parts, first.dtype()));
    return;
  }
  std::vector<Tensor> unpacked;
  for (const Tensor* t : parts) unpacked.push_back(unpack_sub_byte(*t));
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : unpacked) ptrs.push_back(&t);
  ctx.set_output(0, pack_sub_byte(run(ptrs, DataType::kUInt8), first.dtype()));
}

void split(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const size_t axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", 0), static_cast<int64_t>(x.rank())));
  const int64_t dim = x.dim(axis);
  const int64_t n = static_cast<int64_t>(ctx.output_count());
  std::vector<int64_t> lens;
  if (ctx.opset() < 13 && ctx.has_attr("split")) lens = ctx.attr_ints("split");
  else if ((ctx.opset() == 1 || ctx.opset() >= 13) && ctx.has_input(1)) lens = read_int_list(ctx, ctx.input(1), "split");
  else if (ctx.opset() >= 18 && ctx.has_attr("num_outputs")) {
    const int64_t k = ctx.attr_int("num_outputs", n);
    if (k != n) ctx.fail("num_outputs is " + std::to_string(k) + " but the node has " + std::to_string(n) + " outputs");
    lens = equal_split(ctx, dim, k, true);
  } else {
    lens = equal_split(ctx, dim, n, false);
  }
  if (static_cast<int64_t>(lens.size()) != n)
    ctx.fail("split has " + std::to_string(lens.size()) + " lengths for " + std::to_string(n) + " outputs");
  check_split_lengths(ctx, lens, dim);
  int64_t start = 0;
  for (size_t i = 0; i < lens.size(); ++i) {
    if (ctx.has_output(i)) ctx.set_output(i, axis_part(ctx, x, axis, start, lens[i]));
    start += lens[i];
  }
}

void slice(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.attr_ints("starts");
    ends = ctx.attr_ints("ends");
    axes = ctx.attr_ints("axes");
  } else {
    starts = read_int_list(ctx, ctx.input(1), "starts");
    ends = read_int_list(ctx, ctx.input(2), "ends");
    if (ctx.has_input(3)) axes = read_int_list(ctx, ctx.input(3), "axes");
    if (ctx.has_input(4)) steps = read_int_list(ctx, ctx.input(4), "steps");
  }
  const StridedView v = slice_view(ctx, x.shape(), starts, ends, std::move(axes), std::move(steps));
  ctx.set_output(0, with_unpacked(x, [&](const Tensor& t) { return strided_tensor(ctx, t, v.shape, v.strides, v.offset, v.shape); }));
}

void expand(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const auto target = read_int_list(ctx, ctx.input(1), "shape");
  const std::vector<int64_t> shape = broadcast_shapes(ctx, {x.shape(), target});
  const auto strides = strides_of(x.shape());
  std::vector<int64_t> in_strides(shape.size(), 0);
  const size_t pad = shape.size() - x.rank();
  for (size_t i = 0; i < x.rank(); ++i) in_strides[pad + i] = x.dim(i) == 1 ? 0 : strides[i];
  ctx.set_output(0, with_unpacked(x, [&](const Tensor& t) { return strided_tensor(ctx, t, shape, in_strides, 0, shape); }));
}

/// Output = input repeated repeats[i] times along each axis, as a strided copy over the view
/// [r_0, d_0, r_1, d_1, ...] whose repeat dims have stride 0.
Tensor tile_tensor(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& repeats) {
  if (repeats.size() != x.rank())
    ctx.fail("repeats has " + std::to_string(repeats.size()) + " values for " + x.describe());
  const auto strides = strides_of(x.shape());
  std::vector<int64_t> shape, dims, in_strides;
  for (size_t i = 0; i < x.rank(); ++i) {
    if (repeats[i] < 0) ctx.fail("repeats must be >= 0");
    shape.push_back(x.dim(i) * repeats[i]);
    dims.insert(dims.end(), {repeats[i], x.dim(i)});
    in_strides.insert(in_strides.end(), {0, strides[i]});
  }
  return with_unpacked(x, [&](const Tensor& t) { return strided_tensor(ctx, t, dims, in_strides, 0, shape); });
}

void tile(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  ctx.set_output(0, tile_tensor(ctx, x, read_int_list(ctx, ctx.input(1), "repeats")));
}

// Tile-1: `tiles` copies along one `axis`.
void tile_1(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t tiles = read_int_scalar(ctx, ctx.input(1), "tiles");
  const int64_t axis = normalize_axis(ctx, read_int_scalar(ctx, ctx.input(2), "axis"), static_cast<int64_t>(x.rank()));
  std::vector<int64_t> repeats(x.rank(), 1);
  repeats[static_cast<size_t>(axis)] = tiles;
  ctx.set_output(0, tile_tensor(ctx, x, repeats));
}

void check_block_layout(const KernelContext& ctx, const Tensor& x, int64_t b) {
  if (x.rank() != 4) ctx.fail(ctx.node().op_type + " needs a 4-D input, got " + x.describe());
  if (b <= 0) ctx.fail("blocksize must be positive");
}

void depth_to_space(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t b = ctx.attr_int("blocksize", 0);
  check_block_layout(ctx, x, b);
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  if (c % (b * b) != 0) ctx.fail("channels " + std::to_string(c) + " are not a multiple of blocksize^2");
  const int64_t oc = c / (b * b);
  const auto s = strides_of(x.shape());
  const bool crd = ctx.opset() >= 11 && ctx.attr_string("mode", "DCR") == "CRD";
  // Output viewed as [n, oc, h, b(i), w, b(j)]; input channel = (i*b + j)*oc + c' (DCR) or
  // c'*b*b + i*b + j (CRD).
  const std::vector<int64_t> dims{n, oc, h, b, w, b};
  const std::vector<int64_t> in_strides = crd ? std::vector<int64_t>{s[0], b * b * s[1], s[2], b * s[1], s[3], s[1]}
                                              : std::vector<int64_t>{s[0], s[1], s[2], b * oc * s[1], s[3], oc * s[1]};
  ctx.set_output(0, strided_tensor(ctx, x, dims, in_strides, 0, {n, oc, h * b, w * b}));
}

void space_to_depth(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t b = ctx.attr_int("blocksize", 0);
  check_block_layout(ctx, x, b);
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  if (h % b != 0 || w % b != 0) ctx.fail("height and width of " + x.describe() + " are not multiples of blocksize");
  const auto s = strides_of(x.shape());
  // Output viewed as [n, b(i), b(j), c, h/b, w/b]; output channel = (i*b + j)*c + c'.
  const std::vector<int64_t> dims{n, b, b, c, h / b, w / b};
  const std::vector<int64_t> in_strides{s[0], s[2], s[3], s[1], b * s[2], b * s[3]};
  ctx.set_output(0, strided_tensor(ctx, x, dims, in_strides, 0, {n, c * b * b, h / b, w / b}));
}

// ---------------------------------------------------------------- Pad

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

/// Source index of output position `p - begin` along an axis of `dim` elements; -1 for the
/// constant fill.
int64_t pad_source(int64_t pos, int64_t dim, PadMode mode) {
  if (pos >= 0 && pos < dim) return pos;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return pos < 0 ? 0 : dim - 1;
    case PadMode::kWrap:
      return ((pos % dim) + dim) % dim;
    case PadMode::kReflect: {
      if (dim == 1) return 0;
      const int64_t period = 2 * (dim - 1);
      int64_t m = ((pos % period) + period) % period;
      return m < dim ? m : period - m;
    }
  }
  return -1;
}

Tensor pad_tensor(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& begins,
                  const std::vector<int64_t>& ends, PadMode mode, const Tensor* fill) {
  const size_t r = x.rank();
  std::vector<int64_t> shape(r);
  std::vector<std::vector<int64_t>> src(r);
  for (size_t d = 0; d < r; ++d) {
    shape[d] = x.dim(d) + begins[d] + ends[d];
    if (shape[d] < 0) ctx.fail("pads remove more than the " + std::to_string(x.dim(d)) + " elements of axis " + std::to_string(d));
    if (mode != PadMode::kConstant && x.dim(d) == 0 && shape[d] > 0)
      ctx.fail("cannot pad an empty axis in this mode");
    src[d].resize(static_cast<size_t>(shape[d]));
    for (int64_t j = 0; j < shape[d]; ++j) src[d][static_cast<size_t>(j)] = pad_source(j - begins[d], x.dim(d), mode);
  }
  Tensor out(x.dtype(), shape);
  if (out.size() == 0) return out;
  const auto strides = strides_of(x.shape());
  const int64_t inner = r ? shape[r - 1] : 1;
  const int64_t rows = out.size() / inner;
  visit_storage_or_fail(ctx, x.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E* in = elements<E>(x);
    E* dst = mutable_elements<E>(out);
    const E value = fill ? elements<E>(*fill)[0] : E{};
    const std::vector<int64_t>* last = r ? &src[r - 1] : nullptr;
    parallel_ranges(rows, std::max<int64_t>(1, 16384 / inner), [&](int64_t r0, int64_t r1) {
      for (int64_t row = r0; row < r1; ++row) {
        E* o = dst + row * inner;
        int64_t off = 0;
        bool is_fill = false;
        int64_t rest = row;
        for (size_t d = r - (r ? 1 : 0); d-- > 0;) {
          const int64_t s = src[d][static_cast<size_t>(rest % shape[d])];
          rest /= shape[d];
          if (s < 0) is_fill = true;
          else off += s * strides[d];
        }
        if (is_fill) {
          fill_elements(o, value, inner);
          continue;
        }
        if (!last) {
          o[0] = in[off];
          continue;
        }
        for (int64_t j = 0; j < inner;) {
          const int64_t s = (*last)[static_cast<size_t>(j)];
          if (s < 0) {
            o[j++] = value;
            continue;
          }
          // Run of consecutive source elements.
          int64_t n = 1;
          while (j + n < inner && (*last)[static_cast<size_t>(j + n)] == s + n) ++n;
          copy_elements(o + j, in + off + s, n);
          j += n;
        }
      }
    });
  });
  return out;
}

void pad(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const size_t r = x.rank();
  const std::string mode_name = ctx.attr_string("mode", "constant");
  PadMode mode;
  if (mode_name == "constant") mode = PadMode::kConstant;
  else if (mode_name == "reflect") mode = PadMode::kReflect;
  else if (mode_name == "edge") mode = PadMode::kEdge;
  else if (mode_name == "wrap" && ctx.opset() >= 19) mode = PadMode::kWrap;
  else ctx.fail("unsupported pad mode '" + mode_name + "'");

  std::vector<int64_t> pads;
  std::vector<int64_t> axes;
  Tensor fill;
  if (ctx.opset() < 11) {
    pads = ctx.attr_ints(ctx.opset() < 2 ? "paddings" : "pads");
    if (x.dtype() != DataType::kString && !is_sub_byte(x.dtype()))
      fill = scalar_of(ctx, x.dtype(), ctx.attr_float("value", 0.0f));
  } else {
    pads = read_int_list(ctx, ctx.input(1), "pads");
    if (ctx.has_input(2) && ctx.input(2).size() > 0) {
      fill = ctx.input(2);
      if (fill.dtype() != x.dtype()) ctx.fail("constant_value type differs from the data type");
      if (fill.size() != 1) ctx.fail("constant_value must hold one element");
    }
    if (ctx.opset() >= 18 && ctx.has_input(3)) axes = read_int_list(ctx, ctx.input(3), "axes");
  }
  if (axes.empty())
    for (size_t i = 0; i < r; ++i) axes.push_back(static_cast<int64_t>(i));
  axes = normalize_axes(ctx, axes, static_cast<int64_t>(r));
  if (pads.size() != 2 * axes.size())
    ctx.fail("pads has " + std::to_string(pads.size()) + " values, expected " + std::to_string(2 * axes.size()));
  std::vector<int64_t> begins(r, 0), ends(r, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    begins[static_cast<size_t>(axes[i])] = pads[i];
    ends[static_cast<size_t>(axes[i])] = pads[i + axes.size()];
  }
  if (!is_sub_byte(x.dtype())) {
    ctx.set_output(0, pad_tensor(ctx, x, begins, ends, mode, fill.valid() ? &fill : nullptr));
    return;
  }
  Tensor codes_fill = fill.valid() ? unpack_sub_byte(fill) : Tensor();
  ctx.set_output(0, pack_sub_byte(pad_tensor(ctx, unpack_sub_byte(x), begins, ends, mode,
                                             codes_fill.valid() ? &codes_fill : nullptr),
                                  x.dtype()));
}

// ---------------------------------------------------------------- generators

void constant_of_shape(KernelContext& ctx) {
  const auto shape = read_int_list(ctx, ctx.input(0), "shape");
  for (int64_t d : shape)
    if (d < 0) ctx.fail("shape " + shape_string(shape) + " has a negative dimension");
  Tensor value;
  if (const ir::Tensor* t = ctx.attr_tensor("value")) {
    value = from_ir(*t);
    if (value.size() != 1) ctx.fail("value must hold one element, has " + value.describe());
  } else {
    value = Tensor::scalar_float(0.0f);
  }
  const DataType type = value.dtype();
  if (is_sub_byte(type)) {
    Tensor codes(DataType::kUInt8, shape);
    fill_with(ctx, codes, unpack_sub_byte(value));
    ctx.set_output(0, pack_sub_byte(codes, type));
    return;
  }
  Tensor& out = ctx.output(0, type, shape);
  fill_with(ctx, out, value);
}

/// Number of elements of Range: max(ceil((limit - start) / delta), 0), computed in long double
/// (exact for every int64 span); NaN or more than 2^40 elements fail.
template <class C>
int64_t range_count(const KernelContext& ctx, C start, C limit, C delta) {
  if (delta == C(0)) ctx.fail("Range delta cannot be 0");
  const long double n = std::ceil((static_cast<long double>(limit) - static_cast<long double>(start)) /
                                  static_cast<long double>(delta));
  if (!(n <= static_cast<long double>(int64_t{1} << 40))) ctx.fail("Range has too many (or NaN) elements");
  return n > 0 ? static_cast<int64_t>(n) : 0;
}

void range(KernelContext& ctx) {
  const Tensor& s = ctx.input(0);
  const Tensor& l = ctx.input(1);
  const Tensor& d = ctx.input(2);
  if (s.dtype() != l.dtype() || s.dtype() != d.dtype()) ctx.fail("Range inputs must have the same type");
  if (s.size() != 1 || l.size() != 1 || d.size() != 1) ctx.fail("Range inputs must be scalars");
  visit_or_fail<kFloats | kSignedInts>(ctx, s.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    // float16/bfloat16 (Range-27) compute in float, as stash_type's default asks.
    using C = calc_t<T>;
    const C start = Num<T>::load(s.data<T>()[0]);
    const C limit = Num<T>::load(l.data<T>()[0]);
    const C delta = Num<T>::load(d.data<T>()[0]);
    const int64_t n = range_count(ctx, start, limit, delta);
    Tensor& out = ctx.output(0, s.dtype(), {n});
    T* o = out.mutable_data<T>();
    for (int64_t i = 0; i < n; ++i) o[i] = Num<T>::store(static_cast<C>(start + static_cast<C>(i) * delta));
  });
}

void eye_like(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 2) ctx.fail("EyeLike needs a 2-D input, got " + x.describe());
  const DataType type = ctx.has_attr("dtype") ? static_cast<DataType>(ctx.attr_int("dtype", 1)) : x.dtype();
  const int64_t k = ctx.attr_int("k", 0);
  if (!visit<kAllPlain>(type, [](auto) {})) ctx.fail("EyeLike does not support element type " + type_name(type));
  Tensor& out = ctx.output(0, type, x.shape());
  if (out.bytes()) std::memset(out.mutable_raw(), 0, out.bytes());
  for (int64_t i = 0; i < x.dim(0); ++i) {
    const int64_t j = i + k;
    if (j >= 0 && j < x.dim(1)) store_number(ctx, out, i * x.dim(1) + j, 1.0);
  }
}

void trilu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("Trilu needs rank >= 2, got " + x.describe());
  const int64_t k = ctx.has_input(1) ? read_int_scalar(ctx, ctx.input(1), "k") : 0;
  const bool upper = ctx.attr_int("upper", 1) != 0;
  const int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
  Tensor out(x.dtype(), x.shape());
  visit_storage_or_fail(ctx, x.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E* in = elements<E>(x);
    E* o = mutable_elements<E>(out);
    const int64_t mats = rows * cols != 0 ? x.size() / (rows * cols) : 0;
    parallel_ranges(mats * rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(cols, 1)), [&](int64_t b, int64_t e) {
      for (int64_t rr = b; rr < e; ++rr) {
        const int64_t i = rr % rows;
        // Kept columns: j >= i + k (upper) or j <= i + k (lower).
        const int64_t lo = upper ? std::clamp<int64_t>(i + k, 0, cols) : 0;
        const int64_t hi = upper ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
        E* dst = o + rr * cols;
        const E* src = in + rr * cols;
        fill_elements(dst, E{}, lo);
        copy_elements(dst + lo, src + lo, hi - lo);
        fill_elements(dst + hi, E{}, cols - hi);
      }
    });
  });
  ctx.set_output(0, out);
}

// ---------------------------------------------------------------- TensorScatter

void tensor_scatter(KernelContext& ctx) {
  const Tensor& cache = ctx.input(0);
  const Tensor& update = ctx.input(1);
  const int64_t rank = static_cast<int64_t>(cache.rank());
  if (update.dtype() != cache.dtype()) ctx.fail("update must have the type of past_cache");
  if (static_cast<int64_t>(update.rank()) != rank || rank < 2)
    ctx.fail("past_cache " + shape_string(cache.shape()) + " and update " + shape_string(update.shape()) +
             " must have the same rank (at least 2)");
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", -2), rank);
  if (axis == 0) ctx.fail("axis must not be the batch dimension");
  for (int64_t d = 0; d < rank; ++d) {
    const bool ok = d == axis ? update.dim(d) <= cache.dim(d) : update.dim(d) == cache.dim(d);
    if (!ok)
      ctx.fail("update " + shape_string(update.shape()) + " does not fit past_cache " + shape_string(cache.shape()) +
               " along axis " + std::to_string(axis));
  }
  const std::string mode = ctx.attr_string("mode", "linear");
  if (mode != "linear" && mode != "circular") ctx.fail("mode must be 'linear' or 'circular', is '" + mode + "'");
  const bool circular = mode == "circular";
  const int64_t batch = cache.dim(0), max_len = cache.dim(axis), len = update.dim(axis);
  std::vector<int64_t> write(static_cast<size_t>(batch), 0);
  if (ctx.has_input(2)) {
    const Tensor& w = ctx.input(2);
    if (w.dtype() != DataType::kInt64 || w.rank() != 1 || w.dim(0) != batch)
      ctx.fail("write_indices must be int64 of shape (batch_size,), is " + w.describe());
    write.assign(w.data<int64_t>(), w.data<int64_t>() + batch);
  }
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t wi = write[static_cast<size_t>(b)];
    if (!circular && (wi < 0 || wi + len > max_len))
      ctx.fail("write index " + std::to_string(wi) + " + update length " + std::to_string(len) +
               " exceeds max_sequence_length " + std::to_string(max_len) + " (linear mode)");
    if (circular && max_len == 0 && len > 0) ctx.fail("circular write into an empty sequence axis");
  }
  const int64_t inner = dims_product(cache.shape(), static_cast<size_t>(axis) + 1, cache.rank());
  const int64_t outer = dims_product(cache.shape(), 0, static_cast<size_t>(axis));
  const int64_t per_batch = outer / std::max<int64_t>(batch, 1);
  auto scatter = [&](const Tensor& past, const Tensor& upd) {
    Tensor out = past.clone();
    visit_storage_or_fail(ctx, past.dtype(), [&](auto tag) {
      using E = typename decltype(tag)::type;
      const E* u = elements<E>(upd);
      E* o = mutable_elements<E>(out);
      for (int64_t p = 0; p < outer; ++p) {
        const int64_t wi = write[static_cast<size_t>(p / per_batch)];
        for (int64_t s = 0; s < len; ++s) {
          int64_t dst = wi + s;
          if (circular) dst = ((dst % max_len) + max_len) % max_len;
          copy_elements(o + (p * max_len + dst) * inner, u + (p * len + s) * inner, inner);
        }
      }
    });
    return out;
  };
  if (is_sub_byte(cache.dtype())) {
    ctx.set_output(0, pack_sub_byte(scatter(unpack_sub_byte(cache), unpack_sub_byte(update)), cache.dtype()));
  } else {
    ctx.set_output(0, scatter(cache, update));
  }
}

}  // namespace

void register_tensor_kernels(KernelRegistry& r) {
  r.add("Shape", shape_op);
  r.add("Size", size_op);
  r.add("Reshape", reshape);
  r.add("Flatten", flatten);
  r.add("Squeeze", squeeze);
  r.add("Unsqueeze", unsqueeze);
  r.add("Transpose", transpose);
  r.add("Concat", concat);
  r.add("Split", split);
  r.add("Slice", slice);
  r.add("Expand", expand);
  r.add("", "Tile", 1, 5, tile_1);
  r.add("", "Tile", 6, kMaxOpset, tile);
  r.add("DepthToSpace", depth_to_space);
  r.add("SpaceToDepth", space_to_depth);
  r.add("Pad", pad);
  r.add("ConstantOfShape", constant_of_shape);
  r.add("Range", range);
  r.add("EyeLike", eye_like);
  r.add("Trilu", trilu);
  r.add("TensorScatter", tensor_scatter);
}

}  // namespace onnxtool::runner::cpu
