// Per-row work: one workgroup per row (an output element, a softmax group, a normalized row).
// Each invocation folds the elements t, t + L, t + 2L... of its row, then the workgroup
// combines the partial results in shared memory as a binary tree. The order is fixed by the
// workgroup size, so the result is the same on every run. The host makes the workgroup size a
// power of two no larger than ROW_MAX_LOCAL.
#define ROW_MAX_LOCAL 256

shared float row_buf[ROW_MAX_LOCAL];
shared uint row_arg[ROW_MAX_LOCAL];

// The row of this workgroup in a grid folded into y past the x limit.
uint row_index() { return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }

float neg_inf() { return uintBitsToFloat(0xff800000u); }
float pos_inf() { return uintBitsToFloat(0x7f800000u); }

// How two partial results combine.
#define COMBINE_ADD 0u
#define COMBINE_MUL 1u
#define COMBINE_MAX 2u      // NaN wins (the CPU's Reduce* and Softmax maximum)
#define COMBINE_MIN 3u      // NaN wins
#define COMBINE_MAX_NUM 4u  // NaN loses (std::max(acc, v) with acc starting at -inf)

float combine(uint how, float a, float b) {
  switch (how) {
    case COMBINE_ADD: return a + b;
    case COMBINE_MUL: return a * b;
    case COMBINE_MAX: return isnan(a) ? a : (isnan(b) ? b : (b > a ? b : a));
    case COMBINE_MIN: return isnan(a) ? a : (isnan(b) ? b : (b < a ? b : a));
    case COMBINE_MAX_NUM: return a < b ? b : a;
  }
  return a;
}

float combine_identity(uint how) {
  switch (how) {
    case COMBINE_MUL: return 1.0;
    case COMBINE_MAX:
    case COMBINE_MAX_NUM: return neg_inf();
    case COMBINE_MIN: return pos_inf();
  }
  return 0.0;
}

// Combines every invocation's `v`; every invocation gets the result. Call in uniform control
// flow (the whole workgroup).
float row_reduce(uint how, float v) {
  uint t = gl_LocalInvocationID.x;
  row_buf[t] = v;
  memoryBarrierShared();
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1u) {
    if (t < s) row_buf[t] = combine(how, row_buf[t], row_buf[t + s]);
    memoryBarrierShared();
    barrier();
  }
  float r = row_buf[0];
  barrier();  // the buffer is reused by the next reduction
  return r;
}

// Whether (vb, ib) beats (va, ia) as the row's maximum: the larger value, the lower index on
// ties, and the first NaN over anything (the CPU's Hardmax and ArgMax rule).
bool arg_better(float va, uint ia, float vb, uint ib) {
  if (isnan(va)) return isnan(vb) && ib < ia;
  if (isnan(vb)) return true;
  return vb > va || (vb == va && ib < ia);
}

// The index of the row's maximum given each invocation's best (value, index).
uint row_argmax(float v, uint i) {
  uint t = gl_LocalInvocationID.x;
  row_buf[t] = v;
  row_arg[t] = i;
  memoryBarrierShared();
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1u) {
    if (t < s && arg_better(row_buf[t], row_arg[t], row_buf[t + s], row_arg[t + s])) {
      row_buf[t] = row_buf[t + s];
      row_arg[t] = row_arg[t + s];
    }
    memoryBarrierShared();
    barrier();
  }
  uint r = row_arg[0];
  barrier();
  return r;
}
