#include "event_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "event.h"
#include "tfrecord.h"

namespace ddpdesk::tb {

std::string EventFile::problem() const {
  if (!error.empty()) return error;
  if (truncated) return "last record incomplete after " + std::to_string(records) + " records";
  return {};
}

EventFile decode_event_file(std::string_view bytes) {
  EventFile out;
  RecordReader reader(bytes);
  std::string_view data;
  Event event;
  for (;;) {
    const RecordReader::Status s = reader.next(&data);
    if (s == RecordReader::Status::End) break;
    if (s == RecordReader::Status::Truncated) {
      out.truncated = true;
      break;
    }
    if (s == RecordReader::Status::Corrupt) {
      out.error = reader.reason();
      break;
    }
    if (std::string e = decode_event(data, &event); !e.empty()) {
      out.error = "record " + std::to_string(reader.records()) + ": " + e;
      break;
    }
    ++out.records;
    if (!event.file_version.empty() && out.file_version.empty())
      out.file_version = event.file_version;
    for (Scalar& s : event.scalars)
      out.scalars.push_back({std::move(s.tag), event.step, event.wall_time, s.value});
  }
  return out;
}

EventFile read_event_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    EventFile out;
    out.error = std::string("cannot read the file: ") + std::strerror(errno);
    return out;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return decode_event_file(ss.str());
}

bool is_event_file_name(std::string_view file_name) {
  return file_name.find("tfevents") != std::string_view::npos;
}

}  // namespace ddpdesk::tb
