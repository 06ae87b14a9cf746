// The graph IR: Model, Graph, Node, Value, Attribute, Function. Everything onnxtool reads,
// rewrites and writes goes through these types; none of them touches protobuf.
//
// Values are linked objects (producer, uses) so that renaming, replacing uses and removing nodes
// are IR operations. The structs also keep every field of the model file (see tensor.h on
// explicit_defaults and unknown) so that load + save is lossless.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/tensor.h"
#include "ir/type.h"

namespace onnxtool::ir {

class Graph;
class Node;

/// AttributeProto.AttributeType.
enum class AttrType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kInt = 2,
  kString = 3,
  kTensor = 4,
  kGraph = 5,
  kFloats = 6,
  kInts = 7,
  kStrings = 8,
  kTensors = 9,
  kGraphs = 10,
  kSparseTensor = 11,
  kSparseTensors = 12,
  kTypeProto = 13,
  kTypeProtos = 14,
};

std::string_view attr_type_name(AttrType type);

/// A node or function attribute: AttributeProto. Graph-valued attributes own their subgraphs.
struct Attribute {
  std::string name;
  std::string ref_attr_name;
  std::string doc_string;
  int32_t type = 0;
  float f = 0;
  int64_t i = 0;
  std::string s;
  // The rarely used single values are boxed (heap-allocated only when present) so that an
  // attribute stays small: a model has many attributes and few tensor- or type-valued ones.
  Box<Tensor> t;
  std::unique_ptr<Graph> g;
  Box<SparseTensor> sparse_tensor;
  Box<TypeInfo> tp;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::unique_ptr<Graph>> graphs;
  std::vector<SparseTensor> sparse_tensors;
  std::vector<TypeInfo> type_protos;
  uint32_t explicit_defaults = 0;
  std::string unknown;

  AttrType attr_type() const { return static_cast<AttrType>(type); }

  static Attribute make_int(std::string name, int64_t v);
  static Attribute make_float(std::string name, float v);
  static Attribute make_string(std::string name, std::string v);
  static Attribute make_ints(std::string name, std::vector<int64_t> v);
  static Attribute make_floats(std::string name, std::vector<float> v);
  static Attribute make_tensor(std::string name, Tensor v);
};

/// One use of a value: input `index` of `node`.
struct Use {
  Node* node;
  size_t index;
};

/// A named value of a graph: graph input, initializer, node output, or a name used but never
/// defined (which the checker reports). Owned by the Graph that defines it; subgraph nodes may
/// use values of enclosing graphs (outer scope).
class Value {
 public:
  const std::string& name() const { return name_; }
  Graph* graph() const { return graph_; }
  Node* producer() const { return producer_; }
  size_t producer_output() const { return producer_output_; }
  const std::vector<Use>& uses() const { return uses_; }
  bool is_graph_input() const { return graph_input_ > 0; }
  bool is_graph_output() const { return graph_output_ > 0; }
  bool is_initializer() const { return initializer_ != nullptr; }
  bool is_sparse_initializer() const { return sparse_initializer_; }
  /// Neither produced by a node nor a graph input nor an initializer.
  bool is_undefined() const {
    return producer_ == nullptr && graph_input_ == 0 && initializer_ == nullptr &&
           !sparse_initializer_;
  }
  Tensor* initializer() const { return initializer_; }

  /// The best known type: declared in the file, or set by shape inference and passes.
  TypeInfo type;

 private:
  friend class Graph;
  friend class Node;
  std::string name_;
  Graph* graph_ = nullptr;
  Node* producer_ = nullptr;
  size_t producer_output_ = 0;
  std::vector<Use> uses_;
  int graph_input_ = 0;   // how many graph input entries name it
  int graph_output_ = 0;  // how many graph output entries name it
  Tensor* initializer_ = nullptr;
  bool sparse_initializer_ = false;
};

/// A graph input, output or value_info entry: ValueInfoProto, referring to its Value.
struct ValueInfo {
  Value* value = nullptr;
  std::optional<TypeInfo> type;  ///< the type as declared in the file (absent: not declared)
  std::string doc_string;
  std::vector<StringPair> metadata_props;
  uint32_t explicit_defaults = 0;
  std::string unknown;
};

