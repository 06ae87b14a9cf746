// Vulkan kernels of pooling and the normalizations.
//
// Per-element work (MaxPool, AveragePool, BatchNormalization) is a 1-D dispatch; per-row work
// (a globally pooled channel, a normalized row) runs one workgroup per row with the per-row
// machinery of reduce.h (shared with Reduce* and the Softmax family in reduce.cpp). The
// semantics are those of runner/cpu/{pooling,normalization}.cpp. The geometry they share
// (runner/geometry.h: windows, axes) fails with their line, in their order of checks; whatever
// else those kernels would reject, and the forms not implemented here, are declined so that the
// CPU kernel runs (and reports).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "runner/geometry.h"
#include "runner/vulkan/backend.h"
#include "runner/vulkan/reduce.h"

namespace onnxtool::runner::vulkan {

namespace {

// ---------------------------------------------------------------- global pooling

/// GlobalAveragePool, GlobalMaxPool: every dim after N and C reduced, kept as 1.
template <ReduceOp Op>
void global_pool_kernel(DeviceKernelContext& ctx) {
  require_float(ctx, 0);
  const std::vector<int64_t>& shape = ctx.input_shape(0);
  if (shape.size() < 3) ctx.decline("X of rank " + str(static_cast<int64_t>(shape.size())) + " (needs [N, C, D...])");
  std::vector<bool> reduced(shape.size(), true);
  reduced[0] = reduced[1] = false;
  std::vector<int64_t> out_shape(shape.size(), 1);
  out_shape[0] = shape[0];
  out_shape[1] = shape[1];
  record_reduce(ctx, reduced, Op, std::move(out_shape));
}

// ---------------------------------------------------------------- LpNormalization

void lp_norm_kernel(DeviceKernelContext& ctx) {
  require_float(ctx, 0);
  const std::vector<int64_t>& s = ctx.input_shape(0);
  if (s.empty()) ctx.decline("a scalar input");
  const auto a = static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", -1), static_cast<int64_t>(s.size())));
  const int64_t p = ctx.attr_int("p", 2);
  if (p != 1 && p != 2) ctx.decline("p=" + str(p) + " (1 and 2 are defined)");
  record_axis(ctx, p == 1 ? AxisOp::kLp1 : AxisOp::kLp2, dims_product(s, 0, a), s[a], dims_product(s, a + 1, s.size()));
}

// ---------------------------------------------------------------- InstanceNormalization, LayerNormalization

struct RowNormParams {
  uint32_t rows, len;
  float eps;
  uint32_t c, scale_mode, bias_mode;
};

// How rownorm.comp indexes a parameter.
enum ParamMode : uint32_t { kPerElement = 0, kPerChannel = 1, kScalar = 2, kAbsent = 3 };

void record_rownorm(DeviceKernelContext& ctx, int64_t rows, int64_t len, float eps, int64_t c, ParamMode scale_mode,
                    ParamMode bias_mode) {
  require_nonempty(ctx, ctx.input_shape(0));
  RowNormParams p{checked_u32(ctx, rows, "the row count"), checked_u32(ctx, len, "the row length"), eps,
                  checked_u32(ctx, c, "the channel count"), scale_mode, bias_mode};
  // rownorm.comp passes over a row three times (the mean, the variance, the output) with a
  // tree reduction after the first two.
  const uint32_t local = row_local(ctx, len);
  const uint64_t trips = (static_cast<uint64_t>(len) + local - 1) / local;
  require_loop_bound(ctx, 3 * loop_cost(trips) + 2 * loop_cost(tree_steps(local)),
                     "a normalized row of " + str(len) + " elements");
  auto x = input(ctx, 0);
  auto scale = input(ctx, 1);
  auto bias = bias_mode == kAbsent ? scale : input(ctx, 2);
  auto y = output(ctx, 0, x->dtype(), x->shape());
  dispatch_rows(ctx, shader_for("rownorm", x->dtype()), {x->range(), scale->range(), bias->range(), y->range()}, &p,
                sizeof p, rows, len);
}

void instance_norm_kernel(DeviceKernelContext& ctx) {
  require_same_float(ctx, 3);
  const std::vector<int64_t>& s = ctx.input_shape(0);
  if (s.size() < 3) ctx.decline("input of rank " + str(static_cast<int64_t>(s.size())) + " (needs [N, C, D...])");
  const int64_t c = s[1];
  for (size_t i : {size_t{1}, size_t{2}})
    if (shape_size(ctx.input_shape(i)) != c) ctx.decline("a scale or B that is not one value per channel");
  record_rownorm(ctx, s[0] * c, dims_product(s, 2, s.size()), ctx.attr_float("epsilon", 1e-5f), c, kPerChannel,
                 kPerChannel);
}

/// How a LayerNormalization parameter broadcasts over the normalized block: one value per
/// element (its shape the block's trailing dims) or a single value; other broadcasts decline.
ParamMode layer_norm_param(DeviceKernelContext& ctx, size_t i, const std::vector<int64_t>& block, int64_t len) {
  const std::vector<int64_t>& s = ctx.input_shape(i);
  if (s.size() > block.size()) ctx.decline("a Scale or B with more dims than the normalized block");
  for (size_t k = 0; k < s.size(); ++k) {
    const int64_t b = block[block.size() - s.size() + k];
    if (s[k] != 1 && s[k] != b) ctx.decline("a Scale or B that does not broadcast to the normalized block");
  }
  const int64_t n = shape_size(s);
  if (n == len) return kPerElement;
  if (n == 1) return kScalar;
  ctx.decline("a Scale or B broadcast along part of the normalized block");
}

void layer_norm_kernel(DeviceKernelContext& ctx) {
  require_same_float(ctx, 3);
  if ((ctx.has_output(1)) || (ctx.has_output(2))) ctx.decline("the Mean and InvStdDev outputs");
  if (ctx.attr_int("stash_type", 1) != 1) ctx.decline("stash_type other than float");
  const std::vector<int64_t>& s = ctx.input_shape(0);
  if (s.empty()) ctx.decline("a scalar input");
  const auto a = static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", -1), static_cast<int64_t>(s.size())));
  const std::vector<int64_t> block(s.begin() + static_cast<std::ptrdiff_t>(a), s.end());
  const int64_t len = dims_product(s, a, s.size());
  const ParamMode scale = layer_norm_param(ctx, 1, block, len);
  const ParamMode bias = ctx.has_input(2) ? layer_norm_param(ctx, 2, block, len) : kAbsent;
  record_rownorm(ctx, dims_product(s, 0, a), len, ctx.attr_float("epsilon", 1e-5f), 1, scale, bias);
}

// ---------------------------------------------------------------- BatchNormalization

struct AffineParams {
  uint32_t n, c, inner;
};

/// Inference form: y = x * a[c] + b[c] with a = scale / sqrt(var + eps), b = B - mean * a,
/// computed on the host in double as the CPU kernel does.
void batch_norm_kernel(DeviceKernelContext& ctx) {
  require_float(ctx, 0);
  if (ctx.opset() >= 14 && ctx.attr_int("training_mode", 0) != 0) ctx.decline("training_mode=1");
  for (size_t i = 1; i < ctx.output_count(); ++i)
    if (ctx.has_output(i)) ctx.decline("the running statistics outputs (training)");
  if (ctx.attr_int("spatial", 1) == 0) ctx.decline("spatial=0");
  const std::vector<int64_t>& s = ctx.input_shape(0);
  if (s.empty()) ctx.decline("a scalar input");
  require_nonempty(ctx, s);
  const int64_t c = s.size() > 1 ? s[1] : 1, inner = s.size() > 2 ? dims_product(s, 2, s.size()) : 1;
  for (size_t i = 1; i <= 4; ++i) {
    if (!ctx.has_input(i)) ctx.decline("a missing parameter input");
    if (shape_size(ctx.input_shape(i)) != c) ctx.decline("a parameter that is not one value per channel");
    const DataType t = ctx.input_dtype(i);
    if (t != DataType::kFloat && t != DataType::kFloat16 && t != DataType::kDouble && t != DataType::kBFloat16)
      ctx.decline("a non-float parameter");
  }
  const Tensor& scale = ctx.host_input(1);
  const Tensor& bias = ctx.host_input(2);
  const Tensor& mean = ctx.host_input(3);
  const Tensor& var = ctx.host_input(4);
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  Tensor ab(DataType::kFloat, {2 * c});
  float* pab = ab.mutable_data<float>();
  for (int64_t ch = 0; ch < c; ++ch) {
    const double k = element_as_double(scale, ch) / std::sqrt(element_as_double(var, ch) + eps);
    pab[ch] = static_cast<float>(k);
    pab[c + ch] = static_cast<float>(element_as_double(bias, ch) - element_as_double(mean, ch) * k);
  }
  AffineParams p{checked_u32(ctx, shape_size(s), "the element count"), checked_u32(ctx, c, "the channel count"),
                 checked_u32(ctx, inner, "the spatial size")};
  auto x = input(ctx, 0);
  auto coeffs = std::static_pointer_cast<const VulkanTensor>(backend_of(ctx).upload(ab));
  auto y = output(ctx, 0, x->dtype(), x->shape());
  dispatch_1d(ctx, shader_for("channel_affine", x->dtype()), {x->range(), coeffs->range(), y->range()}, &p, sizeof p,
              p.n);
}

// ---------------------------------------------------------------- MaxPool, AveragePool

struct PoolParams {
  uint32_t n, op, include_pad, pad0;
  uint32_t in[3], out[3], kernel[3], stride[3], dilation[3];
  int32_t pad_begin[3], pad_end[3];
};
static_assert(sizeof(PoolParams) <= 128, "push constants");

/// The window geometry of runner/geometry.h (the CPU kernel's); declines more than 3 spatial
/// dims, the Indices output and sizes beyond the shader's 32-bit arithmetic.
template <bool Max>
void pool_kernel(DeviceKernelContext& ctx) {
  require_float(ctx, 0);
  if (Max && ctx.has_output(1)) ctx.decline("the Indices output");
  const std::vector<int64_t>& x = ctx.input_shape(0);
  if (x.size() < 3) ctx.decline("X of rank " + str(static_cast<int64_t>(x.size())) + " (needs [N, C, D...])");
  const size_t rank = x.size() - 2;
  if (rank > 3) ctx.decline(str(static_cast<int64_t>(rank)) + " spatial dims (the Vulkan kernel pools up to 3)");
  require_nonempty(ctx, x);
  const PoolGeometry g = pool_geometry(ctx, x);
  const int64_t limit = int64_t{1} << 30;
  for (size_t i = 0; i < rank; ++i) {
    if (g.out[i] < 1) ctx.decline("an empty output");
    const int64_t span = (g.kernel[i] - 1) * g.dilation[i] + 1;
    if (g.kernel[i] > limit || g.stride[i] > limit || g.dilation[i] > limit || std::abs(g.pad_begin[i]) > limit ||
        std::abs(g.pad_end[i]) > limit || span > limit || g.out[i] * g.stride[i] > limit)
      ctx.decline("window geometry beyond the shader's 32-bit arithmetic");
  }
  std::vector<int64_t> shape{x[0], x[1]};
  shape.insert(shape.end(), g.out.begin(), g.out.end());
  PoolParams p{};
  p.n = checked_u32(ctx, shape_size(shape), "the output element count");
  p.op = Max ? 0 : 1;
  p.include_pad = !Max && ctx.attr_int("count_include_pad", 0) != 0;
  const size_t lead = 3 - rank;  // 1-D and 2-D pooling: leading spatial dims of size 1
  for (size_t d = 0; d < 3; ++d) {
    const bool real = d >= lead;
    const size_t i = d - lead;
    p.in[d] = real ? static_cast<uint32_t>(g.in[i]) : 1;
    p.out[d] = real ? static_cast<uint32_t>(g.out[i]) : 1;
    p.kernel[d] = real ? static_cast<uint32_t>(g.kernel[i]) : 1;
    p.stride[d] = real ? static_cast<uint32_t>(g.stride[i]) : 1;
    p.dilation[d] = real ? static_cast<uint32_t>(g.dilation[i]) : 1;
    p.pad_begin[d] = real ? static_cast<int32_t>(g.pad_begin[i]) : 0;
    p.pad_end[d] = real ? static_cast<int32_t>(g.pad_end[i]) : 0;
  }
  // pool.comp visits the window with three nested loops, one per spatial dim, and one more
  // for the padded count.
  require_loop_bound(ctx, loop_cost(p.kernel[0], loop_cost(p.kernel[1], loop_cost(p.kernel[2]))) + loop_cost(3),
                     "the window of " + str(shape_size(g.kernel)) + " positions");
  auto xt = input(ctx, 0);
  auto y = output(ctx, 0, xt->dtype(), std::move(shape));
  dispatch_1d(ctx, shader_for("pool", xt->dtype()), {xt->range(), y->range()}, &p, sizeof p, p.n);
}

}  // namespace

void register_nn(KernelTable& t) {
  // Pooling.
  t.add("MaxPool", pool_kernel<true>);
  t.add("AveragePool", pool_kernel<false>);
  t.add("GlobalAveragePool", global_pool_kernel<ReduceOp::kMean>);
  t.add("GlobalMaxPool", global_pool_kernel<ReduceOp::kMaxNum>);
  // Normalizations.
  t.add("BatchNormalization", batch_norm_kernel);
  t.add("InstanceNormalization", instance_norm_kernel);
  t.add("LayerNormalization", layer_norm_kernel);
  t.add("LpNormalization", lp_norm_kernel);
}

}  // namespace onnxtool::runner::vulkan
