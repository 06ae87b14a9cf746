// CPU kernels of onnxruntime's com.microsoft ops that its graph optimizer writes into the models
// it saves: FusedConv, FusedGemm, FusedMatMul / TransposeMatMul (the standard Conv, Gemm and
// MatMul kernels, then the fused parts), QuickGelu, Gelu, FastGelu, BiasGelu, and the dynamically
// quantized matrix products DynamicQuantizeMatMul and MatMulIntegerToFloat (MatMulInteger's
// exact int32 sums, scaled in float as onnxruntime does). Like onnxruntime's CPU kernels they
// take float32 (the quantized ones 8-bit integers); other types, and activations onnxruntime
// does not fuse, are refused naming the node.
#include <cmath>
#include <string>
#include <vector>

#include "runner/cpu/elementwise_util.h"
#include "runner/cpu/epilogue.h"
#include "runner/cpu/kernels.h"
#include "runner/cpu/tensor_util.h"
#include "runner/geometry.h"

namespace onnxtool::runner::cpu {

namespace {

constexpr std::string_view kMs = ir::kMicrosoftDomain;

void require_float(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.dtype() != DataType::kFloat)
    ctx.fail(std::string(what) + " is " + type_name(t.dtype()) + ": " + ctx.node().op_type +
             " runs on float32 only (as onnxruntime's CPU kernel)");
}

// ---------------------------------------------------------------- fused activations

/// The activation a fused node applies to its output: the Conv epilogue's ops (the same float
/// operations as the standalone kernels), or Tanh, or none.
struct Activation {
  bool tanh = false;
  Epilogue epilogue;

  /// Applies it to `rows` rows of `inner` consecutive floats, in parallel.
  void apply(float* y, int64_t rows, int64_t inner) const {
    if (tanh) {
      parallel_ranges(rows * inner, kElementwiseGrain, [&](int64_t b, int64_t e) { tanh_f32(y + b, y + b, e - b); });
      return;
    }
    if (!epilogue.ops.empty()) epilogue.apply_all(y, 1, rows, inner);
  }
};

/// An activation by name with its parameters (nullopt: the node did not give one, use the
/// ONNX op's default). Unknown names and missing parameters are refused.
Activation make_activation(const KernelContext& ctx, const std::string& name, const std::vector<std::optional<float>>& params) {
  Activation act;
  EpilogueOp op;
  const auto param = [&](size_t i, float fallback) {
    return i < params.size() && params[i] ? *params[i] : fallback;
  };
  if (name.empty()) return act;
  if (name == "Tanh") {
    act.tanh = true;
    return act;
  }
  if (name == "Relu") {
    op.kind = EpilogueOp::Kind::kRelu;
  } else if (name == "Sigmoid") {
    op.kind = EpilogueOp::Kind::kSigmoid;
  } else if (name == "LeakyRelu") {
    op.kind = EpilogueOp::Kind::kLeakyRelu;
    op.alpha = param(0, 0.01f);
  } else if (name == "HardSigmoid") {
    op.kind = EpilogueOp::Kind::kHardSigmoid;
    op.alpha = param(0, 0.2f);
    op.beta = param(1, 0.5f);
  } else if (name == "Clip") {
    op.kind = EpilogueOp::Kind::kClip;
    op.alpha = param(0, -INFINITY);
    op.beta = param(1, INFINITY);
  } else {
    ctx.fail("activation '" + name + "' is not supported (Relu, LeakyRelu, Sigmoid, HardSigmoid, Clip, Tanh are)");
  }
  act.epilogue.ops.push_back(op);
  return act;
}

/// FusedConv's activation: activation_params holds LeakyRelu's alpha, Clip's min and max,
/// HardSigmoid's alpha and beta, exactly that many (onnxruntime refuses another count).
Activation fused_conv_activation(const KernelContext& ctx) {
  const std::string name = ctx.attr_string("activation", "");
  const std::vector<float> given = ctx.attr_floats("activation_params");
  const size_t needed = name == "LeakyRelu" ? 1 : (name == "Clip" || name == "HardSigmoid") ? 2 : 0;
  if (needed > 0 && given.size() != needed)
    ctx.fail("activation " + name + " needs " + std::to_string(needed) + " activation_params, got " +
             std::to_string(given.size()));
  return make_activation(ctx, name, std::vector<std::optional<float>>(given.begin(), given.end()));
}

// FusedConv(X, W, B, Z): activation(Conv(X, W, B) + Z).
void fused_conv(KernelContext& ctx) {
  require_float(ctx, ctx.input(0), "X");
  const Activation act = fused_conv_activation(ctx);
  conv(ctx);
  Tensor& y = ctx.written_output(0);
  if (ctx.has_input(3)) {
    const Tensor& z = ctx.input(3);
    if (z.dtype() != DataType::kFloat || z.shape() != y.shape())
      ctx.fail("Z " + z.describe() + " must be float of the output's shape " + shape_string(y.shape()));
    float* py = y.mutable_data<float>();
    const float* pz = z.data<float>();
    parallel_ranges(y.size(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) py[i] += pz[i];
    });
  }
  if (y.size() > 0) act.apply(y.mutable_data<float>(), y.dim(0) * y.dim(1), y.size() / (y.dim(0) * y.dim(1)));
}

