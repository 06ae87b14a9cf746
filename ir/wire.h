// Protobuf wire format, read zero-copy from a buffer and written as a rope of byte segments.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace onnxtool::ir::wire {

enum WireType : int { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kStartGroup = 3,
                      kEndGroup = 4, kFixed32 = 5 };

/// Thrown by Reader on malformed input; model_io turns it into an Error naming the file.
struct ParseError {
  std::string message;
  size_t offset;
};

/// Reads fields from [begin, end). `origin` is the start of the whole buffer (for offsets in
/// error messages and for zero-copy views).
class Reader {
 public:
  Reader(const uint8_t* begin, const uint8_t* end, const uint8_t* origin)
      : p_(begin), end_(end), origin_(origin) {}

  bool done() const { return p_ >= end_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  const uint8_t* pos() const { return p_; }
  size_t offset() const { return static_cast<size_t>(p_ - origin_); }

  /// Reads the next tag; returns false at the end of the range.
  bool next(uint32_t& field, int& wire_type);
  uint64_t varint();
  uint32_t fixed32();
  uint64_t fixed64();
  /// A length-delimited payload.
  std::string_view bytes();
  /// A length-delimited payload as a nested reader.
  Reader nested();
  /// Skips the payload of a field whose tag was just read.
  void skip(uint32_t field, int wire_type);
  [[noreturn]] void fail(const std::string& what) const;

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  const uint8_t* origin_;
};

/// Output as a list of segments: small owned chunks and references to large external buffers
/// (tensor data), so that serializing never copies weights.
class Rope {
 public:
  size_t size() const { return size_; }
  void tag(uint32_t field, int wire_type) { varint((static_cast<uint64_t>(field) << 3) | wire_type); }
  void varint(uint64_t v);
  void raw(const void* data, size_t n);
  /// Appends a reference to `data`, which must outlive the rope (copied when small).
  void reference(const void* data, size_t n);

  // Field writers.
  void put_varint(uint32_t field, uint64_t v) { tag(field, kVarint); varint(v); }
  void put_int32(uint32_t field, int32_t v) { put_varint(field, static_cast<uint64_t>(static_cast<int64_t>(v))); }
  void put_int64(uint32_t field, int64_t v) { put_varint(field, static_cast<uint64_t>(v)); }
  void put_float(uint32_t field, float v);
  void put_string(uint32_t field, std::string_view s);
  void put_bytes_ref(uint32_t field, const void* data, size_t n);
  /// Appends `sub` as a length-delimited field; `sub` is consumed.
  void put_message(uint32_t field, Rope&& sub);
  template <class T, class Put>
  void put_packed(uint32_t field, const std::vector<T>& values, Put put_one) {
    if (values.empty()) return;
    Rope sub;
    for (const T& v : values) put_one(sub, v);
    put_message(field, std::move(sub));
  }

  /// Writes every segment in order through `sink(const void*, size_t)`.
  template <class Sink>
  void for_each_segment(Sink sink) const {
    for (const auto& s : segments_) {
      if (s.ref) sink(s.ref, s.ref_size);
      else sink(s.own.data(), s.own.size());
    }
  }
  std::string flatten() const;

 private:
  struct Segment {
    std::string own;
    const void* ref = nullptr;
    size_t ref_size = 0;
  };
  std::string& tail();
  std::vector<Segment> segments_;
  size_t size_ = 0;
};

}  // namespace onnxtool::ir::wire
