// The checker: model, graph-structure, node-schema, tensor and function rules, then shape
// inference. Every finding is collected; nothing stops at the first error.
#include "checker/checker.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ir/error.h"
#include "ir/model_io.h"
#include "ir/op_schema.h"
#include "ir/shape_inference.h"

namespace onnxtool::checker {
namespace {

using ir::Diagnostic;
using ir::Severity;

constexpr int kMaxGraphDepth = 64;

/// The names visible at one point of a graph: its own definitions so far plus its ancestors'.
struct Scope {
  const Scope* parent = nullptr;
  std::unordered_set<std::string> names;
  bool visible(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent)
      if (s->names.count(name)) return true;
    return false;
  }
};

/// How a type reads in the spec's type constraints: "tensor(float)", "seq(tensor(int64))".
std::string type_string(const ir::TypeInfo& t) {
  using K = ir::TypeInfo::Kind;
  auto elem = [](int32_t e) { return std::string(ir::data_type_name(static_cast<ir::DataType>(e))); };
  switch (t.kind) {
    case K::kTensor:
      return t.elem_type ? "tensor(" + elem(t.elem_type) + ")" : "";
    case K::kSparseTensor:
      return t.elem_type ? "sparse_tensor(" + elem(t.elem_type) + ")" : "";
    case K::kSequence: {
      const std::string inner = t.elem ? type_string(*t.elem) : "";
      return inner.empty() ? "" : "seq(" + inner + ")";
    }
    case K::kOptional: {
      const std::string inner = t.elem ? type_string(*t.elem) : "";
      return inner.empty() ? "" : "optional(" + inner + ")";
    }
    case K::kMap: {
      const std::string inner = t.elem ? type_string(*t.elem) : "";
      return inner.empty() || !t.elem_type ? "" : "map(" + elem(t.elem_type) + "," + inner + ")";
    }
    default:
      return "";
  }
}

std::string strip_spaces(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
  return s;
}

class Checker {
 public:
  Checker(const ir::Model& model, ir::DiagnosticSink& sink, const CheckOptions& options)
      : model_(model), sink_(sink), options_(options), registry_(ir::SchemaRegistry::instance()) {}

  void run();

 private:
  struct GraphCtx {
    std::string path;
    const std::vector<ir::OpsetId>* opsets;
    bool in_function;
    int depth;
  };

  ir::DiagnosticBuilder report(std::string rule) { return ir::report(sink_, std::move(rule)); }

  void check_model_fields();
  void check_opsets(const std::vector<ir::OpsetId>& opsets, const std::string& where);
  /// Where a name was defined first, for SSA messages: a graph input or initializer (`what`), or
  /// a node output (`node`). A node's label is built only for a message: building one per output
  /// would cost a string per node on every valid model.
  struct Definition {
    const char* what;
    const ir::Node* node;
    std::string label() const { return node ? node->describe() + " output" : what; }
  };
  /// What check_graph learns of one graph as it goes, phase by phase.
  struct GraphWalk {
    ir::Graph& g;
    const GraphCtx& ctx;
    const Scope* outer;  ///< the names of the enclosing graphs (null: a main graph or function)
    std::unordered_map<std::string, Definition> defined_by;
    std::unordered_set<std::string> input_names, init_names;
    std::unordered_map<std::string, size_t> producer;  ///< the node that outputs each name
    std::vector<std::vector<std::string>> uses;        ///< per node, the names it reads (subgraphs' too)
    std::vector<bool> in_cycle;
  };

  void check_graph(ir::Graph& g, const GraphCtx& ctx, const Scope* outer);
  void define(GraphWalk& w, const std::string& name, const Definition& def, long index);
  void check_graph_inputs(GraphWalk& w);
  void check_initializers(GraphWalk& w);
  void index_nodes(GraphWalk& w);
  void find_cycles(GraphWalk& w);
  /// Order and definedness: walks the nodes with the names available so far, each node's
  /// subgraphs seeing the names before it.
  void check_nodes_in_order(GraphWalk& w, Scope& available);
  void check_graph_outputs(GraphWalk& w, const Scope& available);
  void check_value_type(const ir::TypeInfo& t, const GraphCtx& ctx, const std::string& name,
                        const char* role);
  void check_node(ir::Node& n, long index, const GraphCtx& ctx);
  /// The schema of onnxruntime's own ai.onnx op that `n` is (reported as node.onnxruntime-op),
  /// or nullptr.
  const ir::OpSchema* onnxruntime_op(ir::Node& n, long index, const GraphCtx& ctx, int64_t version);
  void check_attributes(ir::Node& n, long index, const GraphCtx& ctx, const ir::OpSchema* schema);
  void check_type_constraints(ir::Graph& g, const GraphCtx& ctx);
  void check_tensors();
  void check_sparse(const ir::SparseTensor& s, const std::string& where);
  void check_quant_scales(ir::Graph& g, const GraphCtx& ctx);
  void check_functions();
  std::optional<int64_t> opset_of(const std::string& domain, const GraphCtx& ctx) const;
  const ir::Function* local_function(const ir::Node& n) const;
  /// A value's type after inference: the inferred one, else its own.
  const ir::TypeInfo& type_of(const ir::Value* v) const {
    const auto it = inferred_.find(v);
    return it != inferred_.end() ? it->second : v->type;
  }

