// The wire decoder as it was before simdjson: nlohmann-json's DOM, then the same rules. Kept only
// here, as the peer the benchmarks measure the product's decoder against (and check it agrees
// with, message for message). Not part of the product.
#include "wire_decode_nlohmann.h"

#include <algorithm>
#include <array>
#include <limits>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace ddpdesk::bench {
namespace {

using json = nlohmann::json;
using namespace ddpdesk::wire;

// Field readers that throw std::runtime_error with the field name, caught by decode(). Every field
// goes through at(), which notes its name: what the object holds beyond that is unknown to this
// codec, so the known fields are exactly the ones the decoder reads, with no list to keep in step.
struct Reader {
  const json& j;
  mutable std::array<const char*, 24> read{};
  mutable std::size_t n_read = 0;
  const json& at(const char* k) const {
    auto it = j.find(k);
    if (it == j.end()) throw std::runtime_error(std::string("missing field '") + k + "'");
    if (n_read < read.size()) read[n_read] = k;
    ++n_read;
    return *it;
  }
  const json& object(const char* k) const {
    const json& v = at(k);
    if (!v.is_object()) throw std::runtime_error(std::string("'") + k + "' not an object");
    return v;
  }
  // Adds the fields nobody read to `d` (the first one's name prefixed with `path`).
  void unknown(Decoded& d, const std::string& path = {}) const {
    if (j.size() <= n_read) return;
    d.unknown_fields += int(j.size() - n_read);
    if (!d.unknown_field.empty()) return;
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::size_t m = std::min(n_read, read.size());
      if (std::none_of(read.begin(), read.begin() + m,
                       [&](const char* k) { return it.key() == k; })) {
        d.unknown_field = path + it.key();
        return;
      }
    }
  }
  std::int64_t integer(const char* k) const {
    const json& v = at(k);
    if (!v.is_number_integer()) throw std::runtime_error(std::string("'") + k + "' not an integer");
    return v.get<std::int64_t>();
  }
  int small_int(const char* k) const {
    std::int64_t v = integer(k);
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
      throw std::runtime_error(std::string("'") + k + "' out of range");
    return static_cast<int>(v);
  }
  int rank() const {
    int r = small_int("rank");
    if (r < 0) throw std::runtime_error("'rank' negative");
    return r;
  }
  // Numbers may be null: a non-finite value on the sender's side.
  double real(const char* k) const {
    const json& v = at(k);
    if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!v.is_number()) throw std::runtime_error(std::string("'") + k + "' not a number");
    return v.get<double>();
  }
  double real_or(const char* k, double d) const { return j.contains(k) ? real(k) : d; }
  std::int64_t integer_or(const char* k, std::int64_t d) const {
    return j.contains(k) ? integer(k) : d;
  }
  std::string text(const char* k) const {
    const json& v = at(k);
    if (!v.is_string()) throw std::runtime_error(std::string("'") + k + "' not a string");
    return v.get<std::string>();
  }
  std::string text_or(const char* k) const { return j.contains(k) ? text(k) : std::string(); }
};

