// Vulkan kernels of the elementwise ops: activations and unary math (unary.comp), arithmetic
// with numpy broadcasting (binary.comp) and the variadic Sum/Mean/Max/Min as chains of it.
#include <algorithm>
#include <cmath>

#include "runner/vulkan/backend.h"
#include "runner/vulkan/shaders/op_codes.h"

namespace onnxtool::runner::vulkan {

namespace {

// The op codes of unary.comp and binary.comp, from the list the shaders include.
enum class UnaryOp : uint32_t { UNARY_OPS(UNARY_CODE) };
enum class BinaryOp : uint32_t { BINARY_OPS(OP_CODE) };

struct UnaryParams {
  uint32_t n;
  uint32_t op;
  float alpha;
  float beta;
};

void record_unary(DeviceKernelContext& ctx, const std::shared_ptr<const VulkanTensor>& x, UnaryOp op, float alpha,
                  float beta, size_t out = 0) {
  auto y = output(ctx, out, x->dtype(), x->shape());
  UnaryParams p{checked_u32(ctx, x->size(), "the element count"), static_cast<uint32_t>(op), alpha, beta};
  dispatch_1d(ctx, shader_for("unary", x->dtype()), {x->range(), y->range()}, &p, sizeof p,
              static_cast<uint64_t>(x->size()));
}

template <UnaryOp Op>
void unary_kernel(DeviceKernelContext& ctx) {
  require_float(ctx, 0);
  float alpha = 0, beta = 0;
  switch (Op) {
    case UnaryOp::kLeakyRelu: alpha = ctx.attr_float("alpha", 0.01f); break;
    case UnaryOp::kElu: alpha = ctx.attr_float("alpha", 1.0f); break;
    case UnaryOp::kCelu: alpha = ctx.attr_float("alpha", 1.0f); break;
    case UnaryOp::kThresholdedRelu: alpha = ctx.attr_float("alpha", 1.0f); break;
    case UnaryOp::kSwish: alpha = ctx.attr_float("alpha", 1.0f); break;
    case UnaryOp::kSelu:
      alpha = ctx.attr_float("alpha", 1.67326319217681884765625f);
      beta = ctx.attr_float("gamma", 1.05070102214813232421875f);
      break;
    case UnaryOp::kHardSigmoid:
      alpha = ctx.attr_float("alpha", 0.2f);
      beta = ctx.attr_float("beta", 0.5f);
      break;
    case UnaryOp::kShrink:
      alpha = ctx.attr_float("bias", 0.0f);
      beta = ctx.attr_float("lambd", 0.5f);
      break;
    default: break;
  }
  record_unary(ctx, input(ctx, 0), Op, alpha, beta);
}

void gelu_kernel(DeviceKernelContext& ctx) {
  require_float(ctx, 0);
  const std::string approximate = ctx.attr_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh") ctx.decline("Gelu approximate='" + approximate + "'");
  record_unary(ctx, input(ctx, 0), approximate == "tanh" ? UnaryOp::kGeluTanh : UnaryOp::kGelu, 0, 0);
}

/// A scalar bound of Clip-11+ (an optional input), as float.
float clip_bound(DeviceKernelContext& ctx, size_t i, float fallback) {
  if (!ctx.has_input(i)) return fallback;
  const Tensor& t = ctx.host_input(i);
  if (t.size() != 1) ctx.decline("Clip bound " + std::to_string(i) + " is not a scalar");
  return static_cast<float>(element_as_double(t, 0));
}

void clip_kernel(DeviceKernelContext& ctx) {
  require_float(ctx, 0);
  float lo = -INFINITY, hi = INFINITY;
  if (ctx.opset() < 11) {
    lo = ctx.attr_float("min", -3.402823466e+38f);
    hi = ctx.attr_float("max", 3.402823466e+38f);
  } else {
    lo = clip_bound(ctx, 1, lo);
    hi = clip_bound(ctx, 2, hi);
  }
  record_unary(ctx, input(ctx, 0), UnaryOp::kClip, lo, hi);
}

struct BinaryParams {
  uint32_t n;
  uint32_t op;
  uint32_t rank;
  uint32_t pad;
  uint32_t dims[6];
  uint32_t a_strides[6];
  uint32_t b_strides[6];
};

/// The broadcast shape of two shapes; declines when they do not broadcast (the CPU kernel then
/// reports the error) or the rank exceeds the shaders' limit.
std::vector<int64_t> broadcast_shape(DeviceKernelContext& ctx, const std::vector<int64_t>& a,
                                     const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  if (rank > 6) ctx.decline("rank " + std::to_string(rank) + " (Vulkan kernels handle up to 6)");
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    const int64_t db = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    if (da != db && da != 1 && db != 1) ctx.decline("the shapes do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

/// Element strides of `shape` read through the broadcast `out` shape (0 along broadcast dims).
void broadcast_strides(const std::vector<int64_t>& shape, const std::vector<int64_t>& out, uint32_t* strides) {
  const size_t rank = out.size();
  int64_t stride = 1;
  for (size_t k = rank; k-- > 0;) {
    const bool present = k + shape.size() >= rank;
    const int64_t d = present ? shape[k + shape.size() - rank] : 1;
    strides[k] = d == 1 ? 0 : static_cast<uint32_t>(stride);
    stride *= d;
  }
}

std::shared_ptr<const VulkanTensor> record_binary(DeviceKernelContext& ctx,
                                                  const std::shared_ptr<const VulkanTensor>& a,
                                                  const std::shared_ptr<const VulkanTensor>& b, BinaryOp op,
                                                  size_t out, bool set) {
  std::vector<int64_t> shape = broadcast_shape(ctx, a->shape(), b->shape());
  BinaryParams p{};
  p.n = checked_u32(ctx, shape_size(shape), "the element count");
  p.op = static_cast<uint32_t>(op);
  p.rank = static_cast<uint32_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) p.dims[i] = static_cast<uint32_t>(shape[i]);
  broadcast_strides(a->shape(), shape, p.a_strides);
  broadcast_strides(b->shape(), shape, p.b_strides);
  auto c = set ? output(ctx, out, a->dtype(), std::move(shape)) : backend_of(ctx).allocate(a->dtype(), std::move(shape));
  dispatch_1d(ctx, shader_for("binary", a->dtype()), {a->range(), b->range(), c->range()}, &p, sizeof p, p.n);
  return c;
}

template <BinaryOp Op>
void binary_kernel(DeviceKernelContext& ctx) {
  // Before opset 7 broadcasting was an attribute with its own axis rule (and PRelu's slope
  // broadcast differently): those old forms run on the CPU.
  if (ctx.opset() < 7) ctx.decline("the opset " + std::to_string(ctx.opset()) + " broadcasting rule");
  require_same_float(ctx, 2);
  record_binary(ctx, input(ctx, 0), input(ctx, 1), Op, 0, true);
}

/// Sum, Mean, Max and Min of any number of inputs: a chain of binary dispatches (in input order,
/// as the CPU kernel folds them), Mean scaled at the end.
template <BinaryOp Op, bool Mean>
void variadic_kernel(DeviceKernelContext& ctx) {
  const size_t n = ctx.input_count();
  if (n == 0) ctx.decline("no inputs");
  require_same_float(ctx, n);
  auto acc = input(ctx, 0);
  if (n == 1) {
    record_unary(ctx, acc, UnaryOp::kIdentity, 0, 0);
    return;
  }
  for (size_t i = 1; i < n; ++i) {
    const bool last = i + 1 == n && !Mean;
    acc = record_binary(ctx, acc, input(ctx, i), Op, 0, last);
  }
  if (Mean) record_unary(ctx, acc, UnaryOp::kAffine, 1.0f / static_cast<float>(n), 0.0f);
}

}  // namespace

void register_elementwise(KernelTable& t) {
  // The ops unary.comp computes with unary_kernel: rows of its op-code list (which the shader
  // includes) with 1 in the third column.
#define ONNXTOOL_REGISTER_UNARY(name, code, onnx_op) \
  if (onnx_op) t.add(#name, unary_kernel<UnaryOp::k##name>);
  UNARY_OPS(ONNXTOOL_REGISTER_UNARY)
#undef ONNXTOOL_REGISTER_UNARY
  t.add("Gelu", gelu_kernel);
  t.add("Clip", clip_kernel);
  t.add("Add", binary_kernel<BinaryOp::kAdd>);
  t.add("Sub", binary_kernel<BinaryOp::kSub>);
  t.add("Mul", binary_kernel<BinaryOp::kMul>);
  t.add("Div", binary_kernel<BinaryOp::kDiv>);
  t.add("Pow", binary_kernel<BinaryOp::kPow>);
  t.add("PRelu", binary_kernel<BinaryOp::kPRelu>);
  t.add("Sum", variadic_kernel<BinaryOp::kAdd, false>);
  t.add("Mean", variadic_kernel<BinaryOp::kAdd, true>);
  t.add("Max", variadic_kernel<BinaryOp::kMax, false>);
  t.add("Min", variadic_kernel<BinaryOp::kMin, false>);
}

}  // namespace onnxtool::runner::vulkan
