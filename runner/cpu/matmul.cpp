// CPU kernels: MatMul, Gemm, MatMulInteger, QLinearMatMul, Det and Einsum.
#include <cmath>
#include <vector>

#include "runner/cpu/elementwise_util.h"
#include "runner/cpu/gemm.h"
#include "runner/cpu/gemm_int.h"
#include "runner/cpu/kernels.h"
#include "runner/cpu/tensor_util.h"

namespace onnxtool::runner::cpu {

namespace {

/// Batched product of numpy-broadcast operands: for each batch index, [M,K] x [K,N].
struct MatMulShape {
  std::vector<int64_t> out;      // the output shape
  std::vector<int64_t> a_batch;  // per output batch index: the offset (in matrices) into A, B
  std::vector<int64_t> b_batch;
  int64_t m = 1, n = 1, k = 1;
};

MatMulShape matmul_shape(const KernelContext& ctx, const std::vector<int64_t>& sa, const std::vector<int64_t>& sb) {
  if (sa.empty() || sb.empty()) ctx.fail("MatMul inputs must have rank >= 1");
  std::vector<int64_t> a = sa, b = sb;
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  MatMulShape s;
  s.m = a[a.size() - 2];
  s.k = a.back();
  s.n = b.back();
  if (b[b.size() - 2] != s.k)
    ctx.fail("inner dims differ: " + shape_string(sa) + " x " + shape_string(sb));
  const std::vector<int64_t> ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  const size_t rank = std::max(ba.size(), bb.size());
  std::vector<int64_t> batch(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t x = i + ba.size() >= rank ? ba[i + ba.size() - rank] : 1;
    const int64_t y = i + bb.size() >= rank ? bb[i + bb.size() - rank] : 1;
    if (x != y && x != 1 && y != 1) ctx.fail("batch dims do not broadcast: " + shape_string(sa) + " x " + shape_string(sb));
    batch[i] = std::max(x, y);
    if (x == 0 || y == 0) batch[i] = 0;
  }
  const int64_t count = dims_product(batch, 0, batch.size());
  s.a_batch.resize(static_cast<size_t>(count));
  s.b_batch.resize(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    int64_t rem = i, oa = 0, ob = 0, sa_stride = 1, sb_stride = 1;
    for (size_t d = rank; d-- > 0;) {
      const int64_t idx = rem % batch[d];
      rem /= batch[d];
      const int64_t x = d + ba.size() >= rank ? ba[d + ba.size() - rank] : 1;
      const int64_t y = d + bb.size() >= rank ? bb[d + bb.size() - rank] : 1;
      oa += (x == 1 ? 0 : idx) * sa_stride;
      ob += (y == 1 ? 0 : idx) * sb_stride;
      sa_stride *= x;
      sb_stride *= y;
    }
    s.a_batch[static_cast<size_t>(i)] = oa;
    s.b_batch[static_cast<size_t>(i)] = ob;
  }
  s.out = batch;
  if (!a_vec) s.out.push_back(s.m);
  if (!b_vec) s.out.push_back(s.n);
  return s;
}

/// Plain product for the integer types.
template <class T, class Acc>
void naive_product(const T* a, const T* b, T* c, int64_t m, int64_t n, int64_t k) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      Acc acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += static_cast<Acc>(Num<T>::load(a[i * k + p])) * static_cast<Acc>(Num<T>::load(b[p * n + j]));
      c[i * n + j] = Num<T>::store(static_cast<typename Num<T>::calc>(acc));
    }
}

/// The batched product for float and double: the blocked GEMM per batch.
template <class T>
void real_product(const MatMulShape& s, const T* pa, const T* pb, T* py) {
  const int64_t mk = s.m * s.k, kn = s.k * s.n, mn = s.m * s.n;
  for (size_t i = 0; i < s.a_batch.size(); ++i) {
    const T* ai = pa + s.a_batch[i] * mk;
    const T* bi = pb + s.b_batch[i] * kn;
    T* yi = py + static_cast<int64_t>(i) * mn;
    if constexpr (std::is_same_v<T, float>) gemm_f32(s.m, s.n, s.k, ai, s.k, false, bi, s.n, false, yi, s.n, false);
    else gemm_f64(s.m, s.n, s.k, ai, s.k, false, bi, s.n, false, yi, s.n, false);
  }
}

