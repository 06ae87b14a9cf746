// Protobuf wire-format reader and rope writer.
#include "ir/wire.h"

namespace onnxtool::ir::wire {

void Reader::fail(const std::string& what) const { throw ParseError{what, offset()}; }

uint64_t Reader::varint() {
  uint64_t result = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p_ >= end_) fail("truncated varint");
    const uint8_t b = *p_++;
    result |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return result;
  }
  fail("varint longer than 10 bytes");
}

uint32_t Reader::fixed32() {
  if (end_ - p_ < 4) fail("truncated fixed32");
  uint32_t v;
  std::memcpy(&v, p_, 4);
  p_ += 4;
  return v;
}

uint64_t Reader::fixed64() {
  if (end_ - p_ < 8) fail("truncated fixed64");
  uint64_t v;
  std::memcpy(&v, p_, 8);
  p_ += 8;
  return v;
}

std::string_view Reader::bytes() {
  const uint64_t n = varint();
  if (n > static_cast<uint64_t>(end_ - p_)) fail("length-delimited field runs past its end");
  std::string_view s(reinterpret_cast<const char*>(p_), static_cast<size_t>(n));
  p_ += n;
  return s;
}

Reader Reader::nested() {
  std::string_view s = bytes();
  const auto* b = reinterpret_cast<const uint8_t*>(s.data());
  return Reader(b, b + s.size(), origin_);
}

bool Reader::next(uint32_t& field, int& wire_type) {
  if (p_ >= end_) return false;
  const uint64_t key = varint();
  if (key > 0xffffffffu) fail("tag out of range");
  field = static_cast<uint32_t>(key >> 3);
  wire_type = static_cast<int>(key & 7);
  if (field == 0) fail("field number 0");
  if (wire_type > 5) fail("invalid wire type " + std::to_string(wire_type));
  if (wire_type == kEndGroup) fail("unexpected end-group tag");
  return true;
}

void Reader::skip(uint32_t field, int wire_type) {
  switch (wire_type) {
    case kVarint:
      varint();
      return;
    case kFixed64:
      fixed64();
      return;
    case kFixed32:
      fixed32();
      return;
    case kLengthDelimited:
      bytes();
      return;
    case kStartGroup: {
      // Groups nest; skip to the matching end tag without recursion.
      std::vector<uint32_t> open{field};
      while (!open.empty()) {
        if (p_ >= end_) fail("unterminated group");
        const uint64_t key = varint();
        const auto f = static_cast<uint32_t>(key >> 3);
        const int wt = static_cast<int>(key & 7);
        if (f == 0 || wt > 5) fail("malformed tag inside group");
        if (wt == kEndGroup) {
          if (f != open.back()) fail("mismatched end-group tag");
          open.pop_back();
        } else if (wt == kStartGroup) {
          if (open.size() > 100) fail("groups nested too deeply");
          open.push_back(f);
        } else {
          skip(f, wt);
        }
      }
      return;
    }
    default:
      fail("invalid wire type");
  }
}

std::string& Rope::tail() {
  if (segments_.empty() || segments_.back().ref) segments_.emplace_back();
  return segments_.back().own;
}

void Rope::varint(uint64_t v) {
  char buf[10];
  int n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  tail().append(buf, static_cast<size_t>(n));
  size_ += static_cast<size_t>(n);
}

void Rope::raw(const void* data, size_t n) {
  tail().append(static_cast<const char*>(data), n);
  size_ += n;
}

void Rope::reference(const void* data, size_t n) {
  if (n < 4096) {
    raw(data, n);
    return;
  }
  Segment s;
  s.ref = data;
  s.ref_size = n;
  segments_.push_back(std::move(s));
  size_ += n;
}

void Rope::put_float(uint32_t field, float v) {
  tag(field, kFixed32);
  raw(&v, 4);
}

void Rope::put_string(uint32_t field, std::string_view s) {
  tag(field, kLengthDelimited);
  varint(s.size());
  raw(s.data(), s.size());
}

void Rope::put_bytes_ref(uint32_t field, const void* data, size_t n) {
  tag(field, kLengthDelimited);
  varint(n);
  reference(data, n);
}

void Rope::put_message(uint32_t field, Rope&& sub) {
  tag(field, kLengthDelimited);
  varint(sub.size_);
  size_ += sub.size_;
  for (auto& s : sub.segments_) {
    if (!s.ref && !segments_.empty() && !segments_.back().ref &&
        s.own.size() < 256) {
      segments_.back().own += s.own;  // keep the segment list short for small messages
    } else {
      segments_.push_back(std::move(s));
    }
  }
  sub.segments_.clear();
  sub.size_ = 0;
}

std::string Rope::flatten() const {
  std::string out;
  out.reserve(size_);
  for_each_segment([&out](const void* d, size_t n) { out.append(static_cast<const char*>(d), n); });
  return out;
}

}  // namespace onnxtool::ir::wire
