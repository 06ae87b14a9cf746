// `onnxtool inspect MODEL [--json] [--nodes] [--initializers]`: what a model is, at a glance, and
// on request every node (with inferred output types) and every initializer.
#include <iostream>
#include <sstream>
#include <unordered_set>

#include "cli/common.h"
#include "ir/shape_inference.h"
#include "ir/summary.h"

namespace onnxtool::cli {
namespace {

struct InspectOptions {
  std::string model;
  bool json = false;
  bool nodes = false;
  bool initializers = false;
};

/// One graph of the model with its place: "main", "main/loop:body".
struct PlacedGraph {
  ir::Graph* graph;
  std::string path;
};

std::vector<PlacedGraph> placed_graphs(ir::Graph& main) {
  std::vector<PlacedGraph> out;
  std::vector<PlacedGraph> stack{{&main, "main"}};
  while (!stack.empty()) {
    PlacedGraph p = stack.back();
    stack.pop_back();
    out.push_back(p);
    const auto& nodes = p.graph->nodes();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      const ir::Node& n = **it;
      const std::string label = n.name.empty() ? n.op_type + "#" + std::to_string(p.graph->node_index(&n)) : n.name;
      for (auto a = n.attributes.rbegin(); a != n.attributes.rend(); ++a) {
        if (a->g) stack.push_back({a->g.get(), p.path + "/" + label + ":" + a->name});
        for (size_t k = a->graphs.size(); k-- > 0;)
          stack.push_back({a->graphs[k].get(), p.path + "/" + label + ":" + a->name + "[" + std::to_string(k) + "]"});
      }
    }
  }
  return out;
}

/// The first use of a value before its producer, in graph order: "node 'b' (Relu) uses 't'
/// before node 'a' (Conv) produces it", with the graph's path; "" when every graph is sorted.
std::string first_unsorted(const std::vector<PlacedGraph>& graphs, std::string* where) {
  for (const auto& p : graphs) {
    std::unordered_set<const ir::Node*> done;
    for (const auto& n : p.graph->nodes()) {
      std::vector<ir::Value*> read(n->inputs().begin(), n->inputs().end());
      for (ir::Value* v : p.graph->implicit_inputs(n.get())) read.push_back(v);
      for (const ir::Value* v : read) {
        if (!v || v->graph() != p.graph || !v->producer() || done.count(v->producer()) || v->producer() == n.get()) continue;
        *where = p.path;
        return n->describe() + " uses '" + v->name() + "' before " + v->producer()->describe() + " produces it";
      }
      done.insert(n.get());
    }
  }
  return "";
}

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

/// Op counts of the main graph alone and of its subgraphs (If/Loop/Scan bodies) alone.
std::pair<std::map<std::string, size_t>, std::map<std::string, size_t>> split_op_counts(const std::vector<PlacedGraph>& graphs) {
  std::map<std::string, size_t> main, sub;
  for (const auto& p : graphs)
    for (const auto& n : p.graph->nodes()) (p.path == "main" ? main : sub)[n->qualified_op()]++;
  return {main, sub};
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

nlohmann::json to_json(const ir::ModelSummary& s) {
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

void print_text(const ir::ModelSummary& s) {
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

}  // namespace

void register_inspect(CLI::App& app, Action& action) {
  auto opts = std::make_shared<InspectOptions>();
  CLI::App* sub = app.add_subcommand("inspect", "Summarize a model: versions, I/O, ops, weights");
  sub->add_option("MODEL", opts->model, "model file")->required();
  sub->add_flag("--json", opts->json, "print one JSON document");
  sub->add_flag("--nodes", opts->nodes, "list every node: op, inputs, outputs with inferred types, attributes");
  sub->add_flag("--initializers", opts->initializers, "list every initializer: type, shape, bytes, external or not");
  sub->callback([&action, opts] {
    action = [opts] {
      auto loaded = ir::load_model(opts->model);
      const ir::ModelSummary s = ir::summarize(loaded);
      if (!loaded.model.graph) {
        if (opts->json) print_json(to_json(s));
        else print_text(s);
        return kExitOk;
      }
      const std::vector<PlacedGraph> graphs = placed_graphs(*loaded.model.graph);
      std::string unsorted_graph;
      const std::string unsorted = first_unsorted(graphs, &unsorted_graph);
      const std::string fix = "onnxtool optimize " + opts->model + " -o OUT --passes sort_topologically";
      const auto [main_ops, sub_ops] = split_op_counts(graphs);
      nlohmann::json nodes, initializers;
      if (opts->nodes) {
        ir::DiagnosticSink ignored;  // contradictions are `onnxtool check`'s to report
        nodes = nodes_json(graphs, ir::infer_types(loaded.model, ignored));
      }
      if (opts->initializers) initializers = initializers_json(graphs);
      if (opts->json) {
        nlohmann::json j = to_json(s);
        j["main_graph_op_counts"] = main_ops;
        j["subgraph_op_counts"] = sub_ops;
        j["topologically_sorted"] = unsorted.empty();
        j["unsorted"] = unsorted.empty() ? nlohmann::json(nullptr)
                                         : nlohmann::json{{"graph", unsorted_graph}, {"first", unsorted}, {"fix", fix}};
        if (opts->nodes) j["nodes"] = nodes;
        if (opts->initializers) j["initializers"] = initializers;
        print_json(j);
        return kExitOk;
      }
      print_text(s);
      if (!sub_ops.empty()) {
        std::cout << "  of which in subgraphs (" << sub_ops.size() << " types):\n";
        for (const auto& [op, n] : sub_ops) std::cout << "    " << op << ": " << n << "\n";
      }
      if (!unsorted.empty())
        std::cout << "order:        not topologically sorted (" << unsorted_graph << ": " << unsorted << "); fix: " << fix << "\n";
      if (opts->nodes) print_nodes(nodes);
      if (opts->initializers) print_initializers(initializers);
      return kExitOk;
    };
  });
}

}  // namespace onnxtool::cli
