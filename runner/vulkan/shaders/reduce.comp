#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "rows.glsl"

// Reduce*: one workgroup per output element. The host merges neighbouring dims of the input
// into kept and reduced groups; an output's first element is found from its index through the
// kept dims, each reduced element from its index through the reduced dims. Op codes: ReduceOp
// in runner/vulkan/nn.cpp.
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };
layout(push_constant) uniform Params {
  uint outputs;
  uint red;  // elements reduced into each output
  uint op;
  uint kept_rank;
  uint red_rank;
  uint kept_dims[MAX_RANK];
  uint kept_strides[MAX_RANK];
  uint red_dims[MAX_RANK];
  uint red_strides[MAX_RANK];
} p;

#define OP_SUM 0u
#define OP_MEAN 1u
#define OP_MAX 2u
#define OP_MIN 3u
#define OP_PROD 4u
#define OP_L1 5u
#define OP_L2 6u
#define OP_LOG_SUM 7u
#define OP_LOG_SUM_EXP 8u
#define OP_SUM_SQUARE 9u
#define OP_MAX_NUM 10u  // GlobalMaxPool: NaN is ignored

uint combine_of(uint op) {
  switch (op) {
    case OP_MAX: return COMBINE_MAX;
    case OP_MIN: return COMBINE_MIN;
    case OP_PROD: return COMBINE_MUL;
    case OP_MAX_NUM: return COMBINE_MAX_NUM;
  }
  return COMBINE_ADD;
}

// The element folded into the result for a raw input value.
float term(uint op, float v) {
  switch (op) {
    case OP_L1: return abs(v);
    case OP_L2:
    case OP_SUM_SQUARE: return v * v;
  }
  return v;
}

uint red_offset(uint r) {
  uint off = 0u;
  for (int d = int(p.red_rank) - 1; d >= 0; --d) {
    off += (r % p.red_dims[d]) * p.red_strides[d];
    r /= p.red_dims[d];
  }
  return off;
}

void main() {
  uint o = row_index();
  if (o >= p.outputs) return;  // the whole workgroup leaves together
  uint base = 0u, rest = o;
  for (int d = int(p.kept_rank) - 1; d >= 0; --d) {
    base += (rest % p.kept_dims[d]) * p.kept_strides[d];
    rest /= p.kept_dims[d];
  }
  uint t = gl_LocalInvocationID.x, step = gl_WorkGroupSize.x;
  float result;
  if (p.op == OP_LOG_SUM_EXP) {
    // Shifted by the maximum (NaN ignored, like std::max) when it is finite.
    float m = neg_inf();
    for (uint r = t; r < p.red; r += step) m = combine(COMBINE_MAX_NUM, m, float(x[base + red_offset(r)]));
    m = row_reduce(COMBINE_MAX_NUM, m);
    bool shift = !isinf(m) && !isnan(m);
    float s = 0.0;
    for (uint r = t; r < p.red; r += step) s += exp(float(x[base + red_offset(r)]) - (shift ? m : 0.0));
    s = row_reduce(COMBINE_ADD, s);
    result = shift ? m + log(s) : log(s);
  } else {
    uint how = combine_of(p.op);
    float acc = combine_identity(how);
    for (uint r = t; r < p.red; r += step) acc = combine(how, acc, term(p.op, float(x[base + red_offset(r)])));
    acc = row_reduce(how, acc);
    if (p.op == OP_MEAN) acc /= float(p.red);
    else if (p.op == OP_L2) acc = sqrt(acc);
    else if (p.op == OP_LOG_SUM) acc = log(acc);
    result = acc;
  }
  if (t == 0u) y[o] = T(result);
}
