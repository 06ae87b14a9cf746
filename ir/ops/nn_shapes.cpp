// Shape functions of neural-network ops: matrix products and Det, convolutions and pooling,
// normalizations, Einsum, recurrent layers, attention and image sampling.
#include <algorithm>
#include <map>

#include "ir/ops/nn_shapes.h"
#include "ir/ops/shape_util.h"

namespace onnxtool::ir {
namespace {

using shape::affine_dim;
using shape::dim_at;
using shape::merge;
using shape::shape_of_rank;
using shape::propagate_type;
using shape::propagate_type_and_shape;

std::string str(int64_t v) { return std::to_string(v); }

/// Merges dims that must agree, without ever failing (for dims whose equality the spec implies
/// but runtimes do not check): the more specific one, or `a` on a static conflict.
Dim prefer_known(const Dim& a, const Dim& b) {
  if (a.is_static()) return a;
  if (b.is_static()) return b;
  if (a.kind == Dim::Kind::kParam) return a;
  return b;
}

// ---------------------------------------------------------------- matrix products

/// numpy matmul: 1-D operands are promoted (a row vector on the left, a column on the right,
/// the added axis removed afterwards), batch axes broadcast, inner dims must match.
std::optional<Shape> matmul_shape(const InferenceContext& ctx, size_t a_index, size_t b_index) {
  return shape::matmul_of(ctx, ctx.input_shape(a_index), ctx.input_shape(b_index));
}

}  // namespace

std::optional<Shape> shape::matmul_of(const InferenceContext& ctx, const Shape* a, const Shape* b) {
  if (a && a->rank() == 0) ctx.fail("shape.rank", "MatMul operand A is a scalar (rank 0)");
  if (b && b->rank() == 0) ctx.fail("shape.rank", "MatMul operand B is a scalar (rank 0)");
  if (!a || !b) return std::nullopt;
  Shape sa = *a, sb = *b;
  if (sa.rank() == 1) sa.dims.insert(sa.dims.begin(), Dim::of(1));
  if (sb.rank() == 1) sb.dims.push_back(Dim::of(1));
  const Dim& ka = sa.dims[sa.rank() - 1];
  const Dim& kb = sb.dims[sb.rank() - 2];
  if (ka.is_static() && kb.is_static() && ka.value != kb.value)
    ctx.fail("shape.matmul", "inner dimensions differ: A " + a->to_string() + " has " + str(ka.value) +
                                 " columns, B " + b->to_string() + " has " + str(kb.value) + " rows");
  Shape batch_a, batch_b;
  batch_a.dims.assign(sa.dims.begin(), sa.dims.end() - 2);
  batch_b.dims.assign(sb.dims.begin(), sb.dims.end() - 2);
  Shape out = shape::broadcast(ctx, {&batch_a, &batch_b});
  if (a->rank() > 1) out.dims.push_back(sa.dims[sa.rank() - 2]);
  if (b->rank() > 1) out.dims.push_back(sb.dims[sb.rank() - 1]);
  return out;
}

namespace {

void infer_matmul(InferenceContext& ctx) { propagate_type(ctx, 0, 0, matmul_shape(ctx, 0, 1)); }

void infer_matmul_integer(InferenceContext& ctx) {
  ctx.set_output_tensor(0, DataType::kInt32, matmul_shape(ctx, 0, 1));
}

// QLinearMatMul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point).
void infer_qlinear_matmul(InferenceContext& ctx) { propagate_type(ctx, 7, 0, matmul_shape(ctx, 0, 3)); }

// Gemm: Y(M, N) = alpha * op(A)(M, K) * op(B)(K, N) + beta * C, C unidirectionally broadcast
// (before opset 7 only with broadcast=1; without it C is (M, N) itself).
/// Gemm's shape; `legacy_c`: C broadcasts only with broadcast=1 (before opset 7).
void gemm_shape(InferenceContext& ctx, bool legacy_c) {
  const Shape* a = shape_of_rank(ctx, 0, 2, "Gemm input A");
  const Shape* b = shape_of_rank(ctx, 1, 2, "Gemm input B");
  const bool trans_a = ctx.attr_int("transA", 0) != 0;
  const bool trans_b = ctx.attr_int("transB", 0) != 0;
  Dim m = dim_at(a, trans_a ? 1 : 0), ka = dim_at(a, trans_a ? 0 : 1);
  Dim kb = dim_at(b, trans_b ? 1 : 0), n = dim_at(b, trans_b ? 0 : 1);
  if (ka.is_static() && kb.is_static() && ka.value != kb.value)
    ctx.fail("shape.matmul", "Gemm inner dimensions differ: op(A) has " + str(ka.value) +
                                 " columns, op(B) has " + str(kb.value) + " rows");
  if (const Shape* c = ctx.has_input(2) ? ctx.input_shape(2) : nullptr) {
    if (c->rank() > 2) ctx.fail("shape.rank", "Gemm input C has rank " + str(static_cast<int64_t>(c->rank())) + " > 2");
    if (legacy_c && ctx.attr_int("broadcast", 0) == 0) {
      if (c->rank() != 2)
        ctx.fail("shape.broadcast", "Gemm input C " + c->to_string() +
                                        " must be (M, N): before opset 7 it broadcasts only with broadcast=1");
      m = merge(ctx, m, c->dims[0], "shape.broadcast", "Gemm input C without broadcast=1, dim 0 (M)");
      n = merge(ctx, n, c->dims[1], "shape.broadcast", "Gemm input C without broadcast=1, dim 1 (N)");
    }
    Dim* target[2] = {&m, &n};
    for (size_t i = 0; i < c->rank(); ++i) {
      const Dim& cd = c->dims[i];
      Dim& td = *target[2 - c->rank() + i];
      if (cd.is_static() && td.is_static() && cd.value != 1 && cd.value != td.value)
        ctx.fail("shape.broadcast", "Gemm input C " + c->to_string() + " does not broadcast to (M, N): " +
                                        str(cd.value) + " vs " + str(td.value));
      // C broadcasts onto Y, never the reverse: a static C dim other than 1 is Y's dim.
      if (!td.is_static() && cd.is_static() && cd.value != 1) td = cd;
    }
  }
  if (!a && !b) {
    propagate_type(ctx, 0, 0, shape::unknown_shape(2));
    return;
  }
  Shape out;
  out.dims = {m, n};
  propagate_type(ctx, 0, 0, std::move(out));
}

void infer_gemm(InferenceContext& ctx) { gemm_shape(ctx, ctx.opset() < 7); }

}  // namespace

void shape::infer_gemm_broadcast(InferenceContext& ctx) { gemm_shape(ctx, false); }

namespace {

void infer_det(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  if (!in) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  if (in->rank() < 2) ctx.fail("shape.rank", "Det needs rank >= 2, got " + in->to_string());
  shape::merge(ctx, in->dims[in->rank() - 2], in->dims[in->rank() - 1], "shape.det", "Det needs square matrices");
  Shape out = *in;
  out.dims.resize(in->rank() - 2);
  propagate_type(ctx, 0, 0, std::move(out));
}

// ---------------------------------------------------------------- sliding windows

/// The geometry of a Conv/Pool-style op over `n` spatial axes, read from its attributes.
struct Window {
  size_t n = 0;
  std::vector<std::optional<int64_t>> kernel;  // per axis; nullopt when unknown
  std::vector<int64_t> strides, dilations, pads;  // pads: n begins then n ends
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;
  bool valid = true;  // false when an attribute value makes the sizes unknowable
};

/// Reads kernel_shape/strides/dilations/pads/auto_pad. `weight_kernel` (may be null) holds the
/// kernel dims from a weight tensor; `rule` names the family in failures.
Window read_window(const InferenceContext& ctx, size_t n, const std::vector<Dim>* weight_kernel,
                   const std::string& rule) {
  Window w;
  w.n = n;
  auto list = [&](const char* name, int64_t fallback, size_t count) {
    auto v = ctx.attr_ints(name);
    if (!v) return std::vector<int64_t>(count, fallback);
    if (v->size() != count)
      ctx.fail("shape.attribute", std::string(name) + " has " + str(static_cast<int64_t>(v->size())) +
                                      " values, expected " + str(static_cast<int64_t>(count)) + " for " +
                                      str(static_cast<int64_t>(n)) + " spatial axes");
    return *v;
  };
  w.kernel.assign(n, std::nullopt);
  if (auto ks = ctx.attr_ints("kernel_shape")) {
    if (ks->size() != n)
      ctx.fail(rule, "kernel_shape has " + str(static_cast<int64_t>(ks->size())) + " values but the input has " +
                         str(static_cast<int64_t>(n)) + " spatial axes");
    for (size_t i = 0; i < n; ++i) {
      if ((*ks)[i] < 1) ctx.fail("shape.attribute", "kernel_shape values must be positive, got " + str((*ks)[i]));
      w.kernel[i] = (*ks)[i];
    }
  }
  if (weight_kernel) {
    for (size_t i = 0; i < n && i < weight_kernel->size(); ++i) {
      const Dim& d = (*weight_kernel)[i];
      if (!d.is_static()) continue;
      if (w.kernel[i] && *w.kernel[i] != d.value)
        ctx.fail(rule, "kernel_shape " + str(*w.kernel[i]) + " differs from the weight's kernel size " +
                           str(d.value) + " on spatial axis " + str(static_cast<int64_t>(i)));
      w.kernel[i] = d.value;
    }
  }
  w.strides = list("strides", 1, n);
  w.dilations = list("dilations", 1, n);
  w.pads = list("pads", 0, 2 * n);
  for (int64_t s : w.strides)
    if (s < 1) ctx.fail("shape.attribute", "strides must be positive, got " + str(s));
  for (int64_t d : w.dilations)
    if (d < 1) ctx.fail("shape.attribute", "dilations must be positive, got " + str(d));
  w.auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  if (w.auto_pad.empty()) w.auto_pad = "NOTSET";
  if (w.auto_pad != "NOTSET" && w.auto_pad != "VALID" && w.auto_pad != "SAME_UPPER" &&
      w.auto_pad != "SAME_LOWER")
    w.valid = false;
  w.ceil_mode = ctx.attr_int("ceil_mode", 0) != 0;
  return w;
}

/// Output size of a convolution or pooling window along spatial axis `i`.
Dim window_output(const InferenceContext& ctx, const Dim& in, const Window& w, size_t i,
                  const std::string& rule) {
  if (!w.valid) return Dim{};
  const int64_t s = w.strides[i];
  if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") return affine_dim(ctx, in, 1, s - 1, s);
  if (!w.kernel[i]) return Dim{};
  int64_t eff;  // dilated kernel extent
  if (__builtin_mul_overflow(*w.kernel[i] - 1, w.dilations[i], &eff) || __builtin_add_overflow(eff, 1, &eff))
    ctx.fail("shape.overflow", "dilated kernel size overflows int64");
  int64_t pb = 0, pe = 0;
  if (w.auto_pad == "NOTSET") {
    pb = w.pads[i];
    pe = w.pads[i + w.n];
  }
  int64_t padded_extra;  // pb + pe - eff
  if (__builtin_add_overflow(pb, pe, &padded_extra) || __builtin_sub_overflow(padded_extra, eff, &padded_extra))
    ctx.fail("shape.overflow", "padding overflows int64");
  if (in.is_static() && in.value > 0 && in.value + padded_extra < 0)
    ctx.fail(rule, "the dilated kernel (" + str(eff) + ") is larger than the padded input (" +
                       str(in.value + pb + pe) + ") on spatial axis " + str(static_cast<int64_t>(i)));
  if (in.is_static() && in.value == 0) return Dim::of(0);
  // VALID ignores ceil_mode: ceil((in - eff + 1) / s) == floor((in - eff) / s) + 1.
  if (!w.ceil_mode || w.auto_pad == "VALID") return affine_dim(ctx, in, 1, padded_extra + s, s);
  // ceil((in + pb + pe - eff) / s) + 1, minus a last window that would start in the end padding.
  Dim out = affine_dim(ctx, in, 1, padded_extra + 2 * s - 1, s);
  if (in.is_static() && out.is_static()) {
    if ((out.value - 1) * s >= in.value + pb) out.value -= 1;
    return out;
  }
  // Symbolic: the last window can start in the padding only when s + pe > eff.
  return s + pe <= eff ? out : Dim{};
}

/// The number of spatial axes of a Conv/Pool-style op: from X's rank, else W's rank, else the
/// kernel_shape attribute; nullopt when nothing tells.
std::optional<size_t> spatial_rank(const InferenceContext& ctx, const Shape* x, const Shape* w,
                                   const std::string& rule) {
  if (x && x->rank() < 3)
    ctx.fail("shape.rank", "input X " + x->to_string() + " needs rank >= 3 (N, C and spatial axes)");
  if (x && w && x->rank() != w->rank())
    ctx.fail(rule, "weight W " + w->to_string() + " has " + str(static_cast<int64_t>(w->rank()) - 2) +
                       " kernel axes but X " + x->to_string() + " has " +
                       str(static_cast<int64_t>(x->rank()) - 2) + " spatial axes");
  if (w && w->rank() < 3) ctx.fail("shape.rank", "weight W " + w->to_string() + " needs rank >= 3");
  if (x) return x->rank() - 2;
  if (w) return w->rank() - 2;
  if (auto ks = ctx.attr_ints("kernel_shape")) return ks->size();
  return std::nullopt;
}

std::optional<Shape> conv_shape(const InferenceContext& ctx, size_t x_index, size_t w_index);

}  // namespace

std::optional<Shape> shape::conv_of(const InferenceContext& ctx, size_t x_index, size_t w_index) {
  return conv_shape(ctx, x_index, w_index);
}

namespace {

/// Output shape of a convolution: X (N, C, D...), W (M, C/group, k...) -> (N, M, O...).
std::optional<Shape> conv_shape(const InferenceContext& ctx, size_t x_index, size_t w_index) {
  static const std::string rule = "shape.conv";
  const Shape* x = ctx.input_shape(x_index);
  const Shape* w = ctx.input_shape(w_index);
  auto n = spatial_rank(ctx, x, w, rule);
  if (!n) return std::nullopt;
  const int64_t group = ctx.attr_int("group", 1);
  if (group < 1) ctx.fail("shape.attribute", "group must be positive, got " + str(group));
  if (x && w) {
    const Dim& c = x->dims[1];
    const Dim& wc = w->dims[1];
    if (c.is_static() && wc.is_static() && c.value != wc.value * group)
      ctx.fail(rule, "X has " + str(c.value) + " channels but W " + w->to_string() + " with group " +
                         str(group) + " expects " + str(wc.value * group));
  }
  std::vector<Dim> wk;
  if (w) wk.assign(w->dims.begin() + 2, w->dims.end());
  Window win = read_window(ctx, *n, w ? &wk : nullptr, rule);
  Shape out;
  out.dims.push_back(dim_at(x, 0));
  out.dims.push_back(dim_at(w, 0));
  for (size_t i = 0; i < *n; ++i) out.dims.push_back(window_output(ctx, dim_at(x, i + 2), win, i, rule));
  return out;
}

void infer_conv(InferenceContext& ctx) { propagate_type(ctx, 0, 0, conv_shape(ctx, 0, 1)); }

// ConvInteger(x, w, x_zero_point, w_zero_point) -> int32.
void infer_conv_integer(InferenceContext& ctx) {
  ctx.set_output_tensor(0, DataType::kInt32, conv_shape(ctx, 0, 1));
}

// QLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B).
void infer_qlinear_conv(InferenceContext& ctx) { propagate_type(ctx, 7, 0, conv_shape(ctx, 0, 3)); }

// DeformConv(X, W, offset, B, mask): a convolution whose output size the offsets also carry.
void infer_deform_conv(InferenceContext& ctx) {
  auto out = conv_shape(ctx, 0, 1);
  const Shape* offset = ctx.input_shape(2);
  if (out && offset && offset->rank() == out->rank()) {
    out->dims[0] = prefer_known(out->dims[0], offset->dims[0]);
    for (size_t i = 2; i < out->rank(); ++i) out->dims[i] = prefer_known(out->dims[i], offset->dims[i]);
  }
  propagate_type(ctx, 0, 0, std::move(out));
}

// ConvTranspose: X (N, C, D...), W (C, M/group, k...) -> (N, M, O...).
void infer_conv_transpose(InferenceContext& ctx) {
  static const std::string rule = "shape.conv";
  const Shape* x = ctx.input_shape(0);
  const Shape* w = ctx.input_shape(1);
  auto n = spatial_rank(ctx, x, w, rule);
  if (!n) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  const int64_t group = ctx.attr_int("group", 1);
  if (group < 1) ctx.fail("shape.attribute", "group must be positive, got " + str(group));
  if (x && w && x->dims[1].is_static() && w->dims[0].is_static() && x->dims[1].value != w->dims[0].value)
    ctx.fail(rule, "X has " + str(x->dims[1].value) + " channels but ConvTranspose weight W " +
                       w->to_string() + " expects " + str(w->dims[0].value));
  std::vector<Dim> wk;
  if (w) wk.assign(w->dims.begin() + 2, w->dims.end());
  Window win = read_window(ctx, *n, w ? &wk : nullptr, rule);
  std::vector<int64_t> out_pad(*n, 0);
  if (auto op = ctx.attr_ints("output_padding")) {
    if (op->size() != *n)
      ctx.fail("shape.attribute", "output_padding has " + str(static_cast<int64_t>(op->size())) +
                                      " values, expected " + str(static_cast<int64_t>(*n)));
    out_pad = *op;
  }
  auto out_shape = ctx.attr_ints("output_shape");
  if (out_shape && out_shape->size() == *n + 2) out_shape->erase(out_shape->begin(), out_shape->begin() + 2);
  if (out_shape && out_shape->size() != *n)
    ctx.fail("shape.attribute", "output_shape has " + str(static_cast<int64_t>(out_shape->size())) +
                                    " values for " + str(static_cast<int64_t>(*n)) + " spatial axes");
  Shape out;
  out.dims.push_back(dim_at(x, 0));
  out.dims.push_back(shape::mul(ctx, dim_at(w, 1), Dim::of(group)));
  for (size_t i = 0; i < *n; ++i) {
    const Dim in = dim_at(x, i + 2);
    const int64_t s = win.strides[i];
    if (out_shape) {
      out.dims.push_back(Dim::of((*out_shape)[i]));
    } else if (!win.valid) {
      out.dims.emplace_back();
    } else if (win.auto_pad == "SAME_UPPER" || win.auto_pad == "SAME_LOWER") {
      out.dims.push_back(affine_dim(ctx, in, s, 0, 1));
    } else if (!win.kernel[i]) {
      out.dims.emplace_back();
    } else {
      // s * (in - 1) + output_padding + (k - 1) * d + 1 - pads
      const int64_t eff = (*win.kernel[i] - 1) * win.dilations[i] + 1;
      int64_t p = 0;
      if (win.auto_pad == "NOTSET") p = win.pads[i] + win.pads[i + *n];
      Dim d = affine_dim(ctx, in, s, out_pad[i] + eff - p - s, 1);
      if (d.is_static() && d.value < 0 && in.is_static() && in.value > 0)
        ctx.fail(rule, "ConvTranspose output size on spatial axis " + str(static_cast<int64_t>(i)) +
                           " is negative (" + str(d.value) + ")");
      out.dims.push_back(std::move(d));
    }
  }
  propagate_type(ctx, 0, 0, std::move(out));
}

/// Output shape of MaxPool/AveragePool/LpPool: (N, C, O...).
std::optional<Shape> pool_shape(const InferenceContext& ctx) {
  static const std::string rule = "shape.pool";
  const Shape* x = ctx.input_shape(0);
  auto n = spatial_rank(ctx, x, nullptr, rule);
  if (!n) return std::nullopt;
  Window win = read_window(ctx, *n, nullptr, rule);
  Shape out;
  out.dims.push_back(dim_at(x, 0));
  out.dims.push_back(dim_at(x, 1));
  for (size_t i = 0; i < *n; ++i) out.dims.push_back(window_output(ctx, dim_at(x, i + 2), win, i, rule));
  return out;
}

void infer_pool(InferenceContext& ctx) {
  auto out = pool_shape(ctx);
  propagate_type(ctx, 0, 0, out);
  // MaxPool-8+: the optional Indices output.
  if (ctx.output_count() > 1) ctx.set_output_tensor(1, DataType::kInt64, out);
}

void infer_global_pool(InferenceContext& ctx) {
  const Shape* x = ctx.input_shape(0);
  if (!x) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  if (x->rank() < 2) ctx.fail("shape.rank", "input X " + x->to_string() + " needs rank >= 2");
  Shape out = *x;
  for (size_t i = 2; i < out.rank(); ++i) out.dims[i] = Dim::of(1);
  propagate_type(ctx, 0, 0, std::move(out));
}

// MaxUnpool(X, I, output_shape?): the inverse of MaxPool's size formula, or the given shape.
void infer_max_unpool(InferenceContext& ctx) {
  static const std::string rule = "shape.pool";
  const Shape* x = ctx.input_shape(0);
  if (ctx.has_input(2)) {
    const Shape* os = ctx.input_shape(2);
    if (const DimValues* v = ctx.input_values(2)) {
      Shape out;
      out.dims = *v;
      if (x && out.rank() != x->rank())
        ctx.fail("shape.rank", "output_shape has " + str(static_cast<int64_t>(out.rank())) +
                                   " values but X " + x->to_string() + " has rank " +
                                   str(static_cast<int64_t>(x->rank())));
      propagate_type(ctx, 0, 0, std::move(out));
    } else if (os && os->rank() == 1 && os->dims[0].is_static() && os->dims[0].value <= shape::kMaxVectorLength) {
      Shape out = shape::unknown_shape(static_cast<size_t>(os->dims[0].value));
      // Unpooling keeps N and C.
      if (x && out.rank() == x->rank() && out.rank() >= 2) {
        out.dims[0] = x->dims[0];
        out.dims[1] = x->dims[1];
      }
      propagate_type(ctx, 0, 0, std::move(out));
    } else if (x) {
      propagate_type(ctx, 0, 0, shape::unknown_shape(x->rank()));
    } else {
      propagate_type(ctx, 0, 0, std::nullopt);
    }
    return;
  }
  auto n = spatial_rank(ctx, x, nullptr, rule);
  if (!n) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  Window win = read_window(ctx, *n, nullptr, rule);
  Shape out;
  out.dims.push_back(dim_at(x, 0));
  out.dims.push_back(dim_at(x, 1));
  for (size_t i = 0; i < *n; ++i) {
    if (!win.kernel[i]) {
      out.dims.emplace_back();
      continue;
    }
    // (in - 1) * s + k - pads
    const int64_t s = win.strides[i];
    const int64_t p = win.pads[i] + win.pads[i + *n];
    out.dims.push_back(affine_dim(ctx, dim_at(x, i + 2), s, *win.kernel[i] - s - p, 1));
  }
  propagate_type(ctx, 0, 0, std::move(out));
}

// ---------------------------------------------------------------- normalizations

/// Y has X's type and shape (InstanceNormalization, LRN, MeanVarianceNormalization,
/// LpNormalization, GroupNormalization, RotaryEmbedding).
void infer_same_as_x(InferenceContext& ctx) { propagate_type_and_shape(ctx, 0, 0); }

/// The channel count C of an (N, C, ...) input, merged with a per-channel input's length.
Dim channel_dim(const InferenceContext& ctx, size_t per_channel_input) {
  const Shape* x = ctx.input_shape(0);
  Dim c = x && x->rank() >= 2 ? x->dims[1] : Dim{};
  const Shape* p = ctx.input_shape(per_channel_input);
  if (p && p->rank() == 1) c = merge(ctx, c, p->dims[0], "shape.channels", "per-channel input length vs channels");
  return c;
}

// BatchNormalization: Y like X. Training outputs: opset < 14: mean, var, saved_mean, saved_var
// (X's type); opset >= 14: running_mean, running_var (the type of input_mean).
void infer_batch_norm(InferenceContext& ctx) {
  propagate_type_and_shape(ctx, 0, 0);
  const Shape* x = ctx.input_shape(0);
  const bool per_channel = ctx.opset() >= 9 || ctx.attr_int("spatial", 1) != 0;
  for (size_t i = 1; i < ctx.output_count(); ++i) {
    if (!ctx.has_output(i)) continue;
    std::optional<Shape> s;
    const size_t stat_input = ctx.opset() >= 14 ? 2 + i : (i % 2 == 1 ? 3 : 4);
    if (per_channel && (x || ctx.input_shape(stat_input))) {
      Shape c;
      c.dims.push_back(channel_dim(ctx, stat_input));
      s = std::move(c);
    } else if (const Shape* m = ctx.input_shape(stat_input)) {
      s = *m;
    }
    if (ctx.opset() >= 14) propagate_type(ctx, stat_input, i, std::move(s));
    else propagate_type(ctx, 0, i, std::move(s));
  }
}

/// The element type a stash_type attribute names (LayerNormalization's Mean/InvStdDev).
DataType stash_type(const InferenceContext& ctx) {
  const int64_t t = ctx.attr_int("stash_type", 1);
  if (t < 1 || t > kMaxDataType) ctx.fail("shape.attribute", "stash_type " + str(t) + " is not a data type");
  return static_cast<DataType>(t);
}

// LayerNormalization: Y like X; Mean and InvStdDev are X.shape[:axis] + [1] * (rank - axis).
/// The per-row statistics outputs of a normalization from output `first` on (LayerNormalization's
/// Mean and InvStdDev, SimplifiedLayerNormalization's inv_std_var): X's shape with the normalized
/// dims (from `axis`) set to 1, of the stash_type.
void set_stat_outputs(InferenceContext& ctx, size_t first) {
  const Shape* x = ctx.input_shape(0);
  const int64_t rank = x ? static_cast<int64_t>(x->rank()) : 0;
  const int64_t axis = x ? shape::normalize_axis(ctx, ctx.attr_int("axis", -1), rank) : 0;
  if (ctx.output_count() <= first) return;
  const DataType stats = stash_type(ctx);
  std::optional<Shape> s;
  if (x) {
    s = *x;
    for (int64_t i = axis; i < rank; ++i) s->dims[static_cast<size_t>(i)] = Dim::of(1);
  }
  for (size_t i = first; i < ctx.output_count() && i < 3; ++i) ctx.set_output_tensor(i, stats, s);
}

void infer_layer_norm(InferenceContext& ctx) {
  propagate_type_and_shape(ctx, 0, 0);
  set_stat_outputs(ctx, 1);
}

// RMSNormalization: Y has X's shape and the scale's element type (so has onnxruntime's
// SimplifiedLayerNormalization, whose optional second output is the inverse RMS).
void infer_rms_norm(InferenceContext& ctx) {
  const Shape* x = ctx.input_shape(0);
  auto et = ctx.input_elem_type(1);
  if (!et) et = ctx.input_elem_type(0);
  ctx.set_output_tensor(0, et.value_or(DataType::kUndefined), x ? std::optional<Shape>(*x) : std::nullopt);
  set_stat_outputs(ctx, 1);
}

void infer_lp_normalization(InferenceContext& ctx) {
  if (const Shape* x = ctx.input_shape(0); x && x->rank() > 0)
    shape::normalize_axis(ctx, ctx.attr_int("axis", -1), static_cast<int64_t>(x->rank()));
  propagate_type_and_shape(ctx, 0, 0);
}

// ---------------------------------------------------------------- losses

// NegativeLogLikelihoodLoss: input (N, C, d1..dk), target (N, d1..dk); loss has the target's
// shape with reduction "none", else it is a scalar. SoftmaxCrossEntropyLoss: the same, plus the
// optional log_prob output shaped like the scores.
void infer_loss(InferenceContext& ctx) {
  const std::string reduction = ctx.attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    ctx.fail("shape.attribute", "reduction must be none, sum or mean, not '" + reduction + "'");
  const Shape* x = ctx.input_shape(0);
  const Shape* target = ctx.input_shape(1);
  if (x && target && x->rank() >= 2 && target->rank() != x->rank() - 1)
    ctx.fail("shape.rank", "target has rank " + str(static_cast<int64_t>(target->rank())) + ", expected " +
                               str(static_cast<int64_t>(x->rank()) - 1));
  std::optional<Shape> s;
  if (reduction != "none") s = Shape{};
  else if (target) s = *target;
  propagate_type(ctx, 0, 0, s);
  if (ctx.output_count() > 1 && ctx.has_output(1)) propagate_type_and_shape(ctx, 0, 1);
}

// ---------------------------------------------------------------- opset 27-28 sequence ops

// SwiGLU: Y = Swish(A) * B with A and B of one shape (no broadcasting).
void infer_swiglu(InferenceContext& ctx) {
  const Shape* a = ctx.input_shape(0);
  const Shape* b = ctx.input_shape(1);
  if (a && b) {
    if (a->rank() != b->rank()) ctx.fail("shape.rank", "A and B must have the same shape");
    Shape s = *a;
    for (size_t i = 0; i < s.rank(); ++i) s.dims[i] = merge(ctx, a->dims[i], b->dims[i], "shape.broadcast", "A vs B");
    propagate_type(ctx, 0, 0, s);
    return;
  }
  propagate_type(ctx, 0, 0, a ? std::optional<Shape>(*a) : b ? std::optional<Shape>(*b) : std::nullopt);
}

// CausalConvWithState: output like input (B, C, L); present_state (B, C, k - 1).
void infer_causal_conv_with_state(InferenceContext& ctx) {
  propagate_type_and_shape(ctx, 0, 0);
  if (ctx.output_count() < 2 || !ctx.has_output(1)) return;
  const Shape* x = ctx.input_shape(0);
  const Shape* w = ctx.input_shape(1);
  std::optional<Shape> s;
  if (x && x->rank() == 3) {
    s = *x;
    s->dims[2] = w && w->rank() == 3 ? affine_dim(ctx, w->dims[2], 1, -1, 1) : Dim{};
  }
  propagate_type(ctx, 0, 1, s);
}

// LinearAttention: output (B, T, H_q * d_v), present_state (B, H_kv, d_k, d_v), with
// d_k = query[-1] / q_num_heads and d_v = value[-1] / kv_num_heads.
void infer_linear_attention(InferenceContext& ctx) {
  const int64_t hq = ctx.attr_int("q_num_heads", 0), hkv = ctx.attr_int("kv_num_heads", 0);
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0)
    ctx.fail("shape.attribute", "q_num_heads must be a positive multiple of kv_num_heads");
  const Shape* q = ctx.input_shape(0);
  const Shape* v = ctx.input_shape(2);
  auto per_head = [&](const Shape* s, int64_t heads) {
    if (!s || s->rank() != 3 || s->dims[2].kind != Dim::Kind::kValue) return Dim{};
    if (s->dims[2].value % heads != 0) ctx.fail("shape.attention", "last dim " + str(s->dims[2].value) + " is not divisible by " + str(heads) + " heads");
    return Dim::of(s->dims[2].value / heads);
  };
  const Dim dk = per_head(q, hq), dv = per_head(v, hkv);
  std::optional<Shape> out;
  if (q && q->rank() == 3) {
    out = *q;
    out->dims[2] = dv.kind == Dim::Kind::kValue ? Dim::of(dv.value * hq) : Dim{};
  }
  propagate_type(ctx, 0, 0, out);
  if (ctx.output_count() < 2 || !ctx.has_output(1)) return;
  Shape state;
  state.dims = {q && q->rank() == 3 ? q->dims[0] : Dim{}, Dim::of(hkv), dk, dv};
  const size_t state_type_from = ctx.input_elem_type(3) ? 3 : 0;
  propagate_type(ctx, state_type_from, 1, state);
}

// ---------------------------------------------------------------- preview training optimizers

// Adagrad / Momentum: inputs R, T, then n tensors of each of X, G, H (or V); outputs the new X
// and H (V): output k has the shape and type of X_k, output n + k of H_k. Adam: inputs R, T, X,
// G, V, H; outputs X, V, H.
template <int kGroups, int kOutGroups>
void infer_optimizer(InferenceContext& ctx) {
  const size_t tensors = ctx.input_count() >= 2 ? ctx.input_count() - 2 : 0;
  if (tensors % kGroups != 0) ctx.fail("shape.input-count", "expects 2 + " + str(kGroups) + "n inputs");
  const size_t n = tensors / kGroups;
  for (size_t k = 0; k < ctx.output_count(); ++k) {
    const size_t group = k / std::max<size_t>(n, 1), i = k % std::max<size_t>(n, 1);
    // Output group 0 is X (input group 0); later output groups are the last input groups.
    const size_t in_group = group == 0 ? 0 : static_cast<size_t>(kGroups - kOutGroups) + group;
    if (ctx.has_output(k)) propagate_type_and_shape(ctx, 2 + in_group * n + i, k);
  }
}

// ---------------------------------------------------------------- Einsum

/// One operand of an Einsum equation: its labels in order, '.' standing for the ellipsis.
struct EinsumTerm {
  std::string labels;
  bool has_ellipsis = false;
};

EinsumTerm parse_einsum_term(const InferenceContext& ctx, const std::string& text) {
  EinsumTerm t;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.') {
      if (text.compare(i, 3, "...") != 0 || t.has_ellipsis)
        ctx.fail("shape.attribute", "Einsum term '" + text + "' has a malformed ellipsis");
      t.has_ellipsis = true;
      t.labels += '.';
      i += 2;
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      t.labels += c;
    } else {
      ctx.fail("shape.attribute", "Einsum term '" + text + "' has an invalid character '" + std::string(1, c) + "'");
    }
  }
  return t;
}

