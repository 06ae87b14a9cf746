// Integer GEMM of the CPU kernels: packing of 8-bit operands (as int16 minus their zero points,
// or kept 8-bit with zero-point terms) and multiply-accumulate register tiles (see gemm_int.h for
// why the bytes never depend on the code path or the thread count).
#include "runner/cpu/gemm_int.h"

#include <algorithm>
#include <cstring>

#if defined(__AVX2__) || defined(__AVX512BW__)
#include <immintrin.h>
#endif

#include "runner/cpu/elementwise_util.h"

// With AVX-512 VNNI (and VBMI for the byte interleave) the operands stay 8-bit: vpdpbusd sums
// four uint8 x int8 products per int32 lane, twice the int16 pairs of vpdpwssd. A is shifted to
// int8 (a' = a - 128 for uint8) and B to uint8 (b' = b + 128 for int8), zero points alike, and
//   sum (a' - za')(b' - zb') = sum a'b' - za' (colsum b' - K zb') - zb' rowsum a'
// exactly, so with every term wrapping modulo 2^32 the result is the int16 path's to the bit.
#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VBMI__)
#define ONNXTOOL_INT_GEMM_BYTES 1
#endif

namespace onnxtool::runner::cpu {

namespace {

constexpr int64_t kNr = kIntGemmPanel;

/// K rounded up to even: the int16 format's packed depth (products run over pairs of K).
int64_t int_gemm_depth(int64_t k) { return (k + 1) & ~int64_t{1}; }
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
[[maybe_unused]] TileFn tile_for(int64_t rows) {
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
[[maybe_unused]] void pack_pair_rows(const int16_t* r0, const int16_t* r1, int64_t n, int64_t kp, int64_t q, int16_t* out) {
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

[[maybe_unused]] void widen_row(const Int8Matrix& x, int64_t row, int64_t n, const int32_t* z, int64_t z_step, int16_t* dst) {
  if (x.is_signed) widen_row(static_cast<const int8_t*>(x.data) + row * x.ld, n, z, z_step, dst);
  else widen_row(static_cast<const uint8_t*>(x.data) + row * x.ld, n, z, z_step, dst);
}

/// Pair rows [q0, q1) of the packed B of an 8-bit [K, N] minus per-column zero points.
[[maybe_unused]] void pack_b_pairs(int64_t k, int64_t n, const Int8Matrix& b, const int32_t* zb, int64_t q0, int64_t q1, int16_t* out) {
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


#if defined(ONNXTOOL_INT_GEMM_BYTES)
// ---------------------------------------------------------------- 8-bit format
// Packed A row: round_up(K, 4) int8 a' values (0-padded), then za' and rowsum a' as int32.
// Packed B panel: ceil(K / 4) quads of 32 columns x 4 uint8 b' values (0-padded; column-major
// within the quad), then 32 int32 colsum b' - K zb' and 32 int32 zb'.

int64_t depth4(int64_t k) { return (k + 3) & ~int64_t{3}; }
int64_t a_row_bytes(int64_t k) { return depth4(k) + 8; }
int64_t b_panel_bytes(int64_t k) { return depth4(k) * kNr + 2 * kNr * 4; }

inline int32_t load_i32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// Register tile of the 8-bit format: MR rows x 32 columns; `first` (the first K block) stores
/// the sums with the zero-point terms, later blocks add to C.
template <int MR>
void tile_bytes(const uint8_t* a, int64_t lda, const uint8_t* a_terms, const uint8_t* b, const uint8_t* b_terms, int64_t quads,
                int32_t* c, int64_t ldc, int64_t cols, bool first) {
  __m512i acc[MR][2];
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
  for (int64_t q = 0; q < quads; ++q) {
    const __m512i b0 = _mm512_loadu_si512(b + q * 4 * kNr);
    const __m512i b1 = _mm512_loadu_si512(b + q * 4 * kNr + 64);
    for (int r = 0; r < MR; ++r) {
      const __m512i av = _mm512_set1_epi32(load_i32(a + r * lda + 4 * q));
      acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], b0, av);
      acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], b1, av);
    }
  }
  const __mmask16 m0 = cols >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32 ? __mmask16(0xFFFF) : cols > 16 ? static_cast<__mmask16>((1u << (cols - 16)) - 1) : __mmask16(0);
  const __m512i s0 = _mm512_loadu_si512(b_terms), s1 = _mm512_loadu_si512(b_terms + 64);
  const __m512i z0 = _mm512_loadu_si512(b_terms + 128), z1 = _mm512_loadu_si512(b_terms + 192);
  for (int r = 0; r < MR; ++r) {
    int32_t* cr = c + r * ldc;
    __m512i v0 = acc[r][0], v1 = acc[r][1];
    if (first) {
      const __m512i za = _mm512_set1_epi32(load_i32(a_terms + r * lda)), ra = _mm512_set1_epi32(load_i32(a_terms + r * lda + 4));
      v0 = _mm512_sub_epi32(v0, _mm512_add_epi32(_mm512_mullo_epi32(za, s0), _mm512_mullo_epi32(ra, z0)));
      v1 = _mm512_sub_epi32(v1, _mm512_add_epi32(_mm512_mullo_epi32(za, s1), _mm512_mullo_epi32(ra, z1)));
    } else {
      v0 = _mm512_add_epi32(v0, _mm512_maskz_loadu_epi32(m0, cr));
      v1 = _mm512_add_epi32(v1, _mm512_maskz_loadu_epi32(m1, cr + 16));
    }
    _mm512_mask_storeu_epi32(cr, m0, v0);
    _mm512_mask_storeu_epi32(cr + 16, m1, v1);
  }
}

using ByteTileFn = void (*)(const uint8_t*, int64_t, const uint8_t*, const uint8_t*, const uint8_t*, int64_t, int32_t*, int64_t,
                            int64_t, bool);

ByteTileFn byte_tile_for(int64_t rows) {
  static constexpr ByteTileFn kTiles[] = {tile_bytes<1>, tile_bytes<2>, tile_bytes<3>, tile_bytes<4>,
                                          tile_bytes<5>, tile_bytes<6>, tile_bytes<7>, tile_bytes<8>};
  static_assert(sizeof kTiles / sizeof kTiles[0] == kMr);
  return kTiles[rows - 1];
}

/// Packs columns [j0, j0 + cols) (cols <= 32) of an 8-bit B [K, N] as one panel of b' quads with
/// its column terms.
void pack_b_panel_bytes(int64_t k, const Int8Matrix& b, const int32_t* zb, int64_t j0, int64_t cols, uint8_t* out) {
  const int64_t quads = depth4(k) / 4;
  const __mmask32 mask = cols >= 32 ? ~__mmask32(0) : static_cast<__mmask32>((1u << cols) - 1);
  const __m256i flip = _mm256_set1_epi8(b.is_signed ? static_cast<char>(0x80) : 0);
  // Byte i of a 64-byte half takes column i / 4 of row i % 4 from four rows of 16 columns.
  alignas(64) uint8_t idx_bytes[64];
  for (int i = 0; i < 64; ++i) idx_bytes[i] = static_cast<uint8_t>((i % 4) * 16 + i / 4);
  const __m512i idx = _mm512_load_si512(idx_bytes), ones = _mm512_set1_epi8(1);
  __m512i sum0 = _mm512_setzero_si512(), sum1 = _mm512_setzero_si512();
  const auto* base = static_cast<const uint8_t*>(b.data);
  for (int64_t q = 0; q < quads; ++q) {
    alignas(64) uint8_t rows[2][64];  // [half][row * 16 + column]
    for (int t = 0; t < 4; ++t) {
      const int64_t p = 4 * q + t;
      const __m256i v = p < k ? _mm256_xor_si256(_mm256_maskz_loadu_epi8(mask, base + p * b.ld + j0), _mm256_and_si256(flip, _mm256_movm_epi8(mask)))
                              : _mm256_setzero_si256();
      _mm_store_si128(reinterpret_cast<__m128i*>(rows[0] + t * 16), _mm256_castsi256_si128(v));
      _mm_store_si128(reinterpret_cast<__m128i*>(rows[1] + t * 16), _mm256_extracti128_si256(v, 1));
    }
    // (The zero-masking form: the plain one trips GCC 12's -Wmaybe-uninitialized in its header.)
    const __m512i h0 = _mm512_maskz_permutexvar_epi8(~__mmask64(0), idx, _mm512_load_si512(rows[0]));
    const __m512i h1 = _mm512_maskz_permutexvar_epi8(~__mmask64(0), idx, _mm512_load_si512(rows[1]));
    _mm512_storeu_si512(out + q * 4 * kNr, h0);
    _mm512_storeu_si512(out + q * 4 * kNr + 64, h1);
    sum0 = _mm512_dpbusd_epi32(sum0, h0, ones);
    sum1 = _mm512_dpbusd_epi32(sum1, h1, ones);
  }
  alignas(64) int32_t z[kNr] = {};
  for (int64_t j = 0; j < cols; ++j) z[j] = zb[j0 + j] + (b.is_signed ? 128 : 0);
  const __m512i z0 = _mm512_load_si512(z), z1 = _mm512_load_si512(z + 16), kv = _mm512_set1_epi32(static_cast<int32_t>(k));
  uint8_t* terms = out + quads * 4 * kNr;
  _mm512_storeu_si512(terms, _mm512_sub_epi32(sum0, _mm512_mullo_epi32(kv, z0)));
  _mm512_storeu_si512(terms + 64, _mm512_sub_epi32(sum1, _mm512_mullo_epi32(kv, z1)));
  _mm512_storeu_si512(terms + 128, z0);
  _mm512_storeu_si512(terms + 192, z1);
}
#endif

/// Independent units of B packing (panels, or pair rows of the int16 format) and a range of them.
int64_t pack_b_units(int64_t k, int64_t n) {
#if defined(ONNXTOOL_INT_GEMM_BYTES)
  (void)k;
  return (n + kNr - 1) / kNr;
#else
  (void)n;
  return int_gemm_depth(k) / 2;
#endif
}

void pack_b_range(int64_t k, int64_t n, const Int8Matrix& b, const int32_t* zb, int16_t* out, int64_t u0, int64_t u1) {
#if defined(ONNXTOOL_INT_GEMM_BYTES)
  auto* bytes = reinterpret_cast<uint8_t*>(out);
  for (int64_t p = u0; p < u1; ++p)
    pack_b_panel_bytes(k, b, zb, p * kNr, std::min(kNr, n - p * kNr), bytes + p * b_panel_bytes(k));
#else
  pack_b_pairs(k, n, b, zb, u0, u1, out);
#endif
}

}  // namespace

