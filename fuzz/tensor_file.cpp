// Fuzz target: reading a tensor file given by --input NAME=FILE, --inputs DIR or --calib-data.
// The first byte chooses the format (.npy or a serialized TensorProto .pb); the rest is the file.
#include <cstdint>

#include "fuzz/target.h"
#include "runner/tensor_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxtool;
  if (size < 1) return 0;
  const std::string path = fuzz::write_scratch(data[0] & 1 ? "tensor.pb" : "tensor.npy", data + 1, size - 1);
  fuzz::expect_clean("tensor_file", [&] { runner::read_tensor_file(path); });
  return 0;
}
