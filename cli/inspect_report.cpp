// inspect's report: the model's summary, and on request every node, every initializer and the
// cost of a run, as text or JSON.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cli/common.h"
#include "cli/inspect.h"

namespace onnxtool::cli {
namespace {

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

/// "float32[3,3]": a stored tensor's type and shape.
std::string tensor_text(const ir::Tensor& t) { return std::string(ir::data_type_name(t.type())) + shape_text(t.dims); }

/// An attribute's value, compact: numbers and short lists in full, long lists cut after 8
/// elements, tensors and graphs summarized.
nlohmann::json attribute_json(const ir::Attribute& a) {
  const auto cut = [](const auto& list) {
    nlohmann::json arr = nlohmann::json::array();
    for (size_t i = 0; i < list.size() && i < 8; ++i) arr.push_back(list[i]);
    if (list.size() > 8) arr.push_back("... " + std::to_string(list.size()) + " in all");
    return arr;
  };
  const auto tensor = [](const ir::Tensor& t) {
    return nlohmann::json{{"tensor", tensor_text(t)}, {"bytes", t.data_bytes()}};
  };
  const auto graph = [](const ir::Graph& g) { return nlohmann::json{{"graph", g.name}, {"nodes", g.nodes().size()}}; };
  switch (a.attr_type()) {
    case ir::AttrType::kFloat: return a.f;
    case ir::AttrType::kInt: return a.i;
    case ir::AttrType::kString: return a.s.size() > 64 ? a.s.substr(0, 64) + "..." : a.s;
    case ir::AttrType::kTensor: return a.t ? tensor(*a.t) : nlohmann::json(nullptr);
    case ir::AttrType::kGraph: return a.g ? graph(*a.g) : nlohmann::json(nullptr);
    case ir::AttrType::kFloats: return cut(a.floats);
    case ir::AttrType::kInts: return cut(a.ints);
    case ir::AttrType::kStrings: return cut(a.strings);
    case ir::AttrType::kTensors: {
      nlohmann::json arr = nlohmann::json::array();
      for (const auto& t : a.tensors) arr.push_back(tensor(t));
      return arr;
    }
    case ir::AttrType::kGraphs: {
      nlohmann::json arr = nlohmann::json::array();
      for (const auto& g : a.graphs) arr.push_back(graph(*g));
      return arr;
    }
    default:
      if (!a.ref_attr_name.empty()) return "@" + a.ref_attr_name;
      return std::string(ir::attr_type_name(a.attr_type()));
  }
}


/// The same in one short piece of text: 3, 0.5, "SAME", [1,1], float32[8,3,3,3] (864 B), graph 'body' (4 nodes).
std::string attribute_text(const nlohmann::json& v) {
  if (v.is_object()) {
    if (v.contains("tensor")) return v["tensor"].get<std::string>() + " (" + human_bytes(v["bytes"].get<uint64_t>()) + ")";
    return "graph '" + v["graph"].get<std::string>() + "' (" + std::to_string(v["nodes"].get<size_t>()) + " nodes)";
  }
  if (v.is_array()) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + attribute_text(v[i]);
    return s + "]";
  }
  return v.is_string() ? v.get<std::string>() : v.dump();
}


nlohmann::json io_json(const std::vector<ir::IoSummary>& list) {
  auto arr = nlohmann::json::array();
  for (const auto& io : list) {
    nlohmann::json j = {{"name", io.name}, {"type", io.type}};
    if (io.has_shape) {
      auto dims = nlohmann::json::array();
      for (const auto& d : io.dims) {
        // Static sizes as numbers, symbolic ones by name, unknown as null.
        if (d == "?") dims.push_back(nullptr);
        else if (!d.empty() && d.find_first_not_of("0123456789") == std::string::npos) dims.push_back(std::stoll(d));
        else dims.push_back(d);
      }
      j["shape"] = dims;
    } else {
      j["shape"] = nullptr;
    }
    arr.push_back(j);
  }
  return arr;
}


void print_io(const char* title, const std::vector<ir::IoSummary>& list) {
  std::cout << title << " (" << list.size() << "):\n";
  for (const auto& io : list) {
    std::cout << "  " << io.name << ": " << io.type;
    if (io.has_shape) {
      std::cout << "[";
      for (size_t i = 0; i < io.dims.size(); ++i) std::cout << (i ? "," : "") << io.dims[i];
      std::cout << "]";
    }
    std::cout << "\n";
  }
}


}  // namespace

