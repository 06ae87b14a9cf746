// Devices other than the CPU: what the executor needs of one (tensors in its memory, kernels
// per op, transfers) and the device list that `onnxtool devices` prints.
//
// The executor places each node of the main graph on the session's device when the device has
// a kernel for it; a device kernel may still decline a node at run time (an element type or a
// size it does not handle) before recording anything, and the node then runs on the CPU with
// the transfers around it. Every such node is reported (Session::placement()).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "runner/kernel.h"
#include "runner/tensor.h"

namespace onnxtool::runner {

/// Where a session runs its nodes: "cpu", "vulkan" (the first Vulkan device) or "vulkan:N", each
/// Vulkan form optionally followed by ":fp32-arithmetic"; or "onnxruntime[:LEVEL]", the whole
/// model handed to an onnxruntime library loaded at run time (runner/ort/).
struct DeviceSpec {
  enum class Kind { kCpu, kVulkan, kOnnxruntime };
  /// onnxruntime's graph optimization levels. kDisabled, the default, runs the graph as written,
  /// so that a difference from the reference runner is a kernel's and not a rewrite's.
  enum class OrtLevel { kDisabled, kBasic, kExtended, kAll };
  Kind kind = Kind::kCpu;
  int index = 0;
  OrtLevel ort_level = OrtLevel::kDisabled;
  /// Float16 tensors computed in float32 everywhere, also where the device has float16 arithmetic.
  bool fp32_arithmetic = false;
  /// Parses the --device syntax; throws Error(kUsage) naming the text otherwise.
  static DeviceSpec parse(std::string_view text);
  std::string to_string() const;
};

/// One device as `onnxtool devices` lists it.
struct DeviceInfo {
  std::string id;      ///< "cpu", "vulkan:0"...
  std::string name;    ///< e.g. "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string type;    ///< cpu, discrete-gpu, integrated-gpu, virtual-gpu, cpu-emulated (lavapipe)
  std::string driver;  ///< driver name and version
  std::string api;     ///< "Vulkan 1.3.230"; empty for the CPU
  uint64_t memory_bytes = 0;  ///< the largest device-local heap (the CPU: physical memory)
  bool fp16_arithmetic = false;  ///< shaderFloat16
  bool fp16_storage = false;     ///< 16-bit storage buffers: float16 tensors stay 16-bit in memory
  bool int8_storage = false;     ///< 8-bit storage buffers
  uint32_t subgroup_size = 0;
  uint64_t max_buffer_bytes = 0;  ///< the largest tensor one kernel can bind
  /// How float16 tensors are computed on this device, one phrase.
  std::string fp16_mode;
};

/// The CPU first, then every Vulkan device. A missing loader or driver is not an error here:
/// `vulkan_status` says why no Vulkan device is listed.
std::vector<DeviceInfo> list_devices(std::string* vulkan_status = nullptr);

/// A tensor in a device's memory. Copies of the handle share it; the memory returns to the
/// device's pool when the last handle goes (after the work recorded on it has run).
class DeviceTensor {
 public:
  virtual ~DeviceTensor() = default;
  DataType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  size_t rank() const { return shape_.size(); }
  int64_t dim(size_t i) const { return shape_[i]; }
  int64_t size() const { return size_; }
  std::string describe() const;

 protected:
  DeviceTensor(DataType dtype, std::vector<int64_t> shape);
  DataType dtype_;
  std::vector<int64_t> shape_;
  int64_t size_;
};
using DeviceTensorPtr = std::shared_ptr<const DeviceTensor>;

/// Thrown by a device kernel, before it records any work, for a node it does not handle (an
/// element type, a rank, a size): the node runs on the CPU and `what()` is the reason reported.
class DeviceDeclined : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Backend;

/// What a device kernel sees of one node. Inputs come as device tensors (transferred on first
/// use) or, for the small inputs that only shape the work (Reshape's shape, Slice's starts),
/// as host tensors.
class DeviceKernelContext : public NodeAttributes {
 public:
  /// Resolves input i: on the device (uploading a host value) or on the host (downloading).
  class Inputs {
   public:
    virtual ~Inputs() = default;
    virtual size_t count() const = 0;
    virtual bool present(size_t i) const = 0;
    virtual DeviceTensorPtr device(size_t i) = 0;
    virtual const Tensor& host(size_t i) = 0;
    /// The element type and shape of input i wherever it lives, without a transfer.
    virtual DataType dtype(size_t i) const = 0;
    virtual const std::vector<int64_t>& shape(size_t i) const = 0;
  };

