#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// Resize (nearest and linear) from per-axis tap tables the host computes as the CPU kernel
// does: for output coordinate o of axis d, words table[off_d + 4o ..] are the input indices i0,
// i1 and the weights w0, w1. Axes in `two_taps` blend both taps; the others take i0 alone (their
// w0 is 1), so nearest resizing copies elements exactly.
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) readonly buffer Tab { uint tab[]; };
layout(std430, binding = 2) writeonly buffer Y { T y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint rank;
  uint two_taps;  // bit d: axis d blends two taps
  uint pad;
  uint out_dims[MAX_RANK];
  uint in_strides[MAX_RANK];
  uint offsets[MAX_RANK];
} p;

void main() {
  uint i = linear_index();
  if (i >= p.n) return;
  uint coord[MAX_RANK];
  uint rest = i;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    coord[d] = rest % p.out_dims[d];
    rest /= p.out_dims[d];
  }
  if (p.two_taps == 0u) {
    uint off = 0;
    for (uint d = 0; d < p.rank; ++d) off += tab[p.offsets[d] + 4u * coord[d]] * p.in_strides[d];
    y[i] = x[off];
    return;
  }
  float acc = 0.0;
  uint m = 0u;  // every subset of two_taps: which axes take their second tap
  do {
    uint off = 0;
    float w = 1.0;
    for (uint d = 0; d < p.rank; ++d) {
      uint e = p.offsets[d] + 4u * coord[d];
      bool second = ((m >> d) & 1u) != 0u;
      off += tab[e + (second ? 1u : 0u)] * p.in_strides[d];
      if (((p.two_taps >> d) & 1u) != 0u) w *= uintBitsToFloat(tab[e + (second ? 3u : 2u)]);
    }
    if (w != 0.0) acc += w * float(x[off]);
    m = (m - p.two_taps) & p.two_taps;
  } while (m != 0u);
  y[i] = T(acc);
}
