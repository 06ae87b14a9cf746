// Types and shapes of values: TypeProto and TensorShapeProto, kept lossless.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/data_type.h"

namespace onnxtool::ir {

/// One dimension: a known size, a symbolic name, or unknown. Older exporters (Paddle2ONNX among
/// them) declare a free dimension as dim_value -1: such a dim loads as unknown, as onnxruntime
/// reads it, and keeps the number in `value` so that the model saves byte for byte.
struct Dim {
  enum class Kind { kUnknown, kValue, kParam };
  Kind kind = Kind::kUnknown;
  int64_t value = 0;
  std::string param;
  std::string denotation;
  uint32_t explicit_defaults = 0;
  std::string unknown;

  static Dim of(int64_t v) {
    Dim d;
    d.kind = Kind::kValue;
    d.value = v;
    return d;
  }
  static Dim symbol(std::string name) {
    Dim d;
    d.kind = Kind::kParam;
    d.param = std::move(name);
    return d;
  }
  bool is_static() const { return kind == Kind::kValue; }
  /// An unknown dim the file declared as a negative dim_value (see above).
  bool is_negative_value() const { return kind == Kind::kUnknown && value < 0; }
  /// "3", "batch", "?" (or a declared "-1").
  std::string to_string() const;
};

struct Shape {
  std::vector<Dim> dims;
  std::string unknown;

  size_t rank() const { return dims.size(); }
  bool is_static() const;
  /// "[1,3,batch,?]".
  std::string to_string() const;
};

/// A deep-copying owning pointer, for the recursive parts of TypeInfo.
template <class T>
class Box {
 public:
  Box() = default;
  explicit Box(T value) : p_(std::make_unique<T>(std::move(value))) {}
  Box(const Box& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  Box(Box&&) noexcept = default;
  Box& operator=(const Box& o) {
    if (this != &o) p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  Box& operator=(Box&&) noexcept = default;
  explicit operator bool() const { return p_ != nullptr; }
  T* get() const { return p_.get(); }
  T& operator*() const { return *p_; }
  T* operator->() const { return p_.get(); }

 private:
  std::unique_ptr<T> p_;
};

/// TypeProto: a tensor, sequence, map, optional, sparse tensor or opaque type.
struct TypeInfo {
  enum class Kind { kUnset, kTensor, kSequence, kMap, kOptional, kSparseTensor, kOpaque };
  Kind kind = Kind::kUnset;
  /// Tensor/SparseTensor element type; Map key type.
  int32_t elem_type = 0;
  /// Tensor/SparseTensor shape; nullopt when the rank is unknown.
  std::optional<Shape> shape;
  /// Sequence/Optional element type; Map value type.
  Box<TypeInfo> elem;
  std::string opaque_domain;
  std::string opaque_name;
  std::string denotation;
  uint32_t explicit_defaults = 0;        ///< of TypeProto
  uint32_t inner_explicit_defaults = 0;  ///< of the inner message (Tensor, Map, Opaque...)
  std::string unknown;                   ///< of TypeProto
  std::string inner_unknown;             ///< of the inner message

  static TypeInfo tensor(DataType type, std::optional<Shape> shape = std::nullopt);
  bool is_tensor() const { return kind == Kind::kTensor; }
  DataType data_type() const { return static_cast<DataType>(elem_type); }
  /// "float[1,3,224,224]", "seq(float[?])", "map(int64,float)"...
  std::string to_string() const;
};

}  // namespace onnxtool::ir