int64_t int_gemm_a_stride(int64_t k) {
#if defined(ONNXTOOL_INT_GEMM_BYTES)
  return a_row_bytes(k) / 2;
#else
  return int_gemm_depth(k);
#endif
}

int64_t int_gemm_packed_b_size(int64_t k, int64_t n) {
  const int64_t panels = (n + kNr - 1) / kNr;
#if defined(ONNXTOOL_INT_GEMM_BYTES)
  return panels * b_panel_bytes(k) / 2;
#else
  return panels * kNr * int_gemm_depth(k);
#endif
}

void int_gemm_pack_a(int64_t m, int64_t k, const Int8Matrix& a, const int32_t* za, int16_t* out) {
#if defined(ONNXTOOL_INT_GEMM_BYTES)
  const int64_t d4 = depth4(k), lda = a_row_bytes(k);
  const int32_t shift = a.is_signed ? 0 : 128;  // a' = a - shift is int8
  for (int64_t i = 0; i < m; ++i) {
    auto* row = reinterpret_cast<uint8_t*>(out) + i * lda;
    uint32_t sum = 0;
    for (int64_t p = 0; p < k; ++p) {
      const int32_t v = (a.is_signed ? int32_t{static_cast<const int8_t*>(a.data)[i * a.ld + p]}
                                     : int32_t{static_cast<const uint8_t*>(a.data)[i * a.ld + p]}) - shift;
      row[p] = static_cast<uint8_t>(static_cast<int8_t>(v));
      sum += static_cast<uint32_t>(v);
    }
    std::fill(row + k, row + d4, uint8_t{0});
    const int32_t terms[2] = {za[i] - shift, static_cast<int32_t>(sum)};
    std::memcpy(row + d4, terms, sizeof terms);
  }
#else
  const int64_t kp = int_gemm_depth(k);
  for (int64_t i = 0; i < m; ++i) {
    widen_row(a, i, k, za + i, 0, out + i * kp);
    if (kp != k) out[i * kp + k] = 0;
  }
#endif
}