void matmul(KernelContext& ctx) { matmul_of(ctx, ctx.input(0), ctx.input(1)); }

}  // namespace

void matmul_of(KernelContext& ctx, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype()) ctx.fail("MatMul inputs have different types");
  const MatMulShape s = matmul_shape(ctx, a.shape(), b.shape());
  Tensor& y = ctx.output(0, a.dtype(), s.out);
  const int64_t batches = static_cast<int64_t>(s.a_batch.size());
  const int64_t mk = s.m * s.k, kn = s.k * s.n, mn = s.m * s.n;
  visit_or_fail<kFloats | kInts>(ctx, a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* py = y.mutable_data<T>();
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      real_product(s, pa, pb, py);
    } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      // float16/bfloat16: the float32 product of the widened operands, rounded once at the end.
      const Tensor af = widen_to_float(a), bf = widen_to_float(b);
      Tensor yf(DataType::kFloat, y.shape());
      real_product(s, af.data<float>(), bf.data<float>(), yf.mutable_data<float>());
      ctx.set_output(0, narrow_from_float(yf, a.dtype()));
    } else {
      using Acc = std::conditional_t<std::is_integral_v<T>, T, double>;
      parallel_ranges(batches, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t i = b0; i < b1; ++i)
          naive_product<T, Acc>(pa + s.a_batch[static_cast<size_t>(i)] * mk, pb + s.b_batch[static_cast<size_t>(i)] * kn, py + i * mn,
                                s.m, s.n, s.k);
      });
    }
  });
}

namespace {

/// Unidirectional broadcast of C to [M, N]: element (i, j) of C.
struct BiasView {
  const Tensor* c = nullptr;
  int64_t rows = 1, cols = 1;
  int64_t index(int64_t i, int64_t j) const { return (rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j); }
};

BiasView bias_view(const KernelContext& ctx, const Tensor& c, int64_t m, int64_t n) {
  BiasView v;
  v.c = &c;
  const auto& s = c.shape();
  if (s.size() > 2) ctx.fail("Gemm C must have rank <= 2, has " + shape_string(s));
  v.cols = s.empty() ? 1 : s.back();
  v.rows = s.size() == 2 ? s[0] : 1;
  if ((v.cols != 1 && v.cols != n) || (v.rows != 1 && v.rows != m))
    ctx.fail("Gemm C of shape " + shape_string(s) + " does not broadcast to [" + std::to_string(m) + "," + std::to_string(n) + "]");
  return v;
}

/// Gemm for float and double: the blocked GEMM, then y = alpha * y + beta * C (pc null: no C).
template <class T>
void real_gemm(int64_t m, int64_t n, int64_t k, const T* pa, int64_t lda, bool ta, const T* pb, int64_t ldb, bool tb,
               float alpha, float beta, const T* pc, const BiasView& bias, T* py) {
  if constexpr (std::is_same_v<T, float>) gemm_f32(m, n, k, pa, lda, ta, pb, ldb, tb, py, n, false);
  else gemm_f64(m, n, k, pa, lda, ta, pb, ldb, tb, py, n, false);
  if (alpha == 1 && !pc) return;
  parallel_ranges(m, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i)
      for (int64_t j = 0; j < n; ++j) {
        T v = static_cast<T>(alpha) * py[i * n + j];
        if (pc) v += static_cast<T>(beta) * pc[bias.index(i, j)];
        py[i * n + j] = v;
      }
  });
}

}  // namespace

