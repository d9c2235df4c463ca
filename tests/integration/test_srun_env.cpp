// ddpdesk-worker started the way `srun` starts it: only Slurm's variables (no RANK/WORLD_SIZE, no
// MASTER_ADDR/MASTER_PORT), so the rank, the node's task count, the rendezvous host (first node
// of the step) and port (from the job id) all come from Slurm's spellings. Real worker processes.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>

#include "rank_launcher.h"

using namespace ddpdesk::test;

namespace {

bool port_is_free(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// A job id whose derived port (20000 + id % 10000, docs/cluster.md) nobody uses right now.
std::string free_job_id() {
  std::mt19937 rng(std::random_device{}());
  for (;;) {
    const int id = 100000 + static_cast<int>(rng() % 900000);
    if (port_is_free(20000 + id % 10000)) return std::to_string(id);
  }
}

std::string this_host() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  return host;
}

struct SrunResult {
  RankRun run;
  std::vector<std::vector<nlohmann::json>> steps;
};

// Two tasks of one step. `tasks_per_node` and `node_id` say how Slurm spread them.
SrunResult srun_two(const std::string& tasks_per_node, const std::string& node_id,
                    const std::string& local_id, std::map<std::string, std::string> extra = {}) {
  const std::string dir = temp_dir("srun");
  LaunchOptions o;
  o.world = 2;
  o.torchrun_env = false;
  o.args = {"--task", "seed",           "--dataset-size",      "400", "--epochs", "1", "--seed",
            "3",      "--metrics-file", dir + "/m{rank}.jsonl"};
  o.env = {{"SLURM_PROCID", "{rank}"},
           {"SLURM_NTASKS", "2"},
           {"SLURM_LOCALID", local_id},
           {"SLURM_NODEID", node_id},
           {"SLURM_STEP_TASKS_PER_NODE", tasks_per_node},
           {"SLURM_TASKS_PER_NODE", tasks_per_node},
           {"SLURM_JOB_ID", free_job_id()},
           {"SLURM_STEP_NODELIST", this_host()},
           {"SLURM_JOB_NODELIST", this_host()},
           {"DDPDESK_COMM", ""}};
  for (const auto& [k, v] : extra) o.env[k] = v;
  o.timeout_s = 120;
  SrunResult r{launch_ranks(o), {}};
  for (int k = 0; k < 2; ++k)
    r.steps.push_back(read_messages(dir + "/m" + std::to_string(k) + ".jsonl", "step"));
  return r;
}

void expect_trained_together(const SrunResult& r, const std::string& comm) {
  ASSERT_FALSE(r.run.timed_out);
  for (int k = 0; k < 2; ++k) ASSERT_EQ(r.run.exit_codes[k], 0) << r.run.stderr_text[k];
  EXPECT_NE(r.run.stdout_text[0].find("world=2 comm=" + comm + " "), std::string::npos)
      << r.run.stdout_text[0];
  ASSERT_EQ(r.steps[0].size(), 50u);
  ASSERT_EQ(r.steps[1].size(), r.steps[0].size());
  for (std::size_t i = 0; i < r.steps[0].size(); ++i)
    EXPECT_EQ(r.steps[0][i]["global_loss"], r.steps[1][i]["global_loss"]) << "step " << i + 1;
}

}  // namespace

// Two nodes, one task each (here both on this machine): Gloo over TCP, rendezvous at the first
// node's name and the job's port.
TEST(SrunEnv, TwoNodesTrainWithGlooWithoutMasterVariables) {
  expect_trained_together(srun_two("1(x2)", "{rank}", "0"), "gloo");
}

// `srun -n 2` on one node, as in the report: both tasks see the node's two tasks and share
// memory; and with Gloo asked for, Gloo trains too (it timed out before).
TEST(SrunEnv, OneNodeTwoTasksTrainWithSharedMemoryOrGloo) {
  expect_trained_together(srun_two("2", "0", "{rank}"), "shm");
  expect_trained_together(srun_two("2", "0", "{rank}", {{"DDPDESK_COMM", "gloo"}}), "gloo");
}

// Ranks whose environments disagree on the node's task count (rank 0 alone on its node, rank 1
// told its node has both) used to pick different collectives and wait for each other until a
// timeout; rank 0's choice now holds for all.
TEST(SrunEnv, RanksFollowRankZerosChoiceOfCollective) {
  expect_trained_together(srun_two("1,2", "{rank}", "{rank}"), "gloo");
}
