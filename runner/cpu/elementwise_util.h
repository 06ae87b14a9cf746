// Shared helpers of the CPU kernels: element types as C++ types, type dispatch, numpy-style
// (multidirectional) broadcasting with collapsed dims, deterministic parallel ranges, axes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#ifdef __F16C__
#include <immintrin.h>
#endif

#include "runner/geometry.h"
#include "runner/kernel.h"
#include "runner/tensor.h"
#include "runner/thread_pool.h"

namespace onnxtool::runner::cpu {

/// Converts a tensor to element type `to` by the Cast rules (cast.cpp); shares storage when the
/// type is unchanged. `saturate` applies to float8 targets.
Tensor cast_tensor(const KernelContext& ctx, const Tensor& x, DataType to, bool saturate);

// ---------------------------------------------------------------- element types

/// Storage of a float16 / bfloat16 / bool element (distinct C++ types so that dispatch can tell
/// them from uint16/uint8 and arithmetic on the raw bits does not compile by accident).
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};
struct Bool8 {
  uint8_t value;
};

// ---------------------------------------------------------------- float16 conversions

/// float16 bits to float32, exact. The runner is built for the machine (-march=native): with
/// F16C one instruction, bit-identical to ir::half_to_float, which NaNs take (their payloads).
inline float load_half(uint16_t h) {
#ifdef __F16C__
  if ((h & 0x7fff) <= 0x7c00) return _cvtsh_ss(h);
#endif
  return half_to_float(h);
}

/// float32 to float16 bits, rounded to nearest even; with F16C bit-identical to
/// ir::float_to_half, which NaNs take (it makes them quiet NaNs of a fixed payload).
inline uint16_t store_half(float f) {
#ifdef __F16C__
  // (_mm_cvtps_ph rather than _cvtss_sh, whose clang macro is a C99 compound literal.)
  if (!std::isnan(f)) return static_cast<uint16_t>(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0));
#endif
  return float_to_half(f);
}

/// load_half / store_half over arrays (eight at a time with F16C); runner/cpu/cast.cpp.
void halves_to_floats(const uint16_t* in, float* out, int64_t n);
void floats_to_halves(const float* in, uint16_t* out, int64_t n);

/// How a stored element is computed with: `calc` is the arithmetic type (float for the 16-bit
/// floats, bool for Bool8, the type itself otherwise); load/store convert.
template <class T>
struct Num {
  using calc = T;
  static T load(T v) { return v; }
  static T store(T v) { return v; }
};
template <>
struct Num<Half> {
  using calc = float;
  static float load(Half v) { return load_half(v.bits); }
  static Half store(float v) { return Half{store_half(v)}; }
};
template <>
struct Num<BFloat16> {
  using calc = float;
  static float load(BFloat16 v) { return bfloat16_to_float(v.bits); }
  static BFloat16 store(float v) { return BFloat16{float_to_bfloat16(v)}; }
};
template <>
struct Num<Bool8> {
  using calc = bool;
  static bool load(Bool8 v) { return v.value != 0; }
  static Bool8 store(bool v) { return Bool8{static_cast<uint8_t>(v ? 1 : 0)}; }
};

template <class T>
using calc_t = typename Num<T>::calc;

template <class T>
constexpr bool is_float_v = std::is_floating_point_v<calc_t<T>>;

/// The DataType of a storage type.
template <class T>
constexpr DataType data_type_of() {
  if constexpr (std::is_same_v<T, float>) return DataType::kFloat;
  else if constexpr (std::is_same_v<T, double>) return DataType::kDouble;
  else if constexpr (std::is_same_v<T, Half>) return DataType::kFloat16;
  else if constexpr (std::is_same_v<T, BFloat16>) return DataType::kBFloat16;
  else if constexpr (std::is_same_v<T, Bool8>) return DataType::kBool;
  else if constexpr (std::is_same_v<T, int8_t>) return DataType::kInt8;
  else if constexpr (std::is_same_v<T, int16_t>) return DataType::kInt16;
  else if constexpr (std::is_same_v<T, int32_t>) return DataType::kInt32;
  else if constexpr (std::is_same_v<T, int64_t>) return DataType::kInt64;
  else if constexpr (std::is_same_v<T, uint8_t>) return DataType::kUInt8;
  else if constexpr (std::is_same_v<T, uint16_t>) return DataType::kUInt16;
  else if constexpr (std::is_same_v<T, uint32_t>) return DataType::kUInt32;
  else if constexpr (std::is_same_v<T, uint64_t>) return DataType::kUInt64;
  else return DataType::kUndefined;
}

