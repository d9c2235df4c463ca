// ddpdesk-rank: runs a command as one rank of a torchrun job under srun. A Python DDP script
// written for torchrun reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, ... which srun does not
// set; this reads where the task sits from Slurm's variables with the worker's own rules
// (read_rank_env: the step's first node as MASTER_ADDR, a port derived from the job id), sets
// torchrun's variables, and execs the command. The Slurm launcher's batch script runs a script
// run's ranks through it (ui/monitor/slurm/slurm_script.h). Plain C++, no LibTorch.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "rank_env.h"

namespace ddpdesk {

// The variables torchrun gives a rank, for `env` as read by read_rank_env: RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT (when known), GROUP_RANK and
// GROUP_WORLD_SIZE (the node: SLURM_NODEID of SLURM_STEP_NUM_NODES / SLURM_NNODES, else 0 of
// 1), ROLE_RANK, ROLE_WORLD_SIZE, ROLE_NAME, and OMP_NUM_THREADS=1 when several ranks share
// the node and `get` has none (as torchrun does). In that order.
std::vector<std::pair<std::string, std::string>> torchrun_variables(const RankEnv& env,
                                                                    const EnvLookup& get);

// ddpdesk-rank's main: `ddpdesk-rank COMMAND [ARGS...]`. Sets the variables above and replaces
// itself with COMMAND (found on PATH). A malformed environment or no command: one line on
// stderr, exit 2; a command that cannot be run: one line, exit 127 (as a shell).
int torchrun_rank_main(int argc, char** argv);

}  // namespace ddpdesk
