// One Vulkan device opened for compute: buffers from a pool, compute pipelines built once from
// the embedded SPIR-V, and one command buffer that records transfers and dispatches in order
// until a result is needed on the host.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runner/backend.h"
#include "runner/vulkan/loader.h"

namespace onnxtool::runner::vulkan {

/// A compute shader compiled at build time (runner/vulkan/shaders/NAME.comp; float16 variants
/// are NAME_f16).
struct ShaderCode {
  const char* name;
  const uint32_t* words;
  size_t bytes;
};
/// The embedded shader of that name; nullptr when there is none.
const ShaderCode* find_shader(const std::string& name);

/// A physical device as enumerated, with what onnxtool needs to know of it.
struct PhysicalDevice {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  DeviceInfo info;
  uint32_t queue_family = 0;
  uint32_t api_version = 0;
  uint32_t max_workgroup_invocations = 128;
  uint32_t max_workgroup_count[3] = {65535, 65535, 65535};
  uint32_t max_push_constants = 128;
  uint64_t min_storage_alignment = 256;
  float timestamp_period = 1;     ///< nanoseconds per timestamp tick
  uint32_t timestamp_bits = 0;    ///< valid bits of the queue's timestamps; 0: no timestamps
};

/// The process's Vulkan instance (created once; with ONNXTOOL_VULKAN_VALIDATION=1 the Khronos
/// validation layer is enabled and every message it prints counts as a failure).
class Instance {
 public:
  /// nullptr with the reason in `why` when there is no loader or no instance can be created.
  static std::shared_ptr<Instance> get(std::string* why);
  ~Instance();
  VkInstance handle() const { return instance_; }
  Api& api() const { return *api_; }
  const std::vector<PhysicalDevice>& devices() const { return devices_; }
  bool validation() const { return messenger_ != VK_NULL_HANDLE; }
  /// Messages from the validation layer so far, and the first of them.
  static int validation_messages();
  static std::string first_validation_message();

 private:
  Instance() = default;
  Api* api_ = nullptr;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  std::vector<PhysicalDevice> devices_;
};

/// A device buffer (or a host-visible staging buffer, then `mapped` is set).
struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize size = 0;
  VkDeviceSize allocated = 0;  ///< device-local bytes behind it (0 for host-visible staging)
  void* mapped = nullptr;
};

/// A compute pipeline: its shader, binding count and workgroup size.
struct Pipeline {
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  uint32_t bindings = 0;
  uint32_t local_size[3] = {1, 1, 1};
};

/// One binding of a dispatch: a buffer and the byte range the shader sees.
struct BufferRange {
  VkBuffer buffer;
  VkDeviceSize offset;
  VkDeviceSize bytes;
};

class Device {
 public:
  Device(std::shared_ptr<Instance> instance, const PhysicalDevice& physical);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const PhysicalDevice& physical() const { return physical_; }
  const DeviceInfo& info() const { return physical_.info; }

  /// A device-local buffer of at least `bytes` (from the pool when one fits). Throws
  /// Error(kFailed) when the device has no memory left for it.
  Buffer acquire(VkDeviceSize bytes);
  /// Returns a buffer to the pool. Work recorded earlier still reads it correctly: everything on
  /// the command buffer runs in order, separated by barriers.
  void release(const Buffer& buffer);

  /// The pipeline of an embedded shader with a workgroup size (built on first use).
  const Pipeline& pipeline(const std::string& shader, uint32_t bindings, uint32_t local_x, uint32_t local_y = 1,
                           uint32_t local_z = 1);
  /// Records one dispatch; `push` is at most 128 bytes.
  void dispatch(const Pipeline& pipeline, const std::vector<BufferRange>& buffers, const void* push,
                uint32_t push_bytes, uint32_t groups_x, uint32_t groups_y = 1, uint32_t groups_z = 1);
  /// Records a copy of host bytes into a device buffer.
  void upload(const void* data, VkDeviceSize bytes, const Buffer& dst);
  /// Records a fill of a buffer range with a 32-bit pattern.
  void fill(const Buffer& dst, VkDeviceSize offset, VkDeviceSize bytes, uint32_t pattern);
  /// Runs everything recorded, then copies a device buffer's bytes to the host.
  void download(const Buffer& src, VkDeviceSize bytes, void* data);
  /// Submits what is recorded and waits for it; checks the validation layer's count.
  void flush();
  /// Device time of the commands recorded between the two calls (`run --profile`): timestamps
  /// around them, read at the next flush, which calls `done` with the nanoseconds. begin_timed
  /// is false when the queue has no timestamps.
  bool begin_timed();
  void end_timed(std::function<void(int64_t)> done);
  /// Number of buffers ever allocated (tests of the pool).
  size_t allocations() const { return allocations_; }
  /// Held by a session for the whole of a run: the sessions of a process share the device and
  /// its one command buffer.
  std::mutex& run_mutex() { return run_mutex_; }

 private:
  Buffer create_buffer(VkDeviceSize bytes, bool host_visible);
  void destroy_buffer(const Buffer& b);
  VkCommandBuffer recording();
  Buffer staging(VkDeviceSize bytes);
  VkDescriptorSet descriptor_set(const Pipeline& pipeline);
  void read_timestamps();
  void barrier();
  [[noreturn]] void fail(const char* what, VkResult result) const;

  /// A driver failure the tests provoke on a working device (ONNXTOOL_VULKAN_FAULT=pipeline,
  /// device-lost or wrong-results): every pipeline creation fails, the first submitted work
  /// loses the device, or no dispatch is recorded, so that every kernel's output is wrong and
  /// nothing says so (what a driver's silent limit does; verification must catch it).
  enum class Fault { kNone, kPipeline, kDeviceLost, kWrongResults };

  std::shared_ptr<Instance> instance_;
  Api& vk_;
  PhysicalDevice physical_;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  bool recording_ = false;
  Fault fault_ = Fault::kNone;
  VkQueryPool queries_ = VK_NULL_HANDLE;   // timestamps, created on the first begin_timed
  uint32_t queries_used_ = 0;              // in the command buffer being recorded
  bool queries_reset_ = false;             // the reset is recorded in the current command buffer
  bool timing_open_ = false;               // begin_timed wrote a start that end_timed may close
  std::vector<std::pair<uint32_t, std::function<void(int64_t)>>> timed_;  // first query, callback
  uint32_t device_memory_type_ = 0;
  uint32_t host_memory_type_ = 0;
  std::vector<VkDescriptorPool> descriptor_pools_;
  size_t descriptor_pool_in_use_ = 0;
  std::map<std::string, Pipeline> pipelines_;
  std::multimap<VkDeviceSize, Buffer> free_;  // device buffers by size
  std::vector<Buffer> all_;                   // every device buffer, destroyed with the device
  std::multimap<VkDeviceSize, Buffer> free_staging_;
  std::vector<Buffer> staging_in_flight_;
  std::vector<Buffer> all_staging_;
  size_t allocations_ = 0;
  VkDeviceSize device_bytes_ = 0;  // device-local bytes allocated, against info.memory_bytes
  std::mutex run_mutex_;
};

}  // namespace onnxtool::runner::vulkan
