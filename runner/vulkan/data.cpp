// Vulkan kernels of data movement: reshapes and other views, Shape and Size, Transpose, Concat,
// Split, Slice, Expand, Tile, Gather and Pad; and the raw-element helpers of data.h.
//
// Reshape and its kin alias the input's memory under a new shape; Shape and Size answer from
// metadata on the host. The layout copies share one strided-copy shader that moves raw 4-byte
// (or, in its _f16 variant, 2-byte) elements, so int32 tensors move as well as floats. The
// checks shared with the CPU kernels (runner/geometry.h: axes, integer lists, the shapes of
// Reshape, Squeeze and Unsqueeze, Slice's and Split's lengths) fail with their line, in the CPU
// kernel's order; every other argument the CPU kernel would reject is declined here, so that the
// CPU reports the error.
#include "runner/vulkan/data.h"

#include <algorithm>
#include <cstring>

#include "ir/ops/shape_util.h"
#include "runner/geometry.h"

namespace onnxtool::runner::vulkan {

// ---------------------------------------------------------------- raw-element helpers (data.h)

BufferRange words(const std::shared_ptr<const VulkanTensor>& t) {
  return {t->lease()->buffer().buffer, 0, std::max<VkDeviceSize>(4, (t->bytes() + 3) / 4 * 4)};
}

std::string type_name(DataType t) { return std::string(ir::data_type_name(t)); }

std::string raw_shader(DeviceKernelContext& ctx, const std::string& name, DataType type) {
  const uint64_t bits = ir::data_type_bits(type);
  if (bits == 32) return name;
  if (bits == 16 && type == DataType::kFloat16) {
    if (!backend_of(ctx).info().fp16_storage) ctx.decline("the device has no 16-bit storage buffers for float16");
    return name + "_f16";
  }
  ctx.decline(type_name(type) + " elements (the Vulkan copies move 4-byte and 2-byte elements)");
}

void alias(DeviceKernelContext& ctx, Shape shape) {
  ctx.set_output(0, backend_of(ctx).reshaped(ctx.input(0), std::move(shape)));
}

namespace {

/// Axes of an attribute before opset `input_since`, of input `index` from then on.
std::vector<int64_t> ints_by_version(DeviceKernelContext& ctx, const char* name, int input_since, size_t index,
                                     bool* present) {
  if (ctx.opset() < input_since) {
    *present = ctx.has_attr(name);
    return ctx.attr_ints(name);
  }
  *present = ctx.has_input(index);
  return *present ? read_int_list(ctx, ctx.host_input(index), name) : std::vector<int64_t>{};
}

// ---------------------------------------------------------------- strided copy

struct CopyParams {
  uint32_t n;
  uint32_t rank;
  int32_t in_base;
  uint32_t out_base;
  uint32_t dims[kMaxRank];
  int32_t in_strides[kMaxRank];
  uint32_t out_strides[kMaxRank];
};

/// Records y[out_base + c . out_strides] = x[in_base + c . in_strides] for every coordinate c of
/// `dims`. Dims of size 1 are dropped and adjacent dims merged where both strides chain, so a
/// higher-rank view (Tile's) often fits the shader's 6 dims; declines otherwise.
void record_copy(DeviceKernelContext& ctx, const std::shared_ptr<const VulkanTensor>& x,
                 const std::shared_ptr<const VulkanTensor>& y, const Shape& dims, const Shape& in_strides,
                 int64_t in_base, const Shape& out_strides, int64_t out_base) {
  const int64_t n = dims_product(dims, 0, dims.size());
  if (n == 0) return;
  Shape d, si, so;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] == 1) continue;
    if (!d.empty() && si.back() == in_strides[k] * dims[k] && so.back() == out_strides[k] * dims[k]) {
      d.back() *= dims[k];
      si.back() = in_strides[k];
      so.back() = out_strides[k];
      continue;
    }
    d.push_back(dims[k]);
    si.push_back(in_strides[k]);
    so.push_back(out_strides[k]);
  }
  if (d.size() > kMaxRank) ctx.decline("the copy needs " + std::to_string(d.size()) + " dims (the shader has 6)");
  CopyParams p{};
  p.n = checked_u32(ctx, n, "the element count");
  p.rank = static_cast<uint32_t>(d.size());
  p.out_base = checked_u32(ctx, out_base, "the output offset");
  if (in_base < 0 || in_base > 0x7fffffff) ctx.decline("the input offset does not fit 31 bits");
  p.in_base = static_cast<int32_t>(in_base);
  for (size_t k = 0; k < d.size(); ++k) {
    p.dims[k] = checked_u32(ctx, d[k], "a dimension");
    if (si[k] < -0x7fffffff || si[k] > 0x7fffffff) ctx.decline("a stride does not fit 31 bits");
    p.in_strides[k] = static_cast<int32_t>(si[k]);
    p.out_strides[k] = checked_u32(ctx, so[k], "a stride");
  }
  dispatch_1d(ctx, raw_shader(ctx, "copy", x->dtype()), {x->range(), words(y)}, &p, sizeof p,
              static_cast<uint64_t>(n));
}