  const ir::Model& model_;
  // Types as shape inference inferred them (the model keeps its own).
  ir::TypeTable inferred_;
  ir::DiagnosticSink& sink_;
  const CheckOptions& options_;
  const ir::SchemaRegistry& registry_;
  // Graph contexts by graph, for the type-constraint pass after inference.
  std::vector<std::pair<ir::Graph*, GraphCtx>> graphs_;
};

std::optional<int64_t> Checker::opset_of(const std::string& domain, const GraphCtx& ctx) const {
  const std::string_view d = ir::canonical_domain(domain);
  for (const auto& o : *ctx.opsets)
    if (ir::canonical_domain(o.domain) == d) return o.version;
  return std::nullopt;
}

const ir::Function* Checker::local_function(const ir::Node& n) const {
  for (const auto& f : model_.functions)
    if (f.name == n.op_type && ir::canonical_domain(f.domain) == ir::canonical_domain(n.domain) &&
        f.overload == n.overload)
      return &f;
  return nullptr;
}

void Checker::check_opsets(const std::vector<ir::OpsetId>& opsets, const std::string& where) {
  std::set<std::string> seen;
  for (const auto& o : opsets) {
    const std::string d(ir::canonical_domain(o.domain));
    const std::string shown = d.empty() ? "ai.onnx" : d;
    if (!seen.insert(d).second)
      report("model.opset-duplicate").error(where + "imports domain '" + shown + "' more than once");
    if (registry_.has_domain(d)) {
      const int max = registry_.max_version(d);
      if (o.version < 1 || o.version > max)
        report("model.opset-version")
            .error(where + "imports " + shown + " opset " + std::to_string(o.version) +
                   "; supported versions are 1 to " + std::to_string(max));
    }
  }
}

void Checker::check_model_fields() {
  if (model_.ir_version <= 0) {
    report("model.ir-version")
        .error(model_.ir_version == 0 ? std::string("ir_version is missing or zero")
                                      : "ir_version " + std::to_string(model_.ir_version) + " is negative");
  } else if (model_.ir_version > kMaxIrVersion) {
    report("model.ir-version")
        .error("IR version " + std::to_string(model_.ir_version) + " is newer than the newest known (" +
               std::to_string(kMaxIrVersion) + ")");
  }
  // From IR 3 a model names the operator sets it uses; nodes of a domain it does not import are
  // reported per node (model.domain-not-imported).
  if (model_.opset_import.empty() && model_.ir_version >= 3)
    report("model.opset-missing")
        .error("the model imports no operator set (opset_import is required from IR version 3)");
  check_opsets(model_.opset_import, "the model ");
  std::set<std::string> keys;
  for (const auto& kv : model_.metadata_props)
    if (!keys.insert(kv.key).second)
      report("model.metadata-duplicate")
          .emit(Severity::kWarning, "metadata key '" + kv.key + "' appears more than once");
  if (!model_.functions.empty() && model_.ir_version > 0 && model_.ir_version < 8)
    report("model.ir-feature")
        .error("model-local functions need IR version 8, the model has " + std::to_string(model_.ir_version));
}

void Checker::check_value_type(const ir::TypeInfo& t, const GraphCtx& ctx, const std::string& name,
                               const char* role) {
  using K = ir::TypeInfo::Kind;
  if (t.kind == K::kUnset) {
    report("value.type-missing").in(ctx.path).tensor(name).error(std::string(role) + " '" + name + "' has no type");
    return;
  }
  const ir::TypeInfo* cur = &t;
  while (cur) {
    if ((cur->kind == K::kTensor || cur->kind == K::kSparseTensor || cur->kind == K::kMap) &&
        cur->elem_type != 0 && !ir::is_valid_data_type(cur->elem_type))
      report("value.elem-type")
          .in(ctx.path)
          .tensor(name)
          .error(std::string(role) + " '" + name + "' has invalid element type " + std::to_string(cur->elem_type));
    if ((cur->kind == K::kTensor || cur->kind == K::kSparseTensor) && cur->elem_type == 0)
      report("value.elem-type")
          .in(ctx.path)
          .tensor(name)
          .error(std::string(role) + " '" + name + "' has a tensor type without element type");
    if ((cur->kind == K::kSequence || cur->kind == K::kOptional || cur->kind == K::kMap) && !cur->elem)
      report("value.elem-type")
          .in(ctx.path)
          .tensor(name)
          .error(std::string(role) + " '" + name + "' has a " + cur->to_string() + " type without element type");
    if (cur->shape)
      for (const auto& d : cur->shape->dims)
        if (d.is_negative_value())
          report("value.negative-dim")
              .in(ctx.path)
              .tensor(name)
              .emit(options_.strict ? Severity::kError : Severity::kWarning,
                    std::string(role) + " '" + name + "' declares dimension " + std::to_string(d.value) +
                        "; read as a free dimension (as onnxruntime reads it), not a size");
    cur = cur->elem ? cur->elem.get() : nullptr;
  }
}

void Checker::check_graph(ir::Graph& g, const GraphCtx& ctx, const Scope* outer) {
  graphs_.emplace_back(&g, ctx);
  if (ctx.depth > kMaxGraphDepth) {
    report("graph.nesting").in(ctx.path).error("subgraphs nested deeper than " + std::to_string(kMaxGraphDepth) + " levels");
    return;
  }
  GraphWalk w{g, ctx, outer};
  check_graph_inputs(w);
  check_initializers(w);
  index_nodes(w);
  find_cycles(w);
  Scope available;
  available.parent = outer;
  for (const auto& vi : g.inputs) available.names.insert(vi.value->name());
  for (const auto& name : w.init_names) available.names.insert(name);
  check_nodes_in_order(w, available);
  check_graph_outputs(w, available);
  for (const auto& vi : g.value_info)
    if (vi.type && vi.type->kind != ir::TypeInfo::Kind::kUnset)
      check_value_type(*vi.type, ctx, vi.value->name(), "value_info");
  check_quant_scales(g, ctx);
}

void Checker::define(GraphWalk& w, const std::string& name, const Definition& def, long index) {
  if (name.empty()) return;
  auto [it, fresh] = w.defined_by.emplace(name, def);
  if (!fresh) {
    report("graph.ssa")
        .in(w.ctx.path)
        .at(def.node, index)
        .tensor(name)
        .error("'" + name + "' is defined more than once: as " + it->second.label() + " and as " + def.label());
    return;
  }
  if (w.outer && w.outer->visible(name))
    report("graph.shadowing")
        .in(w.ctx.path)
        .at(def.node, index)
        .tensor(name)
        .error("'" + name + "' (" + def.label() + ") shadows a value of an enclosing graph");
}

void Checker::check_graph_inputs(GraphWalk& w) {
  const bool is_sub = w.outer != nullptr;
  for (const auto& vi : w.g.inputs) {
    const std::string& name = vi.value->name();
    if (name.empty()) report("graph.empty-name").in(w.ctx.path).error("a graph input has an empty name");
    if (!w.input_names.insert(name).second) {
      report("graph.duplicate-input").in(w.ctx.path).tensor(name).error("graph input '" + name + "' is listed twice");
      continue;
    }
    define(w, name, {"graph input", nullptr}, -1);
    if (!w.ctx.in_function && !is_sub) check_value_type(vi.type.value_or(ir::TypeInfo{}), w.ctx, name, "graph input");
    else if (vi.type && vi.type->kind != ir::TypeInfo::Kind::kUnset)
      check_value_type(*vi.type, w.ctx, name, "graph input");  // optional in subgraphs
  }
}

void Checker::check_initializers(GraphWalk& w) {
  const bool is_sub = w.outer != nullptr;
  auto add_initializer = [&](const std::string& name, const char* what) {
    if (name.empty()) {
      report("graph.empty-name")
          .in(w.ctx.path)
          .error(std::string(what[0] == 'i' ? "an " : "a ") + what + " has an empty name");
      return;
    }
    if (!w.init_names.insert(name).second) {
      report("graph.duplicate-initializer")
          .in(w.ctx.path)
          .tensor(name)
          .error(std::string(what) + " '" + name + "' is listed twice");
      return;
    }
    if (w.input_names.count(name)) {
      if (is_sub && model_.ir_version >= 4)
        report("graph.initializer-input")
            .in(w.ctx.path)
            .tensor(name)
            .error("'" + name + "' is both an input and an initializer of a subgraph (not allowed from IR 4)");
      return;
    }
    if (model_.ir_version > 0 && model_.ir_version < 4 && !w.ctx.in_function)
      report("graph.initializer-not-input")
          .in(w.ctx.path)
          .tensor(name)
          .error(std::string(what) + " '" + name + "' is not a graph input (required before IR 4)");
    define(w, name, {what, nullptr}, -1);
  };
  for (const auto& t : w.g.initializers()) add_initializer(t->name, "initializer");
  for (const auto& s : w.g.sparse_initializers) add_initializer(s.name(), "sparse initializer");
  if (!w.g.sparse_initializers.empty() && model_.ir_version > 0 && model_.ir_version < 6)
    report("model.ir-feature").in(w.ctx.path).error("sparse initializers need IR version 6");
}

void Checker::index_nodes(GraphWalk& w) {
  const auto& nodes = w.g.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const ir::Value* v : nodes[i]->outputs()) {
      if (!v) continue;
      define(w, v->name(), {nullptr, nodes[i].get()}, static_cast<long>(i));
      w.producer.emplace(v->name(), i);
    }
  }
  w.uses.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const ir::Value* v : nodes[i]->inputs())
      if (v) w.uses[i].push_back(v->name());
    for (const ir::Value* v : w.g.implicit_inputs(nodes[i].get())) w.uses[i].push_back(v->name());
  }
}

