#include "tfrecord.h"

#include <cstdio>

#include "crc32c.h"

namespace ddpdesk::tb {
namespace {

void put_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint64_t get_le(const char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= std::uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

}  // namespace

void append_record(std::string& out, std::string_view data) {
  const std::size_t start = out.size();
  put_le(out, data.size(), 8);
  put_le(out, mask_crc(crc32c(out.data() + start, 8)), 4);
  out.append(data.data(), data.size());
  put_le(out, mask_crc(crc32c(data)), 4);
}

RecordReader::Status RecordReader::stop(Status s, std::string reason) {
  stopped_ = s;
  reason_ = "record " + std::to_string(records_ + 1) + " at byte " + std::to_string(offset_) +
            ": " + std::move(reason);
  return s;
}

RecordReader::Status RecordReader::next(std::string_view* data) {
  if (stopped_ != Status::Record) return stopped_;
  const std::size_t left = bytes_.size() - offset_;
  if (left == 0) return Status::End;
  const char* p = bytes_.data() + offset_;
  if (left < 12)
    return stop(Status::Truncated, "incomplete header (" + std::to_string(left) + " of 12 bytes)");
  const std::uint64_t length = get_le(p, 8);
  const auto length_crc = static_cast<std::uint32_t>(get_le(p + 8, 4));
  const std::uint32_t want_length_crc = mask_crc(crc32c(p, 8));
  if (length_crc != want_length_crc)
    return stop(Status::Corrupt, "length CRC mismatch (stored " + hex32(length_crc) +
                                     ", computed " + hex32(want_length_crc) + ")");
  // The length is trustworthy now; a record longer than what is left was cut short.
  if (length > left - 12 || left - 12 - length < 4)
    return stop(Status::Truncated, "incomplete record (" + std::to_string(left) + " of " +
                                       std::to_string(length + 16) + " bytes)");
  const std::string_view payload(p + 12, static_cast<std::size_t>(length));
  const auto data_crc = static_cast<std::uint32_t>(get_le(p + 12 + length, 4));
  const std::uint32_t want_data_crc = mask_crc(crc32c(payload));
  if (data_crc != want_data_crc)
    return stop(Status::Corrupt, "data CRC mismatch (stored " + hex32(data_crc) + ", computed " +
                                     hex32(want_data_crc) + ")");
  offset_ += kRecordOverhead + static_cast<std::size_t>(length);
  ++records_;
  *data = payload;
  return Status::Record;
}

}  // namespace ddpdesk::tb
