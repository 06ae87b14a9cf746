// Node patterns where a runtime departs from the ONNX spec once they run in float16: one table,
// each row the pattern, the runtime version it was seen in and its entry in
// docs/runtime_departures.md. `convert --to-fp16` keeps the matching nodes in float32 unless
// --allow-runtime-bugs. A row goes when the runtime no longer departs
// (tests/cli/ort_runtime_departures.sh fails then, saying so).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnxtool::convert {

struct RuntimeDeparture {
  const char* pattern;  ///< its name in reports ("peak_picking")
  const char* runtime;  ///< the runtime and version it was seen in ("onnxruntime 1.30")
  const char* doc;      ///< where it is described ("docs/runtime_departures.md#...")
  /// The nodes of `graph` to keep in float32, in graph order; none when the pattern is absent.
  /// Reads the model before conversion (float32 values).
  std::vector<const ir::Node*> (*match)(const ir::Graph& graph);
};

/// The table.
const std::vector<RuntimeDeparture>& runtime_departures();

}  // namespace onnxtool::convert