nlohmann::json summary_json(const ir::ModelSummary& s) {
  nlohmann::json j;
  j["path"] = s.path;
  j["file_size"] = s.file_size;
  j["ir_version"] = s.ir_version;
  j["opset_import"] = nlohmann::json::object();
  for (const auto& [domain, version] : s.opset_import) j["opset_import"][domain] = version;
  j["producer_name"] = s.producer_name;
  j["producer_version"] = s.producer_version;
  j["domain"] = s.domain;
  j["model_version"] = s.model_version;
  j["graph_name"] = s.graph_name;
  j["inputs"] = io_json(s.inputs);
  j["outputs"] = io_json(s.outputs);
  j["node_count"] = s.node_count;
  j["node_count_total"] = s.node_count_total;
  j["subgraph_count"] = s.subgraph_count;
  j["op_counts"] = s.op_counts;
  j["initializer_count"] = s.initializer_count;
  j["constant_tensor_count"] = s.constant_tensor_count;
  j["parameter_count"] = s.parameter_count;
  j["parameter_bytes"] = s.parameter_bytes;
  nlohmann::json by_type = nlohmann::json::object();
  for (const auto& [type, tb] : s.parameters_by_type)
    by_type[type] = {{"tensors", tb.tensors}, {"elements", tb.count}, {"bytes", tb.bytes}};
  j["parameters_by_type"] = by_type;
  j["external_data_files"] = s.external_files;
  j["external_data_bytes"] = s.external_bytes;
  j["functions"] = s.functions;
  nlohmann::json meta = nlohmann::json::array();
  for (const auto& [k, v] : s.metadata) meta.push_back({{"key", k}, {"value", v}});
  j["metadata_props"] = meta;
  return j;
}


void print_summary(const ir::ModelSummary& s) {
  std::cout << "model:        " << s.path << " (" << human_bytes(s.file_size) << ")\n";
  std::cout << "ir_version:   " << s.ir_version << "\n";
  std::cout << "opset_import:";
  for (const auto& [domain, version] : s.opset_import) std::cout << " " << domain << "=" << version;
  std::cout << "\n";
  std::cout << "producer:     " << s.producer_name
            << (s.producer_version.empty() ? "" : " " + s.producer_version) << "\n";
  if (!s.domain.empty() || s.model_version)
    std::cout << "domain:       " << s.domain << " (model_version " << s.model_version << ")\n";
  std::cout << "graph:        " << s.graph_name << "\n";
  print_io("inputs", s.inputs);
  print_io("outputs", s.outputs);
  std::cout << "nodes:        " << s.node_count << " in the main graph, " << s.node_count_total
            << " with " << s.subgraph_count << " subgraph(s)\n";
  std::cout << "initializers: " << s.initializer_count << " (+ " << s.constant_tensor_count
            << " Constant node tensors)\n";
  std::cout << "parameters:   " << s.parameter_count << " (" << human_bytes(s.parameter_bytes)
            << ", initializers and Constant nodes)\n";
  for (const auto& [type, tb] : s.parameters_by_type)
    std::cout << "  " << type << ": " << tb.tensors << " tensors, " << tb.count << " elements, "
              << human_bytes(tb.bytes) << "\n";
  if (!s.external_files.empty()) {
    std::cout << "external data (" << human_bytes(s.external_bytes) << "):\n";
    for (const auto& f : s.external_files) std::cout << "  " << f << "\n";
  }
  if (!s.functions.empty()) {
    std::cout << "functions (" << s.functions.size() << "):\n";
    for (const auto& f : s.functions) std::cout << "  " << f << "\n";
  }
  if (!s.metadata.empty()) {
    std::cout << "metadata:\n";
    for (const auto& [k, v] : s.metadata) std::cout << "  " << k << ": " << v << "\n";
  }
  std::cout << "ops (" << s.op_counts.size() << " types):\n";
  for (const auto& [op, n] : s.op_counts) std::cout << "  " << op << ": " << n << "\n";
}


