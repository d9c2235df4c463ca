#include "protobuf.h"

#include <cstring>

namespace ddpdesk::tb::pb {
namespace {

// The wire format is little-endian; so are the machines ddpdesk runs on (x86-64, aarch64).
static_assert(sizeof(float) == 4 && sizeof(double) == 8, "IEEE-754 sizes expected");

void put_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint64_t get_le(const char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= std::uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

}  // namespace

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_key(std::string& out, int field, WireType type) {
  put_varint(out, (static_cast<std::uint64_t>(field) << 3) | static_cast<std::uint64_t>(type));
}

void put_int64(std::string& out, int field, std::int64_t v) {
  put_key(out, field, Varint);
  put_varint(out, static_cast<std::uint64_t>(v));
}

void put_double(std::string& out, int field, double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, 8);
  put_key(out, field, Fixed64);
  put_le(out, bits, 8);
}

void put_float(std::string& out, int field, float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, 4);
  put_key(out, field, Fixed32);
  put_le(out, bits, 4);
}

void put_bytes(std::string& out, int field, std::string_view bytes) {
  put_key(out, field, Bytes);
  put_varint(out, bytes.size());
  out.append(bytes.data(), bytes.size());
}

double Field::as_double() const {
  double d;
  std::memcpy(&d, &fixed, 8);
  return d;
}

float Field::as_float() const {
  const auto bits = static_cast<std::uint32_t>(fixed);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

bool Reader::fail(const char* what) {
  error_ = std::string(what) + " at byte " + std::to_string(pos_);
  pos_ = in_.size();
  return false;
}

bool Reader::varint(std::uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos_ >= in_.size()) return fail("varint runs past the end");
    const auto b = static_cast<unsigned char>(in_[pos_++]);
    *v |= std::uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return fail("varint longer than ten bytes");
}

bool Reader::next(Field* f) {
  if (pos_ >= in_.size()) return false;
  std::uint64_t key;
  if (!varint(&key)) return false;
  f->number = static_cast<int>(key >> 3);
  if (f->number == 0) return fail("field number 0");
  switch (key & 7) {
    case Varint:
      f->type = Varint;
      return varint(&f->varint);
    case Fixed64:
      f->type = Fixed64;
      if (in_.size() - pos_ < 8) return fail("fixed64 runs past the end");
      f->fixed = get_le(in_.data() + pos_, 8);
      pos_ += 8;
      return true;
    case Fixed32:
      f->type = Fixed32;
      if (in_.size() - pos_ < 4) return fail("fixed32 runs past the end");
      f->fixed = get_le(in_.data() + pos_, 4);
      pos_ += 4;
      return true;
    case Bytes: {
      f->type = Bytes;
      std::uint64_t n;
      if (!varint(&n)) return false;
      if (n > in_.size() - pos_) return fail("length-delimited field runs past the end");
      f->bytes = in_.substr(pos_, static_cast<std::size_t>(n));
      pos_ += static_cast<std::size_t>(n);
      return true;
    }
    default:  // groups (3, 4) are long deprecated; event.proto has none
      return fail("unsupported wire type");
  }
}

bool first_float(std::string_view packed, float* v, std::size_t* count) {
  if (packed.size() % 4) return false;
  *count = packed.size() / 4;
  if (*count) {
    const auto bits = static_cast<std::uint32_t>(get_le(packed.data(), 4));
    std::memcpy(v, &bits, 4);
  }
  return true;
}

bool first_double(std::string_view packed, double* v, std::size_t* count) {
  if (packed.size() % 8) return false;
  *count = packed.size() / 8;
  if (*count) {
    const std::uint64_t bits = get_le(packed.data(), 8);
    std::memcpy(v, &bits, 8);
  }
  return true;
}

}  // namespace ddpdesk::tb::pb
