// Writes one TensorBoard event file: events.out.tfevents.<unix time>.<host> in a directory of its
// own, append-only, the file version first, then one event per scalar. Records collect in memory
// and go to the file in one write() when flush_interval_s has passed since the last write (or
// 64 KiB piled up) and at close, so a caller on a busy thread pays a memcpy per point, not a
// system call. A writer killed mid-write leaves a half record that readers skip (event_file.h).
// Not thread-safe: one thread owns a writer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ddpdesk::tb {

class EventFileWriter {
 public:
  // Creates `dir` (and its parents) and a new file in it; a name already taken (two writers in
  // the same second) gets ".<pid>" and then a counter appended. Throws std::runtime_error naming
  // the path when it cannot.
  explicit EventFileWriter(const std::string& dir, double flush_interval_s = 1.0);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  void add_scalar(std::string_view tag, double value, std::int64_t step, double wall_time);
  // Writes what is buffered if the flush interval has passed since the last write.
  void flush_if_due();
  void flush();
  void close();

  const std::string& path() const { return path_; }
  // A write failed (disk full, say): later points are dropped, training is not disturbed.
  bool failed() const { return failed_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::string buf_;
  double interval_s_;
  double last_write_ = 0;
  bool failed_ = false;
};

// Seconds since the Unix epoch, with sub-second precision (an Event's wall_time).
double unix_time_now();

}  // namespace ddpdesk::tb
