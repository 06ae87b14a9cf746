// The DOT writer of `onnxtool inspect --graph` (ir/graph_dot.h).
#include "ir/graph_dot.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "ir/data_type.h"
#include "ir/op_schema.h"
#include "ir/tensor.h"

namespace onnxtool::ir {
namespace {

/// The length of the UTF-8 sequence at s[i], 0 when the bytes there are not one (a stray
/// continuation byte, an overlong form, a surrogate, past U+10FFFF, cut short).
size_t utf8_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  const unsigned c = byte(0);
  size_t len = 0;
  unsigned lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) len = 2;
  else if (c >= 0xE0 && c <= 0xEF) len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
  else if (c >= 0xF0 && c <= 0xF4) len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
  else return 0;
  if (byte(1) < lo || byte(1) > hi) return 0;
  for (size_t k = 2; k < len; ++k)
    if (byte(k) < 0x80 || byte(k) > 0xBF) return 0;
  return len;
}

/// The inside of a DOT quoted string (dot_quote without the quotes).
void append_escaped(std::string& out, std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '"') out += "\\\"";
      else if (c == '\\') out += "\\\\";  // else \n, \l, \N... would be Graphviz's escapes
      else if (c == '&') out += "&amp;";  // else "&lt;" in a name would show as "<"
      else if (c == '\n') out += "\\\\n";
      else if (c < 0x20 || c == 0x7F) out += '?';
      else out += static_cast<char>(c);
      ++i;
      continue;
    }
    const size_t len = utf8_length(s, i);
    if (len == 0) {
      out += '?';  // dot rejects input that is not UTF-8, its default charset
      ++i;
      continue;
    }
    out.append(s.substr(i, len));
    i += len;
  }
}

/// A label of several lines: each escaped, joined by DOT's centred line break.
std::string label_of(const std::vector<std::string>& lines) {
  std::string out = "\"";
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\\n";
    append_escaped(out, lines[i]);
  }
  return out + "\"";
}

/// At most `max` bytes of `s`, its end kept: a long path-like name keeps the part that tells
/// nodes apart ("...attention/self/query/MatMul"). Never cuts a UTF-8 sequence.
std::string keep_tail(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  size_t start = s.size() - (max - 3);
  while (start < s.size() && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) ++start;
  return "..." + s.substr(start);
}

/// At most `max` bytes of `s`, its start kept.
std::string keep_head(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  size_t end = max - 3;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return s.substr(0, end) + "...";
}

constexpr size_t kMaxNameBytes = 48;
constexpr size_t kMaxListElements = 6;
constexpr size_t kMaxAttributes = 5;
constexpr size_t kMaxWeights = 4;

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

template <class T, class Format>
std::string list_text(const std::vector<T>& v, Format format) {
  std::string s = "[";
  const size_t shown = std::min(v.size(), kMaxListElements);
  for (size_t i = 0; i < shown; ++i) s += (i ? "," : "") + format(v[i]);
  if (v.size() > shown) s += ",... " + std::to_string(v.size()) + " in all";
  return s + "]";
}

