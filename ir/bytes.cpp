// Bytes and MappedFile.
#include "ir/bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>

#include "ir/command_files.h"
#include "ir/error.h"

namespace onnxtool::ir {
namespace {

// A file truncated by someone else while it is mapped raises SIGBUS on the next access to a
// page past its new end. The mapped ranges are kept here so that the handler can name the file
// and exit like any other input error (exit 2, one line) instead of dying with a signal.
struct MappedRange {
  std::atomic<uintptr_t> begin{0};
  std::atomic<uintptr_t> end{0};
  char path[512] = {};
};
constexpr size_t kMaxRanges = 256;
MappedRange g_ranges[kMaxRanges];
std::mutex g_ranges_mutex;

static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<uintptr_t>::is_always_lock_free,
              "the SIGBUS handler needs lock-free atomics");

void on_sigbus(int sig, siginfo_t* info, void*) {
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (const auto& r : g_ranges) {
    const uintptr_t b = r.begin.load(), e = r.end.load();
    if (b == 0 || addr < b || addr >= e) continue;
    // Only async-signal-safe calls here: write(2), pause(2), _exit(2). Threads reading the same
    // mapping fault together: the first one writes the line and ends the process; the others
    // wait for that instead of interleaving their lines with it.
    static std::atomic<bool> reporting{false};
    if (reporting.exchange(true))
      for (;;) ::pause();
    static const char kPrefix[] = "onnxtool: ";
    static const char kSuffix[] = ": the file changed (truncated?) while it was being read\n";
    (void)!::write(2, kPrefix, sizeof kPrefix - 1);
    (void)!::write(2, r.path, ::strnlen(r.path, sizeof r.path));
    (void)!::write(2, kSuffix, sizeof kSuffix - 1);
    ::_exit(2);
  }
  // Not one of our mappings: a real fault, reported as the default action would.
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void register_range(const uint8_t* data, size_t size, const std::string& path) {
  static std::once_flag installed;
  std::call_once(installed, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGBUS, &sa, nullptr);
  });
  std::lock_guard<std::mutex> lock(g_ranges_mutex);
  for (auto& r : g_ranges) {
    if (r.begin.load() != 0) continue;
    ::strncpy(r.path, path.c_str(), sizeof r.path - 1);
    r.end.store(reinterpret_cast<uintptr_t>(data) + size);
    r.begin.store(reinterpret_cast<uintptr_t>(data));
    return;
  }
  // More than kMaxRanges files mapped at once: this one is still read, only unnamed on SIGBUS.
}

void unregister_range(const uint8_t* data) {
  std::lock_guard<std::mutex> lock(g_ranges_mutex);
  for (auto& r : g_ranges) {
    if (r.begin.load() != reinterpret_cast<uintptr_t>(data)) continue;
    r.begin.store(0);
    r.end.store(0);
    return;
  }
}

}  // namespace

Bytes Bytes::owned(std::vector<uint8_t> buffer) {
  auto holder = std::make_shared<std::vector<uint8_t>>(std::move(buffer));
  const uint8_t* data = holder->data();
  const size_t size = holder->size();
  return Bytes(std::shared_ptr<const void>(holder, holder.get()), data, size);
}

Bytes Bytes::copy_of(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  return owned(std::vector<uint8_t>(p, p + size));
}

std::shared_ptr<MappedFile> MappedFile::open(const std::string& path) {
  // O_NONBLOCK: a FIFO must be refused below, not waited on.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throw_input_error(path + ": cannot open: " + std::strerror(errno));
  return adopt(fd, path);
}

std::shared_ptr<MappedFile> MappedFile::adopt(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw_input_error(path + ": cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw_input_error(path + ": not a regular file");
  }
  note_input_file(static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), path);
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = static_cast<size_t>(st.st_size);
  if (file->size_ > 0) {
    void* p = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw_input_error(path + ": cannot map: " + std::strerror(err));
    }
    file->data_ = static_cast<const uint8_t*>(p);
    file->mapped_ = true;
    register_range(file->data_, file->size_, path);
  }
  ::close(fd);
  return file;
}

MappedFile::~MappedFile() {
  if (!mapped_) return;
  unregister_range(data_);
  ::munmap(const_cast<uint8_t*>(data_), size_);
}

void release_pages(const void* data, size_t size) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const auto end = (reinterpret_cast<uintptr_t>(data) + size) / page * page;
#ifdef MADV_PAGEOUT
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_PAGEOUT);
#else
  (void)begin;
  (void)end;
#endif
}

void MappedFile::advise_random(bool on) const {
  if (mapped_) ::madvise(const_cast<uint8_t*>(data_), size_, on ? MADV_RANDOM : MADV_NORMAL);
}

Bytes MappedFile::view(const std::shared_ptr<MappedFile>& file, size_t offset, size_t length) {
  return Bytes(std::shared_ptr<const void>(file, file.get()), file->data_ + offset, length);
}

}  // namespace onnxtool::ir
