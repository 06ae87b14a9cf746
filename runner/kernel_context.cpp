// What a kernel sees of its node: inputs, outputs, attributes (KernelContext, NodeAttributes),
// and the registry kernels are found in.
#include <string>

#include "ir/error.h"
#include "ir/op_schema.h"
#include "runner/buffer_pool.h"
#include "runner/cpu/kernels.h"
#include "runner/executor.h"

namespace onnxtool::runner {

// ---------------------------------------------------------------- KernelContext

const Value& KernelContext::input_value(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is missing");
  return *inputs_[i];
}

const Tensor& KernelContext::input(size_t i) const {
  const Value& v = input_value(i);
  if (!v.is_tensor()) fail("input " + std::to_string(i) + " is " + v.describe() + ", not a tensor");
  return v.tensor;
}

bool KernelContext::has_output(size_t i) const { return i < outputs_.size() && node_.output(i) != nullptr; }

Tensor& KernelContext::output(size_t i, DataType type, std::vector<int64_t> shape) {
  if (i >= outputs_.size()) fail("output " + std::to_string(i) + " does not exist");
  // Shapes computed while running (ConstantOfShape, Expand, Resize... of runtime values): refuse
  // a tensor the machine cannot hold before allocating it.
  if (const uint64_t memory = physical_memory(); memory && ir::data_type_bits(type) > 0) {
    const auto bytes = ir::storage_bytes(type, static_cast<uint64_t>(shape_size(shape)));
    if (!bytes || *bytes > memory)
      fail("output " + std::to_string(i) + " " + std::string(ir::data_type_name(type)) + shape_string(shape) +
           " needs " + (bytes ? gigabytes(*bytes) : std::string("more bytes than 64 bits count")) +
           ", more than this machine's " + gigabytes(memory) + " of physical memory");
  }
  outputs_[i] = Value::of(Tensor(type, std::move(shape)));
  return outputs_[i].tensor;
}

Tensor& KernelContext::written_output(size_t i) {
  if (i >= outputs_.size() || outputs_[i].kind != Value::Kind::kTensor)
    fail("output " + std::to_string(i) + " has not been written as a tensor");
  return outputs_[i].tensor;
}

void KernelContext::set_output(size_t i, Value value) {
  if (i >= outputs_.size()) fail("output " + std::to_string(i) + " does not exist");
  outputs_[i] = std::move(value);
}

int64_t NodeAttributes::attr_int(std::string_view name, int64_t fallback) const {
  const ir::Attribute* a = node_.attr(name);
  return a ? a->i : fallback;
}
float NodeAttributes::attr_float(std::string_view name, float fallback) const {
  const ir::Attribute* a = node_.attr(name);
  return a ? a->f : fallback;
}
std::string NodeAttributes::attr_string(std::string_view name, std::string fallback) const {
  const ir::Attribute* a = node_.attr(name);
  return a ? a->s : fallback;
}
std::vector<int64_t> NodeAttributes::attr_ints(std::string_view name, std::vector<int64_t> fallback) const {
  const ir::Attribute* a = node_.attr(name);
  return a ? a->ints : fallback;
}
std::vector<float> NodeAttributes::attr_floats(std::string_view name, std::vector<float> fallback) const {
  const ir::Attribute* a = node_.attr(name);
  return a ? a->floats : fallback;
}
const ir::Tensor* NodeAttributes::attr_tensor(std::string_view name) const {
  const ir::Attribute* a = node_.attr(name);
  return a && a->t ? &*a->t : nullptr;
}
const ir::Graph* NodeAttributes::attr_graph(std::string_view name) const {
  const ir::Attribute* a = node_.attr(name);
  return a ? a->g.get() : nullptr;
}

std::vector<Value> KernelContext::run_subgraph(const ir::Graph& graph, const std::vector<Value>& inputs) {
  return exec_.run_subgraph(frame_, graph, inputs, &node_);
}

std::vector<Value> KernelContext::delegate(KernelFn fn, const ir::Node& node, int64_t opset,
                                          std::vector<const Value*> inputs, size_t outputs) {
  std::vector<Value> results(outputs);
  std::shared_ptr<void> state;
  KernelContext inner(exec_, frame_, node, opset, threads_, std::move(inputs), results, &state);
  fn(inner);
  return results;
}

void NodeAttributes::fail(const std::string& message) const {
  throw Error(ErrorKind::kFailed, node_.describe() + ": " + message);
}

// ---------------------------------------------------------------- KernelRegistry

const KernelRegistry& KernelRegistry::instance() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    register_cpu_kernels(r);
    return r;
  }();
  return registry;
}

void KernelRegistry::add(std::string_view domain, std::string_view op_type, int from, int to, KernelFn fn) {
  const std::string key = std::string(ir::canonical_domain(domain)) + "::" + std::string(op_type);
  ops_[key].push_back({from, to, fn, family_, file_});
}

void KernelRegistry::add(std::string_view op_type, KernelFn fn) {
  add("", op_type, ir::SchemaRegistry::instance().first_version("", op_type), kMaxOpset, fn);
}

KernelFn KernelRegistry::find(std::string_view domain, std::string_view op_type, int64_t opset) const {
  const std::string key = std::string(ir::canonical_domain(domain)) + "::" + std::string(op_type);
  auto it = ops_.find(key);
  if (it == ops_.end()) return nullptr;
  for (const auto& e : it->second)
    if (opset >= e.from && opset <= e.to) return e.fn;
  return nullptr;
}

}  // namespace onnxtool::runner
