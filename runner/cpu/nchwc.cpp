// CPU kernels of onnxruntime's channel-blocked ops, the domain com.microsoft.nchwc
// (ir/ops/nchwc_schemas.def; shape functions: ir/ops/nchwc_shapes.cpp), which onnxruntime writes
// when it saves a model optimized at its "all" level.
//
// A blocked tensor is declared [N, Cp, H, W], Cp the channels rounded up to the block size B
// (ir/nchwc_layout.h), and stored as [N, Cp / B, H, W, B]. These kernels unblock their inputs
// into plain NCHW tensors of Cp channels, run the plain op's kernel (Conv, the pools, Resize)
// through KernelContext::delegate, and block the result again: ReorderInput and ReorderOutput
// are the two conversions. A blocked Conv's weights are stored reordered by onnxruntime's
// transformer (MLAS's MlasReorderFilterOIHWBiBo and MlasReorderFilterOIHWBo), which the Conv
// kernel undoes once per session into OIHW.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "ir/nchwc_layout.h"
#include "runner/cpu/kernels.h"
#include "runner/thread_pool.h"

namespace onnxtool::runner::cpu {
namespace {

/// What a node keeps between runs: the block size of its graph, a Conv's weights back in OIHW,
/// Upsample's Resize node.
struct NchwcState {
  int64_t block = 0;
  const void* weights_key = nullptr;  // the blocked weights the OIHW copy was made from
  Tensor weights;
  std::unique_ptr<ir::Graph> resize_graph;
  ir::Node* resize = nullptr;
};

NchwcState& state_of(KernelContext& ctx) {
  NchwcState& s = ctx.state<NchwcState>();
  if (s.block == 0) {
    const ir::Graph* g = ctx.node().graph();
    s.block = g ? ir::nchwc_block_size(*g).size : 0;
    if (s.block == 0) s.block = ir::machine_nchwc_block_size();
  }
  return s;
}

std::string str(int64_t v) { return std::to_string(v); }

/// A float tensor of rank 4, or the node fails.
const Tensor& image(const KernelContext& ctx, size_t i, const char* what) {
  const Tensor& t = ctx.input(i);
  if (t.dtype() != DataType::kFloat) ctx.fail(std::string(what) + " must be float, is " + t.describe());
  if (t.rank() != 4) ctx.fail(std::string(what) + " must be 4-D, is " + t.describe());
  return t;
}

/// Fails unless a blocked tensor's channels are whole blocks.
void check_blocked(const KernelContext& ctx, const Tensor& t, int64_t block, const char* what) {
  if (t.dim(1) % block != 0)
    ctx.fail(std::string(what) + " " + t.describe() + " is not in blocks of " + str(block) +
             " channels (the model's NCHWc block size)");
}

/// The blocked copy [N, Cp, H, W] (stored [N, Cp / B, H, W, B]) of a plain tensor of `channels`
/// channels, NCHW or (`channels_last`) NHWC; the padding channels are zero.
Tensor to_blocked(const Tensor& x, int64_t block, bool channels_last = false) {
  const int64_t n = x.dim(0), c = x.dim(channels_last ? 3 : 1);
  const int64_t h = x.dim(channels_last ? 1 : 2), w = x.dim(channels_last ? 2 : 3), hw = h * w;
  const int64_t cp = ir::nchwc_padded(c, block);
  Tensor y(DataType::kFloat, {n, cp, h, w});
  const float* src = x.data<float>();
  float* dst = y.mutable_data<float>();
  std::fill(dst, dst + y.size(), 0.0f);
  parallel_ranges(n * (cp / block), 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t img = b / (cp / block), c0 = b % (cp / block) * block;
      float* out = dst + b * hw * block;
      for (int64_t j = 0; j < block && c0 + j < c; ++j)
        for (int64_t s = 0; s < hw; ++s)
          out[s * block + j] = channels_last ? src[(img * hw + s) * c + c0 + j] : src[(img * c + c0 + j) * hw + s];
    }
  });
  return y;
}