/// An operator invocation: NodeProto. Inputs are nullptr where an optional input is omitted.
class Node {
 public:
  std::string name;
  std::string op_type;
  std::string domain;
  std::string overload;
  std::string doc_string;
  std::vector<Attribute> attributes;
  std::vector<StringPair> metadata_props;
  std::vector<std::string> device_configurations;  ///< verbatim NodeDeviceConfigurationProto bytes
  uint32_t explicit_defaults = 0;
  std::string unknown;

  Graph* graph() const { return graph_; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  Value* output(size_t i) const { return i < outputs_.size() ? outputs_[i] : nullptr; }

  void set_input(size_t index, Value* value);
  void append_input(Value* value);
  /// Removes input `index`, shifting the later ones.
  void remove_input(size_t index);

  const Attribute* attr(std::string_view attr_name) const;
  Attribute* attr(std::string_view attr_name);
  int64_t attr_int(std::string_view attr_name, int64_t fallback) const;
  float attr_float(std::string_view attr_name, float fallback) const;
  std::string attr_string(std::string_view attr_name, std::string fallback) const;
  std::vector<int64_t> attr_ints(std::string_view attr_name,
                                 std::vector<int64_t> fallback = {}) const;
  /// Adds or replaces the attribute of the same name.
  void set_attr(Attribute attribute);
  bool remove_attr(std::string_view attr_name);

  /// Subgraphs held by graph-valued attributes, in attribute order.
  std::vector<Graph*> subgraphs() const;
  /// "domain::op_type" (plain op_type in the default domain).
  std::string qualified_op() const;
  /// "node 'name' (Op)", or "node #index (Op)" when it has no name. O(1) amortized: the index
  /// comes from the graph's position cache.
  std::string describe() const;
  /// True once the graph removed it (only seen during Graph::for_each_node, which keeps removed
  /// nodes alive until the walk ends).
  bool removed() const { return removed_; }

 private:
  friend class Graph;
  Graph* graph_ = nullptr;
  size_t index_ = 0;  // slot in the graph's node list, when the graph's positions are valid
  bool removed_ = false;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
};

/// TensorAnnotation, kept verbatim (names only, not linked to values).
struct TensorAnnotation {
  std::string tensor_name;
  std::vector<StringPair> quant_parameter_tensor_names;
  uint32_t explicit_defaults = 0;
  std::string unknown;
};

/// How many elements of a list must move to put it in increasing order: those outside its longest
/// increasing run (a swap of two moves one). Counts what a reordering of nodes moved, given each
/// node's old position in its new order.
size_t moved_count(const std::vector<size_t>& old_positions);

/// A graph: GraphProto. Nodes are kept in file order until topological_sort() reorders them.
class Graph {
 public:
  explicit Graph(Graph* parent = nullptr);
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph();

  std::string name;
  std::string doc_string;
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  std::vector<ValueInfo> value_info;
  std::vector<SparseTensor> sparse_initializers;
  std::vector<TensorAnnotation> quantization_annotation;
  std::vector<StringPair> metadata_props;
  uint32_t explicit_defaults = 0;
  std::string unknown;

  Graph* parent() const { return parent_; }
  /// Makes `parent` the enclosing graph (nullptr: none), as for a subgraph of one of its nodes.
  void set_parent(Graph* parent);
  /// Nesting depth: 0 for a top-level graph.
  int depth() const;

  // --- values
  /// The value of that name defined in this graph (or nullptr).
  Value* find(std::string_view value_name) const;
  /// Looks in this graph, then in the enclosing graphs (outer scope).
  Value* lookup(std::string_view value_name) const;
  /// True when a graph nested in this one, at any depth, has a value of that name: a graph whose
  /// parent is this one or nested in it (the subgraphs of its nodes, and those of nodes removed
  /// during a walk until it ends). O(nested graphs), so free for a graph without subgraphs.
  bool defined_below(std::string_view value_name) const;
  /// The value of that name in scope, or a new undefined value in this graph.
  Value* resolve(const std::string& value_name);
  /// The value of that name in this graph, created (undefined) if missing.
  Value* value(const std::string& value_name);
  /// Renames a value everywhere it is referred to (uses, I/O, initializer, value_info).
  /// Throws Error(kUsage) if the new name is already defined in this graph.
  void rename(Value* value, const std::string& new_name);
  /// Makes every node input that uses `from` use `to` instead. Graph outputs are not touched.
  void replace_all_uses(Value* from, Value* to);

