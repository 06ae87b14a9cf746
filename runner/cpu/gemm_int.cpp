// Integer GEMM of the CPU kernels: int16 packing of 8-bit operands minus their zero points and
// an int16-pair multiply-accumulate register tile (see gemm_int.h for why the bytes never depend
// on the code path or the thread count).
#include "runner/cpu/gemm_int.h"

#include <algorithm>
#include <cstring>

#if defined(__AVX2__) || defined(__AVX512BW__)
#include <immintrin.h>
#endif

#include "runner/cpu/elementwise_util.h"

namespace onnxtool::runner::cpu {

namespace {

constexpr int64_t kNr = kIntGemmPanel;
/// K values per block: an A register tile's slice (rows x 2 KB) stays in L1 and the B panels'
/// slice in L2 while C is accumulated block by block.
constexpr int64_t kKBlock = 512;
/// Up to this many rows of A, int_gemm multiplies without packing.
constexpr int64_t kFewRows = 2;

#if defined(__AVX512BW__)
constexpr int kMr = 8;  // rows per register tile: 8 x 2 accumulators of 16 int32
#elif defined(__AVX2__)
constexpr int kMr = 4;  // rows per register tile: 4 x 2 accumulators of 8 int32 (per half panel)
#else
constexpr int kMr = 4;
#endif

/// The pair (p[0], p[1]) as one 32-bit value, for a broadcast.
[[maybe_unused]] inline int32_t load_pair(const int16_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// Stores (or adds to C when `accumulate`) the first `cols` of `MR` rows of 32 int32 sums,
/// wrapping modulo 2^32.
template <int MR>
void store_tile(const uint32_t (&acc)[MR][kNr], int32_t* c, int64_t ldc, int64_t cols, bool accumulate) {
  for (int r = 0; r < MR; ++r) {
    int32_t* cr = c + r * ldc;
    for (int64_t j = 0; j < cols; ++j)
      cr[j] = static_cast<int32_t>(accumulate ? static_cast<uint32_t>(cr[j]) + acc[r][j] : acc[r][j]);
  }
}

/// The portable register tile: MR rows of A (pairs `pairs` long, `lda` apart) times one packed B
/// panel slice; products and pair sums fit int32 exactly, the running sums wrap as uint32.
template <int MR>
[[maybe_unused]] void tile_portable(const int16_t* a, int64_t lda, const int16_t* b, int64_t pairs, int32_t* c, int64_t ldc,
                                    int64_t cols, bool accumulate) {
  uint32_t acc[MR][kNr] = {};
  for (int64_t q = 0; q < pairs; ++q) {
    const int16_t* bq = b + q * 2 * kNr;
    for (int r = 0; r < MR; ++r) {
      const int32_t a0 = a[r * lda + 2 * q], a1 = a[r * lda + 2 * q + 1];
      for (int64_t j = 0; j < kNr; ++j)
        acc[r][j] += static_cast<uint32_t>(a0 * bq[2 * j] + a1 * bq[2 * j + 1]);
    }
  }
  store_tile<MR>(acc, c, ldc, cols, accumulate);
}

#if defined(__AVX512BW__)
/// AVX-512 register tile: MR rows x 32 columns in 2 x MR accumulators; a broadcast A pair times
/// 16 B pairs per instruction (vpdpwssd with VNNI, else vpmaddwd + vpaddd; both exact, wrapping).
template <int MR>
void tile_avx512(const int16_t* a, int64_t lda, const int16_t* b, int64_t pairs, int32_t* c, int64_t ldc, int64_t cols,
                 bool accumulate) {
  __m512i acc[MR][2];
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
  for (int64_t q = 0; q < pairs; ++q) {
    const __m512i b0 = _mm512_loadu_si512(b + q * 2 * kNr);
    const __m512i b1 = _mm512_loadu_si512(b + q * 2 * kNr + kNr);
    for (int r = 0; r < MR; ++r) {
      const __m512i av = _mm512_set1_epi32(load_pair(a + r * lda + 2 * q));
#if defined(__AVX512VNNI__)
      acc[r][0] = _mm512_dpwssd_epi32(acc[r][0], av, b0);
      acc[r][1] = _mm512_dpwssd_epi32(acc[r][1], av, b1);
#else
      acc[r][0] = _mm512_add_epi32(acc[r][0], _mm512_madd_epi16(av, b0));
      acc[r][1] = _mm512_add_epi32(acc[r][1], _mm512_madd_epi16(av, b1));
#endif
    }
  }
  const __mmask16 m0 = cols >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32 ? __mmask16(0xFFFF) : cols > 16 ? static_cast<__mmask16>((1u << (cols - 16)) - 1) : __mmask16(0);
  for (int r = 0; r < MR; ++r) {
    int32_t* cr = c + r * ldc;
    __m512i v0 = acc[r][0], v1 = acc[r][1];
    if (accumulate) {
      v0 = _mm512_add_epi32(v0, _mm512_maskz_loadu_epi32(m0, cr));
      v1 = _mm512_add_epi32(v1, _mm512_maskz_loadu_epi32(m1, cr + 16));
    }
    _mm512_mask_storeu_epi32(cr, m0, v0);
    _mm512_mask_storeu_epi32(cr + 16, m1, v1);
  }
}
#elif defined(__AVX2__)
/// AVX2 register tile: MR rows x 32 columns, as two halves of 16 columns in 2 x MR accumulators
/// of vpmaddwd + vpaddd (exact, wrapping).
template <int MR>
void tile_avx2(const int16_t* a, int64_t lda, const int16_t* b, int64_t pairs, int32_t* c, int64_t ldc, int64_t cols,
               bool accumulate) {
  uint32_t out[MR][kNr];
  for (int h = 0; h < 2; ++h) {
    __m256i acc[MR][2];
    for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
    for (int64_t q = 0; q < pairs; ++q) {
      const int16_t* bq = b + q * 2 * kNr + h * kNr;
      const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bq));
      const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bq + 16));
      for (int r = 0; r < MR; ++r) {
        const __m256i av = _mm256_set1_epi32(load_pair(a + r * lda + 2 * q));
        acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(av, b0));
        acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(av, b1));
      }
    }
    for (int r = 0; r < MR; ++r) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(&out[r][h * 16]), acc[r][0]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(&out[r][h * 16 + 8]), acc[r][1]);
    }
  }
  store_tile<MR>(out, c, ldc, cols, accumulate);
}
#endif

