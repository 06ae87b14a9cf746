// Shape functions of the signal processing ops: the window functions (HannWindow,
// HammingWindow, BlackmanWindow), DFT, STFT and MelWeightMatrix (kernels: runner/cpu/signal.cpp).
#include "ir/ops/shape_util.h"

namespace onnxtool::ir {
namespace {

using shape::dtype_attr;
using shape::propagate_type;
using shape::rank_of;
using shape::scalar_dim;
using shape::scalar_int;
using shape::shape_of_dims;
using shape::vector_shape;

// HannWindow/HammingWindow/BlackmanWindow: [size] of output_datatype.
void infer_window(InferenceContext& ctx) {
  Dim n;
  if (auto s = scalar_dim(ctx, 0)) n = s->kind == Dim::Kind::kParam ? Dim::symbol(s->param) : s->is_static() ? Dim::of(s->value) : Dim{};
  ctx.set_output_tensor(0, dtype_attr(ctx, "output_datatype", DataType::kFloat), vector_shape(n));
}

// DFT-17: axis attribute (default 1); DFT-20: axis input (default -2). The last dim holds the
// real and imaginary parts.
void infer_dft(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  if (!in) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  const int64_t r = rank_of(*in);
  if (r < 2) ctx.fail("shape.rank", "DFT needs rank >= 2, got " + in->to_string());
  const Dim& last = in->dims[static_cast<size_t>(r - 1)];
  if (last.is_static() && last.value != 1 && last.value != 2)
    ctx.fail("shape.rank", "DFT input's last dim must be 1 (real) or 2 (complex), is " + std::to_string(last.value));
  std::optional<int64_t> axis;
  if (ctx.opset() < 20) axis = ctx.attr_int("axis", 1);
  else if (ctx.has_input(2)) axis = scalar_int(ctx, 2);
  else axis = -2;
  const bool inverse = ctx.attr_int("inverse", 0) != 0;
  const bool onesided = ctx.attr_int("onesided", 0) != 0;
  Shape out = *in;
  out.dims[static_cast<size_t>(r - 1)] = Dim::of(onesided && inverse ? 1 : 2);
  if (!axis) {
    for (int64_t i = 0; i < r - 1; ++i) out.dims[static_cast<size_t>(i)] = Dim{};
    propagate_type(ctx, 0, 0, std::move(out));
    return;
  }
  int64_t a = *axis;
  if (a < 0) a += r;
  if (a < 0 || a >= r - 1)
    ctx.fail("shape.axis", "DFT axis " + std::to_string(*axis) + " is out of range for rank " + std::to_string(r));
  const Dim& dim = in->dims[static_cast<size_t>(a)];
  Dim length;
  if (ctx.has_input(1)) {
    if (auto l = scalar_dim(ctx, 1)) length = *l;
  } else if (onesided && inverse) {
    length = dim.is_static() ? Dim::of(2 * (dim.value - 1)) : Dim{};
  } else {
    length = dim;
  }
  if (length.is_static() && length.value < 1)
    ctx.fail("shape.attribute", "DFT length must be positive, is " + std::to_string(length.value));
  Dim& o = out.dims[static_cast<size_t>(a)];
  if (onesided && !inverse) o = length.is_static() ? Dim::of(length.value / 2 + 1) : Dim{};
  else o = length.kind == Dim::Kind::kParam ? Dim::symbol(length.param) : length.is_static() ? Dim::of(length.value) : Dim{};
  propagate_type(ctx, 0, 0, std::move(out));
}

// STFT: [batch, frames, bins, 2] with frames = (length - frame_length) / frame_step + 1.
void infer_stft(InferenceContext& ctx) {
  const Shape* sig = ctx.input_shape(0);
  if (sig && sig->rank() != 3) ctx.fail("shape.rank", "STFT signal must be [batch, length, 1 or 2], got " + sig->to_string());
  auto step = scalar_int(ctx, 1);
  if (step && *step < 1) ctx.fail("shape.attribute", "STFT frame_step must be positive, is " + std::to_string(*step));
  std::optional<int64_t> frame;
  if (ctx.has_input(3)) {
    frame = scalar_int(ctx, 3);
  } else if (const Shape* w = ctx.input_shape(2)) {
    if (w->rank() != 1) ctx.fail("shape.rank", "STFT window must be rank 1, got " + w->to_string());
    if (w->dims[0].is_static()) frame = w->dims[0].value;
  }
  if (frame && ctx.has_input(3))
    if (const Shape* w = ctx.input_shape(2))
      if (w->rank() == 1 && w->dims[0].is_static() && w->dims[0].value != *frame)
        ctx.fail("shape.stft", "STFT window length " + std::to_string(w->dims[0].value) + " differs from frame_length " + std::to_string(*frame));
  if (frame && *frame < 1) ctx.fail("shape.attribute", "STFT frame_length must be positive, is " + std::to_string(*frame));
  const bool onesided = ctx.attr_int("onesided", 1) != 0;
  Dim frames, bins;
  if (sig && frame && step && sig->dims[1].is_static()) {
    const int64_t len = sig->dims[1].value;
    if (len < *frame)
      ctx.fail("shape.stft", "STFT signal of length " + std::to_string(len) + " is shorter than a frame (" + std::to_string(*frame) + ")");
    frames = Dim::of((len - *frame) / *step + 1);
  }
  if (frame) bins = Dim::of(onesided ? *frame / 2 + 1 : *frame);
  propagate_type(ctx, 0, 0, shape_of_dims({sig ? sig->dims[0] : Dim{}, frames, bins, Dim::of(2)}));
}

void infer_mel_weight_matrix(InferenceContext& ctx) {
  Dim rows, cols;
  if (auto d = scalar_int(ctx, 1)) rows = Dim::of(*d / 2 + 1);
  if (auto m = scalar_dim(ctx, 0)) cols = m->is_static() ? Dim::of(m->value) : m->kind == Dim::Kind::kParam ? Dim::symbol(m->param) : Dim{};
  ctx.set_output_tensor(0, dtype_attr(ctx, "output_datatype", DataType::kFloat), shape_of_dims({rows, cols}));
}

}  // namespace

void register_signal_shapes(SchemaRegistry& r) {
  r.set_shape_fn("HannWindow", infer_window);
  r.set_shape_fn("HammingWindow", infer_window);
  r.set_shape_fn("BlackmanWindow", infer_window);
  r.set_shape_fn("DFT", infer_dft);
  r.set_shape_fn("STFT", infer_stft);
  r.set_shape_fn("MelWeightMatrix", infer_mel_weight_matrix);
}

}  // namespace onnxtool::ir
