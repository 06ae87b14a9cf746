#include "runner/geometry.h"

#include <algorithm>
#include <string>

#include "ir/ops/shape_util.h"
#include "runner/tensor.h"

namespace onnxtool::runner {

int64_t normalize_axis(const NodeAttributes& node, int64_t axis, int64_t rank, bool allow_end) {
  const int64_t hi = allow_end ? rank + 1 : rank;
  if (axis < -hi || axis >= hi)
    node.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + hi : axis;
}

std::vector<int64_t> normalize_axes(const NodeAttributes& node, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
  for (int64_t a : axes) {
    const int64_t n = normalize_axis(node, a, rank);
    if (seen[static_cast<size_t>(n)]) node.fail("axis " + std::to_string(a) + " is repeated");
    seen[static_cast<size_t>(n)] = true;
    out.push_back(n);
  }
  return out;
}

std::vector<int64_t> read_int_list(const NodeAttributes& node, const Tensor& t, const char* what) {
  std::vector<int64_t> out(static_cast<size_t>(t.size()));
  if (t.dtype() == DataType::kInt64) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = t.data<int64_t>()[i];
  } else if (t.dtype() == DataType::kInt32) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = t.data<int32_t>()[i];
  } else {
    node.fail(std::string(what) + " must be int32 or int64, is " + std::string(ir::data_type_name(t.dtype())));
  }
  return out;
}

std::vector<int64_t> spatial_attr(const NodeAttributes& node, const char* name, size_t rank, int64_t fallback) {
  std::vector<int64_t> v = node.attr_ints(name);
  if (v.empty()) v.assign(rank, fallback);
  if (v.size() != rank)
    node.fail(std::string(name) + " has " + std::to_string(v.size()) + " values for " + std::to_string(rank) +
              " spatial dims");
  return v;
}

namespace {

/// The input sizes, kernel, strides, dilations and explicit pads of `rank` spatial dims.
void read_window(const NodeAttributes& node, WindowGeometry& g, const std::vector<int64_t>& x,
                 std::vector<int64_t> kernel) {
  const size_t rank = x.size() - 2;
  g.in.assign(x.begin() + 2, x.end());
  g.kernel = std::move(kernel);
  if (g.kernel.size() != rank)
    node.fail("kernel_shape has " + std::to_string(g.kernel.size()) + " values for " + std::to_string(rank) +
              " spatial dims");
  g.stride = spatial_attr(node, "strides", rank, 1);
  g.dilation = spatial_attr(node, "dilations", rank, 1);
  for (size_t i = 0; i < rank; ++i)
    if (g.kernel[i] < 1 || g.stride[i] < 1 || g.dilation[i] < 1)
      node.fail("kernel_shape, strides and dilations must be positive");
  std::vector<int64_t> pads = node.attr_ints("pads");
  if (pads.empty()) pads.assign(2 * rank, 0);
  if (pads.size() != 2 * rank)
    node.fail("pads has " + std::to_string(pads.size()) + " values; " + std::to_string(rank) + " spatial dims need " +
              std::to_string(2 * rank));
  for (int64_t p : pads)
    if (p < 0) node.fail("pads must not be negative");
  g.pad_begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(rank));
  g.pad_end.assign(pads.begin() + static_cast<std::ptrdiff_t>(rank), pads.end());
}

/// Output sizes of a forward window (Conv, pooling) under auto_pad; SAME_* recompute the pads.
void forward_output(const NodeAttributes& node, WindowGeometry& g, bool ceil_mode) {
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (!same && auto_pad != "VALID" && auto_pad != "NOTSET") node.fail("unknown auto_pad '" + auto_pad + "'");
  g.out.resize(g.in.size());
  for (size_t i = 0; i < g.in.size(); ++i) {
    const int64_t span = (g.kernel[i] - 1) * g.dilation[i] + 1;
    if (same) {
      g.out[i] = (g.in[i] + g.stride[i] - 1) / g.stride[i];
      const int64_t total = std::max<int64_t>(0, (g.out[i] - 1) * g.stride[i] + span - g.in[i]);
      g.pad_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pad_end[i] = total - g.pad_begin[i];
      continue;
    }
    if (auto_pad == "VALID") g.pad_begin[i] = g.pad_end[i] = 0;
    const int64_t room = g.in[i] + g.pad_begin[i] + g.pad_end[i] - span;
    if (room < 0)
      node.fail("the kernel (span " + std::to_string(span) + ") is larger than the padded input (" +
                std::to_string(room + span) + ")");
    g.out[i] = (ceil_mode ? (room + g.stride[i] - 1) / g.stride[i] : room / g.stride[i]) + 1;
    // With ceil_mode, the last window must start inside the input or the leading pad.
    if (ceil_mode && (g.out[i] - 1) * g.stride[i] >= g.in[i] + g.pad_begin[i]) --g.out[i];
  }
}

