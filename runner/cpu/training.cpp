// CPU kernels of the ai.onnx.preview.training domain: Adagrad, Adam and Momentum (one
// optimizer step over n tensors).
#include <cmath>
#include <vector>

#include "runner/cpu/elementwise_util.h"
#include "runner/cpu/kernels.h"

namespace onnxtool::runner::cpu {

namespace {

double scalar(const KernelContext& ctx, size_t i) {
  const Tensor& t = ctx.input(i);
  if (t.size() != 1) ctx.fail("input " + std::to_string(i) + " must be a scalar");
  if (t.dtype() == DataType::kInt64) return static_cast<double>(t.data<int64_t>()[0]);
  if (t.dtype() == DataType::kDouble) return t.data<double>()[0];
  return t.data<float>()[0];
}

double get(const Tensor& t, int64_t i) { return t.dtype() == DataType::kDouble ? t.data<double>()[i] : t.data<float>()[i]; }
void set(Tensor& t, int64_t i, double v) {
  if (t.dtype() == DataType::kDouble) t.mutable_data<double>()[i] = v;
  else t.mutable_data<float>()[i] = static_cast<float>(v);
}

/// Number of optimized tensors: inputs are R, T, then `groups` lists of n tensors.
size_t tensor_count(const KernelContext& ctx, size_t groups) {
  if (ctx.input_count() < 2 || (ctx.input_count() - 2) % groups != 0) ctx.fail("expects 2 + " + std::to_string(groups) + "n inputs");
  return (ctx.input_count() - 2) / groups;
}

void adagrad(KernelContext& ctx) {
  const size_t n = tensor_count(ctx, 3);
  const double r = scalar(ctx, 0), t = scalar(ctx, 1);
  const double decay = ctx.attr_float("decay_factor", 0), eps = ctx.attr_float("epsilon", 0.0f), l2 = ctx.attr_float("norm_coefficient", 0);
  const double lr = r / (1 + t * decay);
  for (size_t k = 0; k < n; ++k) {
    const Tensor& x = ctx.input(2 + k);
    const Tensor& g = ctx.input(2 + n + k);
    const Tensor& h = ctx.input(2 + 2 * n + k);
    Tensor& xo = ctx.output(k, x.dtype(), x.shape());
    Tensor& ho = ctx.output(n + k, h.dtype(), h.shape());
    for (int64_t i = 0; i < x.size(); ++i) {
      const double gr = l2 * get(x, i) + get(g, i);
      const double hn = get(h, i) + gr * gr;
      set(ho, i, hn);
      set(xo, i, get(x, i) - lr * gr / (std::sqrt(hn) + eps));
    }
  }
}

void momentum(KernelContext& ctx) {
  const size_t n = tensor_count(ctx, 3);
  const double r = scalar(ctx, 0), t = scalar(ctx, 1);
  const double alpha = ctx.attr_float("alpha", 0), beta = ctx.attr_float("beta", 0), l2 = ctx.attr_float("norm_coefficient", 0);
  const std::string mode = ctx.attr_string("mode", "standard");
  if (mode != "standard" && mode != "nesterov") ctx.fail("mode must be standard or nesterov");
  for (size_t k = 0; k < n; ++k) {
    const Tensor& x = ctx.input(2 + k);
    const Tensor& g = ctx.input(2 + n + k);
    const Tensor& v = ctx.input(2 + 2 * n + k);
    Tensor& xo = ctx.output(k, x.dtype(), x.shape());
    Tensor& vo = ctx.output(n + k, v.dtype(), v.shape());
    for (int64_t i = 0; i < x.size(); ++i) {
      const double gr = l2 * get(x, i) + get(g, i);
      // The gradient's coefficient is 1 on the first step (T == 0), beta afterwards.
      const double vn = alpha * get(v, i) + (t > 0 ? beta : 1.0) * gr;
      set(vo, i, vn);
      set(xo, i, mode == "standard" ? get(x, i) - r * vn : get(x, i) - r * (gr + alpha * vn));
    }
  }
}

void adam(KernelContext& ctx) {
  const size_t n = tensor_count(ctx, 4);
  const double r = scalar(ctx, 0), t = scalar(ctx, 1);
  const double alpha = ctx.attr_float("alpha", 0.9f), beta = ctx.attr_float("beta", 0.999f), eps = ctx.attr_float("epsilon", 0.0f);
  const double l2 = ctx.attr_float("norm_coefficient", 0), l2_post = ctx.attr_float("norm_coefficient_post", 0);
  for (size_t k = 0; k < n; ++k) {
    const Tensor& x = ctx.input(2 + k);
    const Tensor& g = ctx.input(2 + n + k);
    const Tensor& v = ctx.input(2 + 2 * n + k);
    const Tensor& h = ctx.input(2 + 3 * n + k);
    Tensor& xo = ctx.output(k, x.dtype(), x.shape());
    Tensor& vo = ctx.output(n + k, v.dtype(), v.shape());
    Tensor& ho = ctx.output(2 * n + k, h.dtype(), h.shape());
    for (int64_t i = 0; i < x.size(); ++i) {
      const double gr = l2 * get(x, i) + get(g, i);
      const double vn = alpha * get(v, i) + (1 - alpha) * gr;
      const double hn = beta * get(h, i) + (1 - beta) * gr * gr;
      // Bias correction from the second step on (T > 0).
      const double rate = t > 0 ? r * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t)) : r;
      const double xn = get(x, i) - rate * vn / (std::sqrt(hn) + eps);
      set(vo, i, vn);
      set(ho, i, hn);
      set(xo, i, (1 - l2_post) * xn);
    }
  }
}

}  // namespace

void register_training_kernels(KernelRegistry& r) {
  r.add("ai.onnx.preview.training", "Adagrad", 1, kMaxOpset, adagrad);
  r.add("ai.onnx.preview.training", "Momentum", 1, kMaxOpset, momentum);
  r.add("ai.onnx.preview.training", "Adam", 1, kMaxOpset, adam);
}

}  // namespace onnxtool::runner::cpu
