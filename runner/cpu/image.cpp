// Image-layout kernels of the recent opsets: Col2Im and CenterCropPad (18) and AffineGrid (20).
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "runner/cpu/elementwise_util.h"
#include "runner/cpu/kernels.h"
#include "runner/cpu/tensor_util.h"

namespace onnxtool::runner::cpu {
namespace {

/// An int list attribute of `n` values (the default `fill` each when absent); fails on a wrong count.
std::vector<int64_t> spatial_attr(const KernelContext& ctx, const char* name, size_t n, int64_t fill) {
  if (!ctx.has_attr(name)) return std::vector<int64_t>(n, fill);
  std::vector<int64_t> v = ctx.attr_ints(name);
  if (v.size() != n)
    ctx.fail(std::string(name) + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(n));
  return v;
}

// ---------------------------------------------------------------- Col2Im

void col2im(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> image = read_int_list(ctx, ctx.input(1), "image_shape");
  const std::vector<int64_t> block = read_int_list(ctx, ctx.input(2), "block_shape");
  const size_t nd = image.size();
  if (x.rank() != 3) ctx.fail("input must be 3-D (N, C * prod(block_shape), L), has shape " + shape_string(x.shape()));
  if (nd < 1 || block.size() != nd)
    ctx.fail("image_shape and block_shape must have the same (non-zero) length");
  const std::vector<int64_t> dil = spatial_attr(ctx, "dilations", nd, 1);
  const std::vector<int64_t> str = spatial_attr(ctx, "strides", nd, 1);
  const std::vector<int64_t> pads = spatial_attr(ctx, "pads", 2 * nd, 0);
  int64_t block_size = 1, blocks = 1;
  std::vector<int64_t> counts(nd);
  for (size_t d = 0; d < nd; ++d) {
    if (image[d] < 0 || block[d] <= 0 || dil[d] <= 0 || str[d] <= 0 || pads[d] < 0 || pads[nd + d] < 0)
      ctx.fail("image_shape, block_shape, dilations, strides and pads must be positive (pads non-negative)");
    const int64_t span = dil[d] * (block[d] - 1) + 1;
    const int64_t room = image[d] + pads[d] + pads[nd + d] - span;
    if (room < 0) ctx.fail("the dilated block does not fit the padded image along spatial axis " + std::to_string(d));
    counts[d] = room / str[d] + 1;
    block_size *= block[d];
    blocks *= counts[d];
  }
  if (x.dim(1) % block_size != 0)
    ctx.fail("input dim 1 (" + std::to_string(x.dim(1)) + ") is not a multiple of prod(block_shape) = " +
             std::to_string(block_size));
  if (x.dim(2) != blocks)
    ctx.fail("input has " + std::to_string(x.dim(2)) + " blocks, the geometry gives " + std::to_string(blocks));
  const int64_t n = x.dim(0), c = x.dim(1) / block_size;
  std::vector<int64_t> out_shape = {n, c};
  int64_t plane = 1;
  for (int64_t v : image) out_shape.push_back(v), plane *= v;
  Tensor& y = ctx.output(0, x.dtype(), out_shape);
  const std::vector<int64_t> img_strides = strides_of(image);
  // Where block element k of block l lands (-1: in the padding), shared by every (n, c).
  std::vector<int64_t> target(static_cast<size_t>(block_size * blocks));
  for (int64_t k = 0; k < block_size; ++k) {
    for (int64_t l = 0; l < blocks; ++l) {
      int64_t kr = k, lr = l, off = 0;
      for (size_t d = nd; d-- > 0;) {
        const int64_t kd = kr % block[d], ld = lr % counts[d];
        kr /= block[d], lr /= counts[d];
        const int64_t pos = ld * str[d] - pads[d] + kd * dil[d];
        if (off < 0 || pos < 0 || pos >= image[d]) off = -1;
        else off += pos * img_strides[d];
      }
      target[static_cast<size_t>(k * blocks + l)] = off;
    }
  }
  visit_or_fail<kNumeric>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    // Integers add with wrap-around (unsigned arithmetic), floats in their calc type.
    using Acc = std::conditional_t<is_float_v<T>, calc_t<T>, uint64_t>;
    const T* in = x.data<T>();
    T* out = y.mutable_data<T>();
    parallel_ranges(n * c, 1, [&](int64_t p0, int64_t p1) {
      std::vector<Acc> acc(static_cast<size_t>(plane));
      for (int64_t p = p0; p < p1; ++p) {
        std::fill(acc.begin(), acc.end(), Acc(0));
        const T* src = in + p * block_size * blocks;
        for (size_t i = 0; i < target.size(); ++i)
          if (target[i] >= 0) acc[static_cast<size_t>(target[i])] += static_cast<Acc>(Num<T>::load(src[i]));
        for (int64_t i = 0; i < plane; ++i)
          out[p * plane + i] = Num<T>::store(static_cast<calc_t<T>>(acc[static_cast<size_t>(i)]));
      }
    });
  });
}

// ---------------------------------------------------------------- CenterCropPad

