// Vulkan kernels of data movement (reshapes, Transpose, Concat, Split, Slice, Gather, Expand, Pad,
// Tile), Cast, Where, Resize and Quantize/DequantizeLinear.
//
// Reshape and its kin alias the input's memory under a new shape; Shape and Size answer from
// metadata on the host. The layout copies share one strided-copy shader that moves raw 4-byte
// (or, in its _f16 variant, 2-byte) elements, so int32 tensors move as well as floats. The
// checks shared with the CPU kernels (runner/geometry.h: axes, integer lists, the shapes of
// Reshape, Squeeze and Unsqueeze, Slice's and Split's lengths) fail with their line, in the CPU
// kernel's order; every other argument the CPU kernel would reject is declined here, so that the
// CPU reports the error.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "ir/ops/shape_util.h"
#include "runner/geometry.h"
#include "runner/vulkan/backend.h"

namespace onnxtool::runner::vulkan {

namespace {

constexpr size_t kMaxRank = 6;

using Shape = std::vector<int64_t>;

/// A binding of the whole tensor rounded up to 4 bytes (pool buffers are multiples of 16), so
/// shaders may read and write 8-bit tensors as 32-bit words.
BufferRange words(const std::shared_ptr<const VulkanTensor>& t) {
  return {t->lease()->buffer().buffer, 0, std::max<VkDeviceSize>(4, (t->bytes() + 3) / 4 * 4)};
}

std::string type_name(DataType t) { return std::string(ir::data_type_name(t)); }

/// The copy-family shader for raw elements of `type`: 4-byte elements use NAME, float16 NAME_f16.
std::string raw_shader(DeviceKernelContext& ctx, const std::string& name, DataType type) {
  const uint64_t bits = ir::data_type_bits(type);
  if (bits == 32) return name;
  if (bits == 16 && type == DataType::kFloat16) {
    if (!backend_of(ctx).info().fp16_storage) ctx.decline("the device has no 16-bit storage buffers for float16");
    return name + "_f16";
  }
  ctx.decline(type_name(type) + " elements (the Vulkan copies move 4-byte and 2-byte elements)");
}

std::vector<double> floats_of(DeviceKernelContext& ctx, const Tensor& t, const char* what) {
  if (t.dtype() != DataType::kFloat && t.dtype() != DataType::kFloat16 && t.dtype() != DataType::kDouble)
    ctx.decline(std::string(what) + " is not a float tensor");
  std::vector<double> out(static_cast<size_t>(t.size()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = element_as_double(t, static_cast<int64_t>(i));
  return out;
}

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

void alias(DeviceKernelContext& ctx, Shape shape) {
  ctx.set_output(0, backend_of(ctx).reshaped(ctx.input(0), std::move(shape)));
}

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

void identity_kernel(DeviceKernelContext& ctx) { alias(ctx, ctx.input_shape(0)); }

void dropout_kernel(DeviceKernelContext& ctx) {
  const DataType t = ctx.input_dtype(0);
  if (t != DataType::kFloat && t != DataType::kFloat16) ctx.decline("Dropout of a non-float type");
  if (ctx.has_output(1)) ctx.decline("the mask output is requested");
  if (ctx.opset() >= 12 && ctx.has_input(2)) {
    const Tensor& training = ctx.host_input(2);
    if (training.dtype() != DataType::kBool || training.size() != 1) ctx.decline("training_mode is not a bool scalar");
    if (training.data<uint8_t>()[0] != 0) ctx.decline("training_mode is true");
  }
  alias(ctx, ctx.input_shape(0));
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

// ---------------------------------------------------------------- Cast

void cast_kernel(DeviceKernelContext& ctx) {
  const DataType from = ctx.input_dtype(0);
  const auto to = static_cast<DataType>(ctx.attr_int("to", 0));
  if (from == to) {
    alias(ctx, ctx.input_shape(0));
    return;
  }
  const bool narrow = from == DataType::kFloat && to == DataType::kFloat16;
  const bool widen = from == DataType::kFloat16 && to == DataType::kFloat;
  if (!narrow && !widen)
    ctx.decline(std::string("Cast from ") + type_name(from) + " to " + type_name(to) +
                " (Vulkan casts float32 <-> float16)");
  if (!backend_of(ctx).info().fp16_storage) ctx.decline("the device has no 16-bit storage buffers for float16");
  const uint32_t n = checked_u32(ctx, shape_size(ctx.input_shape(0)), "the element count");
  auto x = input(ctx, 0);
  auto y = output(ctx, 0, to, x->shape());
  dispatch_1d(ctx, narrow ? "cast_f16" : "cast", {x->range(), y->range()}, &n, sizeof n, n);
}

// ---------------------------------------------------------------- Where

struct WhereParams {
  uint32_t n, rank;
  uint32_t dims[kMaxRank];
  uint32_t strides[3][kMaxRank];
};

void where_kernel(DeviceKernelContext& ctx) {
  if (ctx.input_dtype(0) != DataType::kBool) ctx.decline("the condition is not bool");
  const DataType type = ctx.input_dtype(1);
  if (ctx.input_dtype(2) != type) ctx.decline("X and Y differ in type");
  const std::string shader = raw_shader(ctx, "where", type);
  const Shape shapes[3] = {ctx.input_shape(0), ctx.input_shape(1), ctx.input_shape(2)};
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  if (rank > kMaxRank) ctx.decline("rank above 6");
  Shape shape(rank, 1);
  for (const auto& s : shapes) {
    const size_t pad = rank - s.size();
    for (size_t d = 0; d < s.size(); ++d) {
      int64_t& o = shape[pad + d];
      if (s[d] == o || s[d] == 1) continue;
      if (o != 1) ctx.decline("the shapes do not broadcast");
      o = s[d];
    }
  }
  WhereParams p{};
  p.n = checked_u32(ctx, shape_size(shape), "the element count");
  p.rank = static_cast<uint32_t>(rank);
  for (size_t d = 0; d < rank; ++d) p.dims[d] = static_cast<uint32_t>(shape[d]);
  for (size_t k = 0; k < 3; ++k) {
    checked_u32(ctx, shape_size(shapes[k]), "an input's element count");
    int64_t stride = 1;
    for (size_t d = rank; d-- > 0;) {
      const size_t pad = rank - shapes[k].size();
      const int64_t dim = d >= pad ? shapes[k][d - pad] : 1;
      p.strides[k][d] = dim == 1 ? 0 : static_cast<uint32_t>(stride);
      stride *= dim;
    }
  }
  if (p.n == 0) {
    output(ctx, 0, type, shape);
    return;
  }
  auto c = input(ctx, 0), a = input(ctx, 1), b = input(ctx, 2);
  auto y = output(ctx, 0, type, shape);
  dispatch_1d(ctx, shader, {words(c), words(a), words(b), words(y)}, &p, sizeof p, p.n);
}

// ---------------------------------------------------------------- Resize

enum class Coord { kHalfPixel, kHalfPixelSymmetric, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfHalfPixelForNN };
enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kLegacy };

// The input coordinate of output coordinate o, in double as the CPU kernel computes it.
double source_coord(Coord m, int64_t o, double scale, int64_t in_len, int64_t out_len) {
  const double x = static_cast<double>(o), in = static_cast<double>(in_len), resized = in * scale;
  switch (m) {
    case Coord::kHalfPixel: return (x + 0.5) / scale - 0.5;
    case Coord::kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(out_len) / resized;
      return in / 2 * (1 - adjustment) + (x + 0.5) / scale - 0.5;
    }
    case Coord::kPytorchHalfPixel: return resized > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case Coord::kAlignCorners: return resized > 1 ? x * (in - 1) / (resized - 1) : 0.0;
    case Coord::kAsymmetric: return x / scale;
    case Coord::kTfHalfPixelForNN: return (x + 0.5) / scale;
  }
  return x;
}

int64_t nearest_of(Nearest m, double x, double scale) {
  const double f = std::floor(x);
  switch (m) {
    case Nearest::kRoundPreferFloor: return static_cast<int64_t>(x - f > 0.5 ? f + 1 : f);
    case Nearest::kRoundPreferCeil: return static_cast<int64_t>(x - f >= 0.5 ? f + 1 : f);
    case Nearest::kFloor: return static_cast<int64_t>(f);
    case Nearest::kCeil: return static_cast<int64_t>(std::ceil(x));
    case Nearest::kLegacy: return scale < 1 ? static_cast<int64_t>(std::ceil(x)) : static_cast<int64_t>(x);
  }
  return static_cast<int64_t>(f);
}

struct ResizeParams {
  uint32_t n, rank, two_taps, pad;
  uint32_t out_dims[kMaxRank];
  uint32_t in_strides[kMaxRank];
  uint32_t offsets[kMaxRank];
};

void resize_kernel(DeviceKernelContext& ctx) {
  const DataType type = require_float(ctx, 0);
  const Shape xs = ctx.input_shape(0);
  const size_t r = xs.size();
  if (r == 0) ctx.decline("a scalar");
  if (r > kMaxRank) ctx.decline("rank above 6");
  const bool legacy = ctx.opset() < 11;
  const std::string mode = ctx.attr_string("mode", "nearest");
  bool linear = false;
  if (mode == "linear") linear = true;
  else if (mode != "nearest") ctx.decline("mode '" + mode + "'");
  Coord coord = Coord::kAsymmetric;
  Nearest nearest = Nearest::kLegacy;
  std::vector<int64_t> axes;
  for (size_t d = 0; d < r; ++d) axes.push_back(static_cast<int64_t>(d));
  Shape shape = xs;
  std::vector<double> scales(r, 1.0);
  if (legacy) {
    const auto s = floats_of(ctx, ctx.host_input(1), "scales");
    if (s.size() != r) ctx.decline("scales does not match the rank");
    for (size_t d = 0; d < r; ++d) {
      if (!(s[d] > 0)) ctx.decline("a scale is not positive");
      scales[d] = s[d];
      shape[d] = static_cast<int64_t>(std::floor(static_cast<double>(xs[d]) * s[d]));
    }
  } else {
    const std::string c = ctx.attr_string("coordinate_transformation_mode", "half_pixel");
    if (c == "half_pixel") coord = Coord::kHalfPixel;
    else if (c == "half_pixel_symmetric" && ctx.opset() >= 19) coord = Coord::kHalfPixelSymmetric;
    else if (c == "pytorch_half_pixel") coord = Coord::kPytorchHalfPixel;
    else if (c == "align_corners") coord = Coord::kAlignCorners;
    else if (c == "asymmetric") coord = Coord::kAsymmetric;
    else if (c == "tf_half_pixel_for_nn") coord = Coord::kTfHalfPixelForNN;
    else ctx.decline("coordinate_transformation_mode '" + c + "'");
    const std::string nm = ctx.attr_string("nearest_mode", "round_prefer_floor");
    if (nm == "round_prefer_floor") nearest = Nearest::kRoundPreferFloor;
    else if (nm == "round_prefer_ceil") nearest = Nearest::kRoundPreferCeil;
    else if (nm == "floor") nearest = Nearest::kFloor;
    else if (nm == "ceil") nearest = Nearest::kCeil;
    else ctx.decline("nearest_mode '" + nm + "'");
    if (ctx.attr_int("exclude_outside", 0) != 0) ctx.decline("exclude_outside");
    if (ctx.opset() >= 18 && ctx.attr_int("antialias", 0) != 0) ctx.decline("antialias");
    if (ctx.opset() >= 18 && ctx.has_attr("axes"))
      axes = normalize_axes(ctx, ctx.attr_ints("axes"), static_cast<int64_t>(r));
    const size_t k = axes.size();
    const bool has_scales = ctx.has_input(2) && ctx.host_input(2).size() > 0;
    const bool has_sizes = ctx.has_input(3) && ctx.host_input(3).size() > 0;
    if (has_scales == has_sizes) ctx.decline("not exactly one of scales and sizes");
    if (has_scales) {
      const auto s = floats_of(ctx, ctx.host_input(2), "scales");
      if (s.size() != k) ctx.decline("scales does not match the axes");
      for (size_t i = 0; i < k; ++i) {
        const auto d = static_cast<size_t>(axes[i]);
        if (!(s[i] > 0)) ctx.decline("a scale is not positive");
        scales[d] = s[i];
        shape[d] = static_cast<int64_t>(std::floor(static_cast<double>(xs[d]) * s[i]));
      }
    } else {
      const Tensor& st = ctx.host_input(3);
      if (st.dtype() != DataType::kInt64) ctx.decline("sizes is not int64");
      const auto sizes = read_int_list(ctx, st, "sizes");
      if (sizes.size() != k) ctx.decline("sizes does not match the axes");
      const std::string policy = ctx.opset() >= 18 ? ctx.attr_string("keep_aspect_ratio_policy", "stretch") : "stretch";
      if (policy != "stretch") ctx.decline("keep_aspect_ratio_policy '" + policy + "'");
      for (size_t i = 0; i < k; ++i) {
        const auto d = static_cast<size_t>(axes[i]);
        if (sizes[i] < 0) ctx.decline("a negative size");
        if (xs[d] == 0) ctx.decline("an empty axis");
        shape[d] = sizes[i];
        scales[d] = static_cast<double>(sizes[i]) / static_cast<double>(xs[d]);
      }
    }
  }
  for (size_t d = 0; d < r; ++d)
    if (xs[d] == 0) ctx.decline("an empty axis");
  ResizeParams p{};
  p.n = checked_u32(ctx, shape_size(shape), "the element count");
  checked_u32(ctx, shape_size(xs), "the element count");
  p.rank = static_cast<uint32_t>(r);
  if (p.n == 0) {
    output(ctx, 0, type, shape);
    return;
  }
  // Per axis and output coordinate: i0, i1, w0, w1 (float bits), as the CPU's taps.
  std::vector<uint32_t> table;
  const Shape in_strides = strides_of(xs);
  for (size_t d = 0; d < r; ++d) {
    p.out_dims[d] = static_cast<uint32_t>(shape[d]);
    p.in_strides[d] = static_cast<uint32_t>(in_strides[d]);
    p.offsets[d] = checked_u32(ctx, static_cast<int64_t>(table.size()), "the tap table");
    bool blends = false;
    for (int64_t o = 0; o < shape[d]; ++o) {
      const double x = source_coord(coord, o, scales[d], xs[d], shape[d]);
      int64_t i0, i1;
      float w0 = 1, w1 = 0;
      if (!linear) {
        i0 = i1 = std::clamp<int64_t>(nearest_of(nearest, x, scales[d]), 0, xs[d] - 1);
      } else {
        const double fl = std::floor(x);
        const double a = std::max(0.0, 1 - std::fabs(fl - x)), b = std::max(0.0, 1 - std::fabs(fl + 1 - x));
        i0 = std::clamp<int64_t>(static_cast<int64_t>(fl), 0, xs[d] - 1);
        i1 = std::clamp<int64_t>(static_cast<int64_t>(fl) + 1, 0, xs[d] - 1);
        w0 = static_cast<float>(a);
        w1 = static_cast<float>(b);
        // x - fl is in [0, 1), so w0 > 0; w1 == 0 leaves the single tap i0 of weight 1, as the
        // CPU's compaction does.
        if (b != 0) blends = true;
      }
      uint32_t b0, b1;
      std::memcpy(&b0, &w0, 4);
      std::memcpy(&b1, &w1, 4);
      table.insert(table.end(), {static_cast<uint32_t>(i0), static_cast<uint32_t>(i1), b0, b1});
    }
    if (blends) p.two_taps |= 1u << d;
  }
  Tensor tab(DataType::kInt32, {static_cast<int64_t>(table.size())});
  if (!table.empty()) std::memcpy(tab.mutable_raw(), table.data(), table.size() * 4);
  auto x = input(ctx, 0);
  auto t = std::static_pointer_cast<const VulkanTensor>(backend_of(ctx).upload(tab));
  auto y = output(ctx, 0, type, shape);
  dispatch_1d(ctx, shader_for("resize", type), {x->range(), t->range(), y->range()}, &p, sizeof p, p.n);
}

// ---------------------------------------------------------------- Quantize / Dequantize

/// Scales and zero points as one float buffer [scales..., zero points...], with the per-axis
/// layout (inner, axis_dim); declines blocked quantization and shapes the CPU rejects.
struct QuantParams {
  std::shared_ptr<const VulkanTensor> buffer;
  uint32_t inner = 1, axis_dim = 1, count = 1;
};

QuantParams quant_params(DeviceKernelContext& ctx, const Shape& xs, DataType x_type, bool quantize) {
  const Tensor& scale = ctx.host_input(1);
  if (scale.dtype() != DataType::kFloat && (quantize || scale.dtype() != DataType::kFloat16))
    ctx.decline(std::string("a ") + type_name(scale.dtype()) + " scale");
  if (ctx.attr_int("block_size", 0) != 0) ctx.decline("blocked quantization");
  // The zero point's type before the axis: the CPU kernel checks in that order.
  const Tensor* zp = ctx.has_input(2) ? &ctx.host_input(2) : nullptr;
  if (zp && zp->dtype() != x_type) ctx.decline("the zero point's type");
  QuantParams q;
  if (!(scale.size() == 1 && scale.rank() <= 1)) {
    const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 1), static_cast<int64_t>(xs.size()));
    const int64_t dim = xs[static_cast<size_t>(axis)];
    if (scale.rank() != 1 || scale.dim(0) != dim) ctx.decline("the per-axis scale does not match the axis");
    q.axis_dim = checked_u32(ctx, dim, "the axis");
    q.inner = checked_u32(ctx, dims_product(xs, static_cast<size_t>(axis) + 1, xs.size()), "the inner size");
    q.count = q.axis_dim;
  }
  std::vector<float> v(2 * static_cast<size_t>(q.count), 0.0f);
  for (uint32_t i = 0; i < q.count; ++i) v[i] = static_cast<float>(element_as_double(scale, i));
  if (zp) {
    if (zp->shape() != scale.shape() && zp->size() != scale.size()) ctx.decline("zero point and scale differ in shape");
    for (uint32_t i = 0; i < q.count; ++i) v[q.count + i] = static_cast<float>(element_as_double(*zp, i));
  }
  Tensor t(DataType::kFloat, {static_cast<int64_t>(v.size())});
  std::memcpy(t.mutable_raw(), v.data(), v.size() * 4);
  q.buffer = std::static_pointer_cast<const VulkanTensor>(backend_of(ctx).upload(t));
  return q;
}

/// What both shaders read first: the element count and the scale's layout over the elements.
struct QuantLayout {
  uint32_t n, inner, axis_dim, count;
};

/// Input 0's QuantLayout and its scale and zero point; nullopt (the empty output made) when
/// there is no element.
std::optional<std::pair<QuantLayout, QuantParams>> quant_layout(DeviceKernelContext& ctx, DataType x_type, DataType out,
                                                                bool quantize) {
  const Shape xs = ctx.input_shape(0);
  QuantLayout layout{};
  layout.n = checked_u32(ctx, shape_size(xs), "the element count");
  if (layout.n == 0) {
    output(ctx, 0, out, xs);
    return std::nullopt;
  }
  QuantParams q = quant_params(ctx, xs, x_type, quantize);
  layout.inner = q.inner;
  layout.axis_dim = q.axis_dim;
  layout.count = q.count;
  return std::make_pair(layout, std::move(q));
}

struct QuantizeParams {
  QuantLayout layout;
  float lo, hi;
};

void quantize_kernel(DeviceKernelContext& ctx) {
  if (ctx.input_dtype(0) != DataType::kFloat) ctx.decline("QuantizeLinear of a non-float32 input");
  DataType out = ctx.has_input(2) ? ctx.input_dtype(2) : DataType::kUInt8;
  if (!ctx.has_input(2) && ctx.opset() >= 21 && ctx.attr_int("output_dtype", 0) != 0)
    out = static_cast<DataType>(ctx.attr_int("output_dtype", 0));
  if (out != DataType::kUInt8 && out != DataType::kInt8)
    ctx.decline(std::string("QuantizeLinear to ") + type_name(out) + " (Vulkan produces uint8 and int8)");
  const auto layout = quant_layout(ctx, out, out, true);
  if (!layout) return;
  const QuantParams& q = layout->second;
  QuantizeParams p{layout->first, out == DataType::kUInt8 ? 0.0f : -128.0f, out == DataType::kUInt8 ? 255.0f : 127.0f};
  auto x = input(ctx, 0);
  auto y = output(ctx, 0, out, ctx.input_shape(0));
  dispatch_1d(ctx, "quantize", {x->range(), q.buffer->range(), words(y)}, &p, sizeof p, (uint64_t{p.layout.n} + 3) / 4);
}

struct DequantizeParams {
  QuantLayout layout;
  uint32_t is_signed;
};

void dequantize_kernel(DeviceKernelContext& ctx) {
  const DataType in = ctx.input_dtype(0);
  if (in != DataType::kUInt8 && in != DataType::kInt8)
    ctx.decline(std::string("DequantizeLinear of ") + type_name(in) + " (Vulkan reads uint8 and int8)");
  const DataType out = ctx.input_dtype(1);
  if (ctx.opset() >= 23 && ctx.attr_int("output_dtype", 0) != 0 &&
      static_cast<DataType>(ctx.attr_int("output_dtype", 0)) != out)
    ctx.decline("an output_dtype other than the scale's");
  if (out != DataType::kFloat && out != DataType::kFloat16) ctx.decline("a non-float scale");
  require_float(ctx, 1);
  const auto layout = quant_layout(ctx, in, out, false);
  if (!layout) return;
  const QuantParams& q = layout->second;
  DequantizeParams p{layout->first, in == DataType::kInt8};
  auto x = input(ctx, 0);
  auto y = output(ctx, 0, out, ctx.input_shape(0));
  dispatch_1d(ctx, shader_for("dequantize", out), {words(x), q.buffer->range(), y->range()}, &p, sizeof p, p.layout.n);
}

}  // namespace

void register_data(KernelTable& t) {
  t.add("Reshape", reshape_kernel);
  t.add("Flatten", flatten_kernel);
  t.add("Squeeze", squeeze_kernel);
  t.add("Unsqueeze", unsqueeze_kernel);
  t.add("Identity", identity_kernel);
  t.add("Dropout", dropout_kernel);
  t.add("Shape", shape_kernel);
  t.add("Size", size_kernel);
  t.add("Transpose", transpose_kernel);
  t.add("Concat", concat_kernel);
  t.add("Split", split_kernel);
  t.add("Slice", slice_kernel);
  t.add("Expand", expand_kernel);
  t.add("", "Tile", 6, kMaxOpset, tile_kernel);
  t.add("Gather", gather_kernel);
  t.add("Pad", pad_kernel);
  t.add("Cast", cast_kernel);
  t.add("Where", where_kernel);
  t.add("Resize", resize_kernel);
  t.add("QuantizeLinear", quantize_kernel);
  t.add("DequantizeLinear", dequantize_kernel);
}

}  // namespace onnxtool::runner::vulkan
