// Safe, atomic output files.
#include "ir/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include "ir/command_files.h"
#include "ir/error.h"

namespace onnxtool::ir {
namespace {

std::string directory_of(const std::string& path) {
  const auto parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

std::string temp_name(const std::string& target, const std::string& suffix) {
  const std::filesystem::path t(target);
  // A file name is at most 255 bytes (NAME_MAX): a target name near it (a tensor named by a
  // long tf2onnx scope) keeps its first 200 bytes in the temporary's name, the suffix unique.
  std::string stem = t.filename().string();
  if (stem.size() > 200) stem.resize(200);
  return (std::filesystem::path(directory_of(target)) / ("." + stem + ".tmp" + suffix)).string();
}

std::string random_suffix() {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::random_device device;
  std::string s(8, 'x');
  for (char& c : s) c = kChars[device() % (sizeof kChars - 1)];
  return s;
}

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

void sync_directory(const std::string& path) {
  const int dfd = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;
  ::fsync(dfd);
  ::close(dfd);
}

}  // namespace

OutputFile::OutputFile(const std::string& path, const std::string& what, AtSymlink at_symlink)
    : what_(what.empty() ? path : what) {
  if (path.empty()) throw_usage_error(what_ + ": empty output path");
  target_ = path;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    // A name onnxtool chose: a link there was planted, not asked for. (The rename at commit()
    // replaces the directory entry and never follows a link placed there later.)
    if (at_symlink == AtSymlink::kRefuse)
      throw_input_error(what_ + ": is a symlink; onnxtool does not write a file it names itself through one (remove the link)");
    // Replace the file the link names, not the link (an --in-place model reached through one).
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved)) {
      target_ = resolved;
    } else if (!(::stat(path.c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)))) {
      // (/dev/stdout on a pipe links to "pipe:[N]", which resolves to no path but opens.)
      throw_input_error(what_ + ": is a symlink to a missing file (" + std::strerror(errno) + ")");
    }
  }
  if (::stat(target_.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw_input_error(what_ + ": is a directory");
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
      // Written where it is: replacing /dev/null with a regular file (as root) breaks the system.
      // O_NONBLOCK: a FIFO nobody reads is refused (ENXIO) rather than waited on forever.
      fd_ = ::open(target_.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
      if (fd_ < 0 && errno == ENXIO) throw_input_error(what_ + ": is a FIFO that nothing reads");
      if (fd_ < 0) throw_input_error(what_ + ": cannot open for writing: " + std::strerror(errno));
      ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
      stream_ = true;
      return;
    }
    if (!S_ISREG(st.st_mode)) throw_input_error(what_ + ": not a regular file, character device or FIFO");
    check_not_read(static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), what_);
    // A file nobody may write is not replaced behind its owner's back (root could).
    if ((st.st_mode & 0222) == 0)
      throw_input_error(what_ + ": is read-only (mode " + mode_text(st.st_mode) + "); make it writable to replace it");
    replaced_mode_ = st.st_mode & 07777;
    replaced_uid_ = st.st_uid;
    replaced_gid_ = st.st_gid;
    replaces_ = true;
  } else if (errno != ENOENT) {
    throw_input_error(what_ + ": " + std::strerror(errno));
  }
  const std::string dir = directory_of(target_);
  // O_TMPFILE: the file has no name until commit() links it, so a killed process leaves nothing.
  fd_ = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
  if (fd_ >= 0) return;
  if (errno == ENOENT || errno == ENOTDIR)
    throw_input_error(what_ + ": the directory " + dir + " does not exist");
  // The filesystem has no O_TMPFILE (EOPNOTSUPP, EISDIR on old kernels...): a named temporary,
  // created exclusively (never through a planted symlink) and removed on failure.
  std::string name = temp_name(target_, "XXXXXX");
  fd_ = ::mkstemp(name.data());
  if (fd_ < 0) throw_input_error(what_ + ": cannot create a file there: " + std::strerror(errno));
  named_temp_ = name;
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd_, 0666 & ~mask);
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !named_temp_.empty()) ::unlink(named_temp_.c_str());
}

