// Helpers shared by the shape functions of every op family.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/shape_inference.h"

namespace onnxtool::ir::shape {

/// Multidirectional (numpy) broadcasting of several shapes; fails with shape.broadcast naming
/// both dims when two static dims differ and neither is 1. Symbolic dims broadcast with 1 and
/// with themselves; other mixes give an unknown dim.
Shape broadcast(const InferenceContext& ctx, const std::vector<const Shape*>& shapes);

/// Two dims that must be equal: the more specific one, failing with `rule` when both are
/// static and differ. `what` names them in the message.
Dim merge(const InferenceContext& ctx, const Dim& a, const Dim& b, const std::string& rule,
          const std::string& what);

/// Axis in [-rank, rank-1] normalised to [0, rank-1]; fails with shape.axis otherwise.
int64_t normalize_axis(const InferenceContext& ctx, int64_t axis, int64_t rank,
                       const std::string& what = "axis");

/// Product / sum of dims when all static (overflow-checked, failing with shape.overflow);
/// nullopt otherwise.
std::optional<int64_t> static_product(const InferenceContext& ctx, const std::vector<Dim>& dims);
Dim mul(const InferenceContext& ctx, const Dim& a, const Dim& b);
Dim add(const InferenceContext& ctx, const Dim& a, const Dim& b);

/// Input `i`'s shape when its rank is exactly `rank`; nullptr when the rank is unknown; fails
/// with shape.rank when the rank is known and differs. `what` names the input.
const Shape* shape_of_rank(const InferenceContext& ctx, size_t i, size_t rank, const char* what);
/// Dim `i` of a shape, or an unknown dim when the shape is unknown or too short.
Dim dim_at(const Shape* s, size_t i);

/// A shape of `rank` unknown dims.
Shape unknown_shape(size_t rank);
/// A shape from static sizes.
Shape from_ints(const std::vector<int64_t>& dims);

/// Sets output `out` to input `in`'s element type and shape (when known).
void propagate_type_and_shape(InferenceContext& ctx, size_t in, size_t out);
/// Sets output `out` to input `in`'s element type with the given shape.
void propagate_type(InferenceContext& ctx, size_t in, size_t out, std::optional<Shape> shape);

/// One axis of a Slice after the spec's negative-index and clamping rules: the first index and
/// the element count. Exact over the whole int64 range (INT64_MAX / INT64_MIN ends and steps);
/// shared by shape inference and the runner's kernel so the two cannot disagree.
struct SliceRange {
  int64_t first = 0;
  int64_t count = 0;
};
SliceRange slice_range(int64_t start, int64_t end, int64_t step, int64_t dim);

/// The tensor's values as int64 (int32/int64/uint8.. integer tensors), or nullopt.
std::optional<std::vector<int64_t>> tensor_ints(const Tensor& t, size_t max_elements);

/// floor((mul * d + add) / div), for mul >= 1 and div >= 1: a number for a static dim
/// (overflow-checked, failing with shape.overflow), a derived symbol for a symbolic one, spelled
/// canonically ("h+2", "2*h-1", "floor((h+1)/2)") so that the same expression of the same
/// symbol compares equal, and unknown for an unknown dim. Used for sliding-window output sizes.
Dim affine_dim(const InferenceContext& ctx, const Dim& d, int64_t mul, int64_t add, int64_t div);

/// a + b: a number when both are static, a derived symbol ("a+b", "a+3") when symbols are
/// involved, unknown when either is unknown (unless the other is a static 0).
Dim sum_dims(const InferenceContext& ctx, const Dim& a, const Dim& b);

// ---------------------------------------------------------------- helpers of several families

/// Whether two dims are known to be equal: the same static size or the same symbol.
bool same_dim(const Dim& a, const Dim& b);

/// A shape of the given dims.
Shape shape_of_dims(std::vector<Dim> dims);
/// A 1-D shape of the given length.
Shape vector_shape(Dim length);
/// A shape's rank as int64.
int64_t rank_of(const Shape& s);

/// a * b, failing with shape.overflow when it overflows int64.
int64_t checked_mul(const InferenceContext& ctx, int64_t a, int64_t b);

/// The longest 1-D input whose declared length vector_length trusts: these inputs list axes or
/// dims, and a tensor of more dims than this is not real (a fuzzed Reshape's shape input declared
/// about 2e8 elements, and an output shape of that many unknown dims took 8 GB).
constexpr int64_t kMaxVectorLength = int64_t{1} << 16;

/// Number of elements of a 0-D/1-D input: from its values, else from its static shape (when at
/// most kMaxVectorLength).
std::optional<int64_t> vector_length(const InferenceContext& ctx, size_t i);

/// The single value of a scalar (or one-element) integer input, as a dim.
std::optional<Dim> scalar_dim(const InferenceContext& ctx, size_t i);
/// The same as a number, when static.
std::optional<int64_t> scalar_int(const InferenceContext& ctx, size_t i);

/// Normalises a list of axes against `rank`; repeated axes fail with shape.axis.
std::vector<int64_t> normalize_axes(const InferenceContext& ctx, const std::vector<int64_t>& axes,
                                    int64_t rank, const std::string& what = "axes");
/// 0, 1, ..., rank-1.
std::vector<int64_t> all_axes(int64_t rank);

/// The data type in attribute `name` (`fallback` when absent); fails with shape.attribute when
/// the value is not a data type.
DataType dtype_attr(const InferenceContext& ctx, const char* name, DataType fallback);

/// Divides a dim by a factor it must be a multiple of: exact for static dims (failing when not
/// divisible), a derived symbol for symbolic ones.
Dim divide_dim(const InferenceContext& ctx, const Dim& d, int64_t factor, const std::string& what);

/// d / k for a static d that k divides, d itself when k is 1, unknown otherwise: never fails
/// (for a divisibility the runtime checks, where divide_dim's is the spec's).
Dim exact_quotient(const Dim& d, int64_t k);

/// The values of a small numeric tensor (integer or floating point) as doubles.
std::optional<std::vector<double>> tensor_numbers(const Tensor& t);
/// The values of a numeric input: propagated integers, or a constant of any numeric type.
std::optional<std::vector<double>> input_numbers(const InferenceContext& ctx, size_t i);

/// The shape functions of Conv, of MaxPool and AveragePool, and of the global pools
/// (ir/ops/nn_shapes.cpp), for ops of other domains that take the same inputs and attributes
/// (com.microsoft.nchwc's: ir/ops/nchwc_shapes.cpp).
void conv_like(InferenceContext& ctx);
void pool_like(InferenceContext& ctx);
void global_pool_like(InferenceContext& ctx);

}  // namespace onnxtool::ir::shape
