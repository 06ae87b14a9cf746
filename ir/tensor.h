// Tensor values as stored in a model: dense TensorProto and SparseTensorProto, kept lossless.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/bytes.h"
#include "ir/data_type.h"

namespace onnxtool::ir {

// Lossless round trips: every proto-mirroring struct keeps
//  - `explicit_defaults`: bit N set when field number N was present in the file with its default
//    value (proto2 presence), so that it is written again;
//  - `unknown`: the raw wire bytes of fields this schema does not know, written back verbatim.

/// StringStringEntryProto: metadata, external_data keys.
struct StringPair {
  std::string key;
  std::string value;
  uint32_t explicit_defaults = 0;
  std::string unknown;
};

/// TensorProto.Segment.
struct TensorSegment {
  int64_t begin = 0;
  int64_t end = 0;
  uint32_t explicit_defaults = 0;
  std::string unknown;
};

/// A dense tensor: TensorProto. The data lives in `raw_data`, in one of the typed fields, or in an
/// external file (data_location == 1), which the loader resolves into `external_bytes`.
struct Tensor {
  std::string name;
  std::vector<int64_t> dims;
  int32_t data_type = 0;
  std::optional<TensorSegment> segment;
  std::vector<float> float_data;
  std::vector<int32_t> int32_data;
  std::vector<std::string> string_data;
  std::vector<int64_t> int64_data;
  std::vector<double> double_data;
  std::vector<uint64_t> uint64_data;
  std::optional<Bytes> raw_data;  ///< present (possibly empty) or absent
  std::string doc_string;
  std::vector<StringPair> external_data;
  int32_t data_location = 0;
  std::vector<StringPair> metadata_props;
  uint32_t explicit_defaults = 0;
  std::string unknown;

  /// Resolved content of external data (not serialized); set by the loader.
  std::optional<Bytes> external_bytes;

  DataType type() const { return static_cast<DataType>(data_type); }
  bool is_external() const { return data_location == 1; }
  /// Number of elements from dims; nullopt on negative dims or overflow.
  std::optional<uint64_t> element_count() const;
  /// Size of the data in raw (little-endian, packed) form; 0 for strings.
  uint64_t data_bytes() const;

  /// The data as raw little-endian packed bytes, whatever field holds it. A view (no copy)
  /// for raw_data and external data; a converted copy for typed fields. Throws Error(kInput)
  /// naming the tensor when the data does not fit dims and type. Not for string tensors.
  Bytes raw_bytes() const;
  /// raw_bytes(), or nullopt where it would throw: for readers that skip a tensor they cannot
  /// use (passes that only look at small constants, fingerprints, diffs).
  std::optional<Bytes> raw_bytes_if_valid() const;

  /// Checks that the stored data matches dims x element size (typed field counts included);
  /// throws Error(kInput) naming the tensor (with `where` as context) when it does not.
  void validate_data(const std::string& where) const;
};

/// A sparse tensor: SparseTensorProto (COO).
struct SparseTensor {
  std::optional<Tensor> values;
  std::optional<Tensor> indices;
  std::vector<int64_t> dims;
  uint32_t explicit_defaults = 0;
  std::string unknown;

  const std::string& name() const;  ///< values.name, the name a graph refers to it by
};

/// Builds a tensor owning a copy of `data` as raw_data.
Tensor make_tensor(std::string name, DataType type, std::vector<int64_t> dims, const void* data,
                   size_t size_bytes);

}  // namespace onnxtool::ir
