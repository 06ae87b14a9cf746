// Shared helpers of the tensor-manipulation kernels (tensor_ops.cpp, indexing.cpp): moving
// elements by their size whatever their type, strided copies, sub-byte unpacking, index reading.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "runner/cpu/elementwise_util.h"

namespace onnxtool::runner::cpu {

/// Row-major coordinates of linear index `i` in `shape`.
inline void unravel(int64_t i, const std::vector<int64_t>& shape, int64_t* coords) {
  for (size_t d = shape.size(); d-- > 0;) {
    coords[d] = i % shape[d];
    i /= shape[d];
  }
}

// ---------------------------------------------------------------- elements by size

/// An opaque element of N bytes (complex128 and anything else without a C++ type).
template <size_t N>
struct Blob {
  unsigned char b[N];
};

/// Calls f(TypeTag<E>{}) with E a type of the element's size (uint8_t, uint16_t, uint32_t,
/// uint64_t, Blob<16>) or std::string for string tensors: kernels that only move elements are
/// written once for every type. Returns false for sub-byte and undefined types.
template <class F>
bool visit_storage(DataType t, F&& f) {
  if (t == DataType::kString) return f(TypeTag<std::string>{}), true;
  switch (ir::data_type_bits(t)) {
    case 8: return f(TypeTag<uint8_t>{}), true;
    case 16: return f(TypeTag<uint16_t>{}), true;
    case 32: return f(TypeTag<uint32_t>{}), true;
    case 64: return f(TypeTag<uint64_t>{}), true;
    case 128: return f(TypeTag<Blob<16>>{}), true;
    default: return false;
  }
}

/// visit_storage() that fails the node naming the unsupported type.
template <class F>
void visit_storage_or_fail(const KernelContext& ctx, DataType t, F&& f) {
  if (!visit_storage(t, std::forward<F>(f)))
    ctx.fail(ctx.node().op_type + " does not support element type " + type_name(t));
}

/// The elements of a tensor as E (std::string for string tensors).
template <class E>
const E* elements(const Tensor& t) {
  if constexpr (std::is_same_v<E, std::string>) return t.strings().data();
  else return static_cast<const E*>(t.raw());
}
template <class E>
E* mutable_elements(Tensor& t) {
  if constexpr (std::is_same_v<E, std::string>) return t.mutable_strings().data();
  else return static_cast<E*>(t.mutable_raw());
}

template <class E>
inline void copy_elements(E* dst, const E* src, int64_t n) {
  if (n <= 0) return;
  if constexpr (std::is_trivially_copyable_v<E>) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(E));
  else std::copy(src, src + n, dst);
}

template <class E>
inline void fill_elements(E* dst, const E& v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = v;
}

// ---------------------------------------------------------------- sub-byte types

/// True for the packed types (int4, uint4, float4e2m1, int2, uint2).
inline bool is_sub_byte(DataType t) {
  const int bits = ir::data_type_bits(t);
  return bits > 0 && bits < 8;
}

/// One byte per element holding the element's bit code (low bits first in the packed storage).
inline Tensor unpack_sub_byte(const Tensor& t) {
  const int bits = ir::data_type_bits(t.dtype());
  const int per_byte = 8 / bits;
  const unsigned mask = (1u << bits) - 1;
  Tensor out(DataType::kUInt8, t.shape());
  const auto* src = static_cast<const uint8_t*>(t.raw());
  auto* dst = out.mutable_data<uint8_t>();
  for (int64_t i = 0; i < t.size(); ++i)
    dst[i] = static_cast<uint8_t>(src[i / per_byte] >> (bits * (i % per_byte)) & mask);
  return out;
}

/// Packs one-byte codes (from unpack_sub_byte) into a tensor of the sub-byte type `type`.
inline Tensor pack_sub_byte(const Tensor& codes, DataType type) {
  const int bits = ir::data_type_bits(type);
  const int per_byte = 8 / bits;
  const unsigned mask = (1u << bits) - 1;
  Tensor out(type, codes.shape());
  auto* dst = static_cast<uint8_t*>(out.mutable_raw());
  std::memset(dst, 0, out.bytes());
  const auto* src = codes.data<uint8_t>();
  for (int64_t i = 0; i < codes.size(); ++i)
    dst[i / per_byte] = static_cast<uint8_t>(dst[i / per_byte] | (src[i] & mask) << (bits * (i % per_byte)));
  return out;
}

