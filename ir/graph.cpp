// Graph editing: value links, node insertion and removal, renaming, topological order.
#include "ir/graph.h"

#include <algorithm>
#include <array>
#include <queue>

#include "ir/error.h"

namespace onnxtool::ir {

std::string_view attr_type_name(AttrType type) {
  static constexpr std::array<std::string_view, 15> kNames = {
      "undefined", "float",   "int",    "string",        "tensor",
      "graph",     "floats",  "ints",   "strings",       "tensors",
      "graphs",    "sparse_tensor", "sparse_tensors", "type_proto", "type_protos"};
  auto v = static_cast<int32_t>(type);
  if (v < 0 || v >= static_cast<int32_t>(kNames.size())) return "unknown";
  return kNames[static_cast<size_t>(v)];
}

Attribute Attribute::make_int(std::string name, int64_t v) {
  Attribute a;
  a.name = std::move(name);
  a.type = static_cast<int32_t>(AttrType::kInt);
  a.i = v;
  if (v == 0) a.explicit_defaults |= 1u << 3;
  return a;
}

Attribute Attribute::make_float(std::string name, float v) {
  Attribute a;
  a.name = std::move(name);
  a.type = static_cast<int32_t>(AttrType::kFloat);
  a.f = v;
  if (v == 0) a.explicit_defaults |= 1u << 2;
  return a;
}

Attribute Attribute::make_string(std::string name, std::string v) {
  Attribute a;
  a.name = std::move(name);
  a.type = static_cast<int32_t>(AttrType::kString);
  a.s = std::move(v);
  if (a.s.empty()) a.explicit_defaults |= 1u << 4;
  return a;
}

Attribute Attribute::make_ints(std::string name, std::vector<int64_t> v) {
  Attribute a;
  a.name = std::move(name);
  a.type = static_cast<int32_t>(AttrType::kInts);
  a.ints = std::move(v);
  return a;
}

Attribute Attribute::make_floats(std::string name, std::vector<float> v) {
  Attribute a;
  a.name = std::move(name);
  a.type = static_cast<int32_t>(AttrType::kFloats);
  a.floats = std::move(v);
  return a;
}

Attribute Attribute::make_tensor(std::string name, Tensor v) {
  Attribute a;
  a.name = std::move(name);
  a.type = static_cast<int32_t>(AttrType::kTensor);
  a.t = Box<Tensor>(std::move(v));
  return a;
}

// ---------------------------------------------------------------- Node

void Node::set_input(size_t index, Value* value) {
  Value* old = inputs_.at(index);
  if (old == value) return;
  if (old) {
    auto& u = old->uses_;
    for (auto it = u.begin(); it != u.end(); ++it) {
      if (it->node == this && it->index == index) {
        u.erase(it);
        break;
      }
    }
  }
  inputs_[index] = value;
  if (value) value->uses_.push_back({this, index});
}

void Node::append_input(Value* value) {
  inputs_.push_back(value);
  if (value) value->uses_.push_back({this, inputs_.size() - 1});
}

void Node::remove_input(size_t index) {
  set_input(index, nullptr);
  // Later inputs shift down by one: fix the recorded indices of their uses.
  for (size_t i = index + 1; i < inputs_.size(); ++i) {
    if (!inputs_[i]) continue;
    for (auto& use : inputs_[i]->uses_)
      if (use.node == this && use.index == i) use.index = i - 1;
  }
  inputs_.erase(inputs_.begin() + static_cast<std::ptrdiff_t>(index));
}

const Attribute* Node::attr(std::string_view attr_name) const {
  for (const auto& a : attributes)
    if (a.name == attr_name) return &a;
  return nullptr;
}

Attribute* Node::attr(std::string_view attr_name) {
  for (auto& a : attributes)
    if (a.name == attr_name) return &a;
  return nullptr;
}

int64_t Node::attr_int(std::string_view attr_name, int64_t fallback) const {
  const Attribute* a = attr(attr_name);
  return a ? a->i : fallback;
}

float Node::attr_float(std::string_view attr_name, float fallback) const {
  const Attribute* a = attr(attr_name);
  return a ? a->f : fallback;
}

std::string Node::attr_string(std::string_view attr_name, std::string fallback) const {
  const Attribute* a = attr(attr_name);
  return a ? a->s : fallback;
}

std::vector<int64_t> Node::attr_ints(std::string_view attr_name,
                                     std::vector<int64_t> fallback) const {
  const Attribute* a = attr(attr_name);
  return a ? a->ints : fallback;
}

void Node::set_attr(Attribute attribute) {
  for (auto& a : attributes) {
    if (a.name == attribute.name) {
      a = std::move(attribute);
      return;
    }
  }
  attributes.push_back(std::move(attribute));
}

bool Node::remove_attr(std::string_view attr_name) {
  for (auto it = attributes.begin(); it != attributes.end(); ++it) {
    if (it->name == attr_name) {
      attributes.erase(it);
      return true;
    }
  }
  return false;
}

std::vector<Graph*> Node::subgraphs() const {
  std::vector<Graph*> out;
  for (const auto& a : attributes) {
    if (a.g) out.push_back(a.g.get());
    for (const auto& g : a.graphs)
      if (g) out.push_back(g.get());
  }
  return out;
}

std::string Node::qualified_op() const {
  if (domain.empty() || domain == "ai.onnx") return op_type;
  return domain + "::" + op_type;
}

std::string Node::describe() const {
  if (!name.empty()) return "node '" + name + "' (" + op_type + ")";
  size_t index = graph_ ? graph_->node_index(this) : 0;
  return "node #" + std::to_string(index) + " (" + op_type + ")";
}

// ---------------------------------------------------------------- Graph

Graph::Graph(Graph* parent) { set_parent(parent); }

Graph::~Graph() {
  // Children are orphaned first: those destroyed with our nodes then need not unlink themselves
  // one by one, and one that outlives us (moved out of its node) does not point at freed memory.
  for (Graph* child : children_) child->parent_ = nullptr;
  children_.clear();
  // Nodes of subgraphs may hold uses of our values; they are destroyed with our nodes. Clear
  // the node list first so that no node outlives the values it points to.
  inserted_.clear();
  nodes_.clear();
  set_parent(nullptr);
}

void Graph::set_parent(Graph* parent) {
  if (parent_) {
    auto& siblings = parent_->children_;
    siblings.erase(std::remove(siblings.begin(), siblings.end(), this), siblings.end());
  }
  parent_ = parent;
  if (parent_) parent_->children_.push_back(this);
}

int Graph::depth() const {
  int d = 0;
  for (const Graph* g = parent_; g; g = g->parent_) ++d;
  return d;
}

Value* Graph::find(std::string_view value_name) const {
  auto it = values_.find(std::string(value_name));
  return it == values_.end() ? nullptr : it->second.get();
}

Value* Graph::lookup(std::string_view value_name) const {
  for (const Graph* g = this; g; g = g->parent_)
    if (Value* v = g->find(value_name)) return v;
  return nullptr;
}

bool Graph::defined_below(std::string_view value_name) const {
  std::vector<const Graph*> pending(children_.begin(), children_.end());
  while (!pending.empty()) {
    const Graph* g = pending.back();
    pending.pop_back();
    if (g->find(value_name)) return true;
    pending.insert(pending.end(), g->children_.begin(), g->children_.end());
  }
  return false;
}

Value* Graph::value(const std::string& value_name) {
  auto& slot = values_[value_name];
  if (!slot) {
    slot = std::make_unique<Value>();
    slot->name_ = value_name;
    slot->graph_ = this;
  }
  return slot.get();
}

Value* Graph::resolve(const std::string& value_name) {
  if (Value* v = lookup(value_name)) return v;
  return value(value_name);
}

void Graph::rename(Value* v, const std::string& new_name) {
  if (v->name_ == new_name) return;
  Graph* owner = v->graph_;
  if (owner->find(new_name))
    throw_usage_error("cannot rename '" + v->name_ + "' to '" + new_name + "': name in use");
  const std::string old_name = v->name_;
  auto it = owner->values_.find(old_name);
  std::unique_ptr<Value> holder = std::move(it->second);
  owner->values_.erase(it);
  holder->name_ = new_name;
  if (holder->initializer_) holder->initializer_->name = new_name;
  for (auto& s : owner->sparse_initializers)
    if (s.values && s.values->name == old_name) s.values->name = new_name;
  owner->values_[new_name] = std::move(holder);
}

void Graph::replace_all_uses(Value* from, Value* to) {
  if (from == to) return;
  // All at once, in use order: one set_input per use would search and shift `from`'s use list
  // each time, quadratic for a value with a hundred thousand readers.
  std::vector<Use> uses = std::move(from->uses_);
  from->uses_.clear();
  for (const Use& u : uses) {
    u.node->inputs_[u.index] = to;
    if (to) to->uses_.push_back(u);
  }
}

ValueInfo& Graph::add_input(const std::string& value_name, std::optional<TypeInfo> type) {
  Value* v = value(value_name);
  v->graph_input_++;
  if (type && v->type.kind == TypeInfo::Kind::kUnset) v->type = *type;
  ValueInfo info;
  info.value = v;
  info.type = std::move(type);
  inputs.push_back(std::move(info));
  return inputs.back();
}

ValueInfo& Graph::add_output(Value* v, std::optional<TypeInfo> type) {
  v->graph_output_++;
  if (type && v->type.kind == TypeInfo::Kind::kUnset) v->type = *type;
  ValueInfo info;
  info.value = v;
  info.type = std::move(type);
  outputs.push_back(std::move(info));
  return outputs.back();
}

void Graph::remove_input(size_t index) {
  inputs.at(index).value->graph_input_--;
  inputs.erase(inputs.begin() + static_cast<std::ptrdiff_t>(index));
}

void Graph::remove_output(size_t index) {
  outputs.at(index).value->graph_output_--;
  outputs.erase(outputs.begin() + static_cast<std::ptrdiff_t>(index));
}

void Graph::set_output_value(size_t index, Value* v) {
  ValueInfo& info = outputs.at(index);
  if (info.value == v) return;
  info.value->graph_output_--;
  v->graph_output_++;
  info.value = v;
}

Value* Graph::add_initializer(Tensor tensor) {
  Value* v = value(tensor.name);
  initializers_.push_back(std::make_unique<Tensor>(std::move(tensor)));
  // A duplicate initializer (invalid, reported by the checker) keeps the first as the value's.
  if (!v->initializer_) v->initializer_ = initializers_.back().get();
  if (v->type.kind == TypeInfo::Kind::kUnset) {
    const Tensor& t = *initializers_.back();
    Shape shape;
    for (int64_t d : t.dims) shape.dims.push_back(Dim::of(d));
    v->type = TypeInfo::tensor(t.type(), std::move(shape));
  }
  return v;
}

void Graph::remove_initializer(Value* v) {
  Tensor* t = v->initializer_;
  if (!t) return;
  v->initializer_ = nullptr;
  initializers_.erase(std::remove_if(initializers_.begin(), initializers_.end(),
                                     [t](const auto& p) { return p.get() == t; }),
                      initializers_.end());
}

void Graph::add_sparse_initializer(SparseTensor tensor) {
  Value* v = value(tensor.name());
  v->sparse_initializer_ = true;
  sparse_initializers.push_back(std::move(tensor));
}

Node* Graph::add_node(std::string op_type, const std::vector<Value*>& node_inputs,
                      const std::vector<std::string>& output_names, std::string domain,
                      std::string node_name, const Node* before) {
  // Where it goes, first: nothing is linked to a node that is then refused.
  size_t slot = nodes_.size();
  if (before) {
    slot = slot_of(before);
    if (slot == nodes_.size())
      throw Error(ErrorKind::kInternal, "add_node: " + before->describe() + " is not a node of graph '" + name + "'");
  }
  auto node = std::make_unique<Node>();
  node->graph_ = this;
  node->op_type = std::move(op_type);
  node->domain = std::move(domain);
  node->name = std::move(node_name);
  node->index_ = slot;
  Node* raw = node.get();
  for (Value* v : node_inputs) raw->append_input(v);
  if (before) inserted_.emplace_back(slot, std::move(node));
  else nodes_.push_back(std::move(node));
  for (const auto& out : output_names) add_node_output(raw, out);
  return raw;
}

Node* Graph::append_node(std::unique_ptr<Node> node) {
  node->graph_ = this;
  node->index_ = nodes_.size();
  nodes_.push_back(std::move(node));
  return nodes_.back().get();
}

Value* Graph::add_node_output(Node* node, const std::string& output_name) {
  if (output_name.empty()) {
    node->outputs_.push_back(nullptr);
    return nullptr;
  }
  Value* v = value(output_name);
  // With two producers (an SSA violation the checker reports) the first one stays.
  if (!v->producer_) {
    v->producer_ = node;
    v->producer_output_ = node->outputs_.size();
  }
  node->outputs_.push_back(v);
  return v;
}

void Graph::detach_uses(Node* node) {
  for (size_t i = 0; i < node->inputs_.size(); ++i) node->set_input(i, nullptr);
  // Nodes of its subgraphs may use values of enclosing graphs (outer scope): the subgraphs go
  // with the node, so those uses go too.
  for (Graph* sub : node->subgraphs())
    for (const auto& n : sub->nodes()) sub->detach_uses(n.get());
  for (Value* v : node->outputs_)
    if (v && v->producer_ == node) v->producer_ = nullptr;
}

void Graph::detach_all(const std::vector<std::unique_ptr<Node>>& gone) {
  std::unordered_set<const Node*> dead;
  for (const auto& n : gone) dead.insert(n.get());
  std::vector<Value*> read;  // values the removed nodes read, each once, in first-read order
  std::unordered_set<const Value*> listed;
  for (const auto& n : gone) {
    for (Value*& v : n->inputs_) {
      if (v && listed.insert(v).second) read.push_back(v);
      v = nullptr;
    }
    for (Graph* sub : n->subgraphs())
      for (const auto& sn : sub->nodes()) sub->detach_uses(sn.get());
    for (Value* v : n->outputs_)
      if (v && dead.count(v->producer_)) v->producer_ = nullptr;
  }
  for (Value* v : read) {
    auto& uses = v->uses_;
    uses.erase(std::remove_if(uses.begin(), uses.end(), [&](const Use& u) { return dead.count(u.node) > 0; }),
               uses.end());
  }
}

void Graph::remove_node(Node* node) {
  const size_t slot = slot_of(node);
  if (slot == nodes_.size())
    throw Error(ErrorKind::kInternal, "remove_node: " + node->describe() + " is not a node of graph '" + name + "'");
  detach_uses(node);
  // A null slot keeps every other node's position: no shift, the cache stays valid.
  bury(std::move(nodes_[slot]));
  ++removed_slots_;
}

void Graph::bury(std::unique_ptr<Node> node) {
  node->removed_ = true;
  if (walks_ > 0) graveyard_.push_back(std::move(node));
}

size_t Graph::slot_of(const Node* node) const {
  size_t i = node->index_;
  if (i < nodes_.size() && nodes_[i].get() == node) return i;
  if (inserted_.empty()) return nodes_.size();
  compact();  // perhaps inserted since the last compaction
  i = node->index_;
  return i < nodes_.size() && nodes_[i].get() == node ? i : nodes_.size();
}

size_t Graph::node_index(const Node* node) const {
  if (edited()) compact();
  return slot_of(node);
}

void Graph::compact() const {
  ++position_rebuilds_;
  if (inserted_.empty()) {
    size_t kept = 0;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (!nodes_[i]) continue;
      nodes_[i]->index_ = kept;
      if (i != kept) nodes_[kept] = std::move(nodes_[i]);
      ++kept;
    }
    nodes_.resize(kept);
    removed_slots_ = 0;
    return;
  }
  // Nodes inserted before the same slot keep the order they were added in.
  std::stable_sort(inserted_.begin(), inserted_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::unique_ptr<Node>> merged;
  merged.reserve(nodes_.size() - removed_slots_ + inserted_.size());
  auto next = inserted_.begin();
  auto emit = [&merged](std::unique_ptr<Node> n) {
    n->index_ = merged.size();
    merged.push_back(std::move(n));
  };
  for (size_t i = 0; i < nodes_.size(); ++i) {
    for (; next != inserted_.end() && next->first == i; ++next) emit(std::move(next->second));
    if (nodes_[i]) emit(std::move(nodes_[i]));
  }
  for (; next != inserted_.end(); ++next) emit(std::move(next->second));
  nodes_ = std::move(merged);
  inserted_.clear();
  removed_slots_ = 0;
}

std::vector<Value*> Graph::implicit_inputs(const Node* node) const {
  std::vector<Value*> result;
  std::unordered_set<const Value*> seen;
  std::vector<Graph*> stack = node->subgraphs();
  while (!stack.empty()) {
    Graph* g = stack.back();
    stack.pop_back();
    for (const auto& n : g->nodes()) {
      for (Value* v : n->inputs_) {
        if (!v) continue;
        // An outer-scope value: defined in this graph or one of its ancestors.
        bool outer = false;
        for (const Graph* a = this; a; a = a->parent_)
          if (v->graph_ == a) outer = true;
        if (outer && seen.insert(v).second) result.push_back(v);
      }
      for (Graph* s : n->subgraphs()) stack.push_back(s);
    }
    // Graph outputs of a subgraph may name outer values directly.
    for (const auto& o : g->outputs) {
      Value* v = o.value;
      bool outer = false;
      for (const Graph* a = this; a; a = a->parent_)
        if (v->graph_ == a) outer = true;
      if (outer && seen.insert(v).second) result.push_back(v);
    }
  }
  return result;
}

std::vector<size_t> Graph::topological_order() const {
  if (edited()) compact();
  const size_t n = nodes_.size();
  std::unordered_map<const Node*, size_t> index;
  index.reserve(n);
  for (size_t i = 0; i < n; ++i) index[nodes_[i].get()] = i;

  std::vector<std::vector<size_t>> successors(n);
  std::vector<size_t> pending(n, 0);
  auto add_edge = [&](const Value* v, size_t consumer) {
    if (!v || !v->producer_) return;
    auto it = index.find(v->producer_);
    if (it == index.end()) return;  // produced in an enclosing graph
    successors[it->second].push_back(consumer);
    pending[consumer]++;
  };
  for (size_t i = 0; i < n; ++i) {
    for (const Value* v : nodes_[i]->inputs_) add_edge(v, i);
    for (const Value* v : implicit_inputs(nodes_[i].get())) add_edge(v, i);
  }
  // Kahn's algorithm with a min-heap on the original index: already-sorted stays as it is.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t s : successors[i])
      if (--pending[s] == 0) ready.push(s);
  }
  if (order.size() != n) {
    std::string names;
    int listed = 0;
    for (size_t i = 0; i < n && listed < 5; ++i) {
      if (pending[i] == 0) continue;
      names += (listed ? ", " : "") + nodes_[i]->describe();
      ++listed;
    }
    throw Error(ErrorKind::kFailed, "graph '" + name + "' has a cycle through " + names);
  }
  return order;
}

