// The shape inference driver: walks graphs in node order, runs each node's shape function and
// merges the result into Value::type (or into a side table, leaving the model as it is),
// reporting contradictions as diagnostics.
#include "ir/shape_inference.h"

#include <functional>

#include "ir/error.h"
#include "ir/ops/shape_util.h"

namespace onnxtool::ir {

class ShapeInferencer {
 public:
  /// With `table`, inferred types go there and the model's values keep theirs.
  ShapeInferencer(const Model& model, DiagnosticSink& sink, const ShapeInferenceOptions& options,
                  const SchemaRegistry& registry, TypeTable* table)
      : model_(model), sink_(sink), options_(options), registry_(registry), table_(table) {}

  /// The type of `v` as inference knows it: the table's, else the value's own.
  const TypeInfo& type_of(const Value* v) const {
    if (table_)
      if (auto it = table_->find(v); it != table_->end()) return it->second;
    return v->type;
  }

  void run_model();
  void run_graph(Graph& g, const std::string& path, const std::vector<OpsetId>& opsets);
  std::vector<TypeInfo> run_subgraph(Graph& g, const std::vector<std::optional<TypeInfo>>& inputs,
                                     const Node& owner);

  const DimValues* values_of(const Value* v);
  const Tensor* constant_of(const Value* v) const;
  size_t max_value_elements() const { return options_.max_value_elements; }

 private:
  void infer_node(Node& n, size_t index, const std::string& path, const std::vector<OpsetId>& opsets);
  void generic(InferenceContext& ctx, const OpSchema& schema);
  void merge_into(Value* v, const TypeInfo& inferred, const Node& n, size_t index,
                  const std::string& path);
  bool merge_type(TypeInfo& existing, const TypeInfo& inferred, std::string& conflict);
  void set_type(Value* v, TypeInfo type) {
    if (table_) (*table_)[v] = std::move(type);
    else v->type = std::move(type);
  }

