// edit_model: renames of graph inputs and outputs, input dims with re-inferred shapes, metadata.
#include "ir/edit.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string_view>

#include "ir/diagnostic.h"
#include "ir/error.h"
#include "ir/shape_inference.h"

namespace onnxtool::ir {
namespace {

bool name_used_anywhere(Model& model, const std::string& name) {
  bool used = false;
  for_each_graph(*model.graph, [&](Graph& g) { used = used || g.find(name) != nullptr; });
  return used;
}

std::string io_names(const std::vector<ValueInfo>& list) {
  std::string out;
  for (const auto& vi : list) out += (out.empty() ? "" : ", ") + vi.value->name();
  return out.empty() ? "none" : out;
}

/// The main graph's input or output entry named `name`, or a usage error listing them.
ValueInfo& io_entry(std::vector<ValueInfo>& list, const std::string& name, const Parameter& flag, const char* what) {
  for (auto& vi : list)
    if (vi.value->name() == name) return vi;
  throw_usage_error(flag, "'" + name + "' is not a graph " + what + " (" + what + "s: " + io_names(list) + ")");
}

void rename_value(Model& model, Value* v, const std::string& to, const Parameter& flag) {
  if (to.empty()) throw_usage_error(flag, "the new name is empty");
  if (v->name() == to) return;
  if (name_used_anywhere(model, to))
    throw_usage_error(flag, "'" + to + "' is already a tensor name in the model; choose another");
  const std::string from = v->name();
  // Nodes refer to the Value, in whatever subgraph reads it: renaming it renames every use.
  v->graph()->rename(v, to);
  for_each_graph(*model.graph, [&](Graph& g) {
    for (auto& a : g.quantization_annotation)
      if (a.tensor_name == from) a.tensor_name = to;
  });
}

std::string diagnostic_key(const Diagnostic& d) {
  return d.rule + "\n" + d.graph + "\n" + d.node + "\n" + std::to_string(d.node_index) + "\n" + d.message;
}

void set_input_shape(Graph& g, const std::string& name, const std::vector<Dim>& dims) {
  const Parameter flag{"input_shape", name};
  ValueInfo& vi = io_entry(g.inputs, name, {"input_shape", ""}, "input");
  if (vi.value->is_initializer()) throw_usage_error(flag, "'" + name + "' is an initializer, not a fed input");
  TypeInfo type = vi.type ? *vi.type : vi.value->type;
  if (!type.is_tensor() || type.elem_type == 0)
    throw_usage_error(flag, "the input is not a tensor of known element type (" + type.to_string() + ")");
  // Another rank is allowed (a stale declaration, such as [3,4] for what the model reads as
  // [1]): re-inference then decides whether the nodes take it.
  Shape shape;
  shape.dims = dims;
  type.shape = shape;
  vi.type = type;
  vi.value->type = type;
}

/// Re-infers every shape from the inputs: node outputs keep their element type (ops without a
/// shape function keep at least that) and lose their dims, then inference fills them in again.
/// Declarations (value_info, graph outputs) take the new types.
void reinfer(Model& model, EditReport& report, const std::set<std::string>& known_errors, const Parameter& edits) {
  for_each_graph(*model.graph, [](Graph& g) {
    for (const auto& n : g.nodes())
      for (Value* v : n->outputs())
        if (v && v->producer() == n.get() && v->type.is_tensor()) v->type.shape.reset();
  });
  DiagnosticSink sink;
  ShapeInferenceOptions options;
  options.check_declared = false;  // the declarations are what is being replaced
  infer_shapes(model, sink, options);
  for (const auto& d : sink.items())
    if (d.severity == Severity::kError && !known_errors.count(diagnostic_key(d)))
      throw_usage_error(edits, "the model contradicts the new shape: " + diagnostic_line(d));
  for_each_graph(*model.graph, [&report](Graph& g) {
    const auto update = [&report](ValueInfo& vi) {
      if (!vi.type || !vi.type->is_tensor() || vi.value->is_graph_input()) return;
      const TypeInfo& now = vi.value->type;
      if (now.is_tensor() && now.shape) {
        if (!vi.type->shape || vi.type->shape->to_string() != now.shape->to_string()) {
          vi.type->shape = now.shape;
          ++report.declarations_updated;
        }
      } else if (vi.type->shape) {
        vi.type->shape.reset();
        ++report.declarations_cleared;
      }
    };
    for (auto& vi : g.value_info) update(vi);
    for (auto& vi : g.outputs) update(vi);
  });
}

}  // namespace

std::vector<Dim> parse_dims(const std::string& what, const std::string& text) {
  std::vector<Dim> dims;
  size_t start = 0;
  while (true) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string d = text.substr(start, end - start);
    const auto bad = [&](const std::string& why) {
      throw_usage_error(what + ": '" + text + "': dim " + std::to_string(dims.size() + 1) + " " + why +
                        " (each dim a size, a symbol such as N, or ?)");
    };
    if (d.empty()) bad("is empty");
    if (d == "?") {
      dims.emplace_back();
    } else if (std::isdigit(static_cast<unsigned char>(d[0]))) {
      if (d.find_first_not_of("0123456789") != std::string::npos) bad("'" + d + "' is not a number");
      if (d.size() > 18) bad("'" + d + "' is too large");
      dims.push_back(Dim::of(std::stoll(d)));
    } else {
      const bool ident = (std::isalpha(static_cast<unsigned char>(d[0])) || d[0] == '_') &&
                         d.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") ==
                             std::string::npos;
      if (!ident) bad("'" + d + "' is neither a size nor a symbol");
      dims.push_back(Dim::symbol(d));
    }
    if (end == text.size()) break;
    start = end + 1;
  }
  return dims;
}