void gemm(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.rank() != 2 || b.rank() != 2) ctx.fail("Gemm inputs must be 2-D, got " + a.describe() + " and " + b.describe());
  const bool ta = ctx.attr_int("transA", 0) != 0, tb = ctx.attr_int("transB", 0) != 0;
  const float alpha = ctx.attr_float("alpha", 1.0f), beta = ctx.attr_float("beta", 1.0f);
  const int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1);
  const int64_t kb = tb ? b.dim(1) : b.dim(0), n = tb ? b.dim(0) : b.dim(1);
  if (k != kb) ctx.fail("Gemm inner dims differ: " + a.describe() + " x " + b.describe());
  Tensor& y = ctx.output(0, a.dtype(), {m, n});
  const bool has_c = ctx.has_input(2) && beta != 0;
  BiasView bias;
  if (has_c) bias = bias_view(ctx, ctx.input(2), m, n);
  visit_or_fail<kFloats | kInts>(ctx, a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = typename Num<T>::calc;
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* py = y.mutable_data<T>();
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      real_gemm(m, n, k, pa, a.dim(1), ta, pb, b.dim(1), tb, alpha, beta, has_c ? ctx.input(2).data<T>() : nullptr, bias, py);
    } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      // float16/bfloat16: the float32 Gemm of the widened operands, rounded once at the end.
      const Tensor af = widen_to_float(a), bf = widen_to_float(b);
      const Tensor cf = has_c ? widen_to_float(ctx.input(2)) : Tensor();
      Tensor yf(DataType::kFloat, {m, n});
      real_gemm(m, n, k, af.data<float>(), a.dim(1), ta, bf.data<float>(), b.dim(1), tb, alpha, beta,
                has_c ? cf.data<float>() : nullptr, bias, yf.mutable_data<float>());
      ctx.set_output(0, narrow_from_float(yf, a.dtype()));
    } else {
      using Acc = C;
      const T* pc = has_c ? ctx.input(2).data<T>() : nullptr;
      parallel_ranges(m, 1, [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0; i < r1; ++i)
          for (int64_t j = 0; j < n; ++j) {
            Acc acc = 0;
            for (int64_t p = 0; p < k; ++p) {
              const Acc x = static_cast<Acc>(Num<T>::load(pa[ta ? p * m + i : i * k + p]));
              const Acc w = static_cast<Acc>(Num<T>::load(pb[tb ? j * k + p : p * n + j]));
              acc += x * w;
            }
            Acc v = static_cast<Acc>(alpha) * acc;
            if (pc) v += static_cast<Acc>(beta) * static_cast<Acc>(Num<T>::load(pc[bias.index(i, j)]));
            py[i * n + j] = Num<T>::store(static_cast<C>(v));
          }
      });
    }
  });
}

namespace {

// ---------------------------------------------------------------- integer products

/// A zero point input: absent (0), a scalar, or one value per row (A) / column (B) along `axis`
/// of length `len`; returns per-index values.
std::vector<int32_t> zero_points(const KernelContext& ctx, const Tensor* given, int64_t len, const char* what) {
  std::vector<int32_t> z(static_cast<size_t>(len), 0);
  if (!given) return z;
  const Tensor& t = *given;
  // The spec types it as its operand; the integer GEMM relies on the 8-bit range.
  if (t.dtype() != DataType::kUInt8 && t.dtype() != DataType::kInt8)
    ctx.fail(std::string(what) + " zero point must be uint8 or int8, is " + type_name(t.dtype()));
  if (t.size() == 1) {
    std::fill(z.begin(), z.end(), int_at(t, 0));
  } else if (t.size() == len) {
    for (int64_t i = 0; i < len; ++i) z[static_cast<size_t>(i)] = int_at(t, i);
  } else {
    ctx.fail(std::string(what) + " zero point has " + std::to_string(t.size()) + " elements; expected 1 or " + std::to_string(len));
  }
  return z;
}

/// Integer batched product with per-row (A) and per-column (B) zero points, int32 results (sums
/// wrap modulo 2^32): the shared integer GEMM, once over all batches when they share one B.
void integer_product(const Tensor& a, const Tensor& b, const MatMulShape& s, const std::vector<int32_t>& za,
                     const std::vector<int32_t>& zb, int32_t* out) {
  const int64_t batches = static_cast<int64_t>(s.a_batch.size());
  const int64_t mk = s.m * s.k, kn = s.k * s.n, mn = s.m * s.n;
  const bool as = a.dtype() == DataType::kInt8, bs = b.dtype() == DataType::kInt8;
  const auto at = [&](int64_t offset) {
    return Int8Matrix{static_cast<const uint8_t*>(a.raw()) + offset, as, s.k};  // one byte per element either way
  };
  const auto bt = [&](int64_t offset) { return Int8Matrix{static_cast<const uint8_t*>(b.raw()) + offset, bs, s.n}; };
  bool shared_b = true;
  for (int64_t i = 0; i < batches; ++i)
    shared_b = shared_b && s.b_batch[static_cast<size_t>(i)] == 0 && s.a_batch[static_cast<size_t>(i)] == i;
  if (shared_b && batches > 1) {
    std::vector<int32_t> zas(static_cast<size_t>(batches * s.m));
    for (int64_t i = 0; i < batches * s.m; ++i) zas[static_cast<size_t>(i)] = za[static_cast<size_t>(i % s.m)];
    int_gemm(batches * s.m, s.n, s.k, at(0), zas.data(), bt(0), zb.data(), out, s.n);
    return;
  }
  for (int64_t bi = 0; bi < batches; ++bi)
    int_gemm(s.m, s.n, s.k, at(s.a_batch[static_cast<size_t>(bi)] * mk), za.data(), bt(s.b_batch[static_cast<size_t>(bi)] * kn),
             zb.data(), out + bi * mn, s.n);
}

void check_int8(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.dtype() != DataType::kUInt8 && t.dtype() != DataType::kInt8)
    ctx.fail(std::string(what) + " must be uint8 or int8, is " + type_name(t.dtype()));
}