void infer_einsum(InferenceContext& ctx) {
  std::string eq;
  for (char c : ctx.attr_string("equation", "")) if (c != ' ') eq += c;
  if (eq.empty()) ctx.fail("shape.attribute", "Einsum needs an equation");
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<EinsumTerm> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(parse_einsum_term(ctx, lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ctx.input_count())
    ctx.fail("shape.attribute", "Einsum equation '" + eq + "' has " + str(static_cast<int64_t>(terms.size())) +
                                    " operands, the node " + str(static_cast<int64_t>(ctx.input_count())) + " inputs");
  std::map<char, Dim> label_dim;
  std::map<char, int> label_count;
  bool any_ellipsis = false, ellipsis_known = true;
  std::vector<Shape> ellipsis_shapes;
  for (size_t k = 0; k < terms.size(); ++k) {
    const EinsumTerm& t = terms[k];
    any_ellipsis = any_ellipsis || t.has_ellipsis;
    for (char c : t.labels) if (c != '.') label_count[c]++;
    const Shape* s = ctx.input_shape(k);
    const size_t n_labels = t.labels.size() - (t.has_ellipsis ? 1 : 0);
    if (!s) {
      for (char c : t.labels) if (c != '.') label_dim.emplace(c, Dim{});
      if (t.has_ellipsis) ellipsis_known = false;
      continue;
    }
    if (t.has_ellipsis ? s->rank() < n_labels : s->rank() != n_labels)
      ctx.fail("shape.rank", "Einsum operand " + str(static_cast<int64_t>(k)) + " " + s->to_string() +
                                 " does not fit term '" + t.labels + "'");
    const size_t ell_rank = s->rank() - n_labels;
    size_t pos = 0;
    for (char c : t.labels) {
      if (c == '.') {
        Shape e;
        e.dims.assign(s->dims.begin() + static_cast<long>(pos), s->dims.begin() + static_cast<long>(pos + ell_rank));
        ellipsis_shapes.push_back(std::move(e));
        pos += ell_rank;
        continue;
      }
      const Dim& d = s->dims[pos++];
      auto it = label_dim.find(c);
      if (it == label_dim.end()) {
        label_dim.emplace(c, d);
      } else {
        // A label's sizes must agree (size 1 broadcasts).
        Shape a, b;
        a.dims = {it->second};
        b.dims = {d};
        it->second = shape::broadcast(ctx, {&a, &b}).dims[0];
      }
    }
  }
  std::string out_labels;
  if (arrow != std::string::npos) {
    EinsumTerm out = parse_einsum_term(ctx, eq.substr(arrow + 2));
    for (char c : out.labels) {
      if (c == '.') continue;
      if (!label_count.count(c))
        ctx.fail("shape.attribute", "Einsum output label '" + std::string(1, c) + "' is not in any operand");
      if (std::count(out.labels.begin(), out.labels.end(), c) > 1)
        ctx.fail("shape.attribute", "Einsum output label '" + std::string(1, c) + "' appears twice");
    }
    out_labels = out.labels;
  } else {
    if (any_ellipsis) out_labels += '.';
    for (const auto& [c, count] : label_count) if (count == 1) out_labels += c;  // std::map: sorted
  }
  const bool out_has_ellipsis = out_labels.find('.') != std::string::npos;
  if (out_has_ellipsis && !ellipsis_known) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  Shape ell;
  if (out_has_ellipsis) {
    std::vector<const Shape*> ptrs;
    for (const Shape& e : ellipsis_shapes) ptrs.push_back(&e);
    if (!ptrs.empty()) ell = shape::broadcast(ctx, ptrs);
  }
  Shape result;
  for (char c : out_labels) {
    if (c == '.') result.dims.insert(result.dims.end(), ell.dims.begin(), ell.dims.end());
    else result.dims.push_back(label_dim[c]);
  }
  propagate_type(ctx, 0, 0, std::move(result));
}

// ---------------------------------------------------------------- recurrent layers

/// RNN (gates = 1), GRU (3), LSTM (4): X (seq, batch, input) or, with layout 1,
/// (batch, seq, input); W (dirs, gates * hidden, input); R (dirs, gates * hidden, hidden).
/// Y (seq, dirs, batch, hidden) / (batch, seq, dirs, hidden); Y_h and Y_c (dirs, batch, hidden)
/// / (batch, dirs, hidden).
// `transposed`: W [dirs, input, gates*hidden] and R [dirs, hidden, gates*hidden], as onnxruntime's
// DynamicQuantizeLSTM takes them.
void infer_recurrent(InferenceContext& ctx, int64_t gates, bool transposed = false) {
  static const std::string rule = "shape.rnn";
  const Shape* x = shape_of_rank(ctx, 0, 3, "recurrent input X");
  const Shape* w = shape_of_rank(ctx, 1, 3, "recurrent weight W");
  const Shape* r = shape_of_rank(ctx, 2, 3, "recurrence weight R");
  const bool batch_first = ctx.opset() >= 14 && ctx.attr_int("layout", 0) != 0;
  const std::string direction = ctx.attr_string("direction", "forward");
  Dim dirs;
  if (direction == "forward" || direction == "reverse") dirs = Dim::of(1);
  else if (direction == "bidirectional") dirs = Dim::of(2);
  dirs = merge(ctx, dirs, dim_at(w, 0), rule, "directions of W vs the direction attribute");
  dirs = merge(ctx, dirs, dim_at(r, 0), rule, "directions of R vs the direction attribute");
  Dim hidden;
  if (ctx.has_attr("hidden_size")) hidden = Dim::of(ctx.attr_int("hidden_size", 0));
  const size_t gate_dim = transposed ? 2 : 1, other_dim = transposed ? 1 : 2;
  hidden = merge(ctx, hidden, dim_at(r, other_dim), rule, "hidden_size vs R's hidden dim");
  if (hidden.is_static()) {
    const Dim gh = Dim::of(gates * hidden.value);
    merge(ctx, gh, dim_at(w, gate_dim), rule, "W's gate rows vs " + str(gates) + " * hidden_size");
    merge(ctx, gh, dim_at(r, gate_dim), rule, "R's gate rows vs " + str(gates) + " * hidden_size");
  }
  merge(ctx, dim_at(x, 2), dim_at(w, other_dim), rule, "input size of X vs W's input dim");
  const Dim seq = dim_at(x, batch_first ? 1 : 0);
  Dim batch = dim_at(x, batch_first ? 0 : 1);
  if (const Shape* h0 = ctx.has_input(5) ? ctx.input_shape(5) : nullptr; h0 && h0->rank() == 3)
    batch = prefer_known(batch, h0->dims[batch_first ? 0 : 1]);
  const auto et = ctx.input_elem_type(0);
  const DataType t = et.value_or(DataType::kUndefined);
  if (ctx.has_output(0)) {
    Shape y;
    y.dims = batch_first ? std::vector<Dim>{batch, seq, dirs, hidden} : std::vector<Dim>{seq, dirs, batch, hidden};
    ctx.set_output_tensor(0, t, std::move(y));
  }
  Shape state;
  state.dims = batch_first ? std::vector<Dim>{batch, dirs, hidden} : std::vector<Dim>{dirs, batch, hidden};
  for (size_t i = 1; i < ctx.output_count(); ++i)
    if (ctx.has_output(i)) ctx.set_output_tensor(i, t, state);
}

void infer_rnn(InferenceContext& ctx) { infer_recurrent(ctx, 1); }
void infer_gru(InferenceContext& ctx) { infer_recurrent(ctx, 3); }
void infer_lstm(InferenceContext& ctx) { infer_recurrent(ctx, 4); }
void infer_quantized_lstm(InferenceContext& ctx) { infer_recurrent(ctx, 4, true); }

// ---------------------------------------------------------------- attention

// Attention-23+: Q, K, V 4-D (batch, heads, seq, head_size) or 3-D (batch, seq, heads * size).
// Outputs: Y, present_key, present_value (batch, kv_heads, past + kv_seq, size),
// qk_matmul_output (batch, q_heads, q_seq, past + kv_seq).
void infer_attention(InferenceContext& ctx) {
  static const std::string rule = "shape.attention";
  const Shape* q = ctx.input_shape(0);
  const Shape* k = ctx.input_shape(1);
  const Shape* v = ctx.input_shape(2);
  for (const Shape* s : {q, k, v})
    if (s && s->rank() != 3 && s->rank() != 4)
      ctx.fail("shape.rank", "Attention Q, K and V must have rank 3 or 4, got " + s->to_string());
  const int64_t q_heads_attr = ctx.attr_int("q_num_heads", 0);
  const int64_t kv_heads_attr = ctx.attr_int("kv_num_heads", 0);
  auto heads_of = [&](const Shape* s, int64_t attr) {
    if (s && s->rank() == 4) return s->dims[1];
    return attr > 0 ? Dim::of(attr) : Dim{};
  };
  // Per-head size of a 3-D or 4-D operand.
  auto head_size_of = [&](const Shape* s, int64_t heads) {
    if (!s) return Dim{};
    if (s->rank() == 4) return s->dims[3];
    if (heads <= 0) return Dim{};
    if (s->dims[2].is_static() && s->dims[2].value % heads != 0)
      ctx.fail(rule, "hidden size " + str(s->dims[2].value) + " is not a multiple of " + str(heads) + " heads");
    return shape::exact_quotient(s->dims[2], heads);
  };
  auto seq_of = [](const Shape* s) { return s ? s->dims[s->rank() == 4 ? 2 : 1] : Dim{}; };
  Dim batch = dim_at(q, 0);
  batch = merge(ctx, batch, dim_at(k, 0), rule, "batch of Q vs K");
  batch = merge(ctx, batch, dim_at(v, 0), rule, "batch of Q vs V");
  const Dim q_heads = heads_of(q, q_heads_attr);
  Dim kv_heads = merge(ctx, heads_of(k, kv_heads_attr), heads_of(v, kv_heads_attr), rule, "heads of K vs V");
  Dim head_size = merge(ctx, head_size_of(q, q_heads_attr), head_size_of(k, kv_heads_attr), rule,
                        "head size of Q vs K");
  Dim v_head_size = head_size_of(v, kv_heads_attr);
  const Dim q_seq = seq_of(q);
  const Dim kv_seq = merge(ctx, seq_of(k), seq_of(v), rule, "sequence length of K vs V");
  Dim total = kv_seq;
  const Shape* past_k = ctx.has_input(4) ? shape_of_rank(ctx, 4, 4, "past_key") : nullptr;
  const Shape* past_v = ctx.has_input(5) ? shape_of_rank(ctx, 5, 4, "past_value") : nullptr;
  if (ctx.has_input(4)) {
    Dim past = merge(ctx, dim_at(past_k, 2), dim_at(past_v, 2), rule, "past sequence length of past_key vs past_value");
    total = shape::sum_dims(ctx, past, kv_seq);
    kv_heads = merge(ctx, kv_heads, dim_at(past_k, 1), rule, "heads of K vs past_key");
    head_size = merge(ctx, head_size, dim_at(past_k, 3), rule, "head size of K vs past_key");
    v_head_size = merge(ctx, v_head_size, dim_at(past_v, 3), rule, "head size of V vs past_value");
  }
  const auto qt = ctx.input_elem_type(0).value_or(DataType::kUndefined);
  const auto vt = ctx.input_elem_type(2).value_or(DataType::kUndefined);
  if (q && q->rank() == 4) {
    Shape y;
    y.dims = {batch, q->dims[1], q_seq, v_head_size};
    ctx.set_output_tensor(0, qt, std::move(y));
  } else if (q) {
    Dim hidden;
    if (v && v->rank() == 3 && q_heads_attr > 0 && q_heads_attr == kv_heads_attr) hidden = v->dims[2];
    else if (q_heads_attr > 0) hidden = shape::mul(ctx, Dim::of(q_heads_attr), v_head_size);
    if (q_heads_attr == 1) hidden = v_head_size;
    Shape y;
    y.dims = {batch, q_seq, hidden};
    ctx.set_output_tensor(0, qt, std::move(y));
  } else {
    ctx.set_output_tensor(0, qt, std::nullopt);
  }
  if (ctx.has_output(1)) {
    Shape pk;
    pk.dims = {batch, kv_heads, total, head_size};
    ctx.set_output_tensor(1, qt, std::move(pk));
  }
  if (ctx.has_output(2)) {
    Shape pv;
    pv.dims = {batch, kv_heads, total, v_head_size};
    ctx.set_output_tensor(2, vt, std::move(pv));
  }
  if (ctx.has_output(3)) {
    Shape qk;
    qk.dims = {batch, q_heads, q_seq, total};
    ctx.set_output_tensor(3, qt, std::move(qk));
  }
}

}  // namespace

