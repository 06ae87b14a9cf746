// The runner's thread pool (thread_pool.h).
#include "runner/thread_pool.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace onnxtool::runner {
namespace {

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

/// A whole number from 1 to 1024 in the variable, else 0.
int threads_from_env(const char* name) {
  const char* text = std::getenv(name);
  if (!text || !*text) return 0;
  char* end = nullptr;
  const long n = std::strtol(text, &end, 10);
  return *end == '\0' && n >= 1 && n <= 1024 ? static_cast<int>(n) : 0;
}

int cores_available() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

/// The system's runnable tasks (procs_running of /proc/stat, which counts the threads running
/// or waiting for a core, this one included), or -1 when it cannot be read.
int runnable_tasks() {
  const int fd = ::open("/proc/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[16384];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char* line = std::strstr(buf, "\nprocs_running ");
  return line ? std::atoi(line + 15) : -1;
}

std::atomic<int> g_default_threads{0};
thread_local int t_scope_threads = 0;  ///< a ThreadScope's count; 0: none
thread_local bool t_in_chunk = false;  ///< running a chunk (of any caller's work)

/// How long an idle worker (or a caller waiting for the last chunks) spins before it sleeps
/// (or yields): long enough to catch the next op of a model without a wake-up, short enough
/// not to take a busy machine's cores from others.
constexpr auto kSpin = std::chrono::microseconds(50);

/// How often the machine's load is sampled, and over how long a window (usable_threads).
constexpr auto kLoadSample = std::chrono::milliseconds(4);
constexpr auto kLoadWindow = std::chrono::milliseconds(20);

// One job at a time. `state_` packs the job's generation (bits 32-63), its chunk count (16-31)
// and the next chunk to take (0-15); a thread takes chunk i by a compare-and-swap from i to
// i + 1 within the same generation. A worker that comes late finds the generation changed or no
// chunk left, and touches nothing of a job that is gone; one that took a chunk reads the job's
// function only then, when the job cannot end before that chunk is counted done.
constexpr int64_t kMaxChunksPerJob = 0xffff;

uint64_t pack(uint64_t generation, int64_t chunks, int64_t next) {
  return generation << 32 | static_cast<uint64_t>(chunks) << 16 | static_cast<uint64_t>(next);
}
uint32_t generation_of(uint64_t s) { return static_cast<uint32_t>(s >> 32); }
int64_t chunks_of(uint64_t s) { return static_cast<int64_t>((s >> 16) & 0xffff); }
int64_t next_of(uint64_t s) { return static_cast<int64_t>(s & 0xffff); }

class Pool {
 public:
  /// The pool's threads not asleep (spinning, or running chunks).
  int awake() const {
    return std::max(0, worker_count_.load(std::memory_order_relaxed) - sleepers_.load(std::memory_order_relaxed));
  }

  static Pool& instance() {
    // Never destroyed: workers may still be asleep in it when static destructors run.
    static Pool* pool = new Pool;
    return *pool;
  }

  /// Runs chunks [0, chunks), at most kMaxChunksPerJob of them.
  void run(int64_t chunks, detail::ChunkFn fn, void* context, int threads) {
    std::unique_lock<std::mutex> submit(submit_, std::try_to_lock);
    if (!submit.owns_lock()) {
      // Another thread is using the pool (two sessions run at once by a library user): this
      // work runs on its caller alone, the same chunks in order.
      run_inline(chunks, fn, context);
      return;
    }
    grow(threads - 1);
    fn_.store(fn, std::memory_order_relaxed);
    context_.store(context, std::memory_order_relaxed);
    helpers_.store(threads - 1, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    failed_.store(false, std::memory_order_relaxed);
    error_ = nullptr;
    const uint64_t generation = static_cast<uint64_t>(generation_of(state_.load(std::memory_order_relaxed))) + 1;
    state_.store(pack(generation, chunks, 0), std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      { std::lock_guard<std::mutex> lock(sleep_); }
      wake_.notify_all();
    }
    take_chunks(static_cast<uint32_t>(generation));
    // The chunks others took and have not finished: spin a little, then give the core away
    // (the thread holding the last chunk may be waiting for it).
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; done_.load(std::memory_order_acquire) < chunks; ++i) {
      if ((i & 63) != 63 || std::chrono::steady_clock::now() - start < kSpin) cpu_relax();
      else std::this_thread::yield();
    }
    if (error_) std::rethrow_exception(error_);
  }

 private:
  Pool() = default;

  static void run_inline(int64_t chunks, detail::ChunkFn fn, void* context) {
    const bool was = t_in_chunk;
    t_in_chunk = true;
    try {
      for (int64_t c = 0; c < chunks; ++c) fn(context, c);
    } catch (...) {
      t_in_chunk = was;
      throw;
    }
    t_in_chunk = was;
  }

  void grow(int helpers) {
    while (static_cast<int>(workers_.size()) < helpers) {
      const int index = static_cast<int>(workers_.size());
      workers_.emplace_back([this, index] { work(index); });
      workers_.back().detach();
      worker_count_.store(index + 1, std::memory_order_relaxed);
    }
  }

  /// Takes and runs chunks of `generation` until none is left.
  void take_chunks(uint32_t generation) {
    t_in_chunk = true;
    for (;;) {
      uint64_t s = state_.load(std::memory_order_acquire);
      if (generation_of(s) != generation || next_of(s) >= chunks_of(s)) break;
      if (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_relaxed)) continue;
      if (!failed_.load(std::memory_order_relaxed)) {
        try {
          fn_.load(std::memory_order_relaxed)(context_.load(std::memory_order_relaxed), next_of(s));
        } catch (...) {
          std::lock_guard<std::mutex> lock(error_mutex_);
          if (!error_) error_ = std::current_exception();
          failed_.store(true, std::memory_order_relaxed);
        }
      }
      done_.fetch_add(1, std::memory_order_acq_rel);
    }
    t_in_chunk = false;
  }

  [[noreturn]] void work(int index) {
    uint32_t seen = static_cast<uint32_t>(state_.load(std::memory_order_acquire) >> 32);
    for (;;) {
      // Wait for the next job: spin, then sleep until woken.
      const auto start = std::chrono::steady_clock::now();
      uint32_t generation = seen;
      for (int i = 0;; ++i) {
        generation = static_cast<uint32_t>(state_.load(std::memory_order_acquire) >> 32);
        if (generation != seen) break;
        if ((i & 63) == 63 && std::chrono::steady_clock::now() - start >= kSpin) {
          std::unique_lock<std::mutex> lock(sleep_);
          sleepers_.fetch_add(1, std::memory_order_seq_cst);
          wake_.wait(lock, [&] {
            generation = static_cast<uint32_t>(state_.load(std::memory_order_seq_cst) >> 32);
            return generation != seen;
          });
          sleepers_.fetch_sub(1, std::memory_order_relaxed);
          break;
        }
        cpu_relax();
      }
      seen = generation;
      // A job asks for fewer helpers than the pool has: the others stay out of it.
      if (index < helpers_.load(std::memory_order_relaxed)) take_chunks(generation);
    }
  }

  std::mutex submit_;
  std::vector<std::thread> workers_;
  std::atomic<int> worker_count_{0};
  std::atomic<uint64_t> state_{0};
  std::atomic<detail::ChunkFn> fn_{nullptr};
  std::atomic<void*> context_{nullptr};
  std::atomic<int> helpers_{0};
  std::atomic<int64_t> done_{0};
  std::atomic<bool> failed_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
  std::mutex sleep_;
  std::condition_variable wake_;
  std::atomic<int> sleepers_{0};
};

}  // namespace

