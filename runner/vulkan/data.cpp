// Vulkan kernels of data movement (reshapes, Transpose, Concat, Split, Slice, Gather, Expand, Pad, Tile), Cast, Where, Resize and Quantize/DequantizeLinear.
#include "runner/vulkan/backend.h"

namespace onnxtool::runner::vulkan {

void register_data(KernelTable&) {}

}  // namespace onnxtool::runner::vulkan
