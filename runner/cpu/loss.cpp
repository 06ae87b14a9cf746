// CPU kernels: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (reductions none, sum,
// mean; class weights; ignore_index; N-D inputs; the optional log_prob output).
#include <cmath>
#include <functional>
#include <vector>

#include "runner/cpu/elementwise_util.h"
#include "runner/cpu/kernels.h"

namespace onnxtool::runner::cpu {

namespace {

int64_t target_at(const Tensor& t, int64_t i) {
  return t.dtype() == DataType::kInt32 ? t.data<int32_t>()[i] : t.data<int64_t>()[i];
}

/// The NLL of log-probabilities `logp` [N, C, D...] (as a flat accessor) against targets.
void nll(KernelContext& ctx, const Tensor& input, const std::function<double(int64_t)>& logp, const Tensor& target,
         const Tensor* weight, size_t output) {
  if (input.rank() < 2) ctx.fail("input must be [N, C, ...], got " + input.describe());
  const int64_t n = input.dim(0), c = input.dim(1), inner = dims_product(input.shape(), 2, input.rank());
  std::vector<int64_t> tshape = input.shape();
  tshape.erase(tshape.begin() + 1);
  if (target.shape() != tshape) ctx.fail("target must have shape " + shape_string(tshape) + ", got " + target.describe());
  if (target.dtype() != DataType::kInt32 && target.dtype() != DataType::kInt64) ctx.fail("target must be int32 or int64");
  if (weight && (weight->rank() != 1 || weight->dim(0) != c)) ctx.fail("weight must be [" + std::to_string(c) + "]");
  const bool has_ignore = ctx.has_attr("ignore_index");
  const int64_t ignore = ctx.attr_int("ignore_index", 0);
  const std::string reduction = ctx.attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") ctx.fail("reduction must be none, sum or mean");
  std::vector<double> loss(static_cast<size_t>(n * inner), 0.0);
  double weight_sum = 0, total = 0;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t k = b * inner + i;
      const int64_t cls = target_at(target, k);
      if (has_ignore && cls == ignore) continue;
      if (cls < 0 || cls >= c) ctx.fail("target " + std::to_string(cls) + " is outside [0, " + std::to_string(c) + ")");
      const double w = weight ? element_as_double(*weight, cls) : 1.0;
      const double v = -logp((b * c + cls) * inner + i) * w;
      loss[static_cast<size_t>(k)] = v;
      weight_sum += w;
      total += v;
    }
  if (reduction == "none") {
    Tensor& y = ctx.output(output, input.dtype(), tshape);
    for (int64_t k = 0; k < n * inner; ++k) set_element_from_double(y, k, loss[static_cast<size_t>(k)]);
    return;
  }
  Tensor& y = ctx.output(output, input.dtype(), {});
  set_element_from_double(y, 0, reduction == "sum" ? total : (weight_sum == 0 ? 0.0 : total / weight_sum));
}

void nll_loss(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  nll(ctx, x, [&](int64_t i) { return element_as_double(x, i); }, ctx.input(1), ctx.has_input(2) ? &ctx.input(2) : nullptr, 0);
}

void softmax_cross_entropy(KernelContext& ctx) {
  const Tensor& scores = ctx.input(0);
  if (scores.rank() < 2) ctx.fail("scores must be [N, C, ...], got " + scores.describe());
  const int64_t n = scores.dim(0), c = scores.dim(1), inner = dims_product(scores.shape(), 2, scores.rank());
  // log_softmax over the class axis, in double.
  std::vector<double> logp(static_cast<size_t>(scores.size()));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < inner; ++i) {
      double mx = -INFINITY;
      for (int64_t k = 0; k < c; ++k) mx = std::max(mx, element_as_double(scores, (b * c + k) * inner + i));
      double s = 0;
      for (int64_t k = 0; k < c; ++k) s += std::exp(element_as_double(scores, (b * c + k) * inner + i) - mx);
      const double lse = mx + std::log(s);
      for (int64_t k = 0; k < c; ++k) {
        const int64_t at = (b * c + k) * inner + i;
        logp[static_cast<size_t>(at)] = element_as_double(scores, at) - lse;
      }
    }
  nll(ctx, scores, [&](int64_t i) { return logp[static_cast<size_t>(i)]; }, ctx.input(1), ctx.has_input(2) ? &ctx.input(2) : nullptr, 0);
  if (ctx.output_count() > 1 && ctx.has_output(1)) {
    Tensor& lp = ctx.output(1, scores.dtype(), scores.shape());
    for (int64_t i = 0; i < scores.size(); ++i) set_element_from_double(lp, i, logp[static_cast<size_t>(i)]);
  }
}

}  // namespace

void register_loss_kernels(KernelRegistry& r) {
  r.add("NegativeLogLikelihoodLoss", nll_loss);
  r.add("SoftmaxCrossEntropyLoss", softmax_cross_entropy);
}

}  // namespace onnxtool::runner::cpu