void Graph::topological_sort() {
  const std::vector<size_t> order = topological_order();
  std::vector<std::unique_ptr<Node>> sorted;
  sorted.reserve(order.size());
  for (size_t i : order) {
    nodes_[i]->index_ = sorted.size();
    sorted.push_back(std::move(nodes_[i]));
  }
  nodes_ = std::move(sorted);
}

void Graph::prune_values() {
  std::unordered_set<const Value*> referenced;
  for (const auto& vi : value_info) referenced.insert(vi.value);
  // A value two nodes output (an SSA violation: optimize --force, convert) has one producer; when
  // that node goes, the other still points at the value. Node outputs are never dropped.
  for (const auto& n : nodes())
    for (const Value* v : n->outputs_)
      if (v) referenced.insert(v);
  for (auto it = values_.begin(); it != values_.end();) {
    const Value* v = it->second.get();
    const bool keep = !v->uses_.empty() || v->producer_ || v->graph_input_ || v->graph_output_ ||
                      v->initializer_ || v->sparse_initializer_ || referenced.count(v);
    // A node output that lost its producer is still pointed to by nothing; drop it.
    it = keep ? std::next(it) : values_.erase(it);
  }
}

// ---------------------------------------------------------------- Model

std::optional<int64_t> Model::opset_version(std::string_view op_domain) const {
  const bool default_domain = op_domain.empty() || op_domain == "ai.onnx";
  for (const auto& o : opset_import) {
    const bool match = default_domain ? (o.domain.empty() || o.domain == "ai.onnx")
                                      : o.domain == op_domain;
    if (match) return o.version;
  }
  return std::nullopt;
}