/// A new tensor of `shape` holding the view (dims, in_strides, base) of x in row-major order.
void copy_to_output(DeviceKernelContext& ctx, size_t out, const std::shared_ptr<const VulkanTensor>& x,
                    const Shape& dims, const Shape& in_strides, int64_t base, Shape shape) {
  raw_shader(ctx, "copy", x->dtype());
  checked_u32(ctx, shape_size(shape), "the element count");
  auto y = output(ctx, out, x->dtype(), std::move(shape));
  record_copy(ctx, x, y, dims, in_strides, base, strides_of(dims), 0);
}

// ---------------------------------------------------------------- views (no dispatch)

void reshape_kernel(DeviceKernelContext& ctx) {
  const std::vector<int64_t> spec =
      ctx.opset() < 5 ? ctx.attr_ints("shape") : read_int_list(ctx, ctx.host_input(1), "shape");
  const bool allowzero = ctx.opset() >= 14 && ctx.attr_int("allowzero", 0) != 0;
  alias(ctx, reshape_target(ctx, ctx.input_dtype(0), ctx.input_shape(0), spec, allowzero));
}

void flatten_kernel(DeviceKernelContext& ctx) {
  const Shape& x = ctx.input_shape(0);
  const int64_t r = static_cast<int64_t>(x.size());
  int64_t axis = ctx.attr_int("axis", 1);
  if (axis < -r || axis > r) ctx.decline("axis out of range");
  if (axis < 0) axis += r;
  const auto a = static_cast<size_t>(axis);
  alias(ctx, {dims_product(x, 0, a), dims_product(x, a, x.size())});
}

void squeeze_kernel(DeviceKernelContext& ctx) {
  bool given = false;
  const auto axes = ints_by_version(ctx, "axes", 13, 1, &given);
  alias(ctx, squeeze_shape(ctx, ctx.input_dtype(0), ctx.input_shape(0), axes, given));
}

void unsqueeze_kernel(DeviceKernelContext& ctx) {
  bool given = false;
  const auto axes = ints_by_version(ctx, "axes", 13, 1, &given);
  if (!given) ctx.decline("no axes");
  alias(ctx, unsqueeze_shape(ctx, ctx.input_shape(0), axes));
}

void shape_kernel(DeviceKernelContext& ctx) {
  const Shape x = ctx.input_shape(0);
  const int64_t r = static_cast<int64_t>(x.size());
  auto clamp_axis = [r](int64_t a) { return std::clamp(a < 0 ? a + r : a, int64_t{0}, r); };
  const int64_t start = clamp_axis(ctx.attr_int("start", 0));
  const int64_t end = ctx.has_attr("end") ? clamp_axis(ctx.attr_int("end", r)) : r;
  const int64_t n = std::max<int64_t>(0, end - start);
  Tensor out(DataType::kInt64, {n});
  for (int64_t i = 0; i < n; ++i) out.mutable_data<int64_t>()[i] = x[static_cast<size_t>(start + i)];
  ctx.set_host_output(0, std::move(out));
}

void size_kernel(DeviceKernelContext& ctx) { ctx.set_host_output(0, Tensor::scalar_int64(shape_size(ctx.input_shape(0)))); }

// ---------------------------------------------------------------- layout copies

