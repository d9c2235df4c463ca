// The wire encoder, with nlohmann-json (encoding is not where the time goes), and the helpers
// shared by both sides. The decoder is wire_decode.cpp (simdjson).
#include "wire.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace ddpdesk::wire {
namespace {

using json = nlohmann::json;

json num(double d) {
  return std::isfinite(d) ? json(d) : json(nullptr);
}

struct Encoder {
  json operator()(const Hello& m) const {
    return {{"type", "hello"},  {"v", m.v},          {"v_min", m.v_min}, {"v_max", m.v_max},
            {"token", m.token}, {"rank", m.rank},    {"world", m.world}, {"pid", m.pid},
            {"host", m.host},   {"device", m.device}};
  }
  json operator()(const Step& m) const {
    json j = {{"type", "step"},       {"rank", m.rank},
              {"epoch", m.epoch},     {"step", m.step},
              {"loss", num(m.loss)},  {"global_loss", num(m.global_loss)},
              {"samples", m.samples}, {"lr", num(m.lr)},
              {"time", num(m.time)},  {"samples_per_s", num(m.samples_per_s)}};
    if (m.collectives >= 0) j["collectives"] = m.collectives;
    if (!m.param_hash.empty()) j["param_hash"] = m.param_hash;
    if (!m.buffer_hash.empty()) j["buffer_hash"] = m.buffer_hash;
    if (m.times) {
      const StepTimes& t = *m.times;
      json& tj = j["time_ms"] = {{"data", num(t.data)},
                                 {"forward", num(t.forward)},
                                 {"backward", num(t.backward)},
                                 {"optimizer", num(t.optimizer)},
                                 {"telemetry", num(t.telemetry)},
                                 {"step", num(t.step)},
                                 {"steps", t.steps}};
      if (t.comm_measured) tj["comm"] = num(t.comm);
      if (t.other != 0) tj["other"] = num(t.other);
    }
    return j;
  }
  json operator()(const Eval& m) const {
    json j = {{"type", "eval"},      {"rank", m.rank},       {"epoch", m.epoch},   {"step", m.step},
              {"loss", num(m.loss)}, {"samples", m.samples}, {"time", num(m.time)}};
    if (m.accuracy) j["accuracy"] = num(*m.accuracy);
    return j;
  }
  json operator()(const Event& m) const {
    json j = {{"type", "event"},  {"rank", m.rank}, {"event", m.event},
              {"epoch", m.epoch}, {"step", m.step}, {"time", num(m.time)}};
    if (!m.path.empty()) j["path"] = m.path;
    if (!m.detail.empty()) j["detail"] = m.detail;
    if (m.total_steps) j["total_steps"] = m.total_steps;
    return j;
  }
  json operator()(const Error& m) const {
    json j = {{"type", "error"}, {"rank", m.rank}, {"message", m.message}};
    if (m.peer >= 0) j["peer"] = m.peer;
    return j;
  }
  json operator()(const Gauge& m) const {
    return {{"type", "gauge"}, {"rank", m.rank},      {"name", m.name}, {"value", num(m.value)},
            {"unit", m.unit},  {"time", num(m.time)}, {"step", m.step}};
  }
};

}  // namespace

std::string encode(const Message& m) {
  // Invalid UTF-8 in free text is replaced rather than throwing: telemetry must never fail.
  return std::visit(Encoder{}, m).dump(-1, ' ', false, json::error_handler_t::replace);
}

const char* type_name(const Message& m) {
  static const char* names[] = {"hello", "step", "eval", "event", "error", "gauge"};
  static_assert(std::size(names) == std::variant_size_v<Message>);
  return names[m.index()];
}

int rank_of(const Message& m) {
  return std::visit([](const auto& x) { return x.rank; }, m);
}

bool compatible(const Hello& h) {
  return h.v_min <= kMaxVersion && h.v_max >= kMinVersion;
}

}  // namespace ddpdesk::wire
