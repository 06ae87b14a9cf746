// The runner's threads: one process-wide pool that kernels (and quant/'s statistics) split work
// over. The calling thread takes part, work is cut into more chunks than threads and taken as
// threads come free, and an idle worker spins briefly and then sleeps. On a busy machine a
// worker that is descheduled costs the chunk it holds, not a time slice at every op: the others,
// the caller among them, take the rest.
//
// Which thread runs a chunk never changes a result: chunks write disjoint outputs, and their
// bounds depend on the work and the thread count only, as kernels require for byte-identical
// outputs whatever --threads says.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

namespace onnxtool::runner {

/// The thread count a run uses when none is asked for: set_default_threads(), else
/// ONNXTOOL_THREADS, else OMP_NUM_THREADS, else the cores this process may run on.
int default_threads();
/// Sets the process's default (`--threads N` of every command that runs a model); 0 restores
/// the environment's.
void set_default_threads(int threads);

/// The threads asked for on this thread: the ThreadScope around it, else default_threads().
int configured_threads();

/// The threads parallel work started on this thread may use: configured_threads(), fewer while
/// other processes keep the machine's cores busy (down to 1), and 1 inside a chunk (nested work
/// runs inline). Results never depend on it.
int current_threads();

/// Whether current_threads() gives way to other processes' load (on by default). Off, it is
/// configured_threads() always: for a test that needs the workers to run whatever the machine.
void set_load_adaptation(bool on);
bool load_adaptation();

/// configured_threads() is `threads` on this thread while the scope lives (a Session's run).
class ThreadScope {
 public:
  explicit ThreadScope(int threads);
  ~ThreadScope();
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int before_;
};

namespace detail {
using ChunkFn = void (*)(void* context, int64_t chunk);
void run_chunks(int64_t chunks, ChunkFn fn, void* context);
}  // namespace detail

/// Calls fn(c) for every c in [0, chunks), on this thread and up to current_threads() - 1 pool
/// workers, and returns when all have run. The first exception fn throws is rethrown here
/// (chunks not yet started are then skipped).
template <class F>
void parallel_chunks(int64_t chunks, F&& fn) {
  using Fn = std::remove_reference_t<F>;
  detail::run_chunks(
      chunks, [](void* context, int64_t c) { (*static_cast<Fn*>(context))(c); },
      const_cast<void*>(static_cast<const void*>(&fn)));
}

/// Calls fn(begin, end) over [0, total) in ranges of at least `grain` items, in parallel when
/// there is more than one range: at most 4 ranges per thread, so that a late thread's share
/// is small. Work of one grain or less runs inline, without waking anyone.
template <class F>
void parallel_ranges(int64_t total, int64_t grain, F&& fn) {
  if (total <= 0) return;
  grain = grain < 1 ? 1 : grain;
  const int threads = current_threads();
  int64_t chunks = (total + grain - 1) / grain;
  if (chunks > static_cast<int64_t>(threads) * 4) chunks = static_cast<int64_t>(threads) * 4;
  if (chunks <= 1) {
    fn(int64_t{0}, total);
    return;
  }
  const int64_t step = (total + chunks - 1) / chunks;
  chunks = (total + step - 1) / step;
  parallel_chunks(chunks, [&](int64_t c) {
    const int64_t begin = c * step;
    fn(begin, begin + step < total ? begin + step : total);
  });
}

}  // namespace onnxtool::runner
