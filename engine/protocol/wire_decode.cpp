// wire::decode: a line's framing (newline, size limit, NUL byte, byte order mark), then its object
// read into slots (wire_slots.h, simdjson's On-Demand API: decoding is most of what the monitor
// does with a message) and the message built from them by the rules (wire_rules.h).
//
// When simdjson refuses a line, nlohmann-json's validator has the last word on whether it is
// valid JSON, so the errors are the ones the codec gave when it parsed a DOM.
#include <cstring>
#include <exception>
#include <string>

#include "wire.h"
#include "wire_rules.h"
#include "wire_slots.h"

namespace ddpdesk::wire {

namespace {
Decoded decode_line(std::string_view line);
}  // namespace

Decoded decode(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.empty()) return Decoded();  // Kind::Blank
  Decoded d = decode_line(line);
  d.kind = !d.ignored.empty() ? Decoded::Kind::Ignored
           : d.message        ? Decoded::Kind::Message
                              : Decoded::Kind::Malformed;
  return d;
}

namespace {

Decoded decode_line(std::string_view line) {
  Decoded d;
  if (line.size() > kMaxLineBytes) {
    d.error = "line longer than " + std::to_string(kMaxLineBytes) + " bytes";
    return d;
  }
  // A NUL byte ends the line, as it always did with nlohmann-json (inside a string, that leaves
  // the line unfinished: invalid either way). simdjson would read on past it.
  if (const void* nul = std::memchr(line.data(), 0, line.size()))
    line = line.substr(0, std::size_t(static_cast<const char*>(nul) - line.data()));
  // A UTF-8 byte order mark at the start is skipped, as nlohmann-json always did; `whole` keeps
  // it for nlohmann-json's validator, which skips one itself.
  const std::string_view whole = line;
  if (line.size() >= 3 && std::memcmp(line.data(), "\xEF\xBB\xBF", 3) == 0) line.remove_prefix(3);

  thread_local detail::LineSlots slots;  // reused: its vectors keep their capacity
  const char* why = "";
  switch (detail::readSlots(line, slots, &why)) {
    case detail::SlotsRead::Ok:
      break;
    case detail::SlotsRead::NotObject:
      d.error = detail::validJson(whole) ? "not a JSON object" : "not valid JSON";
      return d;
    case detail::SlotsRead::Refused:
      // Not valid JSON, or (never seen yet) simdjson is stricter than JSON somewhere; say which
      // rather than call valid JSON invalid.
      d.error = detail::validJson(whole) ? std::string("JSON this decoder cannot read: ") + why
                                         : "not valid JSON";
      return d;
  }
  try {
    detail::applyRules(slots, d);
  } catch (const std::exception& ex) {
    d = Decoded();
    d.error = ex.what();
  }
  return d;
}

}  // namespace
}  // namespace ddpdesk::wire