template <int MR>
void tile(const int16_t* a, int64_t lda, const int16_t* b, int64_t pairs, int32_t* c, int64_t ldc, int64_t cols,
          bool accumulate) {
#if defined(__AVX512BW__)
  tile_avx512<MR>(a, lda, b, pairs, c, ldc, cols, accumulate);
#elif defined(__AVX2__)
  tile_avx2<MR>(a, lda, b, pairs, c, ldc, cols, accumulate);
#else
  tile_portable<MR>(a, lda, b, pairs, c, ldc, cols, accumulate);
#endif
}

using TileFn = void (*)(const int16_t*, int64_t, const int16_t*, int64_t, int32_t*, int64_t, int64_t, bool);

/// The register tile for `rows` (1..kMr) rows.
TileFn tile_for(int64_t rows) {
  static constexpr TileFn kTiles[] = {
      tile<1>, tile<2>, tile<3>, tile<4>,
#if defined(__AVX512BW__)
      tile<5>, tile<6>, tile<7>, tile<8>,
#endif
  };
  static_assert(sizeof kTiles / sizeof kTiles[0] == kMr);
  return kTiles[rows - 1];
}

/// Interleaves rows r0 and r1 (r1 null: zeros) of `n` int16 into pair row `q` of every panel.
void pack_pair_rows(const int16_t* r0, const int16_t* r1, int64_t n, int64_t kp, int64_t q, int16_t* out) {
  const int64_t panels = (n + kNr - 1) / kNr;
  for (int64_t p = 0; p < panels; ++p) {
    int16_t* dst = out + p * kp * kNr + q * 2 * kNr;
    const int64_t j0 = p * kNr, cols = std::min(kNr, n - j0);
#if defined(__AVX512BW__)
    const __mmask32 mask = cols >= 32 ? ~__mmask32(0) : static_cast<__mmask32>((1u << cols) - 1);
    const __m512i x0 = _mm512_maskz_loadu_epi16(mask, r0 + j0);
    const __m512i x1 = r1 ? _mm512_maskz_loadu_epi16(mask, r1 + j0) : _mm512_setzero_si512();
    // Lane i of the low half takes x0[i / 2] (even i) or x1[i / 2] (odd i); the high half the same + 16.
    const __m512i lo = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38, 6, 37, 5, 36,
                                        4, 35, 3, 34, 2, 33, 1, 32, 0);
    const __m512i hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
    _mm512_storeu_si512(dst, _mm512_permutex2var_epi16(x0, lo, x1));
    _mm512_storeu_si512(dst + kNr, _mm512_permutex2var_epi16(x0, hi, x1));
#else
    for (int64_t j = 0; j < kNr; ++j) {
      dst[2 * j] = j < cols ? r0[j0 + j] : int16_t{0};
      dst[2 * j + 1] = j < cols && r1 ? r1[j0 + j] : int16_t{0};
    }
#endif
  }
}

