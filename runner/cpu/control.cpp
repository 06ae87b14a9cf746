// Kernels for constants, identity and control flow: Constant, Identity, If, Loop, Scan.
#include <cstring>

#include "runner/cpu/kernels.h"

namespace onnxtool::runner::cpu {
namespace {

void constant(KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  if (n.attributes.empty()) ctx.fail("Constant has no value attribute");
  const ir::Attribute& a = n.attributes[0];
  if (a.name == "value" && a.t) {
    ctx.set_output(0, from_ir(*a.t));
  } else if (a.name == "value_int") {
    ctx.set_output(0, Tensor::scalar_int64(a.i));
  } else if (a.name == "value_ints") {
    Tensor& t = ctx.output(0, DataType::kInt64, {static_cast<int64_t>(a.ints.size())});
    if (!a.ints.empty()) std::memcpy(t.mutable_raw(), a.ints.data(), a.ints.size() * 8);
  } else if (a.name == "value_float") {
    ctx.set_output(0, Tensor::scalar_float(a.f));
  } else if (a.name == "value_floats") {
    Tensor& t = ctx.output(0, DataType::kFloat, {static_cast<int64_t>(a.floats.size())});
    if (!a.floats.empty()) std::memcpy(t.mutable_raw(), a.floats.data(), a.floats.size() * 4);
  } else if (a.name == "value_string") {
    Tensor& t = ctx.output(0, DataType::kString, {});
    t.mutable_strings()[0] = a.s;
  } else if (a.name == "value_strings") {
    Tensor& t = ctx.output(0, DataType::kString, {static_cast<int64_t>(a.strings.size())});
    t.mutable_strings() = a.strings;
  } else {
    ctx.fail("Constant attribute '" + a.name + "' is not supported");
  }
}

void identity(KernelContext& ctx) { ctx.set_output(0, ctx.input_value(0)); }

bool scalar_true(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.size() != 1) ctx.fail(std::string(what) + " must hold one element, has shape " + shape_string(t.shape()));
  if (t.dtype() != DataType::kBool) ctx.fail(std::string(what) + " must be bool");
  return *t.data<uint8_t>() != 0;
}

void if_op(KernelContext& ctx) {
  const bool cond = scalar_true(ctx, ctx.input(0), "If condition");
  const ir::Graph* g = ctx.attr_graph(cond ? "then_branch" : "else_branch");
  if (!g) ctx.fail("missing branch");
  auto out = ctx.run_subgraph(*g, {});
  if (out.size() < ctx.output_count()) ctx.fail("branch returned too few outputs");
  for (size_t i = 0; i < ctx.output_count(); ++i) ctx.set_output(i, std::move(out[i]));
}

// Stacks per-iteration tensors along a new leading axis.
Tensor stack(const KernelContext& ctx, const std::vector<Tensor>& items, DataType type) {
  if (items.empty()) return Tensor(type, {0});
  std::vector<int64_t> shape = items[0].shape();
  for (const auto& t : items)
    if (t.shape() != shape || t.dtype() != items[0].dtype())
      ctx.fail("scan outputs of different shapes cannot be stacked: " + t.describe() + " vs " + items[0].describe());
  shape.insert(shape.begin(), static_cast<int64_t>(items.size()));
  Tensor out(items[0].dtype(), shape);
  if (out.dtype() == DataType::kString) {
    size_t k = 0;
    for (const auto& t : items)
      for (const auto& s : t.strings()) out.mutable_strings()[k++] = s;
    return out;
  }
  auto* dst = static_cast<uint8_t*>(out.mutable_raw());
  for (const auto& t : items) {
    std::memcpy(dst, t.raw(), t.bytes());
    dst += t.bytes();
  }
  return out;
}

void loop(KernelContext& ctx) {
  const ir::Graph* body = ctx.attr_graph("body");
  if (!body) ctx.fail("missing body");
  int64_t max_trip = INT64_MAX;
  if (ctx.has_input(0)) {
    const Tensor& m = ctx.input(0);
    if (m.size() != 1) ctx.fail("M must hold one element");
    max_trip = *m.data<int64_t>();
  }
  bool cond = true;
  if (ctx.has_input(1)) cond = scalar_true(ctx, ctx.input(1), "loop condition");
  const size_t n_state = ctx.input_count() > 2 ? ctx.input_count() - 2 : 0;
  std::vector<Value> state;
  for (size_t i = 0; i < n_state; ++i) state.push_back(ctx.input_value(i + 2));
  const size_t n_scan = ctx.output_count() - n_state;
  std::vector<std::vector<Tensor>> scans(n_scan);
  for (int64_t it = 0; it < max_trip && cond; ++it) {
    std::vector<Value> in;
    in.push_back(Value::of(Tensor::scalar_int64(it)));
    Tensor c(DataType::kBool, {});
    *c.mutable_data<uint8_t>() = cond;
    in.push_back(Value::of(c));
    for (auto& s : state) in.push_back(s);
    auto out = ctx.run_subgraph(*body, in);
    if (out.size() != 1 + n_state + n_scan) ctx.fail("loop body returned " + std::to_string(out.size()) + " values");
    if (out[0].is_tensor()) cond = scalar_true(ctx, out[0].tensor, "loop body condition");
    for (size_t i = 0; i < n_state; ++i) state[i] = std::move(out[1 + i]);
    for (size_t k = 0; k < n_scan; ++k) {
      if (!out[1 + n_state + k].is_tensor()) ctx.fail("loop scan output is not a tensor");
      scans[k].push_back(out[1 + n_state + k].tensor);
    }
  }
  for (size_t i = 0; i < n_state; ++i) ctx.set_output(i, state[i]);
  for (size_t k = 0; k < n_scan; ++k) {
    DataType t = DataType::kFloat;
    const auto& vi = body->outputs[1 + n_state + k];
    const ir::TypeInfo& ty = vi.type ? *vi.type : vi.value->type;
    if (ty.elem_type) t = ty.data_type();
    ctx.set_output(n_state + k, stack(ctx, scans[k], t));
  }
}

// Slice `index` of axis `axis` of a tensor.
Tensor take(const Tensor& x, int64_t axis, int64_t index) {
  std::vector<int64_t> shape = x.shape();
  const int64_t outer = shape_size(std::vector<int64_t>(shape.begin(), shape.begin() + axis));
  const int64_t len = shape[static_cast<size_t>(axis)];
  shape.erase(shape.begin() + axis);
  const int64_t inner = shape_size(std::vector<int64_t>(shape.begin() + axis, shape.end()));
  Tensor out(x.dtype(), shape);
  if (x.dtype() == DataType::kString) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        out.mutable_strings()[static_cast<size_t>(o * inner + i)] = x.strings()[static_cast<size_t>((o * len + index) * inner + i)];
    return out;
  }
  const size_t es = x.bytes() / static_cast<size_t>(std::max<int64_t>(x.size(), 1));
  const auto* src = static_cast<const uint8_t*>(x.raw());
  auto* dst = static_cast<uint8_t*>(out.mutable_raw());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + static_cast<size_t>(o * inner) * es, src + static_cast<size_t>((o * len + index) * inner) * es,
                static_cast<size_t>(inner) * es);
  return out;
}