void matmul_integer(KernelContext& ctx) {
  const Tensor* za = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const Tensor* zb = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  ctx.set_output(0, matmul_integer_of(ctx, ctx.input(0), ctx.input(1), za, zb));
}

/// A per-tensor or per-row/column float scale.
std::vector<float> scales(const KernelContext& ctx, size_t input, int64_t len, const char* what) {
  const Tensor& t = ctx.input(input);
  if (t.dtype() != DataType::kFloat) ctx.fail(std::string(what) + " scale must be float");
  std::vector<float> v(static_cast<size_t>(len));
  if (t.size() == 1) std::fill(v.begin(), v.end(), t.data<float>()[0]);
  else if (t.size() == len) std::copy(t.data<float>(), t.data<float>() + len, v.begin());
  else ctx.fail(std::string(what) + " scale has " + std::to_string(t.size()) + " elements; expected 1 or " + std::to_string(len));
  return v;
}

void qlinear_matmul(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  check_int8(ctx, a, "a");
  check_int8(ctx, b, "b");
  const Tensor& yz = ctx.input(7);
  check_int8(ctx, yz, "y_zero_point");
  const MatMulShape s = matmul_shape(ctx, a.shape(), b.shape());
  const auto sa = scales(ctx, 1, s.m, "a");
  const auto sb = scales(ctx, 4, s.n, "b");
  const auto za = zero_points(ctx, ctx.has_input(2) ? &ctx.input(2) : nullptr, s.m, "a");
  const auto zb = zero_points(ctx, ctx.has_input(5) ? &ctx.input(5) : nullptr, s.n, "b");
  const float sy = ctx.input(6).data<float>()[0];
  const int32_t zy = int_at(yz, 0);
  std::vector<int32_t> acc(static_cast<size_t>(shape_size(s.out)));
  integer_product(a, b, s, za, zb, acc.data());
  Tensor& y = ctx.output(0, yz.dtype(), s.out);
  const int32_t lo = yz.dtype() == DataType::kUInt8 ? 0 : -128, hi = yz.dtype() == DataType::kUInt8 ? 255 : 127;
  const int64_t mn = s.m * s.n;
  for (int64_t i = 0; i < y.size(); ++i) {
    const int64_t r = (i % mn) / s.n, c = i % s.n;
    // Scale in double, round half to even, saturate.
    const double v = std::nearbyint(static_cast<double>(acc[static_cast<size_t>(i)]) * sa[static_cast<size_t>(r)] *
                                    sb[static_cast<size_t>(c)] / sy) + zy;
    const int32_t q = static_cast<int32_t>(std::min<double>(hi, std::max<double>(lo, v)));
    if (yz.dtype() == DataType::kUInt8) y.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(q);
    else y.mutable_data<int8_t>()[i] = static_cast<int8_t>(q);
  }
}

}  // namespace

