// One place that lists every op family's shape functions (explicit registration).
#include "ir/shape_inference.h"

namespace onnxtool::ir {

// Each family lives in ir/ops/<family>_shapes.cpp.
void register_control_shapes(SchemaRegistry& registry);
void register_tensor_shapes(SchemaRegistry& registry);
void register_vision_shapes(SchemaRegistry& registry);
void register_random_shapes(SchemaRegistry& registry);
void register_string_shapes(SchemaRegistry& registry);
void register_sequence_shapes(SchemaRegistry& registry);
void register_signal_shapes(SchemaRegistry& registry);
void register_elementwise_shapes(SchemaRegistry& registry);
void register_nn_shapes(SchemaRegistry& registry);
void register_ml_shapes(SchemaRegistry& registry);

// Each op's shape function is registered by exactly one family (a later registration would
// replace an earlier one).
void register_shape_functions(SchemaRegistry& registry) {
  register_control_shapes(registry);
  register_tensor_shapes(registry);
  register_vision_shapes(registry);
  register_random_shapes(registry);
  register_string_shapes(registry);
  register_sequence_shapes(registry);
  register_signal_shapes(registry);
  register_elementwise_shapes(registry);
  register_nn_shapes(registry);
  register_ml_shapes(registry);
}

}  // namespace onnxtool::ir
