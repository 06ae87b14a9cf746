// CPU kernels: RandomNormal, RandomUniform, RandomNormalLike, RandomUniformLike, Bernoulli and
// Multinomial. Values come from a splitmix64 stream seeded by the `seed` attribute, or by a
// fixed default when there is none: onnxtool's outputs are deterministic by design, so two runs
// of the same model give the same bytes (the spec leaves unseeded values unspecified).
#include <cmath>
#include <cstring>
#include <vector>

#include "runner/cpu/elementwise_util.h"
#include "runner/cpu/kernels.h"

namespace onnxtool::runner::cpu {

namespace {

class Stream {
 public:
  explicit Stream(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1) with 53 bits.
  double unit() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  /// Standard normal (Box-Muller).
  double normal() {
    const double u1 = 1.0 - unit(), u2 = unit();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t s_;
};

Stream stream_for(const KernelContext& ctx) {
  const float seed = ctx.attr_float("seed", 0.0f);
  uint64_t bits = 0;
  std::memcpy(&bits, &seed, sizeof seed);
  return Stream(0x6f6e6e78746f6f6cULL ^ bits);
}

DataType float_dtype(const KernelContext& ctx, DataType fallback) {
  const auto t = static_cast<DataType>(ctx.attr_int("dtype", static_cast<int64_t>(fallback)));
  if (t != DataType::kFloat && t != DataType::kDouble && t != DataType::kFloat16 && t != DataType::kBFloat16)
    ctx.fail("dtype must be a float type, is " + type_name(t));
  return t;
}

template <bool kNormal, bool kLike>
void random_fill(KernelContext& ctx) {
  std::vector<int64_t> shape;
  DataType dt;
  if constexpr (kLike) {
    shape = ctx.input(0).shape();
    dt = float_dtype(ctx, ctx.input(0).dtype());
  } else {
    shape = ctx.attr_ints("shape");
    dt = float_dtype(ctx, DataType::kFloat);
  }
  Tensor& y = ctx.output(0, dt, shape);
  Stream s = stream_for(ctx);
  const double a = kNormal ? ctx.attr_float("mean", 0) : ctx.attr_float("low", 0);
  const double b = kNormal ? ctx.attr_float("scale", 1) : ctx.attr_float("high", 1);
  for (int64_t i = 0; i < y.size(); ++i) set_element_from_double(y, i, kNormal ? a + b * s.normal() : a + (b - a) * s.unit());
}

void bernoulli(KernelContext& ctx) {
  const Tensor& p = ctx.input(0);
  const auto dt = static_cast<DataType>(ctx.attr_int("dtype", static_cast<int64_t>(p.dtype())));
  Tensor& y = ctx.output(0, dt, p.shape());
  Stream s = stream_for(ctx);
  for (int64_t i = 0; i < p.size(); ++i) {
    const double prob = p.dtype() == DataType::kDouble ? p.data<double>()[i] : p.data<float>()[i];
    set_element_from_double(y, i, s.unit() < prob ? 1 : 0);
  }
}

void multinomial(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 2) ctx.fail("input must be [batch, classes]");
  const int64_t batch = x.dim(0), classes = x.dim(1), samples = ctx.attr_int("sample_size", 1);
  const auto dt = static_cast<DataType>(ctx.attr_int("dtype", static_cast<int64_t>(DataType::kInt32)));
  if (dt != DataType::kInt32 && dt != DataType::kInt64) ctx.fail("dtype must be int32 or int64");
  Tensor& y = ctx.output(0, dt, {batch, samples});
  Stream s = stream_for(ctx);
  std::vector<double> cdf(static_cast<size_t>(classes));
  for (int64_t b = 0; b < batch; ++b) {
    // The input holds unnormalized log-probabilities.
    double mx = -INFINITY, total = 0;
    for (int64_t k = 0; k < classes; ++k) mx = std::max(mx, x.dtype() == DataType::kDouble ? x.data<double>()[b * classes + k] : double(x.data<float>()[b * classes + k]));
    for (int64_t k = 0; k < classes; ++k) {
      const double v = x.dtype() == DataType::kDouble ? x.data<double>()[b * classes + k] : double(x.data<float>()[b * classes + k]);
      total += std::exp(v - mx);
      cdf[static_cast<size_t>(k)] = total;
    }
    for (int64_t j = 0; j < samples; ++j) {
      const double u = s.unit() * total;
      int64_t k = 0;
      while (k + 1 < classes && cdf[static_cast<size_t>(k)] <= u) ++k;
      set_element_from_double(y, b * samples + j, static_cast<double>(k));
    }
  }
}

}  // namespace

void register_random_kernels(KernelRegistry& r) {
  r.add("RandomNormal", random_fill<true, false>);
  r.add("RandomUniform", random_fill<false, false>);
  r.add("RandomNormalLike", random_fill<true, true>);
  r.add("RandomUniformLike", random_fill<false, true>);
  r.add("Bernoulli", bernoulli);
  r.add("Multinomial", multinomial);
}

}  // namespace onnxtool::runner::cpu