int default_threads() {
  if (const int n = g_default_threads.load(std::memory_order_relaxed); n > 0) return n;
  static const int from_environment = [] {
    if (const int n = threads_from_env("ONNXTOOL_THREADS")) return n;
    if (const int n = threads_from_env("OMP_NUM_THREADS")) return n;
    return cores_available();
  }();
  return from_environment;
}

void set_default_threads(int threads) { g_default_threads.store(threads > 0 ? threads : 0, std::memory_order_relaxed); }

namespace {

/// Of `threads`, how many the machine has cores for now: the online cores less the tasks
/// runnable besides this process's running threads (this one and the pool's workers not
/// asleep), on average over the samples of the last kLoadWindow, one every kLoadSample (a busy
/// neighbour is in nearly every sample; a passing task, or a worker being woken, in some). The
/// first sample decides until the first window ends (a small model's whole benchmark can take
/// less). On a busy machine kernels then plan and run for fewer threads, down to one (two
/// threads beside one busy process on two cores: each a time slice behind the other at every
/// op, up to 1.4x slower than one thread); results do not depend on it.
/// The cores free of `others` busy tasks, or no bound when there are none (then a count above
/// the cores, asked for, stays).
int free_of(int online, int others) { return others == 0 ? 1 << 20 : std::max(1, online - others); }

int usable_threads(int threads) {
  static const int online = std::max(1, static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)));
  static std::atomic<int64_t> sampled_at{0}, window_start{0};
  static std::atomic<int> others_sum{0}, samples{0}, free_cores{1 << 20};
  // The clock read on every 64th call of a thread only (kernels ask at every op).
  thread_local uint32_t calls = 0;
  if ((calls++ & 63) != 0) return std::min(threads, free_cores.load(std::memory_order_relaxed));
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch()).count();
  int64_t last = sampled_at.load(std::memory_order_relaxed);
  if (now - last >= std::chrono::nanoseconds(kLoadSample).count() &&
      sampled_at.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
    // One thread at a time gets here (the one that moved sampled_at).
    const int runnable = runnable_tasks();
    const int others = runnable < 0 ? 0 : std::max(0, runnable - 1 - Pool::instance().awake());
    if (last == 0) free_cores.store(free_of(online, others), std::memory_order_relaxed);
    if (last == 0 || now - window_start.load(std::memory_order_relaxed) >= std::chrono::nanoseconds(kLoadWindow).count()) {
      if (const int n = samples.load(std::memory_order_relaxed); n > 0) {
        // The average, counted as a task only from 0.8 (in four samples of five): this process's
        // own threads show in some samples too (a worker being woken, the progress reporter).
        const int average = (5 * others_sum.load(std::memory_order_relaxed) + n) / (5 * n);
        free_cores.store(free_of(online, average), std::memory_order_relaxed);
      }
      others_sum.store(0, std::memory_order_relaxed);
      samples.store(0, std::memory_order_relaxed);
      window_start.store(now, std::memory_order_relaxed);
    }
    others_sum.fetch_add(others, std::memory_order_relaxed);
    samples.fetch_add(1, std::memory_order_relaxed);
  }
  return std::min(threads, free_cores.load(std::memory_order_relaxed));
}

}  // namespace

