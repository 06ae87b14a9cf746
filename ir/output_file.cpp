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

std::string leaf_of(const std::string& path) { return std::filesystem::path(path).filename().string(); }

/// ".NAME.tmpSUFFIX": a hidden temporary beside NAME. A file name is at most 255 bytes
/// (NAME_MAX): a target name near it (a tensor named by a long tf2onnx scope) keeps its first
/// 200 bytes in the temporary's name, the suffix unique.
std::string temp_leaf(std::string leaf, const std::string& suffix) {
  if (leaf.size() > 200) leaf.resize(200);
  return "." + leaf + ".tmp" + suffix;
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

std::string join(const std::string& dir, const std::string& name) {
  return dir == "." ? name : (std::filesystem::path(dir) / name).string();
}

}  // namespace

OutputDir::OutputDir(const std::string& path, const std::string& what) : path_(path) {
  namespace fs = std::filesystem;
  if (path.empty()) throw_usage_error(what + ": empty folder name");
  const fs::path p = fs::path(path).lexically_normal();
  leaf_ = p.filename().string();
  if (leaf_.empty() || leaf_ == "." || leaf_ == "..") {
    // "out/", ".", "..": a folder that exists, opened as it is.
    fd_ = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0) throw_usage_error(what + ": cannot open it (" + std::strerror(errno) + ")");
    return;
  }
  parent_ = p.parent_path().empty() ? std::string(".") : p.parent_path().string();
  std::error_code ec;
  fs::create_directories(parent_, ec);
  if (ec) throw_usage_error(what + ": cannot create " + parent_ + " (" + ec.message() + ")");
  const int parent_fd = ::open(parent_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent_fd < 0) throw_usage_error(what + ": cannot open " + parent_ + " (" + std::strerror(errno) + ")");
  if (::mkdirat(parent_fd, leaf_.c_str(), 0777) == 0) {
    made_ = true;
    // The folder just made, never a link put at its name since.
    fd_ = ::openat(parent_fd, leaf_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  } else if (errno == EEXIST) {
    // A folder the user named (a link to one is the user's choice), pinned from here on.
    fd_ = ::openat(parent_fd, leaf_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0 && errno == ENOTDIR) {
      ::close(parent_fd);
      throw_usage_error(what + ": exists and is not a directory");
    }
  } else {
    const int err = errno;
    ::close(parent_fd);
    throw_usage_error(what + ": cannot create it (" + std::strerror(err) + ")");
  }
  const int err = errno;
  ::close(parent_fd);
  if (fd_ < 0) throw_usage_error(what + ": cannot open it (" + std::strerror(err) + ")");
}

OutputDir::~OutputDir() {
  if (fd_ >= 0) ::close(fd_);
}

std::string OutputDir::path_of(const std::string& name) const { return join(path_, name); }

