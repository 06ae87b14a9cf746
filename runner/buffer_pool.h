// Storage of tensors: small buffers from the heap, large ones from a pool that keeps them for
// the next tensor of a similar size.
#pragma once

#include <cstddef>
#include <memory>

namespace onnxtool::runner {

/// 64-byte aligned, uninitialized storage of at least `bytes` bytes (at least one), freed (or
/// returned to the pool) when the last owner goes. Throws std::bad_alloc when memory is out.
///
/// Buffers of a megabyte and more are mapped from the kernel and, once free, kept for reuse:
/// a session allocates the same large tensors on every run, and through the heap they
/// fragmented it (freed tensors that later, larger ones could not reuse: quantizing a
/// 1024x1024 U-Net held 3.9 GB for 1.4 GB of live data), while through plain mappings each
/// run paid the page faults again.
std::shared_ptr<void> allocate_buffer(size_t bytes);

/// Unmaps the pooled buffers no tensor holds (a Session does this when it ends).
void release_pooled_buffers();

/// Bytes held by the pool and not in use (for tests).
size_t pooled_free_bytes();

/// Bytes of pooled buffers in use (tensors of a megabyte and more: a model's activations), now
/// and at most since the last reset_pooled_peak(). `run --profile` reports the peak of its runs.
struct PoolUsage {
  size_t in_use = 0, peak = 0;
};
PoolUsage pooled_usage();
void reset_pooled_peak();

}  // namespace onnxtool::runner