Tensor matmul_integer_of(const KernelContext& ctx, const Tensor& a, const Tensor& b, const Tensor* a_zero,
                         const Tensor* b_zero) {
  check_int8(ctx, a, "A");
  check_int8(ctx, b, "B");
  const MatMulShape s = matmul_shape(ctx, a.shape(), b.shape());
  const auto za = zero_points(ctx, a_zero, s.m, "A");
  const auto zb = zero_points(ctx, b_zero, s.n, "B");
  Tensor y(DataType::kInt32, s.out);
  integer_product(a, b, s, za, zb, y.mutable_data<int32_t>());
  return y;
}

namespace {

// ---------------------------------------------------------------- Det

void det(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2 || x.dim(x.rank() - 1) != x.dim(x.rank() - 2)) ctx.fail("Det needs [..., n, n], got " + x.describe());
  const int64_t n = x.dim(x.rank() - 1);
  std::vector<int64_t> out(x.shape().begin(), x.shape().end() - 2);
  Tensor& y = ctx.output(0, x.dtype(), out);
  const int64_t count = shape_size(out);
  visit_or_fail<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    for (int64_t b = 0; b < count; ++b) {
      // LU decomposition with partial pivoting in double.
      std::vector<double> m(static_cast<size_t>(n * n));
      for (int64_t i = 0; i < n * n; ++i) m[static_cast<size_t>(i)] = Num<T>::load(px[b * n * n + i]);
      double d = 1;
      for (int64_t c = 0; c < n; ++c) {
        int64_t p = c;
        for (int64_t r = c + 1; r < n; ++r)
          if (std::fabs(m[static_cast<size_t>(r * n + c)]) > std::fabs(m[static_cast<size_t>(p * n + c)])) p = r;
        if (m[static_cast<size_t>(p * n + c)] == 0) {
          d = 0;
          break;
        }
        if (p != c) {
          for (int64_t k = 0; k < n; ++k) std::swap(m[static_cast<size_t>(p * n + k)], m[static_cast<size_t>(c * n + k)]);
          d = -d;
        }
        const double piv = m[static_cast<size_t>(c * n + c)];
        d *= piv;
        for (int64_t r = c + 1; r < n; ++r) {
          const double f = m[static_cast<size_t>(r * n + c)] / piv;
          for (int64_t k = c; k < n; ++k) m[static_cast<size_t>(r * n + k)] -= f * m[static_cast<size_t>(c * n + k)];
        }
      }
      py[b] = Num<T>::store(static_cast<typename Num<T>::calc>(d));
    }
  });
}

// ---------------------------------------------------------------- Einsum

/// A parsed einsum equation: per operand the label of each axis, and the output labels.
/// Letters map to 0..51; the dims covered by an ellipsis get labels 52.. (right-aligned).
struct EinsumSpec {
  std::vector<std::vector<int>> operands;
  std::vector<int> output;
};

int einsum_letter(const KernelContext& ctx, char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  ctx.fail(std::string("einsum equation has an invalid character '") + c + "'");
}

