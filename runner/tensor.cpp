// Runtime tensors and the 16-bit float conversions.
#include "runner/tensor.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "ir/error.h"

namespace onnxtool::runner {

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
  // 64-byte aligned for vectorised kernels; at least one byte so data_ is never null.
  const size_t alloc = (bytes_ + 63) / 64 * 64 + 64;
  auto* p = static_cast<uint8_t*>(::operator new(alloc, std::align_val_t(64)));
  owner_ = std::shared_ptr<void>(p, [](void* q) { ::operator delete(q, std::align_val_t(64)); });
  data_ = p;
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

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      uint32_t m = man;
      do {
        ++e;
        m <<= 1;
      } while ((m & 0x400) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (m & 0x3ff) << 13;
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | man << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | man << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00);  // rounds to infinity
  if (abs < 0x38800000u) {
    // Subnormal half (or zero): shift the implicit-one mantissa into place, round to nearest even.
    if (abs < 0x33000000u) return sign;
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffff) | 0x800000;
    const uint32_t shift = 126 - e;  // 14 + (112 - e)
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = abs - 0x38000000u;  // rebias exponent 127 -> 15
  const uint32_t rem = r & 0x1fff;
  r >>= 13;
  if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) ++r;
  return static_cast<uint16_t>(sign | r);
}

float bfloat16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_bfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // NaN stays NaN
  const uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

}  // namespace onnxtool::runner
