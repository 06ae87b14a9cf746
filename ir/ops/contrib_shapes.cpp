// Shape functions of onnxruntime's com.microsoft ops (ir/ops/microsoft_schemas.def) that the
// runner executes: the fused forms of Conv, Gemm and MatMul that onnxruntime's graph optimizer
// writes, the Gelu family, and the dynamically quantized matrix products.
#include <numeric>

#include "ir/ops/nn_shapes.h"
#include "ir/ops/shape_util.h"

namespace onnxtool::ir {
namespace {

constexpr std::string_view kMs = kMicrosoftDomain;

using shape::propagate_type;
using shape::propagate_type_and_shape;

void infer_same_as_x(InferenceContext& ctx) { propagate_type_and_shape(ctx, 0, 0); }

void infer_fused_conv(InferenceContext& ctx) { propagate_type(ctx, 0, 0, shape::conv_of(ctx, 0, 1)); }

/// The shape FusedMatMul multiplies for an operand: with `trans_batch` the first axis moves to
/// the row axis (batch axes 1..rank-2 come first), then `trans` swaps the last two; a 1-D
/// operand stays as it is.
std::optional<Shape> fused_operand(const Shape* s, bool trans, bool trans_batch) {
  if (!s) return std::nullopt;
  const size_t r = s->rank();
  if (r < 2) return *s;
  Shape out;
  const size_t first = trans_batch ? 1 : 0, last = trans_batch ? r - 1 : r - 2;
  for (size_t i = first; i < last; ++i) out.dims.push_back(s->dims[i]);
  const Dim row = s->dims[trans_batch ? 0 : r - 2], col = s->dims[r - 1];
  out.dims.push_back(trans ? col : row);
  out.dims.push_back(trans ? row : col);
  return out;
}

// FusedMatMul / TransposeMatMul(A, B): alpha * op(A) x op(B), numpy batch broadcasting.
void infer_fused_matmul(InferenceContext& ctx) {
  const auto a = fused_operand(ctx.input_shape(0), ctx.attr_int("transA", 0) != 0, ctx.attr_int("transBatchA", 0) != 0);
  const auto b = fused_operand(ctx.input_shape(1), ctx.attr_int("transB", 0) != 0, ctx.attr_int("transBatchB", 0) != 0);
  propagate_type(ctx, 0, 0, shape::matmul_of(ctx, a ? &*a : nullptr, b ? &*b : nullptr));
}

// DynamicQuantizeMatMul(A, B, b_scale, ...) -> float; MatMulIntegerToFloat(A, B, a_scale, ...)
// -> a_scale's type.
void infer_dynamic_quantize_matmul(InferenceContext& ctx) {
  ctx.set_output_tensor(0, DataType::kFloat, shape::matmul_of(ctx, ctx.input_shape(0), ctx.input_shape(1)));
}

void infer_matmul_integer_to_float(InferenceContext& ctx) {
  propagate_type(ctx, 2, 0, shape::matmul_of(ctx, ctx.input_shape(0), ctx.input_shape(1)));
}

}  // namespace

void register_contrib_shapes(SchemaRegistry& r) {
  const auto add = [&r](std::string_view op, ShapeFn fn) { r.set_shape_fn(kMs, op, 1, kMaxOpset, fn); };
  add("FusedConv", infer_fused_conv);
  add("FusedGemm", shape::infer_gemm_broadcast);
  add("FusedMatMul", infer_fused_matmul);
  add("TransposeMatMul", infer_fused_matmul);
  add("QuickGelu", infer_same_as_x);
  add("Gelu", infer_same_as_x);
  add("FastGelu", infer_same_as_x);
  add("BiasGelu", infer_same_as_x);
  add("DynamicQuantizeMatMul", infer_dynamic_quantize_matmul);
  add("MatMulIntegerToFloat", infer_matmul_integer_to_float);
}

}  // namespace onnxtool::ir
