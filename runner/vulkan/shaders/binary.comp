#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "math.glsl"

// c = f(a, b) with numpy broadcasting: the host gives the output's dims and each input's
// strides in elements (0 along broadcast dims). Op codes: BinaryOp in elementwise.cpp.
layout(std430, binding = 0) readonly buffer A { T a[]; };
layout(std430, binding = 1) readonly buffer B { T b[]; };
layout(std430, binding = 2) writeonly buffer C { T c[]; };
layout(push_constant) uniform Params {
  uint n;
  uint op;
  uint rank;
  uint pad;
  uint dims[MAX_RANK];
  uint a_strides[MAX_RANK];
  uint b_strides[MAX_RANK];
} p;

float apply(float x, float y) {
  switch (p.op) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    case 3: return x / y;
    case 4: return pow_c(x, y);
    case 5: return (isnan(x) || isnan(y)) ? x + y : max(x, y);
    case 6: return (isnan(x) || isnan(y)) ? x + y : min(x, y);
    case 7: return x >= 0.0 ? x : x * y;
  }
  return x;
}

void main() {
  uint i = linear_index();
  if (i >= p.n) return;
  uint rest = i, ao = 0, bo = 0;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    uint coord = rest % p.dims[d];
    rest /= p.dims[d];
    ao += coord * p.a_strides[d];
    bo += coord * p.b_strides[d];
  }
  c[i] = T(apply(float(a[ao]), float(b[bo])));
}
