// CPU kernels of onnxruntime's quantized com.microsoft ops, the ones its quantizer writes into
// QOperator-format models: QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu,
// QLinearConcat, QLinearGlobalAveragePool, QLinearAveragePool, QLinearSoftmax, QLinearWhere,
// QGemm and NhwcMaxPool. They take int8 or uint8 tensors with per-tensor float scales and zero
// points of the tensor's type (other types are refused naming the node), and compute as
// onnxruntime's CPU kernels do on x86-64, so that the quantized outputs are the same bytes:
// through float with the same operations in the same order, rounding half to even and
// saturating, or through a 256-entry table of every input byte's result where onnxruntime
// builds one. Where onnxruntime's arithmetic has a peculiarity (QLinearSoftmax's scaled
// exponentials; QLinearAveragePool of a whole plane taking the global pool's integer path) it is
// kept.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "runner/cpu/elementwise_util.h"
#include "runner/cpu/kernels.h"
#include "runner/cpu/tensor_util.h"
#include "runner/geometry.h"

namespace onnxtool::runner::cpu {

namespace {

constexpr std::string_view kMs = ir::kMicrosoftDomain;

// ---------------------------------------------------------------- parameters

/// The node's 8-bit type from tensor `t`; other types are refused.
DataType quant_type(const KernelContext& ctx, const Tensor& t, const std::string& what) {
  if (t.dtype() != DataType::kInt8 && t.dtype() != DataType::kUInt8)
    ctx.fail(what + " is " + type_name(t.dtype()) + ": " + ctx.node().op_type +
             " takes int8 or uint8 (as onnxruntime's CPU kernel)");
  return t.dtype();
}

/// The one float of a per-tensor scale input.
float scale_of(const KernelContext& ctx, size_t i, const std::string& what) {
  const Tensor& t = ctx.input(i);
  if (t.dtype() != DataType::kFloat || t.size() != 1)
    ctx.fail(what + " " + t.describe() + " must be one float32 (per-tensor quantization)");
  return t.data<float>()[0];
}

/// The value of a per-tensor zero point input of type `type` (0 when omitted).
int32_t zero_of(const KernelContext& ctx, size_t i, DataType type, const std::string& what) {
  if (!ctx.has_input(i)) return 0;
  const Tensor& t = ctx.input(i);
  if (t.dtype() != type || t.size() != 1)
    ctx.fail(what + " " + t.describe() + " must be one " + type_name(type) + " value (per-tensor quantization)");
  return type == DataType::kInt8 ? t.data<int8_t>()[0] : t.data<uint8_t>()[0];
}

/// Calls f(T{}) with T the C type of an 8-bit quantized type.
template <class F>
void with_type(DataType type, F&& f) {
  if (type == DataType::kInt8) {
    f(int8_t{});
  } else {
    f(uint8_t{});
  }
}

/// A float already divided by the scale, zero point added, to the nearest integer (ties to
/// even, the rounding of the SSE/AVX conversions) and saturated to T.
template <class T>
T saturate(float v) {
  constexpr float lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
  const float r = std::nearbyint(v);
  return static_cast<T>(r < lo ? lo : r > hi ? hi : r);
}

/// Quantizes a float as onnxruntime's QuantizeLinear does: v / scale to the nearest integer,
/// then the zero point, saturated (NaN gives the lowest value: the clamps let no NaN through).
template <class T>
T quantize(float v, float scale, int32_t zero) {
  const float lo = static_cast<float>(std::numeric_limits<T>::lowest() - zero);
  const float hi = static_cast<float>(std::numeric_limits<T>::max() - zero);
  float q = v / scale;
  q = std::max(q, lo);  // max(NaN, lo) is lo
  q = std::min(q, hi);
  return static_cast<T>(static_cast<int32_t>(std::nearbyint(q)) + zero);
}

/// The product a * b rounded to float before anything is added to it. GCC contracts a * b + c
/// into one fused multiply-add (-ffp-contract=fast), rounding once, where onnxruntime's SSE
/// kernels round the product and the sum separately; the store keeps them apart.
inline float rounded_product(float a, float b) {
  volatile float p = a * b;
  return p;
}

/// Every byte's result of a quantized unary function: byte i read as T, dequantized with
/// (x_scale, x_zero), mapped by `f` (over all 256 floats at once), and quantized with
/// (y_scale, y_zero); indexed by the byte.
template <class T, class F>
std::vector<uint8_t> lookup_table(float x_scale, int32_t x_zero, float y_scale, int32_t y_zero, F&& f) {
  float in[256], out[256];
  for (int i = 0; i < 256; ++i)
    in[i] = x_scale * static_cast<float>(static_cast<int32_t>(static_cast<T>(i)) - x_zero);
  f(in, out);
  std::vector<uint8_t> table(256);
  for (int i = 0; i < 256; ++i) {
    const T q = quantize<T>(out[i], y_scale, y_zero);
    table[static_cast<size_t>(i)] = static_cast<uint8_t>(q);
  }
  return table;
}

/// The table that requantizes from (x_scale, x_zero) to (y_scale, y_zero), or an empty one when
/// both are the same (onnxruntime copies the bytes then).
std::vector<uint8_t> requantize_table(DataType type, float x_scale, int32_t x_zero, float y_scale, int32_t y_zero) {
  if (x_scale == y_scale && x_zero == y_zero) return {};
  std::vector<uint8_t> table;
  with_type(type, [&](auto tag) {
    using T = decltype(tag);
    table = lookup_table<T>(x_scale, x_zero, y_scale, y_zero, [](const float* in, float* out) {
      std::copy(in, in + 256, out);
    });
  });
  return table;
}

/// y = table[x] byte by byte over a whole tensor.
void apply_table(const Tensor& x, const std::vector<uint8_t>& table, Tensor& y) {
  const uint8_t* px = x.data<uint8_t>();
  uint8_t* py = y.mutable_data<uint8_t>();
  parallel_ranges(x.size(), kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) py[i] = table[px[i]];
  });
}