// The message of a type this codec knows, or nullopt for another type. Unknown fields of nested
// objects are added to `d` here; the caller adds the top level's.
std::optional<Message> decode_known(const std::string& type, const Reader& r, Decoded& d) {
  const json& j = r.j;
  if (type == "step") {
    Step m;
    m.rank = r.rank();
    m.epoch = r.small_int("epoch");
    m.step = r.integer("step");
    m.loss = r.real("loss");
    m.global_loss = r.real("global_loss");
    m.samples = r.integer("samples");
    m.lr = r.real("lr");
    m.time = r.real("time");
    m.samples_per_s = r.real_or("samples_per_s", 0.0);
    m.collectives = r.integer_or("collectives", -1);
    m.param_hash = r.text_or("param_hash");
    m.buffer_hash = r.text_or("buffer_hash");
    if (j.contains("time_ms")) {
      Reader t{r.object("time_ms")};
      StepTimes st;
      st.data = t.real_or("data", 0.0);
      st.forward = t.real_or("forward", 0.0);
      st.backward = t.real_or("backward", 0.0);
      st.comm = t.real_or("comm", 0.0);
      st.optimizer = t.real_or("optimizer", 0.0);
      st.telemetry = t.real_or("telemetry", 0.0);
      st.step = t.real_or("step", 0.0);
      st.steps = static_cast<long>(t.integer_or("steps", 0));
      t.unknown(d, "time_ms.");
      m.times = st;
    }
    return m;
  }
  if (type == "hello") {
    Hello m;
    m.v = r.small_int("v");
    m.token = r.text("token");
    m.rank = r.rank();
    m.world = r.small_int("world");
    m.pid = r.integer("pid");
    m.host = r.text("host");
    m.device = r.text("device");
    if (m.world < 1 || m.rank >= m.world) throw std::runtime_error("rank outside world");
    // Without a range (workers before it existed), the peer speaks just the version it writes.
    const std::int64_t lo = r.integer_or("v_min", m.v), hi = r.integer_or("v_max", m.v);
    if (lo > m.v || hi < m.v || lo < 0 || hi > std::numeric_limits<int>::max())
      throw std::runtime_error("'v_min'..'v_max' must be a version range around 'v'");
    m.v_min = int(lo);
    m.v_max = int(hi);
    return m;
  }
  if (type == "eval") {
    Eval m;
    m.rank = r.rank();
    m.epoch = r.small_int("epoch");
    m.step = r.integer("step");
    m.loss = r.real("loss");
    if (j.contains("accuracy")) m.accuracy = r.real("accuracy");
    m.samples = r.integer_or("samples", 0);
    m.time = r.real_or("time", 0.0);
    return m;
  }
  if (type == "event") {
    Event m;
    m.rank = r.rank();
    m.event = r.text("event");
    m.epoch = static_cast<int>(r.integer_or("epoch", 0));
    m.step = r.integer_or("step", 0);
    m.path = r.text_or("path");
    m.detail = r.text_or("detail");
    m.total_steps = r.integer_or("total_steps", 0);
    m.time = r.real_or("time", 0.0);
    return m;
  }
  if (type == "error") {
    Error m;
    m.rank = r.rank();
    m.message = r.text("message");
    return m;
  }
  if (type == "gauge") {
    Gauge m;
    m.rank = r.rank();
    m.name = r.text("name");
    if (m.name.empty() || m.name.size() > kMaxGaugeName)
      throw std::runtime_error("'name' must have 1 to " + std::to_string(kMaxGaugeName) +
                               " characters");
    m.value = r.real("value");
    m.unit = r.text_or("unit");
    m.time = r.real_or("time", 0.0);
    m.step = r.integer_or("step", 0);
    return m;
  }
  return std::nullopt;
}

void decode_object(const json& j, Decoded& d) {
  Reader r{j};
  const std::string type = r.text("type");
  std::optional<Message> m = decode_known(type, r, d);
  if (!m) {
    d.ignored = "unknown type '" + type + "'";
    return;
  }
  r.unknown(d);
  d.message = std::move(m);
}

}  // namespace

Decoded decodeWithNlohmann(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  Decoded d;
  if (line.size() > kMaxLineBytes) {
    d.error = "line longer than " + std::to_string(kMaxLineBytes) + " bytes";
    return d;
  }
  json j = json::parse(line.begin(), line.end(), nullptr, false);
  if (j.is_discarded()) {
    d.error = "not valid JSON";
    return d;
  }
  if (!j.is_object()) {
    d.error = "not a JSON object";
    return d;
  }
  try {
    decode_object(j, d);
  } catch (const std::exception& e) {
    d = Decoded();
    d.error = e.what();
  }
  return d;
}

}  // namespace ddpdesk::bench
