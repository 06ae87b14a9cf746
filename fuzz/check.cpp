// Fuzz target: `onnxtool check` on a model file: load (tensor and external-data problems become
// diagnostics), every checker rule, and shape and type inference.
#include <cstdint>

#include "checker/checker.h"
#include "fuzz/target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxtool;
  const std::string path = fuzz::write_scratch("model.onnx", data, size);
  fuzz::expect_clean("check", [&] {
    checker::CheckOptions options;
    options.infer_shapes = true;
    checker::check_file(path, options);
  });
  return 0;
}
