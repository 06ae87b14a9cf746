// CPU kernels: pooling, normalizations, LRN and the loss functions.
#include "runner/cpu/kernels.h"

namespace onnxtool::runner::cpu {

void register_nn_kernels(KernelRegistry& registry) {
  (void)registry;
}

}  // namespace onnxtool::runner::cpu
