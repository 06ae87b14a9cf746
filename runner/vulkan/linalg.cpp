// Vulkan kernels of MatMul, Gemm, Conv and ConvTranspose.
//
// MatMul and Gemm share matmul.comp, a shared-memory tiled product with strides for transposes,
// broadcast batch offsets and an optional broadcast bias. Conv (conv.comp) and ConvTranspose
// (conv_transpose.comp) are direct: one invocation per output element summing its inputs (the
// transposed one as a gather, without atomics), for 1 to 3 spatial dims. Shapes, pads and
// output sizes follow the CPU kernels (runner/cpu/matmul.cpp, conv.cpp); what those kernels
// reject as an error is declined here so that the CPU reports it.
#include <algorithm>
#include <string>
#include <vector>

#include "runner/geometry.h"
#include "runner/vulkan/backend.h"

namespace onnxtool::runner::vulkan {

namespace {

constexpr size_t kMaxBatchRank = 4;  // MatMul outputs of rank 6 at most
constexpr uint32_t kMaxTile = 16;    // MAX_TILE in matmul.comp

/// Declines unless inputs 1..count-1 (those present) have the element type of input 0, a
/// float the device computes.
// ---------------------------------------------------------------- MatMul, Gemm

struct MatMulParams {
  uint32_t m, n, k;
  uint32_t batch_rank;
  uint32_t batch_dims[kMaxBatchRank];
  uint32_t a_batch[kMaxBatchRank];
  uint32_t b_batch[kMaxBatchRank];
  uint32_t a_row, a_col;
  uint32_t b_row, b_col;
  uint32_t c_row, c_col;
  uint32_t has_bias;
  float alpha, beta;
  uint32_t k_begin, k_end;  // the piece of K this dispatch sums
  uint32_t piece;           // kPieceRead | kPieceWrite
};
static_assert(sizeof(MatMulParams) <= 128, "push constants");

/// The flags of a piece of a split sum (PIECE_READ, PIECE_WRITE in matmul.comp and conv.comp):
/// it adds the float32 partial sums the pieces before it left, and leaves its own for the next
/// instead of writing the output.
constexpr uint32_t kPieceRead = 1, kPieceWrite = 2;

/// The tile edge: 16, or less on a device whose workgroups hold fewer than 256 invocations.
uint32_t tile_size(DeviceKernelContext& ctx) {
  const uint32_t limit = backend_of(ctx).device().physical().max_workgroup_invocations;
  uint32_t t = kMaxTile;
  while (t > 1 && t * t > limit) --t;
  return t;
}

/// Records the product into `y` (allocated by the caller after every check has passed).
void record_matmul(DeviceKernelContext& ctx, DataType dtype, const MatMulParams& p, uint32_t batches,
                   const std::shared_ptr<const VulkanTensor>& a, const std::shared_ptr<const VulkanTensor>& b,
                   const std::shared_ptr<const VulkanTensor>& bias, const std::shared_ptr<const VulkanTensor>& y) {
  if (p.m == 0 || p.n == 0 || batches == 0) return;
  Device& dev = backend_of(ctx).device();
  const uint32_t ts = tile_size(ctx);
  const Pipeline& pipe = dev.pipeline(accumulating_shader_for(ctx, "matmul", dtype), 5, ts, ts, 1);
  // An invocation loops over the batch dims, then over K a tile at a time with a loop over the
  // tile's width inside: K is cut into pieces of whole tiles that keep that within the bound.
  const uint64_t fixed = loop_cost(kMaxBatchRank);
  const uint64_t tiles_per_piece = (kMaxLoopIterations - fixed - 1) / (loop_cost(ts) + 1);
  const uint64_t piece = std::max<uint64_t>(1, tiles_per_piece) * ts;
  std::shared_ptr<const VulkanTensor> part;
  if (p.k > piece) part = backend_of(ctx).allocate(DataType::kFloat, {int64_t{batches} * p.m * p.n});
  MatMulParams q = p;
  for (uint64_t k0 = 0; k0 < std::max<uint32_t>(p.k, 1); k0 += piece) {
    q.k_begin = static_cast<uint32_t>(k0);
    q.k_end = static_cast<uint32_t>(std::min<uint64_t>(p.k, k0 + piece));
    q.piece = (k0 > 0 ? kPieceRead : 0) | (k0 + piece < p.k ? kPieceWrite : 0);
    dev.dispatch(pipe, {a->range(), b->range(), (bias ? bias : a)->range(), y->range(), (part ? part : y)->range()},
                 &q, sizeof q, (p.n + ts - 1) / ts, (p.m + ts - 1) / ts, batches);
  }
}

/// Declines when the grid of a product does not fit one dispatch.
void check_grid(DeviceKernelContext& ctx, int64_t m, int64_t n, int64_t batches) {
  const auto& phys = backend_of(ctx).device().physical();
  const int64_t ts = tile_size(ctx);
  if ((n + ts - 1) / ts > phys.max_workgroup_count[0] || (m + ts - 1) / ts > phys.max_workgroup_count[1] ||
      batches > phys.max_workgroup_count[2])
    ctx.decline("the product needs more workgroups than one dispatch has");
}

void matmul_kernel(DeviceKernelContext& ctx) {
  const DataType dtype = require_same_float(ctx, 2);
  std::vector<int64_t> sa = ctx.input_shape(0), sb = ctx.input_shape(1);
  if (sa.empty() || sb.empty()) ctx.decline("a scalar operand");
  const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), 1);
  if (b_vec) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  if (sb[sb.size() - 2] != k) ctx.decline("the inner dims differ");
  const std::vector<int64_t> ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  const size_t rank = std::max(ba.size(), bb.size());
  if (rank > kMaxBatchRank) ctx.decline("more than 4 batch dims");
  MatMulParams p{};
  std::vector<int64_t> batch(rank);
  int64_t a_stride = m * k, b_stride = k * n;  // elements per step of the current batch dim
  for (size_t d = rank; d-- > 0;) {
    const int64_t x = d + ba.size() >= rank ? ba[d + ba.size() - rank] : 1;
    const int64_t z = d + bb.size() >= rank ? bb[d + bb.size() - rank] : 1;
    if (x != z && x != 1 && z != 1) ctx.decline("the batch dims do not broadcast");
    batch[d] = (x == 0 || z == 0) ? 0 : std::max(x, z);
    p.a_batch[d] = x == 1 ? 0 : checked_u32(ctx, a_stride, "A's batch stride");
    p.b_batch[d] = z == 1 ? 0 : checked_u32(ctx, b_stride, "B's batch stride");
    a_stride *= x;
    b_stride *= z;
  }
  std::vector<int64_t> out = batch;
  if (!a_vec) out.push_back(m);
  if (!b_vec) out.push_back(n);
  int64_t batches = 1;
  for (size_t d = 0; d < rank; ++d) {
    p.batch_dims[d] = checked_u32(ctx, batch[d], "a batch dim");
    batches *= batch[d];
  }
  checked_u32(ctx, shape_size(sa), "A's element count");
  checked_u32(ctx, shape_size(sb), "B's element count");
  checked_u32(ctx, shape_size(out), "the output's element count");
  check_grid(ctx, m, n, batches);
  p.m = static_cast<uint32_t>(m);
  p.n = static_cast<uint32_t>(n);
  p.k = static_cast<uint32_t>(k);
  p.batch_rank = static_cast<uint32_t>(rank);
  p.a_row = p.k;
  p.a_col = 1;
  p.b_row = p.n;
  p.b_col = 1;
  p.alpha = 1.0f;
  auto a = input(ctx, 0), b = input(ctx, 1);
  auto y = output(ctx, 0, dtype, out);
  record_matmul(ctx, dtype, p, static_cast<uint32_t>(batches), a, b, nullptr, y);
}

