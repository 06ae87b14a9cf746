// The Vulkan backend as its kernels see it: tensors in device buffers, the kernel table, and the
// helpers every kernel uses (element types, output allocation, 1-D dispatches).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runner/backend.h"
#include "runner/vulkan/context.h"

namespace onnxtool::runner::vulkan {

/// A device buffer lent to tensors; back to the pool when the last tensor using it goes.
class Lease {
 public:
  Lease(std::shared_ptr<Device> device, Buffer buffer) : device_(std::move(device)), buffer_(buffer) {}
  ~Lease() { device_->release(buffer_); }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  const Buffer& buffer() const { return buffer_; }

 private:
  std::shared_ptr<Device> device_;
  Buffer buffer_;
};

class VulkanTensor : public DeviceTensor {
 public:
  VulkanTensor(DataType dtype, std::vector<int64_t> shape, std::shared_ptr<Lease> lease)
      : DeviceTensor(dtype, std::move(shape)), lease_(std::move(lease)) {}
  const std::shared_ptr<Lease>& lease() const { return lease_; }
  size_t bytes() const;
  /// The binding of this tensor in a dispatch.
  BufferRange range() const { return {lease_->buffer().buffer, 0, bytes()}; }

 private:
  std::shared_ptr<Lease> lease_;
};

/// Vulkan kernels by "domain::op", each with the opset range it implements.
class KernelTable {
 public:
  void add(std::string_view domain, std::string_view op, int from, int to, DeviceKernelFn fn);
  /// `fn` for every version of the ai.onnx op `op` (from its first schema).
  void add(std::string_view op, DeviceKernelFn fn);
  DeviceKernelFn find(std::string_view domain, std::string_view op, int64_t opset) const;
  /// Every op with a kernel ("Conv", "com.microsoft::..."), for coverage tests.
  std::vector<std::string> ops() const;
  /// The family and file that the following add() calls register from (strings that outlive
  /// the table), recorded for the op index and its coverage test.
  void begin_file(std::string_view family, std::string_view file) {
    family_ = family;
    file_ = file;
  }

  struct Entry {
    int from, to;
    DeviceKernelFn fn;
    std::string_view family;  ///< the op family of the registering file (ir/ops/families.h)
    std::string_view file;    ///< the registering file, "runner/vulkan/nn.cpp"
  };
  /// Every registration by "domain::op".
  const std::map<std::string, std::vector<Entry>, std::less<>>& entries() const { return entries_; }

 private:
  std::string_view family_, file_;
  std::map<std::string, std::vector<Entry>, std::less<>> entries_;
};
/// The process's table (every family registered once).
const KernelTable& kernel_table();

class VulkanBackend : public Backend {
 public:
  VulkanBackend(std::shared_ptr<Device> device, bool fp16_arithmetic)
      : device_(std::move(device)), fp16_arithmetic_(fp16_arithmetic) {}
  const DeviceInfo& info() const override { return device_->info(); }
  const char* api_name() const override { return "Vulkan"; }
  DeviceKernelFn find(std::string_view domain, std::string_view op_type, int64_t opset) const override {
    return kernel_table().find(domain, op_type, opset);
  }
  bool holds(DataType type) const override;
  DeviceTensorPtr upload(const Tensor& tensor) override;
  Tensor download(const DeviceTensor& tensor) override;
  DeviceTensorPtr reshaped(const DeviceTensorPtr& tensor, std::vector<int64_t> shape) override;
  void finish() override { device_->flush(); }
  bool begin_timed() override { return device_->begin_timed(); }
  void end_timed(std::function<void(int64_t)> done) override { device_->end_timed(std::move(done)); }
  std::unique_lock<std::mutex> lock_for_run() override { return std::unique_lock<std::mutex>(device_->run_mutex()); }

  Device& device() { return *device_; }
  /// Float16 tensors use the float16-arithmetic variants of the multiply-accumulate shaders.
  bool fp16_arithmetic() const { return fp16_arithmetic_; }
  /// A new tensor in device memory (contents undefined); declines when it is larger than one
  /// storage buffer can bind.
  std::shared_ptr<const VulkanTensor> allocate(DataType dtype, std::vector<int64_t> shape);