  DeviceKernelContext(Backend& backend, const ir::Node& node, int64_t opset, Inputs& inputs,
                      std::vector<DeviceTensorPtr>& outputs, std::vector<Value>& host_outputs)
      : NodeAttributes(node), backend_(backend), opset_(opset), inputs_(inputs), outputs_(outputs),
        host_outputs_(host_outputs) {}

  Backend& backend() const { return backend_; }
  int64_t opset() const { return opset_; }

  size_t input_count() const { return inputs_.count(); }
  bool has_input(size_t i) const { return i < inputs_.count() && inputs_.present(i); }
  DataType input_dtype(size_t i) const;
  const std::vector<int64_t>& input_shape(size_t i) const;
  /// Input i on the device; declines when it is missing or not a tensor.
  DeviceTensorPtr input(size_t i);
  /// Input i on the host (small shape-like inputs).
  const Tensor& host_input(size_t i);

  size_t output_count() const { return outputs_.size(); }
  bool has_output(size_t i) const { return i < outputs_.size() && node_.output(i) != nullptr; }
  void set_output(size_t i, DeviceTensorPtr tensor);
  /// Sets output i to a host value (Shape and Size read only metadata of a device tensor).
  void set_host_output(size_t i, Tensor tensor);

  /// Declines the node (it runs on the CPU); `reason` is reported.
  [[noreturn]] void decline(const std::string& reason) const { throw DeviceDeclined(reason); }

 private:
  Backend& backend_;
  int64_t opset_;
  Inputs& inputs_;
  std::vector<DeviceTensorPtr>& outputs_;
  std::vector<Value>& host_outputs_;
};

using DeviceKernelFn = void (*)(DeviceKernelContext&);

/// A device the executor can place nodes on.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual const DeviceInfo& info() const = 0;
  /// "Vulkan": how reports name the device's kernels.
  virtual const char* api_name() const = 0;
  /// The device's kernel for an op at an opset, or nullptr.
  virtual DeviceKernelFn find(std::string_view domain, std::string_view op_type, int64_t opset) const = 0;
  /// Whether the device holds tensors of this element type (others stay on the host).
  virtual bool holds(DataType type) const = 0;
  /// Copies a host tensor to the device (recorded in order with the kernels' work).
  virtual DeviceTensorPtr upload(const Tensor& tensor) = 0;
  /// Copies a device tensor to the host, waiting for the work recorded so far.
  virtual Tensor download(const DeviceTensor& tensor) = 0;
  /// The same memory under another shape of the same element count (Reshape and its kin).
  virtual DeviceTensorPtr reshaped(const DeviceTensorPtr& tensor, std::vector<int64_t> shape) = 0;
  /// Runs everything recorded and waits; called at the end of every run.
  virtual void finish() = 0;
  /// Held for the whole of a run (the device may be shared by several sessions).
  virtual std::unique_lock<std::mutex> lock_for_run() = 0;
  /// Device time of one node (`run --profile`): begin_timed() before its work is recorded (false
  /// when the device cannot time it), end_timed(done) after; `done` gets the nanoseconds the
  /// device spent once that work has run (by the end of the run at the latest).
  virtual bool begin_timed() { return false; }
  virtual void end_timed(std::function<void(int64_t)> done) { (void)done; }
};

/// Opens a Vulkan device for a session: throws Error(kUsage) for an index that does not exist
/// and Error(kInternal) when no loader or device is available, each naming what was looked for.
std::unique_ptr<Backend> open_vulkan_backend(const DeviceSpec& spec);

}  // namespace onnxtool::runner