// ---------------------------------------------------------------- QLinearAdd, QLinearMul

/// Inputs (A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point) of the
/// binary ops, broadcast.
struct BinaryParams {
  DataType type;
  float sa, sb, sc;
  int32_t za, zb, zc;
};

BinaryParams binary_params(const KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  BinaryParams p;
  p.type = quant_type(ctx, a, "A");
  if (b.dtype() != p.type) ctx.fail("B is " + type_name(b.dtype()) + ", A is " + type_name(p.type));
  p.sa = scale_of(ctx, 1, "A_scale");
  p.za = zero_of(ctx, 2, p.type, "A_zero_point");
  p.sb = scale_of(ctx, 4, "B_scale");
  p.zb = zero_of(ctx, 5, p.type, "B_zero_point");
  p.sc = scale_of(ctx, 6, "C_scale");
  p.zc = zero_of(ctx, 7, p.type, "C_zero_point");
  return p;
}

/// Runs `op(x, y, x_is_a)` over the broadcast of A and B into C. `x` is the operand that
/// varies along a run (A unless A is fixed along it), `y` the other; onnxruntime's kernels take
/// the varying operand first, which decides the order of their float operations.
template <class T, class Op>
void binary_quant(KernelContext& ctx, Op op) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  const BroadcastIter it(ctx, {a.shape(), b.shape()});
  Tensor& c = ctx.output(0, a.dtype(), it.shape());
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* pc = c.mutable_data<T>();
  const int64_t sa = it.inner_stride(0), sb = it.inner_stride(1);
  it.parallel_runs([&](int64_t o, int64_t n, const int64_t* off) {
    const T* xa = pa + off[0];
    const T* xb = pb + off[1];
    T* y = pc + o;
    if (sa == 0) {
      for (int64_t j = 0; j < n; ++j) y[j] = op(xb[j], xa[0], false);
    } else {
      for (int64_t j = 0; j < n; ++j) y[j] = op(xa[j * sa], xb[j * sb], true);
    }
  });
}

// QLinearAdd: C = quantize(dequantize(A) + dequantize(B)). onnxruntime's AVX2 kernel works in
// units of C: x * (sx / sc) + y * (sy / sc) + (zc - (sx / sc) zx - (sy / sc) zy), the two
// products fused multiply-adds onto the constant part, the y one first.
void qlinear_add(KernelContext& ctx) {
  const BinaryParams p = binary_params(ctx);
  const float ra = p.sa / p.sc, rb = p.sb / p.sc;
  // The constant part for A first and for B first: the sum inside rounds in that order.
  const float fixed_a = static_cast<float>(p.zc) - (rounded_product(ra, static_cast<float>(p.za)) +
                                                    rounded_product(rb, static_cast<float>(p.zb)));
  const float fixed_b = static_cast<float>(p.zc) - (rounded_product(rb, static_cast<float>(p.zb)) +
                                                    rounded_product(ra, static_cast<float>(p.za)));
  with_type(p.type, [&](auto tag) {
    using T = decltype(tag);
    binary_quant<T>(ctx, [=](T x, T y, bool x_is_a) {
      const float rx = x_is_a ? ra : rb, ry = x_is_a ? rb : ra;
      const float base = std::fma(static_cast<float>(y), ry, x_is_a ? fixed_a : fixed_b);
      return saturate<T>(std::fma(static_cast<float>(x), rx, base));
    });
  });
}

