// Shared declarations of the CPU kernel families (one registration function per file).
#pragma once

#include "runner/kernel.h"
#include "runner/session.h"

namespace onnxtool::runner::cpu {

/// Upper bound for "every later opset" in registrations.
constexpr int kMaxOpset = 1000;

void register_control_kernels(KernelRegistry& registry);
void register_elementwise_kernels(KernelRegistry& registry);  // also registers reduce.cpp
void register_cast_kernels(KernelRegistry& registry);
void register_tensor_kernels(KernelRegistry& registry);  // also registers indexing.cpp
void register_vision_kernels(KernelRegistry& registry);
void register_matmul_kernels(KernelRegistry& registry);
void register_conv_kernels(KernelRegistry& registry);
void register_pooling_kernels(KernelRegistry& registry);
void register_normalization_kernels(KernelRegistry& registry);
void register_quantize_linear_kernels(KernelRegistry& registry);
void register_rnn_kernels(KernelRegistry& registry);
void register_loss_kernels(KernelRegistry& registry);
void register_training_kernels(KernelRegistry& registry);
void register_random_kernels(KernelRegistry& registry);
void register_text_kernels(KernelRegistry& registry);
void register_attention_kernels(KernelRegistry& registry);
void register_image_kernels(KernelRegistry& registry);
void register_string_kernels(KernelRegistry& registry);

}  // namespace onnxtool::runner::cpu
