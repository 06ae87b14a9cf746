// `onnxtool devices`: the devices the runner can use (the CPU, and every Vulkan device).
#include <cstdio>
#include <iostream>

#include "cli/common.h"
#include "cli/printers.h"
#include "runner/backend.h"

namespace onnxtool::cli {
namespace {

std::string megabytes(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f MB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

int list(bool json) {
  std::string vulkan_status;
  const auto devices = runner::list_devices(&vulkan_status);
  if (json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& d : devices)
      arr.push_back({{"id", d.id},
                     {"name", d.name},
                     {"type", d.type},
                     {"driver", d.driver},
                     {"api", json_or_null(d.api)},
                     {"memory_bytes", d.memory_bytes},
                     {"max_buffer_bytes", d.max_buffer_bytes},
                     {"fp16_storage", d.fp16_storage},
                     {"fp16_arithmetic", d.fp16_arithmetic},
                     {"int8_storage", d.int8_storage},
                     {"subgroup_size", d.subgroup_size},
                     {"fp16_mode", d.fp16_mode}});
    nlohmann::json doc = {{"devices", arr}};
    doc["vulkan"] = vulkan_status.empty() ? nlohmann::json("available") : nlohmann::json(vulkan_status);
    print_json(doc);
    return kExitOk;
  }
  for (const auto& d : devices) {
    std::cout << d.id << "  " << d.name << "\n";
    std::cout << "    type " << d.type << ", driver " << d.driver << (d.api.empty() ? "" : ", " + d.api) << "\n";
    std::cout << "    memory " << megabytes(d.memory_bytes);
    if (d.id != "cpu") std::cout << ", largest buffer " << megabytes(d.max_buffer_bytes) << ", subgroup " << d.subgroup_size;
    std::cout << "\n    float16: " << d.fp16_mode
              << "; int8 storage: " << (d.int8_storage ? "yes" : "no") << "\n";
  }
  if (!vulkan_status.empty()) std::cout << "no Vulkan device: " << vulkan_status << "\n";
  return kExitOk;
}

}  // namespace

void register_devices(CLI::App& app, Action& action) {
  auto json = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand("devices", "List the devices the runner can use (the CPU and Vulkan devices)");
  sub->add_flag("--json", *json, "print one JSON document");
  sub->callback([&action, json] { action = [json] { return list(*json); }; });
}

}  // namespace onnxtool::cli