/// The first `channels` channels of a blocked tensor, as plain NCHW or (`channels_last`) NHWC.
Tensor from_blocked(const Tensor& x, int64_t block, int64_t channels, bool channels_last = false) {
  const int64_t n = x.dim(0), cp = x.dim(1), h = x.dim(2), w = x.dim(3), hw = h * w;
  Tensor y(DataType::kFloat, channels_last ? std::vector<int64_t>{n, h, w, channels} : std::vector<int64_t>{n, channels, h, w});
  const float* src = x.data<float>();
  float* dst = y.mutable_data<float>();
  parallel_ranges(n * channels, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t img = p / channels, c = p % channels;
      const float* in = src + ((img * cp + c / block * block) * hw) + c % block;
      for (int64_t s = 0; s < hw; ++s) {
        if (channels_last) dst[(img * hw + s) * channels + c] = in[s * block];
        else dst[p * hw + s] = in[s * block];
      }
    }
  });
  return y;
}

/// Runs the plain op `op_type` (default domain) on an unblocked copy of the blocked input 0 and
/// returns its output blocked again; the node's attributes are the plain op's.
void run_unblocked(KernelContext& ctx, const char* op_type) {
  const int64_t block = state_of(ctx).block;
  const Tensor& x = image(ctx, 0, "X");
  check_blocked(ctx, x, block, "X");
  const Value plain = Value::of(from_blocked(x, block, x.dim(1)));
  KernelFn fn = KernelRegistry::instance().find("", op_type, kMaxOpset);
  std::vector<Value> out = ctx.delegate(fn, ctx.node(), kMaxOpset, {&plain}, 1);
  ctx.set_output(0, to_blocked(out[0].tensor, block));
}

void reorder_input(KernelContext& ctx) {
  const Tensor& x = image(ctx, 0, "X");
  ctx.set_output(0, to_blocked(x, state_of(ctx).block, ctx.attr_int("channels_last", 0) != 0));
}

void reorder_output(KernelContext& ctx) {
  const int64_t block = state_of(ctx).block;
  const Tensor& x = image(ctx, 0, "X");
  const int64_t channels = ctx.attr_int("channels", 0);
  if (channels <= 0) ctx.fail("channels must be positive, got " + str(channels));
  if (x.dim(1) != ir::nchwc_padded(channels, block))
    ctx.fail("X " + x.describe() + " is not " + str(channels) + " channels padded to the model's NCHWc block size " +
             str(block));
  ctx.set_output(0, from_blocked(x, block, channels, ctx.attr_int("channels_last", 0) != 0));
}

/// A blocked Conv's weights [Mp, Ci, kh, kw] back in OIHW. `per_output` (OIHWBo: depthwise
/// convolutions and the first convolution, whose input is NCHW) stores [Mp / B, Ci, kh, kw, B];
/// otherwise (OIHWBiBo) [Mp / B, Ci / B, kh, kw, B (input), B (output)]. Padding is zero.
Tensor weights_to_oihw(const Tensor& w, int64_t block, bool per_output) {
  const int64_t m = w.dim(0), ci = w.dim(1), k = w.dim(2) * w.dim(3);
  Tensor y(DataType::kFloat, w.shape());
  const float* src = w.data<float>();
  float* dst = y.mutable_data<float>();
  for (int64_t ob = 0; ob < m / block; ++ob) {
    if (per_output) {
      for (int64_t i = 0; i < ci; ++i)
        for (int64_t kk = 0; kk < k; ++kk)
          for (int64_t bo = 0; bo < block; ++bo)
            dst[((ob * block + bo) * ci + i) * k + kk] = src[((ob * ci + i) * k + kk) * block + bo];
      continue;
    }
    for (int64_t ib = 0; ib < ci / block; ++ib)
      for (int64_t kk = 0; kk < k; ++kk)
        for (int64_t bi = 0; bi < block; ++bi)
          for (int64_t bo = 0; bo < block; ++bo)
            dst[((ob * block + bo) * ci + ib * block + bi) * k + kk] =
                src[((((ob * (ci / block) + ib) * k + kk) * block + bi) * block) + bo];
  }
  return y;
}

