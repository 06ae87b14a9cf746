// Shared integer matrix product of the CPU kernels (MatMulInteger, QLinearMatMul, ConvInteger,
// QLinearConv): C[M,N] (int32) = sum_k (A[m,k] - za[m]) * (B[k,n] - zb[n]) for uint8/int8
// operands with per-row / per-column zero points.
//
// The operands minus their zero points fit int16 exactly, so both are packed as int16 and
// multiplied in int16 pairs summed into int32 lanes (vpdpwssd, AVX-512BW/AVX2 vpmaddwd + add, or
// a plain loop), or, with AVX-512 VNNI and VBMI, kept 8-bit and multiplied in uint8 x int8 quads
// (vpdpbusd) with zero-point correction terms. Every product is exact and the sums wrap modulo
// 2^32 (as int32 two's complement), so the result never depends on the order of the terms, the
// code path or the thread count.
#pragma once

#include <cstdint>
#include <vector>

namespace onnxtool::runner::cpu {

/// Columns per packed B panel (and per register tile of C).
constexpr int64_t kIntGemmPanel = 32;

/// An 8-bit operand: row-major, uint8 or int8, `ld` elements between rows.
struct Int8Matrix {
  const void* data = nullptr;
  bool is_signed = false;
  int64_t ld = 0;
};

/// int16 elements of one packed row of A (a buffer of M rows holds M times this); the layout
/// depends on the instruction set the runner is built for (int16 pairs or 8-bit quads).
int64_t int_gemm_a_stride(int64_t k);

/// int16 elements of the packed B of a [K, N] operand: ceil(N / kIntGemmPanel) panels of equal
/// size, so panel p starts at p * int_gemm_packed_b_size(k, kIntGemmPanel).
int64_t int_gemm_packed_b_size(int64_t k, int64_t n);

/// Packs A [M, K] with its per-row zero points (za: M values) into M rows of int_gemm_a_stride(K).
void int_gemm_pack_a(int64_t m, int64_t k, const Int8Matrix& a, const int32_t* za, int16_t* out);

/// Packs B [K, N] with its per-column zero points (zb: N values) into panels.
void int_gemm_pack_b(int64_t k, int64_t n, const Int8Matrix& b, const int32_t* zb, int16_t* out);

/// C[M, N] = packed A x packed B over depth K (single-threaded), `ldc` elements between rows of
/// C; `pa` from int_gemm_pack_a, `pb` from int_gemm_pack_b.
void int_gemm_packed(int64_t m, int64_t n, int64_t k, const int16_t* pa, const int16_t* pb, int32_t* c, int64_t ldc);

/// C[M, N] = (A - za) x (B - zb), row-major C with `ldc` elements between rows; packs both
/// operands (for one or two rows of A, none: a plain loop over rows of B is cheaper) and runs in
/// parallel over blocks of C when the product is large enough.
void int_gemm(int64_t m, int64_t n, int64_t k, const Int8Matrix& a, const int32_t* za, const Int8Matrix& b,
              const int32_t* zb, int32_t* c, int64_t ldc);

}  // namespace onnxtool::runner::cpu