 private:
  std::shared_ptr<Device> device_;
  bool fp16_arithmetic_;
};

// ---------------------------------------------------------------- kernel helpers

/// The backend and device of a kernel's context.
VulkanBackend& backend_of(DeviceKernelContext& ctx);
/// Input i as a Vulkan tensor (uploaded when it is on the host).
std::shared_ptr<const VulkanTensor> input(DeviceKernelContext& ctx, size_t i);
/// Allocates output i and sets it.
std::shared_ptr<const VulkanTensor> output(DeviceKernelContext& ctx, size_t i, DataType dtype,
                                           std::vector<int64_t> shape);
/// Declines unless input i is float32, or float16 on a device with 16-bit storage.
DataType require_float(DeviceKernelContext& ctx, size_t i);
/// require_float for input 0; declines unless inputs 1 .. count-1 (those present) have its type.
DataType require_same_float(DeviceKernelContext& ctx, size_t count);
/// The shader for an element type: NAME for float32, NAME_f16 for float16.
std::string shader_for(const std::string& name, DataType dtype);
/// shader_for a multiply-accumulate shader (matmul, conv, conv_transpose): NAME_f16a, float16
/// sums, for float16 on a backend with float16 arithmetic.
std::string accumulating_shader_for(DeviceKernelContext& ctx, const std::string& name, DataType dtype);
/// Records a dispatch of `n` invocations of a 1-D shader (any n: the grid folds into y when x
/// would exceed the device's limit; shaders compute their index with linear_index()).
void dispatch_1d(DeviceKernelContext& ctx, const std::string& shader, const std::vector<BufferRange>& buffers,
                 const void* push, uint32_t push_bytes, uint64_t n);
/// Declines when a count does not fit the shaders' 32-bit indices.
uint32_t checked_u32(DeviceKernelContext& ctx, int64_t value, const char* what);

// ---------------------------------------------------------------- the loop bound

/// The most loop iterations one shader invocation may run, all its loops together (a nested
/// loop's iterations count once per trip of the loop around it). A driver may cap them: Mesa's
/// llvmpipe, the CPU driver behind lavapipe, ends every loop of an invocation once it has run
/// 65,535 iterations in all, and the shader goes on with a partial sum, a window half seen, a
/// reduction tree cut short: wrong numbers, and nothing reports it. Each kernel counts its
/// shader's loops with loop_cost() for the sizes at hand and splits its work into dispatches
/// that stay within this bound (pieces of K, of a window, of a row, summed by a further pass);
/// a kernel that cannot split declines the node, which then runs on the CPU. Half of llvmpipe's
/// cap leaves room for the counts being estimates (a driver may count an iteration more per
/// loop than loop_cost does).
constexpr uint64_t kMaxLoopIterations = 32768;

/// The iterations of a loop of `trips` trips whose body runs `body` iterations of inner loops:
/// one per trip, the body's, and one more for the exit, which a SIMD driver such as llvmpipe
/// counts as a trip of the lanes that are left.
constexpr uint64_t loop_cost(uint64_t trips, uint64_t body = 0) { return trips * (body + 1) + 1; }

/// Declines unless an invocation's `iterations` are within kMaxLoopIterations; `what` names
/// the loop ("the window of 400 x 400 positions").
void require_loop_bound(DeviceKernelContext& ctx, uint64_t iterations, const std::string& what);

// Registration of each kernel family (one per file).
void register_elementwise(KernelTable& table);
void register_reduce(KernelTable& table);     // Reduce*, Softmax, LogSoftmax, Hardmax
void register_convert(KernelTable& table);    // Cast, Where, Quantize/DequantizeLinear, Dropout
void register_linalg(KernelTable& table);     // MatMul, Gemm, Conv, ConvTranspose
void register_nn(KernelTable& table);         // pooling, normalizations
void register_data(KernelTable& table);       // reshapes, Transpose, Concat, Slice, Gather, Pad...
void register_recurrent(KernelTable& table);  // RNN, GRU, LSTM
void register_vision(KernelTable& table);     // Resize
void register_control(KernelTable& table);    // Identity

}  // namespace onnxtool::runner::vulkan

namespace onnxtool::runner::vulkan {
/// Every usable Vulkan device; none (with the reason in `status`) without a loader or driver.
std::vector<DeviceInfo> vulkan_devices(std::string* status);
}  // namespace onnxtool::runner::vulkan
