#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// Gather: out[o, j, i] = x[o, idx[j], i] over the split [outer, dim, inner] of x; the host
// checks and normalizes the indices and gives them as int32.
#ifdef FP16
#define E uint16_t
#else
#define E uint
#endif
layout(std430, binding = 0) readonly buffer X { E x[]; };
layout(std430, binding = 1) readonly buffer I { uint idx[]; };
layout(std430, binding = 2) writeonly buffer Y { E y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint count;  // indices
  uint dim;
  uint inner;
} p;

void main() {
  uint i = linear_index();
  if (i >= p.n) return;
  uint r = i % p.inner;
  uint t = i / p.inner;
  uint j = t % p.count;
  uint o = t / p.count;
  y[i] = E(uint(x[(o * p.dim + idx[j]) * p.inner + r]));
}
