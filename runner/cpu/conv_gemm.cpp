// The float product of a convolution, in register tiles of 8 rows by 48 columns. Written with
// GCC's vector extensions: 16-float vectors are one AVX-512 register each where the build
// machine has them (ONNXTOOL_NATIVE), pairs of AVX registers or quadruples of SSE ones elsewhere.
#include "runner/cpu/conv_gemm.h"

#include "runner/cpu/epilogue.h"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

namespace onnxtool::runner::cpu {

namespace {

using Vec = float __attribute__((vector_size(64)));
constexpr int kLanes = 16;
constexpr int kVecs = kConvTileCols / kLanes;
static_assert(kVecs * kLanes == kConvTileCols && kVecs == 3, "run_tile dispatches 1..3 vectors");

inline Vec load(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void store(float* p, Vec v) { std::memcpy(p, &v, sizeof v); }

/// Subnormal operands read as zero and subnormal results flushed to zero (MXCSR's DAZ and FTZ)
/// while it lives, on this thread; the previous mode back after.
class FlushSubnormals {
 public:
#if defined(__SSE__)
  FlushSubnormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040u); }
  ~FlushSubnormals() { _mm_setcsr(saved_); }
  /// The previous mode for a while (the fused activations compute as their own kernels do).
  void pause() const { _mm_setcsr(saved_); }
  void resume() const { _mm_setcsr(saved_ | 0x8040u); }

 private:
  unsigned saved_;
#else
  void pause() const {}
  void resume() const {}
#endif
};

/// The fused activations a tile applies to its registers before storing them: the ops that are
/// a few vector operations each, written as their kernels write them (elementwise_util.h's
/// relu_value, leaky_relu_value, clip_value; BatchNormalization's y * scale + shift; the Add,
/// Sub, Mul and Div kernels' operand order).
bool in_registers(const EpilogueOp& op) {
  switch (op.kind) {
    case EpilogueOp::Kind::kAffine:
    case EpilogueOp::Kind::kRelu:
    case EpilogueOp::Kind::kLeakyRelu:
    case EpilogueOp::Kind::kClip:
    case EpilogueOp::Kind::kMul:
    case EpilogueOp::Kind::kAdd:
    case EpilogueOp::Kind::kSub:
    case EpilogueOp::Kind::kDiv: return true;
    default: return false;
  }
}

inline Vec apply_in_registers(const std::vector<EpilogueOp>& ops, Vec v, int64_t channel) {
  const auto c = static_cast<size_t>(channel);
  for (const EpilogueOp& op : ops) {
    switch (op.kind) {
      case EpilogueOp::Kind::kAffine: v = v * op.scale[c] + op.shift[c]; break;
      case EpilogueOp::Kind::kRelu: v = v < 0 ? Vec{} : v; break;
      case EpilogueOp::Kind::kLeakyRelu: v = v < 0 ? v * op.alpha : v; break;
      case EpilogueOp::Kind::kClip:
        v = v < op.alpha ? Vec{} + op.alpha : v;
        v = v > op.beta ? Vec{} + op.beta : v;
        break;
      default: {
        const float k = op.scale[op.scale.size() == 1 ? 0 : c];
        switch (op.kind) {
          case EpilogueOp::Kind::kMul: v = op.swapped ? k * v : v * k; break;
          case EpilogueOp::Kind::kAdd: v = op.swapped ? k + v : v + k; break;
          case EpilogueOp::Kind::kSub: v = op.swapped ? k - v : v - k; break;
          default: v = op.swapped ? k / v : v / k; break;
        }
      }
    }
  }
  return v;
}

/// What a tile does with its sums: the bias of its first row (nullptr: none), and the fused
/// activations to apply in registers (nullptr: none), its first row being channel `channel`,
/// with subnormals kept meanwhile (`flush` paused: the activations compute as their kernels do).
struct Rows {
  const float* bias = nullptr;
  const Epilogue* ep = nullptr;
  int64_t channel = 0;
  const FlushSubnormals* flush = nullptr;
};

/// R rows by V vectors of columns: out[i, j] = sum over k of a[i, k] * b[k, j] (+ bias[i]).
/// Each accumulator is one fused multiply-add chain in k order (-ffp-contract=fast, which GCC
/// applies to vector types too; the loads and the chain order are what make results independent
/// of the tiling, not the contraction).
template <int R, int V>
void tile(int64_t k, const float* a, int64_t lda, const float* b, const int64_t* rows, float* out, int64_t ldo,
          const Rows& to) {
  Vec acc[R][V];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < V; ++j) acc[i][j] = Vec{};
  for (int64_t p = 0; p < k; ++p) {
    const float* bp = b + rows[p];
    Vec bv[V];
    for (int j = 0; j < V; ++j) bv[j] = load(bp + j * kLanes);
    for (int i = 0; i < R; ++i) {
      const float av = a[i * lda + p];
      for (int j = 0; j < V; ++j) acc[i][j] += bv[j] * av;
    }
  }
  const float* bias = to.bias;
  if (!to.ep) {
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < V; ++j) store(out + i * ldo + j * kLanes, bias ? acc[i][j] + bias[i] : acc[i][j]);
    return;
  }
  to.flush->pause();
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < V; ++j)
      store(out + i * ldo + j * kLanes, apply_in_registers(to.ep->ops, bias ? acc[i][j] + bias[i] : acc[i][j], to.channel + i));
  to.flush->resume();
}

