// Shared matrix products of the CPU kernels (MatMul, Gemm, Conv, RNNs): row-major float and
// double GEMM through Eigen, deterministic whatever the thread count.
#pragma once

#include <cstdint>

namespace onnxtool::runner::cpu {

/// C[M,N] = A[M,K] * B[K,N] (+ C when accumulate), all row-major with the given leading
/// dimensions (elements between rows). A and B may be transposed (then A is stored [K,M], B
/// [N,K]). Parallel over blocks of rows of C when the product is large enough; every element of
/// C is computed by one thread in one fixed order, so the bytes never depend on the thread count.
void gemm_f32(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool trans_a, const float* b, int64_t ldb,
              bool trans_b, float* c, int64_t ldc, bool accumulate);
void gemm_f64(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, bool trans_a, const double* b, int64_t ldb,
              bool trans_b, double* c, int64_t ldc, bool accumulate);

}  // namespace onnxtool::runner::cpu
