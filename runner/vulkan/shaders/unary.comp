#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "math.glsl"

// y = f(x) elementwise; the op codes are UnaryOp in runner/vulkan/elementwise.cpp.
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint op;
  float alpha;
  float beta;
} p;

float apply(float v) {
  switch (p.op) {
    case 0: return max(v, 0.0);
    case 1: return v >= 0.0 ? v : p.alpha * v;
    case 2: return sigmoid(v);
    case 3: return tanh(v);
    case 4: return exp(v);
    case 5: return log(v);
    case 6: return sqrt(v);
    case 7: return abs(v);
    case 8: return -v;
    case 9: return 1.0 / v;
    case 10: return floor(v);
    case 11: return ceil(v);
    case 12: return roundEven(v);
    case 13: return sin(v);
    case 14: return cos(v);
    case 15: return erf_approx(v);
    case 16: return v > 0.0 ? v : p.alpha * (exp(v) - 1.0);
    case 17: return v > 0.0 ? p.beta * v : p.beta * (p.alpha * exp(v) - p.alpha);
    case 18: return clamp(p.alpha * v + p.beta, 0.0, 1.0);
    case 19: return v * clamp(v / 6.0 + 0.5, 0.0, 1.0);
    case 20: return v > 20.0 ? v : log(1.0 + exp(v));
    case 21: return isnan(v) ? v : min(max(v, p.alpha), p.beta);
    case 22: return 0.5 * v * (1.0 + erf_approx(v * 0.70710678118654752));
    case 23: return 0.5 * v * (1.0 + tanh(0.79788456080286536 * (v + 0.044715 * v * v * v)));
    case 24: return v * tanh(v > 20.0 ? v : log(1.0 + exp(v)));
    case 25: return v / (1.0 + abs(v));
    case 26: return p.alpha * v + p.beta;
    case 27: return v;
    case 28: return max(0.0, v) + min(0.0, p.alpha * (exp(v / p.alpha) - 1.0));
    case 29: return v > p.alpha ? v : 0.0;
    case 30: return sign(v);
    case 31: return tan(v);
    case 32: return atan(v);
    case 33: return v * sigmoid(p.alpha * v);
    case 34: return v < -p.beta ? v + p.alpha : (v > p.beta ? v - p.alpha : 0.0);
  }
  return v;
}

void main() {
  uint i = linear_index();
  if (i >= p.n) return;
  float v = float(x[i]);
  // NaN stays NaN (GLSL's max, min and clamp may drop it), except through the comparisons of
  // ThresholdedRelu (29) and Shrink (34), which give 0 as on the CPU.
  y[i] = T(isnan(v) && p.op != 29u && p.op != 34u ? v : apply(v));
}
