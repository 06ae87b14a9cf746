// Registers every op family's shape functions (explicit registration), recording each op's family.
#include "ir/ops/families.h"
#include "ir/shape_inference.h"

namespace onnxtool::ir {

// Each family lives in ir/ops/<family>_shapes.cpp.
#define ONNXTOOL_DECLARE_SHAPES(name) void register_##name##_shapes(SchemaRegistry& registry);
ONNXTOOL_OP_FAMILIES(ONNXTOOL_DECLARE_SHAPES)
#undef ONNXTOOL_DECLARE_SHAPES

// Each op's shape function is registered by exactly one family (set_shape_fn refuses a second
// registration), which makes that family the op's.
void register_shape_functions(SchemaRegistry& registry) {
#define ONNXTOOL_REGISTER_SHAPES(name) \
  registry.begin_family(#name);        \
  register_##name##_shapes(registry);
  ONNXTOOL_OP_FAMILIES(ONNXTOOL_REGISTER_SHAPES)
#undef ONNXTOOL_REGISTER_SHAPES
  registry.begin_family("");
}

}  // namespace onnxtool::ir
