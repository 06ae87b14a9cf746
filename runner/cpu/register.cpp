// The one list of CPU kernel files, each with its op family (ir/ops/families.h), which the
// registry records per op; tests/kernel_coverage_test.cpp checks that a file registers ops of its
// family (explicit registration, no static initializers).
#include "runner/cpu/kernels.h"

namespace onnxtool::runner {

namespace {

// A large family keeps several files (nn: conv, pooling, normalization, ...).
constexpr KernelFile<KernelRegistry> kKernelFiles[] = {
    {"control", "runner/cpu/control.cpp", cpu::register_control_kernels},
    {"elementwise", "runner/cpu/elementwise.cpp", cpu::register_elementwise_kernels},
    {"elementwise", "runner/cpu/reduce.cpp", cpu::register_reduce_kernels},
    {"elementwise", "runner/cpu/cast.cpp", cpu::register_cast_kernels},
    {"elementwise", "runner/cpu/quantize_linear.cpp", cpu::register_quantize_linear_kernels},
    {"tensor", "runner/cpu/tensor_ops.cpp", cpu::register_tensor_kernels},
    {"tensor", "runner/cpu/indexing.cpp", cpu::register_indexing_kernels},
    {"sequence", "runner/cpu/sequence.cpp", cpu::register_sequence_kernels},
    {"vision", "runner/cpu/vision.cpp", cpu::register_vision_kernels},
    {"vision", "runner/cpu/resize.cpp", cpu::register_resize_kernels},
    {"signal", "runner/cpu/signal.cpp", cpu::register_signal_kernels},
    {"nn", "runner/cpu/matmul.cpp", cpu::register_matmul_kernels},
    {"nn", "runner/cpu/conv.cpp", cpu::register_conv_kernels},
    {"nn", "runner/cpu/pooling.cpp", cpu::register_pooling_kernels},
    {"nn", "runner/cpu/normalization.cpp", cpu::register_normalization_kernels},
    {"nn", "runner/cpu/rnn.cpp", cpu::register_rnn_kernels},
    {"nn", "runner/cpu/loss.cpp", cpu::register_loss_kernels},
    {"nn", "runner/cpu/training.cpp", cpu::register_training_kernels},
    {"random", "runner/cpu/random.cpp", cpu::register_random_kernels},
    {"nn", "runner/cpu/attention.cpp", cpu::register_attention_kernels},
    {"vision", "runner/cpu/image.cpp", cpu::register_image_kernels},
    {"string", "runner/cpu/strings.cpp", cpu::register_string_kernels},
    {"contrib", "runner/cpu/contrib.cpp", cpu::register_contrib_kernels},
    {"nchwc", "runner/cpu/nchwc.cpp", cpu::register_nchwc_kernels},
    {"contrib_transformer", "runner/cpu/contrib_transformer.cpp", cpu::register_contrib_transformer_kernels},
    {"contrib_transformer", "runner/cpu/contrib_attention.cpp", cpu::register_contrib_attention_kernels},
    {"contrib_quant", "runner/cpu/contrib_quant.cpp", cpu::register_contrib_quant_kernels},
};

}  // namespace

void register_cpu_kernels(KernelRegistry& registry) { register_kernel_files(registry, kKernelFiles); }

}  // namespace onnxtool::runner
