// Where a rank sits: torchrun's variables, Slurm's as a fallback, a single rank without either;
// malformed values are input errors naming the variable.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "rank_env.h"

using namespace ddpdesk;

namespace {

RankEnvResult read(const std::map<std::string, std::string>& vars) {
  return read_rank_env([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
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
                 {"SLURM_NTASKS_PER_NODE", "2"},
                 {"MASTER_ADDR", "n1"},
                 {"MASTER_PORT", "1234"}});
  ASSERT_TRUE(r.env) << r.error;
  EXPECT_EQ(r.env->source, "slurm");
  EXPECT_EQ(r.env->rank, 3);
  EXPECT_EQ(r.env->world, 4);
  EXPECT_EQ(r.env->local_rank, 1);
  EXPECT_FALSE(r.env->agent_store);
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
