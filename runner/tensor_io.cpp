// .npy and .pb tensor files.
#include "runner/tensor_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "ir/error.h"
#include "ir/model_io.h"
#include "ir/command_files.h"
#include "ir/output_file.h"
#include "ir/wire.h"
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
  // numpy takes the last of two equal keys; a reader taking the first would see another tensor.
  if (header.find(quoted, k + quoted.size()) != std::string::npos)
    throw_input_error(path + ": .npy header gives '" + key + "' twice");
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
    ir::note_input_file(static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), path);
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

// ---------------------------------------------------------------- strings as UTF-8 and UTF-32

void append_utf8(std::string& out, uint32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xc0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xe0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  }
}

bool is_code_point(uint32_t c) { return c <= 0x10ffff && !(c >= 0xd800 && c <= 0xdfff); }

/// The code points of UTF-8 text; false for anything else (overlong forms, surrogates, bytes
/// cut short), which a NumPy unicode array could not hold.
bool utf8_code_points(const std::string& s, std::vector<uint32_t>& out) {
  out.clear();
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const int extra = b < 0x80 ? 0 : (b & 0xe0) == 0xc0 ? 1 : (b & 0xf0) == 0xe0 ? 2 : (b & 0xf8) == 0xf0 ? 3 : -1;
    if (extra < 0 || i + static_cast<size_t>(extra) >= s.size()) return false;
    uint32_t c = extra == 0 ? b : b & (0x3f >> extra);
    for (int k = 1; k <= extra; ++k) {
      const auto x = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((x & 0xc0) != 0x80) return false;
      c = c << 6 | (x & 0x3f);
    }
    constexpr uint32_t kSmallest[] = {0, 0x80, 0x800, 0x10000};
    if (c < kSmallest[extra] || !is_code_point(c)) return false;
    out.push_back(c);
    i += static_cast<size_t>(extra) + 1;
  }
  return true;
}