// ---------------------------------------------------------------- type dispatch

/// Type sets for visit(); combine with |.
enum TypeSet : unsigned {
  kFloats = 1u,        ///< float, double, float16, bfloat16
  kSignedInts = 2u,    ///< int8..int64
  kUnsignedInts = 4u,  ///< uint8..uint64
  kBools = 8u,         ///< bool (Bool8)
  kInts = kSignedInts | kUnsignedInts,
  kNumeric = kFloats | kInts,
  kAllPlain = kNumeric | kBools,
};

/// A value standing for a type in generic lambdas: `[&](auto tag) { using T = typename
/// decltype(tag)::type; ... }`.
template <class T>
struct TypeTag {
  using type = T;
};

/// Calls f(TypeTag<T>{}) for the storage type T of `t` when it is in `Set`; returns false
/// (calling nothing) otherwise. Only the types of `Set` are instantiated.
template <unsigned Set, class F>
bool visit(DataType t, F&& f) {
  switch (t) {
    case DataType::kFloat:
      if constexpr ((Set & kFloats) != 0) return f(TypeTag<float>{}), true;
      break;
    case DataType::kDouble:
      if constexpr ((Set & kFloats) != 0) return f(TypeTag<double>{}), true;
      break;
    case DataType::kFloat16:
      if constexpr ((Set & kFloats) != 0) return f(TypeTag<Half>{}), true;
      break;
    case DataType::kBFloat16:
      if constexpr ((Set & kFloats) != 0) return f(TypeTag<BFloat16>{}), true;
      break;
    case DataType::kInt8:
      if constexpr ((Set & kSignedInts) != 0) return f(TypeTag<int8_t>{}), true;
      break;
    case DataType::kInt16:
      if constexpr ((Set & kSignedInts) != 0) return f(TypeTag<int16_t>{}), true;
      break;
    case DataType::kInt32:
      if constexpr ((Set & kSignedInts) != 0) return f(TypeTag<int32_t>{}), true;
      break;
    case DataType::kInt64:
      if constexpr ((Set & kSignedInts) != 0) return f(TypeTag<int64_t>{}), true;
      break;
    case DataType::kUInt8:
      if constexpr ((Set & kUnsignedInts) != 0) return f(TypeTag<uint8_t>{}), true;
      break;
    case DataType::kUInt16:
      if constexpr ((Set & kUnsignedInts) != 0) return f(TypeTag<uint16_t>{}), true;
      break;
    case DataType::kUInt32:
      if constexpr ((Set & kUnsignedInts) != 0) return f(TypeTag<uint32_t>{}), true;
      break;
    case DataType::kUInt64:
      if constexpr ((Set & kUnsignedInts) != 0) return f(TypeTag<uint64_t>{}), true;
      break;
    case DataType::kBool:
      if constexpr ((Set & kBools) != 0) return f(TypeTag<Bool8>{}), true;
      break;
    default:
      break;
  }
  return false;
}

/// visit() that fails the node naming the op and the unsupported type.
template <unsigned Set, class F>
void visit_or_fail(const KernelContext& ctx, DataType t, F&& f) {
  if (!visit<Set>(t, std::forward<F>(f)))
    ctx.fail(ctx.node().op_type + " does not support element type " + std::string(ir::data_type_name(t)));
}

inline std::string type_name(DataType t) { return std::string(ir::data_type_name(t)); }

/// Float to integer: truncation; in the int64/uint64 range the high bits are dropped like a C
/// conversion through int64; beyond it the value saturates; NaN gives 0.
template <class D>
inline D float_to_int(double v) {
  if (std::isnan(v)) return 0;
  v = std::trunc(v);
  if (v >= -9223372036854775808.0 && v < 9223372036854775808.0) return static_cast<D>(static_cast<int64_t>(v));
  if (v >= 0 && v < 18446744073709551616.0) return static_cast<D>(static_cast<uint64_t>(v));
  return v < 0 ? std::numeric_limits<D>::lowest() : std::numeric_limits<D>::max();
}


// ---------------------------------------------------------------- parallel ranges

// parallel_ranges (runner/thread_pool.h): independent items only; callers must produce the
// same result whatever the split.
using runner::parallel_ranges;

/// Items per parallel chunk for cheap elementwise work.
constexpr int64_t kElementwiseGrain = 32768;

// ---------------------------------------------------------------- shapes and axes