void Model::set_opset_version(const std::string& op_domain, int64_t version) {
  const bool default_domain = op_domain.empty() || op_domain == "ai.onnx";
  for (auto& o : opset_import) {
    const bool match = default_domain ? (o.domain.empty() || o.domain == "ai.onnx")
                                      : o.domain == op_domain;
    if (match) {
      o.version = version;
      return;
    }
  }
  OpsetId id;
  id.domain = op_domain;
  id.version = version;
  opset_import.push_back(std::move(id));
}

namespace {

void visit_attribute_tensors(Attribute& a, const std::string& where,
                             const std::function<void(Tensor&, const std::string&)>& fn) {
  const std::string here = where + " attribute '" + a.name + "'";
  if (a.t) fn(*a.t, here);
  for (auto& t : a.tensors) fn(t, here);
  auto sparse = [&](SparseTensor& s) {
    if (s.values) fn(*s.values, here + " (sparse values)");
    if (s.indices) fn(*s.indices, here + " (sparse indices)");
  };
  if (a.sparse_tensor) sparse(*a.sparse_tensor);
  for (auto& s : a.sparse_tensors) sparse(s);
}

void visit_graph_tensors(Graph& root, const std::function<void(Tensor&, const std::string&)>& fn) {
  for_each_graph(root, [&fn](Graph& g) {
    const std::string where = "graph '" + g.name + "'";
    for (const auto& t : g.initializers()) fn(*t, where);
    for (auto& s : g.sparse_initializers) {
      if (s.values) fn(*s.values, where + " sparse initializer");
      if (s.indices) fn(*s.indices, where + " sparse initializer indices");
    }
    for (const auto& n : g.nodes()) {
      // The label only for nodes that hold a tensor: most hold none, and a label per node is a
      // string built for nothing (and a position lookup for unnamed nodes).
      std::string node_where;
      for (auto& a : n->attributes) {
        if (!a.t && a.tensors.empty() && !a.sparse_tensor && a.sparse_tensors.empty()) continue;
        if (node_where.empty())
          node_where = n->name.empty() ? where + " " + n->describe() : "node '" + n->name + "'";
        visit_attribute_tensors(a, node_where, fn);
      }
    }
  });
}

}  // namespace

