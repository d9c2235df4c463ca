// The first half of wire::decode: one JSON line's object read into slots, one per field some
// message type reads, with simdjson's On-Demand API (wire_slots.cpp). One pass over the fields
// keeps each known one's value (a key given twice: the last one counts, as in a DOM) and checks
// every other value as it goes. The second half, the rules that turn slots into a message, is
// wire_rules.h. Internal to the wire decoder.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace ddpdesk::wire::detail {

// A field's value as the rules need it: its JSON kind and, for scalars, the value. Strings point
// into the line or the parser's buffer, valid until the next line is read on this thread.
struct Value {
  enum Kind : std::uint8_t { Absent, Null, Bool, Int, Uint, Real, String, Object, Array };
  Kind kind = Absent;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double d = 0;
  std::string_view s;
  bool number() const { return kind == Int || kind == Uint || kind == Real; }
  bool integer() const { return kind == Int || kind == Uint; }
};

// Every top-level field some message type reads; the rules name them by these ids.
enum Top : std::uint8_t {
  kType,
  kRank,
  kEpoch,
  kStep,
  kLoss,
  kGlobalLoss,
  kSamples,
  kLr,
  kTime,
  kSamplesPerS,
  kCollectives,
  kParamHash,
  kBufferHash,
  kTimeMs,
  kV,
  kToken,
  kWorld,
  kPid,
  kHost,
  kDevice,
  kVMin,
  kVMax,
  kAccuracy,
  kEvent,
  kPath,
  kDetail,
  kTotalSteps,
  kMessage,
  kName,
  kValue,
  kUnit,
  kPeer,
  kTopCount
};
inline constexpr std::array<std::string_view, kTopCount> kTopNames = {
    "type",  "rank",     "epoch",         "step",        "loss",       "global_loss", "samples",
    "lr",    "time",     "samples_per_s", "collectives", "param_hash", "buffer_hash", "time_ms",
    "v",     "token",    "world",         "pid",         "host",       "device",      "v_min",
    "v_max", "accuracy", "event",         "path",        "detail",     "total_steps", "message",
    "name",  "value",    "unit",          "peer"};
// The fields of a step's "time_ms" object.
enum Times : std::uint8_t {
  kData,
  kForward,
  kBackward,
  kComm,
  kOptimizer,
  kTelemetry,
  kOther,
  kTStep,
  kTSteps,
  kTimesCount
};
inline constexpr std::array<std::string_view, kTimesCount> kTimesNames = {
    "data", "forward", "backward", "comm", "optimizer", "telemetry", "other", "step", "steps"};

// One JSON object's fields: the known ones in slots (which are set: a bit each, so starting a
// line costs nothing however many slots there are), the others by name (distinct).
template <std::size_t N>
struct Fields {
  static_assert(N <= 64, "one bit per slot");
  std::array<Value, N> slot{};
  std::uint64_t present = 0;
  std::vector<std::string_view> others;

  bool has(std::size_t id) const { return (present >> id) & 1; }
  const Value& at(std::size_t id) const { return slot[id]; }
  // A fresh slot for `id` (a key given again replaces its first value).
  Value& set(std::size_t id) {
    present |= std::uint64_t(1) << id;
    return slot[id] = Value();
  }
  void clear() {
    present = 0;
    others.clear();
  }
  void other(std::string_view key) {
    for (std::string_view o : others)
      if (o == key) return;
    others.push_back(key);
  }
  std::size_t size() const { return std::size_t(__builtin_popcountll(present)) + others.size(); }
};

struct LineSlots {
  Fields<kTopCount> top;
  Fields<kTimesCount> times;  // a step's "time_ms", when it is an object
};

enum class SlotsRead {
  Ok,
  NotObject,  // a JSON value, or so simdjson says, but not an object
  Refused,    // simdjson refused the line (`why` says why)
};
// Reads one line (no trailing newline, no byte order mark, no NUL byte, at most kMaxLineBytes)
// into `out`, cleared first. Never throws.
SlotsRead readSlots(std::string_view line, LineSlots& out, const char** why);

// Whether `text` is one valid JSON value, by nlohmann-json's rules (the error paths only).
bool validJson(std::string_view text);

}  // namespace ddpdesk::wire::detail
