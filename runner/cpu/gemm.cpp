// Row-major GEMM through Eigen, tiled on a fixed grid so that results do not depend on threads.
#include "runner/cpu/gemm.h"

#include <Eigen/Core>

#include "runner/cpu/elementwise_util.h"

namespace onnxtool::runner::cpu {

namespace {

// The tile grid is fixed (not derived from the thread count): each tile of C is one Eigen
// product, computed the same way whichever thread runs it.
constexpr int64_t kTileRows = 256;
constexpr int64_t kTileCols = 512;

template <class T>
using MatrixRM = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MapC = Eigen::Map<MatrixRM<T>, 0, Eigen::OuterStride<>>;
template <class T>
using MapConst = Eigen::Map<const MatrixRM<T>, 0, Eigen::OuterStride<>>;

template <class T>
void gemm(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, bool ta, const T* b, int64_t ldb, bool tb, T* c,
          int64_t ldc, bool accumulate) {
  if (m <= 0 || n <= 0) return;
  Eigen::setNbThreads(1);  // parallelism comes from the tile loop below
  if (k <= 0) {
    if (!accumulate)
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    return;
  }
  const int64_t row_tiles = (m + kTileRows - 1) / kTileRows;
  const int64_t col_tiles = (n + kTileCols - 1) / kTileCols;
  // Small products: one tile of work per chunk is too little to be worth a thread.
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, std::min(m, kTileRows) * std::min(n, kTileCols) * k / 64 + 1));
  parallel_ranges(row_tiles * col_tiles, grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r0 = (t / col_tiles) * kTileRows, c0 = (t % col_tiles) * kTileCols;
      const int64_t rows = std::min(kTileRows, m - r0), cols = std::min(kTileCols, n - c0);
      MapC<T> out(c + r0 * ldc + c0, rows, cols, Eigen::OuterStride<>(ldc));
      // A tile: rows r0.. of op(A); B tile: columns c0.. of op(B).
      auto run = [&](const auto& lhs, const auto& rhs) {
        if (accumulate) out.noalias() += lhs * rhs;
        else out.noalias() = lhs * rhs;
      };
      if (!ta && !tb) {
        run(MapConst<T>(a + r0 * lda, rows, k, Eigen::OuterStride<>(lda)), MapConst<T>(b + c0, k, cols, Eigen::OuterStride<>(ldb)));
      } else if (!ta && tb) {
        run(MapConst<T>(a + r0 * lda, rows, k, Eigen::OuterStride<>(lda)),
            MapConst<T>(b + c0 * ldb, cols, k, Eigen::OuterStride<>(ldb)).transpose());
      } else if (ta && !tb) {
        run(MapConst<T>(a + r0, k, rows, Eigen::OuterStride<>(lda)).transpose(), MapConst<T>(b + c0, k, cols, Eigen::OuterStride<>(ldb)));
      } else {
        run(MapConst<T>(a + r0, k, rows, Eigen::OuterStride<>(lda)).transpose(),
            MapConst<T>(b + c0 * ldb, cols, k, Eigen::OuterStride<>(ldb)).transpose());
      }
    }
  });
}

}  // namespace

void gemm_f32(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool ta, const float* b, int64_t ldb, bool tb,
              float* c, int64_t ldc, bool accumulate) {
  gemm<float>(m, n, k, a, lda, ta, b, ldb, tb, c, ldc, accumulate);
}

void gemm_f64(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, bool ta, const double* b, int64_t ldb, bool tb,
              double* c, int64_t ldc, bool accumulate) {
  gemm<double>(m, n, k, a, lda, ta, b, ldb, tb, c, ldc, accumulate);
}

}  // namespace onnxtool::runner::cpu