void Checker::find_cycles(GraphWalk& w) {
  // Kahn over the producer relation by name (uses in subgraphs count): a model may link names
  // that its values do not.
  const auto& nodes = w.g.nodes();
  std::vector<size_t> pending(nodes.size(), 0);
  std::vector<std::vector<size_t>> succ(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const auto& name : w.uses[i]) {
      auto it = w.producer.find(name);
      if (it == w.producer.end()) continue;
      succ[it->second].push_back(i);
      pending[i]++;
    }
  std::vector<size_t> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!pending[i]) ready.push_back(i);
  size_t done = 0;
  while (!ready.empty()) {
    size_t i = ready.back();
    ready.pop_back();
    ++done;
    for (size_t s : succ[i])
      if (--pending[s] == 0) ready.push_back(s);
  }
  w.in_cycle.assign(nodes.size(), false);
  if (done == nodes.size()) return;
  std::string names;
  int listed = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!pending[i]) continue;
    w.in_cycle[i] = true;
    if (listed < 5) names += (listed++ ? ", " : "") + nodes[i]->describe();
  }
  report("graph.cycle").in(w.ctx.path).error("the graph has a cycle through " + names);
}

void Checker::check_nodes_in_order(GraphWalk& w, Scope& available) {
  const GraphCtx& ctx = w.ctx;
  const auto& nodes = w.g.nodes();
  const bool counted = ctx.depth == 0 && !ctx.in_function && !nodes.empty();  // the progress of the main graph's
  if (counted) ir::report_progress(options_.progress, "checking nodes", 0, static_cast<int64_t>(nodes.size()));
  for (size_t i = 0; i < nodes.size(); ++i) {
    ir::Node& n = *nodes[i];
    const long index = static_cast<long>(i);
    for (const auto& name : w.uses[i]) {
      if (available.visible(name)) continue;
      auto it = w.producer.find(name);
      if (it != w.producer.end()) {
        if (!w.in_cycle[i])
          report("graph.topological-order")
              .in(ctx.path)
              .at(&n, index)
              .tensor(name)
              .error(n.describe() + " uses '" + name + "' before " + nodes[it->second]->describe() + " (node #" +
                     std::to_string(it->second) + ") produces it");
      } else {
        report("graph.undefined-value")
            .in(ctx.path)
            .at(&n, index)
            .tensor(name)
            .error(n.describe() + " uses '" + name + "', which is not defined in scope");
      }
    }
    check_node(n, index, ctx);
    // A million nodes take seconds: the main graph's are counted (every 4096, and the last,
    // which ends the phase).
    if (counted && ((i + 1) % 4096 == 0 || i + 1 == nodes.size()))
      ir::report_progress(options_.progress, "checking nodes", static_cast<int64_t>(i + 1), static_cast<int64_t>(nodes.size()));
    // Subgraphs see the names available before this node.
    for (auto& a : n.attributes) {
      auto sub_ctx = [&](const std::string& label) {
        GraphCtx c = ctx;
        c.path = ctx.path + "/" + (n.name.empty() ? n.op_type + "#" + std::to_string(i) : n.name) + ":" + label;
        c.depth = ctx.depth + 1;
        return c;
      };
      if (a.g) check_graph(*a.g, sub_ctx(a.name), &available);
      for (size_t k = 0; k < a.graphs.size(); ++k)
        check_graph(*a.graphs[k], sub_ctx(a.name + "[" + std::to_string(k) + "]"), &available);
    }
    for (const ir::Value* v : n.outputs())
      if (v) available.names.insert(v->name());
  }
}

