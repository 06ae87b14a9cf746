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

/// "node 'name': message (rule)", the node or tensor first (the op when the node is unnamed): a
/// diagnostic in one line, for a refusal.
std::string diagnostic_line(const Diagnostic& d);

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

class Node;

/// A diagnostic under construction, its place named part by part; the parts a finding does not
/// have are left out: report(sink, "node.input-count").in(path).at(&node, index).error(message).
class DiagnosticBuilder {
 public:
  DiagnosticBuilder(DiagnosticSink& sink, std::string rule) : sink_(sink) { d_.rule = std::move(rule); }
  DiagnosticBuilder& in(std::string graph_path) {
    d_.graph = std::move(graph_path);
    return *this;
  }
  /// The node (may be null) and its index in its graph.
  DiagnosticBuilder& at(const Node* node, long index);
  DiagnosticBuilder& tensor(std::string name) {
    d_.tensor = std::move(name);
    return *this;
  }
  void emit(Severity severity, std::string message) {
    d_.severity = severity;
    d_.message = std::move(message);
    sink_.add(std::move(d_));
  }
  void error(std::string message) { emit(Severity::kError, std::move(message)); }

 private:
  DiagnosticSink& sink_;
  Diagnostic d_;
};

inline DiagnosticBuilder report(DiagnosticSink& sink, std::string rule) { return {sink, std::move(rule)}; }

inline size_t DiagnosticSink::error_count() const {
  size_t n = 0;
  for (const auto& d : items_) n += d.severity == Severity::kError;
  return n;
}
inline size_t DiagnosticSink::warning_count() const {
  return items_.size() - error_count();
}

}  // namespace onnxtool::ir
