// Vulkan kernels of pooling, Softmax/LogSoftmax, Reduce* and the normalizations.
#include "runner/vulkan/backend.h"

namespace onnxtool::runner::vulkan {

void register_nn(KernelTable&) {}

}  // namespace onnxtool::runner::vulkan
