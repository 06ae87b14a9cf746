// Vulkan kernels of the control family: Identity, a view of its input (no dispatch).
#include "runner/vulkan/data.h"

namespace onnxtool::runner::vulkan {

namespace {

void identity_kernel(DeviceKernelContext& ctx) { alias(ctx, ctx.input_shape(0)); }

}  // namespace

void register_control(KernelTable& t) { t.add("Identity", identity_kernel); }

}  // namespace onnxtool::runner::vulkan
