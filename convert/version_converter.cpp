// Opset version conversion of the default domain.
//
// Each node is moved from the model's opset to the target one version boundary at a time: the
// boundaries are the since_versions of the op's schemas. At each boundary crossed, the op's row
// in convert/opset_adapters.cpp, if any, rewrites what changed there (an attribute that became an
// input, a semantic change, a renamed op), and a generic rule handles the rest: going up, an
// attribute the new version no longer has must have been taken care of by an adapter; going
// down, an attribute or an input the older version does not have is dropped when it holds its
// default and is an error otherwise. The result is then checked: any error the checker finds in
// the converted model that the input did not have fails the conversion, naming the node.
#include "convert/version_converter.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <set>

#include "checker/checker.h"
#include "convert/adapter_context.h"
#include "convert/opset_adapters.h"
#include "ir/error.h"
#include "ir/op_schema.h"
#include "ir/shape_inference.h"

namespace onnxtool::convert {

namespace {

using ir::Attribute;
using ir::Graph;
using ir::Node;

/// The smallest IR version a model of this default-domain opset needs (from the ONNX releases:
/// opset 8 came with IR 3, 9 with IR 4, 10 with 5, 11 with 6, 12-14 with 7, 15-18 with 8, 19-20
/// with 9, 21-22 with 10, 23 and later with 11).
int64_t ir_version_for(int64_t opset) {
  if (opset <= 8) return 3;
  if (opset == 9) return 4;
  if (opset == 10) return 5;
  if (opset == 11) return 6;
  if (opset <= 14) return 7;
  if (opset <= 18) return 8;
  if (opset <= 20) return 9;
  if (opset <= 22) return 10;
  return 11;
}

class Converter {
 public:
  Converter(ir::Model& model, int64_t from, int64_t to, VersionReport& report)
      : cx_(model, from, to, report), registry_(ir::SchemaRegistry::instance()) {}

  void convert_graph(Graph& g) {
    std::vector<Node*> nodes;
    for (const auto& n : g.nodes()) nodes.push_back(n.get());
    for (Node* n : nodes) {
      for (Graph* sub : n->subgraphs()) convert_graph(*sub);
      if (ir::canonical_domain(n->domain).empty()) convert_node(g, n);
    }
  }

  /// Removes the nodes adapters replaced, once every graph has been walked.
  void remove_replaced_nodes() { cx_.remove_marked_nodes(); }

 private:
  // ---- the walk over version boundaries

  void convert_node(Graph& g, Node* n) {
    const int64_t from = cx_.from(), to = cx_.to();
    const bool up = to > from;
    int64_t cur = from;
    const ir::OpSchema* schema = registry_.find("", n->op_type, from);
    if (!schema) return;  // unknown or invalid: the checker reports it
    // The adapters rewrite around a node's outputs: one the spec requires must be there (an
    // invalid model the checker would refuse, but convert reads before it checks).
    for (size_t i = 0; i < schema->outputs.size(); ++i)
      if (schema->outputs[i].option == ir::ParamOption::kSingle && !n->output(i))
        throw Error(ErrorKind::kInput, n->describe() + ": its required output " + std::to_string(i) + " ('" +
                                           schema->outputs[i].name + "') is missing (run onnxtool check)");
    const size_t before_inputs = n->inputs().size();
    const size_t before_attrs = n->attributes.size();
    const std::string before_op = n->op_type;
    bool changed = false;
    for (;;) {
      const auto* versions = registry_.versions("", n->op_type);
      if (!versions) break;
      std::optional<int> boundary;
      if (up) {
        for (const auto& s : *versions)
          if (s.since_version > cur && s.since_version <= to) {
            boundary = s.since_version;
            break;
          }
      } else {
        for (auto it = versions->rbegin(); it != versions->rend(); ++it)
          if (it->since_version <= cur && it->since_version > to) {
            boundary = it->since_version;
            break;
          }
      }
      if (!boundary) break;
      if (up)
        cross_up(g, *n, *boundary);
      else
        cross_down(g, *n, *boundary);
      changed = true;
      // An adapter may have renamed the op (Upsample -> Resize); the walk goes on from there.
      cur = up ? *boundary : *boundary - 1;
    }
    if (!registry_.find("", n->op_type, to)) {
      const auto* versions = registry_.versions("", n->op_type);
      const int first = versions && !versions->empty() ? versions->front().since_version : 0;
      if (to < first) no_equivalent(*n, to, "the operator was introduced in opset " + std::to_string(first));
      no_equivalent(*n, to, "the operator is deprecated at that opset");
    }
    if (changed &&
        (n->op_type != before_op || n->inputs().size() != before_inputs || n->attributes.size() != before_attrs))
      ++cx_.report().rewritten_nodes;
  }

  /// Attributes of a schema by name.
  static bool has_attr(const ir::OpSchema* s, const std::string& name) { return s && s->attribute(name); }

  /// True when the attribute holds the spec's default of `spec`.
  static bool is_default(const Attribute& a, const ir::AttributeSpec& spec) {
    const std::string& d = spec.default_value;
    if (d.empty() || spec.required) return false;
    switch (a.attr_type()) {
      case ir::AttrType::kInt: return std::to_string(a.i) == d;
      case ir::AttrType::kFloat: {
        char* end = nullptr;
        const double v = std::strtod(d.c_str(), &end);
        return end && *end == '\0' && static_cast<float>(v) == a.f;
      }
      case ir::AttrType::kString: return a.s == d;
      default: return false;
    }
  }

