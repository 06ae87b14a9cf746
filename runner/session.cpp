// Session: a model planned once (planner.cpp) and run many times (executor.cpp), with its
// feeds checked, outputs picked by name, and the conversions between ir and runner tensors.
#include "runner/session.h"

#include <malloc.h>

#include <algorithm>
#include <set>
#include <string>

#include "ir/diagnostic.h"
#include "ir/error.h"
#include "ir/model_io.h"
#include "ir/shape_inference.h"
#include "runner/buffer_pool.h"
#include "runner/executor.h"
#include "runner/ort/ort_session.h"
#include "runner/profile.h"
#include "runner/thread_pool.h"

namespace onnxtool::runner {

// ---------------------------------------------------------------- Session

Session::Session(ir::Model& model, SessionOptions options) : model_(model), options_(options) {
  // Tensors of a megabyte and more come from the buffer pool (runner/buffer_pool.h); the
  // heap keeps the smaller ones' memory rather than returning it to the kernel after every run.
  static const bool tuned = [] {
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    return true;
  }();
  (void)tuned;
  if (!model.graph) throw_input_error("the model has no graph");
  if (const uint64_t memory = physical_memory()) check_static_sizes(*model.graph, memory);
  if (options_.device.kind == DeviceSpec::Kind::kVulkan) backend_ = open_vulkan_backend(options_.device);
  const int threads = options_.threads > 0 ? options_.threads : default_threads();
  options_.threads = threads;
  if (options_.device.kind == DeviceSpec::Kind::kOnnxruntime) {
    // onnxruntime runs the whole model: nothing is planned here, so a node the reference runner
    // has no kernel for (a contrib op) still runs there.
    ort_device_ = std::make_unique<DeviceInfo>();
    ort_device_->id = options_.device.to_string();
    ort_device_->name = ort::library_version() + ", level " + ort::level_name(options_.device.ort_level);
    ort_device_->type = "onnxruntime";
    ort_device_->driver = ort_device_->name;
    ort_plain_ = std::make_unique<ort::ModelSession>(ir::serialize_model(model), options_.device.ort_level, threads);
  } else {
    plan_ = plan_graph(model, *model.graph, backend_.get());
  }
  if (backend_) {
    // The weights live on the device for the whole session: refuse up front a model whose
    // constants alone exceed the device's memory.
    uint64_t constant_bytes = 0;
    for (const Value& v : plan_->constants)
      if (v.is_tensor()) constant_bytes += v.tensor.bytes();
    const DeviceInfo& d = backend_->info();
    if (d.memory_bytes && constant_bytes > d.memory_bytes)
      throw Error(ErrorKind::kFailed, "the model's weights need " + gigabytes(constant_bytes) + ", more than " + d.id +
                                          " (" + d.name + ") has (" + gigabytes(d.memory_bytes) +
                                          " of device memory); run it on the CPU");
  }
  executor_ = std::make_unique<Executor>(threads, &observation_, backend_.get());
  executor_->keep_constants = options_.keep_constants;
  for (const auto& vi : model.graph->inputs)
    if (!vi.value->is_initializer()) inputs_.push_back(&vi);
  for (const auto& vi : model.graph->inputs)
    if (vi.value->is_initializer()) inputs_.push_back(&vi);
  for (const auto& vi : model.graph->outputs) outputs_.push_back(&vi);
}

Session::~Session() {
  plan_.reset();
  release_pooled_buffers();  // what this session's runs kept for the next run
}

void Session::set_profiler(Profiler* profiler) { executor_->profiler = profiler; }

void Session::set_deadline(std::chrono::steady_clock::time_point at, const std::string& what,
                           std::vector<std::string> remedies) {
  executor_->deadline = at;
  executor_->deadline_what = what;
  executor_->deadline_remedies = std::move(remedies);
}

const Placement& Session::placement() const { return executor_->placement; }

namespace {

void check_feed(const ir::ValueInfo& vi, const Value& v) {
  const std::string& name = vi.value->name();
  const ir::TypeInfo& t = vi.type ? *vi.type : vi.value->type;
  if (t.kind != ir::TypeInfo::Kind::kTensor) return;
  if (!v.is_tensor()) throw_usage_error("input '" + name + "' expects a tensor, got " + v.describe());
  const Tensor& x = v.tensor;
  if (t.elem_type && static_cast<int32_t>(x.dtype()) != t.elem_type)
    throw_usage_error("input '" + name + "' expects element type " +
                      std::string(ir::data_type_name(t.data_type())) + ", got " +
                      std::string(ir::data_type_name(x.dtype())));
  if (!t.shape) return;
  if (t.shape->rank() != x.rank())
    throw_usage_error("input '" + name + "' expects rank " + std::to_string(t.shape->rank()) + " " +
                      t.shape->to_string() + ", got " + shape_string(x.shape()));
  for (size_t i = 0; i < x.rank(); ++i) {
    const ir::Dim& d = t.shape->dims[i];
    if (d.is_static() && d.value != x.dim(i))
      throw_usage_error("input '" + name + "' expects shape " + t.shape->to_string() + ", got " +
                        shape_string(x.shape()) + " (dim " + std::to_string(i) + ")");
  }
}

/// The graph input a feed names, its value checked against the input's declared type and shape;
/// an unknown name is a usage error listing the model's inputs.
const ir::Value* checked_feed(const std::vector<const ir::ValueInfo*>& inputs, const std::string& name, const Value& value) {
  for (const auto* vi : inputs) {
    if (vi->value->name() != name) continue;
    check_feed(*vi, value);
    return vi->value;
  }
  std::string known;
  for (const auto* vi : inputs) known += (known.empty() ? "" : ", ") + vi->value->name();
  throw_usage_error("the model has no input '" + name + "' (inputs: " + known + ")");
}

}  // namespace

std::vector<Value> Session::run_onnxruntime(const std::map<std::string, Value>& feeds,
                                            const std::vector<std::string>& output_names) {
  const ir::Graph& g = *model_.graph;
  std::map<std::string, Tensor> tensors;
  for (const auto& [name, value] : feeds) {
    checked_feed(inputs_, name, value);
    if (!value.is_tensor()) throw_usage_error("input '" + name + "' is " + value.describe() + ": only tensors are passed to onnxruntime");
    tensors[name] = value.tensor;
  }
  for (const auto* vi : inputs_)
    if (!vi->value->is_initializer() && !feeds.count(vi->value->name()))
      throw_usage_error("input '" + vi->value->name() + "' is not given");

  std::set<std::string> graph_outputs;
  for (const auto* vi : outputs_) graph_outputs.insert(vi->value->name());
  std::vector<std::string> wanted = output_names;
  if (wanted.empty())
    for (const auto* vi : outputs_) wanted.push_back(vi->value->name());
  const bool intermediate_wanted =
      std::any_of(wanted.begin(), wanted.end(), [&](const std::string& n) { return !graph_outputs.count(n); });
  const bool wide = observation_.active() || intermediate_wanted;
  if (wide && !ort_wide_) {
    // Polygraphy's way to see inside onnxruntime: a copy of the model in which every
    // intermediate value of a known tensor type is a graph output too. The copy is the model's
    // own serialization with a longer output list: the list is swapped for the time of it, so the
    // original entries (which callers point at) never move.
    ir::DiagnosticSink sink;
    const ir::TypeTable inferred = ir::infer_types(model_, sink);
    std::vector<ir::ValueInfo> outputs = model_.graph->outputs;
    for (const auto& node : g.nodes())
      for (ir::Value* v : node ? node->outputs() : std::vector<ir::Value*>{}) {
        if (!v || v->name().empty() || graph_outputs.count(v->name())) continue;
        const auto t = inferred.find(v);
        const ir::TypeInfo& type = t != inferred.end() ? t->second : v->type;
        if (!type.is_tensor() || !type.elem_type || !ort::passes(type.data_type())) continue;
        ir::ValueInfo vi;
        vi.value = v;
        vi.type = ir::TypeInfo::tensor(type.data_type());  // the element type only: onnxruntime infers shapes itself
        outputs.push_back(std::move(vi));
        ort_wide_names_.push_back(v->name());
      }
    std::string bytes;
    {
      struct Swap {
        std::vector<ir::ValueInfo>& a;
        std::vector<ir::ValueInfo>& b;
        Swap(std::vector<ir::ValueInfo>& x, std::vector<ir::ValueInfo>& y) : a(x), b(y) { a.swap(b); }
        ~Swap() { a.swap(b); }
      } swapped(model_.graph->outputs, outputs);
      bytes = ir::serialize_model(model_);
    }
    ort_wide_ = std::make_unique<ort::ModelSession>(bytes, options_.device.ort_level, options_.threads);
  }
  for (const auto& n : wanted)
    if (!graph_outputs.count(n) && std::find(ort_wide_names_.begin(), ort_wide_names_.end(), n) == ort_wide_names_.end()) {
      if (!g.find(n)) throw_usage_error("the model has no value '" + n + "'");
      throw_usage_error("value '" + n + "' cannot be taken from onnxruntime (not a tensor of a known type in the main graph)");
    }
  // The graph's outputs come from the model as written whenever only they are asked for, also
  // when an observer wants the intermediate values too: a value made an output is one onnxruntime
  // no longer fuses or casts away, and what it computes downstream can change with it (float16
  // peak picking's departure vanishes in the copy). The intermediate values come from the copy.
  std::vector<std::string> plain_fetch, wide_fetch;
  std::set<std::string> fetching;
  auto add = [&](std::vector<std::string>& to, const std::string& n) {
    if (fetching.insert(n).second) to.push_back(n);
  };
  std::vector<std::string>& main_fetch = intermediate_wanted ? wide_fetch : plain_fetch;
  for (const auto& n : wanted) add(main_fetch, n);
  if (observation_.active()) {
    for (const auto* vi : outputs_) add(main_fetch, vi->value->name());
    for (const auto& n : ort_wide_names_) add(wide_fetch, n);
  }
  std::map<std::string, Tensor> fetched;
  for (auto [session, names] : {std::make_pair(ort_plain_.get(), &plain_fetch), std::make_pair(ort_wide_.get(), &wide_fetch)}) {
    if (names->empty()) continue;
    std::vector<Tensor> results = session->run(tensors, *names);
    for (size_t i = 0; i < names->size(); ++i) fetched.emplace((*names)[i], std::move(results[i]));
  }
  if (observation_.active())
    for (const auto& node : g.nodes())
      for (const ir::Value* v : node ? node->outputs() : std::vector<ir::Value*>{})
        if (v && fetched.count(v->name()) && observation_.wanted(*v)) observation_.observer(*v, Value::of(fetched.at(v->name())));
  std::vector<Value> out;
  for (const auto& n : wanted) out.push_back(Value::of(fetched.at(n)));
  return out;
}

std::vector<Value> Session::run(const std::map<std::string, Value>& feeds,
                                const std::vector<std::string>& output_names) {
  if (ort_plain_) return run_onnxruntime(feeds, output_names);
  // Held until the frame's device tensors are gone (declared first, released last).
  std::unique_lock<std::mutex> device_lock;
  if (backend_) device_lock = backend_->lock_for_run();
  // The run's wall time for the profiler, feeds to outputs (also when the run fails).
  struct RunTimer {
    Profiler* profiler;
    explicit RunTimer(Profiler* p) : profiler(p) {
      if (profiler) profiler->begin_run();
    }
    ~RunTimer() {
      if (profiler) profiler->end_run();
    }
  } timer(executor_->profiler);
  Frame frame{plan_.get(), nullptr, std::vector<Value>(static_cast<size_t>(plan_->n_slots))};
  const ir::Graph& g = *model_.graph;
  for (const auto& [name, value] : feeds)
    frame.slots[static_cast<size_t>(plan_->slots.at(checked_feed(inputs_, name, value)))] = value;
  for (const auto* vi : inputs_)
    if (!vi->value->is_initializer() && !feeds.count(vi->value->name()))
      throw_usage_error("input '" + vi->value->name() + "' is not given");
  // This run's thread count, the caller's back afterwards (a one-thread session, such as
  // constant folding's, leaves later sessions theirs).
  const ThreadScope thread_scope(options_.threads);
  executor_->begin_run();
  executor_->requested.assign(output_names.empty() ? 0 : static_cast<size_t>(plan_->n_slots), false);
  for (const auto& name : output_names)
    if (const ir::Value* v = g.find(name))
      if (auto it = plan_->slots.find(v); it != plan_->slots.end()) executor_->requested[static_cast<size_t>(it->second)] = true;
  executor_->execute(*plan_, frame);
  std::vector<Value> out;
  if (output_names.empty()) {
    for (size_t i = 0; i < plan_->output_slots.size(); ++i) {
      const SlotRef r = plan_->output_slots[i];
      out.push_back(r.slot < 0 ? Value() : executor_->host(frame, r));
    }
    if (backend_) backend_->finish();
    return out;
  }
  for (const auto& name : output_names) {
    const ir::Value* v = g.find(name);
    auto it = v ? plan_->slots.find(v) : plan_->slots.end();
    if (it == plan_->slots.end()) throw_usage_error("the model has no value '" + name + "'");
    const Value& val = executor_->host(frame, SlotRef{0, it->second});
    if (val.kind == Value::Kind::kNone)
      throw_usage_error("value '" + name + "' was not computed (a value of a branch not taken, or an output no node fills)");
    out.push_back(val);
  }
  if (backend_) backend_->finish();
  return out;
}

// ---------------------------------------------------------------- conversions

Tensor from_ir(const ir::Tensor& t) {
  const DataType dt = t.type();
  if (dt == DataType::kString) {
    Tensor out(dt, t.dims);
    if (static_cast<int64_t>(t.string_data.size()) != out.size())
      throw_input_error("tensor '" + t.name + "' has " + std::to_string(t.string_data.size()) +
                        " strings for shape " + shape_string(t.dims));
    out.mutable_strings() = t.string_data;
    return out;
  }
  return Tensor::view(dt, t.dims, t.raw_bytes());
}

ir::Tensor to_ir(const Tensor& tensor, const std::string& name) {
  ir::Tensor t;
  t.name = name;
  t.dims = tensor.shape();
  t.data_type = static_cast<int32_t>(tensor.dtype());
  if (tensor.dtype() == DataType::kString) {
    t.string_data = tensor.strings();
  } else {
    t.raw_data = ir::Bytes::copy_of(tensor.raw(), tensor.bytes());
  }
  return t;
}

}  // namespace onnxtool::runner
