// Byte ranges that keep their storage alive: a view into a mapped file, or an owned buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace onnxtool::ir {

/// An immutable byte range plus a shared owner that keeps it valid (a MappedFile, a vector...).
/// Copying a Bytes copies the pointer, never the data.
class Bytes {
 public:
  Bytes() = default;
  Bytes(std::shared_ptr<const void> owner, const uint8_t* data, size_t size)
      : owner_(std::move(owner)), data_(data), size_(size) {}

  /// Takes ownership of a buffer.
  static Bytes owned(std::vector<uint8_t> buffer);
  static Bytes copy_of(const void* data, size_t size);

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::string_view view() const { return {reinterpret_cast<const char*>(data_), size_}; }
  /// A sub-range sharing the same owner.
  Bytes slice(size_t offset, size_t length) const { return Bytes(owner_, data_ + offset, length); }

 private:
  std::shared_ptr<const void> owner_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

/// Hands the whole pages inside [data, data + size) back to the kernel (MADV_PAGEOUT) once their
/// bytes have been read or copied for good: the content stays (read again from its file, or
/// swap, if touched), the resident memory goes. For the weights of a mapped model that a
/// session copied to aligned storage, or that a quantizer has replaced. Pages shared with data
/// outside the range are left alone; kernels before Linux 5.4 ignore the advice.
void release_pages(const void* data, size_t size);

/// A read-only memory mapping of a whole regular file. Empty files map to an empty range.
class MappedFile {
 public:
  /// Maps `path`; throws Error(kInput) naming the path when it cannot.
  static std::shared_ptr<MappedFile> open(const std::string& path);
  /// Maps an open descriptor (closed here, whatever happens); `path` names it in errors.
  static std::shared_ptr<MappedFile> adopt(int fd, const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  /// A view of [offset, offset+length) that keeps this mapping alive.
  static Bytes view(const std::shared_ptr<MappedFile>& file, size_t offset, size_t length);
  /// Hints random access (no read-ahead) while on, normal access when off.
  void advise_random(bool on) const;

 private:
  MappedFile() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
};

}  // namespace onnxtool::ir