/// One row of an 8-bit operand minus zero points (zero point z[j * z_step]) as int16.
template <class T>
void widen_row(const T* src, int64_t n, const int32_t* z, int64_t z_step, int16_t* dst) {
  if (z_step == 0) {
    const int32_t z0 = z[0];
    for (int64_t j = 0; j < n; ++j) dst[j] = static_cast<int16_t>(src[j] - z0);
  } else {
    for (int64_t j = 0; j < n; ++j) dst[j] = static_cast<int16_t>(src[j] - z[j]);
  }
}

void widen_row(const Int8Matrix& x, int64_t row, int64_t n, const int32_t* z, int64_t z_step, int16_t* dst) {
  if (x.is_signed) widen_row(static_cast<const int8_t*>(x.data) + row * x.ld, n, z, z_step, dst);
  else widen_row(static_cast<const uint8_t*>(x.data) + row * x.ld, n, z, z_step, dst);
}

/// Pair rows [q0, q1) of the packed B of an 8-bit [K, N] minus per-column zero points.
void pack_b_pairs(int64_t k, int64_t n, const Int8Matrix& b, const int32_t* zb, int64_t q0, int64_t q1, int16_t* out) {
  const int64_t kp = int_gemm_depth(k);
  std::vector<int16_t> rows(static_cast<size_t>(2 * n));
  for (int64_t q = q0; q < q1; ++q) {
    widen_row(b, 2 * q, n, zb, 1, rows.data());
    const bool second = 2 * q + 1 < k;
    if (second) widen_row(b, 2 * q + 1, n, zb, 1, rows.data() + n);
    pack_pair_rows(rows.data(), second ? rows.data() + n : nullptr, n, kp, q, out);
  }
}

/// Columns [j0, j1) of C for few rows of A, without packing: each row of B is read once per row
/// of A and summed into uint32 columns (wrapping like the tiles; products are exact).
template <class TA, class TB>
void gemm_rows(int64_t m, int64_t k, const TA* a, int64_t lda, const int32_t* za, const TB* b, int64_t ldb, const int32_t* zb,
               int32_t* c, int64_t ldc, int64_t j0, int64_t j1) {
  std::vector<uint32_t> acc(static_cast<size_t>(j1 - j0));
  uint32_t* s = acc.data() - j0;
  for (int64_t i = 0; i < m; ++i) {
    std::fill(acc.begin(), acc.end(), 0u);
    for (int64_t p = 0; p < k; ++p) {
      const auto av = static_cast<uint32_t>(static_cast<int32_t>(a[i * lda + p]) - za[i]);
      const TB* br = b + p * ldb;
      for (int64_t j = j0; j < j1; ++j) s[j] += av * static_cast<uint32_t>(static_cast<int32_t>(br[j]) - zb[j]);
    }
    for (int64_t j = j0; j < j1; ++j) c[i * ldc + j] = static_cast<int32_t>(s[j]);
  }
}

template <class TA>
void gemm_rows(int64_t m, int64_t k, const TA* a, int64_t lda, const int32_t* za, const Int8Matrix& b, const int32_t* zb,
               int32_t* c, int64_t ldc, int64_t j0, int64_t j1) {
  if (b.is_signed) gemm_rows(m, k, a, lda, za, static_cast<const int8_t*>(b.data), b.ld, zb, c, ldc, j0, j1);
  else gemm_rows(m, k, a, lda, za, static_cast<const uint8_t*>(b.data), b.ld, zb, c, ldc, j0, j1);
}

}  // namespace

void int_gemm_pack_a(int64_t m, int64_t k, const Int8Matrix& a, const int32_t* za, int16_t* out) {
  const int64_t kp = int_gemm_depth(k);
  for (int64_t i = 0; i < m; ++i) {
    widen_row(a, i, k, za + i, 0, out + i * kp);
    if (kp != k) out[i * kp + k] = 0;
  }
}

void int_gemm_pack_b(int64_t k, int64_t n, const Int8Matrix& b, const int32_t* zb, int16_t* out) {
  pack_b_pairs(k, n, b, zb, 0, int_gemm_depth(k) / 2, out);
}