  const Model& model_;
  DiagnosticSink& sink_;
  const ShapeInferenceOptions& options_;
  const SchemaRegistry& registry_;
  TypeTable* table_;
  std::unordered_map<const Value*, DimValues> values_;
  // The graph being inferred and its path, for subgraph naming.
  std::vector<std::pair<const Graph*, std::string>> stack_;
  std::vector<const std::vector<OpsetId>*> opset_stack_;
};

// ---------------------------------------------------------------- InferenceContext

const TypeInfo* InferenceContext::input_type(size_t i) const {
  const Value* v = node_.input(i);
  if (!v) return nullptr;
  const TypeInfo& t = owner_.type_of(v);
  return t.kind == TypeInfo::Kind::kUnset ? nullptr : &t;
}

std::optional<DataType> InferenceContext::input_elem_type(size_t i) const {
  const TypeInfo* t = input_type(i);
  if (!t || (t->kind != TypeInfo::Kind::kTensor && t->kind != TypeInfo::Kind::kSparseTensor) ||
      t->elem_type == 0)
    return std::nullopt;
  return t->data_type();
}

const Shape* InferenceContext::input_shape(size_t i) const {
  const TypeInfo* t = input_type(i);
  if (!t || (t->kind != TypeInfo::Kind::kTensor && t->kind != TypeInfo::Kind::kSparseTensor) || !t->shape)
    return nullptr;
  return &*t->shape;
}

const Tensor* InferenceContext::input_tensor(size_t i) const {
  return owner_.constant_of(node_.input(i));
}

const DimValues* InferenceContext::input_values(size_t i) const {
  return owner_.values_of(node_.input(i));
}

std::optional<std::vector<int64_t>> InferenceContext::input_ints(size_t i) const {
  const DimValues* v = input_values(i);
  if (!v) return std::nullopt;
  std::vector<int64_t> out;
  out.reserve(v->size());
  for (const Dim& d : *v) {
    if (!d.is_static()) return std::nullopt;
    out.push_back(d.value);
  }
  return out;
}

const Attribute* InferenceContext::typed_attr(std::string_view name, AttrType type) const {
  const Attribute* a = node_.attr(name);
  if (a && a->attr_type() != type)
    fail("node.attribute-type", "attribute '" + std::string(name) + "' should be " +
                                    std::string(attr_type_name(type)) + ", is " +
                                    std::string(attr_type_name(a->attr_type())));
  return a;
}

int64_t InferenceContext::attr_int(std::string_view name, int64_t fallback) const {
  const Attribute* a = typed_attr(name, AttrType::kInt);
  return a ? a->i : fallback;
}

float InferenceContext::attr_float(std::string_view name, float fallback) const {
  const Attribute* a = typed_attr(name, AttrType::kFloat);
  return a ? a->f : fallback;
}

std::string InferenceContext::attr_string(std::string_view name, std::string fallback) const {
  const Attribute* a = typed_attr(name, AttrType::kString);
  return a ? a->s : fallback;
}

std::optional<std::vector<int64_t>> InferenceContext::attr_ints(std::string_view name) const {
  const Attribute* a = typed_attr(name, AttrType::kInts);
  if (!a) return std::nullopt;
  return a->ints;
}

const Tensor* InferenceContext::attr_tensor(std::string_view name) const {
  const Attribute* a = typed_attr(name, AttrType::kTensor);
  return a && a->t ? &*a->t : nullptr;
}

Graph* InferenceContext::attr_graph(std::string_view name) const {
  const Attribute* a = typed_attr(name, AttrType::kGraph);
  return a ? a->g.get() : nullptr;
}

void InferenceContext::set_output(size_t i, TypeInfo type) {
  if (i < outputs_.size()) outputs_[i] = std::move(type);
}

void InferenceContext::set_output_tensor(size_t i, DataType type, std::optional<Shape> shape) {
  set_output(i, TypeInfo::tensor(type, std::move(shape)));
}

void InferenceContext::set_output_values(size_t i, DimValues values) {
  if (i < output_values_.size()) output_values_[i] = std::move(values);
}

const TypeInfo* InferenceContext::output_type(size_t i) const {
  if (i >= outputs_.size() || outputs_[i].kind == TypeInfo::Kind::kUnset) return nullptr;
  return &outputs_[i];
}

std::vector<TypeInfo> InferenceContext::infer_subgraph(
    Graph& graph, const std::vector<std::optional<TypeInfo>>& inputs) {
  return owner_.run_subgraph(graph, inputs, node_);
}

void InferenceContext::fail(std::string rule, std::string message) const {
  throw ShapeError{std::move(rule), std::move(message)};
}

// ---------------------------------------------------------------- ShapeInferencer

const Tensor* ShapeInferencer::constant_of(const Value* v) const {
  if (!v) return nullptr;
  // An initializer that is also a graph input can be overridden at run time: not a constant.
  if (v->initializer() && !v->is_graph_input()) return v->initializer();
  const Node* p = v->producer();
  if (p && p->op_type == "Constant" && (p->domain.empty() || p->domain == "ai.onnx")) {
    const Attribute* a = p->attr("value");
    if (a && a->t) return &*a->t;
  }
  return nullptr;
}

const DimValues* ShapeInferencer::values_of(const Value* v) {
  if (!v) return nullptr;
  auto it = values_.find(v);
  if (it != values_.end()) return &it->second;
  const Tensor* t = constant_of(v);
  if (!t || t->dims.size() > 1) return nullptr;
  auto ints = shape::tensor_ints(*t, options_.max_value_elements);
  if (!ints) return nullptr;
  DimValues dv;
  for (int64_t x : *ints) dv.push_back(Dim::of(x));
  return &(values_[v] = std::move(dv));
}

bool ShapeInferencer::merge_type(TypeInfo& existing, const TypeInfo& inferred, std::string& conflict) {
  using K = TypeInfo::Kind;
  if (inferred.kind == K::kUnset) return true;
  if (existing.kind == K::kUnset) {
    existing = inferred;
    return true;
  }
  if (existing.kind != inferred.kind) {
    conflict = "declared " + existing.to_string() + ", inferred " + inferred.to_string();
    return false;
  }
  if (existing.kind == K::kSequence || existing.kind == K::kOptional) {
    if (!inferred.elem) return true;
    if (!existing.elem) {
      existing.elem = inferred.elem;
      return true;
    }
    return merge_type(*existing.elem, *inferred.elem, conflict);
  }
  if (existing.kind != K::kTensor && existing.kind != K::kSparseTensor) return true;
  if (existing.elem_type != 0 && inferred.elem_type != 0 && existing.elem_type != inferred.elem_type) {
    conflict = "declared element type " + std::string(data_type_name(existing.data_type())) +
               ", inferred " + std::string(data_type_name(inferred.data_type()));
    return false;
  }
  if (existing.elem_type == 0) existing.elem_type = inferred.elem_type;
  if (!inferred.shape) return true;
  if (!existing.shape) {
    existing.shape = inferred.shape;
    return true;
  }
  if (existing.shape->rank() != inferred.shape->rank()) {
    conflict = "declared rank " + std::to_string(existing.shape->rank()) + " " +
               existing.shape->to_string() + ", inferred rank " +
               std::to_string(inferred.shape->rank()) + " " + inferred.shape->to_string();
    return false;
  }
  for (size_t i = 0; i < existing.shape->rank(); ++i) {
    Dim& e = existing.shape->dims[i];
    const Dim& f = inferred.shape->dims[i];
    if (e.is_static() && f.is_static() && e.value != f.value) {
      conflict = "declared shape " + existing.shape->to_string() + ", inferred " +
                 inferred.shape->to_string() + " (dim " + std::to_string(i) + ")";
      return false;
    }
    // Keep the declared symbol names; take static sizes and symbols where nothing is declared.
    if (f.is_static() && !e.is_static()) {
      Dim keep = f;
      keep.denotation = e.denotation;
      e = keep;
    } else if (e.kind == Dim::Kind::kUnknown && f.kind == Dim::Kind::kParam) {
      e.kind = Dim::Kind::kParam;
      e.param = f.param;
    }
  }
  return true;
}

namespace {

/// `t` without the declared -1s its dims may have been copied from (see Dim): only the file's
/// own declarations save them, an inferred type says "unknown".
TypeInfo without_negative_values(TypeInfo t) {
  for (TypeInfo* cur = &t; cur; cur = cur->elem ? cur->elem.get() : nullptr)
    if (cur->shape)
      for (Dim& d : cur->shape->dims)
        if (d.is_negative_value()) d.value = 0;
  return t;
}

}  // namespace

void ShapeInferencer::merge_into(Value* v, const TypeInfo& inferred, const Node& n, size_t index,
                                 const std::string& path) {
  std::string conflict;
  TypeInfo merged = type_of(v);
  if (!merge_type(merged, without_negative_values(inferred), conflict)) {
    if (options_.check_declared)
      report(sink_, "shape.declared-mismatch")
          .in(path)
          .at(&n, static_cast<long>(index))
          .tensor(v->name())
          .error("output '" + v->name() + "': " + conflict);
    return;
  }
  set_type(v, std::move(merged));
}

void ShapeInferencer::generic(InferenceContext& ctx, const OpSchema& schema) {
  // Without a shape function: bind type variables from the inputs and give outputs their
  // element types (shape unknown).
  std::unordered_map<std::string, int32_t> bound;
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    if (schema.inputs.empty()) break;
    const FormalParam& f = schema.inputs[std::min(i, schema.inputs.size() - 1)];
    if (i >= schema.inputs.size() && f.option != ParamOption::kVariadic) break;
    auto et = ctx.input_elem_type(i);
    if (et && schema.constraint(f.type)) bound.emplace(f.type, static_cast<int32_t>(*et));
  }
  for (size_t o = 0; o < ctx.output_count(); ++o) {
    if (schema.outputs.empty()) break;
    const FormalParam& f = schema.outputs[std::min(o, schema.outputs.size() - 1)];
    auto it = bound.find(f.type);
    if (it != bound.end()) {
      ctx.set_output_tensor(o, static_cast<DataType>(it->second), std::nullopt);
    } else if (f.type.rfind("tensor(", 0) == 0 && f.type.back() == ')') {
      auto dt = parse_data_type(f.type.substr(7, f.type.size() - 8));
      if (dt) ctx.set_output_tensor(o, *dt, std::nullopt);
    }
  }
}