void int_gemm_pack_b(int64_t k, int64_t n, const Int8Matrix& b, const int32_t* zb, int16_t* out) {
  pack_b_range(k, n, b, zb, out, 0, pack_b_units(k, n));
}

void int_gemm_packed(int64_t m, int64_t n, int64_t k, const int16_t* pa, const int16_t* pb, int32_t* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  const int64_t panels = (n + kNr - 1) / kNr;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0);
    return;
  }
#if defined(ONNXTOOL_INT_GEMM_BYTES)
  const auto* a = reinterpret_cast<const uint8_t*>(pa);
  const auto* b = reinterpret_cast<const uint8_t*>(pb);
  const int64_t d4 = depth4(k), lda = a_row_bytes(k), panel = b_panel_bytes(k);
  for (int64_t k0 = 0; k0 < d4; k0 += kKBlock) {
    const int64_t quads = std::min(kKBlock, d4 - k0) / 4;
    for (int64_t i0 = 0; i0 < m; i0 += kMr) {
      const ByteTileFn fn = byte_tile_for(std::min<int64_t>(kMr, m - i0));
      const uint8_t* ai = a + i0 * lda;
      for (int64_t p = 0; p < panels; ++p) {
        const uint8_t* bp = b + p * panel;
        fn(ai + k0, lda, ai + d4, bp + k0 * kNr, bp + d4 * kNr, quads, c + i0 * ldc + p * kNr, ldc, std::min(kNr, n - p * kNr),
           k0 == 0);
      }
    }
  }
