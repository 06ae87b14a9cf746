#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// QuantizeLinear of float32 to 8 bits: one invocation per 4 outputs, packed into one word (no
// 8-bit storage needed). q = clamp(round_half_even(x / scale) + zero_point, lo, hi) with the
// quotient rounded as an IEEE float32 division would (one exact-residual correction step, so a
// device whose division is a few ulps off still finds the ties of the CPU).
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer P { float params[]; };  // scales, then zero points
layout(std430, binding = 2) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint inner;
  uint axis_dim;  // 1 per tensor
  uint count;     // scales
  float lo;
  float hi;
} p;

// a * b exactly as hi + lo (Dekker's product; `precise` forbids contraction).
void two_product(float a, float b, out float hi, out float lo) {
  precise float prod = a * b;
  precise float ca = 4097.0 * a;
  precise float ah = ca - (ca - a);
  precise float al = a - ah;
  precise float cb = 4097.0 * b;
  precise float bh = cb - (cb - b);
  precise float bl = b - bh;
  precise float err = ((ah * bh - prod) + ah * bl + al * bh) + al * bl;
  hi = prod;
  lo = err;
}

float divide(float a, float b) {
  precise float q = a / b;
  if (isinf(q) || isnan(q) || q == 0.0) return q;
  float ph, pl;
  two_product(q, b, ph, pl);
  precise float r = (a - ph) - pl;
  precise float q1 = q + r / b;
  return q1;
}

uint quantize(uint i) {
  uint k = p.axis_dim == 1u ? 0u : (i / p.inner) % p.axis_dim;
  float v = divide(x[i], params[k]);
  // NaN quantizes to the low end, as the CPU's max(lo, NaN) does.
  float c = isnan(v) ? p.lo : min(p.hi, max(p.lo, roundEven(v) + params[p.count + k]));
  return uint(int(c)) & 0xffu;
}

void main() {
  uint w = linear_index();
  uint first = w * 4u;
  if (first >= p.n) return;
  uint word = 0u;
  for (uint b = 0u; b < 4u; ++b)
    if (first + b < p.n) word |= quantize(first + b) << (8u * b);
  y[w] = word;
}