  // --- graph inputs and outputs
  ValueInfo& add_input(const std::string& value_name, std::optional<TypeInfo> type);
  ValueInfo& add_output(Value* value, std::optional<TypeInfo> type);
  void remove_input(size_t index);
  void remove_output(size_t index);
  /// Points graph output `index` at another value, keeping its position, declared type and docs.
  void set_output_value(size_t index, Value* value);

  // --- initializers (in file order)
  const std::vector<std::unique_ptr<Tensor>>& initializers() const { return initializers_; }
  Value* add_initializer(Tensor tensor);
  /// Removes the initializer of that value (the value stays if still declared as an input).
  void remove_initializer(Value* value);
  void add_sparse_initializer(SparseTensor tensor);

  // --- nodes
  const std::vector<std::unique_ptr<Node>>& nodes() const {
    if (edited()) compact();
    return nodes_;
  }
  /// Creates a node before `before` (at the end when nullptr). Outputs get the given names;
  /// the names must be new in this graph. O(1) amortized, wherever it goes.
  Node* add_node(std::string op_type, const std::vector<Value*>& node_inputs,
                 const std::vector<std::string>& output_names, std::string domain = "",
                 std::string node_name = "", const Node* before = nullptr);
  /// Appends a node built elsewhere (no inputs or outputs linked yet) to the end of the list.
  Node* append_node(std::unique_ptr<Node> node);
  /// Adds an output value (named `output_name`, "" for an omitted one) to a node of this graph.
  Value* add_node_output(Node* node, const std::string& output_name);
  /// Removes a node; its inputs lose the use, its outputs become undefined values. O(1)
  /// amortized. Throws Error(kInternal) for a node that is not one of this graph's.
  void remove_node(Node* node);
  /// Removes every node for which `dead` is true: one pass over the node list, and one over the
  /// use list of each value they read. Prefer it to remove_node in a loop when many nodes go.
  template <class Pred>
  void remove_nodes_if(Pred dead);
  /// Calls fn(node) for each node in the order of the list when the walk begins. fn may add and
  /// remove nodes: a node removed before its turn is skipped (removed nodes stay allocated until
  /// the outermost walk ends, so the walk never touches freed memory), and added nodes are not
  /// visited.
  template <class Fn>
  void for_each_node(Fn fn);
  /// The node's position in nodes() (nodes().size() when it is not a node of this graph).
  /// O(1) amortized: positions are cached and recomputed once after the list changes.
  size_t node_index(const Node* node) const;
  /// How many times the whole node list was rebuilt to apply insertions and removals. Per-node
  /// work (describe(), node_index(), remove_node(), add_node()) must not rebuild it each time;
  /// tests assert this count stays constant as graphs grow.
  size_t position_rebuilds() const { return position_rebuilds_; }

  /// Positions in nodes() in a topological order that keeps the list's order wherever it is
  /// already valid (Kahn's algorithm, the smallest position first). Uses of outer-scope values
  /// inside subgraphs count as inputs of the node holding them. Throws Error(kFailed) naming the
  /// nodes of a cycle.
  std::vector<size_t> topological_order() const;
  /// Reorders nodes as topological_order() says.
  void topological_sort();
  /// The values a node's subgraphs use from this graph or above (implicit inputs), in first-use
  /// order, without duplicates.
  std::vector<Value*> implicit_inputs(const Node* node) const;

  /// Removes values that are no longer referred to by anything (after node removal).
  void prune_values();