/// Fails unless X and W are [N, C, D...] tensors of one rank.
void check_conv_ranks(const NodeAttributes& node, const std::vector<int64_t>& x, const std::vector<int64_t>& w) {
  if (x.size() < 3 || w.size() != x.size())
    node.fail("X " + shape_string(x) + " and W " + shape_string(w) + " must be [N, C, D...] tensors of one rank");
}

/// kernel_shape when given (it must match W's spatial dims), else W's spatial dims.
std::vector<int64_t> conv_kernel(const NodeAttributes& node, const std::vector<int64_t>& w) {
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  const auto ks = node.attr_ints("kernel_shape");
  if (!ks.empty() && ks != kernel) node.fail("kernel_shape " + shape_string(ks) + " differs from W " + shape_string(w));
  return kernel;
}

}  // namespace

ConvGeometry conv_geometry(const NodeAttributes& node, const std::vector<int64_t>& x, const std::vector<int64_t>& w) {
  check_conv_ranks(node, x, w);
  ConvGeometry g;
  g.n = x[0];
  g.c = x[1];
  g.m = w[0];
  g.group = node.attr_int("group", 1);
  if (g.group < 1 || g.c % g.group != 0 || g.m % g.group != 0 || w[1] * g.group != g.c)
    node.fail("channels do not match: X " + shape_string(x) + ", W " + shape_string(w) + ", group " +
              std::to_string(g.group));
  read_window(node, g, x, conv_kernel(node, w));
  forward_output(node, g, false);
  return g;
}

