// The executor (executor.h) and the process's time limit.
#include "runner/executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>

#include "ir/error.h"
#include "runner/buffer_pool.h"
#include "runner/cpu/epilogue.h"
#include "runner/profile.h"
#include "runner/thread_pool.h"

namespace onnxtool::runner {

namespace {

/// set_time_limit's bound: nanoseconds of the steady clock (0: none), and its name.
std::atomic<int64_t> g_time_limit_ns{0};
std::string g_time_limit_what;

int64_t steady_ns(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

void set_time_limit(double seconds, const std::string& what) {
  g_time_limit_what = what;
  g_time_limit_ns = seconds > 0 ? steady_ns(std::chrono::steady_clock::now()) + static_cast<int64_t>(seconds * 1e9) : 0;
}

bool time_limit_set() { return g_time_limit_ns.load() != 0; }

bool time_limit_passed() {
  const int64_t at = g_time_limit_ns.load();
  return at != 0 && steady_ns(std::chrono::steady_clock::now()) >= at;
}

void Executor::check_time(const GraphPlan& plan, const Frame& frame, const Step* step) const {
  const int64_t process = g_time_limit_ns.load();
  if (process == 0 && !deadline) return;
  const auto now = std::chrono::steady_clock::now();
  const std::string* what = nullptr;
  if (process != 0 && steady_ns(now) >= process) what = &g_time_limit_what;
  else if (deadline && now >= *deadline) what = &deadline_what;
  if (!what) return;
  std::string where = step ? " before " + step->node->describe() : "";
  for (const Frame* f = &frame; f->parent; f = f->parent)
    where += std::string(where.empty() ? " in" : ",") + " the subgraph '" + f->plan->graph->name + "'" +
             (f->owner ? " of " + f->owner->describe() : "");
  throw TimeLimitReached(*what + " ran out" + where, what == &deadline_what ? deadline_remedies : std::vector<std::string>{});
}

namespace {

/// Rethrows a kernel's error with the node named (kernel failures mostly name it already).
[[noreturn]] void rethrow_naming(const Step& step, const Error& e) {
  const std::string msg = e.what();
  if (msg.find("node '") == 0 || msg.find("node #") == 0 || msg.find(" node ") != std::string::npos) throw e;
  throw Error(e.kind(), step.node->describe() + ": " + msg);
}

/// The inputs of a device step, resolved through the executor on first use.
class FrameInputs : public DeviceKernelContext::Inputs {
 public:
  FrameInputs(Executor& exec, Frame& frame, const Step& step) : exec_(exec), frame_(frame), step_(step) {}
  size_t count() const override { return step_.inputs.size(); }
  bool present(size_t i) const override {
    if (i >= step_.inputs.size() || step_.inputs[i].slot < 0) return false;
    const auto [f, s] = at(i);
    return f.slots[s].kind != Value::Kind::kNone || f.device[s];
  }
  DeviceTensorPtr device(size_t i) override { return exec_.device(frame_, step_.inputs[i]); }
  const Tensor& host(size_t i) override {
    const Value& v = exec_.host(frame_, step_.inputs[i]);
    if (!v.is_tensor()) throw DeviceDeclined("input " + std::to_string(i) + " is " + v.describe());
    return v.tensor;
  }
  DataType dtype(size_t i) const override {
    const auto [f, s] = at(i);
    if (const auto& d = f.device[s]) return d->dtype();
    return host_tensor(i).dtype();
  }
  const std::vector<int64_t>& shape(size_t i) const override {
    const auto [f, s] = at(i);
    if (const auto& d = f.device[s]) return d->shape();
    return host_tensor(i).shape();
  }

 private:
  std::pair<Frame&, size_t> at(size_t i) const {
    const SlotRef r = step_.inputs[i];
    Frame* f = &frame_;
    for (int k = 0; k < r.up; ++k) f = f->parent;
    return {*f, static_cast<size_t>(r.slot)};
  }
  const Tensor& host_tensor(size_t i) const {
    const auto [f, s] = at(i);
    const Value& v = f.slots[s];
    if (!v.is_tensor()) throw DeviceDeclined("input " + std::to_string(i) + " is " + v.describe());
    return v.tensor;
  }
  Executor& exec_;
  Frame& frame_;
  const Step& step_;
};

}  // namespace

const Value& Executor::host(Frame& at, SlotRef ref) {
  Frame& frame = frame_of(at, ref);
  const auto s = static_cast<size_t>(ref.slot);
  Value& v = frame.slots[s];
  if (v.kind == Value::Kind::kNone && !frame.device.empty() && frame.device[s])
    v = Value::of(backend_->download(*frame.device[s]));
  return v;
}

DeviceTensorPtr Executor::device(Frame& at, SlotRef ref) {
  Frame& frame = frame_of(at, ref);
  const auto s = static_cast<size_t>(ref.slot);
  if (frame.device[s]) return frame.device[s];
  const Value& v = frame.slots[s];
  if (!v.is_tensor()) throw DeviceDeclined("an input is " + v.describe());
  const GraphPlan& plan = *frame.plan;
  const bool constant = (s < plan.constants.size() && plan.constants[s].kind != Value::Kind::kNone) ||
                        (s < plan.constant_slot.size() && plan.constant_slot[s]);
  if (constant) {
    if (plan.device_constants.size() < plan.constants.size()) plan.device_constants.resize(plan.constants.size());
    if (!plan.device_constants[s]) plan.device_constants[s] = backend_->upload(v.tensor);
    frame.device[s] = plan.device_constants[s];
  } else {
    frame.device[s] = backend_->upload(v.tensor);
  }
  return frame.device[s];
}

bool Executor::run_on_device(const Step& step, Frame& frame, std::vector<Value>& outputs,
                             std::vector<DeviceTensorPtr>& device_outputs) {
  FrameInputs inputs(*this, frame, step);
  device_outputs.assign(step.outputs.size(), nullptr);
  try {
    DeviceKernelContext ctx(*backend_, *step.node, step.opset, inputs, device_outputs, outputs);
    step.device_fn(ctx);
    return true;
  } catch (const DeviceDeclined& declined) {
    placement.cpu_nodes.push_back({step.node, declined.what()});
    device_outputs.assign(step.outputs.size(), nullptr);
    outputs.assign(step.outputs.size(), Value());
    return false;
  }
}

void Executor::execute(const GraphPlan& plan, Frame& frame) {
  for (size_t s = 0; s < plan.constants.size(); ++s)
    if (plan.constants[s].kind != Value::Kind::kNone && frame.slots[s].kind == Value::Kind::kNone)
      frame.slots[s] = plan.constants[s];
  const bool on_device = backend_ != nullptr;
  if (on_device && frame.device.size() != frame.slots.size()) frame.device.assign(frame.slots.size(), nullptr);
  static const Value kNone;
  const bool timed = profiler != nullptr && frame.parent == nullptr;
  const Observation& observation = *observation_;
  const bool observing = observation.active() && (frame.parent == nullptr || observation.subgraphs);
  const auto wanted = [&](const ir::Value* v) { return observing && v && observation.wanted(*v); };
  std::vector<bool> skipped;  // steps whose work a fused Conv did in this run
  check_time(plan, frame, nullptr);  // a Loop body of no nodes comes here at every iteration
  for (size_t si = 0; si < plan.steps.size(); ++si) {
    const Step& step = plan.steps[si];
    check_time(plan, frame, &step);
    const auto kept = [&](int slot) {
      return frame.parent == nullptr && slot >= 0 && static_cast<size_t>(slot) < requested.size() && requested[static_cast<size_t>(slot)];
    };
    const bool requested_here = step.unread && kept(step.outputs[0]);
    if ((!skipped.empty() && skipped[si]) || (step.unread && !requested_here && !wanted(step.node->output(0)))) {
      for (int s : step.release_after)
        if (!kept(s)) frame.slots[static_cast<size_t>(s)] = kNone;
      continue;
    }
    // Fused activations run only where nothing watches the values between them (calibration
    // observes every tensor) and the nodes run on the CPU.
    const Epilogue* epilogue = nullptr;
    const ir::Value* fused_value = nullptr;  // the chain's last value
    if (!on_device && step.epilogue) {
      bool watched = wanted(step.node->output(0)) || kept(step.outputs[0]);
      for (size_t a : step.absorbed) {
        const Step& link = plan.steps[a];
        if (link.outputs[0] == step.fused_output) fused_value = link.node->output(0);
        else watched = watched || wanted(link.node->output(0)) || kept(link.outputs[0]);
      }
      if (!watched) epilogue = step.epilogue.get();
    }
    std::vector<Value> outputs(step.outputs.size());
    std::vector<DeviceTensorPtr> device_outputs;
    auto start = timed ? Profiler::Clock::now() : Profiler::Clock::time_point();
    const bool device_timed = timed && on_device && step.device_fn && !step.constant && backend_->begin_timed();
    bool ran = false;
    try {
      if (on_device && step.device_fn) ran = run_on_device(step, frame, outputs, device_outputs);
      if (ran && first_placement(step)) ++placement.device_nodes;
    } catch (const Error& e) {
      rethrow_naming(step, e);
    }
    if (on_device && !ran && first_placement(step)) {
      if (step.constant) ++placement.constant_nodes;
      else if (!step.node->subgraphs().empty())
        placement.cpu_nodes.push_back({step.node, "control flow; its subgraphs' nodes are placed one by one"});
      else if (!step.device_fn)
        placement.cpu_nodes.push_back({step.node, std::string("no ") + backend_->api_name() + " kernel"});
    }
    // A node the device declined after its timing began: the start it wrote is closed (and its
    // time dropped), so that the next timed node does not write that query again unreset.
    if (device_timed && !ran) backend_->end_timed([](int64_t) {});
    if (timed && on_device && !ran && !step.computed) {
      // A CPU node of a device session reads its inputs on the host: their download waits for
      // the device work recorded before it, which the device nodes' own times already count.
      // Fetched before its clock starts, so that the node's time is its kernel's and the nodes'
      // sum stays within the run (the wait is in the rest of the run's time).
      for (const auto& r : step.inputs)
        if (r.slot >= 0) host(frame, r);
      start = Profiler::Clock::now();
    }
    bool fused = false;
    if (!ran) fused = run_on_cpu(step, frame, outputs, epilogue);
    if (fused) {
      // The Conv's output is the chain's last value; the chain's own steps are done.
      if (skipped.empty()) skipped.assign(plan.steps.size(), false);
      for (size_t a : step.absorbed) skipped[a] = true;
      frame.slots[static_cast<size_t>(step.fused_output)] = std::move(outputs[0]);
      outputs[0] = Value();
      if (wanted(fused_value))
        observation.observer(*fused_value, frame.slots[static_cast<size_t>(step.fused_output)]);
    }
    if (timed && !step.constant) {
      const size_t event =
          profiler->record(*step.node, ran, start, Profiler::Clock::now(), fused ? step.fused_op_type : step.label);
      if (device_timed && ran)
        backend_->end_timed([profiler = profiler, event](int64_t ns) { profiler->set_device_time(event, ns); });
    }
    for (size_t i = 0; i < step.outputs.size() && !fused; ++i) {
      if (step.outputs[i] < 0) continue;
      const auto slot = static_cast<size_t>(step.outputs[i]);
      frame.slots[slot] = std::move(outputs[i]);
      if (on_device) frame.device[slot] = ran ? device_outputs[i] : nullptr;
      if (wanted(step.node->output(i))) observation.observer(*step.node->output(i), host(frame, SlotRef{0, static_cast<int>(slot)}));
    }
    // An unread value was computed for the observer: nothing else holds on to it.
    if (step.unread && !requested_here && step.outputs[0] >= 0) frame.slots[static_cast<size_t>(step.outputs[0])] = kNone;
    for (int s : step.release_after) {
      if (kept(s)) continue;
      frame.slots[static_cast<size_t>(s)] = kNone;
      if (on_device) frame.device[static_cast<size_t>(s)] = nullptr;
    }
  }
}

bool Executor::run_on_cpu(const Step& step, Frame& frame, std::vector<Value>& outputs, const Epilogue* epilogue) {
  if (step.computed) {
    outputs = step.cached;
    return false;
  }
  std::vector<const Value*> inputs;
  inputs.reserve(step.inputs.size());
  for (const auto& r : step.inputs) {
    if (r.slot < 0) {
      inputs.push_back(nullptr);
      continue;
    }
    // Device sessions: the CPU kernel reads its inputs on the host.
    const Value& v = backend_ ? host(frame, r) : frame_of(frame, r).slots[static_cast<size_t>(r.slot)];
    inputs.push_back(v.kind == Value::Kind::kNone ? nullptr : &v);
  }
  KernelContext ctx(*this, frame, *step.node, step.opset, threads_, std::move(inputs), outputs,
                    const_cast<std::shared_ptr<void>*>(&step.state));
  ctx.epilogue_ = epilogue;
  try {
    step.fn(ctx);
  } catch (const Error& e) {
    rethrow_naming(step, e);
  } catch (const std::bad_alloc&) {
    // A tensor whose size is known only now (Expand, Tile, Resize... of runtime values) and
    // that the allocator refuses: name the node rather than dying or printing a bare message.
    throw Error(ErrorKind::kFailed,
                step.node->describe() + ": out of memory (physical memory " + gigabytes(physical_memory()) + ")");
  }
  if (step.constant && keep_constants) {
    // Keep constant results (up to a size that is worth holding between runs).
    size_t bytes = 0;
    for (const auto& v : outputs) bytes += v.is_tensor() ? v.tensor.bytes() : 0;
    if (bytes <= (size_t{64} << 20)) {
      step.cached = outputs;
      step.computed = true;
    }
  }
  return ctx.epilogue_applied_;
}

std::vector<Value> Executor::run_subgraph(Frame& caller, const ir::Graph& g,
                                          const std::vector<Value>& inputs, const ir::Node* owner) {
  auto it = caller.plan->subplans.find(&g);
  if (it == caller.plan->subplans.end())
    throw Error(ErrorKind::kInternal, "subgraph '" + g.name + "' was not planned");
  const GraphPlan& plan = *it->second;
  Frame frame{&plan, &caller, std::vector<Value>(static_cast<size_t>(plan.n_slots))};
  frame.owner = owner;
  if (inputs.size() != plan.input_slots.size())
    throw Error(ErrorKind::kFailed, "subgraph '" + g.name + "' takes " + std::to_string(plan.input_slots.size()) +
                                        " inputs, got " + std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) frame.slots[static_cast<size_t>(plan.input_slots[i])] = inputs[i];
  execute(plan, frame);
  std::vector<Value> out;
  for (const auto& r : plan.output_slots) out.push_back(backend_ ? host(frame, r) : frame_of(frame, r).slots[static_cast<size_t>(r.slot)]);
  return out;
}

}  // namespace onnxtool::runner