void gemm_kernel(DeviceKernelContext& ctx) {
  const DataType dtype = require_same_float(ctx, 3);
  const auto& sa = ctx.input_shape(0);
  const auto& sb = ctx.input_shape(1);
  if (sa.size() != 2 || sb.size() != 2) ctx.decline("inputs that are not 2-D");
  const bool ta = ctx.attr_int("transA", 0) != 0, tb = ctx.attr_int("transB", 0) != 0;
  const float alpha = ctx.attr_float("alpha", 1.0f), beta = ctx.attr_float("beta", 1.0f);
  const int64_t m = ta ? sa[1] : sa[0], k = ta ? sa[0] : sa[1];
  const int64_t kb = tb ? sb[1] : sb[0], n = tb ? sb[0] : sb[1];
  if (k != kb) ctx.decline("the inner dims differ");
  MatMulParams p{};
  const bool has_c = ctx.has_input(2) && beta != 0;
  if (has_c) {
    const auto& sc = ctx.input_shape(2);
    if (sc.size() > 2) ctx.decline("C of rank above 2");
    const int64_t cols = sc.empty() ? 1 : sc.back(), rows = sc.size() == 2 ? sc[0] : 1;
    if ((cols != 1 && cols != n) || (rows != 1 && rows != m)) ctx.decline("C does not broadcast to [M, N]");
    // Before opset 7 the broadcast of C was an attribute; without it C must be [M, N] already.
    if (ctx.opset() < 7 && ctx.attr_int("broadcast", 0) == 0 && sc != std::vector<int64_t>{m, n})
      ctx.decline("C of another shape than [M, N] with broadcast=0");
    p.c_row = rows == 1 ? 0 : checked_u32(ctx, cols, "C's row stride");
    p.c_col = cols == 1 ? 0 : 1;
    p.has_bias = 1;
  }
  checked_u32(ctx, shape_size(sa), "A's element count");
  checked_u32(ctx, shape_size(sb), "B's element count");
  checked_u32(ctx, m * n, "the output's element count");
  check_grid(ctx, m, n, 1);
  p.m = static_cast<uint32_t>(m);
  p.n = static_cast<uint32_t>(n);
  p.k = static_cast<uint32_t>(k);
  // op(A)[i, q] is A[i, q] or A[q, i]; op(B)[q, j] is B[q, j] or B[j, q].
  p.a_row = ta ? 1 : p.k;
  p.a_col = ta ? p.m : 1;
  p.b_row = tb ? 1 : p.n;
  p.b_col = tb ? p.k : 1;
  p.alpha = alpha;
  p.beta = beta;
  auto a = input(ctx, 0), b = input(ctx, 1);
  std::shared_ptr<const VulkanTensor> c = has_c ? input(ctx, 2) : nullptr;
  auto y = output(ctx, 0, dtype, {m, n});
  record_matmul(ctx, dtype, p, 1, a, b, c, y);
}