// QLinearMul: C = quantize(dequantize(A) * dequantize(B)): the exact integer product of the
// centred values times sa * sb / sc, plus zc, each step rounded to float.
void qlinear_mul(KernelContext& ctx) {
  const BinaryParams p = binary_params(ctx);
  const float ratio = p.sa * p.sb / p.sc;
  const float zc = static_cast<float>(p.zc);
  with_type(p.type, [&](auto tag) {
    using T = decltype(tag);
    const int32_t za = p.za, zb = p.zb;
    binary_quant<T>(ctx, [=](T x, T y, bool x_is_a) {
      const int32_t prod = (static_cast<int32_t>(x) - (x_is_a ? za : zb)) * (static_cast<int32_t>(y) - (x_is_a ? zb : za));
      return saturate<T>(rounded_product(static_cast<float>(prod), ratio) + zc);
    });
  });
}

// ---------------------------------------------------------------- table-driven activations

/// QLinearSigmoid / QLinearLeakyRelu (X, X_scale, X_zero_point, Y_scale, Y_zero_point): a table
/// of f over every input byte, then a lookup per element.
template <class F>
void unary_table_op(KernelContext& ctx, F f) {
  const Tensor& x = ctx.input(0);
  const DataType type = quant_type(ctx, x, "X");
  const float xs = scale_of(ctx, 1, "X_scale"), ys = scale_of(ctx, 3, "Y_scale");
  const int32_t xz = zero_of(ctx, 2, type, "X_zero_point"), yz = zero_of(ctx, 4, type, "Y_zero_point");
  std::vector<uint8_t> table;
  with_type(type, [&](auto tag) { table = lookup_table<decltype(tag)>(xs, xz, ys, yz, f); });
  apply_table(x, table, ctx.output(0, type, x.shape()));
}

void qlinear_sigmoid(KernelContext& ctx) {
  unary_table_op(ctx, [](const float* in, float* out) { sigmoid_f32(in, out, 256); });
}

void qlinear_leaky_relu(KernelContext& ctx) {
  const float alpha = ctx.attr_float("alpha", 0.01f);
  unary_table_op(ctx, [alpha](const float* in, float* out) {
    for (int i = 0; i < 256; ++i) out[i] = in[i] >= 0.0f ? in[i] : alpha * in[i];
  });
}

// ---------------------------------------------------------------- QLinearConcat

// QLinearConcat(Y_scale, Y_zero_point, (X, X_scale, X_zero_point)...): each input requantized to
// the output's parameters by its table (copied when they are the same), then Concat.
void qlinear_concat(KernelContext& ctx) {
  const size_t count = ctx.input_count();
  if (count < 5 || (count - 2) % 3 != 0)
    ctx.fail("inputs must be Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) triples, got " +
             std::to_string(count) + " inputs");
  if (!ctx.has_input(1)) ctx.fail("Y_zero_point is required (it gives the output type)");
  const DataType type = quant_type(ctx, ctx.input(1), "Y_zero_point");
  const float ys = scale_of(ctx, 0, "Y_scale");
  const int32_t yz = zero_of(ctx, 1, type, "Y_zero_point");
  const size_t n = (count - 2) / 3;
  std::vector<const Tensor*> xs;
  std::vector<std::vector<uint8_t>> tables;
  for (size_t k = 0; k < n; ++k) {
    const size_t at = 2 + 3 * k;
    const std::string name = "input " + std::to_string(k);
    if (!ctx.has_input(at) || !ctx.has_input(at + 1) || !ctx.has_input(at + 2))
      ctx.fail(name + ": X, X_scale and X_zero_point are all required");
    const Tensor& x = ctx.input(at);
    if (x.dtype() != type) ctx.fail(name + " is " + x.describe() + ", the output is " + type_name(type));
    xs.push_back(&x);
    tables.push_back(requantize_table(type, scale_of(ctx, at + 1, name + " scale"), zero_of(ctx, at + 2, type, name + " zero point"), ys, yz));
  }
  const int64_t rank = static_cast<int64_t>(xs[0]->rank());
  if (rank == 0) ctx.fail("cannot concatenate scalars");
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), rank);
  std::vector<int64_t> shape = xs[0]->shape();
  shape[static_cast<size_t>(axis)] = 0;
  for (const Tensor* x : xs) {
    bool ok = x->rank() == xs[0]->rank();
    for (int64_t d = 0; ok && d < rank; ++d)
      ok = d == axis || x->dim(static_cast<size_t>(d)) == xs[0]->dim(static_cast<size_t>(d));
    if (!ok) ctx.fail("input " + x->describe() + " does not match " + xs[0]->describe() + " off axis " + std::to_string(axis));
    shape[static_cast<size_t>(axis)] += x->dim(static_cast<size_t>(axis));
  }
  Tensor& y = ctx.output(0, type, shape);
  const int64_t outer = dims_product(shape, 0, static_cast<size_t>(axis));
  const int64_t inner = dims_product(shape, static_cast<size_t>(axis) + 1, shape.size());
  const int64_t row = shape[static_cast<size_t>(axis)] * inner;
  uint8_t* py = y.mutable_data<uint8_t>();
  int64_t start = 0;
  for (size_t k = 0; k < n; ++k) {
    const int64_t len = xs[k]->dim(static_cast<size_t>(axis)) * inner;
    const uint8_t* px = xs[k]->data<uint8_t>();
    const std::vector<uint8_t>& table = tables[k];
    for (int64_t o = 0; o < outer; ++o) {
      const uint8_t* src = px + o * len;
      uint8_t* dst = py + o * row + start;
      if (table.empty()) {
        std::copy(src, src + len, dst);
      } else {
        for (int64_t i = 0; i < len; ++i) dst[i] = table[src[i]];
      }
    }
    start += len;
  }
}

