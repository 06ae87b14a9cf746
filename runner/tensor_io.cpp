// .npy and .pb tensor files.
#include "runner/tensor_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "ir/error.h"
#include "ir/model_io.h"
#include "ir/output_file.h"
#include "runner/session.h"

namespace onnxtool::runner {
namespace {

struct NpyType {
  const char* descr;
  DataType type;
};

// NumPy descr strings for little-endian data ('|' where byte order does not apply).
constexpr NpyType kNpyTypes[] = {
    {"<f4", DataType::kFloat},  {"<f8", DataType::kDouble}, {"<f2", DataType::kFloat16},
    {"|i1", DataType::kInt8},   {"|u1", DataType::kUInt8},  {"<i2", DataType::kInt16},
    {"<u2", DataType::kUInt16}, {"<i4", DataType::kInt32},  {"<u4", DataType::kUInt32},
    {"<i8", DataType::kInt64},  {"<u8", DataType::kUInt64}, {"|b1", DataType::kBool},
    {"<c8", DataType::kComplex64}, {"<c16", DataType::kComplex128},
};

// Extracts the value text of 'key' in the header dict (up to the next top-level comma or brace).
std::string dict_value(const std::string& header, const std::string& key, const std::string& path) {
  const std::string quoted = "'" + key + "'";
  auto k = header.find(quoted);
  if (k == std::string::npos) throw_input_error(path + ": .npy header has no '" + key + "'");
  auto colon = header.find(':', k + quoted.size());
  if (colon == std::string::npos) throw_input_error(path + ": malformed .npy header");
  size_t i = colon + 1;
  while (i < header.size() && header[i] == ' ') ++i;
  size_t j = i;
  if (j < header.size() && header[j] == '(') {
    j = header.find(')', j);
    if (j == std::string::npos) throw_input_error(path + ": malformed .npy shape");
    return header.substr(i, j - i + 1);
  }
  while (j < header.size() && header[j] != ',' && header[j] != '}') ++j;
  std::string v = header.substr(i, j - i);
  while (!v.empty() && v.back() == ' ') v.pop_back();
  return v;
}

/// A tensor file opened for reading: a regular file (a FIFO would block forever, /dev/zero
/// would never end), read up to the size it had when opened.
class TensorFile {
 public:
  explicit TensorFile(const std::string& path) : path_(path) {
    // O_NONBLOCK: opening a FIFO must not wait for a writer before it can be refused.
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd_ < 0) {
      const int err = errno;
      throw_input_error(path + (err == ENOENT ? std::string(": no such file") : ": cannot open (" + std::string(std::strerror(err)) + ")"));
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      const int err = errno;
      ::close(fd_);
      throw_input_error(path + ": cannot read its size (" + std::strerror(err) + ")");
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw_input_error(path + (S_ISDIR(st.st_mode) ? ": is a directory, not a tensor file"
                                                     : ": not a regular file (a device, FIFO or socket), not a tensor file"));
    }
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~TensorFile() { ::close(fd_); }
  TensorFile(const TensorFile&) = delete;
  TensorFile& operator=(const TensorFile&) = delete;

  uint64_t size() const { return size_; }

