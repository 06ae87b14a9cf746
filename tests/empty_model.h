// The starting point of the tests that build models in code: a model with one default-domain
// opset and an empty main graph.
#pragma once

#include <cstdint>
#include <memory>

#include "ir/graph.h"

namespace onnxtool::testing {

inline ir::Model empty_model(int64_t opset, int64_t ir_version = 9) {
  ir::Model m;
  m.ir_version = ir_version;
  m.set_opset_version("", opset);
  m.graph = std::make_unique<ir::Graph>();
  return m;
}

}  // namespace onnxtool::testing