void Checker::check_graph_outputs(GraphWalk& w, const Scope& available) {
  const bool is_sub = w.outer != nullptr;
  std::unordered_set<std::string> output_names;
  for (const auto& vi : w.g.outputs) {
    const std::string& name = vi.value->name();
    if (name.empty()) {
      report("graph.empty-name").in(w.ctx.path).error("a graph output has an empty name");
      continue;
    }
    if (!output_names.insert(name).second)
      report("graph.duplicate-output").in(w.ctx.path).tensor(name).error("graph output '" + name + "' is listed twice");
    if (!available.visible(name))
      report("graph.output-undefined")
          .in(w.ctx.path)
          .tensor(name)
          .error("graph output '" + name + "' is not produced by any node, input or initializer");
    if (!w.ctx.in_function && !is_sub) check_value_type(vi.type.value_or(ir::TypeInfo{}), w.ctx, name, "graph output");
    else if (vi.type && vi.type->kind != ir::TypeInfo::Kind::kUnset)
      check_value_type(*vi.type, w.ctx, name, "graph output");  // optional in subgraphs
  }
}

void Checker::check_node(ir::Node& n, long index, const GraphCtx& ctx) {
  if (n.op_type.empty()) {
    report("node.op-type-empty").in(ctx.path).at(&n, index).error(n.describe() + " has no op_type");
    return;
  }
  const std::string domain(ir::canonical_domain(n.domain));
  const std::string shown_domain = domain.empty() ? "ai.onnx" : domain;
  auto version = opset_of(domain, ctx);
  if (local_function(n)) {
    if (!version)
      report("model.domain-not-imported")
          .in(ctx.path)
          .at(&n, index)
          .error(n.describe() + " calls a function of domain '" + shown_domain + "', which is not imported");
    check_attributes(n, index, ctx, nullptr);
    return;
  }
  if (!version) {
    report("model.domain-not-imported")
        .in(ctx.path)
        .at(&n, index)
        .error(n.describe() + " uses domain '" + shown_domain + "', which the model does not import");
    return;
  }
  if (!registry_.has_domain(domain)) {
    report("node.custom-domain")
        .in(ctx.path)
        .at(&n, index)
        .emit(options_.strict ? Severity::kError : Severity::kWarning,
              n.describe() + " is in custom domain '" + domain + "' and cannot be checked");
    check_attributes(n, index, ctx, nullptr);
    return;
  }
  const ir::OpSchema* schema = registry_.find(domain, n.op_type, *version);
  if (!schema) schema = onnxruntime_op(n, index, ctx, *version);
  if (!schema && !registry_.fully_documented(domain) && !registry_.versions(domain, n.op_type)) {
    report("node.undocumented-op")
        .in(ctx.path)
        .at(&n, index)
        .emit(options_.strict ? Severity::kError : Severity::kWarning,
              n.describe() + ": " + n.op_type + " is not among the documented operators of domain '" + domain +
                  "' and cannot be checked");
    check_attributes(n, index, ctx, nullptr);
    return;
  }
  if (!schema) {
    const auto* versions = registry_.versions(domain, n.op_type);
    std::string why = "is not an operator of " + shown_domain;
    if (versions && !versions->empty()) {
      if (versions->front().since_version > *version)
        why = "does not exist at " + shown_domain + " opset " + std::to_string(*version) +
              " (introduced at " + std::to_string(versions->front().since_version) + ")";
      else
        why = "is deprecated at " + shown_domain + " opset " + std::to_string(*version);
    }
    report("node.unknown-op").in(ctx.path).at(&n, index).error(n.describe() + ": " + n.op_type + " " + why);
    return;
  }

  const int n_in = static_cast<int>(n.inputs().size());
  const int n_out = static_cast<int>(n.outputs().size());
  const std::string opv = n.op_type + "-" + std::to_string(schema->since_version);
  // A count outside the schema's bounds; `takes` words the upper bound ("takes at most" inputs,
  // "has at most" outputs).
  const auto check_count = [&](const char* rule, int count, int least, int most, const char* noun, const char* takes) {
    if (count > most)
      report(rule).in(ctx.path).at(&n, index).error(n.describe() + " has " + std::to_string(count) + " " + noun + "; " + opv +
                                                    " " + takes + " at most " + std::to_string(most));
    if (count < least)
      report(rule).in(ctx.path).at(&n, index).error(n.describe() + " has " + std::to_string(count) + " " + noun + "; " + opv +
                                                    " needs at least " + std::to_string(least));
  };
  const auto check_required = [&](const char* rule, const char* noun, const ir::FormalParam& formal, const ir::Value* value, int i) {
    if (!value && formal.option == ir::ParamOption::kSingle)
      report(rule).in(ctx.path).at(&n, index).error(n.describe() + ": required " + noun + " '" + formal.name + "' (#" +
                                                    std::to_string(i) + ") is empty");
  };
  check_count("node.input-count", n_in, schema->min_inputs, schema->max_inputs, "inputs", "takes");
  for (int i = 0; i < n_in && !schema->inputs.empty(); ++i) {
    const size_t f = std::min(static_cast<size_t>(i), schema->inputs.size() - 1);
    const ir::FormalParam& formal = schema->inputs[f];
    if (static_cast<size_t>(i) >= schema->inputs.size() && formal.option != ir::ParamOption::kVariadic) break;
    check_required("node.input-missing", "input", formal, n.input(static_cast<size_t>(i)), i);
  }
  for (int i = 0; i < n_out && i < static_cast<int>(schema->outputs.size()); ++i)
    check_required("node.output-missing", "output", schema->outputs[static_cast<size_t>(i)], n.output(static_cast<size_t>(i)), i);
  check_count("node.output-count", n_out, schema->min_outputs, schema->max_outputs, "outputs", "has");
  check_attributes(n, index, ctx, schema);
}

