// onnxruntime as a device: its CPU library opened at run time (no header or link-time
// dependency) and one model run through its C API, tensors in and out as the runner's.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runner/backend.h"
#include "runner/tensor.h"

namespace onnxtool::runner::ort {

/// "disabled", "basic", "extended", "all".
const char* level_name(DeviceSpec::OrtLevel level);

/// Where the library is looked for, in order: $ONNXTOOL_ORT_LIBRARY (a path), the dynamic
/// linker's search path (libonnxruntime.so.1, libonnxruntime.so), then the onnxruntime-node
/// package under ./node_modules and each folder of $NODE_PATH.
std::vector<std::string> library_candidates();

/// "onnxruntime 1.30.0": opens the library (once per process). Throws Error(kUsage) naming every
/// place tried when none opens or offers the C API this code was written against.
std::string library_version();

/// One model in an onnxruntime session.
class ModelSession {
 public:
  /// `model` is the serialized ModelProto (all data inline); `threads` > 0 bounds onnxruntime's
  /// intra-op threads. Throws Error(kInput) with onnxruntime's message when it refuses the model.
  ModelSession(const std::string& model, DeviceSpec::OrtLevel level, int threads);
  ~ModelSession();
  ModelSession(const ModelSession&) = delete;
  ModelSession& operator=(const ModelSession&) = delete;

  /// Runs the model on `feeds` and returns `output_names` in order. A tensor of an element type
  /// this binding does not pass (strings, bfloat16, float8, 4-bit, complex) is Error(kUsage)
  /// naming the value and its type; so is an output onnxruntime returns as something else than
  /// a tensor (a sequence, a map).
  std::vector<Tensor> run(const std::map<std::string, Tensor>& feeds, const std::vector<std::string>& output_names);

 private:
  struct Handles;
  std::unique_ptr<Handles> h_;
};

/// Whether tensors of this element type can go to and come from onnxruntime here.
bool passes(DataType type);

}  // namespace onnxtool::runner::ort
