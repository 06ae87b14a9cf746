// Loading and saving models: the zero-copy wire codec, external data, atomic writes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnxtool::ir {

/// A protobuf message (and so a model file) cannot exceed 2 GiB - 1.
constexpr uint64_t kMaxProtoBytes = 0x7fffffffULL;

struct LoadOptions {
  /// Resolve and map external data files (off: the tensors keep only their references).
  bool load_external_data = true;
  /// Check every tensor's data against its dims and type while loading.
  bool validate_tensors = true;
  /// When set, a tensor whose data or external reference is invalid is reported here (with the
  /// one-line message naming file and tensor) and loading goes on; when unset, it throws.
  std::function<void(const Tensor& tensor, const std::string& message)> on_tensor_error;
};

/// What a load saw, for inspect and for save's safety checks.
struct LoadInfo {
  std::string path;
  std::string base_dir;
  uint64_t file_size = 0;
  /// External data files referred to, in first-reference order (locations as written).
  std::vector<std::string> external_files;
};

/// A loaded model with where it came from.
struct LoadedModel {
  Model model;
  LoadInfo info;
};

/// Loads an ONNX model file. The file is memory-mapped and raw tensor data stays a view into the
/// mapping. Throws Error(kInput) with one line naming the file (and tensor) on any problem.
LoadedModel load_model(const std::string& path, const LoadOptions& options = {});

/// Refuses (Error kUsage, one line) an output model that would replace a file `input` was read
/// from: `output` equal to the input model (unless `in_place`) or to one of its external data
/// files; its side file (`data_file`, default "<output name>.data", beside `output`) equal to
/// the input model or (unless `in_place`) one of its external data files. Every command that
/// writes a model calls it before it starts work. Same files are found by device and inode, so
/// links and other spellings of a path count. Both paths are claimed as the command's outputs
/// (ir/command_files.h); with `in_place` the input's files are released for writing.
void check_output_paths(const LoadInfo& input, const std::string& output, const std::string& data_file, bool in_place);
/// Refuses (Error kUsage) writing `path` (a report, a tensor file; `what` names the flag) over
/// the input model or one of its external data files.
void check_not_input(const LoadInfo& input, const std::string& path, const std::string& what);

/// Parses a model from bytes in memory (views keep `data` alive). `label` names it in errors;
/// external data is resolved against `base_dir` (empty: external data is not loaded).
Model parse_model(const Bytes& data, const std::string& label, const std::string& base_dir,
                  const LoadOptions& options = {}, LoadInfo* info = nullptr);

enum class ExternalData {
  kKeep,         ///< tensors stored externally stay external (in a fresh file next to the output)
  kExternalize,  ///< initializers of at least size_threshold bytes go to the side file
  kInline,       ///< every tensor's data is written inside the model file
};

struct SaveOptions {
  ExternalData external = ExternalData::kKeep;
  uint64_t size_threshold = 1024;
  /// Side file name (relative to the output's directory); default "<output file name>.data".
  std::string data_file;
};

struct SaveReport {
  uint64_t model_bytes = 0;
  uint64_t data_bytes = 0;
  std::string data_path;  ///< empty when no side file was written
  size_t external_tensors = 0;
  bool auto_external = false;  ///< moved to external data because the model passed 2 GiB
};

/// Serializes a model to `path` atomically (temporary file beside it, fsync, rename), with its
/// external data side file when needed. Nothing is left at `path` on failure.
SaveReport save_model(const Model& model, const std::string& path, const SaveOptions& options = {});

/// Serializes a model with all data inline, in memory (for tests and small models).
std::string serialize_model(const Model& model);

/// Parses a serialized TensorProto (the ONNX test-data .pb files); views keep `data` alive.
/// Throws Error(kInput) naming `label` when it is malformed or its data does not fit its dims.
Tensor parse_tensor(const Bytes& data, const std::string& label);
/// Serializes one tensor as a TensorProto with its data inline (the test-data .pb files).
std::string serialize_tensor(const Tensor& tensor);

/// True when both paths name the same existing file (device and inode).
bool same_file(const std::string& a, const std::string& b);

}  // namespace onnxtool::ir
