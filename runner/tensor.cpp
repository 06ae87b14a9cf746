// Runtime tensors and the 16-bit float conversions.
#include "runner/tensor.h"

#include "runner/buffer_pool.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "ir/error.h"

namespace onnxtool::runner {

bool is_plain_numeric(DataType type) {
  // Whole bytes per element, a C++ type of their own: bool, the integers of 8 bits and more,
  // and the floats of 16 bits and more (not the 8- and 4-bit floats).
  const int bits = ir::data_type_bits(type);
  return type == DataType::kBool || (ir::is_integer_type(type) && bits >= 8) || (ir::is_float_type(type) && bits >= 16);
}

double element_as_double(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::kFloat: return t.data<float>()[i];
    case DataType::kDouble: return t.data<double>()[i];
    case DataType::kFloat16: return half_to_float(t.data<uint16_t>()[i]);
    case DataType::kBFloat16: return bfloat16_to_float(t.data<uint16_t>()[i]);
    case DataType::kInt8: return t.data<int8_t>()[i];
    case DataType::kUInt8: return t.data<uint8_t>()[i];
    case DataType::kBool: return t.data<uint8_t>()[i];
    case DataType::kInt16: return t.data<int16_t>()[i];
    case DataType::kUInt16: return t.data<uint16_t>()[i];
    case DataType::kInt32: return t.data<int32_t>()[i];
    case DataType::kUInt32: return t.data<uint32_t>()[i];
    case DataType::kInt64: return static_cast<double>(t.data<int64_t>()[i]);
    case DataType::kUInt64: return static_cast<double>(t.data<uint64_t>()[i]);
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

TensorStats tensor_stats(const Tensor& t) {
  TensorStats s;
  if (t.size() == 0 || !is_plain_numeric(t.dtype())) return s;
  s.numeric = true;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -s.min;
  double sum = 0;
  for (int64_t i = 0; i < t.size(); ++i) {
    const double v = element_as_double(t, i);
    if (std::isnan(v)) {
      ++s.nan;
    } else if (std::isinf(v)) {
      ++s.inf;
    } else {
      s.min = std::min(s.min, v);
      s.max = std::max(s.max, v);
      sum += v;
    }
  }
  s.finite = t.size() - s.nan - s.inf;
  if (s.finite == 0) s.min = s.max = 0;
  s.mean = s.finite ? sum / static_cast<double>(s.finite) : 0;
  return s;
}

void set_element_from_double(Tensor& t, int64_t i, double v) {
  switch (t.dtype()) {
    case DataType::kFloat: t.mutable_data<float>()[i] = static_cast<float>(v); break;
    case DataType::kDouble: t.mutable_data<double>()[i] = v; break;
    case DataType::kFloat16: t.mutable_data<uint16_t>()[i] = float_to_half(static_cast<float>(v)); break;
    case DataType::kBFloat16: t.mutable_data<uint16_t>()[i] = float_to_bfloat16(static_cast<float>(v)); break;
    case DataType::kInt8: t.mutable_data<int8_t>()[i] = static_cast<int8_t>(v); break;
    case DataType::kUInt8: t.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
    case DataType::kBool: t.mutable_data<uint8_t>()[i] = v != 0; break;
    case DataType::kInt16: t.mutable_data<int16_t>()[i] = static_cast<int16_t>(v); break;
    case DataType::kUInt16: t.mutable_data<uint16_t>()[i] = static_cast<uint16_t>(v); break;
    case DataType::kInt32: t.mutable_data<int32_t>()[i] = static_cast<int32_t>(v); break;
    case DataType::kUInt32: t.mutable_data<uint32_t>()[i] = static_cast<uint32_t>(v); break;
    case DataType::kInt64: t.mutable_data<int64_t>()[i] = static_cast<int64_t>(v); break;
    case DataType::kUInt64: t.mutable_data<uint64_t>()[i] = static_cast<uint64_t>(v); break;
    default: break;
  }
}

int64_t shape_size(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw_input_error("negative dimension in shape " + shape_string(shape));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      throw_input_error("shape " + shape_string(shape) + " has too many elements");
    n *= d;
  }
  return n;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

Tensor::Tensor(DataType type, std::vector<int64_t> shape)
    : dtype_(type), shape_(std::move(shape)), size_(shape_size(shape_)) {
  if (type == DataType::kString) {
    strings_ = std::make_shared<std::vector<std::string>>(static_cast<size_t>(size_));
    return;
  }
  auto bytes = ir::storage_bytes(type, static_cast<uint64_t>(size_));
  if (!bytes) throw_input_error("cannot allocate a tensor of type " + std::string(ir::data_type_name(type)));
  bytes_ = static_cast<size_t>(*bytes);
  // 64-byte aligned for vectorised kernels, never null (runner/buffer_pool.h).
  auto buffer = allocate_buffer(bytes_);
  data_ = buffer.get();
  owner_ = std::move(buffer);
}

Tensor Tensor::view(DataType type, std::vector<int64_t> shape, const ir::Bytes& bytes) {
  Tensor t;
  t.dtype_ = type;
  t.shape_ = std::move(shape);
  t.size_ = shape_size(t.shape_);
  auto need = ir::storage_bytes(type, static_cast<uint64_t>(t.size_));
  if (!need || *need != bytes.size())
    throw_input_error("tensor data of " + std::to_string(bytes.size()) + " bytes does not fit " +
                      std::string(ir::data_type_name(type)) + shape_string(t.shape_));
  t.bytes_ = bytes.size();
  // raw_data sits at any offset of a model file; kernels read elements through typed pointers,
  // so data that is not aligned for its element type is copied once into aligned storage.
  const int bits = ir::data_type_bits(type);
  const size_t align = bits >= 8 ? static_cast<size_t>(bits / 8) : 1;
  if (reinterpret_cast<uintptr_t>(bytes.data()) % std::min<size_t>(align, 8) != 0) {
    Tensor copy(type, t.shape_);
    std::memcpy(copy.data_, bytes.data(), bytes.size());
    // Kernels read the aligned copy from now on: a mapped model file's pages held the same
    // bytes twice (ISNet in float32: 143 of its 176 MB).
    ir::release_pages(bytes.data(), bytes.size());
    return copy;
  }
  // Keep the Bytes (and so its owner) alive with the tensor.
  auto holder = std::make_shared<ir::Bytes>(bytes);
  t.owner_ = std::shared_ptr<const void>(holder, holder->data());
  t.data_ = const_cast<uint8_t*>(bytes.data());
  t.readonly_ = true;
  return t;
}

Tensor Tensor::scalar_int64(int64_t v) {
  Tensor t(DataType::kInt64, {});
  *t.mutable_data<int64_t>() = v;
  return t;
}

Tensor Tensor::scalar_float(float v) {
  Tensor t(DataType::kFloat, {});
  *t.mutable_data<float>() = v;
  return t;
}

void* Tensor::mutable_raw() {
  if (readonly_) throw Error(ErrorKind::kInternal, "a kernel tried to write a read-only tensor");
  return data_;
}

Tensor Tensor::reshaped(std::vector<int64_t> shape) const {
  if (shape_size(shape) != size_)
    throw_input_error("cannot reshape " + shape_string(shape_) + " to " + shape_string(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t(dtype_, shape_);
  if (dtype_ == DataType::kString) *t.strings_ = *strings_;
  else if (bytes_) std::memcpy(t.data_, data_, bytes_);
  return t;
}

std::string Tensor::describe() const {
  return std::string(ir::data_type_name(dtype_)) + shape_string(shape_);
}

std::string Value::describe() const {
  switch (kind) {
    case Kind::kTensor:
      return tensor.describe();
    case Kind::kSequence:
      return "sequence of " + std::to_string(sequence ? sequence->size() : 0) + " tensors";
    case Kind::kOptional:
      return optional ? "optional(" + optional->describe() + ")" : "optional(empty)";
    default:
      return "none";
  }
}

uint64_t physical_memory() {
  static const uint64_t bytes = [] {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : uint64_t{0};
  }();
  return bytes;
}

std::string gigabytes(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", static_cast<double>(bytes) / 1e9);
  return buf;
}

}  // namespace onnxtool::runner