void for_each_tensor(Model& model, const std::function<void(Tensor&, const std::string&)>& fn) {
  if (model.graph) visit_graph_tensors(*model.graph, fn);
  for (auto& f : model.functions) {
    const std::string where = "function '" + f.name + "'";
    for (auto& a : f.attribute_proto) visit_attribute_tensors(a, where, fn);
    visit_graph_tensors(*f.body, fn);
  }
}

void for_each_tensor(const Model& model, const std::function<void(const Tensor&, const std::string&)>& fn) {
  // The walk itself only reads; the tensors reach `fn` as const.
  for_each_tensor(const_cast<Model&>(model), [&fn](Tensor& t, const std::string& where) { fn(t, where); });
}

void fit_initializer_inputs(Model& model, int64_t ir_before) {
  if (ir_before <= 0 || !model.graph) return;  // no IR version: the checker says so
  Graph& main = *model.graph;
  if (model.ir_version < 4) {
    bool unlisted_in_subgraph = false;
    for_each_graph(main, [&](Graph& g) {
      for (const auto& t : g.initializers()) {
        // An initializer no value answers to (a name given twice, left empty) is the checker's
        // to report; nothing to list for it here.
        const Value* v = g.find(t->name);
        if (!v || v->is_graph_input()) continue;
        if (&g != &main) {
          unlisted_in_subgraph = true;
          continue;
        }
        Shape shape;
        for (int64_t d : t->dims) shape.dims.push_back(Dim::of(d));
        g.add_input(t->name, TypeInfo::tensor(t->type(), shape));
      }
    });
    if (unlisted_in_subgraph) model.ir_version = 4;
  }
  if (ir_before < 4 && model.ir_version >= 4)
    for (size_t i = main.inputs.size(); i-- > 0;)
      if (main.inputs[i].value->is_initializer()) main.remove_input(i);
}

