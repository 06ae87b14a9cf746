// Vulkan kernels of RNN, GRU and LSTM: forward, reverse and bidirectional; layouts 0 and 1;
// every activation of the spec with its alpha and beta; clip; LSTM peepholes and input_forget;
// GRU linear_before_reset. A step of one direction is one dispatch of shaders/recurrent.comp
// over (batch, hidden) (GRU without linear_before_reset: two), the state float32 in one scratch
// buffer between steps, as runner/cpu/rnn.cpp keeps it. sequence_lens shorter than the sequence
// is declined (the CPU kernel runs it).
#include <algorithm>
#include <cstring>

#include "runner/recurrent.h"
#include "runner/vulkan/backend.h"

namespace onnxtool::runner::vulkan {

namespace {

struct StepParams {
  uint32_t n, cell, phase;
  uint32_t batch, hidden, inputs, seq, dirs;
  uint32_t dir, t;
  uint32_t flags;
  uint32_t h_in, h_out;
  uint32_t c_at, z_at, rh_at;
  float clip;
  uint32_t act[3];
  float alpha[3];
  float beta[3];
};
static_assert(sizeof(StepParams) <= 128, "push constants");

struct StateParams {
  uint32_t n, phase;
  uint32_t batch, hidden, dirs;
  uint32_t flags;
  uint32_t h_at, c_at;
};

// Flags of shaders/recurrent.comp and recurrent_state.comp.
constexpr uint32_t kBias = 1, kPeepholes = 2, kWriteY = 4, kLayout1 = 8, kInputForget = 16, kLinearBeforeReset = 32;
constexpr uint32_t kStateH = 1, kStateC = 2;

/// Declines unless optional input i is absent or a tensor of `type` with `elements` elements.
bool optional_input(DeviceKernelContext& ctx, size_t i, DataType type, int64_t elements, const char* what) {
  if (!ctx.has_input(i)) return false;
  if (ctx.input_dtype(i) != type) ctx.decline(std::string(what) + " of another element type than X");
  if (shape_size(ctx.input_shape(i)) != elements) ctx.decline(std::string(what) + " of an unexpected size");
  return true;
}

template <RecurrentCell Cell>
void recurrent_kernel(DeviceKernelContext& ctx) {
  const DataType type = require_same_float(ctx, 3);
  const auto& xs = ctx.input_shape(0);
  const auto& ws = ctx.input_shape(1);
  const auto& rs = ctx.input_shape(2);
  if (xs.size() != 3 || ws.size() != 3 || rs.size() != 3) ctx.decline("X, W or R not 3-D");
  const bool layout1 = ctx.opset() >= 14 && ctx.attr_int("layout", 0) != 0;
  const int64_t seq = layout1 ? xs[1] : xs[0], batch = layout1 ? xs[0] : xs[1], inputs = xs[2];
  const int64_t gates = Cell == RecurrentCell::kLstm ? 4 : Cell == RecurrentCell::kGru ? 3 : 1;
  const int64_t dirs = ws[0], hidden = rs[2], gh = gates * hidden;
  const std::string direction = ctx.attr_string("direction", "forward");
  if ((direction == "bidirectional") != (dirs == 2) ||
      (direction != "forward" && direction != "reverse" && direction != "bidirectional"))
    ctx.decline("a direction that does not match W");
  if (ws[1] != gh || ws[2] != inputs || rs[0] != dirs || rs[1] != gh) ctx.decline("W or R of unexpected shapes");
  if (ctx.has_attr("hidden_size") && ctx.attr_int("hidden_size", hidden) != hidden) ctx.decline("hidden_size differs from R");
  if (seq < 1 || batch < 1 || hidden < 1 || inputs < 1) ctx.decline("an empty sequence, batch or state");
  // An invocation computes one state element: per gate, a dot product over the inputs and one
  // over the hidden state.
  require_loop_bound(ctx, static_cast<uint64_t>(gates) * (loop_cost(inputs) + loop_cost(hidden)),
                     "a step's dot products over " + std::to_string(inputs) + " inputs and " +
                         std::to_string(hidden) + " hidden values");
  const bool has_bias = optional_input(ctx, 3, type, dirs * 2 * gh, "B");
  if (ctx.has_input(4)) {
    const Tensor& lens = ctx.host_input(4);
    if (lens.size() != batch) ctx.decline("sequence_lens of another length than the batch");
    for (int64_t i = 0; i < lens.size(); ++i)
      if (element_as_double(lens, i) != static_cast<double>(seq)) ctx.decline("sequence_lens shorter than the sequence");
  }
  const int64_t state = dirs * batch * hidden;
  const bool has_h0 = optional_input(ctx, 5, type, state, "initial_h");
  const bool lstm = Cell == RecurrentCell::kLstm;
  const bool has_c0 = lstm && optional_input(ctx, 6, type, state, "initial_c");
  const bool has_peep = lstm && optional_input(ctx, 7, type, dirs * 3 * hidden, "P");
  const auto acts = recurrent_activations(ctx, Cell, dirs);
  const size_t per_dir = acts.size() / static_cast<size_t>(dirs);
  const float clip = ctx.has_attr("clip") ? ctx.attr_float("clip", 0) : 0;
  const bool lbr = Cell == RecurrentCell::kGru && ctx.attr_int("linear_before_reset", 0) != 0;
  // The dot products index W and R with 32-bit offsets.
  checked_u32(ctx, shape_size(ws), "W's element count");
  checked_u32(ctx, shape_size(rs), "R's element count");
  checked_u32(ctx, shape_size(xs) * dirs, "X's element count");
  checked_u32(ctx, 5 * state, "the state's element count");

  auto x = input(ctx, 0), w = input(ctx, 1), r = input(ctx, 2);
  std::shared_ptr<const VulkanTensor> b = has_bias ? input(ctx, 3) : x;
  std::shared_ptr<const VulkanTensor> p = has_peep ? input(ctx, 7) : x;
  std::shared_ptr<const VulkanTensor> h0 = has_h0 ? input(ctx, 5) : x;
  std::shared_ptr<const VulkanTensor> c0 = has_c0 ? input(ctx, 6) : x;
  // S: h (two, alternating between steps), c, GRU's z and r * h; each [dirs, batch, hidden].
  auto s = backend_of(ctx).allocate(DataType::kFloat, {5 * state});
  const auto part = [&](int k) { return static_cast<uint32_t>(k * state); };
  const std::vector<int64_t> state_shape = layout1 ? std::vector<int64_t>{batch, dirs, hidden}
                                                   : std::vector<int64_t>{dirs, batch, hidden};
  const bool want_y = ctx.has_output(0);
  auto y = want_y ? output(ctx, 0, type,
                           layout1 ? std::vector<int64_t>{batch, seq, dirs, hidden}
                                   : std::vector<int64_t>{seq, dirs, batch, hidden})
                  : s;

  StateParams sp{};
  sp.n = static_cast<uint32_t>(state);
  sp.batch = static_cast<uint32_t>(batch);
  sp.hidden = static_cast<uint32_t>(hidden);
  sp.dirs = static_cast<uint32_t>(dirs);
  sp.flags = (has_h0 ? kStateH : 0) | (has_c0 ? kStateC : 0) | (layout1 ? kLayout1 : 0);
  sp.h_at = part(0);
  sp.c_at = part(2);
  const std::string state_shader = shader_for("recurrent_state", type);
  dispatch_1d(ctx, state_shader, {h0->range(), c0->range(), s->range(), s->range(), s->range()}, &sp, sizeof sp, sp.n);

  StepParams st{};
  st.n = static_cast<uint32_t>(batch * hidden);
  st.cell = static_cast<uint32_t>(Cell);
  st.batch = sp.batch;
  st.hidden = sp.hidden;
  st.inputs = static_cast<uint32_t>(inputs);
  st.seq = static_cast<uint32_t>(seq);
  st.dirs = sp.dirs;
  st.flags = (has_bias ? kBias : 0) | (has_peep ? kPeepholes : 0) | (want_y ? kWriteY : 0) | (layout1 ? kLayout1 : 0) |
             (lstm && ctx.attr_int("input_forget", 0) != 0 ? kInputForget : 0) | (lbr ? kLinearBeforeReset : 0);
  st.c_at = part(2);
  st.z_at = part(3);
  st.rh_at = part(4);
  st.clip = clip > 0 ? clip : 0;
  const std::string step_shader = shader_for("recurrent", type);
  const std::vector<BufferRange> buffers{x->range(), w->range(), r->range(), b->range(), p->range(), y->range(), s->range()};
  // h alternates between parts 0 and 1 (step k reads part k % 2): after `seq` steps each
  // direction's last h is in part seq % 2.
  for (int64_t d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    for (size_t k = 0; k < per_dir; ++k) {
      const auto& a = acts[static_cast<size_t>(d) * per_dir + k];
      st.act[k] = a.kind;  // shaders/recurrent.comp switches on kRecurrentActivationNames' order
      st.alpha[k] = a.alpha;
      st.beta[k] = a.beta;
    }
    st.dir = static_cast<uint32_t>(d);
    for (int64_t step = 0; step < seq; ++step) {
      st.t = static_cast<uint32_t>(reverse ? seq - 1 - step : step);
      st.h_in = part(static_cast<int>(step % 2));
      st.h_out = part(static_cast<int>(1 - step % 2));
      if (Cell == RecurrentCell::kGru && !lbr) {
        st.phase = 1;
        dispatch_1d(ctx, step_shader, buffers, &st, sizeof st, st.n);
      }
      st.phase = 0;
      dispatch_1d(ctx, step_shader, buffers, &st, sizeof st, st.n);
    }
  }
  // Y_h and Y_c from the last h of each direction (both directions ran `seq` steps).
  const bool want_h = ctx.output_count() > 1 && ctx.has_output(1);
  const bool want_c = lstm && ctx.output_count() > 2 && ctx.has_output(2);
  if (!want_h && !want_c) return;
  auto yh = want_h ? output(ctx, 1, type, state_shape) : s;
  auto yc = want_c ? output(ctx, 2, type, state_shape) : s;
  sp.phase = 1;
  sp.flags = (want_h ? kStateH : 0) | (want_c ? kStateC : 0) | (layout1 ? kLayout1 : 0);
  sp.h_at = part(static_cast<int>(seq % 2));
  dispatch_1d(ctx, state_shader, {x->range(), x->range(), yh->range(), yc->range(), s->range()}, &sp, sizeof sp, sp.n);
}

}  // namespace

void register_recurrent(KernelTable& t) {
  t.add("RNN", recurrent_kernel<RecurrentCell::kRnn>);
  t.add("GRU", recurrent_kernel<RecurrentCell::kGru>);
  t.add("LSTM", recurrent_kernel<RecurrentCell::kLstm>);
}

}  // namespace onnxtool::runner::vulkan
