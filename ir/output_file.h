// Every file onnxtool writes (models, their external data, tensors, reports) goes through
// OutputFile: written completely or not at all, never through a name an attacker can plant, and
// never replacing what is not a regular file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace onnxtool::ir {

/// What an OutputFile does with a symlink at its path.
enum class AtSymlink {
  kFollow,  ///< replace the file it names (a model rewritten in place, reached through a link)
  kRefuse,  ///< refuse: a name onnxtool chose itself (a side data file, a file in an output folder or
            ///< --dump-dir), where a planted link would send the bytes anywhere
};

/// A folder onnxtool writes files into (`run --output-dir`, `--dump-dir`): opened once, made
/// when missing, and every file inside is created and renamed through that open descriptor, so
/// that swapping the folder (or a parent) for a link while the command runs sends nothing
/// elsewhere.
class OutputDir {
 public:
  /// Opens `path`, making it (and missing parents) when absent. A folder this made is opened
  /// without following a link at its name. Errors (a file there, no permission) are
  /// Error(kUsage) starting with `what`.
  OutputDir(const std::string& path, const std::string& what);
  ~OutputDir();
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  /// `name` inside the folder, as a path (for messages and the command's file set).
  std::string path_of(const std::string& name) const;
  /// True when this made the folder.
  bool made() const { return made_; }
  /// True when an entry `name` (of any kind) is inside.
  bool has(const std::string& name) const;
  /// Removes the file `name` inside (never what a link there names); errors are ignored.
  void remove(const std::string& name) const;
  /// Removes the folder when this made it and it is empty (a failed command's cleanup).
  void remove_if_made_and_empty() const;

 private:
  std::string path_;
  std::string parent_;  ///< the folder holding it, where it was made
  std::string leaf_;
  int fd_ = -1;
  bool made_ = false;
};

class OutputFile {
 public:
  /// Opens `path` for writing; `what` starts every error message (e.g. "--report r.json";
  /// default: the path). Errors are Error(kInput) naming the path.
  ///  - A regular file, or a missing one in an existing directory: the bytes go to an unnamed
  ///    temporary file in the same directory (O_TMPFILE; where the filesystem lacks it, a
  ///    mkstemp file removed on failure) that replaces the target atomically at commit().
  ///    Nothing is left behind when the process dies before. A symlink is followed (the file it
  ///    names is replaced, the link stays) or refused, as `at_symlink` says.
  ///  - A file the running command read (ir/command_files.h): refused, whatever path reaches it.
  ///  - A regular file replaced keeps its mode (and its owner, when run as root); a read-only
  ///    one (no write bit) is refused. A FIFO nothing reads is refused, not waited on.
  ///  - A character device (/dev/null) or a FIFO: written in place, as a stream; it is never
  ///    replaced by a regular file.
  ///  - A directory, a block device, a socket, a dangling symlink: refused.
  explicit OutputFile(const std::string& path, const std::string& what = "", AtSymlink at_symlink = AtSymlink::kFollow);
  /// The file `name` (one path component) inside `dir`, a name onnxtool chose: as above, with a
  /// symlink refused, and every step (the temporary, the rename) done through the folder's
  /// descriptor.
  OutputFile(const OutputDir& dir, const std::string& name, const std::string& what = "");
  /// Without commit(): the temporary file disappears and the target is untouched.
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(const void* data, size_t n);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  /// Zero bytes up to `offset`.
  void pad_to(uint64_t offset);
  uint64_t written() const { return written_; }

  /// Flushes the bytes to the disk; a full disk or an I/O error is thrown here, before
  /// anything is put in place.
  void sync();
  /// Puts the file in place (after sync()): an atomic rename over the target, then the
  /// directory is synced. Streams: nothing to do. Not `durable`: neither the file nor the
  /// directory is synced (files of a debugging dump; still renamed into place whole).
  void commit(bool durable = true);

  /// Instead of commit(): keeps the bytes (after sync()) under a fresh hidden name beside the
  /// target, ".NAME.tmpXXXXXXXX", and returns its path; the target is untouched and the file is
  /// the caller's to remove. Not for streams. For replacing two files that refer to each other
  /// without a moment where they disagree (save_model).
  std::string keep_beside();

  /// True for a character device or FIFO target (written in place).
  bool is_stream() const { return stream_; }
  /// The file written: `path` with a final symlink resolved.
  const std::string& target() const { return target_; }

 private:
  std::string what_;
  std::string target_;
  /// The target's folder, opened once: the temporary is made, named and renamed through it, so
  /// a folder swapped meanwhile does not redirect the file. -1 for streams.
  int dir_fd_ = -1;
  std::string leaf_;        ///< the target's name inside dir_fd_
  std::string named_temp_;  ///< the named fallback's name inside dir_fd_; empty for O_TMPFILE and streams
  int fd_ = -1;
  bool stream_ = false;
  bool synced_ = false;
  bool replaces_ = false;  ///< an existing regular file is replaced: its mode and owner are kept
  unsigned replaced_mode_ = 0;
  unsigned replaced_uid_ = 0, replaced_gid_ = 0;
  bool committed_ = false;
  uint64_t written_ = 0;

  /// Opens the temporary for a regular (or missing) target `leaf_` in `dir_fd_`.
  void open_in_directory(AtSymlink at_symlink);
  /// `name` inside the target's folder, as a path.
  std::string beside(const std::string& name) const;
  /// Gives the new file the mode (and, as root, the owner) of the file it replaces.
  void keep_mode_and_owner();
  /// Links the unnamed (O_TMPFILE) file under a fresh unique name beside the target; returns
  /// the name (inside the target's folder).
  std::string link_fresh_name();
};

/// Writes `bytes` to `path` through an OutputFile and commits it.
void write_file(const std::string& path, std::string_view bytes, const std::string& what = "",
                AtSymlink at_symlink = AtSymlink::kFollow);

}  // namespace onnxtool::ir