bool OutputDir::has(const std::string& name) const {
  struct stat st {};
  return ::fstatat(fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

void OutputDir::remove(const std::string& name) const { ::unlinkat(fd_, name.c_str(), 0); }

void OutputDir::remove_if_made_and_empty() const {
  if (!made_) return;
  const int parent_fd = ::open(parent_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent_fd < 0) return;
  // Only the folder this made: the same inode, and empty (rmdir refuses otherwise).
  struct stat mine {}, there {};
  if (::fstat(fd_, &mine) == 0 && ::fstatat(parent_fd, leaf_.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0 &&
      mine.st_dev == there.st_dev && mine.st_ino == there.st_ino)
    ::unlinkat(parent_fd, leaf_.c_str(), AT_REMOVEDIR);
  ::close(parent_fd);
}

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
  if (::stat(target_.c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    // Written where it is: replacing /dev/null with a regular file (as root) breaks the system.
    // O_NONBLOCK: a FIFO nobody reads is refused (ENXIO) rather than waited on forever.
    fd_ = ::open(target_.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0 && errno == ENXIO) throw_input_error(what_ + ": is a FIFO that nothing reads");
    if (fd_ < 0) throw_input_error(what_ + ": cannot open for writing: " + std::strerror(errno));
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
    stream_ = true;
    return;
  }
  const auto parent = std::filesystem::path(target_).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  leaf_ = leaf_of(target_);
  if (leaf_.empty() || leaf_ == "." || leaf_ == "..") throw_input_error(what_ + ": is a directory");
  dir_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) {
    if (errno == ENOENT || errno == ENOTDIR) throw_input_error(what_ + ": the directory " + dir + " does not exist");
    throw_input_error(what_ + ": cannot open the directory " + dir + ": " + std::strerror(errno));
  }
  // Resolved above: a link found at the name now was put there since, and is refused.
  open_in_directory(AtSymlink::kRefuse);
}

OutputFile::OutputFile(const OutputDir& dir, const std::string& name, const std::string& what)
    : what_(what.empty() ? dir.path_of(name) : what), target_(dir.path_of(name)), leaf_(name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    throw_usage_error(what_ + ": not a file name");
  dir_fd_ = ::fcntl(dir.fd(), F_DUPFD_CLOEXEC, 0);
  if (dir_fd_ < 0) throw_input_error(what_ + ": " + std::strerror(errno));
  open_in_directory(AtSymlink::kRefuse);
}

void OutputFile::open_in_directory(AtSymlink at_symlink) {
  struct stat st {};
  if (::fstatat(dir_fd_, leaf_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(st.st_mode) && at_symlink == AtSymlink::kRefuse)
      throw_input_error(what_ + ": is a symlink; onnxtool does not write a file it names itself through one (remove the link)");
    if (S_ISDIR(st.st_mode)) throw_input_error(what_ + ": is a directory");
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
  // O_TMPFILE: the file has no name until commit() links it, so a killed process leaves nothing.
  fd_ = ::openat(dir_fd_, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
  if (fd_ >= 0) return;
  // The filesystem has no O_TMPFILE (EOPNOTSUPP, EISDIR on old kernels...): a named temporary,
  // created exclusively (never through a planted symlink) and removed on failure.
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    named_temp_ = temp_leaf(leaf_, random_suffix());
    fd_ = ::openat(dir_fd_, named_temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) {
    named_temp_.clear();
    throw_input_error(what_ + ": cannot create a file there: " + std::strerror(errno));
  }
}

std::string OutputFile::beside(const std::string& name) const {
  const auto parent = std::filesystem::path(target_).parent_path();
  return parent.empty() ? name : (parent / name).string();
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !named_temp_.empty()) ::unlinkat(dir_fd_, named_temp_.c_str(), 0);
  if (dir_fd_ >= 0) ::close(dir_fd_);
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
  // The unnamed file first gets a fresh unique name (linkat cannot replace an existing file);
  // that name exists only until the rename over the target.
  const std::string name = named_temp_.empty() ? link_fresh_name() : named_temp_;
  if (::renameat(dir_fd_, name.c_str(), dir_fd_, leaf_.c_str()) != 0) {
    const int err = errno;
    if (named_temp_.empty()) ::unlinkat(dir_fd_, name.c_str(), 0);
    throw_input_error(what_ + ": cannot rename into place: " + std::strerror(err));
  }
  committed_ = true;
  ::close(fd_);
  fd_ = -1;
  if (durable) ::fsync(dir_fd_);
}

std::string OutputFile::link_fresh_name() {
  const std::string proc = "/proc/self/fd/" + std::to_string(fd_);
  std::string name;
  int rc = -1;
  for (int attempt = 0; attempt < 100 && rc != 0; ++attempt) {
    name = temp_leaf(leaf_, random_suffix());
    rc = ::linkat(AT_FDCWD, proc.c_str(), dir_fd_, name.c_str(), AT_SYMLINK_FOLLOW);
    if (rc != 0 && errno == ENOENT)  // no /proc: AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH
      rc = ::linkat(fd_, "", dir_fd_, name.c_str(), AT_EMPTY_PATH);
    if (rc != 0 && errno != EEXIST) break;
  }
  if (rc != 0) throw_input_error(what_ + ": cannot put the file in place: " + std::strerror(errno));
  return name;
}

std::string OutputFile::keep_beside() {
  if (stream_) throw_usage_error(what_ + ": a stream has no name to keep");
  if (!synced_) sync();
  // The named fallback's temporary already is a fresh hidden name beside the target.
  const std::string name = named_temp_.empty() ? link_fresh_name() : named_temp_;
  committed_ = true;
  ::close(fd_);
  fd_ = -1;
  ::fsync(dir_fd_);
  return beside(name);
}

void write_file(const std::string& path, std::string_view bytes, const std::string& what, AtSymlink at_symlink) {
  OutputFile out(path, what, at_symlink);
  out.write(bytes);
  out.commit();
}

}  // namespace onnxtool::ir