EinsumSpec parse_einsum(const KernelContext& ctx, const std::string& equation, const std::vector<const Tensor*>& xs) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  const auto arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  size_t start = 0;
  while (true) {
    const auto comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != xs.size())
    ctx.fail("einsum equation has " + std::to_string(terms.size()) + " operands, the node " + std::to_string(xs.size()));
  constexpr int kEllipsisBase = 52;
  EinsumSpec spec;
  size_t ellipsis_rank = 0;
  std::vector<int> letter_count(kEllipsisBase, 0);
  // Parses one term against a rank (ellipsis dims fill what the letters leave).
  auto parse_term = [&](const std::string& term, int64_t rank, bool is_output) {
    std::vector<int> labels;
    const auto dots = term.find("...");
    std::string before = term.substr(0, dots), after = dots == std::string::npos ? "" : term.substr(dots + 3);
    if (after.find("...") != std::string::npos || after.find('.') != std::string::npos ||
        before.find('.') != std::string::npos)
      ctx.fail("einsum term '" + term + "' has a malformed ellipsis");
    const int64_t letters = static_cast<int64_t>(before.size() + after.size());
    int64_t ell = 0;
    if (dots != std::string::npos) {
      ell = is_output ? static_cast<int64_t>(ellipsis_rank) : rank - letters;
      if (ell < 0) ctx.fail("einsum term '" + term + "' has more letters than the operand's rank");
    } else if (!is_output && letters != rank) {
      ctx.fail("einsum term '" + term + "' does not match an operand of rank " + std::to_string(rank));
    }
    for (char c : before) labels.push_back(einsum_letter(ctx, c));
    for (int64_t k = 0; k < ell; ++k)
      labels.push_back(kEllipsisBase + static_cast<int>(ellipsis_rank > static_cast<size_t>(ell) ? ellipsis_rank - static_cast<size_t>(ell) : 0) + static_cast<int>(k));
    for (char c : after) labels.push_back(einsum_letter(ctx, c));
    return std::make_pair(labels, ell);
  };
  // First pass: the ellipsis rank is the largest among operands.
  for (size_t i = 0; i < terms.size(); ++i) {
    const auto dots = terms[i].find("...");
    if (dots == std::string::npos) continue;
    const int64_t letters = static_cast<int64_t>(terms[i].size()) - 3;
    const int64_t ell = static_cast<int64_t>(xs[i]->rank()) - letters;
    if (ell < 0) ctx.fail("einsum term '" + terms[i] + "' has more letters than the operand's rank");
    ellipsis_rank = std::max(ellipsis_rank, static_cast<size_t>(ell));
  }
  for (size_t i = 0; i < terms.size(); ++i) {
    auto [labels, ell] = parse_term(terms[i], static_cast<int64_t>(xs[i]->rank()), false);
    for (int l : labels)
      if (l < kEllipsisBase) letter_count[static_cast<size_t>(l)]++;
    spec.operands.push_back(labels);
  }
  if (arrow != std::string::npos) {
    const std::string rhs = eq.substr(arrow + 2);
    // An explicit output without "..." sums the broadcast dims.
    auto [labels, ell] = parse_term(rhs, 0, true);
    std::vector<bool> seen(kEllipsisBase + 64, false);
    for (int l : labels) {
      if (l < kEllipsisBase && letter_count[static_cast<size_t>(l)] == 0)
        ctx.fail("einsum output label does not appear in the inputs");
      if (seen[static_cast<size_t>(l)]) ctx.fail("einsum output repeats a label");
      seen[static_cast<size_t>(l)] = true;
    }
    spec.output = labels;
  } else {
    // Implicit output: ellipsis dims first, then the letters used once, in alphabetical order.
    for (size_t k = 0; k < ellipsis_rank; ++k) spec.output.push_back(kEllipsisBase + static_cast<int>(k));
    for (int l = 0; l < kEllipsisBase; ++l)
      if (letter_count[static_cast<size_t>(l)] == 1) spec.output.push_back(l);
  }
  return spec;
}