ConvGeometry conv_transpose_geometry(const NodeAttributes& node, const std::vector<int64_t>& x,
                                     const std::vector<int64_t>& w) {
  check_conv_ranks(node, x, w);
  const size_t rank = x.size() - 2;
  ConvGeometry g;
  g.n = x[0];
  g.c = x[1];
  g.group = node.attr_int("group", 1);
  if (g.group < 1 || w[0] != g.c || g.c % g.group != 0)
    node.fail("channels do not match: X " + shape_string(x) + ", W " + shape_string(w) + ", group " +
              std::to_string(g.group));
  g.m = w[1] * g.group;
  read_window(node, g, x, conv_kernel(node, w));
  const auto out_pad = spatial_attr(node, "output_padding", rank, 0);
  std::vector<int64_t> out_shape = node.attr_ints("output_shape");
  if (out_shape.size() == rank + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (!out_shape.empty() && out_shape.size() != rank)
    node.fail("output_shape has " + std::to_string(out_shape.size()) + " values for " + std::to_string(rank) +
              " spatial dims");
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (!same && auto_pad != "VALID" && auto_pad != "NOTSET") node.fail("unknown auto_pad '" + auto_pad + "'");
  g.out.resize(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t span = (g.kernel[i] - 1) * g.dilation[i] + 1;
    const int64_t full = g.stride[i] * (g.in[i] - 1) + out_pad[i] + span;
    if (!out_shape.empty() || same) {
      const int64_t target = out_shape.empty() ? g.in[i] * g.stride[i] : out_shape[i];
      const int64_t total = full - target;
      if (total < 0) {
        // A larger requested output: pad at the end (the extra positions stay zero + bias).
        g.pad_begin[i] = 0;
        g.pad_end[i] = total;
      } else if (auto_pad == "SAME_UPPER") {
        g.pad_begin[i] = total / 2;
        g.pad_end[i] = total - total / 2;
      } else {
        g.pad_begin[i] = total - total / 2;
        g.pad_end[i] = total / 2;
      }
      g.out[i] = target;
    } else {
      if (auto_pad == "VALID") g.pad_begin[i] = g.pad_end[i] = 0;
      g.out[i] = full - g.pad_begin[i] - g.pad_end[i];
    }
    if (g.out[i] < 0) node.fail("the output size of spatial dim " + std::to_string(i) + " is negative");
  }
  return g;
}

PoolGeometry pool_geometry(const NodeAttributes& node, const std::vector<int64_t>& x) {
  if (x.size() < 3) node.fail("X must be [N, C, D1, ...], got " + shape_string(x));
  PoolGeometry g;
  g.planes = x[0] * x[1];
  read_window(node, g, x, node.attr_ints("kernel_shape"));
  forward_output(node, g, node.attr_int("ceil_mode", 0) != 0);
  return g;
}

StridedView slice_view(const NodeAttributes& node, const std::vector<int64_t>& shape, const std::vector<int64_t>& starts,
                       const std::vector<int64_t>& ends, std::vector<int64_t> axes, std::vector<int64_t> steps) {
  if (starts.size() != ends.size()) node.fail("starts and ends have different lengths");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    node.fail("starts, ends, axes and steps must have the same length");
  axes = normalize_axes(node, axes, static_cast<int64_t>(shape.size()));
  StridedView v;
  v.shape = shape;
  const std::vector<int64_t> dense = strides_of(shape);
  v.strides = dense;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (steps[i] == 0) node.fail("slice steps cannot be 0");
    const size_t a = static_cast<size_t>(axes[i]);
    const ir::shape::SliceRange s = ir::shape::slice_range(starts[i], ends[i], steps[i], shape[a]);
    v.shape[a] = s.count;
    // With at most one element the step is never taken (and may be as large as INT64_MAX).
    v.strides[a] = s.count > 1 ? dense[a] * steps[i] : dense[a];
    v.offset += s.first * dense[a];
  }
  return v;
}

namespace {

/// A tensor as Tensor::describe names it: "float32[2, 3]".
std::string describe(DataType type, const std::vector<int64_t>& shape) {
  return std::string(ir::data_type_name(type)) + shape_string(shape);
}

}  // namespace

std::vector<int64_t> reshape_target(const NodeAttributes& node, DataType type, const std::vector<int64_t>& shape,
                                    const std::vector<int64_t>& spec, bool allowzero) {
  std::vector<int64_t> out(spec);
  int64_t infer = -1;
  int64_t known = 1;
  bool has_zero = false;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer >= 0) node.fail("shape " + shape_string(spec) + " has more than one -1");
      infer = static_cast<int64_t>(i);
      continue;
    }
    if (out[i] == 0) {
      has_zero = true;
      if (!allowzero) {
        if (i >= shape.size())
          node.fail("shape " + shape_string(spec) + " copies dim " + std::to_string(i) + " of " + describe(type, shape));
        out[i] = shape[i];
      }
    } else if (out[i] < 0) {
      node.fail("shape " + shape_string(spec) + " has a negative dimension");
    }
    known *= out[i];
  }
  const int64_t size = shape_size(shape);
  if (infer >= 0) {
    if (allowzero && has_zero) node.fail("shape " + shape_string(spec) + " has both 0 and -1 with allowzero");
    if (known == 0 || size % known != 0)
      node.fail("cannot infer the -1 of shape " + shape_string(spec) + " for " + describe(type, shape));
    out[static_cast<size_t>(infer)] = size / known;
  } else if (known != size) {
    node.fail("cannot reshape " + describe(type, shape) + " to " + shape_string(spec));
  }
  return out;
}

std::vector<int64_t> squeeze_shape(const NodeAttributes& node, DataType type, const std::vector<int64_t>& shape,
                                   const std::vector<int64_t>& axes, bool given) {
  std::vector<bool> drop(shape.size(), false);
  if (given) {
    for (int64_t a : normalize_axes(node, axes, static_cast<int64_t>(shape.size()))) {
      if (shape[static_cast<size_t>(a)] != 1)
        node.fail("cannot squeeze axis " + std::to_string(a) + " of " + describe(type, shape) + ": its size is not 1");
      drop[static_cast<size_t>(a)] = true;
    }
  } else {
    for (size_t i = 0; i < shape.size(); ++i) drop[i] = shape[i] == 1;
  }
  std::vector<int64_t> out;
  for (size_t i = 0; i < shape.size(); ++i)
    if (!drop[i]) out.push_back(shape[i]);
  return out;
}