// ---------------------------------------------------------------- average pools

/// The integer form of a global average: onnxruntime sums the bytes exactly in int32, removes
/// the zero point's share, and requantizes with x_scale / (y_scale * count), as its GEMMs'
/// outputs: scale in float, clamp, round half to even, add the zero point.
template <class T>
T requantize(int32_t acc, float scale, int32_t zero) {
  const float lo = static_cast<float>(std::numeric_limits<T>::lowest() - zero);
  const float hi = static_cast<float>(std::numeric_limits<T>::max() - zero);
  const float v = std::min(std::max(static_cast<float>(acc) * scale, lo), hi);
  return static_cast<T>(static_cast<int32_t>(std::nearbyint(v)) + zero);
}

/// Global average pool of [N, C, image] (or [N, image, C] channels last) into [N, C].
template <class T>
void global_average(const KernelContext& ctx, const T* x, T* y, int64_t n, int64_t c, int64_t image, bool channels_last,
                    float xs, int32_t xz, float ys, int32_t yz) {
  if (image >= 0x1000000) ctx.fail("the pooled plane has " + std::to_string(image) + " elements, more than onnxruntime's 2^24");
  const float scale = xs / (ys * static_cast<float>(image));
  if (!(scale >= 0x1.0p-32f && scale < 256.0f))
    ctx.fail("x_scale / (y_scale * plane size) = " + std::to_string(scale) + " is outside onnxruntime's range [2^-32, 256)");
  const int32_t bias = -xz * static_cast<int32_t>(image);
  parallel_ranges(n * c, 64, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const int64_t in = p / c, ch = p % c;
      int32_t acc = bias;
      for (int64_t i = 0; i < image; ++i)
        acc += channels_last ? x[(in * image + i) * c + ch] : x[p * image + i];
      y[p] = requantize<T>(acc, scale, yz);
    }
  });
}

// QLinearGlobalAveragePool(X, x_scale, x_zero_point, y_scale, y_zero_point), NCHW or NHWC.
void qlinear_global_average_pool(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const DataType type = quant_type(ctx, x, "X");
  if (x.rank() < 3) ctx.fail("X " + x.describe() + " must have rank 3 or more");
  const bool last = ctx.attr_int("channels_last", 0) != 0;
  const float xs = scale_of(ctx, 1, "x_scale"), ys = scale_of(ctx, 3, "y_scale");
  const int32_t xz = zero_of(ctx, 2, type, "x_zero_point"), yz = zero_of(ctx, 4, type, "y_zero_point");
  std::vector<int64_t> shape = x.shape();
  const size_t first = last ? 1 : 2;
  const int64_t image = dims_product(shape, first, first + shape.size() - 2);
  const int64_t c = last ? shape.back() : shape[1];
  for (size_t d = first; d < first + shape.size() - 2; ++d) shape[d] = 1;
  Tensor& y = ctx.output(0, type, shape);
  with_type(type, [&](auto tag) {
    using T = decltype(tag);
    global_average<T>(ctx, x.data<T>(), y.mutable_data<T>(), x.dim(0), c, image, last, xs, xz, ys, yz);
  });
}

