// onnxruntime's channel-blocked layout (NCHWc, the domain com.microsoft.nchwc of
// ir/ops/nchwc_schemas.def): which block size a model was written for. The shape functions
// (ir/ops/nchwc_shapes.cpp) and the CPU kernels (runner/cpu/nchwc.cpp) share the answer.
//
// onnxruntime blocks channels by its machine's block size (MlasNchwcGetBlockSize: 16 with
// AVX-512F, else 8) both when it saves an optimized model and when it runs one, so such a model
// is right only on a machine of the same block size. onnxtool reads the block size from the
// model where its shapes tell it, else takes this machine's.
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"

namespace onnxtool::ir {

/// The block sizes MLAS uses on the machines onnxruntime optimizes for.
inline constexpr int64_t kNchwcBlockSizes[] = {8, 16};

/// The block size MLAS would choose on this machine: 16 when the processor has AVX-512F, else 8.
int64_t machine_nchwc_block_size();

/// A graph's block size and where it came from.
struct NchwcBlock {
  int64_t size = 0;  ///< 0 when the graph has no com.microsoft.nchwc node
  /// How it was found: "the model (node 'x' (Conv): ...)" or "this machine (AVX-512F)".
  std::string source;
};

/// The block size the com.microsoft.nchwc nodes of `graph` were written for: the one size their
/// shapes allow (padded weight shapes of Conv, ReorderOutput's channels against its input's
/// padded channels, declared shapes of ReorderInput's output and of blocked tensors), else,
/// when both sizes fit, this machine's. Throws Error(kFailed) with one line naming the node when
/// its shapes fit no block size, or none that the nodes before it fit. One pass over the nodes.
NchwcBlock nchwc_block_size(const Graph& graph);

/// `channels` rounded up to a multiple of `block`.
inline int64_t nchwc_padded(int64_t channels, int64_t block) { return (channels + block - 1) / block * block; }

}  // namespace onnxtool::ir
