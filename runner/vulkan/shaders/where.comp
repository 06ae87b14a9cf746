#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// Where with numpy broadcasting of all three inputs; the bool condition is one byte per element,
// read out of 32-bit words. Elements are copied as bits.
#ifdef FP16
#define E uint16_t
#else
#define E uint
#endif
layout(std430, binding = 0) readonly buffer C { uint cond[]; };
layout(std430, binding = 1) readonly buffer A { E a[]; };
layout(std430, binding = 2) readonly buffer B { E b[]; };
layout(std430, binding = 3) writeonly buffer Y { E y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint rank;
  uint dims[MAX_RANK];
  uint c_strides[MAX_RANK];
  uint a_strides[MAX_RANK];
  uint b_strides[MAX_RANK];
} p;

void main() {
  uint i = linear_index();
  if (i >= p.n) return;
  uint rest = i, co = 0, ao = 0, bo = 0;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    uint c = rest % p.dims[d];
    rest /= p.dims[d];
    co += c * p.c_strides[d];
    ao += c * p.a_strides[d];
    bo += c * p.b_strides[d];
  }
  bool take_a = ((cond[co >> 2] >> ((co & 3u) * 8u)) & 0xffu) != 0u;
  y[i] = E(take_a ? uint(a[ao]) : uint(b[bo]));
}
