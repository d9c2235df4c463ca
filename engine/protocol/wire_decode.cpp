// The wire decoder: simdjson's On-Demand API, because decoding is most of what the monitor does
// with a message (85-90 % of ingest with a DOM parser). One pass over the object's fields keeps
// what a message type may read in slots (a key given twice: the last one counts, as in a DOM),
// checking every value as it goes; then the rules below turn the slots into a message, exactly as
// they did when they read a parsed DOM: same messages, same errors, same unknown-field counts.
//
// Errors are rare, and there nlohmann-json's own validator (json::accept, no DOM built) has the
// last word on what is valid JSON: a line simdjson refuses is "not valid JSON" only when it is,
// and numbers simdjson does not read right (integers past 64 bits, more than 19 digits) are read
// the way nlohmann-json always read them. Values of unknown fields are checked the same way (their
// raw text accepted), so a line is never "ignored" or counted where a DOM parser would have called
// it malformed.
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "wire.h"

namespace ddpdesk::wire {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;
using simdjson::SUCCESS;

// A field's value as the rules need it: its JSON kind and, for scalars, the value. Strings point
// into the parser's buffer, valid for the line being decoded.
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
  kTopCount
};
constexpr std::array<std::string_view, kTopCount> kTopNames = {
    "type",  "rank",     "epoch",         "step",        "loss",       "global_loss", "samples",
    "lr",    "time",     "samples_per_s", "collectives", "param_hash", "buffer_hash", "time_ms",
    "v",     "token",    "world",         "pid",         "host",       "device",      "v_min",
    "v_max", "accuracy", "event",         "path",        "detail",     "total_steps", "message",
    "name",  "value",    "unit"};
// The fields of a step's "time_ms" object.
enum Times : std::uint8_t {
  kData,
  kForward,
  kBackward,
  kComm,
  kOptimizer,
  kTelemetry,
  kTStep,
  kTSteps,
  kTimesCount
};
constexpr std::array<std::string_view, kTimesCount> kTimesNames = {
    "data", "forward", "backward", "comm", "optimizer", "telemetry", "step", "steps"};

// Name -> id, by first byte then length: a handful of comparisons per key.
template <std::size_t N>
class Names {
 public:
  explicit Names(const std::array<std::string_view, N>& names) : names_(names) {
    for (std::size_t id = 0; id < N; ++id)
      by_first_[std::uint8_t(names[id][0])].push_back(std::uint8_t(id));
  }
  int find(std::string_view key) const {
    if (key.empty()) return -1;
    for (std::uint8_t id : by_first_[std::uint8_t(key[0])])
      if (same(names_[id], key)) return id;
    return -1;
  }
  std::string_view operator[](std::size_t id) const { return names_[id]; }

 private:
  // Inline: names are a few bytes, where a call to memcmp costs more than the comparison.
  static bool same(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 1; i < a.size(); ++i)  // the first byte matched already
      if (a[i] != b[i]) return false;
    return true;
  }
  const std::array<std::string_view, N>& names_;
  std::array<std::vector<std::uint8_t>, 256> by_first_;
};
const Names<kTopCount>& topNames() {
  static const Names<kTopCount> n(kTopNames);
  return n;
}
const Names<kTimesCount>& timesNames() {
  static const Names<kTimesCount> n(kTimesNames);
  return n;
}

// One JSON object's fields: the known ones in slots, the others by name (distinct).
template <std::size_t N>
struct Fields {
  const Names<N>* names = nullptr;
  std::array<Value, N> slot{};
  std::vector<std::string_view> others;
  void clear() {
    slot.fill(Value());
    others.clear();
  }
  void other(std::string_view key) {
    if (std::find(others.begin(), others.end(), key) == others.end()) others.push_back(key);
  }
  std::size_t size() const {
    std::size_t n = others.size();
    for (const Value& v : slot) n += v.kind != Value::Absent;
    return n;
  }
};

// Whether `text` is one valid JSON value, by nlohmann-json's rules (the error path only).
bool validJson(std::string_view text) {
  return nlohmann::json::accept(text.begin(), text.end());
}

// Whether simdjson 3.0.1 can be trusted with a number token: it reads numbers with more than 19
// significant digits wrong (0.33333333333333333333 as 0.1488...), so those, and integers past
// 64 bits, which it refuses, are read the way nlohmann-json reads them.
bool simdjsonReads(std::string_view token) {
  if (token.size() <= 19) return true;
  int digits = 0;
  for (char c : token) {
    if (c == 'e' || c == 'E') break;
    digits += c >= '0' && c <= '9';
  }
  return digits <= 19;
}

