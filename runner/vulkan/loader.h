// The Vulkan entry points onnxtool uses, resolved at run time from the system's loader
// (libvulkan.so.1) so that the binary starts and runs on the CPU where there is none.
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>

namespace onnxtool::runner::vulkan {

// Entry points without an instance.
#define ONNXTOOL_VK_GLOBAL(X)              \
  X(vkCreateInstance)                      \
  X(vkEnumerateInstanceLayerProperties)    \
  X(vkEnumerateInstanceExtensionProperties)

// Entry points of an instance.
#define ONNXTOOL_VK_INSTANCE(X)                \
  X(vkDestroyInstance)                         \
  X(vkEnumeratePhysicalDevices)                \
  X(vkGetPhysicalDeviceProperties)             \
  X(vkGetPhysicalDeviceProperties2)            \
  X(vkGetPhysicalDeviceFeatures2)              \
  X(vkGetPhysicalDeviceMemoryProperties)       \
  X(vkGetPhysicalDeviceQueueFamilyProperties)  \
  X(vkEnumerateDeviceExtensionProperties)      \
  X(vkCreateDevice)                            \
  X(vkGetDeviceProcAddr)

// Entry points of a device.
#define ONNXTOOL_VK_DEVICE(X)         \
  X(vkDestroyDevice)                  \
  X(vkGetDeviceQueue)                 \
  X(vkDeviceWaitIdle)                 \
  X(vkCreateBuffer)                   \
  X(vkDestroyBuffer)                  \
  X(vkGetBufferMemoryRequirements)    \
  X(vkAllocateMemory)                 \
  X(vkFreeMemory)                     \
  X(vkBindBufferMemory)               \
  X(vkMapMemory)                      \
  X(vkUnmapMemory)                    \
  X(vkInvalidateMappedMemoryRanges)   \
  X(vkFlushMappedMemoryRanges)        \
  X(vkCreateShaderModule)             \
  X(vkDestroyShaderModule)            \
  X(vkCreateDescriptorSetLayout)      \
  X(vkDestroyDescriptorSetLayout)     \
  X(vkCreatePipelineLayout)           \
  X(vkDestroyPipelineLayout)          \
  X(vkCreateComputePipelines)         \
  X(vkDestroyPipeline)                \
  X(vkCreateDescriptorPool)           \
  X(vkDestroyDescriptorPool)          \
  X(vkResetDescriptorPool)            \
  X(vkAllocateDescriptorSets)         \
  X(vkUpdateDescriptorSets)           \
  X(vkCreateCommandPool)              \
  X(vkDestroyCommandPool)             \
  X(vkAllocateCommandBuffers)         \
  X(vkResetCommandPool)               \
  X(vkBeginCommandBuffer)             \
  X(vkEndCommandBuffer)               \
  X(vkCmdBindPipeline)                \
  X(vkCmdBindDescriptorSets)          \
  X(vkCmdPushConstants)               \
  X(vkCmdDispatch)                    \
  X(vkCmdPipelineBarrier)             \
  X(vkCmdCopyBuffer)                  \
  X(vkCmdFillBuffer)                  \
  X(vkCreateQueryPool)                \
  X(vkDestroyQueryPool)               \
  X(vkCmdResetQueryPool)              \
  X(vkCmdWriteTimestamp)              \
  X(vkGetQueryPoolResults)            \
  X(vkQueueSubmit)                    \
  X(vkCreateFence)                    \
  X(vkDestroyFence)                   \
  X(vkWaitForFences)                  \
  X(vkResetFences)

/// The resolved entry points; one table per process (the loader is opened once).
struct Api {
#define ONNXTOOL_VK_MEMBER(name) PFN_##name name = nullptr;
  ONNXTOOL_VK_GLOBAL(ONNXTOOL_VK_MEMBER)
  ONNXTOOL_VK_INSTANCE(ONNXTOOL_VK_MEMBER)
  ONNXTOOL_VK_DEVICE(ONNXTOOL_VK_MEMBER)
#undef ONNXTOOL_VK_MEMBER
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  PFN_vkCreateDebugUtilsMessengerEXT vkCreateDebugUtilsMessengerEXT = nullptr;
  PFN_vkDestroyDebugUtilsMessengerEXT vkDestroyDebugUtilsMessengerEXT = nullptr;

  /// Resolves the instance-level entry points (after vkCreateInstance).
  void load_instance(VkInstance instance);
  /// Resolves the device-level entry points (after vkCreateDevice).
  void load_device(VkDevice device);
};

/// The process's loader (libvulkan.so.1, or the library ONNXTOOL_VULKAN_LOADER names), opened on
/// first use; nullptr when it cannot be opened, with the reason in `why`.
Api* loader(std::string* why);

/// "VK_ERROR_OUT_OF_DEVICE_MEMORY" and the like.
const char* result_name(VkResult result);

/// Keeps every shared library loaded so far (the drivers and layers vkCreateInstance brought in)
/// mapped until the process ends. The Vulkan loader unloads its drivers at vkDestroyInstance and
/// loads them again for the next instance; pinned, they are loaded once per process, and their
/// code stays where a stack trace taken at exit (LeakSanitizer's of the allocations a driver keeps)
/// can name it, instead of pointing into unmapped or reused memory.
void pin_loaded_libraries();

}  // namespace onnxtool::runner::vulkan