 private:
  friend class Node;
  void detach_uses(Node* node);
  /// detach_uses for many nodes at once: each value they read has its use list filtered once,
  /// so that removing the readers of a value with many readers is linear, not quadratic.
  void detach_all(const std::vector<std::unique_ptr<Node>>& gone);
  /// Frees a removed node, or keeps it until the walk ends when for_each_node is walking.
  void bury(std::unique_ptr<Node> node);
  /// Slot of a node in nodes_ (null slots of removed nodes included), nodes_.size() if absent.
  /// A node inserted since the last compact() gets its slot by compacting.
  size_t slot_of(const Node* node) const;
  bool edited() const { return removed_slots_ || !inserted_.empty(); }
  /// Applies pending insertions and drops removed slots, renumbering every node: one walk.
  void compact() const;
  Graph* parent_ = nullptr;
  // The graphs whose parent this is (kept by set_parent), so that defined_below needs no scan of
  // the nodes for subgraphs. A graph destroyed before its children (one moved out of its node)
  // leaves them without a parent rather than pointing at freed memory.
  std::vector<Graph*> children_;
  // Node positions are cached in Node::index_, so node_index() (hence every "node #i" label) is
  // O(1), and edits are deferred, so that a pass inserting or removing a node per match stays
  // linear (a vector insert or erase shifts everything after it: quadratic, minutes on a few
  // hundred thousand nodes). remove_node leaves a null slot; add_node before a node records the
  // new node in inserted_ with the slot it goes before. Slots never move until compact(), which
  // nodes(), node_index() and every whole-graph operation call first, so nothing outside Graph
  // ever sees a null slot or a pending node. Hence `mutable`: the list a reader sees does not
  // change, only its representation. Readers never compact concurrently: only edits make a
  // compaction due, and the runner's threads never edit the graph.
  mutable std::vector<std::unique_ptr<Node>> nodes_;
  mutable std::vector<std::pair<size_t, std::unique_ptr<Node>>> inserted_;  // (slot it precedes, node)
  mutable size_t removed_slots_ = 0;                                         // null slots in nodes_
  mutable size_t position_rebuilds_ = 0;
  size_t walks_ = 0;                              // for_each_node calls under way
  std::vector<std::unique_ptr<Node>> graveyard_;  // nodes removed during a walk
  std::vector<std::unique_ptr<Tensor>> initializers_;
  // Lookup only: nothing is ever emitted by iterating this map.
  std::unordered_map<std::string, std::unique_ptr<Value>> values_;
};

template <class Pred>
void Graph::remove_nodes_if(Pred dead) {
  if (edited()) compact();
  std::vector<std::unique_ptr<Node>> kept, gone;
  kept.reserve(nodes_.size());
  for (auto& n : nodes_) {
    if (dead(*n)) {
      gone.push_back(std::move(n));
    } else {
      n->index_ = kept.size();
      kept.push_back(std::move(n));
    }
  }
  nodes_ = std::move(kept);
  if (gone.empty()) return;
  detach_all(gone);
  for (auto& n : gone) bury(std::move(n));
}

template <class Fn>
void Graph::for_each_node(Fn fn) {
  if (edited()) compact();
  std::vector<Node*> order;
  order.reserve(nodes_.size());
  for (const auto& n : nodes_) order.push_back(n.get());
  struct Walk {
    Graph& g;
    explicit Walk(Graph& graph) : g(graph) { ++g.walks_; }
    ~Walk() {
      if (--g.walks_ == 0) g.graveyard_.clear();
    }
  } walk(*this);
  for (Node* n : order)
    if (!n->removed()) fn(n);
}

/// OperatorSetIdProto.
struct OpsetId {
  std::string domain;
  int64_t version = 0;
  uint32_t explicit_defaults = 0;
  std::string unknown;
};

/// A model-local function: FunctionProto. The body is a Graph whose inputs and outputs are the
/// formal parameters (untyped) and whose value_info is the function's value_info.
struct Function {
  std::string name;
  std::string domain;
  std::string overload;
  std::string doc_string;
  std::vector<std::string> attribute;
  std::vector<Attribute> attribute_proto;
  std::vector<OpsetId> opset_import;
  std::unique_ptr<Graph> body = std::make_unique<Graph>();
  std::vector<StringPair> metadata_props;
  uint32_t explicit_defaults = 0;
  std::string unknown;
};

/// A model: ModelProto plus where it was loaded from.
class Model {
 public:
  int64_t ir_version = 0;
  std::vector<OpsetId> opset_import;
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::unique_ptr<Graph> graph;
  std::vector<StringPair> metadata_props;
  std::vector<std::string> training_info;  ///< verbatim TrainingInfoProto bytes
  std::vector<Function> functions;
  std::vector<std::string> configuration;  ///< verbatim DeviceConfigurationProto bytes
  uint32_t explicit_defaults = 0;
  std::string unknown;

