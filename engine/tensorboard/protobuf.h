// The few pieces of the protobuf wire format an Event needs, by hand: varints, fixed 32/64-bit
// numbers and length-delimited fields. Enough to write scalar events and to walk any message
// (unknown fields are skipped by their wire type), without a protobuf dependency.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ddpdesk::tb::pb {

enum WireType : int { Varint = 0, Fixed64 = 1, Bytes = 2, Fixed32 = 5 };

void put_varint(std::string& out, std::uint64_t v);
void put_key(std::string& out, int field, WireType type);
// int64 fields are varints of the two's complement (a negative number takes ten bytes).
void put_int64(std::string& out, int field, std::int64_t v);
void put_double(std::string& out, int field, double v);
void put_float(std::string& out, int field, float v);
void put_bytes(std::string& out, int field, std::string_view bytes);

// One field of a message as read.
struct Field {
  int number = 0;
  WireType type = Varint;
  std::uint64_t varint = 0;  // Varint
  std::uint64_t fixed = 0;   // Fixed64, or Fixed32 in the low bits
  std::string_view bytes;    // Bytes: a view into the message
  double as_double() const;
  float as_float() const;
};

// Iterates the fields of one message. next() returns false at the end, or on malformed input
// (then error() is set).
class Reader {
 public:
  explicit Reader(std::string_view message) : in_(message) {}
  bool next(Field* f);
  const std::string& error() const { return error_; }

 private:
  bool varint(std::uint64_t* v);
  bool fail(const char* what);

  std::string_view in_;
  std::size_t pos_ = 0;
  std::string error_;
};

// Decodes packed little-endian floats/doubles (repeated float/double fields, tensor_content).
// Returns false when the byte count is not a multiple of the element size.
bool first_float(std::string_view packed, float* v, std::size_t* count);
bool first_double(std::string_view packed, double* v, std::size_t* count);

}  // namespace ddpdesk::tb::pb
