// `onnxtool inspect`: the graphs of a model with their places, and the report of what they hold
// (inspect_report.cpp).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "ir/shape_inference.h"
#include "ir/summary.h"
#include "runner/cost.h"

namespace onnxtool::cli {

/// One graph of the model with its place: "main", "main/loop:body".
struct PlacedGraph {
  ir::Graph* graph;
  std::string path;
};

/// The model's summary (ir::summarize) for --json.
nlohmann::json summary_json(const ir::ModelSummary& s);
/// The same as text.
void print_summary(const ir::ModelSummary& s);

/// Every node of every graph, its outputs typed by shape inference (`types`; declared types where
/// inference cannot tell), for --json; print_nodes prints that list.
nlohmann::json nodes_json(const std::vector<PlacedGraph>& graphs, const ir::TypeTable& types);
void print_nodes(const nlohmann::json& nodes);

/// Every initializer of every graph, for --json; print_initializers prints that list.
nlohmann::json initializers_json(const std::vector<PlacedGraph>& graphs);
void print_initializers(const nlohmann::json& list);

/// The cost of a run (runner::model_cost) for --json, under the input dims it assumed;
/// print_cost prints it, its node table cut to the `top` nodes of most MACs (0: all).
nlohmann::json cost_json(const runner::ModelCost& cost, const std::vector<PlacedGraph>& graphs,
                         const std::map<std::string, std::vector<int64_t>>& input_shapes);
void print_cost(const nlohmann::json& cost, size_t top);

/// `inspect --graph OUT`: the file, the part of the main graph drawn (--from/--to, the cut of
/// `onnxtool extract`), the input dims its shapes assume, the clustering (ir::DotOptions) and the
/// seconds dot may take to lay out an .svg (cli/inspect_graph.cpp).
struct GraphRequest {
  std::string output;
  std::vector<std::string> from, to;
  std::map<std::string, std::vector<int64_t>> input_shapes;
  int cluster_depth = -1;
  double time_limit = 300;
  bool time_limit_given = false;  ///< --time-limit was given: refused unless OUT is .svg
};
/// Refuses (Error kUsage) what needs no model to refuse: an extension other than .dot and .svg,
/// an .svg without Graphviz's dot on PATH, --from without --to, --time-limit without .svg.
void check_graph_request(const GraphRequest& r);

struct GraphWritten {
  std::string format;  ///< "dot" or "svg"
  size_t nodes = 0, edges = 0, clusters = 0;
  uint64_t bytes = 0;
};
/// Loads the model at `model_path` afresh (the cut and the dims change it), draws it and writes
/// OUT whole or not at all.
GraphWritten write_graph(const std::string& model_path, const GraphRequest& r);

}  // namespace onnxtool::cli
