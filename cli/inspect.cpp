// `onnxtool inspect MODEL [--json] [--nodes] [--initializers] [--cost [--input-shape ...] [--top N]]
// [--graph OUT.dot|OUT.svg [--from T,... --to T,...] [--cluster-depth N]]`: what a model is, at a
// glance, and on request every node (with inferred output types), every initializer, what it
// costs to run and a drawing of its graph (cli/inspect_graph.cpp).
#include <iostream>
#include <optional>
#include <set>
#include <unordered_set>

#include "cli/common.h"
#include "cli/flags.h"
#include "cli/inspect.h"
#include "ir/model_io.h"
#include "runner/cost.h"

namespace onnxtool::cli {
namespace {

struct InspectOptions {
  std::string model;
  bool json = false;
  bool nodes = false;
  bool initializers = false;
  bool cost = false;
  std::vector<std::string> input_shapes;
  size_t top = 10;
  GraphRequest graph;
  std::set<std::string> given;
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
      const std::string label = node_label(n);
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


/// Op counts of the main graph alone and of its subgraphs (If/Loop/Scan bodies) alone.
std::pair<std::map<std::string, size_t>, std::map<std::string, size_t>> split_op_counts(const std::vector<PlacedGraph>& graphs) {
  std::map<std::string, size_t> main, sub;
  for (const auto& p : graphs)
    for (const auto& n : p.graph->nodes()) (p.path == "main" ? main : sub)[n->qualified_op()]++;
  return {main, sub};
}


int run_inspect(const InspectOptions& o) {
  const bool graph = o.given.count("--graph") > 0;
  if (!o.input_shapes.empty() && !o.cost && !graph)
    throw_usage_error("--input-shape sizes the inputs --cost and --graph assume; pass --cost or --graph");
  for (const char* flag : {"--from", "--to", "--cluster-depth", "--time-limit"})
    if (o.given.count(flag) && !graph) throw_usage_error(std::string(flag) + " goes with --graph OUT.dot|OUT.svg");
  if (o.given.count("--cluster-depth") && o.graph.cluster_depth < 0)
    throw_usage_error("--cluster-depth " + std::to_string(o.graph.cluster_depth) + ": levels of name prefix, 0 or more");
  GraphRequest request = o.graph;
  // Refused before the model is read: a missing dot should not cost the wait for a large model.
  if (graph) {
    request.input_shapes = parse_shapes("--input-shape", o.input_shapes);
    request.time_limit_given = o.given.count("--time-limit") > 0;
    check_graph_request(request);
  }
  auto loaded = ir::load_model(o.model);
  const ir::ModelSummary s = ir::summarize(loaded);
  if (!loaded.model.graph) {
    if (graph) throw_input_error(o.model + ": the model has no graph to draw");
    if (o.json) print_json(summary_json(s));
    else print_summary(s);
    return kExitOk;
  }
  std::optional<GraphWritten> drawn;
  if (graph) drawn = write_graph(o.model, request);
  const std::vector<PlacedGraph> graphs = placed_graphs(*loaded.model.graph);
  std::string unsorted_graph;
  const std::string unsorted = first_unsorted(graphs, &unsorted_graph);
  const std::string fix = "onnxtool optimize " + o.model + " -o OUT --passes sort_topologically";
  const auto [main_ops, sub_ops] = split_op_counts(graphs);
  nlohmann::json nodes, initializers, cost;
  if (o.cost) {
    runner::CostOptions options;
    options.input_shapes = parse_shapes("--input-shape", o.input_shapes);
    cost = cost_json(runner::model_cost(loaded.model, options), graphs, options.input_shapes);
  }
  if (o.nodes) {
    ir::DiagnosticSink ignored;  // contradictions are `onnxtool check`'s to report
    nodes = nodes_json(graphs, ir::infer_types(loaded.model, ignored));
  }
  if (o.initializers) initializers = initializers_json(graphs);
  if (o.json) {
    nlohmann::json j = summary_json(s);
    j["main_graph_op_counts"] = main_ops;
    j["subgraph_op_counts"] = sub_ops;
    j["topologically_sorted"] = unsorted.empty();
    j["unsorted"] = unsorted.empty() ? nlohmann::json(nullptr)
                                     : nlohmann::json{{"graph", unsorted_graph}, {"first", unsorted}, {"fix", fix}};
    if (o.nodes) j["nodes"] = nodes;
    if (o.initializers) j["initializers"] = initializers;
    if (o.cost) j["cost"] = cost;
    if (drawn)
      j["graph"] = {{"path", o.graph.output}, {"format", drawn->format}, {"nodes", drawn->nodes},
                    {"edges", drawn->edges}, {"clusters", drawn->clusters}, {"bytes", drawn->bytes}};
    print_json(j);
    return kExitOk;
  }
  print_summary(s);
  if (!sub_ops.empty()) {
    std::cout << "  of which in subgraphs (" << sub_ops.size() << " types):\n";
    for (const auto& [op, n] : sub_ops) std::cout << "    " << op << ": " << n << "\n";
  }
  if (!unsorted.empty())
    std::cout << "order:        not topologically sorted (" << unsorted_graph << ": " << unsorted << "); fix: " << fix << "\n";
  if (o.nodes) print_nodes(nodes);
  if (o.initializers) print_initializers(initializers);
  if (o.cost) print_cost(cost, o.top);
  if (drawn)
    std::cout << "graph:        wrote " << o.graph.output << " (" << drawn->nodes << " nodes, " << drawn->edges << " edges"
              << (drawn->clusters ? ", " + std::to_string(drawn->clusters) + " clusters" : std::string()) << ", "
              << human_bytes(drawn->bytes) << ")\n";
  return kExitOk;
}

}  // namespace

void register_inspect(CLI::App& app, Action& action) {
  auto opts = std::make_shared<InspectOptions>();
  CLI::App* sub = app.add_subcommand("inspect", "Summarize a model: versions, I/O, ops, weights");
  sub->add_option("MODEL", opts->model, "model file")->required();
  sub->add_flag("--json", opts->json, "print one JSON document");
  sub->add_flag("--nodes", opts->nodes, "list every node: op, inputs, outputs with inferred types, attributes");
  sub->add_flag("--initializers", opts->initializers, "list every initializer: type, shape, bytes, external or not");
  sub->add_flag("--cost", opts->cost,
                "what a run costs: MACs, FLOPs, parameters and activation bytes per node, totals by op type, the peak of "
                "activation memory in the runner's plan (conventions: docs/commands/inspect.md)");
  sub->add_option("--input-shape", opts->input_shapes,
                  "NAME=D1,D2,... dims of an input for --cost and --graph (repeatable); nodes whose cost needs a dim left "
                  "symbolic are listed as unknown");
  sub->add_option("--top", opts->top, "with --cost: the N nodes of most MACs in the text table (0: every node; --json lists all)")
      ->capture_default_str();
  sub->add_option("--graph", opts->graph.output,
                  "OUT.dot|OUT.svg: draw the main graph, as Graphviz text or laid out by Graphviz's dot (which .svg needs); "
                  "nodes with their op, name, key attributes and weights, edges with their tensor's type");
  sub->add_option("--from", opts->graph.from, "with --graph: draw only from these tensors (comma-separated; as extract)")
      ->delimiter(',');
  sub->add_option("--to", opts->graph.to, "with --graph: ... to these tensors (comma-separated)")->delimiter(',');
  sub->add_option("--cluster-depth", opts->graph.cluster_depth,
                  "with --graph: group nodes in boxes by N levels of their names' /- and .-separated prefix (0: none; "
                  "default: 3 above 200 nodes, none below)");
  sub->add_option("--time-limit", opts->graph.time_limit, "with --graph OUT.svg: seconds dot may take to lay out the graph")
      ->capture_default_str();
  sub->callback([&action, opts, sub] {
    opts->given = given_options(*sub);
    action = [opts] { return run_inspect(*opts); };
  });
}

}  // namespace onnxtool::cli
