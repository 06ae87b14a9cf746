// Diagnostics: what the checker and shape inference report, with a stable rule id and the place.
#pragma once

#include <string>
#include <vector>

namespace onnxtool::ir {

enum class Severity { kError, kWarning };

/// One finding. Rule ids are stable (documented in docs/rules.md) so that CI scripts can rely on
/// them; location fields are empty when they do not apply.
struct Diagnostic {
  std::string rule;      ///< e.g. "graph.ssa", "node.attribute-type", "shape.broadcast"
  Severity severity = Severity::kError;
  std::string graph;     ///< graph path: "main", "main/If_0:then_branch", "function foo"
  std::string node;      ///< node name ("" when unnamed)
  long node_index = -1;  ///< index in its graph's node list, -1 when not about a node
  std::string op_type;
  std::string tensor;    ///< value or tensor name involved
  std::string message;
};

/// Collects diagnostics; never stops at the first one.
class DiagnosticSink {
 public:
  void add(Diagnostic d) { items_.push_back(std::move(d)); }
  const std::vector<Diagnostic>& items() const { return items_; }
  size_t error_count() const;
  size_t warning_count() const;

 private:
  std::vector<Diagnostic> items_;
};

inline size_t DiagnosticSink::error_count() const {
  size_t n = 0;
  for (const auto& d : items_) n += d.severity == Severity::kError;
  return n;
}
inline size_t DiagnosticSink::warning_count() const {
  return items_.size() - error_count();
}

}  // namespace onnxtool::ir