int configured_threads() { return t_scope_threads > 0 ? t_scope_threads : default_threads(); }

namespace {
std::atomic<bool> g_adapt_to_load{true};
}  // namespace

void set_load_adaptation(bool on) { g_adapt_to_load.store(on, std::memory_order_relaxed); }
bool load_adaptation() { return g_adapt_to_load.load(std::memory_order_relaxed); }

int current_threads() {
  if (t_in_chunk) return 1;
  const int threads = configured_threads();
  return threads > 1 && g_adapt_to_load.load(std::memory_order_relaxed) ? usable_threads(threads) : threads;
}

ThreadScope::ThreadScope(int threads) : before_(t_scope_threads) { t_scope_threads = threads > 0 ? threads : 0; }

ThreadScope::~ThreadScope() { t_scope_threads = before_; }

namespace detail {

void run_chunks(int64_t chunks, ChunkFn fn, void* context) {
  if (chunks <= 0) return;
  const int threads = current_threads();
  if (chunks == 1 || threads <= 1) {
    fn(context, 0);
    for (int64_t c = 1; c < chunks; ++c) fn(context, c);
    return;
  }
  for (int64_t first = 0; first < chunks; first += kMaxChunksPerJob) {
    // More chunks than a job holds: jobs of kMaxChunksPerJob, each chunk shifted back.
    if (first == 0 && chunks <= kMaxChunksPerJob) {
      Pool::instance().run(chunks, fn, context, threads);
      return;
    }
    struct Shifted {
      ChunkFn fn;
      void* context;
      int64_t first;
    } shifted{fn, context, first};
    Pool::instance().run(
        std::min(kMaxChunksPerJob, chunks - first),
        [](void* c, int64_t chunk) {
          auto* s = static_cast<Shifted*>(c);
          s->fn(s->context, s->first + chunk);
        },
        &shifted, threads);
  }
}

}  // namespace detail
}  // namespace onnxtool::runner
