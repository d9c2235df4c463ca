// Reading a line's object into slots with simdjson's On-Demand API (see wire_slots.h).
//
// Errors are rare, and there nlohmann-json's own validator (json::accept, no DOM built) has the
// last word on what is valid JSON: values of unknown fields, objects and arrays are checked the
// same way (their raw text accepted), so a line is never "ignored" or counted where a DOM parser
// would have called it malformed. Numbers simdjson does not read right are read the way
// nlohmann-json always read them (simdjsonReads()).
#include "wire_slots.h"

#include <simdjson.h>

#include <cstring>
#include <memory>

#include <nlohmann/json.hpp>

#include "wire.h"

namespace ddpdesk::wire::detail {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;
using simdjson::SUCCESS;

// Name -> id, by first byte, then each candidate's bytes compared as two 64-bit words.
template <std::size_t N>
class Names {
 public:
  explicit Names(const std::array<std::string_view, N>& names) : names_(names) {
    // Ids grouped by first byte: group b is flat_[first_[b] .. first_[b + 1]).
    std::array<std::uint8_t, 257> count{};
    for (std::string_view name : names) ++count[std::uint8_t(name[0]) + 1];
    for (std::size_t b = 0; b < 256; ++b) first_[b + 1] = std::uint8_t(first_[b] + count[b + 1]);
    std::array<std::uint8_t, 256> next = {};
    for (std::size_t b = 0; b < 256; ++b) next[b] = first_[b];
    for (std::size_t id = 0; id < N; ++id) {
      Word& w = flat_[next[std::uint8_t(names[id][0])]++];
      w.id = std::uint8_t(id);
      w.size = std::uint8_t(names[id].size());
      char bytes[16] = {}, mask[16] = {};
      for (std::size_t i = 0; i < names[id].size(); ++i) bytes[i] = names[id][i], mask[i] = '\xff';
      std::memcpy(w.bytes, bytes, 16);
      std::memcpy(w.mask, mask, 16);
    }
  }
  int find(std::string_view key) const {
    if (key.empty()) return -1;
    for (std::size_t i = first_[std::uint8_t(key[0])]; i < first_[std::uint8_t(key[0]) + 1]; ++i)
      if (names_[flat_[i].id] == key) return flat_[i].id;
    return -1;
  }
  // The id of the key whose raw text (escapes not undone) starts at `raw`, just past its opening
  // quote, when it is one of the names; -1 says nothing (an unknown key, or one with escapes).
  // A name has no '"' or '\\', so the raw text equals it only if the key is exactly the name.
  // The buffer is padded (simdjson's SIMDJSON_PADDING past the end), so reading 16 bytes from a
  // key stays inside it.
  int findRaw(const char* raw) const {
    std::uint64_t text[2];
    std::memcpy(text, raw, 16);
    const std::uint8_t b = std::uint8_t(raw[0]);
    for (std::size_t i = first_[b]; i < first_[b + 1]; ++i) {
      const Word& w = flat_[i];
      if (((text[0] & w.mask[0]) ^ w.bytes[0]) == 0 && ((text[1] & w.mask[1]) ^ w.bytes[1]) == 0 &&
          raw[w.size] == '"')
        return w.id;
    }
    return -1;
  }

 private:
  struct Word {
    std::uint64_t bytes[2];  // the name, zero-padded to 16 bytes
    std::uint64_t mask[2];   // 0xff over the name's bytes
    std::uint8_t size;
    std::uint8_t id;
  };
  const std::array<std::string_view, N>& names_;
  std::array<Word, N> flat_{};
  std::array<std::uint8_t, 257> first_{};
};
// Every name is compared as two 64-bit words, so none may be longer than 16 bytes.
template <std::size_t N>
constexpr bool fitInTwoWords(const std::array<std::string_view, N>& names) {
  for (std::string_view name : names)
    if (name.empty() || name.size() > 16) return false;
  return true;
}
static_assert(fitInTwoWords(kTopNames) && fitInTwoWords(kTimesNames), "a name over 16 bytes");

const Names<kTopCount>& topNames() {
  static const Names<kTopCount> n(kTopNames);
  return n;
}
const Names<kTimesCount>& timesNames() {
  static const Names<kTimesCount> n(kTimesNames);
  return n;
}

// Whether simdjson 3.0.1 can be trusted with a number token. It reads the digits into a 64-bit
// integer and decides whether that overflowed by counting digits, but it counts the '.' of
// "0.ddd" as one of the leading zeros: "0.33333333333333333333" (20 significant digits) passes as
// 19 and comes out as 0.1488... A token whose significant digits (leading zeros and '.' not
// counted) are at most 19 cannot overflow, so it is trusted; the others, and integers past 64
// bits, which simdjson refuses, are read the way nlohmann-json reads them.
bool simdjsonReads(std::string_view token) {
  if (token.size() <= 19) return true;
  std::size_t i = token[0] == '-';
  while (i < token.size() && (token[i] == '0' || token[i] == '.')) ++i;
  if (token.size() - i <= 19) return true;  // at most that many digits from the first nonzero one
  int digits = 0;                           // those of the mantissa, from the first nonzero one
  for (; i < token.size() && token[i] != 'e' && token[i] != 'E'; ++i)
    digits += token[i] >= '0' && token[i] <= '9';
  return digits <= 19;
}

simdjson_inline error_code readNumber(od::value& v, Value& out) {
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

// An object or array: its raw text checked as JSON, nothing kept.
template <typename Container>
error_code checkRaw(Container& c, Value::Kind kind, Value& out) {
  std::string_view raw;
  if (error_code e = c.raw_json().get(raw)) return e;
  out.kind = kind;
  return validJson(raw) ? SUCCESS : simdjson::TAPE_ERROR;
}

// Reads any value into `out`; objects and arrays are only checked (their raw text), not kept.
simdjson_inline error_code readValue(od::value& v, Value& out) {
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
      if (error_code e = v.get_object().get(o)) return e;
      return checkRaw(o, Value::Object, out);
    }
    case od::json_type::array: {
      od::array a;
      if (error_code e = v.get_array().get(a)) return e;
      return checkRaw(a, Value::Array, out);
    }
  }
  return simdjson::INCORRECT_TYPE;
}

