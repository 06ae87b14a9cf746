// `onnxtool inspect MODEL [--json]`: what a model is, at a glance.
#include <iostream>

#include "cli/common.h"
#include "ir/summary.h"

namespace onnxtool::cli {
namespace {

struct InspectOptions {
  std::string model;
  bool json = false;
};

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
  sub->callback([&action, opts] {
    action = [opts] {
      auto loaded = ir::load_model(opts->model);
      const ir::ModelSummary s = ir::summarize(loaded);
      if (opts->json) print_json(to_json(s));
      else print_text(s);
      return kExitOk;
    };
  });
}

}  // namespace onnxtool::cli
