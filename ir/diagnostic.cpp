// Diagnostics in one line, and DiagnosticBuilder's node part (the header does not know ir::Node).
#include "ir/diagnostic.h"

#include "ir/graph.h"

namespace onnxtool::ir {

std::string diagnostic_line(const Diagnostic& d) {
  const std::string where = !d.node.empty() ? "node '" + d.node + "'" : !d.tensor.empty() ? "'" + d.tensor + "'" : d.op_type;
  return (where.empty() ? "" : where + ": ") + d.message + " (" + d.rule + ")";
}

DiagnosticBuilder& DiagnosticBuilder::at(const Node* node, long index) {
  if (node) {
    d_.node = node->name;
    d_.op_type = node->op_type;
  }
  d_.node_index = index;
  return *this;
}

}  // namespace onnxtool::ir