/// "{'descr': ..., 'fortran_order': False, 'shape': (...), }" with its magic, version and
/// length, padded so that the data starts at a multiple of 64 bytes.
std::string npy_header(const std::string& descr, const std::vector<int64_t>& dims) {
  std::string shape = "(";
  for (size_t i = 0; i < dims.size(); ++i) shape += std::to_string(dims[i]) + (dims.size() == 1 || i + 1 < dims.size() ? "," : "");
  shape += ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Version 1.0 stores the header length in 2 bytes; a longer header (a shape of thousands of
  // dims) needs version 2.0's 4 bytes.
  const bool v2 = header.size() + 1 + 64 > 0xffff;
  const size_t base = v2 ? 12 : 10;
  const size_t total = base + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(v2 ? 2 : 1);
  out += static_cast<char>(0);
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header;
}

// ---------------------------------------------------------------- SequenceProto, OptionalProto

// SequenceProto and OptionalProto share their fields: 1 name, 2 elem_type, and the values in
// field elem_type + 2 (3 tensors, 4 sparse tensors, 5 sequences, 6 maps, 7 optionals).
enum ElemKind : uint64_t { kElemUndefined = 0, kElemTensor = 1, kElemSparse = 2, kElemSequence = 3, kElemMap = 4, kElemOptional = 5 };

const char* elem_kind_name(uint64_t kind) {
  constexpr const char* kNames[] = {"undefined", "tensor", "sparse tensor", "sequence", "map", "optional"};
  return kind <= kElemOptional ? kNames[kind] : "unknown";
}

struct Container {
  uint64_t elem_type = kElemUndefined;
  std::vector<ir::Bytes> values;
};

/// Reads the fields of a SequenceProto or OptionalProto; "" or why the bytes are not one.
std::string parse_container(const ir::Bytes& bytes, Container& c) {
  try {
    ir::wire::Reader r(bytes.data(), bytes.data() + bytes.size(), bytes.data());
    uint32_t field;
    int wt;
    std::vector<uint32_t> value_fields;
    while (r.next(field, wt)) {
      if (field == 1 && wt == ir::wire::kLengthDelimited) {
        r.bytes();
      } else if (field == 2 && wt == ir::wire::kVarint) {
        c.elem_type = r.varint();
      } else if (field >= 3 && field <= 7 && wt == ir::wire::kLengthDelimited) {
        const std::string_view v = r.bytes();
        c.values.push_back(bytes.slice(static_cast<size_t>(reinterpret_cast<const uint8_t*>(v.data()) - bytes.data()), v.size()));
        value_fields.push_back(field);
      } else {
        return "field " + std::to_string(field) + " (wire type " + std::to_string(wt) + ") belongs to neither";
      }
    }
    if (c.elem_type > kElemOptional) return "elem_type " + std::to_string(c.elem_type) + " is not a value kind";
    for (uint32_t f : value_fields)
      if (f != c.elem_type + 2)
        return std::string("it holds a ") + elem_kind_name(f - 2) + " but its elem_type says " + elem_kind_name(c.elem_type);
  } catch (const ir::wire::ParseError& e) {
    return "protobuf parse error at byte " + std::to_string(e.offset) + ": " + e.message;
  }
  return "";
}

/// " (the model declares seq(float))", or "" when it declares nothing.
std::string declared_as(const ir::TypeInfo& declared) {
  return declared.kind == ir::TypeInfo::Kind::kUnset ? "" : " (the model declares " + declared.to_string() + ")";
}

/// A TensorProto's tensor. The ONNX test data stores bfloat16 as uint16 patterns (it predates
/// NumPy's bfloat16): read as bfloat16 where the model declares bfloat16.
Tensor tensor_message(const ir::Bytes& bytes, const std::string& label, const ir::TypeInfo& declared) {
  std::string why;
  try {
    ir::Tensor t = ir::parse_tensor(bytes, label);
    if (t.data_type == 0 || !ir::is_valid_data_type(t.data_type)) throw_input_error(label + ": tensor has no valid data type");
    // A segment is what the values of a SequenceProto or OptionalProto look like to the tensor
    // parser; tensor files never have one.
    if (!t.segment) {
      Tensor out = from_ir(t).clone();
      if (declared.is_tensor() && declared.data_type() == DataType::kBFloat16 && out.dtype() == DataType::kUInt16) {
        Tensor b(DataType::kBFloat16, out.shape());
        std::memcpy(b.mutable_raw(), out.raw(), out.bytes());
        return b;
      }
      return out;
    }
    why = label + ": a TensorProto with a segment is not supported";
  } catch (const Error& e) {
    // Errors from the tensor codec name the tensor, not always the file.
    const std::string msg = e.what();
    why = msg.find(label) != std::string::npos ? msg : label + ": " + msg;
  }
  Container c;
  if (parse_container(bytes, c).empty() && (c.elem_type != kElemUndefined || !c.values.empty()))
    throw_input_error(label + ": holds a SequenceProto or OptionalProto, not a TensorProto" + declared_as(declared));
  throw_input_error(why);
}

/// True when the bytes are a TensorProto (for messages about a file of the wrong kind).
bool is_tensor_message(const ir::Bytes& bytes) {
  try {
    tensor_message(bytes, "", {});
    return true;
  } catch (const Error&) {
    return false;
  }
}

/// Parses a SequenceProto or OptionalProto, naming the file and `expected` kind when it is not.
Container container_message(const ir::Bytes& bytes, const std::string& label, const char* expected,
                            const ir::TypeInfo& declared) {
  Container c;
  const std::string why = parse_container(bytes, c);
  if (why.empty()) return c;
  if (is_tensor_message(bytes))
    throw_input_error(label + ": holds a TensorProto, not a " + expected + declared_as(declared));
  throw_input_error(label + ": not a valid " + expected + ": " + why);
}

const ir::TypeInfo& element_type(const ir::TypeInfo& declared) {
  static const ir::TypeInfo unset;
  return declared.elem ? *declared.elem : unset;
}

Value sequence_message(const ir::Bytes& bytes, const std::string& label, const ir::TypeInfo& declared) {
  const Container c = container_message(bytes, label, "SequenceProto", declared);
  if (c.elem_type != kElemTensor && !(c.elem_type == kElemUndefined && c.values.empty()))
    throw_input_error(label + ": a sequence of " + elem_kind_name(c.elem_type) + " values; the runner's sequences hold tensors");
  const ir::TypeInfo& elem = element_type(declared);
  std::vector<Tensor> items;
  for (size_t i = 0; i < c.values.size(); ++i) {
    items.push_back(tensor_message(c.values[i], label + " item " + std::to_string(i), elem));
    if (items[i].dtype() != items[0].dtype())
      throw_input_error(label + ": a sequence of mixed element types (item 0 is " + items[0].describe() + ", item " +
                        std::to_string(i) + " is " + items[i].describe() + ")");
  }
  const DataType declared_dtype = elem.is_tensor() ? elem.data_type() : DataType::kUndefined;
  if (declared_dtype != DataType::kUndefined && !items.empty() && items[0].dtype() != declared_dtype)
    throw_input_error(label + ": a sequence of " + std::string(ir::data_type_name(items[0].dtype())) +
                      " tensors" + declared_as(declared));
  const DataType dtype = items.empty() ? declared_dtype : items[0].dtype();
  return Value::of_sequence(std::move(items), dtype);
}

Value optional_of(std::shared_ptr<Value> held, DataType elem) {
  Value v;
  v.kind = Value::Kind::kOptional;
  v.optional = std::move(held);
  v.elem_type = elem;
  return v;
}

Value optional_message(const ir::Bytes& bytes, const std::string& label, const ir::TypeInfo& declared) {
  const ir::TypeInfo& elem = element_type(declared);
  const DataType elem_dtype = elem.is_tensor() ? elem.data_type() : DataType::kUndefined;
  Container c;
  // A bare tensor for an optional tensor is a present optional, as a .npy file is.
  if (!parse_container(bytes, c).empty() && elem.kind != ir::TypeInfo::Kind::kSequence && is_tensor_message(bytes))
    return optional_of(std::make_shared<Value>(Value::of(tensor_message(bytes, label, elem))), elem_dtype);
  c = container_message(bytes, label, "OptionalProto", declared);
  if (c.values.size() > 1)
    throw_input_error(label + ": an OptionalProto holds at most one value, this one " + std::to_string(c.values.size()));
  if (c.values.empty()) return optional_of(nullptr, elem_dtype);
  if (c.elem_type == kElemTensor) {
    if (elem.kind == ir::TypeInfo::Kind::kSequence)
      throw_input_error(label + ": an optional tensor" + declared_as(declared));
    return optional_of(std::make_shared<Value>(Value::of(tensor_message(c.values[0], label, elem))), elem_dtype);
  }
  if (c.elem_type == kElemSequence) {
    if (elem.is_tensor()) throw_input_error(label + ": an optional sequence" + declared_as(declared));
    Value seq = sequence_message(c.values[0], label, elem);
    const DataType dtype = seq.elem_type;
    return optional_of(std::make_shared<Value>(std::move(seq)), dtype);
  }
  throw_input_error(label + std::string(": an optional ") + elem_kind_name(c.elem_type) + "; the runner's optionals hold a tensor or a sequence");
}

/// The serialized message of a value: TensorProto, SequenceProto or OptionalProto.
std::string serialize_value(const Value& v, const std::string& name) {
  if (v.is_tensor()) return ir::serialize_tensor(to_ir(v.tensor, name));
  ir::wire::Rope r;
  if (!name.empty()) r.put_string(1, name);
  if (v.kind == Value::Kind::kSequence) {
    r.put_varint(2, kElemTensor);
    for (const Tensor& t : *v.sequence) r.put_string(3, ir::serialize_tensor(to_ir(t, "")));
  } else if (v.kind == Value::Kind::kOptional) {
    if (v.optional) {
      const Value& held = *v.optional;
      const uint64_t kind = held.is_tensor() ? kElemTensor : held.kind == Value::Kind::kSequence ? kElemSequence : kElemOptional;
      r.put_varint(2, kind);
      r.put_string(static_cast<uint32_t>(kind + 2), serialize_value(held, ""));
    }
  } else {
    throw_usage_error(name + ": no value to write (" + v.describe() + ")");
  }
  return r.flatten();
}

}  // namespace