error_code readNumber(od::value& v, Value& out) {
  const std::string_view token = v.raw_json_token();
  od::number n;
  if (simdjsonReads(token) && v.get_number().get(n) == SUCCESS) {
    switch (n.get_number_type()) {
      case od::number_type::signed_integer:
        out.kind = Value::Int;
        out.i = n.get_int64();
        return SUCCESS;
      case od::number_type::unsigned_integer:
        out.kind = Value::Uint;
        out.u = n.get_uint64();
        return SUCCESS;
      default:
        out.kind = Value::Real;
        out.d = n.get_double();
        return SUCCESS;
    }
  }
  // A double (or an integer) as nlohmann-json reads it, if it is a JSON number at all.
  const nlohmann::json j = nlohmann::json::parse(token.begin(), token.end(), nullptr, false);
  if (!j.is_number()) return simdjson::NUMBER_ERROR;
  if (j.is_number_unsigned()) {
    out.kind = Value::Uint;
    out.u = j.get<std::uint64_t>();
  } else if (j.is_number_integer()) {
    out.kind = Value::Int;
    out.i = j.get<std::int64_t>();
  } else {
    out.kind = Value::Real;
    out.d = j.get<double>();
  }
  return SUCCESS;
}

// Reads any value into `out`; objects and arrays are only checked (their raw text), not kept.
error_code readValue(od::value v, Value& out) {
  od::json_type type;
  if (error_code e = v.type().get(type)) return e;
  switch (type) {
    case od::json_type::number:
      return readNumber(v, out);
    case od::json_type::string:
      out.kind = Value::String;
      return v.get_string().get(out.s);
    case od::json_type::boolean: {
      bool b = false;
      out.kind = Value::Bool;
      return v.get_bool().get(b);
    }
    case od::json_type::null: {
      bool null = false;
      if (error_code e = v.is_null().get(null)) return e;
      out.kind = Value::Null;
      return null ? SUCCESS : simdjson::N_ATOM_ERROR;
    }
    case od::json_type::object: {
      od::object o;
      std::string_view raw;
      if (error_code e = v.get_object().get(o)) return e;
      if (error_code e = o.raw_json().get(raw)) return e;
      out.kind = Value::Object;
      return validJson(raw) ? SUCCESS : simdjson::TAPE_ERROR;
    }
    case od::json_type::array: {
      od::array a;
      std::string_view raw;
      if (error_code e = v.get_array().get(a)) return e;
      if (error_code e = a.raw_json().get(raw)) return e;
      out.kind = Value::Array;
      return validJson(raw) ? SUCCESS : simdjson::TAPE_ERROR;
    }
  }
  return simdjson::INCORRECT_TYPE;
}

// An unknown field's value: checked, not kept.
error_code checkValue(od::value v) {
  Value ignored;
  return readValue(v, ignored);
}

// Reads an object's fields into `f`: a known one's value through read(id, value, slot), the
// others only checked.
template <std::size_t N, typename Read>
error_code readFields(od::object& o, Fields<N>& f, Read&& read) {
  for (auto field : o) {
    std::string_view key;
    if (error_code e = field.unescaped_key().get(key)) return e;
    const int id = f.names->find(key);
    if (id < 0) {
      f.other(key);
      if (error_code e = checkValue(field.value())) return e;
      continue;
    }
    Value& s = f.slot[std::size_t(id)];
    s = Value();
    if (error_code e = read(id, field.value(), s)) return e;
  }
  return SUCCESS;
}

error_code readTimes(od::value v, Fields<kTimesCount>& times, Value& slot) {
  od::json_type type;
  if (error_code e = v.type().get(type)) return e;
  if (type != od::json_type::object) return readValue(v, slot);
  times.clear();  // a second "time_ms" replaces the first
  slot.kind = Value::Object;
  od::object o;
  if (error_code e = v.get_object().get(o)) return e;
  return readFields(o, times, [](int, od::value value, Value& s) { return readValue(value, s); });
}

// Reads a whole line's object into the slots. Anything but SUCCESS: simdjson found the line bad.
error_code readLine(od::document& doc, Fields<kTopCount>& top, Fields<kTimesCount>& times) {
  od::object o;
  if (error_code e = doc.get_object().get(o)) return e;
  const error_code e = readFields(o, top, [&](int id, od::value value, Value& s) {
    return id == kTimeMs ? readTimes(value, times, s) : readValue(value, s);
  });
  if (e) return e;
  // Nothing may follow the object.
  const char* rest = nullptr;
  return doc.current_location().get(rest) == simdjson::OUT_OF_BOUNDS ? SUCCESS
                                                                     : simdjson::TRAILING_CONTENT;
}