// ---------------------------------------------------------------- NameGenerator

NameGenerator::NameGenerator(Model& model) {
  for_each_graph(model, [this](Graph& g) { collect(g); });
}

NameGenerator::NameGenerator(Graph& root) {
  Graph* top = &root;
  while (top->parent()) top = top->parent();
  for_each_graph(*top, [this](Graph& g) { collect(g); });
}

void NameGenerator::collect(Graph& graph) {
  for (const auto& n : graph.nodes()) {
    if (!n->name.empty()) used_.insert(n->name);
    for (const Value* v : n->outputs())
      if (v) used_.insert(v->name());
    for (const Value* v : n->inputs())
      if (v) used_.insert(v->name());
  }
  for (const auto& vi : graph.inputs) used_.insert(vi.value->name());
  for (const auto& vi : graph.outputs) used_.insert(vi.value->name());
  for (const auto& vi : graph.value_info) used_.insert(vi.value->name());
  for (const auto& t : graph.initializers()) used_.insert(t->name);
  for (const auto& s : graph.sparse_initializers) used_.insert(s.name());
}

std::string NameGenerator::fresh(std::string_view base) {
  std::string name = fresh_name(base, [this](const std::string& candidate) { return used_.count(candidate) > 0; });
  used_.insert(name);
  return name;
}

int64_t sort_graphs(Model& model) {
  int64_t moved = 0;
  for_each_graph(model, [&moved](Graph& g) {
    std::unordered_map<const Node*, size_t> before;
    for (const auto& n : g.nodes())
      if (n) before.emplace(n.get(), before.size());
    g.topological_sort();
    std::vector<size_t> old_positions;
    for (const auto& n : g.nodes()) old_positions.push_back(before.at(n.get()));
    moved += static_cast<int64_t>(moved_count(old_positions));
  });
  return moved;
}

size_t moved_count(const std::vector<size_t>& old_positions) {
  // Patience sorting: tails[k] is the smallest last element of an increasing run of length k + 1.
  std::vector<size_t> tails;
  for (size_t was : old_positions) {
    auto it = std::lower_bound(tails.begin(), tails.end(), was);
    if (it == tails.end()) tails.push_back(was);
    else *it = was;
  }
  return old_positions.size() - tails.size();
}

}  // namespace onnxtool::ir
