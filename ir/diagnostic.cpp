// DiagnosticBuilder's node part (the header does not know ir::Node).
#include "ir/diagnostic.h"

#include "ir/graph.h"

namespace onnxtool::ir {

DiagnosticBuilder& DiagnosticBuilder::at(const Node* node, long index) {
  if (node) {
    d_.node = node->name;
    d_.op_type = node->op_type;
  }
  d_.node_index = index;
  return *this;
}

}  // namespace onnxtool::ir