  void cross_up(Graph& g, Node& n, int b) {
    const ir::OpSchema* old_schema = registry_.find("", n.op_type, b - 1);
    if (const OpsetAdapter* row = find_opset_adapter(n.op_type, b); row && row->up) row->up(cx_, g, n, b);
    const ir::OpSchema* s = registry_.find("", n.op_type, b);
    if (!s) return;  // deprecated here: the caller reports it unless an adapter renamed the op
    for (const Attribute& a : n.attributes)
      if (!has_attr(s, a.name) && has_attr(old_schema, a.name))
        no_equivalent(n, cx_.to(), "attribute '" + a.name + "' was removed in opset " + std::to_string(b));
  }

  void cross_down(Graph& g, Node& n, int b) {
    if (const OpsetAdapter* row = find_opset_adapter(n.op_type, b); row && row->down) row->down(cx_, g, n, b);
    const ir::OpSchema* newer = registry_.find("", n.op_type, b);
    const ir::OpSchema* older = registry_.find("", n.op_type, b - 1);
    if (!older) return;  // introduced at b: the caller reports it unless an adapter renamed the op
    std::vector<std::string> drop;
    for (const Attribute& a : n.attributes) {
      if (has_attr(older, a.name)) continue;
      const ir::AttributeSpec* spec = newer ? newer->attribute(a.name) : nullptr;
      if (spec && is_default(a, *spec)) {
        drop.push_back(a.name);
        continue;
      }
      no_equivalent(n, cx_.to(), "attribute '" + a.name + "' was added in opset " + std::to_string(b) +
                                  " and is not at its default");
    }
    for (const auto& name : drop) n.remove_attr(name);
    trim_inputs(n);
    if (static_cast<int>(n.inputs().size()) > older->max_inputs)
      no_equivalent(n, cx_.to(), "input " + std::to_string(older->max_inputs) + " (" +
                                  (newer && static_cast<size_t>(older->max_inputs) < newer->inputs.size()
                                       ? newer->inputs[static_cast<size_t>(older->max_inputs)].name
                                       : std::string("extra")) +
                                  ") was added in opset " + std::to_string(b));
  }

  AdapterContext cx_;  // the adapters' view of the conversion; the walk's opsets and report too
  const ir::SchemaRegistry& registry_;
};

/// Error diagnostics as (rule, graph, node, message) keys, to tell new errors from old ones.
std::set<std::string> error_keys(ir::Model& model) {
  ir::DiagnosticSink sink;
  checker::check_model(model, sink);
  std::set<std::string> keys;
  for (const auto& d : sink.items())
    if (d.severity == ir::Severity::kError) keys.insert(d.rule + "|" + d.graph + "|" + d.node + "|" + d.op_type);
  return keys;
}

}  // namespace

VersionReport convert_opset(ir::Model& model, int64_t target) {
  if (target < kMinConvertOpset || target > kMaxConvertOpset)
    throw_usage_error({"opset", std::to_string(target)}, "outside the supported range " +
                      std::to_string(kMinConvertOpset) + "-" + std::to_string(kMaxConvertOpset));
  const int64_t from = model.onnx_opset();
  if (from == 0) throw_usage_error("the model does not import the default ONNX domain; nothing to convert");
  if (from < kMinConvertOpset)
    throw_usage_error("the model is at opset " + std::to_string(from) + "; conversion starts at opset " +
                      std::to_string(kMinConvertOpset));
  VersionReport report;
  report.from = from;
  report.to = target;
  if (from == target) return report;

  // Ranks and shapes help the adapters that depend on them (Softmax axes, negative axes).
  ir::DiagnosticSink inference;
  ir::infer_shapes(model, inference);
  const std::set<std::string> before = error_keys(model);

  Converter c(model, from, target, report);
  c.convert_graph(*model.graph);
  for (auto& f : model.functions) {
    bool imports_default = false;
    for (auto& o : f.opset_import)
      if (ir::canonical_domain(o.domain).empty() && o.version == from) {
        imports_default = true;
        o.version = target;
      }
    if (imports_default) c.convert_graph(*f.body);
  }
  c.remove_replaced_nodes();
  model.set_opset_version("", target);
  // Going up may need a newer IR version; going down keeps it (the IR version says which file
  // features the model uses, which a lower opset does not change), so a round trip is lossless.
  const int64_t ir_before = model.ir_version;
  model.ir_version = std::max(model.ir_version, ir_version_for(target));
  ir::fit_initializer_inputs(model, ir_before);

  // Whatever the adapters missed shows up as a new checker error: the conversion fails on it.
  ir::DiagnosticSink after;
  checker::check_model(model, after);
  // The values the adapters added or retyped get their inferred types (the checker leaves the
  // model as it is; its inference already reported any contradiction above).
  ir::DiagnosticSink reinferred;
  ir::infer_shapes(model, reinferred);
  for (const auto& d : after.items()) {
    if (d.severity != ir::Severity::kError) continue;
    if (before.count(d.rule + "|" + d.graph + "|" + d.node + "|" + d.op_type)) continue;
    // The checker's message starts with the node it is about ("node #3 (Constant): ...") when
    // the node has no name; lead with it either way.
    std::string where = d.node.empty() ? "graph " + d.graph : "node '" + d.node + "' (" + d.op_type + ")";
    std::string why = d.message;
    if (d.node.empty() && why.rfind("node ", 0) == 0 && why.find(": ") != std::string::npos) {
      where = why.substr(0, why.find(": "));
      why = why.substr(why.find(": ") + 2);
    }
    throw Error(ErrorKind::kFailed, where + ": no equivalent at opset " + std::to_string(target) + ": " + why);
  }
  return report;
}

}  // namespace onnxtool::convert