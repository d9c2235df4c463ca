// The rules of each message type, over the slots of one line (see wire_rules.h).
#include "wire_rules.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

namespace ddpdesk::wire::detail {
namespace {

// A broken rule: out of line, so that the reads below stay small enough to inline (every line
// makes a dozen of them; hardly any breaks one).
[[noreturn, gnu::cold, gnu::noinline]] void broken(std::string_view before, std::string_view field,
                                                   std::string_view after) {
  throw std::runtime_error(std::string(before) + std::string(field) + std::string(after));
}

// The rules, over the slots of one object. Every read marks its field, so what the object holds
// beyond the fields read is unknown to this codec, with no list to keep in step. Throws
// std::runtime_error naming the field, caught by decode().
template <std::size_t N>
struct Reader {
  const Fields<N>& f;
  const std::array<std::string_view, N>& names;
  std::uint64_t read = 0;  // a bit per slot
  bool has(int k) const { return f.has(std::size_t(k)); }
  std::string_view name(int k) const { return names[std::size_t(k)]; }
  const Value& at(int k) {
    if (!has(k)) broken("missing field '", name(k), "'");
    read |= std::uint64_t(1) << k;
    return f.at(std::size_t(k));
  }
  void object(int k) {
    if (at(k).kind != Value::Object) broken("'", name(k), "' not an object");
  }
  // Adds the fields nobody read to `d`; the first one's name (in key order, prefixed with `path`)
  // if none was named yet.
  void unknown(Decoded& d, const std::string& path = {}) const {
    const std::size_t n_read = std::size_t(__builtin_popcountll(read));
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
      if (has(int(k)) && !((read >> k) & 1)) consider(names[k]);
    d.unknown_field = path + std::string(first);
  }
  std::int64_t integer(int k) {
    const Value& v = at(k);
    if (!v.integer()) broken("'", name(k), "' not an integer");
    return v.kind == Value::Int ? v.i : static_cast<std::int64_t>(v.u);
  }
  int small_int(int k) {
    std::int64_t v = integer(k);
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
      broken("'", name(k), "' out of range");
    return static_cast<int>(v);
  }
  int rank() {
    int r = small_int(kRank);
    if (r < 0) broken("'", "rank", "' negative");
    return r;
  }
  // Numbers may be null: a non-finite value on the sender's side.
  double real(int k) {
    const Value& v = at(k);
    if (v.kind == Value::Null) return std::numeric_limits<double>::quiet_NaN();
    if (!v.number()) broken("'", name(k), "' not a number");
    return v.kind == Value::Real ? v.d : v.kind == Value::Int ? double(v.i) : double(v.u);
  }
  double real_or(int k, double d) { return has(k) ? real(k) : d; }
  std::int64_t integer_or(int k, std::int64_t d) { return has(k) ? integer(k) : d; }
  std::string_view text_view(int k) {
    const Value& v = at(k);
    if (v.kind != Value::String) broken("'", name(k), "' not a string");
    return v.s;
  }
  std::string text(int k) { return std::string(text_view(k)); }
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
      Reader<kTimesCount> t{times, kTimesNames};
      StepTimes st;
      st.data = t.real_or(kData, 0.0);
      st.forward = t.real_or(kForward, 0.0);
      st.backward = t.real_or(kBackward, 0.0);
      st.comm_measured = t.has(kComm);
      st.comm = t.real_or(kComm, 0.0);
      st.optimizer = t.real_or(kOptimizer, 0.0);
      st.telemetry = t.real_or(kTelemetry, 0.0);
      st.other = t.real_or(kOther, 0.0);
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
    if (r.has(kPeer)) {
      m.peer = r.small_int(kPeer);
      if (m.peer < 0) broken("'", "peer", "' negative");
    }
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

}  // namespace

void applyRules(const LineSlots& slots, Decoded& d) {
  TopReader r{slots.top, kTopNames};
  const std::string_view type = r.text_view(kType);
  std::optional<Message> m = decodeKnown(type, r, slots.times, d);
  if (!m) {
    d.ignored = "unknown type '" + std::string(type) + "'";
    return;
  }
  r.unknown(d);
  d.message = std::move(m);
}

}  // namespace ddpdesk::wire::detail
