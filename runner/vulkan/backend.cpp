#include "runner/vulkan/backend.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "ir/error.h"
#include "ir/op_schema.h"

namespace onnxtool::runner {

std::unique_ptr<Backend> open_vulkan_backend(const DeviceSpec& spec) {
  const int index = spec.index;
  std::string why;
  auto instance = vulkan::Instance::get(&why);
  if (!instance) throw Error(ErrorKind::kInternal, "cannot use Vulkan: " + why);
  const auto& devices = instance->devices();
  if (devices.empty())
    throw Error(ErrorKind::kInternal,
                "cannot use Vulkan: the loader lists no device with Vulkan 1.1 compute (Debian: mesa-vulkan-drivers "
                "provides lavapipe, a CPU device)");
  if (index < 0 || static_cast<size_t>(index) >= devices.size())
    throw_usage_error("no Vulkan device " + std::to_string(index) + " (this machine has " +
                      std::to_string(devices.size()) + ": vulkan:0" +
                      (devices.size() > 1 ? "..vulkan:" + std::to_string(devices.size() - 1) : std::string()) +
                      "; `onnxtool devices` lists them)");
  // One logical device per physical device and process, shared by its sessions: pipelines are
  // built once (a shader compile costs milliseconds on a driver, far more on lavapipe) and the
  // buffer pool carries over.
  static std::mutex mutex;
  static std::map<int, std::weak_ptr<vulkan::Device>> opened;
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<vulkan::Device> device = opened[index].lock();
  if (!device) {
    device = std::make_shared<vulkan::Device>(instance, devices[static_cast<size_t>(index)]);
    opened[index] = device;
  }
  const bool fp16_arithmetic = device->info().fp16_arithmetic && device->info().fp16_storage && !spec.fp32_arithmetic;
  return std::make_unique<vulkan::VulkanBackend>(std::move(device), fp16_arithmetic);
}

}  // namespace onnxtool::runner