// Reads an object's fields into `f`: a known one's value through read(id, value, slot), the
// others only checked.
template <std::size_t N, typename Read>
error_code readFields(od::object& o, const Names<N>& names, Fields<N>& f, Read&& read) {
  for (auto result : o) {
    // Used in place: copying a field or its value (as get() and value() by value do) reads back
    // as one 16-byte load what was just stored as two smaller ones, a store-forwarding stall that
    // cost more than the rest of the field's reading.
    if (error_code e = result.error()) return e;
    od::field& field = result.value_unsafe();
    // The wire's own keys are matched in place; only others are unescaped (a copy through
    // simdjson's string buffer) and looked up again.
    int id = names.findRaw(field.key().raw());
    if (id < 0) {
      std::string_view key;
      if (error_code e = field.unescaped_key().get(key)) return e;
      id = names.find(key);
      if (id < 0) {
        f.other(key);
        Value ignored;
        if (error_code e = readValue(field.value(), ignored)) return e;
        continue;
      }
    }
    if (error_code e = read(id, field.value(), f.set(std::size_t(id)))) return e;
  }
  return SUCCESS;
}

error_code readTimes(od::value& v, Fields<kTimesCount>& times, Value& slot) {
  od::json_type type;
  if (error_code e = v.type().get(type)) return e;
  if (type != od::json_type::object) return readValue(v, slot);
  times.clear();  // a second "time_ms" replaces the first
  slot.kind = Value::Object;
  od::object o;
  if (error_code e = v.get_object().get(o)) return e;
  return readFields(o, timesNames(), times,
                    [](int, od::value& value, Value& s) { return readValue(value, s); });
}

// Reads a whole line's object into the slots. Anything but SUCCESS: simdjson found the line bad.
error_code readLine(od::document& doc, LineSlots& out) {
  od::object o;
  if (error_code e = doc.get_object().get(o)) return e;
  const error_code e = readFields(o, topNames(), out.top, [&](int id, od::value& value, Value& s) {
    return id == kTimeMs ? readTimes(value, out.times, s) : readValue(value, s);
  });
  if (e) return e;
  // Nothing may follow the object.
  const char* rest = nullptr;
  return doc.current_location().get(rest) == simdjson::OUT_OF_BOUNDS ? SUCCESS
                                                                     : simdjson::TRAILING_CONTENT;
}

// Per thread: the parser and a padded copy of the line (simdjson reads up to SIMDJSON_PADDING
// bytes past the end), allocated once.
struct State {
  od::parser parser{kMaxLineBytes + 8};
  std::unique_ptr<char[]> line{new char[kMaxLineBytes + 8 + simdjson::SIMDJSON_PADDING]};
};

}  // namespace

bool validJson(std::string_view text) {
  return nlohmann::json::accept(text.begin(), text.end());
}

SlotsRead readSlots(std::string_view line, LineSlots& out, const char** why) {
  thread_local State st;
  std::memcpy(st.line.get(), line.data(), line.size());
  std::memset(st.line.get() + line.size(), 0, simdjson::SIMDJSON_PADDING);
  out.top.clear();
  out.times.clear();
  od::document doc;
  error_code e =
      st.parser.iterate(st.line.get(), line.size(), line.size() + simdjson::SIMDJSON_PADDING)
          .get(doc);
  if (!e) {
    od::json_type type;
    e = doc.type().get(type);
    if (!e && type != od::json_type::object) return SlotsRead::NotObject;
    if (!e) e = readLine(doc, out);
  }
  if (!e) return SlotsRead::Ok;
  *why = simdjson::error_message(e);
  return SlotsRead::Refused;
}

}  // namespace ddpdesk::wire::detail