// ---------------------------------------------------------------- Conv, ConvTranspose

/// The push constants of conv.comp and conv_transpose.comp.
struct ConvParams {
  uint32_t total, c, m, cg, mg;
  uint32_t flags;  // kHasBias | kPieceRead | kPieceWrite (conv_transpose.comp: kHasBias only)
  uint32_t in[3], out[3], kernel[3], stride[3], dilation[3], pad[3];
  // conv.comp only: the input channels and window positions this dispatch sums.
  uint32_t c_begin, c_end, k_begin[3], k_end[3];
};
constexpr uint32_t kHasBias = 1, kConvPieceRead = 2, kConvPieceWrite = 4;
static_assert(sizeof(ConvParams) <= 128, "push constants");

/// The spatial rank of X and W; declines more than 3 spatial dims (the shaders' limit). Other
/// shape errors are left to the shared geometry, which fails them as the CPU kernel does.
void require_spatial_rank(DeviceKernelContext& ctx) {
  if (ctx.input_shape(0).size() > 5) ctx.decline("more than 3 spatial dims");
}

/// Checks the bias and the sizes, then records the shader over every output element.
void record_conv(DeviceKernelContext& ctx, DataType dtype, const ConvGeometry& g, const char* shader, int64_t cg,
                 int64_t mg) {
  const bool has_bias = ctx.has_input(2);
  if (has_bias && ctx.input_shape(2) != std::vector<int64_t>{g.m}) ctx.decline("B is not [M]");
  ConvParams p{};
  std::vector<int64_t> shape{g.n, g.m};
  shape.insert(shape.end(), g.out.begin(), g.out.end());
  p.total = checked_u32(ctx, shape_size(shape), "the output's element count");
  checked_u32(ctx, shape_size(ctx.input_shape(0)), "X's element count");
  checked_u32(ctx, shape_size(ctx.input_shape(1)), "W's element count");
  p.c = static_cast<uint32_t>(g.c);
  p.m = static_cast<uint32_t>(g.m);
  p.cg = static_cast<uint32_t>(cg);
  p.mg = static_cast<uint32_t>(mg);
  p.flags = has_bias ? kHasBias : 0;
  // 1-D and 2-D as 3-D: leading spatial dims of size 1.
  const size_t lead = 3 - g.in.size();
  for (size_t d = 0; d < 3; ++d) {
    const bool real = d >= lead;
    const size_t s = d - lead;
    p.in[d] = real ? static_cast<uint32_t>(g.in[s]) : 1;
    p.out[d] = real ? static_cast<uint32_t>(g.out[s]) : 1;
    p.kernel[d] = real ? static_cast<uint32_t>(g.kernel[s]) : 1;
    p.stride[d] = real ? checked_u32(ctx, g.stride[s], "a stride") : 1;
    p.dilation[d] = real ? checked_u32(ctx, g.dilation[s], "a dilation") : 1;
    p.pad[d] = real ? checked_u32(ctx, g.pad_begin[s], "a pad") : 0;
  }
  // The shaders' int arithmetic on positions: o * stride and k * dilation must stay in 31 bits.
  for (size_t d = 0; d < 3; ++d) {
    checked_u32(ctx, int64_t{p.out[d]} * p.stride[d] + p.pad[d], "an output position times its stride");
    checked_u32(ctx, int64_t{p.kernel[d]} * p.dilation[d] + p.pad[d], "the kernel's span");
  }
  const bool transposed = std::string(shader) == "conv_transpose";
  // An invocation's loops: the group's input channels, and in each the window's three dims.
  const uint32_t extent[4] = {p.cg, p.kernel[0], p.kernel[1], p.kernel[2]};
  const auto cost = [](const uint32_t* n) {
    return loop_cost(n[0], loop_cost(n[1], loop_cost(n[2], loop_cost(n[3]))));
  };
  if (transposed) require_loop_bound(ctx, cost(extent), "ConvTranspose's sum over channels and window");
  // Conv: pieces of the channels and the window, one dispatch each. From the outermost loop
  // in, a loop whose whole extent is too long is cut to the longest piece that fits, the loops
  // outside it to pieces of one.
  uint32_t span[4], piece[4];  // span: the extent, at least 1 (an empty sum still writes the bias)
  for (size_t d = 0; d < 4; ++d) span[d] = piece[d] = std::max<uint32_t>(extent[d], 1);
  for (size_t d = 0; d < 4 && cost(piece) > kMaxLoopIterations; ++d) {
    piece[d] = 1;
    if (cost(piece) > kMaxLoopIterations) continue;
    uint32_t lo = 1, hi = span[d];  // the longest piece of dim d that fits: in [lo, hi]
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo + 1) / 2;
      piece[d] = mid;
      if (cost(piece) <= kMaxLoopIterations) lo = mid;
      else hi = mid - 1;
    }
    piece[d] = lo;
  }
  auto x = input(ctx, 0), w = input(ctx, 1);
  std::shared_ptr<const VulkanTensor> b = has_bias ? input(ctx, 2) : nullptr;
  auto y = output(ctx, 0, dtype, shape);
  const std::string name = accumulating_shader_for(ctx, shader, dtype);
  if (transposed) {
    dispatch_1d(ctx, name, {x->range(), w->range(), (b ? b : x)->range(), y->range()}, &p, sizeof p, p.total);
    return;
  }
  uint64_t pieces = 1;
  for (size_t d = 0; d < 4; ++d) pieces *= (span[d] + piece[d] - 1) / piece[d];
  std::shared_ptr<const VulkanTensor> part;
  if (pieces > 1) part = backend_of(ctx).allocate(DataType::kFloat, {int64_t{p.total}});
  uint64_t done = 0;
  for (uint32_t c0 = 0; c0 < span[0]; c0 += piece[0])
    for (uint32_t k0 = 0; k0 < span[1]; k0 += piece[1])
      for (uint32_t k1 = 0; k1 < span[2]; k1 += piece[2])
        for (uint32_t k2 = 0; k2 < span[3]; k2 += piece[3]) {
          ConvParams q = p;
          q.c_begin = c0;
          q.c_end = std::min(extent[0], c0 + piece[0]);
          const uint32_t begin[3] = {k0, k1, k2};
          for (size_t d = 0; d < 3; ++d) {
            q.k_begin[d] = begin[d];
            q.k_end[d] = std::min(extent[d + 1], begin[d] + piece[d + 1]);
          }
          if (done > 0) q.flags |= kConvPieceRead;
          if (++done < pieces) q.flags |= kConvPieceWrite;
          dispatch_1d(ctx, name, {x->range(), w->range(), (b ? b : x)->range(), y->range(), (part ? part : y)->range()},
                      &q, sizeof q, p.total);
        }
}

void conv_kernel(DeviceKernelContext& ctx) {
  const DataType dtype = require_same_float(ctx, 3);
  require_spatial_rank(ctx);
  const ConvGeometry g = conv_geometry(ctx, ctx.input_shape(0), ctx.input_shape(1));
  record_conv(ctx, dtype, g, "conv", g.c / g.group, g.m / g.group);
}

void conv_transpose_kernel(DeviceKernelContext& ctx) {
  const DataType dtype = require_same_float(ctx, 3);
  require_spatial_rank(ctx);
  const ConvGeometry g = conv_transpose_geometry(ctx, ctx.input_shape(0), ctx.input_shape(1));
  record_conv(ctx, dtype, g, "conv_transpose", g.c / g.group, g.m / g.group);
}

}  // namespace

void register_linalg(KernelTable& t) {
  t.add("MatMul", matmul_kernel);
  t.add("Gemm", gemm_kernel);
  t.add("Conv", conv_kernel);
  t.add("ConvTranspose", conv_transpose_kernel);
}

}  // namespace onnxtool::runner::vulkan