  /// The imported version of a domain ("" and "ai.onnx" are the same), or nullopt.
  std::optional<int64_t> opset_version(std::string_view op_domain) const;
  /// The imported version of the default ONNX domain, 0 when the model does not import it.
  int64_t onnx_opset() const { return opset_version("").value_or(0); }
  /// Sets (adds or replaces) the imported version of a domain.
  void set_opset_version(const std::string& op_domain, int64_t version);
};

/// Calls fn(graph) for `root` and every subgraph below it (attributes of nodes), parents first.
/// Iterative, no recursion.
template <class Fn>
void for_each_graph(Graph& root, Fn fn) {
  std::vector<Graph*> stack{&root};
  while (!stack.empty()) {
    Graph* g = stack.back();
    stack.pop_back();
    fn(*g);
    const auto& nodes = g->nodes();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      auto subs = (*it)->subgraphs();
      for (auto s = subs.rbegin(); s != subs.rend(); ++s) stack.push_back(*s);
    }
  }
}

/// Every graph of a model: the main graph with its subgraphs, then each function body with its
/// subgraphs.
template <class Fn>
void for_each_graph(Model& model, Fn fn) {
  if (model.graph) for_each_graph(*model.graph, fn);
  for (auto& f : model.functions) for_each_graph(*f.body, fn);
}

/// Sorts every graph of `model` topologically (Graph::topological_sort: an order that is already
/// valid stays as it is) and returns how many nodes moved (moved_count, summed over graphs).
/// Throws Error(kFailed) naming the nodes of a cycle; graphs sorted before it stay sorted.
int64_t sort_graphs(Model& model);

/// Calls fn(tensor, where) for every dense tensor stored in a model: initializers, sparse
/// tensors' values and indices, tensor attributes, in every graph, subgraph and function.
/// `where` describes the place ("graph 'main'", "node 'c1' attribute 'value'").
void for_each_tensor(Model& model, const std::function<void(Tensor&, const std::string&)>& fn);
void for_each_tensor(const Model& model, const std::function<void(const Tensor&, const std::string&)>& fn);

/// Keeps the listing of initializers as graph inputs right for the IR version after a rewrite
/// that may have added initializers: before IR 4 every initializer is also a graph input (a
/// constant one), from IR 4 on a listed initializer is an input the caller may override.
/// `ir_before` is the model's IR version before the rewrite. Below IR 4 the main graph's unlisted
/// initializers are listed, typed like their tensors; a subgraph cannot take new inputs (a
/// branch's or a loop body's inputs are fixed), so an unlisted initializer there raises the model
/// to IR 4. Raised from below IR 4, the main graph's initializers stay constants: no longer listed.
void fit_initializer_inputs(Model& model, int64_t ir_before);

/// The one scheme of fresh names (NameGenerator::fresh, ir::unique_name): `base` itself when it
/// is neither empty nor taken, else the first of base_1, base_2, ... that is not taken.
template <class Taken>
std::string fresh_name(std::string_view base, Taken taken) {
  std::string candidate(base);
  for (size_t k = 1; candidate.empty() || taken(candidate); ++k)
    candidate = std::string(base) + "_" + std::to_string(k);
  return candidate;
}

/// Makes fresh value and node names that collide with no name anywhere in a model (all graphs,
/// subgraphs and function bodies). Deterministic: the same model and requests give the same names.
/// For many names at once: it collects the model's names once. One value name in one graph:
/// ir::unique_name (ir/graph_util.h), which needs no collection.
class NameGenerator {
 public:
  explicit NameGenerator(Model& model);
  explicit NameGenerator(Graph& root);
  /// fresh_name(base) among the names unused so far; the name is then reserved.
  std::string fresh(std::string_view base);

 private:
  void collect(Graph& graph);
  std::unordered_set<std::string> used_;
};

}  // namespace onnxtool::ir
