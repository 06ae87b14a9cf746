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

}  // namespace onnxtool::ir::shape
