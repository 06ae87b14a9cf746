#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// Pad: each output coordinate maps to an input coordinate per axis (constant: outside means
// the fill value; reflect: mirrored without repeating the edge; edge: clamped; wrap: modulo).
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
  uint mode;  // 0 constant, 1 reflect, 2 edge, 3 wrap
  uint fill;  // the fill element's bits
  uint out_dims[MAX_RANK];
  uint in_dims[MAX_RANK];
  int begins[MAX_RANK];
} p;

// Source index along an axis of `dim` elements, -1 for the fill.
int source(int pos, int dim) {
  if (pos >= 0 && pos < dim) return pos;
  if (p.mode == 0u) return -1;
  if (p.mode == 2u) return pos < 0 ? 0 : dim - 1;
  if (p.mode == 3u) return ((pos % dim) + dim) % dim;
  if (dim == 1) return 0;
  int period = 2 * (dim - 1);
  int m = ((pos % period) + period) % period;
  return m < dim ? m : period - m;
}

void main() {
  uint i = linear_index();
  if (i >= p.n) return;
  uint rest = i, off = 0, stride = 1;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    uint c = rest % p.out_dims[d];
    rest /= p.out_dims[d];
    int s = source(int(c) - p.begins[d], int(p.in_dims[d]));
    if (s < 0) {
      y[i] = E(p.fill);
      return;
    }
    off += uint(s) * stride;
    stride *= p.in_dims[d];
  }
  y[i] = E(uint(x[off]));
}