namespace {

/// What a .npy header says.
struct NpyHeader {
  DataType type = DataType::kUndefined;
  uint64_t string_unit = 0, string_width = 0;  ///< strings: bytes per code unit, units per element
  std::vector<int64_t> shape;
  std::string shape_text;
  uint64_t data_offset = 0;
};

/// The header's dictionary, one line, after the magic and the version's length field.
std::string npy_header_text(TensorFile& f, const std::string& path, uint64_t& data_offset) {
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
  data_offset = offset + header_len;
  return header;
}

/// The element type of the header's descr (strings: their unit and width in `h`).
void read_npy_dtype(const std::string& header, const std::string& path, NpyHeader& h) {
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
    throw_input_error(path + ": .npy holds Python objects (dtype '|O'); only numeric, bool and string arrays are read");
  for (const auto& t : kNpyTypes)
    if (descr == t.descr) h.type = t.type;
  // Strings: '<Un' holds n UTF-32 code units per element, '|Sn' n bytes, both padded with NULs.
  if (h.type == DataType::kUndefined && descr.size() >= 2 && std::strchr("<|", descr[0]) && (descr[1] == 'U' || descr[1] == 'S')) {
    const std::string digits = descr.substr(2);
    if (digits.empty() || digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      throw_input_error(path + ": malformed .npy string dtype '" + descr.substr(0, 40) + "' (expected '<U' or '|S' and a length)");
    h.type = DataType::kString;
    h.string_unit = descr[1] == 'U' ? 4 : 1;
    h.string_width = std::stoull(digits);
    // numpy writes strings at least one unit wide ('<U1' for ''): a width of 0 would let a
    // header alone stand for any number of elements, with no data behind them.
    if (h.string_width == 0)
      throw_input_error(path + ": .npy string dtype '" + descr.substr(0, 40) + "' has length 0 (numpy writes at least 1)");
  }
  if (h.type == DataType::kUndefined)
    throw_input_error(path + ": .npy dtype '" + descr.substr(0, 40) + "' is not supported");
}

/// The header's order (C only) and shape.
void read_npy_shape(const std::string& header, const std::string& path, NpyHeader& h) {
  const std::string order = dict_value(header, "fortran_order", path);
  if (order == "True") throw_input_error(path + ": Fortran-order .npy data is not supported; save it in C order");
  if (order != "False") throw_input_error(path + ": malformed .npy fortran_order " + order.substr(0, 40));
  const std::string& text = h.shape_text = dict_value(header, "shape", path);
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    throw_input_error(path + ": malformed .npy shape " + text.substr(0, 60));
  for (size_t i = 1; i + 1 < text.size();) {
    while (i + 1 < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
    if (i + 1 >= text.size()) break;
    size_t j = i;
    while (j + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    if (j == i || j - i > 18) throw_input_error(path + ": malformed .npy shape " + text.substr(0, 60));
    h.shape.push_back(std::stoll(text.substr(i, j - i)));
    i = j;
  }
}

/// `count` string elements of `item` bytes each, NUL-padded (UTF-32 or bytes), into `t`.
void read_npy_strings(TensorFile& f, const std::string& path, const NpyHeader& h, int64_t count, uint64_t bytes, Tensor& t) {
  const uint64_t item = h.string_unit * h.string_width;
  std::string data(static_cast<size_t>(bytes), '\0');
  f.read(data.data(), bytes);
  auto& strings = t.mutable_strings();
  for (int64_t i = 0; i < count; ++i) {
    const char* p = data.data() + static_cast<uint64_t>(i) * item;
    std::string& s = strings[static_cast<size_t>(i)];
    if (h.string_unit == 1) {
      s.assign(p, static_cast<size_t>(h.string_width));
    } else {
      for (uint64_t k = 0; k < h.string_width; ++k) {
        uint32_t c;
        std::memcpy(&c, p + 4 * k, 4);  // little-endian, as the descr says
        if (!is_code_point(c))
          throw_input_error(path + ": string element " + std::to_string(i) + " holds " + std::to_string(c) +
                            ", not a unicode code point");
        append_utf8(s, c);
      }
    }
    // NumPy pads with NULs and drops trailing ones when reading.
    while (!s.empty() && s.back() == '\0') s.pop_back();
  }
}

}  // namespace

Tensor read_npy(const std::string& path) {
  TensorFile f(path);
  NpyHeader h;
  const std::string header = npy_header_text(f, path, h.data_offset);
  read_npy_dtype(header, path, h);
  read_npy_shape(header, path, h);
  int64_t count;
  try {
    count = shape_size(h.shape);
  } catch (const Error&) {
    throw_input_error(path + ": .npy shape " + h.shape_text.substr(0, 60) + " has too many elements");
  }
  const uint64_t item = h.string_unit * h.string_width;
  std::optional<uint64_t> bytes;
  if (h.type != DataType::kString) bytes = ir::storage_bytes(h.type, static_cast<uint64_t>(count));
  else if (item == 0 || static_cast<uint64_t>(count) <= UINT64_MAX / item) bytes = item * static_cast<uint64_t>(count);
  if (!bytes || f.size() - h.data_offset < *bytes)
    throw_input_error(path + ": .npy data (" + std::to_string(f.size() - h.data_offset) +
                      " bytes) is shorter than its shape " + shape_string(h.shape) + " needs");
  if (h.type == DataType::kString) {
    // In memory every element is a std::string of its own (32 bytes besides its characters):
    // 100 MB of '|S1' data is 3.3 GB. Refused past half the machine.
    const double memory = static_cast<double>(physical_memory());
    const double need = static_cast<double>(count) * (static_cast<double>(sizeof(std::string)) + static_cast<double>(item));
    if (memory > 0 && need > memory / 2)
      throw_input_error(path + ": .npy of " + std::to_string(count) + " strings would take " + std::to_string(static_cast<int64_t>(need / 1e9)) +
                        " GB in memory, more than half of this machine's");
  }
  Tensor t(h.type, h.shape);
  if (h.type == DataType::kString) {
    read_npy_strings(f, path, h, count, *bytes, t);
    return t;
  }
  if (*bytes) f.read(t.mutable_raw(), *bytes);
  if (h.type == DataType::kBool) {
    // NumPy bools are one byte, 0 or 1; any other byte would not be a valid bool downstream.
    auto* p = static_cast<uint8_t*>(t.mutable_raw());
    for (int64_t i = 0; i < count; ++i) p[i] = p[i] != 0;
  }
  return t;
}

bool npy_holds(DataType type) {
  if (type == DataType::kString) return true;
  for (const auto& t : kNpyTypes)
    if (t.type == type) return true;
  return false;
}

void write_npy(ir::OutputFile& file, const Tensor& tensor) {
  if (tensor.dtype() == DataType::kString) {
    std::vector<std::vector<uint32_t>> code_points(static_cast<size_t>(tensor.size()));
    size_t width = 1;  // NumPy's narrowest unicode dtype, also for empty strings
    for (size_t i = 0; i < code_points.size(); ++i) {
      if (!utf8_code_points(tensor.strings()[i], code_points[i]))
        throw_usage_error(file.target() + ": string element " + std::to_string(i) +
                          " is not valid UTF-8, which a .npy unicode array cannot hold");
      width = std::max(width, code_points[i].size());
    }
    file.write(npy_header("<U" + std::to_string(width), tensor.shape()));
    std::string row(width * 4, '\0');
    for (const auto& cps : code_points) {
      std::fill(row.begin(), row.end(), '\0');
      for (size_t k = 0; k < cps.size(); ++k)
        for (size_t b = 0; b < 4; ++b) row[4 * k + b] = static_cast<char>((cps[k] >> (8 * b)) & 0xff);
      file.write(row);
    }
    return;
  }
  const char* descr = nullptr;
  for (const auto& t : kNpyTypes)
    if (t.type == tensor.dtype()) descr = t.descr;
  if (!descr)
    throw_usage_error(file.target() + ": element type " + std::string(ir::data_type_name(tensor.dtype())) +
                      " has no .npy equivalent");
  file.write(npy_header(descr, tensor.shape()));
  file.write(tensor.raw(), tensor.bytes());
}

void write_npy(const std::string& path, const Tensor& tensor) {
  ir::OutputFile file(path);
  write_npy(file, tensor);
  file.commit();
}

void write_pb(ir::OutputFile& file, const Value& value, const std::string& name) {
  file.write(serialize_value(value, name));
}

Tensor read_pb(const std::string& path) {
  const std::string data = read_all(path);
  return tensor_message(ir::Bytes::copy_of(data.data(), data.size()), path, {});
}

Value read_value_file(const std::string& path, const ir::TypeInfo& declared) {
  using Kind = ir::TypeInfo::Kind;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw_input_error(path + ": is a directory, not a tensor file");
  if (declared.kind == Kind::kMap) throw_input_error(path + ": the model declares " + declared.to_string() + "; the runner has no map values");
  if (declared.kind != Kind::kUnset && declared.kind != Kind::kTensor && declared.kind != Kind::kSequence && declared.kind != Kind::kOptional)
    throw_input_error(path + ": the model declares " + declared.to_string() + "; the runner reads tensors, sequences and optionals");
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".npy") {
    if (declared.kind == Kind::kSequence)
      throw_input_error(path + ": a .npy file holds one tensor" + declared_as(declared) + "; give a SequenceProto .pb");
    // bfloat16, float8, int4...: NumPy has no such dtype, so no .npy file can be right.
    if (declared.is_tensor() && declared.elem_type && !npy_holds(declared.data_type()))
      throw_input_error(path + ": .npy has no " + std::string(ir::data_type_name(declared.data_type())) + declared_as(declared) +
                        "; give a TensorProto .pb");
    Tensor t = read_npy(path);
    if (declared.kind != Kind::kOptional) return Value::of(std::move(t));
    const DataType dtype = t.dtype();
    return optional_of(std::make_shared<Value>(Value::of(std::move(t))), dtype);
  }
  if (ext != ".pb") throw_usage_error(path + ": value files must be .npy or .pb");
  const std::string data = read_all(path);
  const ir::Bytes bytes = ir::Bytes::copy_of(data.data(), data.size());
  switch (declared.kind) {
    case Kind::kSequence: return sequence_message(bytes, path, declared);
    case Kind::kOptional: return optional_message(bytes, path, declared);
    default: return Value::of(tensor_message(bytes, path, declared));
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

std::string FileStems::claim(const std::string& name) {
  std::string base = safe_file_name(name);
  // A file name holds at most 255 bytes, and tf2onnx names a fused Conv/BatchNorm/Relu value by
  // its whole scope: a longer stem keeps its first 180 bytes and a hash of the whole name, the
  // same on every run (index.json and --expect find the file by it).
  if (base.size() > 200) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    base = base.substr(0, 180) + "_" + hex;
  }
  std::string stem = base;
  for (size_t k = 1; taken_.count(stem); ++k) stem = base + "_" + std::to_string(k);
  taken_.insert(stem);
  return stem;
}

ReferenceFile find_reference_file(const std::string& dir, const std::string& stem, std::optional<size_t> position) {
  namespace fs = std::filesystem;
  ReferenceFile r;
  std::vector<std::string> names;
  if (fs::exists(fs::path(dir) / "output_0.pb")) {
    if (position) names.push_back("output_" + std::to_string(*position) + ".pb");
    r.looked_for = position ? names[0] : "output_K.pb (not a graph output)";
  } else {
    names = {stem + ".npy", stem + ".pb"};
    r.looked_for = names[0] + " or " + names[1];
  }
  for (const auto& n : names) {
    const fs::path f = fs::path(dir) / n;
    if (fs::exists(f)) {
      r.path = f.string();
      break;
    }
  }
  return r;
}

}  // namespace onnxtool::runner