void transpose_kernel(DeviceKernelContext& ctx) {
  const Shape xs = ctx.input_shape(0);
  const size_t r = xs.size();
  std::vector<int64_t> perm = ctx.attr_ints("perm");
  if (perm.empty())
    for (size_t i = r; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  if (perm.size() != r) ctx.decline("perm does not match the rank");
  perm = normalize_axes(ctx, perm, static_cast<int64_t>(r));
  raw_shader(ctx, "copy", ctx.input_dtype(0));
  const Shape st = strides_of(xs);
  Shape shape(r), in_strides(r);
  for (size_t i = 0; i < r; ++i) {
    shape[i] = xs[static_cast<size_t>(perm[i])];
    in_strides[i] = st[static_cast<size_t>(perm[i])];
  }
  copy_to_output(ctx, 0, input(ctx, 0), shape, in_strides, 0, shape);
}

void concat_kernel(DeviceKernelContext& ctx) {
  const size_t count = ctx.input_count();
  if (count == 0) ctx.decline("no inputs");
  const Shape first = ctx.input_shape(0);
  const DataType type = ctx.input_dtype(0);
  if (first.empty()) ctx.decline("rank 0 inputs");
  if (ctx.opset() >= 4 && !ctx.has_attr("axis")) ctx.decline("no axis attribute");
  raw_shader(ctx, "copy", type);
  const auto axis =
      static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", 1), static_cast<int64_t>(first.size())));
  Shape shape = first;
  shape[axis] = 0;
  for (size_t i = 0; i < count; ++i) {
    const Shape& s = ctx.input_shape(i);
    if (ctx.input_dtype(i) != type) ctx.decline("inputs of different element types");
    if (s.size() != first.size()) ctx.decline("inputs of different ranks");
    for (size_t d = 0; d < s.size(); ++d)
      if (d != axis && s[d] != first[d]) ctx.decline("inputs differ outside the axis");
    shape[axis] += s[axis];
  }
  checked_u32(ctx, shape_size(shape), "the element count");
  const int64_t outer = dims_product(shape, 0, axis), inner = dims_product(shape, axis + 1, shape.size());
  const int64_t total = shape[axis];
  std::vector<std::shared_ptr<const VulkanTensor>> parts;
  for (size_t i = 0; i < count; ++i) parts.push_back(ctx.input_shape(i)[axis] > 0 ? input(ctx, i) : nullptr);
  auto y = output(ctx, 0, type, shape);
  int64_t at = 0;
  for (const auto& x : parts) {
    if (!x) continue;
    const int64_t len = x->dim(axis);
    record_copy(ctx, x, y, {outer, len, inner}, {len * inner, inner, 1}, 0, {total * inner, inner, 1}, at * inner);
    at += len;
  }
}

void split_kernel(DeviceKernelContext& ctx) {
  const Shape xs = ctx.input_shape(0);
  raw_shader(ctx, "copy", ctx.input_dtype(0));
  const auto axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", 0), static_cast<int64_t>(xs.size())));
  const int64_t dim = xs[axis];
  const int64_t n = static_cast<int64_t>(ctx.output_count());
  std::vector<int64_t> lens;
  if (ctx.opset() < 13 && ctx.has_attr("split")) lens = ctx.attr_ints("split");
  else if ((ctx.opset() == 1 || ctx.opset() >= 13) && ctx.has_input(1))
    lens = read_int_list(ctx, ctx.host_input(1), "split");
  else if (ctx.opset() >= 18 && ctx.has_attr("num_outputs")) {
    if (ctx.attr_int("num_outputs", n) != n) ctx.decline("num_outputs differs from the output count");
    lens = equal_split(ctx, dim, n, true);
  } else {
    lens = equal_split(ctx, dim, n, false);
  }
  if (static_cast<int64_t>(lens.size()) != n) ctx.decline("split lengths do not match the outputs");
  check_split_lengths(ctx, lens, dim);
  checked_u32(ctx, shape_size(xs), "the element count");
  auto x = input(ctx, 0);
  const int64_t outer = dims_product(xs, 0, axis), inner = dims_product(xs, axis + 1, xs.size());
  int64_t start = 0;
  for (size_t i = 0; i < lens.size(); ++i) {
    if (ctx.has_output(i)) {
      Shape shape = xs;
      shape[axis] = lens[i];
      copy_to_output(ctx, i, x, {outer, lens[i], inner}, {dim * inner, inner, 1}, start * inner, shape);
    }
    start += lens[i];
  }
}

void slice_kernel(DeviceKernelContext& ctx) {
  const Shape xs = ctx.input_shape(0);
  raw_shader(ctx, "copy", ctx.input_dtype(0));
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.attr_ints("starts");
    ends = ctx.attr_ints("ends");
    axes = ctx.attr_ints("axes");
  } else {
    starts = read_int_list(ctx, ctx.host_input(1), "starts");
    ends = read_int_list(ctx, ctx.host_input(2), "ends");
    if (ctx.has_input(3)) axes = read_int_list(ctx, ctx.host_input(3), "axes");
    if (ctx.has_input(4)) steps = read_int_list(ctx, ctx.host_input(4), "steps");
  }
  const StridedView v = slice_view(ctx, xs, starts, ends, std::move(axes), std::move(steps));
  if (shape_size(v.shape) == 0) {
    output(ctx, 0, ctx.input_dtype(0), v.shape);
    return;
  }
  copy_to_output(ctx, 0, input(ctx, 0), v.shape, v.strides, v.offset, v.shape);
}