EditReport edit_model(Model& model, const EditRequest& request) {
  Graph& g = *model.graph;
  EditReport report;
  for (const auto& [from, to] : request.rename_inputs) {
    const Parameter flag{"rename_input", from + "=" + to};
    ValueInfo& vi = io_entry(g.inputs, from, flag, "input");
    rename_value(model, vi.value, to, flag);
    ++report.renamed;
  }
  for (const auto& [from, to] : request.rename_outputs) {
    const Parameter flag{"rename_output", from + "=" + to};
    ValueInfo& vi = io_entry(g.outputs, from, flag, "output");
    // The output is the value itself: renaming it would rename the input it passes through too.
    if (vi.value->is_graph_input())
      throw Error(ErrorKind::kUsage, "'" + from + "' is also a graph input; rename it as an input", flag, {"rename_input"});
    rename_value(model, vi.value, to, flag);
    ++report.renamed;
  }

  if (request.changes_shapes()) {
    // Contradictions the model had before the edit are not the new shape's fault.
    std::set<std::string> known;
    {
      DiagnosticSink before;
      ShapeInferenceOptions options;
      options.check_declared = false;
      infer_types(model, before, options);
      for (const auto& d : before.items()) known.insert(diagnostic_key(d));
    }
    std::string edits;
    for (const auto& [given, dims] : request.input_shapes) {
      // The input may be named as it was before a rename of the same command.
      std::string name = given;
      for (const auto& [from, to] : request.rename_inputs)
        if (from == given) name = to;
      set_input_shape(g, name, dims);
      edits += (edits.empty() ? "" : ", ") + name;
      ++report.shapes_set;
    }
    reinfer(model, report, known, edits.empty() ? Parameter{"fix_declarations", ""} : Parameter{"input_shape", edits});
  }

  for (const auto& [key, value] : request.set_metadata) {
    if (key.empty()) throw_usage_error({"set_metadata", ""}, "the key is empty");
    bool found = false;
    for (auto& p : model.metadata_props)
      if (p.key == key) {
        p.value = value;
        found = true;
      }
    if (!found) {
      StringPair p;
      p.key = key;
      p.value = value;
      model.metadata_props.push_back(std::move(p));
    }
    ++report.metadata_set;
  }
  for (const auto& key : request.remove_metadata) {
    const size_t before = model.metadata_props.size();
    std::vector<StringPair> kept;
    for (auto& p : model.metadata_props)
      if (p.key != key) kept.push_back(std::move(p));
    model.metadata_props = std::move(kept);
    if (model.metadata_props.size() == before) {
      std::string keys;
      for (const auto& p : model.metadata_props) keys += (keys.empty() ? "" : ", ") + p.key;
      throw_usage_error({"remove_metadata", key}, "the model has no such key (keys: " + (keys.empty() ? "none" : keys) + ")");
    }
    ++report.metadata_removed;
  }
  if (request.producer_name) model.producer_name = *request.producer_name;
  if (request.doc_string) model.doc_string = *request.doc_string;
  return report;
}

}  // namespace onnxtool::ir