// Which value field an attribute uses, for attributes that have no `type`.
ir::AttrType inferred_attr_type(const ir::Attribute& a) {
  using T = ir::AttrType;
  if (a.t) return T::kTensor;
  if (a.g) return T::kGraph;
  if (a.sparse_tensor) return T::kSparseTensor;
  if (a.tp) return T::kTypeProto;
  if (!a.floats.empty()) return T::kFloats;
  if (!a.ints.empty()) return T::kInts;
  if (!a.strings.empty()) return T::kStrings;
  if (!a.tensors.empty()) return T::kTensors;
  if (!a.graphs.empty()) return T::kGraphs;
  if (!a.sparse_tensors.empty()) return T::kSparseTensors;
  if (!a.type_protos.empty()) return T::kTypeProtos;
  if (a.explicit_defaults & (1u << 2) || a.f != 0) return T::kFloat;
  if (a.explicit_defaults & (1u << 3) || a.i != 0) return T::kInt;
  if (a.explicit_defaults & (1u << 4) || !a.s.empty()) return T::kString;
  return T::kUndefined;
}

// How many value fields an attribute uses (an empty list is indistinguishable from no list).
int value_field_count(const ir::Attribute& a) {
  int n = 0;
  n += (a.explicit_defaults & (1u << 2)) || a.f != 0;
  n += (a.explicit_defaults & (1u << 3)) || a.i != 0;
  n += (a.explicit_defaults & (1u << 4)) || !a.s.empty();
  n += static_cast<bool>(a.t);
  n += static_cast<bool>(a.g);
  n += static_cast<bool>(a.sparse_tensor);
  n += static_cast<bool>(a.tp);
  n += !a.floats.empty();
  n += !a.ints.empty();
  n += !a.strings.empty();
  n += !a.tensors.empty();
  n += !a.graphs.empty();
  n += !a.sparse_tensors.empty();
  n += !a.type_protos.empty();
  return n;
}

bool is_list(ir::AttrType t) {
  using T = ir::AttrType;
  return t == T::kFloats || t == T::kInts || t == T::kStrings || t == T::kTensors || t == T::kGraphs ||
         t == T::kSparseTensors || t == T::kTypeProtos;
}

