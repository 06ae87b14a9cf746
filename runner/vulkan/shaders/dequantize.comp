#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// DequantizeLinear of 8-bit values (bytes read out of 32-bit words): y = (x - zero_point) *
// scale in float32, stored as T.
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) readonly buffer P { float params[]; };  // scales, then zero points
layout(std430, binding = 2) writeonly buffer Y { T y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint inner;
  uint axis_dim;  // 1 per tensor
  uint count;     // scales
  uint is_signed;
} p;

void main() {
  uint i = linear_index();
  if (i >= p.n) return;
  uint k = p.axis_dim == 1u ? 0u : (i / p.inner) % p.axis_dim;
  uint byte = (x[i >> 2] >> ((i & 3u) * 8u)) & 0xffu;
  float v = p.is_signed != 0u ? float(int(byte << 24) >> 24) : float(byte);
  precise float d = v - params[p.count + k];
  precise float r = d * params[k];
  y[i] = T(r);
}