void int_gemm_pack_b16(int64_t k, int64_t n, const int16_t* b, int64_t ldb, int16_t* out) {
  const int64_t kp = int_gemm_depth(k);
  for (int64_t q = 0; q < kp / 2; ++q)
    pack_pair_rows(b + 2 * q * ldb, 2 * q + 1 < k ? b + (2 * q + 1) * ldb : nullptr, n, kp, q, out);
}

void int_gemm_packed(int64_t m, int64_t n, int64_t kp, const int16_t* pa, const int16_t* pb, int32_t* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  const int64_t panels = (n + kNr - 1) / kNr;
  if (kp == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0);
    return;
  }
  for (int64_t k0 = 0; k0 < kp; k0 += kKBlock) {
    const int64_t pairs = std::min(kKBlock, kp - k0) / 2;
    for (int64_t i0 = 0; i0 < m; i0 += kMr) {
      const int64_t rows = std::min<int64_t>(kMr, m - i0);
      const TileFn fn = tile_for(rows);
      for (int64_t p = 0; p < panels; ++p)
        fn(pa + i0 * kp + k0, kp, pb + p * kp * kNr + k0 * kNr, pairs, c + i0 * ldc + p * kNr, ldc,
           std::min(kNr, n - p * kNr), k0 > 0);
    }
  }
}

void int_gemm(int64_t m, int64_t n, int64_t k, const Int8Matrix& a, const int32_t* za, const Int8Matrix& b,
              const int32_t* zb, int32_t* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (m <= kFewRows) {
    // Packing B would cost as much as the product (a decoder's single token): column blocks.
    parallel_ranges((n + 63) / 64, std::max<int64_t>(1, 8192 / std::max<int64_t>(m * k, 1)), [&](int64_t b0, int64_t b1) {
      const int64_t j0 = b0 * 64, j1 = std::min(n, b1 * 64);
      if (a.is_signed) gemm_rows(m, k, static_cast<const int8_t*>(a.data), a.ld, za, b, zb, c, ldc, j0, j1);
      else gemm_rows(m, k, static_cast<const uint8_t*>(a.data), a.ld, za, b, zb, c, ldc, j0, j1);
    });
    return;
  }
  const int64_t kp = int_gemm_depth(k);
  std::vector<int16_t> pa(static_cast<size_t>(m * kp)), pb(static_cast<size_t>(int_gemm_packed_b_size(k, n)));
  // Both packings write disjoint rows / pair rows, so they split freely.
  parallel_ranges(m, std::max<int64_t>(1, 65536 / std::max<int64_t>(kp, 1)), [&](int64_t i0, int64_t i1) {
    const int64_t offset = i0 * a.ld;
    const Int8Matrix sub{a.is_signed ? static_cast<const void*>(static_cast<const int8_t*>(a.data) + offset)
                                     : static_cast<const void*>(static_cast<const uint8_t*>(a.data) + offset),
                         a.is_signed, a.ld};
    int_gemm_pack_a(i1 - i0, k, sub, za + i0, pa.data() + i0 * kp);
  });
  parallel_ranges(kp / 2, std::max<int64_t>(1, 32768 / std::max<int64_t>(n, 1)), [&](int64_t q0, int64_t q1) {
    pack_b_pairs(k, n, b, zb, q0, q1, pb.data());
  });
  // Blocks of C: kBlockRows rows x kBlockPanels panels, each computed by one thread.
  constexpr int64_t kBlockRows = 64, kBlockPanels = 4;
  const int64_t panels = (n + kNr - 1) / kNr;
  const int64_t tm = (m + kBlockRows - 1) / kBlockRows, tn = (panels + kBlockPanels - 1) / kBlockPanels;
  const int64_t block_work = std::min(m, kBlockRows) * std::min(n, kBlockPanels * kNr) * std::max<int64_t>(kp, 1);
  parallel_ranges(tm * tn, std::max<int64_t>(1, (int64_t{1} << 20) / block_work), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t i0 = t / tn * kBlockRows, p0 = t % tn * kBlockPanels;
      const int64_t rows = std::min(kBlockRows, m - i0), cols = std::min(kBlockPanels * kNr, n - p0 * kNr);
      int_gemm_packed(rows, cols, kp, pa.data() + i0 * kp, pb.data() + p0 * kp * kNr, c + i0 * ldc + p0 * kNr, ldc);
    }
  });
}

}  // namespace onnxtool::runner::cpu