/// The numpy broadcast of shapes (right-aligned; each dim equal or 1). Fails the node naming
/// both shapes when they do not broadcast.
inline std::vector<int64_t> broadcast_shapes(const KernelContext& ctx,
                                             const std::vector<std::vector<int64_t>>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes) {
    const size_t pad = rank - s.size();
    for (size_t d = 0; d < s.size(); ++d) {
      const int64_t v = s[d];
      int64_t& o = out[pad + d];
      if (v == o || v == 1) continue;
      if (o == 1) {
        o = v;
        continue;
      }
      std::string all;
      for (const auto& x : shapes) all += (all.empty() ? "" : " and ") + shape_string(x);
      ctx.fail("shapes " + all + " do not broadcast (dim " + std::to_string(pad + d) + ")");
    }
  }
  return out;
}

// ---------------------------------------------------------------- broadcast iteration

/// Iterates the output of a broadcast of N inputs as runs along the innermost (collapsed)
/// dimension. Adjacent dims in which every input is either full or broadcast alike are merged,
/// so same-shape inputs become one run, [N,C]+[C] rows, [N,C]+[N,1] columns, and a scalar a
/// stride of 0. Within a run input i advances by inner_stride(i), which is 0 or 1.
class BroadcastIter {
 public:
  BroadcastIter(const KernelContext& ctx, const std::vector<std::vector<int64_t>>& shapes)
      : shape_(broadcast_shapes(ctx, shapes)), n_(shapes.size()) {
    size_ = 1;
    for (int64_t d : shape_) size_ *= d;
    const size_t rank = shape_.size();
    // Per kept dim: which inputs are full there (bit i set); dims of size 1 in the output drop out.
    std::vector<uint64_t> full_mask;
    for (size_t d = 0; d < rank; ++d) {
      if (shape_[d] == 1) continue;
      uint64_t mask = 0;
      for (size_t i = 0; i < n_; ++i) {
        const auto& s = shapes[i];
        const size_t pad = rank - s.size();
        if (d >= pad && s[d - pad] != 1) mask |= uint64_t{1} << i;
      }
      if (!full_mask.empty() && full_mask.back() == mask) {
        dims_.back() *= shape_[d];
      } else {
        full_mask.push_back(mask);
        dims_.push_back(shape_[d]);
      }
    }
    if (dims_.empty()) {
      dims_.push_back(1);
      full_mask.push_back(0);
    }
    const size_t k = dims_.size();
    strides_.assign(n_ * k, 0);
    for (size_t i = 0; i < n_; ++i) {
      int64_t acc = 1;
      for (size_t d = k; d-- > 0;) {
        if (full_mask[d] >> i & 1) {
          strides_[i * k + d] = acc;
          acc *= dims_[d];
        }
      }
    }
  }

  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t size() const { return size_; }
  size_t inputs() const { return n_; }
  /// Stride of input i along the innermost collapsed dim (0 or 1).
  int64_t inner_stride(size_t i) const { return strides_[i * dims_.size() + dims_.size() - 1]; }
  /// True when every input has the output's shape (one contiguous run).
  bool all_full() const {
    if (dims_.size() != 1) return false;
    for (size_t i = 0; i < n_; ++i)
      if (strides_[i] != 1 && dims_[0] != 1) return false;
    return true;
  }

  /// Calls fn(out_offset, count, in_offsets) for the runs covering output [begin, end); input i
  /// reads elements in_offsets[i] + j * inner_stride(i), j < count.
  template <class F>
  void for_runs(int64_t begin, int64_t end, F&& fn) const {
    const size_t k = dims_.size();
    std::vector<int64_t> idx(k), off(n_, 0);
    int64_t rest = begin;
    for (size_t d = k; d-- > 0;) {
      idx[d] = rest % dims_[d];
      rest /= dims_[d];
      for (size_t i = 0; i < n_; ++i) off[i] += idx[d] * strides_[i * k + d];
    }
    const int64_t inner = dims_[k - 1];
    int64_t pos = begin;
    while (pos < end) {
      const int64_t count = std::min(inner - idx[k - 1], end - pos);
      fn(pos, count, static_cast<const int64_t*>(off.data()));
      pos += count;
      idx[k - 1] += count;
      for (size_t i = 0; i < n_; ++i) off[i] += count * strides_[i * k + k - 1];
      if (idx[k - 1] < inner || pos >= end) continue;
      // Carry into the outer dims.
      idx[k - 1] = 0;
      for (size_t i = 0; i < n_; ++i) off[i] -= inner * strides_[i * k + k - 1];
      for (size_t d = k - 1; d-- > 0;) {
        ++idx[d];
        for (size_t i = 0; i < n_; ++i) off[i] += strides_[i * k + d];
        if (idx[d] < dims_[d]) break;
        idx[d] = 0;
        for (size_t i = 0; i < n_; ++i) off[i] -= dims_[d] * strides_[i * k + d];
      }
    }
  }