// Moves the leading axis of a stacked tensor to `axis`.
Tensor move_leading_axis(const Tensor& x, int64_t axis) {
  if (axis == 0) return x;
  std::vector<int64_t> shape = x.shape();
  const int64_t n = shape[0];
  std::vector<int64_t> out_shape(shape.begin() + 1, shape.end());
  out_shape.insert(out_shape.begin() + axis, n);
  Tensor out(x.dtype(), out_shape);
  const int64_t outer = shape_size(std::vector<int64_t>(out_shape.begin(), out_shape.begin() + axis));
  const int64_t inner = shape_size(std::vector<int64_t>(out_shape.begin() + axis + 1, out_shape.end()));
  const size_t es = x.bytes() / static_cast<size_t>(std::max<int64_t>(x.size(), 1));
  const auto* src = static_cast<const uint8_t*>(x.raw());
  auto* dst = static_cast<uint8_t*>(out.mutable_raw());
  for (int64_t k = 0; k < n; ++k)
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + static_cast<size_t>((o * n + k) * inner) * es, src + static_cast<size_t>((k * outer + o) * inner) * es,
                  static_cast<size_t>(inner) * es);
  return out;
}

// Scan-9 and later (Scan-8 with its batch axis is not supported).
/// Scan-8: a leading batch axis on every state and scan input (the scan axis is 1), an optional
/// first input sequence_lens, and `directions` per scan input. Each batch entry is scanned on
/// its own; results are stacked along the batch axis.
void scan8(KernelContext& ctx) {
  const ir::Graph* body = ctx.attr_graph("body");
  if (!body) ctx.fail("missing body");
  const int64_t m = ctx.attr_int("num_scan_inputs", 0);
  if (m < 1 || ctx.input_count() < static_cast<size_t>(m) + 1) ctx.fail("num_scan_inputs does not fit the inputs");
  const size_t n_state = ctx.input_count() - 1 - static_cast<size_t>(m);
  const size_t n_scan_out = ctx.output_count() - n_state;
  const auto dirs = ctx.attr_ints("directions", std::vector<int64_t>(static_cast<size_t>(m), 0));
  const Tensor& first = ctx.input(1 + n_state);
  if (first.rank() < 2) ctx.fail("scan inputs must be [batch, sequence, ...]");
  const int64_t batch = first.dim(0), max_len = first.dim(1);
  std::vector<std::vector<Tensor>> final_state(n_state), scanned(n_scan_out);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t len = max_len;
    if (ctx.has_input(0)) {
      const Tensor& sl = ctx.input(0);
      len = sl.dtype() == DataType::kInt32 ? sl.data<int32_t>()[b] : sl.data<int64_t>()[b];
      if (len < 0 || len > max_len) ctx.fail("sequence_lens value out of range");
    }
    std::vector<Value> state;
    for (size_t i = 0; i < n_state; ++i) state.push_back(Value::of(take(ctx.input(1 + i), 0, b)));
    std::vector<std::vector<Tensor>> outs(n_scan_out);
    for (int64_t t = 0; t < len; ++t) {
      std::vector<Value> in = state;
      for (int64_t j = 0; j < m; ++j) {
        const Tensor xb = take(ctx.input(1 + n_state + static_cast<size_t>(j)), 0, b);
        in.push_back(Value::of(take(xb, 0, dirs[static_cast<size_t>(j)] ? len - 1 - t : t)));
      }
      auto out = ctx.run_subgraph(*body, in);
      for (size_t i = 0; i < n_state; ++i) state[i] = out[i];
      for (size_t k = 0; k < n_scan_out; ++k) outs[k].push_back(out[n_state + k].tensor);
    }
    for (size_t i = 0; i < n_state; ++i) final_state[i].push_back(state[i].tensor);
    for (size_t k = 0; k < n_scan_out; ++k) scanned[k].push_back(stack(ctx, outs[k], DataType::kFloat));
  }
  for (size_t i = 0; i < n_state; ++i) ctx.set_output(i, stack(ctx, final_state[i], DataType::kFloat));
  for (size_t k = 0; k < n_scan_out; ++k) ctx.set_output(n_state + k, stack(ctx, scanned[k], DataType::kFloat));
}