void Checker::check_attributes(ir::Node& n, long index, const GraphCtx& ctx, const ir::OpSchema* schema) {
  std::set<std::string> names;
  for (const auto& a : n.attributes) {
    if (a.name.empty()) {
      report("node.attribute-name").in(ctx.path).at(&n, index).error(n.describe() + " has an attribute without a name");
      continue;
    }
    if (!names.insert(a.name).second)
      report("node.attribute-duplicate")
          .in(ctx.path)
          .at(&n, index)
          .error(n.describe() + ": attribute '" + a.name + "' is given twice");
    if (!a.ref_attr_name.empty()) {
      if (!ctx.in_function)
        report("node.attribute-ref")
            .in(ctx.path)
            .at(&n, index)
            .error(n.describe() + ": attribute '" + a.name + "' refers to a function attribute outside a function");
      continue;
    }
    const int fields = value_field_count(a);
    if (fields > 1 || (a.attr_type() != ir::AttrType::kUndefined && fields == 1 &&
                       inferred_attr_type(a) != a.attr_type() && !is_list(a.attr_type())))
      report("node.attribute-value")
          .in(ctx.path)
          .at(&n, index)
          .error(n.describe() + ": attribute '" + a.name + "' must hold exactly one value, of its type " +
                 std::string(ir::attr_type_name(a.attr_type())));
    ir::AttrType type = a.attr_type();
    if (type == ir::AttrType::kUndefined) {
      type = inferred_attr_type(a);
      if (model_.ir_version >= 2)
        report("node.attribute-type")
            .in(ctx.path)
            .at(&n, index)
            .error(n.describe() + ": attribute '" + a.name + "' has no type (required from IR version 2)");
    } else if (static_cast<int32_t>(type) > 14) {
      report("node.attribute-type")
          .in(ctx.path)
          .at(&n, index)
          .error(n.describe() + ": attribute '" + a.name + "' has an invalid type");
      continue;
    }
    if (!schema) continue;
    const ir::AttributeSpec* spec = schema->attribute(a.name);
    if (!spec) {
      // A partly documented domain (com.microsoft) may have attributes its documentation omits.
      const bool documented = registry_.fully_documented(ir::canonical_domain(n.domain));
      report("node.attribute-unknown")
          .in(ctx.path)
          .at(&n, index)
          .emit(documented || options_.strict ? Severity::kError : Severity::kWarning,
                n.describe() + ": " + n.op_type + "-" + std::to_string(schema->since_version) + " has no attribute '" +
                    a.name + "'" + (documented ? "" : " in its documentation"));
      continue;
    }
    if (spec->type != ir::AttrType::kUndefined && type != spec->type)
      report("node.attribute-type")
          .in(ctx.path)
          .at(&n, index)
          .error(n.describe() + ": attribute '" + a.name + "' should be " +
                 std::string(ir::attr_type_name(spec->type)) + ", is " + std::string(ir::attr_type_name(type)));
  }
  if (!schema) return;
  for (const auto& spec : schema->attributes)
    if (spec.required && !names.count(spec.name))
      report("node.attribute-missing")
          .in(ctx.path)
          .at(&n, index)
          .error(n.describe() + ": required attribute '" + spec.name + "' of " + n.op_type + "-" +
                 std::to_string(schema->since_version) + " is missing");
}

const ir::OpSchema* Checker::onnxruntime_op(ir::Node& n, long index, const GraphCtx& ctx, int64_t version) {
  const ir::OpSchema* schema = registry_.onnxruntime_extension(n.domain, n.op_type, version);
  if (!schema) return nullptr;
  const auto* standard = registry_.versions("", n.op_type);
  const std::string spec = standard && !standard->empty()
                               ? "ONNX defines " + n.op_type + " from opset " + std::to_string(standard->front().since_version)
                               : "the ONNX specification has no such op";
  report("node.onnxruntime-op")
      .in(ctx.path)
      .at(&n, index)
      .emit(options_.strict ? Severity::kError : Severity::kWarning,
            n.describe() + ": " + n.op_type + " at ai.onnx opset " + std::to_string(version) +
                " is onnxruntime's own operator (" + spec + "): onnxruntime and onnxtool run it, other ONNX runtimes may not");
  return schema;
}

void Checker::check_type_constraints(ir::Graph& g, const GraphCtx& ctx) {
  const auto& nodes = g.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    ir::Node& n = *nodes[i];
    const std::string domain(ir::canonical_domain(n.domain));
    auto version = opset_of(domain, ctx);
    if (!version || local_function(n) || !registry_.has_domain(domain)) continue;
    const ir::OpSchema* schema = registry_.find(domain, n.op_type, *version);
    if (!schema) schema = registry_.onnxruntime_extension(domain, n.op_type, *version);
    if (!schema) continue;
    std::map<std::string, std::string> bound;  // type variable -> type string
    auto check = [&](const std::vector<ir::FormalParam>& formals, const std::vector<ir::Value*>& values,
                     const char* role) {
      for (size_t k = 0; k < values.size() && !formals.empty(); ++k) {
        const ir::FormalParam& f = formals[std::min(k, formals.size() - 1)];
        if (k >= formals.size() && f.option != ir::ParamOption::kVariadic) break;
        const ir::Value* v = values[k];
        if (!v) continue;
        const std::string ts = type_string(type_of(v));
        if (ts.empty()) continue;
        const ir::TypeConstraint* c = schema->constraint(f.type);
        if (!c) {
          // A fixed type string such as "tensor(int64)".
          if (!f.type.empty() && strip_spaces(f.type) != ts)
            report("node.type-constraint")
                .in(ctx.path)
                .at(&n, static_cast<long>(i))
                .tensor(v->name())
                .error(n.describe() + ": " + role + " '" + f.name + "' must be " + f.type + ", is " + ts);
          continue;
        }
        bool allowed = false;
        for (const auto& a : c->allowed) allowed = allowed || strip_spaces(a) == ts;
        if (!allowed) {
          report("node.type-constraint")
              .in(ctx.path)
              .at(&n, static_cast<long>(i))
              .tensor(v->name())
              .error(n.describe() + ": " + role + " '" + f.name + "' has type " + ts + ", not allowed for " + c->name +
                     " of " + n.op_type + "-" + std::to_string(schema->since_version));
          continue;
        }
        const bool heterogeneous = f.option == ir::ParamOption::kVariadic && !f.homogeneous;
        if (heterogeneous) continue;
        auto [it, fresh] = bound.emplace(c->name, ts);
        if (!fresh && it->second != ts)
          report("node.type-constraint")
              .in(ctx.path)
              .at(&n, static_cast<long>(i))
              .tensor(v->name())
              .error(n.describe() + ": " + role + " '" + f.name + "' is " + ts + " but " + c->name +
                     " is already bound to " + it->second);
      }
    };
    check(schema->inputs, n.inputs(), "input");
    check(schema->outputs, n.outputs(), "output");
  }
}