void center_crop_pad(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> sizes = read_int_list(ctx, ctx.input(1), "shape");
  const int64_t rank = static_cast<int64_t>(x.rank());
  std::vector<int64_t> axes;
  if (ctx.has_attr("axes")) {
    axes = normalize_axes(ctx, ctx.attr_ints("axes"), rank);
  } else {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  if (sizes.size() != axes.size())
    ctx.fail("shape has " + std::to_string(sizes.size()) + " values for " + std::to_string(axes.size()) + " axes");
  std::vector<int64_t> out_shape = x.shape();
  // Per dim: output index o reads input index o + shift (negative shift: padding at the start).
  std::vector<int64_t> shift(x.rank(), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    const auto a = static_cast<size_t>(axes[i]);
    if (sizes[i] < 0) ctx.fail("shape value " + std::to_string(sizes[i]) + " is negative");
    const int64_t dim = x.dim(a);
    out_shape[a] = sizes[i];
    // Cropping starts at floor((dim - size) / 2); padding puts floor((size - dim) / 2) before.
    shift[a] = sizes[i] <= dim ? (dim - sizes[i]) / 2 : -((sizes[i] - dim) / 2);
  }
  Tensor& y = ctx.output(0, x.dtype(), out_shape);
  const std::vector<int64_t> in_strides = strides_of(x.shape());
  visit_storage_or_fail(ctx, x.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E* in = elements<E>(x);
    E* out = mutable_elements<E>(y);
    const E zero{};
    parallel_ranges(y.size(), 4096, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        int64_t rest = i, off = 0;
        bool inside = true;
        for (size_t d = x.rank(); d-- > 0;) {
          const int64_t src = rest % out_shape[d] + shift[d];
          rest /= out_shape[d];
          if (src < 0 || src >= x.dim(d)) inside = false;
          else off += src * in_strides[d];
        }
        out[i] = inside ? in[off] : zero;
      }
    });
  });
}

// ---------------------------------------------------------------- AffineGrid

void affine_grid(KernelContext& ctx) {
  const Tensor& theta = ctx.input(0);
  const std::vector<int64_t> size = read_int_list(ctx, ctx.input(1), "size");
  if (size.size() != 4 && size.size() != 5)
    ctx.fail("size must be (N, C, H, W) or (N, C, D, H, W), has " + std::to_string(size.size()) + " values");
  const size_t nd = size.size() - 2;
  const int64_t n = size[0];
  if (theta.shape() != std::vector<int64_t>{n, static_cast<int64_t>(nd), static_cast<int64_t>(nd + 1)})
    ctx.fail("theta must be (N, " + std::to_string(nd) + ", " + std::to_string(nd + 1) + ") for size N = " +
             std::to_string(n) + ", is " + shape_string(theta.shape()));
  for (size_t d = 2; d < size.size(); ++d)
    if (size[d] < 0) ctx.fail("size has a negative dimension");
  const bool align = ctx.attr_int("align_corners", 0) != 0;
  // The normalized coordinate of index i along an axis of length len.
  auto coord = [align](int64_t i, int64_t len) -> double {
    if (align) return len > 1 ? -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(len - 1) : -1.0;
    return -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(len);
  };
  std::vector<int64_t> out_shape = {n};
  for (size_t d = 2; d < size.size(); ++d) out_shape.push_back(size[d]);
  out_shape.push_back(static_cast<int64_t>(nd));
  Tensor& grid = ctx.output(0, theta.dtype(), out_shape);
  const std::vector<int64_t> spatial(size.begin() + 2, size.end());
  const int64_t points = dims_product(spatial, 0, spatial.size());
  visit_or_fail<kFloats>(ctx, theta.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* th = theta.data<T>();
    T* out = grid.mutable_data<T>();
    parallel_ranges(n * points, 4096, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t b = i / points;
        int64_t rest = i % points;
        // Homogeneous base point (x, y[, z], 1): x from the last (width) axis.
        double base[4] = {0, 0, 0, 1};
        for (size_t d = nd; d-- > 0;) {
          base[nd - 1 - d] = coord(rest % spatial[d], spatial[d]);
          rest /= spatial[d];
        }
        base[nd] = 1;
        for (size_t r = 0; r < nd; ++r) {
          double v = 0;
          for (size_t k = 0; k <= nd; ++k)
            v += static_cast<double>(Num<T>::load(th[(b * static_cast<int64_t>(nd) + static_cast<int64_t>(r)) *
                                                          static_cast<int64_t>(nd + 1) +
                                                      static_cast<int64_t>(k)])) *
                 base[k];
          out[i * static_cast<int64_t>(nd) + static_cast<int64_t>(r)] = Num<T>::store(static_cast<calc_t<T>>(v));
        }
      }
    });
  });
}

}  // namespace

void register_image_kernels(KernelRegistry& r) {
  r.add("Col2Im", col2im);
  r.add("CenterCropPad", center_crop_pad);
  r.add("AffineGrid", affine_grid);
}

}  // namespace onnxtool::runner::cpu