std::vector<int64_t> unsqueeze_shape(const NodeAttributes& node, const std::vector<int64_t>& shape,
                                     const std::vector<int64_t>& axes) {
  const int64_t r = static_cast<int64_t>(shape.size() + axes.size());
  std::vector<bool> inserted(static_cast<size_t>(r), false);
  for (int64_t a : normalize_axes(node, axes, r)) inserted[static_cast<size_t>(a)] = true;
  std::vector<int64_t> out;
  size_t k = 0;
  for (int64_t i = 0; i < r; ++i) out.push_back(inserted[static_cast<size_t>(i)] ? 1 : shape[k++]);
  return out;
}

std::vector<int64_t> equal_split(const NodeAttributes& node, int64_t dim, int64_t parts, bool ceil_parts) {
  if (parts <= 0) node.fail("cannot split into " + std::to_string(parts) + " parts");
  if (!ceil_parts) {
    if (dim % parts != 0)
      node.fail("a dimension of " + std::to_string(dim) + " does not split into " + std::to_string(parts) +
                " equal parts");
    return std::vector<int64_t>(static_cast<size_t>(parts), dim / parts);
  }
  std::vector<int64_t> out;
  const int64_t chunk = (dim + parts - 1) / parts;
  int64_t left = dim;
  for (int64_t i = 0; i < parts; ++i) {
    out.push_back(std::min(chunk, left));
    left -= out.back();
  }
  return out;
}

void check_split_lengths(const NodeAttributes& node, const std::vector<int64_t>& lens, int64_t dim) {
  int64_t sum = 0;
  for (int64_t len : lens) {
    if (len < 0) node.fail("split lengths must be >= 0");
    sum += len;
  }
  if (sum != dim) node.fail("split lengths sum to " + std::to_string(sum) + ", the axis has " + std::to_string(dim));
}

ReduceAxes resolve_reduce_axes(const NodeAttributes& node, const std::vector<int64_t>& shape,
                               const std::vector<int64_t>& axes, bool keepdims, bool noop_with_empty) {
  ReduceAxes r;
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (axes.empty() && noop_with_empty) {
    r.noop = true;
    r.out_shape = shape;
    r.reduced.assign(shape.size(), false);
    return r;
  }
  r.reduced.assign(shape.size(), axes.empty());
  for (int64_t a : axes) {
    const int64_t n = normalize_axis(node, a, rank);
    if (r.reduced[static_cast<size_t>(n)]) node.fail("axis " + std::to_string(a) + " is given twice");
    r.reduced[static_cast<size_t>(n)] = true;
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!r.reduced[d]) r.out_shape.push_back(shape[d]);
    else if (keepdims) r.out_shape.push_back(1);
  }
  return r;
}

ReduceGroups merge_reduce_dims(const std::vector<int64_t>& shape, const std::vector<bool>& reduced) {
  ReduceGroups g;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!g.dims.empty() && g.reduced.back() == reduced[d]) {
      g.dims.back() *= shape[d];
    } else {
      g.dims.push_back(shape[d]);
      g.reduced.push_back(reduced[d]);
    }
  }
  return g;
}

SoftmaxGeometry softmax_geometry(const NodeAttributes& node, int64_t opset, const std::vector<int64_t>& shape) {
  if (shape.empty()) return {};
  const bool coerce = opset < 13;
  const auto a = static_cast<size_t>(
      normalize_axis(node, node.attr_int("axis", coerce ? 1 : -1), static_cast<int64_t>(shape.size())));
  SoftmaxGeometry g;
  g.outer = dims_product(shape, 0, a);
  g.n = coerce ? dims_product(shape, a, shape.size()) : shape[a];
  g.inner = coerce ? 1 : dims_product(shape, a + 1, shape.size());
  return g;
}

}  // namespace onnxtool::runner