void register_nn_shapes(SchemaRegistry& r) {
  r.set_shape_fn("MatMul", infer_matmul);
  r.set_shape_fn("NegativeLogLikelihoodLoss", infer_loss);
  r.set_shape_fn("SoftmaxCrossEntropyLoss", infer_loss);
  r.set_shape_fn("SwiGLU", infer_swiglu);
  r.set_shape_fn("CausalConvWithState", infer_causal_conv_with_state);
  r.set_shape_fn("LinearAttention", infer_linear_attention);
  r.set_shape_fn("ai.onnx.preview.training", "Adagrad", 1, kMaxOpset, infer_optimizer<3, 2>);
  r.set_shape_fn("ai.onnx.preview.training", "Momentum", 1, kMaxOpset, infer_optimizer<3, 2>);
  r.set_shape_fn("ai.onnx.preview.training", "Adam", 1, kMaxOpset, infer_optimizer<4, 3>);
  r.set_shape_fn("MatMulInteger", infer_matmul_integer);
  r.set_shape_fn("QLinearMatMul", infer_qlinear_matmul);
  r.set_shape_fn("Gemm", infer_gemm);
  r.set_shape_fn("Det", infer_det);

  r.set_shape_fn("Conv", infer_conv);
  r.set_shape_fn("ConvInteger", infer_conv_integer);
  r.set_shape_fn("QLinearConv", infer_qlinear_conv);
  r.set_shape_fn("DeformConv", infer_deform_conv);
  r.set_shape_fn("ConvTranspose", infer_conv_transpose);
  r.set_shape_fn("MaxPool", infer_pool);
  r.set_shape_fn("AveragePool", infer_pool);
  r.set_shape_fn("LpPool", infer_pool);
  r.set_shape_fn("GlobalAveragePool", infer_global_pool);
  r.set_shape_fn("GlobalMaxPool", infer_global_pool);
  r.set_shape_fn("GlobalLpPool", infer_global_pool);
  r.set_shape_fn("MaxUnpool", infer_max_unpool);

  r.set_shape_fn("BatchNormalization", infer_batch_norm);
  r.set_shape_fn("InstanceNormalization", infer_same_as_x);
  r.set_shape_fn("LayerNormalization", infer_layer_norm);
  r.set_shape_fn("GroupNormalization", infer_same_as_x);
  r.set_shape_fn("RMSNormalization", infer_rms_norm);
  // onnxruntime's own ai.onnx ops of the same meaning (ir/ops/onnxruntime_schemas.def).
  r.set_shape_fn(kOnnxruntimeAiOnnx, "LayerNormalization", 1, kMaxOpset, infer_layer_norm);
  r.set_shape_fn(kOnnxruntimeAiOnnx, "SimplifiedLayerNormalization", 1, kMaxOpset, infer_rms_norm);
  r.set_shape_fn("LRN", infer_same_as_x);
  r.set_shape_fn("MeanVarianceNormalization", infer_same_as_x);
  r.set_shape_fn("LpNormalization", infer_lp_normalization);

  r.set_shape_fn("Einsum", infer_einsum);

  r.set_shape_fn("RNN", infer_rnn);
  r.set_shape_fn("GRU", infer_gru);
  r.set_shape_fn("LSTM", infer_lstm);
  r.set_shape_fn(kMicrosoftDomain, "DynamicQuantizeLSTM", 1, kMaxOpset, infer_quantized_lstm);

  r.set_shape_fn("Attention", infer_attention);
  r.set_shape_fn("RotaryEmbedding", infer_same_as_x);
}

namespace shape {

void conv_like(InferenceContext& ctx) { infer_conv(ctx); }
void pool_like(InferenceContext& ctx) { infer_pool(ctx); }
void global_pool_like(InferenceContext& ctx) { infer_global_pool(ctx); }

}  // namespace shape

}  // namespace onnxtool::ir
