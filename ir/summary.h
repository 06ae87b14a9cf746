// The facts `onnxtool inspect` reports about a model, computed from the IR.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/model_io.h"

namespace onnxtool::ir {

struct IoSummary {
  std::string name;
  std::string type;  ///< "float", "seq(float[?])", ... (element or container type)
  std::vector<std::string> dims;  ///< static sizes, symbolic names, "?" for unknown
  bool has_shape = false;
};

struct TypeBytes {
  uint64_t count = 0;  ///< elements
  uint64_t bytes = 0;
  uint64_t tensors = 0;
};

struct ModelSummary {
  std::string path;
  uint64_t file_size = 0;
  int64_t ir_version = 0;
  std::vector<std::pair<std::string, int64_t>> opset_import;
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string graph_name;
  /// Graph inputs that are not initializers (what a caller must feed).
  std::vector<IoSummary> inputs;
  std::vector<IoSummary> outputs;
  size_t node_count = 0;        ///< main graph
  size_t node_count_total = 0;  ///< main graph and all its subgraphs
  size_t subgraph_count = 0;
  std::map<std::string, size_t> op_counts;  ///< "domain::op" (plain op for the default domain)
  size_t initializer_count = 0;             ///< dense and sparse, all graphs
  /// Constant nodes holding a tensor (`value` attribute), all graphs: exporters such as
  /// Paddle2ONNX keep the weights there instead of in initializers.
  size_t constant_tensor_count = 0;
  /// Elements and bytes of the weights: initializers (dense, and sparse values) plus the tensors
  /// of Constant nodes, in every graph.
  uint64_t parameter_count = 0;
  uint64_t parameter_bytes = 0;
  std::map<std::string, TypeBytes> parameters_by_type;
  std::vector<std::string> external_files;
  uint64_t external_bytes = 0;
  std::vector<std::string> functions;  ///< "domain::name"
  std::vector<std::pair<std::string, std::string>> metadata;
};

ModelSummary summarize(const LoadedModel& loaded);

}  // namespace onnxtool::ir