  /// for_runs over the whole output, split into parallel chunks.
  template <class F>
  void parallel_runs(F&& fn, int64_t grain = kElementwiseGrain) const {
    parallel_ranges(size_, grain, [&](int64_t b, int64_t e) { for_runs(b, e, fn); });
  }

 private:
  std::vector<int64_t> shape_;
  size_t n_;
  int64_t size_ = 0;
  std::vector<int64_t> dims_;     // collapsed output dims (at least one)
  std::vector<int64_t> strides_;  // [input][dim] element strides, 0 where broadcast
};

/// out[j] = op(a[j], b[j]) over a broadcast of two inputs, with the inner loop specialised for
/// same-shape runs, a broadcast scalar on either side (row/column broadcasts reduce to these).
/// A, B, O are storage types; op maps (A, B) -> O on storage values.
template <class A, class B, class O, class Op>
void broadcast_binary(const BroadcastIter& it, const A* a, const B* b, O* out, Op op) {
  const int64_t sa = it.inner_stride(0), sb = it.inner_stride(1);
  it.parallel_runs([&](int64_t o, int64_t n, const int64_t* off) {
    const Op f = op;  // a local copy, so that its state is known not to alias out (see map_unary)
    const A* pa = a + off[0];
    const B* pb = b + off[1];
    O* po = out + o;
    if (sa == 1 && sb == 1) {
      for (int64_t j = 0; j < n; ++j) po[j] = f(pa[j], pb[j]);
    } else if (sa == 1) {
      const B y = *pb;
      for (int64_t j = 0; j < n; ++j) po[j] = f(pa[j], y);
    } else if (sb == 1) {
      const A x = *pa;
      for (int64_t j = 0; j < n; ++j) po[j] = f(x, pb[j]);
    } else {
      const O v = f(*pa, *pb);
      for (int64_t j = 0; j < n; ++j) po[j] = v;
    }
  });
}

// ---------------------------------------------------------------- vectorized float32 exp

/// Four floats in one SSE/NEON register (GCC/Clang vector extension).
typedef float f32x4 __attribute__((vector_size(16)));
typedef int32_t i32x4 __attribute__((vector_size(16)));
/// Floats in the widest register the build targets (AVX-512, AVX, else SSE/NEON); wider
/// vectors than the target has would change the ABI of the by-value helpers (-Wpsabi).
#if defined(__AVX512F__)
constexpr int kWideLanes = 16;
#elif defined(__AVX__)
constexpr int kWideLanes = 8;
#else
constexpr int kWideLanes = 4;
#endif
typedef float f32xw __attribute__((vector_size(kWideLanes * 4)));
typedef int32_t i32xw __attribute__((vector_size(kWideLanes * 4)));

/// Every other float of two vectors, starting from the first (kOdd = 0) or the second (kOdd = 1)
/// of each pair: a stride-2 read (__builtin_shufflevector, which GCC 12 and clang both have).
template <int kOdd>
inline f32xw every_other_float(f32xw a, f32xw b) {
  constexpr int o = kOdd;
#if defined(__AVX512F__)
  return __builtin_shufflevector(a, b, o, o + 2, o + 4, o + 6, o + 8, o + 10, o + 12, o + 14, o + 16, o + 18, o + 20,
                                 o + 22, o + 24, o + 26, o + 28, o + 30);
#elif defined(__AVX__)
  return __builtin_shufflevector(a, b, o, o + 2, o + 4, o + 6, o + 8, o + 10, o + 12, o + 14);
#else
  return __builtin_shufflevector(a, b, o, o + 2, o + 4, o + 6);
#endif
}