void expand_kernel(DeviceKernelContext& ctx) {
  const Shape xs = ctx.input_shape(0);
  raw_shader(ctx, "copy", ctx.input_dtype(0));
  const auto target = read_int_list(ctx, ctx.host_input(1), "shape");
  const size_t rank = std::max(xs.size(), target.size());
  Shape shape(rank, 1);
  for (const Shape* s : {&xs, &target}) {
    const size_t pad = rank - s->size();
    for (size_t d = 0; d < s->size(); ++d) {
      const int64_t v = (*s)[d];
      int64_t& o = shape[pad + d];
      if (v == o || v == 1) continue;
      if (o != 1) ctx.decline("the shapes do not broadcast");
      o = v;
    }
  }
  const Shape st = strides_of(xs);
  Shape in_strides(rank, 0);
  const size_t pad = rank - xs.size();
  for (size_t i = 0; i < xs.size(); ++i) in_strides[pad + i] = xs[i] == 1 ? 0 : st[i];
  if (shape_size(shape) == 0) {
    output(ctx, 0, ctx.input_dtype(0), shape);
    return;
  }
  copy_to_output(ctx, 0, input(ctx, 0), shape, in_strides, 0, shape);
}

void tile_kernel(DeviceKernelContext& ctx) {
  const Shape xs = ctx.input_shape(0);
  raw_shader(ctx, "copy", ctx.input_dtype(0));
  const auto repeats = read_int_list(ctx, ctx.host_input(1), "repeats");
  if (repeats.size() != xs.size()) ctx.decline("repeats does not match the rank");
  const Shape st = strides_of(xs);
  Shape shape, dims, in_strides;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (repeats[i] < 0) ctx.decline("a negative repeat");
    shape.push_back(xs[i] * repeats[i]);
    dims.insert(dims.end(), {repeats[i], xs[i]});
    in_strides.insert(in_strides.end(), {0, st[i]});
  }
  if (shape_size(shape) == 0) {
    output(ctx, 0, ctx.input_dtype(0), shape);
    return;
  }
  copy_to_output(ctx, 0, input(ctx, 0), dims, in_strides, 0, shape);
}

// ---------------------------------------------------------------- Gather

struct GatherParams {
  uint32_t n, count, dim, inner;
};

void gather_kernel(DeviceKernelContext& ctx) {
  const Shape xs = ctx.input_shape(0);
  const DataType type = ctx.input_dtype(0);
  const std::string shader = raw_shader(ctx, "gather", type);
  if (xs.empty()) ctx.decline("rank 0 data");
  const auto axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", 0), static_cast<int64_t>(xs.size())));
  // The indices are read on the host: they are checked (the CPU fails on one out of range) and
  // normalized there, and are small in the models served (constants, or Shape-derived values).
  const Tensor& indices = ctx.host_input(1);
  const auto idx = read_int_list(ctx, indices, "indices");
  const int64_t dim = xs[axis];
  Tensor table(DataType::kInt32, {std::max<int64_t>(1, static_cast<int64_t>(idx.size()))});
  table.mutable_data<int32_t>()[0] = 0;
  for (size_t j = 0; j < idx.size(); ++j) {
    if (idx[j] < -dim || idx[j] >= dim) ctx.decline("an index is out of range");
    table.mutable_data<int32_t>()[j] = static_cast<int32_t>(idx[j] < 0 ? idx[j] + dim : idx[j]);
  }
  Shape shape(xs.begin(), xs.begin() + static_cast<int64_t>(axis));
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), xs.begin() + static_cast<int64_t>(axis) + 1, xs.end());
  GatherParams p{};
  p.n = checked_u32(ctx, shape_size(shape), "the element count");
  checked_u32(ctx, shape_size(xs), "the data's element count");
  p.count = static_cast<uint32_t>(idx.size());
  p.dim = static_cast<uint32_t>(dim);
  p.inner = static_cast<uint32_t>(dims_product(xs, axis + 1, xs.size()));
  if (p.n == 0) {
    output(ctx, 0, type, shape);
    return;
  }
  auto x = input(ctx, 0);
  auto t = std::static_pointer_cast<const VulkanTensor>(backend_of(ctx).upload(table));
  auto y = output(ctx, 0, type, shape);
  dispatch_1d(ctx, shader, {x->range(), t->range(), words(y)}, &p, sizeof p, p.n);
}

// ---------------------------------------------------------------- Pad

