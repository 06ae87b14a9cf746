// CPU kernels: string ops (StringNormalizer, TfIdfVectorizer), random generators and the preview training optimizers.
#include "runner/cpu/kernels.h"

namespace onnxtool::runner::cpu {

void register_misc_kernels(KernelRegistry& registry) {
  (void)registry;
}

}  // namespace onnxtool::runner::cpu
