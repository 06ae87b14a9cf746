// Semantic model diff.
#include "ir/model_diff.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>

namespace onnxtool::ir {

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::string value_names(const std::vector<Value*>& values) {
  std::vector<std::string> n;
  for (const Value* v : values) n.push_back(v ? v->name() : "");
  return "(" + join(n) + ")";
}

std::string type_of(const ValueInfo& vi) { return (vi.type ? *vi.type : vi.value->type).to_string(); }

/// A short rendering of an attribute's value.
std::string attr_text(const Attribute& a) {
  std::ostringstream s;
  switch (a.attr_type()) {
    case AttrType::kInt: s << a.i; break;
    case AttrType::kFloat: s << a.f; break;
    case AttrType::kString: s << '"' << a.s << '"'; break;
    case AttrType::kInts: {
      s << "[";
      for (size_t i = 0; i < a.ints.size(); ++i) s << (i ? "," : "") << a.ints[i];
      s << "]";
      break;
    }
    case AttrType::kFloats: {
      s << "[";
      for (size_t i = 0; i < a.floats.size(); ++i) s << (i ? "," : "") << a.floats[i];
      s << "]";
      break;
    }
    case AttrType::kStrings: s << "[" << join(a.strings) << "]"; break;
    case AttrType::kGraph: s << "graph(" << (a.g ? a.g->nodes().size() : 0) << " nodes)"; break;
    case AttrType::kTensor: {
      s << "tensor";
      if (a.t) {
        s << "[";
        for (size_t i = 0; i < a.t->dims.size(); ++i) s << (i ? "," : "") << a.t->dims[i];
        s << "]";
        if (const auto raw = a.t->raw_bytes_if_valid()) {
          uint64_t h = 1469598103934665603ULL;
          for (size_t i = 0; i < raw->size(); ++i) h = (h ^ raw->data()[i]) * 1099511628211ULL;
          s << "#" << std::hex << (h & 0xffffff);
        }
      }
      break;
    }
    default: s << attr_type_name(a.attr_type());
  }
  return s.str();
}

std::map<std::string, std::string> attr_map(const Node& n) {
  std::map<std::string, std::string> m;
  for (const auto& a : n.attributes) m[a.name] = attr_text(a);
  return m;
}

/// Node structure for matching unnamed or renamed nodes: op, inputs, outputs.
std::string structure(const Node& n) {
  return n.domain + "::" + n.op_type + value_names(n.inputs()) + "->" + value_names(n.outputs());
}

double element(DataType t, const uint8_t* p, size_t i) {
  switch (t) {
    case DataType::kFloat: { float v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case DataType::kDouble: { double v; std::memcpy(&v, p + 8 * i, 8); return v; }
    case DataType::kInt8: return static_cast<int8_t>(p[i]);
    case DataType::kUInt8: case DataType::kBool: return p[i];
    case DataType::kInt32: { int32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case DataType::kInt64: { int64_t v; std::memcpy(&v, p + 8 * i, 8); return static_cast<double>(v); }
    case DataType::kUInt16: case DataType::kInt16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); return t == DataType::kInt16 ? static_cast<int16_t>(v) : v; }
    default: return std::nan("");
  }
}

/// "max abs diff 0.25" for tensors of the same type and dims, or why they differ otherwise.
std::string tensor_change(const Tensor& a, const Tensor& b) {
  if (a.data_type != b.data_type)
    return std::string(data_type_name(a.type())) + " -> " + std::string(data_type_name(b.type()));
  if (a.dims != b.dims) {
    std::ostringstream s;
    s << "reshaped [";
    for (size_t i = 0; i < a.dims.size(); ++i) s << (i ? "," : "") << a.dims[i];
    s << "] -> [";
    for (size_t i = 0; i < b.dims.size(); ++i) s << (i ? "," : "") << b.dims[i];
    s << "]";
    return s.str();
  }
  if (a.type() == DataType::kString) return a.string_data == b.string_data ? "" : "strings changed";
  const auto xa = a.raw_bytes_if_valid(), ya = b.raw_bytes_if_valid();
  if (!xa || !ya) return "unreadable data";
  const Bytes& x = *xa;
  const Bytes& y = *ya;
  // (memcmp takes no null pointer, even for no bytes: an empty tensor's buffer may be null)
  if (x.size() == y.size() && (x.size() == 0 || std::memcmp(x.data(), y.data(), x.size()) == 0)) return "";
  const int bits = data_type_bits(a.type());
  if (bits <= 0 || bits % 8) return "values changed";
  const size_t n = x.size() / static_cast<size_t>(bits / 8);
  double worst = 0;
  size_t changed = 0;
  for (size_t i = 0; i < n; ++i) {
    const double p = element(a.type(), x.data(), i), q = element(a.type(), y.data(), i);
    if (std::isnan(p) && std::isnan(q)) continue;
    if (p != q) ++changed;
    if (std::isnan(p - q)) continue;
    worst = std::max(worst, std::fabs(p - q));
  }
  std::ostringstream s;
  s << changed << " of " << n << " values changed, max abs diff " << worst;
  return s.str();
}

using Add = std::function<void(std::string kind, std::string subject, std::string detail)>;
/// A difference with the fields the summary counts by.
using AddItem = std::function<void(Difference)>;

/// IR version, opsets, producer and metadata.
void diff_model_fields(const Model& a, const Model& b, const Add& add) {
  if (a.ir_version != b.ir_version) add("ir_version", "model", std::to_string(a.ir_version) + " -> " + std::to_string(b.ir_version));
  std::map<std::string, int64_t> oa, ob;
  for (const auto& o : a.opset_import) oa[o.domain == "ai.onnx" ? "" : o.domain] = o.version;
  for (const auto& o : b.opset_import) ob[o.domain == "ai.onnx" ? "" : o.domain] = o.version;
  for (const auto& [dom, v] : oa) {
    const auto it = ob.find(dom);
    const std::string name = dom.empty() ? "ai.onnx" : dom;
    if (it == ob.end()) add("opset", name, std::to_string(v) + " -> (none)");
    else if (it->second != v) add("opset", name, std::to_string(v) + " -> " + std::to_string(it->second));
  }
  for (const auto& [dom, v] : ob)
    if (!oa.count(dom)) add("opset", dom.empty() ? "ai.onnx" : dom, "(none) -> " + std::to_string(v));
  if (a.producer_name != b.producer_name || a.producer_version != b.producer_version)
    add("producer", "model", a.producer_name + " " + a.producer_version + " -> " + b.producer_name + " " + b.producer_version);
  std::map<std::string, std::string> ma, mb;
  for (const auto& p : a.metadata_props) ma[p.key] = p.value;
  for (const auto& p : b.metadata_props) mb[p.key] = p.value;
  for (const auto& [k, v] : ma) {
    if (!mb.count(k)) add("metadata_removed", k, v);
    else if (mb[k] != v) add("metadata_changed", k, v + " -> " + mb[k]);
  }
  for (const auto& [k, v] : mb)
    if (!ma.count(k)) add("metadata_added", k, v);
}

/// Inputs and outputs by name, in order.
void diff_io(const Graph& ga, const Graph& gb, const Add& add) {
  for (const auto* which : {"input", "output"}) {
    const auto& la = std::string(which) == "input" ? ga.inputs : ga.outputs;
    const auto& lb = std::string(which) == "input" ? gb.inputs : gb.outputs;
    std::map<std::string, const ValueInfo*> xa, xb;
    for (const auto& v : la) xa[v.value->name()] = &v;
    for (const auto& v : lb) xb[v.value->name()] = &v;
    for (const auto& [n, v] : xa) {
      if (!xb.count(n)) add(std::string(which) + "_removed", n, type_of(*v));
      else if (type_of(*v) != type_of(*xb[n])) add(std::string(which) + "_changed", n, type_of(*v) + " -> " + type_of(*xb[n]));
    }
    for (const auto& [n, v] : xb)
      if (!xa.count(n)) add(std::string(which) + "_added", n, type_of(*v));
  }
}

/// Nodes of a matched to nodes of b: by (unique, non-empty) name, then by structure.
struct NodeMatch {
  std::vector<std::pair<const Node*, const Node*>> pairs;
  std::vector<const Node*> removed;  ///< of a, unmatched
  std::set<const Node*> matched_b;
};

NodeMatch match_nodes(const Graph& ga, const Graph& gb, ModelDiff& d) {
  NodeMatch m;
  std::map<std::string, const Node*> by_name_b;
  std::map<std::string, int> name_count_b;
  for (const auto& n : gb.nodes()) name_count_b[n->name]++;
  for (const auto& n : gb.nodes())
    if (!n->name.empty() && name_count_b[n->name] == 1) by_name_b[n->name] = n.get();
  std::vector<const Node*> unmatched_a;
  for (const auto& n : ga.nodes()) {
    auto it = n->name.empty() ? by_name_b.end() : by_name_b.find(n->name);
    if (it != by_name_b.end() && it->second->op_type == n->op_type && !m.matched_b.count(it->second)) {
      m.pairs.push_back({n.get(), it->second});
      m.matched_b.insert(it->second);
      ++d.matched_by_name;
    } else {
      unmatched_a.push_back(n.get());
    }
  }
  std::multimap<std::string, const Node*> by_structure_b;
  for (const auto& n : gb.nodes())
    if (!m.matched_b.count(n.get())) by_structure_b.insert({structure(*n), n.get()});
  for (const Node* n : unmatched_a) {
    auto it = by_structure_b.find(structure(*n));
    if (it != by_structure_b.end()) {
      m.pairs.push_back({n, it->second});
      m.matched_b.insert(it->second);
      by_structure_b.erase(it);
      ++d.matched_by_structure;
    } else {
      m.removed.push_back(n);
    }
  }
  return m;
}

/// What changed between two matched nodes: op, inputs, outputs, attributes.
std::vector<std::string> node_changes(const Node& x, const Node& y) {
  std::vector<std::string> changes;
  if (x.op_type != y.op_type || x.domain != y.domain) changes.push_back("op " + x.qualified_op() + " -> " + y.qualified_op());
  if (value_names(x.inputs()) != value_names(y.inputs())) changes.push_back("inputs " + value_names(x.inputs()) + " -> " + value_names(y.inputs()));
  if (value_names(x.outputs()) != value_names(y.outputs())) changes.push_back("outputs " + value_names(x.outputs()) + " -> " + value_names(y.outputs()));
  const auto aa = attr_map(x), ab = attr_map(y);
  for (const auto& [k, v] : aa) {
    auto it = ab.find(k);
    if (it == ab.end()) changes.push_back("attribute " + k + " removed (was " + v + ")");
    else if (it->second != v) changes.push_back("attribute " + k + " " + v + " -> " + it->second);
  }
  for (const auto& [k, v] : ab)
    if (!aa.count(k)) changes.push_back("attribute " + k + " added (" + v + ")");
  return changes;
}

void diff_nodes(const Graph& ga, const Graph& gb, ModelDiff& d, const AddItem& add) {
  d.nodes_a = ga.nodes().size();
  d.nodes_b = gb.nodes().size();
  const NodeMatch m = match_nodes(ga, gb, d);
  {
    // Order: b's positions of the matched pairs in a's order; what is outside their longest
    // increasing run moved.
    std::vector<std::pair<size_t, size_t>> at;
    for (const auto& [x, y] : m.pairs) at.emplace_back(ga.node_index(x), gb.node_index(y));
    std::sort(at.begin(), at.end());
    std::vector<size_t> old_positions;
    for (const auto& [ia, ib] : at) old_positions.push_back(ib);
    d.reordered = moved_count(old_positions);
  }
  const auto node_item = [](const char* kind, const Node& n, std::string detail) {
    Difference x{kind, n.describe(), std::move(detail)};
    x.op_type = n.op_type;
    return x;
  };
  for (const Node* n : m.removed) add(node_item("node_removed", *n, n->op_type + value_names(n->inputs()) + " -> " + value_names(n->outputs())));
  for (const auto& n : gb.nodes())
    if (!m.matched_b.count(n.get())) add(node_item("node_added", *n, n->op_type + value_names(n->inputs()) + " -> " + value_names(n->outputs())));
  for (const auto& [x, y] : m.pairs) {
    const std::vector<std::string> changes = node_changes(*x, *y);
    if (!changes.empty()) add(node_item("node_changed", *x, join(changes)));
  }
}

/// Initializers by name.
void diff_initializers(const Graph& ga, const Graph& gb, const AddItem& add) {
  std::map<std::string, const Tensor*> ia, ib;
  for (const auto& t : ga.initializers()) ia[t->name] = t.get();
  for (const auto& t : gb.initializers()) ib[t->name] = t.get();
  const auto item = [](const char* kind, const std::string& name, std::string detail, const Tensor* a, const Tensor* b) {
    Difference x{kind, name, std::move(detail)};
    if (a) x.bytes_a = static_cast<int64_t>(a->data_bytes());
    if (b) x.bytes_b = static_cast<int64_t>(b->data_bytes());
    return x;
  };
  for (const auto& [n, t] : ia) {
    auto it = ib.find(n);
    if (it == ib.end()) {
      add(item("initializer_removed", n, std::string(data_type_name(t->type())), t, nullptr));
      continue;
    }
    const std::string change = tensor_change(*t, *it->second);
    if (!change.empty()) add(item("initializer_changed", n, change, t, it->second));
  }
  for (const auto& [n, t] : ib)
    if (!ia.count(n)) add(item("initializer_added", n, std::string(data_type_name(t->type())), nullptr, t));
}

}  // namespace