// Einsum: a direct loop over every combination of labels (output labels outermost), summing
// the product of the operands; simple and general (diagonals, broadcast ellipsis, traces).
void einsum_kernel(KernelContext& ctx) {
  const size_t n = ctx.input_count();
  if (n == 0) ctx.fail("Einsum needs at least one input");
  std::vector<const Tensor*> xs;
  for (size_t i = 0; i < n; ++i) xs.push_back(&ctx.input(i));
  for (size_t i = 1; i < n; ++i)
    if (xs[i]->dtype() != xs[0]->dtype()) ctx.fail("Einsum inputs have different element types");
  const EinsumSpec spec = parse_einsum(ctx, ctx.attr_string("equation", ""), xs);
  // Size of every label (1 broadcasts for ellipsis dims).
  std::map<int, int64_t> size;
  for (size_t i = 0; i < n; ++i) {
    const auto& labels = spec.operands[i];
    for (size_t d = 0; d < labels.size(); ++d) {
      const int64_t dim = xs[i]->dim(d);
      auto it = size.find(labels[d]);
      if (it == size.end()) {
        size[labels[d]] = dim;
      } else if (it->second != dim) {
        if (labels[d] >= 52 && (it->second == 1 || dim == 1)) it->second = std::max(it->second, dim);
        else ctx.fail("einsum label sizes disagree: " + std::to_string(it->second) + " vs " + std::to_string(dim));
      }
    }
  }
  std::vector<int> loop = spec.output;  // output labels, then summed ones
  for (const auto& [l, sz] : size)
    if (std::find(loop.begin(), loop.end(), l) == loop.end()) loop.push_back(l);
  std::vector<int64_t> out_shape, loop_dims;
  for (int l : spec.output) {
    if (!size.count(l)) size[l] = 1;
    out_shape.push_back(size[l]);
  }
  for (int l : loop) loop_dims.push_back(size[l]);
  // Per operand, its stride for each loop label (0 where a broadcast dim has size 1).
  std::vector<std::vector<int64_t>> strides(n, std::vector<int64_t>(loop.size(), 0));
  for (size_t i = 0; i < n; ++i) {
    const auto& labels = spec.operands[i];
    int64_t acc = 1;
    for (size_t d = labels.size(); d-- > 0;) {
      const size_t li = static_cast<size_t>(std::find(loop.begin(), loop.end(), labels[d]) - loop.begin());
      if (xs[i]->dim(d) != 1) strides[i][li] += acc;
      acc *= xs[i]->dim(d);
    }
  }
  const size_t n_out = spec.output.size();
  int64_t out_count = 1, sum_count = 1;
  for (size_t k = 0; k < loop.size(); ++k) (k < n_out ? out_count : sum_count) *= loop_dims[k];
  visit_or_fail<kNumeric>(ctx, xs[0]->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = std::conditional_t<is_float_v<T>, double, uint64_t>;
    Tensor& y = ctx.output(0, xs[0]->dtype(), out_shape);
    T* out = y.mutable_data<T>();
    parallel_ranges(out_count, 64, [&](int64_t b, int64_t e) {
      std::vector<int64_t> idx(loop.size());
      std::vector<int64_t> off(n);
      for (int64_t o = b; o < e; ++o) {
        // Decode the output index, then walk the summed labels with an odometer.
        int64_t rest = o;
        std::fill(off.begin(), off.end(), 0);
        for (size_t k = n_out; k-- > 0;) {
          idx[k] = rest % loop_dims[k];
          rest /= loop_dims[k];
          for (size_t i = 0; i < n; ++i) off[i] += idx[k] * strides[i][k];
        }
        for (size_t k = n_out; k < loop.size(); ++k) idx[k] = 0;
        Acc acc = 0;
        for (int64_t s = 0; s < sum_count; ++s) {
          Acc prod = 1;
          for (size_t i = 0; i < n; ++i) prod = prod * static_cast<Acc>(Num<T>::load(xs[i]->data<T>()[off[i]]));
          acc += prod;
          for (size_t k = loop.size(); k-- > n_out;) {
            ++idx[k];
            for (size_t i = 0; i < n; ++i) off[i] += strides[i][k];
            if (idx[k] < loop_dims[k]) break;
            for (size_t i = 0; i < n; ++i) off[i] -= loop_dims[k] * strides[i][k];
            idx[k] = 0;
          }
        }
        out[o] = Num<T>::store(static_cast<calc_t<T>>(acc));
      }
    });
  });
}

}  // namespace

void register_matmul_kernels(KernelRegistry& r) {
  r.add("MatMul", matmul);
  r.add("Gemm", gemm);
  r.add("MatMulInteger", matmul_integer);
  r.add("QLinearMatMul", qlinear_matmul);
  r.add("Det", det);
  r.add("Einsum", einsum_kernel);
}

}  // namespace onnxtool::runner::cpu