#else
  const int64_t kp = int_gemm_depth(k);
  for (int64_t k0 = 0; k0 < kp; k0 += kKBlock) {
    const int64_t pairs = std::min(kKBlock, kp - k0) / 2;
    for (int64_t i0 = 0; i0 < m; i0 += kMr) {
      const TileFn fn = tile_for(std::min<int64_t>(kMr, m - i0));
      for (int64_t p = 0; p < panels; ++p)
        fn(pa + i0 * kp + k0, kp, pb + p * kp * kNr + k0 * kNr, pairs, c + i0 * ldc + p * kNr, ldc, std::min(kNr, n - p * kNr),
           k0 > 0);
    }
  }
#endif
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
  const int64_t sa = int_gemm_a_stride(k);
  std::vector<int16_t> pa(static_cast<size_t>(m * sa)), pb(static_cast<size_t>(int_gemm_packed_b_size(k, n)));
  // Both packings write disjoint rows / panels (pair rows), so they split freely.
  parallel_ranges(m, std::max<int64_t>(1, 65536 / std::max<int64_t>(k, 1)), [&](int64_t i0, int64_t i1) {
    const int64_t offset = i0 * a.ld;  // one byte per element either way
    const Int8Matrix sub{static_cast<const uint8_t*>(a.data) + offset, a.is_signed, a.ld};
    int_gemm_pack_a(i1 - i0, k, sub, za + i0, pa.data() + i0 * sa);
  });
  const int64_t units = pack_b_units(k, n);
  parallel_ranges(units, std::max<int64_t>(1, 65536 / std::max<int64_t>(k * n / std::max<int64_t>(units, 1), 1)),
                  [&](int64_t u0, int64_t u1) { pack_b_range(k, n, b, zb, pb.data(), u0, u1); });
  // Blocks of C: kBlockRows rows x kBlockPanels panels, each computed by one thread.
  constexpr int64_t kBlockRows = 64, kBlockPanels = 4;
  const int64_t panels = (n + kNr - 1) / kNr, panel = int_gemm_packed_b_size(k, kNr);
  const int64_t tm = (m + kBlockRows - 1) / kBlockRows, tn = (panels + kBlockPanels - 1) / kBlockPanels;
  const int64_t block_work = std::min(m, kBlockRows) * std::min(n, kBlockPanels * kNr) * std::max<int64_t>(k, 1);
  parallel_ranges(tm * tn, std::max<int64_t>(1, (int64_t{1} << 20) / block_work), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t i0 = t / tn * kBlockRows, p0 = t % tn * kBlockPanels;
      const int64_t rows = std::min(kBlockRows, m - i0), cols = std::min(kBlockPanels * kNr, n - p0 * kNr);
      int_gemm_packed(rows, cols, k, pa.data() + i0 * sa, pb.data() + p0 * panel, c + i0 * ldc + p0 * kNr, ldc);
    }
  });
}

}  // namespace onnxtool::runner::cpu
