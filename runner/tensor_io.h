// Reading and writing runtime values: tensors as .npy (NumPy format 1.0-3.0) or .pb (serialized
// TensorProto), sequences and optionals as serialized SequenceProto / OptionalProto .pb files.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "ir/type.h"
#include "runner/tensor.h"

namespace onnxtool::ir {
class OutputFile;
}

namespace onnxtool::runner {

/// Reads a .npy file: little-endian, C order, numeric types, bool, float16, complex, and strings
/// (unicode '<U' arrays, UTF-32; byte strings '|S'), kept as UTF-8. Throws Error(kInput) with one
/// line naming the file for anything else or malformed content.
Tensor read_npy(const std::string& path);
/// True when .npy can hold tensors of this element type (write_npy writes them).
bool npy_holds(DataType type);
/// Writes a .npy file (format 1.0, or 2.0 when the header needs it) atomically. Strings become a
/// '<U' array as wide as the longest; one that is not valid UTF-8 is refused (Error kUsage).
void write_npy(const std::string& path, const Tensor& tensor);
/// The same into an open file, which the caller commits (several outputs written all or none).
void write_npy(ir::OutputFile& file, const Tensor& tensor);

/// Writes a value as .pb: a tensor as TensorProto, a sequence as SequenceProto, an optional as
/// OptionalProto (an empty one with elem_type UNDEFINED); `name` goes in the message's name.
void write_pb(ir::OutputFile& file, const Value& value, const std::string& name);

/// Reads a value file as the model declares it (`declared`: the input's or output's type; an
/// unset kind reads a tensor): a tensor from .npy or a TensorProto .pb; a sequence of tensors
/// from a SequenceProto .pb; an optional from an OptionalProto .pb, or from a tensor file (a
/// present optional). The ONNX test data's bfloat16 stored as uint16 is read as bfloat16 where
/// the model declares bfloat16. Throws Error(kInput) with one line naming the file when it is
/// malformed or holds another kind of value than `declared` (a sequence for a tensor, mixed
/// element types in a sequence, a map: the runner has no map values).
Value read_value_file(const std::string& path, const ir::TypeInfo& declared);

/// Reads a serialized TensorProto (.pb), as the ONNX test suite stores its data.
Tensor read_pb(const std::string& path);

/// Reads .npy or .pb by extension.
Tensor read_tensor_file(const std::string& path);

/// The file name used for a tensor named `name`: characters outside [A-Za-z0-9_.-] become '_'.
std::string safe_file_name(const std::string& name);

/// File stems for values written side by side in one folder (run --output-dir, run --dump-dir,
/// read back by --expect). claim(name) gives the name's safe_file_name, or, when an earlier name
/// took that stem ("a/b" and "a_b" both give "a_b"), the stem with "_1", "_2", ... appended.
/// Stems are unique without their extension, so NAME.npy and NAME.pb never meet either.
class FileStems {
 public:
  explicit FileStems(std::set<std::string> reserved = {}) : taken_(std::move(reserved)) {}
  std::string claim(const std::string& name);

 private:
  std::set<std::string> taken_;
};

/// Where a graph output's reference file is in `dir`, as run --expect and compare --expect look
/// for it. In a test_data_set_N folder (one holding output_0.pb) it is output_<position>.pb by the
/// output's position among the graph outputs (nothing when the value is not a graph output);
/// elsewhere <stem>.npy or <stem>.pb, the files run --output-dir writes. `path` is empty when no
/// such file exists; `looked_for` names what was looked for, for the error line.
struct ReferenceFile {
  std::string path;
  std::string looked_for;
};
ReferenceFile find_reference_file(const std::string& dir, const std::string& stem, std::optional<size_t> position);

}  // namespace onnxtool::runner