/// Every node of every graph, its outputs typed by shape inference (declared types where
/// inference cannot tell).
nlohmann::json nodes_json(const std::vector<PlacedGraph>& graphs, const ir::TypeTable& types) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& p : graphs) {
    for (const auto& n : p.graph->nodes()) {
      nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array();
      for (const ir::Value* v : n->inputs()) inputs.push_back(v ? v->name() : "");
      for (const ir::Value* v : n->outputs()) {
        if (!v) {
          outputs.push_back({{"name", ""}, {"type", nullptr}});
          continue;
        }
        const auto it = types.find(v);
        const ir::TypeInfo& t = it != types.end() ? it->second : v->type;
        outputs.push_back({{"name", v->name()},
                           {"type", t.kind == ir::TypeInfo::Kind::kUnset ? nlohmann::json(nullptr) : nlohmann::json(t.to_string())}});
      }
      nlohmann::json attrs = nlohmann::json::object();
      for (const auto& a : n->attributes) attrs[a.name] = attribute_json(a);
      arr.push_back({{"graph", p.path},
                     {"index", p.graph->node_index(n.get())},
                     {"name", n->name},
                     {"op_type", n->op_type},
                     {"domain", n->domain},
                     {"inputs", inputs},
                     {"outputs", outputs},
                     {"attributes", attrs}});
    }
  }
  return arr;
}


void print_nodes(const nlohmann::json& nodes) {
  std::cout << "nodes (" << nodes.size() << "):\n";
  std::string graph = "main";
  for (const auto& n : nodes) {
    if (n["graph"] != graph) {
      graph = n["graph"].get<std::string>();
      std::cout << " in " << graph << ":\n";
    }
    std::cout << "  #" << n["index"].get<size_t>() << " " << (n["name"].get<std::string>().empty() ? "(unnamed)" : n["name"].get<std::string>())
              << ": " << (n["domain"].get<std::string>().empty() ? "" : n["domain"].get<std::string>() + "::")
              << n["op_type"].get<std::string>() << "(";
    for (size_t i = 0; i < n["inputs"].size(); ++i) std::cout << (i ? ", " : "") << n["inputs"][i].get<std::string>();
    std::cout << ") -> ";
    for (size_t i = 0; i < n["outputs"].size(); ++i) {
      const auto& o = n["outputs"][i];
      std::cout << (i ? ", " : "") << o["name"].get<std::string>() << " " << (o["type"].is_null() ? "?" : o["type"].get<std::string>());
    }
    if (!n["attributes"].empty()) {
      std::cout << "  {";
      bool first = true;
      for (const auto& [k, v] : n["attributes"].items()) {
        std::cout << (first ? "" : ", ") << k << "=" << attribute_text(v);
        first = false;
      }
      std::cout << "}";
    }
    std::cout << "\n";
  }
}


nlohmann::json initializers_json(const std::vector<PlacedGraph>& graphs) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& p : graphs)
    for (const auto& t : p.graph->initializers()) {
      std::string location;
      for (const auto& kv : t->external_data)
        if (kv.key == "location") location = kv.value;
      arr.push_back({{"graph", p.path},
                     {"name", t->name},
                     {"type", std::string(ir::data_type_name(t->type()))},
                     {"shape", t->dims},
                     {"bytes", t->data_bytes()},
                     {"external", t->is_external()},
                     {"location", t->is_external() ? nlohmann::json(location) : nlohmann::json(nullptr)}});
    }
  return arr;
}


void print_initializers(const nlohmann::json& list) {
  std::cout << "initializers (" << list.size() << "):\n";
  for (const auto& t : list) {
    std::cout << "  " << t["name"].get<std::string>() << ": " << t["type"].get<std::string>()
              << shape_text(t["shape"].get<std::vector<int64_t>>()) << ", " << human_bytes(t["bytes"].get<uint64_t>());
    if (t["external"].get<bool>()) std::cout << ", external in " << t["location"].get<std::string>();
    if (t["graph"] != "main") std::cout << " (" << t["graph"].get<std::string>() << ")";
    std::cout << "\n";
  }
}

}  // namespace onnxtool::cli

