// Where this process sits in the job: read from torchrun's environment contract, else Slurm's,
// else a single rank. Plain C++ so it is testable without LibTorch.
// Under Slurm (srun sets no RANK/WORLD_SIZE): rank SLURM_PROCID of SLURM_NTASKS, local rank
// SLURM_LOCALID of this node's count in SLURM_STEP_TASKS_PER_NODE ("2(x3),1", indexed by
// SLURM_NODEID; SLURM_TASKS_PER_NODE without a step); MASTER_ADDR, when unset, the first node of
// SLURM_STEP_NODELIST (or SLURM_JOB_NODELIST), MASTER_PORT, when unset, 20000 + job id % 10000
// (slurm_env.h), so a plain `srun ddpdesk-worker ...` needs nothing else.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace ddpdesk {

struct RankEnv {
  int rank = 0;
  int world = 1;
  int local_rank = 0;
  int local_world = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  // torchrun's static rendezvous: its agent already hosts the TCPStore at MASTER_ADDR:PORT and
  // every rank is a client whose keys live under /worker/attempt_<restart_count>.
  bool agent_store = false;
  // How often the launcher started this rank again: TORCHELASTIC_RESTART_COUNT, else a requeued
  // Slurm job's SLURM_RESTART_COUNT (the worker then resumes from its run directory).
  int restart_count = 0;
  std::string source = "single";  // torchrun | slurm | single
};

struct RankEnvResult {
  std::optional<RankEnv> env;
  std::string error;  // one line naming the variable and its value
};

using EnvLookup = std::function<const char*(const char*)>;
RankEnvResult read_rank_env(const EnvLookup& getenv_fn);
RankEnvResult read_rank_env();  // from the process environment
// The process environment as an EnvLookup (getenv): the one place outside the settings readers
// that reads it, for torchrun's and Slurm's variables.
EnvLookup process_env();

}  // namespace ddpdesk
