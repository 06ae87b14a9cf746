// The per-row machinery of the Vulkan kernels, shared by reduce.cpp (Reduce*, the Softmax
// family) and nn.cpp (global pooling, LpNormalization, the row normalizations): a per-row shader
// runs one workgroup per row with a shared-memory tree reduction (shaders/rows.glsl), and
// reduce.comp and axis.comp are recorded here for the ops of both files. Internal to
// runner/vulkan/; defined in reduce.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runner/vulkan/backend.h"
#include "runner/vulkan/shaders/op_codes.h"

namespace onnxtool::runner::vulkan {

// ---------------------------------------------------------------- per-row dispatches

/// std::to_string, for the decline messages.
std::string str(int64_t v);

/// Declines empty tensors and tensors whose element count does not fit the shaders' indices.
void require_nonempty(DeviceKernelContext& ctx, const std::vector<int64_t>& shape);

/// The workgroup size of a per-row shader: a power of two, the smallest that covers a row of
/// `len` elements but at least the device's subgroup, at most the device's limit and the
/// shaders' shared arrays.
uint32_t row_local(DeviceKernelContext& ctx, int64_t len);

/// Records `rows` workgroups of a per-row shader (the grid folds into y past the x limit; the
/// shaders find their row with row_index()).
void dispatch_rows(DeviceKernelContext& ctx, const std::string& shader, const std::vector<BufferRange>& buffers,
                   const void* push, uint32_t push_bytes, int64_t rows, int64_t len);

/// log2 of a power of two: the trips of rows.glsl's tree reduction over a workgroup.
uint64_t tree_steps(uint32_t local);

// ---------------------------------------------------------------- reduce.comp (Reduce*, global pooling)

// The op codes of reduce.comp, from the list it includes.
enum class ReduceOp : uint32_t { REDUCE_OPS(OP_CODE) };

/// Reduces the dims flagged in `reduced` of input 0 into output 0 of shape `out_shape`.
void record_reduce(DeviceKernelContext& ctx, const std::vector<bool>& reduced, ReduceOp op,
                   std::vector<int64_t> out_shape);

// ---------------------------------------------------------------- axis.comp (Softmax family, LpNormalization)

// The op codes of axis.comp, from the list it includes.
enum class AxisOp : uint32_t { AXIS_OPS(OP_CODE) };

/// Normalizes groups of n elements spaced `inner` apart: outer * inner groups.
void record_axis(DeviceKernelContext& ctx, AxisOp op, int64_t outer, int64_t n, int64_t inner);

}  // namespace onnxtool::runner::vulkan
