// Reading a TensorBoard event file (events.out.tfevents.*): every record's checksums verified,
// every scalar decoded. A half-written last record (a writer still at it, or one that died) ends
// the file cleanly and is reported; a corrupt record ends it with an error. Either way the
// scalars before it are kept, as TensorBoard itself does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ddpdesk::tb {

struct ScalarPoint {
  std::string tag;
  std::int64_t step = 0;
  double wall_time = 0;
  double value = 0;
};

struct EventFile {
  std::string file_version;          // "brain.Event:2" from the first record, when present
  std::vector<ScalarPoint> scalars;  // in file order
  std::int64_t records = 0;          // complete, verified records
  bool truncated = false;            // the last record is incomplete
  std::string error;                 // one line: the file is unreadable or a record is corrupt
  // One line for truncated or failed files, empty otherwise (callers add the file's name).
  std::string problem() const;
  bool ok() const { return error.empty(); }
};

EventFile decode_event_file(std::string_view bytes);
// Reads the whole file (scalar logs are small: a few dozen bytes per point).
EventFile read_event_file(const std::string& path);

// Whether a file name is an event file's (contains "tfevents", as TensorBoard checks).
bool is_event_file_name(std::string_view file_name);

}  // namespace ddpdesk::tb