// FusedGemm(A, B, C): activation(Gemm(A, B, C)), parameters in activation_alpha / _beta.
void fused_gemm(KernelContext& ctx) {
  require_float(ctx, ctx.input(0), "A");
  const auto attr = [&ctx](const char* name) -> std::optional<float> {
    if (!ctx.has_attr(name)) return std::nullopt;
    return ctx.attr_float(name, 0);
  };
  const Activation act = make_activation(ctx, ctx.attr_string("activation", ""), {attr("activation_alpha"), attr("activation_beta")});
  gemm(ctx);
  Tensor& y = ctx.written_output(0);
  if (y.size() > 0) act.apply(y.mutable_data<float>(), y.dim(0), y.dim(1));
}

// ---------------------------------------------------------------- FusedMatMul

/// The operand FusedMatMul multiplies: with `trans_batch` the first axis becomes the row axis
/// (after the batch axes 1..rank-2), then `trans` swaps the last two axes; 1-D stays.
Tensor fused_operand(const KernelContext& ctx, const Tensor& t, bool trans, bool trans_batch) {
  const size_t r = t.rank();
  if (r < 2 || (!trans && (!trans_batch || r == 2))) return t;
  const auto strides = strides_of(t.shape());
  std::vector<size_t> perm;
  for (size_t i = trans_batch ? 1 : 0; i < (trans_batch ? r - 1 : r - 2); ++i) perm.push_back(i);
  const size_t row = trans_batch ? 0 : r - 2, col = r - 1;
  perm.push_back(trans ? col : row);
  perm.push_back(trans ? row : col);
  std::vector<int64_t> shape, in_strides;
  for (size_t p : perm) {
    shape.push_back(t.dim(p));
    in_strides.push_back(strides[p]);
  }
  return strided_tensor(ctx, t, shape, in_strides, 0, shape);
}

// FusedMatMul(A, B) = alpha * op(A) x op(B); TransposeMatMul is the same op before alpha.
void fused_matmul(KernelContext& ctx) {
  const Tensor& a0 = ctx.input(0);
  const Tensor& b0 = ctx.input(1);
  require_float(ctx, a0, "A");
  require_float(ctx, b0, "B");
  const Tensor a = fused_operand(ctx, a0, ctx.attr_int("transA", 0) != 0, ctx.attr_int("transBatchA", 0) != 0);
  const Tensor b = fused_operand(ctx, b0, ctx.attr_int("transB", 0) != 0, ctx.attr_int("transBatchB", 0) != 0);
  matmul_of(ctx, a, b);
  const float alpha = ctx.attr_float("alpha", 1.0f);
  if (alpha == 1.0f) return;
  Tensor& y = ctx.written_output(0);
  float* py = y.mutable_data<float>();
  parallel_ranges(y.size(), kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) py[i] *= alpha;
  });
}

// ---------------------------------------------------------------- Gelu family

/// Output 0 of X's shape: y[i] = f(x[i], bias[i % bias size]) (bias optional: input 1, 1-D of
/// X's last dim), float32.
template <class F>
void biased_unary(KernelContext& ctx, F f) {
  const Tensor& x = ctx.input(0);
  require_float(ctx, x, "X");
  const Tensor* bias = ctx.has_input(1) ? &ctx.input(1) : nullptr;
  int64_t len = 1;
  if (bias) {
    require_float(ctx, *bias, "bias");
    len = bias->size();
    if (bias->rank() != 1 || x.rank() == 0 || x.shape().back() != len)
      ctx.fail("bias " + bias->describe() + " must be 1-D of X's last dim, X is " + x.describe());
  }
  Tensor& y = ctx.output(0, DataType::kFloat, x.shape());
  const float* px = x.data<float>();
  const float* pb = bias ? bias->data<float>() : nullptr;
  float* py = y.mutable_data<float>();
  parallel_ranges(x.size(), kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) py[i] = f(pb ? px[i] + pb[i % len] : px[i]);
  });
}

// QuickGelu: x * sigmoid(alpha * x), alpha 1.702 by default.
void quick_gelu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  require_float(ctx, x, "X");
  const float alpha = ctx.attr_float("alpha", 1.702f);
  Tensor& y = ctx.output(0, DataType::kFloat, x.shape());
  const float* px = x.data<float>();
  float* py = y.mutable_data<float>();
  parallel_ranges(x.size(), kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) py[i] = alpha * px[i];
    sigmoid_f32(py + b, py + b, e - b);
    for (int64_t i = b; i < e; ++i) py[i] *= px[i];
  });
}

