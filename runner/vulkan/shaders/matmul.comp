#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// Batched y = alpha * op(A) op(B) + beta * bias, for MatMul and Gemm. One workgroup computes a
// TS x TS tile of one output matrix (TS = the workgroup's x and y size, at most 16, chosen by the
// host from the device's limit), staging TS x TS tiles of op(A) and op(B) in shared memory;
// ACC accumulation. op(A)[i, q] = a[a_off + i * a_row + q * a_col] (a transpose is a swap of
// the two strides), likewise op(B)[q, j]; the batch index (workgroup z) maps to matrix offsets
// through broadcast batch strides (0 along broadcast dims). bias[i, j] = bias[i * c_row + j *
// c_col] (0 strides broadcast it). Products, sums, alpha and beta are in ACC.
//
// A dispatch sums q in [k_begin, k_end): the host splits a long K into pieces that keep each
// invocation's loop iterations bounded (kMaxLoopIterations in runner/vulkan/backend.h), one
// dispatch each, in order. A piece adds the sum of the pieces before it, kept in float32 in
// `part` (PIECE_READ), and either keeps its own there for the next (PIECE_WRITE) or, the last
// one, writes y with alpha, beta and the bias.
layout(std430, binding = 0) readonly buffer A { T a[]; };
layout(std430, binding = 1) readonly buffer B { T b[]; };
layout(std430, binding = 2) readonly buffer Bias { T bias[]; };
layout(std430, binding = 3) writeonly buffer Y { T y[]; };
layout(std430, binding = 4) buffer Part { float part[]; };
layout(push_constant) uniform Params {
  uint m;
  uint n;
  uint k;
  uint batch_rank;
  uint batch_dims[4];
  uint a_batch[4];
  uint b_batch[4];
  uint a_row;
  uint a_col;
  uint b_row;
  uint b_col;
  uint c_row;
  uint c_col;
  uint has_bias;
  float alpha;
  float beta;
  uint k_begin;
  uint k_end;
  uint piece;  // PIECE_READ | PIECE_WRITE
} p;

#define PIECE_READ 1u
#define PIECE_WRITE 2u

#define MAX_TILE 16
shared ACC tile_a[MAX_TILE * MAX_TILE];
shared ACC tile_b[MAX_TILE * MAX_TILE];

void main() {
  const uint ts = gl_WorkGroupSize.x;
  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  const uint row = gl_WorkGroupID.y * ts + ty;
  const uint col = gl_WorkGroupID.x * ts + tx;
  const uint batch = gl_WorkGroupID.z;
  uint a_off = 0, b_off = 0, rest = batch;
  for (int d = int(p.batch_rank) - 1; d >= 0; --d) {
    const uint coord = rest % p.batch_dims[d];
    rest /= p.batch_dims[d];
    a_off += coord * p.a_batch[d];
    b_off += coord * p.b_batch[d];
  }
  ACC acc = ACC(0.0);
  for (uint k0 = p.k_begin; k0 < p.k_end; k0 += ts) {
    const uint ka = k0 + tx, kb = k0 + ty;
    tile_a[ty * MAX_TILE + tx] = (row < p.m && ka < p.k_end) ? ACC(a[a_off + row * p.a_row + ka * p.a_col]) : ACC(0.0);
    tile_b[ty * MAX_TILE + tx] = (kb < p.k_end && col < p.n) ? ACC(b[b_off + kb * p.b_row + col * p.b_col]) : ACC(0.0);
    barrier();
    const uint steps = min(ts, p.k_end - k0);
    for (uint q = 0; q < steps; ++q) acc += tile_a[ty * MAX_TILE + q] * tile_b[q * MAX_TILE + tx];
    barrier();
  }
  if (row < p.m && col < p.n) {
    const uint o = (batch * p.m + row) * p.n + col;
    if ((p.piece & PIECE_READ) != 0u) acc += ACC(part[o]);
    if ((p.piece & PIECE_WRITE) != 0u) {
      part[o] = float(acc);
      return;
    }
    ACC v = ACC(p.alpha) * acc;
    if (p.has_bias != 0) v += ACC(p.beta) * ACC(bias[row * p.c_row + col * p.c_col]);
    y[o] = T(v);
  }
}
