#include "runner/vulkan/context.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "ir/env.h"
#include "ir/error.h"

namespace onnxtool::runner::vulkan {

namespace {

std::atomic<int> g_validation_messages{0};
std::mutex g_validation_mutex;
std::string g_first_validation_message;

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                     VkDebugUtilsMessageTypeFlagsEXT,
                                                     const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
  const std::string text = data && data->pMessage ? data->pMessage : "(no message)";
  {
    std::lock_guard<std::mutex> lock(g_validation_mutex);
    if (g_first_validation_message.empty()) g_first_validation_message = text;
  }
  ++g_validation_messages;
  std::fprintf(stderr, "vulkan validation: %s\n", text.c_str());
  return VK_FALSE;
}

bool validation_requested() {
  const char* v = std::getenv("ONNXTOOL_VULKAN_VALIDATION");
  return v && *v && std::strcmp(v, "0") != 0;
}

std::string version_string(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu (software Vulkan)";
    default: return "other";
  }
}

/// Reads what onnxtool needs of one physical device; false when it has no compute queue.
bool describe(Api& vk, VkPhysicalDevice handle, int index, PhysicalDevice& out) {
  out.handle = handle;
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &subgroup;
  subgroup.pNext = &driver;
  vk.vkGetPhysicalDeviceProperties2(handle, &props);
  const VkPhysicalDeviceProperties& p = props.properties;
  out.api_version = p.apiVersion;

  VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDevice8BitStorageFeatures storage8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features f16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &storage16;
  if (p.apiVersion >= VK_API_VERSION_1_2) {
    storage16.pNext = &storage8;
    storage8.pNext = &f16;
  }
  vk.vkGetPhysicalDeviceFeatures2(handle, &features);

  uint32_t families = 0;
  vk.vkGetPhysicalDeviceQueueFamilyProperties(handle, &families, nullptr);
  std::vector<VkQueueFamilyProperties> fam(families);
  vk.vkGetPhysicalDeviceQueueFamilyProperties(handle, &families, fam.data());
  bool found = false;
  for (uint32_t i = 0; i < families && !found; ++i)
    if (fam[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      out.queue_family = i;
      out.timestamp_bits = fam[i].timestampValidBits;
      found = true;
    }
  if (!found) return false;

  VkPhysicalDeviceMemoryProperties mem;
  vk.vkGetPhysicalDeviceMemoryProperties(handle, &mem);
  uint64_t device_local = 0;
  for (uint32_t h = 0; h < mem.memoryHeapCount; ++h)
    if (mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      device_local = std::max<uint64_t>(device_local, mem.memoryHeaps[h].size);

  DeviceInfo& info = out.info;
  info.id = "vulkan:" + std::to_string(index);
  info.name = p.deviceName;
  info.type = type_name(p.deviceType);
  info.driver = std::string(driver.driverName) + (driver.driverInfo[0] ? std::string(" ") + driver.driverInfo : "");
  info.api = "Vulkan " + version_string(p.apiVersion);
  info.memory_bytes = device_local;
  // A smaller device, for trying how a model fits one (and for the tests of that refusal).
  if (const char* v = std::getenv("ONNXTOOL_VULKAN_MEMORY_LIMIT"); v && *v) {
    const uint64_t limit = ir::env_bytes("ONNXTOOL_VULKAN_MEMORY_LIMIT", v);
    if (limit == 0) throw_usage_error("ONNXTOOL_VULKAN_MEMORY_LIMIT: 0 bytes leaves the device nothing");
    if (limit < info.memory_bytes) info.memory_bytes = limit;
  }
  info.fp16_storage = storage16.storageBuffer16BitAccess;
  info.fp16_arithmetic = p.apiVersion >= VK_API_VERSION_1_2 && f16.shaderFloat16;
  info.int8_storage = p.apiVersion >= VK_API_VERSION_1_2 && storage8.storageBuffer8BitAccess;
  info.subgroup_size = subgroup.subgroupSize;
  info.max_buffer_bytes = p.limits.maxStorageBufferRange;
  if (!info.fp16_storage)
    info.fp16_mode = "float16 tensors run on the CPU (no 16-bit storage buffers)";
  else if (!info.fp16_arithmetic)
    info.fp16_mode = "float16 storage, float32 arithmetic (rounded to float16 at each op's output)";
  else
    info.fp16_mode = "float16 storage; float16 arithmetic in MatMul, Gemm, Conv and ConvTranspose (float16 sums), "
                     "float32 in the other ops (rounded to float16 at each op's output); " + info.id +
                     ":fp32-arithmetic computes every op in float32";
  out.max_workgroup_invocations = p.limits.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) out.max_workgroup_count[i] = p.limits.maxComputeWorkGroupCount[i];
  out.max_push_constants = p.limits.maxPushConstantsSize;
  out.min_storage_alignment = std::max<uint64_t>(4, p.limits.minStorageBufferOffsetAlignment);
  out.timestamp_period = p.limits.timestampPeriod;
  return true;
}

}  // namespace

