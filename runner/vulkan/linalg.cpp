// Vulkan kernels of MatMul, Gemm, Conv and ConvTranspose.
#include "runner/vulkan/backend.h"

namespace onnxtool::runner::vulkan {

void register_linalg(KernelTable&) {}

}  // namespace onnxtool::runner::vulkan