/// The fused activation of a blocked Conv (onnxruntime's MLAS_ACTIVATION), applied in place.
/// onnxruntime 1.30 also fuses HardSwish, without parameters.
void activate(const KernelContext& ctx, float* y, int64_t size) {
  if (!ctx.has_attr("activation")) return;
  const std::string kind = ctx.attr_string("activation", "");
  const std::vector<float> params = ctx.attr_floats("activation_params");
  auto need = [&](size_t count) {
    if (params.size() != count)
      ctx.fail("activation " + kind + " needs " + str(static_cast<int64_t>(count)) + " activation_params, has " +
               str(static_cast<int64_t>(params.size())));
  };
  auto each = [&](auto f) {
    parallel_ranges(size, 16384, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) y[i] = f(y[i]);
    });
  };
  if (kind == "Relu") {
    each([](float v) { return v > 0 ? v : 0.0f; });
  } else if (kind == "Tanh") {
    each([](float v) { return std::tanh(v); });
  } else if (kind == "Sigmoid") {
    each([](float v) { return 1.0f / (1.0f + std::exp(-v)); });
  } else if (kind == "LeakyRelu") {
    need(1);
    const float alpha = params[0];
    each([alpha](float v) { return v >= 0 ? v : v * alpha; });
  } else if (kind == "Clip") {
    need(2);
    const float lo = params[0], hi = params[1];
    each([lo, hi](float v) { return std::min(std::max(v, lo), hi); });
  } else if (kind == "HardSigmoid") {
    need(2);
    const float alpha = params[0], beta = params[1];
    each([alpha, beta](float v) { return std::min(1.0f, std::max(0.0f, alpha * v + beta)); });
  } else if (kind == "HardSwish") {  // ONNX's: x * HardSigmoid(x) with alpha 1/6, beta 1/2
    each([](float v) { return v * std::min(1.0f, std::max(0.0f, v / 6.0f + 0.5f)); });
  } else {
    ctx.fail("unsupported activation '" + kind + "' (Relu, Tanh, Sigmoid, LeakyRelu, Clip, HardSigmoid, HardSwish)");
  }
}

// Conv(X, W, B?, Sum?): activation(conv(X, W) + B + Sum), X and Y blocked (X plain NCHW for the
// first convolution: weights of fewer input channels than a block, group 1).
void blocked_conv(KernelContext& ctx) {
  NchwcState& st = state_of(ctx);
  const int64_t block = st.block;
  const Tensor& x = image(ctx, 0, "X");
  const Tensor& w = image(ctx, 1, "W");
  const int64_t m = w.dim(0), ci = w.dim(1), group = ctx.attr_int("group", 1);
  const bool depthwise = group > 1 && ci == 1 && group == m;
  const bool nchw_input = group == 1 && ci < block;
  if (m % block != 0)
    ctx.fail("W " + w.describe() + " does not have whole blocks of output channels for the model's NCHWc block size " +
             str(block));
  if (nchw_input) {
    if (x.dim(1) != ci) ctx.fail("X " + x.describe() + " does not have the " + str(ci) + " channels of W " + w.describe());
  } else {
    check_blocked(ctx, x, block, "X");
    if (!depthwise && (ci % block != 0 || group <= 0 || m % group != 0 || (m / group) % block != 0))
      ctx.fail("W " + w.describe() + " with group " + str(group) + " is not in blocks of the model's NCHWc block size " +
               str(block));
  }
  if (st.weights_key != w.data<float>()) {
    st.weights = weights_to_oihw(w, block, depthwise || nchw_input);
    st.weights_key = w.data<float>();
  }
  const Value plain_x = Value::of(nchw_input ? x : from_blocked(x, block, x.dim(1)));
  const Value plain_w = Value::of(st.weights);
  std::vector<const Value*> inputs{&plain_x, &plain_w};
  if (ctx.has_input(2)) inputs.push_back(&ctx.input_value(2));
  std::vector<Value> out = ctx.delegate(KernelRegistry::instance().find("", "Conv", kMaxOpset), ctx.node(), kMaxOpset,
                                        std::move(inputs), 1);
  Tensor y = to_blocked(out[0].tensor, block);
  float* py = y.mutable_data<float>();
  if (ctx.has_input(3)) {
    const Tensor& sum = ctx.input(3);
    if (sum.dtype() != DataType::kFloat || sum.shape() != y.shape())
      ctx.fail("Sum " + sum.describe() + " must be float of the output's shape " + y.describe());
    const float* ps = sum.data<float>();
    for (int64_t i = 0; i < y.size(); ++i) py[i] += ps[i];
  }
  activate(ctx, py, y.size());
  ctx.set_output(0, std::move(y));
}

