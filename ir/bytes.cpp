// Bytes and MappedFile.
#include "ir/bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ir/error.h"

namespace onnxtool::ir {

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
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_input_error(path + ": cannot open: " + std::strerror(errno));
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
  }
  ::close(fd);
  return file;
}

MappedFile::~MappedFile() {
  if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

void MappedFile::advise_random(bool on) const {
  if (mapped_) ::madvise(const_cast<uint8_t*>(data_), size_, on ? MADV_RANDOM : MADV_NORMAL);
}

Bytes MappedFile::view(const std::shared_ptr<MappedFile>& file, size_t offset, size_t length) {
  return Bytes(std::shared_ptr<const void>(file, file.get()), file->data_ + offset, length);
}

}  // namespace onnxtool::ir