template <int V>
void run_tile_v(int64_t m, int64_t k, const float* a, int64_t lda, const float* b, const int64_t* rows, float* out,
                int64_t ldo, const Rows& to) {
  switch (m) {
    case 1: tile<1, V>(k, a, lda, b, rows, out, ldo, to); break;
    case 2: tile<2, V>(k, a, lda, b, rows, out, ldo, to); break;
    case 3: tile<3, V>(k, a, lda, b, rows, out, ldo, to); break;
    case 4: tile<4, V>(k, a, lda, b, rows, out, ldo, to); break;
    case 5: tile<5, V>(k, a, lda, b, rows, out, ldo, to); break;
    case 6: tile<6, V>(k, a, lda, b, rows, out, ldo, to); break;
    case 7: tile<7, V>(k, a, lda, b, rows, out, ldo, to); break;
    default: tile<8, V>(k, a, lda, b, rows, out, ldo, to); break;
  }
}

/// m rows (1 to kConvTileRows) by `vecs` vectors of columns (1 to kVecs).
void run_tile(int64_t m, int vecs, int64_t k, const float* a, int64_t lda, const float* b, const int64_t* rows, float* out,
              int64_t ldo, const Rows& to) {
  if (vecs == 1) run_tile_v<1>(m, k, a, lda, b, rows, out, ldo, to);
  else if (vecs == 2) run_tile_v<2>(m, k, a, lda, b, rows, out, ldo, to);
  else run_tile_v<kVecs>(m, k, a, lda, b, rows, out, ldo, to);
}

static_assert(kConvTileRows == 8, "run_tile dispatches 1..8 rows");


}  // namespace

bool conv_gemm_fuses(const Epilogue& ep) { return std::all_of(ep.ops.begin(), ep.ops.end(), in_registers); }

void conv_gemm_f32(int64_t m, int64_t n, int64_t k, const float* w, int64_t ldw, const float* b, const int64_t* b_rows,
                   float* c, int64_t ldc, const float* bias, const Epilogue* ep, int64_t channel0) {
  const FlushSubnormals flush;
  const int64_t full = n / kConvTileCols * kConvTileCols, tail = n - full;
  // The last columns, fewer than a tile: copied once into a zero-padded panel, computed into a
  // local tile and copied out, so that no load or store passes the end of a row.
  thread_local std::vector<float> tail_b;
  thread_local std::vector<int64_t> tail_rows;
  float tail_c[kConvTileRows * kConvTileCols];
  if (tail > 0) {
    tail_b.assign(static_cast<size_t>(k * kConvTileCols), 0.0f);
    tail_rows.resize(static_cast<size_t>(k));
    for (int64_t p = 0; p < k; ++p) {
      const float* row = b + b_rows[p];
      std::copy(row + full, row + n, tail_b.data() + p * kConvTileCols);
      tail_rows[static_cast<size_t>(p)] = p * kConvTileCols;
    }
  }
  for (int64_t r = 0; r < m; r += kConvTileRows) {
    const int64_t rows = std::min(kConvTileRows, m - r);
    const float* a = w + r * ldw;
    const Rows to{bias ? bias + r : nullptr, ep, channel0 + r, &flush};
    for (int64_t j = 0; j < full; j += kConvTileCols) run_tile(rows, kVecs, k, a, ldw, b + j, b_rows, c + r * ldc + j, ldc, to);
    if (tail > 0) {
      // Only the vectors the tail needs.
      const int vecs = static_cast<int>((tail + kLanes - 1) / kLanes);
      run_tile(rows, vecs, k, a, ldw, tail_b.data(), tail_rows.data(), tail_c, kConvTileCols, to);
      for (int64_t i = 0; i < rows; ++i)
        std::copy(tail_c + i * kConvTileCols, tail_c + i * kConvTileCols + tail, c + (r + i) * ldc + full);
    }
  }
}

}  // namespace onnxtool::runner::cpu