/// exp of a vector of floats (F) with int32 lanes I of the same count: range reduction by ln 2
/// (split in two constants), a degree-6 polynomial on [-ln2/2, ln2/2] and the power of two built
/// in the exponent bits (in two halves so that denormal results and 2^128 overflow come out
/// right). Max relative error ~1e-7; NaN stays NaN, +Inf gives +Inf, large negative inputs give 0
/// or a denormal. Every lane goes through the same operations, so the width does not change
/// the bits.
template <class F, class I>
inline F exp_vec(F x) {
  const F lo = F{} - 103.9f, hi = F{} + 88.73f;
  F c = x < lo ? lo : x;
  c = c > hi ? hi : c;
  const F t = c * 1.44269504088896341f;
  const I n = __builtin_convertvector(t + (t >= 0 ? F{} + 0.5f : F{} - 0.5f), I);
  const F fn = __builtin_convertvector(n, F);
  F r = c - fn * 0.693359375f;
  r = r + fn * 2.12194440e-4f;
  F p = F{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const I n1 = n >> 1, n2 = n - n1;
  const F res = p * (F)((n1 + 127) << 23) * (F)((n2 + 127) << 23);  // bit casts
  return x != x ? x : res;
}

/// erf of a vector of floats (F) with int32 lanes I of the same count, within 2 units in the
/// last place of the correctly rounded value (checked on every float in [0, 4.5]): odd, so
/// computed on |x| with the sign put back; x * (2/sqrt(pi) + x^2 Q(x^2)) on [0, 1], polynomials in x - 1.75 on
/// [1, 2.5] and in x - 3.25 on [2.5, 4] (least-squares fits at Chebyshev points, coefficients
/// refitted after rounding each to float), 1 from 4 on (erf(4) rounds to 1). NaN stays NaN.
template <class F, class I>
inline F erf_vec(F x) {
  const I sign_bit = I{} + static_cast<int32_t>(0x80000000u);
  const I sign = (I)x & sign_bit;
  F a = (F)((I)x & ~sign_bit);
  a = a > 4.0f ? F{} + 4.0f : a;  // NaN compares false and stays
  const F s = a * a;
  // x * (2/sqrt(pi) + x^2 Q(x^2)), 2/sqrt(pi) split in two floats so that small x keep its digits.
  F q1 = F{} + 8.348216943e-05f;
  q1 = q1 * s - 8.152913651e-04f;
  q1 = q1 * s + 5.203620065e-03f;
  q1 = q1 * s - 2.686125040e-02f;
  q1 = q1 * s + 1.128374487e-01f;
  q1 = q1 * s - 3.761263788e-01f;
  const F tail = a * (q1 * s - 5.863538277e-08f);
  const F p1 = a * 1.128379226e+00f + tail;
  const F t2 = a - 1.75f;
  F p2 = F{} - 3.616897739e-04f;
  p2 = p2 * t2 + 8.621892193e-04f;
  p2 = p2 * t2 + 7.046169485e-04f;
  p2 = p2 * t2 - 6.036617793e-03f;
  p2 = p2 * t2 + 8.959175088e-03f;
  p2 = p2 * t2 + 6.618403830e-03f;
  p2 = p2 * t2 - 4.809906334e-02f;
  p2 = p2 * t2 + 9.015791863e-02f;
  p2 = p2 * t2 - 9.235668927e-02f;
  p2 = p2 * t2 + 5.277497694e-02f;
  p2 = p2 * t2 + 9.866716862e-01f;
  const F t3 = a - 3.25f;
  F p3 = F{} - 7.927567640e-05f;
  p3 = p3 * t3 + 1.992735488e-04f;
  p3 = p3 * t3 - 2.675559663e-04f;
  p3 = p3 * t3 + 3.019646974e-04f;
  p3 = p3 * t3 - 2.848315053e-04f;
  p3 = p3 * t3 + 1.976166532e-04f;
  p3 = p3 * t3 - 9.513397526e-05f;
  p3 = p3 * t3 + 2.911387492e-05f;
  p3 = p3 * t3 + 9.999957085e-01f;
  F r = a <= 1.0f ? p1 : (a <= 2.5f ? p2 : p3);
  r = a >= 4.0f ? F{} + 1.0f : r;
  r = r > 1.0f ? F{} + 1.0f : r;
  return (F)((I)r | sign);
}

/// exp_vec on four floats.
inline f32x4 exp_f32x4(f32x4 x) { return exp_vec<f32x4, i32x4>(x); }

/// Applies a function of vectors V of floats to n contiguous floats (the tail padded with zeros).
template <class V, class F>
inline void map_f32_vec(const float* x, float* y, int64_t n, F f) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(float);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    V v;
    std::memcpy(&v, x + i, sizeof(v));
    v = f(v);
    std::memcpy(y + i, &v, sizeof(v));
  }
  if (i < n) {
    V v{};
    std::memcpy(&v, x + i, static_cast<size_t>(n - i) * sizeof(float));
    v = f(v);
    std::memcpy(y + i, &v, static_cast<size_t>(n - i) * sizeof(float));
  }
}