namespace onnxtool::runner::vulkan {

std::vector<DeviceInfo> vulkan_devices(std::string* status) {
  std::string why;
  auto instance = Instance::get(&why);
  std::vector<DeviceInfo> out;
  if (!instance) {
    if (status) *status = why;
    return out;
  }
  for (const auto& d : instance->devices()) out.push_back(d.info);
  if (status) *status = out.empty() ? "the Vulkan loader lists no device with Vulkan 1.1 compute" : "";
  return out;
}

size_t VulkanTensor::bytes() const {
  const auto b = ir::storage_bytes(dtype(), static_cast<uint64_t>(size()));
  return b ? static_cast<size_t>(*b) : 0;
}

// ---------------------------------------------------------------- KernelTable

void KernelTable::add(std::string_view domain, std::string_view op, int from, int to, DeviceKernelFn fn) {
  entries_[std::string(ir::canonical_domain(domain)) + "::" + std::string(op)].push_back({from, to, fn, family_, file_});
}

void KernelTable::add(std::string_view op, DeviceKernelFn fn) {
  add("", op, ir::SchemaRegistry::instance().first_version("", op), kMaxOpset, fn);
}

DeviceKernelFn KernelTable::find(std::string_view domain, std::string_view op, int64_t opset) const {
  auto it = entries_.find(std::string(ir::canonical_domain(domain)) + "::" + std::string(op));
  if (it == entries_.end()) return nullptr;
  for (const auto& e : it->second)
    if (opset >= e.from && opset <= e.to) return e.fn;
  return nullptr;
}

std::vector<std::string> KernelTable::ops() const {
  std::vector<std::string> out;
  for (const auto& [key, entries] : entries_) out.push_back(key.rfind("::", 0) == 0 ? key.substr(2) : key);
  return out;
}

namespace {

// The one list of Vulkan kernel files, each with its op family (ir/ops/families.h), which the
// table records per op; tests/kernel_coverage_test.cpp checks that a file registers ops of its
// family.
constexpr KernelFile<KernelTable> kKernelFiles[] = {
    {"elementwise", "runner/vulkan/elementwise.cpp", register_elementwise},
    {"elementwise", "runner/vulkan/reduce.cpp", register_reduce},
    {"elementwise", "runner/vulkan/convert.cpp", register_convert},
    {"nn", "runner/vulkan/linalg.cpp", register_linalg},
    {"nn", "runner/vulkan/nn.cpp", register_nn},
    {"tensor", "runner/vulkan/data.cpp", register_data},
    {"nn", "runner/vulkan/recurrent.cpp", register_recurrent},
    {"vision", "runner/vulkan/vision.cpp", register_vision},
    {"control", "runner/vulkan/control.cpp", register_control},
};

}  // namespace

const KernelTable& kernel_table() {
  static const KernelTable table = [] {
    KernelTable t;
    register_kernel_files(t, kKernelFiles);
    return t;
  }();
  return table;
}

// ---------------------------------------------------------------- VulkanBackend

bool VulkanBackend::holds(DataType type) const {
  switch (type) {
    case DataType::kFloat:
    case DataType::kInt32:
    case DataType::kUInt32:
    case DataType::kInt64:
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kBool:
      return true;
    case DataType::kFloat16:
      return device_->info().fp16_storage;
    default:
      return false;
  }
}

std::shared_ptr<const VulkanTensor> VulkanBackend::allocate(DataType dtype, std::vector<int64_t> shape) {
  const int64_t count = shape_size(shape);
  const auto bytes = ir::storage_bytes(dtype, static_cast<uint64_t>(count));
  if (!bytes) throw DeviceDeclined("the tensor's size does not fit 64 bits");
  if (*bytes > device_->info().max_buffer_bytes)
    throw DeviceDeclined(std::string(ir::data_type_name(dtype)) + shape_string(shape) + " needs " +
                         std::to_string(*bytes >> 20) + " MB, more than the device's largest storage buffer (" +
                         std::to_string(device_->info().max_buffer_bytes >> 20) + " MB)");
  auto lease = std::make_shared<Lease>(device_, device_->acquire(*bytes));
  return std::make_shared<VulkanTensor>(dtype, std::move(shape), std::move(lease));
}

DeviceTensorPtr VulkanBackend::upload(const Tensor& tensor) {
  if (!holds(tensor.dtype()))
    throw DeviceDeclined(std::string(ir::data_type_name(tensor.dtype())) + " tensors stay on the CPU");
  auto t = allocate(tensor.dtype(), tensor.shape());
  device_->upload(tensor.raw(), tensor.bytes(), t->lease()->buffer());
  return t;
}

Tensor VulkanBackend::download(const DeviceTensor& tensor) {
  const auto& t = static_cast<const VulkanTensor&>(tensor);
  Tensor out(t.dtype(), t.shape());
  device_->download(t.lease()->buffer(), t.bytes(), out.mutable_raw());
  return out;
}

DeviceTensorPtr VulkanBackend::reshaped(const DeviceTensorPtr& tensor, std::vector<int64_t> shape) {
  const auto& t = static_cast<const VulkanTensor&>(*tensor);
  return std::make_shared<VulkanTensor>(t.dtype(), std::move(shape), t.lease());
}

// ---------------------------------------------------------------- kernel helpers

VulkanBackend& backend_of(DeviceKernelContext& ctx) { return static_cast<VulkanBackend&>(ctx.backend()); }

std::shared_ptr<const VulkanTensor> input(DeviceKernelContext& ctx, size_t i) {
  return std::static_pointer_cast<const VulkanTensor>(ctx.input(i));
}

std::shared_ptr<const VulkanTensor> output(DeviceKernelContext& ctx, size_t i, DataType dtype,
                                           std::vector<int64_t> shape) {
  auto t = backend_of(ctx).allocate(dtype, std::move(shape));
  ctx.set_output(i, t);
  return t;
}

DataType require_float(DeviceKernelContext& ctx, size_t i) {
  const DataType t = ctx.input_dtype(i);
  if (t == DataType::kFloat) return t;
  if (t == DataType::kFloat16) {
    if (!backend_of(ctx).info().fp16_storage) ctx.decline("the device has no 16-bit storage buffers for float16");
    return t;
  }
  ctx.decline(std::string(ir::data_type_name(t)) + " input " + std::to_string(i) + " (Vulkan kernels compute float32 and float16)");
}

DataType require_same_float(DeviceKernelContext& ctx, size_t count) {
  const DataType t = require_float(ctx, 0);
  for (size_t i = 1; i < count; ++i)
    if (ctx.has_input(i) && ctx.input_dtype(i) != t) ctx.decline("inputs of different element types");
  return t;
}

std::string shader_for(const std::string& name, DataType dtype) {
  return dtype == DataType::kFloat16 ? name + "_f16" : name;
}

std::string accumulating_shader_for(DeviceKernelContext& ctx, const std::string& name, DataType dtype) {
  if (dtype == DataType::kFloat16 && backend_of(ctx).fp16_arithmetic()) return name + "_f16a";
  return shader_for(name, dtype);
}

uint32_t checked_u32(DeviceKernelContext& ctx, int64_t value, const char* what) {
  if (value < 0 || value > int64_t{0x7fffffff}) ctx.decline(std::string(what) + " does not fit 31 bits");
  return static_cast<uint32_t>(value);
}

void require_loop_bound(DeviceKernelContext& ctx, uint64_t iterations, const std::string& what) {
  if (iterations <= kMaxLoopIterations) return;
  ctx.decline(what + " needs " + std::to_string(iterations) + " loop iterations in one shader invocation, over the " +
              std::to_string(kMaxLoopIterations) + " the Vulkan kernels keep to (llvmpipe stops loops at 65,535)");
}

void dispatch_1d(DeviceKernelContext& ctx, const std::string& shader, const std::vector<BufferRange>& buffers,
                 const void* push, uint32_t push_bytes, uint64_t n) {
  if (n == 0) return;
  Device& dev = backend_of(ctx).device();
  const uint32_t local = std::min<uint32_t>(256, dev.physical().max_workgroup_invocations);
  const uint64_t groups = (n + local - 1) / local;
  const uint64_t max_x = dev.physical().max_workgroup_count[0];
  const uint64_t gx = std::min(groups, max_x), gy = (groups + gx - 1) / gx;
  if (gy > dev.physical().max_workgroup_count[1]) ctx.decline("the tensor needs more workgroups than one dispatch has");
  const Pipeline& p = dev.pipeline(shader, static_cast<uint32_t>(buffers.size()), local);
  dev.dispatch(p, buffers, push, push_bytes, static_cast<uint32_t>(gx), static_cast<uint32_t>(gy));
}

}  // namespace onnxtool::runner::vulkan
