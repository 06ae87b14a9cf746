// CPU kernels: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear.
#include "runner/cpu/kernels.h"

namespace onnxtool::runner::cpu {

void register_quantize_kernels(KernelRegistry& registry) {
  (void)registry;
}

}  // namespace onnxtool::runner::cpu
