#include "runner/backend.h"

#include <unistd.h>

#include <fstream>

#include "ir/error.h"
#include "runner/ort/ort_session.h"
#include "runner/vulkan/backend.h"

namespace onnxtool::runner {

DeviceSpec DeviceSpec::parse(std::string_view text) {
  DeviceSpec spec;
  if (text == "cpu") return spec;
  const std::string_view ort = "onnxruntime";
  if (text.substr(0, ort.size()) == ort) {
    spec.kind = Kind::kOnnxruntime;
    const std::string_view rest = text.substr(ort.size());
    if (rest.empty() || rest == ":disabled") return spec;
    for (const OrtLevel level : {OrtLevel::kBasic, OrtLevel::kExtended, OrtLevel::kAll}) {
      spec.ort_level = level;
      if (rest.size() > 1 && rest[0] == ':' && rest.substr(1) == ort::level_name(level)) return spec;
    }
    throw_usage_error("unknown device '" + std::string(text) +
                      "' (onnxruntime takes one graph optimization level: onnxruntime:disabled, the default, "
                      "onnxruntime:basic, onnxruntime:extended or onnxruntime:all)");
  }
  const std::string_view vk = "vulkan";
  if (text.substr(0, vk.size()) == vk) {
    spec.kind = Kind::kVulkan;
    std::string_view rest = text.substr(vk.size());
    const std::string_view fp32 = ":fp32-arithmetic";
    if (rest.size() >= fp32.size() && rest.substr(rest.size() - fp32.size()) == fp32) {
      spec.fp32_arithmetic = true;
      rest.remove_suffix(fp32.size());
    }
    if (rest.empty()) return spec;
    if (rest[0] == ':' && rest.size() > 1 && rest.size() <= 4 &&
        rest.substr(1).find_first_not_of("0123456789") == std::string_view::npos) {
      spec.index = std::stoi(std::string(rest.substr(1)));
      return spec;
    }
  }
  throw_usage_error("unknown device '" + std::string(text) +
                    "' (expected cpu, vulkan or vulkan:N, optionally with :fp32-arithmetic, or onnxruntime[:LEVEL]; "
                    "`onnxtool devices` lists them)");
}

std::string DeviceSpec::to_string() const {
  if (kind == Kind::kCpu) return "cpu";
  if (kind == Kind::kOnnxruntime) return std::string("onnxruntime:") + ort::level_name(ort_level);
  return "vulkan:" + std::to_string(index) + (fp32_arithmetic ? ":fp32-arithmetic" : "");
}

namespace {

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "CPU";
}

}  // namespace

std::vector<DeviceInfo> list_devices(std::string* vulkan_status) {
  DeviceInfo cpu;
  cpu.id = "cpu";
  cpu.name = cpu_name();
  cpu.type = "cpu";
  cpu.driver = "onnxtool reference runner";
  cpu.memory_bytes = physical_memory();
  cpu.fp16_storage = true;
  cpu.int8_storage = true;
  cpu.max_buffer_bytes = cpu.memory_bytes;
  cpu.fp16_mode = "float16 storage, float32 arithmetic (rounded to float16 at each op's output)";
  std::vector<DeviceInfo> out{cpu};
  for (DeviceInfo& d : vulkan::vulkan_devices(vulkan_status)) out.push_back(std::move(d));
  return out;
}

DeviceTensor::DeviceTensor(DataType dtype, std::vector<int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)), size_(shape_size(shape_)) {}

std::string DeviceTensor::describe() const {
  return std::string(ir::data_type_name(dtype_)) + shape_string(shape_);
}

DataType DeviceKernelContext::input_dtype(size_t i) const {
  if (!has_input(i)) decline("input " + std::to_string(i) + " is missing");
  return inputs_.dtype(i);
}

const std::vector<int64_t>& DeviceKernelContext::input_shape(size_t i) const {
  if (!has_input(i)) decline("input " + std::to_string(i) + " is missing");
  return inputs_.shape(i);
}

DeviceTensorPtr DeviceKernelContext::input(size_t i) {
  if (!has_input(i)) decline("input " + std::to_string(i) + " is missing");
  return inputs_.device(i);
}

const Tensor& DeviceKernelContext::host_input(size_t i) {
  if (!has_input(i)) decline("input " + std::to_string(i) + " is missing");
  return inputs_.host(i);
}

void DeviceKernelContext::set_output(size_t i, DeviceTensorPtr tensor) {
  if (i >= outputs_.size()) fail("output " + std::to_string(i) + " does not exist");
  outputs_[i] = std::move(tensor);
}

void DeviceKernelContext::set_host_output(size_t i, Tensor tensor) {
  if (i >= host_outputs_.size()) fail("output " + std::to_string(i) + " does not exist");
  host_outputs_[i] = Value::of(std::move(tensor));
}

}  // namespace onnxtool::runner
