// Reading and writing tensors as .npy (NumPy format 1.0-3.0) and .pb (serialized TensorProto).
#pragma once

#include <string>

#include "runner/tensor.h"

namespace onnxtool::runner {

/// Reads a .npy file: little-endian, C order, numeric types, bool and float16. Throws
/// Error(kInput) with one line naming the file for anything else or malformed content.
Tensor read_npy(const std::string& path);
/// Writes a .npy file (format 1.0, or 2.0 when the header needs it) atomically.
void write_npy(const std::string& path, const Tensor& tensor);

/// Reads a serialized TensorProto (.pb), as the ONNX test suite stores its data.
Tensor read_pb(const std::string& path);

/// Reads .npy or .pb by extension.
Tensor read_tensor_file(const std::string& path);

/// The file name used for a tensor named `name`: characters outside [A-Za-z0-9_.-] become '_'.
std::string safe_file_name(const std::string& name);

}  // namespace onnxtool::runner
