#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "math.glsl"

// One time step of one direction of RNN, GRU or LSTM: one invocation per (batch, hidden unit).
// Its dot products read X, W and R directly; the state (h, LSTM's c, GRU's z and r * h) is
// float32 in S, whatever the element type, as the CPU kernel keeps it. The host records one
// dispatch per step (two for GRU without linear_before_reset: the gates, then the candidate),
// so that every invocation of a step sees the whole previous h.
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) readonly buffer W { T w[]; };
layout(std430, binding = 2) readonly buffer R { T r[]; };
layout(std430, binding = 3) readonly buffer B { T bias[]; };
layout(std430, binding = 4) readonly buffer P { T peep[]; };
layout(std430, binding = 5) writeonly buffer Y { T y[]; };
layout(std430, binding = 6) buffer S { float s[]; };
layout(push_constant) uniform Params {
  uint n;            // batch * hidden
  uint cell;         // 0 RNN, 1 GRU, 2 LSTM
  uint phase;        // 0 the step; 1 GRU's z and r * h (before phase 0)
  uint batch, hidden, inputs, seq, dirs;
  uint dir, t;       // direction and time index of this step
  uint flags;        // 1 bias, 2 peepholes, 4 write Y, 8 layout 1, 16 input_forget, 32 linear_before_reset
  uint h_in, h_out;  // offsets of the previous and next h in S
  uint c_at, z_at, rh_at;
  float clip;        // 0: none
  uint act[3];       // indices in kRecurrentActivationNames (runner/recurrent.h)
  float alpha[3];
  float beta[3];
} p;

float activate(uint k, float v) {
  float a = p.alpha[k], b = p.beta[k];
  switch (p.act[k]) {
    case 0: return sigmoid(v);
    case 1: return tanh(v);
    case 2: return max(v, 0.0);
    case 3: return a * v + b;
    case 4: return v >= 0.0 ? v : a * v;
    case 5: return v > a ? v : 0.0;
    case 6: return a * tanh(b * v);
    case 7: return clamp(a * v + b, 0.0, 1.0);
    case 8: return v >= 0.0 ? v : a * (exp(v) - 1.0);
    case 9: return v / (1.0 + abs(v));
    case 10: return v > 20.0 ? v : log(1.0 + exp(v));
  }
  return v;
}

float clipped(float v) { return p.clip > 0.0 ? clamp(v, -p.clip, p.clip) : v; }

uint gates() { return p.cell == 2u ? 4u : p.cell == 1u ? 3u : 1u; }

// X[t, b] . W[dir, gate, j] plus the input bias.
float input_part(uint gate, uint b, uint j) {
  uint row = p.dir * gates() * p.hidden + gate * p.hidden + j;
  uint xo = ((p.flags & 8u) != 0u ? b * p.seq + p.t : p.t * p.batch + b) * p.inputs;
  float v = 0.0;
  for (uint k = 0u; k < p.inputs; ++k) v += float(x[xo + k]) * float(w[row * p.inputs + k]);
  if ((p.flags & 1u) != 0u) v += float(bias[p.dir * 2u * gates() * p.hidden + gate * p.hidden + j]);
  return v;
}

// vec[dir, b, :] . R[dir, gate, j] plus the recurrence bias; vec at offset `at` in S.
float recurrent_part(uint gate, uint b, uint j, uint at) {
  uint gh = gates() * p.hidden;
  uint row = p.dir * gh + gate * p.hidden + j;
  uint vo = at + (p.dir * p.batch + b) * p.hidden;
  float v = 0.0;
  for (uint k = 0u; k < p.hidden; ++k) v += s[vo + k] * float(r[row * p.hidden + k]);
  if ((p.flags & 1u) != 0u) v += float(bias[p.dir * 2u * gh + gh + gate * p.hidden + j]);
  return v;
}

void main() {
  uint i = linear_index();
  if (i >= p.n) return;
  uint b = i / p.hidden, j = i % p.hidden;
  uint si = (p.dir * p.batch + b) * p.hidden + j;
  float hp = s[p.h_in + si];
  if (p.phase == 1u) {
    float z = activate(0u, clipped(input_part(0u, b, j) + recurrent_part(0u, b, j, p.h_in)));
    float rg = activate(0u, clipped(input_part(1u, b, j) + recurrent_part(1u, b, j, p.h_in)));
    s[p.z_at + si] = z;
    s[p.rh_at + si] = rg * hp;
    return;
  }
  float h;
  if (p.cell == 0u) {
    h = activate(0u, clipped(input_part(0u, b, j) + recurrent_part(0u, b, j, p.h_in)));
  } else if (p.cell == 1u) {
    float z, hh;
    if ((p.flags & 32u) != 0u) {
      z = activate(0u, clipped(input_part(0u, b, j) + recurrent_part(0u, b, j, p.h_in)));
      float rg = activate(0u, clipped(input_part(1u, b, j) + recurrent_part(1u, b, j, p.h_in)));
      hh = activate(1u, clipped(input_part(2u, b, j) + rg * recurrent_part(2u, b, j, p.h_in)));
    } else {
      z = s[p.z_at + si];
      hh = activate(1u, clipped(input_part(2u, b, j) + recurrent_part(2u, b, j, p.rh_at)));
    }
    h = (1.0 - z) * hh + z * hp;
  } else {
    float c = s[p.c_at + si];
    float ig = input_part(0u, b, j) + recurrent_part(0u, b, j, p.h_in);
    float og = input_part(1u, b, j) + recurrent_part(1u, b, j, p.h_in);
    float fg = input_part(2u, b, j) + recurrent_part(2u, b, j, p.h_in);
    float cg = input_part(3u, b, j) + recurrent_part(3u, b, j, p.h_in);
    uint po = p.dir * 3u * p.hidden + j;
    if ((p.flags & 2u) != 0u) {
      ig += float(peep[po]) * c;
      fg += float(peep[po + 2u * p.hidden]) * c;
    }
    ig = activate(0u, clipped(ig));
    fg = (p.flags & 16u) != 0u ? 1.0 - ig : activate(0u, clipped(fg));
    float cn = fg * c + ig * activate(1u, clipped(cg));
    if ((p.flags & 2u) != 0u) og += float(peep[po + p.hidden]) * cn;
    og = activate(0u, clipped(og));
    s[p.c_at + si] = cn;
    h = og * activate(2u, cn);
  }
  s[p.h_out + si] = h;
  if ((p.flags & 4u) != 0u) {
    uint yo = (p.flags & 8u) != 0u ? ((b * p.seq + p.t) * p.dirs + p.dir) * p.hidden + j
                                    : ((p.t * p.dirs + p.dir) * p.batch + b) * p.hidden + j;
    y[yo] = T(h);
  }
}
