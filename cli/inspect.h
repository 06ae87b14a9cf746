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

}  // namespace onnxtool::cli
