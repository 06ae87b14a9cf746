// The runner's thread pool (runner/thread_pool.h) under ThreadSanitizer: many small jobs back
// to back (a model's ops), chunks that throw, and two threads submitting at once. Built with
// -fsanitize=thread in the builds without ASan (tests/CMakeLists.txt); any race is a failure.
#include <atomic>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runner/thread_pool.h"

int main() {
  using namespace onnxtool::runner;
  // The workers must run chunks whatever else keeps the cores busy (ctest runs tests side by side).
  set_load_adaptation(false);
  const ThreadScope scope(3);
  std::vector<int> data(16 * 16);
  long wrong = 0;
  // Chunks run by a thread other than the caller: the test proves nothing unless there are some.
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<long> elsewhere{0};
  for (int job = 0; job < 20000; ++job) {
    const int64_t chunks = 1 + job % 13;
    parallel_chunks(chunks, [&](int64_t c) {
      // Every tenth job's chunks take a few microseconds, so that the workers get some.
      if (job % 10 == 0)
        for (volatile int spin = 0; spin < 2000; spin = spin + 1) {
        }
      for (int i = 0; i < 16; ++i) data[static_cast<size_t>(c * 16 + i)] = job;
      if (std::this_thread::get_id() != caller) ++elsewhere;
    });
    for (int64_t c = 0; c < chunks; ++c) wrong += data[static_cast<size_t>(c * 16)] != job;
    if (job % 1000 == 0) {
      try {
        parallel_chunks(8, [](int64_t c) {
          if (c == 3) throw std::runtime_error("chunk 3");
        });
        ++wrong;  // the exception must come through
      } catch (const std::runtime_error&) {
      }
    }
  }
  // Two threads submitting at once: one of them runs its work inline.
  std::atomic<long> sum{0};
  std::thread other([&] {
    const ThreadScope s(3);
    for (int j = 0; j < 2000; ++j) parallel_ranges(100, 10, [&](int64_t b, int64_t e) { sum += e - b; });
  });
  for (int j = 0; j < 2000; ++j) parallel_ranges(100, 10, [&](int64_t b, int64_t e) { sum += e - b; });
  other.join();
  std::printf("%ld wrong chunks, %ld chunks run by workers, sum %ld of %ld\n", wrong, elsewhere.load(), sum.load(), 4000L * 100);
  return wrong == 0 && elsewhere.load() > 100 && sum.load() == 4000L * 100 ? 0 : 1;
}