void OutputFile::write(const void* data, size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::write(fd_, p, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      // EFAULT: the bytes come from a mapped input that was truncated meanwhile.
      if (errno == EFAULT)
        throw_input_error(what_ + ": write failed: an input file changed (truncated?) while it was being read");
      throw_input_error(what_ + ": write failed: " + std::strerror(errno));
    }
    p += k;
    n -= static_cast<size_t>(k);
    written_ += static_cast<uint64_t>(k);
  }
}

void OutputFile::pad_to(uint64_t offset) {
  static const char zeros[4096] = {};
  while (written_ < offset) write(zeros, static_cast<size_t>(std::min<uint64_t>(sizeof zeros, offset - written_)));
}

void OutputFile::keep_mode_and_owner() {
  if (stream_ || !replaces_) return;
  // The file replacing another keeps its mode and, where the process may set it (root), its
  // owner: a 0600 file of another user does not become a 0644 file of root.
  if (::geteuid() == 0 && (replaced_uid_ != ::geteuid() || replaced_gid_ != ::getegid()))
    (void)::fchown(fd_, replaced_uid_, replaced_gid_);
  ::fchmod(fd_, replaced_mode_);
}

void OutputFile::sync() {
  keep_mode_and_owner();
  // Streams (a pipe, /dev/null) have nothing to flush, and fsync on them fails with EINVAL.
  if (!stream_ && ::fsync(fd_) != 0) throw_input_error(what_ + ": write failed: " + std::strerror(errno));
  synced_ = true;
}

void OutputFile::commit(bool durable) {
  if (!synced_) {
    if (durable) sync();
    else keep_mode_and_owner();
  }
  if (stream_) {
    committed_ = true;
    return;
  }
  if (!named_temp_.empty()) {
    if (::rename(named_temp_.c_str(), target_.c_str()) != 0)
      throw_input_error(what_ + ": cannot rename into place: " + std::strerror(errno));
  } else {
    // Give the unnamed file a fresh unique name, then rename it over the target: linkat cannot
    // replace an existing file. The name exists only between these two calls.
    const std::string name = link_fresh_name();
    if (::rename(name.c_str(), target_.c_str()) != 0) {
      const int err = errno;
      ::unlink(name.c_str());
      throw_input_error(what_ + ": cannot rename into place: " + std::strerror(err));
    }
  }
  committed_ = true;
  ::close(fd_);
  fd_ = -1;
  if (durable) sync_directory(target_);
}

std::string OutputFile::link_fresh_name() {
  const std::string proc = "/proc/self/fd/" + std::to_string(fd_);
  std::string name;
  int rc = -1;
  for (int attempt = 0; attempt < 100 && rc != 0; ++attempt) {
    name = temp_name(target_, random_suffix());
    rc = ::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW);
    if (rc != 0 && errno == ENOENT)  // no /proc: AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH
      rc = ::linkat(fd_, "", AT_FDCWD, name.c_str(), AT_EMPTY_PATH);
    if (rc != 0 && errno != EEXIST) break;
  }
  if (rc != 0) throw_input_error(what_ + ": cannot put the file in place: " + std::strerror(errno));
  return name;
}

std::string OutputFile::keep_beside() {
  if (stream_) throw_usage_error(what_ + ": a stream has no name to keep");
  if (!synced_) sync();
  std::string name;
  if (!named_temp_.empty()) {
    name = named_temp_;  // already a fresh hidden name beside the target
  } else {
    name = link_fresh_name();
  }
  committed_ = true;
  ::close(fd_);
  fd_ = -1;
  sync_directory(name);
  return name;
}

void write_file(const std::string& path, std::string_view bytes, const std::string& what, AtSymlink at_symlink) {
  OutputFile out(path, what, at_symlink);
  out.write(bytes);
  out.commit();
}

}  // namespace onnxtool::ir