void Checker::check_quant_scales(ir::Graph& g, const GraphCtx& ctx) {
  const auto& nodes = g.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    ir::Node& n = *nodes[i];
    if (!ir::canonical_domain(n.domain).empty()) continue;
    if (n.op_type != "QuantizeLinear" && n.op_type != "DequantizeLinear") continue;
    const ir::Value* scale = n.input(1);
    if (!scale || !scale->initializer() || scale->is_graph_input()) continue;
    const ir::Tensor& t = *scale->initializer();
    if (t.type() != ir::DataType::kFloat) continue;
    ir::Bytes raw;
    try {
      raw = t.raw_bytes();
    } catch (const Error&) {
      continue;  // reported by the tensor rules
    }
    for (size_t k = 0; k * 4 + 4 <= raw.size(); ++k) {
      float f;
      std::memcpy(&f, raw.data() + k * 4, 4);
      if (!(f > 0) || !std::isfinite(f)) {
        report("tensor.quant-scale")
            .in(ctx.path)
            .at(&n, static_cast<long>(i))
            .tensor(scale->name())
            .error(n.describe() + ": scale '" + scale->name() + "' has a value " + std::to_string(f) +
                   " that is not positive and finite");
        break;
      }
    }
  }
}

void Checker::check_sparse(const ir::SparseTensor& s, const std::string& where) {
  const std::string name = s.name();
  auto fail = [&](const std::string& m) {
    report("tensor.sparse").tensor(name).error(where + ": sparse tensor '" + name + "' " + m);
  };
  if (!s.values) return fail("has no values");
  for (int64_t d : s.dims)
    if (d < 0) return fail("has a negative dimension");
  auto total = ir::element_count(s.dims.data(), s.dims.size());
  if (!total) return fail("has a dense size that overflows");
  if (s.values->dims.size() != 1) return fail("values must be 1-D");
  const int64_t nnz = s.values->dims[0];
  if (!s.indices) {
    if (nnz != 0) return fail("has values but no indices");
    return;
  }
  const ir::Tensor& idx = *s.indices;
  if (idx.type() != ir::DataType::kInt64) return fail("indices must be int64");
  const bool linear = idx.dims.size() == 1;
  if (!(linear && idx.dims[0] == nnz) &&
      !(idx.dims.size() == 2 && idx.dims[0] == nnz && idx.dims[1] == static_cast<int64_t>(s.dims.size())))
    return fail("indices shape does not match [NNZ] or [NNZ, rank]");
  ir::Bytes raw;
  try {
    raw = idx.raw_bytes();
  } catch (const Error&) {
    return;
  }
  const size_t count = raw.size() / 8;
  int64_t prev = -1;
  for (size_t k = 0; k < count; ++k) {
    int64_t v;
    std::memcpy(&v, raw.data() + k * 8, 8);
    if (linear) {
      if (v < 0 || static_cast<uint64_t>(v) >= *total)
        return fail("index " + std::to_string(v) + " is out of range [0, " + std::to_string(*total) + ")");
      if (v <= prev) return fail("indices are not sorted and distinct");
      prev = v;
    } else {
      const size_t dim = k % s.dims.size();
      if (v < 0 || v >= s.dims[dim])
        return fail("index " + std::to_string(v) + " is out of range for dimension " + std::to_string(dim));
    }
  }
  if (!linear && !s.dims.empty()) {
    // Coordinate rows must be in lexicographic order, without repeats.
    const size_t r = s.dims.size();
    for (size_t row = 1; row * r < count; ++row) {
      int cmp = 0;
      for (size_t j = 0; j < r && cmp == 0; ++j) {
        int64_t a, b;
        std::memcpy(&a, raw.data() + ((row - 1) * r + j) * 8, 8);
        std::memcpy(&b, raw.data() + (row * r + j) * 8, 8);
        cmp = a < b ? -1 : (a > b ? 1 : 0);
      }
      if (cmp >= 0) return fail("coordinate indices are not in sorted order at row " + std::to_string(row));
    }
  }
}

