#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// Strided copy of raw elements (4-byte words; 2-byte halves in the FP16 variant): for every
// coordinate c of `dims`, out[out_base + sum c_d * out_strides_d] = in[in_base + sum c_d *
// in_strides_d]. Serves Transpose, Slice (negative strides), Expand and Tile (zero strides),
// Concat (each input into its part of the output) and Split.
#ifdef FP16
#define E uint16_t
#else
#define E uint
#endif
layout(std430, binding = 0) readonly buffer X { E x[]; };
layout(std430, binding = 1) writeonly buffer Y { E y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint rank;
  int in_base;
  uint out_base;
  uint dims[MAX_RANK];
  int in_strides[MAX_RANK];
  uint out_strides[MAX_RANK];
} p;

void main() {
  uint i = linear_index();
  if (i >= p.n) return;
  uint rest = i, o = p.out_base;
  int s = p.in_base;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    uint c = rest % p.dims[d];
    rest /= p.dims[d];
    s += int(c) * p.in_strides[d];
    o += c * p.out_strides[d];
  }
  y[o] = E(uint(x[s]));
}