// ---------------------------------------------------------------- shapes and indices

/// Element i of an 8-bit or int32 integer tensor (data and zero points of the integer kernels)
/// as int32; 0 for other types.
inline int32_t int_at(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::kUInt8: return t.data<uint8_t>()[i];
    case DataType::kInt8: return t.data<int8_t>()[i];
    case DataType::kInt32: return t.data<int32_t>()[i];
    default: return 0;
  }
}

/// A float16/bfloat16 tensor as float32, for kernels that compute in float32 only.
inline Tensor widen_to_float(const Tensor& t) {
  Tensor out(DataType::kFloat, t.shape());
  if (t.dtype() == DataType::kFloat16) {
    halves_to_floats(t.data<uint16_t>(), out.mutable_data<float>(), t.size());
    return out;
  }
  for (int64_t i = 0; i < t.size(); ++i) out.mutable_data<float>()[i] = bfloat16_to_float(t.data<uint16_t>()[i]);
  return out;
}

/// A float32 result back in the kernel's float16/bfloat16 type (rounded to nearest even).
inline Tensor narrow_from_float(const Tensor& t, DataType type) {
  Tensor out(type, t.shape());
  if (type == DataType::kFloat16) {
    floats_to_halves(t.data<float>(), out.mutable_data<uint16_t>(), t.size());
    return out;
  }
  for (int64_t i = 0; i < t.size(); ++i) out.mutable_data<uint16_t>()[i] = float_to_bfloat16(t.data<float>()[i]);
  return out;
}

/// The single value of a one-element int32/int64 tensor.
inline int64_t read_int_scalar(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.size() != 1) ctx.fail(std::string(what) + " must hold one element, has shape " + shape_string(t.shape()));
  return read_int_list(ctx, t, what)[0];
}

/// An index in [-dim, dim) made non-negative; fails the node otherwise.
inline int64_t checked_index(const KernelContext& ctx, int64_t index, int64_t dim, const char* what) {
  if (index < -dim || index >= dim)
    ctx.fail(std::string(what) + " " + std::to_string(index) + " is out of range for a dimension of " +
             std::to_string(dim));
  return index < 0 ? index + dim : index;
}

// ---------------------------------------------------------------- strided copy

/// A copy plan: out[i_0, ..., i_k-1] = in[base + sum i_d * in_strides[d]] over `dims`, with
/// dims of size 1 dropped and adjacent dims merged where their strides chain. Strides may be 0
/// (broadcast) or negative (reversed slices). Output is written densely in row-major order.
struct StridedPlan {
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
  int64_t base = 0;
  int64_t size = 1;

  StridedPlan(const std::vector<int64_t>& out_dims, const std::vector<int64_t>& in_strides, int64_t in_base)
      : base(in_base) {
    for (int64_t d : out_dims) size *= d;
    for (size_t i = 0; i < out_dims.size(); ++i) {
      if (out_dims[i] == 1) continue;
      if (!dims.empty() && strides.back() == in_strides[i] * out_dims[i]) {
        dims.back() *= out_dims[i];
        strides.back() = in_strides[i];
        continue;
      }
      dims.push_back(out_dims[i]);
      strides.push_back(in_strides[i]);
    }
    if (dims.empty()) {
      dims.push_back(1);
      strides.push_back(1);
    }
  }
};

/// Tile edge of the blocked 2-D transpose.
constexpr int64_t kTransposeTile = 32;

