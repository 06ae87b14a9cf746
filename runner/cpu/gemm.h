// Shared matrix products of the CPU kernels (MatMul, Gemm, Conv, RNNs): row-major float and
// double GEMM through Eigen, deterministic whatever the thread count.
#pragma once

#include <cstdint>

namespace onnxtool::runner {
struct Epilogue;
}

namespace onnxtool::runner::cpu {

/// The column width of gemm_f32's fixed tile grid: every tile is one product of its own, so a
/// product split into column blocks starting at multiples of kGemmTileCols (each block called
/// with its own B and C pointers) gives the same bytes as the whole product in one call, except
/// with one row of A: Eigen's matrix-vector kernel groups its sums by B's row stride.
constexpr int64_t kGemmTileCols = 2048;

/// C[M,N] = A[M,K] * B[K,N] (+ C when accumulate), all row-major with the given leading
/// dimensions (elements between rows). A and B may be transposed (then A is stored [K,M], B
/// [N,K]). Parallel over blocks of rows of C when the product is large enough; every element of
/// C is computed by one thread in one fixed order, so the bytes never depend on the thread count.
void gemm_f32(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool trans_a, const float* b, int64_t ldb,
              bool trans_b, float* c, int64_t ldc, bool accumulate);
void gemm_f64(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, bool trans_a, const double* b, int64_t ldb,
              bool trans_b, double* c, int64_t ldc, bool accumulate);

/// Geometry of a 2-D depthwise convolution (one input channel per group).
struct DepthwiseArgs {
  int64_t n, c, m;  // batch, input channels (= groups), output channels
  int64_t in_h, in_w, out_h, out_w, kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
};

/// Y[n, m] = bias[m] + depthwise 2-D convolution of X[n, m / (M / C)] with W[m] (float), then
/// the fused activations `ep` on each output channel (nullptr: none).
void depthwise_conv2d_f32(const DepthwiseArgs& g, const float* x, const float* w, const float* bias, float* y,
                          const Epilogue* ep = nullptr);

}  // namespace onnxtool::runner::cpu