namespace onnxtool::cli {
namespace {

nlohmann::json count_or_null(const std::optional<uint64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

std::string text_of(const nlohmann::json& count) { return count.is_null() ? "?" : human_count(count.get<uint64_t>()); }

std::string bytes_of(const nlohmann::json& bytes) { return bytes.is_null() ? "?" : human_bytes(bytes.get<uint64_t>()); }

std::string percent(double share) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * share);
  return buf;
}

}  // namespace

nlohmann::json cost_json(const runner::ModelCost& cost, const std::vector<PlacedGraph>& graphs,
                         const std::map<std::string, std::vector<int64_t>>& input_shapes) {
  std::map<const ir::Graph*, std::string> paths;
  for (const auto& p : graphs) paths[p.graph] = p.path;
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& c : cost.nodes) {
    const ir::Node& n = *c.node;
    nlohmann::json shapes = nlohmann::json::array();
    for (const ir::Value* v : n.outputs())
      shapes.push_back(v && v->type.is_tensor() && v->type.shape ? v->type.shape->to_string() : "?");
    nodes.push_back({{"graph", paths[n.graph()]},
                     {"index", n.graph()->node_index(&n)},
                     {"name", node_label(n)},
                     {"op_type", n.op_type},
                     {"domain", n.domain},
                     {"output_shapes", shapes},
                     {"macs", count_or_null(c.macs)},
                     {"flops", count_or_null(c.flops)},
                     {"unknown", json_or_null(c.unknown)},
                     {"parameters", c.params},
                     {"parameter_bytes", c.param_bytes},
                     {"input_bytes", count_or_null(c.input_bytes)},
                     {"output_bytes", count_or_null(c.output_bytes)}});
  }
  nlohmann::json by_op = nlohmann::json::object();
  for (const auto& [op, t] : cost.by_op)
    by_op[op] = {{"nodes", t.nodes},
                 {"unknown", t.unknown},
                 {"macs", t.macs},
                 {"flops", t.flops},
                 {"macs_share", cost.macs ? static_cast<double>(t.macs) / static_cast<double>(cost.macs) : 0.0}};
  return {{"input_shapes", input_shapes},
          {"macs", cost.macs},
          {"flops", cost.flops},
          {"parameters", cost.params},
          {"parameter_bytes", cost.param_bytes},
          {"unknown_nodes", cost.unknown_nodes},
          {"subgraph_nodes", cost.subgraph_nodes},
          {"peak_activation_bytes", count_or_null(cost.peak_bytes)},
          {"peak_node", cost.peak_node ? nlohmann::json(node_label(*cost.peak_node)) : nlohmann::json(nullptr)},
          {"peak_unsized_values", cost.peak_unsized},
          {"peak_unknown", json_or_null(cost.peak_unknown)},
          {"by_op_type", by_op},
          {"nodes", nodes}};
}


