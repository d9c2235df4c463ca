// ddpdesk-rank (torchrun_rank.h): torchrun's variables from Slurm's, then exec.
#include "torchrun_rank.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>  // setenv
#include <cstring>

namespace ddpdesk {

std::vector<std::pair<std::string, std::string>> torchrun_variables(const RankEnv& env,
                                                                    const EnvLookup& get) {
  const auto text = [&](const char* name) -> std::string {
    const char* v = get(name);
    return v && *v ? v : "";
  };
  std::string node = text("SLURM_NODEID");
  std::string nodes = text("SLURM_STEP_NUM_NODES");
  if (nodes.empty()) nodes = text("SLURM_NNODES");
  if (node.empty() || nodes.empty()) node = "0", nodes = "1";
  std::vector<std::pair<std::string, std::string>> out = {
      {"RANK", std::to_string(env.rank)},
      {"WORLD_SIZE", std::to_string(env.world)},
      {"LOCAL_RANK", std::to_string(env.local_rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(env.local_world)},
      {"MASTER_ADDR", env.master_addr},
  };
  if (env.master_port > 0) out.emplace_back("MASTER_PORT", std::to_string(env.master_port));
  out.emplace_back("GROUP_RANK", node);
  out.emplace_back("GROUP_WORLD_SIZE", nodes);
  out.emplace_back("ROLE_RANK", std::to_string(env.rank));
  out.emplace_back("ROLE_WORLD_SIZE", std::to_string(env.world));
  out.emplace_back("ROLE_NAME", "default");
  if (env.local_world > 1 && text("OMP_NUM_THREADS").empty())
    out.emplace_back("OMP_NUM_THREADS", "1");
  return out;
}

int torchrun_rank_main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') {
    std::fprintf(stderr,
                 "ddpdesk-rank: usage: ddpdesk-rank COMMAND [ARGS...] (one rank of a torchrun "
                 "job under srun)\n");
    return 2;
  }
  const RankEnvResult r = read_rank_env();
  if (!r.env) {
    std::fprintf(stderr, "ddpdesk-rank: %s\n", r.error.c_str());
    return 2;
  }
  for (const auto& [name, value] : torchrun_variables(*r.env, process_env()))
    ::setenv(name.c_str(), value.c_str(), 1);
  ::execvp(argv[1], argv + 1);
  std::fprintf(stderr, "ddpdesk-rank: cannot run '%s': %s\n", argv[1], std::strerror(errno));
  return 127;
}

}  // namespace ddpdesk
