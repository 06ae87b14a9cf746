// The one list of op families. An op's family is the file that registers its shape function,
// ir/ops/<family>_shapes.cpp; its kernels are registered by files of the same family (each
// registration row of runner/cpu/register.cpp and runner/vulkan/backend.cpp names its family),
// and its tests are in tests/<family>_*_test.cpp. tests/kernel_coverage_test.cpp checks that
// every registration agrees with the op's family; docs/ops.md lists each op with its files.
#pragma once

#include <string_view>

// X(family): one entry per family, in the order docs/ops.md lists them.
#define ONNXTOOL_OP_FAMILIES(X) \
  X(control)                    \
  X(elementwise)                \
  X(tensor)                     \
  X(sequence)                   \
  X(nn)                         \
  X(vision)                     \
  X(signal)                     \
  X(string)                     \
  X(random)                     \
  X(ml)                         \
  X(contrib)                    \
  X(contrib_transformer)        \
  X(nchwc)                      \
  X(contrib_quant)

namespace onnxtool::ir {

/// Every family's name, as file names spell it.
inline constexpr std::string_view kOpFamilies[] = {
#define ONNXTOOL_FAMILY_NAME(name) #name,
    ONNXTOOL_OP_FAMILIES(ONNXTOOL_FAMILY_NAME)
#undef ONNXTOOL_FAMILY_NAME
};

}  // namespace onnxtool::ir
