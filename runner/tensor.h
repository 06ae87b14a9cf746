// Runtime values of the reference runner: dense tensors, sequences and optionals.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/bytes.h"
#include "ir/data_type.h"

namespace onnxtool::runner {

using ir::DataType;

/// A dense tensor: element type, shape and storage. Copies share storage (a handle); kernels
/// write only tensors they allocated. Elements are stored as in ONNX raw_data: little-endian,
/// bool as one byte, float16/bfloat16 as 16-bit patterns, 4-bit and 2-bit types packed.
/// String tensors keep their elements in strings().
class Tensor {
 public:
  Tensor() = default;
  /// Allocates uninitialized storage for the shape (strings: empty strings).
  Tensor(DataType type, std::vector<int64_t> shape);
  /// A read-only view of existing bytes (initializers); `bytes` must match the shape.
  static Tensor view(DataType type, std::vector<int64_t> shape, const ir::Bytes& bytes);
  static Tensor scalar_int64(int64_t v);
  static Tensor scalar_float(float v);

  DataType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  size_t rank() const { return shape_.size(); }
  int64_t dim(size_t i) const { return shape_[i]; }
  /// Number of elements.
  int64_t size() const { return size_; }
  size_t bytes() const { return bytes_; }
  bool valid() const { return dtype_ != DataType::kUndefined; }

  const void* raw() const { return data_; }
  void* mutable_raw();
  template <class T>
  const T* data() const { return static_cast<const T*>(raw()); }
  template <class T>
  T* mutable_data() { return static_cast<T*>(mutable_raw()); }
  const std::vector<std::string>& strings() const { return *strings_; }
  std::vector<std::string>& mutable_strings() { return *strings_; }

  /// A tensor with the same storage and another shape of the same element count.
  Tensor reshaped(std::vector<int64_t> shape) const;
  /// A deep copy with writable storage.
  Tensor clone() const;
  /// "float[1,3,224,224]".
  std::string describe() const;

 private:
  DataType dtype_ = DataType::kUndefined;
  std::vector<int64_t> shape_;
  int64_t size_ = 0;
  size_t bytes_ = 0;
  std::shared_ptr<const void> owner_;
  void* data_ = nullptr;
  bool readonly_ = false;
  std::shared_ptr<std::vector<std::string>> strings_;
};

/// Number of elements of a shape; throws Error(kInput) on negative dims or overflow.
int64_t shape_size(const std::vector<int64_t>& shape);

/// Physical memory of the machine (0 when unknown): no single tensor can be larger.
uint64_t physical_memory();
/// "12.3 GB", for messages about memory.
std::string gigabytes(uint64_t bytes);
std::string shape_string(const std::vector<int64_t>& shape);

/// True for the element types element_as_double reads: float, double, float16, bfloat16, the
/// 8- to 64-bit integers and bool.
bool is_plain_numeric(DataType type);
/// Element i as double (int64 and uint64 beyond 2^53 round); NaN for types that are not plain
/// numeric (strings, complex, float8, 4-bit and 2-bit types).
double element_as_double(const Tensor& t, int64_t i);
/// Stores v into element i of a plain numeric tensor as static_cast does (floats round, float16
/// and bfloat16 through float, integers truncate toward zero; bool is v != 0). Other types: no-op.
void set_element_from_double(Tensor& t, int64_t i, double v);

/// Minimum, maximum and mean of a plain numeric tensor (NaN propagates into all three).
/// Statistics of a tensor's elements. min, max and mean are over the finite elements (a NaN
/// would make every one NaN, an infinity the mean); NaN and infinities are counted apart.
struct TensorStats {
  bool numeric = false;  ///< false for an empty or not plain numeric tensor: no statistics
  int64_t finite = 0;    ///< elements min, max and mean are over
  int64_t nan = 0, inf = 0;
  double min = 0, max = 0, mean = 0;
};
TensorStats tensor_stats(const Tensor& t);

/// A runtime value: a tensor, a sequence of tensors, or an optional (empty or holding one).
struct Value {
  enum class Kind { kNone, kTensor, kSequence, kOptional };
  Kind kind = Kind::kNone;
  Tensor tensor;
  std::shared_ptr<std::vector<Tensor>> sequence;
  /// kOptional: the held value, nullptr when empty.
  std::shared_ptr<Value> optional;
  /// Element type of an empty sequence or optional (from the model), when known.
  DataType elem_type = DataType::kUndefined;

  static Value of(Tensor t) {
    Value v;
    v.kind = Kind::kTensor;
    v.tensor = std::move(t);
    return v;
  }
  static Value of_sequence(std::vector<Tensor> items, DataType elem = DataType::kUndefined) {
    Value v;
    v.kind = Kind::kSequence;
    v.sequence = std::make_shared<std::vector<Tensor>>(std::move(items));
    v.elem_type = elem;
    return v;
  }
  bool is_tensor() const { return kind == Kind::kTensor; }
  std::string describe() const;
};

// The float16 / bfloat16 / float8 codecs live with the element types in ir/.
using ir::bfloat16_to_float;
using ir::double_to_bfloat16;
using ir::double_to_float8;
using ir::double_to_half;
using ir::float8_to_double;
using ir::float_to_bfloat16;
using ir::float_to_half;
using ir::half_to_float;
using ir::is_float8;

}  // namespace onnxtool::runner