// The rules, over the slots of one object. Every read marks its field, so what the object holds
// beyond the fields read is unknown to this codec, with no list to keep in step. Throws
// std::runtime_error naming the field, caught by decode().
template <std::size_t N>
struct Reader {
  const Fields<N>& f;
  std::array<bool, N> read{};
  bool has(int k) const { return f.slot[std::size_t(k)].kind != Value::Absent; }
  std::string name(int k) const { return std::string((*f.names)[std::size_t(k)]); }
  const Value& at(int k) {
    const Value& v = f.slot[std::size_t(k)];
    if (v.kind == Value::Absent) throw std::runtime_error("missing field '" + name(k) + "'");
    read[std::size_t(k)] = true;
    return v;
  }
  void object(int k) {
    if (at(k).kind != Value::Object) throw std::runtime_error("'" + name(k) + "' not an object");
  }
  // Adds the fields nobody read to `d`; the first one's name (in key order, prefixed with `path`)
  // if none was named yet.
  void unknown(Decoded& d, const std::string& path = {}) const {
    std::size_t n_read = 0;
    for (bool r : read) n_read += r;
    const std::size_t size = f.size();
    if (size <= n_read) return;
    d.unknown_fields += int(size - n_read);
    if (!d.unknown_field.empty()) return;
    std::string_view first;
    bool any = false;  // "" is a key too
    auto consider = [&](std::string_view k) {
      if (!any || k < first) first = k;
      any = true;
    };
    for (std::string_view k : f.others) consider(k);
    for (std::size_t k = 0; k < N; ++k)
      if (has(int(k)) && !read[k]) consider((*f.names)[k]);
    d.unknown_field = path + std::string(first);
  }
  std::int64_t integer(int k) {
    const Value& v = at(k);
    if (!v.integer()) throw std::runtime_error("'" + name(k) + "' not an integer");
    return v.kind == Value::Int ? v.i : static_cast<std::int64_t>(v.u);
  }
  int small_int(int k) {
    std::int64_t v = integer(k);
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
      throw std::runtime_error("'" + name(k) + "' out of range");
    return static_cast<int>(v);
  }
  int rank() {
    int r = small_int(kRank);
    if (r < 0) throw std::runtime_error("'rank' negative");
    return r;
  }
  // Numbers may be null: a non-finite value on the sender's side.
  double real(int k) {
    const Value& v = at(k);
    if (v.kind == Value::Null) return std::numeric_limits<double>::quiet_NaN();
    if (!v.number()) throw std::runtime_error("'" + name(k) + "' not a number");
    return v.kind == Value::Real ? v.d : v.kind == Value::Int ? double(v.i) : double(v.u);
  }
  double real_or(int k, double d) { return has(k) ? real(k) : d; }
  std::int64_t integer_or(int k, std::int64_t d) { return has(k) ? integer(k) : d; }
  std::string text(int k) {
    const Value& v = at(k);
    if (v.kind != Value::String) throw std::runtime_error("'" + name(k) + "' not a string");
    return std::string(v.s);
  }
  std::string text_or(int k) { return has(k) ? text(k) : std::string(); }
};

using TopReader = Reader<kTopCount>;

