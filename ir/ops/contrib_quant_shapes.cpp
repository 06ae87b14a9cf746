// Shape functions of onnxruntime's quantized com.microsoft ops (ir/ops/microsoft_schemas.def)
// that the runner executes (runner/cpu/contrib_quant.cpp): the QLinear forms of elementwise ops,
// activations, Concat, the average pools, Softmax and Where, QGemm, and NhwcMaxPool.
#include <optional>

#include "ir/ops/nn_shapes.h"
#include "ir/ops/shape_util.h"

namespace onnxtool::ir {
namespace {

constexpr std::string_view kMs = kMicrosoftDomain;

using shape::propagate_type;
using shape::propagate_type_and_shape;

void infer_same_as_x(InferenceContext& ctx) { propagate_type_and_shape(ctx, 0, 0); }

// QLinearAdd / QLinearMul (A, ..., B at 3, ...): A's type, A and B broadcast.
void infer_binary(InferenceContext& ctx) {
  const Shape* a = ctx.input_shape(0);
  const Shape* b = ctx.input_shape(3);
  propagate_type(ctx, 0, 0, a && b ? std::optional<Shape>(shape::broadcast(ctx, {a, b})) : std::nullopt);
}

// QLinearWhere (condition, X at 1, ..., Y at 4, ...): X's type, the three broadcast.
void infer_where(InferenceContext& ctx) {
  const Shape* c = ctx.input_shape(0);
  const Shape* x = ctx.input_shape(1);
  const Shape* y = ctx.input_shape(4);
  propagate_type(ctx, 1, 0, c && x && y ? std::optional<Shape>(shape::broadcast(ctx, {c, x, y})) : std::nullopt);
}

// QLinearConcat(Y_scale, Y_zero_point, (X, X_scale, X_zero_point)...): Y_zero_point's type; the
// inputs' shapes joined along axis.
void infer_concat(InferenceContext& ctx) {
  const size_t count = ctx.input_count();
  if (count < 5 || (count - 2) % 3 != 0)
    ctx.fail("shape.input-count", "QLinearConcat takes Y_scale, Y_zero_point and (X, X_scale, X_zero_point) triples, got " +
                                 std::to_string(count) + " inputs");
  std::optional<Shape> out;
  bool known = true;
  int64_t axis = 0;
  for (size_t i = 2; i < count && known; i += 3) {
    const Shape* s = ctx.input_shape(i);
    if (!s) {
      known = false;
      break;
    }
    if (!out) {
      if (s->rank() == 0) ctx.fail("shape.rank", "QLinearConcat cannot join scalars");
      axis = shape::normalize_axis(ctx, ctx.attr_int("axis", 0), shape::rank_of(*s));
      out = *s;
      continue;
    }
    if (s->rank() != out->rank())
      ctx.fail("shape.concat", "input " + s->to_string() + " has another rank than " + out->to_string());
    for (size_t d = 0; d < s->rank(); ++d) {
      if (static_cast<int64_t>(d) == axis) {
        out->dims[d] = shape::sum_dims(ctx, out->dims[d], s->dims[d]);
      } else {
        out->dims[d] = shape::merge(ctx, out->dims[d], s->dims[d], "shape.concat", "dim " + std::to_string(d));
      }
    }
  }
  propagate_type(ctx, 1, 0, known ? out : std::nullopt);
}

/// A pool's output dim from a static input dim (unknown otherwise) under the ONNX pooling rules:
/// explicit pads or auto_pad, floor or ceil_mode (a last window starting in the end padding is
/// dropped).
Dim window_dim(const Dim& in, int64_t k, int64_t s, int64_t dil, int64_t pb, int64_t pe, const std::string& auto_pad,
               bool ceil_mode) {
  if (!in.is_static()) return Dim{};
  const int64_t x = in.value;
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") return Dim::of((x + s - 1) / s);
  const int64_t eff = (k - 1) * dil + 1;
  if (auto_pad == "VALID") return Dim::of(x < eff ? 0 : (x - eff) / s + 1);
  const int64_t span = x + pb + pe - eff;
  if (span < 0) return Dim{};
  if (!ceil_mode) return Dim::of(span / s + 1);
  int64_t out = (span + s - 1) / s + 1;
  if ((out - 1) * s >= x + pb) --out;
  return Dim::of(out);
}

/// The pool output shape of X laid out channels last ([N, D..., C]), or nullopt.
std::optional<Shape> channels_last_pool(const InferenceContext& ctx) {
  const Shape* x = ctx.input_shape(0);
  if (!x) return std::nullopt;
  if (x->rank() < 3) ctx.fail("shape.rank", "input X " + x->to_string() + " needs rank >= 3 (N, spatial axes, C)");
  const size_t n = x->rank() - 2;
  const auto list = [&](const char* name, int64_t fallback, size_t count) {
    auto v = ctx.attr_ints(name);
    if (!v) return std::vector<int64_t>(count, fallback);
    if (v->size() != count)
      ctx.fail("shape.attribute", std::string(name) + " has " + std::to_string(v->size()) + " values, expected " +
                                      std::to_string(count));
    return *v;
  };
  const std::vector<int64_t> kernel = list("kernel_shape", 1, n), strides = list("strides", 1, n),
                             dil = list("dilations", 1, n), pads = list("pads", 0, 2 * n);
  for (size_t i = 0; i < n; ++i)
    if (kernel[i] < 1 || strides[i] < 1 || dil[i] < 1)
      ctx.fail("shape.attribute", "kernel_shape, strides and dilations must be positive");
  std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  const bool ceil_mode = ctx.attr_int("ceil_mode", 0) != 0;
  Shape out;
  out.dims.push_back(x->dims[0]);
  for (size_t i = 0; i < n; ++i)
    out.dims.push_back(window_dim(x->dims[i + 1], kernel[i], strides[i], dil[i], pads[i], pads[i + n], auto_pad, ceil_mode));
  out.dims.push_back(x->dims.back());
  return out;
}

// QLinearAveragePool: AveragePool's shape, channels first or (channels_last) last.
void infer_average_pool(InferenceContext& ctx) {
  if (ctx.attr_int("channels_last", 0) != 0) {
    propagate_type(ctx, 0, 0, channels_last_pool(ctx));
    return;
  }
  shape::pool_like(ctx);
}

void infer_nhwc_max_pool(InferenceContext& ctx) { propagate_type(ctx, 0, 0, channels_last_pool(ctx)); }

// QLinearGlobalAveragePool: every spatial dim becomes 1, channels first or last.
void infer_global_average_pool(InferenceContext& ctx) {
  if (ctx.attr_int("channels_last", 0) == 0) {
    shape::global_pool_like(ctx);
    return;
  }
  const Shape* x = ctx.input_shape(0);
  if (!x) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  if (x->rank() < 3) ctx.fail("shape.rank", "input X " + x->to_string() + " needs rank >= 3");
  Shape out = *x;
  for (size_t i = 1; i + 1 < out.rank(); ++i) out.dims[i] = Dim::of(1);
  propagate_type(ctx, 0, 0, std::move(out));
}

/// A 2-D operand's shape after an optional transpose, or nullopt.
std::optional<Shape> gemm_operand(const InferenceContext& ctx, size_t i, bool trans) {
  const Shape* s = ctx.input_shape(i);
  if (!s) return std::nullopt;
  if (s->rank() != 2) ctx.fail("shape.rank", "QGemm operand " + s->to_string() + " must be 2-D");
  Shape out = *s;
  if (trans) std::swap(out.dims[0], out.dims[1]);
  return out;
}

// QGemm: [M, N] of y_zero_point's type (requantized) or float.
void infer_qgemm(InferenceContext& ctx) {
  const auto a = gemm_operand(ctx, 0, ctx.attr_int("transA", 0) != 0);
  const auto b = gemm_operand(ctx, 3, ctx.attr_int("transB", 0) != 0);
  std::optional<Shape> out;
  if (a && b) {
    shape::merge(ctx, a->dims[1], b->dims[0], "shape.matmul", "inner dims");
    out = shape::shape_of_dims({a->dims[0], b->dims[1]});
  }
  if (ctx.has_input(8)) {
    propagate_type(ctx, 8, 0, out);
  } else {
    ctx.set_output_tensor(0, DataType::kFloat, out);
  }
}

}  // namespace

void register_contrib_quant_shapes(SchemaRegistry& r) {
  const auto add = [&r](std::string_view op, ShapeFn fn) { r.set_shape_fn(kMs, op, 1, kMaxOpset, fn); };
  add("QLinearAdd", infer_binary);
  add("QLinearMul", infer_binary);
  add("QLinearSigmoid", infer_same_as_x);
  add("QLinearLeakyRelu", infer_same_as_x);
  add("QLinearConcat", infer_concat);
  add("QLinearGlobalAveragePool", infer_global_average_pool);
  add("QLinearAveragePool", infer_average_pool);
  add("QLinearSoftmax", infer_same_as_x);
  add("QLinearWhere", infer_where);
  add("QGemm", infer_qgemm);
  add("NhwcMaxPool", infer_nhwc_max_pool);
}

}  // namespace onnxtool::ir
