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