struct PadParams {
  uint32_t n, rank, mode, fill;
  uint32_t out_dims[kMaxRank];
  uint32_t in_dims[kMaxRank];
  int32_t begins[kMaxRank];
};

void pad_kernel(DeviceKernelContext& ctx) {
  const Shape xs = ctx.input_shape(0);
  const DataType type = ctx.input_dtype(0);
  const std::string shader = raw_shader(ctx, "pad", type);
  const size_t r = xs.size();
  if (r > kMaxRank) ctx.decline("rank above 6");
  const std::string mode_name = ctx.attr_string("mode", "constant");
  uint32_t mode;
  if (mode_name == "constant") mode = 0;
  else if (mode_name == "reflect") mode = 1;
  else if (mode_name == "edge") mode = 2;
  else if (mode_name == "wrap" && ctx.opset() >= 19) mode = 3;
  else ctx.decline("pad mode '" + mode_name + "'");
  std::vector<int64_t> pads, axes;
  uint32_t fill = 0;
  if (ctx.opset() < 11) {
    pads = ctx.attr_ints(ctx.opset() < 2 ? "paddings" : "pads");
    const float value = ctx.attr_float("value", 0.0f);
    if (type == DataType::kFloat) std::memcpy(&fill, &value, 4);
    else if (type == DataType::kFloat16) fill = float_to_half(value);
    else ctx.decline("the value attribute on a non-float type");
  } else {
    pads = read_int_list(ctx, ctx.host_input(1), "pads");
    if (ctx.has_input(2)) {
      const Tensor& v = ctx.host_input(2);
      if (v.size() > 0) {
        if (v.dtype() != type || v.size() != 1) ctx.decline("constant_value is not one element of the data's type");
        std::memcpy(&fill, v.raw(), ir::data_type_bits(type) / 8);
      }
    }
    if (ctx.opset() >= 18 && ctx.has_input(3)) axes = read_int_list(ctx, ctx.host_input(3), "axes");
  }
  if (axes.empty())
    for (size_t i = 0; i < r; ++i) axes.push_back(static_cast<int64_t>(i));
  axes = normalize_axes(ctx, axes, static_cast<int64_t>(r));
  if (pads.size() != 2 * axes.size()) ctx.decline("pads does not match the axes");
  Shape begins(r, 0), ends(r, 0), shape(r);
  for (size_t i = 0; i < axes.size(); ++i) {
    begins[static_cast<size_t>(axes[i])] = pads[i];
    ends[static_cast<size_t>(axes[i])] = pads[i + axes.size()];
  }
  PadParams p{};
  p.rank = static_cast<uint32_t>(r);
  p.mode = mode;
  p.fill = fill;
  for (size_t d = 0; d < r; ++d) {
    shape[d] = xs[d] + begins[d] + ends[d];
    if (shape[d] < 0) ctx.decline("pads remove more than the axis has");
    if (mode != 0 && xs[d] == 0 && shape[d] > 0) ctx.decline("padding an empty axis in this mode");
    if (begins[d] < -0x7fffffff || begins[d] > 0x7fffffff) ctx.decline("a pad does not fit 31 bits");
    p.out_dims[d] = checked_u32(ctx, shape[d], "a dimension");
    p.in_dims[d] = checked_u32(ctx, xs[d], "a dimension");
    p.begins[d] = static_cast<int32_t>(begins[d]);
  }
  p.n = checked_u32(ctx, shape_size(shape), "the element count");
  checked_u32(ctx, shape_size(xs), "the element count");
  if (p.n == 0) {
    output(ctx, 0, type, shape);
    return;
  }
  auto x = input(ctx, 0);
  auto y = output(ctx, 0, type, shape);
  dispatch_1d(ctx, shader, {words(x), words(y)}, &p, sizeof p, p.n);
}

}  // namespace

void register_data(KernelTable& t) {
  // Views and metadata (no dispatch).
  t.add("Reshape", reshape_kernel);
  t.add("Flatten", flatten_kernel);
  t.add("Squeeze", squeeze_kernel);
  t.add("Unsqueeze", unsqueeze_kernel);
  t.add("Shape", shape_kernel);
  t.add("Size", size_kernel);
  // Layout copies (the strided-copy shader).
  t.add("Transpose", transpose_kernel);
  t.add("Concat", concat_kernel);
  t.add("Split", split_kernel);
  t.add("Slice", slice_kernel);
  t.add("Expand", expand_kernel);
  t.add("", "Tile", 6, kMaxOpset, tile_kernel);
  // Indexed and padded copies (their own shaders).
  t.add("Gather", gather_kernel);
  t.add("Pad", pad_kernel);
}

}  // namespace onnxtool::runner::vulkan