/// Executes a StridedPlan, in parallel chunks of whole inner rows. Inner rows of stride 1 are
/// block copies, of stride 0 fills; a plan whose two innermost dims are a transposition (inner
/// stride != 1, next stride 1) is copied in cache-sized tiles.
template <class E>
void strided_copy(const StridedPlan& p, const E* in, E* out) {
  if (p.size == 0) return;
  const size_t k = p.dims.size();
  const int64_t inner = p.dims[k - 1];
  const int64_t si = p.strides[k - 1];
  if (k >= 2 && si != 1 && p.strides[k - 2] == 1 && inner > 1 && p.dims[k - 2] > 1) {
    // Batched transpose: out[b][r][c] = in[b_off + r + c * si], r < rows, c < inner.
    const int64_t rows = p.dims[k - 2];
    const int64_t batches = p.size / (rows * inner);
    const int64_t row_tiles = (rows + kTransposeTile - 1) / kTransposeTile;
    // A tile is up to kTransposeTile rows of `inner` elements; aim at ~16K elements per chunk.
    const int64_t grain = std::max<int64_t>(1, 16384 / (kTransposeTile * inner));
    parallel_ranges(batches * row_tiles, grain, [&](int64_t b0, int64_t b1) {
      for (int64_t t = b0; t < b1; ++t) {
        const int64_t b = t / row_tiles;
        const int64_t r0 = (t % row_tiles) * kTransposeTile;
        const int64_t r1 = std::min(rows, r0 + kTransposeTile);
        int64_t off = p.base;
        int64_t rest = b;
        for (size_t d = k - 2; d-- > 0;) {
          off += (rest % p.dims[d]) * p.strides[d];
          rest /= p.dims[d];
        }
        E* o = out + b * rows * inner;
        for (int64_t c0 = 0; c0 < inner; c0 += kTransposeTile) {
          const int64_t c1 = std::min(inner, c0 + kTransposeTile);
          for (int64_t r = r0; r < r1; ++r) {
            const E* src = in + off + r;
            E* dst = o + r * inner;
            for (int64_t c = c0; c < c1; ++c) dst[c] = src[c * si];
          }
        }
      }
    });
    return;
  }
  const int64_t rows = p.size / inner;
  parallel_ranges(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)), [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> idx(k, 0);
    int64_t off = p.base;
    int64_t rest = r0;
    for (size_t d = k - 1; d-- > 0;) {
      idx[d] = rest % p.dims[d];
      rest /= p.dims[d];
      off += idx[d] * p.strides[d];
    }
    for (int64_t r = r0; r < r1; ++r) {
      E* dst = out + r * inner;
      const E* src = in + off;
      if (si == 1) copy_elements(dst, src, inner);
      else if (si == 0) fill_elements(dst, *src, inner);
      else
        for (int64_t j = 0; j < inner; ++j) dst[j] = src[j * si];
      for (size_t d = k - 1; d-- > 0;) {
        off += p.strides[d];
        if (++idx[d] < p.dims[d]) break;
        off -= idx[d] * p.strides[d];
        idx[d] = 0;
      }
    }
  });
}

/// A new tensor of `type` and `out_dims` filled by a strided copy from `in` (any element type but
/// the sub-byte ones, which callers unpack first).
inline Tensor strided_tensor(const KernelContext& ctx, const Tensor& in, const std::vector<int64_t>& out_dims,
                             const std::vector<int64_t>& in_strides, int64_t base, std::vector<int64_t> out_shape) {
  Tensor out(in.dtype(), std::move(out_shape));
  const StridedPlan plan(out_dims, in_strides, base);
  visit_storage_or_fail(ctx, in.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    strided_copy(plan, elements<E>(in), mutable_elements<E>(out));
  });
  return out;
}

/// Runs `fn` on `x` with sub-byte elements unpacked to one byte each and packs its result back,
/// so layout kernels need not know about packed types.
template <class F>
Tensor with_unpacked(const Tensor& x, F&& fn) {
  if (!is_sub_byte(x.dtype())) return fn(x);
  return pack_sub_byte(fn(unpack_sub_byte(x)), x.dtype());
}

/// The part [start, start + len) of `x` along `axis`.
inline Tensor axis_part(const KernelContext& ctx, const Tensor& x, size_t axis, int64_t start, int64_t len) {
  std::vector<int64_t> shape = x.shape();
  shape[axis] = len;
  const int64_t inner = dims_product(x.shape(), axis + 1, x.rank());
  const std::vector<int64_t> dims{dims_product(x.shape(), 0, axis), len, inner};
  const std::vector<int64_t> strides{x.dim(axis) * inner, inner, 1};
  return with_unpacked(x, [&](const Tensor& t) { return strided_tensor(ctx, t, dims, strides, start * inner, shape); });
}

}  // namespace onnxtool::runner::cpu
