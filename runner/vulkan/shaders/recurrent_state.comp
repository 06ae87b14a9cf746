#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// The state of RNN, GRU and LSTM between S (float32, [dirs, batch, hidden] per part) and the
// op's tensors: phase 0 sets h and c from initial_h and initial_c (or zeros), phase 1 writes
// Y_h and Y_c. Layout 1 orders those tensors [batch, dirs, hidden].
layout(std430, binding = 0) readonly buffer H0 { T h0[]; };
layout(std430, binding = 1) readonly buffer C0 { T c0[]; };
layout(std430, binding = 2) writeonly buffer YH { T yh[]; };
layout(std430, binding = 3) writeonly buffer YC { T yc[]; };
layout(std430, binding = 4) buffer S { float s[]; };
layout(push_constant) uniform Params {
  uint n;      // dirs * batch * hidden
  uint phase;  // 0 initial state, 1 final state
  uint batch, hidden, dirs;
  uint flags;  // 1 initial_h / Y_h, 2 initial_c / Y_c, 8 layout 1
  uint h_at, c_at;
} p;

void main() {
  uint i = linear_index();
  if (i >= p.n) return;
  uint j = i % p.hidden, db = i / p.hidden, b = db % p.batch, d = db / p.batch;
  uint o = (p.flags & 8u) != 0u ? (b * p.dirs + d) * p.hidden + j : i;
  if (p.phase == 0u) {
    s[p.h_at + i] = (p.flags & 1u) != 0u ? float(h0[o]) : 0.0;
    s[p.c_at + i] = (p.flags & 2u) != 0u ? float(c0[o]) : 0.0;
  } else {
    if ((p.flags & 1u) != 0u) yh[o] = T(s[p.h_at + i]);
    if ((p.flags & 2u) != 0u) yc[o] = T(s[p.c_at + i]);
  }
}