void scan(KernelContext& ctx) {
  const ir::Graph* body = ctx.attr_graph("body");
  if (!body) ctx.fail("missing body");
  const int64_t m = ctx.attr_int("num_scan_inputs", 0);
  const size_t n_state = ctx.input_count() - static_cast<size_t>(m);
  const size_t n_scan_out = ctx.output_count() - n_state;
  auto in_axes = ctx.attr_ints("scan_input_axes", std::vector<int64_t>(static_cast<size_t>(m), 0));
  auto in_dirs = ctx.attr_ints("scan_input_directions", std::vector<int64_t>(static_cast<size_t>(m), 0));
  auto out_axes = ctx.attr_ints("scan_output_axes", std::vector<int64_t>(n_scan_out, 0));
  auto out_dirs = ctx.attr_ints("scan_output_directions", std::vector<int64_t>(n_scan_out, 0));
  std::vector<Value> state;
  for (size_t i = 0; i < n_state; ++i) state.push_back(ctx.input_value(i));
  int64_t steps = -1;
  std::vector<int64_t> axes(static_cast<size_t>(m));
  for (int64_t j = 0; j < m; ++j) {
    const Tensor& x = ctx.input(n_state + static_cast<size_t>(j));
    int64_t a = in_axes[static_cast<size_t>(j)];
    if (a < 0) a += static_cast<int64_t>(x.rank());
    if (a < 0 || a >= static_cast<int64_t>(x.rank())) ctx.fail("scan_input_axes out of range");
    axes[static_cast<size_t>(j)] = a;
    const int64_t len = x.dim(static_cast<size_t>(a));
    if (steps >= 0 && len != steps) ctx.fail("scan inputs have different lengths");
    steps = len;
  }
  std::vector<std::vector<Tensor>> outs(n_scan_out);
  for (int64_t t = 0; t < steps; ++t) {
    std::vector<Value> in = state;
    for (int64_t j = 0; j < m; ++j) {
      const int64_t idx = in_dirs[static_cast<size_t>(j)] ? steps - 1 - t : t;
      in.push_back(Value::of(take(ctx.input(n_state + static_cast<size_t>(j)), axes[static_cast<size_t>(j)], idx)));
    }
    auto out = ctx.run_subgraph(*body, in);
    for (size_t i = 0; i < n_state; ++i) state[i] = out[i];
    for (size_t k = 0; k < n_scan_out; ++k) outs[k].push_back(out[n_state + k].tensor);
  }
  for (size_t i = 0; i < n_state; ++i) ctx.set_output(i, state[i]);
  for (size_t k = 0; k < n_scan_out; ++k) {
    if (out_dirs[k]) std::reverse(outs[k].begin(), outs[k].end());
    Tensor stacked = stack(ctx, outs[k], DataType::kFloat);
    int64_t a = out_axes[k];
    if (a < 0) a += static_cast<int64_t>(stacked.rank());
    ctx.set_output(n_state + k, move_leading_axis(stacked, a));
  }
}

}  // namespace

void register_control_kernels(KernelRegistry& r) {
  r.add("Constant", constant);
  r.add("Identity", identity);
  r.add("If", if_op);
  r.add("Loop", loop);
  r.add("", "Scan", 8, 8, scan8);
  r.add("", "Scan", 9, kMaxOpset, scan);
}

}  // namespace onnxtool::runner::cpu