/// X's shape with the channels moved to axis 1 (from the last axis when channels_last).
std::vector<int64_t> channels_first_shape(const std::vector<int64_t>& s, bool channels_last) {
  if (!channels_last || s.size() < 3) return s;
  std::vector<int64_t> out{s[0], s.back()};
  out.insert(out.end(), s.begin() + 1, s.end() - 1);
  return out;
}

/// The output shape of a pool computed channels first, in the input's layout.
std::vector<int64_t> layout_shape(const std::vector<int64_t>& nc_shape, bool channels_last) {
  if (!channels_last) return nc_shape;
  std::vector<int64_t> out{nc_shape[0]};
  out.insert(out.end(), nc_shape.begin() + 2, nc_shape.end());
  out.push_back(nc_shape[1]);
  return out;
}

/// Element offsets of plane p's element at spatial index `pos` in a tensor of `c` channels and
/// `image` spatial elements: channels first, or interleaved (channels last).
struct PlaneLayout {
  int64_t c, image;
  bool last;
  int64_t at(int64_t plane, int64_t pos) const {
    return last ? ((plane / c) * image + pos) * c + plane % c : plane * image + pos;
  }
};

/// Calls f(output position, input positions of its window that lie inside the input) for one
/// plane of a pooling geometry (1 to 3 spatial dims).
template <class F>
void for_windows(const PoolGeometry& g, F&& f) {
  const size_t r = g.in.size();
  std::vector<int64_t> idx(r, 0);
  std::vector<int64_t> positions;
  for (int64_t o = 0; o < g.out_size(); ++o) {
    // Decode o into idx (row-major over g.out).
    int64_t rest = o;
    for (size_t d = r; d-- > 0;) {
      idx[d] = rest % g.out[d];
      rest /= g.out[d];
    }
    positions.clear();
    std::vector<int64_t> k(r, 0);
    while (true) {
      int64_t pos = 0;
      bool inside = true;
      for (size_t d = 0; d < r; ++d) {
        const int64_t i = idx[d] * g.stride[d] - g.pad_begin[d] + k[d] * g.dilation[d];
        if (i < 0 || i >= g.in[d]) inside = false;
        pos = pos * g.in[d] + i;
      }
      if (inside) positions.push_back(pos);
      size_t d = r;
      while (d-- > 0) {
        if (++k[d] < g.kernel[d]) break;
        k[d] = 0;
      }
      if (d == static_cast<size_t>(-1)) break;
    }
    f(o, positions);
  }
}

// QLinearAveragePool(X, x_scale, x_zero_point, y_scale, y_zero_point): onnxruntime dequantizes
// X to float, sums each window's elements in order, divides by the count (the kernel size with
// count_include_pad, else the elements inside the input) and quantizes with
// nearbyint(v / y_scale + y_zero_point). A kernel covering the whole unpadded plane takes the
// global pool's integer path instead.
void qlinear_average_pool(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const DataType type = quant_type(ctx, x, "X");
  const bool last = ctx.attr_int("channels_last", 0) != 0;
  const float xs = scale_of(ctx, 1, "x_scale"), ys = scale_of(ctx, 3, "y_scale");
  const int32_t xz = zero_of(ctx, 2, type, "x_zero_point"), yz = zero_of(ctx, 4, type, "y_zero_point");
  if (ctx.has_attr("dilations")) ctx.fail("QLinearAveragePool has no dilations");
  const std::vector<int64_t> nc = channels_first_shape(x.shape(), last);
  const PoolGeometry g = pool_geometry(ctx, nc);
  if (g.in.size() > 3) ctx.fail("pools over " + std::to_string(g.in.size()) + " spatial dims are not supported (1 to 3 are)");
  std::vector<int64_t> out_nc{nc[0], nc[1]};
  out_nc.insert(out_nc.end(), g.out.begin(), g.out.end());
  Tensor& y = ctx.output(0, type, layout_shape(out_nc, last));
  const bool include_pad = ctx.attr_int("count_include_pad", 0) != 0;
  const bool whole = g.kernel == g.in && std::all_of(g.pad_begin.begin(), g.pad_begin.end(), [](int64_t p) { return p == 0; }) &&
                     std::all_of(g.pad_end.begin(), g.pad_end.end(), [](int64_t p) { return p == 0; });
  with_type(type, [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    if (whole) {
      global_average<T>(ctx, px, py, nc[0], nc[1], g.in_size(), last, xs, xz, ys, yz);
      return;
    }
    float deq[256];
    for (int i = 0; i < 256; ++i) deq[i] = xs * static_cast<float>(static_cast<int32_t>(static_cast<T>(i)) - xz);
    const PlaneLayout in{nc[1], g.in_size(), last}, out{nc[1], g.out_size(), last};
    const float yzf = static_cast<float>(yz);
    parallel_ranges(g.planes, 1, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        for_windows(g, [&](int64_t o, const std::vector<int64_t>& positions) {
          float sum = 0.0f;
          for (int64_t pos : positions) sum += deq[static_cast<uint8_t>(px[in.at(p, pos)])];
          const int64_t count = include_pad ? g.kernel_size() : static_cast<int64_t>(positions.size());
          sum /= static_cast<float>(count);
          const float q = std::nearbyint(sum / ys + yzf);
          // onnxruntime converts to int32 before clamping.
          const int32_t qi = static_cast<int32_t>(q);
          py[out.at(p, o)] = static_cast<T>(std::clamp<int32_t>(qi, std::numeric_limits<T>::lowest(), std::numeric_limits<T>::max()));
        });
      }
    });
  });
}