// ---------------------------------------------------------------- Instance

std::shared_ptr<Instance> Instance::get(std::string* why) {
  static std::mutex mutex;
  static std::weak_ptr<Instance> current;
  static std::string last_error;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto live = current.lock()) return live;
  std::string error;
  Api* api = loader(&error);
  if (!api) {
    if (why) *why = "no Vulkan loader (" + error + ")";
    return nullptr;
  }
  const bool validate = validation_requested();
  std::vector<const char*> layers, extensions;
  if (validate) {
    uint32_t n = 0;
    api->vkEnumerateInstanceLayerProperties(&n, nullptr);
    std::vector<VkLayerProperties> have(n);
    api->vkEnumerateInstanceLayerProperties(&n, have.data());
    const bool present = std::any_of(have.begin(), have.end(), [](const VkLayerProperties& l) {
      return std::strcmp(l.layerName, "VK_LAYER_KHRONOS_validation") == 0;
    });
    if (!present) {
      if (why)
        *why = "ONNXTOOL_VULKAN_VALIDATION is set but the layer VK_LAYER_KHRONOS_validation is not installed "
               "(Debian: vulkan-validationlayers)";
      return nullptr;
    }
    layers.push_back("VK_LAYER_KHRONOS_validation");
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "onnxtool";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = static_cast<uint32_t>(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  std::shared_ptr<Instance> inst(new Instance());
  inst->api_ = api;
  const VkResult r = api->vkCreateInstance(&ci, nullptr, &inst->instance_);
  if (r != VK_SUCCESS) {
    inst->instance_ = VK_NULL_HANDLE;
    if (why) *why = std::string("vkCreateInstance failed (") + result_name(r) + "): no Vulkan driver is usable";
    return nullptr;
  }
  pin_loaded_libraries();
  api->load_instance(inst->instance_);
  if (validate && api->vkCreateDebugUtilsMessengerEXT) {
    VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    mi.pfnUserCallback = on_validation_message;
    api->vkCreateDebugUtilsMessengerEXT(inst->instance_, &mi, nullptr, &inst->messenger_);
  }
  uint32_t count = 0;
  api->vkEnumeratePhysicalDevices(inst->instance_, &count, nullptr);
  std::vector<VkPhysicalDevice> handles(count);
  api->vkEnumeratePhysicalDevices(inst->instance_, &count, handles.data());
  for (VkPhysicalDevice h : handles) {
    PhysicalDevice d;
    VkPhysicalDeviceProperties p;
    api->vkGetPhysicalDeviceProperties(h, &p);
    if (p.apiVersion < VK_API_VERSION_1_1) continue;  // 16-bit storage and subgroups need 1.1
    if (describe(*api, h, static_cast<int>(inst->devices_.size()), d)) inst->devices_.push_back(std::move(d));
  }
  current = inst;
  return inst;
}

Instance::~Instance() {
  if (!instance_) return;
  if (messenger_ && api_->vkDestroyDebugUtilsMessengerEXT)
    api_->vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  api_->vkDestroyInstance(instance_, nullptr);
}

int Instance::validation_messages() { return g_validation_messages.load(); }

std::string Instance::first_validation_message() {
  std::lock_guard<std::mutex> lock(g_validation_mutex);
  return g_first_validation_message;
}

// ---------------------------------------------------------------- Device

namespace {

/// The first memory type allowed by `bits` with all of `want`, preferring one with all of `prefer`.
int memory_type(const VkPhysicalDeviceMemoryProperties& mem, uint32_t bits, VkMemoryPropertyFlags want,
                VkMemoryPropertyFlags prefer) {
  int fallback = -1;
  for (uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
    if (!(bits & (1u << i))) continue;
    const VkMemoryPropertyFlags f = mem.memoryTypes[i].propertyFlags;
    if ((f & want) != want) continue;
    if ((f & prefer) == prefer) return static_cast<int>(i);
    if (fallback < 0) fallback = static_cast<int>(i);
  }
  return fallback;
}

constexpr uint32_t kMaxBindings = 8;
constexpr uint32_t kPushBytes = 128;
constexpr uint32_t kSetsPerPool = 1024;

}  // namespace

void Device::fail(const char* what, VkResult result) const {
  const std::string where = physical_.info.id + " (" + physical_.info.name + ")";
  if (result == VK_ERROR_DEVICE_LOST)
    throw Error(ErrorKind::kInternal, where + ": the device was lost (" + what + ": VK_ERROR_DEVICE_LOST)");
  if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY)
    throw Error(ErrorKind::kFailed, where + ": out of memory (" + what + ": " + result_name(result) + ")");
  throw Error(ErrorKind::kInternal, where + ": " + what + " failed (" + result_name(result) + ")");
}