void ShapeInferencer::infer_node(Node& n, size_t index, const std::string& path,
                                 const std::vector<OpsetId>& opsets) {
  const std::string domain(canonical_domain(n.domain));
  std::optional<int64_t> version;
  for (const auto& o : opsets)
    if (canonical_domain(o.domain) == domain) version = o.version;
  if (!version) return;  // the checker reports the missing import
  const OpSchema* schema = registry_.find(domain, n.op_type, *version);
  if (!schema) schema = registry_.onnxruntime_extension(domain, n.op_type, *version);
  if (!schema) return;  // unknown op: the checker reports it
  InferenceContext ctx(*this, n, *version);
  try {
    if (schema->infer) schema->infer(ctx);
    else generic(ctx, *schema);
  } catch (const ShapeError& e) {
    report(sink_, e.rule).in(path).at(&n, static_cast<long>(index)).error(e.message);
    return;
  } catch (const Error& e) {
    report(sink_, "shape.error").in(path).at(&n, static_cast<long>(index)).error(e.what());
    return;
  }
  for (size_t i = 0; i < n.outputs().size(); ++i) {
    Value* v = n.output(i);
    if (!v || v->producer() != &n) continue;
    merge_into(v, ctx.outputs_[i], n, index, path);
    if (ctx.output_values_[i]) values_[v] = std::move(*ctx.output_values_[i]);
  }
}

