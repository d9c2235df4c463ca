// TFRecord framing, the container of TensorBoard event files. Each record is
//   uint64 length (little-endian) | uint32 masked_crc32c(length bytes) | data | uint32
//   masked_crc32c(data)
// A file is records back to back, nothing else: a reader resynchronises nowhere, so a corrupt
// record ends what can be trusted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ddpdesk::tb {

constexpr std::size_t kRecordOverhead = 8 + 4 + 4;

// Appends one framed record holding `data` to `out`.
void append_record(std::string& out, std::string_view data);

// Walks the records of a byte buffer (a whole file) without copying them.
class RecordReader {
 public:
  enum class Status {
    Record,     // *data is the next record's payload (a view into the buffer)
    End,        // the buffer ended exactly after a record
    Truncated,  // the last record is incomplete: a writer still at it, or one that died
    Corrupt,    // a checksum does not match: reason() says which and where
  };
  explicit RecordReader(std::string_view bytes) : bytes_(bytes) {}

  // After Truncated or Corrupt it keeps returning the same status.
  Status next(std::string_view* data);
  // One line for Truncated and Corrupt ("record 3 at byte 120: data CRC mismatch ...").
  const std::string& reason() const { return reason_; }
  std::size_t offset() const { return offset_; }     // where the next record starts
  std::int64_t records() const { return records_; }  // records returned so far

 private:
  Status stop(Status s, std::string reason);

  std::string_view bytes_;
  std::size_t offset_ = 0;
  std::int64_t records_ = 0;
  Status stopped_ = Status::Record;  // Record: not stopped
  std::string reason_;
};

}  // namespace ddpdesk::tb
