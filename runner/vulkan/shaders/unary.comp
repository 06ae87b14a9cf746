#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "math.glsl"
#include "op_codes.h"

// y = f(x) elementwise; the op codes are UNARY_OPS in op_codes.h.
UNARY_OPS(UNARY_CODE)
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
    case kRelu: return max(v, 0.0);
    case kLeakyRelu: return v >= 0.0 ? v : p.alpha * v;
    case kSigmoid: return sigmoid(v);
    case kTanh: return tanh(v);
    case kExp: return exp(v);
    case kLog: return log(v);
    case kSqrt: return sqrt(v);
    case kAbs: return abs(v);
    case kNeg: return -v;
    case kReciprocal: return 1.0 / v;
    case kFloor: return floor(v);
    case kCeil: return ceil(v);
    case kRound: return roundEven(v);
    case kSin: return sin(v);
    case kCos: return cos(v);
    case kErf: return erf_approx(v);
    case kElu: return v > 0.0 ? v : p.alpha * (exp(v) - 1.0);
    case kSelu: return v > 0.0 ? p.beta * v : p.beta * (p.alpha * exp(v) - p.alpha);
    case kHardSigmoid: return clamp(p.alpha * v + p.beta, 0.0, 1.0);
    case kHardSwish: return v * clamp(v / 6.0 + 0.5, 0.0, 1.0);
    case kSoftplus: return v > 20.0 ? v : log(1.0 + exp(v));
    case kClip: return isnan(v) ? v : min(max(v, p.alpha), p.beta);
    case kGelu: return 0.5 * v * (1.0 + erf_approx(v * 0.70710678118654752));
    case kGeluTanh: return 0.5 * v * (1.0 + tanh(0.79788456080286536 * (v + 0.044715 * v * v * v)));
    case kMish: return v * tanh(v > 20.0 ? v : log(1.0 + exp(v)));
    case kSoftsign: return v / (1.0 + abs(v));
    case kAffine: return p.alpha * v + p.beta;
    case kIdentity: return v;
    case kCelu: return max(0.0, v) + min(0.0, p.alpha * (exp(v / p.alpha) - 1.0));
    case kThresholdedRelu: return v > p.alpha ? v : 0.0;
    case kSign: return sign(v);
    case kTan: return tan(v);
    case kAtan: return atan(v);
    case kSwish: return v * sigmoid(p.alpha * v);
    case kShrink: return v < -p.beta ? v + p.alpha : (v > p.beta ? v - p.alpha : 0.0);
  }
  return v;
}

void main() {
  uint i = linear_index();
  if (i >= p.n) return;
  float v = float(x[i]);
  // NaN stays NaN (GLSL's max, min and clamp may drop it), except through the comparisons of
  // ThresholdedRelu and Shrink, which give 0 as on the CPU.
  y[i] = T(isnan(v) && p.op != kThresholdedRelu && p.op != kShrink ? v : apply(v));
}
