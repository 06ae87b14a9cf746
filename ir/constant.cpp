// Typed reading of constant tensors (see constant.h).
#include "ir/constant.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "ir/error.h"

namespace onnxtool::ir {

namespace {

/// The raw little-endian bytes of a tensor with at most `max_elements` elements, or nullopt.
std::optional<Bytes> bounded_raw(const Tensor& t, size_t max_elements, size_t* count) {
  const auto n = t.element_count();
  if (!n || *n > max_elements) return std::nullopt;
  try {
    Bytes raw = t.raw_bytes();
    const auto need = storage_bytes(t.type(), *n);
    if (!need || raw.size() < *need) return std::nullopt;
    *count = static_cast<size_t>(*n);
    return raw;
  } catch (const Error&) {
    return std::nullopt;
  }
}

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

/// A tensor of `type` whose elements are encode(value), element type T.
template <typename T, class Encode>
Tensor encoded(std::string name, DataType type, std::vector<int64_t> dims, const std::vector<double>& values,
               Encode encode) {
  std::vector<T> elements(values.size());
  std::transform(values.begin(), values.end(), elements.begin(), encode);
  return make_tensor(std::move(name), type, std::move(dims), elements.data(), elements.size() * sizeof(T));
}

}  // namespace

std::optional<std::vector<int64_t>> read_ints(const Tensor& t, size_t max_elements) {
  const DataType dt = t.type();
  if (!(is_integer_type(dt) || dt == DataType::kBool) || data_type_bits(dt) < 8) return std::nullopt;
  size_t n = 0;
  const auto raw = bounded_raw(t, max_elements, &n);
  if (!raw) return std::nullopt;
  const size_t width = static_cast<size_t>(data_type_bits(dt) / 8);
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = raw->data() + i * width;
    switch (dt) {
      case DataType::kInt64: out[i] = load<int64_t>(p); break;
      case DataType::kInt32: out[i] = load<int32_t>(p); break;
      case DataType::kInt16: out[i] = load<int16_t>(p); break;
      case DataType::kInt8: out[i] = load<int8_t>(p); break;
      case DataType::kUInt8:
      case DataType::kBool: out[i] = *p; break;
      case DataType::kUInt16: out[i] = load<uint16_t>(p); break;
      case DataType::kUInt32: out[i] = load<uint32_t>(p); break;
      case DataType::kUInt64: {
        const uint64_t v = load<uint64_t>(p);
        if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
        out[i] = static_cast<int64_t>(v);
        break;
      }
      default: return std::nullopt;
    }
  }
  return out;
}

std::optional<std::vector<double>> read_floats(const Tensor& t, size_t max_elements) {
  const DataType dt = t.type();
  if (dt != DataType::kFloat && dt != DataType::kDouble && dt != DataType::kFloat16 && dt != DataType::kBFloat16)
    return std::nullopt;
  size_t n = 0;
  const auto raw = bounded_raw(t, max_elements, &n);
  if (!raw) return std::nullopt;
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    switch (dt) {
      case DataType::kFloat: out[i] = load<float>(raw->data() + 4 * i); break;
      case DataType::kDouble: out[i] = load<double>(raw->data() + 8 * i); break;
      case DataType::kFloat16: out[i] = half_to_float(load<uint16_t>(raw->data() + 2 * i)); break;
      default: out[i] = bfloat16_to_float(load<uint16_t>(raw->data() + 2 * i)); break;
    }
  }
  return out;
}

bool TypedValues::all_equal(int64_t value) const {
  if (ints) {
    for (int64_t v : *ints)
      if (v != value) return false;
    return true;
  }
  if (floats) {
    // Beyond 2^53 a double cannot tell neighbouring integers apart: no float equals such a value.
    if (value > (int64_t{1} << 53) || value < -(int64_t{1} << 53)) return false;
    const double want = static_cast<double>(value);
    for (double v : *floats)
      if (v != want) return false;
    return true;
  }
  return false;
}

std::optional<TypedValues> read_values(const Tensor& t, size_t max_elements) {
  TypedValues v;
  if ((v.ints = read_ints(t, max_elements))) return v;
  if ((v.floats = read_floats(t, max_elements))) return v;
  return std::nullopt;
}

Tensor make_float_tensor(std::string name, DataType type, std::vector<int64_t> dims, const std::vector<double>& values) {
  const auto count = element_count(dims.data(), dims.size());
  if (!count || *count != values.size())
    throw Error(ErrorKind::kInternal, "make_float_tensor: " + std::to_string(values.size()) + " values do not fit dims");
  switch (type) {
    case DataType::kFloat:
      return encoded<float>(std::move(name), type, std::move(dims), values, [](double v) { return static_cast<float>(v); });
    case DataType::kDouble:
      return encoded<double>(std::move(name), type, std::move(dims), values, [](double v) { return v; });
    case DataType::kFloat16:
      return encoded<uint16_t>(std::move(name), type, std::move(dims), values,
                               [](double v) { return float_to_half(static_cast<float>(v)); });
    case DataType::kBFloat16:
      return encoded<uint16_t>(std::move(name), type, std::move(dims), values,
                               [](double v) { return float_to_bfloat16(static_cast<float>(v)); });
    default:
      throw Error(ErrorKind::kInternal, "make_float_tensor: " + std::string(data_type_name(type)) + " is not a floating-point type");
  }
}

}  // namespace onnxtool::ir
