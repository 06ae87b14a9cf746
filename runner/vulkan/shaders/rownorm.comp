#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "rows.glsl"

// InstanceNormalization and LayerNormalization: rows of `len` contiguous elements, one
// workgroup each; y = (x - mean) / sqrt(var + eps) * scale + bias with the mean and the
// variance (of the deviations, a second pass) over the row. A parameter is indexed per element
// of the row (mode 0), per row modulo `c` (mode 1, channels), or is a scalar (mode 2); mode 3:
// absent (bias 0).
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) readonly buffer S { T scale[]; };
layout(std430, binding = 2) readonly buffer B { T bias[]; };
layout(std430, binding = 3) writeonly buffer Y { T y[]; };
layout(push_constant) uniform Params {
  uint rows;
  uint len;
  float eps;
  uint c;
  uint scale_mode;
  uint bias_mode;
} p;

float param_scale(uint row, uint k) {
  switch (p.scale_mode) {
    case 0u: return float(scale[k]);
    case 1u: return float(scale[row % p.c]);
    case 2u: return float(scale[0]);
  }
  return 1.0;
}

float param_bias(uint row, uint k) {
  switch (p.bias_mode) {
    case 0u: return float(bias[k]);
    case 1u: return float(bias[row % p.c]);
    case 2u: return float(bias[0]);
  }
  return 0.0;
}

void main() {
  uint row = row_index();
  if (row >= p.rows) return;  // the whole workgroup leaves together
  uint base = row * p.len;
  uint t = gl_LocalInvocationID.x, step = gl_WorkGroupSize.x;
  float s = 0.0;
  for (uint k = t; k < p.len; k += step) s += float(x[base + k]);
  float mean = row_reduce(COMBINE_ADD, s) / float(p.len);
  float v = 0.0;
  for (uint k = t; k < p.len; k += step) {
    float d = float(x[base + k]) - mean;
    v += d * d;
  }
  float inv = 1.0 / sqrt(row_reduce(COMBINE_ADD, v) / float(p.len) + p.eps);
  for (uint k = t; k < p.len; k += step)
    y[base + k] = T((float(x[base + k]) - mean) * inv * param_scale(row, k) + param_bias(row, k));
}
