// extract_subgraph: the nodes between named tensors, with what they read and nothing else.
#include "ir/extract.h"

#include <map>
#include <unordered_set>
#include <utility>

#include "ir/diagnostic.h"
#include "ir/error.h"
#include "ir/shape_inference.h"

namespace onnxtool::ir {

std::string subgraph_holding(Model& model, const std::string& name) {
  std::vector<Graph*> stack{model.graph.get()};
  while (!stack.empty()) {
    Graph* g = stack.back();
    stack.pop_back();
    for (const auto& n : g->nodes())
      for (Graph* sub : n->subgraphs()) {
        const Value* v = sub->find(name);
        if (v && !v->is_undefined()) return "the subgraph '" + sub->name + "' of " + n->describe();
        stack.push_back(sub);
      }
  }
  return "";
}

namespace {

/// The main-graph values of `names`; a usage error for unknown, undefined or repeated names.
std::vector<Value*> main_values(Model& model, const std::vector<std::string>& names, const char* parameter) {
  if (names.empty()) throw_usage_error({parameter, ""}, "name at least one tensor");
  std::vector<Value*> values;
  std::unordered_set<std::string> seen;
  for (const auto& name : names) {
    if (!seen.insert(name).second) throw_usage_error({parameter, ""}, "'" + name + "' is named twice");
    Value* v = model.graph->find(name);
    if (!v || v->is_undefined()) {
      const std::string where = subgraph_holding(model, name);
      throw_usage_error({parameter, ""}, "'" + name + "' is " +
                        (where.empty() ? "no tensor of the model"
                                       : "a tensor of " + where + "; only main-graph tensors can be cut at"));
    }
    values.push_back(v);
  }
  return values;
}

}  // namespace

ExtractReport extract_subgraph(Model& model, const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
  Graph& g = *model.graph;
  const std::vector<Value*> in = main_values(model, inputs, "inputs");
  const std::vector<Value*> out = main_values(model, outputs, "outputs");

  // Walk back from each output, stopping at the named inputs and at initializers. Each value
  // remembers the output that led to it, to name it when a graph input is missing.
  const std::unordered_set<const Value*> stop(in.begin(), in.end());
  std::unordered_set<const Node*> keep;
  std::unordered_set<const Value*> seen, reached;
  std::vector<std::pair<Value*, size_t>> stack;
  for (size_t i = 0; i < out.size(); ++i) stack.emplace_back(out[i], i);
  while (!stack.empty()) {
    auto [v, origin] = stack.back();
    stack.pop_back();
    if (!seen.insert(v).second) continue;
    if (stop.count(v)) {
      reached.insert(v);
      continue;
    }
    if (v->is_initializer() || v->is_sparse_initializer()) continue;
    if (Node* p = v->producer()) {
      if (!keep.insert(p).second) continue;
      for (Value* x : p->inputs())
        if (x) stack.emplace_back(x, origin);
      for (Value* x : g.implicit_inputs(p)) stack.emplace_back(x, origin);
      continue;
    }
    const std::string& wanted = outputs[origin];
    if (v->is_graph_input())
      throw_usage_error({"inputs", ""}, "output '" + wanted + "' is not reachable from them: it needs the graph input '" +
                                            v->name() + "'; add it, or a tensor between them");
    throw_usage_error("output '" + wanted + "' needs '" + v->name() + "', which nothing in the model defines");
  }
  for (const Value* v : in)
    if (!reached.count(v))
      throw_usage_error({"inputs", ""}, "'" + v->name() +
                        "' does not cut the graph: the outputs are computed without it (from the other inputs and "
                        "initializers); leave it out");

  // Types for the new inputs, as inference knows them before their producers go.
  {
    DiagnosticSink ignored;  // contradictions are `onnxtool check`'s business
    infer_shapes(model, ignored);
  }
  ExtractReport report;
  report.nodes_before = g.nodes().size();
  report.initializers_before = g.initializers().size();

  std::map<const Value*, ValueInfo> declared;  // the old input and output entries, docs kept
  for (const auto& vi : g.inputs) declared.emplace(vi.value, vi);
  for (const auto& vi : g.outputs) declared.emplace(vi.value, vi);
  std::vector<Value*> initializer_inputs;  // initializers declared as inputs (IR < 4 style)
  for (const auto& vi : g.inputs)
    if (vi.value->is_initializer() && !stop.count(vi.value)) initializer_inputs.push_back(vi.value);
  while (!g.inputs.empty()) g.remove_input(g.inputs.size() - 1);
  while (!g.outputs.empty()) g.remove_output(g.outputs.size() - 1);

  g.remove_nodes_if([&keep](const Node& n) { return !keep.count(&n); });

  const auto add_entry = [&declared](Value* v, bool input, Graph& graph) {
    std::optional<TypeInfo> type;
    if (v->type.kind != TypeInfo::Kind::kUnset) type = v->type;
    auto it = declared.find(v);
    if (it != declared.end() && it->second.type) type = it->second.type;
    ValueInfo& vi = input ? graph.add_input(v->name(), type) : graph.add_output(v, type);
    if (it != declared.end()) {
      vi.doc_string = it->second.doc_string;
      vi.metadata_props = it->second.metadata_props;
    }
  };
  for (Value* v : in) {
    // A named initializer becomes a true input: the caller feeds it.
    if (v->is_initializer()) g.remove_initializer(v);
    add_entry(v, true, g);
  }
  for (Value* v : out) add_entry(v, false, g);

  std::vector<Value*> unused;
  for (const auto& t : g.initializers()) {
    Value* v = g.find(t->name);
    if (v && v->uses().empty() && !v->is_graph_output()) unused.push_back(v);
  }
  for (Value* v : unused) g.remove_initializer(v);
  for (Value* v : initializer_inputs)
    if (v->is_initializer()) add_entry(v, true, g);

  const auto defined = [&g](const std::string& name) {
    const Value* v = g.find(name);
    return v && !v->is_undefined();
  };
  std::vector<ValueInfo> kept_info;
  for (auto& vi : g.value_info)
    if (!vi.value->is_undefined()) kept_info.push_back(std::move(vi));
  g.value_info = std::move(kept_info);
  std::vector<TensorAnnotation> kept_annotations;
  for (auto& a : g.quantization_annotation)
    if (defined(a.tensor_name)) kept_annotations.push_back(std::move(a));
  g.quantization_annotation = std::move(kept_annotations);
  g.prune_values();

  report.nodes_after = g.nodes().size();
  report.initializers_after = g.initializers().size();
  return report;
}

}  // namespace onnxtool::ir
