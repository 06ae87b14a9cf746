// Fuzz target: reading a value file given by --input NAME=FILE, --inputs DIR, --expect DIR or
// --calib-data. The first byte chooses the format (odd: a serialized .pb, even: .npy) and, in
// its next two bits, what the model declares the value to be: any tensor (read_tensor_file), a
// sequence of float tensors, an optional float tensor, or a string tensor (read_value_file,
// which reads SequenceProto and OptionalProto too); the rest is the file.
#include <cstdint>

#include "fuzz/target.h"
#include "runner/tensor_io.h"

namespace {

onnxtool::ir::TypeInfo wrapped(onnxtool::ir::TypeInfo::Kind kind, onnxtool::ir::DataType elem) {
  onnxtool::ir::TypeInfo t;
  t.kind = kind;
  t.elem = onnxtool::ir::Box<onnxtool::ir::TypeInfo>(onnxtool::ir::TypeInfo::tensor(elem));
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxtool;
  using Kind = ir::TypeInfo::Kind;
  if (size < 1) return 0;
  const std::string path = fuzz::write_scratch(data[0] & 1 ? "tensor.pb" : "tensor.npy", data + 1, size - 1);
  switch ((data[0] >> 1) & 3) {
    case 0: fuzz::expect_clean("tensor_file", [&] { runner::read_tensor_file(path); }); break;
    case 1:
      fuzz::expect_clean("tensor_file", [&] { runner::read_value_file(path, wrapped(Kind::kSequence, ir::DataType::kFloat)); });
      break;
    case 2:
      fuzz::expect_clean("tensor_file", [&] { runner::read_value_file(path, wrapped(Kind::kOptional, ir::DataType::kFloat)); });
      break;
    default:
      fuzz::expect_clean("tensor_file", [&] { runner::read_value_file(path, ir::TypeInfo::tensor(ir::DataType::kString)); });
  }
  return 0;
}
