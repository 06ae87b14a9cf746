// Vulkan kernels of Reduce* and the Softmax family (Softmax, LogSoftmax, Hardmax), and the
// per-row machinery of reduce.h, which nn.cpp's global pooling, LpNormalization and row
// normalizations use too.
//
// A reduced output element or a softmax group runs one workgroup with a shared-memory tree
// reduction (shaders/rows.glsl), whose fixed order makes every run give the same bytes. The
// semantics are those of runner/cpu/{reduce,elementwise}.cpp. The geometry they share
// (runner/geometry.h: axes, the dim groups of a reduction, Softmax's groups) fails with their
// line, in their order of checks; whatever else those kernels would reject, and the forms not
// implemented here, are declined so that the CPU kernel runs (and reports).
#include "runner/vulkan/reduce.h"

#include <algorithm>

#include "runner/geometry.h"

namespace onnxtool::runner::vulkan {

namespace {

/// ROW_MAX_LOCAL in shaders/rows.glsl: the size of the shared arrays of the per-row shaders.
constexpr uint32_t kRowMaxLocal = 256;
constexpr size_t kMaxRank = 6;  // MAX_RANK in shaders/common.glsl

}  // namespace

// ---------------------------------------------------------------- per-row dispatches (reduce.h)

std::string str(int64_t v) { return std::to_string(v); }

void require_nonempty(DeviceKernelContext& ctx, const std::vector<int64_t>& shape) {
  const int64_t n = shape_size(shape);
  if (n == 0) ctx.decline("an empty tensor");
  checked_u32(ctx, n, "the element count");
}

uint32_t row_local(DeviceKernelContext& ctx, int64_t len) {
  const PhysicalDevice& phys = backend_of(ctx).device().physical();
  const uint32_t cap = std::min(kRowMaxLocal, phys.max_workgroup_invocations);
  uint32_t local = 1;
  while (local * 2 <= cap) local *= 2;
  const uint32_t floor = std::max<uint32_t>(1, backend_of(ctx).info().subgroup_size);
  while (local / 2 >= floor && static_cast<int64_t>(local / 2) >= len) local /= 2;
  return local;
}

void dispatch_rows(DeviceKernelContext& ctx, const std::string& shader, const std::vector<BufferRange>& buffers,
                   const void* push, uint32_t push_bytes, int64_t rows, int64_t len) {
  if (rows <= 0) return;
  Device& dev = backend_of(ctx).device();
  const uint64_t max_x = dev.physical().max_workgroup_count[0];
  const uint64_t gx = std::min<uint64_t>(static_cast<uint64_t>(rows), max_x);
  const uint64_t gy = (static_cast<uint64_t>(rows) + gx - 1) / gx;
  if (gy > dev.physical().max_workgroup_count[1]) ctx.decline("the tensor needs more workgroups than one dispatch has");
  const Pipeline& p = dev.pipeline(shader, static_cast<uint32_t>(buffers.size()), row_local(ctx, len));
  dev.dispatch(p, buffers, push, push_bytes, static_cast<uint32_t>(gx), static_cast<uint32_t>(gy));
}

uint64_t tree_steps(uint32_t local) {
  uint64_t n = 0;
  while ((uint32_t{1} << n) < local) ++n;
  return n;
}

// ---------------------------------------------------------------- Reduce*

namespace {

struct ReduceParams {
  uint32_t outputs, red, op, kept_rank, red_rank;
  uint32_t kept_dims[kMaxRank], kept_strides[kMaxRank], red_dims[kMaxRank], red_strides[kMaxRank];
  uint32_t stage, chunk, chunks;
};
static_assert(sizeof(ReduceParams) <= 128, "push constants");

// The stages of reduce.comp.
enum ReduceStage : uint32_t { kWhole = 0, kPartial = 1, kCombine = 2 };

/// The loop iterations of one reduce.comp invocation: the kept dims' index, then one loop (two
/// for LogSumExp) over `trips` elements, each through the reduced dims' index, and the tree.
uint64_t reduce_cost(ReduceOp op, uint32_t kept_rank, uint32_t red_rank, uint64_t trips, uint32_t local) {
  const uint64_t loops = op == ReduceOp::kLogSumExp ? 2 : 1;
  return loop_cost(kept_rank) + loops * (loop_cost(trips, loop_cost(red_rank)) + loop_cost(tree_steps(local)));
}

}  // namespace

void record_reduce(DeviceKernelContext& ctx, const std::vector<bool>& reduced, ReduceOp op,
                   std::vector<int64_t> out_shape) {
  const std::vector<int64_t>& shape = ctx.input_shape(0);
  require_nonempty(ctx, shape);
  // The strides of a merged group are those of its last dim.
  const ReduceGroups groups = merge_reduce_dims(shape, reduced);
  ReduceParams p{};
  p.op = static_cast<uint32_t>(op);
  int64_t stride = 1, outputs = 1, red = 1;
  std::vector<std::pair<int64_t, int64_t>> kept_groups, red_groups;  // (dim, stride), innermost first
  for (size_t g = groups.dims.size(); g-- > 0;) {
    const int64_t dim = groups.dims[g];
    (groups.reduced[g] ? red_groups : kept_groups).push_back({dim, stride});
    (groups.reduced[g] ? red : outputs) *= dim;
    stride *= dim;
  }
  if (kept_groups.size() > kMaxRank || red_groups.size() > kMaxRank)
    ctx.decline("more than " + str(kMaxRank) + " separate groups of kept or reduced dims");
  p.kept_rank = static_cast<uint32_t>(kept_groups.size());
  p.red_rank = static_cast<uint32_t>(red_groups.size());
  for (size_t k = 0; k < kept_groups.size(); ++k) {
    p.kept_dims[p.kept_rank - 1 - k] = static_cast<uint32_t>(kept_groups[k].first);
    p.kept_strides[p.kept_rank - 1 - k] = static_cast<uint32_t>(kept_groups[k].second);
  }
  for (size_t k = 0; k < red_groups.size(); ++k) {
    p.red_dims[p.red_rank - 1 - k] = static_cast<uint32_t>(red_groups[k].first);
    p.red_strides[p.red_rank - 1 - k] = static_cast<uint32_t>(red_groups[k].second);
  }
  p.outputs = static_cast<uint32_t>(outputs);
  p.red = static_cast<uint32_t>(red);
  p.stage = kWhole;
  p.chunk = p.red;
  p.chunks = 1;
  const uint32_t local = row_local(ctx, red);
  const uint64_t trips = (static_cast<uint64_t>(red) + local - 1) / local;
  const std::string shader = shader_for("reduce", ctx.input_dtype(0));
  if (reduce_cost(op, p.kept_rank, p.red_rank, trips, local) <= kMaxLoopIterations) {
    auto x = input(ctx, 0);
    auto y = output(ctx, 0, x->dtype(), std::move(out_shape));
    dispatch_rows(ctx, shader, {x->range(), y->range(), y->range()}, &p, sizeof p, outputs, red);
    return;
  }
  // Too long for one workgroup's loops: each output's elements in chunks of as many trips as
  // fit, one workgroup each, then a second dispatch over each output's partial results.
  uint64_t fit = 1;
  while (reduce_cost(op, p.kept_rank, p.red_rank, fit * 2, local) <= kMaxLoopIterations) fit *= 2;
  const uint64_t chunk = fit * local, chunks = (static_cast<uint64_t>(red) + chunk - 1) / chunk;
  const uint32_t combine_local = row_local(ctx, static_cast<int64_t>(chunks));
  const uint64_t combine_trips = (chunks + combine_local - 1) / combine_local;
  require_loop_bound(ctx, reduce_cost(op, 1, 1, combine_trips, combine_local),
                     "the reduction of " + str(red) + " elements in two passes");
  checked_u32(ctx, outputs * static_cast<int64_t>(chunks), "the count of partial results");
  ReduceParams partial = p;
  partial.stage = kPartial;
  partial.chunk = static_cast<uint32_t>(chunk);
  partial.chunks = static_cast<uint32_t>(chunks);
  partial.outputs = static_cast<uint32_t>(outputs * static_cast<int64_t>(chunks));
  // The partials are [outputs, chunks]: a contiguous reduction of `chunks` into each output.
  ReduceParams combine{};
  combine.outputs = p.outputs;
  combine.red = partial.chunks;
  combine.op = p.op;
  combine.kept_rank = 1;
  combine.kept_dims[0] = p.outputs;
  combine.kept_strides[0] = partial.chunks;
  combine.red_rank = 1;
  combine.red_dims[0] = partial.chunks;
  combine.red_strides[0] = 1;
  combine.stage = kCombine;
  combine.chunk = partial.chunks;
  combine.chunks = 1;
  auto x = input(ctx, 0);
  auto part = backend_of(ctx).allocate(DataType::kFloat, {outputs * static_cast<int64_t>(chunks)});
  auto y = output(ctx, 0, x->dtype(), std::move(out_shape));
  dispatch_rows(ctx, shader, {x->range(), y->range(), part->range()}, &partial, sizeof partial, partial.outputs, red);
  dispatch_rows(ctx, shader, {x->range(), y->range(), part->range()}, &combine, sizeof combine, outputs,
                static_cast<int64_t>(chunks));
}

namespace {

/// ReduceX: `axes` an attribute before opset `AxesInputSince`, an optional input from it on.
template <ReduceOp Op, int AxesInputSince>
void reduce_kernel(DeviceKernelContext& ctx) {
  require_float(ctx, 0);
  const std::vector<int64_t>& shape = ctx.input_shape(0);
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  const bool noop = ctx.opset() >= AxesInputSince && ctx.attr_int("noop_with_empty_axes", 0) != 0;
  std::vector<int64_t> axes;
  if (ctx.opset() < AxesInputSince) axes = ctx.attr_ints("axes");
  else if (ctx.has_input(1)) axes = read_int_list(ctx, ctx.host_input(1), "axes");
  ReduceAxes r = resolve_reduce_axes(ctx, shape, axes, keepdims, noop);
  if (r.noop) {
    ctx.set_output(0, ctx.input(0));  // the identity: the same device tensor
    return;
  }
  record_reduce(ctx, r.reduced, Op, std::move(r.out_shape));
}

}  // namespace

// ---------------------------------------------------------------- Softmax family

namespace {

struct AxisParams {
  uint32_t groups, n, inner, op;
};

}  // namespace

void record_axis(DeviceKernelContext& ctx, AxisOp op, int64_t outer, int64_t n, int64_t inner) {
  require_nonempty(ctx, ctx.input_shape(0));
  AxisParams p{checked_u32(ctx, outer * inner, "the group count"), checked_u32(ctx, n, "the group size"),
               checked_u32(ctx, inner, "the stride"), static_cast<uint32_t>(op)};
  // axis.comp passes over a group's elements three times (Softmax, LogSoftmax) or twice, with a
  // tree reduction after each pass but the last.
  const uint32_t local = row_local(ctx, n);
  const uint64_t trips = (static_cast<uint64_t>(n) + local - 1) / local;
  const uint64_t passes = op == AxisOp::kSoftmax || op == AxisOp::kLogSoftmax ? 3 : 2;
  require_loop_bound(ctx, passes * loop_cost(trips) + (passes - 1) * loop_cost(tree_steps(local)),
                     "a group of " + str(n) + " elements");
  auto x = input(ctx, 0);
  auto y = output(ctx, 0, x->dtype(), x->shape());
  dispatch_rows(ctx, shader_for("axis", x->dtype()), {x->range(), y->range()}, &p, sizeof p, outer * inner, n);
}

namespace {

/// Softmax, LogSoftmax, Hardmax over the groups of runner/geometry.h's softmax_geometry.
template <AxisOp Op>
void softmax_kernel(DeviceKernelContext& ctx) {
  require_float(ctx, 0);
  const SoftmaxGeometry g = softmax_geometry(ctx, ctx.opset(), ctx.input_shape(0));
  record_axis(ctx, Op, g.outer, g.n, g.inner);
}

}  // namespace

void register_reduce(KernelTable& t) {
  // The Softmax family (axis.comp).
  t.add("Softmax", softmax_kernel<AxisOp::kSoftmax>);
  t.add("LogSoftmax", softmax_kernel<AxisOp::kLogSoftmax>);
  t.add("Hardmax", softmax_kernel<AxisOp::kHardmax>);
  // Reduce* (reduce.comp): the rows of ONNXTOOL_REDUCE_OPS (runner/kernel.h).
#define ONNXTOOL_ADD_REDUCE(op, acc, axes_input) t.add("", #op, 1, kMaxOpset, reduce_kernel<ReduceOp::k##acc, axes_input>);
  ONNXTOOL_REDUCE_OPS(ONNXTOOL_ADD_REDUCE)
#undef ONNXTOOL_ADD_REDUCE
}

}  // namespace onnxtool::runner::vulkan