void ShapeInferencer::run_graph(Graph& g, const std::string& path, const std::vector<OpsetId>& opsets) {
  stack_.emplace_back(&g, path);
  opset_stack_.push_back(&opsets);
  const auto& nodes = g.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) infer_node(*nodes[i], i, path, opsets);
  opset_stack_.pop_back();
  stack_.pop_back();
}

std::vector<TypeInfo> ShapeInferencer::run_subgraph(Graph& g, const std::vector<std::optional<TypeInfo>>& inputs,
                                                    const Node& owner) {
  const std::string parent = stack_.empty() ? std::string("main") : stack_.back().second;
  const std::string path = parent + "/" + (owner.name.empty() ? owner.op_type : owner.name) +
                           ":" + (g.name.empty() ? std::string("body") : g.name);
  if (stack_.size() > 64) throw ShapeError{"graph.nesting", "subgraphs nested deeper than 64 levels"};
  for (size_t i = 0; i < inputs.size() && i < g.inputs.size(); ++i) {
    if (!inputs[i]) continue;
    Value* v = g.inputs[i].value;
    std::string conflict;
    TypeInfo merged = type_of(v);
    if (!merge_type(merged, *inputs[i], conflict))
      throw ShapeError{"shape.subgraph-input", "subgraph '" + g.name + "' input '" + v->name() +
                                                   "': " + conflict};
    set_type(v, std::move(merged));
  }
  const std::vector<OpsetId>& opsets = opset_stack_.empty() ? model_.opset_import : *opset_stack_.back();
  run_graph(g, path, opsets);
  std::vector<TypeInfo> out;
  for (const auto& o : g.outputs) out.push_back(type_of(o.value));
  return out;
}

void ShapeInferencer::run_model() {
  if (model_.graph) run_graph(*model_.graph, "main", model_.opset_import);
  for (auto& f : model_.functions) {
    const auto& opsets = f.opset_import.empty() ? model_.opset_import : f.opset_import;
    run_graph(*f.body, "function " + f.name, opsets);
  }
}

void infer_shapes(Model& model, DiagnosticSink& sink, const ShapeInferenceOptions& options) {
  ShapeInferencer inferencer(model, sink, options, SchemaRegistry::instance(), nullptr);
  inferencer.run_model();
}

TypeTable infer_types(const Model& model, DiagnosticSink& sink, const ShapeInferenceOptions& options) {
  TypeTable table;
  ShapeInferencer inferencer(model, sink, options, SchemaRegistry::instance(), &table);
  inferencer.run_model();
  return table;
}

size_t store_inferred_value_info(Model& model) {
  size_t added = 0;
  for_each_graph(model, [&added](Graph& g) {
    std::unordered_set<const Value*> declared;
    for (const auto& vi : g.value_info) declared.insert(vi.value);
    for (const auto& vi : g.outputs) declared.insert(vi.value);
    for (const auto& n : g.nodes()) {
      for (Value* v : n->outputs()) {
        if (!v || v->producer() != n.get() || declared.count(v)) continue;
        if (v->type.kind == TypeInfo::Kind::kUnset) continue;
        if (v->type.kind == TypeInfo::Kind::kTensor && v->type.elem_type == 0) continue;
        ValueInfo vi;
        vi.value = v;
        vi.type = v->type;
        g.value_info.push_back(std::move(vi));
        declared.insert(v);
        ++added;
      }
    }
  });
  return added;
}

}  // namespace onnxtool::ir