  /// The next n bytes; a file that shrank since it was opened is an error naming it.
  void read(void* dst, uint64_t n) {
    auto* p = static_cast<char*>(dst);
    while (n > 0) {
      const ssize_t k = ::read(fd_, p, static_cast<size_t>(std::min<uint64_t>(n, 1u << 30)));
      if (k < 0 && errno == EINTR) continue;
      if (k < 0) throw_input_error(path_ + ": read error (" + std::strerror(errno) + ")");
      if (k == 0) throw_input_error(path_ + ": file shorter than expected (did it change while being read?)");
      p += k;
      n -= static_cast<uint64_t>(k);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

std::string read_all(const std::string& path) {
  TensorFile f(path);
  std::string data(static_cast<size_t>(f.size()), '\0');
  f.read(data.data(), f.size());
  return data;
}

}  // namespace

Tensor read_npy(const std::string& path) {
  TensorFile f(path);
  unsigned char prefix[12] = {};
  if (f.size() < 10) throw_input_error(path + ": not a .npy file (" + std::to_string(f.size()) + " bytes, bad magic)");
  f.read(prefix, 10);
  if (std::memcmp(prefix, "\x93NUMPY", 6) != 0) throw_input_error(path + ": not a .npy file (bad magic)");
  const int major = prefix[6];
  uint64_t header_len, offset;
  if (major == 1) {
    header_len = prefix[8] | static_cast<uint64_t>(prefix[9]) << 8;
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (f.size() < 12) throw_input_error(path + ": truncated .npy header");
    f.read(prefix + 10, 2);
    header_len = prefix[8] | static_cast<uint64_t>(prefix[9]) << 8 | static_cast<uint64_t>(prefix[10]) << 16 |
                 static_cast<uint64_t>(prefix[11]) << 24;
    offset = 12;
  } else {
    throw_input_error(path + ": unsupported .npy format version " + std::to_string(major));
  }
  // NumPy writes headers of a few hundred bytes; 1 MiB leaves room for any shape a tensor can
  // have (write_npy switches to version 2.0 past 64 KiB).
  if (header_len > (1u << 20) || offset + header_len > f.size())
    throw_input_error(path + ": .npy header length " + std::to_string(header_len) + " is invalid (file of " +
                      std::to_string(f.size()) + " bytes)");
  std::string header(static_cast<size_t>(header_len), '\0');
  f.read(header.data(), header_len);
  for (char& c : header)
    if (c == '\n' || c == '\r' || c == '\0') c = ' ';  // keep messages quoting the header on one line
  const std::string descr_q = dict_value(header, "descr", path);
  if (descr_q.size() < 2 || descr_q.front() != '\'' || descr_q.back() != '\'')
    throw_input_error(path + ": .npy descr must be a simple type, got " + descr_q.substr(0, 40));
  std::string descr = descr_q.substr(1, descr_q.size() - 2);
  // '<', '=' (native: little-endian here) and '|' mean the same for us; byte order does not
  // apply to one-byte types.
  if (!descr.empty() && descr[0] == '=') descr[0] = '<';
  if (descr.size() == 3 && std::strchr("<>|", descr[0]) && descr[2] == '1' && std::strchr("iub", descr[1]))
    descr[0] = '|';
  if (!descr.empty() && descr[0] == '>')
    throw_input_error(path + ": big-endian .npy data (" + descr + ") is not supported; save it little-endian");
  if (descr == "|O" || descr == "O")
    throw_input_error(path + ": .npy holds Python objects (dtype '|O'); only numeric and bool arrays are read");
  DataType type = DataType::kUndefined;
  for (const auto& t : kNpyTypes)
    if (descr == t.descr) type = t.type;
  if (type == DataType::kUndefined)
    throw_input_error(path + ": .npy dtype '" + descr.substr(0, 40) + "' is not supported");
  const std::string order = dict_value(header, "fortran_order", path);
  if (order == "True") throw_input_error(path + ": Fortran-order .npy data is not supported; save it in C order");
  if (order != "False") throw_input_error(path + ": malformed .npy fortran_order " + order.substr(0, 40));
  const std::string shape_text = dict_value(header, "shape", path);
  if (shape_text.size() < 2 || shape_text.front() != '(' || shape_text.back() != ')')
    throw_input_error(path + ": malformed .npy shape " + shape_text.substr(0, 60));
  std::vector<int64_t> shape;
  for (size_t i = 1; i + 1 < shape_text.size();) {
    while (i + 1 < shape_text.size() && (shape_text[i] == ' ' || shape_text[i] == ',')) ++i;
    if (i + 1 >= shape_text.size()) break;
    size_t j = i;
    while (j + 1 < shape_text.size() && std::isdigit(static_cast<unsigned char>(shape_text[j]))) ++j;
    if (j == i || j - i > 18) throw_input_error(path + ": malformed .npy shape " + shape_text.substr(0, 60));
    shape.push_back(std::stoll(shape_text.substr(i, j - i)));
    i = j;
  }
  int64_t count;
  try {
    count = shape_size(shape);
  } catch (const Error&) {
    throw_input_error(path + ": .npy shape " + shape_text.substr(0, 60) + " has too many elements");
  }
  const auto bytes = ir::storage_bytes(type, static_cast<uint64_t>(count));
  const uint64_t data_offset = offset + header_len;
  if (!bytes || f.size() - data_offset < *bytes)
    throw_input_error(path + ": .npy data (" + std::to_string(f.size() - data_offset) +
                      " bytes) is shorter than its shape " + shape_string(shape) + " needs");
  Tensor t(type, shape);
  if (*bytes) f.read(t.mutable_raw(), *bytes);
  if (type == DataType::kBool) {
    // NumPy bools are one byte, 0 or 1; any other byte would not be a valid bool downstream.
    auto* p = static_cast<uint8_t*>(t.mutable_raw());
    for (int64_t i = 0; i < count; ++i) p[i] = p[i] != 0;
  }
  return t;
}

void write_npy(const std::string& path, const Tensor& tensor) {
  const char* descr = nullptr;
  for (const auto& t : kNpyTypes)
    if (t.type == tensor.dtype()) descr = t.descr;
  if (!descr)
    throw_usage_error(path + ": element type " + std::string(ir::data_type_name(tensor.dtype())) +
                      " has no .npy equivalent");
  std::string shape = "(";
  for (size_t i = 0; i < tensor.rank(); ++i) shape += std::to_string(tensor.dim(i)) + (tensor.rank() == 1 || i + 1 < tensor.rank() ? "," : "");
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Version 1.0 stores the header length in 2 bytes; a longer header (a shape of thousands of
  // dims) needs version 2.0's 4 bytes.
  const bool v2 = header.size() + 1 + 64 > 0xffff;
  // Pad so that the data starts at a multiple of 64 bytes, ending the header with a newline.
  const size_t base = v2 ? 12 : 10;
  size_t total = base + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(v2 ? 2 : 1);
  out += static_cast<char>(0);
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header;
  ir::OutputFile file(path);
  file.write(out);
  file.write(tensor.raw(), tensor.bytes());
  file.commit();
}

Tensor read_pb(const std::string& path) {
  std::string data = read_all(path);
  ir::Bytes bytes = ir::Bytes::copy_of(data.data(), data.size());
  try {
    ir::Tensor t = ir::parse_tensor(bytes, path);
    if (t.data_type == 0 || !ir::is_valid_data_type(t.data_type))
      throw_input_error(path + ": tensor has no valid data type");
    if (t.is_external()) throw_input_error(path + ": tensor data stored outside the file is not supported here");
    return from_ir(t).clone();
  } catch (const Error& e) {
    // Errors from the tensor codec name the tensor, not always the file.
    const std::string msg = e.what();
    if (msg.find(path) != std::string::npos) throw;
    throw Error(e.kind(), path + ": " + msg);
  }
}

Tensor read_tensor_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw_input_error(path + ": is a directory, not a tensor file");
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".npy") return read_npy(path);
  if (ext == ".pb") return read_pb(path);
  throw_usage_error(path + ": tensor files must be .npy or .pb");
}

std::string safe_file_name(const std::string& name) {
  std::string out = name;
  for (char& c : out)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')) c = '_';
  return out;
}

}  // namespace onnxtool::runner
