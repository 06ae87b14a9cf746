// Vulkan kernels of the elementwise ops that convert or select raw elements: Cast (float32 <->
// float16), Where, QuantizeLinear and DequantizeLinear (uint8, int8), and Dropout (inference:
// a view of its input). The semantics are those of runner/cpu/{cast,elementwise,
// quantize_linear}.cpp; whatever those kernels would reject is declined, so that the CPU reports
// it.
#include <algorithm>
#include <cstring>
#include <optional>

#include "runner/geometry.h"
#include "runner/vulkan/data.h"

namespace onnxtool::runner::vulkan {

namespace {

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

// ---------------------------------------------------------------- Dropout

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

}  // namespace

void register_convert(KernelTable& t) {
  t.add("Cast", cast_kernel);
  t.add("Where", where_kernel);
  t.add("QuantizeLinear", quantize_kernel);
  t.add("DequantizeLinear", dequantize_kernel);
  t.add("Dropout", dropout_kernel);
}

}  // namespace onnxtool::runner::vulkan