// NhwcMaxPool(x): MaxPool of an int8/uint8 tensor laid out [N, spatial..., C]; a window wholly in
// the padding gives the type's lowest value.
void nhwc_max_pool(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const DataType type = quant_type(ctx, x, "x");
  const std::vector<int64_t> nc = channels_first_shape(x.shape(), true);
  const PoolGeometry g = pool_geometry(ctx, nc);
  std::vector<int64_t> out_nc{nc[0], nc[1]};
  out_nc.insert(out_nc.end(), g.out.begin(), g.out.end());
  Tensor& y = ctx.output(0, type, layout_shape(out_nc, true));
  with_type(type, [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    const PlaneLayout in{nc[1], g.in_size(), true}, out{nc[1], g.out_size(), true};
    parallel_ranges(g.planes, 1, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        for_windows(g, [&](int64_t o, const std::vector<int64_t>& positions) {
          T m = std::numeric_limits<T>::lowest();
          for (int64_t pos : positions) m = std::max(m, px[in.at(p, pos)]);
          py[out.at(p, o)] = m;
        });
      }
    });
  });
}

// ---------------------------------------------------------------- QLinearSoftmax

// QLinearSoftmax(X, X_scale, x_zero_point, y_scale, y_zero_point), attributes opset and axis:
// onnxruntime's integer-friendly softmax. A table holds exp((i - 255 + shift) * X_scale) for the
// 256 distances i - 255 of an element below its row's maximum (the shift keeps a row's sum of D
// entries under FLT_MAX), computed in double and stored as float; each row sums its entries in
// float, and element i becomes nearbyint(entry * floor(1 / y_scale) / sum) + y_zero_point. The
// row is the flattened dims from axis on before opset 13, the one axis after. Results above the
// type's maximum saturate (with the usual y_scale 1/256 a row of one dominant element gives 256
// steps above the zero point); none can fall below the zero point.
void qlinear_softmax(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const DataType type = quant_type(ctx, x, "X");
  if (!ctx.has_attr("opset")) ctx.fail("the opset attribute is required");
  const int64_t opset = ctx.attr_int("opset", 13);
  const float xs = scale_of(ctx, 1, "X_scale"), ys = scale_of(ctx, 3, "y_scale");
  const int32_t yz = zero_of(ctx, 4, type, "y_zero_point");
  Tensor& y = ctx.output(0, type, x.shape());
  if (x.size() == 0) return;
  const int64_t rank = static_cast<int64_t>(x.rank());
  if (rank == 0) ctx.fail("X must have rank 1 or more");
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", opset < 13 ? 1 : -1), rank);
  const auto& s = x.shape();
  // Rows of D elements at a stride of `inner` (1 before opset 13: the flattened tail is one row).
  const int64_t d = opset < 13 ? dims_product(s, static_cast<size_t>(axis), s.size()) : s[static_cast<size_t>(axis)];
  const int64_t inner = opset < 13 ? 1 : dims_product(s, static_cast<size_t>(axis) + 1, s.size());
  const int64_t outer = x.size() / (d * inner);
  double shift = std::log(static_cast<double>(FLT_MAX / static_cast<float>(d)));
  shift = std::max(0.0, shift - 5.0) / static_cast<double>(xs);
  float table[256];
  for (int i = 0; i < 256; ++i)
    table[i] = static_cast<float>(std::exp((static_cast<double>(i) - 255.0 + shift) * static_cast<double>(xs)));
  const float scale = std::floor(1.0f / ys);
  with_type(type, [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    parallel_ranges(outer * inner, 16, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const int64_t base = (r / inner) * d * inner + r % inner;
        int32_t max = std::numeric_limits<T>::lowest();
        for (int64_t j = 0; j < d; ++j) max = std::max<int32_t>(max, px[base + j * inner]);
        const auto entry = [&](int64_t j) { return table[255 + static_cast<int32_t>(px[base + j * inner]) - max]; };
        float sum = 0.0f;
        for (int64_t j = 0; j < d; ++j) sum += entry(j);
        for (int64_t j = 0; j < d; ++j) {
          const int32_t q = static_cast<int32_t>(std::nearbyint(entry(j) * scale / sum)) + yz;
          py[base + j * inner] = static_cast<T>(std::min<int32_t>(q, std::numeric_limits<T>::max()));
        }
      }
    });
  });
}

