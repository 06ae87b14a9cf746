// The large-buffer pool (runner/buffer_pool.h).
#include "runner/buffer_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define ONNXTOOL_POOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ONNXTOOL_POOL_ASAN 1
#endif
#endif
#ifdef ONNXTOOL_POOL_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace onnxtool::runner {

namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kPooledBytes = size_t{1} << 20;
#ifndef ONNXTOOL_POOL_ASAN
constexpr size_t kPage = 4096;
#endif

/// Free buffers by size. A request takes the smallest free buffer of its size up to a quarter
/// larger (more waste would let small tensors hold the buffers large ones need), else a new one.
///
/// Under AddressSanitizer the buffers come from the heap (which it watches) instead of mmap, a
/// request takes only a buffer of exactly its size (so a kernel that overruns its output still
/// hits the redzone) and free buffers are poisoned (so a read through a dangling pointer is
/// still caught).
class Pool {
 public:
  void* take(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.lower_bound(bytes);
#ifdef ONNXTOOL_POOL_ASAN
      const size_t most = bytes;
#else
      const size_t most = bytes + bytes / 4;
#endif
      if (it != free_.end() && it->first <= most) {
        void* p = it->second;
        free_bytes_ -= it->first;
        sizes_[p] = it->first;
        count_in(it->first);
        free_.erase(it);
#ifdef ONNXTOOL_POOL_ASAN
        ASAN_UNPOISON_MEMORY_REGION(p, bytes);
#endif
        return p;
      }
    }
    void* p = map(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    sizes_[p] = bytes;
    count_in(bytes);
    return p;
  }

  void give_back(void* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sizes_.find(p);
    const size_t bytes = it->second;
    sizes_.erase(it);
    in_use_ -= bytes;
#ifdef ONNXTOOL_POOL_ASAN
    ASAN_POISON_MEMORY_REGION(p, bytes);
#endif
    free_.emplace(bytes, p);
    free_bytes_ += bytes;
  }

  void release() {
    std::multimap<size_t, void*> gone;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      gone.swap(free_);
      free_bytes_ = 0;
    }
    for (const auto& [bytes, p] : gone) unmap(p, bytes);
  }

  size_t free_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return free_bytes_;
  }

  PoolUsage usage() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {in_use_, peak_};
  }

  void reset_peak() {
    std::lock_guard<std::mutex> lock(mutex_);
    peak_ = in_use_;
  }

 private:
  // Called with the mutex held; counts whole buffers (a request that took a larger free buffer
  // counts all of it: that memory is in use).
  void count_in(size_t bytes) {
    in_use_ += bytes;
    peak_ = std::max(peak_, in_use_);
  }

  static void* map(size_t bytes) {
#ifdef ONNXTOOL_POOL_ASAN
    return ::operator new(bytes, std::align_val_t(kAlignment));
#else
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return p;
#endif
  }
  static void unmap(void* p, size_t bytes) {
#ifdef ONNXTOOL_POOL_ASAN
    ASAN_UNPOISON_MEMORY_REGION(p, bytes);
    ::operator delete(p, std::align_val_t(kAlignment));
#else
    munmap(p, bytes);
#endif
  }

  std::mutex mutex_;
  std::multimap<size_t, void*> free_;
  std::map<void*, size_t> sizes_;  // buffers in use, by address
  size_t free_bytes_ = 0;
  size_t in_use_ = 0, peak_ = 0;
};

// Never destroyed: tensors may still be freed while the program exits.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

}  // namespace

std::shared_ptr<void> allocate_buffer(size_t bytes) {
  // A multiple of 64 bytes, plus 64: vector loops may read a whole register past the end.
  const size_t padded = (bytes + kAlignment - 1) / kAlignment * kAlignment + kAlignment;
  if (padded < kPooledBytes) {
    void* p = ::operator new(padded, std::align_val_t(kAlignment));
    return std::shared_ptr<void>(p, [](void* q) { ::operator delete(q, std::align_val_t(kAlignment)); });
  }
#ifdef ONNXTOOL_POOL_ASAN
  void* p = pool().take(padded);
#else
  void* p = pool().take((padded + kPage - 1) / kPage * kPage);
#endif
  return std::shared_ptr<void>(p, [](void* q) { pool().give_back(q); });
}

void release_pooled_buffers() { pool().release(); }

size_t pooled_free_bytes() { return pool().free_bytes(); }

PoolUsage pooled_usage() { return pool().usage(); }

void reset_pooled_peak() { pool().reset_peak(); }

}  // namespace onnxtool::runner
