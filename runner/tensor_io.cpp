// .npy and .pb tensor files.
#include "runner/tensor_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ir/error.h"
#include "ir/model_io.h"
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

std::string read_all(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw_input_error(path + ": is a directory, not a tensor file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_input_error(path + ": cannot open");
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return data;
}

}  // namespace

Tensor read_npy(const std::string& path) {
  const std::string data = read_all(path);
  if (data.size() < 10 || std::memcmp(data.data(), "\x93NUMPY", 6) != 0)
    throw_input_error(path + ": not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(data[6]);
  size_t header_len, offset;
  if (major == 1) {
    header_len = static_cast<unsigned char>(data[8]) | static_cast<size_t>(static_cast<unsigned char>(data[9])) << 8;
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12) throw_input_error(path + ": truncated .npy header");
    uint32_t n;
    std::memcpy(&n, data.data() + 8, 4);
    header_len = n;
    offset = 12;
  } else {
    throw_input_error(path + ": unsupported .npy format version " + std::to_string(major));
  }
  if (header_len > 65536 || offset + header_len > data.size())
    throw_input_error(path + ": .npy header length " + std::to_string(header_len) + " is invalid");
  const std::string header = data.substr(offset, header_len);
  const std::string descr_q = dict_value(header, "descr", path);
  if (descr_q.size() < 2 || descr_q.front() != '\'' || descr_q.back() != '\'')
    throw_input_error(path + ": .npy descr must be a simple type, got " + descr_q);
  std::string descr = descr_q.substr(1, descr_q.size() - 2);
  // '<' and '|' and '=' (native, little-endian here) mean the same for us.
  if (!descr.empty() && descr[0] == '=') descr[0] = '<';
  if (descr == "<i1" || descr == "<u1" || descr == "<b1") descr[0] = '|';
  if (!descr.empty() && descr[0] == '>' && descr.substr(1) != "i1" && descr.substr(1) != "u1")
    throw_input_error(path + ": big-endian .npy data (" + descr + ") is not supported");
  DataType type = DataType::kUndefined;
  for (const auto& t : kNpyTypes)
    if (descr == t.descr) type = t.type;
  if (type == DataType::kUndefined) throw_input_error(path + ": .npy dtype '" + descr + "' is not supported");
  if (dict_value(header, "fortran_order", path) != "False")
    throw_input_error(path + ": Fortran-order .npy data is not supported");
  const std::string shape_text = dict_value(header, "shape", path);
  std::vector<int64_t> shape;
  for (size_t i = 1; i + 1 < shape_text.size();) {
    while (i + 1 < shape_text.size() && (shape_text[i] == ' ' || shape_text[i] == ',')) ++i;
    if (i + 1 >= shape_text.size()) break;
    size_t j = i;
    while (j + 1 < shape_text.size() && std::isdigit(static_cast<unsigned char>(shape_text[j]))) ++j;
    if (j == i || j - i > 18) throw_input_error(path + ": malformed .npy shape " + shape_text);
    shape.push_back(std::stoll(shape_text.substr(i, j - i)));
    i = j;
  }
  int64_t count;
  try {
    count = shape_size(shape);
  } catch (const Error&) {
    throw_input_error(path + ": .npy shape " + shape_text + " has too many elements");
  }
  auto bytes = ir::storage_bytes(type, static_cast<uint64_t>(count));
  const size_t data_offset = offset + header_len;
  if (!bytes || data.size() - data_offset < *bytes)
    throw_input_error(path + ": .npy data is shorter than its shape " + shape_string(shape) + " needs");
  Tensor t(type, shape);
  if (*bytes) std::memcpy(t.mutable_raw(), data.data() + data_offset, static_cast<size_t>(*bytes));
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
  // Pad so that the data starts at a multiple of 64 bytes, ending the header with a newline.
  const size_t base = 10;
  size_t total = base + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(1);
  out += static_cast<char>(0);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw_usage_error(path + ": cannot write");
    f.write(out.data(), static_cast<std::streamsize>(out.size()));
    f.write(static_cast<const char*>(tensor.raw()), static_cast<std::streamsize>(tensor.bytes()));
    if (!f) {
      std::remove(tmp.c_str());
      throw_usage_error(path + ": write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw_usage_error(path + ": cannot rename into place");
  }
}

Tensor read_pb(const std::string& path) {
  std::string data = read_all(path);
  ir::Bytes bytes = ir::Bytes::copy_of(data.data(), data.size());
  ir::Tensor t = ir::parse_tensor(bytes, path);
  if (t.data_type == 0 || !ir::is_valid_data_type(t.data_type))
    throw_input_error(path + ": tensor has no valid data type");
  return from_ir(t).clone();
}

Tensor read_tensor_file(const std::string& path) {
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
