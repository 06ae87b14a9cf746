// Shape computations of nn_shapes.cpp that other families' ops build on (the com.microsoft
// fused ops of contrib_shapes.cpp are Conv, Gemm and MatMul with more attributes).
#pragma once

#include <optional>

#include "ir/shape_inference.h"

namespace onnxtool::ir::shape {

/// numpy matmul of two operand shapes (nullptr: unknown): 1-D operands promoted and the added
/// axis removed, batch axes broadcast, inner dims must match (fails with shape.matmul).
std::optional<Shape> matmul_of(const InferenceContext& ctx, const Shape* a, const Shape* b);

/// Output shape of a convolution of inputs x_index (N, C, D...) and w_index (M, C/group, k...)
/// under the node's Conv attributes: (N, M, O...); nullopt when the rank is unknown.
std::optional<Shape> conv_of(const InferenceContext& ctx, size_t x_index, size_t w_index);

/// Gemm's output type and shape (inputs A, B, optional C; alpha, beta, transA, transB) with C
/// unidirectionally broadcast, as from opset 7 on.
void infer_gemm_broadcast(InferenceContext& ctx);

}  // namespace onnxtool::ir::shape
