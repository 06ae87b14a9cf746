// The one list of CPU kernel families (explicit registration, no static initializers).
#include "runner/cpu/kernels.h"

namespace onnxtool::runner {

void register_cpu_kernels(KernelRegistry& registry) {
  cpu::register_control_kernels(registry);
  cpu::register_elementwise_kernels(registry);
  cpu::register_tensor_kernels(registry);
}

}  // namespace onnxtool::runner