ModelDiff diff_models(const Model& a, const Model& b) {
  ModelDiff d;
  // One sink: the nodes and initializers fill the fields the summary counts by, the rest give
  // kind, subject and detail.
  const AddItem add_item = [&d](Difference x) { d.differences.push_back(std::move(x)); };
  const Add add = [&add_item](std::string kind, std::string subject, std::string detail) {
    add_item({std::move(kind), std::move(subject), std::move(detail)});
  };
  diff_model_fields(a, b, add);
  if (!a.graph || !b.graph) {
    if (!a.graph != !b.graph) add("graph", "model", a.graph ? "removed" : "added");
    return d;
  }
  diff_io(*a.graph, *b.graph, add);
  diff_nodes(*a.graph, *b.graph, d, add_item);
  diff_initializers(*a.graph, *b.graph, add_item);
  return d;
}

DiffSummary summarize_diff(const ModelDiff& diff) {
  DiffSummary s;
  for (const Difference& x : diff.differences) {
    DiffSummary::Nodes* nodes = x.kind == "node_added"     ? &s.nodes_added
                                : x.kind == "node_removed" ? &s.nodes_removed
                                : x.kind == "node_changed" ? &s.nodes_changed
                                                           : nullptr;
    DiffSummary::Initializers* inits = x.kind == "initializer_added"     ? &s.initializers_added
                                       : x.kind == "initializer_removed" ? &s.initializers_removed
                                       : x.kind == "initializer_changed" ? &s.initializers_changed
                                                                         : nullptr;
    if (nodes) {
      ++nodes->count;
      ++nodes->by_op_type[x.op_type];
    } else if (inits) {
      ++inits->count;
      inits->bytes_a += std::max<int64_t>(x.bytes_a, 0);
      inits->bytes_b += std::max<int64_t>(x.bytes_b, 0);
    } else if (x.kind == "opset") {
      s.opsets.emplace_back(x.subject, x.detail);
    } else {
      ++s.other[x.kind];
    }
  }
  return s;
}

}  // namespace onnxtool::ir
