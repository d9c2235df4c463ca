#include "rank_env.h"

#include <cstdlib>
#include <string>

namespace ddpdesk {
namespace {

// Parses a non-negative integer variable; empty optional when unset, error text when malformed.
struct IntVar {
  bool present = false;
  int value = 0;
  std::string error;
};

IntVar int_var(const EnvLookup& get, const char* name, int lo, int hi) {
  IntVar v;
  const char* raw = get(name);
  if (!raw) return v;
  v.present = true;
  std::string s(raw);
  std::size_t pos = 0;
  long long n = 0;
  try {
    n = std::stoll(s, &pos, 10);
  } catch (...) {
    pos = 0;
  }
  if (s.empty() || pos != s.size() || n < lo || n > hi) {
    v.error = std::string("invalid environment ") + name + "='" + s +
              "': must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
    return v;
  }
  v.value = static_cast<int>(n);
  return v;
}

}  // namespace

RankEnvResult read_rank_env(const EnvLookup& get) {
  RankEnvResult out;
  RankEnv env;
  constexpr int kMaxWorld = 1 << 20;
  auto fail = [&](const std::string& e) {
    out.error = e;
    return out;
  };
  IntVar rank = int_var(get, "RANK", 0, kMaxWorld);
  IntVar world = int_var(get, "WORLD_SIZE", 1, kMaxWorld);
  if (!rank.error.empty()) return fail(rank.error);
  if (!world.error.empty()) return fail(world.error);

  if (rank.present || world.present) {
    if (!rank.present || !world.present)
      return fail("incomplete environment: RANK and WORLD_SIZE must be set together");
    env.source = "torchrun";
    env.rank = rank.value;
    env.world = world.value;
    IntVar lr = int_var(get, "LOCAL_RANK", 0, kMaxWorld);
    IntVar lw = int_var(get, "LOCAL_WORLD_SIZE", 1, kMaxWorld);
    if (!lr.error.empty()) return fail(lr.error);
    if (!lw.error.empty()) return fail(lw.error);
    env.local_rank = lr.present ? lr.value : env.rank;
    env.local_world = lw.present ? lw.value : env.world;
  } else {
    IntVar procid = int_var(get, "SLURM_PROCID", 0, kMaxWorld);
    IntVar ntasks = int_var(get, "SLURM_NTASKS", 1, kMaxWorld);
    if (!procid.error.empty()) return fail(procid.error);
    if (!ntasks.error.empty()) return fail(ntasks.error);
    if (procid.present && ntasks.present) {
      env.source = "slurm";
      env.rank = procid.value;
      env.world = ntasks.value;
      IntVar lid = int_var(get, "SLURM_LOCALID", 0, kMaxWorld);
      IntVar ntpn = int_var(get, "SLURM_NTASKS_PER_NODE", 1, kMaxWorld);
      if (!lid.error.empty()) return fail(lid.error);
      env.local_rank = lid.present ? lid.value : 0;
      env.local_world = ntpn.present && ntpn.error.empty() ? ntpn.value : 1;
    }
  }
  if (env.rank >= env.world)
    return fail("invalid rank " + std::to_string(env.rank) + ": must be below world size " +
                std::to_string(env.world));
  if (env.local_rank >= env.local_world) env.local_world = env.local_rank + 1;

  if (const char* addr = get("MASTER_ADDR"); addr && *addr) env.master_addr = addr;
  IntVar port = int_var(get, "MASTER_PORT", 1, 65535);
  if (!port.error.empty()) return fail(port.error);
  if (env.world > 1 && !port.present)
    return fail("missing environment MASTER_PORT: needed when WORLD_SIZE > 1");
  env.master_port = port.value;

  const char* agent = get("TORCHELASTIC_USE_AGENT_STORE");
  env.agent_store = agent && std::string(agent) == "True";
  IntVar restarts = int_var(get, "TORCHELASTIC_RESTART_COUNT", 0, kMaxWorld);
  env.restart_count = restarts.present && restarts.error.empty() ? restarts.value : 0;
  out.env = env;
  return out;
}

RankEnvResult read_rank_env() {
  return read_rank_env([](const char* n) { return std::getenv(n); });
}

}  // namespace ddpdesk