// ---------------------------------------------------------------- QLinearWhere

// QLinearWhere(condition, X, x_scale, x_zero_point, Y, y_scale, y_zero_point, z_scale,
// z_zero_point): Where of the three broadcast, X and Y requantized to Z's parameters by tables.
void qlinear_where(KernelContext& ctx) {
  const Tensor& cond = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& yv = ctx.input(4);
  if (cond.dtype() != DataType::kBool) ctx.fail("condition is " + type_name(cond.dtype()) + ", not bool");
  const DataType type = quant_type(ctx, x, "X");
  if (yv.dtype() != type) ctx.fail("Y is " + type_name(yv.dtype()) + ", X is " + type_name(type));
  for (size_t i : {size_t{3}, size_t{6}, size_t{8}})
    if (!ctx.has_input(i)) ctx.fail("the zero points are required");
  const float zs = scale_of(ctx, 7, "z_scale");
  const int32_t zz = zero_of(ctx, 8, type, "z_zero_point");
  std::vector<uint8_t> tx = requantize_table(type, scale_of(ctx, 2, "x_scale"), zero_of(ctx, 3, type, "x_zero_point"), zs, zz);
  std::vector<uint8_t> ty = requantize_table(type, scale_of(ctx, 5, "y_scale"), zero_of(ctx, 6, type, "y_zero_point"), zs, zz);
  if (tx.empty()) {
    tx.resize(256);
    for (int i = 0; i < 256; ++i) tx[static_cast<size_t>(i)] = static_cast<uint8_t>(i);
  }
  if (ty.empty()) {
    ty.resize(256);
    for (int i = 0; i < 256; ++i) ty[static_cast<size_t>(i)] = static_cast<uint8_t>(i);
  }
  const BroadcastIter it(ctx, {cond.shape(), x.shape(), yv.shape()});
  Tensor& z = ctx.output(0, type, it.shape());
  const uint8_t* pc = cond.data<uint8_t>();
  const uint8_t* pxv = x.data<uint8_t>();
  const uint8_t* pyv = yv.data<uint8_t>();
  uint8_t* pz = z.mutable_data<uint8_t>();
  const int64_t s0 = it.inner_stride(0), s1 = it.inner_stride(1), s2 = it.inner_stride(2);
  it.parallel_runs([&](int64_t o, int64_t n, const int64_t* off) {
    for (int64_t j = 0; j < n; ++j)
      pz[o + j] = pc[off[0] + j * s0] ? tx[pxv[off[1] + j * s1]] : ty[pyv[off[2] + j * s2]];
  });
}

// ---------------------------------------------------------------- QGemm

/// A 2-D tensor transposed into a new dense one.
Tensor transposed(const Tensor& t) {
  const int64_t r = t.dim(0), c = t.dim(1);
  Tensor out(t.dtype(), {c, r});
  const uint8_t* p = t.data<uint8_t>();
  uint8_t* q = out.mutable_data<uint8_t>();
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) q[j * r + i] = p[i * c + j];
  return out;
}

