#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// Direct convolution, one output element per invocation: Y [N, M, O0, O1, O2] from X [N, C, I0,
// I1, I2] and W [M, C/group, K0, K1, K2], optional bias [M]. 1-D and 2-D convolutions come as 3-D
// ones with leading spatial dims of 1. Positions in the padding read as 0; ACC accumulation.
//
// A dispatch sums the input channels [c_begin, c_end) of the group and the window positions
// [k_begin, k_end) of each spatial dim: the host splits a long sum into such pieces, which keep
// each invocation's loop iterations bounded (kMaxLoopIterations in runner/vulkan/backend.h), one
// dispatch each, in order. A piece adds the sum of the pieces before it, kept in float32 in
// `part` (PIECE_READ), and either keeps its own there for the next (PIECE_WRITE) or, the last
// one, writes y with the bias.
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) readonly buffer W { T w[]; };
layout(std430, binding = 2) readonly buffer Bias { T bias[]; };
layout(std430, binding = 3) writeonly buffer Y { T y[]; };
layout(std430, binding = 4) buffer Part { float part[]; };
layout(push_constant) uniform Params {
  uint total;     // N * M * O0 * O1 * O2
  uint c;         // input channels
  uint m;         // output channels
  uint cg;        // input channels per group
  uint mg;        // output channels per group
  uint flags;     // HAS_BIAS | PIECE_READ | PIECE_WRITE
  uint in_dims[3];
  uint out_dims[3];
  uint kernel[3];
  uint stride[3];
  uint dilation[3];
  uint pad[3];    // padding at the beginning of each spatial dim
  uint c_begin;
  uint c_end;
  uint k_begin[3];
  uint k_end[3];
} p;

#define HAS_BIAS 1u
#define PIECE_READ 2u
#define PIECE_WRITE 4u

void main() {
  const uint i = linear_index();
  if (i >= p.total) return;
  const uint osize = p.out_dims[0] * p.out_dims[1] * p.out_dims[2];
  const uint isize = p.in_dims[0] * p.in_dims[1] * p.in_dims[2];
  const uint ksize = p.kernel[0] * p.kernel[1] * p.kernel[2];
  const uint o = i % osize;
  const uint mo = (i / osize) % p.m;
  const uint n = i / osize / p.m;
  const uint o2 = o % p.out_dims[2];
  const uint o1 = (o / p.out_dims[2]) % p.out_dims[1];
  const uint o0 = o / (p.out_dims[2] * p.out_dims[1]);
  const int s0 = int(o0 * p.stride[0]) - int(p.pad[0]);
  const int s1 = int(o1 * p.stride[1]) - int(p.pad[1]);
  const int s2 = int(o2 * p.stride[2]) - int(p.pad[2]);
  const uint group = mo / p.mg;
  ACC acc = ACC(0.0);
  for (uint ci = p.c_begin; ci < p.c_end; ++ci) {
    const uint xbase = (n * p.c + group * p.cg + ci) * isize;
    const uint wbase = (mo * p.cg + ci) * ksize;
    for (uint k0 = p.k_begin[0]; k0 < p.k_end[0]; ++k0) {
      const int i0 = s0 + int(k0 * p.dilation[0]);
      if (i0 < 0 || i0 >= int(p.in_dims[0])) continue;
      for (uint k1 = p.k_begin[1]; k1 < p.k_end[1]; ++k1) {
        const int i1 = s1 + int(k1 * p.dilation[1]);
        if (i1 < 0 || i1 >= int(p.in_dims[1])) continue;
        const uint xrow = xbase + (uint(i0) * p.in_dims[1] + uint(i1)) * p.in_dims[2];
        const uint wrow = wbase + (k0 * p.kernel[1] + k1) * p.kernel[2];
        for (uint k2 = p.k_begin[2]; k2 < p.k_end[2]; ++k2) {
          const int i2 = s2 + int(k2 * p.dilation[2]);
          if (i2 < 0 || i2 >= int(p.in_dims[2])) continue;
          acc += ACC(x[xrow + uint(i2)]) * ACC(w[wrow + k2]);
        }
      }
    }
  }
  if ((p.flags & PIECE_READ) != 0u) acc += ACC(part[i]);
  if ((p.flags & PIECE_WRITE) != 0u) {
    part[i] = float(acc);
    return;
  }
  if ((p.flags & HAS_BIAS) != 0u) acc += ACC(bias[mo]);
  y[i] = T(acc);
}
