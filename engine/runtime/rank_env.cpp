#include "rank_env.h"

#include "slurm_env.h"

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

constexpr int kMaxWorld = 1 << 20;

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

// This node's task count under Slurm: the step's compressed list ("2(x3),1"; the job's when
// there is no step), indexed by the node's position in the step (SLURM_NODEID). Slurm sets
// SLURM_NTASKS_PER_NODE only when --ntasks-per-node was given, so it is not read.
int slurm_local_world(const EnvLookup& get, std::string* error) {
  const char* name = "SLURM_STEP_TASKS_PER_NODE";
  const char* raw = get(name);
  if (!raw) raw = get(name = "SLURM_TASKS_PER_NODE");
  if (!raw) return 1;  // srun always sets it; without it, assume nothing is shared
  auto counts = slurm::expand_tasks_per_node(raw);
  if (!counts) {
    *error = std::string("invalid environment ") + name + "='" + raw +
             "': must be task counts like 2(x3),1";
    return 1;
  }
  IntVar node = int_var(get, "SLURM_NODEID", 0, kMaxWorld);
  if (!node.error.empty()) {
    *error = node.error;
    return 1;
  }
  if (!node.present) {
    for (int c : *counts)
      if (c != counts->front()) {
        *error = std::string("missing environment SLURM_NODEID: needed to read ") + name + "='" +
                 raw + "'";
        return 1;
      }
    return counts->front();
  }
  if (node.value >= static_cast<int>(counts->size())) {
    *error = "invalid environment SLURM_NODEID='" + std::to_string(node.value) + "': " + name +
             "='" + raw + "' lists " + std::to_string(counts->size()) + " nodes";
    return 1;
  }
  return (*counts)[node.value];
}

// MASTER_ADDR/MASTER_PORT when the user set none under Slurm: the step's first node and a
// port derived from the job id, the same on every rank of the job.
std::string slurm_defaults(const EnvLookup& get, RankEnv* env, bool need_addr, bool need_port) {
  if (need_addr) {
    const char* name = "SLURM_STEP_NODELIST";
    const char* raw = get(name);
    if (!raw) raw = get(name = "SLURM_JOB_NODELIST");
    if (raw) {
      auto host = slurm::first_host(raw);
      if (!host)
        return std::string("invalid environment ") + name + "='" + raw +
               "': must be a Slurm node list like node[01-03,07],gpu5";
      env->master_addr = *host;
    }
  }
  if (need_port) {
    const char* name = "SLURM_JOB_ID";
    if (!get(name)) name = "SLURM_JOBID";
    IntVar job = int_var(get, name, 0, 2147483647);
    if (!job.error.empty()) return job.error;
    if (job.present) env->master_port = slurm::port_for_job(job.value);
  }
  return {};
}

}  // namespace

RankEnvResult read_rank_env(const EnvLookup& get) {
  RankEnvResult out;
  RankEnv env;
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
      if (!lid.error.empty()) return fail(lid.error);
      env.local_rank = lid.present ? lid.value : 0;
      std::string error;
      env.local_world = slurm_local_world(get, &error);
      if (!error.empty()) return fail(error);
      if (env.local_rank >= env.local_world)
        return fail("invalid environment SLURM_LOCALID='" + std::to_string(env.local_rank) +
                    "': must be below this node's task count " + std::to_string(env.local_world));
    }
  }
  if (env.rank >= env.world)
    return fail("invalid rank " + std::to_string(env.rank) + ": must be below world size " +
                std::to_string(env.world));
  if (env.local_rank >= env.local_world) env.local_world = env.local_rank + 1;

  const char* addr = get("MASTER_ADDR");
  if (addr && *addr) env.master_addr = addr;
  IntVar port = int_var(get, "MASTER_PORT", 1, 65535);
  if (!port.error.empty()) return fail(port.error);
  env.master_port = port.value;
  if (env.source == "slurm") {
    std::string e = slurm_defaults(get, &env, !(addr && *addr), !port.present);
    if (!e.empty()) return fail(e);
  }
  if (env.world > 1 && env.master_port == 0)
    return fail(env.source == "slurm"
                    ? "missing environment MASTER_PORT (or SLURM_JOB_ID): needed when "
                      "SLURM_NTASKS > 1"
                    : "missing environment MASTER_PORT: needed when WORLD_SIZE > 1");

  const char* agent = get("TORCHELASTIC_USE_AGENT_STORE");
  env.agent_store = agent && std::string(agent) == "True";
  // torchrun's count of its restarts, else Slurm's of a requeued job's.
  IntVar restarts = int_var(get, "TORCHELASTIC_RESTART_COUNT", 0, kMaxWorld);
  if (!restarts.present) restarts = int_var(get, "SLURM_RESTART_COUNT", 0, 1 << 30);
  env.restart_count = restarts.present && restarts.error.empty() ? restarts.value : 0;
  out.env = env;
  return out;
}

EnvLookup process_env() {
  return [](const char* n) -> const char* { return std::getenv(n); };
}

RankEnvResult read_rank_env() {
  return read_rank_env(process_env());
}

}  // namespace ddpdesk
