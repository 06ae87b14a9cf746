// CPU kernels: RNN, GRU and LSTM.
#include "runner/cpu/kernels.h"

namespace onnxtool::runner::cpu {

void register_recurrent_kernels(KernelRegistry& registry) {
  (void)registry;
}

}  // namespace onnxtool::runner::cpu
