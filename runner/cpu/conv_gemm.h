// The float product of a convolution: C[M, N] = W[M, K] * B[K, N] + bias, B read where it lies
// (an im2col block, or the input itself for a pointwise convolution), W as it is stored.
//
// Every element of C is one chain of fused multiply-adds over k = 0, 1, ..., K-1, started from
// zero, then the bias added: the same bytes whichever tile, block or thread computes it, so a
// caller may split rows and columns as it likes (the grid of threads and blocks never shows in
// the result).
#pragma once

#include <cstdint>

namespace onnxtool::runner {
struct Epilogue;
}

namespace onnxtool::runner::cpu {

/// Rows of C per register tile.
constexpr int64_t kConvTileRows = 8;
/// Columns of C per register tile: three vectors of 16 floats.
constexpr int64_t kConvTileCols = 48;

/// Whether conv_gemm_f32 can apply these activations in its registers: BatchNormalization,
/// Relu, LeakyRelu, Clip, and Add, Sub, Mul, Div of a constant (not Sigmoid, HardSigmoid,
/// HardSwish, gates: a caller applies those to the product afterwards).
bool conv_gemm_fuses(const Epilogue& ep);

/// C[M, N] = W[M, K] * B[K, N] (+ bias[r] on row r when bias is not null), W and C row-major
/// with the given leading dimensions, row p of B at b + b_rows[p] (rows may overlap: a padded
/// input's shifted views), read n floats long, no further. With `ep` (conv_gemm_fuses), its
/// activations are applied to each tile's registers before they are stored (row r being
/// channel channel0 + r), with subnormals kept meanwhile: the operations of their kernels, so
/// the same bytes as the nodes run one by one.
void conv_gemm_f32(int64_t m, int64_t n, int64_t k, const float* w, int64_t ldw, const float* b, const int64_t* b_rows,
                   float* c, int64_t ldc, const float* bias, const Epilogue* ep = nullptr, int64_t channel0 = 0);

}  // namespace onnxtool::runner::cpu
