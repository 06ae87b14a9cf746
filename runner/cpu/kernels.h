// Shared declarations of the CPU kernel files (one registration function per file, listed with
// its op family in register.cpp).
#pragma once

#include "runner/kernel.h"
#include "runner/session.h"

namespace onnxtool::runner::cpu {

void register_control_kernels(KernelRegistry& registry);
void register_elementwise_kernels(KernelRegistry& registry);
void register_reduce_kernels(KernelRegistry& registry);
void register_cast_kernels(KernelRegistry& registry);
void register_tensor_kernels(KernelRegistry& registry);
void register_indexing_kernels(KernelRegistry& registry);
void register_sequence_kernels(KernelRegistry& registry);
void register_vision_kernels(KernelRegistry& registry);
void register_resize_kernels(KernelRegistry& registry);
void register_signal_kernels(KernelRegistry& registry);
void register_matmul_kernels(KernelRegistry& registry);
void register_conv_kernels(KernelRegistry& registry);
void register_pooling_kernels(KernelRegistry& registry);
void register_normalization_kernels(KernelRegistry& registry);
void register_quantize_linear_kernels(KernelRegistry& registry);
void register_rnn_kernels(KernelRegistry& registry);
void register_loss_kernels(KernelRegistry& registry);
void register_training_kernels(KernelRegistry& registry);
void register_random_kernels(KernelRegistry& registry);
void register_attention_kernels(KernelRegistry& registry);
void register_image_kernels(KernelRegistry& registry);
void register_string_kernels(KernelRegistry& registry);
void register_nchwc_kernels(KernelRegistry& registry);
void register_contrib_kernels(KernelRegistry& registry);
void register_contrib_transformer_kernels(KernelRegistry& registry);
void register_contrib_attention_kernels(KernelRegistry& registry);
void register_contrib_quant_kernels(KernelRegistry& registry);

// Standard kernels that the com.microsoft ops of runner/cpu/contrib.cpp build on. Each reads the
// node's inputs and attributes under the standard op's names and writes output 0.

/// Conv (conv.cpp): X, W, optional B and the Conv attributes.
void conv(KernelContext& ctx);
/// Gemm (matmul.cpp): A, B, optional C and alpha, beta, transA, transB.
void gemm(KernelContext& ctx);
/// Gelu (elementwise.cpp): X and approximate ("none" when absent: the erf form).
void gelu(KernelContext& ctx);
/// MatMul (matmul.cpp) of two given tensors, the node's inputs or copies of them laid out
/// otherwise: numpy's matmul with broadcast batch axes, into output 0.
void matmul_of(KernelContext& ctx, const Tensor& a, const Tensor& b);
/// MatMulInteger (matmul.cpp) of two given uint8/int8 tensors with optional zero points (one
/// value, or one per row of a / per column of b; nullptr: 0): the exact int32 sums, in a tensor
/// of the numpy matmul output shape.
Tensor matmul_integer_of(const KernelContext& ctx, const Tensor& a, const Tensor& b, const Tensor* a_zero,
                         const Tensor* b_zero);

/// A float32 tensor quantized by DynamicQuantizeLinear (quantize_linear.cpp): uint8 values,
/// scale = (max(x, 0) - min(x, 0)) / 255 and zero point round(-min / scale) clamped to [0, 255]
/// (scale 0 and zero point 0 when x is all zeros).
struct DynamicQuantized {
  Tensor values;
  float scale = 0;
  uint8_t zero_point = 0;
};
DynamicQuantized dynamic_quantize(const KernelContext& ctx, const Tensor& x);

/// A float Conv of a QDQ model run on the quantized tensors its DequantizeLinear nodes read
/// (the session plans it: runner/session.cpp). Inputs: x (uint8/int8), x_scale (one float),
/// x_zero_point (optional), w (uint8/int8 constant), w_scale (1 or M floats), w_zero_point
/// (optional, 1 or M), B (optional, M floats); the node's attributes are the Conv's. Each output
/// is the exact integer sum of (x - x_zero_point)(w - w_zero_point), times x_scale x w_scale in
/// double, rounded once to float, plus B: what the float Conv of the dequantized tensors
/// computes up to its own rounding (it rounds each product and partial sum), and what integer
/// runtimes compute.
void conv_from_quantized(KernelContext& ctx);

}  // namespace onnxtool::runner::cpu
