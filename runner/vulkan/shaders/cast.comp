#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// Cast between float32 and float16: this variant widens float16 to float32 (exact); the FP16
// variant narrows float32 to float16 rounding to nearest even in integer arithmetic (overflow to
// infinity, NaN kept quiet), as the CPU's conversion does, whatever the device's own rounding.
layout(push_constant) uniform Params { uint n; } p;
#ifdef FP16
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint16_t y[]; };

uint to_half(uint f) {
  uint sign = (f >> 16) & 0x8000u;
  uint e = (f >> 23) & 0xffu;
  uint m = f & 0x7fffffu;
  if (e == 0xffu) return sign | 0x7c00u | (m != 0u ? 0x200u | (m >> 13) : 0u);
  int ue = int(e) - 127 + 15;
  if (ue >= 31) return sign | 0x7c00u;
  if (ue <= 0) {
    if (ue < -10) return sign;
    m |= 0x800000u;
    uint shift = uint(14 - ue);
    uint h = m >> shift;
    uint rem = m & ((1u << shift) - 1u);
    uint half_ulp = 1u << (shift - 1u);
    if (rem > half_ulp || (rem == half_ulp && (h & 1u) != 0u)) h += 1u;
    return sign | h;
  }
  uint h = (uint(ue) << 10) | (m >> 13);
  uint rem = m & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) h += 1u;  // may carry into inf: right
  return sign | h;
}

void main() {
  uint i = linear_index();
  if (i >= p.n) return;
  y[i] = uint16_t(to_half(floatBitsToUint(x[i])));
}
#else
layout(std430, binding = 0) readonly buffer X { float16_t x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };

void main() {
  uint i = linear_index();
  if (i >= p.n) return;
  y[i] = float(x[i]);
}
#endif
