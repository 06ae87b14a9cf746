// The one list of CPU kernel families (explicit registration, no static initializers).
#include "runner/cpu/kernels.h"

namespace onnxtool::runner {

void register_cpu_kernels(KernelRegistry& registry) {
  cpu::register_control_kernels(registry);
  cpu::register_elementwise_kernels(registry);
  cpu::register_cast_kernels(registry);
  cpu::register_tensor_kernels(registry);
  cpu::register_sequence_kernels(registry);
  cpu::register_vision_kernels(registry);
  cpu::register_resize_kernels(registry);
  cpu::register_signal_kernels(registry);
  cpu::register_matmul_kernels(registry);
  cpu::register_conv_kernels(registry);
  cpu::register_pooling_kernels(registry);
  cpu::register_normalization_kernels(registry);
  cpu::register_quantize_linear_kernels(registry);
  cpu::register_rnn_kernels(registry);
  cpu::register_loss_kernels(registry);
  cpu::register_training_kernels(registry);
  cpu::register_random_kernels(registry);
  cpu::register_attention_kernels(registry);
  cpu::register_image_kernels(registry);
  cpu::register_string_kernels(registry);
}

}  // namespace onnxtool::runner