// QGemm(A, a_scale, a_zero_point, B, b_scale, b_zero_point, C, y_scale, y_zero_point): the exact
// int32 sums of (A - a_zero)(B - b_zero) (B's zero point and scale per tensor or per column), plus
// C (int32, broadcast to [M, N]), scaled by alpha * a_scale * b_scale (/ y_scale) in float; with
// y_zero_point the result is requantized to A's type, else it is float.
void qgemm(KernelContext& ctx) {
  const Tensor& a0 = ctx.input(0);
  const Tensor& b0 = ctx.input(3);
  const DataType ta = quant_type(ctx, a0, "A");
  const DataType tb = quant_type(ctx, b0, "B");
  if (ta == DataType::kInt8 && tb != DataType::kInt8) ctx.fail("int8 A needs int8 B (as onnxruntime's CPU kernel)");
  if (a0.rank() != 2 || b0.rank() != 2) ctx.fail("A " + a0.describe() + " and B " + b0.describe() + " must be 2-D");
  const Tensor a = ctx.attr_int("transA", 0) ? transposed(a0) : a0;
  const Tensor b = ctx.attr_int("transB", 0) ? transposed(b0) : b0;
  const int64_t m = a.dim(0), k = a.dim(1), n = b.dim(1);
  if (b.dim(0) != k) ctx.fail("A " + a.describe() + " and B " + b.describe() + " (after transA/transB) do not multiply");
  const float as = scale_of(ctx, 1, "a_scale");
  const Tensor& a_zero = ctx.input(2);
  if (a_zero.dtype() != ta || a_zero.size() != 1) ctx.fail("a_zero_point " + a_zero.describe() + " must be one " + type_name(ta));
  const Tensor& b_scale = ctx.input(4);
  const Tensor& b_zero = ctx.input(5);
  if (b_scale.dtype() != DataType::kFloat || !(b_scale.size() == 1 || (b_scale.rank() == 1 && b_scale.size() == n)))
    ctx.fail("b_scale " + b_scale.describe() + " must be one float32 or one per column (" + std::to_string(n) + ")");
  if (b_zero.dtype() != tb || b_zero.size() != b_scale.size())
    ctx.fail("b_zero_point " + b_zero.describe() + " must be " + type_name(tb) + " of b_scale's size");
  Tensor sums = matmul_integer_of(ctx, a, b, &a_zero, &b_zero);
  int32_t* ps = sums.mutable_data<int32_t>();
  if (ctx.has_input(6)) {
    const Tensor& c = ctx.input(6);
    if (c.dtype() != DataType::kInt32) ctx.fail("C is " + type_name(c.dtype()) + ", not int32");
    // Unidirectional broadcast of C to [M, N].
    const auto& cs = c.shape();
    const int64_t cr = cs.size() == 2 ? cs[0] : 1, cc = cs.empty() ? 1 : cs.back();
    if (cs.size() > 2 || (cr != 1 && cr != m) || (cc != 1 && cc != n))
      ctx.fail("C " + c.describe() + " does not broadcast to [" + std::to_string(m) + ", " + std::to_string(n) + "]");
    const int32_t* pc = c.data<int32_t>();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        ps[i * n + j] += pc[(cr == 1 ? 0 : i) * cc + (cc == 1 ? 0 : j)];
  }
  const float alpha = ctx.attr_float("alpha", 1.0f);
  const bool has_y_scale = ctx.has_input(7);
  const float ys = has_y_scale ? scale_of(ctx, 7, "y_scale") : 1.0f;
  std::vector<float> scales(static_cast<size_t>(b_scale.size()));
  for (size_t j = 0; j < scales.size(); ++j) {
    scales[j] = alpha * as * b_scale.data<float>()[j];
    if (has_y_scale) scales[j] /= ys;
  }
  const auto scale_at = [&](int64_t j) { return scales.size() == 1 ? scales[0] : scales[static_cast<size_t>(j)]; };
  if (!ctx.has_input(8)) {
    Tensor& y = ctx.output(0, DataType::kFloat, {m, n});
    float* py = y.mutable_data<float>();
    for (int64_t i = 0; i < m * n; ++i) py[i] = static_cast<float>(ps[i]) * scale_at(i % n);
    return;
  }
  if (!has_y_scale) ctx.fail("y_zero_point needs y_scale");
  const int32_t yz = zero_of(ctx, 8, ta, "y_zero_point");
  Tensor& y = ctx.output(0, ta, {m, n});
  with_type(ta, [&](auto tag) {
    using T = decltype(tag);
    T* py = y.mutable_data<T>();
    for (int64_t i = 0; i < m * n; ++i) py[i] = requantize<T>(ps[i], scale_at(i % n), yz);
  });
}

}  // namespace

void register_contrib_quant_kernels(KernelRegistry& r) {
  const auto add = [&r](std::string_view op, KernelFn fn) { r.add(kMs, op, 1, kMaxOpset, fn); };
  add("QLinearAdd", qlinear_add);
  add("QLinearMul", qlinear_mul);
  add("QLinearSigmoid", qlinear_sigmoid);
  add("QLinearLeakyRelu", qlinear_leaky_relu);
  add("QLinearConcat", qlinear_concat);
  add("QLinearGlobalAveragePool", qlinear_global_average_pool);
  add("QLinearAveragePool", qlinear_average_pool);
  add("QLinearSoftmax", qlinear_softmax);
  add("QLinearWhere", qlinear_where);
  add("QGemm", qgemm);
  add("NhwcMaxPool", nhwc_max_pool);
}

}  // namespace onnxtool::runner::cpu
