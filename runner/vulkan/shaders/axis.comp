#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "op_codes.h"
#include "rows.glsl"

// Ops that normalize groups of n elements with stride `inner` (Softmax, LogSoftmax, Hardmax,
// LpNormalization): one workgroup per group, group g starting at (g / inner) * n * inner +
// g % inner. Op codes: AXIS_OPS in op_codes.h.
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };
layout(push_constant) uniform Params {
  uint groups;
  uint n;
  uint inner;
  uint op;
} p;

AXIS_OPS(OP_CODE)

void main() {
  uint g = row_index();
  if (g >= p.groups) return;  // the whole workgroup leaves together
  uint base = (g / p.inner) * p.n * p.inner + g % p.inner;
  uint t = gl_LocalInvocationID.x, step = gl_WorkGroupSize.x;
  if (p.op == kHardmax) {
    float best = neg_inf();
    uint arg = 0xffffffffu;
    for (uint k = t; k < p.n; k += step) {
      float v = float(x[base + k * p.inner]);
      if (arg == 0xffffffffu || arg_better(best, arg, v, k)) {
        best = v;
        arg = k;
      }
    }
    arg = row_argmax(best, arg);
    for (uint k = t; k < p.n; k += step) y[base + k * p.inner] = T(k == arg ? 1.0 : 0.0);
    return;
  }
  if (p.op == kLp1 || p.op == kLp2) {
    float s = 0.0;
    for (uint k = t; k < p.n; k += step) {
      float v = float(x[base + k * p.inner]);
      s += p.op == kLp1 ? abs(v) : v * v;
    }
    s = row_reduce(COMBINE_ADD, s);
    float norm = p.op == kLp2 ? sqrt(s) : s;
    for (uint k = t; k < p.n; k += step) {
      uint i = base + k * p.inner;
      y[i] = T(norm == 0.0 ? 0.0 : float(x[i]) / norm);
    }
    return;
  }
  // Softmax and LogSoftmax, shifted by the maximum (NaN wins it).
  float m = neg_inf();
  for (uint k = t; k < p.n; k += step) m = combine(COMBINE_MAX, m, float(x[base + k * p.inner]));
  m = row_reduce(COMBINE_MAX, m);
  float s = 0.0;
  for (uint k = t; k < p.n; k += step) s += exp(float(x[base + k * p.inner]) - m);
  s = row_reduce(COMBINE_ADD, s);
  if (p.op == kSoftmax) {
    float inv = 1.0 / s;
    for (uint k = t; k < p.n; k += step) {
      uint i = base + k * p.inner;
      y[i] = T(exp(float(x[i]) - m) * inv);
    }
  } else {
    float lse = log(s);
    for (uint k = t; k < p.n; k += step) {
      uint i = base + k * p.inner;
      y[i] = T((float(x[i]) - m) - lse);
    }
  }
}
