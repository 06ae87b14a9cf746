// Tensor data access and validation.
#include "ir/tensor.h"

#include <cstring>

#include "ir/error.h"

namespace onnxtool::ir {
namespace {

std::string tensor_label(const Tensor& t) {
  return "tensor '" + t.name + "'";
}

// How many typed-field entries a tensor of this type and element count must have, and which
// field holds them (TensorProto's rules: small ints, bool and 16-bit floats in int32_data; 4-bit
// and 2-bit types packed into int32_data too; complex as pairs).
enum class Field { kNone, kFloat, kInt32, kString, kInt64, kDouble, kUInt64 };

Field typed_field(DataType type) {
  switch (type) {
    case DataType::kFloat:
    case DataType::kComplex64:
      return Field::kFloat;
    case DataType::kDouble:
    case DataType::kComplex128:
      return Field::kDouble;
    case DataType::kInt64:
      return Field::kInt64;
    case DataType::kUInt32:
    case DataType::kUInt64:
      return Field::kUInt64;
    case DataType::kString:
      return Field::kString;
    case DataType::kUndefined:
      return Field::kNone;
    default:
      return Field::kInt32;
  }
}

size_t typed_count(const Tensor& t, Field f) {
  switch (f) {
    case Field::kFloat:
      return t.float_data.size();
    case Field::kInt32:
      return t.int32_data.size();
    case Field::kString:
      return t.string_data.size();
    case Field::kInt64:
      return t.int64_data.size();
    case Field::kDouble:
      return t.double_data.size();
    case Field::kUInt64:
      return t.uint64_data.size();
    default:
      return 0;
  }
}

// Entries expected in the typed field for `count` elements.
uint64_t expected_typed_entries(DataType type, uint64_t count) {
  switch (type) {
    case DataType::kComplex64:
    case DataType::kComplex128:
      return count * 2;
    case DataType::kUInt4:
    case DataType::kInt4:
    case DataType::kFloat4E2M1:
      return (count + 1) / 2;
    case DataType::kUInt2:
    case DataType::kInt2:
      return (count + 3) / 4;
    default:
      return count;
  }
}

}  // namespace

std::optional<uint64_t> Tensor::element_count() const {
  return ir::element_count(dims.data(), dims.size());
}

uint64_t Tensor::data_bytes() const {
  auto n = element_count();
  if (!n) return 0;
  return storage_bytes(type(), *n).value_or(0);
}

void Tensor::validate_data(const std::string& where) const {
  const std::string label = where.empty() ? tensor_label(*this) : where + ": " + tensor_label(*this);
  auto count = element_count();
  if (!count) throw_input_error(label + ": dims have a negative value or overflow");
  if (data_type != 0 && !is_valid_data_type(data_type))
    throw_input_error(label + ": unknown data type " + std::to_string(data_type));
  const DataType dt = type();
  if (is_external()) {
    if (dt == DataType::kString) throw_input_error(label + ": string data cannot be external");
    if (external_bytes) {
      auto need = storage_bytes(dt, *count);
      if (!need || *need != external_bytes->size())
        throw_input_error(label + ": external data has " + std::to_string(external_bytes->size()) +
                          " bytes, dims and type need " + (need ? std::to_string(*need) : "?"));
    }
    return;
  }
  if (raw_data) {
    if (dt == DataType::kString) throw_input_error(label + ": string tensors cannot use raw_data");
    auto need = storage_bytes(dt, *count);
    if (!need || *need != raw_data->size())
      throw_input_error(label + ": raw_data has " + std::to_string(raw_data->size()) +
                        " bytes, dims and type need " + (need ? std::to_string(*need) : "?"));
    return;
  }
  const Field f = typed_field(dt);
  const uint64_t have = typed_count(*this, f);
  // No data at all is legal only for an empty tensor (or a tensor of undefined type).
  if (f == Field::kNone) return;
  const uint64_t want = expected_typed_entries(dt, *count);
  if (have != want)
    throw_input_error(label + ": has " + std::to_string(have) + " data entries, dims need " +
                      std::to_string(want));
}

Bytes Tensor::raw_bytes() const {
  validate_data("");
  if (is_external()) {
    if (!external_bytes) throw_input_error(tensor_label(*this) + ": external data not loaded");
    return *external_bytes;
  }
  if (raw_data) return *raw_data;
  const DataType dt = type();
  const uint64_t n = *element_count();
  const uint64_t bytes = storage_bytes(dt, n).value_or(0);
  std::vector<uint8_t> out(bytes);
  auto put = [&out](size_t offset, const void* src, size_t size) {
    std::memcpy(out.data() + offset, src, size);
  };
  switch (typed_field(dt)) {
    case Field::kFloat:
      if (bytes) put(0, float_data.data(), bytes);
      break;
    case Field::kDouble:
      if (bytes) put(0, double_data.data(), bytes);
      break;
    case Field::kInt64:
      if (bytes) put(0, int64_data.data(), bytes);
      break;
    case Field::kUInt64:
      if (dt == DataType::kUInt64) {
        if (bytes) put(0, uint64_data.data(), bytes);
      } else {
        for (size_t i = 0; i < n; ++i) {
          const auto v = static_cast<uint32_t>(uint64_data[i]);
          put(i * 4, &v, 4);
        }
      }
      break;
    case Field::kInt32: {
      const int bits = data_type_bits(dt);
      if (bits >= 8) {
        const size_t size = static_cast<size_t>(bits / 8);
        for (size_t i = 0; i < n; ++i) {
          const auto v = static_cast<uint32_t>(int32_data[i]);
          put(i * size, &v, size);  // little-endian: the low bytes come first
        }
      } else {
        // Sub-byte types: each int32 entry already holds packed bytes' worth of elements.
        for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(int32_data[i]);
      }
      break;
    }
    default:
      throw_input_error(tensor_label(*this) + ": no raw form for type " +
                        std::string(data_type_name(dt)));
  }
  return Bytes::owned(std::move(out));
}

std::optional<Bytes> Tensor::raw_bytes_if_valid() const {
  try {
    return raw_bytes();
  } catch (const Error&) {
    return std::nullopt;
  }
}

const std::string& SparseTensor::name() const {
  static const std::string kEmpty;
  return values ? values->name : kEmpty;
}

Tensor make_tensor(std::string name, DataType type, std::vector<int64_t> dims, const void* data,
                   size_t size_bytes) {
  Tensor t;
  t.name = std::move(name);
  t.data_type = static_cast<int32_t>(type);
  t.dims = std::move(dims);
  t.raw_data = Bytes::copy_of(data, size_bytes);
  return t;
}

}  // namespace onnxtool::ir
