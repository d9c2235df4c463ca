// Where a rank sits: torchrun's variables, Slurm's as a fallback, a single rank without either;
// malformed values are input errors naming the variable.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rank_env.h"
#include "slurm_env.h"
#include "torchrun_rank.h"

using namespace ddpdesk;

namespace {

// `vars` must outlive the lookup.
EnvLookup lookup(const std::map<std::string, std::string>& vars) {
  return [&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

RankEnvResult read(const std::map<std::string, std::string>& vars) {
  return read_rank_env(lookup(vars));
}

}  // namespace

TEST(RankEnv, NothingSetIsASingleRank) {
  auto r = read({});
  ASSERT_TRUE(r.env);
  EXPECT_EQ(r.env->world, 1);
  EXPECT_EQ(r.env->rank, 0);
  EXPECT_EQ(r.env->source, "single");
}

TEST(RankEnv, TorchrunContract) {
  auto r = read({{"RANK", "5"},
                 {"WORLD_SIZE", "8"},
                 {"LOCAL_RANK", "1"},
                 {"LOCAL_WORLD_SIZE", "4"},
                 {"MASTER_ADDR", "node0"},
                 {"MASTER_PORT", "29500"},
                 {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                 {"TORCHELASTIC_RESTART_COUNT", "2"}});
  ASSERT_TRUE(r.env) << r.error;
  EXPECT_EQ(r.env->rank, 5);
  EXPECT_EQ(r.env->world, 8);
  EXPECT_EQ(r.env->local_rank, 1);
  EXPECT_EQ(r.env->local_world, 4);
  EXPECT_EQ(r.env->master_addr, "node0");
  EXPECT_EQ(r.env->master_port, 29500);
  EXPECT_TRUE(r.env->agent_store);
  EXPECT_EQ(r.env->restart_count, 2);
  EXPECT_EQ(r.env->source, "torchrun");
}

TEST(RankEnv, SlurmFallback) {
  auto r = read({{"SLURM_PROCID", "3"},
                 {"SLURM_NTASKS", "4"},
                 {"SLURM_LOCALID", "1"},
                 {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
                 {"SLURM_NODEID", "1"},
                 {"MASTER_ADDR", "n1"},
                 {"MASTER_PORT", "1234"}});
  ASSERT_TRUE(r.env) << r.error;
  EXPECT_EQ(r.env->source, "slurm");
  EXPECT_EQ(r.env->rank, 3);
  EXPECT_EQ(r.env->world, 4);
  EXPECT_EQ(r.env->local_rank, 1);
  EXPECT_EQ(r.env->local_world, 2);
  EXPECT_EQ(r.env->master_addr, "n1");  // the user's MASTER_* win over the derived ones
  EXPECT_EQ(r.env->master_port, 1234);
  EXPECT_FALSE(r.env->agent_store);
  EXPECT_EQ(r.env->restart_count, 0);
}

// A requeued Slurm job's tasks know it from SLURM_RESTART_COUNT (the worker then resumes); under
// torchrun its own count wins.
TEST(RankEnv, RestartCountFromTorchrunElseSlurm) {
  auto r = read({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_RESTART_COUNT", "3"}});
  ASSERT_TRUE(r.env) << r.error;
  EXPECT_EQ(r.env->restart_count, 3);
  r = read({{"RANK", "0"},
            {"WORLD_SIZE", "1"},
            {"TORCHELASTIC_RESTART_COUNT", "1"},
            {"SLURM_RESTART_COUNT", "3"}});
  ASSERT_TRUE(r.env) << r.error;
  EXPECT_EQ(r.env->restart_count, 1);
}

TEST(RankEnv, TorchrunWinsOverSlurm) {
  auto r = read({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}});
  ASSERT_TRUE(r.env);
  EXPECT_EQ(r.env->source, "torchrun");
}

TEST(RankEnv, BadValuesNameTheVariable) {
  EXPECT_NE(read({{"RANK", "x"}, {"WORLD_SIZE", "2"}}).error.find("RANK='x'"), std::string::npos);
  EXPECT_NE(read({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}}).error.find("rank 2"),
            std::string::npos);
  EXPECT_NE(read({{"RANK", "0"}}).error.find("RANK and WORLD_SIZE"), std::string::npos);
  EXPECT_NE(read({{"RANK", "0"}, {"WORLD_SIZE", "2"}}).error.find("MASTER_PORT"),
            std::string::npos);
  EXPECT_NE(read({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}})
                .error.find("MASTER_PORT='70000'"),
            std::string::npos);
}

namespace {

// What `srun -n 2` on one node sets (Slurm 22.05), without any MASTER_* variable.
std::map<std::string, std::string> srun_two_tasks(const std::string& procid) {
  return {{"SLURM_PROCID", procid},      {"SLURM_LOCALID", procid},
          {"SLURM_NTASKS", "2"},         {"SLURM_NODEID", "0"},
          {"SLURM_JOB_ID", "4242"},      {"SLURM_STEP_TASKS_PER_NODE", "2"},
          {"SLURM_TASKS_PER_NODE", "2"}, {"SLURM_STEP_NODELIST", "vm"},
          {"SLURM_JOB_NODELIST", "vm"}};
}

}  // namespace

// The defect srun showed: rank 0 took local world 1 (so Gloo) and rank 1 local world 2 (so
// shared memory), and each waited for the other in a different rendezvous. Every rank of one
// node must see the whole node's task count.
TEST(RankEnv, SrunOnOneNodeGivesEveryRankTheNodesTaskCount) {
  for (const char* procid : {"0", "1"}) {
    auto r = read(srun_two_tasks(procid));
    ASSERT_TRUE(r.env) << r.error;
    EXPECT_EQ(r.env->local_world, 2) << "rank " << procid;
    EXPECT_EQ(r.env->world, 2);
  }
}

TEST(RankEnv, SrunWithoutMasterVariablesDerivesThemFromTheJob) {
  auto r = read(srun_two_tasks("1"));
  ASSERT_TRUE(r.env) << r.error;
  EXPECT_EQ(r.env->master_addr, "vm");
  EXPECT_EQ(r.env->master_port, 20000 + 4242);
  auto big = srun_two_tasks("0");
  big["SLURM_JOB_ID"] = "1234567";
  big["SLURM_STEP_NODELIST"] = "gpu[007-009,011],login1";
  auto b = read(big);
  ASSERT_TRUE(b.env) << b.error;
  EXPECT_EQ(b.env->master_port, 20000 + 4567);
  EXPECT_EQ(b.env->master_addr, "gpu007");
  // Without a step (a batch script's own shell), the job's list is used.
  auto job = srun_two_tasks("0");
  job.erase("SLURM_STEP_NODELIST");
  job["SLURM_JOB_NODELIST"] = "a[3-4]";
  job.erase("SLURM_JOB_ID");
  job["SLURM_JOBID"] = "7";
  auto j = read(job);
  ASSERT_TRUE(j.env) << j.error;
  EXPECT_EQ(j.env->master_addr, "a3");
  EXPECT_EQ(j.env->master_port, 20007);
}

TEST(RankEnv, UnevenNodesTakeTheirOwnCountFromTheStep) {
  // 7 tasks on 4 nodes: 2,2,2 and 1. The job-wide list differs (the step wins).
  auto last = srun_two_tasks("6");
  last["SLURM_NTASKS"] = "7";
  last["SLURM_LOCALID"] = "0";
  last["SLURM_NODEID"] = "3";
  last["SLURM_STEP_TASKS_PER_NODE"] = "2(x3),1";
  last["SLURM_TASKS_PER_NODE"] = "4(x4)";
  auto r = read(last);
  ASSERT_TRUE(r.env) << r.error;
  EXPECT_EQ(r.env->local_world, 1);
  last["SLURM_NODEID"] = "2";
  last["SLURM_LOCALID"] = "1";
  last["SLURM_PROCID"] = "5";
  EXPECT_EQ(read(last).env->local_world, 2);
  last.erase("SLURM_STEP_TASKS_PER_NODE");
  EXPECT_EQ(read(last).env->local_world, 4);
}

TEST(RankEnv, SlurmBadValuesNameTheVariable) {
  auto with = [](const char* k, const char* v) {
    auto e = srun_two_tasks("0");
    e[k] = v;
    return read(e).error;
  };
  EXPECT_NE(with("SLURM_STEP_TASKS_PER_NODE", "2(3)").find("SLURM_STEP_TASKS_PER_NODE='2(3)'"),
            std::string::npos);
  EXPECT_NE(with("SLURM_STEP_TASKS_PER_NODE", "2,,1").find("task counts like"), std::string::npos);
  EXPECT_NE(with("SLURM_NODEID", "1").find("SLURM_NODEID='1'"), std::string::npos);
  EXPECT_NE(with("SLURM_LOCALID", "2").find("SLURM_LOCALID='2'"), std::string::npos);
  EXPECT_NE(with("SLURM_STEP_NODELIST", "node[01-").find("SLURM_STEP_NODELIST='node[01-'"),
            std::string::npos);
  EXPECT_NE(with("SLURM_JOB_ID", "12x").find("SLURM_JOB_ID='12x'"), std::string::npos);
  auto uneven = srun_two_tasks("0");
  uneven["SLURM_STEP_TASKS_PER_NODE"] = "1,1";
  uneven.erase("SLURM_NODEID");
  ASSERT_TRUE(read(uneven).env);  // equal counts need no SLURM_NODEID
  EXPECT_EQ(read(uneven).env->local_world, 1);
  uneven["SLURM_STEP_TASKS_PER_NODE"] = "2,1";
  EXPECT_NE(read(uneven).error.find("missing environment SLURM_NODEID"), std::string::npos);
  auto no_job = srun_two_tasks("0");
  no_job.erase("SLURM_JOB_ID");
  EXPECT_NE(read(no_job).error.find("SLURM_JOB_ID"), std::string::npos);
}

TEST(SlurmEnv, TasksPerNode) {
  using V = std::vector<int>;
  EXPECT_EQ(slurm::expand_tasks_per_node("2(x3),1"), V({2, 2, 2, 1}));
  EXPECT_EQ(slurm::expand_tasks_per_node("4"), V({4}));
  EXPECT_EQ(slurm::expand_tasks_per_node("1,3(x2),12"), V({1, 3, 3, 12}));
  for (const char* bad : {"", ",", "2,", "0", "2(x0)", "2(x", "2(3)", "a", "2 ,1", "-1"})
    EXPECT_FALSE(slurm::expand_tasks_per_node(bad)) << bad;
}

TEST(SlurmEnv, FirstHost) {
  using S = std::optional<std::string>;
  EXPECT_EQ(slurm::first_host("node[01-03,07],gpu5"), S("node01"));
  EXPECT_EQ(slurm::first_host("gpu5,node[01-03]"), S("gpu5"));
  EXPECT_EQ(slurm::first_host("vm"), S("vm"));
  EXPECT_EQ(slurm::first_host("n[7,2-3]"), S("n7"));
  EXPECT_EQ(slurm::first_host("rack[2-3]-node[010-011]"), S("rack2-node010"));
  EXPECT_EQ(slurm::first_host("c1-[4-5].ib"), S("c1-4.ib"));
  for (const char* bad : {"", "node[]", "node[01-03", "node]", "node[a]", "n[[1]]", ",x", " x"})
    EXPECT_FALSE(slurm::first_host(bad)) << bad;
}

TEST(SlurmEnv, PortStaysInItsRange) {
  EXPECT_EQ(slurm::port_for_job(0), slurm::kPortBase);
  EXPECT_EQ(slurm::port_for_job(19999), slurm::kPortBase + 9999);
  EXPECT_EQ(slurm::port_for_job(20000), slurm::kPortBase);
  EXPECT_LT(slurm::kPortBase + slurm::kPortSpan, 32768);  // below Linux's ephemeral ports
}

// ddpdesk-rank's variables (torchrun_rank.h): a task of a two-node srun step is the torchrun
// rank its Slurm variables say, on the node they say.
TEST(TorchrunRank, SlurmTaskBecomesTorchrunRank) {
  const std::map<std::string, std::string> vars = {
      {"SLURM_PROCID", "3"},     {"SLURM_NTASKS", "4"},
      {"SLURM_LOCALID", "1"},    {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
      {"SLURM_NODEID", "1"},     {"SLURM_STEP_NUM_NODES", "2"},
      {"SLURM_JOB_ID", "12345"}, {"SLURM_STEP_NODELIST", "gpu[07-08]"}};
  const EnvLookup get = lookup(vars);
  const RankEnvResult r = read_rank_env(get);
  ASSERT_TRUE(r.env) << r.error;
  const std::vector<std::pair<std::string, std::string>> want = {{"RANK", "3"},
                                                                 {"WORLD_SIZE", "4"},
                                                                 {"LOCAL_RANK", "1"},
                                                                 {"LOCAL_WORLD_SIZE", "2"},
                                                                 {"MASTER_ADDR", "gpu07"},
                                                                 {"MASTER_PORT", "22345"},
                                                                 {"GROUP_RANK", "1"},
                                                                 {"GROUP_WORLD_SIZE", "2"},
                                                                 {"ROLE_RANK", "3"},
                                                                 {"ROLE_WORLD_SIZE", "4"},
                                                                 {"ROLE_NAME", "default"},
                                                                 {"OMP_NUM_THREADS", "1"}};
  EXPECT_EQ(torchrun_variables(*r.env, get), want);
}

// A user's OMP_NUM_THREADS is theirs; a lone rank on its node gets none from ddpdesk-rank, and a
// single rank without Slurm is group 0 of 1 with no port invented.
TEST(TorchrunRank, KeepsUsersThreadsAndInventsNoPort) {
  const std::map<std::string, std::string> vars = {{"OMP_NUM_THREADS", "8"}};
  const EnvLookup get = lookup(vars);
  const RankEnvResult r = read_rank_env(get);
  ASSERT_TRUE(r.env);
  const auto v = torchrun_variables(*r.env, get);
  std::map<std::string, std::string> m(v.begin(), v.end());
  EXPECT_EQ(m.count("OMP_NUM_THREADS"), 0u);
  EXPECT_EQ(m.count("MASTER_PORT"), 0u);
  EXPECT_EQ(m["GROUP_RANK"], "0");
  EXPECT_EQ(m["GROUP_WORLD_SIZE"], "1");
  EXPECT_EQ(m["WORLD_SIZE"], "1");
}