void Checker::check_tensors() {
  ir::for_each_tensor(model_, [this](const ir::Tensor& t, const std::string& where) {
    if (t.data_type == 0 || !ir::is_valid_data_type(t.data_type))
      report("tensor.data-type")
          .tensor(t.name)
          .error(where + ": tensor '" + t.name + "' has " +
                 (t.data_type == 0 ? std::string("no data type") : "invalid data type " + std::to_string(t.data_type)));
    const int stores = static_cast<int>(t.raw_data.has_value()) + !t.float_data.empty() + !t.int32_data.empty() +
                       !t.string_data.empty() + !t.int64_data.empty() + !t.double_data.empty() +
                       !t.uint64_data.empty() + (t.is_external() ? 1 : 0);
    if (stores > 1)
      report("tensor.data-fields")
          .tensor(t.name)
          .error(where + ": tensor '" + t.name +
                 "' holds its data in more than one field (raw_data, typed fields, external)");
    for (int64_t d : t.dims)
      if (d < 0) {
        report("tensor.dims")
            .tensor(t.name)
            .error(where + ": tensor '" + t.name + "' has a negative dimension " + std::to_string(d));
        break;
      }
  });
  auto sparse_in = [this](ir::Graph& root) {
    ir::for_each_graph(root, [this](ir::Graph& g) {
      for (const auto& s : g.sparse_initializers) check_sparse(s, "graph '" + g.name + "'");
      for (const auto& n : g.nodes())
        for (const auto& a : n->attributes) {
          if (a.sparse_tensor) check_sparse(*a.sparse_tensor, n->describe());
          for (const auto& s : a.sparse_tensors) check_sparse(s, n->describe());
        }
    });
  };
  if (model_.graph) sparse_in(*model_.graph);
}

void Checker::check_functions() {
  std::set<std::tuple<std::string, std::string, std::string>> seen;
  for (auto& f : model_.functions) {
    const std::string id = (f.domain.empty() ? "" : f.domain + "::") + f.name;
    if (f.name.empty()) report("function.name").error("a model-local function has no name");
    if (!seen.emplace(std::string(ir::canonical_domain(f.domain)), f.name, f.overload).second)
      report("function.duplicate").error("function '" + id + "' is defined twice");
    const auto& opsets = f.opset_import.empty() ? model_.opset_import : f.opset_import;
    check_opsets(f.opset_import, "function '" + id + "' ");
    GraphCtx ctx{"function " + id, &opsets, true, 0};
    check_graph(*f.body, ctx, nullptr);
  }
  // Recursion: a function that calls itself, directly or through others.
  std::map<const ir::Function*, std::vector<const ir::Function*>> calls;
  for (auto& f : model_.functions)
    ir::for_each_graph(*f.body, [&](ir::Graph& g) {
      for (const auto& n : g.nodes())
        if (const ir::Function* callee = local_function(*n)) calls[&f].push_back(callee);
    });
  for (auto& f : model_.functions) {
    std::vector<const ir::Function*> stack{&f};
    std::set<const ir::Function*> visited;
    bool recursive = false;
    while (!stack.empty() && !recursive) {
      const ir::Function* cur = stack.back();
      stack.pop_back();
      for (const ir::Function* c : calls[cur]) {
        if (c == &f) recursive = true;
        if (visited.insert(c).second) stack.push_back(c);
      }
    }
    if (recursive) report("function.recursion").error("function '" + f.name + "' calls itself (recursion)");
  }
}

void Checker::run() {
  check_model_fields();
  check_tensors();
  if (model_.graph) check_graph(*model_.graph, GraphCtx{"main", &model_.opset_import, false, 0}, nullptr);
  check_functions();
  if (options_.infer_shapes) {
    ir::report_progress(options_.progress, "shape inference", 0, 1);
    inferred_ = ir::infer_types(model_, sink_);
    for (auto& [g, ctx] : graphs_) check_type_constraints(*g, ctx);
    ir::report_progress(options_.progress, "shape inference", 1, 1);
  }
}

}  // namespace

void check_model(const ir::Model& model, ir::DiagnosticSink& sink, const CheckOptions& options) {
  Checker(model, sink, options).run();
}

std::optional<ir::Diagnostic> runner_error(const ir::Model& model) {
  // What a run relies on: every name defined once and defined before use, no cycle, outputs
  // that exist and are distinct, tensors whose data is one well-formed field.
  static const std::unordered_set<std::string> kRules{
      "graph.ssa",          "graph.duplicate-input", "graph.duplicate-initializer", "graph.duplicate-output",
      "graph.cycle",        "graph.undefined-value", "graph.output-undefined",      "graph.nesting",
      "tensor.data-fields", "tensor.data-type",      "tensor.dims",                 "tensor.data-size"};
  ir::DiagnosticSink sink;
  CheckOptions options;
  options.infer_shapes = false;
  check_model(model, sink, options);
  for (const auto& d : sink.items())
    if (d.severity == ir::Severity::kError && kRules.count(d.rule)) return d;
  return std::nullopt;
}

CheckResult check_file(const std::string& path, const CheckOptions& options) {
  ir::DiagnosticSink sink;
  ir::LoadOptions load;
  load.on_tensor_error = [&sink](const ir::Tensor& t, const std::string& message) {
    Diagnostic d;
    d.rule = t.is_external() ? "tensor.external-data" : "tensor.data-size";
    d.tensor = t.name;
    d.message = message;
    sink.add(std::move(d));
  };
  ir::report_progress(options.progress, "reading", 0, 1);
  ir::LoadedModel loaded = ir::load_model(path, load);
  ir::report_progress(options.progress, "reading", 1, 1);
  check_model(loaded.model, sink, options);
  CheckResult r;
  r.diagnostics = sink.items();
  r.errors = sink.error_count();
  r.warnings = sink.warning_count();
  return r;
}

WriteCheck check_for_writing(ir::Model& model) {
  WriteCheck w;
  try {
    w.sorted_nodes = ir::sort_graphs(model);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kFailed) throw;  // a cycle: the rule graph.cycle names it below
  }
  ir::DiagnosticSink sink;
  check_model(model, sink);
  w.result.diagnostics = sink.items();
  w.result.errors = sink.error_count();
  w.result.warnings = sink.warning_count();
  return w;
}

}  // namespace onnxtool::checker