void print_cost(const nlohmann::json& cost, size_t top) {
  std::string dims;
  for (const auto& [name, d] : cost["input_shapes"].items()) {
    std::string list;
    for (int64_t x : d.get<std::vector<int64_t>>()) list += (list.empty() ? "" : ",") + std::to_string(x);
    dims += (dims.empty() ? "" : " ") + name + "=" + list;
  }
  std::cout << "cost (input dims: " << (dims.empty() ? "as the model declares them" : dims) << "):\n";
  const size_t unknown = cost["unknown_nodes"].get<size_t>();
  const std::string over_known = unknown ? " over the nodes of known cost" : "";
  std::cout << "  MACs:         " << human_count(cost["macs"].get<uint64_t>()) << over_known << "\n";
  std::cout << "  FLOPs:        " << human_count(cost["flops"].get<uint64_t>())
            << " (2 per MAC, and the other ops' per-element counts)\n";
  std::cout << "  parameters:   " << human_count(cost["parameters"].get<uint64_t>()) << " ("
            << human_bytes(cost["parameter_bytes"].get<uint64_t>()) << ", each weight once)\n";
  std::cout << "  peak memory:  ";
  if (cost["peak_activation_bytes"].is_null()) {
    std::cout << "unknown (" << cost["peak_unknown"].get<std::string>() << ")\n";
  } else {
    const size_t unsized = cost["peak_unsized_values"].get<size_t>();
    std::cout << (unsized ? "at least " : "") << human_bytes(cost["peak_activation_bytes"].get<uint64_t>())
              << " of activations alive at once in the runner's plan";
    if (!cost["peak_node"].is_null()) std::cout << ", at node " << cost["peak_node"].get<std::string>();
    if (unsized) std::cout << " (" << unsized << " value(s) of unknown size left out)";
    std::cout << "\n";
  }
  if (const size_t sub = cost["subgraph_nodes"].get<size_t>())
    std::cout << "  subgraphs:    " << sub << " node(s) of If/Loop/Scan bodies, each counted once\n";
  if (unknown) std::cout << "  unknown:      " << unknown << " node(s) of unknown cost, listed below\n";

  std::cout << "by op type (" << cost["by_op_type"].size() << "):\n";
  std::vector<std::pair<std::string, nlohmann::json>> ops;
  for (const auto& [op, t] : cost["by_op_type"].items()) ops.emplace_back(op, t);
  std::stable_sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) {
    return a.second["flops"].template get<uint64_t>() > b.second["flops"].template get<uint64_t>();
  });
  std::printf("  %-24s %6s %10s %7s %10s\n", "op", "nodes", "MACs", "share", "FLOPs");
  for (const auto& [op, t] : ops)
    std::printf("  %-24s %6zu %10s %7s %10s%s\n", op.c_str(), t["nodes"].get<size_t>(),
                human_count(t["macs"].get<uint64_t>()).c_str(), percent(t["macs_share"].get<double>()).c_str(),
                human_count(t["flops"].get<uint64_t>()).c_str(),
                t["unknown"].get<size_t>() ? (" (" + std::to_string(t["unknown"].get<size_t>()) + " unknown)").c_str() : "");

  const nlohmann::json& nodes = cost["nodes"];
  std::vector<size_t> order(nodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto macs = [&nodes](size_t i) { return nodes[i]["macs"].is_null() ? 0 : nodes[i]["macs"].get<uint64_t>(); };
  if (top) {
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return macs(a) > macs(b); });
    if (order.size() > top) order.resize(top);
    std::cout << "top " << order.size() << " of " << nodes.size() << " nodes by MACs (--top 0 lists every node):\n";
  } else {
    std::cout << "nodes (" << nodes.size() << ", in the runner's order):\n";
  }
  std::printf("  %-32s %-18s %-20s %9s %9s %9s %19s\n", "node", "op", "output", "MACs", "FLOPs", "params", "in/out bytes");
  for (size_t i : order) {
    const auto& n = nodes[i];
    std::string name = n["name"].get<std::string>();
    if (n["graph"] != "main") name = n["graph"].get<std::string>() + "/" + name;
    const std::string shape = n["output_shapes"].empty() ? "" : n["output_shapes"][0].get<std::string>();
    std::printf("  %-32s %-18s %-20s %9s %9s %9s %19s\n", name.c_str(), n["op_type"].get<std::string>().c_str(), shape.c_str(),
                text_of(n["macs"]).c_str(), text_of(n["flops"]).c_str(), human_count(n["parameters"].get<uint64_t>()).c_str(),
                (bytes_of(n["input_bytes"]) + " / " + bytes_of(n["output_bytes"])).c_str());
  }
  if (unknown) {
    std::cout << "unknown cost (" << unknown << "; --input-shape fixes the dims of inputs):\n";
    size_t shown = 0;
    for (const auto& n : nodes) {
      if (n["unknown"].is_null()) continue;
      if (top && shown == top) {
        std::cout << "  ... " << unknown - shown << " more (--top 0 or --json lists them all)\n";
        break;
      }
      std::cout << "  " << n["name"].get<std::string>() << " (" << n["op_type"].get<std::string>()
                << "): " << n["unknown"].get<std::string>() << "\n";
      ++shown;
    }
  }
}

}  // namespace onnxtool::cli