/// Applies a four-lane function to n contiguous floats (the tail padded with zeros).
template <class F>
inline void map_f32x4(const float* x, float* y, int64_t n, F f) {
  map_f32_vec<f32x4>(x, y, n, f);
}

/// y = exp(x - shift) for n floats, kWideLanes at a time (the bits of four lanes: they are
/// independent).
inline void exp_shifted_f32(const float* x, float* y, int64_t n, float shift) {
  map_f32_vec<f32xw>(x, y, n, [shift](f32xw v) { return exp_vec<f32xw, i32xw>(v - shift); });
}

/// y = 1 / (1 + exp(-x)) for n floats, computed from exp(-|x|) so neither side overflows;
/// kWideLanes at a time (the same bits as four: the lanes are independent).
inline void sigmoid_f32(const float* x, float* y, int64_t n) {
  map_f32_vec<f32xw>(x, y, n, [](f32xw v) {
    const f32xw e = exp_vec<f32xw, i32xw>(v < 0 ? v : -v);
    const f32xw s = 1.0f / (1.0f + e);
    // Below -104 the true value is under the smallest float: flush it (sigmoid(-inf) == 0).
    const f32xw neg = v < -104.0f ? f32xw{} : e * s;
    return v >= 0 ? s : neg;
  });
}

/// y = tanh(x) for n floats, kWideLanes at a time: below |x| = 0.625 the odd polynomial
/// x + x^3 P(x^2) of Cephes' tanhf (no cancellation near 0), above it 1 - 2 / (exp(2|x|) + 1)
/// with the sign put back; exp saturates, so tanh(+-inf) = +-1. NaN stays NaN.
inline void tanh_f32(const float* x, float* y, int64_t n) {
  map_f32_vec<f32xw>(x, y, n, [](f32xw v) {
    const i32xw sign_bit = i32xw{} + static_cast<int32_t>(0x80000000u);
    const i32xw sign = (i32xw)v & sign_bit;
    const f32xw a = (f32xw)((i32xw)v & ~sign_bit);
    const f32xw z = a * a;
    f32xw p = f32xw{} - 5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    const f32xw small = p * z * a + a;
    const f32xw e = exp_vec<f32xw, i32xw>(a + a);
    const f32xw large = 1.0f - 2.0f / (e + 1.0f);
    // Computed on |x|, the sign put back (tanh(-0) = -0).
    const f32xw r = (f32xw)((i32xw)(a < 0.625f ? small : large) | sign);
    return v != v ? v : r;
  });
}

// ---------------------------------------------------------------- activations
// One definition each, shared by the activation kernels and the activations fused into Conv
// (runner/cpu/epilogue.h): the fused output must be the same bits as the nodes' one by one.

template <class C>
inline C relu_value(C v) {
  return v < 0 ? C(0) : v;
}
template <class C>
inline C leaky_relu_value(C v, C alpha) {
  return v < 0 ? v * alpha : v;
}
/// NaN propagates, as in the spec's definition (numpy clip).
template <class C>
inline C hard_sigmoid_value(C v, C alpha, C beta) {
  if (v != v) return v;
  return std::max(C(0), std::min(C(1), alpha * v + beta));
}
template <class C>
inline C hard_swish_value(C v) {
  return v * std::max(C(0), std::min(C(1), v / C(6) + C(0.5)));
}
/// min(max(v, lo), hi) as two comparisons: NaN stays NaN, and lo > hi gives hi (the spec's rule).
template <class C>
inline C clip_value(C v, C lo, C hi) {
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

/// out[j] = op(in[j]) for a contiguous tensor, in parallel chunks. The loop works on local
/// copies of op and the pointers: read through the captured references, op's state (LeakyRelu's
/// alpha, Clip's bounds) might alias out, and the loop would stay scalar with a branch per element.
template <class I, class O, class Op>
void map_unary(const I* in, O* out, int64_t n, Op op) {
  parallel_ranges(n, kElementwiseGrain, [&](int64_t b, int64_t e) {
    const Op f = op;
    const I* src = in;
    O* dst = out;
    for (int64_t j = b; j < e; ++j) dst[j] = f(src[j]);
  });
}

}  // namespace onnxtool::runner::cpu