// FastGelu(X, bias): the tanh approximation of Gelu of X + bias.
void fast_gelu(KernelContext& ctx) {
  biased_unary(ctx, [](float v) {
    return 0.5f * v * (1.0f + std::tanh(0.7978845608028654f * v + 0.035677408136300125f * v * v * v));
  });
}

// BiasGelu(A, B): the exact (erf) Gelu of A + B.
void bias_gelu(KernelContext& ctx) {
  biased_unary(ctx, [](float v) { return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752440f)); });
}

// ---------------------------------------------------------------- dynamically quantized products

/// A per-tensor (one element) or per-column (n elements, 1-D) float scale as n values.
std::vector<float> column_scales(const KernelContext& ctx, const Tensor& t, int64_t n, const char* what) {
  require_float(ctx, t, what);
  if (t.size() == 1) return std::vector<float>(static_cast<size_t>(n), t.data<float>()[0]);
  if (t.rank() == 1 && t.size() == n) return std::vector<float>(t.data<float>(), t.data<float>() + n);
  ctx.fail(std::string(what) + " " + t.describe() + " must have one element or one per column of B (" + std::to_string(n) + ")");
}

/// Output 0 = float(sums) * a_scale * b_scale[column] + bias[column], the multiplier
/// a_scale * b_scale rounded to float first (onnxruntime's order).
void scale_sums(KernelContext& ctx, const Tensor& sums, float a_scale, const Tensor& b_scale, const Tensor* bias) {
  const int64_t n = sums.rank() == 0 ? 1 : sums.shape().back();
  std::vector<float> mult = column_scales(ctx, b_scale, n, "b_scale");
  for (float& m : mult) m *= a_scale;
  std::vector<float> add(static_cast<size_t>(n), 0.0f);
  if (bias) {
    require_float(ctx, *bias, "bias");
    if (bias->rank() != 1 || bias->size() != n) ctx.fail("bias " + bias->describe() + " must be 1-D of B's columns (" + std::to_string(n) + ")");
    add.assign(bias->data<float>(), bias->data<float>() + n);
  }
  Tensor& y = ctx.output(0, DataType::kFloat, sums.shape());
  const int32_t* ps = sums.data<int32_t>();
  float* py = y.mutable_data<float>();
  parallel_ranges(y.size(), kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const size_t c = static_cast<size_t>(i % n);
      py[i] = static_cast<float>(ps[i]) * mult[c] + add[c];
    }
  });
}

/// Input i, or nullptr when omitted.
const Tensor* optional_input(const KernelContext& ctx, size_t i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; }

// DynamicQuantizeMatMul(A, B, b_scale, b_zero_point, bias): A quantized to uint8 by
// DynamicQuantizeLinear's rule, the integer product with B, scaled back to float.
void dynamic_quantize_matmul(KernelContext& ctx) {
  const DynamicQuantized qa = dynamic_quantize(ctx, ctx.input(0));
  Tensor a_zero(DataType::kUInt8, {});
  a_zero.mutable_data<uint8_t>()[0] = qa.zero_point;
  const Tensor sums = matmul_integer_of(ctx, qa.values, ctx.input(1), &a_zero, optional_input(ctx, 3));
  scale_sums(ctx, sums, qa.scale, ctx.input(2), optional_input(ctx, 4));
}

// MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zero_point, b_zero_point, bias).
void matmul_integer_to_float(KernelContext& ctx) {
  const Tensor& a_scale = ctx.input(2);
  require_float(ctx, a_scale, "a_scale");
  if (a_scale.size() != 1) ctx.fail("a_scale " + a_scale.describe() + " must have one element (per-tensor A)");
  const Tensor* a_zero = optional_input(ctx, 4);
  if (a_zero && a_zero->size() != 1) ctx.fail("a_zero_point " + a_zero->describe() + " must have one element (per-tensor A)");
  const Tensor sums = matmul_integer_of(ctx, ctx.input(0), ctx.input(1), a_zero, optional_input(ctx, 5));
  scale_sums(ctx, sums, a_scale.data<float>()[0], ctx.input(3), optional_input(ctx, 6));
}

}  // namespace

void register_contrib_kernels(KernelRegistry& r) {
  const auto add = [&r](std::string_view op, KernelFn fn) { r.add(kMs, op, 1, kMaxOpset, fn); };
  add("FusedConv", fused_conv);
  add("FusedGemm", fused_gemm);
  add("FusedMatMul", fused_matmul);
  add("TransposeMatMul", fused_matmul);
  add("QuickGelu", quick_gelu);
  add("Gelu", gelu);
  add("FastGelu", fast_gelu);
  add("BiasGelu", bias_gelu);
  add("DynamicQuantizeMatMul", dynamic_quantize_matmul);
  add("MatMulIntegerToFloat", matmul_integer_to_float);
}

}  // namespace onnxtool::runner::cpu
