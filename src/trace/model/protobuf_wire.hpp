// The protocol-buffer wire format, as much of it as ridge's Perfetto traces need: varints,
// fixed64 and length-delimited fields, written and read without a schema
// (https://protobuf.dev/programming-guides/encoding/). docs/architecture.md says why this is
// not libprotobuf.
#pragma once
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ridge::trace::wire {

enum class WireType : std::uint8_t { varint = 0, fixed64 = 1, length_delimited = 2, fixed32 = 5 };

/// Appends fields to a message held in a std::string.
class MessageWriter {
 public:
  explicit MessageWriter(std::string& out) : out_(out) {}
  void varint(std::uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void tag(std::uint32_t field, WireType type) { varint((std::uint64_t{field} << 3) | static_cast<std::uint8_t>(type)); }
  /// uint32/uint64/bool/enum field; int64 values are written as their two's complement, as protobuf does.
  void uint_field(std::uint32_t field, std::uint64_t v) {
    tag(field, WireType::varint);
    varint(v);
  }
  void int_field(std::uint32_t field, std::int64_t v) { uint_field(field, static_cast<std::uint64_t>(v)); }
  void fixed64_field(std::uint32_t field, std::uint64_t v) {
    tag(field, WireType::fixed64);
    char bytes[8];
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(v >> (8 * i));
    out_.append(bytes, 8);
  }
  void double_field(std::uint32_t field, double v) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    fixed64_field(field, bits);
  }
  void bytes_field(std::uint32_t field, std::string_view bytes) {
    tag(field, WireType::length_delimited);
    varint(bytes.size());
    out_.append(bytes);
  }
  /// Starts a nested message of `field`; end_nested(returned mark) writes its length in front of
  /// it (the body is written in place, then moved back by the bytes the length did not need).
  std::size_t begin_nested(std::uint32_t field) {
    tag(field, WireType::length_delimited);
    const std::size_t mark = out_.size();
    out_.append(max_length_bytes, '\0');
    return mark;
  }
  void end_nested(std::size_t mark) {
    const std::size_t body = mark + max_length_bytes, length = out_.size() - body;
    if ((length >> (7 * max_length_bytes)) != 0) throw std::length_error("a nested protobuf message of 32 GiB or more");
    char prefix[max_length_bytes] = {};
    std::size_t n = 0;
    std::size_t v = length;
    do {
      prefix[n] = static_cast<char>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
      v >>= 7;
      ++n;
    } while (v != 0 && n < max_length_bytes);
    std::memcpy(out_.data() + mark, prefix, n);
    if (n < max_length_bytes) {
      std::memmove(out_.data() + mark + n, out_.data() + body, length);
      out_.resize(mark + n + length);
    }
  }

 private:
  static constexpr std::size_t max_length_bytes = 5;  // a varint of up to 2^35 - 1
  std::string& out_;
};

/// One field as read: its number and type, and its value (varint, fixed) or bytes.
struct Field {
  std::uint32_t number = 0;
  WireType type = WireType::varint;
  std::uint64_t value = 0;
  std::string_view bytes;
};

/// Reads the fields of one message in order. `error` is set (and next() returns false) when the
/// bytes are not a well-formed message.
class MessageReader {
 public:
  explicit MessageReader(std::string_view bytes) : p_(bytes.data()), end_(bytes.data() + bytes.size()) {}
  bool next(Field& f) {
    if (p_ == end_ || error_ != nullptr) return false;
    std::uint64_t key = 0;
    if (!read_varint(key)) return false;
    f.number = static_cast<std::uint32_t>(key >> 3);
    f.type = static_cast<WireType>(key & 7);
    if (f.number == 0) return fail("field number 0");
    switch (f.type) {
      case WireType::varint: return read_varint(f.value);
      case WireType::fixed64: return read_fixed(f.value, 8);
      case WireType::fixed32: return read_fixed(f.value, 4);
      case WireType::length_delimited: {
        std::uint64_t length = 0;
        if (!read_varint(length)) return false;
        if (length > static_cast<std::uint64_t>(end_ - p_)) return fail("a field longer than its message");
        f.bytes = std::string_view(p_, static_cast<std::size_t>(length));
        p_ += length;
        return true;
      }
    }
    return fail("an unknown wire type (groups are not read)");
  }
  const char* error() const { return error_; }

 private:
  bool fail(const char* why) {
    error_ = why;
    return false;
  }
  bool read_varint(std::uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return fail("a truncated varint");
      const auto byte = static_cast<std::uint8_t>(*p_++);
      v |= std::uint64_t{byte & 0x7fu} << shift;
      if (byte < 0x80) return true;
    }
    return fail("a varint longer than 10 bytes");
  }
  bool read_fixed(std::uint64_t& v, int size) {
    if (end_ - p_ < size) return fail("a truncated fixed-size field");
    v = 0;
    for (int i = 0; i < size; ++i) v |= std::uint64_t{static_cast<std::uint8_t>(p_[i])} << (8 * i);
    p_ += size;
    return true;
  }
  const char* p_;
  const char* end_;
  const char* error_ = nullptr;
};

}  // namespace ridge::trace::wire