void max_pool(KernelContext& ctx) { run_unblocked(ctx, "MaxPool"); }
void average_pool(KernelContext& ctx) { run_unblocked(ctx, "AveragePool"); }
void global_max_pool(KernelContext& ctx) { run_unblocked(ctx, "GlobalMaxPool"); }
void global_average_pool(KernelContext& ctx) { run_unblocked(ctx, "GlobalAveragePool"); }

// Upsample: integer scales on H and W, nearest (the floor of output / scale) or linear
// (asymmetric, align_corners or half_pixel coordinates): Resize with those settings.
void upsample(KernelContext& ctx) {
  NchwcState& st = state_of(ctx);
  const int64_t block = st.block;
  const Tensor& x = image(ctx, 0, "X");
  check_blocked(ctx, x, block, "X");
  const std::vector<int64_t> scales = ctx.attr_ints("scales");
  if (scales.size() != 4 || scales[0] != 1 || scales[1] != 1 || scales[2] < 1 || scales[3] < 1)
    ctx.fail("scales must be [1, 1, sh, sw] with sh, sw >= 1");
  const std::string mode = ctx.attr_string("mode", "nearest");
  const std::string coord = ctx.attr_string("coordinate_transformation_mode", "asymmetric");
  if (mode != "nearest" && mode != "linear") ctx.fail("unsupported mode '" + mode + "'");
  if (mode == "linear" && coord != "asymmetric" && coord != "align_corners" && coord != "half_pixel")
    ctx.fail("unsupported coordinate_transformation_mode '" + coord + "'");
  if (!st.resize) {
    st.resize_graph = std::make_unique<ir::Graph>();
    st.resize = st.resize_graph->add_node("Resize", {}, {"Y"}, "", ctx.node().name);
    st.resize->set_attr(ir::Attribute::make_string("mode", mode));
    st.resize->set_attr(ir::Attribute::make_string("coordinate_transformation_mode", mode == "linear" ? coord : "asymmetric"));
    st.resize->set_attr(ir::Attribute::make_string("nearest_mode", "floor"));
  }
  Tensor s(DataType::kFloat, {4});
  for (size_t i = 0; i < 4; ++i) s.mutable_data<float>()[i] = static_cast<float>(scales[i]);
  const Value plain = Value::of(from_blocked(x, block, x.dim(1))), scale_values = Value::of(std::move(s));
  std::vector<Value> out = ctx.delegate(KernelRegistry::instance().find("", "Resize", kMaxOpset), *st.resize, kMaxOpset,
                                        {&plain, nullptr, &scale_values}, 1);
  ctx.set_output(0, to_blocked(out[0].tensor, block));
}

}  // namespace

void register_nchwc_kernels(KernelRegistry& r) {
  const std::string_view d = ir::kNchwcDomain;
  r.add(d, "ReorderInput", 1, kMaxOpset, reorder_input);
  r.add(d, "ReorderOutput", 1, kMaxOpset, reorder_output);
  r.add(d, "Conv", 1, kMaxOpset, blocked_conv);
  r.add(d, "MaxPool", 1, kMaxOpset, max_pool);
  r.add(d, "AveragePool", 1, kMaxOpset, average_pool);
  r.add(d, "GlobalMaxPool", 1, kMaxOpset, global_max_pool);
  r.add(d, "GlobalAveragePool", 1, kMaxOpset, global_average_pool);
  r.add(d, "Upsample", 1, kMaxOpset, upsample);
}

}  // namespace onnxtool::runner::cpu