// The message of a type this codec knows, or nullopt for another type. Unknown fields of nested
// objects are added to `d` here; the caller adds the top level's.
std::optional<Message> decodeKnown(std::string_view type, TopReader& r,
                                   const Fields<kTimesCount>& times, Decoded& d) {
  if (type == "step") {
    Step m;
    m.rank = r.rank();
    m.epoch = r.small_int(kEpoch);
    m.step = r.integer(kStep);
    m.loss = r.real(kLoss);
    m.global_loss = r.real(kGlobalLoss);
    m.samples = r.integer(kSamples);
    m.lr = r.real(kLr);
    m.time = r.real(kTime);
    m.samples_per_s = r.real_or(kSamplesPerS, 0.0);
    m.collectives = r.integer_or(kCollectives, -1);
    m.param_hash = r.text_or(kParamHash);
    m.buffer_hash = r.text_or(kBufferHash);
    if (r.has(kTimeMs)) {
      r.object(kTimeMs);
      Reader<kTimesCount> t{times};
      StepTimes st;
      st.data = t.real_or(kData, 0.0);
      st.forward = t.real_or(kForward, 0.0);
      st.backward = t.real_or(kBackward, 0.0);
      st.comm = t.real_or(kComm, 0.0);
      st.optimizer = t.real_or(kOptimizer, 0.0);
      st.telemetry = t.real_or(kTelemetry, 0.0);
      st.step = t.real_or(kTStep, 0.0);
      st.steps = static_cast<long>(t.integer_or(kTSteps, 0));
      t.unknown(d, "time_ms.");
      m.times = st;
    }
    return m;
  }
  if (type == "hello") {
    Hello m;
    m.v = r.small_int(kV);
    m.token = r.text(kToken);
    m.rank = r.rank();
    m.world = r.small_int(kWorld);
    m.pid = r.integer(kPid);
    m.host = r.text(kHost);
    m.device = r.text(kDevice);
    if (m.world < 1 || m.rank >= m.world) throw std::runtime_error("rank outside world");
    // Without a range (workers before it existed), the peer speaks just the version it writes.
    const std::int64_t lo = r.integer_or(kVMin, m.v), hi = r.integer_or(kVMax, m.v);
    if (lo > m.v || hi < m.v || lo < 0 || hi > std::numeric_limits<int>::max())
      throw std::runtime_error("'v_min'..'v_max' must be a version range around 'v'");
    m.v_min = int(lo);
    m.v_max = int(hi);
    return m;
  }
  if (type == "eval") {
    Eval m;
    m.rank = r.rank();
    m.epoch = r.small_int(kEpoch);
    m.step = r.integer(kStep);
    m.loss = r.real(kLoss);
    if (r.has(kAccuracy)) m.accuracy = r.real(kAccuracy);
    m.samples = r.integer_or(kSamples, 0);
    m.time = r.real_or(kTime, 0.0);
    return m;
  }
  if (type == "event") {
    Event m;
    m.rank = r.rank();
    m.event = r.text(kEvent);
    m.epoch = static_cast<int>(r.integer_or(kEpoch, 0));
    m.step = r.integer_or(kStep, 0);
    m.path = r.text_or(kPath);
    m.detail = r.text_or(kDetail);
    m.total_steps = r.integer_or(kTotalSteps, 0);
    m.time = r.real_or(kTime, 0.0);
    return m;
  }
  if (type == "error") {
    Error m;
    m.rank = r.rank();
    m.message = r.text(kMessage);
    return m;
  }
  if (type == "gauge") {
    Gauge m;
    m.rank = r.rank();
    m.name = r.text(kName);
    if (m.name.empty() || m.name.size() > kMaxGaugeName)
      throw std::runtime_error("'name' must have 1 to " + std::to_string(kMaxGaugeName) +
                               " characters");
    m.value = r.real(kValue);
    m.unit = r.text_or(kUnit);
    m.time = r.real_or(kTime, 0.0);
    m.step = r.integer_or(kStep, 0);
    return m;
  }
  return std::nullopt;
}

void decodeFields(const Fields<kTopCount>& top, const Fields<kTimesCount>& times, Decoded& d) {
  TopReader r{top};
  const std::string type = r.text(kType);
  std::optional<Message> m = decodeKnown(type, r, times, d);
  if (!m) {
    d.ignored = "unknown type '" + type + "'";
    return;
  }
  r.unknown(d);
  d.message = std::move(m);
}

// Per thread: the parser, a padded copy of the line (simdjson reads up to SIMDJSON_PADDING bytes
// past the end), and the slots.
struct State {
  od::parser parser{kMaxLineBytes + 8};
  std::unique_ptr<char[]> line{new char[kMaxLineBytes + 8 + simdjson::SIMDJSON_PADDING]};
  Fields<kTopCount> top;
  Fields<kTimesCount> times;
  State() {
    top.names = &topNames();
    times.names = &timesNames();
  }
};

}  // namespace

Decoded decode(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
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
  thread_local State st;
  std::memcpy(st.line.get(), line.data(), line.size());
  std::memset(st.line.get() + line.size(), 0, simdjson::SIMDJSON_PADDING);
  st.top.clear();
  st.times.clear();
  od::document doc;
  error_code e =
      st.parser.iterate(st.line.get(), line.size(), line.size() + simdjson::SIMDJSON_PADDING)
          .get(doc);
  if (!e) {
    od::json_type type;
    e = doc.type().get(type);
    if (!e && type != od::json_type::object) {
      d.error = validJson(whole) ? "not a JSON object" : "not valid JSON";
      return d;
    }
    if (!e) e = readLine(doc, st.top, st.times);
  }
  if (e) {
    // simdjson refused the line: it is not valid JSON, or (never seen yet) simdjson is stricter
    // than JSON somewhere; say which rather than call valid JSON invalid.
    d.error = validJson(whole)
                  ? std::string("JSON this decoder cannot read: ") + simdjson::error_message(e)
                  : "not valid JSON";
    return d;
  }
  try {
    decodeFields(st.top, st.times, d);
  } catch (const std::exception& ex) {
    d = Decoded();
    d.error = ex.what();
  }
  return d;
}

}  // namespace ddpdesk::wire
