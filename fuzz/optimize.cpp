// Fuzz target: `onnxtool optimize` without verification: load, sort, the validity gate, then every
// pass of the pipeline (constant folding runs the CPU kernels), then encoding the result.
#include <cstdint>

#include "checker/checker.h"
#include "fuzz/target.h"
#include "ir/model_io.h"
#include "passes/pass.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxtool;
  const std::string path = fuzz::write_scratch("model.onnx", data, size);
  fuzz::expect_clean("optimize", [&] {
    ir::LoadedModel loaded = ir::load_model(path);
    ir::for_each_graph(loaded.model, [](ir::Graph& g) { g.topological_sort(); });
    ir::DiagnosticSink sink;
    checker::check_model(loaded.model, sink);
    if (sink.error_count()) return;  // the CLI refuses an invalid model unless --force
    passes::OptimizeOptions options;
    // Folding stays cheap per input; the limit is what is tested, not its default size.
    options.fold_max_bytes = int64_t{1} << 20;
    passes::optimize(loaded.model, options);
    ir::serialize_model(loaded.model);
  });
  return 0;
}