/// "64x3x7x7"; "scalar" for rank 0.
std::string dims_text(const std::vector<int64_t>& dims) {
  if (dims.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s;
}

std::string tensor_text(const Tensor& t) { return std::string(data_type_name(t.type())) + " " + dims_text(t.dims); }

/// "name=value", short: numbers, element types by name (Cast's `to`), lists cut after
/// kMaxListElements, strings cut, tensors as their type and dims. Graphs are not attributes here.
std::string attribute_text(const Attribute& a) {
  const auto ints = [](int64_t v) { return std::to_string(v); };
  const auto floats = [](float v) { return number_text(v); };
  const auto strings = [](const std::string& v) { return keep_head(v, 16); };
  std::string value;
  switch (a.attr_type()) {
    case AttrType::kInt:
      value = (a.name == "to" || a.name == "dtype" || a.name == "output_dtype")
                  ? std::string(data_type_name(static_cast<DataType>(a.i)))
                  : std::to_string(a.i);
      break;
    case AttrType::kFloat: value = number_text(a.f); break;
    case AttrType::kString: value = keep_head(a.s, 24); break;
    case AttrType::kInts: value = list_text(a.ints, ints); break;
    case AttrType::kFloats: value = list_text(a.floats, floats); break;
    case AttrType::kStrings: value = list_text(a.strings, strings); break;
    case AttrType::kTensor: value = a.t ? tensor_text(*a.t) : "tensor"; break;
    case AttrType::kTensors: value = std::to_string(a.tensors.size()) + " tensors"; break;
    default:
      value = a.ref_attr_name.empty() ? std::string(attr_type_name(a.attr_type())) : "@" + a.ref_attr_name;
  }
  return keep_head(a.name, 24) + "=" + value;
}

/// The name the op's schema gives input `index` ("W", "B"), or "" when there is no schema.
std::string formal_input(const Model& model, const Node& n, size_t index) {
  const auto* versions = SchemaRegistry::instance().versions(n.domain, n.op_type);
  if (!versions || versions->empty()) return "";
  const OpSchema* schema = &versions->back();
  if (const auto opset = model.opset_version(n.domain))
    if (const OpSchema* s = SchemaRegistry::instance().find(n.domain, n.op_type, *opset)) schema = s;
  if (schema->inputs.empty()) return "";
  if (index < schema->inputs.size()) return schema->inputs[index].name;
  return schema->inputs.back().option == ParamOption::kVariadic ? schema->inputs.back().name : "";
}

/// The fill of a node: what kind of work it does, at a glance.
const char* fill_of(const Node& n) {
  static const std::unordered_set<std::string> compute = {
      "Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "Gemm", "MatMul", "MatMulInteger", "QLinearMatMul",
      "Attention", "MultiHeadAttention", "FusedConv", "FusedMatMul", "LSTM", "GRU", "RNN", "Einsum"};
  static const std::unordered_set<std::string> norm = {
      "BatchNormalization", "LayerNormalization", "InstanceNormalization", "GroupNormalization", "RMSNormalization",
      "SimplifiedLayerNormalization", "SkipLayerNormalization", "LpNormalization", "MeanVarianceNormalization", "Softmax",
      "LogSoftmax"};
  static const std::unordered_set<std::string> layout = {
      "Reshape", "Transpose", "Concat", "Split", "Slice", "Gather", "GatherElements", "GatherND", "Squeeze", "Unsqueeze",
      "Flatten", "Shape", "Expand", "Tile", "Pad", "Identity", "Cast", "CastLike", "Size", "Range", "ConstantOfShape",
      "DepthToSpace", "SpaceToDepth", "Resize"};
  if (n.op_type == "If" || n.op_type == "Loop" || n.op_type == "Scan") return "#fce5cd";
  if (n.op_type == "Constant") return "#ffffff";
  if (compute.count(n.op_type)) return "#cfe2f3";
  if (norm.count(n.op_type)) return "#d9ead3";
  if (layout.count(n.op_type)) return "#eeeeee";
  return "#fff2cc";
}

std::string node_label(const Model& model, const Node& n) {
  std::vector<std::string> lines;
  lines.push_back(n.domain.empty() || n.domain == "ai.onnx" ? n.op_type : n.qualified_op());
  if (!n.name.empty()) lines.push_back(keep_tail(n.name, kMaxNameBytes));
  // Weights in the label, not as nodes of their own: a ResNet would otherwise draw twice as many
  // boxes, each with one edge. The schema's name ("W") says more than "onnx::Conv_193".
  size_t weights = 0;
  for (size_t i = 0; i < n.inputs().size(); ++i) {
    const Value* v = n.inputs()[i];
    if (!v || !v->is_initializer()) continue;
    if (++weights > kMaxWeights) continue;
    std::string name = formal_input(model, n, i);
    if (name.empty()) name = keep_tail(v->name(), 24);
    const Tensor& t = *v->initializer();
    std::string line = name + " " + dims_text(t.dims);
    if (t.type() != DataType::kFloat) line += " " + std::string(data_type_name(t.type()));
    lines.push_back(line);
  }
  if (weights > kMaxWeights) lines.push_back("+" + std::to_string(weights - kMaxWeights) + " more weights");
  size_t attrs = 0;
  for (const Attribute& a : n.attributes) {
    if (a.attr_type() == AttrType::kGraph || a.attr_type() == AttrType::kGraphs) continue;
    if (++attrs <= kMaxAttributes) lines.push_back(attribute_text(a));
  }
  if (attrs > kMaxAttributes) lines.push_back("+" + std::to_string(attrs - kMaxAttributes) + " more attributes");
  // Subgraphs summarized: drawn inside, a Loop body would be laid out apart from the values it
  // reads and its node would swell to the body's size. `inspect --nodes` lists their nodes.
  const auto summary = [](const std::string& name, const Graph& g) {
    std::vector<std::string> ops;
    for (const auto& sub : g.nodes())
      if (std::find(ops.begin(), ops.end(), sub->op_type) == ops.end()) ops.push_back(sub->op_type);
    std::string s = name + ": " + std::to_string(g.nodes().size()) + (g.nodes().size() == 1 ? " node" : " nodes");
    for (size_t i = 0; i < ops.size() && i < 3; ++i) s += (i ? ", " : " (") + ops[i];
    if (ops.size() > 3) s += ", ...";
    return ops.empty() ? s : s + ")";
  };
  for (const Attribute& a : n.attributes) {
    if (a.g) lines.push_back(summary(keep_head(a.name, 24), *a.g));
    for (size_t k = 0; k < a.graphs.size(); ++k)
      lines.push_back(summary(keep_head(a.name, 24) + "[" + std::to_string(k) + "]", *a.graphs[k]));
  }
  return label_of(lines);
}

/// A value's type for an edge: "float[1,8,32,32]", "?" when nothing is known.
std::string type_text(const Value& v) { return v.type.kind == TypeInfo::Kind::kUnset ? "?" : v.type.to_string(); }

/// Nodes grouped by name prefix: a tree of clusters, each holding the nodes of its prefix.
struct Cluster {
  std::string label;  ///< its whole prefix, "encoder/layer/0": the box's place in the model
  std::vector<size_t> nodes;  ///< positions in the graph's node list
  std::vector<std::unique_ptr<Cluster>> children;  ///< in the order their first node comes
  std::unordered_map<std::string, Cluster*> by_name;

  Cluster* child(const std::string& name) {
    auto it = by_name.find(name);
    if (it != by_name.end()) return it->second;
    children.push_back(std::make_unique<Cluster>());
    children.back()->label = label.empty() ? name : label + "/" + name;
    return by_name[name] = children.back().get();
  }

  /// Replaces each chain of clusters holding nothing but one cluster by its last: a box around
  /// a box says nothing.
  void collapse() {
    for (auto& c : children) {
      while (c->nodes.empty() && c->children.size() == 1) {
        std::unique_ptr<Cluster> only = std::move(c->children.front());
        c = std::move(only);
      }
      c->collapse();
    }
  }
};

class Writer {
 public:
  Writer(const Model& model, const Graph& g) : model_(model), g_(g) {
    size_t i = 0;
    for (const auto& n : g.nodes()) index_[n.get()] = i++;
    for (size_t k = 0; k < g.inputs.size(); ++k)
      if (g.inputs[k].value && !g.inputs[k].value->is_initializer()) inputs_[g.inputs[k].value] = k;
    edge_label_ = g.nodes().size() > kDotClusterThreshold ? "xlabel" : "label";
  }

  /// The graph clustered by `depth` levels of name prefix (0: not clustered).
  DotGraph write(int depth) {
    DotGraph out;
    std::string head = "digraph onnx {\n";
    // newrank: ranks are assigned over the whole graph, clusters or not; without it dot fails on
    // some clustered graphs ("trouble in init_rank": PaddleOCR's detector clustered by prefix).
    head += "  graph [rankdir=TB, newrank=true, fontname=\"Helvetica\", fontsize=12, labelloc=t, label=" +
            label_of({(g_.name.empty() ? std::string("main graph") : "graph " + keep_tail(g_.name, kMaxNameBytes)) +
                      ": " + std::to_string(g_.nodes().size()) + " nodes"}) +
            "];\n";
    head += "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n";
    head += "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\"];\n";
    for (size_t k = 0; k < g_.inputs.size(); ++k) {
      const Value* v = g_.inputs[k].value;
      if (!v || v->is_initializer()) continue;  // weights are in their readers' labels
      head += "  in" + std::to_string(k) + " [shape=invhouse, fillcolor=\"#b6d7a8\", label=" +
              label_of({keep_tail(v->name(), kMaxNameBytes), type_text(*v)}) + "];\n";
    }
    Cluster root;
    std::vector<std::vector<std::string>> prefixes;
    if (depth > 0)
      for (const auto& n : g_.nodes()) prefixes.push_back(dot_name_prefix(n->name, -1, n->op_type));
    // A prefix every named node shares ("/bert/", "p2o.") says nothing: the levels count from
    // where names differ, so that /bert/encoder/layer.0/... falls in encoder > layer > 0.
    // Unnamed nodes (Constants, often) and names without a path stay outside any box.
    const std::vector<std::string>* first = nullptr;
    size_t common = 0;
    for (const auto& p : prefixes) {
      if (p.empty()) continue;
      if (!first) first = &p, common = p.size();
      size_t k = 0;
      while (k < common && p[k] == (*first)[k]) ++k;
      common = k;
    }
    for (size_t k = 0; k < common; ++k) root.label += (k ? "/" : "") + (*first)[k];
    for (const auto& n : g_.nodes()) {
      const size_t i = index_[n.get()];
      Cluster* c = &root;
      if (depth > 0)
        for (size_t k = common; k < prefixes[i].size() && k < common + static_cast<size_t>(depth); ++k)
          c = c->child(prefixes[i][k]);
      c->nodes.push_back(i);
    }
    root.collapse();
    emit(root, 1, out.clusters);
    for (size_t k = 0; k < g_.outputs.size(); ++k) {
      const Value* v = g_.outputs[k].value;
      nodes_ += "  out" + std::to_string(k) + " [shape=house, fillcolor=\"#ea9999\", label=" +
                label_of({v ? keep_tail(v->name(), kMaxNameBytes) : "?", v ? type_text(*v) : "?"}) + "];\n";
    }
    for (const auto& n : g_.nodes()) {
      const std::string to = "n" + std::to_string(index_[n.get()]);
      for (const Value* v : n->inputs())
        if (v && !v->is_initializer()) out.edges += edge(*v, to, false);
      // What a subgraph reads from this graph enters its node by a dashed edge.
      for (const Value* v : g_.implicit_inputs(n.get()))
        if (!v->is_initializer()) out.edges += edge(*v, to, true);
    }
    for (size_t k = 0; k < g_.outputs.size(); ++k)
      if (const Value* v = g_.outputs[k].value; v && !v->is_initializer())
        out.edges += edge(*v, "out" + std::to_string(k), false);
    out.text = head + nodes_ + edges_ + "}\n";
    out.nodes = g_.nodes().size();
    return out;
  }

 private:
  const Model& model_;
  const Graph& g_;
  std::unordered_map<const Node*, size_t> index_;
  std::unordered_map<const Value*, size_t> inputs_;  ///< graph inputs (not weights) by position
  /// "label" places an edge's label beside it as a node of the layout of its own: neat, but
  /// dot's time grows with it (a 554-node transformer encoder: 209 s, against 19 s with
  /// "xlabel", placed after the layout) above kDotClusterThreshold nodes.
  std::string edge_label_;
  std::string nodes_;  ///< node statements, in clusters
  std::string edges_;  ///< edge statements, after every node

  /// Appends the edge carrying `v` into `to`; returns 1, or 0 when `v` comes from nowhere in
  /// this graph (a name no node makes: `onnxtool check` reports it).
  size_t edge(const Value& v, const std::string& to, bool dashed) {
    std::string from;
    if (v.producer() && v.producer()->graph() == &g_) from = "n" + std::to_string(index_[v.producer()]);
    else if (auto it = inputs_.find(&v); it != inputs_.end()) from = "in" + std::to_string(it->second);
    else return 0;
    edges_ += "  " + from + " -> " + to + " [" + edge_label_ + "=" + label_of({type_text(v)}) + ", tooltip=" + dot_quote(v.name()) +
              (dashed ? ", style=dashed" : "") + "];\n";
    return 1;
  }

  void emit(const Cluster& c, int level, size_t& clusters) {
    const std::string indent(static_cast<size_t>(level) * 2, ' ');
    for (size_t i : c.nodes) {
      const Node& n = *g_.nodes()[i];
      nodes_ += indent + "n" + std::to_string(i) + " [fillcolor=\"" + fill_of(n) + "\", label=" + node_label(model_, n) +
                "];\n";
    }
    for (const auto& child : c.children) {
      // A cluster of one node is no group: the node goes where the cluster would.
      if (child->children.empty() && child->nodes.size() == 1) {
        emit(*child, level, clusters);
        continue;
      }
      nodes_ += indent + "subgraph cluster_" + std::to_string(clusters++) + " {\n";
      nodes_ += indent + "  graph [style=\"rounded,dashed\", color=\"#999999\", labeljust=l, label=" +
                label_of({keep_tail(child->label, kMaxNameBytes)}) + "];\n";
      emit(*child, level + 1, clusters);
      nodes_ += indent + "}\n";
    }
  }

};

}  // namespace

std::string dot_quote(std::string_view s) {
  std::string out = "\"";
  append_escaped(out, s);
  return out + "\"";
}

std::vector<std::string> dot_name_prefix(std::string_view node_name, int depth, std::string_view op_type) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= node_name.size(); ++i) {
    if (i < node_name.size() && node_name[i] != '/' && node_name[i] != '.') continue;
    if (i > start) parts.emplace_back(node_name.substr(start, i - start));
    start = i + 1;
  }
  if (!parts.empty()) parts.pop_back();  // the node's own name
  if (!op_type.empty()) parts.erase(std::find(parts.begin(), parts.end(), op_type), parts.end());
  if (depth >= 0 && parts.size() > static_cast<size_t>(depth)) parts.resize(static_cast<size_t>(depth));
  return parts;
}

DotGraph graph_dot(const Model& model, const DotOptions& options) {
  if (!model.graph) return {"digraph onnx {\n}\n", 0, 0, 0};
  const Graph& g = *model.graph;
  int depth = options.cluster_depth;
  if (depth < 0) depth = g.nodes().size() > kDotClusterThreshold ? kDotDefaultClusterDepth : 0;
  return Writer(model, g).write(depth);
}

}  // namespace onnxtool::ir
