#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// BatchNormalization at inference: y = x * a[ch] + b[ch], with ch = (i / inner) % c and the
// per-channel a, b computed on the host (float32, a then b).
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) readonly buffer AB { float ab[]; };
layout(std430, binding = 2) writeonly buffer Y { T y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint c;
  uint inner;
} p;

void main() {
  uint i = linear_index();
  if (i >= p.n) return;
  uint ch = (i / p.inner) % p.c;
  y[i] = T(float(x[i]) * ab[ch] + ab[p.c + ch]);
}
