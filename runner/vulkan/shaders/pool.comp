#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// MaxPool and AveragePool over up to 3 spatial dims (1-D and 2-D inputs come with leading dims
// of size 1), one invocation per output element, the window visited in row-major order as the
// CPU kernel does.
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };
layout(push_constant) uniform Params {
  uint n;       // output elements
  uint op;      // 0 max, 1 average
  uint include_pad;
  uint pad0;
  uint in_dims[3];
  uint out_dims[3];
  uint kernel[3];
  uint stride[3];
  uint dilation[3];
  int pad_begin[3];
  int pad_end[3];
} p;

void main() {
  uint i = linear_index();
  if (i >= p.n) return;
  uint osize = p.out_dims[0] * p.out_dims[1] * p.out_dims[2];
  uint isize = p.in_dims[0] * p.in_dims[1] * p.in_dims[2];
  uint plane = i / osize, oi = i % osize;
  int o[3];
  o[2] = int(oi % p.out_dims[2]);
  o[1] = int((oi / p.out_dims[2]) % p.out_dims[1]);
  o[0] = int(oi / (p.out_dims[2] * p.out_dims[1]));
  int start[3];
  uint padded_count = 1u;
  for (int d = 0; d < 3; ++d) {
    start[d] = o[d] * int(p.stride[d]) - p.pad_begin[d];
    int end = min(start[d] + (int(p.kernel[d]) - 1) * int(p.dilation[d]) + 1, int(p.in_dims[d]) + p.pad_end[d]);
    padded_count *= end > start[d] ? uint(end - start[d] + int(p.dilation[d]) - 1) / p.dilation[d] : 0u;
  }
  uint base = plane * isize;
  float acc = p.op == 0u ? uintBitsToFloat(0xff800000u) : 0.0;
  uint count = 0u;
  for (uint k0 = 0u; k0 < p.kernel[0]; ++k0) {
    int i0 = start[0] + int(k0 * p.dilation[0]);
    if (i0 < 0 || i0 >= int(p.in_dims[0])) continue;
    for (uint k1 = 0u; k1 < p.kernel[1]; ++k1) {
      int i1 = start[1] + int(k1 * p.dilation[1]);
      if (i1 < 0 || i1 >= int(p.in_dims[1])) continue;
      for (uint k2 = 0u; k2 < p.kernel[2]; ++k2) {
        int i2 = start[2] + int(k2 * p.dilation[2]);
        if (i2 < 0 || i2 >= int(p.in_dims[2])) continue;
        float v = float(x[base + (uint(i0) * p.in_dims[1] + uint(i1)) * p.in_dims[2] + uint(i2)]);
        if (p.op == 0u) {
          if (v > acc || count == 0u) acc = v;
        } else {
          acc += v;
        }
        ++count;
      }
    }
  }
  float r;
  if (p.op == 0u) {
    r = acc;  // -inf for a window with no input element
  } else {
    uint div = p.include_pad != 0u ? padded_count : count;
    r = div != 0u ? acc / float(div) : 0.0;
  }
  y[i] = T(r);
}
