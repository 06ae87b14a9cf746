#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "op_codes.h"
#include "rows.glsl"

// Reduce*: one workgroup per output element. The host merges neighbouring dims of the input
// into kept and reduced groups; an output's first element is found from its index through the
// kept dims, each reduced element from its index through the reduced dims. Op codes:
// REDUCE_OPS in op_codes.h.
//
// A reduction too long for one workgroup's loops (kMaxLoopIterations in runner/vulkan/backend.h)
// runs in two dispatches: STAGE_PARTIAL gives each output `chunks` workgroups, each reducing
// `chunk` of its elements into a float32 partial result in `part` (a mean's share already
// divided by the whole count, a LogSumExp's partial LogSumExp); STAGE_COMBINE reduces each
// output's partials, read from `part` as its input, and finishes (the square root of L2, the
// log of LogSum). STAGE_WHOLE is the one-dispatch reduction (chunks 1, chunk `red`).
layout(std430, binding = 0) readonly buffer X { T x[]; };
layout(std430, binding = 1) writeonly buffer Y { T y[]; };
layout(std430, binding = 2) buffer Part { float part[]; };
layout(push_constant) uniform Params {
  uint outputs;  // workgroups: outputs, times chunks in STAGE_PARTIAL
  uint red;      // elements reduced into each output
  uint op;
  uint kept_rank;
  uint red_rank;
  uint kept_dims[MAX_RANK];
  uint kept_strides[MAX_RANK];
  uint red_dims[MAX_RANK];
  uint red_strides[MAX_RANK];
  uint stage;
  uint chunk;    // elements per workgroup
  uint chunks;   // workgroups per output
} p;

#define STAGE_WHOLE 0u
#define STAGE_PARTIAL 1u
#define STAGE_COMBINE 2u

REDUCE_OPS(OP_CODE)

uint combine_of(uint op) {
  switch (op) {
    case kMax: return COMBINE_MAX;
    case kMin: return COMBINE_MIN;
    case kProd: return COMBINE_MUL;
    case kMaxNum: return COMBINE_MAX_NUM;
  }
  return COMBINE_ADD;
}

// The element folded into the result for a raw input value (a partial is one already).
float term(uint op, float v) {
  if (p.stage == STAGE_COMBINE) return v;
  switch (op) {
    case kL1: return abs(v);
    case kL2:
    case kSumSquare: return v * v;
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

float load(uint i) { return p.stage == STAGE_COMBINE ? part[i] : float(x[i]); }

void main() {
  uint g = row_index();
  if (g >= p.outputs) return;  // the whole workgroup leaves together
  uint o = g / p.chunks;
  uint first = (g % p.chunks) * p.chunk, end = min(p.red, first + p.chunk);
  uint base = 0u, rest = o;
  for (int d = int(p.kept_rank) - 1; d >= 0; --d) {
    base += (rest % p.kept_dims[d]) * p.kept_strides[d];
    rest /= p.kept_dims[d];
  }
  uint t = gl_LocalInvocationID.x, step = gl_WorkGroupSize.x;
  float result;
  if (p.op == kLogSumExp) {
    // Shifted by the maximum (NaN ignored, like std::max) when it is finite.
    float m = neg_inf();
    for (uint r = first + t; r < end; r += step) m = combine(COMBINE_MAX_NUM, m, load(base + red_offset(r)));
    m = row_reduce(COMBINE_MAX_NUM, m);
    bool shift = !isinf(m) && !isnan(m);
    float s = 0.0;
    for (uint r = first + t; r < end; r += step) s += exp(load(base + red_offset(r)) - (shift ? m : 0.0));
    s = row_reduce(COMBINE_ADD, s);
    result = shift ? m + log(s) : log(s);
  } else {
    uint how = combine_of(p.op);
    float acc = combine_identity(how);
    for (uint r = first + t; r < end; r += step) acc = combine(how, acc, term(p.op, load(base + red_offset(r))));
    acc = row_reduce(how, acc);
    // A mean's partials are shares of the whole count; L2 and LogSum finish on the whole sum.
    if (p.op == kMean && p.stage != STAGE_COMBINE) acc /= float(p.red);
    else if (p.op == kL2 && p.stage != STAGE_PARTIAL) acc = sqrt(acc);
    else if (p.op == kLogSum && p.stage != STAGE_PARTIAL) acc = log(acc);
    result = acc;
  }
  if (t != 0u) return;
  if (p.stage == STAGE_PARTIAL) part[g] = result;
  else y[o] = T(result);
}
