// The helpers the Vulkan kernel files of raw elements share: data.cpp (data movement),
// convert.cpp (Cast, Where, Quantize/Dequantize, Dropout), vision.cpp (Resize) and control.cpp
// (Identity). Internal to runner/vulkan/; defined in data.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runner/vulkan/backend.h"

namespace onnxtool::runner::vulkan {

constexpr size_t kMaxRank = 6;  // MAX_RANK in shaders/common.glsl

using Shape = std::vector<int64_t>;

/// A binding of the whole tensor rounded up to 4 bytes (pool buffers are multiples of 16), so
/// shaders may read and write 8-bit tensors as 32-bit words.
BufferRange words(const std::shared_ptr<const VulkanTensor>& t);

/// The name of an element type, for decline messages.
std::string type_name(DataType t);

/// The copy-family shader for raw elements of `type`: 4-byte elements use NAME, float16 NAME_f16.
std::string raw_shader(DeviceKernelContext& ctx, const std::string& name, DataType type);

/// Output 0 as input 0's memory under `shape` (a view: no dispatch).
void alias(DeviceKernelContext& ctx, Shape shape);

}  // namespace onnxtool::runner::vulkan
