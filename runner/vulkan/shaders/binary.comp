#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "math.glsl"
#include "op_codes.h"

// c = f(a, b) with numpy broadcasting: the host gives the output's dims and each input's
// strides in elements (0 along broadcast dims). Op codes: BINARY_OPS in op_codes.h.
BINARY_OPS(OP_CODE)
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
    case kAdd: return x + y;
    case kSub: return x - y;
    case kMul: return x * y;
    case kDiv: return x / y;
    case kPow: return pow_c(x, y);
    case kMax: return (isnan(x) || isnan(y)) ? x + y : max(x, y);
    case kMin: return (isnan(x) || isnan(y)) ? x + y : min(x, y);
    case kPRelu: return x >= 0.0 ? x : x * y;
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
