// Shape arithmetic shared by the kernels of every device: the sliding windows of Conv,
// ConvTranspose and pooling, Slice's strided view, the output shapes of Reshape, Squeeze and
// Unsqueeze, Split's parts, the groups of a reduction and of Softmax, axis and integer lists. A
// device kernel computes an output shape with the same function as the CPU kernel, so the two
// cannot disagree on one; a node the spec forbids fails with the same line on every device.
#pragma once

#include <cstdint>
#include <vector>

#include "runner/kernel.h"

namespace onnxtool::runner {

/// Product of dims [begin, end) (1 for an empty range).
inline int64_t dims_product(const std::vector<int64_t>& shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end && i < shape.size(); ++i) n *= shape[i];
  return n;
}

/// Row-major strides of a dense tensor of `shape`.
inline std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

/// An axis in [-rank, rank) made non-negative; fails the node otherwise. With `allow_end` the
/// axis indexes the result of inserting one dim (Unsqueeze, OneHot): the range is
/// [-rank-1, rank] and a negative axis counts from rank + 1.
int64_t normalize_axis(const NodeAttributes& node, int64_t axis, int64_t rank, bool allow_end = false);

/// normalize_axis over a list; fails on a repeated axis.
std::vector<int64_t> normalize_axes(const NodeAttributes& node, const std::vector<int64_t>& axes, int64_t rank);

/// The int64 values of a 0-D or 1-D int32/int64 tensor (axes, shapes, lengths given as inputs).
std::vector<int64_t> read_int_list(const NodeAttributes& node, const Tensor& t, const char* what);

/// An attribute with one value per spatial dim (strides, dilations, output_padding),
/// `fallback` for each when absent; fails when it has another length.
std::vector<int64_t> spatial_attr(const NodeAttributes& node, const char* name, size_t rank, int64_t fallback);

/// The spatial dims of a sliding window: input and output sizes, kernel, strides, dilations and
/// the pads before and after (a pad may be negative only where ConvTranspose crops).
struct WindowGeometry {
  std::vector<int64_t> in, kernel, out, stride, dilation, pad_begin, pad_end;
  int64_t in_size() const { return dims_product(in, 0, in.size()); }
  int64_t out_size() const { return dims_product(out, 0, out.size()); }
  int64_t kernel_size() const { return dims_product(kernel, 0, kernel.size()); }
};

/// A convolution's window plus its batch, channels and groups.
struct ConvGeometry : WindowGeometry {
  int64_t n = 0, c = 0, m = 0, group = 1;
};

/// Conv (and ConvInteger, QLinearConv) from X [N, C, D...] and W [M, C/group, K...]: auto_pad,
/// explicit pads, strides, dilations, kernel_shape checked against W.
ConvGeometry conv_geometry(const NodeAttributes& node, const std::vector<int64_t>& x, const std::vector<int64_t>& w);

/// ConvTranspose from X [N, C, D...] and W [C, M/group, K...]: output_padding, output_shape and
/// auto_pad decide the output size and the pads (a larger output_shape than the full one gives a
/// negative end pad: zeros plus the bias there).
ConvGeometry conv_transpose_geometry(const NodeAttributes& node, const std::vector<int64_t>& x,
                                     const std::vector<int64_t>& w);

/// A pooling window plus its number of planes (N * C).
struct PoolGeometry : WindowGeometry {
  int64_t planes = 0;
};

/// MaxPool, AveragePool and LpPool from X [N, C, D...]: kernel_shape, strides, dilations, pads,
/// auto_pad and ceil_mode (the last window starts inside the input or its leading pad).
PoolGeometry pool_geometry(const NodeAttributes& node, const std::vector<int64_t>& x);

/// A Slice as a view of its input: output[i...] = input[offset + sum i_d * strides[d]].
struct StridedView {
  std::vector<int64_t> shape, strides;
  int64_t offset = 0;
};

/// Resolves Slice's starts, ends, axes (empty: 0, 1, ...) and steps (empty: all 1) against the
/// input shape, clamping as the spec does; fails on lists of different lengths, a repeated axis
/// or a step of 0.
StridedView slice_view(const NodeAttributes& node, const std::vector<int64_t>& shape, const std::vector<int64_t>& starts,
                       const std::vector<int64_t>& ends, std::vector<int64_t> axes, std::vector<int64_t> steps);

/// Reshape's output shape for an input of `type` and `shape` (the type only names the input in
/// messages): 0 copies the input dim (unless allowzero), one -1 is inferred.
std::vector<int64_t> reshape_target(const NodeAttributes& node, DataType type, const std::vector<int64_t>& shape,
                                    const std::vector<int64_t>& spec, bool allowzero);

/// Squeeze's output shape: without `given` axes every dim of size 1 is dropped; a given axis must
/// be of size 1.
std::vector<int64_t> squeeze_shape(const NodeAttributes& node, DataType type, const std::vector<int64_t>& shape,
                                   const std::vector<int64_t>& axes, bool given);

/// Unsqueeze's output shape: a dim of 1 at each of `axes`, which count in the output's rank.
std::vector<int64_t> unsqueeze_shape(const NodeAttributes& node, const std::vector<int64_t>& shape,
                                     const std::vector<int64_t>& axes);

/// Lengths of `parts` parts of `dim`: equal, or (when `ceil_parts`) ceil-sized with a smaller
/// last part; fails when `dim` does not split so.
std::vector<int64_t> equal_split(const NodeAttributes& node, int64_t dim, int64_t parts, bool ceil_parts);

/// Fails unless the lengths of a split are non-negative and sum to the axis's `dim`.
void check_split_lengths(const NodeAttributes& node, const std::vector<int64_t>& lens, int64_t dim);

/// Which dims of its input a reduction removes, and its output shape.
struct ReduceAxes {
  std::vector<bool> reduced;       ///< per input dim
  std::vector<int64_t> out_shape;  ///< keepdims applied
  bool noop = false;               ///< empty axes with noop_with_empty_axes: the identity
};

/// Resolves a reduction's axes against the input shape (empty: every dim, unless
/// `noop_with_empty`); fails on an axis out of range or given twice.
ReduceAxes resolve_reduce_axes(const NodeAttributes& node, const std::vector<int64_t>& shape,
                               const std::vector<int64_t>& axes, bool keepdims, bool noop_with_empty);

/// A reduction's input as alternating groups of kept and reduced dims: size-1 dims dropped and
/// neighbours of one kind merged, so that a kernel walks as few dims as the layout allows.
struct ReduceGroups {
  std::vector<int64_t> dims;
  std::vector<bool> reduced;  ///< per group
};

ReduceGroups merge_reduce_dims(const std::vector<int64_t>& shape, const std::vector<bool>& reduced);

/// The groups Softmax, LogSoftmax and Hardmax normalize: outer * inner groups of n elements
/// spaced `inner` apart.
struct SoftmaxGeometry {
  int64_t outer = 1, n = 1, inner = 1;
};

/// Before opset 13 the input is coerced to 2-D at `axis` (default 1) and whole rows are
/// normalized; from 13 on only `axis` (default -1) is. A scalar is one group of one.
SoftmaxGeometry softmax_geometry(const NodeAttributes& node, int64_t opset, const std::vector<int64_t>& shape);

}  // namespace onnxtool::runner
