// Typed reading of constant tensors: integers are read as int64 and floats as double, and never
// one through the other (INT64_MAX does not survive a trip through double). And the writing of
// floating-point ones from doubles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace onnxtool::ir {

/// The elements of an integer or bool tensor (8 bits or wider) as int64, exactly. nullopt for any
/// other type, for a uint64 element above INT64_MAX, for data that does not decode, and for more
/// than `max_elements` elements.
std::optional<std::vector<int64_t>> read_ints(const Tensor& tensor,
                                              size_t max_elements = std::numeric_limits<size_t>::max());

/// The elements of a float, double, float16 or bfloat16 tensor as double (exact for each of
/// them). nullopt for any other type, for data that does not decode, and for more than
/// `max_elements` elements.
std::optional<std::vector<double>> read_floats(const Tensor& tensor,
                                               size_t max_elements = std::numeric_limits<size_t>::max());

/// A constant's elements in their own kind: `ints` for integer and bool types, `floats` for
/// float, double, float16 and bfloat16 (exactly one of them is set).
struct TypedValues {
  std::optional<std::vector<int64_t>> ints;
  std::optional<std::vector<double>> floats;

  size_t size() const { return ints ? ints->size() : floats ? floats->size() : 0; }
  /// True when every element equals `value` (exactly; an integer tensor compares as integers).
  bool all_equal(int64_t value) const;
};

/// read_ints or read_floats by the tensor's type; nullopt for other types (strings, float8...).
std::optional<TypedValues> read_values(const Tensor& tensor,
                                       size_t max_elements = std::numeric_limits<size_t>::max());

/// A float, double, float16 or bfloat16 tensor holding `values` (one per element of `dims`) as
/// raw_data: read_floats' inverse. float16 and bfloat16 are rounded twice, to float and then to 16
/// bits (not once, as double_to_half does), the way the runner stores a double
/// (runner::set_element_from_double): a constant a rewrite computes gets the bits the runner's
/// kernels would give it. Throws Error(kInternal) for another type or a count that does not match
/// dims.
Tensor make_float_tensor(std::string name, DataType type, std::vector<int64_t> dims, const std::vector<double>& values);

}  // namespace onnxtool::ir
