#include "worker_settings.h"

#include <cerrno>
#include <cstdlib>
#include <initializer_list>
#include <limits>

namespace ddpdesk {
namespace {

std::string text(const EnvLookup& get, const char* name) {
  const char* raw = get(name);
  return raw ? raw : "";
}

std::string invalid(const char* name, const std::string& value, const std::string& allowed) {
  return std::string("invalid environment ") + name + "='" + value + "': " + allowed;
}

// One of `choices` (unset or empty: the first).
bool choice(const EnvLookup& get, const char* name, std::initializer_list<const char*> choices,
            std::string* out, std::string* error) {
  const std::string v = text(get, name);
  std::string allowed = "must be one of";
  for (const char* c : choices) {
    if (v.empty() ? c == *choices.begin() : v == c) {
      *out = c;
      return true;
    }
    allowed += std::string(c == *choices.begin() ? " " : ", ") + c;
  }
  *error = invalid(name, v, allowed);
  return false;
}

[[maybe_unused]] bool parse_int(const std::string& s, std::int64_t lo, std::int64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || n < lo) return false;
  *out = n;
  return true;
}

#ifdef DDPDESK_FAULT_INJECTION
bool read_faults(const EnvLookup& get, FaultSettings* f, std::string* error) {
  if (const std::string v = text(get, "DDPDESK_FAULT_NAN_AT_STEP"); !v.empty()) {
    if (!parse_int(v, 1, &f->nan_at_step)) {
      *error = invalid("DDPDESK_FAULT_NAN_AT_STEP", v, "must be an optimizer step from 1");
      return false;
    }
  }
  if (const std::string v = text(get, "DDPDESK_FAULT_KILL_IN_CHECKPOINT"); !v.empty()) {
    if (!parse_int(v, 0, &f->kill_in_checkpoint)) {
      *error = invalid("DDPDESK_FAULT_KILL_IN_CHECKPOINT", v, "must be an optimizer step from 0");
      return false;
    }
  }
  if (const std::string v = text(get, "DDPDESK_FAULT_SLOW_RANK"); !v.empty()) {
    const auto colon = v.find(':');
    std::int64_t rank = -1, ms = -1;
    if (colon == std::string::npos || !parse_int(v.substr(0, colon), 0, &rank) ||
        !parse_int(v.substr(colon + 1), 1, &ms) || rank > std::numeric_limits<int>::max()) {
      *error = invalid("DDPDESK_FAULT_SLOW_RANK", v, "must be RANK:MS (e.g. 1:20)");
      return false;
    }
    f->slow_rank = static_cast<int>(rank);
    f->slow_ms = static_cast<double>(ms);
  }
  if (const std::string v = text(get, "DDPDESK_FAULT_HOLD_RANK"); !v.empty()) {
    const auto colon = v.find(':');
    std::int64_t rank = -1, step = -1;
    if (colon == std::string::npos || !parse_int(v.substr(0, colon), 0, &rank) ||
        !parse_int(v.substr(colon + 1), 1, &step) || rank > std::numeric_limits<int>::max()) {
      *error = invalid("DDPDESK_FAULT_HOLD_RANK", v, "must be RANK:STEP (e.g. 1:5)");
      return false;
    }
    f->hold_rank = static_cast<int>(rank);
    f->hold_step = step;
  }
  if (const std::string v = text(get, "DDPDESK_FAULT_OOM_ABOVE"); !v.empty()) {
    // N, N:RANK or N:RANK:STEP; RANK * is every rank.
    const auto c1 = v.find(':');
    const auto c2 = c1 == std::string::npos ? c1 : v.find(':', c1 + 1);
    std::int64_t n = -1, rank = -1, step = 1;
    bool ok = parse_int(v.substr(0, c1), 0, &n);
    if (ok && c1 != std::string::npos) {
      const std::string r = v.substr(c1 + 1, c2 == std::string::npos ? c2 : c2 - c1 - 1);
      ok = r == "*" || (parse_int(r, 0, &rank) && rank <= std::numeric_limits<int>::max());
    }
    if (ok && c2 != std::string::npos) ok = parse_int(v.substr(c2 + 1), 1, &step);
    if (!ok) {
      *error = invalid("DDPDESK_FAULT_OOM_ABOVE", v,
                       "must be N, N:RANK or N:RANK:STEP (e.g. 16:1:5 or 16:*:5), N from 0, "
                       "STEP from 1");
      return false;
    }
    f->oom_above = n;
    f->oom_rank = static_cast<int>(rank);
    f->oom_step = step;
  }
  if (const std::string v = text(get, "DDPDESK_FAULT_GRAPHED_CPU"); !v.empty()) {
    if (v != "0" && v != "1") {
      *error = invalid("DDPDESK_FAULT_GRAPHED_CPU", v, "must be 0 or 1");
      return false;
    }
    f->graphed_cpu = v == "1";
  }
  return true;
}
#else
bool read_faults(const EnvLookup& get, FaultSettings*, std::string* error) {
  for (const char* name :
       {"DDPDESK_FAULT_NAN_AT_STEP", "DDPDESK_FAULT_KILL_IN_CHECKPOINT", "DDPDESK_FAULT_SLOW_RANK",
        "DDPDESK_FAULT_HOLD_RANK", "DDPDESK_FAULT_OOM_ABOVE", "DDPDESK_FAULT_GRAPHED_CPU"}) {
    if (!text(get, name).empty()) {
      *error = invalid(name, text(get, name),
                       "fault injection is not built in (configure with "
                       "-DDDPDESK_FAULT_INJECTION=ON)");
      return false;
    }
  }
  return true;
}
#endif

}  // namespace

bool fault_injection_built() {
#ifdef DDPDESK_FAULT_INJECTION
  return true;
#else
  return false;
#endif
}

WorkerSettingsResult read_worker_settings(const EnvLookup& get) {
  WorkerSettingsResult r;
  WorkerSettings& s = r.settings;
  s.monitor = text(get, "DDPDESK_MONITOR");
  s.token = text(get, "DDPDESK_TOKEN");
  s.stop_file = text(get, "DDPDESK_STOP_FILE");
  s.fmnist_dir = text(get, "DDPDESK_FMNIST_DIR");
  s.gloo_socket_ifname = text(get, "GLOO_SOCKET_IFNAME");

  std::string comm;
  if (!choice(get, "DDPDESK_COMM", {"auto", "shm", "gloo"}, &comm, &r.error)) return r;
  s.cpu_comm = comm == "shm"    ? WorkerSettings::CpuComm::Shm
               : comm == "gloo" ? WorkerSettings::CpuComm::Gloo
                                : WorkerSettings::CpuComm::Auto;
  if (!choice(get, "DDPDESK_GLOO_MODE", {"auto", "async", "sync", "busy"}, &s.gloo_mode, &r.error))
    return r;
  std::string flag;
  if (!choice(get, "DDPDESK_FORCE_COMM", {"0", "1"}, &flag, &r.error)) return r;
  s.force_comm = flag == "1";
  if (!choice(get, "DDPDESK_DEBUG_STEPS", {"0", "1"}, &flag, &r.error)) return r;
  s.debug_steps = flag == "1";
  if (!text(get, "DDPDESK_OVERLAP").empty()) {
    if (!choice(get, "DDPDESK_OVERLAP", {"0", "1"}, &flag, &r.error)) return r;
    s.overlap = flag == "1";
  }
  read_faults(get, &s.faults, &r.error);
  return r;
}

WorkerSettingsResult read_worker_settings() {
  return read_worker_settings([](const char* n) { return std::getenv(n); });
}

}  // namespace ddpdesk