Device::Device(std::shared_ptr<Instance> instance, const PhysicalDevice& physical)
    : instance_(std::move(instance)), vk_(instance_->api()), physical_(physical) {
  if (const char* v = std::getenv("ONNXTOOL_VULKAN_FAULT"); v && *v) {
    const std::string fault = v;
    if (fault == "pipeline") fault_ = Fault::kPipeline;
    else if (fault == "device-lost") fault_ = Fault::kDeviceLost;
    else if (fault == "wrong-results") fault_ = Fault::kWrongResults;
    else throw Error(ErrorKind::kUsage,
                     "ONNXTOOL_VULKAN_FAULT is '" + fault + "'; it takes pipeline, device-lost or wrong-results");
  }
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = physical_.queue_family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  storage16.storageBuffer16BitAccess = physical_.info.fp16_storage;
  VkPhysicalDevice8BitStorageFeatures storage8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  storage8.storageBuffer8BitAccess = physical_.info.int8_storage;
  VkPhysicalDeviceShaderFloat16Int8Features f16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  f16.shaderFloat16 = physical_.info.fp16_arithmetic;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &storage16;
  if (physical_.api_version >= VK_API_VERSION_1_2) {
    storage16.pNext = &storage8;
    storage8.pNext = &f16;
  }
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.pNext = &features;
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  if (VkResult r = vk_.vkCreateDevice(physical_.handle, &di, nullptr, &device_); r != VK_SUCCESS) {
    device_ = VK_NULL_HANDLE;
    fail("vkCreateDevice", r);
  }
  vk_.load_device(device_);
  vk_.vkGetDeviceQueue(device_, physical_.queue_family, 0, &queue_);

  VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pi.queueFamilyIndex = physical_.queue_family;
  if (VkResult r = vk_.vkCreateCommandPool(device_, &pi, nullptr, &command_pool_); r != VK_SUCCESS)
    fail("vkCreateCommandPool", r);
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = command_pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  if (VkResult r = vk_.vkAllocateCommandBuffers(device_, &ai, &commands_); r != VK_SUCCESS)
    fail("vkAllocateCommandBuffers", r);
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  if (VkResult r = vk_.vkCreateFence(device_, &fi, nullptr, &fence_); r != VK_SUCCESS) fail("vkCreateFence", r);

  // Memory types: device-local for tensors; host-visible and coherent (cached when offered) for
  // staging. The type bits come from a probe buffer.
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = 256;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  VkBuffer probe;
  if (VkResult r = vk_.vkCreateBuffer(device_, &bi, nullptr, &probe); r != VK_SUCCESS) fail("vkCreateBuffer", r);
  VkMemoryRequirements req;
  vk_.vkGetBufferMemoryRequirements(device_, probe, &req);
  vk_.vkDestroyBuffer(device_, probe, nullptr);
  VkPhysicalDeviceMemoryProperties mem;
  instance_->api().vkGetPhysicalDeviceMemoryProperties(physical_.handle, &mem);
  const int dev = memory_type(mem, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
  const int host = memory_type(mem, req.memoryTypeBits,
                               VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                               VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  if (host < 0) fail("finding host-visible coherent memory", VK_ERROR_FEATURE_NOT_PRESENT);
  device_memory_type_ = static_cast<uint32_t>(dev >= 0 ? dev : host);
  host_memory_type_ = static_cast<uint32_t>(host);
}

Device::~Device() {
  if (!device_) return;
  vk_.vkDeviceWaitIdle(device_);
  for (auto& [key, p] : pipelines_) {
    vk_.vkDestroyPipeline(device_, p.pipeline, nullptr);
    vk_.vkDestroyPipelineLayout(device_, p.layout, nullptr);
    vk_.vkDestroyDescriptorSetLayout(device_, p.set_layout, nullptr);
  }
  for (VkDescriptorPool pool : descriptor_pools_) vk_.vkDestroyDescriptorPool(device_, pool, nullptr);
  for (const Buffer& b : all_) destroy_buffer(b);
  for (const Buffer& b : all_staging_) destroy_buffer(b);
  if (fence_) vk_.vkDestroyFence(device_, fence_, nullptr);
  if (queries_) vk_.vkDestroyQueryPool(device_, queries_, nullptr);
  if (command_pool_) vk_.vkDestroyCommandPool(device_, command_pool_, nullptr);
  vk_.vkDestroyDevice(device_, nullptr);
}

Buffer Device::create_buffer(VkDeviceSize bytes, bool host_visible) {
  Buffer b;
  b.size = bytes;
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = bytes;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  if (VkResult r = vk_.vkCreateBuffer(device_, &bi, nullptr, &b.buffer); r != VK_SUCCESS) fail("vkCreateBuffer", r);
  VkMemoryRequirements req;
  vk_.vkGetBufferMemoryRequirements(device_, b.buffer, &req);
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = host_visible ? host_memory_type_ : device_memory_type_;
  // info.memory_bytes may be below the heap (ONNXTOOL_VULKAN_MEMORY_LIMIT): beyond it, an
  // allocation fails as the driver's would on a device of that size.
  const VkDeviceSize limit = physical_.info.memory_bytes;
  const auto allocate = [&] {
    if (!host_visible && limit && device_bytes_ + req.size > limit) return VK_ERROR_OUT_OF_DEVICE_MEMORY;
    return vk_.vkAllocateMemory(device_, &ai, nullptr, &b.memory);
  };
  VkResult r = allocate();
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY && !host_visible && !free_.empty()) {
    // Give the pool's idle buffers back and try once more.
    flush();
    for (auto& entry : free_) {
      const VkBuffer idle = entry.second.buffer;
      all_.erase(std::find_if(all_.begin(), all_.end(), [idle](const Buffer& x) { return x.buffer == idle; }));
      destroy_buffer(entry.second);
    }
    free_.clear();
    r = allocate();
  }
  if (r != VK_SUCCESS) {
    vk_.vkDestroyBuffer(device_, b.buffer, nullptr);
    fail(("allocating " + std::to_string(bytes) + " bytes").c_str(), r);
  }
  vk_.vkBindBufferMemory(device_, b.buffer, b.memory, 0);
  if (host_visible) {
    if (VkResult m = vk_.vkMapMemory(device_, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped); m != VK_SUCCESS) {
      destroy_buffer(b);
      fail("vkMapMemory", m);
    }
  }
  if (!host_visible) {
    b.allocated = req.size;
    device_bytes_ += req.size;
  }
  ++allocations_;
  return b;
}

void Device::destroy_buffer(const Buffer& b) {
  device_bytes_ -= b.allocated;
  if (b.mapped) vk_.vkUnmapMemory(device_, b.memory);
  vk_.vkDestroyBuffer(device_, b.buffer, nullptr);
  vk_.vkFreeMemory(device_, b.memory, nullptr);
}

Buffer Device::acquire(VkDeviceSize bytes) {
  bytes = std::max<VkDeviceSize>(16, (bytes + 15) / 16 * 16);
  // The smallest idle buffer that fits and wastes at most half of itself.
  auto it = free_.lower_bound(bytes);
  if (it != free_.end() && it->first <= 2 * bytes) {
    Buffer b = it->second;
    free_.erase(it);
    return b;
  }
  Buffer b = create_buffer(bytes, false);
  all_.push_back(b);
  return b;
}

void Device::release(const Buffer& buffer) { free_.emplace(buffer.size, buffer); }

Buffer Device::staging(VkDeviceSize bytes) {
  bytes = std::max<VkDeviceSize>(256, bytes);
  // Uploads of a large model's weights: run what is recorded before the staging memory grows
  // past 256 MB, so it is reused rather than doubling the weights in host memory.
  VkDeviceSize in_flight = 0;
  for (const Buffer& b : staging_in_flight_) in_flight += b.size;
  if (in_flight + bytes > (VkDeviceSize{256} << 20) && !staging_in_flight_.empty()) flush();
  auto it = free_staging_.lower_bound(bytes);
  Buffer b;
  if (it != free_staging_.end() && it->first <= 4 * bytes) {
    b = it->second;
    free_staging_.erase(it);
  } else {
    b = create_buffer(bytes, true);
    all_staging_.push_back(b);
  }
  staging_in_flight_.push_back(b);
  return b;
}

VkCommandBuffer Device::recording() {
  if (!recording_) {
    // Timings left by a command buffer that failed to run are dropped with it.
    timed_.clear();
    queries_used_ = 0;
    queries_reset_ = false;
    timing_open_ = false;
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    if (VkResult r = vk_.vkBeginCommandBuffer(commands_, &bi); r != VK_SUCCESS) fail("vkBeginCommandBuffer", r);
    recording_ = true;
  }
  return commands_;
}

void Device::barrier() {
  // Every command reads what the ones before it wrote: one global barrier after each keeps the
  // order without tracking buffers (the pool reuses memory between dispatches).
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT |
                     VK_ACCESS_TRANSFER_READ_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  vk_.vkCmdPipelineBarrier(recording(), stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

const Pipeline& Device::pipeline(const std::string& shader, uint32_t bindings, uint32_t local_x, uint32_t local_y,
                                 uint32_t local_z) {
  const std::string key = shader + "/" + std::to_string(bindings) + "/" + std::to_string(local_x) + "x" +
                          std::to_string(local_y) + "x" + std::to_string(local_z);
  auto found = pipelines_.find(key);
  if (found != pipelines_.end()) return found->second;
  const ShaderCode* code = find_shader(shader);
  if (!code) throw Error(ErrorKind::kInternal, "no embedded Vulkan shader '" + shader + "'");
  if (bindings > kMaxBindings) throw Error(ErrorKind::kInternal, "shader '" + shader + "' binds too many buffers");
  Pipeline p;
  p.bindings = bindings;
  p.local_size[0] = local_x;
  p.local_size[1] = local_y;
  p.local_size[2] = local_z;
  std::vector<VkDescriptorSetLayoutBinding> b(bindings);
  for (uint32_t i = 0; i < bindings; ++i) {
    b[i].binding = i;
    b[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    b[i].descriptorCount = 1;
    b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo li{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  li.bindingCount = bindings;
  li.pBindings = b.data();
  if (VkResult r = vk_.vkCreateDescriptorSetLayout(device_, &li, nullptr, &p.set_layout); r != VK_SUCCESS)
    fail("vkCreateDescriptorSetLayout", r);
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushBytes};
  VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &p.set_layout;
  pl.pushConstantRangeCount = 1;
  pl.pPushConstantRanges = &range;
  if (VkResult r = vk_.vkCreatePipelineLayout(device_, &pl, nullptr, &p.layout); r != VK_SUCCESS) {
    vk_.vkDestroyDescriptorSetLayout(device_, p.set_layout, nullptr);
    fail("vkCreatePipelineLayout", r);
  }
  VkShaderModuleCreateInfo si{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  si.codeSize = code->bytes;
  si.pCode = code->words;
  VkShaderModule module;
  if (VkResult r = vk_.vkCreateShaderModule(device_, &si, nullptr, &module); r != VK_SUCCESS) {
    vk_.vkDestroyPipelineLayout(device_, p.layout, nullptr);
    vk_.vkDestroyDescriptorSetLayout(device_, p.set_layout, nullptr);
    fail(("creating the shader module of '" + shader + "'").c_str(), r);
  }
  // The workgroup size is specialization constants 0-2 (local_size_x_id etc. in the shaders).
  const uint32_t sizes[3] = {local_x, local_y, local_z};
  VkSpecializationMapEntry entries[3];
  for (uint32_t i = 0; i < 3; ++i) entries[i] = {i, i * 4, 4};
  VkSpecializationInfo spec{3, entries, sizeof sizes, sizes};
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = &spec;
  ci.layout = p.layout;
  VkResult r = vk_.vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &ci, nullptr, &p.pipeline);
  vk_.vkDestroyShaderModule(device_, module, nullptr);
  if (r == VK_SUCCESS && fault_ == Fault::kPipeline) {
    vk_.vkDestroyPipeline(device_, p.pipeline, nullptr);
    r = VK_ERROR_UNKNOWN;
  }
  if (r != VK_SUCCESS) {
    vk_.vkDestroyPipelineLayout(device_, p.layout, nullptr);
    vk_.vkDestroyDescriptorSetLayout(device_, p.set_layout, nullptr);
    fail(("building the pipeline of shader '" + shader + "'").c_str(), r);
  }
  return pipelines_.emplace(key, p).first->second;
}

VkDescriptorSet Device::descriptor_set(const Pipeline& pipeline) {
  for (;;) {
    if (descriptor_pool_in_use_ == descriptor_pools_.size()) {
      VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * kMaxBindings};
      VkDescriptorPoolCreateInfo pi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
      pi.maxSets = kSetsPerPool;
      pi.poolSizeCount = 1;
      pi.pPoolSizes = &size;
      VkDescriptorPool pool;
      if (VkResult r = vk_.vkCreateDescriptorPool(device_, &pi, nullptr, &pool); r != VK_SUCCESS)
        fail("vkCreateDescriptorPool", r);
      descriptor_pools_.push_back(pool);
    }
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = descriptor_pools_[descriptor_pool_in_use_];
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &pipeline.set_layout;
    VkDescriptorSet set;
    const VkResult r = vk_.vkAllocateDescriptorSets(device_, &ai, &set);
    if (r == VK_SUCCESS) return set;
    if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL) fail("vkAllocateDescriptorSets", r);
    ++descriptor_pool_in_use_;  // this pool is full: the next one
  }
}

void Device::dispatch(const Pipeline& pipeline, const std::vector<BufferRange>& buffers, const void* push,
                      uint32_t push_bytes, uint32_t groups_x, uint32_t groups_y, uint32_t groups_z) {
  if (buffers.size() != pipeline.bindings)
    throw Error(ErrorKind::kInternal, "a Vulkan dispatch binds " + std::to_string(buffers.size()) +
                                          " buffers to a pipeline of " + std::to_string(pipeline.bindings));
  if (push_bytes > kPushBytes) throw Error(ErrorKind::kInternal, "Vulkan push constants over 128 bytes");
  if (groups_x == 0 || groups_y == 0 || groups_z == 0 || fault_ == Fault::kWrongResults) return;
  if (groups_x > physical_.max_workgroup_count[0] || groups_y > physical_.max_workgroup_count[1] ||
      groups_z > physical_.max_workgroup_count[2])
    throw DeviceDeclined("the work needs more workgroups than the device dispatches at once");
  VkDescriptorSet set = descriptor_set(pipeline);
  std::vector<VkDescriptorBufferInfo> infos(buffers.size());
  std::vector<VkWriteDescriptorSet> writes(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    infos[i] = {buffers[i].buffer, buffers[i].offset, std::max<VkDeviceSize>(4, buffers[i].bytes)};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = static_cast<uint32_t>(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  vk_.vkUpdateDescriptorSets(device_, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
  VkCommandBuffer cb = recording();
  vk_.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.pipeline);
  vk_.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout, 0, 1, &set, 0, nullptr);
  if (push_bytes) {
    // The layout's range is 128 bytes: pad so that every byte the shader may read is defined.
    uint8_t block[kPushBytes] = {};
    std::memcpy(block, push, push_bytes);
    vk_.vkCmdPushConstants(cb, pipeline.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushBytes, block);
  }
  vk_.vkCmdDispatch(cb, groups_x, groups_y, groups_z);
  barrier();
}

void Device::upload(const void* data, VkDeviceSize bytes, const Buffer& dst) {
  if (bytes == 0) return;
  Buffer s = staging(bytes);
  std::memcpy(s.mapped, data, bytes);
  VkBufferCopy region{0, 0, bytes};
  vk_.vkCmdCopyBuffer(recording(), s.buffer, dst.buffer, 1, &region);
  barrier();
}

void Device::fill(const Buffer& dst, VkDeviceSize offset, VkDeviceSize bytes, uint32_t pattern) {
  if (bytes == 0) return;
  vk_.vkCmdFillBuffer(recording(), dst.buffer, offset, (bytes + 3) / 4 * 4, pattern);
  barrier();
}

void Device::download(const Buffer& src, VkDeviceSize bytes, void* data) {
  if (bytes == 0) return;
  Buffer s = staging(bytes);
  VkBufferCopy region{0, 0, bytes};
  vk_.vkCmdCopyBuffer(recording(), src.buffer, s.buffer, 1, &region);
  flush();
  std::memcpy(data, s.mapped, bytes);
}

constexpr uint32_t kTimestampQueries = 4096;  // two per timed node in one command buffer

bool Device::begin_timed() {
  if (physical_.timestamp_bits == 0) return false;
  if (!queries_) {
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = kTimestampQueries;
    if (VkResult r = vk_.vkCreateQueryPool(device_, &qi, nullptr, &queries_); r != VK_SUCCESS) {
      queries_ = VK_NULL_HANDLE;
      fail("vkCreateQueryPool", r);
    }
  }
  if (queries_used_ + 2 > kTimestampQueries) flush();
  VkCommandBuffer cb = recording();
  if (!queries_reset_) {
    vk_.vkCmdResetQueryPool(cb, queries_, 0, kTimestampQueries);
    queries_reset_ = true;
  }
  // Written once every command before it has completed: the node's start.
  vk_.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, queries_used_);
  timing_open_ = true;
  return true;
}

void Device::end_timed(std::function<void(int64_t)> done) {
  // A node whose work was submitted part-way (it needed a value on the host) is not timed.
  if (!timing_open_) return;
  timing_open_ = false;
  vk_.vkCmdWriteTimestamp(recording(), VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, queries_used_ + 1);
  timed_.emplace_back(queries_used_, std::move(done));
  queries_used_ += 2;
}

void Device::read_timestamps() {
  if (!timed_.empty()) {
    std::vector<uint64_t> ticks(queries_used_);
    const VkResult r = vk_.vkGetQueryPoolResults(device_, queries_, 0, queries_used_, ticks.size() * sizeof(uint64_t),
                                                 ticks.data(), sizeof(uint64_t),
                                                 VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (r != VK_SUCCESS) fail("vkGetQueryPoolResults", r);
    const uint64_t mask = physical_.timestamp_bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << physical_.timestamp_bits) - 1;
    const auto timed = std::move(timed_);
    timed_.clear();
    for (const auto& [first, done] : timed) {
      const uint64_t elapsed = (ticks[first + 1] - ticks[first]) & mask;
      done(static_cast<int64_t>(static_cast<double>(elapsed) * physical_.timestamp_period));
    }
  }
  queries_used_ = 0;
  queries_reset_ = false;
}

void Device::flush() {
  timing_open_ = false;
  if (recording_) {
    recording_ = false;
    if (VkResult r = vk_.vkEndCommandBuffer(commands_); r != VK_SUCCESS) fail("vkEndCommandBuffer", r);
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &commands_;
    if (VkResult r = vk_.vkQueueSubmit(queue_, 1, &si, fence_); r != VK_SUCCESS) fail("vkQueueSubmit", r);
    // A kernel that runs for minutes on a software device is still a kernel: wait without a limit
    // in slices, so a lost device surfaces as its error.
    for (;;) {
      const VkResult r = vk_.vkWaitForFences(device_, 1, &fence_, VK_TRUE, 1000000000ull);
      if (r == VK_SUCCESS && fault_ == Fault::kDeviceLost) fail("vkWaitForFences", VK_ERROR_DEVICE_LOST);
      if (r == VK_SUCCESS) break;
      if (r != VK_TIMEOUT) fail("vkWaitForFences", r);
    }
    vk_.vkResetFences(device_, 1, &fence_);
    read_timestamps();
    vk_.vkResetCommandPool(device_, command_pool_, 0);
    for (VkDescriptorPool pool : descriptor_pools_) vk_.vkResetDescriptorPool(device_, pool, 0);
    descriptor_pool_in_use_ = 0;
    for (const Buffer& b : staging_in_flight_) free_staging_.emplace(b.size, b);
    staging_in_flight_.clear();
  }
  if (instance_->validation() && Instance::validation_messages() > 0)
    throw Error(ErrorKind::kInternal, physical_.info.id + ": the Vulkan validation layer reported " +
                                          std::to_string(Instance::validation_messages()) +
                                          " message(s); the first: " + Instance::first_validation_message());
}

}  // namespace onnxtool::runner::vulkan
