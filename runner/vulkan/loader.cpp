#include "runner/vulkan/loader.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace onnxtool::runner::vulkan {

void Api::load_instance(VkInstance instance) {
#define ONNXTOOL_VK_LOAD(name) name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(instance, #name));
  ONNXTOOL_VK_INSTANCE(ONNXTOOL_VK_LOAD)
#undef ONNXTOOL_VK_LOAD
  vkCreateDebugUtilsMessengerEXT = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
      vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
  vkDestroyDebugUtilsMessengerEXT = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
      vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
}

void Api::load_device(VkDevice device) {
#define ONNXTOOL_VK_LOAD(name) name = reinterpret_cast<PFN_##name>(vkGetDeviceProcAddr(device, #name));
  ONNXTOOL_VK_DEVICE(ONNXTOOL_VK_LOAD)
#undef ONNXTOOL_VK_LOAD
}

Api* loader(std::string* why) {
  static std::once_flag once;
  static Api api;
  static bool ok = false;
  static std::string error;
  std::call_once(once, [] {
    // The loader stays open for the life of the process (drivers register exit handlers).
    // ONNXTOOL_VULKAN_LOADER names another loader library (a path or a soname).
    const char* override_name = std::getenv("ONNXTOOL_VULKAN_LOADER");
    const std::string name = override_name && *override_name ? override_name : "libvulkan.so.1";
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      error = e ? e : name + " cannot be opened";
      return;
    }
    api.vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
    if (!api.vkGetInstanceProcAddr) {
      error = "libvulkan.so.1 has no vkGetInstanceProcAddr";
      return;
    }
#define ONNXTOOL_VK_LOAD(name) \
  api.name = reinterpret_cast<PFN_##name>(api.vkGetInstanceProcAddr(VK_NULL_HANDLE, #name));
    ONNXTOOL_VK_GLOBAL(ONNXTOOL_VK_LOAD)
#undef ONNXTOOL_VK_LOAD
    if (!api.vkCreateInstance) {
      error = "libvulkan.so.1 does not resolve vkCreateInstance";
      return;
    }
    ok = true;
  });
  if (!ok && why) *why = error;
  return ok ? &api : nullptr;
}

void pin_loaded_libraries() {
  std::vector<std::string> paths;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        // The executable and the vDSO have no path to open.
        if (info->dlpi_name && info->dlpi_name[0] == '/')
          static_cast<std::vector<std::string>*>(data)->push_back(info->dlpi_name);
        return 0;
      },
      &paths);
  // RTLD_NOLOAD: only what is loaded already; RTLD_NODELETE: never unmapped. The extra reference
  // this takes is never released, as intended.
  for (const auto& path : paths) dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

const char* result_name(VkResult result) {
  switch (result) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FORMAT_NOT_SUPPORTED: return "VK_ERROR_FORMAT_NOT_SUPPORTED";
    case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    case VK_ERROR_INVALID_SHADER_NV: return "VK_ERROR_INVALID_SHADER_NV";
    default: return "VK_ERROR_UNKNOWN";
  }
}

}  // namespace onnxtool::runner::vulkan
